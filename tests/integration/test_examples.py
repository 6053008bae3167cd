"""The consumer examples of docs/examples (docs/kafka.md, "Consumer
examples"), each run as a user would run it against the real daemon and its
embedded broker, and compared with what the daemon serves:

  * kcat.sh prints the same changes and resolved markers, in the same
    partitions and offsets, as an independent python3-kafka read;
  * python_consumer.py --until-resolved <head> ends on its own and has
    printed every change of /v1/changefeed for its topics exactly once;
  * debezium_consumer.py (Debezium envelope, item keys, tombstones) rebuilds
    exactly the items the daemon holds, deletes included.
"""

import json
import os
import random
import subprocess
import sys
import unittest

from feedd_harness import FeeddDaemon, FeeddTestCase, strip_system
from test_kafka import (Workload, changes_with_raw, consume_all, seed_from_env, wait_published,
                        wait_resolved)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                        "examples")


def run_example(name, *args, timeout=120):
    return subprocess.run([os.path.join(EXAMPLES, name)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=timeout)


class ExamplesTest(FeeddTestCase):

    def start(self, *extra_args):
        """A daemon with some history, all of it published and resolved."""
        self.seed = seed_from_env("FEEDD_KAFKA_SEED")
        daemon = FeeddDaemon(name="feedd-examples", extra_args=[
            "--kafka.resolved_interval_ms=100"] + list(extra_args))
        self.addCleanup(daemon.cleanup)
        daemon.start()
        c = daemon.client()
        w = Workload(self, c, random.Random(self.seed))
        w.run(150)
        head = wait_published(self, c, what="examples")["headLsn"]
        wait_resolved(self, c, head)
        return daemon, c, w, head

    def test_kcat(self):
        daemon, _, _, _ = self.start()
        bootstrap = daemon.ready["kafka"]
        proc = run_example("kcat.sh", bootstrap, "feedd.posts")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        got = proc.stdout.splitlines()
        messages, _ = consume_all(bootstrap, topics=("feedd.posts",), markers=True)
        expected = []
        for m in sorted(messages, key=lambda m: (m.partition, m.offset)):
            if m.resolved is not None:
                expected.append("%d %d resolved %d" % (m.partition, m.offset, m.resolved))
            else:
                expected.append("%d %d change %d %s" % (m.partition, m.offset, m.lsn,
                                                        m.headers["feedd-op"].decode()))
        got.sort(key=lambda line: tuple(int(x) for x in line.split()[:2]))
        sys.stderr.write("\n  kcat.sh: %d lines, %d resolved\n"
                         % (len(got), sum(" resolved " in line for line in got)))
        self.assertTrue(any(" resolved " in line for line in got), got[:20])
        self.assertTrue(any(" change " in line for line in got), got[:20])
        self.assertEqual(got, expected)

    def test_python_consumer(self):
        daemon, c, _, head = self.start()
        proc = run_example("python_consumer.py", daemon.ready["kafka"], "--until-resolved", head)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        printed = [json.loads(line) for line in proc.stdout.splitlines()]
        feed = [ch for ch, _ in changes_with_raw(c) if ch["container"] in ("users", "posts")]
        self.assertGreater(len(feed), 0)
        self.assertEqual(sorted(p["lsn"] for p in printed), [ch["lsn"] for ch in feed],
                         "every change of users and posts, once")
        by_lsn = {ch["lsn"]: ch for ch in feed}
        for p in printed:
            ch = by_lsn[p["lsn"]]
            self.assertEqual((p["op"], p["container"], p["partitionKey"], p["id"]),
                             (ch["op"], ch["container"], ch["partitionKey"], ch["id"]), p)
            self.assertEqual(p["topic"], "feedd." + ch["container"])

    def test_python_consumer_times_out_on_a_resolved_lsn_never_reached(self):
        daemon, _, _, head = self.start()
        proc = run_example("python_consumer.py", daemon.ready["kafka"], "--until-resolved",
                           head + 1, "--timeout", 3)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("no resolved marker >= %d" % (head + 1), proc.stderr)

    def test_debezium_consumer(self):
        daemon, _, w, head = self.start("--kafka.envelope=debezium", "--kafka.message_key=item",
                                        "--kafka.tombstones=true")
        self.assertGreater(w.kinds["delete"], 0, "the workload deleted nothing: %r" % w.kinds)
        proc = run_example("debezium_consumer.py", daemon.ready["kafka"], "--until-resolved",
                           head)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        items = json.loads(proc.stdout)
        got = {tuple(json.loads(k)): strip_system(v) for k, v in items.items()}
        self.assertEqual(got, w.items)


if __name__ == "__main__":
    unittest.main()
