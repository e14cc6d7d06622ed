/* What file a path names (see real_path.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "real_path.h"
#include "fileio.h"
#include "status.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Appends the components of `tail` (a relative path) to the absolute path in
 * buf (cap bytes), applying "." and ".." as it goes; false when it does not fit. */
static bool append_components(char *buf, size_t cap, const char *tail)
{
    for (const char *p = tail; *p;) {
        while (*p == '/') p++;
        const size_t n = strcspn(p, "/");
        if (n == 0) break;
        if (n == 1 && p[0] == '.') {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = strrchr(buf, '/');
            if (slash && slash != buf) *slash = '\0';
            else strcpy(buf, "/");
        } else {
            const size_t used = strlen(buf);
            const bool root = used == 1;
            if (used + !root + n + 1 > cap) return false;
            if (!root) buf[used] = '/';
            memcpy(buf + used + !root, p, n);
            buf[used + !root + n] = '\0';
        }
        p += n;
    }
    return true;
}

/* The canonical form of `path`, which need not exist: the longest leading
 * part that exists through realpath, the rest appended (malloc'd). */
static char *canonical(const char *path)
{
    char *whole = realpath(path, NULL);
    if (whole) return whole;
    char *head = strdup(path);
    char *tail = strdup("");
    while (head && tail) {
        char *base_copy = strdup(head), *dir_copy = strdup(head);
        if (!base_copy || !dir_copy) {
            free(base_copy);
            free(dir_copy);
            break;
        }
        const char *base = basename(base_copy);
        const size_t size = strlen(base) + strlen(tail) + 2;
        char *longer = malloc(size);
        if (longer) snprintf(longer, size, "%s%s%s", base, *tail ? "/" : "", tail);
        char *dir = strdup(dirname(dir_copy));
        free(base_copy);
        free(dir_copy);
        free(tail);
        free(head);
        tail = longer;
        head = dir;
        if (!head || !tail) break;
        char *real = realpath(head, NULL);
        if (real) {
            char buf[PATH_MAX * 2];
            const bool fits = strlen(real) < sizeof buf;
            if (fits) strcpy(buf, real);
            free(real);
            free(head);
            const bool ok = fits && append_components(buf, sizeof buf, tail);
            free(tail);
            return ok ? strdup(buf) : NULL;
        }
        if (!strcmp(head, ".") || !strcmp(head, "/")) break; /* the working folder is gone */
    }
    free(head);
    free(tail);
    return NULL;
}

clformer_status cf_real_path_of(const char *path, cf_real_path *out)
{
    memset(out, 0, sizeof *out);
    if (!path || !*path) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "an empty path");
    char *target = cf_link_target(path);
    if (!target)
        return cf_fail(CLFORMER_ERR_IO, "'%s': its symbolic links cannot be followed (a loop, "
                       "or one that cannot be read)", path);
    out->real = canonical(target);
    free(target);
    if (!out->real)
        return cf_fail(CLFORMER_ERR_IO, "'%s': cannot tell which file it names (%s)", path,
                       errno ? strerror(errno) : "the path is too long");
    struct stat sb;
    if (stat(out->real, &sb) == 0) {
        out->exists = true;
        out->dev = sb.st_dev;
        out->ino = sb.st_ino;
        out->mode = sb.st_mode;
    }
    return CLFORMER_OK;
}

void cf_real_path_free(cf_real_path *p)
{
    free(p->real);
    memset(p, 0, sizeof *p);
}

bool cf_real_path_same(const cf_real_path *a, const cf_real_path *b)
{
    if (a->exists && b->exists) return a->dev == b->dev && a->ino == b->ino;
    return a->real && b->real && !strcmp(a->real, b->real);
}

bool cf_real_path_inside(const char *inner, const char *dir)
{
    const size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return inner[0] == '/' && inner[1] != '\0';
    return !strncmp(inner, dir, n) && inner[n] == '/';
}

const char *cf_real_path_shown(const char *real, char *buf, size_t cap)
{
    char *here = realpath(".", NULL);
    const bool inside = here && cf_real_path_inside(real, here);
    snprintf(buf, cap, "%s", inside ? real + strlen(here) + (strcmp(here, "/") ? 1 : 0) : real);
    free(here);
    return buf;
}

char *cf_real_path_dir(const char *real)
{
    char *copy = strdup(real);
    char *dir = copy ? strdup(dirname(copy)) : NULL;
    free(copy);
    return dir;
}
