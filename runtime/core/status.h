/*
 * Error reporting inside the runtime.
 *
 * A failing runtime function records one message (thread-local) and returns a
 * clformer_status. (OpenCL and CLBlast failures: runtime/device/cl_status.h.)
 */
#ifndef CF_STATUS_H
#define CF_STATUS_H

#include "clformer.h"

/* Records a formatted message and returns `status`. */
clformer_status cf_fail(clformer_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes the recorded message with context ("loading x.safetensors: ..."); a
 * context that does not end in a space is followed by ": ". */
clformer_status cf_fail_prefix(clformer_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* CLFORMER_OK when an options struct's `size` field is this library's
 * sizeof (`want`); else CLFORMER_ERR_INVALID_ARGUMENT naming the struct and
 * the fix. Options structs grow at their end; the size is how the library
 * tells a caller built against another clformer.h (docs/API.md). */
#define CF_CHECK_SIZE(type, p) cf_check_size(#type, (p) ? (p)->size : 0, sizeof(type), (p) != NULL)
clformer_status cf_check_size(const char *type, size_t got, size_t want, bool given);

/* Clears the recorded message. */
void cf_clear_error(void);

/* Propagates a failing status from a runtime call. */
#define CF_TRY(expr)                                                           \
    do {                                                                       \
        clformer_status cf_st_ = (expr);                                       \
        if (cf_st_ != CLFORMER_OK)                                             \
            return cf_st_;                                                     \
    } while (0)

#endif
