/* Reading and writing one-sentence-per-line files (see lines.h). */
#include "lines.h"
#include "text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool line_has_token(const char *line)
{
    size_t pos = 0, start, len;
    return cf_next_token(line, strlen(line), &pos, &start, &len);
}

clformer_status line_file_write(const char *path, const char *const *lines, size_t n)
{
    return clformer_lines_write(path, lines, n);
}

clformer_status check_writable(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return clformer_set_error(CLFORMER_ERR_IO,
                                  "cannot write '%s': it is a directory; give a file name", path);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    if (stat(dir, &sb) != 0)
        st = clformer_set_error(CLFORMER_ERR_IO, "cannot write '%s': directory '%s': %s", path,
                                dir, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = clformer_set_error(CLFORMER_ERR_IO, "cannot write '%s': '%s' is not a directory",
                                path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        st = clformer_set_error(CLFORMER_ERR_IO, "cannot write '%s': directory '%s': %s", path,
                                dir, strerror(errno));
    free(dir);
    return st;
}
