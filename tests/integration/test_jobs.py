"""Rebuilds and verifies as jobs (docs/api.md, "Jobs"), on the real binary:
202 with the job and its Location, progress until `succeeded`, ?wait=true
answering 200 as the synchronous call did, cancel of a running rebuild and
of a running verify, a job that outlives its client, a restart that fails a
running job, unknown ids, the metrics, and feedctl rebuild / verify / jobs /
job / cancel with and without --json (a progress bar on a terminal).

A job is caught running in one of two ways, neither a matter of timing:
a verify of a paused processor that has a change to apply waits for it (up
to 30 s) until it is cancelled or the processor resumes; and a rebuild that
must write 100,000 copies (its processor paused while the sources were
written) commits them in steps of 5,000, which takes seconds, and the test
cancels it as soon as it reports progress.
"""

import http.client
import json
import os
import pty
import re
import select
import subprocess
import tempfile
import time
import unittest
import urllib.request

from feedd_harness import FeeddDaemon, FeeddTestCase, feedd_binary

POLL_TIMEOUT_S = 120
STEP = 5000  # views::kRebuildWritesPerCommit

# A projection of `notes` into `copies`, both partitioned by /g, so that
# batches of 100 load many source items quickly.
NOTES_CONFIG = """
[container.notes]
partition_key = /g

[container.copies]
partition_key = /g

[processor.copies]
kind = projection
source_container = notes
source_filter = type=note
target_container = copies
"""


def feedctl_binary():
    path = os.environ.get("FEEDCTL_BIN") or os.path.join(os.path.dirname(feedd_binary()),
                                                         "feedctl")
    if not os.access(path, os.X_OK):
        raise RuntimeError("FEEDCTL_BIN must name the feedctl binary (got %r)" % path)
    return path


def feedctl_command(daemon, *args):
    return [feedctl_binary(), "--api", "%s:%d" % (daemon.host, daemon.port)] + list(args)


def feedctl(daemon, *args):
    """Runs feedctl against `daemon`; returns (exit code, stdout, stderr)."""
    proc = subprocess.run(feedctl_command(daemon, *args), capture_output=True, text=True,
                          timeout=POLL_TIMEOUT_S)
    return proc.returncode, proc.stdout, proc.stderr


class JobsTestCase(FeeddTestCase):
    def start_daemon(self, name, config=None):
        path = None
        if config is not None:
            fd, path = tempfile.mkstemp(prefix="feedd-jobs-", suffix=".conf")
            with os.fdopen(fd, "w") as f:
                f.write(config)
            self.addCleanup(os.unlink, path)
        daemon = FeeddDaemon(name=name, config=path)
        self.addCleanup(daemon.cleanup)
        self.daemon = daemon
        daemon.start()
        return daemon

    def until_job(self, c, job_id, done):
        """Polls GET /v1/jobs/{id} until done(job); returns the job."""
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while True:
            status, _, job = c.request("GET", "/v1/jobs/%s" % job_id)
            self.assertEqual(status, 200, job)
            if done(job):
                return job
            self.assertLess(time.monotonic(), deadline, "job never got there: %r" % job)
            time.sleep(0.01)

    def until_ended(self, c, job_id):
        return self.until_job(c, job_id, lambda j: j["state"] != "running")

    def accepted(self, resp, kind, processor):
        """A 202 answer: the job object, with its Location."""
        status, headers, job = resp
        self.assertEqual(status, 202, job)
        self.assertEqual(headers.get("Location"), "/v1/jobs/%s" % job["id"])
        self.assertRegex(job["id"], r"^[1-9][0-9]*$")
        self.assertEqual((job["type"], job["processor"]), (kind, processor))
        for key in ("state", "created", "started", "ended", "progress", "cancelRequested",
                    "result", "error"):
            self.assertIn(key, job)
        return job

    def metric(self, name, **labels):
        """The value of the sample `name` with (at least) `labels`."""
        with urllib.request.urlopen("http://%s/metrics" % self.daemon.ready["metrics"],
                                    timeout=30) as r:
            text = r.read().decode()
        for line in text.splitlines():
            m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
            if not m or m.group(1) != name:
                continue
            have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(have.get(k) == v for k, v in labels.items()):
                return float(m.group(3))
        self.fail("no sample %s%r in /metrics" % (name, labels))

    def pause_behind(self, c, processor, post_id="p1"):
        """Pauses `processor` (of the default configuration) and writes a
        post it does not take: a verify of it then waits."""
        status, _, body = c.request("POST", "/v1/processors/%s/pause" % processor)
        self.assertEqual((status, body.get("state")), (200, "paused"), body)
        self.assertStatus(c.create("posts", {
            "id": post_id, "postId": post_id, "type": "post", "userId": "u1", "title": "t",
            "content": "c", "creationDate": "2026-11-21T10:00:00Z"}), 201, "post")

    def load_notes(self, c, count):
        for b in range(count // 100):
            g = "g%d" % (b % 10)
            ops = [{"op": "create", "body": {"id": "n%d" % (b * 100 + i), "g": g, "type": "note",
                                             "text": "x" * 100}} for i in range(100)]
            self.assertStatus(
                c.request("POST", "/v1/containers/notes/partitions/%s/batch" % g,
                          {"operations": ops}), 200, "batch %d" % b)


class JobApiTest(JobsTestCase):
    def seed(self, c):
        self.assertStatus(c.create("users", {"id": "u1", "userId": "u1", "type": "user",
                                             "username": "alice"}), 201)
        for i in range(5):
            self.assertStatus(c.create("posts", {
                "id": "p%d" % i, "postId": "p%d" % i, "type": "post", "userId": "u1",
                "title": "t", "content": "c", "creationDate": "2026-11-21T10:00:0%dZ" % i}), 201)
        c.wait_quiescent()

    def test_a_rebuild_is_accepted_and_its_job_succeeds_with_its_progress(self):
        daemon = self.start_daemon("feedd-jobs-api")
        c = daemon.client()
        self.seed(c)
        job = self.accepted(c.request("POST", "/v1/processors/feed/rebuild"), "rebuild", "feed")
        self.assertIsInstance(job["created"], int)
        job = self.until_ended(c, job["id"])
        self.assertEqual(job["state"], "succeeded", job)
        progress = job["progress"]
        self.assertGreater(progress["done"], 0, job)
        self.assertEqual(progress["done"], progress["total"], job)
        self.assertIsNone(progress["etaSeconds"])
        self.assertGreaterEqual(progress["ratePerSecond"], 0)
        self.assertGreaterEqual(job["ended"], job["started"])
        self.assertIsNone(job["error"])
        self.assertEqual(job["result"]["name"], "feed")
        self.assertIsInstance(job["result"]["appliedLsn"], int)

        verify = self.accepted(c.request("POST", "/v1/processors/usernames/verify"), "verify",
                               "usernames")
        verify = self.until_ended(c, verify["id"])
        self.assertEqual(verify["state"], "succeeded", verify)
        self.assertEqual((verify["result"]["ok"], verify["result"]["differences"]), (True, []))
        self.assertGreater(verify["progress"]["done"], 0, verify)

        # ?wait=true answers as the synchronous call did, plus the job.
        status, _, body = c.request("POST", "/v1/processors/feed/rebuild?wait=true")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["name"], "feed")
        self.assertIsInstance(body["appliedLsn"], int)
        waited = c.request("GET", "/v1/jobs/%s" % body["job"])[2]
        self.assertEqual((waited["state"], waited["type"]), ("succeeded", "rebuild"))
        status, _, body = c.request("POST", "/v1/processors/feed/verify?wait=false")
        self.assertEqual(status, 202, body)
        self.until_ended(c, body["id"])

        # Newest first.
        status, _, listed = c.request("GET", "/v1/jobs")
        self.assertEqual(status, 200)
        ids = [int(j["id"]) for j in listed["jobs"]]
        self.assertEqual(ids, sorted(ids, reverse=True))
        self.assertEqual(len(ids), 4)
        self.assertEqual(self.metric("feedd_jobs_finished_total", type="rebuild", state="succeeded"), 2)
        self.assertEqual(self.metric("feedd_jobs_running"), 0)

    def test_a_job_seen_ended_has_freed_its_processor(self):
        # A job used to be reported ended before its executor slot was free:
        # the next rebuild, started at once, was refused 409.
        daemon = self.start_daemon("feedd-jobs-again")
        c = daemon.client()
        self.seed(c)
        for i in range(30):
            job = self.accepted(c.request("POST", "/v1/processors/feed/rebuild"), "rebuild",
                                "feed")
            self.assertEqual(self.until_ended(c, job["id"])["state"], "succeeded", i)

    def test_unknown_jobs_bad_parameters_and_a_finished_job(self):
        daemon = self.start_daemon("feedd-jobs-errors")
        c = daemon.client()
        for path in ("/v1/jobs/999", "/v1/jobs/abc", "/v1/jobs/0"):
            self.assertError(c.request("GET", path), 404, "not_found", path)
        self.assertError(c.request("POST", "/v1/jobs/999/cancel"), 404, "not_found")
        self.assertError(c.request("GET", "/v1/jobs/1/cancel"), 405, "method_not_allowed")
        self.assertError(c.request("DELETE", "/v1/jobs"), 405, "method_not_allowed")
        self.assertError(c.request("POST", "/v1/processors/feed/rebuild?wait=yes"), 400,
                         "invalid_request")
        self.assertError(c.request("POST", "/v1/processors/feed/verify?when=now"), 400,
                         "invalid_request")
        self.assertError(c.request("POST", "/v1/processors/nosuch/rebuild"), 404, "not_found")
        self.assertEqual(c.request("GET", "/v1/jobs")[2], {"jobs": []},
                         "a refused call left a job")
        status, _, body = c.request("POST", "/v1/processors/feed/verify?wait=true")
        self.assertEqual(status, 200, body)
        self.assertError(c.request("POST", "/v1/jobs/%s/cancel" % body["job"]), 409, "conflict")

    def test_a_verify_is_cancelled_and_survives_its_client(self):
        daemon = self.start_daemon("feedd-jobs-verify")
        c = daemon.client()
        self.pause_behind(c, "feed")
        job = self.accepted(c.request("POST", "/v1/processors/feed/verify"), "verify", "feed")
        self.assertEqual(job["state"], "running")
        # Busy: a second one is refused at once, in both modes.
        self.assertError(c.request("POST", "/v1/processors/feed/rebuild"), 409,
                         "operation_in_progress")
        self.assertError(c.request("POST", "/v1/processors/feed/verify?wait=true"), 409,
                         "operation_in_progress")
        self.assertEqual(self.metric("feedd_jobs_running"), 1)
        status, headers, cancelled = c.request("POST", "/v1/jobs/%s/cancel" % job["id"])
        self.assertEqual(status, 202, cancelled)
        self.assertTrue(cancelled["cancelRequested"])
        job = self.until_ended(c, job["id"])
        self.assertEqual(job["state"], "cancelled", job)
        self.assertEqual(job["error"]["code"], "cancelled")
        self.assertIsNone(job["result"])
        self.assertError(c.request("POST", "/v1/jobs/%s/cancel" % job["id"]), 409, "conflict")

        # A client that waits (?wait=true) and goes away: the job runs on.
        conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
        conn.request("POST", "/v1/processors/feed/verify?wait=true")
        conn.close()
        running = None
        deadline = time.monotonic() + POLL_TIMEOUT_S
        while running is None:
            for j in c.request("GET", "/v1/jobs")[2]["jobs"]:
                if j["id"] != job["id"] and j["type"] == "verify":
                    running = j
            self.assertLess(time.monotonic(), deadline, "the waited verify never started")
            time.sleep(0.01)
        self.assertEqual(running["state"], "running", running)
        self.assertStatus(c.request("POST", "/v1/processors/feed/resume"), 200)
        done = self.until_ended(c, running["id"])
        self.assertEqual(done["state"], "succeeded", done)
        self.assertTrue(done["result"]["ok"], done)
        self.assertEqual(self.metric("feedd_jobs_finished_total", type="verify", state="cancelled"), 1)

    def test_a_restart_fails_the_job_that_was_running(self):
        daemon = self.start_daemon("feedd-jobs-restart")
        c = daemon.client()
        self.pause_behind(c, "feed")
        crashed = self.accepted(c.request("POST", "/v1/processors/feed/verify"), "verify", "feed")
        self.until_job(c, crashed["id"], lambda j: j["state"] == "running")
        daemon.kill()
        daemon.start()
        c = daemon.client()
        job = c.request("GET", "/v1/jobs/%s" % crashed["id"])[2]
        self.assertEqual(job["state"], "failed", job)
        self.assertEqual(job["error"]["code"], "unavailable")
        self.assertIn("restarted", job["error"]["message"])
        self.assertIsInstance(job["ended"], int)

        # A graceful stop fails it too, saying so; ids are not reused.
        self.pause_behind(c, "feed", "p2")
        stopped = self.accepted(c.request("POST", "/v1/processors/feed/verify"), "verify", "feed")
        self.assertGreater(int(stopped["id"]), int(crashed["id"]))
        daemon.restart(graceful=True)
        job = daemon.client().request("GET", "/v1/jobs/%s" % stopped["id"])[2]
        self.assertEqual(job["state"], "failed", job)
        self.assertIn("shut down", job["error"]["message"])
        ids = [j["id"] for j in daemon.client().request("GET", "/v1/jobs")[2]["jobs"]]
        self.assertEqual(ids, [stopped["id"], crashed["id"]])


class RebuildCancelTest(JobsTestCase):
    NOTES = 100_000

    def test_a_cancelled_rebuild_commits_nothing_more(self):
        daemon = self.start_daemon("feedd-jobs-cancel", NOTES_CONFIG)
        c = daemon.client()
        # Paused while the notes are written: the rebuild has every copy to write.
        self.assertStatus(c.request("POST", "/v1/processors/copies/pause"), 200)
        self.load_notes(c, self.NOTES)
        job = self.accepted(c.request("POST", "/v1/processors/copies/rebuild"), "rebuild",
                            "copies")
        self.assertEqual(job["progress"]["total"], self.NOTES, job)
        running = self.until_job(c, job["id"],
                                 lambda j: j["state"] != "running" or j["progress"]["done"] > 0)
        self.assertEqual(running["state"], "running",
                         "the rebuild ended before it could be cancelled: %r" % running)
        status, _, _ = c.request("POST", "/v1/jobs/%s/cancel" % job["id"])
        self.assertEqual(status, 202)
        job = self.until_ended(c, job["id"])
        self.assertEqual(job["state"], "cancelled", job)
        self.assertEqual(job["error"]["code"], "cancelled")
        self.assertLess(job["progress"]["done"], 2 * self.NOTES)

        # What it committed: whole steps only, not all of it.
        status, _, processor = c.request("GET", "/v1/processors/copies")
        written = processor["viewWrites"]
        self.assertEqual(written % STEP, 0, processor)
        self.assertLess(written, self.NOTES, processor)
        self.assertIsNone(processor["lastError"], processor)
        status, _, page = c.request("POST", "/v1/containers/copies/query",
                                    {"partitionKey": "g0", "limit": 1000})
        self.assertEqual(status, 200, page)

        # The view is whole again after a rebuild that is let finish.
        self.assertStatus(c.request("POST", "/v1/processors/copies/resume"), 200)
        status, _, body = c.request("POST", "/v1/processors/copies/rebuild?wait=true")
        self.assertEqual(status, 200, body)
        status, _, body = c.request("POST", "/v1/processors/copies/verify?wait=true")
        self.assertEqual((status, body.get("ok")), (200, True),
                         {k: v for k, v in (body or {}).items() if k != "differences"})
        self.assertEqual(self.metric("feedd_jobs_finished_total", type="rebuild", state="cancelled"), 1)


class KeptResultTest(JobsTestCase):
    def test_a_job_keeps_the_first_thousand_differences(self):
        daemon = self.start_daemon("feedd-jobs-kept", NOTES_CONFIG)
        c = daemon.client()
        # Stray copies (as a worker writes them, with sourceLsn) of notes
        # that do not exist: one difference each.
        for b in range(11):
            ops = [{"op": "upsert", "sourceLsn": 1,
                    "body": {"id": "s%d" % (b * 100 + i), "g": "g0", "type": "note"}}
                   for i in range(100)]
            self.assertStatus(c.request("POST", "/v1/containers/copies/partitions/g0/batch",
                                        {"operations": ops}), 200, "batch %d" % b)
        status, _, body = c.request("POST", "/v1/processors/copies/verify?wait=true")
        self.assertEqual((status, body["ok"]), (200, False))
        self.assertEqual(len(body["differences"]), 1100, "?wait=true answers them all")
        job = c.request("GET", "/v1/jobs/%s" % body["job"])[2]
        self.assertEqual(len(job["result"]["differences"]), 1000)
        self.assertEqual(job["result"]["differencesTotal"], 1100)
        self.assertEqual(job["result"]["differences"], body["differences"][:1000])
        rc, out, err = feedctl(daemon, "verify", "copies")
        self.assertEqual(rc, 1, err)
        self.assertTrue(out.startswith("copies: 1100 difference(s)\n"), out[:200])
        self.assertIn("\n  ... and 100 more (POST /v1/processors/copies/verify?wait=true", out)


class FeedctlJobsTest(JobsTestCase):
    def test_rebuild_and_verify_follow_their_jobs(self):
        daemon = self.start_daemon("feedd-jobs-feedctl")
        rc, out, err = feedctl(daemon, "rebuild", "feed")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"^feed: rebuilt \(applied LSN \d+\)\n$")
        rc, out, err = feedctl(daemon, "--json", "rebuild", "feed")
        self.assertEqual(rc, 0, err)
        rebuilt = json.loads(out)
        self.assertEqual(rebuilt["name"], "feed")
        self.assertRegex(rebuilt["job"], r"^\d+$")
        rc, out, err = feedctl(daemon, "verify", "feed")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"^feed: ok \(applied LSN \d+\)\n$")
        rc, out, err = feedctl(daemon, "--json", "verify", "usernames")
        self.assertEqual(rc, 0, err)
        verified = json.loads(out)["processors"][0]
        self.assertEqual((verified["name"], verified["ok"]), ("usernames", True))
        self.assertIn("job", verified)

        rc, out, err = feedctl(daemon, "jobs")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "TYPE", "PROCESSOR", "STATE", "PROGRESS"])
        self.assertEqual(len(lines), 5, out)
        self.assertRegex(lines[1], r"^\d+\s+verify\s+usernames\s+succeeded\s+\d+/\d+ items")
        rc, out, err = feedctl(daemon, "--json", "jobs")
        self.assertEqual(rc, 0, err)
        listed = json.loads(out)["jobs"]
        self.assertEqual(len(listed), 4)
        rc, out, err = feedctl(daemon, "job", rebuilt["job"])
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"^job %s: rebuild feed, succeeded\n  progress: " % rebuilt["job"])
        self.assertIn("  result: {", out)
        rc, out, err = feedctl(daemon, "--json", "job", rebuilt["job"])
        self.assertEqual((rc, json.loads(out)["state"]), (0, "succeeded"), err)
        rc, out, err = feedctl(daemon, "job", "999")
        self.assertEqual(rc, 1)
        self.assertIn("not_found", err)
        rc, out, err = feedctl(daemon, "cancel", rebuilt["job"])
        self.assertEqual(rc, 1)
        self.assertIn("conflict", err)

    def test_cancel_ends_a_followed_verify_and_plain_progress_lines(self):
        daemon = self.start_daemon("feedd-jobs-feedctl-cancel")
        c = daemon.client()
        self.pause_behind(c, "feed")
        follower = subprocess.Popen(feedctl_command(daemon, "verify", "feed"),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + POLL_TIMEOUT_S
            job_id = None
            while job_id is None:
                rc, out, err = feedctl(daemon, "--json", "jobs")
                self.assertEqual(rc, 0, err)
                running = [j for j in json.loads(out)["jobs"] if j["state"] == "running"]
                job_id = running[0]["id"] if running else None
                self.assertLess(time.monotonic(), deadline, "feedctl verify started no job")
            rc, out, err = feedctl(daemon, "cancel", job_id)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, "job %s: cancel requested (verify feed, running)\n" % job_id)
            out, err = follower.communicate(timeout=POLL_TIMEOUT_S)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
        self.assertEqual(follower.returncode, 1, (out, err))
        self.assertIn("feed: cannot verify: cancelled", out)
        self.assertRegex(err, r"(?m)^job %s: verify feed: \d+(/\d+)? items" % job_id)
        self.assertNotIn("\r", err)

        # --json cancel answers the job.
        self.pause_behind(c, "feed", "p2")
        job = self.accepted(c.request("POST", "/v1/processors/feed/verify"), "verify", "feed")
        rc, out, err = feedctl(daemon, "--json", "cancel", job["id"])
        self.assertEqual(rc, 0, err)
        self.assertEqual((json.loads(out)["id"], json.loads(out)["cancelRequested"]),
                         (job["id"], True))
        self.assertEqual(self.until_ended(c, job["id"])["state"], "cancelled")

    def test_a_progress_bar_on_a_terminal(self):
        daemon = self.start_daemon("feedd-jobs-feedctl-tty")
        c = daemon.client()
        self.pause_behind(c, "feed")
        master, slave = pty.openpty()
        follower = subprocess.Popen(feedctl_command(daemon, "verify", "feed"),
                                    stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        seen = b""
        try:
            deadline = time.monotonic() + POLL_TIMEOUT_S
            while not re.search(rb"\] \d+/\d+ items", seen):
                self.assertLess(time.monotonic(), deadline, "no progress bar: %r" % seen)
                ready, _, _ = select.select([master], [], [], 1)
                if ready:
                    seen += os.read(master, 4096)
            self.assertStatus(c.request("POST", "/v1/processors/feed/resume"), 200)
            out, _ = follower.communicate(timeout=POLL_TIMEOUT_S)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
            os.close(master)
        self.assertEqual(follower.returncode, 0, out)
        self.assertRegex(out, r"^feed: ok \(applied LSN \d+\)\n$")
        self.assertRegex(seen.decode(), r"\r\[[#.]{30}\] \d+/\d+ items")


if __name__ == "__main__":
    unittest.main()
