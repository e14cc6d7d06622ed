/* Learning-rate schedules: fairseq's inverse_sqrt (clformer train
 * --lr-schedule inverse-sqrt) against fairseq's definition, replayed as its
 * trainer drives it, and the noam schedule against the paper's formula. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clformer.h"

/* fairseq's InverseSquareRootSchedule as its trainer uses it: the optimizer
 * starts at warmup_init_lr; after every update the schedule is told the
 * number of updates done, and sets the rate of the next update to
 * warmup_init_lr + updates * (lr - warmup_init_lr) / warmup while updates <
 * warmup, else lr * sqrt(warmup) * updates^-0.5. */
typedef struct {
    double lr, init, warmup, rate;
} fairseq_inverse_sqrt;

static void fairseq_init(fairseq_inverse_sqrt *f, double lr, double init, double warmup)
{
    *f = (fairseq_inverse_sqrt){lr, init, warmup, init};
}

static void fairseq_step_update(fairseq_inverse_sqrt *f, double num_updates)
{
    const double lr_step = (f->lr - f->init) / f->warmup;
    const double decay_factor = f->lr * sqrt(f->warmup);
    f->rate = num_updates < f->warmup ? f->init + num_updates * lr_step
                                      : decay_factor / sqrt(num_updates);
}

static void inverse_sqrt_matches_fairseq(void **state)
{
    (void)state;
    static const struct {
        float lr, init;
        uint64_t warmup;
    } cases[] = {{5e-3f, 1e-7f, 2000}, {5e-3f, 0.0f, 4000}, {1e-3f, 1e-4f, 1}, {2e-4f, 0, 7}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        fairseq_inverse_sqrt f;
        fairseq_init(&f, cases[c].lr, cases[c].init, (double)cases[c].warmup);
        for (uint64_t step = 1; step <= 20000; step++) {
            const float got = clformer_learning_rate_inverse_sqrt(cases[c].lr, cases[c].init, step,
                                                                  cases[c].warmup);
            if (fabs(got - f.rate) > 1e-6 * f.rate + 1e-12)
                fail_msg("case %zu step %llu: %.9g, fairseq %.9g", c, (unsigned long long)step,
                         got, f.rate);
            fairseq_step_update(&f, (double)step); /* `step` updates are done */
        }
    }
    /* the figures of the recipe, written out: lr 0.005, 2000 warm-up updates */
    assert_float_equal(clformer_learning_rate_inverse_sqrt(5e-3f, 0, 1, 2000), 0.0, 1e-12);
    assert_float_equal(clformer_learning_rate_inverse_sqrt(5e-3f, 0, 1001, 2000), 2.5e-3, 1e-9);
    assert_float_equal(clformer_learning_rate_inverse_sqrt(5e-3f, 0, 2001, 2000), 5e-3, 1e-9);
    assert_float_equal(clformer_learning_rate_inverse_sqrt(5e-3f, 0, 8001, 2000), 2.5e-3, 1e-9);
    /* the enum form is the same schedule from 0 */
    assert_float_equal(clformer_learning_rate(CLFORMER_LR_INVERSE_SQRT, 5e-3f, 512, 8001, 2000),
                       2.5e-3, 1e-9);
}

static void noam_matches_the_paper(void **state)
{
    (void)state;
    /* lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), times the factor */
    for (uint64_t step = 1; step <= 10000; step += 37) {
        const double want = 2.0 / sqrt(512.0) *
                            fmin(1.0 / sqrt((double)step), (double)step * pow(4000.0, -1.5));
        const float got = clformer_learning_rate(CLFORMER_LR_NOAM, 2.0f, 512, step, 4000);
        if (fabs(got - want) > 1e-6 * want) fail_msg("step %llu: %.9g, want %.9g",
                                                     (unsigned long long)step, got, want);
    }
    assert_float_equal(clformer_learning_rate(CLFORMER_LR_CONSTANT, 3e-4f, 512, 99, 10), 3e-4f,
                       0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inverse_sqrt_matches_fairseq),
        cmocka_unit_test(noam_matches_the_paper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
