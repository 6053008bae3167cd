"""HTTPS on the metrics port (docs/security.md, "The metrics port").

A CA, server and client certificates are made at test time with the
`openssl` command (test_tls.py). Covered: a scrape over HTTPS with Python's
ssl module and basic authentication (metrics.authenticate), a scrape without
credentials refused, plain HTTP refused on the TLS metrics port and counted,
a client that never starts the handshake dropped after
metrics.request_timeout_ms, a certificate rotated by SIGHUP seen on a new
connection while a kept-alive connection goes on, a failed reload keeping
the old pair, and mTLS
(metrics.tls_client_ca_file) refusing a scraper without a certificate and
one whose certificate another CA signed. A `feedd worker` with the same
options serves its own metrics port over HTTPS with basic authentication,
and SIGHUP reloads its tokens and certificate.
"""

import base64
import os
import shutil
import signal
import socket
import ssl
import subprocess
import unittest

from feedd_harness import SharedDaemonTestCase
from test_auth import SECRETS, tokens_text, write_tokens
from test_http_errors import metric_value, recv_all, wait_for
from test_tls import TlsFixtures
from test_worker import Worker, daemon_settings

TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"


def basic(name):
    creds = base64.b64encode(("%s:%s" % (name, SECRETS[name])).encode()).decode()
    return {"Authorization": "Basic " + creds}


def parse_response(raw):
    """(status, headers dict with lowercase names, body) of one HTTP response."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ", 2)[1]), headers, body


def request_bytes(path, headers, close):
    lines = ["GET %s HTTP/1.1" % path, "Host: 127.0.0.1"]
    if close:
        lines.append("Connection: close")
    lines += ["%s: %s" % kv for kv in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class KeptConnection:
    """One TLS connection to the metrics port, used for several requests."""

    def __init__(self, address, ctx):
        host, _, port = address.rpartition(":")
        raw = socket.create_connection((host, int(port)), timeout=10)
        self.tls = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
        self.buffer = b""

    def get(self, path, headers=None):
        self.tls.sendall(request_bytes(path, headers, close=False))
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.tls.recv(65536)
            if not chunk:
                raise AssertionError("the metrics port closed the kept connection")
            self.buffer += chunk
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        status, found, _ = parse_response(head + b"\r\n\r\n")
        length = int(found["content-length"])
        while len(rest) < length:
            chunk = self.tls.recv(65536)
            if not chunk:
                raise AssertionError("the metrics port closed the kept connection mid-body")
            rest += chunk
        self.buffer = rest[length:]
        return status, found, rest[:length]

    def close(self):
        self.tls.close()


class _MetricsTlsBase(SharedDaemonTestCase):
    client_ca = False

    @classmethod
    def daemon_options(cls):
        TlsFixtures("feedd-metrics-tls-", ["reader", "writer"]).give_to(cls)
        args = ["--metrics.tls_cert_file=" + cls.cert, "--metrics.tls_key_file=" + cls.key,
                "--auth.tokens_file=" + cls.tokens, "--metrics.authenticate=true"]
        if cls.client_ca:
            args.append("--metrics.tls_client_ca_file=" + cls.ca)
        return {"name": "feedd-metrics-tls", "extra_args": args}

    @classmethod
    def daemon_started(cls):
        cls.address = cls.daemon.ready["metrics"]

    @classmethod
    def context(cls, client_cert=None):
        ctx = ssl.create_default_context(cafile=cls.ca)
        if client_cert:
            ctx.load_cert_chain(os.path.join(cls.dir, client_cert + ".pem"),
                                os.path.join(cls.dir, client_cert + ".key"))
        return ctx

    def scrape(self, ctx, headers=None, path="/metrics"):
        """One request on a new TLS connection: (status, headers, body, peer certificate's CN)."""
        host, _, port = self.address.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                cn = dict(x[0] for x in tls.getpeercert()["subject"])["commonName"]
                tls.sendall(request_bytes(path, headers, close=True))
                answer = b""
                while True:
                    chunk = tls.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
        status, found, body = parse_response(answer)
        return status, found, body, cn

    def metrics(self):
        ctx = self.context("client" if self.client_ca else None)
        status, _, body, _ = self.scrape(ctx, basic("reader"))
        self.assertEqual(status, 200, body[:300])
        return body.decode()

    def handshake_failures(self):
        return metric_value(self.metrics(), "feedd_metrics_connections_rejected_total",
                            'reason="tls_handshake"')

    def stderr(self):
        with open(self.daemon.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()


class MetricsHttpsTest(_MetricsTlsBase):
    def test_scrape_over_https_with_basic_authentication(self):
        status, headers, body, cn = self.scrape(self.context(), basic("reader"))
        self.assertEqual((status, cn), (200, "server"), body[:300])
        self.assertEqual(headers["content-type"], TEXT_FORMAT)
        text = body.decode()
        self.assertIn("# TYPE feedd_up gauge\nfeedd_up 1\n", text)
        self.assertIn("feedd_storage_commit_duration_seconds_bucket", text)
        # Any role may scrape; a wrong secret or none may not.
        self.assertEqual(self.scrape(self.context(), basic("writer"))[0], 200)
        wrong = {"Authorization": "Basic " + base64.b64encode(b"reader:nope").decode()}
        for headers in (None, wrong, {"Authorization": "Bearer " + SECRETS["reader"]}):
            status, found, _, _ = self.scrape(self.context(), headers)
            self.assertEqual(status, 401, headers)
            self.assertEqual(found.get("www-authenticate"), 'Basic realm="feedd"')
        # Only /metrics, only GET and HEAD.
        self.assertEqual(self.scrape(self.context(), basic("reader"), path="/v1/containers")[0],
                         404)
        self.assertEqual(self.scrape(self.context(), basic("reader"), path="/metrics?x=1")[0], 200)

    def test_the_log_names_https(self):
        self.assertIn("metrics on https://" + self.address + "/metrics", self.stderr())

    def test_plain_http_is_refused_on_the_tls_metrics_port(self):
        before = self.handshake_failures()
        host, _, port = self.address.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(request_bytes("/metrics", basic("reader"), close=True))
            answer = recv_all(s)
        self.assertNotIn(b"HTTP/1.1", answer)
        self.assertNotIn(b"feedd_", answer)
        wait_for(lambda: self.handshake_failures() == before + 1, "the refusal counted")

    def test_a_client_that_never_starts_the_handshake_is_dropped(self):
        # metrics.request_timeout_ms (3 s by default) bounds the handshake too.
        before = self.handshake_failures()
        host, _, port = self.address.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            self.assertEqual(recv_all(s), b"")
        wait_for(lambda: self.handshake_failures() == before + 1, "the dropped client counted")

    def test_certificate_rotated_by_sighup(self):
        kept = KeptConnection(self.address, self.context())
        try:
            self.assertEqual(kept.get("/metrics", basic("reader"))[0], 200)
            self.assertEqual(self.scrape(self.context(), basic("reader"))[3], "server")
            try:
                # A key that does not match the certificate: the reload fails
                # and the old pair keeps serving.
                shutil.copy(os.path.join(self.dir, "rotated.pem"), self.cert)
                self.daemon.proc.send_signal(signal.SIGHUP)
                wait_for(lambda: "cannot reload the TLS certificate " + self.cert in self.stderr(),
                         "the failed reload's log line")
                self.assertEqual(self.scrape(self.context(), basic("reader"))[3], "server")

                shutil.copy(os.path.join(self.dir, "rotated.key"), self.key)
                self.daemon.proc.send_signal(signal.SIGHUP)
                wait_for(lambda: self.scrape(self.context(), basic("reader"))[3] == "rotated",
                         "the rotated certificate on a new connection")
                # The connection opened before the rotation still scrapes.
                self.assertEqual(kept.get("/metrics", basic("reader"))[0], 200)
            finally:
                shutil.copy(os.path.join(self.dir, "server.pem"), self.cert)
                shutil.copy(os.path.join(self.dir, "server.key"), self.key)
                self.daemon.proc.send_signal(signal.SIGHUP)
                wait_for(lambda: self.scrape(self.context(), basic("reader"))[3] == "server",
                         "the first pair")
        finally:
            kept.close()


class MetricsMutualTlsTest(_MetricsTlsBase):
    client_ca = True

    def assertRefused(self, ctx, what):
        before = self.handshake_failures()
        try:
            status, _, _, _ = self.scrape(ctx, basic("reader"))
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, IndexError):
            wait_for(lambda: self.handshake_failures() == before + 1, what + ": counted")
            return
        self.fail("%s: the metrics port answered %s" % (what, status))

    def test_client_certificate_of_the_ca_is_accepted(self):
        status, _, body, cn = self.scrape(self.context("client"), basic("reader"))
        self.assertEqual((status, cn), (200, "server"), body[:300])

    def test_no_client_certificate_is_refused(self):
        self.assertRefused(self.context(), "no client certificate")

    def test_certificate_of_another_ca_is_refused(self):
        self.assertRefused(self.context("stranger"), "a certificate of another CA")


class WorkerMetricsHttpsTest(SharedDaemonTestCase):
    """The worker's metrics port (worker.metrics_listen) under metrics.tls_* and
    metrics.authenticate; the daemon it works for serves plain HTTP."""

    daemon_name = "feedd-worker-metrics"
    daemon_args = daemon_settings()

    @classmethod
    def daemon_options(cls):
        TlsFixtures("feedd-worker-metrics-tls-", ["reader", "writer"]).give_to(cls)
        return super().daemon_options()

    @classmethod
    def daemon_started(cls):
        cls.worker = Worker(cls.daemon, "worker", extra_args=[
            "--metrics.tls_cert_file=" + cls.cert, "--metrics.tls_key_file=" + cls.key,
            "--auth.tokens_file=" + cls.tokens, "--metrics.authenticate=true"])
        cls.address = cls.worker.metrics_address

    @classmethod
    def tearDownClass(cls):
        cls.worker.stop()
        super().tearDownClass()

    def scrape(self, headers=None):
        """One request on a new TLS connection: (status, headers, body, peer certificate's CN)."""
        return _MetricsTlsBase.scrape(self, ssl.create_default_context(cafile=self.ca), headers)

    def test_scrape_over_https_with_basic_authentication(self):
        self.assertIn("metrics on https://" + self.address + "/metrics", self.worker.logs())
        status, headers, body, cn = self.scrape(basic("reader"))
        self.assertEqual((status, cn), (200, "server"), body[:300])
        self.assertEqual(headers["content-type"], TEXT_FORMAT)
        self.assertIn('feedd_worker_up{processor="usernames"} 1', body.decode())
        wrong = {"Authorization": "Basic " + base64.b64encode(b"reader:nope").decode()}
        for headers in (None, wrong):
            status, found, body, _ = self.scrape(headers)
            self.assertEqual(status, 401, headers)
            self.assertEqual(found.get("www-authenticate"), 'Basic realm="feedd"')
            self.assertNotIn(b"feedd_worker_up", body)

    def test_sighup_reloads_tokens_and_certificate(self):
        try:
            write_tokens(self.tokens, tokens_text(["writer"]))
            shutil.copy(os.path.join(self.dir, "rotated.pem"), self.cert)
            shutil.copy(os.path.join(self.dir, "rotated.key"), self.key)
            self.worker.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.scrape(basic("reader"))[0] == 401, "reader's token removed")
            status, _, body, cn = self.scrape(basic("writer"))
            self.assertEqual((status, cn), (200, "rotated"), body[:300])
        finally:
            write_tokens(self.tokens, tokens_text(["reader", "writer"]))
            shutil.copy(os.path.join(self.dir, "server.pem"), self.cert)
            shutil.copy(os.path.join(self.dir, "server.key"), self.key)
            self.worker.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.scrape(basic("reader"))[0] == 200, "reader's token back")
        self.assertEqual(self.scrape(basic("reader"))[3], "server")
        self.assertIsNone(self.worker.proc.poll(), "SIGHUP must not stop the worker")

    def test_a_worker_refuses_an_open_non_loopback_metrics_port(self):
        # Exit code 2 before anything starts; with metrics.authenticate the
        # same configuration passes the check.
        cmd = [self.daemon.binary, "worker", "--worker.api=127.0.0.1:1",
               "--worker.metrics_listen=0.0.0.0:0"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("worker.metrics_listen: 0.0.0.0:0 is not a loopback address", done.stderr)
        done = subprocess.run(cmd + ["--auth.tokens_file=" + self.tokens,
                                     "--metrics.authenticate=true", "--check-config"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)


if __name__ == "__main__":
    unittest.main()
