/*
 * Data-parallel training steps through clformer_collective, run by mpirun
 * with 2 ranks (tests/CMakeLists.txt, label mpi). Each rank opens the device
 * CLFORMER_TEST_DEVICES names for it, so the same program checks two ranks
 * on one device kind and two ranks on different devices.
 *  - equivalence: 2 ranks at batch B take the steps 1 rank takes at batch 2B
 *    (dropout 0): every loss within 1e-5 relative, parameters within 1e-5,
 *    with the gradient sum overlapped with backward (non-blocking callbacks)
 *    and with the blocking sum after it;
 *  - the ranks end every step with bit-identical parameters;
 *  - dropout: the ranks draw different masks, and a run repeats exactly;
 *  - the trainer: the validation loss split across ranks equals one rank's,
 *    and check_sync_every passes a normal run and stops one whose ranks'
 *    parameters differ (a collective that perturbs rank 1's sums).
 */
#include "harness.h"
#include "model.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_STEPS = 20, B = 4, VOCAB = 21 };

/* 20 steps; 1 on a simulator (Oclgrind checks the path, not the dynamics:
 * 2 steps took 570 s there on the loaded machine). */
static int steps(void) { return harness_is_slow() ? 1 : MAX_STEPS; }

static int rank, size;

static clformer_status sum_f32(void *user, float *data, size_t n)
{
    (void)user;
    return MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
                   MPI_SUCCESS ? CLFORMER_OK : CLFORMER_ERR_IO;
}

static clformer_status sum_f64(void *user, double *data, size_t n)
{
    (void)user;
    return MPI_Allreduce(MPI_IN_PLACE, data, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                   MPI_SUCCESS ? CLFORMER_OK : CLFORMER_ERR_IO;
}

static clformer_status bcast(void *user, void *data, size_t bytes, int root)
{
    (void)user;
    return MPI_Bcast(data, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS
               ? CLFORMER_OK : CLFORMER_ERR_IO;
}

/* The non-blocking sum: the gradient buckets are then summed during backward. */
static clformer_status start_f32(void *user, float *data, size_t n, void **request)
{
    (void)user;
    MPI_Request *req = hmalloc(sizeof *req);
    *request = req;
    return MPI_Iallreduce(MPI_IN_PLACE, data, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req) ==
                   MPI_SUCCESS ? CLFORMER_OK : CLFORMER_ERR_IO;
}

static clformer_status test_req(void *user, void *request, int *done)
{
    (void)user;
    return MPI_Test(request, done, MPI_STATUS_IGNORE) == MPI_SUCCESS ? CLFORMER_OK
                                                                      : CLFORMER_ERR_IO;
}

static clformer_status wait_req(void *user, void *request)
{
    (void)user;
    int err = MPI_Wait(request, MPI_STATUS_IGNORE);
    free(request);
    return err == MPI_SUCCESS ? CLFORMER_OK : CLFORMER_ERR_IO;
}

/* Which collective new_model gives the models: with the non-blocking sum
 * (overlapped with backward) or the blocking one alone. */
static bool overlapped = true;
/* Whether new_model's models share one embedding (share_all_embed): the
 * tensor's gradient is final only after the source embedding's backward, the
 * last point, not at the target embedding's. */
static bool shared_all = false;

static clformer_config tiny_config(float dropout)
{
    clformer_config c = harness_small_config();
    c.n_enc_layers = c.n_dec_layers = 1;
    c.src_vocab = c.tgt_vocab = VOCAB;
    c.dropout = dropout;
    c.share_tgt_embed = c.share_all_embed = shared_all;
    return c;
}

/* Global batch `step`: 2B pairs of varied lengths, each row padded to 10.
 * Returns the widths (source, target) of rows [first, first+rows). */
typedef struct {
    int32_t src[2 * B][10], tgt[2 * B][10];
    int src_len[2 * B], tgt_len[2 * B];
} global_batch;

static void make_batch(int step, global_batch *g)
{
    memset(g, 0, sizeof *g);
    uint64_t s = 0x1234u + (uint64_t)step * 7919u;
    for (int r = 0; r < 2 * B; r++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        g->src_len[r] = 3 + (int)((s >> 33) % 7);
        g->tgt_len[r] = 3 + (int)((s >> 41) % 7);
        for (int side = 0; side < 2; side++) {
            int32_t *row = side ? g->tgt[r] : g->src[r];
            int len = side ? g->tgt_len[r] : g->src_len[r];
            row[0] = CLFORMER_SOS;
            for (int t = 1; t < len - 1; t++) {
                s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                row[t] = 4 + (int32_t)((s >> 35) % (VOCAB - 4));
            }
            row[len - 1] = CLFORMER_EOS;
        }
    }
}

/* Rows [first, first+rows) of g, as tight as their longest row. */
static void take_rows(const global_batch *g, int first, int rows, int32_t *src, int32_t *tgt,
                      clformer_batch *b)
{
    int S = 0, T = 0;
    for (int r = first; r < first + rows; r++) {
        if (g->src_len[r] > S) S = g->src_len[r];
        if (g->tgt_len[r] > T) T = g->tgt_len[r];
    }
    for (int r = 0; r < rows; r++) {
        memcpy(src + r * S, g->src[first + r], (size_t)S * sizeof *src);
        memcpy(tgt + r * T, g->tgt[first + r], (size_t)T * sizeof *tgt);
    }
    *b = (clformer_batch){(size_t)rows, (size_t)S, (size_t)T, src, tgt};
}

static clformer_model *new_model(float dropout, bool parallel)
{
    clformer_config c = tiny_config(dropout);
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    assert_ok(clformer_model_set_optimizer(m, &oc));
    if (parallel) {
        clformer_collective coll = {NULL, rank, size, sum_f32, sum_f64, bcast, NULL, NULL, NULL};
        if (overlapped) coll.allreduce_start_f32 = start_f32, coll.test = test_req,
                        coll.wait = wait_req;
        assert_ok(clformer_model_set_collective(m, &coll));
    }
    return m;
}

/* The name of the tensor holding flat parameter i, for messages. */
static const char *entry_of(const clformer_model *m, size_t i)
{
    const char *name = "?";
    for (size_t k = 0; k < m->layout.n_entries; k++)
        if (m->layout.entries[k].offset <= i) name = m->layout.entries[k].name;
    return name;
}

/* The key part of an attention's in_proj_bias. Its exact gradient is zero
 * (adding a constant to every score of a query leaves the softmax unchanged),
 * so what backward writes there is rounding noise, which differs between a
 * batch of 2B and two of B; Adam normalises that noise into steps of up to
 * about lr in both runs. Those entries can only be held to that bound. */
static bool is_key_bias(const clformer_model *m, size_t i)
{
    const size_t d = (size_t)m->cfg.d_model;
    for (size_t k = 0; k < m->layout.n_entries; k++) {
        const cf_param_entry *e = &m->layout.entries[k];
        if (strstr(e->name, "in_proj_bias") && i >= e->offset + d && i < e->offset + 2 * d)
            return true;
    }
    return false;
}
#define LR 1e-3f
#define KEY_BIAS_BOUND (2.0f * LR * (float)steps())

/* Asserts every rank holds these exact parameters. */
static void assert_same_on_all_ranks(clformer_model *m, const char *when)
{
    uint64_t mine, lo, hi;
    assert_ok(clformer_model_parameter_checksum(m, &mine));
    MPI_Allreduce(&mine, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi) harness_fail_at(__FILE__, __LINE__, "parameters differ between ranks %s", when);
}

/* Trains steps() steps: this rank's half of each global batch. */
static void train_parallel(clformer_model *m, double *losses)
{
    clformer_session *session;
    assert_ok(clformer_session_create(m, &session));
    int32_t src[B * 10], tgt[B * 10];
    for (int step = 0; step < steps(); step++) {
        global_batch g;
        make_batch(step, &g);
        clformer_batch b;
        take_rows(&g, rank * B, B, src, tgt, &b);
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(session, &b, LR, &st));
        losses[step] = st.loss;
        char when[32];
        snprintf(when, sizeof when, "after step %d", step + 1);
        assert_same_on_all_ranks(m, when);
    }
    clformer_session_free(session);
}

/* The loss and gradients of one batch on a session of their own. */
static double gradients(clformer_model *m, const clformer_batch *b)
{
    clformer_session *session;
    assert_ok(clformer_session_create(m, &session));
    double loss;
    assert_ok(clformer_session_gradients(session, b, &loss));
    clformer_session_free(session);
    return loss;
}

/* Which elements' gradient on the first global batch is zero up to
 * rounding. Adam normalises such an element's rounding noise into steps of
 * up to lr just as a key bias's, so they are held to the key biases' bound.
 * An element is rounding noise when its gradient is below 1e-6 of the mean
 * magnitude, or when the same batch with its rows in reverse order (the
 * same sums, added in another order) gives a gradient that differs by more
 * than 1e-3 of it: a real gradient agrees with itself to about 1e-6 there.
 * (With all embeddings shared, one out_proj weight's gradient is -7.9e-9 to
 * -1.0e-8 against a mean of 1e-2, depending on the CPU's vector width, and
 * 2 ranks and 1 part there by 1.5e-5 on Intel's runtime.) */
static bool *rounding_level_gradients(clformer_model *m, const global_batch *g)
{
    global_batch reversed = *g;
    for (int r = 0; r < 2 * B; r++) {
        memcpy(reversed.src[r], g->src[2 * B - 1 - r], sizeof reversed.src[r]);
        memcpy(reversed.tgt[r], g->tgt[2 * B - 1 - r], sizeof reversed.tgt[r]);
        reversed.src_len[r] = g->src_len[2 * B - 1 - r];
        reversed.tgt_len[r] = g->tgt_len[2 * B - 1 - r];
    }
    const size_t n = m->layout.total;
    float *grad[2];
    for (int order = 0; order < 2; order++) {
        int32_t src[2 * B * 10], tgt[2 * B * 10];
        clformer_batch b;
        take_rows(order ? &reversed : g, 0, 2 * B, src, tgt, &b);
        gradients(m, &b);
        grad[order] = hmalloc(n * sizeof *grad[order]);
        assert_ok(cf_download(hctx(), m->grads, 0, grad[order], n));
    }
    double mean = 0;
    for (size_t i = 0; i < n; i++) mean += fabs((double)grad[0][i]) / (double)n;
    bool *noise = hmalloc(n * sizeof *noise);
    for (size_t i = 0; i < n; i++) {
        const double a = grad[0][i], b = grad[1][i];
        noise[i] = fabs(a) < 1e-6 * mean || fabs(a - b) > 1e-3 * fmax(fabs(a), fabs(b));
    }
    free(grad[0]);
    free(grad[1]);
    return noise;
}

static void test_two_ranks_equal_one_rank_at_double_batch(void **state)
{
    (void)state;
    clformer_model *par = new_model(0.0f, true);
    double par_loss[MAX_STEPS];
    train_parallel(par, par_loss);
    /* on a simulator the 2-rank step (the all-reduce path, ranks bit-identical)
     * without the 1-rank comparison: PoCL checks the numbers, and each step
     * costs minutes on Oclgrind */
    if (rank == 0 && !harness_is_slow()) {
        clformer_model *one = new_model(0.0f, false);
        global_batch g0;
        make_batch(0, &g0);
        bool *noise_only = rounding_level_gradients(one, &g0);
        int32_t src[2 * B * 10], tgt[2 * B * 10];
        clformer_session *alone;
        assert_ok(clformer_session_create(one, &alone));
        for (int step = 0; step < steps(); step++) {
            global_batch g;
            make_batch(step, &g);
            clformer_batch b;
            take_rows(&g, 0, 2 * B, src, tgt, &b);
            clformer_step_stats st;
            assert_ok(clformer_session_train_step(alone, &b, LR, &st));
            double rel = fabs(st.loss - par_loss[step]) / fabs(st.loss);
            if (rel > 1e-5)
                harness_fail_at(__FILE__, __LINE__, "step %d: loss %.9g on 1 rank, %.9g on 2 "
                                "(relative difference %.3g > 1e-5)", step + 1, st.loss,
                                par_loss[step], rel);
        }
        /* every parameter, through the one flat buffer (model.h) */
        const size_t n = par->layout.total;
        float *a = hmalloc(n * sizeof *a), *x = hmalloc(n * sizeof *x);
        assert_ok(cf_download(hctx(), par->params, 0, a, n));
        assert_ok(cf_download(hctx(), one->params, 0, x, n));
        for (size_t i = 0; i < n; i++)
            if (fabsf(a[i] - x[i]) > (is_key_bias(par, i) || noise_only[i] ? KEY_BIAS_BOUND : 1e-5f))
                harness_fail_at(__FILE__, __LINE__, "parameter %zu of %zu (%s): %.9g on 2 "
                                "ranks, %.9g on 1", i, n, entry_of(par, i), a[i], x[i]);
        free(a);
        free(x);
        free(noise_only);
        clformer_session_free(alone);
        clformer_model_free(one);
    }
    clformer_model_free(par);
}

/* The same with the blocking sum after backward (embedders that give only it). */
static void test_equivalence_with_the_blocking_sum(void **state)
{
    overlapped = false;
    test_two_ranks_equal_one_rank_at_double_batch(state);
    overlapped = true;
}

/* The same with all three embeddings one tensor (overlapped sum). */
static void test_equivalence_with_shared_embeddings(void **state)
{
    shared_all = true;
    test_two_ranks_equal_one_rank_at_double_batch(state);
    shared_all = false;
}

static void test_dropout_masks_differ_by_rank_and_repeat(void **state)
{
    (void)state;
    /* Both ranks train on the same rows: with equal masks the global loss
     * would equal rank 0's own loss on them. */
    global_batch g;
    make_batch(0, &g);
    int32_t src[B * 10], tgt[B * 10];
    clformer_batch b;
    take_rows(&g, 0, B, src, tgt, &b);
    clformer_model *par = new_model(0.3f, true);
    const double global = gradients(par, &b);
    clformer_model_free(par);
    if (rank == 0) {
        clformer_model *alone = new_model(0.3f, false);
        const double own = gradients(alone, &b);
        clformer_model_free(alone);
        if (fabs(global - own) <= 1e-6 * fabs(own))
            harness_fail_at(__FILE__, __LINE__, "the ranks drew the same dropout masks: mean "
                            "loss %.9g over both equals rank 0's own %.9g", global, own);
    }
    /* the same run twice: the same losses and parameters, bit for bit */
    double first[MAX_STEPS] = {0}, second[MAX_STEPS] = {0};
    uint64_t sum1, sum2;
    clformer_model *m = new_model(0.3f, true);
    train_parallel(m, first);
    assert_ok(clformer_model_parameter_checksum(m, &sum1));
    clformer_model_free(m);
    m = new_model(0.3f, true);
    train_parallel(m, second);
    assert_ok(clformer_model_parameter_checksum(m, &sum2));
    clformer_model_free(m);
    assert_memory_equal(first, second, sizeof first);
    assert_true(sum1 == sum2);
}

static void test_broadcast_resynchronises(void **state)
{
    (void)state;
    clformer_config c = tiny_config(0.0f);
    clformer_model *m;
    /* different seeds: different parameters until rank 0's are broadcast */
    assert_ok(clformer_model_create(hctx(), &c, 100 + (uint64_t)rank, &m));
    clformer_collective coll = {NULL, rank, size, sum_f32, sum_f64, bcast};
    assert_ok(clformer_model_set_collective(m, &coll));
    uint64_t mine, lo, hi;
    assert_ok(clformer_model_parameter_checksum(m, &mine));
    MPI_Allreduce(&mine, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    assert_true(lo != hi);
    assert_ok(clformer_model_broadcast(m, 0));
    assert_same_on_all_ranks(m, "after the broadcast");
    clformer_model_free(m);
}

/* n pairs of a made-up language pair (the target is the source reversed,
 * word by word), the same on every rank. */
static clformer_parallel_text *reversal_text(size_t n, uint64_t seed)
{
    static const char *src_words[] = {"red", "cat", "sees", "a", "big", "dog", "runs", "home"};
    static const char *tgt_words[] = {"rot", "katze", "sieht", "ein", "gross", "hund", "rennt",
                                      "haus"};
    char **src = hmalloc(n * sizeof *src), **tgt = hmalloc(n * sizeof *tgt);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int words = 1 + (int)((s >> 33) % 8), w[8];
        for (int k = 0; k < words; k++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            w[k] = (int)((s >> 35) % 8);
        }
        src[i] = hmalloc(64);
        tgt[i] = hmalloc(64);
        src[i][0] = tgt[i][0] = '\0';
        for (int k = 0; k < words; k++) {
            strcat(src[i], k ? " " : ""), strcat(src[i], src_words[w[k]]);
            strcat(tgt[i], k ? " " : ""), strcat(tgt[i], tgt_words[w[words - 1 - k]]);
        }
    }
    clformer_parallel_text *text;
    assert_ok(clformer_parallel_text_from_lines((const char *const *)src,
                                                (const char *const *)tgt, n, "src", "tgt",
                                                &text));
    for (size_t i = 0; i < n; i++) free(src[i]), free(tgt[i]);
    free(src);
    free(tgt);
    return text;
}

/* A collective whose float sums are wrong on rank 1 from its second call
 * (the second step's gradients) on: the ranks' parameters then differ. */
static int perturbed_calls;
static clformer_status sum_f32_perturbed(void *user, float *data, size_t n)
{
    clformer_status st = sum_f32(user, data, n);
    if (rank == 1 && ++perturbed_calls >= 2) data[0] += 1e-3f;
    return st;
}

/* A 3-step trainer run on both ranks with a final validation: 1000
 * validation pairs make 3 batches of 4096 padded tokens, so rank 0
 * evaluates two and rank 1 one. */
static clformer_status train_with(const clformer_collective *coll, clformer_trainer **trainer,
                                  clformer_train_result *res)
{
    /* borrowed by the trainer: kept until the program ends */
    static clformer_parallel_text *train, *val;
    if (!train) train = reversal_text(64, 11), val = reversal_text(1000, 12);
    clformer_train_options o;
    clformer_train_options_default(&o);
    o.train_text = train;
    o.val_text = val;
    o.config = tiny_config(0.0f);
    o.batching.batch_tokens = 0;
    o.batching.batch_size = 4;
    o.steps = 3;
    o.bleu_sentences = 4; /* rank 0's */
    o.lr = LR;
    o.collective = coll;
    o.check_sync_every = 1;
    assert_ok(clformer_trainer_create(hctx(), &o, trainer));
    return clformer_trainer_run(*trainer, res);
}

static void test_trainer_validation_split_equals_one_rank(void **state)
{
    (void)state;
    clformer_collective coll = {NULL, rank, size, sum_f32, sum_f64, bcast};
    clformer_trainer *t;
    clformer_train_result res;
    clformer_status st = train_with(&coll, &t, &res);
    if (st != CLFORMER_OK) fail_msg("%s: %s", clformer_status_name(st), clformer_last_error());
    /* the same validation on this rank alone */
    clformer_model *m = clformer_trainer_model(t);
    assert_ok(clformer_model_set_collective(m, NULL));
    double alone;
    size_t tokens;
    assert_ok(clformer_corpus_loss(clformer_trainer_session(t), clformer_trainer_corpus(t, true),
                                   4096, &alone, &tokens));
    const double rel = fabs(res.val_loss - alone) / alone;
    if (!(rel <= 1e-5))
        harness_fail_at(__FILE__, __LINE__, "rank %d: validation loss %.9g split over 2 ranks, "
                        "%.9g on one (relative difference %.3g > 1e-5)", rank, res.val_loss,
                        alone, rel);
    /* BLEU is rank 0's */
    assert_true(rank == 0 ? isfinite(res.val_bleu) : isnan(res.val_bleu));
    clformer_trainer_free(t);
}

static void test_check_sync_stops_ranks_that_differ(void **state)
{
    (void)state;
    perturbed_calls = 0;
    clformer_collective coll = {NULL, rank, size, sum_f32_perturbed, sum_f64, bcast};
    clformer_trainer *t;
    clformer_train_result res;
    clformer_status st = train_with(&coll, &t, &res);
    const char *msg = clformer_last_error();
    if (st != CLFORMER_ERR_DIVERGED || !strstr(msg, "after step 2") ||
        !strstr(msg, "rank 1 (checksum"))
        fail_msg("rank %d: expected CLFORMER_ERR_DIVERGED naming step 2 and rank 1, got %s: %s",
                 rank, clformer_status_name(st), msg);
    assert_int_equal(res.steps, 2);
    clformer_trainer_free(t);
}

/* A test that fails on one rank leaves the other waiting in a collective the
 * failed one never joins, and their next collectives then pair wrongly
 * (MPI_ERR_TRUNCATE, a corrupted heap). So each test runs in a wrapper that
 * notes its end, and the teardown (which cmocka runs after a failure too)
 * ends every rank at once when this rank's test did not finish. */
static bool finished;

static int start_test(void **state)
{
    (void)state;
    finished = false;
    return 0;
}

static int end_test(void **state)
{
    (void)state;
    if (!finished) {
        fprintf(stderr, "rank %d: the test above failed here; ending every rank (the others "
                        "would wait in a collective this rank left)\n", rank);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return 0;
}

#define RANKED(test)                                                                     \
    static void ranked_##test(void **state)                                              \
    {                                                                                    \
        test(state);                                                                     \
        finished = true;                                                                 \
    }
RANKED(test_two_ranks_equal_one_rank_at_double_batch)
RANKED(test_equivalence_with_the_blocking_sum)
RANKED(test_equivalence_with_shared_embeddings)
RANKED(test_dropout_masks_differ_by_rank_and_repeat)
RANKED(test_broadcast_resynchronises)
RANKED(test_trainer_validation_split_equals_one_rank)
RANKED(test_check_sync_stops_ranks_that_differ)
#define RANKED_TEST(test) cmocka_unit_test_setup_teardown(ranked_##test, start_test, end_test)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "run with mpirun -np 2 (got %d ranks)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const struct CMUnitTest tests[] = {
        RANKED_TEST(test_two_ranks_equal_one_rank_at_double_batch),
        RANKED_TEST(test_equivalence_with_the_blocking_sum),
        RANKED_TEST(test_equivalence_with_shared_embeddings),
        RANKED_TEST(test_dropout_masks_differ_by_rank_and_repeat),
        RANKED_TEST(test_broadcast_resynchronises),
        RANKED_TEST(test_trainer_validation_split_equals_one_rank),
        RANKED_TEST(test_check_sync_stops_ranks_that_differ),
    };
    /* On a simulator only the equivalence (the all-reduce path): hours otherwise. */
    const char *devices = getenv("CLFORMER_TEST_DEVICES");
    const bool simulator = devices && strstr(devices, "oclgrind");
    int failures = harness_run_device_suite("mpi_train", tests,
                                            simulator ? 1 : sizeof tests / sizeof tests[0]);
    int any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
