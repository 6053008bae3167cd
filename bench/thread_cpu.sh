#!/usr/bin/env bash
# Where a write's CPU goes, per thread group:
#
#   bench/thread_cpu.sh BIN DATA_DIR SECONDS CONNS [KEYS] [SF]
#
# Copies DATA_DIR (a V3 data set loaded by bench/scenario/generate.py, the
# daemon stopped), starts BIN on the copy (durable, embedded defaults), runs
# the scenario's write mix (driver.py wrk, closed loop, CONNS connections)
# for SECONDS, and prints one JSON line: req/s, the daemon's CPU ms per
# write, and CPU ms per write of each thread group (threads named as in
# docs/architecture.md, digits folded: ap-N-feed is every applier of `feed`),
# and the KiB written to the data's disk per write (sectors written, of the
# block device's stat: the WAL, flushes and compactions, and any other
# process's writes, so run it on a quiet box) and its minor page faults
# per write (/proc/PID/stat: memory touched for the first time), the run's
# p99, the mean WAL sync (feedd_storage_wal_sync_duration_seconds), the mean
# requests per group commit (feedd_storage_commit_group_requests) and how
# busy the box's cores were (/proc/stat: 1.0 is every core busy).
# And where a write's time went in the daemon, as means: from its parsed
# request to its answer (feedd_http_request_duration_seconds, the write
# routes), waiting in the commit queue for the groups before it
# (feedd_storage_commit_queue_wait_seconds, view writes included) and its
# group's RocksDB write and fsync (feedd_storage_commit_duration_seconds),
# and how long work handed to an I/O thread (a write's completion, among
# others) waited for it (feedd_http_hand_over_wait_seconds).
# It also prints the WAL syncs per request (a write with views costs one at
# one connection: storage.idle_sync_delay_ms) and the run's p50.
# With COUNT=switches it counts voluntary context switches per write instead
# (the keys then say so). MIX (default write) is driver.py's mix: c1..c4 for
# one kind of write alone. WARMUP=SECONDS (default 0) runs the write mix at
# CONNS connections that long first, unmeasured: the steady state, where
# write-ahead logs are written over old ones (storage.wal_recycle_files; a
# copy of DATA_DIR without kept logs writes its first storage.max_wal_mb of
# logs as new files). It prints the new logs of the measured run by how
# they started. Run two binaries in turns on the same DATA_DIR to compare
# them.
set -euo pipefail
[[ $# -ge 4 ]] || { sed -n 2,29p "$0" >&2; exit 2; }
COUNT=${COUNT:-cpu} MIX=${MIX:-write} WARMUP=${WARMUP:-0}
[[ $COUNT == cpu || $COUNT == switches ]] || { echo "COUNT is cpu or switches" >&2; exit 2; }
BIN=$1 SNAP=$2 SECS=$3 CONNS=$4 KEYS=${5:-keys.txt} SF=${6:-0.01}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${WORK:-/tmp}/feedd-thread-cpu.XXXXXX")
trap 'rm -rf "$W"' EXIT
. "$HERE/daemon_common.sh"
start_on_copy "$BIN" "$SNAP" "$W"
if [[ $WARMUP -gt 0 ]]; then drive_write_mix write "$WARMUP" "$W/warmup.json" > /dev/null 2>&1; fi
/usr/bin/python3 "$HERE/scenario/driver.py" settle --api "$API" --metrics "$MET" >/dev/null
if [[ $COUNT == cpu ]]; then  # utime + stime, in ticks of 10 ms
  snap() { for t in /proc/$PID/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; }
else
  snap() { for t in /proc/$PID/task/*; do echo "$(cat $t/comm) $(awk '/^voluntary_ctxt_switches/{print $2}' $t/status)"; done; }
fi
snap > "$W/t0"
head -1 /proc/stat > "$W/stat0"
# Sectors written to the data's block device (field 7 of its stat): what
# reached the disk. /proc/PID/io's write_bytes counts a page each time it
# is dirtied: the WAL's last page again at every group commit.
DISK_STAT=/sys/class/block/$(basename "$(df --output=source "$W" | tail -1)")/stat
sectors() { if [[ -r $DISK_STAT ]]; then awk '{printf "%.0f\n", $7 * 512}' "$DISK_STAT"; else echo 0; fi; }
sectors > "$W/io0"
awk '{print $10}' "/proc/$PID/stat" > "$W/flt0"
curl -s "http://$MET/metrics" > "$W/m0"
drive_write_mix "$MIX" "$SECS" "$W/r.json" > "$W/r.txt" 2>&1
snap > "$W/t1"
head -1 /proc/stat > "$W/stat1"
sectors > "$W/io1"
awk '{print $10}' "/proc/$PID/stat" > "$W/flt1"
curl -s "http://$MET/metrics" > "$W/m1"
kill -TERM $PID; wait $PID || true
/usr/bin/python3 - "$W" "$COUNT" "$HERE/scenario" <<'PY'
import json, sys, re, collections
w, count = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from scenario import parse_prometheus
unit, per_tick, floor = ("ms", 10.0, 0.002) if count == "cpu" else ("switches", 1.0, 0.01)
r = json.load(open(w + "/r.json"))
def load(f):
    d = collections.Counter()
    for line in open(f):
        name, ticks = line.rsplit(" ", 1)
        g = re.sub(r"\d+", "N", name.strip())
        d[g] += int(ticks)
    return d
t0, t1 = load(w + "/t0"), load(w + "/t1")
writes = r["req_per_s"] * r["seconds"]
tot = sum(t1.values()) - sum(t0.values())
groups = {g: (t1[g] - t0.get(g, 0)) * per_tick / writes for g in t1}
name = "cpu_ms" if count == "cpu" else "switches"
disk = int(open(w + "/io1").read()) - int(open(w + "/io0").read())
faults = int(open(w + "/flt1").read()) - int(open(w + "/flt0").read())
m0, m1 = (parse_prometheus(open(w + f).read()) for f in ("/m0", "/m1"))
def delta(name, labels=frozenset()):  # of a series over the run
    return m1.get((name, labels), 0.0) - m0.get((name, labels), 0.0)
syncs = delta("feedd_storage_wal_sync_duration_seconds_count")
sync_s = delta("feedd_storage_wal_sync_duration_seconds_sum")
group_commits = delta("feedd_storage_commit_group_requests_count")
requests = delta("feedd_storage_commit_group_requests_sum")
def mean_us(family, match=lambda labels: True):  # of a histogram over the run
    n = s = 0.0
    for (name, labels) in m1:
        if name == family + "_count" and match(dict(labels)):
            n += delta(name, labels)
            s += delta(family + "_sum", labels)
    return round(s / n * 1e6) if n else None
writing = lambda labels: labels.get("method") in ("POST", "PUT", "PATCH", "DELETE")
def jiffies(f):  # busy, total: cpu user nice system idle iowait irq softirq steal
    v = [int(x) for x in open(f).read().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)
(b0, a0), (b1, a1) = jiffies(w + "/stat0"), jiffies(w + "/stat1")
print(json.dumps({"req_per_s": round(r["req_per_s"]), "p50_ms": r.get("p50_ms"), "p99_ms": r["p99_ms"],
                  "wal_syncs_per_request": round(syncs / writes, 3),
                  "wal_sync_mean_us": round(sync_s / syncs * 1e6) if syncs else None,
                  "wal_files": {s: round(delta("feedd_storage_wal_files_total", frozenset({("start", s)})))
                                for s in ("recycled", "new")},
                  "requests_per_group": round(requests / group_commits, 2) if group_commits else None,
                  "server_mean_us": mean_us("feedd_http_request_duration_seconds", writing),
                  "queue_wait_mean_us": mean_us("feedd_storage_commit_queue_wait_seconds"),
                  "commit_mean_us": mean_us("feedd_storage_commit_duration_seconds"),
                  "hand_over_mean_us": mean_us("feedd_http_hand_over_wait_seconds"),
                  "box_busy": round((b1 - b0) / (a1 - a0), 3) if a1 > a0 else None,
                  name + "_per_write": round(tot * per_tick / writes, 4),
                  "disk_kib_per_write": round(disk / 1024 / writes, 2),
                  "minor_faults_per_write": round(faults / writes, 2),
                  "by_thread_" + unit + "_per_write": {g: round(v, 4) for g, v in sorted(groups.items(), key=lambda x: -x[1]) if v > floor}}))
PY
