# import_common.sh: what the import benchmarks share (import_bench.sh,
# import_threads.sh); sourced, not run. Needs PYTHON set.

# ensure_ndjson DIR SF SEED: the data set in DIR (bench/scenario/ndjson.py),
# unless DIR already holds both files.
ensure_ndjson() {
  if [ ! -s "$1/users.ndjson" ] || [ ! -s "$1/posts.ndjson" ]; then
    echo "== generating SF $2 (seed $3) into $1" >&2
    "$PYTHON" "$(dirname "${BASH_SOURCE[0]}")/scenario/ndjson.py" --sf "$2" --seed "$3" \
      --out "$1" > /dev/null
  fi
}

# print_header COMMAND: the benchmark's command line, the commit and the time,
# as its output's first two lines.
print_header() {
  echo "# $1"
  echo "# $(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC')"
}

# start_feedd BUILD DIR [FEEDD_ARGS...]: feedd on a fresh DIR/data, durable;
# sets FEEDD_PID and API once it is ready (its log: DIR/feedd.log).
start_feedd() {
  local build=$1 dir=$2
  shift 2
  mkdir -p "$dir/data"
  "$build/feedd" --data-dir "$dir/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$dir/ready.json" --storage.sync=true "$@" > "$dir/feedd.log" 2>&1 &
  FEEDD_PID=$!
  for _ in $(seq 600); do [ -s "$dir/ready.json" ] && break; sleep 0.1; done
  API=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$dir/ready.json")
}

# wait_for API views|kafka: until every processor applied the head LSN (or
# Kafka published it).
wait_for() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys, time, urllib.request
api, what = sys.argv[1], sys.argv[2]
def get(path):
    with urllib.request.urlopen("http://%s%s" % (api, path), timeout=60) as r:
        return json.load(r)
while True:
    head = get("/v1/feed")["headLsn"]
    if what == "views":
        done = all(p["appliedLsn"] >= head for p in get("/v1/processors")["processors"])
    else:
        done = get("/v1/feed").get("publishedLsn", 0) >= head
    if done:
        break
    time.sleep(0.05)
PY
}
