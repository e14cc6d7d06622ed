/*
 * File helpers: whole-file reads, recursive mkdir, and atomic writes
 * (temp file in the same directory, fsync, rename, fsync the directory), so a
 * crash never leaves a half-written checkpoint or cache entry behind.
 */
#ifndef CF_FILEIO_H
#define CF_FILEIO_H

#include "clformer.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Reads a whole file into a NUL-terminated malloc'd buffer. */
clformer_status cf_read_file(const char *path, char **data, size_t *size);

/* mkdir -p; existing directories are fine. */
clformer_status cf_make_dirs(const char *path);

/* A file being written atomically: `path` appears only on commit. */
typedef struct {
    FILE *fp;
    char *path;      /* the file replaced: symbolic links followed to their target */
    char *temp_path; /* NULL when written in place */
    bool in_place;   /* a character device, FIFO or socket: written directly */
} cf_atomic_file;

/* Creates the temp file "<path>.tmp.<pid>". It first removes the temp files
 * of `path` that processes no longer running left behind (a kill -9 during a
 * save), so they do not pile up. A symbolic link is followed (the link stays,
 * its target is replaced); an existing target that is not a regular file
 * (/dev/stdout, a device, a FIFO) is opened and written in place, every
 * write checked, since renaming over it would replace it with a file. */
clformer_status cf_atomic_open(cf_atomic_file *af, const char *path);
clformer_status cf_atomic_write(cf_atomic_file *af, const void *data, size_t size);
/* Overwrites `size` bytes at `offset` of what was written so far. */
clformer_status cf_atomic_patch(cf_atomic_file *af, uint64_t offset, const void *data,
                                size_t size);
/* Flushes, fsyncs, renames over `path`, fsyncs the directory. */
clformer_status cf_atomic_commit(cf_atomic_file *af);
/* Removes the temp file; safe after a failed write or commit. */
void cf_atomic_abort(cf_atomic_file *af);

/* Checks up front that `path` can be written atomically later: creates and
 * removes the very temp file a save would use, and refuses a directory; a
 * target written in place (see cf_atomic_open) must be writable. */
clformer_status cf_atomic_check(const char *path);

/* `path` with its symbolic links followed (up to 40), malloc'd; the target
 * need not exist. NULL when out of memory or a link cannot be read. */
char *cf_link_target(const char *path);

/* One-shot atomic write of a buffer. */
clformer_status cf_write_file_atomic(const char *path, const void *data, size_t size);

#endif
