"""HTTPS on the API (docs/security.md, "TLS") against the real daemon.

A CA, server and client certificates are made at test time with the
`openssl` command. Covered: the API over TLS with Python's ssl module and
with feedctl (token file and CA file), plain HTTP refused on the TLS port,
TLS 1.1 refused, a certificate rotated by SIGHUP seen on a new connection
(and a failed reload keeping the old one), and mTLS refusing a client
without a certificate and one whose certificate another CA signed.
"""

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import unittest
import warnings

from feedd_harness import SharedDaemonTestCase
from test_auth import SECRETS, bearer, run_to_exit, tokens_text, write_tokens
from test_http_errors import metric_value, metrics_text, recv_all, wait_for
from test_worker import Worker, daemon_settings


def openssl(*args, cwd):
    proc = subprocess.run(["openssl"] + list(args), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    if proc.returncode != 0:
        raise AssertionError("openssl %s failed: %s" % (" ".join(args), proc.stderr.decode()))


def make_ca(directory, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
            "-subj", "/CN=" + name, cwd=directory)
    return os.path.join(directory, name + ".pem")


def make_cert(directory, name, ca, usage):
    """A certificate `name`.pem/.key signed by CA `ca`; usage is serverAuth or clientAuth."""
    ext = os.path.join(directory, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=%s\n" % usage)
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name,
            cwd=directory)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", name + ".pem",
            cwd=directory)
    os.chmod(os.path.join(directory, name + ".key"), 0o600)
    return os.path.join(directory, name + ".pem"), os.path.join(directory, name + ".key")


class TlsFixtures:
    """A CA made at test time (ca.pem) with server certificates signed by it
    (server, rotated), client certificates (client by the CA; stranger by
    another CA), the live pair a daemon reads (live.pem/.key, a copy of
    server's, which rotation tests replace) and a tokens file of `token_names`."""

    def __init__(self, prefix, token_names):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.ca = make_ca(self.dir, "ca")
        make_cert(self.dir, "server", "ca", "serverAuth")
        make_cert(self.dir, "rotated", "ca", "serverAuth")
        make_cert(self.dir, "client", "ca", "clientAuth")
        make_ca(self.dir, "other-ca")
        make_cert(self.dir, "stranger", "other-ca", "clientAuth")
        self.cert = os.path.join(self.dir, "live.pem")
        self.key = os.path.join(self.dir, "live.key")
        shutil.copy(os.path.join(self.dir, "server.pem"), self.cert)
        shutil.copy(os.path.join(self.dir, "server.key"), self.key)
        self.tokens = os.path.join(self.dir, "tokens")
        write_tokens(self.tokens, tokens_text(token_names))

    def give_to(self, cls):
        """Sets dir, ca, cert, key and tokens on a test class, whose class
        clean-ups remove the directory."""
        cls.addClassCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        for name in ("dir", "ca", "cert", "key", "tokens"):
            setattr(cls, name, getattr(self, name))


class _TlsBase(SharedDaemonTestCase):
    client_ca = False
    daemon_args = ()

    @classmethod
    def daemon_options(cls):
        TlsFixtures("feedd-tls-", ["reader", "writer", "admin"]).give_to(cls)
        args = ["--http.tls_cert_file=" + cls.cert, "--http.tls_key_file=" + cls.key,
                "--auth.tokens_file=" + cls.tokens]
        if cls.client_ca:
            args.append("--http.tls_client_ca_file=" + cls.ca)
        args += list(cls.daemon_args)
        return {"name": "feedd-tls", "extra_args": args,
                "ssl_context": cls.context("client" if cls.client_ca else None)}

    @classmethod
    def context(cls, client_cert=None, **kwargs):
        ctx = ssl.create_default_context(cafile=cls.ca)
        for name, value in kwargs.items():
            setattr(ctx, name, value)
        if client_cert:
            ctx.load_cert_chain(os.path.join(cls.dir, client_cert + ".pem"),
                                os.path.join(cls.dir, client_cert + ".key"))
        return ctx

    def https_get(self, ctx, path="/healthz", headers=None):
        """One request on a new connection: (status, peer certificate's CN)."""
        with socket.create_connection((self.daemon.host, self.daemon.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                cn = dict(x[0] for x in tls.getpeercert()["subject"])["commonName"]
                lines = ["GET %s HTTP/1.1" % path, "Host: 127.0.0.1", "Connection: close"]
                lines += ["%s: %s" % kv for kv in (headers or {}).items()]
                tls.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
                answer = b""
                while True:
                    chunk = tls.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
        status = int(answer.split(b" ", 2)[1])
        return status, cn

    def feedctl(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
        return subprocess.run([os.environ["FEEDCTL_BIN"], "--ready-file", self.daemon.ready_file]
                              + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, timeout=60)

    def stderr(self):
        with open(self.daemon.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def handshake_failures(self):
        return metric_value(metrics_text(self.daemon), "feedd_http_connections_rejected_total",
                            'reason="tls_handshake"')


class HttpsTest(_TlsBase):
    def test_api_over_tls_with_python_ssl(self):
        client = self.daemon.client()
        self.assertStatus(client.request("GET", "/healthz"), 200, "healthz over TLS")
        self.assertError(client.request("GET", "/v1/containers"), 401, "unauthorized")
        self.assertStatus(client.request("GET", "/v1/containers", None, bearer("reader")), 200,
                          "with a token over TLS")
        status, cn = self.https_get(self.context())
        self.assertEqual((status, cn), (200, "server"))

    def test_feedctl_over_tls(self):
        token_file = os.path.join(self.dir, "admin.token")
        with open(token_file, "w") as f:
            f.write(SECRETS["admin"] + "\n")
        proc = self.feedctl("--token-file", token_file, "--ca-file", self.ca, "processors")
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        self.assertIn("usernames", proc.stdout.decode())
        # Without the CA file feedctl speaks plain HTTP, which the port refuses
        # (exit 3: the daemon could not be reached).
        proc = self.feedctl("--token-file", token_file, "processors")
        self.assertEqual(proc.returncode, 3, proc.stdout.decode())
        # A CA that did not sign the server's certificate.
        proc = self.feedctl("--token-file", token_file, "--ca-file",
                            os.path.join(self.dir, "other-ca.pem"), "processors")
        self.assertEqual(proc.returncode, 3, proc.stdout.decode())
        self.assertIn("certificate verify failed", proc.stderr.decode())
        # The token from the environment; without one, 401.
        env_proc = subprocess.run(
            [os.environ["FEEDCTL_BIN"], "--ready-file", self.daemon.ready_file, "--ca-file",
             self.ca, "processors"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
            env={"PATH": os.environ.get("PATH", ""), "FEEDD_TOKEN": SECRETS["reader"]})
        self.assertEqual(env_proc.returncode, 0, env_proc.stderr.decode())
        proc = self.feedctl("--ca-file", self.ca, "processors")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("unauthorized", proc.stderr.decode())

    def test_feedctl_import_over_tls(self):
        token_file = os.path.join(self.dir, "writer.token")
        with open(token_file, "w") as f:
            f.write(SECRETS["writer"] + "\n")
        items = os.path.join(self.dir, "users.ndjson")
        with open(items, "w") as f:
            for i in range(500):
                f.write(json.dumps({"id": "tls%d" % i, "userId": "tls%d" % i, "type": "user",
                                    "username": "user %d" % i}) + "\n")
        proc = self.feedctl("--token-file", token_file, "--ca-file", self.ca, "--no-progress",
                            "import", "users", items)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        report = json.loads(proc.stdout.decode())
        self.assertEqual((report["created"], report["failed"], report["complete"]),
                         (500, 0, True), report)
        status, _, item = self.daemon.client().request(
            "GET", "/v1/containers/users/items/tls499/tls499", None, bearer("reader"))
        self.assertEqual((status, item.get("username")), (200, "user 499"), item)
        # A reader may not import (403, exit 1); a CA that did not sign the
        # server's certificate cannot reach it (exit 3).
        reader_file = os.path.join(self.dir, "reader.token")
        with open(reader_file, "w") as f:
            f.write(SECRETS["reader"] + "\n")
        proc = self.feedctl("--token-file", reader_file, "--ca-file", self.ca, "--no-progress",
                            "import", "users", items)
        self.assertEqual(proc.returncode, 1, proc.stderr.decode())
        self.assertIn("forbidden", proc.stderr.decode())
        proc = self.feedctl("--token-file", token_file, "--ca-file",
                            os.path.join(self.dir, "other-ca.pem"), "import", "users", items)
        self.assertEqual(proc.returncode, 3, proc.stderr.decode())
        self.assertIn("certificate verify failed", proc.stderr.decode())

    def test_plain_http_is_refused_on_the_tls_port(self):
        before = self.handshake_failures()
        with socket.create_connection((self.daemon.host, self.daemon.port), timeout=10) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = recv_all(s)
        self.assertNotIn(b"HTTP/1.1", answer)
        self.assertNotIn(b"ok", answer)
        wait_for(lambda: self.handshake_failures() == before + 1, "the counted refusal")
        self.assertTrue(self.daemon.alive())

    def test_bad_tls_files_are_refused_at_start(self):
        rotated = os.path.join(self.dir, "rotated.pem")
        for args, why in (
                (["--http.tls_cert_file=" + rotated, "--http.tls_key_file=" + self.key],
                 "key values mismatch"),
                (["--http.tls_cert_file=" + self.cert,
                  "--http.tls_key_file=" + os.path.join(self.dir, "missing.key")],
                 "cannot load the private key"),
                (["--http.tls_cert_file=" + self.cert], "go together")):
            for check in ([], ["--check-config"]):
                rc, err = run_to_exit(check + ["--listen=127.0.0.1:0",
                                               "--metrics-listen=127.0.0.1:0"] + args)
                self.assertEqual(rc, 2, err)
                self.assertIn(why, err)

    def test_tls_below_1_2_is_refused(self):
        def client(maximum):
            ctx = self.context()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                ctx.minimum_version = ssl.TLSVersion.TLSv1
                ctx.maximum_version = maximum
            ctx.set_ciphers("ALL:@SECLEVEL=0")  # the client offers TLS 1.0 and 1.1 too
            return ctx
        # The same client is served TLS 1.2, so the refusal is the server's.
        self.assertEqual(self.https_get(client(ssl.TLSVersion.TLSv1_2))[0], 200)
        before = self.handshake_failures()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            tls11 = client(ssl.TLSVersion.TLSv1_1)
        with self.assertRaises((ssl.SSLError, ConnectionResetError)):
            self.https_get(tls11)
        wait_for(lambda: self.handshake_failures() == before + 1, "the counted refusal")

    def test_certificate_rotated_by_sighup(self):
        kept = self.daemon.client()
        self.assertStatus(kept.request("GET", "/healthz"), 200, "before")
        self.assertEqual(self.https_get(self.context())[1], "server")
        try:
            # A key that does not match the certificate: the reload fails and
            # the old pair keeps serving.
            shutil.copy(os.path.join(self.dir, "rotated.pem"), self.cert)
            self.daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "cannot reload the TLS certificate" in self.stderr(),
                     "the failed reload's log line")
            self.assertEqual(self.https_get(self.context())[1], "server")

            shutil.copy(os.path.join(self.dir, "rotated.key"), self.key)
            self.daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.https_get(self.context())[1] == "rotated",
                     "the rotated certificate on a new connection")
            # The connection opened before the rotation still works.
            self.assertStatus(kept.request("GET", "/healthz"), 200, "kept connection")
            self.assertEqual(kept.connects, 1)
        finally:
            shutil.copy(os.path.join(self.dir, "server.pem"), self.cert)
            shutil.copy(os.path.join(self.dir, "server.key"), self.key)
            self.daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.https_get(self.context())[1] == "server", "the first pair")


class MutualTlsTest(_TlsBase):
    client_ca = True

    def assertRefused(self, ctx, what):
        """The connection fails, and the server counts a failed handshake."""
        before = self.handshake_failures()
        try:
            status, _ = self.https_get(ctx)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, IndexError):
            wait_for(lambda: self.handshake_failures() == before + 1, what + ": counted")
            return
        self.fail("%s: the server answered %s" % (what, status))

    def test_client_certificate_of_the_ca_is_accepted(self):
        self.assertEqual(self.https_get(self.context("client")), (200, "server"))
        client = self.daemon.client()
        self.assertStatus(client.request("GET", "/v1/containers", None, bearer("reader")), 200,
                          "mTLS with a token")

    def test_no_client_certificate_is_refused(self):
        self.assertRefused(self.context(), "no client certificate")
        # Logged at most once per 10 s: this or an earlier refusal is there.
        self.assertRegex(self.stderr(), r"TLS handshake with 127\.0\.0\.1:\d+ failed")

    def test_certificate_of_another_ca_is_refused(self):
        self.assertRefused(self.context("stranger"), "a certificate of another CA")

    def test_feedctl_with_a_client_certificate(self):
        token_file = os.path.join(self.dir, "reader.token")
        with open(token_file, "w") as f:
            f.write(SECRETS["reader"] + "\n")
        proc = self.feedctl("--token-file", token_file, "--ca-file", self.ca, "--cert-file",
                            os.path.join(self.dir, "client.pem"), "--key-file",
                            os.path.join(self.dir, "client.key"), "processors")
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        proc = self.feedctl("--token-file", token_file, "--ca-file", self.ca, "processors")
        self.assertEqual(proc.returncode, 3, proc.stdout.decode())


class WorkerOverTlsTest(_TlsBase):
    """feedd worker runs usernames and user_posts, reaching the API over HTTPS with a token."""
    daemon_args = daemon_settings()

    def test_worker_writes_views_over_https_with_its_token(self):
        token_file = os.path.join(self.dir, "writer.token")
        with open(token_file, "w") as f:
            f.write(SECRETS["writer"] + "\n")
        worker = Worker(self.daemon, "worker-tls",
                        extra_args=["--worker.tls_ca_file=" + self.ca,
                                    "--worker.token_file=" + token_file])
        self.addCleanup(worker.stop)
        client = self.daemon.client()
        self.assertStatus(client.create("users", {"id": "u1", "userId": "u1", "type": "user",
                                                  "username": "ana"}, bearer("writer")),
                          201, "user")
        self.assertStatus(client.create("posts", {
            "id": "p1", "postId": "p1", "type": "post", "userId": "u1", "title": "t",
            "content": "c", "creationDate": "2026-11-26T10:00:00Z", "commentCount": 0,
            "likeCount": 0}, bearer("writer")), 201, "post")

        def copied():
            status, _, post = client.read("posts", "p1", "p1", bearer("reader"))
            return status == 200 and post.get("userUsername") == "ana"
        wait_for(copied, "the worker's username copy on the post", timeout_s=60)
        self.assertIn("starting; daemon at https://127.0.0.1:%d with a bearer token"
                      % self.daemon.port, worker.logs())

    def test_worker_with_a_refused_token_stops(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
        env["FEEDD_TOKEN"] = "not-a-token"
        proc = subprocess.run(
            [self.daemon.binary, "worker"] + daemon_settings() +
            ["--worker.api=127.0.0.1:%d" % self.daemon.port, "--worker.tls_ca_file=" + self.ca,
             "--worker.metrics_listen=127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        self.assertEqual(proc.returncode, 2, proc.stderr.decode()[-2000:])
        self.assertIn("the daemon refuses the worker's token", proc.stderr.decode())


if __name__ == "__main__":
    unittest.main()
