#!/usr/bin/python3
"""Reads feedd's topics with python3-kafka (Debian's python3-kafka) and prints
one JSON line per change.

    docs/examples/python_consumer.py BOOTSTRAP [--topic T ...] [--until-resolved LSN]

Every partition of the topics is read from the beginning (no consumer group).
Resolved markers (a `feedd-resolved` header, docs/kafka.md) are not printed;
without --until-resolved it runs until interrupted; with --until-resolved N
it stops once every partition has delivered a marker >= N, at which point it
has printed every change up to LSN N of those topics, so "nothing more
happened" and "the publisher is stuck" differ (the first ends, the second
times out with exit code 1).

fetch_max_wait_ms=5: the embedded broker answers an empty fetch only after
the consumer's full fetch wait (it does not long-poll); with python3-kafka's
default of 500 ms every idle partition would add half a second.
"""

import argparse
import json
import sys
import time

from kafka import KafkaConsumer, TopicPartition


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("--topic", action="append", help="default: feedd.users, feedd.posts")
    parser.add_argument("--until-resolved", type=int, default=None, metavar="LSN")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="with --until-resolved: give up after this long (exit 1)")
    args = parser.parse_args()
    topics = args.topic or ["feedd.users", "feedd.posts"]

    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=5, client_id="feedd-example")
    deadline = time.monotonic() + args.timeout
    try:
        partitions = []
        for topic in topics:
            ids = consumer.partitions_for_topic(topic)
            while not ids:
                if time.monotonic() > deadline:
                    sys.exit("topic %s not found at %s" % (topic, args.bootstrap))
                time.sleep(0.1)
                ids = consumer.partitions_for_topic(topic)
            partitions += [TopicPartition(topic, p) for p in sorted(ids)]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        resolved = {tp: 0 for tp in partitions}
        while True:
            if (args.until_resolved is not None and
                    min(resolved.values()) >= args.until_resolved):
                return 0
            if args.until_resolved is not None and time.monotonic() > deadline:
                print("no resolved marker >= %s in every partition after %.0f s: %r"
                      % (args.until_resolved, args.timeout,
                         {"%s/%d" % (tp.topic, tp.partition): lsn
                          for tp, lsn in resolved.items()}), file=sys.stderr)
                return 1
            for tp, records in consumer.poll(timeout_ms=100).items():
                for record in records:
                    headers = dict(record.headers or [])
                    if "feedd-resolved" in headers:
                        resolved[tp] = max(resolved[tp], int(headers["feedd-resolved"]))
                        continue
                    if record.value is None:
                        continue  # a tombstone (kafka.tombstones = true)
                    change = json.loads(record.value)
                    print(json.dumps({"topic": tp.topic, "partition": tp.partition,
                                      "offset": record.offset, "lsn": change["lsn"],
                                      "op": change["op"], "container": change["container"],
                                      "partitionKey": change["partitionKey"],
                                      "id": change["id"]}, ensure_ascii=False), flush=True)
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main())
