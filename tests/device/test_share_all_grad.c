/*
 * share_all_embed's gradient by finite differences, without PyTorch: the one
 * matrix that is the source embedding, the target embedding and the
 * generator gets the sum of the three uses' gradients. Elements of the row
 * of a token that the batch holds on both sides are moved by +-h and the
 * central difference of the loss compared with the gradient read under the
 * source embedding's name (the same tensor). test_model_parity compares the
 * whole shared model with PyTorch (f_prenorm_relu_shared_all). A saved shared
 * model whose copy under src_embed.weight differs from tgt_embed.weight is
 * refused at load.
 */
#include "harness.h"
#include "checkpoint_poke.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define V 12
#define B 2
#define S 6
#define T1 6
#define SHARED_ID 5 /* a token on both sides of the batch */

static clformer_config config(void)
{
    clformer_config c = harness_small_config();
    c.src_vocab = c.tgt_vocab = V;
    c.max_len = 8;
    c.dropout = 0.0f;
    c.label_smoothing = 0.1f;
    c.activation = CLFORMER_ACT_GELU; /* smooth: no ReLU kink inside +-h */
    c.share_tgt_embed = true;
    c.share_all_embed = true;
    return c;
}

static clformer_model *new_model(void)
{
    clformer_config c = config();
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    char words[V][8];
    const char *v[V] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 4; i < V; i++) snprintf(words[i], sizeof words[i], "w%d", i), v[i] = words[i];
    assert_ok(clformer_model_set_vocabs(m, v, v));
    return m;
}

/* <sos> ... <eos>, right-padded; SHARED_ID in both sides' first row */
static const int32_t SRC[B * S] = {1, 5, 7, 9, 2, 0, 1, 6, 8, 2, 0, 0};
static const int32_t TGT[B * T1] = {1, 4, 5, 10, 11, 2, 1, 5, 6, 2, 0, 0};

static double loss_and_grads(clformer_model *m)
{
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    clformer_batch b = {B, S, T1, SRC, TGT};
    double loss;
    assert_ok(clformer_session_gradients(s, &b, &loss));
    clformer_session_free(s);
    return loss;
}

static void shared_gradient_is_the_slope_of_the_loss(void **state)
{
    (void)state;
    clformer_model *m = new_model();
    const size_t d = (size_t)clformer_model_config(m)->d_model, n = (size_t)V * d;
    float *w = hmalloc(n * 4), *g = hmalloc(n * 4);
    assert_ok(clformer_model_read_tensor(m, "tgt_embed.weight", false, w, n));
    loss_and_grads(m);
    assert_ok(clformer_model_read_tensor(m, "src_embed.weight", true, g, n));

    /* the largest gradients of SHARED_ID's row, against the loss's slope */
    const float h = 2e-3f;
    int checked = 0;
    for (int pass = 0; pass < 3; pass++) {
        size_t best = SHARED_ID * d;
        for (size_t j = SHARED_ID * d; j < (SHARED_ID + 1) * d; j++)
            if (fabsf(g[j]) > fabsf(g[best])) best = j;
        const float keep = w[best];
        double l[2];
        for (int k = 0; k < 2; k++) {
            w[best] = keep + (k ? -h : h);
            assert_ok(clformer_model_write_tensor(m, "tgt_embed.weight", w, n));
            l[k] = loss_and_grads(m);
        }
        w[best] = keep;
        const double slope = (l[0] - l[1]) / (2.0 * h);
        /* agreement is about 2e-4 relative; the source use alone is about 3% of
         * these elements' gradients (its backward dropped: fails) */
        if (fabs(slope - g[best]) > 2e-3 * fabs(g[best]) + 1e-4)
            fail_msg("element %zu: gradient %.6g, loss slope %.6g", best, g[best], slope);
        print_message("element %zu: gradient %.6g, loss slope %.6g\n", best, g[best], slope);
        g[best] = 0.0f; /* the next pass takes the next largest */
        checked++;
    }
    assert_int_equal(checked, 3);
    free(w), free(g);
    clformer_model_free(m);
}

static void differing_copies_are_refused(void **state)
{
    (void)state;
    clformer_model *m = new_model();
    char path[] = "/tmp/clformer-shared-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    /* untouched, without checksums: loads */
    assert_ok(clformer_model_save(m, path, false));
    const size_t n = (size_t)V * (size_t)clformer_model_config(m)->d_model;
    float *w = hmalloc(n * 4);
    assert_ok(clformer_model_read_tensor(m, "tgt_embed.weight", false, w, n));
    const float first = w[0];
    free(w);
    poke_tensor(path, "src_embed.weight", first, true);
    clformer_model *back = NULL;
    assert_ok(clformer_model_load(hctx(), path, &back));
    clformer_model_free(back);
    /* one element of one copy changed */
    assert_ok(clformer_model_save(m, path, false));
    poke_tensor(path, "src_embed.weight", first + 0.5f, true);
    back = NULL;
    assert_int_equal(clformer_model_load(hctx(), path, &back), CLFORMER_ERR_FORMAT);
    assert_null(back);
    assert_non_null(strstr(clformer_last_error(), "ties src_embed.weight to tgt_embed.weight "
                                                  "(share_all_embed) but the two tensors differ"));
    unlink(path);
    clformer_model_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(shared_gradient_is_the_slope_of_the_loss),
    cmocka_unit_test(differing_copies_are_refused),
};
HARNESS_DEVICE_MAIN("share_all_embed gradient", tests)
