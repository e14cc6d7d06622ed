/*
 * Shared by the fuzz targets: the readers under test take file paths, so
 * each input is written to one scratch file per process (rewritten in place
 * for every input; tmpfs-backed /dev/shm when there is one).
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes `size` bytes to scratch file number `slot` (0 or 1); returns its path. */
static inline const char *fuzz_file(int slot, const uint8_t *data, size_t size)
{
    static char paths[2][64];
    if (!paths[slot][0]) {
        const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(paths[slot], sizeof paths[slot], "%s/clformer-fuzz-%ld-%d", dir,
                 (long)getpid(), slot);
    }
    FILE *fp = fopen(paths[slot], "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) abort();
    return paths[slot];
}

/* The input as a NUL-terminated string (malloc'd; NUL bytes inside stay). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
