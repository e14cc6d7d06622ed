/*
 * One-sentence-per-line files (clformer_lines_read/_write in clformer_util.h), as
 * `clformer translate` and `clformer eval` read and write them. Unlike a
 * training corpus (corpus.h), empty lines are kept: line i of an output
 * answers line i of its input, and a hypothesis file may hold empty lines
 * that BLEU must count.
 */
#include "clformer_util.h"
#include "door.h"
#include "fileio.h"
#include "status.h"
#include "text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The array holds n line pointers, then NULL, then the buffer they point
 * into, so that clformer_lines_free needs nothing else. */
clformer_status clformer_lines_read(const char *path, char ***lines, size_t *n)
{
    *lines = NULL;
    *n = 0;
    const bool from_stdin = !path || !strcmp(path, "-");
    const char *name = from_stdin ? "stdin" : path;
    char *storage, *buf;
    size_t size;
    CF_TRY(from_stdin ? read_stdin(&storage, &size) : cf_read_text_file(path, &storage, &size));
    buf = storage;
    cf_skip_bom(&buf, &size);
    clformer_status st = cf_check_text(name, buf, size, "the input must be UTF-8 text");
    const size_t count = st == CLFORMER_OK ? cf_count_lines(buf, size) : 0;
    char **array = st == CLFORMER_OK ? malloc((count + 2) * sizeof *array) : NULL;
    if (st == CLFORMER_OK && !array)
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", name);
    if (st != CLFORMER_OK) {
        free(storage);
        return st;
    }
    cf_split_lines(buf, size, array, count);
    array[count] = NULL;
    array[count + 1] = storage;
    *lines = array;
    *n = count;
    return CLFORMER_OK;
}

void clformer_lines_free(char **lines)
{
    if (!lines) return;
    size_t n = 0;
    while (lines[n]) n++;
    free(lines[n + 1]);
    free(lines);
}

clformer_status clformer_lines_write(const char *path, const char *const *lines, size_t n)
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
