/*
 * Checkpoint checks without a device: everything clformer_model_load checks
 * (metadata, config, vocabularies, train_state, every tensor's shape,
 * checksum and finiteness), run on an open file. The fuzz target of
 * checkpoint validation calls it (tests/fuzz/); loading runs the same code.
 */
#ifndef CF_CHECKPOINT_H
#define CF_CHECKPOINT_H

#include "safetensors.h"
#include "params.h"

clformer_status cf_checkpoint_check(const cf_st_reader *reader);

/* Refuses values no training writes in one part of a checkpoint (0 weights,
 * 1 Adam first moments, 2 second moments), laid out as `layout`: non-finite
 * ones, weights beyond 1e6 in magnitude, negative second moments
 * (CLFORMER_ERR_FORMAT naming the tensor and element). */
clformer_status cf_checkpoint_check_values(const cf_param_layout *layout, int part,
                                           const float *host);

/* Makes a loaded model a new run's starting point (training from --init):
 * step 0, Adam moments zero, no trainer state. The weights stay. */
clformer_status cf_model_forget_training(clformer_model *model);

/* Sets a loaded model's attention and activation dropout (training from
 * --init with new rates; model.c). */
clformer_status cf_model_set_dropout_kinds(clformer_model *model, float attention,
                                           float activation);

/* Whether a checkpoint's tensor is training state (optim.*), which an
 * export and an average leave out (export.c). */
bool cf_checkpoint_is_training_state(const char *name);

/* Declares in w the weights of checkpoint r alone, each as `dtype`, with
 * checksums on and r's metadata but its training state, checksums (summed
 * afresh) and run id (export.c; averaging writes its means so too). */
clformer_status cf_checkpoint_declare_weights(const cf_st_reader *r, cf_st_writer *w,
                                              cf_st_dtype dtype);

/* Parses a clformer.train_state value as loading does, and discards it. */
clformer_status cf_train_state_check(const char *text);

#endif
