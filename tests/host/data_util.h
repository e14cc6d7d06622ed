/*
 * Helpers shared by the data-pipeline host tests: test data paths, scratch
 * files in a private temporary directory, and error-message assertions.
 */
#ifndef CF_TEST_DATA_UTIL_H
#define CF_TEST_DATA_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clformer.h"
#include "harness.h"

/* $CLFORMER_TEST_DATA/<rel> (tests/data), in a static buffer. */
static inline const char *data_path(const char *rel)
{
    static char path[4096];
    const char *dir = getenv("CLFORMER_TEST_DATA");
    if (!dir) fail_msg("CLFORMER_TEST_DATA is not set (run the test through ctest)");
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return path;
}

/* A fresh temporary directory, removed (with its files) by tmp_cleanup. */
static char tmp_root[256];
static inline const char *tmp_dir(void)
{
    if (!tmp_root[0]) {
        snprintf(tmp_root, sizeof tmp_root, "/tmp/clformer-data-test-XXXXXX");
        if (!mkdtemp(tmp_root)) fail_msg("mkdtemp failed");
    }
    return tmp_root;
}

static inline void tmp_cleanup(void)
{
    if (!tmp_root[0]) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
    tmp_root[0] = '\0';
}

/* A group teardown for cmocka: tmp_cleanup. */
static inline int tmp_teardown(void **state)
{
    (void)state;
    tmp_cleanup();
    return 0;
}

/* Writes `size` bytes to <tmp>/<name>; returns the path (malloc'd). */
static inline char *tmp_file(const char *name, const void *data, size_t size)
{
    char *path = malloc(strlen(tmp_dir()) + strlen(name) + 2);
    sprintf(path, "%s/%s", tmp_dir(), name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(data, 1, size, fp) != size || fclose(fp) != 0)
        fail_msg("cannot write %s", path);
    return path;
}

static inline char *tmp_text(const char *name, const char *text)
{
    return tmp_file(name, text, strlen(text));
}

/* Asserts that `st` is `want` and the last error contains every given
 * fragment (NULL-terminated list). */
#define assert_error(st, want, ...) \
    assert_error_at((st), (want), __FILE__, __LINE__, __VA_ARGS__, (const char *)NULL)
static inline void assert_error_at(clformer_status st, clformer_status want, const char *file,
                                   int line, ...)
{
    const char *msg = clformer_last_error();
    if (st != want)
        harness_fail_at(file, line, "status %s, expected %s (message: %s)",
                        clformer_status_name(st), clformer_status_name(want), msg);
    va_list ap;
    va_start(ap, line);
    for (const char *frag; (frag = va_arg(ap, const char *));)
        if (!strstr(msg, frag))
            harness_fail_at(file, line, "message \"%s\" lacks \"%s\"", msg, frag);
    va_end(ap);
}

#endif
