/*
 * The clformer command's utilities: files read whole, written atomically,
 * one-sentence-per-line files, safetensors of plain tensors, and errors
 * reported the library's way. A private library (tools/util, CMake target
 * clformer_util) that tools/ and the tests link; not part of the public API
 * (include/clformer.h) and not exported by libclformer.so.
 */
#ifndef CLFORMER_UTIL_H
#define CLFORMER_UTIL_H

#include "clformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records a message (printf format) as the calling thread's last error and
 * returns `status`: code built on clformer reports its own failures the way
 * the library does. */
clformer_status clformer_set_error(clformer_status status, const char *format, ...)
    CLFORMER_PRINTF(2, 3);

/* Reads a whole file into a NUL-terminated buffer (release with clformer_free). */
clformer_status clformer_read_file(const char *path, char **data, size_t *size);

/* A file written atomically: `path` appears, complete, only on commit (a
 * temp file beside it, fsync, rename, fsync of the directory), through the
 * door open on this thread (clformer_door_*, clformer.h), which must declare
 * it; with none open, `path` must be a new file. Commit and abort free the
 * handle; abort removes the temp file (NULL is fine). */
typedef struct clformer_atomic_file clformer_atomic_file;
clformer_status clformer_atomic_file_open(const char *path,
                                          clformer_atomic_file **file);
clformer_status clformer_atomic_file_write(clformer_atomic_file *file,
                                           const void *data, size_t size);
clformer_status clformer_atomic_file_commit(clformer_atomic_file *file);
void clformer_atomic_file_abort(clformer_atomic_file *file);

/* One sentence per line: reads `path` (NULL or "-": stdin) whole, drops a
 * leading byte order mark, refuses invalid UTF-8 and NUL bytes (the message
 * names file:line) and splits at '\n'; empty lines are kept (line i of an
 * output answers line i of its input). *lines is malloc'd, with *n lines;
 * free it with clformer_lines_free. An empty file is n = 0. */
clformer_status clformer_lines_read(const char *path, char ***lines, size_t *n);
void clformer_lines_free(char **lines);
/* Writes n lines, each ended by '\n', atomically to `path` (NULL: stdout). */
clformer_status clformer_lines_write(const char *path, const char *const *lines,
                                     size_t n);

/* Tensors in a safetensors file, e.g. to exchange inputs and outputs with
 * PyTorch. Saving is atomic; loading validates the whole file and reads every
 * tensor (F32 and I32 only) into memory owned by the array, freed by
 * clformer_tensors_free. */
typedef enum { CLFORMER_DTYPE_F32 = 0, CLFORMER_DTYPE_I32 = 1 } clformer_dtype;
#define CLFORMER_TENSOR_MAX_DIMS 8
typedef struct {
    const char *name;
    clformer_dtype dtype;
    int ndim;
    int64_t shape[CLFORMER_TENSOR_MAX_DIMS];
    const void *data; /* row-major, shape's product elements */
} clformer_tensor;
clformer_status clformer_tensors_save(const char *path, const clformer_tensor *tensors,
                                      size_t n);
clformer_status clformer_tensors_load(const char *path, clformer_tensor **tensors,
                                      size_t *n);
void clformer_tensors_free(clformer_tensor *tensors, size_t n);
/* The tensor named `name` in an array, or NULL. */
const clformer_tensor *clformer_tensors_find(const clformer_tensor *tensors,
                                             size_t n, const char *name);

/* Whether the host GEMM provider runs clformer's AVX-512 product instead of
 * OpenBLAS's kernels (runtime/device/gemm_avx512.h says when). */
bool clformer_host_gemm_avx512(void);
/* Whether it runs decoding steps' linear layers as dot products
 * (runtime/device/gemm_dots.h says when). */
bool clformer_host_gemm_dots(void);

#ifdef __cplusplus
}
#endif
#endif /* CLFORMER_UTIL_H */
