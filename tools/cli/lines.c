/* Reading and writing one-sentence-per-line files (see lines.h). */
#include "lines.h"

#include <string.h>

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

