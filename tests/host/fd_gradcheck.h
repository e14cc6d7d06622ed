/*
 * Central finite differences for the host tests of the reference backward
 * functions (docs/TESTING.md: eps 1e-6, atol 1e-5, rtol 1e-3). A scalar loss
 * L(x) = sum(forward(x) * G) with a fixed random G makes every analytic
 * gradient a dot product that the differences must reproduce.
 */
#ifndef FD_GRADCHECK_H
#define FD_GRADCHECK_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#define FD_EPS 1e-6
#define FD_ATOL 1e-5
#define FD_RTOL 1e-3

typedef double (*fd_loss_fn)(void *user);

/* Perturbs each x[i] by +-FD_EPS, restores it, and compares the central
 * difference of loss() with analytic[i]. Returns the number of mismatches
 * (the first few are printed under `what`). */
static inline int fd_check(const char *what, double *x, size_t n, const double *analytic,
                           fd_loss_fn loss, void *user)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double saved = x[i];
        x[i] = saved + FD_EPS;
        const double lp = loss(user);
        x[i] = saved - FD_EPS;
        const double lm = loss(user);
        x[i] = saved;
        const double fd = (lp - lm) / (2.0 * FD_EPS);
        if (!(fabs(fd - analytic[i]) <= FD_ATOL + FD_RTOL * fabs(fd))) {
            if (bad++ < 5)
                fprintf(stderr, "%s[%zu]: analytic %.10g, finite difference %.10g\n", what, i,
                        analytic[i], fd);
        }
    }
    return bad;
}

/* sum(y * g) over n elements. */
static inline double fd_dot(const double *y, const double *g, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += y[i] * g[i];
    return s;
}

#endif
