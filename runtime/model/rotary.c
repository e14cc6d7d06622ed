/*
 * A session's table of rotary positions (blocks.rope, ops.h cf_rope_table):
 * cos and sin of every position below max_len, made on the host in fp32 as
 * transformers makes them and uploaded once. Dynamic scaling's angles
 * depend on the sequence's length past its reference length (transformers
 * builds its table for the longest sequence so far); a pass of such a
 * length builds the table for it, so a pass gives what a fresh
 * LlamaForCausalLM gives for that sequence.
 */
#include "buffer.h"
#include "session.h"

#include <stdlib.h>

clformer_status cf_session_rope(cf_session *s, size_t seq_len, cf_view *table, size_t *rows)
{
    const cf_rope_config *rc = &s->model->blocks.rope_config;
    const size_t n = (size_t)s->model->cfg.max_len, dh = rc->dh;
    /* the angles depend on seq_len only once dynamic scaling is past its length */
    const size_t key = rc->scaling == CF_ROPE_DYNAMIC && seq_len > rc->max_positions ? seq_len : 0;
    if (!s->rope) {
        CF_TRY(cf_buffer_alloc(s->ctx, n * dh, "rotary table", &s->rope));
        s->rope_key = SIZE_MAX;
    }
    if (key != s->rope_key) {
        float *host = malloc(n * dh * sizeof *host);
        if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        clformer_status st = cf_rope_table(host, n, rc, key ? key : rc->max_positions);
        if (st == CLFORMER_OK) st = cf_upload(s->ctx, s->rope, 0, host, n * dh);
        free(host);
        CF_TRY(st);
        s->rope_key = key;
    }
    *table = cf_view_at(s->rope, 0);
    *rows = n;
    return CLFORMER_OK;
}
