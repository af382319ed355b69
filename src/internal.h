/* The one internal header of clnorm: shared types and helpers of src/. */
#ifndef CLNORM_INTERNAL_H
#define CLNORM_INTERNAL_H

#include "clnorm.h"
#include <stdarg.h>
#include <stdint.h>

#define CLN_HIDDEN __attribute__((visibility("hidden")))

/* ---- status.c: errors -------------------------------------------------------- */
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

/* ---- device.c: device profiles -------------------------------------------------- */
typedef enum cln_path {
    CLN_PATH_LOCAL = 0,    /* local-memory trees: every device */
    CLN_PATH_SUBGROUP = 1, /* cl_khr_subgroups collectives */
    CLN_PATH_NV = 2        /* NVIDIA warp shuffles through inline PTX */
} cln_path;
#define CLN_PATH_COUNT 3
CLN_HIDDEN const char *cln_path_name(cln_path p);

/* What clnorm knows about one device; probed once, never trusted from names alone. */
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
    int pocl_major;         /* PoCL's major version, 0 for other platforms */
    cl_uint vec;            /* float32 CLN_VEC of the streaming loops: 4 on GPUs, the
                               preferred float vector width (up to 16) on CPUs */
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

/* Returns the cached profile of dev (probing it on first use). Thread-safe. */
CLN_HIDDEN clnorm_status cln_profile_get(cl_device_id dev, const cln_profile **out);
/* Fills p from device queries only (no probes); used by tools and profile_get. */
CLN_HIDDEN clnorm_status cln_profile_query(cl_device_id dev, cln_profile *p);


/* serial.c: whether operations on p must run one at a time (PoCL, or
   CLNORM_SERIAL=1); begin locks and gives the event to wait for (NULL or retained),
   end records done (the operation's final event), flushes q and unlocks; forget drops
   the record of ctx's operations (NULL: any). */
CLN_HIDDEN int cln_serial_wanted(const cln_profile *p);
CLN_HIDDEN void cln_serial_begin(cl_context ctx, cl_event *dep);
CLN_HIDDEN void cln_serial_end(cl_command_queue q, cl_event done);
CLN_HIDDEN void cln_serial_forget(cl_context ctx);

/* Enumeration in `clnorm devices` order: platforms, then their devices. */
typedef struct cln_device_ref { cl_platform_id platform; cl_device_id device;
                                unsigned pi, di; } cln_device_ref;
/* Resolves a spec as API.md says; NULL spec means $CLNORM_DEVICE or first GPU/first. */
CLN_HIDDEN clnorm_status cln_device_find(const char *spec, cln_device_ref *out);
/* Lists up to cap devices; *n receives the total. */
CLN_HIDDEN clnorm_status cln_device_list(cln_device_ref *out, size_t cap, size_t *n);

/* ---- plan.c: pure plan function ------------------------------------------------- */
typedef enum cln_op {
    CLN_OP_RMSNORM = 0, CLN_OP_SOFTMAX_THREE_PASS = 1, CLN_OP_SOFTMAX_ONLINE = 2,
    CLN_OP_STATS = 3, CLN_OP_ADD_RMSNORM = 4,
    CLN_OP_SOFTMAX_AUTO = 5 /* resolved by the plan into THREE_PASS or ONLINE */
} cln_op;
#define CLN_OP_COUNT 6
CLN_HIDDEN const char *cln_op_name(cln_op op);

/* How a row is processed. */
typedef enum cln_variant {
    CLN_VAR_STREAM = 0,    /* a team per row, each pass reads the row from memory */
    CLN_VAR_REGISTERS = 1, /* a team per row, the row held in registers: read once */
    CLN_VAR_SPLIT = 2,     /* several work-groups per row, partials merged in stage two */
    CLN_VAR_WORDS = 3      /* the register form on words of CLN_WORD neighbouring
                              elements: wider loads, and 16-bit rows kept packed
                              (cl/dtype.cl) */
} cln_variant;
#define CLN_VAR_COUNT 4
CLN_HIDDEN const char *cln_variant_name(cln_variant v);

/* Every kernel of the program, described in the table of src/kernels.c; the cache
   keeps a pool per kernel. */
typedef enum cln_kernel_id {
    CLN_K_RMSNORM, CLN_K_RMSNORM_REG, CLN_K_ADD_RMSNORM, CLN_K_ADD_RMSNORM_REG,
    CLN_K_SPLIT_SUM_SQUARES, CLN_K_SPLIT_RMSNORM, CLN_K_SOFTMAX_THREE_PASS,
    CLN_K_SOFTMAX_ONLINE, CLN_K_SOFTMAX_REG, CLN_K_SOFTMAX_STATS, CLN_K_SPLIT_STATS,
    CLN_K_SPLIT_SOFTMAX, CLN_K_SPLIT_STATS_FINAL, CLN_K_SPLIT_MAX, CLN_K_SPLIT_SUM_EXP,
    CLN_K_SOFTMAX_WORDS, CLN_K_RMSNORM_WORDS, CLN_K_ADD_RMSNORM_WORDS,
    CLN_K_RMSNORM_WORDS_HALF, CLN_K_ADD_RMSNORM_WORDS_HALF, CLN_K_SOFTMAX_WORDS_HALF,
    CLN_K_COUNT
} cln_kernel_id;
/* The kernel's OpenCL name (kernels.c). */
CLN_HIDDEN const char *cln_kernel_name(cln_kernel_id k);

/* Elements per work-item the register variants hold (CLN_REG_K in reduce.cl). */
#define CLN_REG_K 32
#define CLN_RMS_REG_K 16

/* Limits and overrides that lower or force what the plan may use; 0 / -1 = none. */
typedef struct cln_limits {
    size_t max_wg;        /* CLNORM_MAX_WORK_GROUP, or the kernel's own limit */
    cl_ulong max_local;   /* CLNORM_MAX_LOCAL_MEM */
    size_t force_wg;      /* CLNORM_WORK_GROUP */
    size_t force_team;    /* CLNORM_ROW_THREADS: work-items per row */
    int force_path;       /* CLNORM_REDUCTION: -1 auto, else a cln_path (LOCAL or
                             SUBGROUP; SUBGROUP means the device's fast path) */
    int force_variant;    /* CLNORM_VARIANT: -1 auto, else a cln_variant */
    size_t force_slices;  /* CLNORM_SPLIT: work-groups per row for the split variant */
    int no_words;         /* set by the caller when some view's rows do not all start
                             at a multiple of the word: the words variant is
                             then off */
    size_t word;          /* CLNORM_PAIR_WORD: elements per word of the words variant
                             (2 or 4), 0 for the device's choice (cln_word_size) */
} cln_limits;

typedef struct cln_plan {
    cln_op op;            /* resolved: never CLN_OP_SOFTMAX_AUTO */
    cln_variant variant;
    cln_path path;        /* program compiled for; the kernel falls back to local
                             trees at run time where (wg, team) do not suit it */
    cln_kernel_id k1, k2, k3; /* stage kernels; CLN_K_COUNT where a stage is absent */
    int online;           /* register variant of softmax: online (1) or three-pass (0) */
    int words_half;       /* words variant: the kernels with half the slots */
    size_t wg;            /* work-group size */
    size_t team;          /* work-items per row; divides wg (== wg for split) */
    size_t rows_per_wg;   /* wg / team */
    size_t groups;        /* number of work-groups (stage one) */
    size_t slices;        /* split: work-groups per row */
    size_t slice_len;     /* split: columns per work-group, a multiple of wg */
    size_t local_bytes;   /* __local scratch per work-group */
} cln_plan;

/* A pure function: no device, no globals. Returns CLNORM_UNSUPPORTED when a forced
   path is missing, CLNORM_INVALID_ARGUMENT for an impossible forced size, with the
   reason written to why. */
CLN_HIDDEN clnorm_status cln_plan_make(const cln_profile *p, const cln_limits *lim,
                                       cln_op op, clnorm_dtype dtype, size_t rows,
                                       size_t cols, cln_plan *out, char *why,
                                       size_t why_len);
/* Elements per work-item the plan's register kernel holds (the kernels' CLN_REG_K,
   CLN_RMS_REG_K and the words slots); 0 for the streaming and split variants. */
CLN_HIDDEN size_t cln_plan_reg_elems(const cln_plan *pl, clnorm_dtype dtype);
/* One line describing a plan, for tools and messages. */
CLN_HIDDEN void cln_plan_describe(const cln_plan *pl, char *buf, size_t len);

/* ---- source.c: kernel sources ---------------------------------------------------- */
/* The whole program source (embedded, or from $CLNORM_KERNEL_DIR); malloc'd. */
CLN_HIDDEN clnorm_status cln_source_get(char **src, size_t *len);
/* The source a program is built from, and its hash: the embedded source (assembled
   once; *owned 0) or the kernel folder's, read again at every build (*owned 1: the
   caller frees it). */
CLN_HIDDEN clnorm_status cln_source_for_build(char **src, size_t *len, uint64_t *hash,
                                              int *owned);
/* Frees the embedded source's copy (clnorm_release_cache(NULL)). */
CLN_HIDDEN void cln_source_forget(void);
CLN_HIDDEN uint64_t cln_hash64(const void *data, size_t len, uint64_t seed);

/* ---- cache.c: programs and kernels ----------------------------------------------- */
/* A kernel object lent to one caller at a time (clSetKernelArg is not thread-safe). */
typedef struct cln_kernel_lease {
    cl_kernel kernel;
    size_t max_wg; /* the kernel's own work-group limit, read once at creation; 0: none */
    int wants_event; /* 1: pass this run's event to cln_kernel_ran (disk capture) */
    void *slot;
} cln_kernel_lease;
/* one_kernel: cln_programs_one(p), asked once per operation. */
CLN_HIDDEN clnorm_status cln_kernel_acquire(cl_context ctx, cl_device_id dev,
                                            const cln_profile *p, clnorm_dtype dtype,
                                            cln_path path, cln_kernel_id kid, int one_kernel,
                                            cln_kernel_lease *out);
/* Whether kernels are built in programs of their own on p (the programs hint of the
   thread's current settings, config.h; by default where the disk cache is on and
   keeps binaries). */
CLN_HIDDEN int cln_programs_one(const cln_profile *p);
/* The build options of the program that holds kernel kid (one kernel alone where
   cln_programs_one), as the disk cache keys it. */
CLN_HIDDEN void cln_program_options(const cln_profile *p, clnorm_dtype dtype, cln_path path,
                                    cln_kernel_id kid, char *buf, size_t len);
/* Whether p's programs reach the disk cache: at their build (NVIDIA), or once their
   first run has completed (PoCL, programs of one kernel; the store happens at the
   next call that uses the program or at clnorm_release_cache). */
CLN_HIDDEN int cln_stores_programs(const cln_profile *p);
/* Hands the program the event of a run that wants_event asked for. */
CLN_HIDDEN void cln_kernel_ran(cln_kernel_lease *lease, cl_event ev);
/* Programs built from source so far, process-wide (program_build.c). */
CLN_HIDDEN unsigned long cln_program_builds(void);
/* Builds the program of source src with options: from the disk cache's binary where
   the driver takes it, else from source, storing the binary for the next process.
   one_kernel: the options compile one kernel alone. *store_after_run: the binary is
   to be stored once the program's first run has completed (cln_program_store). */
CLN_HIDDEN clnorm_status cln_program_build(cl_context ctx, cl_device_id dev,
                                           const cln_profile *p, const char *options,
                                           int one_kernel, const char *src, size_t len,
                                           uint64_t src_hash, cl_program *out,
                                           int *store_after_run);
/* Stores the binary of prog in the disk cache. */
CLN_HIDDEN void cln_program_store(const cln_profile *p, const char *options,
                                  uint64_t src_hash, size_t src_len, cl_program prog);
/* Drops the programs of ctx (NULL: all) no call is building, first storing those
   whose first run has completed (clnorm_release_cache). */
CLN_HIDDEN void cln_program_cache_drop(cl_context ctx);
/* Appends the options that compile kernel kid alone (CLN_ONLY in cl/dtype.cl). */
CLN_HIDDEN void cln_only_option(cln_kernel_id kid, char *options, size_t len);
CLN_HIDDEN void cln_kernel_return(cln_kernel_lease *lease);
/* Pooled device scratch of at least `bytes` for split plans; release it with the
   call's last event, after which it returns to the pool. */
typedef struct cln_scratch cln_scratch;
/* scratch.c: the partials buffer of a split call. in_order: q executes in order, so
   the buffer may be q's own, reused by the next call without waiting. */
CLN_HIDDEN clnorm_status cln_scratch_acquire(cl_context ctx, cl_command_queue q, int in_order,
                                             size_t bytes, cln_scratch **out);
/* Hands s back once the call's kernels are enqueued; after: the call's last event, on
   which a pooled buffer returns (needed where cln_scratch_needs_event says so). */
CLN_HIDDEN void cln_scratch_release(cln_scratch *s, cl_event after);
CLN_HIDDEN int cln_scratch_needs_event(const cln_scratch *s);
CLN_HIDDEN cl_mem cln_scratch_mem(const cln_scratch *s);
/* Frees the buffers of ctx (NULL: all) that no call holds. */
CLN_HIDDEN void cln_scratch_drop(cl_context ctx);
/* Builds (or finds) the program of (ctx, dev, dtype, path). */
CLN_HIDDEN clnorm_status cln_program_get(cl_context ctx, cl_device_id dev,
                                         const cln_profile *p, clnorm_dtype dtype,
                                         cln_path path, cl_program *out);
/* Elements per word of the words kernels (CLN_WORD in cl/dtype.cl) on p:
   forced (2 or 4) if not 0, else the device's choice. The programs are built with it
   and the plan and the views' alignment check follow it. */
CLN_HIDDEN size_t cln_word_size(const cln_profile *p, size_t forced);
/* The options of p's programs in dtype on path, with the word and the extra
   options of the thread's current settings (config.h). */
CLN_HIDDEN void cln_build_options(const cln_profile *p, clnorm_dtype dtype,
                                  cln_path path, char *buf, size_t len);

/* ---- validate.c ------------------------------------------------------------------ */
CLN_HIDDEN size_t cln_dtype_size(clnorm_dtype d);
CLN_HIDDEN const char *cln_dtype_name(clnorm_dtype d);
/* INVALID_ARGUMENT, naming the value, unless dtype is a clnorm_dtype. */
CLN_HIDDEN clnorm_status cln_check_dtype(clnorm_dtype dtype);
/* INVALID_ARGUMENT, naming eps, unless eps is finite and not negative. */
CLN_HIDDEN clnorm_status cln_check_eps(float eps);
/* Checks the common arguments and returns the queue's context and device. */
CLN_HIDDEN clnorm_status cln_check_queue(cl_command_queue q, cl_context *ctx,
                                         cl_device_id *dev);
CLN_HIDDEN clnorm_status cln_check_waits(cl_uint n, const cl_event *list);
/* Checks view `name` of rows x cols elements of esize bytes against its buffer;
   resolves ld == 0. */
CLN_HIDDEN clnorm_status cln_check_view(const char *name, cl_context ctx,
                                        clnorm_matrix *v, size_t rows, size_t cols,
                                        size_t esize);
/* Checks a plain array of n elements at offset 0 of mem. */
CLN_HIDDEN clnorm_status cln_check_array(const char *name, cl_context ctx, cl_mem mem,
                                         size_t n, size_t esize);
/* Refuses partial overlap of two views (both already checked); 1 in *same when they
   are exactly the same view. */
CLN_HIDDEN clnorm_status cln_check_overlap(const char *a_name, const clnorm_matrix *a,
                                           const char *b_name, const clnorm_matrix *b,
                                           size_t rows, size_t cols, size_t esize,
                                           int *same);

/* Refuses two byte ranges [off, off+len) that share memory. */
CLN_HIDDEN clnorm_status cln_check_disjoint(const char *a_name, cl_mem a, size_t a_off,
                                            size_t a_len, const char *b_name, cl_mem b,
                                            size_t b_off, size_t b_len);
/* Bytes from a checked view's first element to its last. */
CLN_HIDDEN size_t cln_view_bytes(const clnorm_matrix *v, size_t rows, size_t cols,
                                 size_t esize);

/* ---- disk_cache.c: the on-disk cache (program binaries, tuning tables) ------------
   Folder: the process configuration's cache_dir (CLNORM_CACHE_DIR; "off" disables
   it), else $XDG_CACHE_HOME/clnorm, else ~/.cache/clnorm, worked out when the
   configuration is set (config.c). Nothing here fails a call or records an error: a
   missing, damaged, foreign or stale file is "not cached", an unusable folder means
   memory only. */
#define CLN_DISK_FORMAT 1
enum { CLN_DISK_OK = 0, CLN_DISK_ABSENT = 1, CLN_DISK_BAD = 2, CLN_DISK_OFF = 3 };
/* The folder into buf; with create, makes it (0700) and checks it is writable.
   CLN_DISK_OFF when disabled or no home, CLN_DISK_BAD when unusable. */
CLN_HIDDEN int cln_disk_dir(char *buf, size_t len, int create);
/* Full key text of a file: kind ("program", "tuning"), format, library version,
   platform name and version, device name and vendor, driver version, options and
   the source's hash and length. */
CLN_HIDDEN void cln_disk_key(const cln_profile *p, const char *kind, const char *options,
                             uint64_t src_hash, size_t src_len, char *buf, size_t len);
/* File name of a slot: "prog-<hash>.bin" / "tune-<hash>.bin", hashed from kind,
   library version, platform name, device name and options. */
CLN_HIDDEN void cln_disk_name(const cln_profile *p, const char *kind, const char *options,
                              char *buf, size_t len);
/* Reads path and returns its payload (malloc'd) if the file is whole and holds
   exactly key. CLN_DISK_ABSENT when there is no file, CLN_DISK_BAD otherwise. */
CLN_HIDDEN int cln_disk_read(const char *path, const char *key, unsigned char **data,
                             size_t *len);
/* Checks a file's header and checksum whatever its key; returns the key (malloc'd,
   NUL-terminated, may be NULL to skip) and payload length. For tools. */
CLN_HIDDEN int cln_disk_inspect(const char *path, char **key, size_t *data_len);
/* Writes dir/name atomically (temporary file, then rename). */
CLN_HIDDEN int cln_disk_write(const char *dir, const char *name, const char *key,
                              const void *data, size_t len);
/* The program binary of (device, options, source), and its store. */
CLN_HIDDEN int cln_disk_load(const cln_profile *p, const char *options, uint64_t src_hash,
                             size_t src_len, unsigned char **bin, size_t *len);
CLN_HIDDEN int cln_disk_store(const cln_profile *p, const char *options, uint64_t src_hash,
                              size_t src_len, const unsigned char *bin, size_t len);
/* 0 where reading a program's binary right after its build costs more than the
   build it saves: PoCL compiles every kernel for dynamic work-group sizes when asked
   for binaries (docs/DESIGN.md, 'Program grouping'). There clnorm builds programs of
   one kernel and stores each after its first run instead (cache.c,
   cln_stores_programs). */
CLN_HIDDEN int cln_disk_wants_binaries(const cln_profile *p);
/* Whether program files are read at all for p's device (not on Rusticl). */
CLN_HIDDEN int cln_disk_reads_binaries(const cln_profile *p);
/* Process-wide counters, for tests and tools. */
typedef struct cln_disk_stats {
    unsigned long hits, misses, rejected; /* loads: valid, no file, damaged/stale file */
    unsigned long refused;                /* valid files the driver would not build */
    unsigned long stores, store_failures;
} cln_disk_stats;
CLN_HIDDEN void cln_disk_stats_get(cln_disk_stats *s);
CLN_HIDDEN void cln_disk_count_refused(void);

/* ---- tuning.c: measured plans per device ------------------------------------------
   `clnorm tune` stores the fastest plan per (op, dtype, column bucket) in the cache
   folder; a call applies it unless its tuning hint is 0 (CLNORM_TUNING=off) or its
   work-group, items per row, variant or split hint forces a shape. */
typedef struct cln_tune_entry {
    cln_op op;            /* as asked; CLN_OP_SOFTMAX_AUTO picks the algorithm */
    clnorm_dtype dtype;
    size_t cols, rows;    /* the shape measured */
    cln_op algo;          /* resolved operation (== op except for AUTO) */
    cln_variant variant;
    cln_path path;
    size_t wg, team, slices; /* slices: split only, else 0 */
    double best_us, builtin_us;
} cln_tune_entry;
/* The device's tuning file: path and key text. */
CLN_HIDDEN int cln_tuning_file(const cln_profile *p, char *path, size_t len, char *key,
                               size_t klen);
/* Reads and checks the device's table (entries malloc'd). CLN_DISK_* status. */
CLN_HIDDEN int cln_tuning_read(const cln_profile *p, cln_tune_entry **e, size_t *n);
/* Writes the table (creating the folder); CLN_DISK_* status. */
CLN_HIDDEN int cln_tuning_write(const cln_profile *p, const cln_tune_entry *e, size_t n);
/* Text of one entry, as the file and `clnorm tune --show` hold it. */
CLN_HIDDEN void cln_tuning_line(const cln_tune_entry *e, char *buf, size_t len);
/* Forces the table's plan for (op, dtype, cols) into lim (and resolves a softmax AUTO
   op) when an entry fits and the plan it gives is valid; returns 1 if applied. */
CLN_HIDDEN int cln_tuning_apply(const cln_profile *p, cln_op *op, clnorm_dtype dtype,
                                size_t rows, size_t cols, cln_limits *lim);
/* Forgets the tables read so far (tests, `clnorm tune`). */
CLN_HIDDEN void cln_tuning_reset(void);

#endif
