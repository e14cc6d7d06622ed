#!/usr/bin/env bash
# Installs the Debian packages clformer needs, only those that are missing.
# Usage: tools/install-deps.sh [--with-torch] [--with-hf] [--with-intel-opencl] [--with-python]
#   --with-torch         PyTorch for the reference-data and comparison scripts
#                        (the C build and tests never need it)
#   --with-hf            PyTorch and ~/.venvs/clformer-hf with transformers,
#                        pinned (tools/hf-venv.sh): the test suite then runs the
#                        Hugging Face round trips too (CTest hf_export_roundtrip)
#   --with-python        the venv the Python package is tested in, pinned, under
#                        ~/.cache/clformer (tools/python-venv.sh): the test suite
#                        then builds the package offline and runs its tests (CTest
#                        label python)
#   --with-intel-opencl  also Intel's OpenCL CPU runtime, pinned, in a venv under
#                        ~/.cache/clformer (tools/intel-opencl.sh): the test suite
#                        then runs on it too (CTest label intel_cpu)
set -euo pipefail

packages=(build-essential cmake pkg-config
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd oclgrind clinfo
          libclblast-dev clblast-utils libcmocka-dev libjansson-dev libcairo2-dev
          libsentencepiece-dev libopenblas-dev libopenblas0-pthread
          libopenmpi-dev openmpi-bin
          cmark                     # CommonMark: the test that renders every Markdown file
          clang libclang-rt-14-dev   # clang: libFuzzer targets and the sanitizer gate
          libclc-14)                 # with clang: the GPU proxy's compiles (tools/proxy/register-proxy.sh)
intel=0
python=0
hf=0
for arg in "$@"; do
    case "$arg" in
        --with-torch) packages+=(python3 python3-torch python3-numpy) ;;
        --with-hf) packages+=(python3 python3-torch python3-numpy python3-venv); hf=1 ;;
        --with-intel-opencl) packages+=(python3 python3-venv); intel=1 ;;
        --with-python) packages+=(python3 python3-venv); python=1 ;;
        *) echo "install-deps: unknown option '$arg' (usage: tools/install-deps.sh" \
                "[--with-torch] [--with-hf] [--with-intel-opencl] [--with-python])" >&2; exit 2 ;;
    esac
done
# Run when the Debian packages are in place (all need python3-venv).
intel_opencl() {
    if ((intel)); then "$(dirname "$0")/intel-opencl.sh"; fi
    if ((python)); then "$(dirname "$0")/python-venv.sh"; fi
    if ((hf)); then "$(dirname "$0")/hf-venv.sh"; fi
}

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages already installed"
    intel_opencl
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
intel_opencl
