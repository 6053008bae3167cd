"""The systemd notification protocol of the real feedd (sd_notify(3)).

The test plays systemd: it binds a Unix datagram socket, starts feedd with
NOTIFY_SOCKET naming it and WATCHDOG_USEC=2000000 (a 2 s WatchdogSec), on the
shipped configs/feedd.conf with a temporary data directory and ports 0, and
checks what arrives:
  - READY=1 (with a STATUS=), only once the API listens: the ready file exists
    and /healthz answers 200 at that moment;
  - WATCHDOG=1 repeatedly, about every second (half the interval), never
    more than the interval apart;
  - after SIGTERM, STOPPING=1, no WATCHDOG=1 after it, and exit code 0;
  - every datagram carries the credentials of feedd's own pid (the unit's
    NotifyAccess=main accepts nothing else).
And that WATCHDOG_PID naming another process turns the watchdog off.
"""

import array
import http.client
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE_DIR = os.environ.get(
    "FEEDD_SOURCE_DIR",
    os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
CONFIG = os.path.join(SOURCE_DIR, "configs", "feedd.conf")
WATCHDOG_USEC = 2000000
READY_TIMEOUT_S = 60.0


def feedd_binary():
    path = os.environ.get("FEEDD_BIN")
    if not path or not os.access(path, os.X_OK):
        raise AssertionError("FEEDD_BIN must name the built feedd (got %r)" % path)
    return path


class Datagram:
    def __init__(self, fields, pid, at):
        self.fields = fields  # {"READY": "1", ...}
        self.pid = pid        # sender pid from SCM_CREDENTIALS
        self.at = at          # time.monotonic() on receipt

    def __repr__(self):
        return "Datagram(%r, pid=%s, at=%.3f)" % (self.fields, self.pid, self.at)


class FakeSystemd:
    """The receiving end of NOTIFY_SOCKET, with sender credentials."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)
        self.received = []

    def close(self):
        self.sock.close()

    def receive(self, timeout):
        """The next datagram, or None after `timeout` seconds."""
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data, ancdata, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None
        pid = None
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _uid, _gid = struct.unpack("iII", payload[:12])
        fields = {}
        for line in data.decode("utf-8").split("\n"):
            if line:
                key, _, value = line.partition("=")
                fields[key] = value
        message = Datagram(fields, pid, time.monotonic())
        self.received.append(message)
        return message

    def wait_for(self, key, timeout, alive=None):
        """Receives until a datagram with `key` arrives; returns it. `alive()`
        is called between receives, to fail early when the sender died."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %s= within %.0f s; received %r"
                                     % (key, timeout, self.received))
            message = self.receive(min(left, 0.5))
            if message is not None and key in message.fields:
                return message
            if message is None and alive is not None:
                alive()


class SdNotifyTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="feedd-notify-")
        self.data_dir = os.path.join(self.tmp, "data")
        self.ready_file = os.path.join(self.tmp, "ready.json")
        self.log_path = os.path.join(self.tmp, "feedd.log")
        self.systemd = FakeSystemd(self.tmp)
        self.proc = None

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.systemd.close()

    def run(self, result=None):
        """Prints feedd's log when the test failed, then removes the files."""
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before and hasattr(self, "tmp"):
            sys.stderr.write("\n[%s failed] feedd log:\n%s\n" % (self.id(), self._log()))
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)
        return out

    def _log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-20000:]
        except OSError:
            return ""

    def start(self, extra_env=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("FEEDD_") and k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC",
                                                            "WATCHDOG_PID", "LISTEN_FDS")}
        env["NOTIFY_SOCKET"] = self.systemd.path
        env["WATCHDOG_USEC"] = str(WATCHDOG_USEC)
        for key, value in (extra_env or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        cmd = [feedd_binary(), "--config", CONFIG, "--data-dir", self.data_dir,
               "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
               "--ready-file", self.ready_file, "--storage.sync=false"]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         env=env, close_fds=True)

    def api_answers_healthz(self):
        with open(self.ready_file) as f:
            api = json.load(f)["api"]
        host, _, port = api.rpartition(":")
        conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=5)
        try:
            conn.request("GET", "/healthz")
            return conn.getresponse().status
        finally:
            conn.close()

    def check_alive(self):
        rc = self.proc.poll()
        if rc is not None:
            raise AssertionError("feedd exited with %d:\n%s" % (rc, self._log()))

    def wait_ready(self):
        ready = self.systemd.wait_for("READY", READY_TIMEOUT_S, self.check_alive)
        # READY=1 promises a serving API: at this very moment the ready file
        # is there and /healthz answers.
        self.assertTrue(os.path.exists(self.ready_file), "READY=1 before the ready file")
        self.assertEqual(self.api_answers_healthz(), 200)
        return ready

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        stopping = self.systemd.wait_for("STOPPING", 30)
        rc = self.proc.wait(timeout=60)
        # Drain what is left (nothing may follow STOPPING=1 but a STATUS).
        while self.systemd.receive(0.2) is not None:
            pass
        return stopping, rc

    def test_ready_watchdog_stopping(self):
        self.start()
        ready = self.wait_ready()
        self.assertEqual(ready.fields["READY"], "1")
        self.assertIn("STATUS", ready.fields)
        self.assertIn("api on 127.0.0.1:", ready.fields["STATUS"])

        # Pings every WATCHDOG_USEC/2 = 1 s: at least 4 in 5 s.
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            self.systemd.receive(deadline - time.monotonic())
        pings = [m.at for m in self.systemd.received if m.fields.get("WATCHDOG") == "1"]
        after_ready = [t for t in pings if t >= ready.at]
        self.assertGreaterEqual(len(after_ready), 4, self.systemd.received)
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        self.assertLess(max(gaps), WATCHDOG_USEC / 1e6, "pings too far apart: %r" % gaps)
        self.assertGreater(min(gaps), 0.5, "pings too close: %r" % gaps)

        stopping, rc = self.stop()
        self.assertEqual(stopping.fields["STOPPING"], "1")
        self.assertEqual(rc, 0, self._log())
        index = self.systemd.received.index(stopping)
        later = self.systemd.received[index + 1:]
        self.assertFalse([m for m in later if "WATCHDOG" in m.fields or "READY" in m.fields],
                         "after STOPPING=1: %r" % later)

        # Order: READY before STOPPING, exactly one of each.
        keys = [k for m in self.systemd.received for k in m.fields if k in ("READY", "STOPPING")]
        self.assertEqual(keys, ["READY", "STOPPING"])
        # NotifyAccess=main: everything comes from feedd's own pid.
        self.assertEqual({m.pid for m in self.systemd.received}, {self.proc.pid})

    def test_watchdog_for_another_pid_is_off(self):
        # sd_watchdog_enabled() ignores WATCHDOG_USEC meant for another pid.
        self.start({"WATCHDOG_PID": str(os.getpid())})
        ready = self.wait_ready()
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            self.systemd.receive(deadline - time.monotonic())
        stopping, rc = self.stop()
        self.assertEqual(rc, 0, self._log())
        self.assertFalse([m for m in self.systemd.received if "WATCHDOG" in m.fields],
                         self.systemd.received)
        self.assertEqual(ready.fields["READY"], "1")
        self.assertEqual(stopping.fields["STOPPING"], "1")

    def test_no_notify_socket_is_a_no_op(self):
        # Without NOTIFY_SOCKET (not run by systemd) nothing is sent and
        # feedd runs as usual.
        self.start({"NOTIFY_SOCKET": None})
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not os.path.exists(self.ready_file):
            self.assertIsNone(self.proc.poll(), self._log())
            self.assertLess(time.monotonic(), deadline, "no ready file")
            time.sleep(0.05)
        self.assertEqual(self.api_answers_healthz(), 200)
        self.assertIsNone(self.systemd.receive(1.5))
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(timeout=60), 0, self._log())
        self.assertEqual(self.systemd.received, [])


if __name__ == "__main__":
    unittest.main()
