#!/usr/bin/env bash
# Each figure of a kdsim HTML report as SVG and PNG (2x) for papers and mailing-list posts:
# headless Chromium (Debian's chromium) renders the page as a reader's browser would, and vega's
# own view.toSVG()/toImageURL() write every figure, named fig<N>-<section>-<title>.svg/.png.
#   usage: tools/report_figures.sh REPORT.html DIR      (after tools/build.sh: uses build/web)
set -euo pipefail
[ $# = 2 ] || { echo "usage: $0 REPORT.html DIR" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
node "$root/tools/report_render.mjs" --web "$root/build/web" "$1" --figures "$2"
ls "$2"
