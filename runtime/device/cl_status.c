/*
 * The names of OpenCL and CLBlast error codes, and the messages of a failed
 * OpenCL or CLBlast call (cl_status.h): the device layer's, so core knows
 * nothing of OpenCL.
 */
#include "cl_status.h"

#include <stdio.h>

const char *cf_cl_error_name(cl_int err)
{
    switch (err) {
#define NAME(code) case code: return #code
    NAME(CL_SUCCESS);
    NAME(CL_DEVICE_NOT_FOUND);
    NAME(CL_DEVICE_NOT_AVAILABLE);
    NAME(CL_COMPILER_NOT_AVAILABLE);
    NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE);
    NAME(CL_OUT_OF_RESOURCES);
    NAME(CL_OUT_OF_HOST_MEMORY);
    NAME(CL_PROFILING_INFO_NOT_AVAILABLE);
    NAME(CL_MEM_COPY_OVERLAP);
    NAME(CL_IMAGE_FORMAT_MISMATCH);
    NAME(CL_IMAGE_FORMAT_NOT_SUPPORTED);
    NAME(CL_BUILD_PROGRAM_FAILURE);
    NAME(CL_MAP_FAILURE);
    NAME(CL_MISALIGNED_SUB_BUFFER_OFFSET);
    NAME(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    NAME(CL_COMPILE_PROGRAM_FAILURE);
    NAME(CL_LINKER_NOT_AVAILABLE);
    NAME(CL_LINK_PROGRAM_FAILURE);
    NAME(CL_DEVICE_PARTITION_FAILED);
    NAME(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
    NAME(CL_INVALID_VALUE);
    NAME(CL_INVALID_DEVICE_TYPE);
    NAME(CL_INVALID_PLATFORM);
    NAME(CL_INVALID_DEVICE);
    NAME(CL_INVALID_CONTEXT);
    NAME(CL_INVALID_QUEUE_PROPERTIES);
    NAME(CL_INVALID_COMMAND_QUEUE);
    NAME(CL_INVALID_HOST_PTR);
    NAME(CL_INVALID_MEM_OBJECT);
    NAME(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    NAME(CL_INVALID_IMAGE_SIZE);
    NAME(CL_INVALID_SAMPLER);
    NAME(CL_INVALID_BINARY);
    NAME(CL_INVALID_BUILD_OPTIONS);
    NAME(CL_INVALID_PROGRAM);
    NAME(CL_INVALID_PROGRAM_EXECUTABLE);
    NAME(CL_INVALID_KERNEL_NAME);
    NAME(CL_INVALID_KERNEL_DEFINITION);
    NAME(CL_INVALID_KERNEL);
    NAME(CL_INVALID_ARG_INDEX);
    NAME(CL_INVALID_ARG_VALUE);
    NAME(CL_INVALID_ARG_SIZE);
    NAME(CL_INVALID_KERNEL_ARGS);
    NAME(CL_INVALID_WORK_DIMENSION);
    NAME(CL_INVALID_WORK_GROUP_SIZE);
    NAME(CL_INVALID_WORK_ITEM_SIZE);
    NAME(CL_INVALID_GLOBAL_OFFSET);
    NAME(CL_INVALID_EVENT_WAIT_LIST);
    NAME(CL_INVALID_EVENT);
    NAME(CL_INVALID_OPERATION);
    NAME(CL_INVALID_GL_OBJECT);
    NAME(CL_INVALID_BUFFER_SIZE);
    NAME(CL_INVALID_MIP_LEVEL);
    NAME(CL_INVALID_GLOBAL_WORK_SIZE);
    NAME(CL_INVALID_PROPERTY);
    NAME(CL_INVALID_IMAGE_DESCRIPTOR);
    NAME(CL_INVALID_COMPILER_OPTIONS);
    NAME(CL_INVALID_LINKER_OPTIONS);
    NAME(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef NAME
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    static _Thread_local char unknown[48];
    snprintf(unknown, sizeof unknown, "CL_UNKNOWN_ERROR(%d)", (int)err);
    return unknown;
}

static int is_memory_error(cl_int err)
{
    return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
           err == CL_OUT_OF_HOST_MEMORY;
}

clformer_status cf_fail_cl(cl_int err, const char *call, const char *file, int line)
{
    if (is_memory_error(err))
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "%s: out of device memory or resources in %s (%s:%d); "
                       "use a smaller batch or model, or a device with more memory",
                       cf_cl_error_name(err), call, file, line);
    return cf_fail(CLFORMER_ERR_OPENCL, "%s in %s (%s:%d)", cf_cl_error_name(err), call,
                   file, line);
}

static const char *clblast_error_text(int err)
{
    switch (err) {
    case -1024: return "CLBlastNotImplemented";
    case -1022: return "CLBlastInvalidMatrixA";
    case -1021: return "CLBlastInvalidMatrixB";
    case -1020: return "CLBlastInvalidMatrixC";
    case -1017: return "CLBlastInvalidDimension (m, n and k must be positive)";
    case -1016: return "CLBlastInvalidLeadDimA (leading dimension too small)";
    case -1015: return "CLBlastInvalidLeadDimB (leading dimension too small)";
    case -1014: return "CLBlastInvalidLeadDimC (leading dimension too small)";
    case -1011: return "CLBlastInsufficientMemoryA (buffer too small for offset and shape)";
    case -1010: return "CLBlastInsufficientMemoryB (buffer too small for offset and shape)";
    case -1009: return "CLBlastInsufficientMemoryC (buffer too small for offset and shape)";
    case -2050: return "CLBlastInsufficientMemoryTemp";
    case -2049: return "CLBlastInvalidBatchCount";
    case -2048: return "CLBlastInvalidOverrideKernel";
    case -2047: return "CLBlastMissingOverrideParameter";
    case -2046: return "CLBlastInvalidLocalMemUsage (not enough local memory)";
    case -2045: return "CLBlastNoHalfPrecision";
    case -2044: return "CLBlastNoDoublePrecision";
    case -2041: return "CLBlastDatabaseError (no tuning entry for this device)";
    case -2040: return "CLBlastUnknownError";
    case -2039: return "CLBlastUnexpectedError";
    }
    return NULL;
}

clformer_status cf_fail_clblast(int err, const char *call, const char *file, int line)
{
    const char *text = clblast_error_text(err);
    if (!text) { /* CLBlast reuses OpenCL's codes above -1000 */
        if (is_memory_error(err))
            return cf_fail_cl(err, call, file, line);
        text = cf_cl_error_name(err);
    }
    return cf_fail(CLFORMER_ERR_CLBLAST, "CLBlast error %d %s in %s (%s:%d)", err, text, call,
                   file, line);
}

