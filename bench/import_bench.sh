#!/usr/bin/env bash
# import_bench.sh: the bulk import of the scenario's data set, views included.
#
#   bench/import_bench.sh [--sf 0.01] [--seed 42] [--ndjson DIR] [--build build]
#                         [--baseline-seconds 10] [--no-rebuild]
#
# 1. Writes the data set as NDJSON (bench/scenario/ndjson.py, V3) into DIR
#    (default: a temporary directory; an existing DIR with both files is
#    reused).
# 2. Starts feedd on a fresh data directory with the default configuration:
#    the three views (usernames, user_posts, feed), the embedded Kafka
#    broker, storage.sync=true.
# 3. Times `feedctl import` of users.ndjson, then posts.ndjson, then waits
#    until every processor's appliedLsn is the head LSN: items/s is the item
#    count over that whole time (import + views). Also prints the time until
#    Kafka has everything (publishedLsn == head).
# 4. Runs `feedctl verify` (every view right), then times the alternative:
#    a rebuild of the three views from the imported data (not with
#    --no-rebuild); stops feedd.
# 5. The baseline, in the same run: build/bench/ingest_bench --only raw
#    --sync true (raw RocksDB, item + feed record), per write from 64 writers
#    and in bulk (--writers 1 --raw-batch 4000), items of the data set's
#    mean size.
# Prints the command, the commit and the date with the figures.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
SF=0.01 SEED=42 NDJSON="" BUILD="$ROOT/build" BASELINE_SECONDS=10 REBUILD=1
COMMAND="$0 $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --sf) SF="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --ndjson) NDJSON="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --baseline-seconds) BASELINE_SECONDS="$2"; shift 2 ;;
    --no-rebuild) REBUILD=0; shift ;;
    *) echo "usage: $0 [--sf SF] [--seed N] [--ndjson DIR] [--build DIR] [--baseline-seconds S]" >&2; exit 2 ;;
  esac
done
PYTHON=/usr/bin/python3
WORK="$(mktemp -d /tmp/import-bench.XXXXXX)"
FEEDD_PID=""
cleanup() {
  if [ -n "$FEEDD_PID" ] && kill -0 "$FEEDD_PID" 2>/dev/null; then
    kill "$FEEDD_PID"; wait "$FEEDD_PID" || true
  fi
  rm -rf "$WORK/data"
}
trap cleanup EXIT
[ -n "$NDJSON" ] || NDJSON="$WORK/ndjson"

. "$HERE/import_common.sh"
ensure_ndjson "$NDJSON" "$SF" "$SEED"
"$PYTHON" -c 'import sys; n=sum(1 for f in sys.argv[1:] for _ in open(f)); print("{\"items\": %d}" % n)' \
  "$NDJSON/users.ndjson" "$NDJSON/posts.ndjson" > "$WORK/counts.json"
ITEMS=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["items"])' "$WORK/counts.json")
BYTES=$(( $(stat -c %s "$NDJSON/users.ndjson") + $(stat -c %s "$NDJSON/posts.ndjson") ))

start_feedd "$BUILD" "$WORK"
now() { date +%s.%N; }

echo "== importing $ITEMS items ($BYTES bytes) into feedd at $API" >&2
T0=$(now)
"$BUILD/feedctl" --api "$API" import --no-progress users "$NDJSON/users.ndjson" > "$WORK/users.report"
"$BUILD/feedctl" --api "$API" import posts "$NDJSON/posts.ndjson" > "$WORK/posts.report"
T_IMPORT=$(now)
wait_for "$API" views
T_VIEWS=$(now)
wait_for "$API" kafka
T_KAFKA=$(now)
CPU=$(awk '{print ($14+$15)/100}' "/proc/$FEEDD_PID/stat")
"$BUILD/feedctl" --api "$API" verify > "$WORK/verify.txt" && VERIFY=ok || VERIFY=FAILED
# The alternative: derive the views from the imported data (rebuild), timed.
T_REBUILD0=$(now)
if [ "$REBUILD" = 1 ]; then
  for p in usernames user_posts feed; do
    "$BUILD/feedctl" --api "$API" rebuild "$p" > /dev/null
  done
fi
T_REBUILD=$(now)
RSS=$(awk '/VmHWM/ {print $2 * 1024}' "/proc/$FEEDD_PID/status")
kill "$FEEDD_PID"; wait "$FEEDD_PID" || true; FEEDD_PID=""
DISK=$(du -sb "$WORK/data" | cut -f1)

# Raw RocksDB writing the same kind of records (item + change record, no
# JSON, no read-before-write, no index), items of the data set's mean size:
# per write from 64 writers, and in bulk (4,000 items per synced WriteBatch).
# (Items of at least 200 bytes, ingest_bench's smallest.)
MEAN_BYTES=$(( BYTES / ITEMS )); [ "$MEAN_BYTES" -ge 200 ] || MEAN_BYTES=200  # ingest_bench's least
raw_rate() {
  awk '/^SUMMARY/ {s=1} s && /sync=true/ {for (i=1;i<NF;i++) if ($i == "raw") {print $(i+1); exit}}' "$1"
}
echo "== baseline: raw RocksDB ingest (ingest_bench --only raw --sync true)" >&2
"$BUILD/bench/ingest_bench" --only raw --sync true --runs 1 --seconds "$BASELINE_SECONDS" \
  --item-bytes "$MEAN_BYTES" --wait-idle 5 > "$WORK/baseline.txt" 2>&1 || true
"$BUILD/bench/ingest_bench" --only raw --sync true --runs 1 --seconds "$BASELINE_SECONDS" \
  --item-bytes "$MEAN_BYTES" --writers 1 --raw-batch 4000 --wait-idle 5 \
  > "$WORK/baseline-bulk.txt" 2>&1 || true
RAW="$(raw_rate "$WORK/baseline.txt") per write (64 writers); $(raw_rate "$WORK/baseline-bulk.txt") in bulk (1 writer, 4000 items per WriteBatch)"

"$PYTHON" - "$ITEMS" "$BYTES" "$T0" "$T_IMPORT" "$T_VIEWS" "$T_KAFKA" "$CPU" "$RSS" "$DISK" \
  "$VERIFY" "${RAW:-?}" "$T_REBUILD0" "$T_REBUILD" "$WORK/users.report" "$WORK/posts.report" <<'PY'
import json, sys
items, nbytes = int(sys.argv[1]), int(sys.argv[2])
t0, t_import, t_views, t_kafka = map(float, sys.argv[3:7])
cpu, rss, disk, verify, raw = float(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9]), sys.argv[10], sys.argv[11]
t_rebuild0, t_rebuild = float(sys.argv[12]), float(sys.argv[13])
reports = [json.load(open(p)) for p in sys.argv[14:16]]
created = sum(r["created"] for r in reports)
failed = sum(r["failed"] for r in reports)
print("items %d (%.1f MiB NDJSON), created %d, failed %d" % (items, nbytes / 2**20, created, failed))
print("import            %7.1f s  %9.0f items/s" % (t_import - t0, items / (t_import - t0)))
print("import + views    %7.1f s  %9.0f items/s   <- the figure" % (t_views - t0, items / (t_views - t0)))
print("import + Kafka    %7.1f s  %9.0f items/s" % (t_kafka - t0, items / (t_kafka - t0)))
print("feedd CPU %.1f s (%.2f cores over import + views), peak RSS %.0f MiB, disk %.0f MiB (%.0f B/item)"
      % (cpu, cpu / (t_views - t0), rss / 2**20, disk / 2**20, disk / items))
print("views verify: %s" % verify)
print("views by their change records: %.1f s after the import answered" % (t_views - t_import))
if t_rebuild > t_rebuild0 + 0.01:
    print("rebuild of the three views from the imported data: %.1f s" % (t_rebuild - t_rebuild0))
print("baseline raw RocksDB ingest, sync=true, items/s: %s" % raw)
PY
echo "command: $COMMAND"
echo "commit: $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet || echo '+dirty')  date: $(date -u +%Y-%m-%dT%H:%MZ)"
