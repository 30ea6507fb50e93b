#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit, oracle against PyTorch, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
