/* include/clformer_check.h over the table of conformance checks. */
#include "clformer_check.h"
#include "conformance.h"

typedef struct {
    clformer_check_sink sink;
    void *user;
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
                                       r->ms};
    f->sink(&out, f->user);
}

size_t clformer_check_layer_count(void) { return conf_op_check_count(); }

const char *clformer_check_layer_name(size_t index)
{
    return index < clformer_check_layer_count() ? conf_op_check(index)->name : NULL;
}

clformer_status clformer_check_layer(clformer_context *ctx, size_t index, bool quick,
                                     clformer_check_sink sink, void *user)
{
    if (index >= clformer_check_layer_count() || !sink)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_layer: no layer %zu (there are %zu) or no sink", index,
                       clformer_check_layer_count());
    forward f = {sink, user};
    return conf_op_check(index)->check(ctx, quick, pass_on, &f);
}
