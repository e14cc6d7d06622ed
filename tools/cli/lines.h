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

/* Fails (CLFORMER_ERR_IO, naming `path` and what is wrong) unless `path` can
 * be written the way clformer writes files: it creates and removes the very
 * temp file a later atomic write would use, so a directory that refuses new
 * files (/proc, read-only, full of inodes) is found before a command spends
 * minutes on the device. */
clformer_status check_writable(const char *path);

/* A file named on the command line, and the option that named it. */
typedef struct {
    const char *option; /* "--src" */
    const char *path;   /* NULL or "-": not given, or stdin/stdout */
    bool output;        /* another output of the command (its messages say so) */
} cli_file;

/* Fails (CLFORMER_ERR_INVALID_ARGUMENT) when the output `path` is the same
 * file as one of the n `others`: for files that exist, the same device and
 * inode (so links and other spellings count); for files still to be made,
 * the same directory and name. Writing it would destroy that input, or two
 * outputs would overwrite each other. */
clformer_status check_not_input(const char *path, const cli_file *others, size_t n);

/* Fails (CLFORMER_ERR_INVALID_ARGUMENT) when `path` exists and is not a
 * regular file (a device, a FIFO): for outputs that must be files, such as
 * checkpoints; `what` names it ("a checkpoint"). */
clformer_status check_regular_output(const char *path, const char *what);

#endif
