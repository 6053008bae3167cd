#!/usr/bin/env bash
# http_read_bench.sh — feedd HTTP point-read throughput (keep-alive) against
# nginx serving a static file of the same size, in one run.
#
#   usage: bench/http_read_bench.sh [FEEDD_BIN]      (or FEEDD_BIN=... in the env)
#   env:   ITEMS=10000     items loaded over HTTP before measuring
#          RUNS=3          measurements of each server, interleaved
#          DURATION=10s    wrk -d
#          THREADS=2       wrk -t
#          CONNS=64        wrk -c
#          WARMUP=2s       one unmeasured wrk pass per server before run 1
#          BENCH_DIR=/tmp  where the temporary directory goes
#          WAIT_IDLE=10    before each measurement, wait up to this many seconds
#                          for other processes to use < 1/4 core (wrk_run.py)
#          FEEDD_ARGS=     extra feedd arguments
#
# feedd runs with --storage.sync=false (reads do not depend on it), its own
# data dir, port 0 and a ready file. nginx (1 worker, access log off) serves
# the body of one real feedd GET response as a static file, so both answer
# the same number of body bytes. Each run measures both with the same
# `wrk -tT -cC -dD --latency`; the summary prints the median req/s of each,
# the ratio feedd/nginx and the median of wrk's p50/p99. Everything started
# here is stopped, and the temporary directory removed, on exit.
set -euo pipefail

FEEDD_BIN="${1:-${FEEDD_BIN:-}}"
ITEMS="${ITEMS:-10000}"
RUNS="${RUNS:-3}"
DURATION="${DURATION:-10s}"
THREADS="${THREADS:-2}"
CONNS="${CONNS:-64}"
WARMUP="${WARMUP:-2s}"
BENCH_DIR="${BENCH_DIR:-/tmp}"
WAIT_IDLE="${WAIT_IDLE:-10}"
FEEDD_ARGS="${FEEDD_ARGS:-}"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

die() { echo "http_read_bench: $*" >&2; exit 1; }
[[ -n "$FEEDD_BIN" ]] || die "usage: $0 FEEDD_BIN (or set FEEDD_BIN)"
[[ -x "$FEEDD_BIN" ]] || die "$FEEDD_BIN is not an executable"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v nginx >/dev/null || die "nginx not found (apt-get install nginx-light)"

# The exact command, with the settings taken from the environment spelled out.
COMMAND="ITEMS=$ITEMS RUNS=$RUNS DURATION=$DURATION THREADS=$THREADS CONNS=$CONNS WARMUP=$WARMUP WAIT_IDLE=$WAIT_IDLE"
[[ $# -eq 0 ]] && COMMAND+=" FEEDD_BIN=$(printf '%q' "$FEEDD_BIN")"
[[ -n "$FEEDD_ARGS" ]] && COMMAND+=" FEEDD_ARGS=$(printf '%q' "$FEEDD_ARGS")"
COMMAND+=" $(printf '%q ' "$0" "$@")"
COMMAND="${COMMAND% }"

TMP="$(mktemp -d "$BENCH_DIR/http_read_bench.XXXXXX")"
FEEDD_PID=""
NGINX_PID=""

stop_pid() {  # stop_pid PID NAME: SIGTERM, then SIGKILL after 15 s
  local pid="$1" i
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "http_read_bench: $2 ($pid) ignored SIGTERM; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$NGINX_PID" nginx
  stop_pid "$FEEDD_PID" feedd
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- feedd ----
mkdir -p "$TMP/feedd"
# shellcheck disable=SC2086  # FEEDD_ARGS is a list of words on purpose
"$FEEDD_BIN" --data-dir "$TMP/feedd/data" --listen 127.0.0.1:0 --ready-file "$TMP/feedd/ready" \
  --storage.sync=false --metrics-listen 127.0.0.1:0 $FEEDD_ARGS >"$TMP/feedd/log" 2>&1 &
FEEDD_PID=$!
for ((i = 0; i < 300; i++)); do
  [[ -s "$TMP/feedd/ready" ]] && break
  if ! kill -0 "$FEEDD_PID" 2>/dev/null; then
    FEEDD_PID=""
    tail -20 "$TMP/feedd/log" >&2
    die "feedd exited before it was ready"
  fi
  sleep 0.1
done
[[ -s "$TMP/feedd/ready" ]] || { tail -20 "$TMP/feedd/log" >&2; die "feedd not ready after 30 s"; }
sleep 0.1  # the ready file may still be being written
FEEDD_ADDR="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$TMP/feedd/ready")"
echo "feedd ($FEEDD_BIN) serving on $FEEDD_ADDR, pid $FEEDD_PID"

# ---- load ITEMS items of ~1 KB over HTTP (8 keep-alive connections) ----
"$PYTHON" - "$FEEDD_ADDR" "$ITEMS" "$TMP/item.json" <<'EOF'
import http.client, json, random, sys, threading, time
addr, n, sample_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
host, port = addr.rsplit(":", 1)
filler = "".join(random.Random(7).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4096))
errors = []

def item(i):
    body = {"id": f"i{i}", "postId": f"p{i}", "userId": f"u{i % 1000}", "type": "post",
            "title": "benchmark post", "body": ""}
    room = 1024 - len(json.dumps(body, separators=(",", ":")))
    body["body"] = filler[i % 1024:i % 1024 + room]
    return json.dumps(body, separators=(",", ":"))

def load(lo, hi):
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    for i in range(lo, hi):
        c.request("PUT", f"/v1/containers/posts/items/p{i}/i{i}", body=item(i),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        if r.status not in (200, 201):
            errors.append(f"PUT i{i}: {r.status} {data[:200]!r}")
            return

start = time.monotonic()
k = 8
threads = [threading.Thread(target=load, args=(n * j // k, n * (j + 1) // k)) for j in range(k)]
for t in threads: t.start()
for t in threads: t.join()
if errors:
    sys.exit("load failed: " + errors[0])
elapsed = time.monotonic() - start
c = http.client.HTTPConnection(host, int(port), timeout=30)
c.request("GET", "/v1/containers/posts/items/p0/i0")
r = c.getresponse()
data = r.read()
if r.status != 200:
    sys.exit(f"GET i0: {r.status} {data[:200]!r}")
open(sample_path, "wb").write(data)
print(f"loaded {n} items of 1024 B over HTTP in {elapsed:.1f} s ({n / elapsed:.0f} PUT/s); "
      f"a GET answers {len(data)} body bytes")
EOF

# ---- nginx: 1 worker, a static file with the body of a real feedd GET ----
mkdir -p "$TMP/nginx/www" "$TMP/nginx/tmp"
cp "$TMP/item.json" "$TMP/nginx/www/item.json"
NGINX_PORT="$(free_port)"
# As root, nginx's worker would switch to an unprivileged user that cannot
# read the mode-700 temporary directory: keep it as the current user.
NGINX_USER=""
((EUID == 0)) && NGINX_USER="user $(id -un) $(id -gn);"
cat >"$TMP/nginx/nginx.conf" <<EOF
$NGINX_USER
worker_processes 1;
daemon off;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 120s;
  client_body_temp_path $TMP/nginx/tmp/body;
  proxy_temp_path $TMP/nginx/tmp/proxy;
  fastcgi_temp_path $TMP/nginx/tmp/fastcgi;
  uwsgi_temp_path $TMP/nginx/tmp/uwsgi;
  scgi_temp_path $TMP/nginx/tmp/scgi;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $TMP/nginx/www;
    location / { default_type application/json; }
  }
}
EOF
nginx -p "$TMP/nginx" -e "$TMP/nginx/error.log" -c "$TMP/nginx/nginx.conf" >"$TMP/nginx/stdout" 2>&1 &
NGINX_PID=$!
for ((i = 0; i < 100; i++)); do
  "$PYTHON" -c 'import socket,sys; socket.create_connection(("127.0.0.1",int(sys.argv[1])),0.2)' \
    "$NGINX_PORT" 2>/dev/null && break
  kill -0 "$NGINX_PID" 2>/dev/null || { NGINX_PID=""; cat "$TMP/nginx/stdout" "$TMP/nginx/error.log" >&2 || true; die "nginx exited"; }
  sleep 0.1
done
echo "nginx (1 worker) serving $TMP/nginx/www/item.json on 127.0.0.1:$NGINX_PORT, pid $NGINX_PID"

# ---- wrk scripts ----
cat >"$TMP/feedd.lua" <<EOF
-- GET a random existing item; each wrk thread has its own seed.
local n = $ITEMS
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("seed", counter)
end
function init(args)
  math.randomseed(os.time() * 1000 + seed)
end
function request()
  local i = math.random(0, n - 1)
  return wrk.format("GET", "/v1/containers/posts/items/p" .. i .. "/i" .. i)
end
EOF
# nginx gets the same per-request Lua work in wrk (a random number and a
# formatted request), for one static path, so wrk costs both sides the same.
sed -e 's|"/v1/containers/posts/items/p" .. i .. "/i" .. i|"/item.json?i=" .. i|' \
  "$TMP/feedd.lua" >"$TMP/nginx.lua"

WRK=(wrk "-t$THREADS" "-c$CONNS" "-d$DURATION" --latency)
FEEDD_URL="http://$FEEDD_ADDR"
NGINX_URL="http://127.0.0.1:$NGINX_PORT"

run_wrk() {  # run_wrk NAME RUN WRK-ARGS...; output kept in $TMP/wrk.NAME.RUN
  local name="$1" run="$2"
  shift 2
  "$PYTHON" "$HERE/wrk_run.py" "$TMP/wrk.$name.$run" "run $run $name" "$$" "$WAIT_IDLE" \
    -- "${WRK[@]}" "$@" || die "wrk failed"
}

echo "wrk: ${WRK[*]} -s feedd.lua $FEEDD_URL  (GET /v1/containers/posts/items/p<i>/i<i>, i random < $ITEMS)"
echo "     ${WRK[*]} -s nginx.lua $NGINX_URL  (GET /item.json?i=<i>, same Lua work)"
if [[ "$WARMUP" != "0" && "$WARMUP" != "0s" ]]; then
  wrk "-t$THREADS" "-c$CONNS" "-d$WARMUP" -s "$TMP/feedd.lua" "$FEEDD_URL" >/dev/null 2>&1 || true
  wrk "-t$THREADS" "-c$CONNS" "-d$WARMUP" -s "$TMP/nginx.lua" "$NGINX_URL" >/dev/null 2>&1 || true
fi
for ((run = 1; run <= RUNS; run++)); do
  if ((run % 2 == 1)); then
    run_wrk feedd "$run" -s "$TMP/feedd.lua" "$FEEDD_URL"
    run_wrk nginx "$run" -s "$TMP/nginx.lua" "$NGINX_URL"
  else
    run_wrk nginx "$run" -s "$TMP/nginx.lua" "$NGINX_URL"
    run_wrk feedd "$run" -s "$TMP/feedd.lua" "$FEEDD_URL"
  fi
done

# ---- summary ----
"$PYTHON" - "$TMP" "$RUNS" "$COMMAND" <<'EOF'
import re, statistics, sys
tmp, runs, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def us(text):  # wrk latency "812.00us" / "1.23ms" / "2.00s" -> microseconds
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6}[m.group(2)]
def stats(name):
    rps, p50, p99, bad, bg = [], [], [], 0, 0.0
    for run in range(1, runs + 1):
        text = open(f"{tmp}/wrk.{name}.{run}").read()
        rps.append(float(re.search(r"Requests/sec:\s*([\d.]+)", text).group(1)))
        p50.append(us(re.search(r"^\s*50%\s+(\S+)", text, re.M).group(1)))
        p99.append(us(re.search(r"^\s*99%\s+(\S+)", text, re.M).group(1)))
        m = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
        bad += int(m.group(1)) if m else 0
        bg = max(bg, float(re.search(r"Background: ([\d.]+)", text).group(1)))
    return statistics.median(rps), statistics.median(p50), statistics.median(p99), bad, bg
f, n = stats("feedd"), stats("nginx")
print(f"\nSUMMARY (median of {runs} runs; latency = median over runs of wrk's p50/p99)")
print(f"  feedd GET item  {f[0]:9.0f} req/s  p50 {f[1]:7.0f} us  p99 {f[2]:7.0f} us")
print(f"  nginx static    {n[0]:9.0f} req/s  p50 {n[1]:7.0f} us  p99 {n[2]:7.0f} us")
print(f"  feedd/nginx {f[0] / n[0]:.2f}   (other processes used <= {max(f[4], n[4]):.2f} cores)")
if f[3] or n[3]:
    print(f"  WARNING: non-2xx answers: feedd {f[3]}, nginx {n[3]}")
print(f"  command: {command}")
sys.exit(1 if f[3] or n[3] else 0)
EOF
