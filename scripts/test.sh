#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test
# suite through ctest, then every fuzz target for FUZZ_SECONDS (default 30)
# each (scripts/fuzz.sh; FUZZ_SECONDS=0 skips them). FEEDD_SANITIZE=1 builds
# and tests with ASan+UBSan. FEEDD_SANITIZE=thread builds with
# ThreadSanitizer and runs the unit and processor tests only (no fuzzing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=$(scripts/build.sh | tail -n 1)
status=0
if [ "${FEEDD_SANITIZE:-0}" = "thread" ]; then
  # The tests whose threads share memory in one process (the daemon's own
  # tests drive a separate process over HTTP), but those that run
  # librdkafka's threads (label processors-librdkafka): GCC 12's TSan does
  # not intercept the C11 thrd_create librdkafka starts them with, and
  # crashes in them.
  # tests/tsan.supp: races that run through the uninstrumented RocksDB and
  # librdkafka; history_size=7 keeps enough history to show both stacks.
  TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp history_size=7 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    ctest --test-dir "$build_dir" --output-on-failure -j 2 -L '^(unit|processors)$' "$@" ||
    status=$?
  exit "$status"
fi
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@" || status=$?
if [ "${FUZZ_SECONDS:-30}" != "0" ]; then
  scripts/fuzz.sh || status=$?
fi
exit "$status"
