/*
 * clformer_tensors_save/_load (clformer_util.h): plain F32 and I32 tensors in a
 * safetensors file, through the strict reader and atomic writer of
 * safetensors.h.
 */
#include "clformer_util.h"
#include "safetensors.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(CLFORMER_TENSOR_MAX_DIMS == CF_ST_MAX_DIMS, "the shapes are copied whole");

static cf_st_dtype file_dtype(clformer_dtype d)
{
    return d == CLFORMER_DTYPE_I32 ? CF_ST_I32 : CF_ST_F32;
}

static size_t tensor_bytes(const clformer_tensor *t)
{
    size_t n = 4;
    for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n;
}

clformer_status clformer_tensors_save(const char *path, const clformer_tensor *tensors, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const clformer_tensor *t = &tensors[i];
        if (t->dtype != CLFORMER_DTYPE_F32 && t->dtype != CLFORMER_DTYPE_I32)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "tensor '%s': dtype %d is neither CLFORMER_DTYPE_F32 nor _I32",
                           t->name ? t->name : "", (int)t->dtype);
        if (!t->name || t->ndim < 0 || t->ndim > CLFORMER_TENSOR_MAX_DIMS ||
            (!t->data && tensor_bytes(t) > 0))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "tensor %zu: needs a name, 0..%d dimensions and data", i,
                           CLFORMER_TENSOR_MAX_DIMS);
    }
    cf_st_writer *w = NULL;
    clformer_status st = cf_st_writer_new(path, &w);
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++)
        st = cf_st_declare(w, tensors[i].name, file_dtype(tensors[i].dtype), tensors[i].ndim,
                           tensors[i].shape);
    if (st == CLFORMER_OK) st = cf_st_begin(w);
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++)
        st = cf_st_write(w, tensors[i].name, tensors[i].data, tensor_bytes(&tensors[i]));
    if (st == CLFORMER_OK) st = cf_st_commit(w);
    cf_st_writer_free(w);
    return st;
}

static clformer_status load_one(const cf_st_reader *r, const cf_st_tensor *f, clformer_tensor *t)
{
    if (f->dtype != CF_ST_F32 && f->dtype != CF_ST_I32)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: tensor '%s' is %s; only F32 and I32 are read",
                       cf_st_path(r), f->name, cf_st_dtype_name(f->dtype));
    t->dtype = f->dtype == CF_ST_I32 ? CLFORMER_DTYPE_I32 : CLFORMER_DTYPE_F32;
    t->ndim = f->ndim;
    memcpy(t->shape, f->shape, sizeof t->shape);
    char *name = strdup(f->name);
    void *data = malloc(f->nbytes ? f->nbytes : 1);
    t->name = name;
    t->data = data;
    if (!name || !data) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return cf_st_read(r, f, data, f->nbytes);
}

clformer_status clformer_tensors_load(const char *path, clformer_tensor **tensors, size_t *n)
{
    *tensors = NULL;
    *n = 0;
    cf_st_reader *r = NULL;
    CF_TRY(cf_st_open(path, &r));
    const size_t count = cf_st_count(r);
    clformer_tensor *out = calloc(count ? count : 1, sizeof *out);
    clformer_status st =
        out ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < count && st == CLFORMER_OK; i++)
        st = load_one(r, cf_st_tensor_at(r, i), &out[i]);
    cf_st_close(r);
    if (st != CLFORMER_OK) {
        clformer_tensors_free(out, count);
        return st;
    }
    *tensors = out;
    *n = count;
    return CLFORMER_OK;
}

void clformer_tensors_free(clformer_tensor *tensors, size_t n)
{
    if (!tensors) return;
    for (size_t i = 0; i < n; i++) {
        free((char *)tensors[i].name);
        free((void *)tensors[i].data);
    }
    free(tensors);
}

const clformer_tensor *clformer_tensors_find(const clformer_tensor *tensors, size_t n,
                                             const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (tensors[i].name && !strcmp(tensors[i].name, name)) return &tensors[i];
    return NULL;
}
