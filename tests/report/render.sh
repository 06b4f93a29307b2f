#!/usr/bin/env bash
# The HTML report as a reader sees it: results of an experiment (E4: before/after, cycles per
# context, round-trip percentiles), a two-key sweep and a results database go through
# `kdsim report`; headless Chromium must then render every declared figure with no console error
# (tools/report_render.mjs). The screenshot is kept in <build>/test-artifacts/report.png, each figure's SVG and
# PNG in <build>/test-artifacts/report-figures/.
#   usage: render.sh KDSIM SOURCE_DIR BUILD_DIR
set -euo pipefail
kdsim=$1; src=$2; build=$3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$src"
"$kdsim" experiments --dir scenarios --only e4 --brief --out "$work/e4" >/dev/null
"$kdsim" sweep scenarios/e5/x86-mtu-partial-sync.toml --set 'scenario.duration=10ms,20ms' --set 'link[0].rate=1Gbit/s,2.5Gbit/s' --quiet --out "$work/sweep" >/dev/null
"$kdsim" run scenarios/seeds/arp-pingpong-irq-jitter.toml --quiet --db "$work/runs.sqlite" >/dev/null
"$kdsim" report "$work/e4" "$work/sweep" "$work/runs.sqlite" -o "$work/report.html"
"$kdsim" report "$work/e4" "$work/sweep" "$work/runs.sqlite" -o "$work/again.html" >/dev/null
cmp -s "$work/report.html" "$work/again.html" || { echo "FAIL: the same inputs gave two different pages"; exit 1; }
# what the page declares, counted independently of the browser: E4 has no rate metric, so
# cycles + latency; the sweep throughput + cycles + sweep curves; the database run cycles + latency
declared=$(grep -o '"id":"fig[0-9]*"' "$work/report.html" | wc -l)
[ "$declared" = 7 ] || { echo "FAIL: the page declares $declared figures, expected 7"; exit 1; }
rm -rf "$build/test-artifacts/report-figures"
node "$src/tools/report_render.mjs" --web "$build/web" "$work/report.html" \
  --screenshot "$build/test-artifacts/report.png" --figures "$build/test-artifacts/report-figures"
svgs=$(ls "$build/test-artifacts/report-figures"/*.svg | wc -l)
[ "$svgs" = 7 ] || { echo "FAIL: $svgs SVG files for 7 figures"; exit 1; }
grep -q '<svg' "$build/test-artifacts/report-figures/fig1-"*.svg || { echo "FAIL: fig1's SVG file is not SVG"; exit 1; }
echo "ok: 7 figures rendered in Chromium; screenshot $build/test-artifacts/report.png"
