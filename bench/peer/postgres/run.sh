#!/usr/bin/env bash
# The scenario on PostgreSQL 15 and on feedd, side by side, in one run
# (peer.py explains what is measured and how).
#
#   bench/peer/postgres/run.sh SF [OUT_DIR]      e.g. run.sh 0.01
#   QUICK=1 bench/peer/postgres/run.sh 0.0002    the smoke: seconds, not a measurement
#
# env: FEEDD_BIN (default: scripts/build.sh's), FEEDD_DATA + KEYS (a loaded
#      V3 copy and its keys, instead of loading feedd over HTTP), ROUNDS [2],
#      SECONDS_PER_RUN [20], LATENCY_SECONDS [5], CONNS ["8 64"],
#      ONLY ["rename latency read write"] (which figures), PG_CSV (a directory
#      with load.py's CSV files, written beforehand: load.py --sf SF [--zstd]
#      --out DIR > DIR/counts.txt; they are kept), SYSTEMS ["postgres feedd"]
#      (one alone, when both data sets do not fit the disk together; then
#      peer.py --merge A/peer.json B/peer.json --out DIR makes one report),
#      ITEMS (FEEDD_DATA's items, when PostgreSQL is not loaded to count them)
# Installs what is missing (scripts/install-deps.sh: postgresql-15 and
# postgresql-15-wal2json among them). Results: OUT_DIR/peer.md, peer.json.
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n 2,12p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../../.."
SF=$1
OUT=${2:-build-bench/peer/sf$SF}
scripts/install-deps.sh
FEEDD_BIN=${FEEDD_BIN:-$(scripts/build.sh)/feedd}
if [[ "${QUICK:-0}" = "1" ]]; then
  : "${ROUNDS:=1}" "${SECONDS_PER_RUN:=2}" "${LATENCY_SECONDS:=1}" "${CONNS:=8}"
fi
args=(--sf "$SF" --feedd "$FEEDD_BIN" --out "$OUT" --rounds "${ROUNDS:-2}"
      --seconds "${SECONDS_PER_RUN:-20}" --latency-seconds "${LATENCY_SECONDS:-5}"
      --conns "${CONNS:-8 64}" --only "${ONLY:-rename latency read write}")
if [[ -n "${FEEDD_DATA:-}" ]]; then args+=(--feedd-data "$FEEDD_DATA" --keys "$KEYS"); fi
if [[ -n "${PG_CSV:-}" ]]; then args+=(--pg-csv "$PG_CSV"); fi
if [[ -n "${SYSTEMS:-}" ]]; then args+=(--systems "$SYSTEMS"); fi
if [[ -n "${ITEMS:-}" ]]; then args+=(--items "$ITEMS"); fi
exec /usr/bin/python3 bench/peer/postgres/peer.py "${args[@]}"
