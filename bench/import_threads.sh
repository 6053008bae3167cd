#!/usr/bin/env bash
# import_threads.sh: where an import's CPU goes, thread by thread, for two
# builds in turns.
#
#   bench/import_threads.sh [--rounds 3] [--ndjson DIR] [--sf 0.01]
#                           BUILD_A [BUILD_B] [-- FEEDD_ARGS...]
#
# For each round and each build (A, then B), on a fresh data directory:
# starts BUILD/feedd with storage.sync=true and FEEDD_ARGS (e.g.
# --processors.enabled=false --kafka.brokers=none to time the commit thread
# alone), times `feedctl import` of users.ndjson then posts.ndjson, waits
# until every processor's appliedLsn is the head LSN, and prints the import's
# items/s, the time until the views were current, and per thread name (digits
# folded: ap-N-usernames) the CPU time it ran and the time it waited,
# runnable, for a core (/proc/PID/task/TID/schedstat): a thread that waits
# long for a core is held back by the others, not by its own work. Then the
# process's CPU since it started (threads that ended included, which the
# per-thread lines miss), its peak RSS, and per processor the changes it
# read back from the durable feed instead of taking them in memory from the
# commit path (fromDurableFeed).
# DIR (default: a temporary one) gets the data set from
# bench/scenario/ndjson.py unless it holds both files.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON=/usr/bin/python3
ROUNDS=3 NDJSON="" SF=0.01 BUILDS=() ARGS=()
COMMAND="$0 $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --ndjson) NDJSON=$2; shift 2 ;;
    --sf) SF=$2; shift 2 ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) BUILDS+=("$1"); shift ;;
  esac
done
[ ${#BUILDS[@]} -ge 1 ] || { echo "usage: $0 [--rounds N] [--ndjson DIR] BUILD_A [BUILD_B] [-- FEEDD_ARGS...]" >&2; exit 2; }
WORK=$(mktemp -d /tmp/import_threads.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$HERE/import_common.sh"
[ -n "$NDJSON" ] || NDJSON=$WORK/ndjson
ensure_ndjson "$NDJSON" "$SF" 42
print_header "$COMMAND"

tasks() {  # name run_ns wait_ns, one line per thread of $1
  local t name stat
  for t in /proc/"$1"/task/*; do
    # A thread that ends meanwhile (an applier going idle) is left out.
    name=$(tr ' ' '_' 2>/dev/null < "$t/comm") || continue
    stat=$(cut -d' ' -f1,2 "$t/schedstat" 2>/dev/null) || continue
    [ -n "$name" ] && [ -n "$stat" ] && echo "$name $stat"
  done
  return 0
}

one() {  # BUILD
  local build=$1 dir=$WORK/run t0 t1 t2 items
  rm -rf "$dir"; mkdir -p "$dir"
  start_feedd "$build" "$dir" "${ARGS[@]}"
  tasks $FEEDD_PID > "$dir/before"
  t0=$(date +%s.%N)
  "$build/feedctl" --api "$API" import --no-progress users "$NDJSON/users.ndjson" > /dev/null
  "$build/feedctl" --api "$API" import --no-progress posts "$NDJSON/posts.ndjson" > /dev/null
  t1=$(date +%s.%N)
  wait_for "$API" views
  t2=$(date +%s.%N)
  tasks $FEEDD_PID > "$dir/after"
  # The whole process's CPU (threads that ended too, such as the import
  # job's), its peak RSS, and the changes each processor read back from the
  # durable feed rather than taking them from the commit path.
  awk '{print ($14 + $15) / 100}' "/proc/$FEEDD_PID/stat" > "$dir/process_cpu"
  awk '/VmHWM/ {print $2 / 1024}' "/proc/$FEEDD_PID/status" > "$dir/peak_rss_mib"
  "$PYTHON" -c 'import json, sys, urllib.request
ps = json.load(urllib.request.urlopen("http://%s/v1/processors" % sys.argv[1], timeout=60))["processors"]
print(" ".join("%s:%d" % (p["name"], p.get("fromDurableFeed", 0)) for p in ps))' "$API" > "$dir/durable"
  kill $FEEDD_PID; wait $FEEDD_PID || true
  items=$(( $(wc -l < "$NDJSON/users.ndjson") + $(wc -l < "$NDJSON/posts.ndjson") ))
  "$PYTHON" - "$build" "$dir" "$items" "$t0" "$t1" "$t2" <<'PYEOF'
import collections, re, sys
build, d, items, t0, t1, t2 = sys.argv[1], sys.argv[2], int(sys.argv[3]), *map(float, sys.argv[4:])
def load(f):
    out = collections.defaultdict(lambda: [0, 0])
    for line in open(f):
        name, run, wait = line.split()
        k = re.sub(r"\d+", "N", name)
        out[k][0] += int(run); out[k][1] += int(wait)
    return out
a, b = load(d + "/before"), load(d + "/after")
cpu = {k: ((b[k][0] - a[k][0]) / 1e9, (b[k][1] - a[k][1]) / 1e9) for k in b}
total = sum(r for r, _ in cpu.values())
print("%s: import %.0f items/s (%.2f s), views current after %.2f s (%.0f items/s), CPU %.2f s"
      % (build, items / (t1 - t0), t1 - t0, t2 - t0, items / (t2 - t0), total))
read = lambda name: open(d + "/" + name).read().strip()
print("  process CPU since start %s s (threads that ended included), peak RSS %.0f MiB"
      % (read("process_cpu"), float(read("peak_rss_mib"))))
print("  changes read back from the durable feed: %s" % read("durable"))
for k, (r, w) in sorted(cpu.items(), key=lambda kv: -kv[1][0]):
    if r >= 0.05:
        print("  %-18s ran %6.2f s  waited for a core %6.2f s" % (k, r, w))
PYEOF
}

for _ in $(seq "$ROUNDS"); do
  for build in "${BUILDS[@]}"; do one "$build"; done
done
