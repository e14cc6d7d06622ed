#!/usr/bin/env bash
# `clformer devices` says which product the host GEMM runs
# (tools/cli/blas_kernels.h): with CLFORMER_HOST_GEMM=openblas, the OpenBLAS
# kernels OPENBLAS_CORETYPE names when it is set, and, when they are
# Prescott's (SSE3) on a CPU with AVX2 and FMA, the OPENBLAS_CORETYPE that
# selects faster ones; no such hint when those run. By default, on a CPU with
# AVX-512F, clformer's own product in place of Prescott's kernels (no hint)
# and OpenBLAS's where it runs its AVX-512 ones, with decoding steps' dot
# products on a CPU with AVX-512F and VL (none with openblas); a bad CLFORMER_HOST_GEMM
# stops a product with a one-line error.
# Usage: tests/test_blas_kernels.sh CLFORMER (with a PoCL device listed)
set -uo pipefail
bin=${1:?usage: test_blas_kernels.sh CLFORMER}
fail() { echo "FAIL: $*"; exit 1; }
gemm_line() { "$bin" devices | grep -m1 'gemm      host: '; }

unset OPENBLAS_CORETYPE CLFORMER_HOST_GEMM
line=$(CLFORMER_HOST_GEMM=openblas OPENBLAS_CORETYPE=Prescott gemm_line) \
    || fail "clformer devices printed no host GEMM line"
[[ "$line" == *"OpenBLAS sgemm (its Prescott kernels"* ]] || fail "OPENBLAS_CORETYPE=Prescott: $line"
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
if [[ "$flags" == *" avx2 "* && "$flags" == *" fma "* ]]; then
    [[ "$line" == *"; OPENBLAS_CORETYPE="*" selects this CPU's faster ones"* ]] \
        || fail "Prescott's kernels on an AVX2 CPU without a hint: $line"
    line=$(CLFORMER_HOST_GEMM=openblas OPENBLAS_CORETYPE=Haswell gemm_line)
    [[ "$line" == *"its Haswell kernels)"* ]] || fail "OPENBLAS_CORETYPE=Haswell: $line"
else
    [[ "$line" != *"OPENBLAS_CORETYPE="* ]] || fail "a hint on a CPU without AVX2: $line"
fi
[[ "$line" != *"dot products"* ]] || fail "CLFORMER_HOST_GEMM=openblas with dot products: $line"
# decoding steps' dot products (runtime/device/gemm_dots.h) need AVX-512F and VL
dots=""
[[ "$flags" == *" avx512f "* && "$flags" == *" avx512vl "* ]] && dots="; decoding steps: AVX-512 dot products"
if [[ "$flags" == *" avx512f "* ]]; then
    line=$(OPENBLAS_CORETYPE=Prescott gemm_line)
    [[ "$line" == *"clformer's AVX-512 sgemm (in place of OpenBLAS's Prescott kernels$dots)"* &&
       "$line" != *"OPENBLAS_CORETYPE="* ]] || fail "Prescott's kernels on an AVX-512 CPU: $line"
    line=$(OPENBLAS_CORETYPE=SkylakeX gemm_line)
    [[ "$line" == *"OpenBLAS sgemm (its SkylakeX kernels$dots)"* ]] || fail "OPENBLAS_CORETYPE=SkylakeX: $line"
    line=$(OPENBLAS_CORETYPE=SkylakeX CLFORMER_HOST_GEMM=own gemm_line)
    [[ "$line" == *"clformer's AVX-512 sgemm"*"$dots)"* ]] || fail "CLFORMER_HOST_GEMM=own: $line"
fi
out=$(CLFORMER_HOST_GEMM=fast "$bin" bench --config tiny --steps 1 --warmup 0 2>&1) \
    && fail "CLFORMER_HOST_GEMM=fast was accepted"
[[ "$out" == *"CLFORMER_HOST_GEMM=fast is not a choice; use auto, own or openblas"* ]] \
    || fail "CLFORMER_HOST_GEMM=fast: $out"
echo "$(gemm_line)"
