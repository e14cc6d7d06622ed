/* Whole-file reads and crash-safe writes. */
#include "fileio.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

clformer_status cf_read_file(const char *path, char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return cf_fail(CLFORMER_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(fp);
        return cf_fail(CLFORMER_ERR_IO, "'%s' is not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(fp);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s' (%zu bytes)",
                       path, n);
    }
    size_t got = fread(buf, 1, n, fp);
    int read_error = ferror(fp);
    fclose(fp);
    if (got != n || read_error) {
        free(buf);
        return cf_fail(CLFORMER_ERR_IO, "cannot read '%s': short read (%zu of %zu bytes)", path,
                       got, n);
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return CLFORMER_OK;
}

clformer_status cf_make_dirs(const char *path)
{
    char *copy = strdup(path);
    if (!copy) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (char *p = copy + 1; ; p++) {
        char c = *p;
        if (c == '/' || c == '\0') {
            *p = '\0';
            if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
                clformer_status st = cf_fail(CLFORMER_ERR_IO, "cannot create directory '%s': %s",
                                             copy, strerror(errno));
                free(copy);
                return st;
            }
            *p = c;
        }
        if (c == '\0') break;
    }
    free(copy);
    return CLFORMER_OK;
}

clformer_status cf_atomic_open(cf_atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    size_t n = strlen(path);
    af->path = strdup(path);
    af->temp_path = malloc(n + 32);
    if (!af->path || !af->temp_path) {
        cf_atomic_abort(af);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    snprintf(af->temp_path, n + 32, "%s.tmp.%ld", path, (long)getpid());
    af->fp = fopen(af->temp_path, "wb");
    if (!af->fp) {
        clformer_status st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->temp_path,
                                     strerror(errno));
        cf_atomic_abort(af);
        return st;
    }
    return CLFORMER_OK;
}

clformer_status cf_atomic_write(cf_atomic_file *af, const void *data, size_t size)
{
    if (size && fwrite(data, 1, size, af->fp) != size)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s (disk full?)", af->temp_path,
                       strerror(errno));
    return CLFORMER_OK;
}

static void fsync_directory_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy) return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(copy);
}

clformer_status cf_atomic_commit(cf_atomic_file *af)
{
    clformer_status st = CLFORMER_OK;
    if (fflush(af->fp) != 0 || fsync(fileno(af->fp)) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s (disk full?)", af->temp_path,
                     strerror(errno));
    if (fclose(af->fp) != 0 && st == CLFORMER_OK)
        st = cf_fail(CLFORMER_ERR_IO, "cannot close '%s': %s", af->temp_path, strerror(errno));
    af->fp = NULL;
    if (st == CLFORMER_OK && rename(af->temp_path, af->path) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot rename '%s' to '%s': %s", af->temp_path, af->path,
                     strerror(errno));
    if (st == CLFORMER_OK) {
        fsync_directory_of(af->path);
        free(af->temp_path);
        af->temp_path = NULL;
    }
    cf_atomic_abort(af);
    return st;
}

void cf_atomic_abort(cf_atomic_file *af)
{
    if (af->fp) fclose(af->fp);
    if (af->temp_path) unlink(af->temp_path);
    free(af->temp_path);
    free(af->path);
    memset(af, 0, sizeof *af);
}

clformer_status cf_write_file_atomic(const char *path, const void *data, size_t size)
{
    cf_atomic_file af;
    CF_TRY(cf_atomic_open(&af, path));
    clformer_status st = cf_atomic_write(&af, data, size);
    if (st != CLFORMER_OK) {
        cf_atomic_abort(&af);
        return st;
    }
    return cf_atomic_commit(&af);
}

/* ------------------------------------------------------------------------- */
/* The public face of the above (include/clformer.h, "Files")                */
/* ------------------------------------------------------------------------- */

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
