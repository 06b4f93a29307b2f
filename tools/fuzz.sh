#!/usr/bin/env bash
# Fuzzes the scenario and profile loaders with libFuzzer (clang, ASan + UBSan) for a given time.
#   tools/fuzz.sh [SECONDS]      (default 60)
#   KDSIM_FUZZ_SEED=N            libFuzzer's seed (default 1, so that CI's run explores the same
#                                inputs on every machine and a finding reproduces; 0: a random seed,
#                                for exploratory runs, which should be long: tools/fuzz.sh 1800)
# Builds build-fuzz/ (clang++), seeds a corpus from the shipped scenarios, the invalid-input
# corpus and the profiles, runs, and prints libFuzzer's last status line (executions, exec/s).
# Exit status non-zero on a crash, a sanitizer report or an internal error; the reproducer is
# left in build-fuzz/findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
command -v clang++ >/dev/null || { echo "fuzz: needs clang (tools/setup-deps.sh installs it)" >&2; exit 2; }
CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKDSIM_FUZZ=ON \
  -DKDSIM_SANITIZE=address,undefined -DKDSIM_BUILD_TESTS=OFF -DKDSIM_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target kdsim_loader_fuzz
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/findings
find scenarios tests/scenarios/invalid data/profiles -name '*.toml' -size -16k -exec cp -f {} "$corpus"/ \;
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:exitcode=99"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=99"
log=build-fuzz/fuzz.log
set +e
build-fuzz/tests/fuzz/kdsim_loader_fuzz "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -max_len=16384 -seed="${KDSIM_FUZZ_SEED:-1}" -print_final_stats=1 -artifact_prefix=build-fuzz/findings/ >"$log" 2>&1
rc=$?
set -e
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sort -u || true
if [ "$rc" -ne 0 ]; then
  echo "fuzz: FAILED (exit $rc); see $log and build-fuzz/findings/" >&2
  tail -40 "$log" >&2
  exit 1
fi
echo "fuzz: no crash, no sanitizer report, no internal error in ${seconds} s"
