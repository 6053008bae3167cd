#!/usr/bin/env bash
# Set-up command 1: install what is missing, build, and run feedd in the
# foreground on its built-in configuration, configs/feedd.conf (data in
# ./data, loopback only; docs/configuration.md).
# Extra arguments go to feedd, e.g. scripts/run.sh --listen 127.0.0.1:9090
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=$(scripts/build.sh | tail -n 1)
exec "$build_dir/feedd" "$@"
