# shellcheck shell=bash
# perf_common.sh: what the perf profiles of one daemon thread share
# (import_profile.sh, write_profile.sh); sourced, not run.

# thread_id PID NAME: the id of PID's first thread named NAME (as in
# docs/architecture.md, "Threads"); fails, saying so, when there is none.
thread_id() {
  local tid
  tid=$(grep -lx "$2" /proc/"$1"/task/*/comm | head -1 | cut -d/ -f5)
  [ -n "$tid" ] || { echo "$0: no thread named $2" >&2; return 1; }
  echo "$tid"
}

# top_functions OUT: perf's report of the recording OUT, the functions with
# their callees (inclusive share), the 60 largest.
top_functions() {
  perf report -i "$1" --children --sort symbol --stdio -g none 2> /dev/null |
    grep -E '^ +[0-9]' | cut -c1-160 | head -60
}
