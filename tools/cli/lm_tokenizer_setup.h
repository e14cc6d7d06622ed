/* `clformer train --task lm`'s tokenizer options beyond char and byte:
 * GPT-2's byte-level BPE from vocab.json + merges.txt, and SentencePiece
 * (learned from the training text, or a FILE.model). */
#ifndef CLFORMER_LM_TOKENIZER_SETUP_H
#define CLFORMER_LM_TOKENIZER_SETUP_H

#include "clformer.h"
#include "spm_setup.h"

typedef struct {
    const char *bpe_vocab, *bpe_merges; /* --bpe-vocab, --bpe-merges */
    const char *dir;                    /* --tokenizer-dir: both files in one directory */
    char vocab_path[4096], merges_path[4096];
} lm_tokenizer_flags;

/* A usage problem of the tokenizer flags of --task lm (one line), or NULL.
 * `init`: --init, whose model brings its tokenizer (the flags would do
 * nothing); with --resume the flags are those of the run's first command,
 * compared with the checkpoint's by lm_tokenizer_resume_check. */
const char *lm_tokenizer_problem(const spm_flags *spm, const lm_tokenizer_flags *f, bool init);

/* --resume: the tokenizer flags given must be the checkpoint's (the kind,
 * the BPE's files, SentencePiece's size or model file). 0, or EXIT_USAGE
 * after printing what differs. */
int lm_tokenizer_resume_check(const clformer_model *model, const spm_flags *spm,
                              lm_tokenizer_flags *f);

/* Sets o->lm_tokenizer and what it needs (the BPE's paths; the
 * SentencePiece model's bytes, learned from o->text_path or read, kept in
 * *owned: free it). 0, or 1 after printing the error. */
int lm_tokenizer_setup(const spm_flags *spm, lm_tokenizer_flags *f, clformer_train_options *o,
                       void **owned);

#endif
