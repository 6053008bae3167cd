#!/usr/bin/env bash
# The scenario benchmark end to end (bench/README.md, "Scenario"):
#
#   bench/scenario/run.sh SF [OUT_DIR]
#
# 1. V1: starts feedd (--processors.enabled=false, storage.sync=true, embedded
#    Kafka) on a temp dir, loads the SF data set (generate.py --mode v1), waits
#    for compactions, measures C1..Q6 one at a time (driver.py latency), records
#    peak RSS and disk, stops it and removes its data.
# 2. V3: the same with the default processors (the three views), then with wrk
#    (scenario.lua): per-request latency on one connection, the read mix
#    (Q1-Q6 equal, 8 connections), the write mix C1-C4 = 5/15/40/40 closed loop
#    at 8/16/32/64 connections and at steady rates (1000 and 5000 writes/s),
#    watching processor lag (driver.py wrk --watch).
# 3. report.py: OUT_DIR/benchmarks.md (tables) and OUT_DIR/latency.png (plot.gp).
#
# Environment (defaults in brackets):
#   FEEDD_BIN     feedd binary [build-bench/feedd, else build/feedd]
#   SEED [42]  GEN_WORKERS [4]  SAMPLES per request [1000]  MAX_SECONDS per request [30]
#   WRK_SECONDS per wrk phase [20]  WRK_LAT_SECONDS per request kind [5]
#   WRK_LAT_KINDS request kinds measured with wrk on one connection [healthz q1..q6 c1..c4]
#   RAMP closed-loop write connections ["8 16 32 64"]  RATES steady writes/s ["250 500 1000 1500 2000 5000"]
#   READ_CONNS [8]  QUICK=1: short phases (the ctest smoke)
#   TIME_LIMIT overall seconds [SF-dependent]  WAIT_IDLE seconds to wait for a quiet box [0]
# Everything listens on 127.0.0.1 only.  All daemons started here are stopped
# and the temp dir removed on exit, also on failure or Ctrl-C.
set -euo pipefail

SF="${1:?usage: run.sh SF [OUT_DIR]}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
if [[ -z "${FEEDD_BIN:-}" ]]; then
  for b in "$REPO/build-bench/feedd" "$REPO/build/feedd"; do
    [[ -x "$b" ]] && { FEEDD_BIN="$b"; break; }
  done
fi
[[ -x "${FEEDD_BIN:-}" ]] || { echo "run.sh: set FEEDD_BIN to the feedd binary" >&2; exit 2; }
OUT="${2:-${OUT:-$REPO/build-bench/scenario/sf$SF}}"
SEED="${SEED:-42}"
QUICK="${QUICK:-0}"
if [[ "$QUICK" == 1 ]]; then
  : "${SAMPLES:=30}" "${MAX_SECONDS:=0.5}" "${WRK_SECONDS:=2}" "${WRK_LAT_SECONDS:=1}"
  : "${RAMP:=8}" "${RATES:=500}" "${WRK_LAT_KINDS:=healthz q1 q6 c3}"
fi
GEN_WORKERS="${GEN_WORKERS:-4}"
SAMPLES="${SAMPLES:-1000}"
MAX_SECONDS="${MAX_SECONDS:-30}"
WRK_SECONDS="${WRK_SECONDS:-20}"
WRK_LAT_SECONDS="${WRK_LAT_SECONDS:-5}"
WRK_LAT_KINDS="${WRK_LAT_KINDS:-healthz q1 q2 q3 q4 q5 q6 c1 c2 c3 c4}"
RAMP="${RAMP:-8 16 32 64}"
RATES="${RATES:-250 500 1000 1500 2000 5000}"
READ_CONNS="${READ_CONNS:-8}"
WAIT_IDLE="${WAIT_IDLE:-0}"
# bounded time: about 6 min + 60 min per 0.01 of SF (loading is the slow part)
TIME_LIMIT="${TIME_LIMIT:-$("$PYTHON" -c "import sys; print(int(360 + 360000 * float(sys.argv[1])))" "$SF")}"
T_START=$SECONDS

mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.log 2>/dev/null || true
WORK="$(mktemp -d "${TMPDIR:-/tmp}/feedd-scenario.XXXXXX")"

log() { printf '[%4ds] %s\n' "$((SECONDS - T_START))" "$*"; }
die() { log "FAILED: $*" >&2; exit 1; }
remaining() {
  local r=$((TIME_LIMIT - (SECONDS - T_START)))
  ((r > 0)) || die "time limit of ${TIME_LIMIT}s reached"
  echo "$r"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local f pid
  for f in "$WORK"/*.pid; do
    [[ -e "$f" ]] || continue
    pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  for f in "$WORK"/*/feedd.log; do [[ -e "$f" ]] && save_log "$(basename "$(dirname "$f")")"; done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() {  # step NAME CMD... : bounded by the remaining time, output teed to OUT/NAME.log
  local name="$1"
  shift
  local limit rc
  limit="$(remaining)"
  set +e
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  ((rc == 0)) || die "$name (exit $rc; see $OUT/$name.log)"
}

ready_field() { "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

start_daemon() {  # start_daemon NAME ARGS... ; sets API, METRICS, PID
  local name="$1"
  shift
  mkdir -p "$WORK/$name"
  "$FEEDD_BIN" --data-dir "$WORK/$name/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$WORK/$name/ready.json" "$@" >"$WORK/$name/feedd.log" 2>&1 &
  PID=$!
  echo "$PID" >"$WORK/$name.pid"
  for _ in $(seq 1 600); do
    [[ -s "$WORK/$name/ready.json" ]] && break
    kill -0 "$PID" 2>/dev/null || { tail -n 30 "$WORK/$name/feedd.log" >&2; die "$name exited before it was ready"; }
    sleep 0.1
  done
  [[ -s "$WORK/$name/ready.json" ]] || die "$name not ready after 60 s"
  API="$(ready_field "$WORK/$name/ready.json" api)"
  METRICS="$(ready_field "$WORK/$name/ready.json" metrics)"
  log "$name: pid $PID, api $API, metrics $METRICS: $FEEDD_BIN $*"
}

daemon_facts() {  # daemon_facts NAME PID -> OUT/NAME-daemon.json (peak RSS, disk)
  local name="$1" pid="$2"
  local hwm du
  hwm="$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")"
  du="$(du -sb "$WORK/$name/data" | cut -f1)"
  "$PYTHON" - "$OUT/$name-daemon.json" "$hwm" "$du" "$OUT/$name-disk.json" <<'EOF'
import json, sys, os
out, hwm, du, disk = sys.argv[1:5]
d = json.load(open(disk)) if os.path.exists(disk) else {}
d.update({"vm_hwm_kib": int(hwm), "du_bytes_end": int(du)})
json.dump(d, open(out, "w"), indent=1)
EOF
}

save_log() {  # save_log NAME: the daemon's log into OUT, without the per-change fallback warnings
  local name="$1" src="$WORK/$1/feedd.log" n
  [[ -e "$src" ]] || return 0
  n="$(grep -c "did not arrive from Kafka in time" "$src" || true)"
  { grep -v "did not arrive from Kafka in time" "$src" || true
    echo "[run.sh: ${n:-0} lines 'LSN ... did not arrive from Kafka in time; applying it from the durable feed' left out]"
  } >"$OUT/$name.feedd.log"
}

stop_daemon() {  # stop_daemon NAME PID: SIGTERM, at most 60 s, else a stack dump and SIGKILL
  local name="$1" pid="$2" rc=0 stopped=true
  kill -TERM "$pid"
  for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    stopped=false
    log "$name did not exit within 60 s of SIGTERM; stacks in $OUT/$name-hang-stacks.txt; killing it"
    if command -v gdb >/dev/null; then
      timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt 25" >"$OUT/$name-hang-stacks.txt" 2>&1 || true
    fi
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" || rc=$?
  rm -f "$WORK/$name.pid"
  "$PYTHON" -c 'import json,sys; json.dump({"stopped_on_sigterm": sys.argv[2] == "true", "exit_code": int(sys.argv[3])}, open(sys.argv[1], "w"))' \
    "$OUT/$name-stop.json" "$stopped" "$rc"
  [[ "$stopped" == true && "$rc" != 0 ]] && log "$name exited with $rc after SIGTERM"
  save_log "$name"
  rm -rf "$WORK/$name/data"
}

GEN=("$PYTHON" "$HERE/generate.py" --sf "$SF" --seed "$SEED" --workers "$GEN_WORKERS")
DRV=("$PYTHON" "$HERE/driver.py")

# ---- what was run, where ----
"$PYTHON" - "$OUT/meta.json" "$SF" "$SEED" "$FEEDD_BIN" "$REPO" "$0 $*" <<'EOF'
import json, os, platform, subprocess, sys, datetime
out, sf, seed, binary, repo, cmd = sys.argv[1:7]
def sh(*a):
    try:
        return subprocess.run(a, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return ""
cpu = ""
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip(); break
mem = [l for l in open("/proc/meminfo") if l.startswith("MemTotal")][0].split()[1]
os_name = ""
try:
    os_name = [l for l in open("/etc/os-release") if l.startswith("PRETTY_NAME")][0].split("=", 1)[1].strip().strip('"')
except Exception:
    pass
json.dump({"sf": float(sf), "seed": int(seed), "binary": binary,
           "version": sh(binary, "--version"), "commit": sh("git", "-C", repo, "rev-parse", "--short", "HEAD"),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "command": cmd, "cpus": os.cpu_count(), "cpu_model": cpu, "mem_gib": round(int(mem) / 2**20, 1),
           "os": os_name, "kernel": platform.release(),
           "env": {k: os.environ[k] for k in ("QUICK", "SAMPLES", "MAX_SECONDS", "WRK_SECONDS", "WRK_LAT_SECONDS",
                                            "RAMP", "RATES", "READ_CONNS", "GEN_WORKERS", "WRK_LAT_KINDS") if k in os.environ}},
          open(out, "w"), indent=1)
EOF
log "scenario SF=$SF seed=$SEED -> $OUT (time limit ${TIME_LIMIT}s, work dir $WORK)"

settle_and_measure_disk() {  # NAME : waits for processors and compactions, records du
  local name="$1"
  step "settle-$name" "${DRV[@]}" settle --api "$API" --metrics "$METRICS" --timeout 600
  local du
  du="$(du -sb "$WORK/$name/data" | cut -f1)"
  "$PYTHON" -c 'import json,sys; json.dump({"du_bytes_after_load": int(sys.argv[2])}, open(sys.argv[1], "w"))' \
    "$OUT/$name-disk.json" "$du"
}

# ---- V1: normalized, no processors ----
start_daemon v1 --storage.sync=true --processors.enabled=false
V1_PID=$PID
step gen-v1 "${GEN[@]}" --api "$API" --mode v1 --out "$OUT/gen-v1.json"
settle_and_measure_disk v1
step lat-v1 "${DRV[@]}" latency --api "$API" --mode v1 --sf "$SF" --seed "$SEED" --samples "$SAMPLES" \
  --max-seconds "$MAX_SECONDS" --pid "$V1_PID" --wait-idle "$WAIT_IDLE" --out "$OUT/lat-v1.json"
daemon_facts v1 "$V1_PID"
stop_daemon v1 "$V1_PID"

# ---- V3: the views, kept by the processors ----
start_daemon v3 --storage.sync=true
V3_PID=$PID
step gen-v3 "${GEN[@]}" --api "$API" --mode v3 --out "$OUT/gen-v3.json"
settle_and_measure_disk v3
step lat-v3 "${DRV[@]}" latency --api "$API" --mode v3 --sf "$SF" --seed "$SEED" --samples "$SAMPLES" \
  --max-seconds "$MAX_SECONDS" --pid "$V3_PID" --wait-idle "$WAIT_IDLE" --out "$OUT/lat-v3.json"
step keys "${DRV[@]}" keys --sf "$SF" --seed "$SEED" --n 20000 --out "$WORK/keys.txt"
WRK_ARGS=(--api "$API" --metrics "$METRICS" --keys "$WORK/keys.txt" --sf "$SF" --seed "$SEED"
          --pid "$V3_PID" --wait-idle "$WAIT_IDLE")

# per request kind, one connection (a C client: the daemon's latency with little client overhead)
for m in $WRK_LAT_KINDS; do
  step "wrk1-$m" "${DRV[@]}" wrk "${WRK_ARGS[@]}" --mix "$m" --threads 1 --conns 1 \
    --seconds "$WRK_LAT_SECONDS" --out "$OUT/wrk1-$m.json"
done
step settle-v3-reads "${DRV[@]}" settle --api "$API" --timeout 300
step wrk-read "${DRV[@]}" wrk "${WRK_ARGS[@]}" --mix read --threads 2 --conns "$READ_CONNS" \
  --seconds "$WRK_SECONDS" --out "$OUT/wrk-read.json"

# steady rates first (ascending; an overload leaves a backlog behind), then the
# closed-loop ramp. C connections, each pausing DELAY ms after each answer:
# rate ~ C * 1000 / (DELAY + latency); latency: the single-connection C3 p50
for rate in $RATES; do
  read -r conns delay < <("$PYTHON" - "$OUT/wrk1-c3.json" "$rate" <<'EOF'
import json, math, os, sys
r = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else {}
rate = float(sys.argv[2])
lat = r.get("p50_ms") or 1.5
delay = 10
conns = max(2, int(math.ceil(rate * (delay + lat) / 1000.0 / 2.0)) * 2)
print(min(conns, 512), delay)
EOF
)
  step "settle-r$rate" "${DRV[@]}" settle --api "$API" --timeout 300
  step "wrk-rate-$rate" "${DRV[@]}" wrk "${WRK_ARGS[@]}" --mix write --threads 2 --conns "$conns" \
    --delay-ms "$delay" --seconds "$WRK_SECONDS" --watch --out "$OUT/wrk-rate-$rate.json"
done

for c in $RAMP; do
  step "settle-w$c" "${DRV[@]}" settle --api "$API" --timeout 300
  step "wrk-write-c$c" "${DRV[@]}" wrk "${WRK_ARGS[@]}" --mix write --threads 2 --conns "$c" \
    --seconds "$WRK_SECONDS" --watch --out "$OUT/wrk-write-c$c.json"
done

daemon_facts v3 "$V3_PID"
stop_daemon v3 "$V3_PID"

# ---- report ----
step report "$PYTHON" "$HERE/report.py" "$OUT"
log "done: $OUT/benchmarks.md, $OUT/latency.png"
