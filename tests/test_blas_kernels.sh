#!/usr/bin/env bash
# `clformer devices` says which OpenBLAS kernels the host GEMM runs
# (tools/cli/blas_kernels.h): the ones OPENBLAS_CORETYPE names when it is set,
# and, when they are Prescott's (SSE3) on a CPU with AVX2 and FMA, the
# OPENBLAS_CORETYPE that selects faster ones; no such hint when those run.
# Usage: tests/test_blas_kernels.sh CLFORMER (with a PoCL device listed)
set -uo pipefail
bin=${1:?usage: test_blas_kernels.sh CLFORMER}
fail() { echo "FAIL: $*"; exit 1; }
gemm_line() { "$bin" devices | grep -m1 'gemm      host: OpenBLAS'; }

unset OPENBLAS_CORETYPE
line=$(OPENBLAS_CORETYPE=Prescott gemm_line) || fail "clformer devices printed no host GEMM line"
[[ "$line" == *"its Prescott kernels"* ]] || fail "OPENBLAS_CORETYPE=Prescott: $line"
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
if [[ "$flags" == *" avx2 "* && "$flags" == *" fma "* ]]; then
    [[ "$line" == *"; OPENBLAS_CORETYPE="*" selects this CPU's faster ones"* ]] \
        || fail "Prescott's kernels on an AVX2 CPU without a hint: $line"
    line=$(OPENBLAS_CORETYPE=Haswell gemm_line)
    [[ "$line" == *"its Haswell kernels)"* ]] || fail "OPENBLAS_CORETYPE=Haswell: $line"
else
    [[ "$line" != *"OPENBLAS_CORETYPE="* ]] || fail "a hint on a CPU without AVX2: $line"
fi
echo "$(gemm_line)"
