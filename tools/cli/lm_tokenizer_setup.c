/* `clformer train --task lm --tokenizer gpt2-bpe|spm` (lm_tokenizer_setup.h). */
#include "lm_tokenizer_setup.h"
#include "cli.h"
#include "clformer_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is(const char *tokenizer, const char *name)
{
    return tokenizer && !strcmp(tokenizer, name);
}

const char *lm_tokenizer_problem(const spm_flags *spm, const lm_tokenizer_flags *f, bool init)
{
    const bool bpe_files = f->bpe_vocab || f->bpe_merges || f->dir;
    const bool spm_flags_given = spm->vocab_size || spm->type || spm->model;
    if (spm->src_model || spm->tgt_model)
        return "a language model has one side: use --tokenizer-model, not --src-/--tgt-tokenizer-model";
    if (init && (spm->tokenizer || bpe_files || spm_flags_given))
        return "the model of --init brings its own tokenizer: remove --tokenizer and its options";
    if (!is(spm->tokenizer, "gpt2-bpe") && bpe_files)
        return "--bpe-vocab, --bpe-merges and --tokenizer-dir go with --tokenizer gpt2-bpe";
    if (!is(spm->tokenizer, "spm") && spm_flags_given)
        return is(spm->tokenizer, "gpt2-bpe")
                   ? "--tokenizer gpt2-bpe takes its vocabulary (and its size) from vocab.json: "
                     "remove --vocab-size, --tokenizer-type and --tokenizer-model"
                   : "--vocab-size, --tokenizer-type and --tokenizer-model go with --tokenizer spm";
    if (is(spm->tokenizer, "gpt2-bpe")) {
        if (f->dir && (f->bpe_vocab || f->bpe_merges))
            return "give --tokenizer-dir DIR or --bpe-vocab and --bpe-merges, not both";
        if (!f->dir && (!f->bpe_vocab || !f->bpe_merges))
            return "--tokenizer gpt2-bpe needs --bpe-vocab vocab.json and --bpe-merges "
                   "merges.txt (or --tokenizer-dir DIR holding both)";
    }
    if (is(spm->tokenizer, "spm")) {
        if (!spm->vocab_size == !spm->model)
            return "--tokenizer spm needs --vocab-size N (learn one from --text) or "
                   "--tokenizer-model FILE.model";
        if (spm->type && !spm->vocab_size) return "--tokenizer-type goes with --vocab-size";
    }
    return NULL;
}

/* One of the BPE's files: given, or DIR/name; it must be readable. */
static int bpe_file(const char *given, const char *dir, const char *name, const char *option,
                    char *out, size_t cap)
{
    if (given) snprintf(out, cap, "%s", given);
    else if ((size_t)snprintf(out, cap, "%s/%s", dir, name) >= cap) {
        cli_error("train", "--tokenizer-dir: the path is too long");
        return 1;
    }
    if (access(out, R_OK) != 0) {
        if (given)
            cli_error("train", "%s: cannot read '%s': give GPT-2's %s (as save_pretrained or "
                      "tokenizers' save_model write it)", option, out, name);
        else
            cli_error("train", "--tokenizer-dir '%s' has no readable %s: give a directory "
                      "holding GPT-2's vocab.json and merges.txt", dir, name);
        return 1;
    }
    return 0;
}

/* The file's bytes equal `want` (size bytes); false (and the error printed) when unreadable. */
static bool same_file(const char *path, const void *want, size_t size, bool *same)
{
    char *data = NULL;
    size_t n = 0;
    if (clformer_read_file(path, &data, &n) != CLFORMER_OK) {
        cli_runtime_error("train", NULL);
        return false;
    }
    *same = want && n == size && !memcmp(data, want, n);
    clformer_free(data);
    return true;
}

/* The tokenizer a model has; KIND_NAMES as --tokenizer names them (a
 * Hugging Face directory's came with the model of --init). */
enum { KIND_CHAR, KIND_BYTE, KIND_SPM, KIND_BPE, KIND_HF };
static const char *const KIND_NAMES[] = {"char", "byte", "spm", "gpt2-bpe",
                                         "that of the --init directory"};

static int model_tokenizer(const clformer_model *m)
{
    if (clformer_model_hf_tokenizer_file(m, "tokenizer.json", NULL) ||
        clformer_model_hf_tokenizer_file(m, "tokenizer.model", NULL))
        return KIND_HF;
    if (clformer_model_bpe(m, false, NULL)) return KIND_BPE;
    if (clformer_model_tokenizer(m, true, NULL)) return KIND_SPM;
    /* a byte vocabulary: the 4 specials and the 256 <0xNN>, nothing else */
    const char *const *v = clformer_model_tgt_vocab(m);
    const int n = clformer_model_config(m)->tgt_vocab;
    bool bytes = n == 260 && v;
    for (int i = 4; bytes && i < n; i++) bytes = strlen(v[i]) == 6 && !strncmp(v[i], "<0x", 3);
    return bytes ? KIND_BYTE : KIND_CHAR;
}

int lm_tokenizer_resume_check(const clformer_model *m, const spm_flags *spm, lm_tokenizer_flags *f)
{
    const int have = model_tokenizer(m);
    if (spm->tokenizer && strcmp(spm->tokenizer, KIND_NAMES[have])) {
        cli_error("train", "--tokenizer %s differs from the checkpoint's (%s): %s",
                  spm->tokenizer, KIND_NAMES[have],
                  have == KIND_HF ? "leave --tokenizer out" : "give the checkpoint's or leave "
                                                              "--tokenizer out");
        return EXIT_USAGE;
    }
    bool same = true;
    if (have == KIND_BPE) {
        const char *given[2] = {f->bpe_vocab, f->bpe_merges};
        static const char *const names[2] = {"vocab.json", "merges.txt"};
        for (int k = 0; k < 2; k++) {
            char path[4096];
            if (given[k]) snprintf(path, sizeof path, "%s", given[k]);
            else if (f->dir) snprintf(path, sizeof path, "%s/%s", f->dir, names[k]);
            else continue;
            size_t size = 0;
            const char *text = clformer_model_bpe(m, k == 1, &size);
            if (!same_file(path, text, size, &same)) return 1;
            if (!same) {
                cli_error("train", "'%s' is not the checkpoint's %s: resume with the files the "
                          "run started with, or leave the option out", path, names[k]);
                return EXIT_USAGE;
            }
        }
    }
    if (have == KIND_SPM) {
        const int pieces = clformer_model_config(m)->tgt_vocab;
        if (spm->vocab_size && spm->vocab_size != pieces) {
            cli_error("train", "--vocab-size %ld differs from the checkpoint's %d pieces: give "
                      "the checkpoint's or leave it out", spm->vocab_size, pieces);
            return EXIT_USAGE;
        }
        size_t size = 0;
        const void *bytes = clformer_model_tokenizer(m, true, &size);
        if (spm->model && !same_file(spm->model, bytes, size, &same)) return 1;
        if (!same) {
            cli_error("train", "--tokenizer-model '%s' is not the checkpoint's SentencePiece "
                      "model: resume with the one the run started with, or leave it out",
                      spm->model);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* A SentencePiece model learned from the training text's non-empty lines. */
static int learn(const spm_flags *spm, const char *text_path, void **bytes, size_t *size)
{
    char **lines = NULL;
    size_t n = 0;
    if (clformer_lines_read(text_path, &lines, &n) != CLFORMER_OK) {
        cli_runtime_error("train", "--text");
        return 1;
    }
    /* the non-empty lines: empty ones teach nothing */
    const char **kept = malloc((n ? n : 1) * sizeof *kept);
    if (!kept) {
        cli_error("train", "out of host memory");
        clformer_lines_free(lines);
        return 1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (lines[i][0]) kept[k++] = lines[i];
    const char *type = spm->type ? spm->type : "unigram";
    fprintf(stderr, "learning a %s SentencePiece vocabulary of %ld pieces from %zu lines\n",
            type, spm->vocab_size, k);
    clformer_status st = clformer_spm_train(kept, k, (int)spm->vocab_size, type, bytes, size);
    free(kept);
    clformer_lines_free(lines);
    if (st != CLFORMER_OK) {
        cli_runtime_error("train", "--vocab-size");
        return 1;
    }
    return 0;
}

int lm_tokenizer_setup(const spm_flags *spm, lm_tokenizer_flags *f, clformer_train_options *o,
                       void **owned)
{
    *owned = NULL;
    if (o->resume_path) return 0; /* the checkpoint's (lm_tokenizer_resume_check) */
    if (is(spm->tokenizer, "byte")) o->lm_tokenizer = CLFORMER_LM_BYTE;
    if (is(spm->tokenizer, "gpt2-bpe")) {
        o->lm_tokenizer = CLFORMER_LM_GPT2_BPE;
        if (bpe_file(f->bpe_vocab, f->dir, "vocab.json", "--bpe-vocab", f->vocab_path,
                     sizeof f->vocab_path) ||
            bpe_file(f->bpe_merges, f->dir, "merges.txt", "--bpe-merges", f->merges_path,
                     sizeof f->merges_path))
            return 1;
        o->bpe_vocab_path = f->vocab_path;
        o->bpe_merges_path = f->merges_path;
    }
    if (is(spm->tokenizer, "spm")) {
        o->lm_tokenizer = CLFORMER_LM_SPM;
        int rc = 0;
        if (spm->vocab_size) {
            rc = learn(spm, o->text_path, owned, &o->tgt_spm_size);
        } else {
            char *data = NULL;
            if (clformer_read_file(spm->model, &data, &o->tgt_spm_size) != CLFORMER_OK) {
                cli_runtime_error("train", "--tokenizer-model");
                rc = 1;
            }
            *owned = data;
        }
        o->tgt_spm = *owned;
        return rc;
    }
    return 0;
}
