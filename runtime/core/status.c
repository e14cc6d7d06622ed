/*
 * Error messages: one thread-local buffer holding the last failure's text.
 * The names of OpenCL and CLBlast error codes are the device layer's
 * (runtime/device/cl_status.c).
 */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CF_ERROR_CAPACITY 8192

static _Thread_local char last_error[CF_ERROR_CAPACITY];

const char *clformer_last_error(void) { return last_error; }

void cf_clear_error(void) { last_error[0] = '\0'; }

const char *clformer_status_name(clformer_status status)
{
    switch (status) {
    case CLFORMER_OK: return "CLFORMER_OK";
    case CLFORMER_ERR_INVALID_ARGUMENT: return "CLFORMER_ERR_INVALID_ARGUMENT";
    case CLFORMER_ERR_NO_DEVICE: return "CLFORMER_ERR_NO_DEVICE";
    case CLFORMER_ERR_OPENCL: return "CLFORMER_ERR_OPENCL";
    case CLFORMER_ERR_CLBLAST: return "CLFORMER_ERR_CLBLAST";
    case CLFORMER_ERR_BUILD: return "CLFORMER_ERR_BUILD";
    case CLFORMER_ERR_OUT_OF_MEMORY: return "CLFORMER_ERR_OUT_OF_MEMORY";
    case CLFORMER_ERR_IO: return "CLFORMER_ERR_IO";
    case CLFORMER_ERR_FORMAT: return "CLFORMER_ERR_FORMAT";
    case CLFORMER_ERR_INTERRUPTED: return "CLFORMER_ERR_INTERRUPTED";
    case CLFORMER_ERR_DIVERGED: return "CLFORMER_ERR_DIVERGED";
    }
    return "CLFORMER_ERR_UNKNOWN";
}

static void record(const char *fmt, va_list ap) { vsnprintf(last_error, sizeof last_error, fmt, ap); }

clformer_status cf_fail(clformer_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap);
    va_end(ap);
    return status;
}

clformer_status cf_fail_prefix(clformer_status status, const char *fmt, ...)
{
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* a context without its own separator ("training data") gets ": ", so
     * no caller can glue two messages into one word */
    size_t p = strlen(prefix), old = strlen(last_error);
    if (p > 0 && old > 0 && prefix[p - 1] != ' ' && p + 2 < sizeof prefix) {
        memcpy(prefix + p, ": ", 3);
        p += 2;
    }
    /* shift the old message right, truncating its end, and put the prefix first */
    if (p + old >= sizeof last_error) old = sizeof last_error - 1 - p;
    memmove(last_error + p, last_error, old);
    memcpy(last_error, prefix, p);
    last_error[p + old] = '\0';
    return status;
}

clformer_status cf_check_size(const char *type, size_t got, size_t want, bool given)
{
    if (!given) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s is NULL", type);
    if (got == want) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s.size is %zu, but this library's %s is %zu bytes: fill it with %s_default() "
                   "before setting fields (and rebuild against the clformer.h of this library)",
                   type, got, type, want, type);
}
