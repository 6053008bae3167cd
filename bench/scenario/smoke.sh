#!/usr/bin/env bash
# ctest bench_scenario_smoke: run.sh at a tiny scale factor with short phases,
# then check that the table and the chart were produced. Asserts nothing about
# speed.   usage: smoke.sh FEEDD_BIN OUT_DIR [SF]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FEEDD_BIN="${1:?usage: smoke.sh FEEDD_BIN OUT_DIR [SF]}"
OUT="${2:?usage: smoke.sh FEEDD_BIN OUT_DIR [SF]}"
SF="${3:-0.0002}"
for tool in wrk python3; do
  command -v "$tool" >/dev/null || { echo "smoke.sh: $tool is missing"; exit 1; }
done
rm -rf "$OUT"
QUICK=1 TIME_LIMIT="${TIME_LIMIT:-240}" "$HERE/run.sh" "$SF" "$OUT"
md="$OUT/benchmarks.md"
for req in C1 Q1 C2 Q2 Q3 C3 Q4 C4 Q5 Q6; do
  grep -q "^| \*\*$req\*\* |" "$md" || { echo "smoke.sh: no row $req in $md"; exit 1; }
done
grep -q "read mix Q1–Q6" "$md" || { echo "smoke.sh: no read-mix figure in $md"; exit 1; }
grep -q "write mix C1–C4" "$md" || { echo "smoke.sh: no write-mix figure in $md"; exit 1; }
if command -v gnuplot >/dev/null; then
  [[ -s "$OUT/latency.png" ]] || { echo "smoke.sh: no chart"; exit 1; }
fi
echo "smoke.sh: OK ($md)"
