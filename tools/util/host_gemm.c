/* clformer_host_gemm_avx512 (clformer_util.h): `clformer devices` and
 * `bench` say which product the host GEMM provider runs. */
#include "clformer_util.h"
#include "gemm_avx512.h"

bool clformer_host_gemm_avx512(void) { return cf_gemm_avx512_wanted(); }
