/* Whole-file reads and crash-safe writes. */
#include "fileio.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pipe, FIFO or device (`--ref <(zcat ref.gz)`): read to its end, since
 * it has no size to ask for. Closes fp. */
static clformer_status read_stream(FILE *fp, const char *path, char **data, size_t *size)
{
    size_t n = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap) break; /* end of input, or an error (ferror below) */
        char *grown = cap < SIZE_MAX / 4 ? realloc(buf, 2 * cap + 1) : NULL;
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    const int read_error = ferror(fp);
    fclose(fp);
    if (!buf)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", path);
    if (read_error) {
        free(buf);
        return cf_fail(CLFORMER_ERR_IO, "cannot read '%s': read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return CLFORMER_OK;
}

clformer_status cf_read_file(const char *path, char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) return cf_fail(CLFORMER_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || S_ISDIR(sb.st_mode)) {
        fclose(fp);
        return cf_fail(CLFORMER_ERR_IO, "'%s' is a directory; name a file", path);
    }
    if (!S_ISREG(sb.st_mode)) return read_stream(fp, path, data, size);
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

char *cf_link_target(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat sb;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) return cur;
        char link[PATH_MAX];
        ssize_t len = readlink(cur, link, sizeof link - 1);
        if (len < 0) break;
        link[len] = '\0';
        char *next;
        if (link[0] == '/') {
            next = strdup(link);
        } else { /* relative to the link's own directory */
            char *dir_copy = strdup(cur);
            const char *dir = dir_copy ? dirname(dir_copy) : NULL;
            size_t size = (dir ? strlen(dir) : 0) + strlen(link) + 2;
            next = dir ? malloc(size) : NULL;
            if (next) snprintf(next, size, "%s/%s", dir, link);
            free(dir_copy);
        }
        free(cur);
        cur = next;
    }
    free(cur);
    return NULL;
}

/* True when `path` exists and is neither a regular file nor a directory:
 * what a rename would replace instead of writing to. */
static bool written_in_place(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode);
}

clformer_status cf_atomic_open(cf_atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    /* in place through the name given: /dev/stdout's link names "pipe:[N]" */
    af->in_place = written_in_place(path);
    af->path = af->in_place ? strdup(path) : cf_link_target(path);
    if (!af->path)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': cannot follow its symbolic links",
                       path);
    if (af->in_place) {
        af->fp = fopen(af->path, "wb");
        if (!af->fp) {
            clformer_status st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path,
                                         strerror(errno));
            cf_atomic_abort(af);
            return st;
        }
        return CLFORMER_OK;
    }
    remove_stale_temps(af->path);
    size_t n = strlen(af->path);
    af->temp_path = malloc(n + 32);
    if (!af->temp_path) {
        cf_atomic_abort(af);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    path = af->path;
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
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s%s",
                       af->in_place ? af->path : af->temp_path, strerror(errno),
                       af->in_place ? "" : " (disk full?)");
    return CLFORMER_OK;
}

clformer_status cf_atomic_patch(cf_atomic_file *af, uint64_t offset, const void *data,
                                size_t size)
{
    const char *p = data;
    if (af->in_place)
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': it is not a regular file (a "
                       "device or a FIFO); name a regular file", af->path);
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
    if (written_in_place(path)) { /* opening a FIFO now would wait for its reader */
        if (access(path, W_OK) != 0)
            return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
        return CLFORMER_OK;
    }
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

/* A device or FIFO: its writes are checked up to the close; there is no
 * rename, and fsync means nothing there (some devices refuse it). */
static clformer_status commit_in_place(cf_atomic_file *af)
{
    clformer_status st = CLFORMER_OK;
    if (fflush(af->fp) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    if (fclose(af->fp) != 0 && st == CLFORMER_OK)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': %s", af->path, strerror(errno));
    af->fp = NULL;
    cf_atomic_abort(af);
    return st;
}

clformer_status cf_atomic_commit(cf_atomic_file *af)
{
    if (af->in_place) return commit_in_place(af);
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
