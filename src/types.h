/* The vocabulary every layer of src/ shares: operations, variants, reduction paths,
   and what clnorm knows about a device (its profile), with their names (names.c).
   Types only: including this header brings no function of another layer. */
#ifndef CLNORM_TYPES_H
#define CLNORM_TYPES_H

#include "clnorm.h"
#include <stdint.h>

/* Every function of src/ that the header clnorm.h does not declare is hidden from
   the shared library's users. */
#define CLN_HIDDEN __attribute__((visibility("hidden")))

/* The reduction path a program is compiled for. */
typedef enum cln_path {
    CLN_PATH_LOCAL = 0,    /* local-memory trees: every device */
    CLN_PATH_SUBGROUP = 1, /* cl_khr_subgroups collectives */
    CLN_PATH_NV = 2        /* NVIDIA warp shuffles through inline PTX */
} cln_path;
#define CLN_PATH_COUNT 3

typedef enum cln_op {
    CLN_OP_RMSNORM = 0, CLN_OP_SOFTMAX_THREE_PASS = 1, CLN_OP_SOFTMAX_ONLINE = 2,
    CLN_OP_STATS = 3, CLN_OP_ADD_RMSNORM = 4,
    CLN_OP_SOFTMAX_AUTO = 5 /* resolved by the plan into THREE_PASS or ONLINE */
} cln_op;
#define CLN_OP_COUNT 6

/* How a row is processed. */
typedef enum cln_variant {
    CLN_VAR_STREAM = 0,    /* a team per row, each pass reads the row from memory */
    CLN_VAR_REGISTERS = 1, /* a team per row, the row held in registers: read once */
    CLN_VAR_SPLIT = 2,     /* several work-groups per row, partials merged in stage two */
    CLN_VAR_WORDS = 3,     /* the register form on words of CLN_WORD neighbouring
                              elements: wider loads, and 16-bit rows kept packed
                              (cl/dtype.cl) */
    CLN_VAR_COOP = 4       /* split rows in one launch, each slice held in registers
                              while the groups of a row exchange partials (cl/coop.cl) */
} cln_variant;
#define CLN_VAR_COUNT 5

/* What clnorm knows about one device; probed once, never trusted from names alone
   (profile.c fills it; the plan reads it). */
typedef struct cln_profile {
    char platform_name[128], platform_vendor[128], platform_version[128];
    char device_name[128], device_vendor[128], driver_version[128];
    cl_device_type type;
    cl_uint compute_units;
    size_t max_wg;          /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong local_mem;     /* CL_DEVICE_LOCAL_MEM_SIZE */
    size_t pref_multiple;   /* preferred work-group multiple of a probe kernel */
    int has_subgroups;      /* cl_khr_subgroups usable (a probe kernel compiled) */
    const char *subgroup_std; /* extra option the sub-group probe needed, or "" */
    int nv;                 /* NVIDIA with cl_nv_device_attribute_query */
    cl_uint nv_cc_major, nv_cc_minor, warp; /* warp: 0 when unknown */
    int has_nv_shuffle;     /* the inline-PTX probe compiled */
    int nv_compiler_options; /* cl_nv_compiler_options: -cl-nv-maxrregcount works */
    int coop;               /* the running groups of one launch progress side by side,
                               so the coop variant may wait across them (NVIDIA) */
    int pocl_major;         /* PoCL's major version, 0 for other platforms */
    cl_uint vec;            /* float32 CLN_VEC of the streaming loops: 4 on GPUs and
                               where simd_lanes, the preferred float vector width (up
                               to 16) on other CPUs */
    int simd_lanes;         /* a CPU that runs work-items as the lanes of its SIMD loops
                               (Mesa llvmpipe): it prefers float vectors of 1 */
    int no_denormals;       /* float32 results below 2^-126 flush to zero (no
                               CL_FP_DENORM: Mesa llvmpipe, many embedded GPUs) */
    cln_path best_path;     /* fastest path the device has */
    int kernel_wg_understated; /* CL_KERNEL_WORK_GROUP_SIZE is below what really runs
                               (Rusticl 22 reports 32, NVIDIA 580 256; both run
                               1024 correctly: docs/DESIGN.md, 'Driver quirks') */
    int flat_barriers;      /* barriers inside branches lose lanes (Mesa llvmpipe): the
                               kernels' rescaling branch runs for every row there */
    unsigned loop_limit;    /* most trips one loop of a work-item may make, 0: no limit
                               (Mesa llvmpipe stops a shader after 65535 loop trips
                               counted over all its loops) */
} cln_profile;

/* Names as tools, traces, messages and tuning files write them (names.c). */
CLN_HIDDEN const char *cln_op_name(cln_op op);
CLN_HIDDEN const char *cln_variant_name(cln_variant v);
CLN_HIDDEN const char *cln_path_name(cln_path p);
CLN_HIDDEN const char *cln_dtype_name(clnorm_dtype d);
/* Bytes per element of d. */
CLN_HIDDEN size_t cln_dtype_size(clnorm_dtype d);

#endif
