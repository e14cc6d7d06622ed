/* The ranks' inputs compared before training (see rank_agreement.h). */
#include "rank_agreement.h"
#include "cli.h"
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64 bits: a difference between ranks, not an attacker, is what
 * it must catch. Words and option fields are hashed in memory order, so the
 * ranks of a job must share a byte order (every MPI platform clformer
 * builds on does). */
static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}
#define FNV_START 0xcbf29ce484222325ULL
#define HASH_FIELD(h, v) ((h) = fnv((h), &(v), sizeof(v)))

/* A file's bytes (0 for no file; a file this rank cannot read hashes as
 * its name: the trainer has already read it, so that does not happen). */
static uint64_t file_hash(const char *path)
{
    if (!path) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return fnv(FNV_START, path, strlen(path));
    /* FNV-1a's step over 8-byte words, then the bytes left: 4x the speed of
     * bytes (0.58 against 0.16 GB/s on the loaded 2-core machine), and still
     * a bijection per step, so one differing word always changes the hash */
    uint64_t h = FNV_START;
    static unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t word;
            memcpy(&word, buf + i, 8);
            h = (h ^ word) * 0x100000001b3ULL;
        }
        h = fnv(h, buf + i, n - i);
    }
    fclose(f);
    return h;
}

static uint64_t words_hash(uint64_t h, const char *const *words, int n)
{
    for (int i = 0; words && i < n; i++) h = fnv(h, words[i], strlen(words[i]) + 1);
    return h;
}

static uint64_t vocab_hash(const clformer_model *model)
{
    const clformer_config *c = clformer_model_config(model);
    uint64_t h = words_hash(FNV_START, clformer_model_src_vocab(model), c->src_vocab);
    h = words_hash(h ^ 1, clformer_model_tgt_vocab(model), c->tgt_vocab);
    for (int side = 0; side < 2; side++) {
        size_t size = 0;
        const void *spm = clformer_model_tokenizer(model, side == 1, &size);
        h = fnv(h ^ (uint64_t)(2 + side), spm ? spm : "", size);
    }
    return h;
}

/* The options as numbers, field by field (no padding bytes). */
static uint64_t options_hash(const clformer_train_options *o)
{
    uint64_t h = FNV_START;
    const clformer_config *c = &o->config;
    HASH_FIELD(h, c->d_model), HASH_FIELD(h, c->n_heads), HASH_FIELD(h, c->d_ff);
    HASH_FIELD(h, c->n_enc_layers), HASH_FIELD(h, c->n_dec_layers), HASH_FIELD(h, c->max_len);
    HASH_FIELD(h, c->norm_first), HASH_FIELD(h, c->activation), HASH_FIELD(h, c->positional);
    HASH_FIELD(h, c->dropout), HASH_FIELD(h, c->ln_eps), HASH_FIELD(h, c->label_smoothing);
    HASH_FIELD(h, c->attention_dropout), HASH_FIELD(h, c->activation_dropout);
    HASH_FIELD(h, c->share_tgt_embed), HASH_FIELD(h, c->share_all_embed);
    HASH_FIELD(h, o->min_freq), HASH_FIELD(h, o->max_vocab);
    HASH_FIELD(h, o->batching.batch_size), HASH_FIELD(h, o->batching.batch_tokens);
    HASH_FIELD(h, o->batching.shuffle), HASH_FIELD(h, o->batching.seed);
    HASH_FIELD(h, o->batching.bucket_window);
    HASH_FIELD(h, o->override_dropout), HASH_FIELD(h, o->override_label_smoothing);
    HASH_FIELD(h, o->seed), HASH_FIELD(h, o->optim.optimizer), HASH_FIELD(h, o->optim.weight_decay);
    HASH_FIELD(h, o->optim.clip), HASH_FIELD(h, o->lr), HASH_FIELD(h, o->schedule);
    HASH_FIELD(h, o->warmup), HASH_FIELD(h, o->steps), HASH_FIELD(h, o->epochs);
    HASH_FIELD(h, o->eval_every), HASH_FIELD(h, o->bleu_sentences);
    HASH_FIELD(h, o->save_every), HASH_FIELD(h, o->check_sync_every);
    HASH_FIELD(h, o->warmup_init_lr), HASH_FIELD(h, o->keep_last), HASH_FIELD(h, o->save_best);
    HASH_FIELD(h, o->best_metric), HASH_FIELD(h, o->patience);
    HASH_FIELD(h, o->max_seconds); /* every rank joins the time limit's per-step sum */
    return h;
}

enum { N_ITEMS = 7 };

int rank_agreement(const char *command, const clformer_train_options *o,
                   const clformer_model *model)
{
    const ranks_info *r = ranks_get();
    if (r->size <= 1) return 0;
    static const char *const what[N_ITEMS] = {
        "the training source text (--src)",   "the training target text (--tgt)",
        "the validation source text (--val-src)", "the validation target text (--val-tgt)",
        "the --init/--resume checkpoint",     "the vocabularies",
        "the training options",
    };
    uint64_t mine[N_ITEMS] = {
        file_hash(o->src_path),
        file_hash(o->tgt_path),
        file_hash(o->val_src_path),
        file_hash(o->val_tgt_path),
        file_hash(o->resume_path ? o->resume_path : o->init_path),
        vocab_hash(model),
        options_hash(o),
    };
    uint64_t *all = malloc((size_t)r->size * N_ITEMS * sizeof *all);
    if (!all) {
        cli_error(command, "out of host memory");
        return 1;
    }
    ranks_allgather_u64(mine, N_ITEMS, all);
    /* the first item on which some rank differs from rank 0, and those ranks */
    int item = -1;
    char ranks[256] = "";
    size_t used = 0, count = 0;
    for (int i = 0; i < N_ITEMS && item < 0; i++)
        for (int k = 1; k < r->size; k++)
            if (all[(size_t)k * N_ITEMS + i] != all[i]) {
                item = i;
                break;
            }
    for (int k = 1; item >= 0 && k < r->size; k++)
        if (all[(size_t)k * N_ITEMS + (size_t)item] != all[item]) {
            count++;
            if (used + 16 < sizeof ranks) {
                int w = snprintf(ranks + used, sizeof ranks - used, "%s%d", count > 1 ? ", " : "", k);
                if (w > 0) used += (size_t)w;
            } else if (used + 5 < sizeof ranks && ranks[used - 1] != '.') {
                used += (size_t)snprintf(ranks + used, sizeof ranks - used, ", ...");
            }
        }
    free(all);
    if (item < 0) return 0;
    if (r->rank == 0)
        cli_error(command, "the ranks were started differently: rank%s %s differ%s from rank 0 "
                  "in %s; give every rank the same data and options (check the mpirun command "
                  "line, e.g. its ':'-separated parts)",
                  count > 1 ? "s" : "", ranks, count > 1 ? "" : "s", what[item]);
    fflush(stderr);
    ranks_barrier(); /* rank 0's message goes out before the job ends */
    return 1;
}
