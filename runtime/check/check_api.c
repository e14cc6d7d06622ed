/* include/clformer_check.h over the table of conformance checks. */
#include "clformer_check.h"
#include "conformance.h"

typedef struct {
    clformer_check_sink sink;
    void *user;
    const char *precision;
} forward;

static void pass_on(void *user, const conf_result *r)
{
    const forward *f = user;
    const clformer_check_result out = {r->op,
                                       r->shape,
                                       r->cmp.max_abs_err,
                                       r->cmp.max_rel_err,
                                       r->cmp.nmse,
                                       r->cmp.rule ? r->cmp.rule : "",
                                       r->cmp.pass,
                                       r->ms,
                                       f->precision};
    f->sink(&out, f->user);
}

size_t clformer_check_layer_count(void) { return conf_op_check_count(); }

const char *clformer_check_layer_name(size_t index)
{
    return index < clformer_check_layer_count() ? conf_op_check(index)->name : NULL;
}

bool clformer_check_layer_has_precision(size_t index, clformer_precision precision)
{
    if (index >= clformer_check_layer_count() || !clformer_precision_name(precision)) return false;
    return precision == CLFORMER_FP32 || conf_op_check(index)->half;
}

clformer_status clformer_check_layer_in(clformer_context *ctx, size_t index, bool quick,
                                        clformer_precision precision, clformer_check_sink sink,
                                        void *user)
{
    if (index >= clformer_check_layer_count() || !sink)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_layer: no layer %zu (there are %zu) or no sink", index,
                       clformer_check_layer_count());
    if (!clformer_check_layer_has_precision(index, precision))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_layer: layer %s has no %s check (fp32 only)",
                       conf_op_check(index)->name,
                       clformer_precision_name(precision) ? clformer_precision_name(precision)
                                                          : "such");
    forward f = {sink, user, clformer_precision_name(precision)};
    /* the ops read the storage precision from the context (context.h) */
    const clformer_precision saved = ctx->precision;
    ctx->precision = precision;
    clformer_status st = conf_op_check(index)->check(ctx, quick, pass_on, &f);
    ctx->precision = saved;
    return st;
}

clformer_status clformer_check_layer(clformer_context *ctx, size_t index, bool quick,
                                     clformer_check_sink sink, void *user)
{
    return clformer_check_layer_in(ctx, index, quick, CLFORMER_FP32, sink, user);
}
