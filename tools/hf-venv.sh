#!/usr/bin/env bash
# Makes ~/.venvs/clformer-hf: Debian's python3 with its python3-torch
# (--system-site-packages) and tools/reference/requirements-hf.txt, pinned,
# from PyPI. The reference scripts of docs/guides/pytorch.md run in it, and
# the test suite's Hugging Face round trips (CTest hf_export_roundtrip) run
# once it exists; without it they are skipped and say so. Never touches
# system Python. CLFORMER_HF_PYTHON names another Python instead.
#
# Usage: tools/hf-venv.sh [--print-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/pinned-venv.sh

dir=$HOME/.venvs/clformer-hf
pinned_venv_args hf-venv "$dir" "$@"

requirements=tools/reference/requirements-hf.txt
stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
if pinned_venv_current "$dir" "$stamp" bin/python; then
    echo "hf-venv: $requirements already installed in $dir"
    exit 0
fi
/usr/bin/python3 -c 'import torch, numpy, ensurepip, venv' 2>/dev/null || {
    echo "hf-venv: Debian's python3 with python3-torch, python3-numpy and python3-venv is" \
         "needed (tools/install-deps.sh --with-hf installs them)" >&2
    exit 1
}
echo "hf-venv: installing $requirements into $dir"
pinned_venv_create "$dir" /usr/bin/python3 --system-site-packages
pinned_venv_install "$dir" -r "$requirements"
pinned_venv_stamp "$dir" "$stamp"
echo "hf-venv: done; tools/test.sh now runs the Hugging Face round trips too"
