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
source tools/pinned-venv.sh

dir=${CLFORMER_PYTHON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/clformer/python-venv}
pinned_venv_args python-venv "$dir" "$@"

requirements=python/requirements-test.txt
stamp=$(sha256sum "$requirements" | cut -d' ' -f1)
if pinned_venv_current "$dir" "$stamp" bin/python; then
    echo "python-venv: $requirements already installed in $dir"
    exit 0
fi
python3 -c 'import ensurepip, venv' 2>/dev/null || {
    echo "python-venv: python3 with venv is needed (apt-get install python3-venv)" >&2
    exit 1
}
echo "python-venv: installing $requirements into $dir"
pinned_venv_create "$dir" python3
pinned_venv_install "$dir" -r "$requirements"
pinned_venv_stamp "$dir" "$stamp"
echo "python-venv: done; tools/test.sh now tests the Python package too (label python)"
