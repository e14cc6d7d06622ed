/*
 * `clformer train --resume` with the options of the run it continues: a user
 * reruns the same command with --resume added. An option equal to the
 * checkpoint's is accepted; a different one is an error that names the
 * option, the checkpoint's value and the given one (the run continues
 * exactly as it was trained, so nothing can change).
 */
#ifndef CLFORMER_RESUME_CHECK_H
#define CLFORMER_RESUME_CHECK_H

#include "clformer.h"

#include <stdbool.h>

/* Which options the command gave. */
typedef struct {
    bool config, d_model, heads, d_ff, enc_layers, dec_layers, max_len, post_norm, activation,
        positional, tie, dropout, label_smoothing, lr, schedule, warmup, optimizer,
        weight_decay, clip, batch_size, batch_tokens, no_shuffle, seed, min_freq, max_vocab,
        warmup_init_lr, attention_dropout, activation_dropout, share_all;
} train_given;

/* Compares the given options of `want` (what the command asks for) with
 * `have` (clformer_trainer_settings of the resumed run). Returns 0, or prints
 * the first difference and returns 2 (a usage error). */
int resume_check(const char *command, const clformer_train_options *want, const train_given *given,
                 const clformer_train_options *have);

/* The resumed model's vocabularies against the command's: --min-freq or
 * --max-vocab (given) must rebuild the checkpoint's word vocabularies from
 * the training text; --tokenizer, --vocab-size, --tokenizer-type and the
 * --*tokenizer-model files must describe the checkpoint's SentencePiece
 * models (`spm`: the command's spm_flags, passed as their fields). 0, or
 * prints the first difference and returns 2. */
int resume_check_vocab(const char *command, clformer_model *model,
                       const clformer_train_options *want, const train_given *given,
                       const char *tokenizer, long vocab_size, const char *type,
                       const char *model_file, const char *src_model_file,
                       const char *tgt_model_file);

#endif
