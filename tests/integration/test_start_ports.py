"""Start-up binds the API and metrics ports before it opens storage: a taken
port stops feedd with its own message naming the option and a non-zero exit,
and the data directory is neither created into nor locked.
"""

import os
import socket
import subprocess
import tempfile
import shutil
import unittest

from feedd_harness import FeeddDaemon, FeeddTestCase, feedd_binary

EXIT_TIMEOUT_S = 30


def listening_socket():
    """A socket listening on a free loopback port; returns (socket, "127.0.0.1:PORT")."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s, "127.0.0.1:%d" % s.getsockname()[1]


class TakenPortTest(FeeddTestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="feedd-ports-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def start_feedd(self, data_dir, listen, metrics_listen):
        """Runs feedd until it exits; returns (exit code, stderr)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
        proc = subprocess.run(
            [feedd_binary(), "--data-dir", data_dir, "--listen", listen,
             "--metrics-listen", metrics_listen, "--storage.sync=false"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
            timeout=EXIT_TIMEOUT_S)
        return proc.returncode, proc.stderr

    def assertPortError(self, rc, err, option, address):
        self.assertEqual(rc, 1, err)
        self.assertIn(address, err)
        self.assertIn("Address already in use", err)
        self.assertIn("(%s)" % option, err)
        self.assertNotIn("null context", err)
        self.assertNotIn("cannot open the store", err)

    def test_a_taken_api_port_stops_start_up_before_storage(self):
        held, address = listening_socket()
        self.addCleanup(held.close)
        data_dir = os.path.join(self.tmp, "data")
        os.mkdir(data_dir)
        rc, err = self.start_feedd(data_dir, address, "127.0.0.1:0")
        self.assertPortError(rc, err, "http.listen", address)
        self.assertEqual(os.listdir(data_dir), [], "the data directory was opened")

    def test_a_taken_metrics_port_stops_start_up_before_storage(self):
        held, address = listening_socket()
        self.addCleanup(held.close)
        data_dir = os.path.join(self.tmp, "data")
        os.mkdir(data_dir)
        rc, err = self.start_feedd(data_dir, "127.0.0.1:0", address)
        self.assertPortError(rc, err, "metrics.listen", address)
        self.assertEqual(os.listdir(data_dir), [], "the data directory was opened")

    def test_a_second_daemon_on_a_used_directory_reports_the_port_not_the_lock(self):
        # The running daemon holds both ports and the RocksDB lock of its
        # directory: a second one must stop at the port, before the lock.
        first = FeeddDaemon(name="feedd-first")
        self.first = first
        self.addCleanup(first.cleanup)
        first.start()
        rc, err = self.start_feedd(first.data_dir, first.ready["api"], "127.0.0.1:0")
        self.assertPortError(rc, err, "http.listen", first.ready["api"])
        rc, err = self.start_feedd(first.data_dir, "127.0.0.1:0", first.ready["metrics"])
        self.assertPortError(rc, err, "metrics.listen", first.ready["metrics"])
        # The first daemon was not disturbed.
        status, _, _ = first.client().request("GET", "/healthz")
        self.assertEqual(status, 200)
        first.stop()


if __name__ == "__main__":
    unittest.main()
