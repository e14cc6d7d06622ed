/*
 * The model object: its four parameter-shaped buffers (params, grads, Adam
 * m and v), initialisation, vocabularies, memory report and tensor access.
 */
#include "buffer.h"
#include "model.h"
#include "tokenizer_spm.h"
#include "vocab.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void clformer_optim_config_default(clformer_optim_config *c)
{
    memset(c, 0, sizeof *c);
    c->size = sizeof *c;
    c->optimizer = CLFORMER_ADAM;
    c->beta1 = 0.9f;
    c->beta2 = 0.98f;
    c->eps = 1e-9f;
    c->weight_decay = 0.0f;
    c->clip = 1.0f;
}

clformer_status clformer_model_set_optimizer(clformer_model *m, const clformer_optim_config *c)
{
    CF_TRY(CF_CHECK_SIZE(clformer_optim_config, c));
    if (!(c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "Adam betas must be in [0, 1), got %g and %g", c->beta1, c->beta2);
    if (!(c->eps > 0) || !(c->weight_decay >= 0) || !(c->clip >= 0) || !isfinite(c->eps) ||
        !isfinite(c->weight_decay) || !isfinite(c->clip))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "eps must be positive and weight decay and clip non-negative, all "
                       "finite (got eps %g, weight decay %g, clip %g)",
                       c->eps, c->weight_decay, c->clip);
    m->optim.adamw = c->optimizer == CLFORMER_ADAMW;
    m->optim.beta1 = c->beta1;
    m->optim.beta2 = c->beta2;
    m->optim.eps = c->eps;
    m->optim.weight_decay = c->weight_decay;
    m->optim.clip = c->clip;
    return CLFORMER_OK;
}

void clformer_model_optimizer(const clformer_model *m, clformer_optim_config *c)
{
    clformer_optim_config_default(c);
    c->optimizer = m->optim.adamw ? CLFORMER_ADAMW : CLFORMER_ADAM;
    c->beta1 = m->optim.beta1;
    c->beta2 = m->optim.beta2;
    c->eps = m->optim.eps;
    c->weight_decay = m->optim.weight_decay;
    c->clip = m->optim.clip;
}

static clformer_status allocate(cf_model *m)
{
    const size_t n = m->layout.total;
    CF_TRY(cf_buffer_alloc(m->ctx, n, "parameters", &m->params));
    m->params_version = 1; /* 0 stands for a session's copy of none */
    CF_TRY(cf_buffer_alloc(m->ctx, n, "gradients", &m->grads));
    CF_TRY(cf_buffer_alloc(m->ctx, n, "Adam first moments", &m->adam_m));
    return cf_buffer_alloc(m->ctx, n, "Adam second moments", &m->adam_v);
}

clformer_status cf_model_new(cf_ctx *ctx, const clformer_config *config, uint64_t seed,
                             cf_model **out)
{
    *out = NULL;
    CF_TRY(clformer_config_validate(config));
    cf_model *m = calloc(1, sizeof *m);
    if (!m) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    m->cfg = *config;
    m->family = cf_family_of(config);
    m->blocks = m->family->blocks(config);
    m->seed = seed;
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    clformer_model_set_optimizer(m, &oc);
    clformer_status st = cf_param_layout_make(config, &m->layout);
    if (st == CLFORMER_OK) {
        st = allocate(m);
        /* only a failed allocation means "does not fit": a missing kernel
         * directory or a build error says so itself */
        if (st == CLFORMER_ERR_OUT_OF_MEMORY)
            st = cf_fail_prefix(st, "model with %zu parameters does not fit the device: ",
                                m->layout.total);
    }
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    *out = m;
    return CLFORMER_OK;
}

clformer_status clformer_model_create(clformer_context *ctx, const clformer_config *config,
                                      uint64_t seed, clformer_model **out)
{
    cf_model *m;
    CF_TRY(cf_model_new(ctx, config, seed, &m));
    float *host = malloc(m->layout.total * sizeof *host);
    clformer_status st = host ? CLFORMER_OK
                              : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK) {
        cf_param_init(&m->layout, seed, host);
        cf_model_params_written(m);
        st = cf_upload(ctx, m->params, 0, host, m->layout.total);
    }
    free(host);
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    *out = m;
    return CLFORMER_OK;
}

/* The hooks of data parallelism go with the model (model.h); here, not in
 * parallel.c, so that the model calls no file that reads it. */
void cf_collective_free(cf_model *m)
{
    if (m->parallel) m->parallel->release(m);
    m->parallel = NULL;
    m->parallel_state = NULL;
    m->rank = 0;
    m->ranks = 1;
}

void cf_model_drop_lm_tokenizer(cf_model *m)
{
    free(m->spm[1]);
    cf_spm_free(m->spm_proc[1]);
    m->spm[1] = NULL, m->spm_proc[1] = NULL, m->spm_size[1] = 0;
    for (int k = 0; k < 2; k++) free(m->bpe_text[k]), m->bpe_text[k] = NULL, m->bpe_len[k] = 0;
    cf_bpe_free(m->bpe);
    m->bpe = NULL;
    for (int i = 0; i < CF_HF_TOK_FILES; i++)
        free(m->hf_tok_file[i]), m->hf_tok_file[i] = NULL, m->hf_tok_size[i] = 0;
    cf_hf_tokenizer_free(m->hf_tok);
    m->hf_tok = NULL;
}

void clformer_model_free(clformer_model *m)
{
    if (!m) return;
    cf_collective_free(m);
    cf_buffer_free(m->ctx, m->params);
    cf_buffer_free(m->ctx, m->grads);
    cf_buffer_free(m->ctx, m->adam_m);
    cf_buffer_free(m->ctx, m->adam_v);
    cf_param_layout_free(&m->layout);
    cf_vocab_free(m->vocab[0]);
    cf_vocab_free(m->vocab[1]);
    free(m->spm[0]);
    cf_spm_free(m->spm_proc[0]);
    cf_model_drop_lm_tokenizer(m);
    free(m->tokenizer_problem);
    free(m->train_state);
    free(m);
}

const clformer_config *clformer_model_config(const clformer_model *m) { return &m->cfg; }

clformer_task clformer_model_task(const clformer_model *m) { return cf_family_task(m->family); }

clformer_status clformer_model_check_task(const clformer_model *m, clformer_task task,
                                          const char *use)
{
    return cf_family_check_task(m->family, task, use);
}

size_t clformer_model_parameter_count(const clformer_model *m) { return m->layout.total; }

uint64_t clformer_model_step(const clformer_model *m) { return m->step; }

clformer_status clformer_model_set_loss_scale(clformer_model *m, float scale)
{
    int e;
    /* a power of two, so that scaling and unscaling are exact */
    if (!(scale >= 1.0f && scale <= 0x1p120f) || frexpf(scale, &e) != 0.5f)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the loss scale must be a power of two from 1 to 2^120, got %g",
                       (double)scale);
    m->loss_scale = scale;
    m->loss_scale_clean = 0;
    return CLFORMER_OK;
}

float clformer_model_loss_scale(const clformer_model *m) { return m->loss_scale; }

void clformer_model_set_seed(clformer_model *m, uint64_t seed) { m->seed = seed; }

clformer_status clformer_model_set_regularization(clformer_model *m, float dropout,
                                                  float label_smoothing)
{
    clformer_config c = m->cfg;
    c.dropout = dropout;
    c.label_smoothing = label_smoothing;
    CF_TRY(clformer_config_validate(&c));
    m->cfg = c; /* the arena's layout follows on the next batch */
    return CLFORMER_OK;
}

clformer_status cf_model_set_dropout_kinds(clformer_model *m, float attention, float activation)
{
    clformer_config c = m->cfg;
    c.attention_dropout = attention;
    c.activation_dropout = activation;
    CF_TRY(clformer_config_validate(&c));
    m->cfg = c;
    return CLFORMER_OK;
}

clformer_status clformer_model_set_vocabs(clformer_model *m, const char *const *src,
                                          const char *const *tgt)
{
    /* the same rules as every vocabulary: specials first, distinct tokens;
     * of the sides the model has (a language model has no source side: src is
     * ignored, may be NULL) */
    const char *const *tokens[2] = {src, tgt};
    const int sizes[2] = {m->cfg.src_vocab, m->cfg.tgt_vocab};
    static const char *const names[2] = {"source vocabulary", "target vocabulary"};
    cf_vocab *v[2] = {NULL, NULL};
    clformer_status st = CLFORMER_OK;
    for (int k = cf_family_first_side(m->family); k < 2 && st == CLFORMER_OK; k++)
        st = cf_vocab_from_tokens(tokens[k], (size_t)sizes[k], names[k], &v[k]);
    /* one embedding for both sides: one vocabulary, token for token */
    for (int i = 0; st == CLFORMER_OK && m->cfg.share_all_embed && i < m->cfg.tgt_vocab; i++)
        if (strcmp(src[i], tgt[i]))
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "the model shares one embedding between source and target "
                         "(share_all_embed) but the vocabularies differ at token %d ('%s' and "
                         "'%s'): give the same joint vocabulary to both sides", i, src[i], tgt[i]);
    if (st != CLFORMER_OK) {
        cf_vocab_free(v[1]);
        cf_vocab_free(v[0]);
        return st;
    }
    for (int k = 0; k < 2; k++) {
        cf_vocab_free(m->vocab[k]);
        m->vocab[k] = v[k];
    }
    return CLFORMER_OK;
}

clformer_status clformer_model_set_tokenizer(clformer_model *m, bool target, const void *spm,
                                             size_t size)
{
    const int k = target ? 1 : 0;
    const char *side = target ? "target" : "source";
    unsigned char *copy = NULL;
    cf_spm *sp = NULL;
    if (spm) {
        const cf_vocab *vocab = m->vocab[k];
        if (!vocab)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the %s SentencePiece model needs the "
                           "model's vocabularies first", side);
        char origin[64];
        snprintf(origin, sizeof origin, "the %s SentencePiece model", side);
        CF_TRY(cf_spm_load(spm, size, origin, &sp));
        clformer_status st = cf_spm_check_vocab(sp, cf_vocab_tokens(vocab), cf_vocab_size(vocab),
                                                origin, side);
        if (st == CLFORMER_OK && !(copy = malloc(size ? size : 1)))
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st != CLFORMER_OK) {
            cf_spm_free(sp);
            return st;
        }
        memcpy(copy, spm, size);
    }
    free(m->spm[k]);
    cf_spm_free(m->spm_proc[k]);
    m->spm[k] = copy;
    m->spm_proc[k] = sp;
    m->spm_size[k] = copy ? size : 0;
    return CLFORMER_OK;
}

const void *clformer_model_tokenizer(const clformer_model *m, bool target, size_t *size)
{
    const int k = target ? 1 : 0;
    if (size) *size = m->spm_size[k];
    return m->spm[k];
}

clformer_status clformer_model_tokenize(const clformer_model *m, bool target,
                                        const char *sentence, char **out)
{
    const cf_spm *sp = m->spm_proc[target ? 1 : 0];
    if (sp) return cf_spm_pieces_line(sp, sentence, strlen(sentence), out);
    if (!(*out = strdup(sentence)))
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return CLFORMER_OK;
}

const char *const *clformer_model_src_vocab(const clformer_model *m)
{
    return m->vocab[0] ? cf_vocab_tokens(m->vocab[0]) : NULL;
}

const char *const *clformer_model_tgt_vocab(const clformer_model *m)
{
    return m->vocab[1] ? cf_vocab_tokens(m->vocab[1]) : NULL;
}

clformer_memory clformer_model_memory(const clformer_model *m)
{
    clformer_memory r = {0};
    r.parameters = m->layout.total * 4;
    r.gradients = r.parameters;
    r.optimizer = 2 * r.parameters;
    r.total = r.parameters + r.gradients + r.optimizer;
    return r;
}

const cf_param_entry *cf_model_tensor(const cf_model *m, const char *name)
{
    /* a tied generator and a shared source embedding are the target
     * embedding under their PyTorch names */
    const char *alias[2];
    const int n_alias = cf_param_aliases(&m->cfg, alias);
    for (int k = 0; k < n_alias; k++)
        if (!strcmp(name, alias[k])) name = "tgt_embed.weight";
    return cf_param_find(&m->layout, name);
}

size_t clformer_model_tensor_count(const clformer_model *m)
{
    const char *alias[2];
    return m->layout.n_entries + (size_t)cf_param_aliases(&m->cfg, alias);
}

clformer_status clformer_model_tensor_info(const clformer_model *m, size_t index,
                                           const char **name, int *ndim, int64_t shape[2])
{
    const char *alias[2];
    const int n_alias = cf_param_aliases(&m->cfg, alias);
    size_t at = 0; /* the checkpoint's order: each alias right after the embedding */
    for (size_t i = 0; i < m->layout.n_entries; i++) {
        const cf_param_entry *e = &m->layout.entries[i];
        const int copies = 1 + (e->offset == m->layout.tgt_embed ? n_alias : 0);
        if (index < at + (size_t)copies) {
            const size_t k = index - at;
            if (name) *name = k == 0 ? e->name : alias[k - 1];
            if (ndim) *ndim = e->rank;
            if (shape) {
                shape[0] = (int64_t)(e->rank == 2 ? e->rows : e->cols);
                shape[1] = e->rank == 2 ? (int64_t)e->cols : 0;
            }
            return CLFORMER_OK;
        }
        at += (size_t)copies;
    }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "tensor %zu of a model of %zu tensors: the "
                   "index must be below clformer_model_tensor_count", index, at);
}

bool clformer_model_has_training_state(const clformer_model *m) { return m->has_training_state; }

clformer_status clformer_model_set_trainer_state(clformer_model *m, const char *json)
{
    if (json) { /* checked now: a save must not find out, or drop it */
        json_t *o = json_loads(json, 0, NULL);
        const bool ok = json_is_object(o);
        json_decref(o);
        if (!ok)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "the trainer state must be a JSON object, got '%.60s'", json);
    }
    char *copy = json ? strdup(json) : NULL;
    if (json && !copy) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    free(m->train_state);
    m->train_state = copy;
    return CLFORMER_OK;
}

const char *clformer_model_trainer_state(const clformer_model *m) { return m->train_state; }

/* The parameter `name`, checked to hold `count` elements. */
static clformer_status tensor_of_size(const clformer_model *m, const char *name, size_t count,
                                      const cf_param_entry **out)
{
    const cf_param_entry *e = cf_model_tensor(m, name);
    if (!e) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no tensor named '%s'", name);
    size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
    if (n != count)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "tensor '%s' has %zu elements, not %zu",
                       name, n, count);
    *out = e;
    return CLFORMER_OK;
}

clformer_status clformer_model_read_tensor(clformer_model *m, const char *name, bool gradient,
                                           float *out, size_t count)
{
    const cf_param_entry *e = NULL;
    CF_TRY(tensor_of_size(m, name, count, &e));
    return cf_download(m->ctx, gradient ? m->grads : m->params, e->offset, out, count);
}

clformer_status clformer_model_write_tensor(clformer_model *m, const char *name,
                                            const float *data, size_t count)
{
    const cf_param_entry *e = NULL;
    CF_TRY(tensor_of_size(m, name, count, &e));
    cf_model_params_written(m);
    return cf_upload(m->ctx, m->params, e->offset, data, count);
}
