/* One line of progress for long work on a terminal: "translating: 128/1000
 * sentences (13%), 42.1 sentences/s, ETA 21s". */
#ifndef CLFORMER_PROGRESS_H
#define CLFORMER_PROGRESS_H

#include <stddef.h>

/* "?" for an unknown time, else "42s", "3m07s" or "2h05m". */
void progress_duration(double seconds, char *buf, size_t size);

/* The line (no '\r', no newline) for `done` of `total` items after
 * `elapsed` seconds; the rate and ETA follow from them. */
void progress_line(char *buf, size_t size, const char *doing, const char *items, size_t done,
                   size_t total, double elapsed);

#endif
