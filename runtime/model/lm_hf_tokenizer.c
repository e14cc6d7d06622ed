/*
 * A language model's Hugging Face tokenizer (cf_model_set_hf_tokenizer):
 * the bytes of the directory's tokenizer files, kept so that checkpoints
 * and exports carry them, and the tokenizer loaded from them (tokenizer_hf.h).
 * Its ids are the embedding rows as they are, like GPT-2's BPE (lm_bpe.c);
 * the model's own vocabulary then only holds placeholders.
 */
#include "model.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

clformer_status cf_model_set_hf_tokenizer(cf_model *m, const char *const data[CF_HF_TOK_FILES],
                                          const size_t size[CF_HF_TOK_FILES], const char *origin,
                                          cf_hf_tokenizer *loaded)
{
    cf_hf_tokenizer *t = loaded;
    clformer_status st = t ? CLFORMER_OK : cf_hf_tokenizer_from_files(data, size, origin, &t);
    if (st == CLFORMER_OK)
        st = cf_family_check_task(m->family, CLFORMER_TASK_LM, "a Hugging Face tokenizer");
    if (st == CLFORMER_OK && cf_hf_tokenizer_size(t) > m->cfg.tgt_vocab)
        st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: the tokenizer has %d ids but the model's "
                     "vocabulary has %d rows: use the tokenizer files the model was trained "
                     "with", origin, (int)cf_hf_tokenizer_size(t), m->cfg.tgt_vocab);
    char *copy[CF_HF_TOK_FILES] = {NULL};
    for (int i = 0; i < CF_HF_TOK_FILES && st == CLFORMER_OK; i++) {
        if (!data[i]) continue;
        if (!(copy[i] = malloc(size[i] + 1))) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        memcpy(copy[i], data[i], size[i]);
        copy[i][size[i]] = '\0';
    }
    cf_vocab *v = NULL;
    if (st == CLFORMER_OK) st = cf_placeholder_vocab(m->cfg.tgt_vocab, &v);
    if (st != CLFORMER_OK) {
        for (int i = 0; i < CF_HF_TOK_FILES; i++) free(copy[i]);
        cf_hf_tokenizer_free(t);
        return st;
    }
    cf_model_drop_lm_tokenizer(m); /* the directory's tokenizer replaces any other */
    cf_vocab_free(m->vocab[1]);
    m->vocab[1] = v;
    for (int i = 0; i < CF_HF_TOK_FILES; i++) m->hf_tok_file[i] = copy[i], m->hf_tok_size[i] = size[i];
    m->hf_tok = t;
    m->ids_only = false;
    return CLFORMER_OK;
}

const void *clformer_model_hf_tokenizer_file(const clformer_model *m, const char *name,
                                             size_t *size)
{
    for (int i = 0; i < CF_HF_TOK_FILES; i++)
        if (!strcmp(name, cf_hf_tok_file_names[i]) && m->hf_tok_file[i]) {
            if (size) *size = m->hf_tok_size[i];
            return m->hf_tok_file[i];
        }
    if (size) *size = 0;
    return NULL;
}
