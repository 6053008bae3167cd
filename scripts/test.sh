#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test
# suite through ctest. FEEDD_SANITIZE=1 builds and tests with ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=$(scripts/build.sh | tail -n 1)
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
