/* The optimizer reference against steps worked out by hand and against
 * PyTorch's Adam/AdamW with clip_grad_norm_. Runs in double, no device. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ref_adam.h"

static void assert_near(double got, double want, double tol, const char *what, size_t i)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s[%zu] = %.17g, expected %.17g (tolerance %g)", what, i, got, want, tol);
}

static ref_adam_params params(double lr, double wd, bool decoupled)
{
    ref_adam_params hp = {lr, 0.9, 0.98, 1e-9, wd, decoupled, 0, 0};
    ref_adam_bias_corrections(&hp, 1);
    return hp;
}

/*
 * Step 1 by hand, lr 0.1, betas (0.9, 0.98): m = 0.1 g, v = 0.02 g^2, and the
 * bias corrections 0.1 and 0.02 undo exactly that, so the step is
 * lr * g / (|g| + eps).
 *   element 0: p 1, g 0.5           -> 1 - 0.1 * 0.5 / 0.500000001
 *   element 1: p 2, g 0, decayed     AdamW: 2 * (1 - 0.1 * 0.5) = 1.9
 *                                    Adam:  g = 0.5 * 2 = 1 -> 2 - 0.1 / (1 + 1e-9)
 *   element 2: p 2, g 0, not decayed (i >= decay_end) -> 2 exactly
 */
static void first_step_by_hand(void **state)
{
    (void)state;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        /* element 0 must not decay either: decay_end = 2 covers elements 0, 1 */
        double p[3] = {1, 2, 2}, g[3] = {0.5, 0, 0}, m[3] = {0}, v[3] = {0};
        ref_adam_params hp = params(0.1, 0.5, decoupled);
        ref_adam_update(p, g, m, v, 3, 2, 1.0, &hp);
        const double p0 = decoupled ? 1 * 0.95 - 0.1 * 0.5 / 0.500000001
                                    : 1 - 0.1 * 1.0 / (1.0 + 1e-9); /* g = 0.5 + 0.5*1 */
        assert_near(p[0], p0, 1e-15, "p", 0);
        assert_near(p[1], decoupled ? 1.9 : 2 - 0.1 / (1 + 1e-9), 1e-15, "p", 1);
        assert_true(p[2] == 2.0 && m[2] == 0.0 && v[2] == 0.0);
        assert_near(m[0], decoupled ? 0.05 : 0.1, 1e-16, "m", 0);
        assert_near(v[0], decoupled ? 0.005 : 0.02, 1e-16, "v", 0);
    }
}

static void clip_scale_by_hand(void **state)
{
    (void)state;
    assert_near(ref_clip_scale(4.0, 1.0), 1.0 / (2.0 + 1e-6), 1e-16, "clip", 0);
    assert_true(ref_clip_scale(0.25, 1.0) == 1.0);    /* norm below max_norm */
    assert_true(ref_clip_scale(100.0, 0.0) == 1.0);   /* clipping off */
    assert_true(ref_clip_scale(100.0, -1.0) == 1.0);
    assert_true(ref_clip_scale(0.0, 1.0) == 1.0);
    assert_true(isnan(ref_clip_scale(NAN, 1.0)));     /* torch.clamp keeps NaN */
}

/*
 * Generated once with PyTorch 1.13 in float64:
 *   w = p0[:4] (weight_decay 0.1), b = p0[4:] (weight_decay 0), one optimizer
 *   torch.optim.Adam / AdamW(lr=0.01, betas=(0.9, 0.98), eps=1e-9); each step
 *   sets the gradients, calls clip_grad_norm_([w, b], 1.0), then opt.step().
 * The gradients' norms are above, below, above max_norm.
 */
static const double p0[6] = {0.5, -1.25, 2.0, -0.75, 0.3, -0.2};
static const double grads[3][6] = {{0.8, -0.6, 1.5, 0.05, -0.9, 0.4},
                                   {0.01, 0.02, -0.03, 0.04, -0.05, 0.0},
                                   {-2.0, 1.0, 0.5, -0.25, 3.0, -1.5}};
static const double torch_adam[3][6] = {
    {0.49000000002276256, -1.2400000000239815, 1.9900000000107529, -0.74000000019736478,
     0.30999999997716804, -0.20999999994862817},
    {0.48233253283116179, -1.231661718759506, 1.9820404908247629, -0.73027132990052612,
     0.31753708815210296, -0.21673299759416997},
    {0.48268176436617627, -1.2272094474594983, 1.9741270193391141, -0.72141392071396704,
     0.3150385953745386, -0.21351749496788147}};
static const double torch_adamw[3][6] = {
    {0.48950000002568594, -1.238750000034248, 1.9880000000136993, -0.75924999958902539,
     0.30999999997716804, -0.20999999994862817},
    {0.48208767317076151, -1.2313055136953233, 1.9795919869013368, -0.76830852611925959,
     0.31753708815210296, -0.21673299759416997},
    {0.48330471398037156, -1.2305300126282801, 1.9716273256508077, -0.76706940523160982,
     0.3150385953745386, -0.21351749496788147}};

static void matches_pytorch_three_steps(void **state)
{
    (void)state;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        double p[6], m[6] = {0}, v[6] = {0};
        memcpy(p, p0, sizeof p);
        ref_adam_params hp = {0.01, 0.9, 0.98, 1e-9, 0.1, decoupled, 0, 0};
        /* one table by name (GCC's UBSan misjudges the size of a subscripted ?: of arrays) */
        const double(*want)[6] = decoupled ? torch_adamw : torch_adam;
        for (int t = 1; t <= 3; t++) {
            double norm_sq = 0;
            for (size_t i = 0; i < 6; i++) norm_sq += grads[t - 1][i] * grads[t - 1][i];
            ref_adam_bias_corrections(&hp, t);
            ref_adam_update(p, grads[t - 1], m, v, 6, 4, ref_clip_scale(norm_sq, 1.0), &hp);
            for (size_t i = 0; i < 6; i++)
                assert_near(p[i], want[t - 1][i], 1e-14,
                            decoupled ? "adamw p" : "adam p", i);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_step_by_hand),
        cmocka_unit_test(clip_scale_by_hand),
        cmocka_unit_test(matches_pytorch_three_steps),
    };
    return cmocka_run_group_tests_name("ref_adam", tests, NULL, NULL);
}
