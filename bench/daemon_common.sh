# shellcheck shell=bash disable=SC2034  # sets PID, API and MET for the caller
# daemon_common.sh: what the write-mix benchmarks on a copied data set share
# (thread_cpu.sh, compactions.sh, write_profile.sh); sourced, not run.

# start_on_copy BIN DATA_DIR WORK: BIN on a fresh copy of DATA_DIR in
# WORK/data, durable, on the embedded defaults and loopback ports; sets PID,
# API and MET (the metrics address) once it is ready. Its log: WORK/log.
# FEEDD_ARGS, when set, are more daemon options (word-split).
# FEEDD_SYNC=false starts it without WAL syncs (storage.sync), to measure
# what a write costs besides its fsync.
start_on_copy() {
  cp -a "$2" "$3/data"
  sync  # else the copy is written back ~30 s later, into the run's fsyncs
  "$1" --data-dir "$3/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$3/ready.json" --storage.sync="${FEEDD_SYNC:-true}" ${FEEDD_ARGS:-} > "$3/log" 2>&1 &
  PID=$!
  for _ in $(seq 300); do [[ -s "$3/ready.json" ]] && break; sleep 0.1; done
  API=$(/usr/bin/python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["api"])' "$3/ready.json")
  MET=$(/usr/bin/python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["metrics"])' "$3/ready.json")
}

# drive_write_mix MIX SECONDS OUT: driver.py's closed loop of MIX on the
# daemon start_on_copy started, at CONNS connections (KEYS and SF as the
# caller set them); its JSON result in OUT.
drive_write_mix() {
  /usr/bin/python3 "$HERE/scenario/driver.py" wrk --api "$API" --metrics "$MET" --mix "$1" --keys "$KEYS" --sf "$SF" --threads $((CONNS < 2 ? 1 : 2)) --conns "$CONNS" --delay-ms 0 --seconds "$2" --pid "$PID" --out "$3"
}
