/* `clformer train --tokenizer spm` (spm_setup.h). */
#include "spm_setup.h"
#include "cli.h"
#include "clformer_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *spm_flags_problem(const spm_flags *f, bool fresh, bool resume)
{
    const bool spm = f->tokenizer && !strcmp(f->tokenizer, "spm");
    const bool any_model = f->model || f->src_model || f->tgt_model;
    if (!spm) {
        if (f->vocab_size || f->type || any_model)
            return "--vocab-size, --tokenizer-type and --tokenizer-model go with --tokenizer spm";
        return NULL;
    }
    /* --resume: the same command again, whose tokenizer options are then
     * compared with the checkpoint's models (resume_check_vocab) */
    if (resume) return NULL;
    if (!fresh) return "--init uses the model's own tokenizer: remove --tokenizer";
    if (f->model && (f->src_model || f->tgt_model))
        return "give --tokenizer-model (both sides) or --src-/--tgt-tokenizer-model, not both";
    if (!f->model && !f->src_model != !f->tgt_model)
        return "--src-tokenizer-model and --tgt-tokenizer-model go together";
    if (!f->vocab_size == !any_model)
        return "--tokenizer spm needs --vocab-size N (learn one) or --tokenizer-model FILE";
    if (f->type && !f->vocab_size) return "--tokenizer-type goes with --vocab-size";
    return NULL;
}

static int read_model(const char *path, void **bytes, size_t *size)
{
    char *data;
    if (clformer_read_file(path, &data, size) != CLFORMER_OK) {
        cli_runtime_error("train", NULL);
        return 1;
    }
    *bytes = data;
    return 0;
}

/* A joint model learned from both training files. */
static int learn(const spm_flags *f, const clformer_train_options *o, void **bytes,
                 size_t *size)
{
    clformer_parallel_text *text;
    if (clformer_parallel_text_load(o->src_path, o->tgt_path, &text) != CLFORMER_OK) {
        cli_runtime_error("train", "training data");
        return 1;
    }
    const size_t n = clformer_parallel_text_size(text);
    const char **lines = malloc((n > 0 ? 2 * n : 1) * sizeof *lines);
    if (!lines) {
        clformer_parallel_text_free(text);
        cli_error("train", "out of host memory");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        lines[2 * i] = clformer_parallel_text_source(text, i);
        lines[2 * i + 1] = clformer_parallel_text_target(text, i);
    }
    const char *type = f->type ? f->type : "unigram";
    fprintf(stderr, "learning a %s SentencePiece vocabulary of %ld pieces from %zu sentences\n",
            type, f->vocab_size, 2 * n);
    clformer_status st = clformer_spm_train(lines, 2 * n, (int)f->vocab_size, type, bytes, size);
    free(lines);
    clformer_parallel_text_free(text);
    if (st != CLFORMER_OK) {
        cli_runtime_error("train", NULL);
        return 1;
    }
    return 0;
}

int spm_setup(const spm_flags *f, clformer_train_options *o, void *owned[2])
{
    owned[0] = owned[1] = NULL;
    if (!f->tokenizer || strcmp(f->tokenizer, "spm")) return 0;
    if (o->resume_path) return 0; /* the checkpoint brings its models */
    int rc;
    if (f->vocab_size || f->model) {
        rc = f->vocab_size ? learn(f, o, &owned[0], &o->src_spm_size)
                           : read_model(f->model, &owned[0], &o->src_spm_size);
        o->tgt_spm_size = o->src_spm_size;
        o->src_spm = o->tgt_spm = owned[0];
    } else {
        rc = read_model(f->src_model, &owned[0], &o->src_spm_size);
        if (!rc) rc = read_model(f->tgt_model, &owned[1], &o->tgt_spm_size);
        o->src_spm = owned[0];
        o->tgt_spm = owned[1];
        if (!rc && o->config.share_all_embed &&
            (o->src_spm_size != o->tgt_spm_size || memcmp(owned[0], owned[1], o->src_spm_size))) {
            cli_error("train", "--share-all-embeddings needs one vocabulary, but --src-tokenizer-model "
                      "and --tgt-tokenizer-model differ: give one --tokenizer-model, or "
                      "--vocab-size N to learn a joint one");
            rc = EXIT_USAGE;
        }
    }
    return rc;
}
