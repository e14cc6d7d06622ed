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

/* The 1-based line of byte `at` and the byte's 1-based position in it. */
static void locate(const char *buf, size_t at, size_t *line, size_t *byte)
{
    size_t l = 1, start = 0;
    for (size_t i = 0; i < at; i++)
        if (buf[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *byte = at - start + 1;
}

static clformer_status check_text(const char *name, const char *buf, size_t size)
{
    size_t line, byte, bad;
    const char *nul = memchr(buf, '\0', size);
    if (nul) {
        locate(buf, (size_t)(nul - buf), &line, &byte);
        return cf_fail(CLFORMER_ERR_FORMAT, "%s:%zu: NUL byte at byte %zu of the line; the "
                       "input must be UTF-8 text, one sentence per line", name, line, byte);
    }
    if (!cf_utf8_valid(buf, size, &bad)) {
        locate(buf, bad, &line, &byte);
        return cf_fail(CLFORMER_ERR_FORMAT, "%s:%zu: invalid UTF-8 at byte %zu of the line "
                       "(0x%02x); the input must be UTF-8 text", name, line, byte,
                       (unsigned char)buf[bad]);
    }
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
    if (size >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) buf += 3, size -= 3;
    clformer_status st = check_text(out->name, buf, size);
    if (st != CLFORMER_OK) {
        line_file_free(out);
        return st;
    }
    size_t n = 0;
    for (size_t i = 0; i < size; i++) n += buf[i] == '\n';
    if (size > 0 && buf[size - 1] != '\n') n++;
    out->line = malloc((n ? n : 1) * sizeof *out->line);
    if (!out->line) {
        line_file_free(out);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", out->name);
    }
    /* split in place: every '\n' becomes the NUL that ends its line */
    char *p = buf;
    for (size_t k = 0; k < n; k++) {
        out->line[k] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break; /* the unterminated last line ends at buf[size] = NUL */
        *nl = '\0';
        p = nl + 1;
    }
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

clformer_status check_writable(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return cf_fail(CLFORMER_ERR_IO, "cannot write '%s': it is a directory; give a file name",
                       path);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    if (stat(dir, &sb) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': directory '%s': %s", path, dir,
                     strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': '%s' is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        st = cf_fail(CLFORMER_ERR_IO, "cannot write '%s': directory '%s': %s", path, dir,
                     strerror(errno));
    free(dir);
    return st;
}
