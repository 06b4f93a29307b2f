#!/usr/bin/env bash
# Installs the Debian packages kdsim builds with, if any is missing. Needs root (or sudo).
# clang and its runtimes build the loader fuzzer (tools/fuzz.sh); the rest builds with g++.
# Open MPI: kdsim sweep under mpirun (optional for the build; the test suite runs it when present).
# Issue 16 (see it): libpcap writes --pcap captures and tshark dissects them in the tests;
# pybind11, pandas and pytest make and test the Python package; matplotlib draws its example;
# chromium renders `kdsim report` in the browser test; npm vendors the plotting library.
set -euo pipefail
packages=(
  build-essential cmake pkg-config python3
  libgtest-dev libgmock-dev libbenchmark-dev
  libtomlplusplus-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libssl-dev libsqlite3-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-dev
  libpcap-dev tshark
  pybind11-dev python3-dev python3-pandas python3-pytest python3-matplotlib
  chromium
)
# Node.js with npm: the machine's own when it has one (a nodesource build bundles npm, and
# Debian's npm package would conflict with it), Debian's otherwise.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
# Opt-in: KDSIM_PEERS=1 also installs the peers of bench/peers (kdsim_peers_bench, built with
# -DKDSIM_BUILD_PEERS=ON) and the measuring tools of bench/peers_callgrind.sh and
# bench/scenario_speed.sh: ns-3 3.37, SimGrid 3.32, valgrind, GNU time.
if [ "${KDSIM_PEERS:-0}" = 1 ]; then
  packages+=(libns3-dev libsimgrid-dev valgrind time)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
