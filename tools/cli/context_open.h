/*
 * Opening the device for a command: the environment's settings (as
 * clformer_context_create) plus, on a terminal, a live line for the
 * library's long waits ("compiling kernels: 5/9 programs").
 */
#ifndef CLFORMER_CONTEXT_OPEN_H
#define CLFORMER_CONTEXT_OPEN_H

#include "clformer.h"

/* `selector` NULL: CLFORMER_DEVICE's choice. */
clformer_status cli_context_create(const char *selector, clformer_context **ctx);

#endif
