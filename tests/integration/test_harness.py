"""The harness's own contract: SharedDaemonTestCase (feedd_harness.py).

Test classes built on it are run here with unittest's own runner: a class
whose set-up fails half-way (the daemon refuses to start, or a step after the
start fails) leaves no process and no directory behind, its own files
included; a class that runs gives its tests a working client and stops the
daemon with exit code 0 before removing its directory.
"""

import io
import os
import shutil
import tempfile
import unittest

from feedd_harness import FeeddTestCase, SharedDaemonTestCase


def run_class(cls):
    """Runs the tests of cls; returns the unittest result."""
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(cls)
    return unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)


class _Probe(SharedDaemonTestCase):
    """A class under test, with a file of its own as subclasses have (cls.fixture_dir)."""

    @classmethod
    def daemon_options(cls):
        cls.fixture_dir = tempfile.mkdtemp(prefix="feedd-harness-")
        cls.addClassCleanup(shutil.rmtree, cls.fixture_dir, ignore_errors=True)
        return super().daemon_options()


class HarnessTest(FeeddTestCase):
    def assertSetUpFailed(self, result, message):
        """setUpClass failed with `message` and no test ran."""
        self.assertEqual((result.testsRun, len(result.failures)), (0, 0))
        self.assertEqual(len(result.errors), 1, result.errors)
        self.assertIn(message, result.errors[0][1])

    def assertNothingLeft(self, cls):
        daemon = cls.daemon
        self.assertIsNotNone(daemon, "no daemon was made")
        if daemon.proc is not None:
            self.assertIsNotNone(daemon.proc.poll(), "the daemon still runs")
        self.assertFalse(os.path.exists(daemon.workdir), "daemon directory left")
        self.assertFalse(os.path.exists(cls.fixture_dir), "fixture directory left")

    def test_a_daemon_that_does_not_start_leaves_nothing(self):
        class Refused(_Probe):
            daemon_args = ("--no-such-option=1",)

            def test_never_runs(self):
                raise AssertionError("ran although setUpClass failed")

        self.assertSetUpFailed(run_class(Refused), "before it was ready")
        self.assertNothingLeft(Refused)

    def test_a_failure_after_the_start_kills_the_daemon_and_leaves_nothing(self):
        class FailsLate(_Probe):
            daemon_name = "feedd-fails-late"

            @classmethod
            def daemon_started(cls):
                raise RuntimeError("set-up step after the start failed")

            def test_never_runs(self):
                raise AssertionError("ran although setUpClass failed")

        self.assertSetUpFailed(run_class(FailsLate), "set-up step after the start failed")
        self.assertEqual(FailsLate.daemon.proc.returncode, -9, "the daemon was not killed")
        self.assertNothingLeft(FailsLate)

    def test_tests_share_the_daemon_which_stops_cleanly(self):
        seen = []

        class Runs(_Probe):
            daemon_args = ("--processors.enabled=false",)

            def test_one(self):
                self.assertStatus(self.c.request("GET", "/healthz"), 200, "healthz")
                seen.append((self.daemon.proc.pid, self.c))

            def test_two(self):
                self.assertStatus(self.c.request("GET", "/healthz"), 200, "healthz")
                seen.append((self.daemon.proc.pid, self.c))

        result = run_class(Runs)
        self.assertTrue(result.wasSuccessful(), result.errors + result.failures)
        self.assertEqual(result.testsRun, 2)
        self.assertEqual(seen[0][0], seen[1][0], "the tests did not share one daemon")
        self.assertIsNot(seen[0][1], seen[1][1], "the tests shared one client")
        self.assertTrue(all(c.conn is None for _, c in seen), "a test's client was left open")
        self.assertIn("--processors.enabled=false", Runs.daemon.command())
        self.assertEqual(Runs.daemon.proc.returncode, 0, "not stopped by SIGTERM with exit 0")
        self.assertNothingLeft(Runs)


if __name__ == "__main__":
    unittest.main()
