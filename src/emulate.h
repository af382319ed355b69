/* Emulated device limits for testing (emulate.c): CLNORM_EMULATE lowers what a device's
   profile says it allows, right after probing, so that a large device runs the plans
   of a small one (an embedded GPU's work-group size, local memory and OpenCL C 1.2). */
#ifndef CLNORM_EMULATE_H
#define CLNORM_EMULATE_H

#include "types.h"

/* What CLNORM_EMULATE asks for; 0 / -1 = as the device is. */
typedef struct cln_emulation {
    size_t max_wg;        /* wg=N: at most N work-items a group */
    cl_ulong local_mem;   /* local=N or local=Nk: at most N bytes (N KiB) of local memory */
    int fp16;             /* fp16=0|1: whether the device has cl_khr_fp16, -1 unset */
    int clc_major, clc_minor; /* clc=1.2|2.0|3.0: its OpenCL C version, 0.0 unset */
} cln_emulation;

/* Parses text ("wg=64,local=4096,fp16=0,clc=1.2"; NULL or "" asks for nothing) into
   *out. INVALID_ARGUMENT naming the item it cannot read, as clnorm_last_error(). Pure
   but for that message. */
CLN_HIDDEN clnorm_status cln_emulate_parse(const char *text, cln_emulation *out);
/* Lowers p to e: the work-group and local-memory limits, and under OpenCL C 1.2 no
   sub-groups (cl_khr_subgroups needs OpenCL C 2.0 or 3.0 compilers). NVIDIA's inline
   PTX shuffles stay: NVIDIA's OpenCL C is 1.2. Pure. */
CLN_HIDDEN void cln_emulate_apply(const cln_emulation *e, cln_profile *p);
/* Applies the CLNORM_EMULATE environment variable to a freshly probed profile;
   INVALID_ARGUMENT naming the variable where it cannot be read. */
CLN_HIDDEN clnorm_status cln_emulate_profile(cln_profile *p);

#endif
