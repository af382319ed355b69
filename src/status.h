/* Errors: the thread's last error message and the status it goes with (status.c). */
#ifndef CLNORM_STATUS_H
#define CLNORM_STATUS_H

#include "types.h"

/* Records a formatted message as this thread's last error and returns st. */
CLN_HIDDEN clnorm_status cln_fail(clnorm_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Maps an OpenCL error to a status and records "<what>: <CL_ERROR_NAME> (<code>)". */
CLN_HIDDEN clnorm_status cln_cl_fail(cl_int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
CLN_HIDDEN const char *cln_cl_error_name(cl_int err);
CLN_HIDDEN clnorm_status cln_cl_status(cl_int err);

/* Check macro: on an OpenCL error, record which call failed and jump to fail. */
#define CLN_CHECK_CL(call, what)                                                   \
    do {                                                                             \
        cl_int cln_err_ = (call);                                                    \
        if (cln_err_ != CL_SUCCESS) { st = cln_cl_fail(cln_err_, "%s", what); goto fail; } \
    } while (0)

#endif
