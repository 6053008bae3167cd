#!/usr/bin/env bash
# Builds the libFuzzer targets into ./build-fuzz (clang, ASan + UBSan,
# docs/fuzzing.md) and runs them.
#
#   scripts/fuzz.sh                  every target for FUZZ_SECONDS (default 30) each
#   scripts/fuzz.sh patch 3600       one target (tests/fuzz/patch_fuzz.cc) for an hour
#
# A crash, leak, sanitizer report or broken invariant fails the run; the input
# is saved as build-fuzz/tests/fuzz/work/<target>/crash-* (or leak-*, timeout-*).
# FEEDD_WERROR=ON (CI) makes every compiler warning an error.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-}
seconds=${2:-${FUZZ_SECONDS:-30}}
build_dir=build-fuzz

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DFEEDD_FUZZ=ON
            -DFEEDD_BUILD_TESTS=OFF -DFEEDD_BUILD_BENCH=OFF -DFEEDD_FUZZ_SECONDS="$seconds"
            -DFEEDD_WERROR="${FEEDD_WERROR:-OFF}")
if command -v ccache >/dev/null; then cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang CXX=clang++ cmake -S . -B "$build_dir" "${cmake_args[@]}" >&2
if [ -n "$target" ]; then
  cmake --build "$build_dir" -j "$(nproc)" --target "${target}_fuzz" >&2
  exec ctest --test-dir "$build_dir" -V -R "^fuzz_${target}\$"
fi
cmake --build "$build_dir" -j "$(nproc)" --target fuzz_targets >&2
status=0
ctest --test-dir "$build_dir" --output-on-failure -j 2 -L fuzz || status=$?
if [ "$status" -ne 0 ]; then
  # What was found, last, where a log's tail shows it: the broken invariant
  # or sanitizer report, and the input (also saved under work/<target>/).
  echo "fuzz findings:"
  grep -h -E 'invariant broken|==ERROR|^SUMMARY:|Test unit written|^Base64:' \
    "$build_dir/Testing/Temporary/LastTest.log" || true
fi
exit "$status"
