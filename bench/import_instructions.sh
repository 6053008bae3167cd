#!/usr/bin/env bash
# import_instructions.sh: the instructions an import costs per item, by
# function, for one or two builds, counted by valgrind's callgrind.
#
#   bench/import_instructions.sh [--ndjson DIR] [--sf 0.001] BUILD_A [BUILD_B] [-- FEEDD_ARGS...]
#
# For each build: starts BUILD/feedd under callgrind (storage.sync=true, the
# embedded defaults and FEEDD_ARGS), imports users.ndjson then posts.ndjson
# with feedctl, waits until every view applied the head LSN, stops the
# daemon and prints, per imported item, the instructions of the whole
# process and of each function below (inclusive), with B/A when there are
# two builds. Instruction counts do not depend on what else the box runs,
# so one run per build is enough and two builds compare on a noisy box
# (timing is another matter: import_threads.sh). Under callgrind the daemon
# runs ~50x slower: SF 0.001 (167,000 items) takes 3-4 minutes per build.
# DIR (default: a temporary one) gets the data set from
# bench/scenario/ndjson.py unless it holds both files.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON=/usr/bin/python3
NDJSON="" SF=0.001 BUILDS=() ARGS=()
COMMAND="$0 $*"
while [ $# -gt 0 ]; do
  case "$1" in
    --ndjson) NDJSON=$2; shift 2 ;;
    --sf) SF=$2; shift 2 ;;
    --) shift; ARGS=("$@"); break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) BUILDS+=("$1"); shift ;;
  esac
done
[ ${#BUILDS[@]} -ge 1 ] && [ ${#BUILDS[@]} -le 2 ] || {
  echo "usage: $0 [--ndjson DIR] [--sf SF] BUILD_A [BUILD_B] [-- FEEDD_ARGS...]" >&2
  exit 2
}
command -v valgrind > /dev/null || { echo "$0: needs valgrind" >&2; exit 2; }
WORK=$(mktemp -d /tmp/import_instructions.XXXXXX)
trap 'kill $FEEDD_PID 2> /dev/null || true; rm -rf "$WORK"' EXIT
FEEDD_PID=""
. "$HERE/import_common.sh"
[ -n "$NDJSON" ] || NDJSON=$WORK/ndjson
ensure_ndjson "$NDJSON" "$SF" 42
print_header "$COMMAND"

count() {  # BUILD OUT: the callgrind profile of one import into OUT
  local build=$1 out=$2 dir=$WORK/run
  rm -rf "$dir"; mkdir -p "$dir/data"
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$build/feedd" --data-dir "$dir/data" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --ready-file "$dir/ready.json" --storage.sync=true "${ARGS[@]}" > "$dir/feedd.log" 2>&1 &
  FEEDD_PID=$!
  for _ in $(seq 1200); do [ -s "$dir/ready.json" ] && break; sleep 0.1; done
  [ -s "$dir/ready.json" ] || { echo "$0: feedd did not start; its log:" >&2; cat "$dir/feedd.log" >&2; exit 1; }
  API=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$dir/ready.json")
  "$build/feedctl" --api "$API" import --no-progress users "$NDJSON/users.ndjson" > /dev/null
  "$build/feedctl" --api "$API" import --no-progress posts "$NDJSON/posts.ndjson" > /dev/null
  wait_for "$API" views
  kill "$FEEDD_PID"; wait "$FEEDD_PID" || true
  FEEDD_PID=""
}

OUTS=()
for i in "${!BUILDS[@]}"; do
  count "${BUILDS[$i]}" "$WORK/callgrind.$i"
  OUTS+=("$WORK/callgrind.$i")
done
items=$(( $(wc -l < "$NDJSON/users.ndjson") + $(wc -l < "$NDJSON/posts.ndjson") ))
"$PYTHON" - "$items" "${BUILDS[@]}" -- "${OUTS[@]}" <<'PYEOF'
import re, subprocess, sys
args = sys.argv[1:]
items = int(args[0])
sep = args.index("--")
builds, outs = args[1:sep], args[sep + 1:]
# The threads' work and what they spend it on (inclusive counts).
FUNCTIONS = [
    "feedd::CommitPipeline::CommitGroup(",
    "rocksdb::DBImpl::Write(",
    "rocksdb::MemTable::Add(",
    "feedd::CommitPipeline::GroupBuilder::Add(",
    "feedd::CommitPipeline::GroupBuilder::Prefetch(",
    "feedd::CommitPipeline::SortedByKey(",
    "feedd::SourcePump::Run(",
    "feedd::ProcessorInstance::Impl::Offer(",
    "AppliedAlready(feedd::ChangeRecord const&, feedd::ViewContext&) const",  # every kind's
    "feedd::CommitChangeSource::NextBatch(",
    "feedd::KeyedApplier::WorkerLoop(",
    "Importer::HandleLine(",
    "feedd::PrepareItem(",
    "feedd::Publisher::Impl::Run(",
    "rocksdb::DBImpl::BGWorkFlush(",
    "rocksdb::DBImpl::BGWorkCompaction(",
    "feedd::HttpServer::Impl::RunThread(",
]
def totals(out):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                          capture_output=True, text=True, check=True).stdout
    found, kinds = {}, {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*)$", line)
        if not m or "=>" in line:
            continue
        n, name = int(m.group(1).replace(",", "")), m.group(2)
        if "PROGRAM TOTALS" in name:
            found["the whole process"] = n
            continue
        # A function inlined from several files has a line per file: the
        # first (largest) one counts.
        for f in FUNCTIONS:
            if f not in name:
                continue
            key = f.split("(")[0]
            if key == "AppliedAlready":  # every kind's, added up
                kind = re.search(r"(\w+)::AppliedAlready\(", name).group(1)
                kinds.setdefault(kind, n)
            else:
                found.setdefault(key, n)
    if kinds:
        found["AppliedAlready"] = sum(kinds.values())
    return found
counts = [totals(o) for o in outs]
names = ["the whole process"] + [f.split("(")[0] for f in FUNCTIONS]
head = "%-46s" % ("instructions per item (%d items)" % items)
for b in builds:
    head += " %14s" % b[-14:]
if len(builds) == 2:
    head += "    B/A"
print(head)
for name in names:
    row = [c.get(name, 0) / items for c in counts]
    if not any(row):
        continue
    line = "%-46s" % name[-46:]
    for v in row:
        line += " %14.0f" % v
    if len(row) == 2 and row[0]:
        line += "  %5.3f" % (row[1] / row[0])
    print(line)
PYEOF
