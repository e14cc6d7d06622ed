/* The embedding reference: its backward against central finite differences
 * of its forward (eps 1e-6, atol 1e-5, rtol 1e-3), and its sinusoidal table
 * against the PyTorch tutorial's formulation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ref_embedding.h"
#include "ref_random.h"

#define EPS 1e-6

enum { B = 2, T = 5, C = 7, V = 4 };

typedef struct {
    int32_t tokens[B * T];
    double table[V * C], pos[T * C], w[B * T * C];
    const double *pos_table; /* NULL: sinusoidal */
    double scale;
    const ref_dropout *dropout;
} problem;

static double loss(const problem *p)
{
    double out[B * T * C], l = 0.0;
    ref_embedding_forward(out, p->tokens, p->table, p->pos_table, B, T, C, p->scale, p->dropout);
    for (size_t i = 0; i < B * T * C; i++) l += p->w[i] * out[i];
    return l;
}

static void assert_fd(double fd, double g, const char *what, size_t i)
{
    if (!(fabs(fd - g) <= 1e-5 + 1e-3 * fabs(g)))
        fail_msg("%s[%zu]: analytic %.9g, finite difference %.9g", what, i, g, fd);
}

/* Central difference of the loss in *x. */
static double fd_at(problem *p, double *x)
{
    const double x0 = *x;
    *x = x0 + EPS;
    const double lp = loss(p);
    *x = x0 - EPS;
    const double lm = loss(p);
    *x = x0;
    return (lp - lm) / (2 * EPS);
}

static void check(bool learned, const ref_dropout *d)
{
    problem p;
    ref_rng r = ref_rng_new(learned * 2 + (d != NULL));
    /* ids 0 (pad) and 2 repeat, id 3 never occurs (its gradient stays 0) */
    const int32_t ids[B * T] = {1, 0, 2, 2, 0, 2, 0, 0, 1, 2};
    memcpy(p.tokens, ids, sizeof ids);
    for (size_t i = 0; i < V * C; i++) p.table[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < T * C; i++) p.pos[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < B * T * C; i++) p.w[i] = ref_rng_uniform(&r, -1, 1);
    p.pos_table = learned ? p.pos : NULL;
    p.scale = sqrt((double)C);
    p.dropout = d;

    double dtable[V * C] = {0}, dpos[T * C] = {0};
    ref_embedding_backward(dtable, learned ? dpos : NULL, p.w, p.tokens, B, T, C, p.scale, d);
    for (size_t i = 0; i < V * C; i++) assert_fd(fd_at(&p, &p.table[i]), dtable[i], "dtable", i);
    for (size_t i = 0; i < C; i++) assert_true(dtable[3 * C + i] == 0.0);
    if (learned)
        for (size_t i = 0; i < T * C; i++) assert_fd(fd_at(&p, &p.pos[i]), dpos[i], "dpos", i);

    /* a second call adds the same again */
    double again[V * C];
    memcpy(again, dtable, sizeof again);
    ref_embedding_backward(again, NULL, p.w, p.tokens, B, T, C, p.scale, d);
    for (size_t i = 0; i < V * C; i++) assert_true(fabs(again[i] - 2 * dtable[i]) <= 1e-12);
}

static void embedding_backward_matches_finite_differences(void **state)
{
    (void)state;
    const ref_dropout d = {0.4f, 77, 3, 1};
    check(false, NULL);
    check(true, NULL);
    check(false, &d);
    check(true, &d);
}

/* P[p, 2i] = sin(p * exp(2i * -ln(10000) / C)), P[p, 2i+1] = cos(same), as
 * the PyTorch tutorial builds it; for odd C the last column is a sine. */
static void sinusoid_matches_tutorial_formula(void **state)
{
    (void)state;
    const size_t widths[] = {1, 2, 7, 8, 61, 512};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        const size_t width = widths[w];
        for (size_t pos = 0; pos < 256; pos++)
            for (size_t c = 0; c < width; c++) {
                const double div = exp((double)(c / 2 * 2) * (-log(10000.0) / (double)width));
                const double want = c % 2 ? cos(pos * div) : sin(pos * div);
                assert_true(fabs(ref_sinusoid(pos, c, width) - want) <= 1e-12);
            }
    }
    assert_true(ref_sinusoid(0, 0, 8) == 0.0 && ref_sinusoid(0, 1, 8) == 1.0);
    assert_true(ref_sinusoid(3, 0, 8) == sin(3.0) && ref_sinusoid(3, 1, 8) == cos(3.0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(embedding_backward_matches_finite_differences),
        cmocka_unit_test(sinusoid_matches_tutorial_formula),
    };
    return cmocka_run_group_tests_name("ref_embedding", tests, NULL, NULL);
}
