/*
 * File helpers: whole-file reads and recursive mkdir. Every write goes
 * through the door (door.h): atomic, checked against the run's other files.
 */
#ifndef CF_FILEIO_H
#define CF_FILEIO_H

#include "clformer.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Reads a whole file into a NUL-terminated malloc'd buffer. A pipe, FIFO
 * or device has no size to check: it is read up to CF_STREAM_LIMIT bytes,
 * and one that goes on is refused (/dev/zero must not fill the memory). */
clformer_status cf_read_file(const char *path, char **data, size_t *size);

/* A cache file's text after `header`, its first lines (malloc'd,
 * NUL-terminated): NULL when there is no such file, it cannot be read, or
 * it begins otherwise (made for another device, driver or version). */
char *cf_read_cache_body(const char *path, const char *header);
#define CF_STREAM_LIMIT ((size_t)256 << 20)
#define CF_STREAM_LIMIT_TEXT "256 MiB"

/* The same for text: a stream that holds a NUL byte is refused at once. */
clformer_status cf_read_text_file(const char *path, char **data, size_t *size);

/* mkdir -p; existing directories are fine. */
clformer_status cf_make_dirs(const char *path);

/* `path` with its symbolic links followed (up to 40), malloc'd; the target
 * need not exist. NULL when out of memory or a link cannot be read. */
char *cf_link_target(const char *path);

#endif
