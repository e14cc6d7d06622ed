/* The per-shape GEMM search (runtime/device/gemm_search.h) on the device
 * under test, with CLFORMER_GEMM_TUNING=search and a few candidate sets
 * given here: a shape is timed on first use and its times kept in a file,
 * which a later process reads instead of timing; results stay within the
 * GEMM tolerances and equal, bit for bit, those without the search; a set
 * that rounds differently is left out; "off" and "table" do not search; a
 * damaged file, or a spent budget, costs a search and nothing else.
 * clformer's tiled kernel is timed beside the sets where the provider was
 * chosen by the rule, takes the calls of the shapes it wins with the same
 * bits, and is left out where it rounds differently. */
#include "harness.h"
#include "buffer.h"
#include "clblast_current.h"
#include "clformer_check.h"
#include "conf_gemm.h"
#include "gemm_check.h"
#include "fileio.h"
#include "gemm.h"
#include "gemm_search.h"
#include "gemm_tuning.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Candidates besides CLBlast's own: the PoCL table's Xgemm set, and for
 * one test a GEMMK 1 set (which sums in another order on PoCL) and a small
 * direct set; all launch at most 64 work-items. Each set is a CLBlast
 * program to compile per routine, so the tests take few. */
#define GEMMK1_SET                                                                              \
    "GEMMK=1 KREG=4 KWG=1 KWI=1 MDIMA=4 MDIMC=4 MWG=64 NDIMB=8 NDIMC=8 NWG=32 SA=0 SB=0 "       \
    "STRM=0 STRN=0 VWM=4 VWN=4"
static const char *const xgemm_sets[] = {
    "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=16 MDIMC=8 MWG=128 NDIMB=32 NDIMC=8 NWG=64 SA=0 SB=0 "
    "STRM=1 STRN=0 VWM=8 VWN=2",
    GEMMK1_SET,
};
static const char *const direct_sets[] = {
    "KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=8 NDIMCD=8 PADA=1 PADB=1 VWMD=1 VWND=1 WGD=16",
};

typedef struct {
    bool ta, tb;
    size_t m, n, k, batch;
} shape;
static const shape shapes[] = {{false, true, 96, 80, 72, 1}, {false, false, 32, 24, 40, 3}};
static const shape small_shapes[] = {{false, true, 24, 16, 20, 1}, {false, false, 8, 12, 16, 3}};
#define N_SHAPES 2

static const shape *test_shapes(void) { return harness_is_slow() ? small_shapes : shapes; }

static char cache_dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/clformer-gemm-search-XXXXXX");
    if (!mkdtemp(cache_dir)) return -1;
    const cf_gemm_search_limits l = {.max_xgemm = 3, .max_direct = 2, .min_fma = 1,
                                     .budget_seconds = 1e9, .class_seconds = 1e9,
                                     .seconds_per_set = 0.001, .xgemm_sets = xgemm_sets,
                                     .direct_sets = direct_sets, .n_xgemm_sets = 1,
                                     .n_direct_sets = 0};
    cf_gemm_search_set_limits(&l);
    /* no record from an earlier test: each starts from CLBlast's own sets */
    cf_gemm_release_caches();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cf_gemm_release_caches();
    DIR *d = opendir(cache_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(cache_dir);
    return 0;
}

/* A context on the device under test with the provider `gemm`, the
 * tuning word, cl/ from kernel_dir (NULL: the built-in sources), and kernel
 * profiling where asked. */
static cf_ctx *open_ctx_with(const char *gemm, const char *tuning, const char *kernel_dir,
                             bool profiling)
{
    clformer_context_params p;
    assert_ok(clformer_context_params_from_env(&p));
    p.device = hctx()->info.selector;
    p.gemm = gemm;
    p.gemm_tuning = tuning;
    p.kernel_dir = kernel_dir;
    p.profiling = profiling;
    p.cache = true;
    p.cache_dir = cache_dir;
    clformer_context *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&p, &ctx));
    return ctx;
}

static cf_ctx *open_ctx(const char *tuning)
{
    return open_ctx_with("clblast", tuning, NULL, false);
}

/* C = 0.75 op(A) op(B) + C on fixed random operands, C read back into `out`
 * (m * n * batch floats, tightly packed). */
static void run_shape(cf_ctx *ctx, const shape *s, float *out)
{
    gemm_run_random(ctx, s->ta, s->tb, s->m, s->n, s->k, s->batch, 0.75f, 1.0f, 42 + s->m, out);
}

/* The first `n` shapes twice each (the second call of a shape makes the
 * choice), and the results against the same products without the search. */
static void run_and_compare(cf_ctx *ctx, size_t n)
{
    cf_ctx *plain = open_ctx("off");
    for (size_t i = 0; i < n; i++) {
        const shape *s = &test_shapes()[i];
        const size_t nc = s->m * s->n * s->batch;
        float *got = malloc(nc * sizeof *got), *again = malloc(nc * sizeof *again),
              *want = malloc(nc * sizeof *want);
        assert_true(got && again && want);
        run_shape(ctx, s, got);
        run_shape(ctx, s, again);
        run_shape(plain, s, want);
        if (memcmp(got, want, nc * sizeof *got) || memcmp(again, want, nc * sizeof *got))
            fail_msg("%zux%zux%zu x%zu: the search changed the numbers", s->m, s->n, s->k,
                     s->batch);
        free(got), free(again), free(want);
    }
    /* and within the GEMM tolerances, through the shared check */
    const conf_gemm_case c = {false, true, test_shapes()[0].m, test_shapes()[0].n,
                              test_shapes()[0].k, 1.0f, 1.0f, 0, 0, 0, 5};
    assert_conformance_case(conf_gemm_run(ctx, &c, harness_conf_sink, &failures));
    clformer_context_free(plain);
}

static cf_gemm_search_stats stats_of(cf_ctx *ctx)
{
    cf_gemm_search_stats s;
    assert_true(cf_gemm_search_stats_for(ctx, &s));
    return s;
}

static size_t shape_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) n += strncmp(line, "shape ", 6) == 0;
    fclose(f);
    return n;
}

static void times_then_reads_the_file(void **state)
{
    (void)state;
    cf_ctx *ctx = open_ctx("search");
    assert_true(ctx->gemm_search);
    run_and_compare(ctx, N_SHAPES);
    cf_gemm_search_stats s = stats_of(ctx);
    assert_int_equal(s.shapes, N_SHAPES);
    assert_int_equal(s.timed, N_SHAPES);
    assert_int_equal(s.from_cache, 0);
    assert_int_equal(shape_lines(s.cache_path), N_SHAPES);
    clformer_context_free(ctx);
    cf_gemm_release_caches(); /* as a new process: no record */

    ctx = open_ctx("search");
    run_and_compare(ctx, N_SHAPES);
    s = stats_of(ctx);
    assert_int_equal(s.timed, 0);
    assert_int_equal(s.from_cache, N_SHAPES);
    clformer_context_free(ctx);
}

/* off and table never search; auto searches where the profile says so. */
static void only_search_and_auto_search(void **state)
{
    (void)state;
    const char *words[] = {"off", "0", "table"};
    for (size_t i = 0; i < 3; i++) {
        cf_ctx *ctx = open_ctx(words[i]);
        assert_false(ctx->gemm_search);
        clformer_context_free(ctx);
    }
    cf_ctx *ctx = open_ctx("auto");
    assert_int_equal(ctx->gemm_search, ctx->device_profile.gemm_search);
    clformer_context_free(ctx);
    assert_int_equal(cf_gemm_tuning_mode_of(NULL), CF_GEMM_TUNING_AUTO);
    assert_int_equal(cf_gemm_tuning_mode_of("1"), CF_GEMM_TUNING_AUTO);
    assert_int_equal(cf_gemm_tuning_mode_of("search"), CF_GEMM_TUNING_SEARCH);
    assert_int_equal(cf_gemm_tuning_mode_of("tuned.txt"), CF_GEMM_TUNING_FILE);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Keeps the file's header and replaces its shape lines by `lines`. */
static void damage(const char *path, const char *lines)
{
    char *text = NULL;
    size_t size = 0;
    assert_ok(cf_read_file(path, &text, &size));
    char *first = strstr(text, "\nshape ");
    assert_non_null(first);
    first[1] = '\0';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fputs(lines, f);
    fclose(f);
    free(text);
}

/* A damaged line, a line whose key does not fit its shape, a file of
 * another kind: each shape is timed again, and the file is whole again. */
static void damaged_files_are_timed_again(void **state)
{
    (void)state;
    cf_ctx *ctx = open_ctx("search");
    run_and_compare(ctx, 1);
    char path[1024];
    snprintf(path, sizeof path, "%s", stats_of(ctx).cache_path);
    clformer_context_free(ctx);

    const char *bad_lines[] = {
        "shape S NT 96 80 72 1 96 80 72 1 : 1.0 2.0\n",             /* too few times */
        "shape S NT 7 80 72 1 96 80 72 1 : 1 1 1 1 1\n",            /* key of another shape */
        "shape S NT 96 80 72 1 96 80 72 1 : 1 nan 1 1 1\nshape X\n", /* not a number */
        "\x01\x02 not a line\n",
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof *bad_lines; i++) {
        cf_gemm_release_caches();
        damage(path, bad_lines[i]);
        ctx = open_ctx("search");
        run_and_compare(ctx, 1);
        assert_int_equal(stats_of(ctx).timed, 1);
        clformer_context_free(ctx);
        assert_int_equal(shape_lines(path), 1);
    }
    cf_gemm_release_caches();
    write_text(path, "not a clformer file\n");
    ctx = open_ctx("search");
    run_and_compare(ctx, 1);
    assert_int_equal(stats_of(ctx).timed, 1);
    clformer_context_free(ctx);
    assert_int_equal(shape_lines(path), 1);
}

/* Whether CLBlast's Xgemm with `set` (every product indirect) gives the
 * numbers of CLBlast's own sets on the first shape. CLBlast is left with
 * its own sets again (it keeps overrides for the whole process). */
static bool rounds_like_own(cf_ctx *ctx, const char *set)
{
    const shape *s = &test_shapes()[0];
    const size_t nc = s->m * s->n * s->batch;
    float *own = malloc(nc * sizeof *own), *other = malloc(nc * sizeof *other);
    assert_true(own && other);
    char xgemm[512], routine[512];
    assert_ok(cf_clblast_current(ctx->device, "Xgemm", xgemm, sizeof xgemm));
    assert_ok(cf_clblast_current(ctx->device, "GemmRoutine", routine, sizeof routine));
    assert_ok(cf_clblast_override(ctx, "GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE=1"));
    run_shape(ctx, s, own);
    assert_ok(cf_clblast_override(ctx, "Xgemm", set));
    run_shape(ctx, s, other);
    assert_ok(cf_clblast_override(ctx, "Xgemm", xgemm));
    assert_ok(cf_clblast_override(ctx, "GemmRoutine", routine));
    const bool same = memcmp(own, other, nc * sizeof *own) == 0;
    free(own), free(other);
    return same;
}

/* The search leaves out exactly the sets that round differently. */
static void sets_that_round_differently_are_left_out(void **state)
{
    (void)state;
    cf_gemm_search_limits l = cf_gemm_search_get_limits();
    l.n_xgemm_sets = 2;
    l.n_direct_sets = 1;
    cf_gemm_search_set_limits(&l);
    cf_ctx *probe = open_ctx("off");
    const bool gemmk1_same = rounds_like_own(probe, GEMMK1_SET);
    clformer_context_free(probe);

    cf_ctx *ctx = open_ctx("search");
    run_and_compare(ctx, 1);
    const cf_gemm_search_stats s = stats_of(ctx);
    print_message("GEMMK 1 set %s CLBlast's own; %zu sets left out\n",
                  gemmk1_same ? "rounds like" : "rounds differently from", s.rejected);
    if (!gemmk1_same) assert_true(s.rejected >= 1);
    /* the file's header numbers the sets ("xgemm I SET", then "direct I
     * SET"); a shape line has one time per set, '-' for a set left out */
    char *text = NULL;
    size_t size = 0;
    assert_ok(cf_read_file(s.cache_path, &text, &size));
    int gemmk1 = -1;
    for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        int index = 0, used = 0;
        if (sscanf(p, "xgemm %d %n", &index, &used) == 1 && used &&
            !strncmp(p + used, GEMMK1_SET "\n", strlen(GEMMK1_SET) + 1))
            gemmk1 = index; /* Xgemm sets come first among the times */
    }
    assert_true(gemmk1 >= 0);
    char *line = strstr(text, "\nshape S");
    assert_non_null(line);
    char *field = strchr(line, ':') + 1;
    for (int i = 0; i < gemmk1; i++) field = strchr(field + 1, ' ');
    assert_non_null(field);
    field += strspn(field, " ");
    assert_int_equal(*field == '-', !gemmk1_same);
    free(text);
    clformer_context_free(ctx);
}

/* With the budget spent, new shapes are not timed and nothing is written. */
static void a_spent_budget_times_nothing(void **state)
{
    (void)state;
    cf_gemm_search_limits l = cf_gemm_search_get_limits();
    const cf_gemm_search_limits saved = l;
    l.budget_seconds = 0;
    cf_gemm_search_set_limits(&l);
    cf_ctx *ctx = open_ctx("search");
    run_and_compare(ctx, 1);
    const cf_gemm_search_stats s = stats_of(ctx);
    assert_int_equal(s.timed, 0);
    assert_int_equal(s.skipped, 1);
    assert_int_equal(shape_lines(s.cache_path), 0);
    clformer_context_free(ctx);
    cf_gemm_search_set_limits(&saved);
}

/* Whether the tiled kernel (from kernel_dir, NULL: built in) gives the
 * numbers of CLBlast's own sets on shape i. */
static bool tiled_rounds_like_clblast(size_t i, const char *kernel_dir)
{
    const shape *s = &test_shapes()[i];
    const size_t nc = s->m * s->n * s->batch;
    float *own = malloc(nc * sizeof *own), *tiled = malloc(nc * sizeof *tiled);
    assert_true(own && tiled);
    cf_ctx *plain = open_ctx("off"), *ours = open_ctx_with("tiled", "off", kernel_dir, false);
    run_shape(plain, s, own);
    run_shape(ours, s, tiled);
    clformer_context_free(plain);
    clformer_context_free(ours);
    const bool same = memcmp(own, tiled, nc * sizeof *own) == 0;
    free(own), free(tiled);
    return same;
}

static void set_tiled(cf_gemm_search_tiled tiled)
{
    cf_gemm_search_limits l = cf_gemm_search_get_limits();
    l.tiled = tiled;
    cf_gemm_search_set_limits(&l);
}

/* The time field of slot `slot` on the file's first shape line: 1 a time,
 * 0 left out ('-'). */
static int slot_timed(const char *path, int slot)
{
    char *text = NULL;
    size_t size = 0;
    assert_ok(cf_read_file(path, &text, &size));
    char *line = strstr(text, "\nshape ");
    assert_non_null(line);
    char *field = strchr(line, ':');
    assert_non_null(field);
    for (int i = 0; i <= slot; i++) {
        field += 1 + strspn(field + 1, " ");
        if (i < slot) field = strchr(field, ' ');
        assert_non_null(field);
    }
    const int timed = *field != '-';
    free(text);
    return timed;
}

/* The file's header names the tiled kernel's tile sets after CLBlast's
 * ("tiled I 128x128 cl/gemm.cl fnv1a ..."), so their times are the last
 * fields of a shape line: the first of them (0 when none), and how many. */
static int tiled_slot_of(const char *path, int *count)
{
    char *text = NULL;
    size_t size = 0;
    assert_ok(cf_read_file(path, &text, &size));
    int slots = 0, first = 0;
    *count = 0;
    for (char *p = text; p && *p && strncmp(p, "shape ", 6);
         p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        int index = -1, block = 0, used = 0;
        if (!strncmp(p, "xgemm ", 6) || !strncmp(p, "direct ", 7)) slots++;
        if (sscanf(p, "tiled %d %dx%*d %n", &index, &block, &used) == 2 && used &&
            !strncmp(p + used, "cl/gemm.cl fnv1a ", 17)) {
            assert_int_equal(index, *count); /* in order */
            if (!*count) first = slots;
            ++*count;
        }
    }
    free(text);
    return first;
}

/* "tiled BxB" for the tile set with the least time on the file's first
 * shape line (the first shape timed). */
static void fastest_tiled(const char *path, char *out, size_t cap)
{
    int count = 0;
    const int first = tiled_slot_of(path, &count);
    assert_true(count > 0);
    char *text = NULL;
    size_t size = 0;
    assert_ok(cf_read_file(path, &text, &size));
    int blocks[CF_GEMM_TILE_SETS] = {0}, n = 0;
    for (char *p = strstr(text, "\ntiled "); p && n < count; p = strstr(p + 1, "\ntiled "))
        assert_int_equal(sscanf(p, "\ntiled %*d %dx", &blocks[n++]), 1);
    const char *field = strchr(strstr(text, "\nshape "), ':') + 1;
    double best = 0;
    int best_block = 0;
    for (int i = 0; i < first + count; i++) {
        char *end;
        const double ms = strtod(field, &end);
        assert_true(end != field); /* preferred: every tile set has a time */
        if (i >= first && (!best_block || ms < best)) best = ms, best_block = blocks[i - first];
        field = end;
    }
    snprintf(out, cap, "tiled %dx%d", best_block, best_block);
    free(text);
}

/* Tile sets of the tiled kernel the context's device runs. */
static int tile_sets_here(const cf_ctx *ctx)
{
    int n = 0;
    for (int i = 0; i < CF_GEMM_TILE_SETS; i++) n += cf_gemm_tiles_fit(ctx, &cf_gemm_tile_sets[i]);
    return n;
}

/* Timed where the provider is chosen by the rule (or the limits say so),
 * never where a context names CLBlast; the shapes it wins go to it. */
static void the_tiled_kernel_is_timed_beside_the_sets(void **state)
{
    (void)state;
    cf_ctx *named = open_ctx("search"); /* CLFORMER_GEMM=clblast: CLBlast alone */
    run_and_compare(named, 1);
    cf_gemm_search_stats s = stats_of(named);
    int count = -1;
    assert_int_equal(s.tiled, 0);
    assert_int_equal(tiled_slot_of(s.cache_path, &count), 0);
    assert_int_equal(count, 0);
    clformer_context_free(named);
    cf_gemm_release_caches();

    set_tiled(CF_GS_TILED_ON);
    cf_ctx *ctx = open_ctx("search");
    run_and_compare(ctx, N_SHAPES);
    s = stats_of(ctx);
    /* each tile set the device runs, timed on each shape */
    const int slot = tiled_slot_of(s.cache_path, &count);
    assert_true(slot > 0);
    assert_int_equal(count, tile_sets_here(ctx));
    assert_int_equal(s.tiled, (size_t)count);
    const bool same = tiled_rounds_like_clblast(0, NULL);
    print_message("the tiled kernel %s CLBlast's own sets (%d tile sets)\n",
                  same ? "rounds like" : "rounds differently from", count);
    for (int i = 0; i < count; i++) assert_int_equal(slot_timed(s.cache_path, slot + i), same);
    print_message("calls that went to it (where it was faster): %zu; shapes that go to it "
                  "now: %zu\n", s.tiled_calls, s.tiled_shapes);
    clformer_context_free(ctx);
}

/* Preferred (as if it won everywhere): the calls of every shape go to it,
 * with CLBlast's numbers; a later process reads its times and sends them
 * there without timing; a kernel that rounds differently is left out, and
 * the calls stay on CLBlast. */
static void the_calls_go_to_a_winning_tiled_kernel(void **state)
{
    (void)state;
    if (!tiled_rounds_like_clblast(0, NULL) || !tiled_rounds_like_clblast(1, NULL)) {
        print_message("the tiled kernel rounds differently from CLBlast here: it never "
                      "takes calls (the_tiled_kernel_is_timed_beside_the_sets checks that)\n");
        skip();
    }
    set_tiled(CF_GS_TILED_PREFERRED);
    cf_ctx *ctx = open_ctx("search");
    run_and_compare(ctx, N_SHAPES);
    cf_gemm_search_stats s = stats_of(ctx);
    assert_int_equal(s.tiled_shapes, N_SHAPES);
    assert_true(s.tiled_calls >= 2 * N_SHAPES); /* run_and_compare: each shape twice, and more */
    /* what gemm_bench prints: the shape's kernel now */
    const shape *first = &test_shapes()[0];
    const clformer_gemm_shape g = {first->ta, first->tb, first->m, first->n, first->k,
                                   first->batch};
    const char *kernel = NULL;
    char fastest[32];
    fastest_tiled(s.cache_path, fastest, sizeof fastest);
    assert_ok(clformer_check_gemm_kernel(ctx, &g, &kernel));
    assert_string_equal(kernel, fastest); /* its fastest tile set on the shape */
    cf_ctx *plain = open_ctx("off");
    assert_ok(clformer_check_gemm_kernel(plain, &g, &kernel));
    assert_string_equal(kernel, "clblast");
    clformer_context_free(plain);
    const clformer_gemm_shape empty = {false, false, 0, 4, 4, 1};
    assert_int_equal(clformer_check_gemm_kernel(ctx, &empty, &kernel),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    clformer_context_free(ctx);
    cf_gemm_release_caches();

    ctx = open_ctx_with("clblast", "search", NULL, true);
    run_and_compare(ctx, N_SHAPES);
    s = stats_of(ctx);
    assert_int_equal(s.timed, 0);
    assert_int_equal(s.from_cache, N_SHAPES);
    assert_true(s.tiled_calls >= 2 * N_SHAPES);
    /* and ran there: the profile names cl/gemm.cl's kernel, never CLBlast */
    clformer_kernel_time families[16];
    clformer_named_kernel_time kernels[16];
    size_t nf = 0, nk = 0;
    assert_ok(clformer_context_kernel_times_named(ctx, families, 16, &nf, kernels, 16, &nk));
    unsigned tiled_launches = 0;
    for (size_t i = 0; i < nk; i++) {
        print_message("kernel %s: %u\n", kernels[i].kernel, kernels[i].time.count);
        assert_string_not_equal(kernels[i].kernel, "gemm"); /* a CLBlast call */
        if (!strcmp(kernels[i].kernel, "gemm_tiled")) tiled_launches = kernels[i].time.count;
    }
    assert_int_equal(tiled_launches, s.tiled_calls);
    clformer_context_free(ctx);
    cf_gemm_release_caches();

    /* cl/ with a gemm.cl whose alpha is an ulp off: other numbers */
    char dir[] = "/tmp/clformer-gemm-kdir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *src = getenv("CLFORMER_SOURCE_DIR");
    assert_non_null(src);
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/cl", src);
    DIR *d = opendir(from);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char *text = NULL;
        size_t size = 0;
        snprintf(from, sizeof from, "%s/cl/%s", src, e->d_name);
        assert_ok(cf_read_file(from, &text, &size));
        char *at = strcmp(e->d_name, "gemm.cl") ? NULL : strstr(text, "fma(alpha, v[j]");
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        FILE *f = fopen(to, "w");
        assert_non_null(f);
        if (at) {
            fwrite(text, 1, (size_t)(at - text), f);
            fputs("fma(alpha * 1.0000001f, v[j]", f);
            fputs(at + strlen("fma(alpha, v[j]"), f);
        } else {
            fwrite(text, 1, size, f);
        }
        fclose(f);
        free(text);
    }
    closedir(d);
    assert_false(tiled_rounds_like_clblast(0, dir));
    ctx = open_ctx_with("clblast", "search", dir, false);
    run_and_compare(ctx, 1);
    s = stats_of(ctx);
    assert_true(s.tiled > 0);
    assert_int_equal(s.tiled_calls, 0);
    assert_true(s.rejected >= s.tiled);
    int count = 0;
    const int first_tiled = tiled_slot_of(s.cache_path, &count);
    for (int i = 0; i < count; i++) assert_int_equal(slot_timed(s.cache_path, first_tiled + i), 0);
    clformer_context_free(ctx);
    d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        unlink(to);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(times_then_reads_the_file, setup, teardown),
    cmocka_unit_test_setup_teardown(only_search_and_auto_search, setup, teardown),
    cmocka_unit_test_setup_teardown(damaged_files_are_timed_again, setup, teardown),
    cmocka_unit_test_setup_teardown(sets_that_round_differently_are_left_out, setup, teardown),
    cmocka_unit_test_setup_teardown(a_spent_budget_times_nothing, setup, teardown),
    cmocka_unit_test_setup_teardown(the_tiled_kernel_is_timed_beside_the_sets, setup, teardown),
    cmocka_unit_test_setup_teardown(the_calls_go_to_a_winning_tiled_kernel, setup, teardown),
};

HARNESS_DEVICE_MAIN("gemm_search", tests)
