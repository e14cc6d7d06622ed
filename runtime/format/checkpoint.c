/*
 * Checkpoints (docs/MODEL.md): one safetensors file with the weights under
 * PyTorch's state_dict names, float32, and metadata:
 *   clformer.format       "1"
 *   clformer.config       the config as a JSON object
 *   clformer.src_vocab    JSON array of source tokens in id order
 *   clformer.tgt_vocab    JSON array of target tokens in id order
 *   clformer.src_spm, clformer.tgt_spm  (models trained on raw text, optional)
 *                         base64 of the side's SentencePiece model; its pieces
 *                         are the side's vocabulary
 *   clformer.bpe_vocab, clformer.bpe_merges  (language models with GPT-2's
 *                         BPE, optional) base64 of vocab.json and merges.txt
 *   clformer.hf.<file>    (language models read from a Hugging Face
 *                         directory with its own tokenizer, optional) base64
 *                         of each of its tokenizer files (tokenizer_hf.h)
 *   clformer.train_state  (training checkpoints) JSON: step, seed (a decimal
 *                         string: 64 bits), optimizer settings, trainer state
 *   clformer.run          (a trainer's saves) the run they belong to: 16 hex
 *                         digits, the same in a resumed run's files
 * Training checkpoints add optim.m.<name> and optim.v.<name>.
 *
 * Loading validates the whole header (structure by safetensors.c; here: the
 * metadata, config, vocabularies, every tensor's presence, dtype and shape,
 * no unknown tensors) before anything is allocated on the device, then each
 * tensor as it is read: its CRC-32C (clformer.crc32c, written since this
 * version, checked when present) and that every value is finite.
 */
#include "checkpoint.h"
#include "base64.h"
#include "buffer.h"
#include "door.h"
#include "hf.h"
#include "model.h"
#include "safetensors.h"
#include "vocab.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t numel(const cf_param_entry *e) { return e->rank == 2 ? e->rows * e->cols : e->cols; }

static int shape_of(const cf_param_entry *e, int64_t shape[2])
{
    if (e->rank == 2) {
        shape[0] = (int64_t)e->rows;
        shape[1] = (int64_t)e->cols;
        return 2;
    }
    shape[0] = (int64_t)e->cols;
    return 1;
}

/* ------------------------------------------------------------------------- */
/* saving                                                                    */
/* ------------------------------------------------------------------------- */

static char *vocab_json(const cf_vocab *v)
{
    json_t *a = json_array();
    for (int32_t i = 0; a && i < cf_vocab_size(v); i++)
        json_array_append_new(a, json_string(cf_vocab_token(v, i)));
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

static char *train_state_json(const cf_model *m)
{
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, m->seed);
    json_t *trainer = NULL;
    if (m->train_state) trainer = json_loads(m->train_state, 0, NULL);
    const cf_optim_settings *o = &m->optim;
    json_t *root = json_pack("{s:I, s:s, s:{s:s, s:f, s:f, s:f, s:f, s:f}, s:o}", "step",
                             (json_int_t)m->step, "seed", seed, "optimizer", "name",
                             o->adamw ? "adamw" : "adam", "beta1", (double)o->beta1, "beta2",
                             (double)o->beta2, "eps", (double)o->eps, "weight_decay",
                             (double)o->weight_decay, "clip", (double)o->clip, "trainer",
                             trainer ? trainer : json_null());
    /* fp16 runs' loss scaling (step.c), only once there was one */
    if (root && (m->loss_scale != 0.0f || m->skipped_updates))
        json_object_set_new(root, "loss_scale",
                            json_pack("{s:f, s:I, s:I}", "scale", (double)m->loss_scale,
                                      "clean_steps", (json_int_t)m->loss_scale_clean,
                                      "skipped_updates", (json_int_t)m->skipped_updates));
    char *s = root ? json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(root);
    return s;
}

static clformer_status declare_all(cf_model *m, cf_st_writer *w, bool training)
{
    int64_t shape[2];
    const char *prefix[3] = {"", "optim.m.", "optim.v."};
    for (int part = 0; part < (training ? 3 : 1); part++) {
        for (size_t i = 0; i < m->layout.n_entries; i++) {
            const cf_param_entry *e = &m->layout.entries[i];
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefix[part], e->name);
            int nd = shape_of(e, shape);
            CF_TRY(cf_st_declare(w, name, CF_ST_F32, nd, shape));
            const char *alias[2];
            const int n_alias = part == 0 && e->offset == m->layout.tgt_embed
                                    ? cf_param_aliases(&m->cfg, alias) : 0;
            for (int k = 0; k < n_alias; k++)
                CF_TRY(cf_st_declare(w, alias[k], CF_ST_F32, nd, shape));
        }
    }
    return CLFORMER_OK;
}

static clformer_status write_all(cf_model *m, cf_st_writer *w, bool training, float *host)
{
    cl_mem bufs[3] = {m->params, m->adam_m, m->adam_v};
    const char *prefix[3] = {"", "optim.m.", "optim.v."};
    for (int part = 0; part < (training ? 3 : 1); part++) {
        CF_TRY(cf_download(m->ctx, bufs[part], 0, host, m->layout.total));
        for (size_t i = 0; i < m->layout.n_entries; i++) {
            const cf_param_entry *e = &m->layout.entries[i];
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefix[part], e->name);
            CF_TRY(cf_st_write(w, name, host + e->offset, numel(e) * 4));
            const char *alias[2];
            const int n_alias = part == 0 && e->offset == m->layout.tgt_embed
                                    ? cf_param_aliases(&m->cfg, alias) : 0;
            for (int k = 0; k < n_alias; k++)
                CF_TRY(cf_st_write(w, alias[k], host + e->offset, numel(e) * 4));
        }
    }
    return CLFORMER_OK;
}

/* The metadata keys of the SentencePiece models, source then target. */
static const char *const spm_keys[2] = {"clformer.src_spm", "clformer.tgt_spm"};
/* the vocabularies of the sides (clformer_side) */
static const char *const vocab_keys[2] = {"clformer.src_vocab", "clformer.tgt_vocab"};

/* A checkpoint's SentencePiece models, if any, checked against the model's
 * vocabularies (clformer_model_set_tokenizer). */
static clformer_status load_tokenizers(cf_model *m, const cf_st_reader *r)
{
    for (int k = 0; k < 2; k++) {
        const char *b64 = cf_st_metadata(r, spm_keys[k]);
        if (!b64) continue;
        unsigned char *bytes;
        size_t size;
        CF_TRY(cf_base64_decode(b64, spm_keys[k], &bytes, &size));
        clformer_status st = clformer_model_set_tokenizer(m, k == 1, bytes, size);
        free(bytes);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "%s: ", spm_keys[k]);
    }
    return CLFORMER_OK;
}

/* The metadata keys of a language model's GPT-2 BPE: vocab.json, merges.txt. */
static const char *const bpe_keys[2] = {"clformer.bpe_vocab", "clformer.bpe_merges"};

/* A checkpoint's GPT-2 BPE, if any (both keys or neither). */
static clformer_status load_bpe(cf_model *m, const cf_st_reader *r)
{
    const char *b64[2] = {cf_st_metadata(r, bpe_keys[0]), cf_st_metadata(r, bpe_keys[1])};
    if (!b64[0] && !b64[1]) return CLFORMER_OK;
    if (!b64[0] || !b64[1])
        return cf_fail(CLFORMER_ERR_FORMAT, "metadata has %s without %s: the GPT-2 BPE needs "
                       "both", bpe_keys[b64[0] ? 0 : 1], bpe_keys[b64[0] ? 1 : 0]);
    unsigned char *text[2] = {NULL, NULL};
    size_t size[2] = {0, 0};
    clformer_status st = cf_base64_decode(b64[0], bpe_keys[0], &text[0], &size[0]);
    if (st == CLFORMER_OK) st = cf_base64_decode(b64[1], bpe_keys[1], &text[1], &size[1]);
    if (st == CLFORMER_OK)
        st = cf_model_set_bpe(m, (const char *)text[0], size[0], bpe_keys[0],
                              (const char *)text[1], size[1], bpe_keys[1]);
    free(text[0]);
    free(text[1]);
    return st;
}

/* The metadata key of a Hugging Face tokenizer file: "clformer.hf." + its name. */
static void hf_key(int i, char *key, size_t cap)
{
    snprintf(key, cap, "clformer.hf.%s", cf_hf_tok_file_names[i]);
}

/* A checkpoint's Hugging Face tokenizer files, if any. */
static clformer_status load_hf_tokenizer(cf_model *m, const cf_st_reader *r)
{
    unsigned char *data[CF_HF_TOK_FILES] = {NULL};
    size_t size[CF_HF_TOK_FILES] = {0};
    clformer_status st = CLFORMER_OK;
    bool any = false;
    for (int i = 0; i < CF_HF_TOK_FILES && st == CLFORMER_OK; i++) {
        char key[64];
        hf_key(i, key, sizeof key);
        const char *b64 = cf_st_metadata(r, key);
        if (b64) st = cf_base64_decode(b64, key, &data[i], &size[i]), any = true;
    }
    if (st == CLFORMER_OK && any)
        st = cf_model_set_hf_tokenizer(m, (const char *const *)data, size,
                                       "the checkpoint's clformer.hf", NULL);
    for (int i = 0; i < CF_HF_TOK_FILES; i++) free(data[i]);
    return st;
}

static clformer_status save_hf_tokenizer(const cf_model *m, cf_st_writer *w)
{
    for (int i = 0; i < CF_HF_TOK_FILES; i++) {
        if (!m->hf_tok_file[i]) continue;
        char key[64], *b64 = NULL;
        hf_key(i, key, sizeof key);
        clformer_status st = cf_base64_encode(m->hf_tok_file[i], m->hf_tok_size[i], &b64);
        if (st == CLFORMER_OK) st = cf_st_set_metadata(w, key, b64);
        free(b64);
        CF_TRY(st);
    }
    return CLFORMER_OK;
}

clformer_status clformer_model_save(clformer_model *m, const char *path, bool training)
{
    const int first = cf_family_first_side(m->family); /* its vocabularies: first..1 */
    for (int k = first; k < 2; k++)
        if (!m->vocab[k])
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cannot save '%s': the model has no vocabularies (set them first)",
                           path);
    char *config = clformer_config_to_json(&m->cfg);
    char *vocab[2] = {NULL, NULL};
    bool vocabs = true;
    for (int k = first; k < 2; k++) vocabs = (vocab[k] = vocab_json(m->vocab[k])) && vocabs;
    char *state = training ? train_state_json(m) : NULL;
    float *host = malloc(m->layout.total * sizeof *host);
    cf_st_writer *w = NULL;
    clformer_status st = config && vocabs && host && (!training || state)
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    cf_door_call call;
    if (st == CLFORMER_OK) st = cf_door_call_begin(&call, "the input", NULL, 0, "the output", path, 0);
    const bool door = st == CLFORMER_OK;
    if (st == CLFORMER_OK) st = cf_st_writer_new(path, &w);
    if (st == CLFORMER_OK) st = cf_st_checksums(w);
    if (st == CLFORMER_OK) st = cf_st_set_metadata(w, "clformer.format", "1");
    if (st == CLFORMER_OK && m->run[0]) st = cf_st_set_metadata(w, "clformer.run", m->run);
    if (st == CLFORMER_OK) st = cf_st_set_metadata(w, "clformer.config", config);
    for (int k = first; k < 2 && st == CLFORMER_OK; k++)
        st = cf_st_set_metadata(w, vocab_keys[k], vocab[k]);
    if (st == CLFORMER_OK && training) st = cf_st_set_metadata(w, "clformer.train_state", state);
    for (int k = 0; k < 2 && st == CLFORMER_OK; k++) {
        if (!m->spm[k]) continue;
        char *b64 = NULL;
        st = cf_base64_encode(m->spm[k], m->spm_size[k], &b64);
        if (st == CLFORMER_OK) st = cf_st_set_metadata(w, spm_keys[k], b64);
        free(b64);
    }
    for (int k = 0; k < 2 && st == CLFORMER_OK && m->bpe_text[0]; k++) {
        char *b64 = NULL;
        st = cf_base64_encode(m->bpe_text[k], m->bpe_len[k], &b64);
        if (st == CLFORMER_OK) st = cf_st_set_metadata(w, bpe_keys[k], b64);
        free(b64);
    }
    if (st == CLFORMER_OK) st = save_hf_tokenizer(m, w);
    if (st == CLFORMER_OK) st = declare_all(m, w, training);
    if (st == CLFORMER_OK) st = cf_st_begin(w);
    if (st == CLFORMER_OK) st = write_all(m, w, training, host);
    if (st == CLFORMER_OK) st = cf_st_commit(w);
    cf_st_writer_free(w);
    if (door) cf_door_call_end(&call);
    free(config);
    free(vocab[0]);
    free(vocab[1]);
    free(state);
    free(host);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "saving '%s': ", path);
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* loading                                                                   */
/* ------------------------------------------------------------------------- */

/* Parses a clformer.*_vocab value (vocab.c's rules: a JSON array of distinct
 * tokens, specials first) holding exactly `expected` tokens. */
static clformer_status parse_vocab(const cf_st_reader *r, const char *key, int expected,
                                   cf_vocab **out)
{
    const char *text = cf_st_metadata(r, key);
    if (!text) return cf_fail(CLFORMER_ERR_FORMAT, "metadata lacks %s", key);
    cf_vocab *v;
    CF_TRY(cf_vocab_from_json(text, strlen(text), key, &v));
    const size_t n = (size_t)cf_vocab_size(v);
    if (n != (size_t)expected) {
        cf_vocab_free(v);
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "%s has %zu tokens but the config says %d (the embedding rows)", key, n,
                       expected);
    }
    *out = v;
    return CLFORMER_OK;
}

/* clformer.train_state, parsed on the host (applied once the model exists). */
typedef struct {
    uint64_t step, seed;
    float loss_scale;                 /* fp16 loss scaling; 0 and 0s when absent */
    uint64_t loss_scale_clean, skipped_updates;
    clformer_optim_config optim;
    char *trainer; /* the trainer's part as compact JSON, NULL when absent */
} train_state;

static clformer_status parse_train_state(const char *text, train_state *ts)
{
    memset(ts, 0, sizeof *ts);
    json_error_t err;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    json_int_t step = 0;
    const char *seed = NULL, *name = NULL;
    double b1, b2, eps, wd, clip;
    json_t *trainer = NULL, *scaling = NULL;
    double scale = 0.0;
    json_int_t clean = 0, skipped = 0;
    if (!root || json_unpack_ex(root, &err, 0, "{s:I, s:s, s:{s:s, s:F, s:F, s:F, s:F, s:F}, s?o, s?o}",
                                "step", &step, "seed", &seed, "optimizer", "name", &name,
                                "beta1", &b1, "beta2", &b2, "eps", &eps, "weight_decay", &wd,
                                "clip", &clip, "trainer", &trainer, "loss_scale", &scaling) != 0 ||
        step < 0 ||
        (scaling && json_unpack_ex(scaling, &err, 0, "{s:F, s:I, s:I}", "scale", &scale,
                                   "clean_steps", &clean, "skipped_updates", &skipped) != 0)) {
        json_decref(root);
        return cf_fail(CLFORMER_ERR_FORMAT, "clformer.train_state is malformed: %s",
                       step < 0 ? "its step is negative" : err.text);
    }
    if (scaling && (!(scale >= 0.0 && scale <= 0x1p120) || clean < 0 || skipped < 0 ||
                    (uint64_t)skipped > (uint64_t)step)) {
        json_decref(root);
        return cf_fail(CLFORMER_ERR_FORMAT, "clformer.train_state's loss_scale is out of range "
                       "(scale %g, clean_steps %lld, skipped_updates %lld at step %lld)",
                       scale, (long long)clean, (long long)skipped, (long long)step);
    }
    ts->loss_scale = (float)scale;
    ts->loss_scale_clean = (uint64_t)clean;
    ts->skipped_updates = (uint64_t)skipped;
    if (strcmp(name, "adam") != 0 && strcmp(name, "adamw") != 0) {
        /* the message first: `name` lives in `root` (a use after free that
         * fuzz_train_state found; regression seed corpus/fuzz_train_state/crash-uaf-optimizer) */
        clformer_status st = cf_fail(CLFORMER_ERR_FORMAT, "clformer.train_state names the "
                                     "optimizer '%.40s'; clformer knows adam and adamw", name);
        json_decref(root);
        return st;
    }
    /* digits only (strtoull alone takes "-1", "+5" and leading spaces), in range */
    bool seed_ok = *seed && strspn(seed, "0123456789") == strlen(seed);
    if (seed_ok) {
        errno = 0;
        ts->seed = strtoull(seed, NULL, 10);
        seed_ok = errno == 0;
    }
    ts->step = (uint64_t)step;
    clformer_optim_config_default(&ts->optim);
    ts->optim.optimizer = !strcmp(name, "adamw") ? CLFORMER_ADAMW : CLFORMER_ADAM;
    ts->optim.beta1 = (float)b1, ts->optim.beta2 = (float)b2, ts->optim.eps = (float)eps;
    ts->optim.weight_decay = (float)wd, ts->optim.clip = (float)clip;
    clformer_status st = seed_ok ? CLFORMER_OK
                                 : cf_fail(CLFORMER_ERR_FORMAT,
                                           "clformer.train_state seed is not a number");
    if (st == CLFORMER_OK && trainer && !json_is_null(trainer)) {
        ts->trainer = json_dumps(trainer, JSON_COMPACT | JSON_REAL_PRECISION(17));
        if (!ts->trainer) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    json_decref(root);
    return st;
}

clformer_status cf_model_forget_training(cf_model *m)
{
    CF_TRY(cf_fill_u32(m->ctx, m->adam_m, 0, m->layout.total, 0));
    CF_TRY(cf_fill_u32(m->ctx, m->adam_v, 0, m->layout.total, 0));
    m->step = 0;
    m->loss_scale = 0.0f;
    m->loss_scale_clean = m->skipped_updates = 0;
    m->has_training_state = false;
    free(m->train_state);
    m->train_state = NULL;
    return CLFORMER_OK;
}

clformer_status cf_train_state_check(const char *text)
{
    train_state ts;
    clformer_status st = parse_train_state(text, &ts);
    free(ts.trainer);
    return st;
}

/* Restores step, seed and optimizer settings; keeps the trainer's part. */
static clformer_status apply_train_state(cf_model *m, const train_state *ts)
{
    m->step = ts->step;
    m->seed = ts->seed;
    m->loss_scale = ts->loss_scale;
    m->loss_scale_clean = ts->loss_scale_clean;
    m->skipped_updates = ts->skipped_updates;
    CF_TRY(clformer_model_set_optimizer(m, &ts->optim));
    return ts->trainer ? clformer_model_set_trainer_state(m, ts->trainer) : CLFORMER_OK;
}

/* Every tensor in the file must be one the model expects. */
static clformer_status check_no_strangers(const cf_st_reader *r, const cf_param_layout *l,
                                          bool training, const clformer_config *c)
{
    const char *alias[2];
    const int n_alias = cf_param_aliases(c, alias);
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const char *name = cf_st_tensor_at(r, i)->name;
        const char *base = name;
        if (training && !strncmp(name, "optim.m.", 8)) base = name + 8;
        else if (training && !strncmp(name, "optim.v.", 8)) base = name + 8;
        bool known = cf_param_find(l, base) != NULL;
        for (int k = 0; k < n_alias; k++) known |= !strcmp(name, alias[k]);
        if (known) continue;
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "unexpected tensor '%s': the config's model has no such parameter "
                       "(a checkpoint of another architecture?)", name);
    }
    return CLFORMER_OK;
}

/* Checks dtypes and exact shapes of every parameter (and optimizer state):
 * weights F32, or BF16/F16 as `export --dtype` writes them (read as fp32);
 * the optimizer state F32. */
static clformer_status check_tensors(const cf_st_reader *r, const cf_param_layout *l,
                                     bool training, const clformer_config *c)
{
    const char *alias[2];
    const int n_alias = cf_param_aliases(c, alias);
    const char *prefix[3] = {"", "optim.m.", "optim.v."};
    int64_t shape[2];
    for (int part = 0; part < (training ? 3 : 1); part++)
        for (size_t i = 0; i < l->n_entries; i++) {
            char name[128];
            snprintf(name, sizeof name, "%s%s", prefix[part], l->entries[i].name);
            int nd = shape_of(&l->entries[i], shape);
            if (part == 0) CF_TRY(cf_st_expect_float(r, name, nd, shape, NULL));
            else CF_TRY(cf_st_expect(r, name, CF_ST_F32, nd, shape, NULL));
            for (int k = 0; part == 0 && l->entries[i].offset == l->tgt_embed && k < n_alias; k++)
                CF_TRY(cf_st_expect_float(r, alias[k], nd, shape, NULL));
        }
    return check_no_strangers(r, l, training, c);
}

/* Reads one tensor (its checksum checked by cf_st_read) and refuses NaN and
 * infinity: a model with one would translate garbage, and a run resumed from
 * it would diverge at once. Checked on the host as the bytes arrive: one pass
 * over memory already in cache, no device work. */
static clformer_status read_finite(const cf_st_reader *r, const char *name, float *dst, size_t n)
{
    CF_TRY(cf_st_read_f32(r, cf_st_find(r, name), dst, n));
    for (size_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return cf_fail(CLFORMER_ERR_FORMAT,
                           "tensor '%s' holds %s at element %zu: the checkpoint was saved from a "
                           "run that diverged; use an earlier checkpoint",
                           name, isnan(dst[i]) ? "NaN" : "an infinity", i);
    return CLFORMER_OK;
}

/* One part (the weights, optim.m. or optim.v.) into `host`, laid out as on the device. */
static clformer_status read_part(const cf_st_reader *r, const cf_param_layout *l,
                                 const char *prefix, float *host)
{
    for (size_t i = 0; i < l->n_entries; i++) {
        const cf_param_entry *e = &l->entries[i];
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, e->name);
        CF_TRY(read_finite(r, name, host + e->offset, numel(e)));
    }
    return CLFORMER_OK;
}

/* A tied generator.weight (and a shared src_embed.weight) must hold the
 * target embedding's values. */
static clformer_status check_tied(const cf_st_reader *r, const clformer_config *c,
                                  const cf_param_layout *l, const float *host)
{
    size_t n = (size_t)c->tgt_vocab * (size_t)c->d_model;
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const char *alias[2];
    const int n_alias = cf_param_aliases(c, alias);
    clformer_status st = CLFORMER_OK;
    for (int k = 0; k < n_alias && st == CLFORMER_OK; k++) {
        st = read_finite(r, alias[k], tmp, n);
        if (st == CLFORMER_OK && memcmp(tmp, host + l->tgt_embed, n * 4) != 0)
            st = cf_fail(CLFORMER_ERR_FORMAT,
                         "the config ties %s to tgt_embed.weight (%s) but the two tensors "
                         "differ", alias[k], k == 0 ? "share_tgt_embed" : "share_all_embed");
    }
    free(tmp);
    return st;
}

/* Everything a checkpoint's header says, checked, before any tensor is read. */
typedef struct {
    clformer_config config;
    cf_param_layout layout;
    bool has_layout;
    cf_vocab *src, *tgt;
    bool training;
    train_state ts;
} header;

static void header_free(header *h)
{
    if (h->has_layout) cf_param_layout_free(&h->layout);
    cf_vocab_free(h->src);
    cf_vocab_free(h->tgt);
    free(h->ts.trainer);
    memset(h, 0, sizeof *h);
}

static clformer_status check_header(const cf_st_reader *r, header *h)
{
    memset(h, 0, sizeof *h);
    const char *format = cf_st_metadata(r, "clformer.format");
    if (!format)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "not a clformer checkpoint: no clformer.format metadata (a plain "
                       "safetensors or PyTorch export lacks the config and vocabularies)");
    if (strcmp(format, "1"))
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "clformer.format is \"%.40s\"; this clformer reads format \"1\"", format);
    const char *config_text = cf_st_metadata(r, "clformer.config");
    if (!config_text) return cf_fail(CLFORMER_ERR_FORMAT, "metadata lacks clformer.config");
    clformer_status st = clformer_config_from_json(config_text, &h->config);
    if (st != CLFORMER_OK) {
        memset(h, 0, sizeof *h);
        return cf_fail_prefix(st, "clformer.config: ");
    }
    const char *state = cf_st_metadata(r, "clformer.train_state");
    h->training = state != NULL;
    st = cf_param_layout_make(&h->config, &h->layout);
    h->has_layout = st == CLFORMER_OK;
    const int sizes[2] = {h->config.src_vocab, h->config.tgt_vocab};
    cf_vocab **vocab[2] = {&h->src, &h->tgt};
    /* the config's family is one once its layout is made */
    const int first = st == CLFORMER_OK ? cf_family_first_side(cf_family_of(&h->config)) : 2;
    for (int k = first; k < 2 && st == CLFORMER_OK; k++)
        st = parse_vocab(r, vocab_keys[k], sizes[k], vocab[k]);
    if (st == CLFORMER_OK && h->config.share_all_embed &&
        strcmp(cf_st_metadata(r, "clformer.src_vocab"), cf_st_metadata(r, "clformer.tgt_vocab")))
        st = cf_fail(CLFORMER_ERR_FORMAT,
                     "the config shares one embedding between source and target "
                     "(share_all_embed) but clformer.src_vocab and clformer.tgt_vocab differ");
    if (st == CLFORMER_OK)
        st = check_tensors(r, &h->layout, h->training, &h->config);
    if (st == CLFORMER_OK && h->training) st = parse_train_state(state, &h->ts);
    if (st != CLFORMER_OK) header_free(h);
    return st;
}

/* Reads part `part` (0 weights, 1 optim.m., 2 optim.v.) into `host`, checked. */
/* Values no training run writes, found before they reach the device: a
 * weight beyond WEIGHT_LIMIT in magnitude (a weight of 3.4e38 made every
 * logit infinite and translations empty), a non-finite Adam moment, or a
 * negative second moment (Adam takes its square root: the first step then
 * diverged, and the message blamed the learning rate). A checksum cannot
 * catch these when the file was written that way. */
#define WEIGHT_LIMIT 1e6f
clformer_status cf_checkpoint_check_values(const cf_param_layout *layout, int part,
                                           const float *host)
{
    for (size_t e = 0; e < layout->n_entries; e++) {
        const cf_param_entry *t = &layout->entries[e];
        const size_t n = (t->rank == 2 ? t->rows : 1) * t->cols;
        for (size_t i = 0; i < n; i++) {
            const float x = host[t->offset + i];
            const bool bad = !isfinite(x) || (part == 0 && fabsf(x) > WEIGHT_LIMIT) ||
                             (part == 2 && x < 0);
            if (bad)
                return cf_fail(CLFORMER_ERR_FORMAT,
                               "%s%s element %zu is %g, which no training writes (%s): the file "
                               "is damaged; use an intact checkpoint",
                               part ? (part == 1 ? "optim.m." : "optim.v.") : "", t->name, i,
                               (double)x,
                               part == 0 ? "weights are finite and within 1e6"
                               : part == 1 ? "Adam moments are finite"
                                           : "Adam second moments are finite and not negative");
        }
    }
    return CLFORMER_OK;
}

static clformer_status read_checked_part(const cf_st_reader *r, const header *h, int part,
                                         float *host)
{
    static const char *const prefix[3] = {"", "optim.m.", "optim.v."};
    CF_TRY(read_part(r, &h->layout, prefix[part], host));
    if (part == 0 && h->config.share_tgt_embed) CF_TRY(check_tied(r, &h->config, &h->layout, host));
    return cf_checkpoint_check_values(&h->layout, part, host);
}

clformer_status cf_checkpoint_check(const cf_st_reader *r)
{
    header h;
    CF_TRY(check_header(r, &h));
    float *host = malloc((h.layout.total ? h.layout.total : 1) * sizeof *host);
    clformer_status st =
        host ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int part = 0; part < (h.training ? 3 : 1) && st == CLFORMER_OK; part++)
        st = read_checked_part(r, &h, part, host);
    free(host);
    header_free(&h);
    return st;
}

static clformer_status load(cf_ctx *ctx, const cf_st_reader *r, cf_model **out)
{
    header h;
    CF_TRY(check_header(r, &h));

    /* the header checked: now allocate, then read and check each part */
    cf_model *m = NULL;
    float *host = NULL;
    clformer_status st = cf_model_new(ctx, &h.config, 0, &m);
    if (st == CLFORMER_OK) {
        m->vocab[0] = h.src;
        m->vocab[1] = h.tgt;
        h.src = h.tgt = NULL;
        host = malloc(m->layout.total * sizeof *host);
        if (!host) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (st == CLFORMER_OK) st = load_tokenizers(m, r);
    if (st == CLFORMER_OK) st = load_bpe(m, r);
    if (st == CLFORMER_OK) st = load_hf_tokenizer(m, r);
    if (st == CLFORMER_OK) cf_model_set_run(m, cf_st_metadata(r, "clformer.run"));
    if (st == CLFORMER_OK) st = read_checked_part(r, &h, 0, host);
    if (st == CLFORMER_OK) {
        cf_model_params_written(m);
        st = cf_upload(m->ctx, m->params, 0, host, m->layout.total);
    }
    if (st == CLFORMER_OK && h.training) {
        st = apply_train_state(m, &h.ts);
        if (st == CLFORMER_OK) st = read_checked_part(r, &h, 1, host);
        if (st == CLFORMER_OK) st = cf_upload(m->ctx, m->adam_m, 0, host, m->layout.total);
        if (st == CLFORMER_OK) st = read_checked_part(r, &h, 2, host);
        if (st == CLFORMER_OK) st = cf_upload(m->ctx, m->adam_v, 0, host, m->layout.total);
        m->has_training_state = st == CLFORMER_OK;
    }
    free(host);
    header_free(&h);
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    *out = m;
    return CLFORMER_OK;
}

void cf_model_set_run(cf_model *m, const char *run)
{
    const bool valid = run && strlen(run) == 16 && strspn(run, "0123456789abcdef") == 16;
    snprintf(m->run, sizeof m->run, "%s", valid ? run : "");
}

clformer_status clformer_model_load(clformer_context *ctx, const char *path, clformer_model **out)
{
    *out = NULL;
    if (cf_is_directory(path)) {
        clformer_status st = cf_model_load_hf(ctx, path, out);
        return st == CLFORMER_OK ? st : cf_fail_prefix(st, "loading '%s': ", path);
    }
    cf_st_reader *r = NULL;
    clformer_status st = cf_st_open(path, &r);
    if (st == CLFORMER_OK) {
        st = load(ctx, r, out);
        if (st != CLFORMER_OK) st = cf_fail_prefix(st, "loading '%s': ", path);
    }
    cf_st_close(r);
    return st;
}
