/* Runtime basics on each device: the program cache (memory, disk, written
 * when the context is freed, corrupt entries, CLFORMER_CACHE=0), compiling
 * several programs at once (cf_programs_prepare), context params (cache directory, log callback,
 * selector errors), buffers and their errors, deterministic
 * reductions. */
#include "buffer.h"
#include "harness.h"
#include "launch.h"
#include "program.h"
#include "reduce.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cache_dir[256];

static void fresh_cache_dir(void)
{
    snprintf(cache_dir, sizeof cache_dir, "/tmp/clformer-cache-test-XXXXXX");
    assert_non_null(mkdtemp(cache_dir));
    setenv("CLFORMER_CACHE_DIR", cache_dir, 1);
    unsetenv("CLFORMER_CACHE");
}

static int count_cache_files(char *first, size_t cap)
{
    DIR *d = opendir(cache_dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".bin")) {
            if (n++ == 0 && first) snprintf(first, cap, "%s/%s", cache_dir, e->d_name);
        }
    closedir(d);
    return n;
}

static void remove_cache_dir(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0) print_message("could not remove %s\n", cache_dir);
}

/* Opens a context on the device under test, fetches one kernel, returns stats. */
static clformer_program_stats load_reduce_kernel(void)
{
    cf_ctx *ctx;
    assert_ok(cf_context_create(hctx()->info.selector, false, &ctx));
    cl_kernel k;
    assert_ok(cf_kernel(ctx, "reduce", NULL, "reduce_partial", &k));
    assert_ok(cf_kernel(ctx, "reduce", NULL, "reduce_final", &k)); /* same program: memory hit */
    clformer_program_stats s = clformer_context_program_stats(ctx);
    clformer_context_free(ctx);
    return s;
}

static bool device_gives_binaries(void)
{
    cl_kernel k;
    assert_ok(cf_kernel(hctx(), "reduce", NULL, "reduce_partial", &k));
    cl_program p;
    clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof p, &p, NULL);
    size_t size = 0;
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    return size > 0;
}

static void program_cache_miss_then_hit(void **state)
{
    (void)state;
    fresh_cache_dir();
    clformer_program_stats s = load_reduce_kernel();
    assert_int_equal(s.builds, 1);
    assert_int_equal(s.disk_hits, 0);
    assert_int_equal(s.memory_hits, 1);
    if (!device_gives_binaries()) {
        /* Nothing can be cached on such a driver: it must rebuild, not fail. */
        print_message("note: %s returns no program binaries; disk cache unused\n",
                      hctx()->info.name);
        assert_int_equal(count_cache_files(NULL, 0), 0);
        assert_int_equal(load_reduce_kernel().builds, 1);
        remove_cache_dir();
        return;
    }
    assert_int_equal(count_cache_files(NULL, 0), 1);
    s = load_reduce_kernel();
    assert_int_equal(s.builds, 0);
    assert_int_equal(s.disk_hits, 1);
    remove_cache_dir();
}

/* Asking PoCL for a binary compiles every kernel of the program again, so
 * entries are written when the context is freed, never during the run
 * (program_store.c): none while the context lives, all after. */
static void cache_entries_are_written_when_the_context_is_freed(void **state)
{
    (void)state;
    if (!device_gives_binaries()) skip(); /* nothing is ever written there */
    fresh_cache_dir();
    cf_ctx *ctx;
    assert_ok(cf_context_create(hctx()->info.selector, false, &ctx));
    cl_kernel k;
    assert_ok(cf_kernel(ctx, "reduce", NULL, "reduce_partial", &k));
    assert_ok(cf_kernel(ctx, "tensor", NULL, "fill_u32", &k));
    const size_t deferred = cf_cache_deferred_count(ctx);
    const int during = count_cache_files(NULL, 0);
    clformer_context_free(ctx);
    assert_int_equal(deferred, 2);
    assert_int_equal(during, 0);
    assert_int_equal(count_cache_files(NULL, 0), 2);
    remove_cache_dir();
}

/* Progress as the library reports it, and from which thread. */
typedef struct {
    size_t calls, last_done, last_total;
    bool in_order, on_caller_thread;
    pthread_t caller;
} progress_record;

static void record_progress(const char *what, size_t done, size_t total, void *user)
{
    progress_record *r = user;
    if (strcmp(what, "compiling kernels") != 0) return;
    r->in_order = r->in_order && done == (r->calls ? r->last_done + 1 : 0) && done <= total;
    r->on_caller_thread = r->on_caller_thread && pthread_equal(pthread_self(), r->caller);
    r->calls++;
    r->last_done = done, r->last_total = total;
}

static cf_ctx *context_with_progress(progress_record *r, bool cache)
{
    *r = (progress_record){.in_order = true, .on_caller_thread = true, .caller = pthread_self()};
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = hctx()->info.selector;
    params.profile = clformer_context_profile(hctx())->forced; /* CLFORMER_PROFILE's */
    params.cache = cache;
    params.cache_dir = cache_dir;
    params.progress = record_progress;
    params.progress_user = r;
    cf_ctx *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&params, &ctx));
    return ctx;
}

/* Several programs on two threads: each built once, progress 0..n in order
 * from the caller's thread, then every kernel comes from memory. */
static void prepare_builds_each_program_once_with_progress(void **state)
{
    (void)state;
    fresh_cache_dir();
    progress_record r;
    cf_ctx *ctx = context_with_progress(&r, true);
    const clformer_program_stats before = clformer_context_program_stats(ctx);
    const char *names[] = {"reduce", "loss", "reduce", "layernorm"};
    assert_ok(cf_programs_prepare(ctx, names, 4, 2));
    clformer_program_stats s = clformer_context_program_stats(ctx);
    assert_int_equal(s.builds - before.builds, 3);
    assert_int_equal(r.calls, 4); /* 0, 1, 2, 3 of 3 */
    assert_int_equal(r.last_done, 3);
    assert_int_equal(r.last_total, 3);
    assert_true(r.in_order);
    assert_true(r.on_caller_thread);
    cl_kernel k;
    assert_ok(cf_kernel(ctx, "loss", NULL, "cross_entropy", &k));
    assert_ok(cf_kernel(ctx, "layernorm", NULL, "layernorm_forward", &k));
    assert_int_equal(clformer_context_program_stats(ctx).builds, s.builds);
    /* all held: nothing to do, nothing reported */
    assert_ok(cf_programs_prepare(ctx, names, 4, 2));
    assert_int_equal(r.calls, 4);
    assert_int_equal(clformer_context_program_stats(ctx).builds, s.builds);
    /* a name that is no program: named in the error, the others still built */
    const char *bad[] = {"nosuchprogram", "adam"};
    assert_int_equal(cf_programs_prepare(ctx, bad, 2, 2), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "nosuchprogram"));
    char options[1024];
    cf_program_options(ctx, NULL, options, sizeof options);
    assert_true(cf_program_loaded(ctx, "adam", options));
    clformer_context_free(ctx);
    remove_cache_dir();
}

/* What a training step prepares: the programs of the ops' kernels, once,
 * the per-row fused attention's only for a batch that takes that path (the
 * tiled kernels of GPU profiles build per head size on first use), and not
 * translation's (decode, beam: built when a translation runs). */
static void prepare_ops_builds_the_training_programs_only(void **state)
{
    (void)state;
    /* which programs is the same on every device; the PoCL variants cover it
     * (on Oclgrind it would only compile nine programs once more) */
    if (harness_is_slow()) skip();
    fresh_cache_dir();
    progress_record r;
    cf_ctx *ctx = context_with_progress(&r, false);
    assert_ok(cf_programs_prepare_ops(ctx, false));
    char options[1024];
    cf_program_options(ctx, NULL, options, sizeof options);
    static const char *const trained[] = {"activation", "adam",      "attention", "dropout",
                                          "embedding",  "layernorm", "loss",      "reduce",
                                          "tensor"};
    for (size_t i = 0; i < sizeof trained / sizeof *trained; i++)
        assert_true(cf_program_loaded(ctx, trained[i], options));
    assert_false(cf_program_loaded(ctx, "flash_attention", options));
    assert_false(cf_program_loaded(ctx, "decode", options));
    assert_false(cf_program_loaded(ctx, "beam", options));
    const size_t calls = r.calls;
    assert_true(calls >= 2 && r.last_done == r.last_total);
    assert_ok(cf_programs_prepare_ops(ctx, false)); /* once per context */
    assert_int_equal(r.calls, calls);
    assert_ok(cf_programs_prepare_ops(ctx, true));
    if (clformer_context_profile(ctx)->tiled_attention) { /* nothing more to build */
        assert_false(cf_program_loaded(ctx, "flash_attention", options));
        assert_int_equal(r.calls, calls);
    } else { /* the per-row fused path: its one program more */
        assert_true(cf_program_loaded(ctx, "flash_attention", options));
        assert_int_equal(r.calls, calls + 2);
        assert_int_equal(r.last_total, 1);
    }
    clformer_context_free(ctx);
    remove_cache_dir();
}

/* Sums on one context whose programs were compiled concurrently and on one
 * that compiled them one by one on first use: the same bits. */
static void concurrent_and_lazy_builds_compute_the_same(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* simulators compile on one thread: nothing to compare */
    const size_t n = 4099;
    float *x = hmalloc(n * 4);
    ref_rng rng = ref_rng_new(7);
    ref_fill_uniform(&rng, x, NULL, n, -1, 1);
    float got[2][2];
    for (int concurrent = 0; concurrent < 2; concurrent++) {
        fresh_cache_dir();
        progress_record r;
        cf_ctx *ctx = context_with_progress(&r, false); /* built here, not loaded */
        if (concurrent) assert_ok(cf_programs_prepare_ops(ctx, false));
        cl_mem in, out;
        assert_ok(cf_buffer_alloc(ctx, n, "x", &in));
        assert_ok(cf_buffer_alloc(ctx, 2, "sums", &out));
        assert_ok(cf_upload(ctx, in, 0, x, n));
        assert_ok(cf_reduce_sum(ctx, out, 0, in, 0, n, false, false));
        assert_ok(cf_reduce_sum(ctx, out, 1, in, 0, n, true, false));
        assert_ok(cf_download(ctx, out, 0, got[concurrent], 2));
        assert_int_equal(clformer_context_program_stats(ctx).builds > 0, true);
        cf_buffer_free(ctx, in);
        cf_buffer_free(ctx, out);
        clformer_context_free(ctx);
        remove_cache_dir();
    }
    assert_memory_equal(got[0], got[1], sizeof got[0]);
    free(x);
}

static void corrupt_cache_entry_is_rebuilt(void **state)
{
    (void)state;
    if (!device_gives_binaries()) skip(); /* covered by the test above: nothing to corrupt */
    fresh_cache_dir();
    load_reduce_kernel();
    char path[512];
    assert_int_equal(count_cache_files(path, sizeof path), 1);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, -40, SEEK_END); /* inside the binary: the checksum no longer matches */
    fputs("garbage garbage garbage", fp);
    fclose(fp);
    clformer_program_stats s = load_reduce_kernel();
    assert_int_equal(s.disk_rejects, 1);
    assert_int_equal(s.builds, 1);
    s = load_reduce_kernel(); /* the rebuilt entry replaced the corrupt one */
    assert_int_equal(s.disk_hits, 1);
    assert_int_equal(s.builds, 0);

    /* a binary length near 2^64 (length + 8 wraps to 0): rejected, not read */
    fp = fopen(path, "r+b");
    assert_non_null(fp);
    const long magic_len = (long)strlen("CLFORMER-BIN-1\n"); /* program_cache.c's MAGIC */
    uint64_t key_len = 0;
    assert_int_equal(fseek(fp, magic_len, SEEK_SET), 0);
    assert_int_equal(fread(&key_len, 8, 1, fp), 1);
    assert_int_equal(fseek(fp, magic_len + 8 + (long)key_len, SEEK_SET), 0);
    const uint64_t huge = UINT64_MAX - 7;
    assert_int_equal(fwrite(&huge, 8, 1, fp), 1);
    fclose(fp);
    s = load_reduce_kernel();
    assert_int_equal(s.disk_rejects, 1);
    assert_int_equal(s.builds, 1);

    fp = fopen(path, "wb"); /* truncated to nothing */
    fclose(fp);
    s = load_reduce_kernel();
    assert_int_equal(s.disk_rejects, 1);
    assert_int_equal(s.builds, 1);
    remove_cache_dir();
}

static void cache_off_builds_every_time(void **state)
{
    (void)state;
    fresh_cache_dir();
    setenv("CLFORMER_CACHE", "0", 1);
    assert_int_equal(load_reduce_kernel().builds, 1);
    assert_int_equal(load_reduce_kernel().builds, 1);
    assert_int_equal(count_cache_files(NULL, 0), 0);
    unsetenv("CLFORMER_CACHE");
    remove_cache_dir();
}

static void kernel_dir_override_and_build_errors(void **state)
{
    (void)state;
    char dir[] = "/tmp/clformer-kdir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/common.h", dir);
    FILE *fp = fopen(path, "w");
    fputs("#define BROKEN_MACRO this is not OpenCL C\n", fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/reduce.cl", dir);
    fp = fopen(path, "w");
    fputs("#include \"common.h\"\nkernel void reduce_partial(global float *x) { x[0] = 1.0f; BROKEN_MACRO\n", fp);
    fclose(fp);
    setenv("CLFORMER_KERNEL_DIR", dir, 1);
    setenv("CLFORMER_CACHE", "0", 1);
    cf_ctx *ctx;
    clformer_status st = cf_context_create(hctx()->info.selector, false, &ctx);
    cl_kernel k;
    char build_error[8192] = "", missing_error[1024] = "";
    clformer_status build_st = CLFORMER_OK, missing_st = CLFORMER_OK;
    /* Oclgrind's API checker reports the deliberately failing clBuildProgram
     * as an error, so the broken-source half runs on the other devices. */
    const bool try_broken = !harness_is_slow();
    if (st == CLFORMER_OK) {
        if (try_broken) build_st = cf_kernel(ctx, "reduce", NULL, "reduce_partial", &k);
        snprintf(build_error, sizeof build_error, "%s", clformer_last_error());
        missing_st = cf_kernel(ctx, "nosuchprogram", NULL, "x", &k);
        snprintf(missing_error, sizeof missing_error, "%s", clformer_last_error());
        clformer_context_free(ctx);
    }
    unsetenv("CLFORMER_KERNEL_DIR"); /* before any assertion, so later tests are unaffected */
    unsetenv("CLFORMER_CACHE");
    assert_ok(st);
    /* The broken file must fail to build, with the program named and its log. */
    if (try_broken) {
        assert_int_equal(build_st, CLFORMER_ERR_BUILD);
        assert_non_null(strstr(build_error, "cl/reduce.cl"));
        assert_non_null(strstr(build_error, "Build log"));
    }
    assert_int_equal(missing_st, CLFORMER_ERR_IO);
    assert_non_null(strstr(missing_error, "nosuchprogram.cl"));
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

typedef struct {
    int info, debug;
    bool device_line, program_line;
} log_record;

static void record_log(clformer_log_level level, const char *message, void *user)
{
    log_record *r = user;
    if (level == CLFORMER_LOG_INFO) r->info++;
    if (level == CLFORMER_LOG_DEBUG) r->debug++;
    if (!strncmp(message, "device ", 7)) r->device_line = true;
    if (strstr(message, "program reduce")) r->program_line = true;
}

/* clformer_context_params alone decide: the environment says no cache and
 * errors only, the params a cache directory of their own and every message
 * to a callback. */
static void params_set_cache_dir_and_log_callback_not_the_environment(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/clformer-params-cache-XXXXXX");
    assert_non_null(mkdtemp(cache_dir));
    setenv("CLFORMER_CACHE", "0", 1);
    setenv("CLFORMER_LOG", "error", 1);
    log_record record = {0};
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = hctx()->info.selector;
    params.cache_dir = cache_dir;
    params.log_level = CLFORMER_LOG_DEBUG;
    params.log_callback = record_log;
    params.log_user = &record;
    cf_ctx *ctx = NULL;
    clformer_status st = clformer_context_create_with_params(&params, &ctx);
    cl_kernel k;
    if (st == CLFORMER_OK) st = cf_kernel(ctx, "reduce", NULL, "reduce_partial", &k);
    clformer_context_free(ctx);
    unsetenv("CLFORMER_CACHE"); /* before any assertion, so later tests are unaffected */
    unsetenv("CLFORMER_LOG");
    assert_ok(st);
    assert_int_equal(count_cache_files(NULL, 0), device_gives_binaries() ? 1 : 0);
    assert_true(record.device_line);  /* info: the device opened */
    assert_true(record.program_line); /* debug: how the program was obtained */
    assert_true(record.info >= 1 && record.debug >= 1);

    /* cache off in the params: nothing more is written */
    params.cache = false;
    params.log_callback = NULL;
    params.log_level = CLFORMER_LOG_WARN;
    int before = count_cache_files(NULL, 0);
    assert_ok(clformer_context_create_with_params(&params, &ctx));
    assert_ok(cf_kernel(ctx, "reduce", NULL, "reduce_final", &k));
    assert_int_equal(clformer_context_program_stats(ctx).builds, 1);
    clformer_context_free(ctx);
    assert_int_equal(count_cache_files(NULL, 0), before);
    remove_cache_dir();
}

/* A selector in the params that matches nothing fails and lists the devices;
 * a log level out of range is refused. */
static void params_with_unknown_selector_list_the_devices(void **state)
{
    (void)state;
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = "no-such-device-xyz";
    cf_ctx *ctx = NULL;
    assert_int_equal(clformer_context_create_with_params(&params, &ctx), CLFORMER_ERR_NO_DEVICE);
    assert_null(ctx);
    assert_non_null(strstr(clformer_last_error(), "no-such-device-xyz"));
    assert_non_null(strstr(clformer_last_error(), hctx()->info.name));
    params.device = hctx()->info.selector;
    params.log_level = (clformer_log_level)7;
    assert_int_equal(clformer_context_create_with_params(&params, &ctx),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "log_level"));
}

static void buffer_roundtrip_offsets_and_fill(void **state)
{
    (void)state;
    float host[100], back[100];
    for (int i = 0; i < 100; i++) host[i] = (float)i * 0.5f - 7.0f;
    hbuf b = hbuf_from_f32(host, 100, 9);
    hbuf_read(b, back);
    assert_memory_equal(host, back, sizeof host);
    /* runs of 16 an item on CPU devices: 37 and 21 end part-way through one;
     * the copy (from 60 to 0) writes over the fill's first 11 */
    assert_ok(cf_fill(hctx(), b.mem, b.off + 10, 37, 3.25f));
    assert_ok(cf_copy(hctx(), b.mem, b.off + 60, b.mem, b.off + 0, 21));
    hbuf_read(b, back);
    for (int i = 0; i < 100; i++) {
        float want = i < 21 ? host[60 + i] : i < 47 && i >= 10 ? 3.25f : host[i];
        assert_true(back[i] == want);
    }
    hbuf_check_canary(b);
    hbuf_free(b);
}

static void oversized_allocation_names_sizes(void **state)
{
    (void)state;
    cl_mem m = NULL;
    size_t too_many = (size_t)(hctx()->info.max_alloc_bytes / 4) + 1;
    clformer_status st = cf_buffer_alloc(hctx(), too_many, "the giant tensor", &m);
    assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
    assert_null(m);
    const char *msg = clformer_last_error();
    assert_non_null(strstr(msg, "the giant tensor"));
    assert_non_null(strstr(msg, "smaller batch"));
    /* one truth: the limit in the words and figures `clformer devices` prints
     * (tools/cli/cmd_devices.c: "%.0f MiB global, ... %.0f MiB max allocation") */
    char limit[64], global[64];
    snprintf(limit, sizeof limit, "%.0f MiB max allocation",
             (double)hctx()->info.max_alloc_bytes / 1048576.0);
    snprintf(global, sizeof global, "%.0f MiB global",
             (double)hctx()->info.global_mem_bytes / 1048576.0);
    if (!strstr(msg, limit) || !strstr(msg, global))
        fail_msg("'%s' lacks '%s' or '%s'", msg, limit, global);
}

/* Sum and sum of squares of odd lengths, repeated for identical bits. */
static void reduce_sum_is_exact_enough_and_repeatable(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 7, 61, 257, 4099, 100003};
    size_t count = harness_is_slow() ? 3 : 6;
    for (size_t s = 0; s < count; s++) {
        size_t n = sizes[s];
        ref_rng r = ref_rng_new(n);
        float *x = hmalloc(n * 4);
        ref_fill_uniform(&r, x, NULL, n, -1, 1);
        double sum = 0, sq = 0, mag = 0;
        for (size_t i = 0; i < n; i++) sum += x[i], sq += (double)x[i] * x[i], mag += fabs(x[i]);
        hbuf dx = hbuf_from_f32(x, n, 3), out = hbuf_zeros(3, 1);
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off, dx.mem, dx.off, n, false, false));
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off + 1, dx.mem, dx.off, n, true, false));
        assert_ok(cf_fill(hctx(), out.mem, out.off + 2, 1, 10.0f));
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off + 2, dx.mem, dx.off, n, false, true));
        float got[3], again[3];
        hbuf_read(out, got);
        assert_true(fabs(got[0] - sum) <= 1e-5 * mag + 1e-6);
        assert_true(fabs(got[1] - sq) <= 1e-5 * sq + 1e-6);
        assert_true(fabs(got[2] - (sum + 10.0)) <= 1e-5 * (mag + 10) + 1e-6);
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off, dx.mem, dx.off, n, false, false));
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off + 1, dx.mem, dx.off, n, true, false));
        assert_ok(cf_fill(hctx(), out.mem, out.off + 2, 1, 10.0f));
        assert_ok(cf_reduce_sum(hctx(), out.mem, out.off + 2, dx.mem, dx.off, n, false, true));
        hbuf_read(out, again);
        assert_memory_equal(got, again, sizeof got);
        hbuf_check_canary(dx);
        hbuf_check_canary(out);
        hbuf_free(dx), hbuf_free(out);
        free(x);
    }
}

static void colsum_matches_reference_and_accumulates(void **state)
{
    (void)state;
    const size_t shapes[][2] = {{1, 1}, {7, 61}, {93, 7}, {257, 93}, {1000, 33}};
    size_t count = harness_is_slow() ? 3 : 5;
    for (size_t s = 0; s < count; s++) {
        size_t rows = shapes[s][0], cols = shapes[s][1], ld = cols + 3;
        ref_rng r = ref_rng_new(rows * 31 + cols);
        float *x = hmalloc(rows * ld * 4), *init = hmalloc(cols * 4), *got = hmalloc(cols * 4);
        ref_fill_uniform(&r, x, NULL, rows * ld, -1, 1);
        ref_fill_uniform(&r, init, NULL, cols, -1, 1);
        double *want = hmalloc(cols * 8), *sums = hmalloc(cols * 8);
        for (size_t c = 0; c < cols; c++)
            for (size_t i = 0; i < rows; i++) sums[c] += x[i * ld + c];
        /* the bits every device gives: blocks of rows summed in row order in
         * float, the block sums added in block order (two launches on GPUs,
         * one on CPU devices) */
        float *ordered = hmalloc(cols * 4);
        const size_t rpb = cf_colsum_rows_per_block(rows);
        for (size_t c = 0; c < cols; c++) {
            float total = 0.0f;
            for (size_t r0 = 0; r0 < rows; r0 += rpb) {
                float block = 0.0f;
                for (size_t i = r0; i < rows && i < r0 + rpb; i++) block += x[i * ld + c];
                total += block;
            }
            ordered[c] = total;
        }
        hbuf dx = hbuf_from_f32(x, rows * ld, 2), out = hbuf_from_f32(init, cols, 4);
        for (int pass = 1; pass <= 2; pass++) { /* the second pass proves += */
            assert_ok(cf_colsum(hctx(), out.mem, out.off, dx.mem, dx.off, rows, cols, ld, true));
            for (size_t c = 0; c < cols; c++) want[c] = init[c] + pass * sums[c];
            hbuf_read(out, got);
            assert_grad_close(got, want, cols);
        }
        assert_ok(cf_colsum(hctx(), out.mem, out.off, dx.mem, dx.off, rows, cols, ld, false));
        hbuf_read(out, got);
        assert_grad_close(got, sums, cols); /* overwrite mode ignores the old contents */
        assert_memory_equal(got, ordered, cols * 4);
        hbuf_check_canary(dx);
        hbuf_check_canary(out);
        hbuf_free(dx), hbuf_free(out);
        free(x), free(init), free(got), free(want), free(sums), free(ordered);
    }
}

/* A launch whose arguments differ from the kernel's signature in cl/ is
 * refused before anything is enqueued: too few, and one of the wrong kind
 * (fill_u32 takes buffer, ulong, ulong, uint), each naming the kernel. */
static void launch_with_wrong_argument_kinds_is_refused(void **state)
{
    (void)state;
    assert_string_equal(cf_kernel_kinds[CF_K_FILL_U32], "MuuU");
    assert_int_equal(cf_kernel_find("tensor", "fill_u32"), CF_K_FILL_U32);
    assert_int_equal(cf_kernel_find("tensor", "no_such_kernel"), CF_K_COUNT);
    hbuf b = hbuf_zeros(16, 4);
    cl_kernel k;
    assert_ok(cf_kernel_get(hctx(), CF_K_FILL_U32, &k));
    size_t global = 16, local = 16;
    const uint64_t before = hctx()->kernel_launches[CF_K_FILL_U32];
    assert_int_equal(CF_LAUNCH(hctx(), "fill", 64, k, 1, &global, &local, CF_MEM(b.mem),
                               CF_U64(b.off), CF_U64(16)),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "fill_u32: launched with 3 arguments"));
    assert_int_equal(CF_LAUNCH(hctx(), "fill", 64, k, 1, &global, &local, CF_MEM(b.mem),
                               CF_U64(b.off), CF_U64(16), CF_F32(1.0f)),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "argument 3 is a float in the launch but a "
                                                  "uint in cl/tensor.cl"));
    assert_int_equal(hctx()->kernel_launches[CF_K_FILL_U32], before);
    assert_ok(CF_LAUNCH(hctx(), "fill", 64, k, 1, &global, &local, CF_MEM(b.mem), CF_U64(b.off),
                        CF_U64(16), CF_U32(7)));
    assert_int_equal(hctx()->kernel_launches[CF_K_FILL_U32], before + 1);
    uint32_t got[16];
    hbuf_read(b, got);
    for (int i = 0; i < 16; i++) assert_int_equal(got[i], 7);
    hbuf_check_canary(b);
    hbuf_free(b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(program_cache_miss_then_hit),
    cmocka_unit_test(cache_entries_are_written_when_the_context_is_freed),
    cmocka_unit_test(prepare_builds_each_program_once_with_progress),
    cmocka_unit_test(prepare_ops_builds_the_training_programs_only),
    cmocka_unit_test(concurrent_and_lazy_builds_compute_the_same),
    cmocka_unit_test(corrupt_cache_entry_is_rebuilt),
    cmocka_unit_test(cache_off_builds_every_time),
    cmocka_unit_test(kernel_dir_override_and_build_errors),
    cmocka_unit_test(params_set_cache_dir_and_log_callback_not_the_environment),
    cmocka_unit_test(params_with_unknown_selector_list_the_devices),
    cmocka_unit_test(buffer_roundtrip_offsets_and_fill),
    cmocka_unit_test(oversized_allocation_names_sizes),
    cmocka_unit_test(reduce_sum_is_exact_enough_and_repeatable),
    cmocka_unit_test(colsum_matches_reference_and_accumulates),
    cmocka_unit_test(launch_with_wrong_argument_kinds_is_refused),
};
HARNESS_DEVICE_MAIN("runtime", tests)
