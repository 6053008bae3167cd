"""Test fixture for feedd integration tests: runs the real daemon binary.

FeeddDaemon starts `$FEEDD_BIN` on a fresh temporary data directory with an
ephemeral port and a ready file, waits for the ready file, and can stop
(SIGTERM, exit code must be 0), kill (SIGKILL) and restart it on the same data
directory. FeeddClient is a keep-alive HTTP/1.1 client (http.client) whose
request() returns (status, headers, parsed JSON body or None).
FeeddTestCase prints the daemon's captured stdout/stderr when a test fails;
SharedDaemonTestCase gives all tests of a class one daemon, started in
setUpClass and stopped in tearDownClass.

Python 3 standard library only.
"""

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0

# The blog scenario as a configuration file: the daemon builds the same file
# in as its default (daemon/default_config.h).
SCENARIO_CONFIG = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "..", "..", "configs", "feedd.conf"))


def feedd_binary():
    path = os.environ.get("FEEDD_BIN")
    if not path:
        here = os.path.dirname(os.path.abspath(__file__))
        guess = os.path.normpath(os.path.join(here, "..", "..", "build", "feedd"))
        if os.path.exists(guess):
            path = guess
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError(
            "FEEDD_BIN must name the feedd binary (got %r); "
            "run through ctest or export FEEDD_BIN=<build>/feedd" % path)
    return path


def q(segment):
    """Percent-encodes one path segment."""
    return urllib.parse.quote(segment, safe="")


def item_path(container, pk, item_id):
    return "/v1/containers/%s/items/%s/%s" % (q(container), q(pk), q(item_id))


def items_path(container):
    return "/v1/containers/%s/items" % q(container)


def batch_path(container, pk):
    return "/v1/containers/%s/partitions/%s/batch" % (q(container), q(pk))


def query_path(container):
    return "/v1/containers/%s/query" % q(container)


def strip_system(item):
    """The item without its top-level '_' properties."""
    if not isinstance(item, dict):
        return item
    return {k: v for k, v in item.items() if not k.startswith("_")}


def _tail(path, limit=20000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read()
    except OSError as e:
        return "<cannot read %s: %s>" % (path, e)
    text = data.decode("utf-8", "replace")
    if size > limit:
        text = "...[%d bytes cut]...\n" % (size - limit) + text
    return text


class DaemonError(AssertionError):
    pass


class FeeddDaemon:
    """One feedd process (and its restarts) on one temporary data directory."""

    def __init__(self, extra_args=(), sync=False, config=None, name="feedd", ssl_context=None):
        self.binary = feedd_binary()
        self.name = name
        self.workdir = tempfile.mkdtemp(prefix="feedd-it-")
        self.data_dir = os.path.join(self.workdir, "data")
        os.mkdir(self.data_dir)
        self.ready_file = os.path.join(self.workdir, "ready.json")
        self.stderr_path = os.path.join(self.workdir, "stderr.log")
        self.stdout_path = os.path.join(self.workdir, "stdout.log")
        self.config = config
        self.extra_args = list(extra_args)
        self.sync = sync
        self.ssl_context = ssl_context  # clients speak HTTPS with it when set
        self.proc = None
        self.ready = None
        self.host = None
        self.port = None
        self.starts = 0
        self._clients = []

    # ---- lifecycle ----
    def command(self):
        cmd = [self.binary]
        if self.config is not None:
            cmd += ["--config", self.config]
        cmd += [
            "--data-dir", self.data_dir,
            "--listen", "127.0.0.1:0",
            "--metrics-listen", "127.0.0.1:0",
            "--ready-file", self.ready_file,
            "--storage.sync=%s" % ("true" if self.sync else "false"),
        ]
        cmd += self.extra_args
        return cmd

    def start(self):
        if self.proc is not None and self.proc.poll() is None:
            raise DaemonError("%s is already running" % self.name)
        try:
            os.unlink(self.ready_file)
        except FileNotFoundError:
            pass
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
        self.starts += 1
        with open(self.stderr_path, "ab") as err, open(self.stdout_path, "ab") as out:
            marker = ("==== start #%d: %s\n" % (self.starts, " ".join(self.command()))).encode()
            err.write(marker)
            out.write(marker)
            err.flush()
            out.flush()
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=err, env=env,
                                         close_fds=True)
        self._wait_ready()
        return self

    def _wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        last_error = None
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise DaemonError("%s exited with code %s before it was ready\n%s"
                                  % (self.name, rc, self.logs()))
            try:
                with open(self.ready_file, "r", encoding="utf-8") as f:
                    ready = json.load(f)
                api = ready["api"]
                host, _, port = api.rpartition(":")
                self.host, self.port = host.strip("[]"), int(port)
                self.ready = ready
                return
            except FileNotFoundError:
                pass
            except (ValueError, KeyError, TypeError) as e:
                # The ready file is written atomically: a partial or malformed
                # file is a daemon bug unless it becomes valid before the deadline.
                last_error = e
            if time.monotonic() > deadline:
                self.kill()
                raise DaemonError("%s not ready after %.0f s (last ready-file error: %r)\n%s"
                                  % (self.name, READY_TIMEOUT_S, last_error, self.logs()))
            time.sleep(0.02)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _close_clients(self):
        for c in self._clients:
            c.close()
        self._clients = []

    def stop(self):
        """SIGTERM; the daemon must exit with code 0 within STOP_TIMEOUT_S."""
        self._close_clients()
        if self.proc is None:
            return
        rc = self.proc.poll()
        if rc is not None:
            raise DaemonError("%s had already exited with code %s before SIGTERM\n%s"
                              % (self.name, rc, self.logs()))
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise DaemonError("%s did not exit within %.0f s of SIGTERM\n%s"
                              % (self.name, STOP_TIMEOUT_S, self.logs()))
        if rc != 0:
            raise DaemonError("%s exited with code %s after SIGTERM (expected 0)\n%s"
                              % (self.name, rc, self.logs()))

    def kill(self):
        """SIGKILL (a crash). Returns True when the daemon was still running."""
        if self.proc is None:
            return False
        was_alive = self.proc.poll() is None
        if was_alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        # Clients are left alone: other threads may be using them; their
        # next request fails with a connection error.
        self._clients = []
        return was_alive

    def restart(self, graceful=True):
        if graceful:
            self.stop()
        else:
            self.kill()
        return self.start()

    def cleanup(self):
        """Kills the process if it still runs and removes the temporary directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_clients()
        if os.path.isdir(self.workdir):
            self._saved_logs = self.logs()  # for a failure report after cleanup
            shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self):
        if not os.path.isdir(self.workdir) and getattr(self, "_saved_logs", None):
            return self._saved_logs
        return ("---- %s stderr (%s) ----\n%s\n---- %s stdout ----\n%s\n---- end ----"
                % (self.name, self.stderr_path, _tail(self.stderr_path), self.name,
                   _tail(self.stdout_path, 4000)))

    # ---- clients ----
    def client(self, timeout=60):
        c = FeeddClient(self.host, self.port, timeout=timeout, ssl_context=self.ssl_context)
        self._clients.append(c)
        return c


class _CountingConnection(http.client.HTTPConnection):
    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._owner = owner

    def connect(self):
        super().connect()
        self._owner.connects += 1


class _CountingHttpsConnection(http.client.HTTPSConnection):
    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._owner = owner

    def connect(self):
        super().connect()
        self._owner.connects += 1


class FeeddClient:
    """Keep-alive HTTP client (HTTPS with ssl_context). Not thread-safe: use one per thread."""

    def __init__(self, host, port, timeout=60, ssl_context=None):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.conn = None
        self.connects = 0
        self.last_raw = b""

    def close(self):
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()

    def request(self, method, path, body=None, headers=None):
        """Sends one request on the kept-alive connection.

        body: None, bytes/str (sent as is), or a JSON-serialisable value.
        A JSON Content-Type is added when a body is sent, unless `headers`
        has a Content-Type (set it to None to send none).
        Returns (status, headers, parsed JSON or None); the raw body is in
        self.last_raw. Connection errors propagate (no silent retry).
        """
        hdrs = {}
        data = None
        if body is not None:
            if isinstance(body, bytes):
                data = body
            elif isinstance(body, str):
                data = body.encode("utf-8")
            else:
                data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            hdrs["Content-Type"] = "application/json"
        for k, v in (headers or {}).items():
            for existing in list(hdrs):
                if existing.lower() == k.lower():
                    del hdrs[existing]
            if v is not None:
                hdrs[k] = v
        if self.conn is None and self.ssl_context is not None:
            self.conn = _CountingHttpsConnection(self.host, self.port, timeout=self.timeout,
                                                 owner=self, context=self.ssl_context)
        elif self.conn is None:
            self.conn = _CountingConnection(self.host, self.port, timeout=self.timeout, owner=self)
        try:
            self.conn.request(method, path, body=data, headers=hdrs)
            resp = self.conn.getresponse()
            raw = resp.read()
        except BaseException:
            self.close()
            raise
        if resp.will_close:
            self.close()
        self.last_raw = raw
        parsed = None
        if raw:
            try:
                parsed = json.loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                parsed = None
        return resp.status, resp.headers, parsed

    # ---- conveniences ----
    def create(self, container, item, headers=None):
        return self.request("POST", items_path(container), item, headers)

    def upsert(self, container, pk, item_id, item, headers=None):
        return self.request("PUT", item_path(container, pk, item_id), item, headers)

    def read(self, container, pk, item_id, headers=None):
        return self.request("GET", item_path(container, pk, item_id), None, headers)

    def patch(self, container, pk, item_id, operations, headers=None):
        return self.request("PATCH", item_path(container, pk, item_id),
                            {"operations": operations}, headers)

    def delete(self, container, pk, item_id, headers=None):
        return self.request("DELETE", item_path(container, pk, item_id), None, headers)

    def batch(self, container, pk, operations, headers=None):
        return self.request("POST", batch_path(container, pk), {"operations": operations}, headers)

    def query(self, container, spec):
        return self.request("POST", query_path(container), spec)

    def changefeed(self, container=None, start="beginning", limit=None, wait_ms=None):
        params = []
        if container is not None:
            params.append(("container", container))
        if start is not None:
            params.append(("from", str(start)))
        if limit is not None:
            params.append(("limit", str(limit)))
        if wait_ms is not None:
            params.append(("waitMs", str(wait_ms)))
        return self.request("GET", "/v1/changefeed?" + urllib.parse.urlencode(params))

    def feed_info(self):
        status, _, body = self.request("GET", "/v1/feed")
        if status != 200 or not isinstance(body, dict):
            raise AssertionError("GET /v1/feed -> %s %r" % (status, self.last_raw[:500]))
        return body

    def head_lsn(self):
        head = self.feed_info().get("headLsn")
        if not isinstance(head, int) or isinstance(head, bool):
            raise AssertionError("GET /v1/feed: headLsn is not an integer: %r" % (head,))
        return head

    def all_changes(self, container=None, start="beginning", page=10000):
        """Every change from `start` up to the head at the time of the call."""
        head = self.head_lsn()
        out = []
        nxt = start
        previous = 0
        while True:
            status, _, body = self.changefeed(container, nxt, limit=page)
            if status != 200:
                raise AssertionError("changefeed from=%s -> %s %r" % (nxt, status, self.last_raw[:500]))
            out.extend(body["changes"])
            if not body["changes"] and container is None and int(body["next"]) <= head:
                raise AssertionError("changefeed from=%s returned nothing although head is %d"
                                     % (nxt, head))
            new_next = int(body["next"])
            if new_next <= previous:
                raise AssertionError("changefeed from=%s: next=%s does not advance" % (nxt, body["next"]))
            previous = nxt = new_next
            if nxt > head:
                return out

    def wait_quiescent(self, stable_s=0.3, timeout_s=15.0):
        """Waits until no write happens (head LSN unchanged) for stable_s.

        Background processors write derived views after client writes; tests
        that compare head LSNs wait for them to finish first. Returns the head.
        """
        deadline = time.monotonic() + timeout_s
        head = self.head_lsn()
        since = time.monotonic()
        while True:
            time.sleep(0.05)
            now_head = self.head_lsn()
            now = time.monotonic()
            if now_head != head:
                head, since = now_head, now
            elif now - since >= stable_s:
                return head
            if now > deadline:
                raise AssertionError("head LSN still moving after %.0f s (now %d)" % (timeout_s, head))


class FeeddTestCase(unittest.TestCase):
    """Prints the logs of the daemons in self.daemons() when a test fails."""

    maxDiff = 4000

    def daemons(self):
        found = []
        for obj in (self, type(self)):
            for v in vars(obj).values():
                if isinstance(v, FeeddDaemon) and v not in found:
                    found.append(v)
        return found

    def run(self, result=None):
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        if len(result.failures) + len(result.errors) > before:
            for d in self.daemons():
                sys.stderr.write("\n[%s failed] logs of %s:\n%s\n" % (self.id(), d.name, d.logs()))
        return out

    # ---- assertions ----
    def assertStatus(self, resp, status, what=""):
        got, _, body = resp
        self.assertEqual(got, status, "%s: expected HTTP %d, got %d with body %r"
                         % (what, status, got, body))

    def assertError(self, resp, status, code, what=""):
        got, _, body = resp
        self.assertEqual(got, status, "%s: expected HTTP %d %s, got %d with body %r"
                         % (what, status, code, got, body))
        self.assertIsInstance(body, dict, "%s: error body is not a JSON object" % what)
        err = body.get("error")
        self.assertIsInstance(err, dict, "%s: no error object in %r" % (what, body))
        self.assertEqual(err.get("code"), code, "%s: wrong error code in %r" % (what, body))
        self.assertIsInstance(err.get("message"), str, "%s: error message not a string: %r"
                              % (what, body))

    def assertLsnHeader(self, resp, what=""):
        _, headers, _ = resp
        value = headers.get("X-Feedd-Lsn")
        self.assertIsNotNone(value, "%s: no X-Feedd-Lsn header" % what)
        self.assertRegex(value, r"^[0-9]+$", "%s: X-Feedd-Lsn not an integer" % what)
        return int(value)

    def assertStoredItem(self, item, expected_body, what=""):
        """`item` has system properties and otherwise equals expected_body."""
        self.assertIsInstance(item, dict, what)
        self.assertIsInstance(item.get("_etag"), str, "%s: _etag missing in %r" % (what, item))
        self.assertIsInstance(item.get("_lsn"), int, "%s: _lsn missing in %r" % (what, item))
        self.assertIsInstance(item.get("_ts"), int, "%s: _ts missing in %r" % (what, item))
        self.assertEqual(strip_system(item), strip_system(expected_body), what)


class SharedDaemonTestCase(FeeddTestCase):
    """One daemon (cls.daemon) for all tests of the class; each test gets a client, self.c.

    Subclasses say which daemon: the class attributes daemon_name and daemon_args
    (extra command-line options), or daemon_options() overridden to return
    FeeddDaemon's keyword arguments when they are computed at set-up. Files a
    subclass makes for its daemon (tokens, certificates) it removes with
    cls.addClassCleanup; daemon_started() is called once the daemon is ready.

    setUpClass starts the daemon. If any part of it fails (daemon_options, the
    start, daemon_started), the class clean-ups run at once, last added first:
    the daemon is killed and its directory removed, and so are the subclass's
    files; tearDownClass is not called. tearDownClass stops the daemon (SIGTERM;
    an exit code other than 0 is an error) and the class clean-ups then remove
    it whether or not the stop succeeded. self.c is closed after each test.
    """

    daemon_name = "feedd"
    daemon_args = ()
    daemon = None

    @classmethod
    def daemon_options(cls):
        """Keyword arguments for FeeddDaemon."""
        return {"name": cls.daemon_name, "extra_args": cls.daemon_args}

    @classmethod
    def daemon_started(cls):
        """Called when cls.daemon is ready, still within setUpClass."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.daemon = FeeddDaemon(**cls.daemon_options())
            cls.addClassCleanup(cls.daemon.cleanup)
            cls.daemon.start()
            cls.daemon_started()
        except (KeyboardInterrupt, SystemExit):
            # unittest runs the class clean-ups after an Exception only.
            cls.doClassCleanups()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.c = self.daemon.client()
        self.addCleanup(self.c.close)
