/*
 * The command-line side of a training run, shared by `clformer train` and
 * `clformer demo`: the library's trainer (clformer_trainer_*) with a summary
 * of the data and model, a live progress line on a terminal (plain lines
 * every 10 s otherwise), validation lines, Ctrl-C as a stop request, and the
 * loss curves drawn at the end.
 */
#ifndef CLFORMER_TRAIN_RUN_H
#define CLFORMER_TRAIN_RUN_H

#include "clformer.h"

/* Looks at a prepared run before it starts; returns 0 to go on, or the exit
 * code after printing why not. */
typedef int (*train_check)(clformer_trainer *trainer, void *user);

/* Runs the training described by `o` (its callback is set here) and, with
 * plot_path, draws the log at the end. `check` (may be NULL) sees the run
 * before it starts. Returns the exit code: 0, 1 on failure, 130 after Ctrl-C
 * (with the checkpoint saved). With `model_out`, the trained model goes to
 * the caller, who frees it. */
int train_run(const char *command, clformer_context *ctx, clformer_train_options o,
              const char *plot_path, train_check check, void *check_user,
              clformer_model **model_out, clformer_train_result *result);

#endif
