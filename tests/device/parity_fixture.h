/*
 * Reading the PyTorch parity fixtures (tests/data/parity/<name>/, written
 * by tools/reference/torch_reference.py): their paths and their tensors.
 * Shared by the fp32 parity test and the bf16 one.
 */
#ifndef CLFORMER_TEST_PARITY_FIXTURE_H
#define CLFORMER_TEST_PARITY_FIXTURE_H

#include "harness.h"
#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>

/* tests/data/parity/<name>/<file>, under CLFORMER_TEST_DATA when set. */
static inline void parity_path(char *out, size_t cap, const char *name, const char *file)
{
    const char *root = getenv("CLFORMER_TEST_DATA");
    snprintf(out, cap, "%s/parity/%s/%s", root ? root : "tests/data", name, file);
}

/* A fixture's tensor `name`, which must exist with `dtype`; the caller frees
 * it. *count (if given): its elements. */
static inline void *parity_read_tensor(cf_st_reader *r, const char *name, cf_st_dtype dtype,
                                       size_t *count)
{
    const cf_st_tensor *t = cf_st_find(r, name);
    if (!t) fail_msg("fixture lacks tensor %s", name);
    assert_int_equal(t->dtype, dtype);
    void *p = hmalloc(t->nbytes);
    assert_ok(cf_st_read(r, t, p, t->nbytes));
    if (count) *count = t->numel;
    return p;
}

#endif
