/* Whole-file reads, folders and symbolic links (see fileio.h). */
#include "fileio.h"
#include "status.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A pipe, FIFO or device (`--ref <(zcat ref.gz)`): read to its end, since
 * it has no size to ask for, but no further than CF_STREAM_LIMIT; `text`
 * refuses a NUL byte as soon as it arrives. Closes fp. */
static clformer_status read_stream(FILE *fp, const char *path, bool text, char **data,
                                   size_t *size)
{
    size_t n = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    while (buf) {
        const size_t before = n;
        n += fread(buf + n, 1, cap - n, fp);
        const char *nul = text ? memchr(buf + before, '\0', n - before) : NULL;
        if (nul) {
            const size_t at = (size_t)(nul - buf);
            free(buf);
            fclose(fp);
            return cf_fail(CLFORMER_ERR_FORMAT, "'%s' holds a NUL byte (byte %zu): it is not "
                           "text", path, at + 1);
        }
        if (n < cap) break; /* end of input, or an error (ferror below) */
        if (cap >= CF_STREAM_LIMIT) {
            free(buf);
            fclose(fp);
            return cf_fail(CLFORMER_ERR_IO, "'%s' is a pipe or device that goes on past %s: "
                           "clformer reads at most that much from a stream; save it to a file "
                           "first", path, CF_STREAM_LIMIT_TEXT);
        }
        char *grown = realloc(buf, 2 * cap + 1);
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

static clformer_status read_file(const char *path, bool text, char **data, size_t *size)
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
    if (!S_ISREG(sb.st_mode)) return read_stream(fp, path, text, data, size);
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

clformer_status cf_read_file(const char *path, char **data, size_t *size)
{
    return read_file(path, false, data, size);
}

clformer_status cf_read_text_file(const char *path, char **data, size_t *size)
{
    return read_file(path, true, data, size);
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


char *cf_read_cache_body(const char *path, const char *header)
{
    if (access(path, F_OK) != 0) return NULL; /* none yet: no error to record */
    char *text = NULL;
    size_t size = 0;
    if (cf_read_file(path, &text, &size) != CLFORMER_OK) {
        cf_clear_error();
        return NULL;
    }
    const size_t hl = strlen(header);
    if (size < hl || memcmp(text, header, hl) != 0) {
        free(text);
        return NULL;
    }
    memmove(text, text + hl, size - hl + 1);
    return text;
}
