"""feedd worker: processors outside the daemon, sharing a Kafka consumer group.

The daemon runs `feed` itself and leaves `usernames` and `user_posts` to
workers (processor.<name>.run = worker). Two `feedd worker` processes join
the instances' consumer groups on the embedded broker and write through the
HTTP API with sourceLsn conditions. A generated blog is written by several
threads; half-way, one worker is SIGKILLed: its partitions move to the
survivor, which applies again what was in flight. After the writes:

  * `feedd worker --worker.verify=true` (the workers' own recomputation over
    the API) must come to exit 0, and the daemon's verify of `feed` passes;
  * this test's own check (test_processors.check_views): Q1-Q6 recomputed
    from the source data - usernames current everywhere, one short copy per
    post in its author's partition with current fields, the exact top 100 -
    so nothing was lost or applied twice;
  * the worker metrics: both workers had partitions before the kill, the
    survivor holds every partition after it.

FEEDD_PROC_SEED=<n> repeats the generated data.
"""

import base64
import os
import random
import re
import signal
import socket
import struct
import subprocess
import tempfile
import time
import unittest
import urllib.request

from feedd_harness import SCENARIO_CONFIG, FeeddDaemon, FeeddTestCase
from test_kafka_crash import MockBroker
from test_processors import (SEED, BlogPlan, DaemonControl, Writers,
                             check_views, log)

WORKER_PROCESSORS = ("usernames", "user_posts")
CONVERGE_TIMEOUT_S = 180.0


class Worker:
    def __init__(self, daemon, name, extra_args=(), extra_env=None):
        self.name = name
        self.log_path = os.path.join(daemon.workdir, name + ".log")
        self.cmd = [daemon.binary, "worker"] + daemon_settings() + [
            "--worker.api=%s:%d" % (daemon.host, daemon.port),
            "--worker.metrics_listen=127.0.0.1:0",
            # A dead member is noticed within seconds (the default is 45 s).
            "--kafka.session.timeout.ms=6000", "--kafka.heartbeat.interval.ms=500",
        ] + list(extra_args)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("FEEDD_") and k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC",
                                                            "WATCHDOG_PID")}
        env.update(extra_env or {})
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=out, env=env, close_fds=True)
        self.metrics_address = None
        deadline = time.monotonic() + 30
        while self.metrics_address is None:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited %d:\n%s" % (name, self.proc.returncode,
                                                            self.logs()))
            if time.monotonic() > deadline:
                raise AssertionError("%s not ready in 30 s:\n%s" % (name, self.logs()))
            m = re.search(r"metrics on https?://([0-9.]+:[0-9]+)/metrics", self.logs())
            if m:
                self.metrics_address = m.group(1)
            time.sleep(0.05)

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-20000:]

    def metric(self, name, processor):
        with urllib.request.urlopen("http://%s/metrics" % self.metrics_address, timeout=10) as r:
            text = r.read().decode()
        m = re.search(r'^%s\{processor="%s"\} ([0-9.e+]+)$' % (name, processor), text, re.M)
        if not m:
            raise AssertionError("%s: no %s for %s in\n%s" % (self.name, name, processor, text))
        return float(m.group(1))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("%s did not stop within 60 s of SIGTERM" % self.name)
        return self.proc.returncode


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FixedPortDaemon(FeeddDaemon):
    """A daemon that comes back on the same API address after a restart."""

    def __init__(self, port, **kwargs):
        super().__init__(**kwargs)
        self.fixed_port = port

    def command(self):
        cmd = super().command()
        i = cmd.index("--listen")
        cmd[i + 1] = "127.0.0.1:%d" % self.fixed_port
        return cmd


def daemon_settings():
    """The scenario's configuration, with some processors in workers."""
    args = ["--config=" + SCENARIO_CONFIG]
    args += ["--processor.%s.run=worker" % name for name in WORKER_PROCESSORS]
    return args


class WorkerTest(FeeddTestCase):

    def setUp(self):
        self.rng = random.Random("%d-%s" % (SEED, self.id()))
        log("%s: seed %d (FEEDD_PROC_SEED=%d repeats it)" % (self.id(), SEED, SEED))
        self.daemon = FeeddDaemon(extra_args=daemon_settings(), name="feedd")
        self.workers = []

    def tearDown(self):
        for w in self.workers:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
        self.daemon.cleanup()

    def verify_workers(self):
        """`feedd worker --worker.verify=true`: (exit code, output)."""
        r = subprocess.run([self.daemon.binary, "worker"] + daemon_settings() +
                           ["--worker.api=%s:%d" % (self.daemon.host, self.daemon.port),
                            "--worker.verify=true"],
                           capture_output=True, text=True, timeout=300)
        return r.returncode, r.stdout + r.stderr[-3000:]

    def wait_converged(self, worker):
        """Until the workers' own verification passes (CONVERGE_TIMEOUT_S)."""
        deadline = time.monotonic() + CONVERGE_TIMEOUT_S
        while True:
            rc, out = self.verify_workers()
            if rc == 0:
                return
            if time.monotonic() > deadline:
                self.fail("views of the workers' processors not right after %.0f s:\n%s\n"
                          "%s log:\n%s" % (CONVERGE_TIMEOUT_S, out[-6000:], worker.name,
                                            worker.logs()))
            time.sleep(1)

    def test_two_workers_one_killed_views_converge(self):
        plan = BlogPlan(self.rng, users=120, posts=350, comments=500, likes=500, renames=80,
                        edits=100, deletes_top=8, deletes_other=10)
        self.daemon.start()
        client = self.daemon.client()
        status, _, body = client.request("GET", "/v1/processors")
        self.assertEqual([p["name"] for p in body["processors"]], ["feed"],
                         "the daemon runs only the processors left to it")
        a = Worker(self.daemon, "worker-a")
        self.workers.append(a)
        b = Worker(self.daemon, "worker-b")
        self.workers.append(b)

        # Both join both groups (the second join rebalances the first).
        deadline = time.monotonic() + 60
        while not all(w.metric("feedd_worker_assigned_partitions", name) > 0
                      for w in (a, b) for name in WORKER_PROCESSORS):
            self.assertLess(time.monotonic(), deadline, "partitions never shared:\n%s\n%s"
                            % (a.logs(), b.logs()))
            time.sleep(0.1)
        writers = Writers(DaemonControl(self.daemon))
        t0 = time.monotonic()
        threads = writers.run(plan.user_creates)
        for t in threads:
            t.join()
        ops = plan.phase(0.0, 1.0)
        total = sum(len(o) for o in ops)
        kill_at = writers.done + total // 2
        threads = writers.run(ops)
        killed = False
        while any(t.is_alive() for t in threads):
            if not killed and writers.done >= kill_at:
                for name in WORKER_PROCESSORS:
                    for w in (a, b):
                        self.assertGreater(w.metric("feedd_worker_assigned_partitions", name), 0,
                                           "%s had no partition of %s before the kill:\n%s"
                                           % (w.name, name, w.logs()))
                        self.assertGreater(w.metric("feedd_worker_changes_applied_total", name), 0,
                                           "%s applied nothing of %s before the kill:\n%s"
                                           % (w.name, name, w.logs()))
                log("SIGKILL worker-a after %d answered ops" % writers.done)
                a.proc.kill()
                a.proc.wait()
                killed = True
            for t in threads:
                t.join(timeout=0.01)
        self.assertTrue(killed, "the writes ended before the kill")
        if writers.errors:
            self.fail("%d write(s) failed:\n  %s" % (len(writers.errors),
                                                     "\n  ".join(writers.errors[:15])))
        log("%d ops written in %.1f s" % (total, time.monotonic() - t0))

        self.wait_converged(b)
        log("converged %.1f s after the writes" % (time.monotonic() - t0))
        for name in WORKER_PROCESSORS:
            partitions = b.metric("feedd_worker_assigned_partitions", name)
            self.assertEqual(partitions, 3 if name == "user_posts" else 6,
                             "worker-b holds every partition of %s's topics after the kill"
                             % name)
            self.assertEqual(b.metric("feedd_worker_parked_changes", name), 0)
        status, _, body = client.request("POST", "/v1/processors/feed/verify?wait=true", {})
        self.assertEqual((status, body.get("differences")), (200, []), "verify feed: %r" % body)
        check_views(self, client, plan.model, "two workers, one killed")
        self.assertEqual(b.stop(), 0, "worker-b exit code on SIGTERM:\n%s" % b.logs())

    # ---- either envelope, and a rebuild in the daemon meanwhile

    def stays_on_kafka(self, envelope):
        """The worker applies what Kafka delivers, whatever the envelope
        (a Debezium envelope is judged by its headers), while the daemon
        rebuilds its own view: no partition falls back to the durable feed,
        and the views come right."""
        self.daemon = FeeddDaemon(extra_args=daemon_settings() + ["--kafka.envelope=" + envelope],
                                  name="feedd-" + envelope)
        self.daemon.start()
        client = self.daemon.client()
        w = Worker(self.daemon, "worker-" + envelope)
        self.workers.append(w)
        deadline = time.monotonic() + 60
        while not all(w.metric("feedd_worker_assigned_partitions", name) > 0
                      for name in WORKER_PROCESSORS):
            self.assertLess(time.monotonic(), deadline, "no partitions:\n%s" % w.logs())
            time.sleep(0.1)
        plan = BlogPlan(self.rng, users=40, posts=120, comments=150, likes=150, renames=30,
                        edits=30, deletes_top=3, deletes_other=3)
        writers = Writers(DaemonControl(self.daemon))
        for ops in (plan.user_creates, plan.phase(0.0, 0.5)):
            for t in writers.run(ops):
                t.join()
        status, _, body = client.request("POST", "/v1/processors/feed/rebuild?wait=true")
        self.assertEqual(status, 200, "rebuild feed: %r" % body)
        for t in writers.run(plan.phase(0.5, 1.0)):
            t.join()
        self.assertEqual(writers.errors, [], "writes failed")
        self.wait_converged(w)
        for name in WORKER_PROCESSORS:
            self.assertGreater(w.metric("feedd_worker_changes_applied_total", name), 0, name)
            self.assertEqual(w.metric("feedd_worker_catch_ups_total", name), 0,
                             "%s (%s envelope) read the durable feed:\n%s"
                             % (name, envelope, w.logs()))
            self.assertEqual(w.metric("feedd_worker_parked_changes", name), 0, name)
        check_views(self, client, plan.model, "a worker, %s envelope" % envelope)

    def test_native_envelope_through_a_rebuild(self):
        self.stays_on_kafka("native")

    def test_debezium_envelope_through_a_rebuild(self):
        self.stays_on_kafka("debezium")

    def test_behind_the_brokers_retention_the_durable_feed_fills_the_gap(self):
        # The embedded broker keeps ~5 MiB per partition: while the worker is
        # stopped, ~25 MiB of posts (~8 MiB per partition, incompressible)
        # push its committed offsets out of Kafka.
        self.daemon.start()
        client = self.daemon.client()
        for u in ("u1", "u2"):
            self.assertStatus(client.upsert("users", u, u, {"id": u, "userId": u, "type": "user",
                                                            "username": u + "-v1"}), 201)
        w = Worker(self.daemon, "worker")
        self.workers.append(w)

        def post(i, user):
            p = "p%05d" % i
            return client.upsert("posts", p, p, {
                "id": p, "postId": p, "type": "post", "userId": user, "title": "t%d" % i,
                "content": base64.b64encode(os.urandom(3000)).decode(),  # lz4 cannot shrink it
                "creationDate": "2024-01-01T00:00:%05dZ" % i})

        for i in range(30):
            self.assertStatus(post(i, "u1"), 201)
        deadline = time.monotonic() + 60
        while self.verify_workers()[0] != 0:
            self.assertLess(time.monotonic(), deadline, "first posts never copied:\n" + w.logs())
            time.sleep(0.5)
        self.assertEqual(w.stop(), 0, w.logs())  # commits its offsets (and their LSNs)

        for i in range(30, 6030):
            self.assertStatus(post(i, "u1" if i % 2 else "u2"), 201)
        self.assertStatus(client.patch("users", "u2", "u2", [
            {"op": "set", "path": "/username", "value": "u2-renamed"}]), 200)
        self.assertStatus(client.delete("posts", "p00031", "p00031"), 204)

        w = Worker(self.daemon, "worker-again")
        self.workers.append(w)
        self.wait_converged(w)
        self.assertGreater(w.metric("feedd_worker_catch_ups_total", "user_posts"), 0,
                           "the gap was not noticed:\n" + w.logs())
        self.assertIn("no longer held by the broker", w.logs())
        self.assertEqual(w.metric("feedd_worker_unrecoverable_gaps_total", "user_posts"), 0)
        client = self.daemon.client()  # the first one idled past http.idle_timeout_seconds
        copies = client.query("users", {"partitionKey": "u2", "filter": {"type": "post"},
                                        "limit": 1000})[2]["items"]
        self.assertEqual(w.stop(), 0, w.logs())
        self.assertGreater(len(copies), 0)
        self.assertEqual({c["userUsername"] for c in copies if "userUsername" in c} - {"u2-renamed"},
                         set(), "copies of u2's posts carry the renamed username")

    def test_a_daemon_crash_does_not_park_the_workers_changes(self):
        # A real (standalone) broker outlives the daemon, as in production;
        # the daemon comes back on the same address after a SIGKILL.
        broker = MockBroker().start()
        self.addCleanup(broker.cleanup)
        port = free_port()
        self.daemon = FixedPortDaemon(port, extra_args=daemon_settings() + [
            "--kafka.brokers=%s" % broker.bootstrap], sync=True)
        self.daemon.start()
        w = Worker(self.daemon, "worker", ["--kafka.brokers=%s" % broker.bootstrap])
        self.workers.append(w)
        client = self.daemon.client()
        self.assertStatus(client.upsert("users", "u1", "u1", {
            "id": "u1", "userId": "u1", "type": "user", "username": "before"}), 201)
        for i in range(200):
            p = "p%03d" % i
            self.assertStatus(client.upsert("posts", p, p, {
                "id": p, "postId": p, "type": "post", "userId": "u1", "title": "t",
                "content": "c", "creationDate": "2024-01-01"}), 201)
        self.assertStatus(client.patch("users", "u1", "u1", [
            {"op": "set", "path": "/username", "value": "after"}]), 200)
        # Down while the rename fans out over 200 posts, for longer than the
        # worker's retries of a failing change (5 attempts, ~1.5 s).
        self.daemon.kill()
        time.sleep(4)
        self.daemon.start()
        self.wait_converged(w)
        self.assertEqual(w.metric("feedd_worker_parked_changes", "usernames"), 0, w.logs())
        self.assertEqual(w.metric("feedd_worker_parked_changes", "user_posts"), 0, w.logs())
        self.assertGreater(w.metric("feedd_worker_apply_errors_total", "usernames") +
                           w.metric("feedd_worker_apply_errors_total", "user_posts"), 0,
                           "the crash went unnoticed: the test did not test anything")
        self.assertEqual(w.stop(), 0, w.logs())

    def test_worker_speaks_sd_notify(self):
        """configs/feedd-worker@.service is Type=notify with WatchdogSec: the
        worker sends READY=1 once it runs, WATCHDOG=1 every WATCHDOG_USEC/2,
        and STOPPING=1 on SIGTERM, all from its own pid."""
        self.daemon.start()
        notify_path = os.path.join(self.daemon.workdir, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        sock.bind(notify_path)
        received = []  # (fields, sender pid)

        def receive_until(key, timeout):
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                sock.settimeout(max(0.01, min(0.5, deadline - time.monotonic())))
                try:
                    data, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(12))
                except socket.timeout:
                    continue
                pid = None
                for level, kind, payload in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                        pid = struct.unpack("iII", payload[:12])[0]
                fields = dict(line.partition("=")[::2]
                              for line in data.decode().split("\n") if line)
                received.append((fields, pid))
                if key in fields:
                    return fields
            self.fail("no %s= within %.0f s; received %r" % (key, timeout, received))

        w = Worker(self.daemon, "worker-notify",
                   extra_env={"NOTIFY_SOCKET": notify_path, "WATCHDOG_USEC": "2000000"})
        self.workers.append(w)
        self.assertEqual(receive_until("READY", 60)["READY"], "1", w.logs())
        for _ in range(2):  # every second (half of WATCHDOG_USEC)
            self.assertEqual(receive_until("WATCHDOG", 5)["WATCHDOG"], "1", w.logs())
        w.proc.send_signal(signal.SIGTERM)
        self.assertEqual(receive_until("STOPPING", 30)["STOPPING"], "1")
        self.assertEqual(w.proc.wait(timeout=60), 0, w.logs())
        self.assertEqual({pid for _, pid in received}, {w.proc.pid})

    def test_a_parked_change_does_not_hold_the_workers_offsets(self):
        # The daemon refuses the copy of a 200-character username into a post
        # near storage.max_item_bytes (413, not transient): the worker parks
        # that rename, applies the others, and commits offsets past it.
        self.daemon.extra_args = daemon_settings() + ["--storage.max_item_bytes=1024",
                                                      "--kafka.resolved_interval_ms=1000"]
        self.daemon.start()
        client = self.daemon.client()
        for uid, name in (("u1", "ana"), ("u2", "bob")):
            self.assertStatus(client.upsert("users", uid, uid, {
                "id": uid, "userId": uid, "type": "user", "username": name}), 201)
        for pid, uid, title in (("p1", "u1", "t" * 800), ("p2", "u2", "short")):
            self.assertStatus(client.upsert("posts", pid, pid, {
                "id": pid, "postId": pid, "type": "post", "userId": uid, "title": title,
                "content": "c", "creationDate": "2024-01-01"}), 201)
        w = Worker(self.daemon, "worker", ["--processor.usernames.max_attempts=1",
                                           "--processor.usernames.retry_backoff_ms=1"])
        self.workers.append(w)
        self.wait_converged(w)
        self.assertStatus(client.patch("users", "u1", "u1", [
            {"op": "set", "path": "/username", "value": "a" * 200}]), 200)
        self.assertStatus(client.patch("users", "u2", "u2", [
            {"op": "set", "path": "/username", "value": "bobby"}]), 200)
        deadline = time.monotonic() + 60
        while (w.metric("feedd_worker_parked_changes", "usernames") != 1 or
               client.read("posts", "p2", "p2")[2].get("userUsername") != "bobby"):
            self.assertLess(time.monotonic(), deadline, "rename not parked/applied; /v1/feed %r\n%s\n%s"
                            % (client.feed_info(), w.logs(), self.daemon.logs()))
            time.sleep(0.05)
        self.assertIn("payload_too_large", w.logs())
        bootstrap = self.daemon.ready.get("kafka")

        def held_offsets():
            from kafka import KafkaConsumer, TopicPartition
            consumer = KafkaConsumer(bootstrap_servers=bootstrap,
                                     group_id="feedd-processor-usernames",
                                     enable_auto_commit=False)
            try:
                parts = [TopicPartition("feedd.users", p)
                         for p in sorted(consumer.partitions_for_topic("feedd.users") or ())]
                self.assertTrue(parts, "no partitions of feedd.users at " + bootstrap)
                ends = consumer.end_offsets(parts)
                return {tp.partition: (consumer.committed(tp), ends[tp]) for tp in parts
                        if ends[tp] > 0 and consumer.committed(tp) != ends[tp]}
            finally:
                consumer.close()

        # Every partition ends in resolved markers (docs/kafka.md): the
        # running worker skips them and commits its offsets past them.
        deadline = time.monotonic() + 60
        while True:
            info = client.feed_info()
            held = held_offsets()
            if info["kafka"].get("resolvedLsn") == info["headLsn"] and not held:
                break
            self.assertLess(time.monotonic(), deadline, "offsets of feedd.users (committed, end) "
                            "held back: %r; /v1/feed %r\n%s" % (held, info, w.logs()))
            time.sleep(0.1)
        # ... and reports how far they vouch for its partitions (its lag).
        self.assertEqual(w.metric("feedd_worker_resolved_lsn", "usernames"),
                         client.feed_info()["kafka"]["resolvedLsn"], w.logs())
        import test_kafka as kt
        messages, _ = kt.consume_all(bootstrap, topics=("feedd.users",), markers=True)
        last = {m.partition: m for m in messages}
        self.assertTrue(last and all(m.resolved is not None for m in last.values()),
                        "feedd.users does not end in resolved markers: %r" % last)

        self.assertEqual(w.stop(), 0, w.logs())  # commits its offsets
        self.assertIn("usernames: stopping with 1 parked change(s), which are forgotten: LSN ",
                      w.logs())
        self.assertEqual(held_offsets(), {}, "offsets of feedd.users (committed, end) held "
                         "back by the parked change")

    def test_worker_refuses_a_kind_that_cannot_be_shared(self):
        self.daemon.start()
        r = subprocess.run([self.daemon.binary, "worker"] + daemon_settings() +
                           ["--processor.feed.run=worker",
                            "--worker.api=%s:%d" % (self.daemon.host, self.daemon.port)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("processor.feed.run", r.stderr)
        self.assertIn("top_n", r.stderr)


if __name__ == "__main__":
    unittest.main()
