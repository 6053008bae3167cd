#!/usr/bin/env bash
# The views under the scenario's write mix (C1-C4), two feedd binaries in
# turns on the same loaded data set: how soon a change reaches every view,
# what a write costs the server, and whether the views keep up.
#
#   bench/views_bench.sh BASE_BIN NEW_BIN DATA_DIR KEYS SF
#
# DATA_DIR  a V3 data directory loaded by bench/scenario/generate.py (the
#           daemon stopped); KEYS from driver.py keys; SF its scale factor.
# env: ROUNDS [3], RUN_SECONDS [20], RATES ["1000 2000"] (steady writes/s),
#      CONNS ["8 64"] (closed loop), WORK [/tmp]
#
# Each binary runs durable (storage.sync=true) on the embedded defaults (the
# embedded broker, the scenario's three processors), on a fresh copy of the
# data. First one writer alone (driver.py probe: a post, then a read of its
# copy in `users` / of `feed` with X-Feedd-Min-Lsn, 10 s each), then per
# phase it prints wrk's req/s, commit->view p50/p99 per processor
# (the daemon's histogram), the read-your-writes probe on `feed` (a post,
# then a read of `feed` with X-Feedd-Min-Lsn, timed from the post's answer),
# the drain after the run, and the daemon's CPU per write; then the medians
# per binary and the command.
set -euo pipefail
[[ $# -eq 5 ]] || { sed -n 2,21p "$0" >&2; exit 2; }
BASE_BIN=$(realpath "$1") NEW_BIN=$(realpath "$2") DATA=$(realpath "$3") KEYS=$(realpath "$4") SF=$5
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3} SECS=${RUN_SECONDS:-20} RATES=${RATES:-1000 2000} CONNS=${CONNS:-8 64}
WORK=$(mktemp -d "${WORK:-/tmp}/feedd-views.XXXXXX")
trap 'kill "${PID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

phase() {  # phase SIDE ROUND NAME CONNS DELAY_MS
  local side=$1 round=$2 name=$3 conns=$4 delay=$5 t0 t1 out
  out="$WORK/$side-$round-$name.json"
  t0=$(cpu_ticks "$PID")
  "$PYTHON" "$HERE/scenario/driver.py" wrk --api "$API" --metrics "$METRICS" --mix write \
    --keys "$KEYS" --sf "$SF" --threads 2 --conns "$conns" --delay-ms "$delay" \
    --seconds "$SECS" --watch --pid "$PID" --out "$out" >"$out.txt"
  t1=$(cpu_ticks "$PID")
  "$PYTHON" - "$out" "$side" "$round" "$name" $((t1 - t0)) "$TICKS" <<'PY' | tee -a "$WORK/results.txt"
import json, sys
r = json.load(open(sys.argv[1]))
side, rnd, name, ticks, hz = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
writes = (r["req_per_s"] or 0) * r["seconds"]
row = {"side": side, "round": int(rnd), "phase": name, "req_per_s": r["req_per_s"],
       "cpu_ms_per_write": 1000.0 * ticks / hz / writes if writes else None,
       "drain_s": r.get("drain_s"), "probe_feed_p50_ms": (r["probe"]["feed_view_ms"] or {}).get("p50"),
       "probe_feed_p99_ms": (r["probe"]["feed_view_ms"] or {}).get("p99"),
       "from_durable_feed": sum(r.get("from_durable_feed", {}).values()),
       "non_2xx": r.get("non_2xx")}
for p, v in r.get("commit_to_view", {}).get("per_processor", {}).items():
    row["c2v_p99_ms_" + p] = v["p99_ms"]
    row["c2v_p50_ms_" + p] = v["p50_ms"]
print(json.dumps(row))
PY
}

probe() {  # probe SIDE ROUND: read-your-writes of one writer, nothing else running
  local out="$WORK/$1-$2-probe.json"
  "$PYTHON" "$HERE/scenario/driver.py" probe --api "$API" --sf "$SF" --seconds 10 --out "$out" \
    >"$out.txt"
  "$PYTHON" - "$out" "$1" "$2" <<'PY' | tee -a "$WORK/results.txt"
import json, sys
r = json.load(open(sys.argv[1]))
row = {"side": sys.argv[2], "round": int(sys.argv[3]), "phase": "one_writer"}
for view in ("users", "feed"):
    v = r[view]["view_ms"] or {}
    row["ryw_%s_p50_ms" % view], row["ryw_%s_p99_ms" % view] = v.get("p50"), v.get("p99")
    row["ryw_%s_errors" % view] = r[view]["n_errors"]
print(json.dumps(row))
PY
}

run_side() {  # run_side SIDE BIN ROUND
  local side=$1 bin=$2 round=$3 rate conns
  rm -rf "$WORK/data" "$WORK/ready.json" && cp -a "$DATA" "$WORK/data"
  sync  # else the copy is written back ~30 s later, into the runs' fsyncs
  "$bin" --data-dir "$WORK/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$WORK/ready.json" --storage.sync=true >"$WORK/$side-$round.log" 2>&1 &
  PID=$!
  for _ in $(seq 600); do [[ -s "$WORK/ready.json" ]] && break; sleep 0.1; done
  API=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$WORK/ready.json")
  METRICS=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics"])' "$WORK/ready.json")
  "$PYTHON" "$HERE/scenario/driver.py" settle --api "$API" --metrics "$METRICS" >/dev/null
  probe "$side" "$round"
  for rate in $RATES; do
    # Each connection waits 10 ms after an answer (~1.5 ms): rate * 11.5 ms.
    conns=$(( (rate * 115 / 10000 + 1) / 2 * 2 ))
    phase "$side" "$round" "rate$rate" "$conns" 10
  done
  for conns in $CONNS; do phase "$side" "$round" "c$conns" "$conns" 0; done
  kill -TERM "$PID"; wait "$PID" || true; PID=
}

for r in $(seq "$ROUNDS"); do
  run_side base "$BASE_BIN" "$r"
  run_side new "$NEW_BIN" "$r"
done

"$PYTHON" - "$WORK/results.txt" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
phases = list(dict.fromkeys(r["phase"] for r in rows))
for ph in phases:
    print("\n### %s (medians of %d rounds)\n" % (ph, len({r["round"] for r in rows})))
    print("| figure | base | new |\n|---|---|---|")
    allkeys = list(dict.fromkeys(k for r in rows if r["phase"] == ph for k in r
                                 if k not in ("side", "round", "phase")))
    for k in allkeys:
        cell = {}
        for side in ("base", "new"):
            v = [r[k] for r in rows if r["phase"] == ph and r["side"] == side and r.get(k) is not None]
            cell[side] = "%.3g" % statistics.median(v) if v else "-"
        print("| %s | %s | %s |" % (k, cell["base"], cell["new"]))
PY
echo
echo "command: ROUNDS=$ROUNDS RUN_SECONDS=$SECS RATES='$RATES' CONNS='$CONNS' $0 $*"
