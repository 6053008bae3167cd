#!/usr/bin/env bash
# Measures the CPU an idle feedd uses: the daemon on the embedded defaults
# (embedded broker, the scenario's processors), no traffic; after SETTLE
# seconds, the CPU time it uses over SECONDS, as % of one core. Each binary
# given takes a turn, ROUNDS times, on a fresh data directory.
#
#   bench/idle_cpu.sh BIN [BIN...]        env: ROUNDS [3] MEASURE_SECONDS [30] SETTLE [5]
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n 2,8p "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-3} SECS=${MEASURE_SECONDS:-30} SETTLE=${SETTLE:-5}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/feedd-idle.XXXXXX")
trap 'kill "${PID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
TICKS=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime

declare -A results
for r in $(seq "$ROUNDS"); do
  for bin in "$@"; do
    rm -rf "$WORK/data" "$WORK/ready.json"
    "$bin" --data-dir "$WORK/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
      --ready-file "$WORK/ready.json" >"$WORK/log" 2>&1 &
    PID=$!
    for _ in $(seq 600); do [[ -s "$WORK/ready.json" ]] && break; sleep 0.1; done
    sleep "$SETTLE"
    t0=$(cpu_ticks "$PID")
    sleep "$SECS"
    t1=$(cpu_ticks "$PID")
    kill -TERM "$PID"; wait "$PID" || true; PID=
    pct=$(awk -v d=$((t1 - t0)) -v hz="$TICKS" -v s="$SECS" 'BEGIN {printf "%.2f", 100 * d / hz / s}')
    echo "round $r $bin: $pct % of a core"
    results[$bin]+="$pct "
  done
done
for bin in "$@"; do
  echo "median $bin: $(tr ' ' '\n' <<<"${results[$bin]}" | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') % of a core"
done
echo "command: ROUNDS=$ROUNDS MEASURE_SECONDS=$SECS SETTLE=$SETTLE $0 $*"
