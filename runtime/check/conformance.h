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
#include "ref_compare.h"

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

typedef struct {
    const char *layer; /* "gemm", "layernorm", ... */
    conf_check_fn run;
} conf_check;

/* NULL-terminated table of every layer's check. */
extern const conf_check conf_checks[];

/* Helpers for check implementations. */
double conf_now_ms(void);
void conf_emit(conf_sink sink, void *user, const char *op, const char *shape, ref_cmp cmp,
               double ms);
/* The worse of two comparisons, for an op with several outputs: a failing
 * one, else the one with the larger error relative to its bound. */
ref_cmp conf_worse(ref_cmp a, ref_cmp b);

/* The checks (one file each). */
clformer_status conf_gemm(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_attention(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_embedding(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_dropout(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_loss(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_adam(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_layernorm(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_linear(cf_ctx *ctx, bool quick, conf_sink sink, void *user);
clformer_status conf_activation(cf_ctx *ctx, bool quick, conf_sink sink, void *user);

#endif
