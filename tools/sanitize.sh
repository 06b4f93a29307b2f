#!/usr/bin/env bash
# Builds kdsim with AddressSanitizer and UndefinedBehaviorSanitizer (g++) into build-asan/ and
# runs the whole test suite there:   tools/sanitize.sh [ctest arguments...]
# A sanitizer report aborts the process with exit status 99, never 1 or 2, so that no test can
# read a sanitizer abort as kdsim's "violated invariant" (1) or "bad input" (2).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKDSIM_SANITIZE=address,undefined \
  -DKDSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=99"
export LSAN_OPTIONS="exitcode=99"
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" "$@"
