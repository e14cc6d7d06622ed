/*
 * The files of a training run (clformer_train_files, clformer.h), and the
 * ones it keeps beside its --save checkpoint P.safetensors (P: the path
 * less a ".safetensors" ending): P.step<S>.safetensors, the weights at step
 * S (keep_last), and P.best.safetensors (save_best). A run's checkpoints
 * carry its id (clformer.run); a resumed run keeps the id, so its earlier
 * files are its own: it may replace them, and prune the numbered ones. A
 * file of another run, or the user's, is neither replaced nor removed.
 */
#ifndef CF_CHECKPOINT_FILES_H
#define CF_CHECKPOINT_FILES_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

/* P.<kind><step>.safetensors ("step", S), P.step*.safetensors ("step*",
 * the pattern of them all) or P.best.safetensors ("best"; step ignored)
 * into buf; fails when it does not fit. */
clformer_status cf_checkpoint_name(const char *save_path, const char *kind, uint64_t step,
                                   char *buf, size_t size);

/* Removes all but the `keep` newest of the run's own P.step<S>.safetensors
 * (by S) through the door open on this thread: other files of that name
 * stay. */
clformer_status cf_checkpoints_prune(const char *save_path, uint64_t keep);

/* A fresh run id: 16 lowercase hex digits into buf (17 bytes). */
void cf_run_id_new(char buf[17]);

#endif
