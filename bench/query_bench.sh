#!/usr/bin/env bash
# query_bench.sh — the cost of one query through the HTTP API, for two feedd
# binaries measured in turns (A B A B ...) on their own copies of one data set.
#
#   usage: bench/query_bench.sh BIN_A BIN_B
#   env:   RUNS=3         measurements of each binary per connection count
#          DURATION=5s    wrk -d
#          CONNS="1 8"    connection counts (wrk -t1 for 1, -t2 otherwise)
#          CACHE_MB=64    storage.query_cache_mb (0: every query is computed)
#          ITEMS=200      items in the queried partition
#
# The query is Q3's shape: one partition of `users` (a user's posts), filter
# type=post, newest first, limit 100. Both daemons run with
# --storage.sync=false --kafka.brokers=none --processors.enabled=false.
# Prints each run and, per binary and connection count, the median req/s,
# p50 and p99, and the ratio B/A of the medians.
set -euo pipefail

A="${1:?usage: $0 BIN_A BIN_B}"
B="${2:?usage: $0 BIN_A BIN_B}"
RUNS="${RUNS:-3}"
DURATION="${DURATION:-5s}"
CONNS="${CONNS:-1 8}"
CACHE_MB="${CACHE_MB:-64}"
ITEMS="${ITEMS:-200}"
PY=/usr/bin/python3
echo "command: RUNS=$RUNS DURATION=$DURATION CONNS=\"$CONNS\" CACHE_MB=$CACHE_MB ITEMS=$ITEMS $0 $A $B"

TMP="$(mktemp -d /tmp/query_bench.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

start() {  # start NAME BIN: starts a daemon, prints its API address
  local dir="$TMP/$1"
  mkdir -p "$dir"
  "$2" --data-dir "$dir/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$dir/ready" --storage.sync=false --kafka.brokers=none \
    --processors.enabled=false --storage.query_cache_mb="$CACHE_MB" >"$dir/log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do [[ -s "$dir/ready" ]] && break; sleep 0.1; done
  sleep 0.1
  $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$dir/ready"
}

load() {  # load ADDR: ITEMS posts in users/u1, plus one user item
  $PY - "$1" "$ITEMS" <<'EOF'
import http.client, json, sys
host, port = sys.argv[1].rsplit(":", 1)
c = http.client.HTTPConnection(host, int(port), timeout=30)
def put(item):
    c.request("PUT", "/v1/containers/users/items/u1/" + item["id"], body=json.dumps(item),
              headers={"Content-Type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status in (200, 201), r.status
put({"id": "u1", "userId": "u1", "type": "user", "username": "ana"})
for i in range(int(sys.argv[2])):
    put({"id": "p%d" % i, "userId": "u1", "type": "post", "title": "post %d" % i,
         "content": "x" * 200, "creationDate": "2026-11-%02dT%02d:%02d:00Z" % (1 + i % 28, i % 24, i % 60)})
EOF
}

cat >"$TMP/query.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"partitionKey":"u1","filter":{"type":"post"},"orderBy":"creationDate","descending":true,"limit":100}'
EOF

ADDR_A="$(start a "$A")"
ADDR_B="$(start b "$B")"
load "$ADDR_A"
load "$ADDR_B"

measure() {  # measure ADDR CONNS: one wrk run -> "req/s p50_us p99_us"
  local threads=2
  [[ "$2" == 1 ]] && threads=1
  wrk -t"$threads" -c"$2" -d"$DURATION" --latency -s "$TMP/query.lua" "http://$1/v1/containers/users/query" |
    $PY -c '
import re, sys
text = sys.stdin.read()
def us(v, unit): return float(v) * {"us": 1, "ms": 1000, "s": 1e6}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
lat = {m.group(1): us(m.group(2), m.group(3)) for m in re.finditer(r"\s(50|99)%\s+([\d.]+)(us|ms|s)", text)}
print("%.0f %.0f %.0f" % (rps, lat["50"], lat["99"]))'
}

for conns in $CONNS; do
  : >"$TMP/a.$conns"
  : >"$TMP/b.$conns"
  measure "$ADDR_A" "$conns" >/dev/null  # warm-up
  measure "$ADDR_B" "$conns" >/dev/null
  for run in $(seq "$RUNS"); do
    ra="$(measure "$ADDR_A" "$conns")"; echo "$ra" >>"$TMP/a.$conns"
    rb="$(measure "$ADDR_B" "$conns")"; echo "$rb" >>"$TMP/b.$conns"
    echo "c=$conns run $run: A $ra | B $rb   (req/s p50_us p99_us)"
  done
  $PY - "$TMP/a.$conns" "$TMP/b.$conns" "$conns" <<'EOF'
import statistics, sys
def med(path):
    rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
    return [statistics.median(col) for col in zip(*rows)]
a, b = med(sys.argv[1]), med(sys.argv[2])
print("c=%s median  A: %.0f req/s p50 %.0f us p99 %.0f us | B: %.0f req/s p50 %.0f us p99 %.0f us"
      " | B/A req/s %.2f" % (sys.argv[3], *a, *b, b[0] / a[0]))
EOF
done
