/*
 * Language modelling's text <-> a decoder-only model's ids: the public
 * clformer_lm_* functions. Training a language model is task_lm.c's.
 */
#include "lm_codec.h"
#include "lm_text.h"
#include "model.h"
#include "status.h"
#include "task.h"

/* The model's tokenizer: its Hugging Face directory's, its GPT-2 BPE, its
 * target SentencePiece model, else its vocabulary of characters or bytes. */
static cf_lm_codec any_codec(const clformer_model *m)
{
    return (cf_lm_codec){m->vocab[1], m->bpe, m->bpe ? NULL : m->spm_proc[1], m->cfg.tgt_vocab,
                         m->hf_tok};
}

clformer_status cf_lm_model_codec(const clformer_model *m, cf_lm_codec *codec)
{
    CF_TRY(cf_family_check_task(m->family, CLFORMER_TASK_LM, "reading text as tokens"));
    if (!m->vocab[1])
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the model has no vocabulary to read text with: set one "
                       "(clformer_model_set_vocabs)");
    if (m->ids_only && m->tokenizer_problem)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the model's tokenizer is not one clformer reads (%s): it takes token ids "
                       "(clformer logits --ids), not text; give a directory with a tokenizer.json "
                       "of byte-level BPE or a tokenizer.model", m->tokenizer_problem);
    if (m->ids_only)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the model has no tokenizer (its directory has no tokenizer.json, "
                       "tokenizer.model, GPT-2's vocab.json + merges.txt or clformer_vocab.json): "
                       "it takes token ids (clformer logits --ids), not text; copy the tokenizer "
                       "files of the model it came from into the directory");
    *codec = any_codec(m);
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
    const cf_lm_codec c = any_codec(m);
    return cf_lm_codec_decode(&c, ids, n, text, NULL);
}

int32_t clformer_lm_eos(const clformer_model *m)
{
    if (m->hf_tok) return cf_hf_tokenizer_eos(m->hf_tok);
    /* GPT-2's end of text, its config.json's eos_token_id (hf_gpt2.c writes it so) */
    return m->bpe ? cf_bpe_token_id(m->bpe, "<|endoftext|>") : -1;
}

clformer_status clformer_lm_vocab(const char *text, size_t len, clformer_lm_tokenizer tokenizer,
                                  char ***tokens, int *n)
{
    return cf_lm_vocab_build(text, len, tokenizer == CLFORMER_LM_BYTE, tokens, n);
}

void clformer_lm_vocab_free(char **tokens, int n) { cf_lm_tokens_free(tokens, n); }
