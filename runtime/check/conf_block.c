/* Guarded device tensors for the conformance cases (conf_block.h). */
#include "conf_block.h"
#include "status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NaN with a payload no kernel produces: any write over it changes the bits. */
static const uint32_t GUARD_BITS = 0x7FC0DEADu;

size_t conf_block_add(conf_block *b, size_t len)
{
    const size_t t = b->n++;
    if (t >= CONF_MAX_TENSORS) return CONF_MAX_TENSORS - 1; /* caught by create */
    b->off[t] = b->total + CONF_GUARD;
    b->len[t] = len;
    b->total = b->off[t] + len;
    return t;
}

clformer_status conf_block_create(cf_ctx *ctx, conf_block *b)
{
    if (b->n > CONF_MAX_TENSORS)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a conformance case has more than %d tensors",
                       CONF_MAX_TENSORS);
    b->ctx = ctx;
    b->total += CONF_GUARD; /* after the last tensor */
    b->stage = malloc(b->total * sizeof *b->stage);
    b->host = malloc(b->total * sizeof *b->host);
    if (!b->stage || !b->host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < b->total; i++) memcpy(&b->stage[i], &GUARD_BITS, 4);
    for (size_t t = 0; t < b->n; t++) memset(b->stage + b->off[t], 0, b->len[t] * 4);
    return cf_buffer_alloc(ctx, b->total, "conformance case", &b->buf);
}

float *conf_block_init(conf_block *b, size_t t) { return b->stage + b->off[t]; }

void conf_block_init_fill(conf_block *b, size_t t, float value)
{
    for (size_t i = 0; i < b->len[t]; i++) b->stage[b->off[t] + i] = value;
}

clformer_status conf_block_upload(conf_block *b)
{
    return cf_upload(b->ctx, b->buf, 0, b->stage, b->total);
}

cf_view conf_block_view(const conf_block *b, size_t t) { return cf_view_at(b->buf, b->off[t]); }

clformer_status conf_block_read(conf_block *b)
{
    return cf_download(b->ctx, b->buf, 0, b->host, b->total);
}

const float *conf_block_out(const conf_block *b, size_t t) { return b->host + b->off[t]; }

bool conf_block_unchanged(const conf_block *b, size_t t)
{
    return memcmp(b->host + b->off[t], b->stage + b->off[t], b->len[t] * 4) == 0;
}

bool conf_block_guards_ok(const conf_block *b)
{
    size_t i = 0;
    for (size_t t = 0; t <= b->n; t++) {
        const size_t end = t < b->n ? b->off[t] : b->total;
        for (; i < end; i++)
            if (memcmp(&b->host[i], &GUARD_BITS, 4) != 0) return false;
        if (t < b->n) i += b->len[t];
    }
    return true;
}

void conf_block_free(conf_block *b)
{
    if (b->buf) cf_buffer_free(b->ctx, b->buf);
    free(b->stage), free(b->host);
    memset(b, 0, sizeof *b);
}

ref_cmp conf_guarded(ref_cmp c, const conf_block *b)
{
    if (!conf_block_guards_ok(b)) {
        c.pass = false;
        c.why = "guard region overwritten";
    }
    return c;
}

ref_cmp conf_block_refusals(const conf_block *b, const char *bad)
{
    ref_cmp c = {0};
    c.pass = !bad, c.why = bad, c.rule = "refused, naming the fix";
    for (size_t t = 0; t < b->n && c.pass; t++)
        if (!conf_block_unchanged(b, t))
            c.pass = false, c.why = "a refused or empty call changed a tensor";
    return conf_guarded(c, b);
}

clformer_status conf_block_repeat(conf_block *b, conf_launch_fn launch, const void *args,
                                  size_t from, size_t to, ref_cmp *verdict)
{
    float *first = malloc(b->total * sizeof *first);
    if (!first) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    for (int run = 0; run < 2; run++) {
        if ((st = conf_block_upload(b)) || (st = launch(b->ctx, args)) ||
            (st = cf_finish(b->ctx)) || (st = conf_block_read(b)))
            break;
        if (run == 0) memcpy(first, b->host, b->total * sizeof *first);
    }
    *verdict = (ref_cmp){.pass = true, .rule = "bit-identical"};
    for (size_t t = from; t < to && !st; t++)
        if (memcmp(b->host + b->off[t], first + b->off[t], b->len[t] * sizeof *first))
            verdict->pass = false, verdict->why = "a repeat differs";
    free(first);
    return st;
}
