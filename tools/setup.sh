#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the main job
# (clformer demo: trains on a built-in toy language pair, then translates).
set -euo pipefail
cd "$(dirname "$0")/.."
# Intel's OpenCL CPU runtime too (pinned PyPI packages in a venv under
# ~/.cache/clformer): the test suite runs on it beside PoCL and Oclgrind
tools/install-deps.sh --with-intel-opencl
# configured as tools/test.sh configures (warnings as errors), so that the
# test run after this one reuses the build instead of rebuilding everything
tools/build.sh -DCLFORMER_WERROR=ON
echo
./build/clformer devices
echo
./build/clformer demo
