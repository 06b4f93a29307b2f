#!/usr/bin/env bash
# The test command: install what is missing, build, run the whole suite (CTest + GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
tools/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
