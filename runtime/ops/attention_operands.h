/*
 * The operands of the unfused attention path's products, one a (batch,
 * head) pair: where each (b, h)'s matrix of Q, K, V, O, P and their
 * gradients lies, for the batched GEMMs of ops_attention.c and the host
 * items of ops_attention_host.c, which must agree.
 */
#ifndef CF_ATTENTION_OPERANDS_H
#define CF_ATTENTION_OPERANDS_H

#include "ops.h"

/* An operand of the unfused path's products, one a (b, h): the matrix of
 * head h of batch b starts at off + b * batch_step + h * head_step, its
 * rows ld apart. In the head layout a head's block follows the one before
 * (batch_step = heads * head_step); as rows (B, T, heads * dh), head h is
 * columns h * dh.. of each row. */
typedef struct {
    cl_mem buf;
    size_t off, ld, batch_step, head_step;
} heads_operand;

/* Blocks of `block` floats, rows ld apart, `heads` a batch. */
static inline heads_operand in_heads(cf_view v, size_t ld, size_t block, size_t heads)
{
    return (heads_operand){v.buf, v.off, ld, heads * block, block};
}

/* Rows (B, T) of stride ld, head h at column h * dh. */
static inline heads_operand in_rows(cf_view v, size_t ld, size_t T, size_t dh)
{
    return (heads_operand){v.buf, v.off, ld, T * ld, dh};
}

/* An operand of the unfused products with a row per query (Q, O, dO, dQ)
 * or per key (K, V, dK, dV): rows of stride ld where the shape gives one
 * (q_ld, out_rows, dq_ld; kv_ld, dkv_ld), else heads (a key/value head's
 * group of query heads one block; a key/value head's Tk_cap rows). */
static inline heads_operand query_operand(cf_view x, size_t ld, const cf_attention_shape *s)
{
    return ld ? in_rows(x, ld, s->Tq, s->dh)
              : in_heads(x, s->dh, cf_attention_group(s) * s->Tq * s->dh,
                         cf_attention_kv_heads(s));
}

static inline heads_operand key_operand(cf_view x, size_t ld, const cf_attention_shape *s)
{
    return ld ? in_rows(x, ld, s->Tk, s->dh)
              : in_heads(x, s->dh, s->Tk_cap * s->dh, cf_attention_kv_heads(s));
}

/* O's and dO's row stride: the heads' columns alone, where out_rows. */
static inline size_t out_ld(const cf_attention_shape *s) { return s->out_rows ? s->H * s->dh : 0; }

#endif
