/* Reading and writing one-sentence-per-line files (see lines.h). */
#include "lines.h"
#include "fileio.h"
#include "status.h"
#include "text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* stdin has no size to ask for: read it in growing chunks. */
static clformer_status read_stdin(char **data, size_t *size)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading stdin");
    for (;;) {
        n += fread(buf + n, 1, cap - n, stdin);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading stdin");
        }
        buf = bigger;
        cap *= 2;
    }
    if (ferror(stdin)) {
        free(buf);
        return cf_fail(CLFORMER_ERR_IO, "cannot read stdin: %s", strerror(errno));
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return CLFORMER_OK;
}

clformer_status line_file_read(const char *path, line_file *out)
{
    memset(out, 0, sizeof *out);
    const bool from_stdin = !path || !strcmp(path, "-");
    out->name = from_stdin ? "stdin" : path;
    char *buf;
    size_t size;
    CF_TRY(from_stdin ? read_stdin(&buf, &size) : cf_read_file(path, &buf, &size));
    out->storage = buf;
    cf_skip_bom(&buf, &size);
    clformer_status st = cf_check_text(out->name, buf, size, "the input must be UTF-8 text");
    if (st != CLFORMER_OK) {
        line_file_free(out);
        return st;
    }
    const size_t n = cf_count_lines(buf, size);
    out->line = malloc((n ? n : 1) * sizeof *out->line);
    if (!out->line) {
        line_file_free(out);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", out->name);
    }
    cf_split_lines(buf, size, out->line, n);
    out->n = n;
    return CLFORMER_OK;
}

void line_file_free(line_file *f)
{
    free(f->line);
    free(f->storage);
    memset(f, 0, sizeof *f);
}

bool line_has_token(const char *line)
{
    size_t pos = 0, start, len;
    return cf_next_token(line, strlen(line), &pos, &start, &len);
}

clformer_status line_file_write(const char *path, const char *const *lines, size_t n)
{
    if (!path) {
        for (size_t i = 0; i < n; i++)
            if (fputs(lines[i], stdout) == EOF || putchar('\n') == EOF) break;
        if (fflush(stdout) != 0 || ferror(stdout))
            return cf_fail(CLFORMER_ERR_IO, "cannot write to stdout: %s", strerror(errno));
        return CLFORMER_OK;
    }
    cf_atomic_file af;
    CF_TRY(cf_atomic_open(&af, path));
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        st = cf_atomic_write(&af, lines[i], strlen(lines[i]));
        if (st == CLFORMER_OK) st = cf_atomic_write(&af, "\n", 1);
    }
    if (st == CLFORMER_OK) st = cf_atomic_commit(&af);
    if (st != CLFORMER_OK) cf_atomic_abort(&af);
    return st;
}

clformer_status check_writable(const char *path) { return cf_atomic_check(path); }

clformer_status check_not_input(const char *path, const cli_file *inputs, size_t n)
{
    struct stat out, in;
    if (stat(path, &out) != 0) return CLFORMER_OK; /* a new file is no input */
    for (size_t i = 0; i < n; i++)
        if (inputs[i].path && stat(inputs[i].path, &in) == 0 && in.st_dev == out.st_dev &&
            in.st_ino == out.st_ino)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "'%s' is the same file as the input %s '%s': writing it would "
                           "destroy that input; choose another file name",
                           path, inputs[i].option, inputs[i].path);
    return CLFORMER_OK;
}
