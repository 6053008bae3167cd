#!/usr/bin/python3
"""A Debezium-format consumer: keeps a copy of feedd's items from the topics
of a daemon running with

    kafka.envelope = debezium, kafka.message_key = item, kafka.tombstones = true

and prints it as one JSON object {'["<container>","<partitionKey>","<id>"]': item}.

    docs/examples/debezium_consumer.py BOOTSTRAP --until-resolved LSN [--topic T ...]

Each value is {"before","after","op","ts_ms","source":{...,"lsn",...}}:
op "c" (create) and "u" (update) set the item to `after`, "d" deletes it.
A record whose `source.lsn` is not above the last one applied to its key is
a duplicate (possible after a publisher crash) and is skipped. Tombstones
(null values, for log compaction) and resolved markers (a `feedd-resolved`
header, value {"resolved": N}: no "op") carry no change and are skipped; the
markers tell when to stop: once every partition has delivered one >= LSN,
every change up to that LSN has been applied (docs/kafka.md).

fetch_max_wait_ms=5: the embedded broker does not long-poll (docs/kafka.md).
"""

import argparse
import json
import sys
import time

from kafka import KafkaConsumer, TopicPartition


def apply(items, applied, value):
    """Applies one Debezium change event to `items`."""
    source = value["source"]
    key = json.dumps([source["container"], source["partitionKey"], source["id"]],
                     ensure_ascii=False)
    if source["lsn"] <= applied.get(key, 0):
        return  # a duplicate, or older than what is applied
    applied[key] = source["lsn"]
    if value["op"] in ("c", "u", "r"):
        items[key] = value["after"]
    elif value["op"] == "d":
        items.pop(key, None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bootstrap")
    parser.add_argument("--topic", action="append", help="default: feedd.users, feedd.posts")
    parser.add_argument("--until-resolved", type=int, required=True, metavar="LSN")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS")
    args = parser.parse_args()
    topics = args.topic or ["feedd.users", "feedd.posts"]

    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=5, client_id="feedd-debezium-example")
    deadline = time.monotonic() + args.timeout
    items, applied = {}, {}
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
        while min(resolved.values()) < args.until_resolved:
            if time.monotonic() > deadline:
                print("no resolved marker >= %d in every partition after %.0f s"
                      % (args.until_resolved, args.timeout), file=sys.stderr)
                return 1
            for tp, records in consumer.poll(timeout_ms=100).items():
                for record in records:
                    headers = dict(record.headers or [])
                    if "feedd-resolved" in headers:
                        resolved[tp] = max(resolved[tp], int(headers["feedd-resolved"]))
                    elif record.value is not None:
                        apply(items, applied, json.loads(record.value))
    finally:
        consumer.close()
    print(json.dumps(items, sort_keys=True, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
