#!/usr/bin/env bash
# Installs the Debian packages clformer needs, only those that are missing.
# Usage: tools/install-deps.sh [--with-torch]   (--with-torch: PyTorch for the
# reference-data and comparison scripts; the C build and tests never need it)
set -euo pipefail

packages=(build-essential cmake pkg-config
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd oclgrind clinfo
          libclblast-dev clblast-utils libcmocka-dev libjansson-dev libcairo2-dev
          libsentencepiece-dev libopenblas-dev libopenblas0-pthread
          libopenmpi-dev openmpi-bin
          clang libclang-rt-14-dev)  # clang: libFuzzer targets and the sanitizer gate
if [[ "${1:-}" == "--with-torch" ]]; then
    packages+=(python3 python3-torch python3-numpy)
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages already installed"
    exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
