/* Whole-file reads and crash-safe writes. */
#include "fileio.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
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

/* Removes "<base>.tmp.<pid>" files in `path`'s directory whose process is
 * gone (kill(pid, 0) says no such process). A reused pid keeps its file: at
 * worst one stale file stays until a later save; another process's live temp
 * file is never touched. Best effort: errors are ignored. */
static void remove_stale_temps(const char *path)
{
    char *dir_copy = strdup(path), *base_copy = strdup(path);
    DIR *dir = dir_copy && base_copy ? opendir(dirname(dir_copy)) : NULL;
    if (dir) {
        const char *base = basename(base_copy);
        size_t n = strlen(base);
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            const char *name = e->d_name;
            if (strncmp(name, base, n) != 0 || strncmp(name + n, ".tmp.", 5) != 0) continue;
            const char *digits = name + n + 5;
            if (!*digits || strspn(digits, "0123456789") != strlen(digits) || strlen(digits) > 9)
                continue;
            long pid = strtol(digits, NULL, 10);
            if (pid <= 0 || pid == (long)getpid()) continue;
            if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
            char stale[PATH_MAX];
            char *dpath = strdup(path);
            if (dpath && snprintf(stale, sizeof stale, "%s/%s", dirname(dpath), name) <
                             (int)sizeof stale)
                unlink(stale);
            free(dpath);
        }
        closedir(dir);
    }
    free(dir_copy);
    free(base_copy);
}

clformer_status cf_atomic_open(cf_atomic_file *af, const char *path)
{
    remove_stale_temps(path);
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

clformer_status cf_atomic_patch(cf_atomic_file *af, uint64_t offset, const void *data,
                                size_t size)
{
    const char *p = data;
    if (fflush(af->fp) != 0)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s (disk full?)", af->temp_path,
                       strerror(errno));
    while (size > 0) {
        ssize_t put = pwrite(fileno(af->fp), p, size, (off_t)offset);
        if (put < 0 && errno == EINTR) continue;
        if (put <= 0)
            return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->temp_path,
                           put < 0 ? strerror(errno) : "no progress");
        p += put;
        size -= (size_t)put;
        offset += (uint64_t)put;
    }
    return CLFORMER_OK;
}

clformer_status cf_atomic_check(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': it is a directory; name a file", path);
    cf_atomic_file af;
    CF_TRY(cf_atomic_open(&af, path));
    cf_atomic_abort(&af);
    return CLFORMER_OK;
}

/* After the rename, the directory entry must reach the disk too. A failure
 * here is reported as a warning, not an error: the file is complete and in
 * place, only a power cut before the next sync could lose the new name.
 * EINVAL: the filesystem cannot sync directories (nothing to do). */
static void fsync_directory_of(const char *path)
{
    char *copy = strdup(path);
    if (!copy) return;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        cf_log(NULL, CF_LOG_WARN, "wrote '%s' but could not sync its directory (%s): a power cut now "
               "could lose it", path, strerror(errno));
    if (fd >= 0) close(fd);
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

clformer_status clformer_atomic_file_check(const char *path) { return cf_atomic_check(path); }

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
