/* The tiled GEMM provider's tile sets (cl/gemm.cl, runtime/device/gemm_tiled.c)
 * on the device under test: every set computes each output as the same chain
 * of fma over k, so the sets the device holds must give the same bits (where
 * it holds one, the larger ones must be refused saying so), on products with
 * partial blocks in every dimension, all transposes, beta 0 and 1, and a
 * strided batch; and a set is forced only where asked (clformer_check_gemm_tiles
 * refuses sizes it does not have and contexts on another provider). Each set's
 * distance from the double reference is test_gemm_tiled's (conf_gemm). */
#include "harness.h"
#include "clformer_check.h"
#include "gemm_check.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    bool ta, tb;
    size_t m, n, k, batch;
    float beta;
} product;

static cf_ctx *tiled_ctx(void)
{
    clformer_context_params p;
    assert_ok(clformer_context_params_from_env(&p));
    p.device = hctx()->info.selector;
    p.gemm = "tiled";
    clformer_context *ctx = NULL;
    assert_ok(clformer_context_create_with_params(&p, &ctx));
    return ctx;
}

/* C = 0.75 op(A) op(B) + beta C on fixed random operands with block `block`
 * forced (0: by shape), C read back into `out` (m * n * batch floats). */
static void run(cf_ctx *ctx, const product *s, int block, float *out)
{
    assert_ok(clformer_check_gemm_tiles(ctx, block));
    gemm_run_random(ctx, s->ta, s->tb, s->m, s->n, s->k, s->batch, 0.75f, s->beta,
                    7 + s->m + s->k, out);
    assert_ok(clformer_check_gemm_tiles(ctx, 0));
}

/* The sets the device holds, largest first; the others must be refused
 * saying so (a device with 64-item groups holds only 32 x 32 blocks). */
static size_t sets_held(cf_ctx *ctx, int *held)
{
    static const int blocks[] = {128, 64, 32};
    size_t n = 0;
    for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
        if (clformer_check_gemm_tiles(ctx, blocks[b]) == CLFORMER_OK) {
            held[n++] = blocks[b];
            continue;
        }
        assert_non_null(strstr(clformer_last_error(), "cannot run the tiled GEMM kernel"));
    }
    assert_ok(clformer_check_gemm_tiles(ctx, 0));
    return n;
}

static void tile_sets_give_the_same_bits(void **state)
{
    (void)state;
    cf_ctx *ctx = tiled_ctx();
    int blocks[3];
    const size_t n_blocks = sets_held(ctx, blocks);
    assert_true(n_blocks >= 1);
    if (n_blocks == 1) /* nothing to compare: the refusals above are the check here */
        print_message("only %d x %d blocks fit %s's work-groups\n", blocks[0], blocks[0],
                      hctx()->info.name);
    /* partial 128-, 64- and 32-blocks in m and n, k past one 16-slice */
    const product shapes[] = {
        {false, true, 130, 70, 37, 1, 0.0f}, {true, false, 70, 130, 37, 1, 1.0f},
        {false, false, 33, 129, 20, 1, 1.0f}, {true, true, 129, 33, 20, 1, 0.0f},
        {false, true, 40, 36, 17, 3, 1.0f},
    };
    for (size_t i = 0; n_blocks > 1 && i < sizeof shapes / sizeof *shapes; i++) {
        const product *s = &shapes[i];
        const size_t nc = s->m * s->n * s->batch;
        float *want = malloc(nc * sizeof *want), *got = malloc(nc * sizeof *got);
        assert_non_null(want), assert_non_null(got);
        run(ctx, s, blocks[0], want);
        for (size_t b = 1; b < n_blocks; b++) {
            run(ctx, s, blocks[b], got);
            for (size_t e = 0; e < nc; e++)
                if (memcmp(&want[e], &got[e], sizeof *got) != 0)
                    fail_msg("%c%c %zux%zux%zu x%zu: element %zu is %.9g with %d x %d blocks, "
                             "%.9g with %d x %d",
                             s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', s->m, s->n, s->k, s->batch, e,
                             (double)got[e], blocks[b], blocks[b], (double)want[e], blocks[0],
                             blocks[0]);
        }
        free(want), free(got);
    }
    clformer_context_free(ctx);
}

static void forcing_is_refused_where_it_cannot_apply(void **state)
{
    (void)state;
    cf_ctx *ctx = tiled_ctx();
    assert_int_equal(clformer_check_gemm_tiles(ctx, 48), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "not 48"));
    clformer_context_free(ctx);
    if (clformer_context_gemm_provider(hctx()) != CLFORMER_GEMM_TILED) {
        assert_int_equal(clformer_check_gemm_tiles(hctx(), 64), CLFORMER_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clformer_last_error(), "CLFORMER_GEMM=tiled"));
    }
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(tile_sets_give_the_same_bits),
    cmocka_unit_test(forcing_is_refused_where_it_cannot_apply),
};

HARNESS_DEVICE_MAIN("gemm_tiles", tests)
