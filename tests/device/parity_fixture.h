/*
 * Reading the PyTorch parity fixtures (tests/data/parity/<name>/, written
 * by tools/reference/torch_reference.py): their paths, their tensors and their optimiser.
 * Shared by the fp32 parity test and the bf16 one.
 */
#ifndef CLFORMER_TEST_PARITY_FIXTURE_H
#define CLFORMER_TEST_PARITY_FIXTURE_H

#include "harness.h"
#include "safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Sets the optimiser of fixture.safetensors' metadata on the model; returns
 * its lr, *steps the steps it trained. */
static inline float parity_set_optimizer(cf_st_reader *fx, clformer_model *model, size_t *steps)
{
    json_error_t err;
    json_t *meta = json_loads(cf_st_metadata(fx, "clformer.fixture"), 0, &err);
    assert_non_null(meta);
    const char *opt = json_string_value(json_object_get(meta, "optimizer"));
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    oc.optimizer = !strcmp(opt, "adamw") ? CLFORMER_ADAMW : CLFORMER_ADAM;
    oc.beta1 = (float)json_number_value(json_object_get(meta, "beta1"));
    oc.beta2 = (float)json_number_value(json_object_get(meta, "beta2"));
    oc.eps = (float)json_number_value(json_object_get(meta, "eps"));
    oc.weight_decay = (float)json_number_value(json_object_get(meta, "weight_decay"));
    oc.clip = (float)json_number_value(json_object_get(meta, "clip"));
    const float lr = (float)json_number_value(json_object_get(meta, "lr"));
    *steps = (size_t)json_integer_value(json_object_get(meta, "steps"));
    json_decref(meta);
    assert_ok(clformer_model_set_optimizer(model, &oc));
    return lr;
}

#endif
