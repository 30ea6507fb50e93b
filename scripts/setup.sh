#!/usr/bin/env bash
# Installs the Debian packages fivefold builds, tests and demos with, then configures and builds.
# Safe to run again: packages already present are skipped, the build is incremental.
# Arguments name the targets to build (the demo builds only `fivefold`); none: every default
# target, the tests included (benchmarks build on request: CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libdnnl-dev libopenblas-dev
          libsentencepiece-dev nlohmann-json3-dev libtomlplusplus-dev libfmt-dev libgtest-dev
          libbenchmark-dev bible-kjv python3-torch libpcre2-dev libicu-dev python3-sentencepiece nodejs
          zlib1g-dev libzstd-dev zstd protobuf-compiler python3-protobuf libcairo2-dev fonts-dejavu-core
          tesseract-ocr jq iproute2)  # tesseract: the report test reads the PNG's labels back; jq: plan --json's
                                      # test; iproute2: ip netns and tc for the two-node tests
# The Slurm test on those nodes, which starts its own daemons (the packages' services find no
# /etc/slurm/slurm.conf). Without their recommends: those pull some 25 plugin packages (HDF5, IPMI,
# ROCm SMI, InfluxDB, ...) that the test never loads.
slurm_packages=(slurmctld slurmd slurm-client munge)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() missing_slurm=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
for p in "${slurm_packages[@]}"; do installed "$p" || missing_slurm+=("$p"); done
# The tokenizer oracle's npm install needs npm: Debian packages it apart from nodejs; NodeSource's
# nodejs carries its own (and conflicts with Debian's npm), so only a missing command asks for it.
command -v npm >/dev/null || missing+=(npm)
if [ $((${#missing[@]} + ${#missing_slurm[@]})) -gt 0 ]; then
  echo "installing: ${missing[*]} ${missing_slurm[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  [ ${#missing[@]} = 0 ] || DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
  [ ${#missing_slurm[@]} = 0 ] ||
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing_slurm[@]}" >/dev/null
fi

# Unity batches: a fresh build on 2 cores takes ~6 minutes instead of ~9 (measured in session 8;
# the demo's per-step records are bitwise those of the per-file build). Developers iterating on
# one file may prefer a per-file build dir: cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j "$(nproc)" "${targets[@]}" 2>&1 | grep -E "error|warning: unused|Linking CXX executable fivefold$" || true
test -x build/fivefold || { echo "build failed: run cmake --build build to see why" >&2; exit 1; }
