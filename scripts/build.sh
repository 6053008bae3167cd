#!/usr/bin/env bash
# Configures and builds feedd into ./build (or ./build-asan with
# FEEDD_SANITIZE=1). Prints the build directory on stdout's last line.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${FEEDD_SANITIZE:-0}" = "1" ]; then
  build_dir=build-asan
  cmake_args+=(-DFEEDD_SANITIZE=ON)
fi
cmake -S . -B "$build_dir" "${cmake_args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
echo "$build_dir"
