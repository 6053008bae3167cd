#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test
# suite through ctest, then every fuzz target for FUZZ_SECONDS (default 30)
# each (scripts/fuzz.sh; FUZZ_SECONDS=0 skips them). FEEDD_SANITIZE=1 builds
# and tests with ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=$(scripts/build.sh | tail -n 1)
status=0
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@" || status=$?
if [ "${FUZZ_SECONDS:-30}" != "0" ]; then
  scripts/fuzz.sh || status=$?
fi
exit "$status"
