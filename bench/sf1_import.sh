#!/usr/bin/env bash
# sf1_import.sh: the seed's full scale (SF 1: 100,000 users, 175 M items)
# loaded with the bulk import and the three views, and watched as it goes.
#
#   bench/sf1_import.sh [--sf 1] [--retention-mb 4096] [--stop] BUILD DIR [-- FEEDD_ARGS...]
#
# DIR gets the data set unless it holds it already: users.ndjson and
# posts.ndjson.zst (bench/scenario/ndjson.py through a FIFO into zstd -1:
# 6.7 GB instead of 33 GB of NDJSON; about 25 minutes on one core). Then
# BUILD/feedd runs on DIR/run/data (durable, embedded defaults,
# feed.retention_mb so that the feed fits this box's disk), users are
# imported with feedctl and posts, comments and likes streamed into
# POST /v1/containers/posts/import (no spool file). Every 30 s
# DIR/run/monitor.log gets a line: the head LSN, the oldest retained LSN,
# each processor's applied LSN, the daemon's RSS and peak RSS, the data
# directory's bytes, the disk's free bytes and the daemon's CPU seconds.
# DIR/run/summary.txt gets the import's report, the times until the import
# returned and until every view was current, peak RSS, CPU and disk. The
# daemon is left running for queries (stop it with the pid in summary.txt),
# or stopped with --stop.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON=/usr/bin/python3
SF=1 RETENTION_MB=4096 STOP=false ARGS=() POS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sf) SF=$2; shift 2 ;;
    --retention-mb) RETENTION_MB=$2; shift 2 ;;
    --stop) STOP=true; shift ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) POS+=("$1"); shift ;;
  esac
done
[ ${#POS[@]} -eq 2 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
BUILD=${POS[0]} DIR=${POS[1]}
. "$HERE/import_common.sh"

mkdir -p "$DIR"
if [ ! -s "$DIR/users.ndjson" ] || [ ! -s "$DIR/posts.ndjson.zst" ]; then
  echo "== generating SF $SF into $DIR (compressed)" >&2
  rm -f "$DIR/posts.ndjson"
  mkfifo "$DIR/posts.ndjson"
  zstd -1 -q -T1 -f -o "$DIR/posts.ndjson.zst" < "$DIR/posts.ndjson" &
  ZSTD=$!
  "$PYTHON" "$HERE/scenario/ndjson.py" --sf "$SF" --seed 42 --out "$DIR" > "$DIR/counts.json"
  wait $ZSTD
  rm -f "$DIR/posts.ndjson"
fi

R=$DIR/run
rm -rf "$R"
mkdir -p "$R"
start_feedd "$BUILD" "$R" --feed.retention_mb="$RETENTION_MB" "${ARGS[@]}"
echo "# $0 --sf $SF --retention-mb $RETENTION_MB $BUILD $DIR" > "$R/summary.txt"
echo "# $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?'), started $(date -u '+%Y-%m-%d %H:%M:%S UTC')" >> "$R/summary.txt"
echo "pid $FEEDD_PID api $API" >> "$R/summary.txt"

watch_daemon() {
  while kill -0 "$FEEDD_PID" 2> /dev/null; do
    "$PYTHON" - "$API" "$FEEDD_PID" "$R/data" <<'PY' || true
import json, os, shutil, sys, time, urllib.request
api, pid, data = sys.argv[1], sys.argv[2], sys.argv[3]
def get(path):
    with urllib.request.urlopen("http://%s%s" % (api, path), timeout=30) as r:
        return json.load(r)
feed, procs = get("/v1/feed"), get("/v1/processors")["processors"]
status = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/%s/status" % pid)
          if l.startswith(("VmRSS", "VmHWM"))}
stat = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
files = (os.path.join(data, n) for n in os.listdir(data))
size = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
print(time.strftime("%H:%M:%S"), "head", feed["headLsn"], "oldest", feed.get("oldestRetainedLsn"),
      "applied", {p["name"]: p["appliedLsn"] for p in procs},
      "rss_mb", status["VmRSS"] // 1024, "hwm_mb", status["VmHWM"] // 1024,
      "data_gb", round(size / 1e9, 2), "free_gb", round(shutil.disk_usage(data).free / 1e9, 1),
      "cpu_s", (int(stat[11]) + int(stat[12])) / 100, flush=True)
PY
    sleep 30
  done
}
watch_daemon > "$R/monitor.log" 2>&1 &
WATCH=$!
trap 'kill $WATCH 2> /dev/null || true' EXIT

t0=$(date +%s.%N)
"$BUILD/feedctl" --api "$API" import --no-progress users "$DIR/users.ndjson" >> "$R/summary.txt" 2>&1
zstd -dc "$DIR/posts.ndjson.zst" |
  curl -sS -T - -X POST -H 'Content-Type: application/x-ndjson' \
    "http://$API/v1/containers/posts/import" > "$R/posts_report.json"
t1=$(date +%s.%N)
"$PYTHON" -c 'import json, sys; r = json.load(open(sys.argv[1]))
print("posts import: %d lines, %d created, %d failed" % (r["lines"], r["created"], r["failed"]))' \
  "$R/posts_report.json" >> "$R/summary.txt"
echo "import returned after $(awk "BEGIN { print $t1 - $t0 }") s" >> "$R/summary.txt"
wait_for "$API" views
t2=$(date +%s.%N)
echo "views current after $(awk "BEGIN { print $t2 - $t0 }") s" >> "$R/summary.txt"
grep -E "^(VmHWM|VmRSS)" "/proc/$FEEDD_PID/status" >> "$R/summary.txt"
awk '{print "cpu_s", ($14 + $15) / 100}' "/proc/$FEEDD_PID/stat" >> "$R/summary.txt"
du -sh "$R/data" >> "$R/summary.txt"
if $STOP; then
  kill "$FEEDD_PID"
  wait "$FEEDD_PID" || true
else
  echo "feedd is still running: pid $FEEDD_PID, api $API" >> "$R/summary.txt"
fi
cat "$R/summary.txt"
