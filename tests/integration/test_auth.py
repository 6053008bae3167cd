"""Authentication and roles (docs/security.md) against the real daemon.

A tokens file with a read, a write and an admin token: each role against
each route class (status and JSON error code), a wrong token, a missing and
malformed headers, /healthz and /readyz open, the audit log and
feedd_http_auth_failures_total, a SIGHUP reload that adds and removes a
token (and one that fails and keeps the old set), a tokens file others may
read refused at start, and the secure default: a non-loopback http.listen
needs a tokens file or auth.allow_unauthenticated.
"""

import base64
import hashlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import unittest

from feedd_harness import (FeeddDaemon, FeeddTestCase, SharedDaemonTestCase, batch_path,
                           feedd_binary, item_path, items_path, query_path)
from test_http_errors import metric_value, metrics_text, recv_all, wait_for

SECRETS = {"reader": "r-secret.1", "writer": "w-secret_2", "admin": "a~secret/3=="}
ROLES = {"reader": "read", "writer": "write", "admin": "admin"}


def tokens_text(names, extra=()):
    lines = ["# feedd tokens, written by test_auth"]
    for name in names:
        digest = hashlib.sha256(SECRETS[name].encode()).hexdigest()
        lines.append("%s %s sha256:%s   # %s" % (name, ROLES[name], digest, ROLES[name]))
    lines.extend(extra)
    return "\n".join(lines) + "\n"


def write_tokens(path, text, mode=0o600):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.chmod(path + ".tmp", mode)
    os.replace(path + ".tmp", path)


def bearer(name):
    return {"Authorization": "Bearer " + SECRETS[name]}


def run_to_exit(args, timeout=30):
    """Runs feedd with `args` (no ready wait); returns (exit code, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDD_")}
    with tempfile.TemporaryDirectory(prefix="feedd-auth-") as tmp:
        proc = subprocess.run([feedd_binary(), "--data-dir", os.path.join(tmp, "data")] + args,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, timeout=timeout)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


class AuthTest(SharedDaemonTestCase):
    @classmethod
    def daemon_options(cls):
        cls.tmp = tempfile.mkdtemp(prefix="feedd-tokens-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp)
        cls.tokens = os.path.join(cls.tmp, "tokens")
        write_tokens(cls.tokens, tokens_text(["reader", "writer", "admin"]))
        return {"name": "feedd-auth", "extra_args": ["--auth.tokens_file=" + cls.tokens]}

    def call(self, who, method, path, body=None, headers=None):
        hdrs = dict(bearer(who)) if who else {}
        hdrs.update(headers or {})
        return self.c.request(method, path, body, hdrs)

    def assertUnauthorized(self, resp, invalid_token, what):
        self.assertError(resp, 401, "unauthorized", what)
        challenge = resp[1].get("WWW-Authenticate")
        self.assertIsNotNone(challenge, what + ": no WWW-Authenticate header")
        self.assertTrue(challenge.startswith("Bearer"), challenge)
        self.assertEqual('error="invalid_token"' in challenge, invalid_token, challenge)

    # ---- route classes ----
    def routes(self, suffix):
        """(class, what, method, path, body, expected status when allowed)."""
        pk = "u-" + suffix
        user = {"id": pk, "userId": pk, "type": "user", "username": "n" + suffix}
        return [
            ("read", "list containers", "GET", "/v1/containers", None, 200),
            ("read", "read an item", "GET", item_path("users", "u0", "u0"), None, 404),
            ("read", "query", "POST", query_path("users"), {"partitionKey": "u0"}, 200),
            ("read", "change feed", "GET", "/v1/changefeed?from=beginning&limit=1", None, 200),
            ("read", "feed info", "GET", "/v1/feed", None, 200),
            ("read", "processors", "GET", "/v1/processors", None, 200),
            ("read", "a processor", "GET", "/v1/processors/usernames", None, 200),
            ("read", "parked", "GET", "/v1/processors/usernames/parked", None, 200),
            ("write", "create", "POST", items_path("users"), user, 201),
            ("write", "upsert", "PUT", item_path("users", pk, pk), user, 200),
            ("write", "patch", "PATCH", item_path("users", pk, pk),
             {"operations": [{"op": "set", "path": "/username", "value": "m"}]}, 200),
            ("write", "batch", "POST", batch_path("users", pk),
             {"operations": [{"op": "upsert", "body": user}]}, 200),
            ("write", "delete", "DELETE", item_path("users", pk, pk), None, 204),
            ("admin", "pause", "POST", "/v1/processors/usernames/pause", {}, 200),
            ("admin", "resume", "POST", "/v1/processors/usernames/resume", {}, 200),
            ("admin", "verify", "POST", "/v1/processors/usernames/verify?wait=true", {}, 200),
            ("admin", "reset", "POST", "/v1/processors/usernames/reset?lsn=oldest", {}, 200),
        ]

    def test_each_role_against_each_route_class(self):
        allowed = {"reader": {"read"}, "writer": {"read", "write"},
                   "admin": {"read", "write", "admin"}}
        for who in ("reader", "writer", "admin"):
            for cls, what, method, path, body, status in self.routes(who):
                label = "%s %s (%s %s)" % (who, what, method, path)
                resp = self.call(who, method, path, body)
                if cls in allowed[who]:
                    self.assertStatus(resp, status, label)
                else:
                    self.assertError(resp, 403, "forbidden", label)
                    self.assertIn(ROLES[who], resp[2]["error"]["message"], label)
        for cls, what, method, path, body, status in self.routes("anon"):
            self.assertUnauthorized(self.call(None, method, path, body), False,
                                    "no token, " + what)

    def test_health_and_readiness_are_open(self):
        self.assertStatus(self.call(None, "GET", "/healthz"), 200, "/healthz")
        self.assertStatus(self.call(None, "GET", "/readyz"), 200, "/readyz")
        # Unknown paths and wrong methods need a token before they are 404/405.
        self.assertUnauthorized(self.call(None, "GET", "/v1/nothing"), False, "unknown path")
        self.assertError(self.call("reader", "GET", "/v1/nothing"), 404, "not_found", "404")
        self.assertError(self.call("reader", "DELETE", "/v1/containers"), 405,
                         "method_not_allowed", "405")

    def test_wrong_missing_and_malformed_tokens(self):
        path = "/v1/containers"
        self.assertUnauthorized(self.call(None, "GET", path), False, "missing header")
        self.assertUnauthorized(
            self.call(None, "GET", path, headers={"Authorization": "Bearer not-a-token"}), True,
            "wrong token")
        # A secret differing from a real one in its last character only.
        near = SECRETS["admin"][:-1] + "A"
        self.assertUnauthorized(
            self.call(None, "GET", path, headers={"Authorization": "Bearer " + near}), True,
            "near token")
        for value in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", "Bearer\u00e9x".encode(),
                      SECRETS["admin"], "Bearer " + SECRETS["admin"] + ","):
            self.assertUnauthorized(
                self.call(None, "GET", path, headers={"Authorization": value}), True,
                "malformed %r" % (value,))
        # Scheme in any case, several spaces.
        self.assertStatus(
            self.call(None, "GET", path, headers={"Authorization": "bEaReR   " +
                                                  SECRETS["reader"]}), 200, "scheme case")

    def test_failures_are_counted_and_audited(self):
        def count(reason):
            return metric_value(metrics_text(self.daemon), "feedd_http_auth_failures_total",
                                'reason="%s"' % reason)
        before = {r: count(r) for r in ("missing", "malformed", "unknown_token", "forbidden")}
        self.call(None, "GET", "/v1/feed")
        self.call(None, "GET", "/v1/feed", headers={"Authorization": "Basic x"})
        self.call(None, "GET", "/v1/feed", headers={"Authorization": "Bearer nope"})
        self.call("reader", "POST", "/v1/processors/usernames/pause", {})
        for reason, value in before.items():
            self.assertEqual(count(reason), value + 1, reason)

        self.assertStatus(self.call("admin", "POST", "/v1/processors/usernames/resume", {}), 200,
                          "resume")
        wait_for(lambda: re.search(r"audit: POST /v1/processors/usernames/resume by token admin "
                                   r"from 127\.0\.0\.1:\d+", self.stderr()), "the audit line")
        text = self.stderr()
        # Refusals of a kind are logged once per 10 s: the first one is there.
        self.assertRegex(text, r"audit: refused POST /v1/\S+ from 127\.0\.0\.1:\d+: "
                               r"token reader has role read")
        for secret in SECRETS.values():
            self.assertNotIn(secret, text, "a secret was logged")

    def stderr(self):
        with open(self.daemon.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def test_bulk_import_needs_the_write_role(self):
        path = "/v1/containers/users/import"
        line = b'{"id":"imp1","userId":"imp1","type":"user","username":"i"}\n'
        headers = {"Content-Type": "application/x-ndjson"}
        self.assertUnauthorized(self.call(None, "POST", path, line, headers), False, "no token")
        self.assertError(self.call("reader", "POST", path, line, headers), 403, "forbidden",
                         "reader")
        status, _, body = self.call("writer", "POST", path, line, headers)
        self.assertEqual(status, 200, body)
        self.assertStatus(self.call("reader", "GET", item_path("users", "imp1", "imp1")), 200,
                          "the imported item")

    def test_feedctl_import_sends_the_token(self):
        feedctl = os.environ["FEEDCTL_BIN"]
        ndjson = os.path.join(self.tmp, "users.ndjson")
        with open(ndjson, "w") as f:
            f.write('{"id":"imp2","userId":"imp2","type":"user","username":"j"}\n')
        api = "%s:%d" % (self.daemon.host, self.daemon.port)
        for who, code in (("reader", 1), ("writer", 0)):
            token_file = os.path.join(self.tmp, who + ".token")
            with open(token_file, "w") as f:
                f.write(SECRETS[who] + "\n")
            r = subprocess.run([feedctl, "--api", api, "--token-file", token_file, "import",
                                "--no-progress", "users", ndjson],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, code, "%s: %s%s" % (who, r.stdout, r.stderr))
        self.assertStatus(self.call("reader", "GET", item_path("users", "imp2", "imp2")), 200,
                          "the item imported with the writer's token")

    def test_refused_before_the_body_is_read(self):
        # Without screening the server would wait for the announced body.
        head = (b"POST /v1/containers/users/items HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 4000000\r\n\r\n")
        before = metric_value(metrics_text(self.daemon), "feedd_http_requests_total",
                              'method="POST",route="/v1/containers/{c}/items",status="401"')
        with socket.create_connection((self.daemon.host, self.daemon.port), timeout=10) as s:
            s.sendall(head)
            answer = recv_all(s)  # closed after the answer: the body is never read
        self.assertTrue(answer.startswith(b"HTTP/1.1 401 "), answer[:200])
        self.assertIn(b'"code":"unauthorized"', answer)
        self.assertEqual(metric_value(metrics_text(self.daemon), "feedd_http_requests_total",
                                      'method="POST",route="/v1/containers/{c}/items",'
                                      'status="401"'), before + 1)
        # A refused request without a body keeps its connection.
        client = self.daemon.client()
        for _ in range(3):
            self.assertUnauthorized(client.request("GET", "/v1/feed"), False, "kept alive")
        self.assertStatus(client.request("GET", "/v1/feed", None, bearer("reader")), 200, "then")
        self.assertEqual(client.connects, 1)

    def test_sighup_reload_adds_and_removes_tokens(self):
        path = "/v1/containers"
        SECRETS["late"] = "late-secret"
        ROLES["late"] = "read"
        try:
            self.assertUnauthorized(self.call("late", "GET", path), True, "before reload")
            write_tokens(self.tokens, tokens_text(["writer", "admin", "late"]))
            self.daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.call("late", "GET", path)[0] == 200, "the added token")
            self.assertUnauthorized(self.call("reader", "GET", path), True, "removed token")
            self.assertStatus(self.call("writer", "GET", path), 200, "kept token")

            # A reload that fails (bad permissions, then a bad line) keeps the set.
            for text, mode, why in ((tokens_text(["reader"]), 0o644, "read or written by others"),
                                    ("reader read sha256:abc\n", 0o600, "line 1")):
                write_tokens(self.tokens, text, mode)
                self.daemon.proc.send_signal(signal.SIGHUP)
                wait_for(lambda: re.search("cannot reload auth.tokens_file.*" + why,
                                           self.stderr()), "the failed reload's log line")
                self.assertStatus(self.call("late", "GET", path), 200, "token kept: " + why)
                self.assertUnauthorized(self.call("reader", "GET", path), True, "still gone")
            self.assertTrue(self.daemon.alive())
        finally:
            write_tokens(self.tokens, tokens_text(["reader", "writer", "admin"]))
            self.daemon.proc.send_signal(signal.SIGHUP)
            wait_for(lambda: self.call("reader", "GET", path)[0] == 200, "the restored tokens")
            del SECRETS["late"]
            del ROLES["late"]


class MetricsAuthTest(FeeddTestCase):
    """metrics.authenticate: /metrics needs basic authentication with a token."""

    def test_metrics_need_a_token_name_and_secret(self):
        with tempfile.TemporaryDirectory(prefix="feedd-tokens-") as tmp:
            tokens = os.path.join(tmp, "tokens")
            write_tokens(tokens, tokens_text(["reader", "writer"]))
            daemon = FeeddDaemon(extra_args=["--auth.tokens_file=" + tokens,
                                             "--metrics.authenticate=true"],
                                 name="feedd-metrics-auth")
            self.addCleanup(daemon.cleanup)
            daemon.start()

            def scrape(user=None, password=None):
                conn = http.client.HTTPConnection(*daemon.ready["metrics"].rsplit(":", 1),
                                                  timeout=10)
                headers = {}
                if user is not None:
                    creds = base64.b64encode(("%s:%s" % (user, password)).encode()).decode()
                    headers["Authorization"] = "Basic " + creds
                try:
                    conn.request("GET", "/metrics", headers=headers)
                    resp = conn.getresponse()
                    return resp.status, resp.getheader("WWW-Authenticate"), resp.read()
                finally:
                    conn.close()

            status, challenge, _ = scrape()
            self.assertEqual(status, 401)
            self.assertIn('Basic realm="feedd"', challenge or "")
            self.assertEqual(scrape("reader", "wrong")[0], 401)
            self.assertEqual(scrape("writer", SECRETS["reader"])[0], 401, "another token's name")
            status, _, body = scrape("reader", SECRETS["reader"])
            self.assertEqual(status, 200)
            self.assertIn(b"feedd_http_auth_failures_total", body)
            daemon.stop()

    def test_metrics_authenticate_needs_a_tokens_file(self):
        rc, err = run_to_exit(["--check-config", "--metrics.authenticate=true"])
        self.assertEqual(rc, 2, err)
        self.assertIn("metrics.authenticate: true needs auth.tokens_file", err)


class AnyAddressDaemon(FeeddDaemon):
    """Listens on every address (0.0.0.0) instead of loopback."""

    def command(self):
        cmd = super().command()
        cmd[cmd.index("--listen") + 1] = "0.0.0.0:0"
        return cmd


class SecureDefaultTest(FeeddTestCase):
    def test_non_loopback_listen_is_refused_without_auth(self):
        rc, err = run_to_exit(["--http.listen=0.0.0.0:0", "--metrics-listen=127.0.0.1:0"])
        self.assertEqual(rc, 2, err)
        self.assertIn("0.0.0.0:0 is not a loopback address", err)
        self.assertIn("auth.tokens_file", err)

    def start_any_address(self, args):
        daemon = AnyAddressDaemon(extra_args=args, name="feedd-any-address")
        self.addCleanup(daemon.cleanup)
        daemon.start()
        self.assertTrue(daemon.ready["api"].startswith("0.0.0.0:"), daemon.ready)
        return daemon

    def test_non_loopback_listen_starts_with_tokens(self):
        with tempfile.TemporaryDirectory(prefix="feedd-tokens-") as tmp:
            tokens = os.path.join(tmp, "tokens")
            write_tokens(tokens, tokens_text(["reader"]))
            daemon = self.start_any_address(["--auth.tokens_file=" + tokens])
            client = daemon.client()
            self.assertError(client.request("GET", "/v1/containers"), 401, "unauthorized")
            self.assertStatus(client.request("GET", "/v1/containers", None, bearer("reader")),
                              200, "with the token")
            daemon.stop()

    def test_non_loopback_listen_starts_when_explicitly_open(self):
        daemon = self.start_any_address(["--auth.allow_unauthenticated=true"])
        self.assertStatus(daemon.client().request("GET", "/v1/containers"), 200, "open")
        daemon.stop()
        with open(daemon.stderr_path, encoding="utf-8") as f:
            self.assertIn("auth.allow_unauthenticated = true: anyone who can reach", f.read())


class StartRefusalTest(unittest.TestCase):
    def test_tokens_file_others_may_read_is_refused_at_start(self):
        with tempfile.TemporaryDirectory(prefix="feedd-tokens-") as tmp:
            tokens = os.path.join(tmp, "tokens")
            write_tokens(tokens, tokens_text(["reader"]), 0o644)
            rc, err = run_to_exit(["--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                   "--auth.tokens_file=" + tokens])
            self.assertEqual(rc, 2, err)
            self.assertIn("may be read or written by others (mode 0644)", err)
            rc, err = run_to_exit(["--check-config", "--auth.tokens_file=" + tokens])
            self.assertEqual(rc, 2, err)

    def test_missing_tokens_file_is_refused_at_start(self):
        rc, err = run_to_exit(["--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                               "--auth.tokens_file=/nonexistent/tokens"])
        self.assertEqual(rc, 2, err)
        self.assertIn("cannot open /nonexistent/tokens", err)


if __name__ == "__main__":
    unittest.main()
