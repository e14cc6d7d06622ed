/*
 * A language model's GPT-2 byte-level BPE (clformer_model_set_bpe): the
 * texts of vocab.json and merges.txt, kept so that checkpoints and Hugging
 * Face exports carry them, and the tokenizer loaded from them. The BPE's ids
 * are the embedding rows as they are: a model that reads GPT-2's weights
 * reads its ids too. The model's own vocabulary (whose rules want
 * <pad> <sos> <eos> <unk> as ids 0..3) then only holds placeholders.
 */
#include "model.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cf_placeholder_tokens_free(char **tokens, int n)
{
    for (int i = 0; tokens && i < n; i++) free(tokens[i]);
    free(tokens);
}

char **cf_placeholder_tokens(int n)
{
    char **v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    for (int i = 0; v && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "<id_%d>", i);
        if (!(v[i] = strdup(i < CF_N_SPECIALS ? cf_special_tokens[i] : name))) {
            cf_placeholder_tokens_free(v, i);
            return NULL;
        }
    }
    return v;
}

clformer_status cf_placeholder_vocab(int n, cf_vocab **out)
{
    *out = NULL;
    char **names = cf_placeholder_tokens(n);
    if (!names) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_vocab_from_tokens((const char *const *)names, (size_t)n,
                                              "the placeholder vocabulary", out);
    cf_placeholder_tokens_free(names, n);
    return st;
}

static char *copy_text(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c) memcpy(c, s, n), c[n] = '\0';
    return c;
}

clformer_status cf_model_set_bpe(cf_model *m, const char *vocab, size_t vocab_len,
                                 const char *vocab_origin, const char *merges, size_t merges_len,
                                 const char *merges_origin)
{
    if (!vocab) {
        free(m->bpe_text[0]), free(m->bpe_text[1]);
        cf_bpe_free(m->bpe);
        m->bpe_text[0] = m->bpe_text[1] = NULL, m->bpe_len[0] = m->bpe_len[1] = 0, m->bpe = NULL;
        return CLFORMER_OK;
    }
    CF_TRY(cf_family_check_task(m->family, CLFORMER_TASK_LM, "a GPT-2 BPE tokenizer"));
    if (!merges)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a GPT-2 BPE tokenizer needs merges.txt "
                       "beside vocab.json");
    cf_bpe *bpe;
    CF_TRY(cf_bpe_load(vocab, vocab_len, vocab_origin, merges, merges_len, merges_origin, &bpe));
    const int32_t n = cf_bpe_vocab_size(bpe);
    clformer_status st = CLFORMER_OK;
    if (n > m->cfg.tgt_vocab)
        st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                     "%s has %d tokens but the model's vocabulary has %d rows: use the "
                     "tokenizer files the model was trained with", vocab_origin, (int)n,
                     m->cfg.tgt_vocab);
    char *texts[2] = {copy_text(vocab, vocab_len), copy_text(merges, merges_len)};
    if (st == CLFORMER_OK && (!texts[0] || !texts[1]))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    cf_vocab *v = NULL;
    if (st == CLFORMER_OK) st = cf_placeholder_vocab(m->cfg.tgt_vocab, &v);
    if (st != CLFORMER_OK) {
        free(texts[0]), free(texts[1]);
        cf_bpe_free(bpe);
        return st;
    }
    cf_model_drop_lm_tokenizer(m); /* the BPE's ids replace any other tokenizer's */
    cf_vocab_free(m->vocab[1]);
    m->vocab[1] = v;
    m->bpe_text[0] = texts[0], m->bpe_text[1] = texts[1];
    m->bpe_len[0] = vocab_len, m->bpe_len[1] = merges_len;
    m->bpe = bpe;
    return CLFORMER_OK;
}

clformer_status clformer_model_set_bpe(clformer_model *m, const char *vocab, size_t vocab_len,
                                       const char *merges, size_t merges_len)
{
    return cf_model_set_bpe(m, vocab, vocab_len, "vocab.json", merges, merges_len, "merges.txt");
}

const char *clformer_model_bpe(const clformer_model *m, bool merges, size_t *size)
{
    if (size) *size = m->bpe_len[merges ? 1 : 0];
    return m->bpe_text[merges ? 1 : 0];
}
