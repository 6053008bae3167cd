"""Crash test: acknowledged writes survive SIGKILL, and the change feed stays whole.

feedd runs with storage.sync=true. Writer threads write continuously over HTTP
(creates, upserts, patches with incr, deletes, small batches), each on its own
partitions, and remember every ACKNOWLEDGED write. After a random 0.3-1.5 s
the daemon is SIGKILLed and restarted on the same data directory, and:

  * every acknowledged write is there: each key's stored item is at least as
    new as its last acknowledged write, and exactly that write when no later
    unanswered request was in flight for it; acknowledged deletes stay deleted;
  * nothing unacknowledged and unattempted appeared (a partition holds exactly
    the keys the model allows);
  * the change feed from the beginning has LSNs 1..head, no gap, no duplicate;
    every acknowledged write is the record at its LSN;
  * for each key, the latest change record matches the stored item (after ==
    item; a delete when the item is absent).

Five rounds on the same data directory; each continues writing after the
restart. The seed is printed (FEEDD_CRASH_SEED=<n> repeats the choices).
"""

import http.client
import os
import random
import sys
import threading
import time
import unittest

from feedd_harness import FeeddDaemon, FeeddTestCase, strip_system

ROUNDS = 5
WRITERS = 4
PARTITIONS_PER_CONTAINER = 4
# (container, partition key field). The items carry type "crashtest" so that
# no derived-view processor copies or rewrites them.
CONTAINERS = (("posts", "postId"), ("users", "userId"))
CONNECTION_ERRORS = (OSError, http.client.HTTPException)


class KeyState:
    __slots__ = ("item", "lsn", "pending")

    def __init__(self):
        self.item = None     # last acknowledged version (None: absent)
        self.lsn = 0         # LSN of the last acknowledged write (0: none)
        self.pending = []    # ops sent after that without an answer

    def __repr__(self):
        return "KeyState(lsn=%d, pending=%r, item=%r)" % (self.lsn, self.pending, self.item)


class Writer(threading.Thread):
    """Writes to its own partitions; keeps a model of what was acknowledged."""

    def __init__(self, index, rnd, model, acked, errors, client, seed):
        super().__init__(name="writer-%d" % index, daemon=True)
        self.index = index
        self.round = rnd
        self.model = model        # (container, pk, id) -> KeyState, this writer's keys only
        self.acked = acked        # list of (lsn, key, op, item or None)
        self.errors = errors
        self.client = client
        self.rng = random.Random(seed)
        self.counter = 0
        self.acked_this_round = 0
        self.stopped_by = None

    # ---- key choice ----
    def partitions(self):
        return [(c, field, "cr-w%d-%s-%d" % (self.index, c, j))
                for c, field in CONTAINERS for j in range(PARTITIONS_PER_CONTAINER)]

    def new_key(self, container=None, pk=None):
        if container is None:
            container, _, pk = self.rng.choice(self.partitions())
        self.counter += 1
        return (container, pk, "k%d-%d-%d" % (self.index, self.round, self.counter))

    def field(self, container):
        return dict(CONTAINERS)[container]

    def existing(self):
        return [k for k, s in self.model.items() if s.item is not None]

    def deleted(self):
        return [k for k, s in self.model.items() if s.item is None and s.lsn > 0]

    def body(self, key, n=0):
        container, pk, item_id = key
        return {"id": item_id, self.field(container): pk, "type": "crashtest", "n": n,
                "w": self.rng.randrange(1 << 30), "pad": "x" * self.rng.randrange(0, 300)}

    # ---- recording ----
    def state(self, key):
        st = self.model.get(key)
        if st is None:
            st = self.model[key] = KeyState()
        return st

    def error(self, msg):
        if len(msg) > 600:
            msg = msg[:600] + "..."
        self.errors.append("[%s] %s" % (self.name, msg))

    def ack(self, key, op, lsn, item):
        st = self.state(key)
        if item is not None and item.get("_lsn") != lsn:
            self.error("%s %r: item _lsn %r != acknowledged LSN %d" % (op, key, item.get("_lsn"), lsn))
        st.item, st.lsn, st.pending = item, lsn, []
        self.acked.append((lsn, key, op, item))
        self.acked_this_round += 1

    def send(self, key_ops, fn):
        """Marks [(key, op)] in flight, sends; None when the daemon went away."""
        for k, op in key_ops:
            self.state(k).pending.append(op)
        try:
            return fn()
        except CONNECTION_ERRORS as e:
            self.stopped_by = e
            return None

    def answered_without_write(self, key_ops):
        # An error answer means nothing was applied (all or nothing).
        for k, op in key_ops:
            st = self.state(k)
            if st.pending and st.pending[-1] == op:
                st.pending.pop()

    def lsn_header(self, resp, what):
        value = resp[1].get("X-Feedd-Lsn")
        if value is None or not value.isdigit():
            self.error("%s: bad X-Feedd-Lsn %r" % (what, value))
            return -1
        return int(value)

    # ---- operations ----
    def op_create(self, key):
        c = self.client
        r = self.send([(key, "create")], lambda: c.create(key[0], self.body(key)))
        if r is None:
            return False
        if r[0] != 201:
            self.answered_without_write([(key, "create")])
            self.error("create %r -> %d %r (model: %r)" % (key, r[0], r[2], self.model.get(key)))
            return True
        self.ack(key, "create", self.lsn_header(r, "create"), r[2])
        return True

    def op_upsert(self, key):
        c = self.client
        st = self.state(key)
        expect = 200 if st.item is not None else 201
        body = self.body(key, n=(st.item or {}).get("n", 0))
        r = self.send([(key, "upsert")], lambda: c.upsert(key[0], key[1], key[2], body))
        if r is None:
            return False
        if r[0] != expect:
            self.answered_without_write([(key, "upsert")])
            self.error("upsert %r -> %d (expected %d) %r" % (key, r[0], expect, r[2]))
            return True
        self.ack(key, "create" if expect == 201 else "replace", self.lsn_header(r, "upsert"), r[2])
        return True

    def op_patch(self, key):
        c = self.client
        st = self.state(key)
        old_n = st.item["n"]
        ops = [{"op": "incr", "path": "/n", "value": 1},
               {"op": "set", "path": "/w", "value": self.rng.randrange(1 << 30)}]
        r = self.send([(key, "patch")], lambda: c.patch(key[0], key[1], key[2], ops))
        if r is None:
            return False
        if r[0] != 200:
            self.answered_without_write([(key, "patch")])
            self.error("patch %r -> %d %r" % (key, r[0], r[2]))
            return True
        if r[2].get("n") != old_n + 1:
            self.error("patch incr %r: n %r -> %r" % (key, old_n, r[2].get("n")))
        self.ack(key, "replace", self.lsn_header(r, "patch"), r[2])
        return True

    def op_delete(self, key):
        c = self.client
        r = self.send([(key, "delete")], lambda: c.delete(key[0], key[1], key[2]))
        if r is None:
            return False
        if r[0] != 204:
            self.answered_without_write([(key, "delete")])
            self.error("delete %r -> %d %r" % (key, r[0], r[2]))
            return True
        self.ack(key, "delete", self.lsn_header(r, "delete"), None)
        return True

    def op_batch(self):
        container, field, pk = self.rng.choice(self.partitions())
        present = [k for k in self.existing() if k[0] == container and k[1] == pk]
        self.rng.shuffle(present)
        ops, plan = [], []  # plan: (key, op name, expected status)
        for _ in range(self.rng.randint(2, 4)):
            choice = self.rng.random()
            if present and choice < 0.35:
                k = present.pop()
                ops.append({"op": "patch", "id": k[2],
                            "operations": [{"op": "incr", "path": "/n", "value": 1}]})
                plan.append((k, "patch", 200, self.model[k].item["n"] + 1))
            elif present and choice < 0.55:
                k = present.pop()
                ops.append({"op": "upsert", "body": self.body(k, n=self.model[k].item["n"])})
                plan.append((k, "upsert", 200, None))
            elif present and choice < 0.7:
                k = present.pop()
                ops.append({"op": "delete", "id": k[2]})
                plan.append((k, "delete", 204, None))
            else:
                k = self.new_key(container, pk)
                ops.append({"op": "create", "body": self.body(k)})
                plan.append((k, "create", 201, None))
        key_ops = [(p[0], p[1]) for p in plan]
        c = self.client
        r = self.send(key_ops, lambda: c.batch(container, pk, ops))
        if r is None:
            return False
        if r[0] != 200:
            self.answered_without_write(key_ops)
            self.error("batch %s/%s %r -> %d %r" % (container, pk, ops, r[0], r[2]))
            return True
        last = self.lsn_header(r, "batch")
        results = r[2].get("results", [])
        if [x.get("status") for x in results] != [p[2] for p in plan]:
            self.error("batch statuses %r, expected %r" % ([x.get("status") for x in results],
                                                           [p[2] for p in plan]))
            return True
        first = last - len(plan) + 1  # every op mutates: consecutive LSNs
        for j, ((k, name, status, n), res) in enumerate(zip(plan, results)):
            lsn = first + j
            if name == "delete":
                self.ack(k, "delete", lsn, None)
            else:
                item = res.get("item")
                if n is not None and (item or {}).get("n") != n:
                    self.error("batch incr %r: expected n=%r, got %r" % (k, n, item))
                self.ack(k, "create" if status == 201 else "replace", lsn, item)
        return True

    def step(self):
        r = self.rng.random()
        existing = self.existing()
        if r < 0.22 or not existing:
            return self.op_create(self.new_key())
        if r < 0.37:
            return self.op_upsert(self.rng.choice(existing))
        if r < 0.42:
            return self.op_upsert(self.new_key())
        if r < 0.62:
            return self.op_patch(self.rng.choice(existing))
        if r < 0.72:
            return self.op_delete(self.rng.choice(existing))
        if r < 0.77:
            gone = self.deleted()
            return self.op_create(self.rng.choice(gone) if gone else self.new_key())
        return self.op_batch()

    def run(self):
        try:
            while self.step():
                pass
        except Exception as e:  # a bug in the test or an unparseable answer
            self.error("writer crashed: %r" % (e,))


def _changes_by_lsn(changes):
    return {ch["lsn"]: ch for ch in changes}


class CrashRecoveryTest(FeeddTestCase):
    def setUp(self):
        env_seed = os.environ.get("FEEDD_CRASH_SEED")
        self.seed = int(env_seed) if env_seed else random.SystemRandom().randrange(1 << 32)
        sys.stderr.write("\n[crash test] seed %d (repeat with FEEDD_CRASH_SEED=%d)\n" % (self.seed, self.seed))
        self.rng = random.Random(self.seed)
        self.daemon = FeeddDaemon(sync=True, name="feedd-crash")
        self.addCleanup(self.daemon.cleanup)

    def verify(self, models, acked, what):
        """Checks the restarted daemon against the model; resyncs the model."""
        c = self.daemon.client()
        head = c.wait_quiescent(stable_s=0.3)
        info = c.feed_info()
        self.assertEqual(info["oldestRetainedLsn"], 1, "%s: retention dropped changes" % what)
        changes = c.all_changes(None, "beginning", page=10000)
        lsns = [ch["lsn"] for ch in changes]
        if lsns != list(range(1, head + 1)):
            seen = set()
            dups = sorted({x for x in lsns if x in seen or seen.add(x)})
            missing = sorted(set(range(1, head + 1)) - set(lsns))
            self.fail("%s: change feed LSNs are not 1..%d: %d records, duplicates %r, missing %r, "
                      "out of order at %r" % (what, head, len(lsns), dups[:20], missing[:20],
                                              [i for i in range(1, len(lsns)) if lsns[i] <= lsns[i - 1]][:20]))
        by_lsn = _changes_by_lsn(changes)
        last_by_key = {}
        for ch in changes:
            last_by_key[(ch["container"], ch["partitionKey"], ch["id"])] = ch

        # Every acknowledged write is the record at its LSN.
        for lsn, key, op, item in acked:
            ch = by_lsn.get(lsn)
            self.assertIsNotNone(ch, "%s: acknowledged %s of %r at LSN %d is not in the feed"
                                 % (what, op, key, lsn))
            self.assertEqual((ch["container"], ch["partitionKey"], ch["id"], ch["op"]), key + (op,),
                             "%s: the record at acknowledged LSN %d" % (what, lsn))
            if item is None:
                self.assertIsNone(ch["after"])
            else:
                self.assertEqual(strip_system(ch["after"]), strip_system(item),
                                 "%s: after-image of acknowledged LSN %d" % (what, lsn))

        # The stored state of every partition the writers own.
        stored = {}
        for model in models:
            for container, field in CONTAINERS:
                pks = {k[1] for k in model if k[0] == container}
                for pk in pks:
                    items = self.query_partition(c, container, pk)
                    for it in items:
                        stored[(container, pk, it["id"])] = it
        # Point reads agree with the queries (all pending keys, and a sample).
        all_keys = [k for model in models for k in model]
        sample = set(self.rng.sample(all_keys, min(100, len(all_keys))))
        sample |= {k for model in models for k, st in model.items() if st.pending}
        for k in sorted(sample):
            r = c.read(*k)
            self.assertIn(r[0], (200, 404), "%s: read %r -> %r" % (what, k, r))
            self.assertEqual(r[2] if r[0] == 200 else None, stored.get(k),
                             "%s: point read of %r disagrees with the query" % (what, k))

        checked = pending_keys = 0
        for model in models:
            for k, st in model.items():
                have = stored.get(k)
                last = last_by_key.get(k)
                ctx = "%s: key %r, model %r, stored %r, last change %r" % (what, k, st, have, last)
                if not st.pending:
                    if st.item is None:
                        self.assertIsNone(have, "acknowledged delete (or never written) but present; " + ctx)
                    else:
                        self.assertEqual(have, st.item, "stored item is not the last acknowledged one; " + ctx)
                else:
                    pending_keys += 1
                    if have is None:
                        self.assertTrue(st.item is None or "delete" in st.pending,
                                        "acknowledged item lost; " + ctx)
                    elif have.get("_lsn") == st.lsn and st.item is not None:
                        self.assertEqual(have, st.item, ctx)
                    else:
                        self.assertGreater(have.get("_lsn", -1), st.lsn,
                                           "stored item older than the last acknowledged write; " + ctx)
                        self.assertTrue(any(op != "delete" for op in st.pending),
                                        "item changed although only a delete was in flight; " + ctx)
                # The latest change record matches the stored item.
                if have is None:
                    if last is not None:
                        self.assertEqual(last["op"], "delete", "item absent but last change is not a delete; " + ctx)
                else:
                    self.assertIsNotNone(last, "stored item has no change record; " + ctx)
                    self.assertIn(last["op"], ("create", "replace"), ctx)
                    self.assertEqual(last["lsn"], have["_lsn"], "last change LSN != item _lsn; " + ctx)
                    self.assertAfterMatches(last, have, ctx)
                checked += 1
                # Resync: the next round starts from what is stored.
                st.item = have
                st.lsn = have["_lsn"] if have is not None else (last["lsn"] if last else 0)
                st.pending = []
        # Nothing appeared that no writer wrote.
        known = {k for model in models for k in model}
        extra = sorted(set(stored) - known)
        self.assertEqual(extra, [], "%s: items nobody wrote" % what)
        # Items written by others (derived-view processors, if any) are consistent too.
        for k, last in last_by_key.items():
            if k in known:
                continue
            r = c.read(*k)
            if last["op"] == "delete":
                self.assertEqual(r[0], 404, "%s: %r deleted in the feed but readable" % (what, k))
            else:
                self.assertEqual(r[0], 200, "%s: %r in the feed but not readable" % (what, k))
                self.assertEqual(last["lsn"], r[2]["_lsn"], "%s: %r" % (what, k))
                self.assertAfterMatches(last, r[2], "%s: %r" % (what, k))
        c.close()
        sys.stderr.write("[crash test] %s: head %d, %d keys checked (%d with an unanswered write), "
                         "%d acknowledged writes in total\n" % (what, head, checked, pending_keys, len(acked)))
        return head

    def assertAfterMatches(self, change, item, ctx):
        after = change["after"]
        self.assertIsInstance(after, dict, ctx)
        if "_etag" in after:
            self.assertEqual(after, item, "after-image != stored item; " + ctx)
        else:
            self.assertEqual(strip_system(after), strip_system(item), "after-image != stored item; " + ctx)

    def query_partition(self, c, container, pk):
        out, cont = [], None
        for _ in range(1000):
            r = c.query(container, {"partitionKey": pk, "limit": 1000, "continuation": cont})
            self.assertEqual(r[0], 200, "query %s/%s -> %r" % (container, pk, r))
            out.extend(r[2]["items"])
            cont = r[2]["continuation"]
            if cont is None:
                return out
        self.fail("query continuation never ends")

    def test_sigkill_during_writes(self):
        models = [dict() for _ in range(WRITERS)]
        acked = []  # list.append is atomic; shared by the writers
        errors = []
        self.daemon.start()
        previous_head = 0
        total_started = time.monotonic()
        for rnd in range(1, ROUNDS + 1):
            writers = [Writer(i, rnd, models[i], acked, errors, self.daemon.client(timeout=30),
                              seed=self.seed * 1000 + rnd * 10 + i) for i in range(WRITERS)]
            for w in writers:
                w.start()
            run_for = self.rng.uniform(0.3, 1.5)
            deadline = time.monotonic() + run_for
            while time.monotonic() < deadline:
                self.assertTrue(self.daemon.alive(), "round %d: feedd died on its own\n%s"
                                % (rnd, self.daemon.logs()))
                self.assertTrue(any(w.is_alive() for w in writers), "round %d: all writers stopped early: %r"
                                % (rnd, errors[:5] or [w.stopped_by for w in writers]))
                time.sleep(0.02)
            self.assertTrue(self.daemon.kill(), "round %d: feedd was not running at SIGKILL" % rnd)
            for w in writers:
                w.join(30)
                self.assertFalse(w.is_alive(), "round %d: %s hangs after the kill" % (rnd, w.name))
            self.assertEqual(errors, [], "round %d: unexpected answers (first 20):\n%s"
                             % (rnd, "\n".join(errors[:20])))
            acked_round = sum(w.acked_this_round for w in writers)
            sys.stderr.write("[crash test] round %d: killed after %.2f s, %d writes acknowledged\n"
                             % (rnd, run_for, acked_round))
            self.assertGreater(acked_round, 0, "round %d: no write was acknowledged" % rnd)
            self.daemon.start()
            head = self.verify(models, acked, "after crash %d" % rnd)
            self.assertGreaterEqual(head, previous_head, "round %d: the head LSN went back" % rnd)
            previous_head = head
        # A graceful stop keeps everything as well.
        self.daemon.stop()
        self.daemon.start()
        self.verify(models, acked, "after a graceful restart")
        self.daemon.stop()
        sys.stderr.write("[crash test] %d rounds in %.1f s\n" % (ROUNDS, time.monotonic() - total_started))


if __name__ == "__main__":
    unittest.main()
