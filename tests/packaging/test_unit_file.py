"""configs/feedd.service and configs/feedd-worker@.service: `systemd-analyze
verify` accepts them and their offline security exposure stays low.

verify checks that ExecStart names an executable, so the test runs it on a
copy whose ExecStart points at the built feedd ($FEEDD_BIN); everything else
is the shipped file.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "FEEDD_SOURCE_DIR",
    os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
UNIT = os.path.join(SOURCE_DIR, "configs", "feedd.service")
SHIPPED_EXEC = "ExecStart=/usr/bin/feedd "
# systemd-analyze security --threshold is in tenths: 20 means exposure 2.0.
MAX_EXPOSURE_TENTHS = 20


def systemd_analyze():
    path = shutil.which("systemd-analyze")
    if path is None:
        raise AssertionError("systemd-analyze is missing: apt-get install systemd "
                             "(scripts/install-deps.sh)")
    return path


def unit_directives(text):
    """{key: [values]} of every Key=Value line (comments skipped)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


class UnitFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(UNIT) as f:
            cls.text = f.read()
        cls.directives = unit_directives(cls.text)
        cls.tmp = tempfile.mkdtemp(prefix="feedd-unit-")
        binary = os.environ.get("FEEDD_BIN")
        if not binary or not os.access(binary, os.X_OK):
            raise AssertionError("FEEDD_BIN must name the built feedd (got %r)" % binary)
        if cls.text.count(SHIPPED_EXEC) != 1:
            raise AssertionError("the unit must have one %r line" % SHIPPED_EXEC)
        cls.copy = os.path.join(cls.tmp, "feedd.service")
        with open(cls.copy, "w") as f:
            f.write(cls.text.replace(SHIPPED_EXEC, "ExecStart=%s " % binary))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_analyze(self, *args):
        proc = subprocess.run([systemd_analyze()] + list(args), cwd=self.tmp,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=60)
        return proc.returncode, proc.stdout

    def test_verify_passes(self):
        rc, out = self.run_analyze("verify", self.copy)
        self.assertEqual(rc, 0, "systemd-analyze verify failed:\n" + out)
        # verify reports problems on stderr (merged here) even for some
        # non-fatal issues: the unit must be clean.
        self.assertEqual(out.strip(), "", "systemd-analyze verify complained:\n" + out)

    def test_verify_catches_a_missing_binary(self):
        # The check above is meaningful only if verify looks at ExecStart.
        bad = os.path.join(self.tmp, "feedd-missing.service")
        with open(bad, "w") as f:
            f.write(self.text.replace(SHIPPED_EXEC, "ExecStart=/nonexistent/feedd "))
        rc, out = self.run_analyze("verify", bad)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("/nonexistent/feedd", out)

    def test_security_exposure_is_low(self):
        rc, out = self.run_analyze("security", "--offline=yes",
                                   "--threshold=%d" % MAX_EXPOSURE_TENTHS, self.copy)
        last = out.strip().splitlines()[-1] if out.strip() else ""
        self.assertEqual(rc, 0, "exposure above %.1f:\n%s" % (MAX_EXPOSURE_TENTHS / 10, out))
        self.assertRegex(last, r"Overall exposure level for feedd-?\w*\.service: \d")

    def test_the_contract_of_the_unit(self):
        d = self.directives
        self.assertEqual(d["Type"], ["notify"])
        # The data directory comes from the packaged configuration (its
        # data_dir is the StateDirectory, tests/packaging/test_deb.py), not
        # from an option that would silently override the file.
        self.assertEqual(d["ExecStart"], ["/usr/bin/feedd --config /etc/feedd/feedd.conf"])
        self.assertEqual(d["WatchdogSec"], ["30"])
        self.assertEqual(d["Restart"], ["on-failure"])
        self.assertIn("TimeoutStopSec", d)
        self.assertEqual(d["StateDirectory"], ["feedd"])
        self.assertEqual(d["DynamicUser"], ["yes"])
        for key, value in [("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                           ("PrivateTmp", "yes"), ("NoNewPrivileges", "yes"),
                           ("ProtectKernelTunables", "yes"), ("LimitNOFILE", "65536")]:
            self.assertEqual(d.get(key), [value], key)
        self.assertEqual(d["RestrictAddressFamilies"], ["AF_INET AF_INET6 AF_UNIX"])
        self.assertEqual(d["WantedBy"], ["multi-user.target"])
        # TimeoutStopSec must leave room for the HTTP drain
        # (http.shutdown_grace_seconds, 10 by default) and the flushes.
        self.assertGreaterEqual(int(re.match(r"\d+", d["TimeoutStopSec"][0]).group()), 30)


class WorkerUnitFileTest(unittest.TestCase):
    """The template of `feedd worker` (instance name = its metrics port)."""

    def setUp(self):
        with open(os.path.join(SOURCE_DIR, "configs", "feedd-worker@.service")) as f:
            self.text = f.read()
        self.tmp = tempfile.mkdtemp(prefix="feedd-unit-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        binary = os.environ.get("FEEDD_BIN")
        if not binary or not os.access(binary, os.X_OK):
            raise AssertionError("FEEDD_BIN must name the built feedd (got %r)" % binary)
        self.assertEqual(self.text.count(SHIPPED_EXEC + "worker "), 1)
        # A template is verified through an instance.
        self.copy = os.path.join(self.tmp, "feedd-worker@9465.service")
        with open(self.copy, "w") as f:
            f.write(self.text.replace(SHIPPED_EXEC, "ExecStart=%s " % binary))

    def test_verify_and_security(self):
        run = lambda *a: subprocess.run([systemd_analyze()] + list(a), cwd=self.tmp,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, timeout=60)
        proc = run("verify", self.copy)
        self.assertEqual((proc.returncode, proc.stdout.strip()), (0, ""), proc.stdout)
        proc = run("security", "--offline=yes", "--threshold=%d" % MAX_EXPOSURE_TENTHS, self.copy)
        self.assertEqual(proc.returncode, 0, proc.stdout)
        d = unit_directives(self.text)
        self.assertEqual(d["ExecStart"], ["/usr/bin/feedd worker --config /etc/feedd/feedd.conf "
                                          "--worker.metrics_listen 127.0.0.1:%i"])
        self.assertEqual(d["RestartPreventExitStatus"], ["2"])
        # SIGHUP reloads the metrics port's certificate and tokens.
        self.assertEqual(d["ExecReload"], ["/bin/kill -HUP $MAINPID"])
        # Like feedd.service: readiness and liveness reported over sd_notify.
        self.assertEqual(d["Type"], ["notify"])
        self.assertEqual(d["NotifyAccess"], ["main"])
        self.assertEqual(d["WatchdogSec"], ["30"])
        self.assertEqual(d["Restart"], ["on-failure"])


if __name__ == "__main__":
    unittest.main()
