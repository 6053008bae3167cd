#!/usr/bin/env bash
# ctest bench_peer_smoke: the PostgreSQL peer benchmark at a tiny scale
# factor with one-second runs; checks that both systems answered every
# figure and that the charts were drawn. Asserts nothing about speed.   usage: smoke.sh FEEDD_BIN OUT_DIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FEEDD_BIN="${1:?usage: smoke.sh FEEDD_BIN OUT_DIR}"
OUT="${2:?usage: smoke.sh FEEDD_BIN OUT_DIR}"
rm -rf "$OUT"
QUICK=1 "$HERE/run.sh" 0.0002 "$OUT" >/dev/null
md="$OUT/peer.md"
for fig in "rename 1 conn p50 ms" "q1 1 conn p99 ms" "q6 1 conn p99 ms" "c3 1 conn p99 ms" "read c8 req/s" \
           "write c8 req/s" "write c8 server CPU ms/request" "write c8 drain s"; do
  grep -Eq "^\| $fig \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$" "$md" ||
    { echo "smoke.sh: no figure '$fig' for both systems in $md"; cat "$md"; exit 1; }
done
/usr/bin/python3 - "$OUT/peer.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
bad = [(r["system"], r["figure"], r["failed"]) for r in rows if r.get("failed")]
sys.exit("smoke.sh: failed requests: %r" % bad if bad else 0)
PY
for chart in latency throughput; do
  [[ -s "$OUT/$chart.png" ]] || { echo "smoke.sh: no chart $OUT/$chart.png"; exit 1; }
done
echo "smoke.sh: OK ($md)"
