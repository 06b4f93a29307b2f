#!/usr/bin/env bash
# The main job: install what is missing, build, and run the shipped reference experiments,
# printing every run's summary, each experiment's table and its before/after comparisons.
# Then the reality suite (scenarios/reality/: published measurements of real machines, side by
# side with kdsim's prediction; docs/fidelity.md).
# Extra arguments go to `kdsim experiments` (e.g. --brief, --only e2, --out results/).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup-deps.sh
tools/build.sh
./build/kdsim experiments --dir scenarios "$@"
./build/kdsim experiments --dir scenarios/reality "$@"
