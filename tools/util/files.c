/*
 * Whole-file reads and atomic writes for the clformer command
 * (clformer_util.h): handles over the library's own atomic writer
 * (runtime/core/fileio.c), so the command writes files as the library does.
 */
#include "clformer_util.h"
#include "door.h"
#include "fileio.h"
#include "status.h"

#include <stdlib.h>


struct clformer_atomic_file {
    cf_atomic_file af;
};

clformer_status clformer_read_file(const char *path, char **data, size_t *size)
{
    return cf_read_file(path, data, size);
}

clformer_status clformer_atomic_file_open(const char *path, clformer_atomic_file **file)
{
    *file = calloc(1, sizeof **file);
    if (!*file) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_atomic_open(&(*file)->af, path);
    if (st != CLFORMER_OK) {
        free(*file);
        *file = NULL;
    }
    return st;
}

clformer_status clformer_atomic_file_write(clformer_atomic_file *file, const void *data,
                                           size_t size)
{
    return cf_atomic_write(&file->af, data, size);
}

clformer_status clformer_atomic_file_commit(clformer_atomic_file *file)
{
    clformer_status st = cf_atomic_commit(&file->af); /* cleans up either way */
    free(file);
    return st;
}

void clformer_atomic_file_abort(clformer_atomic_file *file)
{
    if (!file) return;
    cf_atomic_abort(&file->af);
    free(file);
}
