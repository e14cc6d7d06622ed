/*
 * The device tensors of one conformance case: every tensor at its own element
 * offset in one buffer, with CONF_GUARD elements of a known bit pattern
 * before the first tensor and after each one. The op under test must leave
 * the pattern unchanged (an out-of-bounds write shows up there), so each
 * result is judged on its numbers and on the guards.
 *
 *     conf_block b = {0};
 *     size_t x = conf_block_add(&b, n), y = conf_block_add(&b, n);
 *     CF_TRY(conf_block_create(ctx, &b));
 *     fill(conf_block_init(&b, x));             // initial contents, host side
 *     CF_TRY(conf_block_upload(&b));            // the whole buffer, once
 *     run op on conf_block_view(&b, x), conf_block_view(&b, y)
 *     CF_TRY(conf_block_read(&b));              // the whole buffer back
 *     compare conf_block_out(&b, y); conf_guarded(cmp, &b)
 *     conf_block_free(&b);
 *
 * Whole-buffer transfers, because Oclgrind 21.10 mislabels memory that a
 * partial host write covers.
 */
#ifndef CLFORMER_CONF_BLOCK_H
#define CLFORMER_CONF_BLOCK_H

#include "buffer.h"
#include "ref_compare.h"

#define CONF_GUARD 127 /* as CLBlast's tests */
#define CONF_MAX_TENSORS 24

typedef struct {
    cf_ctx *ctx;
    cl_mem buf;
    size_t n, total;
    size_t off[CONF_MAX_TENSORS], len[CONF_MAX_TENSORS];
    float *stage; /* initial contents: the guard pattern and the tensors */
    float *host;  /* the buffer as conf_block_read last read it */
} conf_block;

/* Adds a tensor of `len` elements; returns its index. */
size_t conf_block_add(conf_block *b, size_t len);
/* Allocates the host copies and the device buffer (guard pattern, tensors 0). */
clformer_status conf_block_create(cf_ctx *ctx, conf_block *b);
/* The staged initial contents of tensor t, to fill before conf_block_upload. */
float *conf_block_init(conf_block *b, size_t t);
/* Fills the staged tensor t with `value`. */
void conf_block_init_fill(conf_block *b, size_t t, float value);
clformer_status conf_block_upload(conf_block *b);
cf_view conf_block_view(const conf_block *b, size_t t);
clformer_status conf_block_read(conf_block *b);
/* Tensor t as last read. */
const float *conf_block_out(const conf_block *b, size_t t);
/* True when tensor t, as last read, still holds its initial contents. */
bool conf_block_unchanged(const conf_block *b, size_t t);
/* True when every guard region held its pattern at the last read. */
bool conf_block_guards_ok(const conf_block *b);
void conf_block_free(conf_block *b);

/* The launches of an op under test, on views of a block that `args` holds. */
typedef clformer_status (*conf_launch_fn)(cf_ctx *ctx, const void *args);

/* A repeat (<op>_repeat, a rerun): `launch` run twice, each time from the
 * staged contents (upload, launch, finish, read). *verdict: whether tensors
 * [from, to) read back the same bits both times (rule "bit-identical"; the
 * guards not judged yet). The block then holds the second run as read. A
 * non-OK status: the runs could not be made. */
clformer_status conf_block_repeat(conf_block *b, conf_launch_fn launch, const void *args,
                                  size_t from, size_t to, ref_cmp *verdict);

/* `c`, failed with why = "guard region overwritten" when the guards broke. */
ref_cmp conf_guarded(ref_cmp c, const conf_block *b);

/* The verdict of an op's argument-errors case (<op>_arguments): `bad` (NULL
 * when every bad call was refused as it should be), else every tensor as
 * last read still its initial contents (the refused and empty calls wrote
 * nothing), else the guards. */
ref_cmp conf_block_refusals(const conf_block *b, const char *bad);

#endif
