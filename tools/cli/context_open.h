/*
 * Opening the device for a command: the environment's settings (as
 * clformer_context_create) plus, on a terminal, a live line for the
 * library's long waits ("compiling kernels: 5/9 programs", "tuning GEMM
 * 4096x1536x512: 3/14 candidates").
 */
#ifndef CLFORMER_CONTEXT_OPEN_H
#define CLFORMER_CONTEXT_OPEN_H

#include "clformer.h"

/* `selector` NULL: CLFORMER_DEVICE's choice. */
clformer_status cli_context_create(const char *selector, clformer_context **ctx);

/* The progress callback cli_context_create sets on a terminal, for commands
 * that fill their own clformer_context_params. */
void cli_show_progress(const char *what, size_t done, size_t total, void *user);

#endif
