/*
 * Error reporting inside the runtime.
 *
 * A failing runtime function records one message (thread-local) and returns a
 * clformer_status. CL_CHECK and CLBLAST_CHECK record the failing call's text,
 * file, line and the error's name, so a user report pinpoints the call.
 */
#ifndef CF_STATUS_H
#define CF_STATUS_H

#include "clformer.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

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

/* Records an OpenCL failure; maps allocation errors to OUT_OF_MEMORY. */
clformer_status cf_fail_cl(cl_int err, const char *call, const char *file, int line);

/* Records a CLBlast failure (its own codes or OpenCL ones). */
clformer_status cf_fail_clblast(int err, const char *call, const char *file, int line);

/* "CL_OUT_OF_RESOURCES" for -5, "CL_UNKNOWN_ERROR(-1234)" for unknown codes. */
const char *cf_cl_error_name(cl_int err);

/* Clears the recorded message. */
void cf_clear_error(void);

#define CL_CHECK(call)                                                         \
    do {                                                                       \
        cl_int cf_err_ = (call);                                               \
        if (cf_err_ != CL_SUCCESS)                                             \
            return cf_fail_cl(cf_err_, #call, __FILE__, __LINE__);             \
    } while (0)

#define CLBLAST_CHECK(call)                                                    \
    do {                                                                       \
        int cf_err_ = (int)(call);                                             \
        if (cf_err_ != 0)                                                      \
            return cf_fail_clblast(cf_err_, #call, __FILE__, __LINE__);        \
    } while (0)

/* Propagates a failing status from a runtime call. */
#define CF_TRY(expr)                                                           \
    do {                                                                       \
        clformer_status cf_st_ = (expr);                                       \
        if (cf_st_ != CLFORMER_OK)                                             \
            return cf_st_;                                                     \
    } while (0)

#endif
