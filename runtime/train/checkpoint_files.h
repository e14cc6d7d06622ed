/*
 * The files a run keeps beside its --save checkpoint P.safetensors (P: the
 * path less a ".safetensors" ending): P.step<S>.safetensors, the weights at
 * step S (keep_last), and P.best.safetensors (save_best).
 */
#ifndef CF_CHECKPOINT_FILES_H
#define CF_CHECKPOINT_FILES_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

/* P.<kind><step>.safetensors ("step", S) or P.best.safetensors ("best";
 * step ignored) into buf; fails when it does not fit. */
clformer_status cf_checkpoint_name(const char *save_path, const char *kind, uint64_t step,
                                   char *buf, size_t size);

/* Removes all but the `keep` newest P.step<S>.safetensors of save_path's
 * directory (by S; other files are never touched). */
clformer_status cf_checkpoints_prune(const char *save_path, uint64_t keep);

#endif
