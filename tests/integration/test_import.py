"""Bulk import (POST /v1/containers/{c}/import, feedctl import) of the real
feedd daemon, with storage.sync=true, the three views and the embedded
Kafka broker:

  * a few thousand NDJSON lines (users, then posts with comments and likes),
    some of them bad (not JSON, not an object, no id, a bad id, a number as
    partition key, an id repeated, a line too long, CRLF and blank lines),
    sent with chunked transfer coding in small pieces: the report names
    every bad line with its number and error code, and counts the rest;
  * every good item reads back as sent; the change feed holds one change per
    created item, with contiguous LSNs, marked "import": true; Kafka holds
    the same changes, byte for byte;
  * the import again, through `feedctl import` from a file: every line is
    skipped (resumable: nothing duplicated, no new LSN), and a line added
    since is created;
  * the views (usernames, user_posts, feed) are right afterwards
    (`POST .../verify` and `feedctl verify`);
  * onError=stop stops at the first bad line; a bad parameter and an unknown
    container are refused before anything is read.

Import jobs (?job=true, ImportJobTest): the body is spooled and answered
202 with the job, which reports lines and bytes done of their totals and
ends with the report the blocking import gives; a job is cancelled between
batches and keeps the report of what it committed; a client that goes away
once it has sent the body leaves the job running; a daemon killed during a
job reports it failed after its restart, and its spool is gone; a body over
import.spool_max_mb is 413, counted, and leaves no spool. A job is caught
running without timing: a job of 200,000 lines commits them in batches of
1 MiB, each synced, which takes seconds, and the test acts as soon as the
job reports progress (as tests/integration/test_jobs.py does for rebuilds).
"""

import http.client
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

from feedd_harness import FeeddDaemon, FeeddTestCase
from test_kafka import changes_with_raw, consume_all, wait_published
from test_processors import PROCESSORS, verify_all, wait_views_quiescent

USERS = 40
POSTS_PER_USER = 5
COMMENTS_PER_POST = 4
LIKES_PER_POST = 6


def user(u):
    return {"id": "u%d" % u, "userId": "u%d" % u, "type": "user", "username": "name%d" % u}


def posts_lines():
    """(line text, item or None when the line is bad, expected error code)."""
    out = []
    for u in range(USERS):
        for p in range(POSTS_PER_USER):
            pid = "p%d-%d" % (u, p)
            out.append({"id": pid, "postId": pid, "type": "post", "userId": "u%d" % u,
                        "userUsername": "name%d" % u, "title": "t", "content": "c" * 200,
                        "creationDate": "2026-11-%02dT10:%02d:00Z" % (1 + u % 28, p),
                        "commentCount": COMMENTS_PER_POST, "likeCount": LIKES_PER_POST})
            for c in range(COMMENTS_PER_POST):
                out.append({"id": "c%d" % c, "postId": pid, "type": "comment",
                            "userId": "u%d" % ((u + c) % USERS),
                            "userUsername": "name%d" % ((u + c) % USERS), "content": "h" * 900})
            for l in range(LIKES_PER_POST):
                out.append({"id": "l%d" % l, "postId": pid, "type": "like",
                            "userId": "u%d" % ((u + l) % USERS),
                            "userUsername": "name%d" % ((u + l) % USERS)})
    return out


def ndjson(items):
    return "".join(json.dumps(i, separators=(",", ":")) + "\n" for i in items).encode()


def post_import(daemon, container, body, query="", piece=7919, content_type="application/x-ndjson"):
    """Sends `body` with chunked transfer coding in pieces of `piece` bytes;
    returns (status, parsed report)."""
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=120)
    try:
        path = "/v1/containers/%s/import%s" % (container, ("?" + query) if query else "")
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", content_type)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        try:
            for i in range(0, len(body), piece):
                chunk = body[i:i + piece]
                conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the daemon stopped reading (onError=stop); its answer follows
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read().decode())
    finally:
        conn.close()


class ImportTest(FeeddTestCase):

    def setUp(self):
        self.daemon = FeeddDaemon(name="feedd-import", sync=True,
                                  extra_args=["--import.batch_mb=1", "--import.sync_mb=2"])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        self.client = self.daemon.client()

    def test_import_report_feed_kafka_rerun_and_views(self):
        c = self.client
        users = [user(u) for u in range(USERS)]
        r_status, report = post_import(self.daemon, "users", ndjson(users))
        self.assertEqual(r_status, 200, report)
        self.assertEqual((report["created"], report["skipped"], report["failed"]), (USERS, 0, 0),
                         report)
        self.assertTrue(report["complete"], report)

        items = posts_lines()
        good = list(items)
        # Bad lines at known places (1-based line numbers of the body).
        lines = [json.dumps(i, separators=(",", ":")) for i in items]
        bad = {
            3: ("not json at all", "invalid_json"),
            10: ("[1,2,3]", "invalid_item"),
            50: ('{"postId":"p0-0","type":"comment"}', "invalid_id"),
            100: ('{"id":"bad/id","postId":"p0-0"}', "invalid_id"),
            200: ('{"id":"n1","postId":7}', "invalid_partition_key"),
            300: ('{"id":"big","postId":"p1-1","pad":"%s"}' % ("x" * (5 << 20)),
                  "payload_too_large"),
        }
        for number in sorted(bad):
            lines.insert(number - 1, bad[number][0])
        # A repeated id is skipped (ifExists=skip holds within an import too).
        lines.append(lines[0])
        # Blank lines and CRLF endings are fine; blank lines count as lines.
        body = ("\r\n".join(lines[:500]) + "\n\n   \n" + "\n".join(lines[500:]) + "\n").encode()
        blank_after = 500  # two blank lines follow line 500
        status, report = post_import(self.daemon, "posts", body)
        self.assertEqual(status, 200, report)
        self.assertTrue(report["complete"], report)
        self.assertEqual(report["created"], len(good), report)
        self.assertEqual(report["skipped"], 1, report)
        self.assertEqual(report["failed"], len(bad), report)
        self.assertEqual(report["errorsOmitted"], 0, report)
        reported = {e["line"]: e["code"] for e in report["errors"]}
        expected = {(n if n <= blank_after else n + 2): code for n, (_, code) in bad.items()}
        self.assertEqual(reported, expected, report["errors"])
        self.assertGreater(report["batches"], 1, "batches of import.batch_mb=1: %r" % report)

        # Every good item reads back as sent.
        for item in good[::7]:
            st, _, stored = c.read("posts", item["postId"], item["id"])
            self.assertEqual(st, 200, item)
            self.assertEqual({k: v for k, v in stored.items() if not k.startswith("_")}, item)

        # The feed: one change per created item, contiguous, marked as imports.
        changes = changes_with_raw(c)
        envelopes = [e for e, _ in changes]
        self.assertEqual([e["lsn"] for e in envelopes], list(range(1, len(envelopes) + 1)))
        imported = [e for e in envelopes if e["container"] in ("users", "posts")
                    and e.get("import") is True]
        self.assertEqual(len(imported), USERS + len(good))
        self.assertTrue(all(e["op"] == "create" and e["before"] is None for e in imported))
        self.assertEqual(report["lastLsn"] - report["firstLsn"] + 1, len(good), report)

        # Kafka: the same envelopes, byte for byte.
        wait_published(self, c, what="after the import")
        messages, _ = consume_all(self.daemon.ready["kafka"])
        by_lsn = {m.lsn: m.value for m in messages}
        for envelope, raw in changes:
            self.assertEqual(by_lsn.get(envelope["lsn"]), raw, envelope["lsn"])

        # The views are right.
        wait_views_quiescent(self, c)
        verify_all(self, self.daemon, c, "after the import")

        # The re-run, with feedctl from a file: nothing new; then one line more.
        head = c.head_lsn()
        feedctl = os.environ.get("FEEDCTL_BIN")
        if feedctl:
            with tempfile.NamedTemporaryFile(suffix=".ndjson") as f:
                f.write(ndjson(good))
                f.flush()
                r = subprocess.run([feedctl, "--api", "%s:%d" % (self.daemon.host, self.daemon.port),
                                    "import", "posts", f.name],
                                   capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            rerun = json.loads(r.stdout)
            self.assertIn("0 created", r.stderr)
        else:
            status, rerun = post_import(self.daemon, "posts", ndjson(good))
            self.assertEqual(status, 200, rerun)
        self.assertEqual((rerun["created"], rerun["skipped"], rerun["failed"]),
                         (0, len(good), 0), rerun)
        self.assertEqual(c.head_lsn(), head)
        extra = {"id": "late", "postId": "p0-0", "type": "comment", "userId": "u1",
                 "userUsername": "name1"}
        status, rerun = post_import(self.daemon, "posts", ndjson(good + [extra]))
        self.assertEqual((rerun["created"], rerun["skipped"]), (1, len(good)), rerun)
        self.assertEqual(c.head_lsn(), head + 1)
        wait_views_quiescent(self, c)
        verify_all(self, self.daemon, c, "after the re-runs")

    def test_on_error_stop_and_refusals(self):
        items = [user(u) for u in range(10)]
        lines = [json.dumps(i) for i in items]
        lines.insert(4, "{oops")
        status, report = post_import(self.daemon, "users", ("\n".join(lines) + "\n").encode(),
                                     query="onError=stop")
        self.assertEqual(status, 200, report)
        self.assertFalse(report["complete"], report)
        self.assertEqual(report["stoppedAtLine"], 5, report)
        self.assertEqual(report["created"], 4, report)
        self.assertEqual([e["line"] for e in report["errors"]], [5])
        st, _, _ = self.client.read("users", "u5", "u5")
        self.assertEqual(st, 404)

        # ifExists=fail: an existing id is a per-line conflict.
        status, report = post_import(self.daemon, "users", ndjson(items[:2]), query="ifExists=fail")
        self.assertEqual(status, 200, report)
        self.assertEqual(report["failed"], 2, report)
        self.assertEqual({e["code"] for e in report["errors"]}, {"conflict"})

        status, report = post_import(self.daemon, "users", b"{}\n", query="ifExists=maybe")
        self.assertEqual(status, 400, report)
        self.assertEqual(report["error"]["code"], "invalid_request")
        status, report = post_import(self.daemon, "nope", b"{}\n")
        self.assertEqual(status, 404, report)
        status, report = post_import(self.daemon, "users", b"{}\n", content_type="text/csv")
        self.assertEqual(status, 415, report)
        status, report = post_import(self.daemon, "feed", b"{}\n")
        self.assertEqual(status, 403, report)
        self.assertEqual(report["error"]["code"], "derived_container")
        # The connection of a refused import is closed; others go on.
        self.assertEqual(self.client.read("users", "u1", "u1")[0], 200)


JOB_TIMEOUT_S = 120
BIG_LINES = 200_000


def big_body():
    """BIG_LINES users of about 250 bytes: seconds of batches to commit."""
    return "".join(json.dumps({"id": "b%d" % i, "userId": "b%d" % i, "type": "user",
                               "username": "big user %d" % i, "pad": "x" * 180},
                              separators=(",", ":")) + "\n"
                   for i in range(BIG_LINES)).encode()


def import_metric(daemon, name, **labels):
    with urllib.request.urlopen("http://%s/metrics" % daemon.ready["metrics"], timeout=30) as r:
        text = r.read().decode()
    for line in text.splitlines():
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if m and m.group(1) == name:
            have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(have.get(k) == v for k, v in labels.items()):
                return float(m.group(3))
    raise AssertionError("no sample %s%r" % (name, labels))


class ImportJobTest(FeeddTestCase):

    def setUp(self):
        self.daemon = FeeddDaemon(name="feedd-import-job", sync=True,
                                  extra_args=["--import.batch_mb=1", "--import.sync_mb=1",
                                              "--import.spool_max_mb=64"])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        self.client = self.daemon.client()

    def spools(self):
        return os.listdir(os.path.join(self.daemon.data_dir, "import-spool"))

    def accepted(self, status, job, container):
        self.assertEqual(status, 202, job)
        self.assertRegex(job["id"], r"^[1-9][0-9]*$")
        self.assertEqual((job["type"], job["container"], job["processor"]),
                         ("import", container, ""), job)
        return job

    def until_job(self, job_id, done):
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while True:
            status, _, job = self.client.request("GET", "/v1/jobs/%s" % job_id)
            self.assertEqual(status, 200, job)
            if done(job):
                return job
            self.assertLess(time.monotonic(), deadline, "job never got there: %r" % job)
            time.sleep(0.01)

    def until_ended(self, job_id):
        return self.until_job(job_id, lambda j: j["state"] != "running")

    def until_progress(self, job_id):
        """The job, running, once it has committed something."""
        job = self.until_job(job_id, lambda j: j["state"] != "running" or
                             j["progress"]["done"] > 0)
        self.assertEqual(job["state"], "running", "the job ended before the test acted: %r" % job)
        return job

    def test_a_job_reports_progress_and_the_report_of_the_blocking_import(self):
        items = [user(u) for u in range(300)]
        lines = [json.dumps(i) for i in items]
        lines.insert(7, "{oops")
        lines.insert(100, json.dumps({"id": "no user id", "type": "user"}))
        body = ("\n".join(lines)).encode()  # the last line without its newline
        status, job = post_import(self.daemon, "users", body, query="job=true&ifExists=skip")
        job = self.accepted(status, job, "users")
        self.assertEqual(job["progress"]["total"], len(lines))
        self.assertEqual(job["progress"]["bytesTotal"], len(body))
        job = self.until_ended(job["id"])
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual(job["progress"]["done"], len(lines), job)
        self.assertEqual(job["progress"]["bytesDone"], len(body), job)
        report = job["result"]
        self.assertTrue(report["complete"], report)
        self.assertEqual((report["created"], report["failed"], report["lines"], report["bytes"]),
                         (300, 2, len(lines), len(body)), report)
        self.assertEqual([(e["line"], e["code"]) for e in report["errors"]],
                         [(8, "invalid_json"), (101, "invalid_partition_key")], report)
        self.assertEqual(self.client.read("users", "u299", "u299")[0], 200)
        self.assertEqual(self.spools(), [])
        # The blocking import of the same body reports the same lines.
        status, blocking = post_import(self.daemon, "users", body)
        self.assertEqual(status, 200, blocking)
        self.assertEqual(blocking["errors"], report["errors"])
        self.assertEqual((blocking["skipped"], blocking["lines"]), (300, report["lines"]))
        # Listed with the other jobs; a bad job parameter is refused.
        listed = self.client.request("GET", "/v1/jobs")[2]["jobs"]
        self.assertEqual(listed[0]["id"], job["id"])
        status, error = post_import(self.daemon, "users", body, query="job=yes")
        self.assertEqual((status, error["error"]["code"]), (400, "invalid_request"), error)

    def test_a_cancelled_job_keeps_the_report_of_what_it_committed(self):
        body = big_body()
        status, job = post_import(self.daemon, "users", body, query="job=true", piece=1 << 20)
        job = self.accepted(status, job, "users")
        running = self.until_progress(job["id"])
        self.assertGreater(running["progress"]["bytesDone"], 0)
        self.assertEqual(running["progress"]["bytesTotal"], len(body))
        self.assertEqual(running["progress"]["total"], BIG_LINES)
        self.assertGreater(running["progress"]["ratePerSecond"], 0)
        self.assertIsNotNone(running["progress"]["etaSeconds"])
        status, _, cancelling = self.client.request("POST", "/v1/jobs/%s/cancel" % job["id"])
        self.assertEqual(status, 202, cancelling)
        self.assertTrue(cancelling["cancelRequested"])
        job = self.until_ended(job["id"])
        self.assertEqual(job["state"], "cancelled", job)
        self.assertEqual(job["error"]["code"], "cancelled")
        report = job["result"]
        self.assertFalse(report["complete"], report)
        self.assertEqual(report["error"]["code"], "cancelled", report)
        created = report["created"]
        self.assertGreater(created, 0, report)
        self.assertLess(created, BIG_LINES, report)
        # Exactly the first `created` lines were written.
        self.assertEqual(self.client.read("users", "b%d" % (created - 1), "b%d" % (created - 1))[0],
                         200)
        self.assertEqual(self.client.read("users", "b%d" % created, "b%d" % created)[0], 404)
        self.assertEqual(self.spools(), [])
        self.assertEqual(import_metric(self.daemon, "feedd_imports_running"), 0)

    def test_a_job_survives_its_client(self):
        items = [user(u) for u in range(500, 800)]
        body = ndjson(items)
        with socket.create_connection((self.daemon.host, self.daemon.port), timeout=30) as s:
            s.sendall(b"POST /v1/containers/users/import?job=true HTTP/1.1\r\nHost: feedd\r\n"
                      b"Content-Type: application/x-ndjson\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            # Gone before the answer is read.
        deadline = time.monotonic() + JOB_TIMEOUT_S
        job = None
        while job is None:
            for j in self.client.request("GET", "/v1/jobs")[2]["jobs"]:
                if j["type"] == "import":
                    job = j
            self.assertLess(time.monotonic(), deadline, "the import job never started")
            time.sleep(0.01)
        job = self.until_ended(job["id"])
        self.assertEqual(job["state"], "succeeded", job)
        self.assertEqual(job["result"]["created"], 300, job)
        self.assertEqual(self.client.read("users", "u799", "u799")[0], 200)

    def test_a_restart_fails_the_running_job_and_removes_its_spool(self):
        status, job = post_import(self.daemon, "users", big_body(), query="job=true",
                                  piece=1 << 20)
        job = self.accepted(status, job, "users")
        self.until_progress(job["id"])
        self.assertEqual(len(self.spools()), 1)
        self.daemon.kill()
        self.daemon.start()
        self.client = self.daemon.client()
        failed = self.client.request("GET", "/v1/jobs/%s" % job["id"])[2]
        self.assertEqual(failed["state"], "failed", failed)
        self.assertEqual(failed["error"]["code"], "unavailable")
        self.assertIn("restarted", failed["error"]["message"])
        self.assertEqual(self.spools(), [])

        # A graceful stop fails it too, saying so.
        status, job = post_import(self.daemon, "users", big_body(), query="job=true&ifExists=replace",
                                  piece=1 << 20)
        job = self.accepted(status, job, "users")
        self.until_progress(job["id"])
        self.daemon.restart(graceful=True)
        self.client = self.daemon.client()
        failed = self.client.request("GET", "/v1/jobs/%s" % job["id"])[2]
        self.assertEqual(failed["state"], "failed", failed)
        self.assertIn("shut down", failed["error"]["message"])
        written = failed["result"]["created"] + failed["result"]["replaced"]
        self.assertGreater(written, 0, failed)
        last = "b%d" % (written - 1)
        self.assertEqual(self.client.read("users", last, last)[0], 200)
        self.assertEqual(self.spools(), [])

    def test_feedctl_import_follows_the_job(self):
        feedctl = os.environ.get("FEEDCTL_BIN")
        if not feedctl:
            self.skipTest("FEEDCTL_BIN is not set")
        with tempfile.NamedTemporaryFile(suffix=".ndjson") as f:
            f.write(big_body())
            f.flush()
            r = subprocess.run([feedctl, "--api", "%s:%d" % (self.daemon.host, self.daemon.port),
                                "--json", "import", "users", f.name],
                               capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual((report["created"], report["failed"], report["complete"]),
                         (BIG_LINES, 0, True), report)
        job = self.client.request("GET", "/v1/jobs/%s" % report["job"])[2]
        self.assertEqual((job["type"], job["container"], job["state"]),
                         ("import", "users", "succeeded"), job)
        # Not a terminal: plain progress lines of the job, lines and bytes.
        self.assertRegex(r.stderr, r"job %s: import users: \d+/%d lines \(\d+%%\), "
                                   r"[0-9.]+/[0-9.]+ MiB, \d+ lines/s" % (report["job"], BIG_LINES))
        self.assertIn("feedctl: import users: %d created" % BIG_LINES, r.stderr)

    def test_a_body_over_the_spool_limit_is_refused(self):
        body = big_body() * 2  # about 90 MiB, over import.spool_max_mb=64
        status, error = post_import(self.daemon, "users", body, query="job=true", piece=1 << 20)
        self.assertEqual(status, 413, error)
        self.assertEqual(error["error"]["code"], "payload_too_large")
        self.assertIn("import.spool_max_mb", error["error"]["message"])
        self.assertEqual(import_metric(self.daemon, "feedd_imports_total", outcome="spool_limit"), 1)
        self.assertEqual(import_metric(self.daemon, "feedd_imports_running"), 0)
        self.assertEqual(self.spools(), [])
        self.assertEqual(self.client.request("GET", "/v1/jobs")[2]["jobs"], [])


if __name__ == "__main__":
    unittest.main()
