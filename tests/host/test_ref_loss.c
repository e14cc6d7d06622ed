/* The cross-entropy reference against PyTorch's numbers, its ignored rows
 * and in-place call; the decoding helpers on rows worked out by hand. Runs in
 * double, without a device. (Finite differences: runtime/check/conf_loss.c.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref_loss.h"
#include "ref_random.h"

static void assert_near(double got, double want, double tol, const char *what, size_t i)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s[%zu] = %.17g, expected %.17g (tolerance %g)", what, i, got, want, tol);
}

/*
 * Generated once with PyTorch 1.13 in float64:
 *   x = [[1, -2, .5, 3], [0, 0, 0, 0], [2.5, -1, -1.5, .25]], y = [2, 0, 3]
 *   l = F.cross_entropy(x, y, reduction="none", ignore_index=ign, label_smoothing=ls)
 *   g = autograd.grad(0.5 * l.sum(), x)
 * with ign = 0 (row 1 ignored) and ls in {0, 0.1}.
 */
static void matches_pytorch(void **state)
{
    (void)state;
    const double x[12] = {1, -2, .5, 3, 0, 0, 0, 0, 2.5, -1, -1.5, .25};
    const int32_t y[3] = {2, 0, 3};
    const double loss_ls0[3] = {2.7022534476793516, 0, 2.393158122623396};
    const double grad_ls0[12] = {0.055276875180869614, 0.0027520735637918355,
                                 -0.46647288042969426, 0.40844393168503285, 0, 0, 0, 0,
                                 0.43330851315166441, 0.013084783311795547,
                                 0.0079363222543002137, -0.45432961871776018};
    const double loss_ls1[3] = {2.6897534476793519, 0, 2.4119081226233963};
    const double grad_ls1[12] = {0.042776875180869617, -0.0097479264362081656,
                                 -0.42897288042969428, 0.39594393168503283, 0, 0, 0, 0,
                                 0.4208085131516644, 0.00058478331179554616,
                                 -0.004563677745699787, -0.4168296187177602};
    for (int smooth = 0; smooth < 2; smooth++) {
        double loss[3], grad[12];
        ref_cross_entropy(loss, grad, x, y, 3, 4, smooth ? 0.1 : 0.0, 0, 0.5);
        for (size_t i = 0; i < 3; i++)
            assert_near(loss[i], (smooth ? loss_ls1 : loss_ls0)[i], 1e-13, "loss", i);
        for (size_t i = 0; i < 12; i++)
            assert_near(grad[i], (smooth ? grad_ls1 : grad_ls0)[i], 1e-13, "grad", i);
    }
    /* PyTorch with ignore_index=-100 (nothing ignored): row 1 is log 4 */
    double loss[3];
    ref_cross_entropy(loss, NULL, x, y, 3, 4, 0.0, -100, 1.0);
    assert_near(loss[1], log(4.0), 1e-15, "loss", 1);
}

/* Ignored rows have loss and gradient 0, and the in-place call (dlogits in
 * the logits' buffer) gives the same numbers. The gradient against finite
 * differences is the op descriptor's gradcheck (runtime/check/conf_loss.c,
 * run by test_ops_table), on these same cases. */
static void check_rows(size_t N, size_t V, double ls, int ignore, double scale, double spread,
                       uint64_t seed)
{
    const double grad_scale = 0.375;
    ref_rng r = ref_rng_new(seed);
    double *x = malloc(N * V * sizeof *x), *g = malloc(N * V * sizeof *g);
    double *loss = malloc(N * sizeof *loss), *lp = malloc(N * sizeof *lp);
    int32_t *y = malloc(N * sizeof *y);
    for (size_t i = 0; i < N * V; i++) x[i] = ref_rng_uniform(&r, -spread, spread);
    for (size_t i = 0; i < N; i++) {
        y[i] = (int32_t)(ref_rng_next(&r) % V);
        if (i % 3 == 1) y[i] = ignore;
        x[i * V] *= scale;             /* row 0's first logit far from the rest */
    }
    ref_cross_entropy(loss, g, x, y, N, V, ls, ignore, grad_scale);
    for (size_t i = 0; i < N * V; i++)
        if (y[i / V] == ignore) assert_true(g[i] == 0.0 && loss[i / V] == 0.0);
    double *alias = malloc(N * V * sizeof *alias);
    memcpy(alias, x, N * V * sizeof *x);
    ref_cross_entropy(lp, alias, alias, y, N, V, ls, ignore, grad_scale);
    assert_memory_equal(alias, g, N * V * sizeof *g);
    assert_memory_equal(lp, loss, N * sizeof *loss);
    free(x), free(g), free(loss), free(lp), free(y), free(alias);
}

static void ignored_rows_and_in_place(void **state)
{
    (void)state;
    for (int smooth = 0; smooth < 2; smooth++) {
        const double ls = smooth ? 0.1 : 0.0;
        check_rows(7, 5, ls, 0, 1.0, 3.0, 1 + smooth); /* <pad> = 0 as in the model */
        check_rows(4, 61, ls, -100, 1.0, 8.0, 3 + smooth);
        check_rows(5, 7, ls, 2, 40.0, 2.0, 5 + smooth);   /* one logit dominates its row */
        check_rows(3, 1, ls, -100, 1.0, 1.0, 7 + smooth); /* one class: loss and gradient 0 */
        check_rows(2, 3, ls, -100, 1.0, 1e3, 9 + smooth); /* large logits */
    }
}

/* Rows of +-1e4 whose values are known exactly: no overflow, no NaN. */
static void extreme_logits_by_hand(void **state)
{
    (void)state;
    const double x[8] = {1e4, -1e4, -1e4, -1e4, -1e4, -1e4, -1e4, 1e4};
    const int32_t y[2] = {0, 0};
    double loss[2], g[8];
    /* ls = 0: row 0 is certain (loss 0); row 1 is wrong by 2e4 */
    ref_cross_entropy(loss, g, x, y, 2, 4, 0.0, -100, 1.0);
    assert_near(loss[0], 0.0, 1e-12, "loss", 0);
    assert_near(loss[1], 2e4, 1e-9, "loss", 1);
    assert_near(g[4], -1.0, 1e-15, "grad", 4);
    assert_near(g[7], 1.0, 1e-15, "grad", 7);
    /* ls = 0.1: row 0 pays ls/V * 3 * 2e4 = 1500 for the three other classes */
    ref_cross_entropy(loss, g, x, y, 2, 4, 0.1, -100, 1.0);
    assert_near(loss[0], 1500.0, 1e-9, "loss", 0);
    assert_near(loss[1], 0.925 * 2e4 + 0.025 * 2 * 2e4, 1e-9, "loss", 1);
    assert_near(g[0], 1.0 - 0.925, 1e-15, "grad", 0);
    assert_near(g[1], -0.025, 1e-15, "grad", 1);
}

static void log_softmax_and_argmax_by_hand(void **state)
{
    (void)state;
    const double x[8] = {0, 0, 0, 0, 1e4, -1e4, 3, 1e4};
    double out[8];
    ref_log_softmax_rows(out, x, 2, 4);
    for (size_t i = 0; i < 4; i++) assert_near(out[i], -log(4.0), 1e-15, "log_softmax", i);
    assert_near(out[4], -log(2.0), 1e-12, "log_softmax", 4);
    assert_near(out[5], -2e4 - log(2.0), 1e-9, "log_softmax", 5);
    assert_near(out[6], 3 - 1e4 - log(2.0), 1e-9, "log_softmax", 6);

    /* ties go to the lowest index; NaN wins (torch.argmax gives [1, 1] for
     * [[1, nan, 3, nan], [2, 5, 5, 1]]) */
    const double t[12] = {1, NAN, 3, NAN, 2, 5, 5, 1, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int32_t idx[3];
    ref_argmax_rows(idx, t, 3, 4);
    assert_int_equal(idx[0], 1);
    assert_int_equal(idx[1], 1);
    assert_int_equal(idx[2], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_pytorch),
        cmocka_unit_test(ignored_rows_and_in_place),
        cmocka_unit_test(extreme_logits_by_hand),
        cmocka_unit_test(log_softmax_and_argmax_by_hand),
    };
    return cmocka_run_group_tests_name("ref_loss", tests, NULL, NULL);
}
