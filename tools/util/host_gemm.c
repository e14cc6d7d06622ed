/* clformer_host_gemm_avx512, clformer_host_gemm_dots (clformer_util.h):
 * `clformer devices` and `bench` say which products the host GEMM provider
 * runs. */
#include "clformer_util.h"
#include "gemm_avx512.h"
#include "gemm_dots.h"

bool clformer_host_gemm_avx512(void) { return cf_gemm_avx512_wanted(); }

bool clformer_host_gemm_dots(void) { return cf_gemm_dots_wanted(); }
