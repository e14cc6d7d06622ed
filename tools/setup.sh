#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the main job
# (clformer demo: trains on a built-in toy language pair, then translates).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
# configured as tools/test.sh configures (warnings as errors), so that the
# test run after this one reuses the build instead of rebuilding everything
tools/build.sh -DCLFORMER_WERROR=ON
echo
./build/clformer devices
echo
./build/clformer demo
