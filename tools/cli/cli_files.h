/*
 * The files of a command, through the library's door (clformer_door_*,
 * docs/RELIABILITY.md): a command declares every path it reads and writes,
 * then opens the door before any work; a refusal is one line and exit 2
 * (name other files), a folder that cannot be written exit 1. --overwrite
 * lets an output replace an existing file the run did not make.
 *
 * CLFORMER_LIST_FILES=1 makes the opening print the declared paths instead
 * (one per line: "read|write", what, path, flags) and end the command with
 * exit 0 before any work: tests/test_cli_files.sh reads every command's
 * files from there, so a new output cannot be left out of its checks.
 */
#ifndef CLFORMER_CLI_FILES_H
#define CLFORMER_CLI_FILES_H

#include "clformer.h"

#include <stdbool.h>

typedef struct {
    const char *command;
    clformer_door *door;
    bool overwrite; /* --overwrite: outputs may replace existing files */
} cli_files;

/* The --overwrite option of a command that writes files. */
#define OVERWRITE_CLI_OPTION(flag)                                                        \
    {"--overwrite", CLI_FLAG, &(flag), NULL,                                              \
     "let an output replace an existing file of that name (by default clformer writes "  \
     "only new files)"}

/* Starts the declarations; false after printing why not (out of memory). */
bool cli_files_begin(cli_files *f, const char *command, bool overwrite);
/* Declares a path read / written (NULL: none); false after printing why not. */
bool cli_files_read(cli_files *f, const char *what, const char *path);
/* `flags`: CLFORMER_WRITE_*; CLFORMER_WRITE_REPLACE is added with --overwrite. */
bool cli_files_write(cli_files *f, const char *what, const char *path, unsigned flags);
/* Opens the door: -1 to go on; else the exit code after one line (0 after
 * CLFORMER_LIST_FILES's listing). */
int cli_files_open(cli_files *f);
/* Releases the locks and the door (NULL door is fine). */
void cli_files_end(cli_files *f);

/* A default output name that never replaces an earlier run's file: `path`,
 * or the first free "STEM-N.EXT", into buf; false after printing why not. */
bool cli_files_unused(const char *command, const char *path, char *buf, size_t cap);

#endif
