"""Kafka delivery across feedd crashes and broker outages (standalone broker).

The broker is `mock_kafka_broker` (librdkafka's mock cluster in its own
process, `$MOCK_BROKER_BIN`), so it outlives feedd. feedd runs with
`--kafka.brokers=<its bootstrap> --storage.sync=true`.

test_sigkill_while_publishing, 3 rounds on the same data directory and broker:
writer threads write continuously over HTTP (creates, upserts, patches,
deletes, batches; every acknowledged write's X-Feedd-Lsn is recorded); at a
random moment feedd is SIGKILLed while it publishes, restarted, written to a
little more, and once publishedLsn == headLsn every topic is consumed from the
beginning:
  * every acknowledged write is in the change feed (sync=true);
  * no change missing: every LSN of /v1/changefeed?from=beginning is in Kafka,
    with the right topic, key, headers and value;
  * LSNs strictly increase per key;
  * duplicates (the same LSN twice) are counted and printed per round; the
    publisher skips changes already in the partition tails (docs/kafka.md,
    "Duplicates"), so the test asserts the total is 0.

test_broker_outage: the broker process is SIGSTOPped for ~3 s while a client
writes: writes keep succeeding (2xx) and /v1/feed shows lagChanges > 0; after
SIGCONT every change arrives once, in order per key.

The seed is printed (FEEDD_KAFKA_CRASH_SEED=<n> repeats the choices).
"""

import http.client
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import test_kafka as kt
from feedd_harness import FeeddClient, FeeddDaemon, FeeddTestCase, _tail

ROUNDS = 3
WRITERS = 4
PKS_PER_WRITER = 3
CONTAINERS = (("posts", "postId"), ("users", "userId"))
CONNECTION_ERRORS = (OSError, http.client.HTTPException)


def mock_broker_binary():
    path = os.environ.get("MOCK_BROKER_BIN")
    if not path:
        from feedd_harness import feedd_binary
        guess = os.path.join(os.path.dirname(feedd_binary()), "mock_kafka_broker")
        if os.path.exists(guess):
            path = guess
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("MOCK_BROKER_BIN must name the mock_kafka_broker binary (got %r)"
                           % path)
    return path


class MockBroker:
    """mock_kafka_broker as a child process; its bootstrap is stdout's first line."""

    def __init__(self, topics=kt.TOPICS, partitions=3):
        self.workdir = tempfile.mkdtemp(prefix="feedd-it-broker-")
        self.stderr_path = os.path.join(self.workdir, "stderr.log")
        self.cmd = [mock_broker_binary(), "--topics", ",".join(topics),
                    "--partitions", str(partitions)]
        self.proc = None
        self.bootstrap = None
        self.stopped = False

    def start(self, timeout_s=20):
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=err, close_fds=True)
        deadline = time.monotonic() + timeout_s
        line = b""
        fd = self.proc.stdout.fileno()
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                self.cleanup()
                raise AssertionError("mock_kafka_broker printed no bootstrap (%r), rc=%r\n%s"
                                     % (line, self.proc.returncode, self.logs()))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 1)
                if not chunk:
                    continue
                line += chunk
        self.bootstrap = line.decode().strip()
        return self

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            if self.stopped:
                self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def logs(self):
        return "---- mock_kafka_broker stderr ----\n%s\n---- end ----" % _tail(self.stderr_path)


class Writer(threading.Thread):
    """Writes to its own partition keys until stopped or the daemon dies.

    Only items it created and saw acknowledged in this phase are replaced,
    patched or deleted, so every acknowledged answer is exactly predictable.
    """

    def __init__(self, index, phase, daemon, seed, acked, errors, lock):
        super().__init__(name="writer-%d-%s" % (index, phase), daemon=True)
        self.index = index
        self.phase = phase
        self.client = FeeddClient(daemon.host, daemon.port, timeout=20)
        self.rng = random.Random(seed)
        self.acked = acked      # lsn -> (op, container, pk, id), shared
        self.errors = errors    # shared list of strings
        self.lock = lock
        self.stop_event = threading.Event()
        self.items = []         # (container, field, pk, id) acknowledged and present
        self.counter = 0
        self.died = None        # the connection error that ended it

    def pick_pk(self):
        container, field = self.rng.choice(CONTAINERS)
        return container, field, "kc-w%d-%s-%d" % (self.index, container,
                                                  self.rng.randrange(PKS_PER_WRITER))

    def new_id(self):
        self.counter += 1
        return "%s-%d" % (self.phase, self.counter)

    def body(self, field, pk, item_id):
        return {"id": item_id, field: pk, "type": "kafkacrash", "n": self.counter,
                "w": self.index}

    def ack(self, resp, expected_status, effects, what):
        status, headers, body = resp
        if status != expected_status:
            with self.lock:
                self.errors.append("%s: HTTP %d (expected %d) %r"
                                   % (what, status, expected_status, body))
            return False
        lsn = headers.get("X-Feedd-Lsn")
        if lsn is None or not lsn.isdigit():
            with self.lock:
                self.errors.append("%s: bad X-Feedd-Lsn %r" % (what, lsn))
            return False
        last = int(lsn)
        with self.lock:
            for i, effect in enumerate(effects):
                self.acked[last - len(effects) + 1 + i] = effect
        return True

    def step(self):
        r = self.rng.random()
        if r < 0.35 or len(self.items) < 3:
            container, field, pk = self.pick_pk()
            item_id = self.new_id()
            if self.rng.random() < 0.5:
                resp = self.client.create(container, self.body(field, pk, item_id))
                expected = 201
            else:
                resp = self.client.upsert(container, pk, item_id, self.body(field, pk, item_id))
                expected = 201
            if self.ack(resp, expected, [("create", container, pk, item_id)], "create"):
                self.items.append((container, field, pk, item_id))
        elif r < 0.55:
            container, field, pk, item_id = self.rng.choice(self.items)
            resp = self.client.upsert(container, pk, item_id, self.body(field, pk, item_id))
            self.ack(resp, 200, [("replace", container, pk, item_id)], "upsert")
        elif r < 0.75:
            container, field, pk, item_id = self.rng.choice(self.items)
            resp = self.client.patch(container, pk, item_id,
                                     [{"op": "incr", "path": "/n", "value": 1}])
            self.ack(resp, 200, [("replace", container, pk, item_id)], "patch")
        elif r < 0.9:
            key = self.items.pop(self.rng.randrange(len(self.items)))
            container, field, pk, item_id = key
            resp = self.client.delete(container, pk, item_id)
            self.ack(resp, 204, [("delete", container, pk, item_id)], "delete")
        else:
            container, field, pk = self.pick_pk()
            ops, effects, created = [], [], []
            for _ in range(self.rng.randrange(2, 5)):
                item_id = self.new_id()
                ops.append({"op": "create", "body": self.body(field, pk, item_id)})
                effects.append(("create", container, pk, item_id))
                created.append((container, field, pk, item_id))
            same = [k for k in self.items if k[0] == container and k[2] == pk]
            if same:
                k = self.rng.choice(same)
                ops.append({"op": "patch", "id": k[3],
                            "operations": [{"op": "incr", "path": "/n", "value": 2}]})
                effects.append(("replace", container, pk, k[3]))
            resp = self.client.batch(container, pk, ops)
            if self.ack(resp, 200, effects, "batch"):
                self.items.extend(created)

    def run(self):
        try:
            while not self.stop_event.is_set():
                self.step()
        except CONNECTION_ERRORS as e:
            self.died = e
        except Exception as e:  # a bug in the test or an unparseable answer
            with self.lock:
                self.errors.append("%s: %r" % (self.name, e))
        finally:
            self.client.close()


class KafkaCrashTestCase(FeeddTestCase):
    def setUp(self):
        self.broker = MockBroker().start()
        self.addCleanup(self.broker.cleanup)

    def run(self, result=None):
        if result is None:
            return super().run(result)
        before = len(result.failures) + len(result.errors)
        out = super().run(result)
        broker = getattr(self, "broker", None)
        if len(result.failures) + len(result.errors) > before and broker is not None:
            sys.stderr.write("\n[%s failed] %s\n" % (self.id(), broker.logs()))
        return out

    def start_daemon(self, name):
        self.daemon = FeeddDaemon(name=name, sync=True,
                                  extra_args=["--kafka.brokers=%s" % self.broker.bootstrap])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()
        self.assertEqual(self.daemon.ready.get("kafka"), self.broker.bootstrap, self.daemon.ready)
        return self.daemon

    def run_writers(self, phase, seed, acked, errors, lock):
        writers = [Writer(i, phase, self.daemon, seed * 1000 + i, acked, errors, lock)
                   for i in range(WRITERS)]
        for w in writers:
            w.start()
        return writers

    def stop_writers(self, writers, expect_alive=True):
        for w in writers:
            w.stop_event.set()
        for w in writers:
            w.join(timeout=30)
            self.assertFalse(w.is_alive(), "%s did not stop" % w.name)
            if expect_alive:
                self.assertIsNone(w.died, "%s lost its connection: %r" % (w.name, w.died))

    def check_acked_in_feed(self, changes, acked, what):
        feed = {c["lsn"]: c for c, _ in changes}
        lost = []
        for lsn, (op, container, pk, item_id) in sorted(acked.items()):
            c = feed.get(lsn)
            got = None if c is None else (c["op"], c["container"], c["partitionKey"], c["id"])
            if got != (op, container, pk, item_id):
                lost.append((lsn, (op, container, pk, item_id), got))
        self.assertEqual(lost[:20], [], "%s: acknowledged writes not in the change feed as "
                         "acknowledged (lsn, expected, got)" % what)
        head = max(feed) if feed else 0
        self.assertEqual(sorted(feed), list(range(1, head + 1)), "%s: feed not 1..head" % what)


class KafkaCrashTest(KafkaCrashTestCase):
    def test_sigkill_while_publishing(self):
        seed = kt.seed_from_env("FEEDD_KAFKA_CRASH_SEED")
        rng = random.Random(seed)
        daemon = self.start_daemon("feedd-kafka-crash")
        acked, errors, lock = {}, [], threading.Lock()
        dup_total_before = 0
        per_round = []
        c = None
        for rnd in range(1, ROUNDS + 1):
            writers = self.run_writers("r%d" % rnd, rng.randrange(1 << 30), acked, errors,
                                       lock)
            time.sleep(rng.uniform(0.4, 1.5))
            probe = daemon.client(timeout=5)
            at_kill = probe.feed_info()
            probe.close()
            if c is not None:
                c.close()
            self.assertTrue(daemon.kill(), "feedd died before the kill")
            self.stop_writers(writers, expect_alive=False)
            self.assertEqual(errors, [], "round %d: write errors before the kill" % rnd)
            daemon.start()
            c = daemon.client()
            after_restart = c.feed_info()
            # A little more, then everything must reach Kafka.
            writers = self.run_writers("r%d-after" % rnd, rng.randrange(1 << 30), acked,
                                       errors, lock)
            time.sleep(0.3)
            self.stop_writers(writers)
            self.assertEqual(errors, [], "round %d: write errors after the restart" % rnd)
            info = kt.wait_published(self, c, what="round %d" % rnd)
            k = info["kafka"]
            self.assertEqual(k.get("bootstrapServers"), self.broker.bootstrap)
            self.assertIs(k.get("embedded"), False, info)
            self.assertEqual(k.get("lagChanges"), 0, info)
            changes = kt.changes_with_raw(c)
            self.check_acked_in_feed(changes, acked, "round %d" % rnd)
            messages, lows = kt.consume_all(self.broker.bootstrap)
            a = kt.Analysis(messages, changes, lows)
            new_dups = a.duplicate_count - dup_total_before
            dup_total_before = a.duplicate_count
            line = ("round %d: killed at head %d / published %s (inflight %s); restarted at "
                    "published %s, duplicatesSkipped %s; head now %d, %d acked writes so far; "
                    "%d Kafka records; duplicates this round %d; %s"
                    % (rnd, at_kill["headLsn"], at_kill.get("publishedLsn"),
                       at_kill["kafka"].get("inflightMessages"), after_restart.get("publishedLsn"),
                       k.get("duplicatesSkipped"), info["headLsn"], len(acked), len(messages),
                       new_dups, a.summary()))
            sys.stderr.write("\n  " + line)
            per_round.append(new_dups)
            a.assert_exactly_once(self, "round %d" % rnd, allow_duplicates=True)
        sys.stderr.write("\n  seed %d: duplicates per round %r, total %d\n"
                         % (seed, per_round, sum(per_round)))
        self.assertEqual(sum(per_round), 0,
                         "duplicates after kill -9 (per round %r); the publisher should skip "
                         "changes already in the partition tails" % per_round)


class KafkaOutageTest(KafkaCrashTestCase):
    def test_broker_outage(self):
        daemon = self.start_daemon("feedd-kafka-outage")
        c = daemon.client()
        acked, errors, lock = {}, [], threading.Lock()
        writers = self.run_writers("warm", 7, acked, errors, lock)
        time.sleep(0.3)
        self.stop_writers(writers)
        kt.wait_published(self, c, what="before the outage")

        writers = self.run_writers("outage", 11, acked, errors, lock)
        time.sleep(0.5)
        acked_before_stop = len(acked)
        self.broker.pause()
        stopped_at = time.monotonic()
        max_lag, states, published = 0, set(), set()
        while time.monotonic() - stopped_at < 3.0:
            info = c.feed_info()
            max_lag = max(max_lag, info["kafka"].get("lagChanges") or 0)
            states.add(info["kafka"].get("state"))
            published.add(info.get("publishedLsn"))
            time.sleep(0.1)
        acked_during = len(acked) - acked_before_stop
        self.broker.resume()
        time.sleep(0.5)
        self.stop_writers(writers)
        sys.stderr.write("\n  broker stopped 3 s: %d writes acknowledged meanwhile, max "
                         "lagChanges %d, states %r, publishedLsn values %r\n"
                         % (acked_during, max_lag, sorted(map(str, states)),
                            sorted(p for p in published if p is not None)[-3:]))
        self.assertEqual(errors, [], "writes failed while the broker was stopped")
        self.assertGreaterEqual(acked_during, 20, "writes must go on while Kafka is down")
        self.assertGreater(max_lag, 0, "/v1/feed must show a lag while the broker is stopped")

        info = kt.wait_published(self, c, what="after SIGCONT")
        self.assertEqual(info["kafka"].get("lagChanges"), 0, info)
        changes = kt.changes_with_raw(c)
        self.check_acked_in_feed(changes, acked, "outage")
        messages, lows = kt.consume_all(self.broker.bootstrap)
        a = kt.Analysis(messages, changes, lows)
        sys.stderr.write("  after the outage: %s\n" % a.summary())
        a.assert_exactly_once(self, "outage")
        self.assertEqual(len(messages), len(changes))

    def test_restart_while_broker_unreachable(self):
        """SIGKILL with a backlog, restart while the broker is SIGSTOPped.

        feedd must start and take writes; /v1/feed must not claim less than
        the persisted checkpoint was published (publishedLsn >= the
        kafka-publisher's ackedLsn, lagChanges <= head - that); after SIGCONT
        everything arrives once.
        """
        daemon = self.start_daemon("feedd-kafka-restart-down")
        c = daemon.client()
        acked, errors, lock = {}, [], threading.Lock()
        writers = self.run_writers("warm", 5, acked, errors, lock)
        time.sleep(0.3)
        self.stop_writers(writers)
        kt.wait_published(self, c, what="before the outage")
        self.broker.pause()
        writers = self.run_writers("backlog", 6, acked, errors, lock)
        time.sleep(0.5)
        c.close()
        self.assertTrue(daemon.kill())
        self.stop_writers(writers, expect_alive=False)
        self.assertEqual(errors, [])
        daemon.start()  # the broker is still stopped
        c = daemon.client()
        r = c.create("posts", {"id": "while-down", "postId": "kc-down", "type": "kafkacrash"})
        self.assertStatus(r, 201, "a write while the broker is unreachable")
        acked[self.assertLsnHeader(r)] = ("create", "posts", "kc-down", "while-down")
        bad, samples = [], []
        started = time.monotonic()
        while time.monotonic() - started < 2.0:
            info = c.feed_info()
            ckpt = [x["ackedLsn"] for x in info["consumers"] if x["name"] == "kafka-publisher"]
            self.assertEqual(len(ckpt), 1, info)
            sample = (info["headLsn"], info["publishedLsn"], ckpt[0],
                      info["kafka"].get("lagChanges"), info["kafka"].get("state"))
            if not samples or samples[-1] != sample:
                samples.append(sample)
            head, published, checkpoint, lag, _ = sample
            if published is None or published < checkpoint or lag > head - checkpoint:
                bad.append(sample)
            time.sleep(0.05)
        sys.stderr.write("\n  restart with the broker stopped: (head, publishedLsn, checkpoint "
                         "ackedLsn, lagChanges, state) samples %r\n" % samples[:6])
        self.broker.resume()
        info = kt.wait_published(self, c, what="after SIGCONT")
        changes = kt.changes_with_raw(c)
        self.check_acked_in_feed(changes, acked, "restart while down")
        messages, lows = kt.consume_all(self.broker.bootstrap)
        a = kt.Analysis(messages, changes, lows)
        sys.stderr.write("  after SIGCONT: %s\n" % a.summary())
        a.assert_exactly_once(self, "restart while down")
        self.assertEqual(bad[:3], [], "/v1/feed after a restart reports less published than its "
                         "own persisted checkpoint: (head, publishedLsn, ackedLsn, lagChanges, "
                         "state)")


if __name__ == "__main__":
    unittest.main()
