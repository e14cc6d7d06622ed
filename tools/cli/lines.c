/* Reading and writing one-sentence-per-line files (see lines.h). */
#include "lines.h"

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

clformer_status check_not_input(const char *path, const cli_file *inputs, size_t n)
{
    struct stat out, in;
    if (stat(path, &out) != 0) return CLFORMER_OK; /* a new file is no input */
    for (size_t i = 0; i < n; i++)
        if (inputs[i].path && stat(inputs[i].path, &in) == 0 && in.st_dev == out.st_dev &&
            in.st_ino == out.st_ino)
            return clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s' is the same file as the input %s '%s': writing it "
                                      "would destroy that input; choose another file name",
                                      path, inputs[i].option, inputs[i].path);
    return CLFORMER_OK;
}
