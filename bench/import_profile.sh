#!/usr/bin/env bash
# import_profile.sh: where one thread of an import spends its time, by
# function, sampled by perf with DWARF call graphs.
#
#   bench/import_profile.sh [--ndjson DIR] [--sf 0.01] [--thread feedd-commit]
#                           [--seconds 8] [--out perf.data] BUILD [-- FEEDD_ARGS...]
#
# Starts BUILD/feedd on a fresh data directory (storage.sync=true and
# FEEDD_ARGS), imports users.ndjson, then records the thread named THREAD
# (docs/architecture.md, "Threads") with `perf record -g --call-graph dwarf`
# for the first SECONDS of the posts.ndjson import, and prints the import's
# items/s and perf's report of the functions with their callees
# (inclusive), the 60 largest. The recording stays in OUT for `perf report
# -i OUT`. THREAD `all` records every thread, without call graphs' DWARF
# (frame pointers only, to keep the file small). Needs perf and
# kernel.perf_event_paranoid <= 1 (or root). DIR gets the data set from
# bench/scenario/ndjson.py unless it holds both files.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON=/usr/bin/python3
NDJSON="" SF=0.01 THREAD=feedd-commit SECONDS_=8 OUT=perf.data BUILD="" ARGS=()
COMMAND="$0 $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --ndjson) NDJSON=$2; shift 2 ;;
    --sf) SF=$2; shift 2 ;;
    --thread) THREAD=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) BUILD=$1; shift ;;
  esac
done
[ -n "$BUILD" ] || { echo "usage: $0 [options] BUILD [-- FEEDD_ARGS...]" >&2; exit 2; }
command -v perf > /dev/null || { echo "$0: perf is not installed" >&2; exit 2; }
WORK=$(mktemp -d /tmp/import_profile.XXXXXX)
trap 'kill "${FEEDD_PID:-}" 2> /dev/null || true; rm -rf "$WORK"' EXIT
. "$HERE/import_common.sh"
. "$HERE/perf_common.sh"
[ -n "$NDJSON" ] || NDJSON=$WORK/ndjson
ensure_ndjson "$NDJSON" "$SF" 42
print_header "$COMMAND"

start_feedd "$BUILD" "$WORK/run" "${ARGS[@]}"
if [ "$THREAD" = all ]; then
  TARGET=(-g -p "$FEEDD_PID")
else
  TID=$(thread_id "$FEEDD_PID" "$THREAD")
  TARGET=(-g --call-graph dwarf,16384 -t "$TID")
fi
"$BUILD/feedctl" --api "$API" import --no-progress users "$NDJSON/users.ndjson" > /dev/null
perf record -F 999 "${TARGET[@]}" -o "$OUT" -- sleep "$SECONDS_" > /dev/null 2>&1 &
PERF_PID=$!
# feedctl's summary (on stderr) gives the import's items/s.
"$BUILD/feedctl" --api "$API" import --no-progress posts "$NDJSON/posts.ndjson" > /dev/null
wait "$PERF_PID" || true
top_functions "$OUT"
