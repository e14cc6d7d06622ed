/* `clformer train`'s SentencePiece options: a model learned from the training
 * text (joint, both sides) or read from FILE.model files. */
#ifndef CLFORMER_SPM_SETUP_H
#define CLFORMER_SPM_SETUP_H

#include "clformer.h"

typedef struct {
    const char *tokenizer;    /* "word" (NULL) or "spm" */
    long vocab_size;          /* learn a joint model of this many pieces */
    const char *type;         /* "unigram" (NULL) or "bpe" */
    const char *model;        /* a joint FILE.model */
    const char *src_model, *tgt_model; /* one per side */
} spm_flags;

/* A usage problem of the flags (one line), or NULL. `fresh`: no --init or
 * --resume (whose model brings its own tokenizers); `resume`: --resume, with
 * which the flags of the run's first command are accepted (and checked
 * against the checkpoint later). */
const char *spm_flags_problem(const spm_flags *f, bool fresh, bool resume);

/* Sets o->src_spm/tgt_spm (bytes kept in *owned, free both) from the flags:
 * learned from o->src_path and o->tgt_path, or read; nothing with --resume.
 * 0, or the exit code after printing the error (2: --share-all-embeddings
 * with two different models). */
int spm_setup(const spm_flags *f, clformer_train_options *o, void *owned[2]);

#endif
