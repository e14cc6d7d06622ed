/*
 * The tokenizer files of a Hugging Face model directory (hf.h), the same
 * for every family's format: the directory's own files for a model read
 * from one with its tokenizer (tokenizer.json, tokenizer.model, ...: the
 * same bytes, so transformers reads the same tokenizer back); GPT-2's
 * vocab.json + merges.txt for a model
 * with a GPT-2 BPE (transformers' tokenizers read them, and clformer as
 * that model's tokenizer); otherwise clformer_vocab.json (the model's
 * tokens in id order) so that a character or byte model keeps its
 * vocabulary through the round trip, and clformer_spm.model beside it for a
 * SentencePiece model; only clformer reads those two.
 */
#include "fileio.h"
#include "hf.h"
#include "model.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clformer_status write_vocab(const clformer_model *m, const char *path)
{
    const char *const *v = clformer_model_tgt_vocab(m);
    if (!v) return CLFORMER_OK;
    json_t *a = json_array();
    for (int i = 0; a && i < m->cfg.tgt_vocab; i++) json_array_append_new(a, json_string(v[i]));
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

clformer_status cf_hf_write_tokenizer(const clformer_model *m, const cf_dir_output *d)
{
    char path[4096];
    if (m->hf_tok) { /* the directory's own files, as they came */
        for (int i = 0; i < CF_HF_TOK_FILES; i++) {
            if (!m->hf_tok_file[i]) continue;
            CF_TRY(cf_dir_output_file(d, cf_hf_tok_file_names[i], path, sizeof path));
            CF_TRY(cf_write_file_atomic(path, m->hf_tok_file[i], m->hf_tok_size[i]));
        }
        return CLFORMER_OK;
    }
    if (m->bpe) { /* GPT-2's own files: transformers' tokenizers read them */
        CF_TRY(cf_dir_output_file(d, "vocab.json", path, sizeof path));
        CF_TRY(cf_write_file_atomic(path, m->bpe_text[0], m->bpe_len[0]));
        CF_TRY(cf_dir_output_file(d, "merges.txt", path, sizeof path));
        return cf_write_file_atomic(path, m->bpe_text[1], m->bpe_len[1]);
    }
    CF_TRY(cf_dir_output_file(d, "clformer_vocab.json", path, sizeof path));
    CF_TRY(write_vocab(m, path));
    if (!m->spm[1]) return CLFORMER_OK;
    CF_TRY(cf_dir_output_file(d, "clformer_spm.model", path, sizeof path));
    return cf_write_file_atomic(path, m->spm[1], m->spm_size[1]);
}

clformer_status cf_hf_write_config(const clformer_model *m, json_t *config, const char *path)
{
    json_t *files = m->bpe || m->hf_tok || !config ? NULL : json_array();
    if (files) {
        json_array_append_new(files, json_string("clformer_vocab.json"));
        if (m->spm[1]) json_array_append_new(files, json_string("clformer_spm.model"));
        json_object_set_new(config, "clformer_files", files);
    }
    char *text = config ? json_dumps(config, JSON_INDENT(2) | JSON_SORT_KEYS |
                                                 JSON_REAL_PRECISION(9))
                        : NULL;
    json_decref(config);
    if (!text) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const clformer_status st = cf_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

clformer_status cf_hf_set_tokenizer(clformer_model *m, const char *dir, const cf_hf_files *f,
                                    cf_hf_parsed *p)
{
    char vocab[4096], merges[4096];
    if (p->hf) {
        cf_hf_tokenizer *t = p->hf;
        p->hf = NULL;
        return cf_model_set_hf_tokenizer(m, (const char *const *)f->text + CF_HF_TOK,
                                         f->size + CF_HF_TOK, dir, t);
    }
    if (p->bpe) {
        snprintf(vocab, sizeof vocab, "%s/vocab.json", dir);
        snprintf(merges, sizeof merges, "%s/merges.txt", dir);
        return cf_model_set_bpe(m, f->text[CF_HF_VOCAB], f->size[CF_HF_VOCAB], vocab,
                                f->text[CF_HF_MERGES], f->size[CF_HF_MERGES], merges);
    }
    if (p->vocab) {
        CF_TRY(clformer_model_set_vocabs(m, NULL, cf_vocab_tokens(p->vocab)));
        if (!p->spm) return CLFORMER_OK;
        const clformer_status st = clformer_model_set_tokenizer(m, true, f->text[CF_HF_SPM],
                                                                f->size[CF_HF_SPM]);
        snprintf(vocab, sizeof vocab, "%s/clformer_spm.model", dir);
        return st == CLFORMER_OK ? st : cf_fail_prefix(st, "'%s': ", vocab);
    }
    /* no tokenizer: ids in, ids out (clformer_lm_encode refuses text) */
    char **names = cf_placeholder_tokens(m->cfg.tgt_vocab);
    if (!names) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const clformer_status st = clformer_model_set_vocabs(m, NULL, (const char *const *)names);
    cf_placeholder_tokens_free(names, m->cfg.tgt_vocab);
    m->ids_only = true;
    if (st == CLFORMER_OK && p->tokenizer_problem) {
        m->tokenizer_problem = p->tokenizer_problem; /* taken over */
        p->tokenizer_problem = NULL;
    }
    return st;
}
