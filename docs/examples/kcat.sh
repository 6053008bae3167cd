#!/bin/sh
# Reads a feedd topic from the beginning with kcat and prints one line per
# message, then exits at the end of every partition:
#
#   <partition> <offset> change <lsn> <op>     a change (create/replace/delete)
#   <partition> <offset> resolved <lsn>        a resolved marker: every change
#                                              up to <lsn> is in Kafka
#
# Usage: docs/examples/kcat.sh BOOTSTRAP [TOPIC]
#   BOOTSTRAP  GET /v1/feed's kafka.bootstrapServers (with the embedded broker,
#              kafka.embedded_port keeps it the same across restarts)
#   TOPIC      default feedd.posts
#
# fetch.wait.max.ms=5: the embedded broker answers an empty fetch only after
# the consumer's full fetch wait (it does not long-poll), so a short wait
# keeps the latency low. Only the first two headers are parsed: feedd-lsn and
# feedd-op of a change, feedd-resolved and feedd-container of a marker (they
# hold no commas; ids and partition keys may).
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 BOOTSTRAP [TOPIC]" >&2
  exit 2
fi
bootstrap=$1
topic=${2:-feedd.posts}
kcat -b "$bootstrap" -t "$topic" -C -o beginning -e -q -X fetch.wait.max.ms=5 \
  -f '%p %o %h\n' |
  awk '{
    split($3, headers, ",")
    split(headers[1], first, "=")
    split(headers[2], second, "=")
    if (first[1] == "feedd-resolved") {
      print $1, $2, "resolved", first[2]
    } else if (first[1] == "feedd-lsn" && second[1] == "feedd-op") {
      print $1, $2, "change", first[2], second[2]
    } else {
      print $1, $2, "other"
    }
  }'
