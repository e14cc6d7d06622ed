/*
 * Line files for `clformer translate` and `clformer eval`, on
 * clformer_lines_read/_write (clformer.h): one sentence per line, read whole
 * and validated, empty lines kept, written back to stdout or atomically to a
 * file (so a failed run leaves no half-written output).
 */
#ifndef CLFORMER_LINES_H
#define CLFORMER_LINES_H

#include "clformer.h"
#include "clformer_util.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    size_t n;          /* lines: '\n'-terminated ones plus an unterminated last one */
    char **line;       /* [n] NUL-terminated, without the '\n' */
    const char *name;  /* the path, or "stdin", for messages */
} line_file;

/* Reads `path`, or stdin when path is NULL or "-". Errors name the file (and
 * the line for bad bytes): CLFORMER_ERR_IO, CLFORMER_ERR_FORMAT. An empty
 * file is n = 0, not an error: the caller says what it needed. */
clformer_status line_file_read(const char *path, line_file *out);
void line_file_free(line_file *f);

/* True when the line holds at least one whitespace-separated token. */
bool line_has_token(const char *line);

/* Writes n lines, each ended by '\n', atomically to `path`, or to stdout
 * when path is NULL. */
clformer_status line_file_write(const char *path, const char *const *lines, size_t n);

#endif
