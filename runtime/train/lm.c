/*
 * Language modelling's text <-> a decoder-only model's ids: the public
 * clformer_lm_* functions. Training a language model is task_lm.c's.
 */
#include "lm_codec.h"
#include "lm_text.h"
#include "model.h"
#include "status.h"
#include "task.h"

clformer_status cf_lm_model_codec(const clformer_model *m, cf_lm_codec *codec)
{
    if (!clformer_config_decoder_only(&m->cfg) || !m->vocab[1])
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "text for a language model needs a decoder-only model with a vocabulary");
    if (m->ids_only)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the model has no tokenizer (its directory has neither GPT-2's vocab.json "
                       "+ merges.txt nor clformer_vocab.json): it takes token ids, not text");
    *codec = (cf_lm_codec){m->vocab[1], m->bpe, m->bpe ? NULL : m->spm_proc[1], m->cfg.tgt_vocab};
    return CLFORMER_OK;
}

clformer_status clformer_lm_encode(const clformer_model *m, const char *text, size_t len,
                                   int32_t **ids, size_t *n)
{
    cf_lm_codec c;
    CF_TRY(cf_lm_model_codec(m, &c));
    size_t unknown;
    return cf_lm_codec_encode(&c, text, len, ids, n, &unknown);
}

clformer_status clformer_lm_encode_file(const clformer_model *m, const char *path,
                                        int32_t **ids, size_t *n, size_t *bytes)
{
    cf_lm_codec c;
    CF_TRY(cf_lm_model_codec(m, &c));
    size_t unknown;
    return cf_lm_codec_encode_file(&c, path, 0, ids, n, &unknown, bytes);
}

clformer_status clformer_lm_decode(const clformer_model *m, const int32_t *ids, size_t n,
                                   char **text)
{
    if (!m->vocab[1]) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no vocabulary");
    const cf_lm_codec c = {m->vocab[1], m->bpe, m->bpe ? NULL : m->spm_proc[1], m->cfg.tgt_vocab};
    return cf_lm_codec_decode(&c, ids, n, text, NULL);
}

clformer_status clformer_lm_vocab(const char *text, size_t len, clformer_lm_tokenizer tokenizer,
                                  char ***tokens, int *n)
{
    return cf_lm_vocab_build(text, len, tokenizer == CLFORMER_LM_BYTE, tokens, n);
}

void clformer_lm_vocab_free(char **tokens, int n) { cf_lm_tokens_free(tokens, n); }
