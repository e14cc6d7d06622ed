#!/usr/bin/env bash
# The README's second command: build with warnings as errors and run the whole
# CTest suite on every device in CLFORMER_TEST_DEVICES (default: PoCL pthread,
# PoCL basic and Oclgrind). Extra arguments go to ctest (e.g. -R gemm).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake_args=(-DCLFORMER_WERROR=ON)
if [[ -n "${CLFORMER_TEST_DEVICES:-}" ]]; then
    cmake_args+=("-DCLFORMER_TEST_DEVICES=${CLFORMER_TEST_DEVICES}")
else
    # forget a list an earlier run left in the CMake cache: back to the default
    cmake_args+=(-UCLFORMER_TEST_DEVICES)
fi
tools/build.sh "${cmake_args[@]}"
ctest --test-dir build --output-on-failure --no-tests=error -j "$(nproc)" "$@"
