#!/usr/bin/env bash
# The main job: install what is missing, build, and run the shipped reference experiments,
# printing every run's summary, each experiment's table and its before/after comparisons.
# Then the reality suite (scenarios/reality/: published measurements of real machines, side by
# side with kdsim's prediction; docs/fidelity.md).
# Extra arguments go to `kdsim experiments` (e.g. --brief, --only e2, --out results/), except
# --report FILE: then every run's JSON is also saved (into --out DIR, or a temporary folder)
# and `kdsim report` makes one HTML page of every experiment (docs/report.md).
set -euo pipefail
cd "$(dirname "$0")/.."
args=(); report=""; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --report) report=$2; shift 2 ;;
    --report=*) report=${1#--report=}; shift ;;
    --out) out=$2; args+=("$1" "$2"); shift 2 ;;
    --out=*) out=${1#--out=}; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -n "$report" ] && [ -z "$out" ]; then
  out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
  args+=(--out "$out")
fi
tools/setup-deps.sh
tools/build.sh
status=0
./build/kdsim experiments --dir scenarios "${args[@]}" || status=$?
./build/kdsim experiments --dir scenarios/reality "${args[@]}" || status=$?
if [ -n "$report" ]; then ./build/kdsim report "$out" -o "$report"; fi
exit $status
