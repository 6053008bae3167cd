#!/usr/bin/env bash
# Installs the Debian 12 packages feedd needs to build, run and test, and only
# those that are missing. Idempotent; needs root (or sudo).
set -euo pipefail

PACKAGES=(
  # build
  g++ cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  librocksdb-dev librdkafka-dev prometheus-cpp-dev libsystemd-dev libjemalloc-dev
  # TLS on the API and SHA-256 of bearer tokens; the openssl command makes
  # the certificates of the TLS tests
  libssl-dev openssl
  libgtest-dev libgmock-dev
  # fuzzing (scripts/fuzz.sh): clang with libFuzzer and the sanitizer
  # runtimes, llvm-symbolizer for readable stack traces
  clang libclang-rt-14-dev llvm
  # the style checks (tests/style): clang-format dry run, clang-tidy
  clang-format clang-tidy
  # tests and benchmarks: a real HTTP client and Kafka clients, wrk, nginx
  python3 python3-kafka python3-lz4 kcat wrk nginx-light prometheus
  # the benchmarks' charts (bench/scenario, bench/peer/postgres)
  gnuplot-nox
  # the SF 1 import (bench/sf1_import.sh): the data set kept compressed,
  # streamed into the import route
  zstd curl
  # an import's instructions per item, by function (bench/import_instructions.sh)
  valgrind
  # the PostgreSQL peer benchmark (bench/peer/postgres): the server, its
  # client tools (psql, pgbench, pg_recvlogical) and the wal2json plugin
  postgresql-15 postgresql-client-15 postgresql-15-wal2json
  # packaging: cpack's dpkg-shlibdeps, systemd-analyze for the unit tests,
  # help2man for the man pages (packaging/man.cmake), lintian on the .deb
  dpkg-dev systemd help2man lintian
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
