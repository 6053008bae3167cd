#!/usr/bin/env bash
# Compares two feedd binaries on the same loaded data set, in the same run:
# wrk throughput of each read request kind and of the read mix, and of Q6
# right after a write-mix burst (what churn in the capped feed costs). The
# binaries take turns, ROUNDS times, each on a fresh copy of the data.
#
#   bench/scenario/compare.sh BASE_BIN NEW_BIN DATA_DIR KEYS SF
#
# DATA_DIR  a V3 data directory loaded by generate.py (the daemon stopped),
#           e.g. feedd --data-dir D ... ; generate.py --api ... --sf 0.01 --mode v3
# KEYS      post ids (driver.py keys --sf SF --out KEYS)
# SF        the scale factor of the data (for the number of users)
# env: ROUNDS [2], SECONDS_PER_KIND [5], KINDS ["read q3 q4 q5 q6"],
#      BASE_ENV / NEW_ENV (e.g. LD_PRELOAD=... for one side), WORK [/tmp]
#
# Prints one line per binary and round, then the medians per kind and their
# ratio NEW / BASE, and the command.
set -euo pipefail
[[ $# -eq 5 ]] || { sed -n 2,16p "$0" >&2; exit 2; }
BASE_BIN=$(realpath "$1") NEW_BIN=$(realpath "$2") DATA=$(realpath "$3") KEYS=$(realpath "$4") SF=$5
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-2} SECS=${SECONDS_PER_KIND:-5} KINDS=${KINDS:-read q3 q4 q5 q6}
USERS=$(python3 -c "print(max(1, round(100000 * $SF)))")
WORK=$(mktemp -d "${WORK:-/tmp}/feedd-compare.XXXXXX")
trap 'kill "${PID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
RESULTS="$WORK/results.txt"

rate() {  # rate KIND [DELAY_MS] [CONNS] [SECONDS]
  wrk -t2 -c"${3:-8}" -d"${4:-$SECS}"s -s "$HERE/scenario.lua" "http://$API" -- "$1" "$KEYS" \
    "$USERS" "${2:-0}" "c$RANDOM" | awk '/Requests\/sec/ {print $2}'
}

run_side() {  # run_side LABEL BIN ENV
  local label=$1 bin=$2 env_assign=$3 line
  rm -rf "$WORK/data" && cp -a "$DATA" "$WORK/data" && rm -f "$WORK/ready.json"
  env $env_assign "$bin" --data-dir "$WORK/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$WORK/ready.json" --storage.sync=true >"$WORK/$label.log" 2>&1 &
  PID=$!
  for _ in $(seq 600); do [[ -s "$WORK/ready.json" ]] && break; sleep 0.1; done
  API=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$WORK/ready.json")
  sleep 3
  line="$label"
  for k in $KINDS; do line="$line $k=$(rate "$k")"; done
  rate write 10 22 30 >/dev/null  # ~1,500 writes/s for 30 s, then Q6 at once
  line="$line q6_after_writes=$(rate q6)"
  kill -TERM "$PID"; wait "$PID" || true; PID=
  echo "$line" | tee -a "$RESULTS"
}

for r in $(seq "$ROUNDS"); do
  run_side base "$BASE_BIN" "${BASE_ENV:-}"
  run_side new "$NEW_BIN" "${NEW_ENV:-}"
done

python3 - "$RESULTS" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, *pairs = line.split()
    for p in pairs:
        k, v = p.split("=")
        rows.setdefault(k, {}).setdefault(label, []).append(float(v))
print("\n| request | base req/s (median) | new req/s (median) | new / base |\n|---|---|---|---|")
for k, sides in rows.items():
    b, n = statistics.median(sides["base"]), statistics.median(sides["new"])
    print(f"| {k} | {b:,.0f} | {n:,.0f} | {n / b:.2f} |")
EOF
echo
echo "command: ROUNDS=$ROUNDS SECONDS_PER_KIND=$SECS BASE_ENV='${BASE_ENV:-}' NEW_ENV='${NEW_ENV:-}' $0 $*"
