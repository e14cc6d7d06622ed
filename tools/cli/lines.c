/* Reading and writing one-sentence-per-line files (see lines.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "lines.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

clformer_status line_file_read(const char *path, line_file *out)
{
    memset(out, 0, sizeof *out);
    out->name = !path || !strcmp(path, "-") ? "stdin" : path;
    return clformer_lines_read(path, &out->line, &out->n);
}

void line_file_free(line_file *f)
{
    clformer_lines_free(f->line);
    memset(f, 0, sizeof *f);
}

bool line_has_token(const char *line) { return clformer_count_tokens(line) > 0; }

clformer_status line_file_write(const char *path, const char *const *lines, size_t n)
{
    return clformer_lines_write(path, lines, n);
}

clformer_status check_writable(const char *path) { return clformer_atomic_file_check(path); }

/* What makes two names the same file: device and inode for a file that
 * exists; the real path of its directory and its name for one to be made. */
typedef struct {
    bool exists;
    dev_t dev;
    ino_t ino;
    char name[PATH_MAX + 256];
} file_identity;

static bool identify(const char *path, file_identity *id)
{
    memset(id, 0, sizeof *id);
    if (!path || !strcmp(path, "-")) return false;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        id->exists = true;
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return true;
    }
    char *dir_copy = strdup(path), *base_copy = strdup(path);
    char real_dir[PATH_MAX];
    bool ok = dir_copy && base_copy && realpath(dirname(dir_copy), real_dir) &&
              snprintf(id->name, sizeof id->name, "%s/%s", real_dir, basename(base_copy)) <
                  (int)sizeof id->name;
    free(dir_copy);
    free(base_copy);
    return ok;
}

static bool same_file(const file_identity *a, const file_identity *b)
{
    if (a->exists != b->exists) return false;
    if (a->exists) return a->dev == b->dev && a->ino == b->ino;
    return !strcmp(a->name, b->name);
}

clformer_status check_not_input(const char *path, const cli_file *others, size_t n)
{
    file_identity out, in;
    if (!identify(path, &out)) return CLFORMER_OK;
    for (size_t i = 0; i < n; i++) {
        if (!identify(others[i].path, &in) || !same_file(&out, &in)) continue;
        if (others[i].output)
            return clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s' is also the output %s '%s': one would overwrite the "
                                      "other; give each output its own file",
                                      path, others[i].option, others[i].path);
        return clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                  "'%s' is the same file as the input %s '%s': writing it "
                                  "would destroy that input; choose another file name",
                                  path, others[i].option, others[i].path);
    }
    return CLFORMER_OK;
}

clformer_status check_regular_output(const char *path, const char *what)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0 || S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode))
        return CLFORMER_OK; /* a directory: check_writable says so */
    const char *kind = S_ISCHR(sb.st_mode) ? "a character device"
                       : S_ISBLK(sb.st_mode) ? "a block device"
                       : S_ISFIFO(sb.st_mode) ? "a FIFO"
                       : S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
    return clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                              "'%s' is %s: %s is written to a regular file; name one", path,
                              kind, what);
}
