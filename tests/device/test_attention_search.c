/* The attention tile search (runtime/ops/attention_search.h) on the device
 * under test with GPU layouts forced and CLFORMER_ATTENTION_TUNING=search,
 * on a small shape: the first tiled call at a head size times the tile
 * sets (its own launches left out of the context's counts) and keeps the
 * choice in a file, which a later context reads instead of timing; a file
 * for other tiles, another header or a choice that sums in another order
 * is timed again; the tiles chosen give the profile's
 * numbers bit for bit on shapes the search did not time (made to win here,
 * where the times would often keep the profile's); a set that rounds
 * otherwise is left out; "off", and "auto" on a CPU device, do not search;
 * an unknown word is refused with the words allowed. */
#include "harness.h"
#include "attention_search.h"
#include "attention_trial.h"
#include "buffer.h"
#include "fileio.h"
#include "ops.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { HEAD_DIM = 8 };

static char cache_dir[128];

static cf_attention_search_limits test_limits(void)
{
    cf_attention_search_limits l = cf_attention_search_get_limits();
    l.batch = 1, l.heads = 2, l.len = harness_is_slow() ? 24 : 64, l.calls = 1;
    l.prefer_variations = false, l.vary_split = false;
    l.max_variations = 1; /* each set is a program to compile: seconds each on PoCL */
    return l;
}

static void set_limits(bool prefer, bool vary_split)
{
    cf_attention_search_limits l = test_limits();
    l.prefer_variations = prefer, l.vary_split = vary_split;
    cf_attention_search_set_limits(&l);
}

/* The one file the search wrote in the cache directory, into path. */
static bool search_file(char *path, size_t cap)
{
    bool found = false;
    DIR *d = opendir(cache_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "attention-", 10)) {
            snprintf(path, cap, "%s/%s", cache_dir, e->d_name);
            found = true;
        }
    if (d) closedir(d);
    return found;
}

static void remove_cache_dir(void) { harness_remove_tree(cache_dir); }

/* One cache directory for the suite, so that each tile set's program is
 * compiled once; each test starts without the search's file. */
static int setup(void **state)
{
    (void)state;
    if (!cache_dir[0]) {
        snprintf(cache_dir, sizeof cache_dir, "/tmp/clformer-attention-search-XXXXXX");
        if (!mkdtemp(cache_dir)) return -1;
        atexit(remove_cache_dir);
    }
    set_limits(false, false);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char path[512];
    while (search_file(path, sizeof path)) unlink(path);
    set_limits(false, false);
    return 0;
}

/* A context on the device under test with GPU layouts (the tiled kernels),
 * the tuning word and the test's cache directory. */
static cf_ctx *open_ctx(const char *tuning, const char *profile)
{
    clformer_context_params p;
    assert_ok(clformer_context_params_from_env(&p));
    p.device = hctx()->info.selector;
    p.profile = profile;
    p.attention_tuning = tuning;
    p.cache = true;
    p.cache_dir = cache_dir;
    clformer_context *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&p, &ctx));
    return ctx;
}

/* The tiles the context's launches take at HEAD_DIM (searching on first
 * use, as the first launch does). */
static cf_attention_tiles tiles_of(cf_ctx *ctx)
{
    assert_true(cf_attention_tiled(ctx, HEAD_DIM));
    char spec[128];
    const char *how = clformer_context_attention_tiles(ctx, HEAD_DIM, spec, sizeof spec);
    assert_non_null(how);
    cf_attention_tiles t;
    assert_true(cf_attention_tiles_parse(spec, HEAD_DIM, &t));
    return t;
}

static cf_attention_tiles profile_tiles(cf_ctx *ctx)
{
    cf_attention_tiles t;
    const char *why;
    assert_true(cf_attention_tiles_for(&ctx->device_profile, HEAD_DIM, &t, &why));
    return t;
}

static void search_times_once_then_reads_its_file(void **state)
{
    (void)state;
    cf_ctx *ctx = open_ctx("search", "gpu-layouts");
    assert_true(ctx->attention_search.on);
    const cf_attention_tiles chosen = tiles_of(ctx);
    /* the search's own launches are not the ops': checks and bench count those */
    assert_int_equal(ctx->kernel_launches[CF_K_FLASH_TILED_FORWARD], 0);
    assert_int_equal(ctx->kernel_launches[CF_K_FLASH_TILED_BACKWARD_DQ], 0);
    assert_int_equal(ctx->kernel_launches[CF_K_FLASH_TILED_BACKWARD_DKV], 0);
    assert_int_equal(ctx->attention_search.timed, 1);
    assert_int_equal(ctx->attention_search.from_file, 0);
    assert_int_equal(ctx->attention_search.rejected, 0);
    assert_string_equal(clformer_context_attention_tiles(ctx, HEAD_DIM, NULL, 0), "searched");
    tiles_of(ctx); /* remembered: no second search */
    assert_int_equal(ctx->attention_search.timed, 1);
    clformer_context_free(ctx);

    char path[512], text[4096];
    assert_true(search_file(path, sizeof path));
    harness_slurp(path, text, sizeof text);
    assert_non_null(strstr(text, "clformer attention tile search, format 1\n"));
    assert_non_null(strstr(text, "\nhead 8 profile fwd="));

    cf_ctx *again = open_ctx("search", "gpu-layouts");
    const cf_attention_tiles read = tiles_of(again);
    assert_int_equal(again->attention_search.timed, 0);
    assert_int_equal(again->attention_search.from_file, 1);
    assert_memory_equal(&read, &chosen, sizeof read);
    clformer_context_free(again);
}

/* Writes the search's file as `header` and one line for head size 32 with
 * these profile and chosen tiles; whether a context then times that head
 * size again (rather than reading the line). */
static bool timed_again_with(const char *path, const char *header, const cf_attention_tiles *profile,
                             const cf_attention_tiles *chosen)
{
    char p[128], c[128], text[4096 + 512];
    cf_attention_tiles_spec(profile, p, sizeof p);
    cf_attention_tiles_spec(chosen, c, sizeof c);
    snprintf(text, sizeof text, "%shead 8 profile %s chosen %s ms\n", header, p, c);
    harness_write_file(path, text);
    cf_ctx *ctx = open_ctx("search", "gpu-layouts");
    tiles_of(ctx);
    const bool timed = ctx->attention_search.timed == 1;
    assert_int_equal(ctx->attention_search.timed + ctx->attention_search.from_file, 1);
    clformer_context_free(ctx);
    return timed;
}

/* A file whose line is for other profile tiles, whose choice sums in
 * another order, or whose header is another's: timed again; the same line
 * with the profile's tiles and a choice of rows alone is read. */
static void unusable_files_are_timed_again(void **state)
{
    (void)state;
    cf_ctx *ctx = open_ctx("search", "gpu-layouts");
    tiles_of(ctx);
    const cf_attention_tiles profile = profile_tiles(ctx);
    clformer_context_free(ctx);
    char path[512], header[4096];
    assert_true(search_file(path, sizeof path));
    harness_slurp(path, header, sizeof header);
    char *line = strstr(header, "\nhead 8 ");
    assert_non_null(line);
    line[1] = '\0'; /* the header alone */

    cf_attention_tiles rows = profile;
    rows.fwd_rows /= 2;
    assert_false(timed_again_with(path, header, &profile, &rows));
    cf_attention_tiles other = profile;
    other.fwd_rows *= 2; /* tiles another profile had */
    assert_true(timed_again_with(path, header, &other, &other));
    other = profile;
    other.fwd_split *= 2; /* not the profile's sums */
    other.fwd_rows /= 2;
    assert_true(timed_again_with(path, header, &profile, &other));
    char *driver = strstr(header, "\ndriver "); /* another driver's file */
    assert_non_null(driver);
    driver[1] = 'D';
    assert_true(timed_again_with(path, header, &profile, &profile));
}

/* O, dQ, dK and dV of a trial call on a shape the search did not time. */
static float *trial_outputs(cf_ctx *ctx, bool causal, size_t *n)
{
    cf_attention_trial t;
    assert_ok(cf_attention_trial_make(ctx, 2, 3, 45, HEAD_DIM, causal, 7, &t));
    assert_ok(cf_attention_trial_forward(ctx, &t));
    assert_ok(cf_attention_trial_backward(ctx, &t));
    float *out = hmalloc(4 * t.n * sizeof *out);
    static const int bufs[4] = {CF_TRIAL_O, CF_TRIAL_DQ, CF_TRIAL_DK, CF_TRIAL_DV};
    for (int i = 0; i < 4; i++) assert_ok(cf_download(ctx, t.buf[bufs[i]], 0, out + i * t.n, t.n));
    *n = 4 * t.n;
    cf_attention_trial_free(ctx, &t);
    return out;
}

static void chosen_tiles_give_the_profiles_bits(void **state)
{
    (void)state;
    set_limits(true, false);
    cf_ctx *ctx = open_ctx("search", "gpu-layouts");
    cf_ctx *plain = open_ctx("off", "gpu-layouts");
    assert_false(plain->attention_search.on);
    const cf_attention_tiles chosen = tiles_of(ctx), profile = profile_tiles(ctx);
    /* each kernel took a variation: the test holds tiles that are not the profile's */
    assert_true(chosen.fwd_rows != profile.fwd_rows || chosen.fwd_per_item != profile.fwd_per_item);
    assert_true(chosen.dq_rows != profile.dq_rows || chosen.dq_per_item != profile.dq_per_item);
    assert_true(chosen.dkv_keys != profile.dkv_keys || chosen.dkv_per_item != profile.dkv_per_item);
    const cf_attention_tiles off = tiles_of(plain);
    assert_memory_equal(&off, &profile, sizeof off);
    assert_string_equal(clformer_context_attention_tiles(plain, HEAD_DIM, NULL, 0), "profile");
    for (int causal = 0; causal < 2; causal++) {
        size_t n, m;
        float *got = trial_outputs(ctx, causal, &n), *want = trial_outputs(plain, causal, &m);
        assert_int_equal(n, m);
        if (memcmp(got, want, n * sizeof *got))
            fail_msg("the searched tiles changed the numbers (causal %d)", causal);
        free(got), free(want);
    }
    clformer_context_free(plain);
    clformer_context_free(ctx);
}

static void a_set_that_rounds_otherwise_is_left_out(void **state)
{
    (void)state;
    set_limits(false, true);
    cf_ctx *ctx = open_ctx("search", "gpu-layouts");
    const cf_attention_tiles chosen = tiles_of(ctx), profile = profile_tiles(ctx);
    /* the split sets, one a kernel at most: a left-out forward must not
     * leave its outputs to the backward's sets */
    assert_true(ctx->attention_search.rejected >= 1);
    assert_true(ctx->attention_search.rejected <= 3);
    assert_int_equal(chosen.fwd_split, profile.fwd_split);
    assert_int_equal(chosen.dq_split, profile.dq_split);
    assert_int_equal(chosen.dkv_split, profile.dkv_split);
    clformer_context_free(ctx);
}

static void off_and_auto_on_cpu_devices_do_not_search(void **state)
{
    (void)state;
    cf_ctx *ctx = open_ctx("off", "gpu-layouts");
    tiles_of(ctx);
    assert_int_equal(ctx->attention_search.timed, 0);
    clformer_context_free(ctx);
    ctx = open_ctx(NULL, "gpu-layouts");
    assert_int_equal(ctx->attention_search.on, ctx->device_profile.kind == CLFORMER_KIND_GPU);
    clformer_context_free(ctx);
    char path[512];
    assert_false(search_file(path, sizeof path));

    clformer_context_params p;
    assert_ok(clformer_context_params_from_env(&p));
    p.device = hctx()->info.selector;
    p.attention_tuning = "fastest";
    clformer_context *bad = NULL;
    assert_int_equal(clformer_context_create_with_params(&p, &bad), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_null(bad);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_ATTENTION_TUNING"));
    assert_non_null(strstr(clformer_last_error(), "auto"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(search_times_once_then_reads_its_file, setup, teardown),
    cmocka_unit_test_setup_teardown(unusable_files_are_timed_again, setup, teardown),
    cmocka_unit_test_setup_teardown(chosen_tiles_give_the_profiles_bits, setup, teardown),
    cmocka_unit_test_setup_teardown(a_set_that_rounds_otherwise_is_left_out, setup, teardown),
    cmocka_unit_test_setup_teardown(off_and_auto_on_cpu_devices_do_not_search, setup, teardown),
};

HARNESS_DEVICE_MAIN("attention_search", tests)
