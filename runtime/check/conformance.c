/* The table of conformance checks and shared helpers. */
#include "conformance.h"
#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const conf_check conf_checks[] = {
    {"gemm", conf_gemm},
    {"embedding", conf_embedding},
    {"dropout", conf_dropout},
    {"layernorm", conf_layernorm},
    {"linear", conf_linear},
    {"activation", conf_activation},
    {"attention", conf_attention},
    {"loss", conf_loss},
    {"adam", conf_adam},
    {NULL, NULL},
};

double conf_now_ms(void) { return 1e3 * cf_now_s(); }

double *conf_widen(const float *x, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; d && i < n; i++) d[i] = x[i];
    return d;
}

bool conf_warm_up(const cf_ctx *ctx) { return ctx->device_profile.timings_meaningful; }

void conf_emit(conf_sink sink, void *user, const char *op, const char *shape, ref_cmp cmp,
               double ms)
{
    conf_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.op, sizeof r.op, "%s", op);
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    r.cmp = cmp;
    r.ms = ms;
    sink(user, &r);
}

ref_cmp conf_worse(ref_cmp a, ref_cmp b)
{
    if (!a.pass || !b.pass) return a.pass ? b : a;
    const double ra = fabs(a.worst_value - a.worst_ref) / fmax(a.worst_bound, 1e-30);
    const double rb = fabs(b.worst_value - b.worst_ref) / fmax(b.worst_bound, 1e-30);
    return rb > ra ? b : a;
}
