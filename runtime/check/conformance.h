/*
 * Conformance checks: each runs one layer's operations (forward and
 * backward) on random inputs on a device, runs the double-precision
 * reference on the same inputs, and reports one result per direction with
 * docs/TESTING.md's comparison rule. Shared by `clformer check` and the cmocka
 * tests, so users and CI check the same thing.
 */
#ifndef CLFORMER_CONFORMANCE_H
#define CLFORMER_CONFORMANCE_H

#include "context.h"
#include "ops.h"
#include "ref_compare.h"
#include "ref_random.h"

typedef struct {
    char op[64];     /* "<layer>_<forward|backward>[_<variant>]", e.g. "layernorm_backward" */
    char shape[96];  /* human-readable, e.g. "N=61 C=93" */
    ref_cmp cmp;     /* errors and pass/fail under the op's rule */
    double ms;       /* device time of the op (wall clock around a finish) */
} conf_result;

/* Receives each result as it is produced. */
typedef void (*conf_sink)(void *user, const conf_result *result);

/* quick: small shapes only (simulators). A non-OK status means the check
 * could not run (the message says why), not that numbers were wrong. */
typedef clformer_status (*conf_check_fn)(cf_ctx *ctx, bool quick, conf_sink sink, void *user);

/*
 * One op, described once: the kernels it launches, its launchers, its
 * double-precision reference, its tolerance rule and its conformance cases.
 * Each runtime/check/conf_<op>.c ends with
 *
 *     CONF_OP(rmsnorm) = {"rmsnorm", "rmsnorm_forward rmsnorm_backward ...", ...};
 *
 * and CMake finds it there (cmake/conf_op_list.cmake writes conf_ops[]), so
 * that line is the op's whole registration. From the table:
 *   - `clformer check` runs every op's check (include/clformer_check.h);
 *   - tests/device/test_ops runs every check on every test device and fails
 *     when a kernel the op names was not launched (cf_launch compares each
 *     launch's arguments with the kernel's signature, so every named kernel
 *     has its arguments checked);
 *   - tests/host/test_ops_table runs every gradcheck (finite differences of
 *     the reference) and fails when a kernel in cl/ belongs to no op.
 */
typedef struct {
    const char *name;      /* "layernorm": clformer check's layer name */
    /* The cl/ kernels it launches, space-separated; "a|b": one of them,
     * chosen by device (flash attention's *_simple on simulators); "~a": a
     * kernel the check does not reach, launched by the test named in `why`. */
    const char *kernels;
    const char *launchers; /* the runtime/ops/ops.h functions it checks */
    const char *reference; /* the double-precision functions it compares with */
    const char *tolerance; /* the rule (docs/TESTING.md), in words */
    conf_check_fn check;   /* quick: --quick shapes; NULL: no check of its own (`why`) */
    /* Central finite differences of the reference backward on small cases:
     * the number of mismatches (0 passes). NULL: tests/host/test_ref_<op>.c. */
    int (*gradcheck)(void);
    const char *why;       /* where what the entries above leave out is tested */
    /* Whether the check runs in bf16 and fp16 too (conf_precision below):
     * ops whose wrappers store activations; GEMM (the model's products go
     * through the linear and attention ops), Adam (fp32 master state) and
     * the casts (bit-exact already) run in fp32 only. */
    bool half;
} conf_op;

#define CONF_OP(name) const conf_op conf_op_##name

/* The body of a check over two arrays of cases: run(ctx, &case, sink, user)
 * on each of `small`, then on each of `full` unless quick (simulators);
 * returns the first failure to run. */
#define CONF_RUN_CASES(run, small, full, quick, ctx, sink, user)                                   \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < sizeof(small) / sizeof *(small); i_++)                            \
            CF_TRY(run(ctx, &(small)[i_], sink, user));                                            \
        if (!(quick))                                                                              \
            for (size_t i_ = 0; i_ < sizeof(full) / sizeof *(full); i_++)                          \
                CF_TRY(run(ctx, &(full)[i_], sink, user));                                         \
    } while (0)

/* Every op's descriptor (generated), NULL-terminated, sorted by name. */
extern const conf_op *const conf_ops[];
/* The ops that have a check, in conf_ops order: their count and the i-th. */
size_t conf_op_check_count(void);
const conf_op *conf_op_check(size_t index);

/* Central finite differences (docs/TESTING.md: step 1e-6, |fd - g| <= 1e-5 +
 * 1e-3 |fd|) of loss(user) against analytic[0..n) as x[0..n) moves; returns
 * the mismatches (the first few printed to stderr under `what`). */
int conf_fd_check(const char *what, double *x, size_t n, const double *analytic,
                  double (*loss)(void *user), void *user);

/*
 * Per precision (docs/TESTING.md, "Per precision"). A check runs with the
 * context's storage precision, ctx->precision, set by its caller (FP32 for
 * the checks as before): with BF16 or FP16 the op wrappers round every
 * activation and activation gradient they write to it, in fp32 containers.
 * A check of an op whose descriptor says `half` rounds its activation inputs
 * and the weights with conf_round (as the model's inputs and the step's
 * weight copy are), widens the rounded values for the reference, and judges
 * each stored output with conf_compare_stored; outputs that stay fp32
 * (statistics, losses, weight gradients) keep the fp32 rules, as their
 * arithmetic is fp32 on the same rounded inputs.
 */
/* x[0..n) rounded in place to ctx->precision (nothing in FP32). */
void conf_round(const cf_ctx *ctx, float *x, size_t n);
/* One value rounded to ctx->precision. */
float conf_round_value(const cf_ctx *ctx, float x);
/* 2^-8 (bf16), 2^-11 (fp16), 0 (fp32): the most storing moves a value, relative. */
double conf_unit_roundoff(const cf_ctx *ctx);
/* A stored output: in FP32 exactly ref_compare_forward, _grad or _gemm
 * (extra ignored); in BF16/FP16 ref_compare_stored. */
ref_cmp conf_compare_stored(const cf_ctx *ctx, const float *y, const double *ref, size_t n,
                            ref_rule rule, const double *gemm_bound, const double *extra);

/* Helpers for check implementations. */
double conf_now_ms(void);
/* Whether to run an op once untimed before timing it (PoCL compiles a kernel
 * at its first launch); not on simulators, whose times mean nothing. */
bool conf_warm_up(const cf_ctx *ctx);
void conf_emit(conf_sink sink, void *user, const char *op, const char *shape, ref_cmp cmp,
               double ms);
/* A malloc'd double copy of x[0..n) (NULL when out of memory). */
double *conf_widen(const float *x, size_t n);
/* The worse of two comparisons, for an op with several outputs: a failing
 * one, else the one with the larger error relative to its bound. */
ref_cmp conf_worse(ref_cmp a, ref_cmp b);

#endif
