/*
 * Under mpirun every rank must train on the same data with the same options:
 * ranks started differently (`mpirun -np 1 clformer train --src a : -np 1
 * clformer train --src b`) would otherwise train one model on a mix of two
 * corpora and vocabularies. Before the first step each rank hashes what it
 * was given and the ranks compare: a difference is one error on rank 0 that
 * names what differs and which ranks, and the job ends.
 */
#ifndef CLFORMER_RANK_AGREEMENT_H
#define CLFORMER_RANK_AGREEMENT_H

#include "clformer.h"

/* Compares, across ranks, the contents of o's data files (--src, --tgt,
 * --val-src, --val-tgt) and of the --init/--resume checkpoint, the model's
 * vocabularies and SentencePiece models, and o's training options. 0 when
 * all agree (always alone); 1 on every rank when they differ, after rank 0
 * printed the error. */
int rank_agreement(const char *command, const clformer_train_options *o,
                   const clformer_model *model);

#endif
