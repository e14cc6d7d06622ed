/*
 * What a family's batches hold (family.h), checked on the host before a
 * batch is uploaded: sentence pairs, a source and a target, for a family
 * that translates; windows of one text (tgt alone, src_len 0) for a
 * decoder-only family.
 */
#include "family.h"
#include "status.h"

static clformer_status check_ids(const int32_t *ids, size_t rows, size_t cols, int vocab,
                                 const char *side)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            int32_t id = ids[r * cols + c];
            if (id < 0 || id >= vocab)
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                               "token id %d at %s sentence %zu position %zu is out of range: "
                               "the %s vocabulary has %d tokens (ids 0..%d)",
                               (int)id, side, r, c, side, vocab, vocab - 1);
        }
    return CLFORMER_OK;
}

clformer_status cf_batch_check_pairs(const clformer_config *c, const clformer_batch *b)
{
    if (!b || !b->src || !b->tgt || b->batch == 0 || b->src_len == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "empty batch: no sentences or no tokens");
    if (b->tgt_len < 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "target length %zu is too short: targets hold <sos> ... <eos>", b->tgt_len);
    if (b->src_len > (size_t)c->max_len || b->tgt_len > (size_t)c->max_len)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "batch lengths (source %zu, target %zu) exceed the model's max_len %d",
                       b->src_len, b->tgt_len, c->max_len);
    CF_TRY(check_ids(b->src, b->batch, b->src_len, c->src_vocab, "source"));
    return check_ids(b->tgt, b->batch, b->tgt_len, c->tgt_vocab, "target");
}

clformer_status cf_batch_check_windows(const clformer_config *c, const clformer_batch *b)
{
    if (b && b->src_len != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a decoder-only model has no source: the batch's src_len must be 0, "
                       "got %zu (put the text windows in tgt)", b->src_len);
    if (!b || !b->tgt || b->batch == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "empty batch: no sentences or no tokens");
    if (b->tgt_len < 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "window length %zu is too short: a window holds its inputs and one "
                       "more token (the last label)", b->tgt_len);
    if (b->tgt_len > (size_t)c->max_len + 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "window length %zu exceeds the model's context of %d tokens plus the "
                       "last label", b->tgt_len, c->max_len);
    return check_ids(b->tgt, b->batch, b->tgt_len, c->tgt_vocab, "target");
}
