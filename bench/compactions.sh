#!/usr/bin/env bash
# What RocksDB compacted during the write mix, per column family and reason:
#
#   bench/compactions.sh BIN DATA_DIR SECONDS [KEYS] [SF]
#
# Copies DATA_DIR (a V3 data set, the daemon stopped), starts BIN on the copy
# (durable, embedded defaults), runs the scenario's write mix (driver.py wrk,
# closed loop, 8 connections) for SECONDS, stops the daemon and reads the
# compactions RocksDB logged (the EVENT_LOG_v1 lines of DATA_DIR/LOG): one line
# per column family and reason with the jobs, the bytes they wrote and their
# CPU time. Run two binaries in turns on the same DATA_DIR to compare them.
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n 2,11p "$0" >&2; exit 2; }
BIN=$1 SNAP=$2 SECS=$3 KEYS=${4:-keys.txt} SF=${5:-0.01}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${WORK:-/tmp}/feedd-compactions.XXXXXX")
trap 'rm -rf "$W"' EXIT
. "$HERE/daemon_common.sh"
start_on_copy "$BIN" "$SNAP" "$W"
CONNS=8
drive_write_mix write "$SECS" "$W/r.json" 2>&1 | grep "wrk write"
kill -TERM $PID; wait $PID || true
/usr/bin/python3 - "$W/data/LOG" <<'PY'
import collections, json, re, sys
reason, family = {}, {}
total = collections.defaultdict(lambda: [0, 0, 0.0])
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"\[([^\]]+)\] \[JOB (\d+)\] Compacting", line)
    if m:
        family[int(m.group(2))] = m.group(1)
    if "EVENT_LOG_v1" not in line:
        continue
    event = json.loads(line[line.index("{"):])
    if event.get("event") == "compaction_started":
        reason[event["job"]] = event["compaction_reason"]
    elif event.get("event") == "compaction_finished":
        key = (family.get(event["job"], "?"), reason.get(event["job"], "?"))
        total[key][0] += 1
        total[key][1] += event["total_output_size"]
        total[key][2] += event["compaction_time_cpu_micros"] / 1e6
for (cf, why), (jobs, size, cpu) in sorted(total.items(), key=lambda kv: -kv[1][2]):
    print("%-28s %-26s jobs %3d  wrote %7.1f MB  cpu %.2f s" % (cf, why, jobs, size / 1e6, cpu))
PY
