/* Status strings, OpenCL error names and the thread-local last-error message. */
#include "status.h"

#include "clnorm_advanced.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char cln_last_error[4096];

const char *clnorm_version(void)
{
#define CLN_STR2(x) #x
#define CLN_STR(x) CLN_STR2(x)
    return CLN_STR(CLNORM_VERSION_MAJOR) "." CLN_STR(CLNORM_VERSION_MINOR) "." CLN_STR(
        CLNORM_VERSION_PATCH);
}

const char *clnorm_status_string(clnorm_status s)
{
    switch (s) {
    case CLNORM_SUCCESS: return "CLNORM_SUCCESS";
    case CLNORM_INVALID_ARGUMENT: return "CLNORM_INVALID_ARGUMENT";
    case CLNORM_OUT_OF_BOUNDS: return "CLNORM_OUT_OF_BOUNDS";
    case CLNORM_DEVICE_NOT_FOUND: return "CLNORM_DEVICE_NOT_FOUND";
    case CLNORM_UNSUPPORTED: return "CLNORM_UNSUPPORTED";
    case CLNORM_BUILD_FAILED: return "CLNORM_BUILD_FAILED";
    case CLNORM_OUT_OF_RESOURCES: return "CLNORM_OUT_OF_RESOURCES";
    case CLNORM_OPENCL_ERROR: return "CLNORM_OPENCL_ERROR";
    }
    return "CLNORM_UNKNOWN_STATUS";
}

const char *clnorm_last_error(void) { return cln_last_error; }

static void cln_vset(const char *prefix, const char *fmt, va_list ap)
{
    size_t n = 0;
    if (prefix) {
        n = (size_t)snprintf(cln_last_error, sizeof cln_last_error, "%s", prefix);
        if (n >= sizeof cln_last_error) n = sizeof cln_last_error - 1;
    }
    vsnprintf(cln_last_error + n, sizeof cln_last_error - n, fmt, ap);
}

clnorm_status cln_fail(clnorm_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cln_vset(NULL, fmt, ap);
    va_end(ap);
    return st;
}

const char *cln_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY) E(CL_PROFILING_INFO_NOT_AVAILABLE)
    E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH) E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_COMPILE_PROGRAM_FAILURE)
    E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE) E(CL_DEVICE_PARTITION_FAILED)
    E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE)
    E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    E(CL_INVALID_IMAGE_SIZE) E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY)
    E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE)
    E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT) E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT)
    E(CL_INVALID_BUFFER_SIZE) E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE)
    E(CL_INVALID_PROPERTY) E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS)
    E(CL_INVALID_LINKER_OPTIONS) E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    default: return "CL_UNKNOWN_ERROR";
    }
}

clnorm_status cln_cl_status(cl_int err)
{
    switch (err) {
    case CL_SUCCESS: return CLNORM_SUCCESS;
    case CL_OUT_OF_RESOURCES:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return CLNORM_OUT_OF_RESOURCES;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE: return CLNORM_BUILD_FAILED;
    case CL_DEVICE_NOT_FOUND: return CLNORM_DEVICE_NOT_FOUND;
    default: return CLNORM_OPENCL_ERROR;
    }
}

clnorm_status cln_cl_fail(cl_int err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(cln_last_error, sizeof cln_last_error, "%s failed: %s (%d)", what,
             cln_cl_error_name(err), (int)err);
    return cln_cl_status(err);
}

const char *clnorm_opencl_error_name(cl_int err)
{
    return cln_cl_error_name(err);
}
