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
# Intel's runtime compiles CLBlast's kernels and trains the demo for minutes
# each (label intel_heavy): left out unless asked for, and said so
heavy=()
if [[ "${CLFORMER_TEST_INTEL_HEAVY:-0}" != 1 ]]; then
    n=$(ctest --test-dir build -N -L intel_heavy 2>/dev/null | sed -n 's/^Total Tests: //p')
    if [[ "${n:-0}" -gt 0 ]]; then
        echo "test.sh: leaving out the $n intel_heavy tests (minutes each on Intel's compiler);" \
             "CLFORMER_TEST_INTEL_HEAVY=1 tools/test.sh runs them too"
        heavy=(-LE intel_heavy)
    fi
fi
# The Python package's tests need the venv tools/python-venv.sh makes; the C
# suite never does: without it they are left out, and said so
venv=$(tools/python-venv.sh --print-dir)
if [[ ! -x "$venv/bin/python" ]]; then
    echo "test.sh: no Python venv at $venv: the Python package's tests (label python) are" \
         "left out; tools/python-venv.sh makes it"
fi
# The register proxy compiles for GPUs with clang 14 and libclc-14
# (tools/install-deps.sh installs both): without them its tests are left out
if [[ ! -f /usr/lib/clc/nvptx64--nvidiacl.bc ]]; then
    echo "test.sh: no libclc at /usr/lib/clc: the register proxy's tests (gpu_proxy_registers*)" \
         "are left out; tools/install-deps.sh installs libclc-14"
fi
ctest --test-dir build --output-on-failure --no-tests=error -j "$(nproc)" "${heavy[@]}" "$@"
