#!/usr/bin/env bash
# Makes the Python venv the test suite tests the Python package in
# (docs/PYTHON.md): python3's venv with python/requirements-test.txt, pinned
# (scikit-build-core, numpy, pytest), from PyPI. Once it exists, tools/test.sh
# builds and installs the package into it offline and runs its tests (CTest
# label `python`); without it the C suite runs alone and says so. Never
# touches system Python.
#
# Usage: tools/python-venv.sh [--print-dir]
#   --print-dir  print where it is (or would be) and exit
# The place: $CLFORMER_PYTHON_VENV, else $XDG_CACHE_HOME/clformer/python-venv,
# else ~/.cache/clformer/python-venv. About 100 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${CLFORMER_PYTHON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/clformer/python-venv}
if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$dir"
    exit 0
elif [[ $# -gt 0 ]]; then
    echo "python-venv: unknown argument '$1' (usage: tools/python-venv.sh [--print-dir])" >&2
    exit 2
fi

requirements=python/requirements-test.txt
stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
# The stamp is written last: a run that stopped half-way is redone.
if [[ -f "$dir/clformer-stamp" && "$(cat "$dir/clformer-stamp")" == "$stamp" &&
      -x "$dir/bin/python" ]]; then
    echo "python-venv: $requirements already installed in $dir"
    exit 0
fi
python3 -c 'import ensurepip, venv' 2>/dev/null || {
    echo "python-venv: python3 with venv is needed (apt-get install python3-venv)" >&2
    exit 1
}
echo "python-venv: installing $requirements into $dir"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
python3 -m venv "$dir"
"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "$stamp" > "$dir/clformer-stamp.tmp"
mv "$dir/clformer-stamp.tmp" "$dir/clformer-stamp"
echo "python-venv: done; tools/test.sh now tests the Python package too (label python)"
