/* OpenBLAS's kernels: blas_kernels.h says why the command reports them. */
#include "blas_kernels.h"
#include "clformer_util.h"

#include <stdio.h>

#if defined(CLFORMER_HAVE_OPENBLAS) && defined(__x86_64__)
#include <cblas.h>
#include <stddef.h>
#include <strings.h>

const char *blas_kernels_name(void)
{
    const char *core = openblas_get_corename();
    return core ? core : "?";
}

const char *blas_kernels_better(void)
{
    if (strcasecmp(blas_kernels_name(), "prescott") || clformer_host_gemm_avx512()) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}
#else
const char *blas_kernels_name(void)
{
    return "?";
}

const char *blas_kernels_better(void)
{
    return NULL;
}
#endif

void blas_kernels_describe(char *out, size_t size)
{
    const char *better = blas_kernels_better();
    const char *dots = clformer_host_gemm_dots() ? "; decoding steps: AVX-512 dot products" : "";
    if (clformer_host_gemm_avx512())
        snprintf(out, size, "clformer's AVX-512 sgemm (in place of OpenBLAS's %s kernels%s)",
                 blas_kernels_name(), dots);
    else
        snprintf(out, size, "OpenBLAS sgemm (its %s kernels%s%s%s%s)", blas_kernels_name(),
                 better ? "; OPENBLAS_CORETYPE=" : "", better ? better : "",
                 better ? " selects this CPU's faster ones" : "", dots);
}
