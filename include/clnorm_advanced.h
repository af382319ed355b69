/*
 * clnorm_advanced.h: configuration, plans, device information, tuning tables and the
 * disk cache, for tools, benchmarks, tests and applications that tune clnorm.
 *
 * Everything in clnorm.h keeps working without this header. Unlike clnorm.h, its
 * declarations may change between minor versions (before 1.0, between any two
 * versions): a program that includes it should be built against the version it
 * links (check CLNORM_VERSION_* against clnorm_version()). Every function here may
 * be called from any number of threads.
 *
 * Where configuration comes from, in order of precedence, field by field:
 *   1. the calling thread's hints (clnorm_set_thread_hints), for the calls that
 *      thread makes while they are set;
 *   2. the queue's hints (clnorm_set_queue_hints), for calls on that queue;
 *   3. the process configuration (clnorm_config_set), whose initial value is read
 *      once from the CLNORM_* environment variables at the library's first use;
 *   4. the library's own choice (the device's tuning table, then the built-in plan).
 * A hint field at its "automatic" value (0 or -1, as documented) defers to the next
 * source.
 */
#ifndef CLNORM_ADVANCED_H
#define CLNORM_ADVANCED_H

#include "clnorm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Operations, variants, reduction paths ------------------------------------ */

typedef enum clnorm_op {
    CLNORM_OP_RMSNORM = 0,
    CLNORM_OP_SOFTMAX_THREE_PASS = 1,
    CLNORM_OP_SOFTMAX_ONLINE = 2,
    CLNORM_OP_SOFTMAX_STATS = 3,
    CLNORM_OP_ADD_RMSNORM = 4,
    CLNORM_OP_SOFTMAX_AUTO = 5 /* resolved by the plan into THREE_PASS or ONLINE */
} clnorm_op;
#define CLNORM_OP_COUNT 6

/* How a row is processed (docs/DESIGN.md, 'Kernels and variants'). */
typedef enum clnorm_variant {
    CLNORM_VARIANT_AUTO = -1,
    CLNORM_VARIANT_STREAM = 0,    /* a team of work-items per row; each pass reads it */
    CLNORM_VARIANT_REGISTERS = 1, /* the row held in registers: read once */
    CLNORM_VARIANT_SPLIT = 2,     /* several work-groups per row, partials merged */
    CLNORM_VARIANT_WORDS = 3,     /* registers, as words of 2 or 4 elements */
    CLNORM_VARIANT_COOP = 4       /* split rows in one launch, slices in registers;
                                     softmax on NVIDIA, else the split variant runs */
} clnorm_variant;
#define CLNORM_VARIANT_COUNT 5

/* How a work-group reduces (docs/DESIGN.md, 'Reduction paths'). As a hint,
   CLNORM_REDUCTION_SUBGROUP asks for the device's fast path, whichever it is, and
   is refused with CLNORM_UNSUPPORTED where the device has none. */
typedef enum clnorm_reduction {
    CLNORM_REDUCTION_AUTO = -1,
    CLNORM_REDUCTION_LOCAL = 0,     /* local-memory trees: every device */
    CLNORM_REDUCTION_SUBGROUP = 1,  /* cl_khr_subgroups collectives */
    CLNORM_REDUCTION_NV_SHUFFLE = 2 /* NVIDIA warp shuffles through inline PTX */
} clnorm_reduction;

/* How kernels are grouped into OpenCL programs (docs/DESIGN.md, 'Program grouping'). */
typedef enum clnorm_programs {
    CLNORM_PROGRAMS_AUTO = 0, /* one kernel per program where the disk cache keeps
                                 binaries, all kernels of a dtype and path elsewhere */
    CLNORM_PROGRAMS_ONE = 1,
    CLNORM_PROGRAMS_ALL = 2
} clnorm_programs;

/* Static names ("rmsnorm", "softmax_three_pass", ...; "stream", "registers",
   "split", "words"; "local", "subgroup", "nv_shuffle"; "f32", "f16", "bf16");
   "?" for a value not listed. Never NULL. */
CLNORM_API const char *clnorm_op_name(clnorm_op op);
CLNORM_API const char *clnorm_variant_name(clnorm_variant v);
CLNORM_API const char *clnorm_reduction_name(clnorm_reduction r);
CLNORM_API const char *clnorm_dtype_name(clnorm_dtype d);

/* The name of an OpenCL error code ("CL_INVALID_VALUE", ...), as clnorm_last_error()
   writes it; "CL_UNKNOWN_ERROR" for a code it does not know. Static; never NULL. */
CLNORM_API const char *clnorm_opencl_error_name(cl_int err);

/* ---- Plan hints ------------------------------------------------------------------ */

typedef struct clnorm_plan_hints {
    size_t work_group;      /* work-items per work-group; 0: automatic */
    size_t items_per_row;   /* work-items per row (divides work_group); 0: automatic */
    int variant;            /* a clnorm_variant; CLNORM_VARIANT_AUTO: automatic */
    size_t split;           /* work-groups per row of the split variant; 0: automatic */
    int reduction;          /* a clnorm_reduction; CLNORM_REDUCTION_AUTO: automatic */
    size_t word;            /* elements per word of the words variant: 2 or 4; 0:
                               automatic (4 on GPUs, 2 on CPUs) */
    int programs;           /* a clnorm_programs; CLNORM_PROGRAMS_AUTO: automatic */
    size_t max_work_group;  /* plan as if the device allowed no larger work-group;
                               0: the device's limit */
    cl_ulong max_local_mem; /* plan as if the device had no more local memory
                               (bytes); 0: the device's */
    int tuning;             /* 1: use the device's tuning table, 0: ignore it;
                               -1: automatic (use it unless a size or variant above
                               is forced) */
} clnorm_plan_hints;

/* Sets every field to automatic. */
CLNORM_API void clnorm_plan_hints_init(clnorm_plan_hints *hints);

/* Hints for the calls of the calling thread (any queue) until they are set again;
   NULL removes them. The structure is copied. Refuses (INVALID_ARGUMENT, naming the
   field) a field out of range, items_per_row that does not divide work_group, or a
   word other than 0, 2 or 4. */
CLNORM_API clnorm_status clnorm_set_thread_hints(const clnorm_plan_hints *hints);

/* Hints for every call on queue, from any thread, until they are set again or
   clnorm_release_cache() drops the queue's context; NULL removes them. The queue is
   not retained. Refuses as clnorm_set_thread_hints, and a NULL or invalid queue. */
CLNORM_API clnorm_status clnorm_set_queue_hints(cl_command_queue queue,
                                                const clnorm_plan_hints *hints);

/* ---- Process configuration ------------------------------------------------------- */

typedef struct clnorm_config {
    clnorm_plan_hints hints;  /* CLNORM_WORK_GROUP, CLNORM_ROW_THREADS, CLNORM_VARIANT,
                                 CLNORM_SPLIT, CLNORM_REDUCTION, CLNORM_PAIR_WORD,
                                 CLNORM_PROGRAMS, CLNORM_MAX_WORK_GROUP,
                                 CLNORM_MAX_LOCAL_MEM, CLNORM_TUNING */
    char cache_dir[1024];     /* CLNORM_CACHE_DIR: "" for the default folder, "off"
                                 for no disk cache */
    char kernel_dir[1024];    /* CLNORM_KERNEL_DIR: "" for the built-in sources */
    char build_options[512];  /* CLNORM_BUILD_OPTIONS: extra OpenCL build options */
    int build_log;            /* CLNORM_BUILD_LOG: 1 prints each build log to stderr */
    int trace;                /* CLNORM_TRACE: 1 prints each operation's plan */
    int serial;               /* CLNORM_SERIAL: -1 automatic (on PoCL), 0 never,
                                 1 always */
} clnorm_config;

/* Reads the CLNORM_* environment variables now into *config (unset ones automatic).
   Refuses (INVALID_ARGUMENT, naming the variable and its value) a value it cannot
   parse; *config then holds the others. The library itself reads the environment
   once, at its first use, as the process configuration. */
CLNORM_API clnorm_status clnorm_config_from_env(clnorm_config *config);

/* The process configuration in force. */
CLNORM_API void clnorm_config_get(clnorm_config *config);

/* Replaces the process configuration for every later call of every thread (calls in
   flight finish as they began). Validates as clnorm_set_thread_hints; a string that
   does not fit its field is refused. */
CLNORM_API clnorm_status clnorm_config_set(const clnorm_config *config);

/* ---- Plans --------------------------------------------------------------------- */

typedef struct clnorm_plan_info {
    clnorm_op op;                /* resolved: never CLNORM_OP_SOFTMAX_AUTO */
    clnorm_variant variant;
    clnorm_reduction reduction;  /* the path the kernels are built for */
    size_t work_group;           /* work-items per work-group */
    size_t items_per_row;        /* work-items per row */
    size_t rows_per_group;       /* work_group / items_per_row */
    size_t groups;               /* work-groups of the first stage */
    size_t split;                /* work-groups per row (split and coop variants), else 1 */
    size_t split_cols;           /* columns per work-group (split and coop), else 0 */
    size_t local_bytes;          /* local memory per work-group */
    size_t word;                 /* elements per word (words variant), else 1 */
    size_t elems_per_item;       /* elements each work-item holds (registers and
                                    words variants), else 0 */
    const char *kernels[3];      /* OpenCL names of the stages in order; NULL where a
                                    stage is absent. Static storage. */
    int tuned;                   /* 1 when the device's tuning table chose it */
} clnorm_plan_info;

/* The plan an operation of rows x cols would use on device, under the given hints
   (NULL: the calling thread's, then the process configuration's) and the device's
   tuning table, without running it. The plan an actual call uses can differ where
   the call's views do not allow the words variant or where a compiled kernel's own
   work-group limit is lower (see clnorm_last_plan). Refuses what the call would
   refuse for these sizes (INVALID_ARGUMENT for cols == 0 or a bad enum,
   UNSUPPORTED for a forced path the device lacks, INVALID_ARGUMENT for forced sizes
   that cannot run), and DEVICE_NOT_FOUND for an invalid device. rows == 0 plans as
   rows == 1. */
CLNORM_API clnorm_status clnorm_plan_query(cl_device_id device, const clnorm_plan_hints *hints,
                                           clnorm_op op, clnorm_dtype dtype, size_t rows,
                                           size_t cols, clnorm_plan_info *out);

/* The plan of the calling thread's most recent enqueued operation; 0 (and *out
   untouched) before the first. */
CLNORM_API int clnorm_last_plan(clnorm_plan_info *out);

/* One line describing a plan ("registers/local wg 256, 8 rows/wg, 512 groups" and
   the like) into buf, always NUL-terminated. */
CLNORM_API void clnorm_plan_describe(const clnorm_plan_info *plan, char *buf, size_t len);

/* ---- Devices ------------------------------------------------------------------- */

typedef struct clnorm_device_info {
    cl_platform_id platform;
    cl_device_id device;
    unsigned platform_index, device_index; /* the "P:D" of a device spec */
    char platform_name[128], platform_vendor[128], platform_version[128];
    char device_name[128], device_vendor[128], driver_version[128];
    cl_device_type type;
    cl_uint compute_units;
    size_t max_work_group;       /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong local_mem;          /* CL_DEVICE_LOCAL_MEM_SIZE */
    int probed;                  /* 1: the fields below come from probes */
    size_t preferred_multiple;   /* preferred work-group multiple of a probe kernel */
    int subgroups;               /* cl_khr_subgroups usable */
    int nv_shuffle;              /* NVIDIA inline-PTX warp shuffles usable */
    cl_uint nv_cc_major, nv_cc_minor, warp; /* NVIDIA only; 0 elsewhere */
    int pocl_major;              /* PoCL's major version; 0 for other platforms */
    cl_uint vector_width;        /* float32 elements per load of the streaming loops */
    clnorm_reduction reduction;  /* the fastest path the device has */
    int kernel_wg_understated;   /* the driver's per-kernel work-group limit is below
                                    what runs (clnorm plans up to the device's) */
    int flat_barriers;           /* barriers inside branches lose lanes */
    unsigned loop_limit;         /* most loop trips a work-item may make; 0: none */
} clnorm_device_info;

/* The number of OpenCL devices of every platform, in `clnorm devices` order. */
CLNORM_API clnorm_status clnorm_device_count(size_t *count);

/* Device index (0 .. count-1) of that order. probe: 1 runs clnorm's probes (small
   kernel builds, cached in memory and on disk) and fills every field; 0 fills only
   the fields that plain device queries give. */
CLNORM_API clnorm_status clnorm_device_get(size_t index, int probe, clnorm_device_info *out);

/* The device a spec names, as clnorm_session_create resolves it (NULL: $CLNORM_DEVICE,
   else the first GPU, else the first device). DEVICE_NOT_FOUND naming the spec. */
CLNORM_API clnorm_status clnorm_device_find(const char *spec, int probe,
                                            clnorm_device_info *out);

/* Information about a device the caller already has. */
CLNORM_API clnorm_status clnorm_device_describe(cl_device_id device, int probe,
                                                clnorm_device_info *out);

/* ---- Kernels --------------------------------------------------------------------- */

/* The number of kernels in the library, and the OpenCL name of kernel i (static). */
CLNORM_API size_t clnorm_kernel_count(void);
CLNORM_API const char *clnorm_kernel_name(size_t index);

typedef struct clnorm_kernel_limits {
    size_t work_group;   /* CL_KERNEL_WORK_GROUP_SIZE as the driver reports it */
    cl_ulong private_mem, local_mem;
} clnorm_kernel_limits;

/* Builds (or finds in the caches) kernel index for context's device in dtype on the
   given path (AUTO: the device's fastest), and reports the driver's limits for it. */
CLNORM_API clnorm_status clnorm_kernel_limits_get(cl_context context, cl_device_id device,
                                                  clnorm_dtype dtype,
                                                  clnorm_reduction reduction, size_t index,
                                                  clnorm_kernel_limits *out);

/* Process-wide counters, for tests and tools: programs built from source, programs
   loaded from the disk cache, disk-cache loads that found no file, files rejected as
   damaged or stale, binaries the driver refused, and stores. */
typedef struct clnorm_cache_stats {
    unsigned long builds, disk_hits, disk_misses, disk_rejected, disk_refused;
    unsigned long disk_stores, disk_store_failures;
} clnorm_cache_stats;
CLNORM_API void clnorm_cache_stats_get(clnorm_cache_stats *out);

/* ---- Tuning tables --------------------------------------------------------------- */

/* One measured plan of a device's tuning table (`clnorm tune` writes them). */
typedef struct clnorm_tuning_entry {
    clnorm_op op;            /* as asked; CLNORM_OP_SOFTMAX_AUTO picks the algorithm */
    clnorm_dtype dtype;
    size_t cols, rows;       /* the shape measured */
    clnorm_op algorithm;     /* the resolved operation (== op except for AUTO) */
    clnorm_variant variant;
    clnorm_reduction reduction;
    size_t work_group, items_per_row, split; /* split: the split variant's, else 0 */
    double best_us, builtin_us;              /* the winner's and the built-in plan's */
} clnorm_tuning_entry;

/* Outcome of reading a file of the disk cache. */
typedef enum clnorm_cache_file_status {
    CLNORM_CACHE_FILE_OK = 0,
    CLNORM_CACHE_FILE_ABSENT = 1,  /* no such file */
    CLNORM_CACHE_FILE_DAMAGED = 2, /* bad header, checksum or contents */
    CLNORM_CACHE_FILE_OFF = 3,     /* the disk cache is off or has no folder */
    CLNORM_CACHE_FILE_STALE = 4    /* whole, but for another library, format,
                                      kernel source, device or driver */
} clnorm_cache_file_status;

/* The device's tuning table: *entries (free it with free()) and *count, or NULL and
   0 where there is none. Returns CLNORM_CACHE_FILE_OK, ABSENT, DAMAGED, STALE or OFF;
   path (may be NULL) receives the file's path. */
CLNORM_API clnorm_cache_file_status clnorm_tuning_read(cl_device_id device,
                                                       clnorm_tuning_entry **entries,
                                                       size_t *count, char *path,
                                                       size_t path_len);

/* Replaces the device's tuning table (atomically) with count entries; the library
   uses it from the next call on. INVALID_ARGUMENT for an entry out of range,
   UNSUPPORTED when the disk cache is off, OPENCL_ERROR-free I/O failures as
   OUT_OF_RESOURCES with the path in the message. */
CLNORM_API clnorm_status clnorm_tuning_write(cl_device_id device,
                                             const clnorm_tuning_entry *entries,
                                             size_t count);

/* ---- The disk cache -------------------------------------------------------------- */

/* The cache folder in force into buf: CLNORM_CACHE_FILE_OK, or OFF when the disk
   cache is off (buf then ""). */
CLNORM_API clnorm_cache_file_status clnorm_cache_dir(char *buf, size_t len);

typedef struct clnorm_cache_file {
    char kind[16];           /* "program", "tuning", "probe" or "temporary" */
    char device[128], platform[128], driver[128];
    char options[512];       /* a program's build options; "" otherwise */
    size_t payload_bytes;
    const char *stale_reason; /* static text when stale ("another library", "another
                                 kernel source", "another driver", "no such device
                                 here", ...), else "" */
} clnorm_cache_file;

/* Reads and checks one file of the cache folder (name relative to it, as readdir
   gives it): OK, DAMAGED, STALE (with the reason) or ABSENT; a name that is not one
   of clnorm's files is ABSENT. check_devices: 1 also compares the file's device and
   driver with the devices present (slower: it lists them once per process). */
CLNORM_API clnorm_cache_file_status clnorm_cache_inspect(const char *name, int check_devices,
                                                         clnorm_cache_file *out);

/* ---- Layers built on clnorm ------------------------------------------------------
   For libraries that call clnorm on behalf of their own callers (clnorm_mpi): check
   a request before committing to it, and report their own refusals through
   clnorm_last_error(). */

/* Checks the arguments of a clnorm_softmax call (queue, dtype, cols, the x and y
   views against their buffers, their overlap, and the CLNORM_* environment) exactly
   as clnorm_softmax does,
   without enqueuing or writing anything. The algorithm and wait list are not
   arguments here. rows == 0 passes where the rest does. Returns the status
   clnorm_softmax would refuse with, and sets clnorm_last_error() as it would. */
CLNORM_API clnorm_status clnorm_softmax_check(cl_command_queue queue, clnorm_dtype dtype,
                                              size_t rows, size_t cols, clnorm_matrix x,
                                              clnorm_matrix y);

/* Checks a request for the write of sharded softmax: the arguments as
   clnorm_softmax_check checks them, then the plan of clnorm_softmax_apply on rows x
   cols of dtype, made under the queue's and the thread's hints, and its kernel's build
   (a first call on a device builds it here). Nothing is enqueued or written; the
   statistics buffers are not arguments. Returns the status clnorm_softmax_apply would
   refuse with, and sets clnorm_last_error() as it would: a layer that writes shards on
   several queues or ranks learns of a refused write before any shard is written. */
CLNORM_API clnorm_status clnorm_softmax_apply_check(cl_command_queue queue, clnorm_dtype dtype,
                                                    size_t rows, size_t cols, clnorm_matrix x,
                                                    clnorm_matrix y);

/* Records message (NULL: "") as this thread's clnorm_last_error() and returns status
   unchanged; a message longer than the library keeps is truncated. */
CLNORM_API clnorm_status clnorm_set_last_error(clnorm_status status, const char *message);

#ifdef __cplusplus
}
#endif

#endif
