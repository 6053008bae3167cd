#!/usr/bin/env bash
# Configures and builds feedd into ./build (./build-asan with
# FEEDD_SANITIZE=1: ASan+UBSan; ./build-tsan with FEEDD_SANITIZE=thread:
# ThreadSanitizer, without the benchmarks). FEEDD_WERROR=ON (CI) makes
# every compiler warning an error. The build log goes to stderr; stdout gets
# the build directory only.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DFEEDD_WERROR="${FEEDD_WERROR:-OFF}")
# ccache, where installed, makes rebuilds in other checkouts cheap.
if command -v ccache >/dev/null; then cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
case "${FEEDD_SANITIZE:-0}" in
  0) ;;
  1)
    build_dir=build-asan
    cmake_args+=(-DFEEDD_SANITIZE=ON)
    ;;
  thread)
    build_dir=build-tsan
    cmake_args+=(-DFEEDD_SANITIZE=thread -DFEEDD_BUILD_BENCH=OFF)
    ;;
  *)
    echo "FEEDD_SANITIZE must be 0, 1 or thread, not '${FEEDD_SANITIZE}'" >&2
    exit 2
    ;;
esac
cmake -S . -B "$build_dir" "${cmake_args[@]}" >&2
cmake --build "$build_dir" -j "$(nproc)" >&2
echo "$build_dir"
