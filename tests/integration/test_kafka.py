"""Kafka publishing of the real feedd daemon, read back with independent clients.

Against the embedded broker (the daemon's default, `kafka.brokers=embedded`):

  * exactly once: a few hundred changes of mixed operations (creates, upserts
    that create and that replace, patches, deletes, transactional batches) in
    `users` and `posts`, some with non-ASCII partition keys; once
    `GET /v1/feed` shows publishedLsn == headLsn, every topic is consumed
    from the beginning with python3-kafka until idle. Every change of
    `/v1/changefeed?from=beginning` must be in Kafka exactly once, on topic
    `feedd.<container>`, keyed by its partition key (UTF-8), with the
    feedd-lsn/-op/-container/-id/-partition-key headers, its value
    byte-equal to the envelope `/v1/changefeed` serves, and LSNs strictly
    increasing per partition key (and every partition key in a single Kafka
    partition, the one murmur2 of the partition key names);
  * the same with `kafka.message_key=item` and tombstones: keys are
    ["<pk>","<id>"], a comment's tombstone does not share the key of its post;
  * the Debezium envelope with tombstones, field by field;
  * --check-config rejects an unknown kafka.* key and tombstones keyed by
    partition key;
  * a 1.9 MiB item (random hex, barely compressible) created and replaced:
    both changes arrive reference-only, the change after them arrives, and
    envelopesShrunk counts them;
  * kcat (an independent C client) reads the same messages of feedd.posts.

Shared helpers for test_kafka_crash.py live here too (import the module, not
its TestCase classes). The seed is printed (FEEDD_KAFKA_SEED=<n> repeats it).
"""

import collections
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import unittest

from kafka import KafkaConsumer, TopicPartition
from kafka.partitioner.default import murmur2

from feedd_harness import DaemonError, FeeddDaemon, FeeddTestCase, SharedDaemonTestCase

TOPICS = ("feedd.users", "feedd.posts", "feedd.feed")
HEADER_NAMES = ("feedd-lsn", "feedd-op", "feedd-container", "feedd-id", "feedd-partition-key")
PUBLISH_TIMEOUT_S = 60.0
CONSUME_TIMEOUT_S = 60.0


def item_key(pk, item_id):
    """The message key of an item with kafka.message_key=item."""
    return json.dumps([pk, item_id], separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def partition_of(pk, partitions=3):
    """The Kafka partition of a partition key (docs/kafka.md): the Java
    client's murmur2, here python3-kafka's implementation."""
    return (murmur2(pk.encode("utf-8")) & 0x7fffffff) % partitions


def seed_from_env(var):
    value = os.environ.get(var)
    seed = int(value) if value else random.SystemRandom().randrange(1, 2**31)
    sys.stderr.write("%s=%d\n" % (var, seed))
    return seed


# ---------------------------------------------------------------- Kafka side

class KMsg:
    """One consumed Kafka record."""

    __slots__ = ("topic", "partition", "offset", "key", "value", "header_list", "headers")

    def __init__(self, topic, partition, offset, key, value, header_list):
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key              # bytes or None
        self.value = value          # bytes or None (tombstone)
        self.header_list = list(header_list or [])
        self.headers = {}
        for name, v in self.header_list:
            self.headers.setdefault(name, v)

    @property
    def lsn(self):
        raw = self.headers.get("feedd-lsn")
        if raw is None or not raw.isdigit():
            return None
        return int(raw)

    @property
    def resolved(self):
        """The LSN a resolved marker vouches for; None for other messages."""
        raw = self.headers.get("feedd-resolved")
        return int(raw) if raw is not None and raw.isdigit() else None

    def where(self):
        return "%s/%d@%d" % (self.topic, self.partition, self.offset)

    def __repr__(self):
        v = self.value if self.value is None or len(self.value) < 300 else self.value[:300] + b"..."
        return "KMsg(%s key=%r headers=%r value=%r)" % (self.where(), self.key, self.header_list, v)


def consume_all(bootstrap, topics=TOPICS, idle_s=0.5, timeout_s=CONSUME_TIMEOUT_S,
                markers=False):
    """Reads every partition of `topics` from the beginning (python3-kafka, no
    group) until each reached its end offset and nothing new came for idle_s.

    Returns (messages in (topic, partition, offset) order, {tp: low watermark});
    resolved markers only with markers=True.
    """
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             fetch_max_wait_ms=5, max_partition_fetch_bytes=8 << 20,
                             fetch_max_bytes=64 << 20, client_id="feedd-it-reader")
    try:
        deadline = time.monotonic() + timeout_s
        parts = []
        for topic in topics:
            while True:
                ids = consumer.partitions_for_topic(topic)
                if ids:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError("topic %s has no partitions in the metadata of %s"
                                         % (topic, bootstrap))
                time.sleep(0.05)
            parts.extend(TopicPartition(topic, p) for p in sorted(ids))
        consumer.assign(parts)
        consumer.seek_to_beginning()
        low = consumer.beginning_offsets(parts)
        end = consumer.end_offsets(parts)
        next_offset = {tp: low[tp] for tp in parts}
        out = []
        last_new = time.monotonic()
        while True:
            batch = consumer.poll(timeout_ms=50, max_records=20000)
            now = time.monotonic()
            for tp, records in batch.items():
                for r in records:
                    out.append(KMsg(tp.topic, tp.partition, r.offset, r.key, r.value, r.headers))
                    next_offset[tp] = max(next_offset[tp], r.offset + 1)
                    last_new = now
            if all(next_offset[tp] >= end[tp] for tp in parts) and now - last_new >= idle_s:
                # Anything appended meanwhile? Then keep reading.
                end = consumer.end_offsets(parts)
                if all(next_offset[tp] >= end[tp] for tp in parts):
                    break
            if now > deadline:
                short = {"%s/%d" % (tp.topic, tp.partition): (next_offset[tp], end[tp])
                         for tp in parts if next_offset[tp] < end[tp]}
                raise AssertionError("consuming %s: partitions not read to their end after "
                                     "%.0f s (next offset, end offset): %r"
                                     % (bootstrap, timeout_s, short))
        out.sort(key=lambda m: (m.topic, m.partition, m.offset))
        if not markers:
            out = [m for m in out if m.resolved is None]
        return out, {(tp.topic, tp.partition): low[tp] for tp in parts}
    finally:
        consumer.close()


# ---------------------------------------------------------------- feedd side

def changes_with_raw(client, container=None, page=10000):
    """Every change from the beginning up to the head at call time, as a list
    of (envelope dict, the envelope's exact bytes in the /v1/changefeed answer)."""
    head = client.head_lsn()
    decoder = json.JSONDecoder()
    out = []
    nxt = "beginning"
    while True:
        status, _, body = client.changefeed(container, nxt, limit=page)
        if status != 200 or not isinstance(body, dict):
            raise AssertionError("changefeed from=%s -> %s %r" % (nxt, status, client.last_raw[:300]))
        text = client.last_raw.decode("utf-8")
        prefix = '{"changes":['
        if not text.startswith(prefix):
            raise AssertionError("changefeed body does not start with %r: %r" % (prefix, text[:100]))
        pos = len(prefix)
        raws = []
        while text[pos] != "]":
            value, end = decoder.raw_decode(text, pos)
            raws.append((value, text[pos:end].encode("utf-8")))
            pos = end
            if text[pos] == ",":
                pos += 1
        if [v for v, _ in raws] != body["changes"]:
            raise AssertionError("could not split the changefeed body into its envelopes")
        out.extend(raws)
        new_next = int(body["next"])
        if nxt != "beginning" and new_next <= nxt:
            raise AssertionError("changefeed next=%s does not advance from %s" % (new_next, nxt))
        nxt = new_next
        if nxt > head:
            return out


def wait_published(tc, client, timeout_s=PUBLISH_TIMEOUT_S, what=""):
    """Waits until the head is stable and publishedLsn == headLsn; returns /v1/feed."""
    client.wait_quiescent(stable_s=0.3, timeout_s=timeout_s)
    deadline = time.monotonic() + timeout_s
    info = client.feed_info()
    while True:
        if info.get("publishedLsn") == info.get("headLsn"):
            again = client.feed_info()
            if again.get("publishedLsn") == again.get("headLsn") == info.get("headLsn"):
                return again
            info = again
            continue
        if time.monotonic() > deadline:
            tc.fail("%s: publishedLsn %r != headLsn %r after %.0f s; /v1/feed: %s"
                    % (what, info.get("publishedLsn"), info.get("headLsn"), timeout_s,
                       json.dumps(info)))
        time.sleep(0.02)
        info = client.feed_info()


class Analysis:
    """Compares Kafka records with the change feed (native envelope)."""

    def __init__(self, messages, changes, low_watermarks=None, oldest_retained=1,
                 check_values=True, message_key="partition_key"):
        self.by_lsn = collections.defaultdict(list)   # lsn -> [KMsg] (non-null values)
        self.tombstones = []
        self.problems = []                             # human-readable, one per bad record
        self.order_problems = []
        self.split_keys = []
        feed = {c["lsn"]: (c, raw) for c, raw in changes}
        self.feed = feed
        for m in messages:
            if m.value is None:
                self.tombstones.append(m)
                continue
            lsn = m.lsn
            names = [n for n, _ in m.header_list]
            for h in HEADER_NAMES:
                if names.count(h) != 1:
                    self.problems.append("%s: header %s present %d times: %r"
                                         % (m.where(), h, names.count(h), m))
            if lsn is None:
                self.problems.append("%s: no numeric feedd-lsn header: %r" % (m.where(), m))
                continue
            self.by_lsn[lsn].append(m)
            if lsn not in feed:
                if lsn >= oldest_retained:
                    self.problems.append("%s: LSN %d is not in the change feed: %r"
                                         % (m.where(), lsn, m))
                continue
            change, raw = feed[lsn]
            exp = {
                "topic": "feedd." + change["container"],
                "key": (item_key(change["partitionKey"], change["id"]) if message_key == "item"
                        else change["partitionKey"].encode("utf-8")),
                "partition": partition_of(change["partitionKey"]),
                "feedd-op": change["op"].encode(),
                "feedd-container": change["container"].encode("utf-8"),
                "feedd-id": change["id"].encode("utf-8"),
                "feedd-partition-key": change["partitionKey"].encode("utf-8"),
            }
            got = {
                "topic": m.topic, "key": m.key, "partition": m.partition,
                "feedd-op": m.headers.get("feedd-op"),
                "feedd-container": m.headers.get("feedd-container"),
                "feedd-id": m.headers.get("feedd-id"),
                "feedd-partition-key": m.headers.get("feedd-partition-key"),
            }
            for k in exp:
                if exp[k] != got[k]:
                    self.problems.append("%s LSN %d: %s is %r, expected %r"
                                         % (m.where(), lsn, k, got[k], exp[k]))
            if check_values:
                try:
                    parsed = json.loads(m.value.decode("utf-8"))
                except (ValueError, UnicodeDecodeError) as e:
                    self.problems.append("%s LSN %d: value is not JSON (%s)" % (m.where(), lsn, e))
                    continue
                if parsed != change:
                    self.problems.append("%s LSN %d: value %r differs from the changefeed's %r"
                                         % (m.where(), lsn, parsed, change))
                elif m.value != raw:
                    self.problems.append("%s LSN %d: value equal as JSON but not byte-equal to "
                                         "the /v1/changefeed envelope:\n  kafka %r\n  feed  %r"
                                         % (m.where(), lsn, m.value[:300], raw[:300]))
        # Per partition key (whatever the message key): one Kafka partition,
        # LSNs strictly increasing in offset order.
        per_key = collections.defaultdict(list)
        for m in messages:
            if m.value is not None and m.lsn is not None:
                per_key[(m.topic, m.headers.get("feedd-partition-key", m.key))].append(m)
        for key, ms in per_key.items():
            partitions = sorted({m.partition for m in ms})
            if len(partitions) > 1:
                self.split_keys.append("%s key %r is in partitions %r" % (key[0], key[1], partitions))
            for p in partitions:
                in_p = [m for m in ms if m.partition == p]
                for a, b in zip(in_p, in_p[1:]):
                    if not b.lsn > a.lsn:
                        self.order_problems.append("%s key %r: LSN %d at offset %d after LSN %d at "
                                                   "offset %d" % (key[0], key[1], b.lsn, b.offset,
                                                                  a.lsn, a.offset))
        self.duplicates = {lsn: ms for lsn, ms in self.by_lsn.items() if len(ms) > 1}
        self.duplicate_count = sum(len(ms) - 1 for ms in self.duplicates.values())
        self.missing = sorted(lsn for lsn in feed if lsn not in self.by_lsn)
        # Offsets below a partition's low watermark are gone from the broker.
        self.truncated = {tp: low for tp, low in (low_watermarks or {}).items() if low > 0}

    def summary(self):
        return ("%d changes in the feed, %d LSNs in Kafka, %d missing, %d duplicates (%d LSNs), "
                "%d tombstones, %d bad records, %d order violations, %d keys split"
                % (len(self.feed), len(self.by_lsn), len(self.missing), self.duplicate_count,
                   len(self.duplicates), len(self.tombstones), len(self.problems),
                   len(self.order_problems), len(self.split_keys)))

    def assert_exactly_once(self, tc, what="", allow_duplicates=False):
        s = self.summary()
        tc.assertEqual(self.truncated, {}, "%s: the broker dropped the head of partitions "
                       "(low watermarks > 0), the check would be incomplete; %s" % (what, s))
        tc.assertEqual(self.problems[:10], [], "%s: bad records; %s" % (what, s))
        tc.assertEqual(self.missing[:50], [], "%s: changes of the feed missing from Kafka "
                       "(first 50 LSNs); %s" % (what, s))
        tc.assertEqual(self.split_keys[:10], [], "%s: a key spread over partitions; %s" % (what, s))
        tc.assertEqual(self.order_problems[:10], [], "%s: LSNs not increasing per key; %s"
                       % (what, s))
        if not allow_duplicates:
            dups = {lsn: [m.where() for m in ms] for lsn, ms in sorted(self.duplicates.items())[:20]}
            tc.assertEqual(dups, {}, "%s: LSNs delivered more than once; %s" % (what, s))


# ------------------------------------------------------------------ workload

class Workload:
    """Mixed writes over HTTP; remembers what each acknowledged write did."""

    TYPE = "kafkatest"  # no derived-view processor picks these items up

    def __init__(self, tc, client, rng):
        self.tc = tc
        self.c = client
        self.rng = rng
        self.items = {}          # (container, pk, id) -> body (without system props)
        self.counter = 0
        self.expected = {}       # lsn -> (op, container, pk, id)
        self.kinds = collections.Counter()
        self.pks = {
            "users": ["u%d" % i for i in range(6)] + ["ü-用户-7", "user with space"],
            "posts": ["p%d" % i for i in range(8)] + ["пост-9", "p/slash?"],
        }
        self.field = {"users": "userId", "posts": "postId"}

    def lsn(self, resp, what):
        return self.tc.assertLsnHeader(resp, what)

    def body(self, container, pk, item_id):
        self.counter += 1
        return {"id": item_id, self.field[container]: pk, "type": self.TYPE,
                "n": self.counter, "text": "x" * self.rng.randrange(0, 200),
                "tags": ["t%d" % self.rng.randrange(5)]}

    def new_id(self):
        self.counter += 1
        return "i%d" % self.counter

    def existing(self, container=None, pk=None):
        keys = [k for k in self.items if (container is None or k[0] == container)
                and (pk is None or k[1] == pk)]
        return self.rng.choice(keys) if keys else None

    def op_create(self):
        container = self.rng.choice(("users", "posts"))
        pk = self.rng.choice(self.pks[container])
        key = (container, pk, self.new_id())
        body = self.body(*key)
        resp = self.c.create(container, body)
        self.tc.assertStatus(resp, 201, "create %r" % (key,))
        self.expected[self.lsn(resp, "create")] = ("create",) + key
        self.items[key] = body
        self.kinds["create"] += 1

    def op_upsert_new(self):
        container = self.rng.choice(("users", "posts"))
        pk = self.rng.choice(self.pks[container])
        key = (container, pk, self.new_id())
        body = self.body(*key)
        resp = self.c.upsert(*key, body)
        self.tc.assertStatus(resp, 201, "upsert (create) %r" % (key,))
        self.expected[self.lsn(resp, "upsert")] = ("create",) + key
        self.items[key] = body
        self.kinds["upsert-create"] += 1

    def op_upsert_replace(self):
        key = self.existing()
        if key is None:
            return self.op_create()
        body = self.body(*key)
        resp = self.c.upsert(*key, body)
        self.tc.assertStatus(resp, 200, "upsert (replace) %r" % (key,))
        self.expected[self.lsn(resp, "upsert")] = ("replace",) + key
        self.items[key] = body
        self.kinds["upsert-replace"] += 1

    def op_patch(self):
        key = self.existing()
        if key is None:
            return self.op_create()
        ops = [{"op": "incr", "path": "/n", "value": 1},
               {"op": "set", "path": "/patched", "value": self.rng.randrange(1000)}]
        resp = self.c.patch(*key, ops)
        self.tc.assertStatus(resp, 200, "patch %r" % (key,))
        self.expected[self.lsn(resp, "patch")] = ("replace",) + key
        self.items[key] = {k: v for k, v in resp[2].items() if not k.startswith("_")}
        self.kinds["patch"] += 1

    def op_delete(self):
        key = self.existing()
        if key is None:
            return self.op_create()
        resp = self.c.delete(*key)
        self.tc.assertStatus(resp, 204, "delete %r" % (key,))
        self.expected[self.lsn(resp, "delete")] = ("delete",) + key
        del self.items[key]
        self.kinds["delete"] += 1

    def op_batch(self):
        container = self.rng.choice(("users", "posts"))
        pk = self.rng.choice(self.pks[container])
        ops, effects = [], []
        for _ in range(2):
            key = (container, pk, self.new_id())
            body = self.body(*key)
            ops.append({"op": "create", "body": body})
            effects.append(("create", key, body))
        ex = [k for k in self.items if k[0] == container and k[1] == pk]
        self.rng.shuffle(ex)
        if ex:
            key = ex.pop()
            body = self.body(*key)
            ops.append({"op": "upsert", "body": body})
            effects.append(("replace", key, body))
        if ex:
            key = ex.pop()
            ops.append({"op": "patch", "id": key[2],
                        "operations": [{"op": "incr", "path": "/n", "value": 5}]})
            effects.append(("replace", key, None))
        if ex:
            key = ex.pop()
            ops.append({"op": "delete", "id": key[2]})
            effects.append(("delete", key, None))
        resp = self.c.batch(container, pk, ops)
        self.tc.assertStatus(resp, 200, "batch on %s/%s" % (container, pk))
        last = self.lsn(resp, "batch")
        results = resp[2]["results"]
        self.tc.assertEqual(len(results), len(ops))
        first = last - len(ops) + 1
        for i, (op, key, body) in enumerate(effects):
            self.expected[first + i] = (op,) + key
            if op == "delete":
                del self.items[key]
            elif body is not None:
                self.items[key] = body
            else:
                self.items[key] = {k: v for k, v in results[i]["item"].items()
                                   if not k.startswith("_")}
        self.kinds["batch"] += 1

    def run(self, n):
        ops = [self.op_create, self.op_upsert_new, self.op_upsert_replace, self.op_patch,
               self.op_delete, self.op_batch]
        weights = [3, 2, 3, 3, 2, 1]
        for _ in range(n):
            self.rng.choices(ops, weights)[0]()


# --------------------------------------------------------------------- tests

def kafka_info_ok(tc, info, bootstrap, what):
    k = info.get("kafka") or {}
    tc.assertEqual(k.get("bootstrapServers"), bootstrap, "%s: %r" % (what, info))
    tc.assertEqual(k.get("lagChanges"), 0, "%s: %r" % (what, info))
    tc.assertEqual(k.get("deliveryErrors"), 0, "%s: %r" % (what, info))
    tc.assertEqual(k.get("state"), "running", "%s: %r" % (what, info))
    tc.assertEqual(k.get("topics"), {"users": "feedd.users", "posts": "feedd.posts",
                                     "feed": "feedd.feed"}, "%s: %r" % (what, info))


class KafkaNativeTest(SharedDaemonTestCase):
    """One daemon (embedded broker, native envelope) for the mixed workload."""

    daemon_name = "feedd-kafka"
    state = None

    @classmethod
    def setUpClass(cls):
        cls.seed = seed_from_env("FEEDD_KAFKA_SEED")
        super().setUpClass()

    def workload(self):
        """Runs the mixed workload once per class, consumes everything; cached."""
        cls = type(self)
        if cls.state is not None:
            return cls.state
        c = self.daemon.client()
        bootstrap = self.daemon.ready.get("kafka")
        self.assertIsInstance(bootstrap, str, "ready file: %r" % self.daemon.ready)
        info = c.feed_info()
        self.assertEqual(info["kafka"].get("embedded"), True, info)
        self.assertEqual(info["kafka"].get("bootstrapServers"), bootstrap, info)
        w = Workload(self, c, random.Random(self.seed))
        w.run(300)
        info = wait_published(self, c, what="mixed workload")
        kafka_info_ok(self, info, bootstrap, "after the mixed workload")
        changes = changes_with_raw(c)
        messages, lows = consume_all(bootstrap)
        cls.state = (w, info, changes, messages, lows, bootstrap)
        return cls.state

    def test_every_change_exactly_once(self):
        w, info, changes, messages, lows, _ = self.workload()
        head = info["headLsn"]
        sys.stderr.write("\n  workload: %s; head LSN %d; %d Kafka records\n"
                         % (dict(w.kinds), head, len(messages)))
        # The change feed itself is the reference: it must hold every
        # acknowledged write, as it was acknowledged.
        self.assertEqual([c["lsn"] for c, _ in changes], list(range(1, head + 1)),
                         "the change feed is not LSNs 1..head")
        by_lsn = {c["lsn"]: c for c, _ in changes}
        for lsn, (op, container, pk, item_id) in sorted(w.expected.items()):
            c = by_lsn.get(lsn)
            self.assertIsNotNone(c, "acknowledged LSN %d missing from the feed" % lsn)
            self.assertEqual((c["op"], c["container"], c["partitionKey"], c["id"]),
                             (op, container, pk, item_id), "change at LSN %d" % lsn)
        ops = collections.Counter((c["container"], c["op"]) for c, _ in changes)
        for container in ("users", "posts"):
            for op in ("create", "replace", "delete"):
                self.assertGreater(ops[(container, op)], 0,
                                   "the workload made no %s in %s: %r" % (op, container, ops))
        self.assertTrue(any(not c["partitionKey"].isascii() for c, _ in changes))

        a = Analysis(messages, changes, lows)
        sys.stderr.write("  kafka vs feed: %s\n" % a.summary())
        a.assert_exactly_once(self, "mixed workload")
        self.assertEqual(a.tombstones, [], "tombstones without kafka.tombstones=true")
        self.assertEqual(len(messages), head, "one record per change")
        self.assertEqual(info["kafka"]["delivered"], head, info)

    def test_kcat_reads_the_same_posts(self):
        _, _, _, messages, _, bootstrap = self.workload()
        kcat = shutil.which("kcat") or shutil.which("kafkacat")
        if kcat is None:
            self.skipTest("kcat not installed")
        cmd = [kcat, "-b", bootstrap, "-t", "feedd.posts", "-C", "-e", "-q",
               "-f", "%p %o %h\\n"]
        proc = subprocess.run(cmd, capture_output=True, timeout=60)
        self.assertEqual(proc.returncode, 0, "%s: %r" % (cmd, proc.stderr[-2000:]))
        lines = [l for l in proc.stdout.decode("utf-8").splitlines() if l]
        got = []
        for line in lines:
            p, o, headers = line.split(" ", 2)
            headers = dict(h.split("=", 1) for h in headers.split(","))
            if "feedd-resolved" in headers:
                continue  # a resolved marker
            got.append((int(p), int(o), headers.get("feedd-lsn")))
        expected = [(m.partition, m.offset, m.headers["feedd-lsn"].decode())
                    for m in messages if m.topic == "feedd.posts"]
        sys.stderr.write("\n  kcat read %d messages of feedd.posts (python3-kafka: %d)\n"
                         % (len(got), len(expected)))
        self.assertGreater(len(expected), 0)
        self.assertEqual(len(got), len(expected), "kcat and python3-kafka disagree on the count")
        self.assertEqual(sorted(got), sorted(expected))


class KafkaDebeziumTest(FeeddTestCase):
    INSTANCE = "it-kafka-dbz"

    def setUp(self):
        self.daemon = FeeddDaemon(name="feedd-dbz", extra_args=[
            "--kafka.envelope=debezium", "--kafka.tombstones=true", "--kafka.message_key=item",
            "--instance.name=%s" % self.INSTANCE])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def test_debezium_envelope_and_tombstone(self):
        c = self.daemon.client()
        bootstrap = self.daemon.ready["kafka"]
        pk, item_id = "dbz-ключ", "d1"
        v1 = {"id": item_id, "postId": pk, "type": "kafkatest", "title": "one", "n": 1}
        v2 = {"id": item_id, "postId": pk, "type": "kafkatest", "title": "two", "n": 2}
        lsns = []
        r = c.create("posts", v1)
        self.assertStatus(r, 201, "create")
        lsns.append(self.assertLsnHeader(r))
        r = c.upsert("posts", pk, item_id, v2)
        self.assertStatus(r, 200, "replace")
        lsns.append(self.assertLsnHeader(r))
        r = c.delete("posts", pk, item_id)
        self.assertStatus(r, 204, "delete")
        lsns.append(self.assertLsnHeader(r))
        # Something after the tombstone on the same key proves its position.
        r = c.create("posts", {"id": "d2", "postId": pk, "type": "kafkatest"})
        self.assertStatus(r, 201, "create after delete")
        lsns.append(self.assertLsnHeader(r))
        info = wait_published(self, c, what="debezium")
        kafka_info_ok(self, info, bootstrap, "debezium")
        feed = {ch["lsn"]: ch for ch, _ in changes_with_raw(c, "posts")}
        messages, _ = consume_all(bootstrap, topics=("feedd.posts",))
        mine = [m for m in messages if m.headers.get("feedd-partition-key") == pk.encode("utf-8")]
        self.assertEqual(len(mine), 5, "create, update, delete, tombstone, create: %r" % mine)
        self.assertEqual({m.partition for m in mine}, {partition_of(pk)}, mine)
        mine.sort(key=lambda m: m.offset)
        self.assertEqual([m.key for m in mine], [item_key(pk, "d1")] * 4 + [item_key(pk, "d2")])
        expect_ops = ["c", "u", "d", None, "c"]
        change_lsns = [lsns[0], lsns[1], lsns[2], lsns[2], lsns[3]]
        for m, op, lsn in zip(mine, expect_ops, change_lsns):
            change = feed[lsn]
            what = "LSN %d (%s)" % (lsn, op or "tombstone")
            self.assertEqual(m.headers.get("feedd-lsn"), str(lsn).encode(), what)
            self.assertEqual(m.headers.get("feedd-op"), change["op"].encode(), what)
            self.assertEqual(m.headers.get("feedd-container"), b"posts", what)
            self.assertEqual(m.headers.get("feedd-id"), change["id"].encode(), what)
            if op is None:
                self.assertIsNone(m.value, "%s: a tombstone has a null value" % what)
                continue
            self.assertIsNotNone(m.value, what)
            v = json.loads(m.value.decode("utf-8"))
            for field in ("before", "after", "op", "ts_ms", "source"):
                self.assertIn(field, v, "%s: %r" % (what, v))
            self.assertEqual(v["op"], op, what)
            self.assertEqual(v["before"], change["before"], what)
            self.assertEqual(v["after"], change["after"], what)
            self.assertEqual(v["ts_ms"], change["ts"], what)
            self.assertIsInstance(v["ts_ms"], int, what)
            src = v["source"]
            self.assertEqual(src.get("connector"), "feedd", what)
            self.assertEqual(src.get("name"), self.INSTANCE, what)
            self.assertEqual(src.get("container"), "posts", what)
            self.assertEqual(src.get("lsn"), lsn, what)
            self.assertEqual(src.get("partitionKey"), pk, what)
            self.assertEqual(src.get("id"), change["id"], what)
            self.assertNotIn("afterOmitted", src, what)
            self.assertNotIn("beforeOmitted", src, what)
        # The images themselves, independently of the change feed.
        first, update, delete = (json.loads(m.value) for m in mine[:3])
        self.assertIsNone(first["before"])
        self.assertEqual({k: x for k, x in first["after"].items() if not k.startswith("_")}, v1)
        self.assertEqual({k: x for k, x in update["before"].items() if not k.startswith("_")}, v1)
        self.assertEqual({k: x for k, x in update["after"].items() if not k.startswith("_")}, v2)
        self.assertEqual({k: x for k, x in delete["before"].items() if not k.startswith("_")}, v2)
        self.assertIsNone(delete["after"])


class KafkaItemKeyTest(FeeddTestCase):
    """kafka.message_key=item with tombstones: the issue's scenario (a deleted
    comment's tombstone must not carry its post's key) and the mixed workload."""

    def setUp(self):
        self.seed = seed_from_env("FEEDD_KAFKA_SEED")
        self.daemon = FeeddDaemon(name="feedd-itemkey", extra_args=[
            "--kafka.message_key=item", "--kafka.tombstones=true"])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def test_keys_identify_items_and_partitions_follow_the_partition_key(self):
        c = self.daemon.client()
        bootstrap = self.daemon.ready["kafka"]
        post = {"id": "p1", "postId": "p1", "type": "post", "userId": "u1", "title": "Hi",
                "commentCount": 0}
        self.assertStatus(c.create("posts", post), 201, "post")
        r = c.batch("posts", "p1", [
            {"op": "create", "body": {"id": "c1", "postId": "p1", "type": "comment",
                                      "userId": "u1", "content": "first"}},
            {"op": "patch", "id": "p1",
             "operations": [{"op": "incr", "path": "/commentCount", "value": 1}]}])
        self.assertStatus(r, 200, "comment batch")
        self.assertStatus(c.delete("posts", "p1", "c1"), 204, "delete the comment")
        Workload(self, c, random.Random(self.seed)).run(150)
        info = wait_published(self, c, what="item keys")
        kafka_info_ok(self, info, bootstrap, "item keys")
        changes = changes_with_raw(c)
        messages, lows = consume_all(bootstrap)

        posts = [m for m in messages if m.topic == "feedd.posts"
                 and m.headers.get("feedd-partition-key") == b"p1"]
        comment = [m for m in posts if m.headers.get("feedd-id") == b"c1"]
        self.assertEqual([m.key for m in comment], [b'["p1","c1"]'] * 3,
                         "create, delete, tombstone of c1: %r" % comment)
        self.assertIsNone(comment[-1].value, "the last one is the tombstone: %r" % comment)
        post_keys = {m.key for m in posts if m.headers.get("feedd-id") == b"p1"}
        self.assertEqual(post_keys, {b'["p1","p1"]'})
        self.assertNotIn(comment[-1].key, post_keys, "the tombstone would compact away the post")
        self.assertEqual({m.partition for m in posts}, {partition_of("p1")}, posts)

        a = Analysis(messages, changes, lows, message_key="item")
        sys.stderr.write("\n  kafka vs feed (item keys): %s\n" % a.summary())
        a.assert_exactly_once(self, "item keys")
        deletes = [ch for ch, _ in changes if ch["op"] == "delete"]
        self.assertEqual(len(a.tombstones), len(deletes), "one tombstone per delete")
        for t in a.tombstones:
            pk = t.headers["feedd-partition-key"].decode("utf-8")
            self.assertEqual(t.key, item_key(pk, t.headers["feedd-id"].decode("utf-8")), t)
            self.assertEqual(t.partition, partition_of(pk), t)


def wait_resolved(tc, client, lsn, timeout_s=PUBLISH_TIMEOUT_S):
    """Waits until every partition acknowledged a resolved marker >= lsn;
    returns /v1/feed."""
    deadline = time.monotonic() + timeout_s
    while True:
        info = client.feed_info()
        if (info["kafka"].get("resolvedLsn") or 0) >= lsn:
            return info
        if time.monotonic() > deadline:
            tc.fail("no resolved marker for LSN %d after %.0f s: %s"
                    % (lsn, timeout_s, json.dumps(info)))
        time.sleep(0.02)


def check_markers(tc, messages, changes, head):
    """Per topic partition, in offset order: every resolved marker is above
    the one before, at most `head`, and after every change of that partition
    with an LSN up to its own (compared with /v1/changefeed). Returns
    {(topic, partition): [marker LSNs in offset order]}."""
    feed_of = collections.defaultdict(set)
    for change, _ in changes:
        feed_of[("feedd." + change["container"], partition_of(change["partitionKey"]))].add(
            change["lsn"])
    seen = collections.defaultdict(set)
    markers = collections.defaultdict(list)
    for m in sorted(messages, key=lambda m: (m.topic, m.partition, m.offset)):
        where = (m.topic, m.partition)
        if m.resolved is None:
            seen[where].add(m.lsn)
            continue
        what = "marker %d at %s" % (m.resolved, m.where())
        tc.assertEqual(m.key, b"feedd-resolved", what)
        tc.assertEqual(json.loads(m.value), {"resolved": m.resolved}, what)
        tc.assertNotIn("feedd-lsn", m.headers, what)
        tc.assertEqual(b"feedd." + m.headers.get("feedd-container", b""), m.topic.encode(), what)
        tc.assertLessEqual(m.resolved, head, what)
        if markers[where]:
            tc.assertGreater(m.resolved, markers[where][-1], "%s: not above the one before" % what)
        ahead = sorted(lsn for lsn in feed_of[where] if lsn <= m.resolved and lsn not in seen[where])
        tc.assertEqual(ahead[:10], [], "%s: changes of its partition at or below it come later"
                       % what)
        markers[where].append(m.resolved)
    return markers


class KafkaResolvedTest(FeeddTestCase):
    """Resolved markers against the real daemon, read with python3-kafka and
    compared with /v1/changefeed."""

    INTERVAL_MS = 100

    def setUp(self):
        self.seed = seed_from_env("FEEDD_KAFKA_SEED")
        self.daemon = FeeddDaemon(name="feedd-resolved", extra_args=[
            "--kafka.resolved_interval_ms=%d" % self.INTERVAL_MS])
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def test_markers_are_monotonic_and_never_ahead_of_what_was_published(self):
        c = self.daemon.client()
        bootstrap = self.daemon.ready["kafka"]
        w = Workload(self, c, random.Random(self.seed))
        bursts = 4
        for _ in range(bursts):
            w.run(40)
            wait_resolved(self, c, c.head_lsn())  # one round per burst at least
        info = wait_published(self, c, what="resolved markers")
        head = info["headLsn"]
        info = wait_resolved(self, c, head)
        changes = changes_with_raw(c)
        messages, lows = consume_all(bootstrap, markers=True)
        markers = check_markers(self, messages, changes, head)
        self.assertEqual(sorted(markers), sorted((t, p) for t in TOPICS for p in range(3)),
                         "a marker in every partition of every topic")
        for where, lsns in markers.items():
            self.assertEqual(lsns[-1], head, where)
            self.assertGreaterEqual(len(lsns), bursts, where)
        total = sum(len(lsns) for lsns in markers.values())
        self.assertEqual(info["kafka"]["resolvedMarkers"], total, info)
        self.assertEqual(info["kafka"]["resolvedLsn"], head, info)
        self.assertEqual(info["kafka"]["delivered"], head, "markers are not counted as changes")
        a = Analysis([m for m in messages if m.resolved is None], changes, lows)
        a.assert_exactly_once(self, "with resolved markers")
        sys.stderr.write("\n  %d changes, %d markers (%d rounds)\n"
                         % (head, total, total // 9))

    def test_no_marker_while_nothing_is_published(self):
        c = self.daemon.client()
        bootstrap = self.daemon.ready["kafka"]
        wait_published(self, c, what="idle start")
        messages, _ = consume_all(bootstrap, markers=True, idle_s=0.2)
        self.assertEqual(messages, [], "nothing written, nothing published")
        r = c.create("posts", {"id": "r1", "postId": "rp", "type": "kafkatest"})
        self.assertStatus(r, 201)
        lsn = self.assertLsnHeader(r)
        info = wait_resolved(self, c, lsn)
        self.assertEqual(info["kafka"]["resolvedMarkers"], 9, info)
        # An absence is watched over a window: 10 intervals.
        time.sleep(10 * self.INTERVAL_MS / 1000.0)
        info = c.feed_info()
        self.assertEqual(info["kafka"]["resolvedMarkers"], 9, "one round, not one per interval")
        messages, _ = consume_all(bootstrap, markers=True, idle_s=0.2)
        self.assertEqual(sorted((m.topic, m.partition, m.resolved) for m in messages
                                if m.resolved is not None),
                         sorted((t, p, lsn) for t in TOPICS for p in range(3)))
        self.assertEqual([m.lsn for m in messages if m.resolved is None], [lsn])


class KafkaHeartbeatTest(FeeddTestCase):
    """kafka.heartbeat_interval_ms: heartbeats while nothing is written,
    carrying the published LSN."""

    def test_heartbeats_while_idle_carry_the_published_lsn(self):
        daemon = FeeddDaemon(name="feedd-heartbeat", extra_args=[
            "--kafka.heartbeat_interval_ms=100", "--instance.name=hb-test"])
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        bootstrap = daemon.ready["kafka"]

        def wait_heartbeats(n):
            deadline = time.monotonic() + PUBLISH_TIMEOUT_S
            while True:
                info = c.feed_info()
                if info["kafka"].get("heartbeats", 0) >= n:
                    return info
                self.assertLess(time.monotonic(), deadline, "heartbeats: %r" % info)
                time.sleep(0.05)

        wait_heartbeats(3)
        r = c.create("posts", {"id": "h1", "postId": "hp", "type": "kafkatest"})
        self.assertStatus(r, 201)
        lsn = self.assertLsnHeader(r)
        wait_published(self, c, what="heartbeat")
        info = wait_heartbeats(c.feed_info()["kafka"]["heartbeats"] + 5)
        self.assertEqual(info["kafka"]["delivered"], lsn, "heartbeats are not changes")
        # Heartbeats keep coming: read until a pause shorter than the interval.
        beats, _ = consume_all(bootstrap, topics=("feedd.__heartbeat",), idle_s=0.03)
        self.assertGreaterEqual(len(beats), 8, beats)
        values = [json.loads(m.value) for m in beats]
        for m, v in zip(beats, values):
            self.assertEqual((m.partition, m.key), (0, b'{"serverName":"hb-test"}'), m)
            self.assertEqual(sorted(v), ["publishedLsn", "ts_ms"], m)
        self.assertEqual(values[0]["publishedLsn"], 0, "nothing was published at first")
        self.assertEqual(values[-1]["publishedLsn"], lsn)
        self.assertEqual([v["ts_ms"] for v in values], sorted(v["ts_ms"] for v in values))
        self.assertEqual([v["publishedLsn"] for v in values],
                         sorted(v["publishedLsn"] for v in values))
        changes, _ = consume_all(bootstrap)
        self.assertEqual([m.lsn for m in changes], [lsn], "the change topics hold the change only")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaEmbeddedRestartTest(FeeddTestCase):
    """The embedded broker starts empty; after a restart it holds the
    retained tail again, at the same bootstrap address (kafka.embedded_port)."""

    def test_retained_tail_at_the_same_address_after_a_restart(self):
        self.seed = seed_from_env("FEEDD_KAFKA_SEED")
        port = free_port()
        daemon = FeeddDaemon(name="feedd-embedded-restart",
                             extra_args=["--kafka.embedded_port=%d" % port])
        self.addCleanup(daemon.cleanup)
        daemon.start()
        bootstrap = "127.0.0.1:%d" % port
        self.assertEqual(daemon.ready.get("kafka"), bootstrap, daemon.ready)
        c = daemon.client()
        Workload(self, c, random.Random(self.seed)).run(120)
        wait_published(self, c, what="before the restart")
        before, _ = consume_all(bootstrap)
        daemon.restart()
        self.assertEqual(daemon.ready.get("kafka"), bootstrap, "the bootstrap address changed")
        c = daemon.client()
        info = wait_published(self, c, what="after the restart")
        kafka_info_ok(self, info, bootstrap, "after the restart")
        self.assertIn("a relay to 127.0.0.1:", daemon.logs())
        changes = changes_with_raw(c)
        messages, lows = consume_all(bootstrap)  # through the fixed port
        a = Analysis(messages, changes, lows)
        sys.stderr.write("\n  before the restart %d records; after: %s\n"
                         % (len(before), a.summary()))
        # Everything retained fits the broker's window: all of it is back.
        a.assert_exactly_once(self, "after the restart")
        self.assertEqual(len(messages), len(before))
        self.assertEqual([(m.topic, m.partition, m.lsn) for m in messages],
                         [(m.topic, m.partition, m.lsn) for m in before])

    def test_a_taken_port_is_a_clear_start_up_error(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            daemon = FeeddDaemon(name="feedd-port-taken",
                                 extra_args=["--kafka.embedded_port=%d" % port])
            self.addCleanup(daemon.cleanup)
            with self.assertRaises(DaemonError):
                daemon.start()
            self.assertIn("kafka.embedded_port: cannot listen on 127.0.0.1:%d" % port,
                          daemon.logs())


class KafkaConfigCheckTest(unittest.TestCase):
    """Kafka settings that cannot work fail --check-config (exit 2), naming
    the key, rather than passing it and failing at start."""

    def check_config(self, *args):
        binary = os.environ.get("FEEDD_BIN")
        self.assertTrue(binary and os.access(binary, os.X_OK), "FEEDD_BIN: %r" % binary)
        return subprocess.run([binary, "--check-config"] + list(args), capture_output=True,
                              text=True, timeout=60)

    def test_unknown_kafka_key(self):
        proc = self.check_config("--kafka.max_inflight_bytes=1000")
        self.assertEqual(proc.returncode, 2, proc)
        self.assertIn("kafka.max_inflight_bytes", proc.stderr)
        proc = self.check_config("--kafka.linger.ms=5")
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))

    def test_tombstones_need_item_keys(self):
        proc = self.check_config("--kafka.tombstones=true")
        self.assertEqual(proc.returncode, 2, proc)
        self.assertIn("kafka.message_key=item", proc.stderr)
        proc = self.check_config("--kafka.tombstones=true", "--kafka.message_key=item")
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))


class KafkaLargeItemTest(FeeddTestCase):
    def setUp(self):
        self.daemon = FeeddDaemon(name="feedd-large")
        self.addCleanup(self.daemon.cleanup)
        self.daemon.start()

    def test_large_item_sent_as_reference_and_feed_moves_on(self):
        c = self.daemon.client()
        bootstrap = self.daemon.ready["kafka"]
        pk = "big-p"
        size = int(1.9 * 1024 * 1024)

        def big(n):
            blob = os.urandom(size // 2).hex()  # random hex: lz4 gains < 2x
            body = {"id": "big", "postId": pk, "type": "kafkatest", "n": n, "blob": blob}
            self.assertLess(len(json.dumps(body, separators=(",", ":"))), 2 * 1024 * 1024)
            return body

        b1, b2 = big(1), big(2)
        r1 = c.create("posts", b1)
        self.assertStatus(r1, 201, "create 1.9 MiB")
        r2 = c.upsert("posts", pk, "big", b2)
        self.assertStatus(r2, 200, "replace 1.9 MiB")
        r3 = c.upsert("posts", pk, "small", {"id": "small", "postId": pk, "type": "kafkatest"})
        self.assertStatus(r3, 201, "small change after")
        lsns = [self.assertLsnHeader(r) for r in (r1, r2, r3)]
        info = wait_published(self, c, what="large item")
        kafka_info_ok(self, info, bootstrap, "large item")
        feed = {ch["lsn"]: ch for ch, _ in changes_with_raw(c)}
        messages, _ = consume_all(bootstrap, topics=("feedd.posts",))
        mine = sorted((m for m in messages if m.headers.get("feedd-partition-key") == pk.encode()),
                      key=lambda m: m.offset)
        self.assertEqual([m.lsn for m in mine], lsns, "each change once, in order: %r" % mine)
        shrunk = 0
        for m, lsn, op, body in zip(mine[:2], lsns, ("create", "replace"), (b1, b2)):
            v = json.loads(m.value)
            ch = feed[lsn]
            what = "LSN %d (%s, %d bytes in Kafka)" % (lsn, op, len(m.value))
            for field in ("lsn", "op", "container", "partitionKey", "id", "ts"):
                self.assertEqual(v.get(field), ch[field], "%s: %s" % (what, field))
            self.assertEqual(v["op"], op, what)
            self.assertIsNone(v.get("after", "absent"), "%s: after must be null" % what)
            self.assertIs(v.get("afterOmitted"), True, what)
            self.assertIsNone(v.get("before", "absent"), "%s: before must be null" % what)
            self.assertIs(v.get("beforeOmitted"), True, what)
            self.assertLess(len(m.value), 900 * 1024, what)
            self.assertEqual(m.headers.get("feedd-op"), op.encode(), what)
            shrunk += 1
            # The full record stays readable by LSN (docs/kafka.md).
            status, _, page = c.changefeed(None, lsn, limit=1)
            self.assertEqual(status, 200)
            full = page["changes"][0]
            self.assertEqual(full["lsn"], lsn)
            self.assertEqual({k: x for k, x in full["after"].items() if not k.startswith("_")}, body)
        small = json.loads(mine[2].value)
        self.assertEqual(small, feed[lsns[2]], "the change after the large ones, in full")
        k = c.feed_info()["kafka"]
        sys.stderr.write("\n  envelopesShrunk=%r, Kafka value sizes %r\n"
                         % (k.get("envelopesShrunk"), [len(m.value) for m in mine]))
        self.assertGreaterEqual(k.get("envelopesShrunk"), 1)
        self.assertEqual(k.get("envelopesShrunk"), shrunk, "each shrunk envelope is counted once")


if __name__ == "__main__":
    unittest.main()
