/* OpenBLAS's kernels: blas_kernels.h says why the command reports them. */
#include "blas_kernels.h"

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
    if (strcasecmp(blas_kernels_name(), "prescott")) return NULL;
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
