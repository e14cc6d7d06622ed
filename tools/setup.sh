#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the main job
# (clformer demo: trains on a built-in toy language pair, then translates).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
echo
./build/clformer devices
echo
./build/clformer demo
