/* The tuned CLBlast parameter sets give right results on every device: each
 * table entry is forced onto the device under test (whether it matches or
 * not), then odd-sized products run through CLBlast's direct kernel and,
 * with the switch point forced to 1, through the indirect kernel with its
 * pad/transpose helpers - the gemm op's check (conf_gemm.c) reaches only
 * the direct one.
 * Also: CLFORMER_GEMM_TUNING's file form, and that bad files are ignored. */
#include "harness.h"
#include "gemm.h"
#include "gemm_check.h"
#include "gemm_tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const gemm_shape odd_shapes[] = {{1, 1, 1}, {7, 61, 93}, {61, 93, 257}, {93, 257, 7},
                                        {257, 7, 61}, {65, 129, 33}};
static const gemm_shape small_shapes[] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 13}, {13, 3, 5}};

/* Work-items of one CLBlast kernel's parameter set, worked out here from
 * CLBlast's parameter names rather than by the runtime's own helper: the
 * product of the kernel's two local sizes (0: it launches none). */
static size_t set_work_items(const cf_clblast_params *set)
{
    static const char *const locals[][3] = {
        {"Xgemm", "MDIMC=", "NDIMC="},      {"XgemmDirect", "MDIMCD=", "NDIMCD="},
        {"Copy", "COPY_DIMX=", "COPY_DIMY="}, {"Pad", "PAD_DIMX=", "PAD_DIMY="},
        {"Transpose", "TRA_DIM=", "TRA_DIM="}, {"Padtranspose", "PADTRA_TILE=", "PADTRA_TILE="},
    };
    for (size_t k = 0; k < sizeof locals / sizeof *locals; k++) {
        if (strcmp(set->kernel, locals[k][0]) != 0) continue;
        size_t product = 1;
        for (int axis = 1; axis <= 2; axis++) {
            /* the name at the start of a token: "MDIMC=" must not match "MDIMCD=" */
            const char *p = set->params;
            size_t len = strlen(locals[k][axis]);
            while ((p = strstr(p, locals[k][axis])) && p != set->params && p[-1] != ' ') p += len;
            if (!p) fail_msg("%s set without %s: %s", set->kernel, locals[k][axis], set->params);
            product *= strtoul(p + len, NULL, 10);
        }
        return product;
    }
    return 0;
}

/* How many of an entry's sets this device can launch. */
static size_t sets_that_fit(const cf_gemm_tuning *t)
{
    size_t fit = 0;
    for (size_t s = 0; s < t->n_sets; s++)
        fit += set_work_items(&t->sets[s]) <= hctx()->info.max_work_group_size;
    return fit;
}

static void run_all_shapes(uint64_t seed)
{
    const gemm_shape *shapes = harness_is_slow() ? small_shapes : odd_shapes;
    size_t n = harness_is_slow() ? sizeof small_shapes / sizeof *small_shapes
                                 : sizeof odd_shapes / sizeof *odd_shapes;
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < n; i++)
            gemm_check_one(t & 1, t & 2, shapes[i], 0.75f, t & 1 ? 1.0f : 0.0f,
                           seed + 10 * i + (uint64_t)t);
    const gemm_shape bs = harness_is_slow() ? (gemm_shape){5, 7, 3} : (gemm_shape){33, 61, 64};
    for (int t = 0; t < 4; t++)
        gemm_check_batched(true, t & 1, t & 2, bs, 3, seed + 100 + (uint64_t)t);
}

/* Direct kernel everywhere, then indirect everywhere (UseDirectKernel is
 * m*n*k < XGEMM_MIN_INDIRECT_SIZE^3). */
static void run_direct_and_indirect(uint64_t seed)
{
    assert_ok(cf_clblast_override(hctx(), "GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE=100000"));
    run_all_shapes(seed);
    assert_ok(cf_clblast_override(hctx(), "GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE=1"));
    run_all_shapes(seed + 1000);
}

static void table_entries_are_right_on_this_device(void **state)
{
    (void)state;
    size_t n = 0;
    const cf_gemm_tuning *table = cf_gemm_tuning_table(&n);
    for (size_t i = 0; i < n; i++) {
        /* every set whose work-groups fit the device must be accepted: a
         * rejected one means the table no longer fits this CLBlast
         * (parameter names changed); the others must be refused */
        size_t fit = sets_that_fit(&table[i]);
        if (cf_gemm_tuning_apply(hctx(), &table[i], CF_LOG_INFO) != fit)
            fail_msg("%zu of the %zu parameter sets of '%s' fit this device, but CLBlast did not "
                     "take exactly those",
                     fit, table[i].n_sets, table[i].label);
        run_direct_and_indirect(1000 * (i + 1));
    }
}

/* A set wider than the device allows is refused when it is applied, with a
 * message naming the kernel and both sizes, instead of failing later GEMMs. */
static void too_wide_sets_are_refused(void **state)
{
    (void)state;
    size_t max = hctx()->info.max_work_group_size, tile = 1;
    while (tile * tile <= max) tile *= 2;
    char params[96];
    snprintf(params, sizeof params, "PADTRA_PAD=1 PADTRA_TILE=%zu PADTRA_WPT=1", tile);
    assert_int_equal(cf_clblast_params_work_group("Padtranspose", params), tile * tile);
    assert_int_equal(cf_clblast_override(hctx(), "Padtranspose", params),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "Padtranspose parameters need work-groups"));
    cf_clear_error();
    assert_int_equal(cf_clblast_params_work_group("GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE=64"), 0);
    assert_int_equal(cf_clblast_params_work_group("Xgemm", "MDIMC=8 NDIMC=16"), 128);
}

static char *write_temp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/clformer-gemm-tuning-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* The gemm_tuning setting: a file's sets are applied (and give right results),
 * a malformed or missing file applies nothing, 0 turns tuning off, unset
 * applies the table entry that matches the device, if any. */
static void tuning_file_is_read_and_bad_files_ignored(void **state)
{
    (void)state;
    /* the table's XgemmDirect set, in force since the first test: CLBlast's
     * programs with it are compiled already (each new set costs its GEMM
     * programs again, a minute of PoCL's compiler on a cold cache); what is
     * tested here is the file */
    const char *good = write_temp("# comment line\n\n"
                                  "XgemmDirect KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=8 NDIMCD=8 PADA=1 "
                                  "PADB=1 VWMD=1 VWND=2 WGD=32  # trailing comment\n"
                                  "GemmRoutine XGEMM_MIN_INDIRECT_SIZE=100000\n");
    assert_int_equal(cf_gemm_tuning_init(hctx(), good), 2);
    unlink(good);
    run_all_shapes(7000);

    const char *bad = write_temp("GemmRoutine XGEMM_MIN_INDIRECT_SIZE=1\nXgemm MWG=sixty-four\n");
    assert_int_equal(cf_gemm_tuning_init(hctx(), bad), 0); /* not even the good first line */
    unlink(bad);
    assert_int_equal(cf_gemm_tuning_init(hctx(), "/nonexistent/gemm_tuning.txt"), 0);
    assert_int_equal(cf_gemm_tuning_init(hctx(), "0"), 0);

    const cf_gemm_tuning *t = cf_gemm_tuning_find(&hctx()->info);
    assert_int_equal(cf_gemm_tuning_init(hctx(), NULL), t ? sets_that_fit(t) : 0);
    run_all_shapes(8000);
}

/* The unset setting on a device each table entry matches: the device under
 * test takes the entry's identity (platform, vendor, name, driver), so the
 * entry for an AMD EPYC is exercised on an Intel machine too, and with
 * POCL_MAX_WORK_GROUP_SIZE=64 (test_gemm_tuning@pocl_wg64) some of its sets
 * are too wide: exactly those that fit must be applied, no more, no fewer.
 * CLFORMER_TEST_TUNING_DEVICE="platform|vendor|name|driver" adds one
 * identity of the caller's choice (e.g. a machine whose run failed). */
static void matching_entry_applies_the_sets_that_fit(void **state)
{
    (void)state;
    clformer_device_info saved = hctx()->info;
    size_t n = 0;
    const cf_gemm_tuning *table = cf_gemm_tuning_table(&n);
    for (size_t i = 0; i <= n; i++) {
        clformer_device_info *d = &hctx()->info;
        if (i < n) {
            snprintf(d->platform, sizeof d->platform, "%s", table[i].platform);
            snprintf(d->vendor, sizeof d->vendor, "%s", table[i].vendor);
            snprintf(d->name, sizeof d->name, "%sAMD EPYC 9R14 (test)", table[i].device_prefix);
            snprintf(d->driver_version, sizeof d->driver_version, "%s1+test",
                     table[i].driver_prefix);
        } else {
            const char *given = getenv("CLFORMER_TEST_TUNING_DEVICE");
            if (!given || !*given) break;
            char f[4][128] = {{0}};
            const char *p = given;
            for (int k = 0; k < 4 && p; k++) {
                const char *bar = strchr(p, '|');
                size_t len = bar ? (size_t)(bar - p) : strlen(p);
                snprintf(f[k], sizeof f[k], "%.*s", (int)(len < 127 ? len : 127), p);
                p = bar ? bar + 1 : NULL;
            }
            snprintf(d->platform, sizeof d->platform, "%s", f[0]);
            snprintf(d->vendor, sizeof d->vendor, "%s", f[1]);
            snprintf(d->name, sizeof d->name, "%s", f[2]);
            snprintf(d->driver_version, sizeof d->driver_version, "%s", f[3]);
        }
        const cf_gemm_tuning *t = cf_gemm_tuning_find(d);
        if (i < n && t != &table[i]) fail_msg("table entry '%s' does not match its own keys",
                                              table[i].label);
        size_t want = t ? sets_that_fit(t) : 0, got = cf_gemm_tuning_init(hctx(), NULL);
        hctx()->info = saved;
        if (got != want)
            fail_msg("'%s': %zu of its sets fit work-groups of %zu, but %zu were applied",
                     t ? t->label : "(no entry)", want, saved.max_work_group_size, got);
    }
    hctx()->info = saved;
    /* back to this device's own setting for the tests after this one */
    cf_gemm_tuning_init(hctx(), NULL);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(table_entries_are_right_on_this_device),
    cmocka_unit_test(too_wide_sets_are_refused),
    cmocka_unit_test(tuning_file_is_read_and_bad_files_ignored),
    cmocka_unit_test(matching_entry_applies_the_sets_that_fit),
};
int main(void)
{
    /* The table's sets are forced onto every device, Oclgrind included, so
     * that it checks their memory accesses; give it PoCL's limits, which they
     * were tuned for (read when Oclgrind starts). Its own are smaller: 1024
     * work-items (the Padtranspose set uses 64 x 64) and 32 KiB of local
     * memory, which it counts per program, not per kernel (CLBlast's
     * XgemmDirect program holds four kernels). */
    setenv("OCLGRIND_MAX_WGSIZE", "4096", 0);
    setenv("OCLGRIND_LOCAL_MEM_SIZE", "1048576", 0);
    return harness_run_device_suite("gemm_tuning", tests, sizeof tests / sizeof tests[0]);
}
