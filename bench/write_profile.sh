#!/usr/bin/env bash
# write_profile.sh: where one thread spends its time under the scenario's
# write mix, by function, sampled by perf with DWARF call graphs.
#
#   bench/write_profile.sh [--thread feedd-commit] [--conns 8] [--warmup 20]
#                          [--seconds 6] [--out perf.data] BIN DATA_DIR KEYS [SF]
#
# Copies DATA_DIR (a V3 data set, the daemon stopped), starts BIN on the
# copy (durable, embedded defaults; FEEDD_ARGS and FEEDD_SYNC as for
# thread_cpu.sh), runs the write mix (driver.py wrk, closed loop, CONNS
# connections) WARMUP seconds unmeasured, then records the thread named
# THREAD (docs/architecture.md, "Threads") with `perf record --call-graph
# dwarf` for SECONDS of it, and prints the run's req/s and perf's report
# of the functions with their callees (inclusive), the 60 largest. The
# recording stays in OUT for `perf report -i OUT`. Needs perf and
# kernel.perf_event_paranoid <= 1 (or root).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
THREAD=feedd-commit CONNS=8 WARMUP_=20 SECONDS_=6 OUT=perf.data POS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --thread) THREAD=$2; shift 2 ;;
    --conns) CONNS=$2; shift 2 ;;
    --warmup) WARMUP_=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) POS+=("$1"); shift ;;
  esac
done
[ ${#POS[@]} -ge 3 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
BIN=${POS[0]} SNAP=${POS[1]} KEYS=${POS[2]} SF=${POS[3]:-0.01}
command -v perf > /dev/null || { echo "$0: perf is not installed" >&2; exit 2; }
W=$(mktemp -d "${WORK:-/tmp}/feedd-write-profile.XXXXXX")
trap 'kill "${PID:-}" 2> /dev/null || true; rm -rf "$W"' EXIT
. "$HERE/daemon_common.sh"
. "$HERE/perf_common.sh"
start_on_copy "$BIN" "$SNAP" "$W"
if [ "$WARMUP_" -gt 0 ]; then drive_write_mix write "$WARMUP_" "$W/warmup.json" > /dev/null 2>&1; fi
TID=$(thread_id "$PID" "$THREAD")
echo "# $0 --thread $THREAD --conns $CONNS --warmup $WARMUP_ --seconds $SECONDS_ ${POS[*]}"
# The run outlasts the recording by a second on each side.
drive_write_mix write $((SECONDS_ + 2)) "$W/run.json" > /dev/null 2>&1 &
DRIVER=$!
sleep 1  # the driver's connections are up; the recording starts inside the run
perf record -F 1999 -g --call-graph dwarf,32768 -t "$TID" -o "$OUT" -- sleep "$SECONDS_" > /dev/null 2>&1
wait "$DRIVER"
/usr/bin/python3 -c 'import json,sys;r=json.load(open(sys.argv[1]));print("req/s %.0f" % r["req_per_s"])' "$W/run.json"
top_functions "$OUT"
