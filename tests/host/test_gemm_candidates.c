/* The GEMM search's candidate sets (runtime/device/gemm_candidates.c) and
 * its size classes, over made-up device records (no OpenCL device needed):
 * every set is complete, in CLBlast's name order (the text the search
 * compares with CLBlast's own), keeps CLBlast's tuner constraints and fits
 * a current GPU; sets that break a constraint or do not fit are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gemm_candidates.h"
#include "gemm_search_record.h"

/* A device like an NVIDIA H100: 1024 work-items, 48 KiB of local memory. */
static clformer_device_info gpu(size_t max_wg, uint64_t local)
{
    clformer_device_info i;
    memset(&i, 0, sizeof i);
    i.max_work_group_size = max_wg;
    i.local_mem_bytes = local;
    return i;
}

static void every_set_is_whole_ordered_and_fits(void **state)
{
    (void)state;
    const clformer_device_info d = gpu(1024, 48 * 1024);
    for (int direct = 0; direct < 2; direct++) {
        size_t n = 0;
        const cf_gemm_candidate *c = cf_gemm_candidates_all(direct, &n);
        assert_true(n >= 3);
        for (size_t i = 0; i < n; i++) {
            char why[256] = "";
            if (!cf_gemm_candidate_fits(&d, direct, c[i].params, why, sizeof why))
                fail_msg("%s set '%s' (%s): %s", direct ? "XgemmDirect" : "Xgemm", c[i].params,
                         c[i].origin, why);
            /* names in strcmp order, as clblast::RetrieveParameters lists them */
            char prev[32] = "";
            for (const char *p = c[i].params; *p;) {
                char name[32];
                size_t len = strcspn(p, "=");
                assert_true(len < sizeof name);
                memcpy(name, p, len);
                name[len] = '\0';
                if (strcmp(prev, name) >= 0) fail_msg("'%s': %s after %s", c[i].params, name, prev);
                snprintf(prev, sizeof prev, "%s", name);
                p += strcspn(p, " ");
                p += strspn(p, " ");
            }
        }
    }
}

/* What CLBlast 1.5.3 gives an H100 (the proxy's h100-own) keeps the same rules. */
static void nvidia_fallback_sets_fit(void **state)
{
    (void)state;
    const clformer_device_info d = gpu(1024, 48 * 1024);
    char why[256] = "";
    if (!cf_gemm_candidate_fits(&d, false, cf_gemm_nvidia_fallback_xgemm.params, why, sizeof why) ||
        !cf_gemm_candidate_fits(&d, true, cf_gemm_nvidia_fallback_direct.params, why, sizeof why))
        fail_msg("NVIDIA's fallback sets: %s", why);
    size_t n = 0;
    assert_non_null(cf_gemm_candidates_of("nvidia", false, &n));
    assert_true(n >= 5);
}

static void broken_or_oversized_sets_are_refused(void **state)
{
    (void)state;
    const clformer_device_info d = gpu(256, 32 * 1024);
    char why[256];
    /* MWG 96 is no multiple of MDIMC * VWM = 64 */
    assert_false(cf_gemm_candidate_fits(&d, false,
                                        "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=16 MDIMC=16 MWG=96 "
                                        "NDIMB=16 NDIMC=16 NWG=128 SA=1 SB=1 STRM=1 STRN=1 VWM=4 "
                                        "VWN=4",
                                        why, sizeof why));
    assert_non_null(strstr(why, "constraints"));
    /* 32 x 8 work-items on a device of 128 */
    const clformer_device_info small = gpu(128, 32 * 1024);
    assert_false(cf_gemm_candidate_fits(&small, false,
                                        "GEMMK=0 KREG=1 KWG=32 KWI=2 MDIMA=32 MDIMC=32 MWG=128 "
                                        "NDIMB=8 NDIMC=8 NWG=64 SA=0 SB=1 STRM=1 STRN=1 VWM=4 "
                                        "VWN=4",
                                        why, sizeof why));
    assert_non_null(strstr(why, "work-groups"));
    /* 2 x 32 x 128 floats of local memory: 32 KiB + 32 KiB */
    assert_false(cf_gemm_candidate_fits(&d, false,
                                        "GEMMK=0 KREG=1 KWG=64 KWI=2 MDIMA=16 MDIMC=16 MWG=128 "
                                        "NDIMB=16 NDIMC=16 NWG=128 SA=1 SB=1 STRM=1 STRN=1 VWM=4 "
                                        "VWN=4",
                                        why, sizeof why));
    assert_non_null(strstr(why, "local memory"));
    /* a parameter missing */
    assert_false(cf_gemm_candidate_fits(&d, true, "KWID=2 MDIMAD=8", why, sizeof why));
    assert_non_null(strstr(why, "has no"));
    assert_true(cf_gemm_candidate_fits(&d, true,
                                       "KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=8 NDIMCD=8 PADA=1 PADB=1 "
                                       "VWMD=1 VWND=1 WGD=32",
                                       why, sizeof why));
}

/* Powers of two and 1.5 times them; a class holds the sizes up to it. */
static void size_classes(void **state)
{
    (void)state;
    const size_t x[] = {1, 2, 3, 4, 5, 6, 7, 9, 64, 65, 96, 97, 1000, 1024, 1025, 4096, 16384};
    const uint32_t want[] = {1, 2, 3, 4, 6, 6, 8, 12, 64, 96, 96, 128, 1024, 1024, 1536, 4096,
                             16384};
    for (size_t i = 0; i < sizeof x / sizeof *x; i++)
        if (cf_gs_size_class(x[i]) != want[i])
            fail_msg("class of %zu: %u, want %u", x[i], cf_gs_size_class(x[i]), want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_set_is_whole_ordered_and_fits),
        cmocka_unit_test(nvidia_fallback_sets_fit),
        cmocka_unit_test(broken_or_oversized_sets_are_refused),
        cmocka_unit_test(size_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
