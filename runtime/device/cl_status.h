/*
 * OpenCL and CLBlast failures as runtime errors (status.h): CL_CHECK and
 * CLBLAST_CHECK record the failing call's text, file, line and the error's
 * name, so a user report pinpoints the call.
 */
#ifndef CF_CL_STATUS_H
#define CF_CL_STATUS_H

#include "status.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* Records an OpenCL failure; maps allocation errors to OUT_OF_MEMORY. */
clformer_status cf_fail_cl(cl_int err, const char *call, const char *file, int line);

/* Records a CLBlast failure (its own codes or OpenCL ones). */
clformer_status cf_fail_clblast(int err, const char *call, const char *file, int line);

/* "CL_OUT_OF_RESOURCES" for -5, "CL_UNKNOWN_ERROR(-1234)" for unknown codes. */
const char *cf_cl_error_name(cl_int err);

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

#endif
