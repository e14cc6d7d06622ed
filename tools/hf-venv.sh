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

dir=$HOME/.venvs/clformer-hf
if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$dir"
    exit 0
elif [[ $# -gt 0 ]]; then
    echo "hf-venv: unknown argument '$1' (usage: tools/hf-venv.sh [--print-dir])" >&2
    exit 2
fi

requirements=tools/reference/requirements-hf.txt
stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
# The stamp is written last: a run that stopped half-way is redone.
if [[ -f "$dir/clformer-stamp" && "$(cat "$dir/clformer-stamp")" == "$stamp" &&
      -x "$dir/bin/python" ]]; then
    echo "hf-venv: $requirements already installed in $dir"
    exit 0
fi
/usr/bin/python3 -c 'import torch, numpy, ensurepip, venv' 2>/dev/null || {
    echo "hf-venv: Debian's python3 with python3-torch, python3-numpy and python3-venv is" \
         "needed (tools/install-deps.sh --with-hf installs them)" >&2
    exit 1
}
echo "hf-venv: installing $requirements into $dir"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
/usr/bin/python3 -m venv --system-site-packages "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "$stamp" > "$dir/clformer-stamp.tmp"
mv "$dir/clformer-stamp.tmp" "$dir/clformer-stamp"
echo "hf-venv: done; tools/test.sh now runs the Hugging Face round trips too"
