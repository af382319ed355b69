/* The in-memory program cache. A program is built once per (context, device, dtype,
   reduction path, source, options) and shared by all threads. Kernel objects are
   lent to one caller at a time from a per-program pool, because clSetKernelArg on a
   shared cl_kernel is not thread-safe; arguments are captured at enqueue, so a
   kernel goes back to the pool right after its enqueue. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cln_kslot {
    cl_kernel kernel;
    size_t max_wg; /* CL_KERNEL_WORK_GROUP_SIZE, queried once; 0 where not trusted */
    struct cln_kslot *next;
} cln_kslot;

typedef struct cln_prog {
    cl_context ctx;
    cl_device_id dev;
    uint64_t key;      /* hash of source and options */
    uint64_t src_hash; /* hash of the source alone */
    char options[512];
    cl_program program;
    int state; /* 0 building, 1 ready, -1 failed */
    /* Programs of one kernel (cln_programs_one) built from source keep the event of
       their first run; once it has completed, the binary, which then carries the
       compiled work-group function, goes to the disk cache (cln_capture). */
    const cln_profile *prof;
    cln_kernel_id only; /* the one kernel it holds, or CLN_K_COUNT for all */
    size_t src_len;
    int capture;        /* 1: the binary is still to be stored */
    cl_event first_run; /* retained; NULL until the first run is enqueued */
    cln_kslot *free_kernels[CLN_K_COUNT];
    struct cln_prog *next;
} cln_prog;

typedef struct cln_lease_slot {
    cln_prog *prog;
    cln_kernel_id kid;
    cln_kslot *slot;
} cln_lease_slot;

static pthread_mutex_t cln_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cln_cache_built = PTHREAD_COND_INITIALIZER;
static cln_prog *cln_progs;
static char *cln_embedded_src;
static size_t cln_embedded_len;
/* Hashed once, not per call (docs/DESIGN.md, 'Host cost per call'). */
static uint64_t cln_embedded_hash;
static atomic_ulong cln_n_builds;

unsigned long cln_cache_builds(void) { return atomic_load(&cln_n_builds); }

unsigned cln_build_vec(const cln_profile *p, clnorm_dtype dtype)
{
    unsigned v = p->vec ? p->vec : 1;
    /* GPU loads are sized in bytes (16): twice the elements in 16-bit storage. */
    if (!(p->type & CL_DEVICE_TYPE_CPU) && dtype != CLNORM_F32 && v > 1 && v < 16) v *= 2;
    return v;
}

void cln_build_options(const cln_profile *p, clnorm_dtype dtype, cln_path path, char *buf,
                       size_t len)
{
    /* Never -cl-fast-relaxed-math or -cl-finite-math-only: they void the special-value
       contract. */
    /* Every call asks (once per kernel): the last answer is kept per thread. Profiles
       are never freed, so their address identifies them. */
    static _Thread_local struct {
        const cln_profile *p;
        int dtype, path, ok;
        size_t word;
        char extra[256], out[512];
    } memo;
    const cln_settings *set = cln_settings_now();
    const char *extra = set->cfg->pub.build_options;
    const size_t word = cln_word_size(p, set->lim.word);
    if (memo.ok && memo.p == p && memo.dtype == (int)dtype && memo.path == (int)path &&
        memo.word == word &&
        !strcmp(memo.extra, extra) && strlen(memo.out) < len) {
        memcpy(buf, memo.out, strlen(memo.out) + 1);
        return;
    }
    /* NVIDIA sizes registers for 256 work-items unless told; with 64 every kernel has
       its registers in a group of 1024, which long rows want (device.c; see
       docs/DESIGN.md, 'Register slots per work-item'). */
    /* NVIDIA from compute capability 8 converts to bfloat16 in one instruction
       (cl/dtype.cl); only bf16 programs use it. */
    snprintf(buf, len,
             "-DCLN_DTYPE=%d -DCLN_PATH=%d -DCLN_VEC=%u -DCLN_BLOCKED=%d -DCLN_WORD=%zu%s%s%s%s%s%s",
             (int)dtype, (int)path, cln_build_vec(p, dtype), (p->type & CL_DEVICE_TYPE_CPU) != 0, word,
             p->flat_barriers ? " -DCLN_FLAT_BARRIERS" : "",
             path == CLN_PATH_NV && p->nv_cc_major >= 7 ? " -DCLN_NV_SYNC" : "",
             p->nv && p->nv_cc_major >= 8 && dtype == CLNORM_BF16 ? " -DCLN_NV_CVT" : "",
             p->nv_compiler_options ? " -cl-nv-maxrregcount=64" : "",
             path == CLN_PATH_SUBGROUP && *p->subgroup_std ? " " : "",
             path == CLN_PATH_SUBGROUP ? p->subgroup_std : "");
    /* Extra options for experiments; they are part of the key like the rest. */
    size_t used = strlen(buf);
    if (*extra && used + 1 < len) snprintf(buf + used, len - used, " %s", extra);
    memo.ok = strlen(extra) < sizeof memo.extra && strlen(buf) < sizeof memo.out;
    if (memo.ok) {
        memo.p = p;
        memo.dtype = (int)dtype;
        memo.path = (int)path;
        memo.word = word;
        strcpy(memo.extra, extra);
        strcpy(memo.out, buf);
    }
}

/* The embedded source is assembled once; a kernel folder is re-read at every build so
   edits show up without restarting. Caller holds the lock for the embedded copy. */
static clnorm_status cln_source_locked(char **src, size_t *len, uint64_t *hash, int *owned)
{
    if (*cln_config_now()->pub.kernel_dir) {
        *owned = 1;
        clnorm_status st = cln_source_get(src, len);
        if (!st) *hash = cln_hash64(*src, *len, 0);
        return st;
    }
    if (!cln_embedded_src) {
        clnorm_status st = cln_source_get(&cln_embedded_src, &cln_embedded_len);
        if (st) return st;
        cln_embedded_hash = cln_hash64(cln_embedded_src, cln_embedded_len, 0);
    }
    *owned = 0;
    *src = cln_embedded_src;
    *len = cln_embedded_len;
    *hash = cln_embedded_hash;
    return CLNORM_SUCCESS;
}

/* Reads the (single-device) binary of prog; NULL when the driver has none. */
static unsigned char *cln_binary_of(cl_program prog, size_t *len)
{
    size_t n = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS ||
        n == 0)
        return NULL;
    unsigned char *bin = malloc(n);
    if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(bin);
        bin = NULL;
    }
    *len = n;
    return bin;
}

/* The program from a disk binary, built with the same options; 0 on any problem. */
static int cln_build_from_disk(cln_prog *e, const cln_profile *p, uint64_t src_hash,
                               size_t src_len)
{
    unsigned char *bin = NULL;
    size_t n = 0, nk = 0;
    if (!cln_disk_reads_binaries(p)) return 0;
    if (cln_disk_load(p, e->options, src_hash, src_len, &bin, &n) != CLN_DISK_OK) return 0;
    const unsigned char *b = bin;
    cl_int err, bst = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(e->ctx, 1, &e->dev, &n, &b, &bst, &err);
    if (err == CL_SUCCESS && bst == CL_SUCCESS)
        err = clBuildProgram(prog, 1, &e->dev, e->options, NULL, NULL);
    if (err == CL_SUCCESS && bst == CL_SUCCESS)
        err = clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
    /* Not our program: every kernel, or (CLN_ONLY) at least the one asked for. */
    if (err == CL_SUCCESS && nk < (e->only != CLN_K_COUNT ? 1u : (size_t)CLN_K_COUNT))
        err = CL_INVALID_BINARY;
    free(bin);
    if (err != CL_SUCCESS || bst != CL_SUCCESS) {
        /* The driver refused it (another driver build, a damaged binary that passed
           the checksum): compile from source, which replaces the file. */
        if (prog) clReleaseProgram(prog);
        cln_disk_count_refused();
        return 0;
    }
    e->program = prog;
    return 1;
}

/* Memory cache miss: the disk cache, else the source (and then into the disk cache). */
static clnorm_status cln_build(cln_prog *e, const cln_profile *p, const char *src, size_t len,
                               uint64_t src_hash)
{
    if (cln_build_from_disk(e, p, src_hash, len)) return CLNORM_SUCCESS;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(e->ctx, 1, &src, &len, &err);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clCreateProgramWithSource");
    err = clBuildProgram(prog, 1, &e->dev, e->options, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t log_len = 0;
        char *log = NULL;
        clGetProgramBuildInfo(prog, e->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
        if (log_len && (log = calloc(1, log_len + 1)) != NULL)
            clGetProgramBuildInfo(prog, e->dev, CL_PROGRAM_BUILD_LOG, log_len, log, NULL);
        clnorm_status st = cln_fail(err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS
                                        ? CLNORM_BUILD_FAILED : cln_cl_status(err),
                                    "clBuildProgram with \"%s\" failed: %s (%d); build log:\n%s",
                                    e->options, cln_cl_error_name(err), (int)err,
                                    log ? log : "(none)");
        free(log);
        clReleaseProgram(prog);
        return st;
    }
    e->program = prog;
    atomic_fetch_add(&cln_n_builds, 1);
    /* CLNORM_BUILD_LOG=1 shows what the compiler said (with CLNORM_BUILD_OPTIONS such
       as -cl-nv-verbose: registers and spills per kernel). */
    if (cln_config_now()->pub.build_log) {
        size_t log_len = 0;
        char *log = NULL;
        clGetProgramBuildInfo(prog, e->dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
        if (log_len && (log = calloc(1, log_len + 1)) != NULL)
            clGetProgramBuildInfo(prog, e->dev, CL_PROGRAM_BUILD_LOG, log_len, log, NULL);
        fprintf(stderr, "clnorm: built with \"%s\":\n%s\n", e->options, log ? log : "");
        free(log);
    }
    /* Read right after the build: NVIDIA gives PTX, Rusticl its IR. See
       cln_disk_wants_binaries for the devices where reading costs more than it saves. */
    size_t n = 0;
    unsigned char *bin = cln_disk_wants_binaries(p) ? cln_binary_of(prog, &n) : NULL;
    if (bin) cln_disk_store(p, e->options, src_hash, len, bin, n);
    free(bin);
    /* A program of one kernel on PoCL is stored after its first run (cln_capture). */
    e->capture = !cln_disk_wants_binaries(p) && e->only != CLN_K_COUNT;
    return CLNORM_SUCCESS;
}

/* Appends the options that compile kernel kid alone (CLN_ONLY in cl/dtype.cl). */
static void cln_only_option(cln_kernel_id kid, char *options, size_t len)
{
    size_t used = strlen(options);
    if (used < len)
        snprintf(options + used, len - used, " -DCLN_ONLY=1 -DCLN_ONLY_%s=1", cln_kernel_name(kid));
}

/* One program per kernel where the disk cache is on and keeps binaries (every driver
   but Rusticl), so that a process compiles and loads only the kernels it runs.
   PoCL: asking for a binary compiles every kernel of the program for dynamic
   work-group sizes, and a binary taken after a kernel's first run carries its
   compiled work-group function, so that a later start that loads it never starts
   PoCL's compiler. NVIDIA: its binaries are PTX, compiled to machine code at every
   load, so fewer kernels load faster. See docs/DESIGN.md, 'Program grouping'. */
int cln_programs_one(const cln_profile *p)
{
    const int forced = cln_settings_now()->programs;
    if (forced > 0) return forced == 1;
    return cln_disk_reads_binaries(p) && cln_config_now()->disk == CLN_DISK_OK;
}

void cln_program_options(const cln_profile *p, clnorm_dtype dtype, cln_path path,
                         cln_kernel_id kid, char *buf, size_t len)
{
    cln_build_options(p, dtype, path, buf, len);
    if (cln_programs_one(p)) cln_only_option(kid, buf, len);
}

int cln_stores_programs(const cln_profile *p)
{
    return cln_disk_wants_binaries(p) || cln_programs_one(p);
}

/* Stores the binary of e once its first run has completed; called with the cache
   lock held, which it drops around the driver calls. Returns 1 if it stored. */
static int cln_capture(cln_prog *e)
{
    cl_int status = CL_QUEUED;
    if (!e->capture || !e->first_run ||
        clGetEventInfo(e->first_run, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                       NULL) != CL_SUCCESS || status != CL_COMPLETE)
        return 0;
    e->capture = 0; /* once, even if it fails */
    /* The event has served: let it go now, so that it holds its queue no longer. */
    cl_event ev = e->first_run;
    e->first_run = NULL;
    pthread_mutex_unlock(&cln_cache_lock);
    clReleaseEvent(ev);
    size_t n = 0;
    unsigned char *bin = cln_binary_of(e->program, &n);
    if (bin) cln_disk_store(e->prof, e->options, e->src_hash, e->src_len, bin, n);
    free(bin);
    pthread_mutex_lock(&cln_cache_lock);
    return 1;
}

static void cln_prog_free(cln_prog *e)
{
    for (int k = 0; k < CLN_K_COUNT; k++)
        while (e->free_kernels[k]) {
            cln_kslot *s = e->free_kernels[k];
            e->free_kernels[k] = s->next;
            clReleaseKernel(s->kernel);
            free(s);
        }
    if (e->first_run) clReleaseEvent(e->first_run);
    if (e->program) clReleaseProgram(e->program);
    clReleaseContext(e->ctx);
    free(e);
}

static clnorm_status cln_prog_get(cl_context ctx, cl_device_id dev, const cln_profile *p,
                                  clnorm_dtype dtype, cln_path path, cln_kernel_id only,
                                  cln_prog **out)
{
    char options[512];
    char *src = NULL;
    size_t len = 0;
    int owned = 0;
    clnorm_status st;
    cln_build_options(p, dtype, path, options, sizeof options);
    if (only != CLN_K_COUNT) cln_only_option(only, options, sizeof options);

    pthread_mutex_lock(&cln_cache_lock);
    uint64_t src_hash = 0;
    st = cln_source_locked(&src, &len, &src_hash, &owned);
    if (st) { pthread_mutex_unlock(&cln_cache_lock); return st; }
    for (;;) {
        cln_prog *e = cln_progs;
        for (; e; e = e->next)
            if (e->ctx == ctx && e->dev == dev && e->src_hash == src_hash &&
                !strcmp(e->options, options))
                break;
        if (!e) break;
        if (e->state == 1) {
            pthread_mutex_unlock(&cln_cache_lock);
            if (owned) free(src);
            *out = e;
            return CLNORM_SUCCESS;
        }
        /* Another thread is building it: wait, then look again (it may have failed
           and been removed, in which case this thread builds and reports). */
        pthread_cond_wait(&cln_cache_built, &cln_cache_lock);
    }
    cln_prog *e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&cln_cache_lock);
        if (owned) free(src);
        return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a program cache entry");
    }
    clRetainContext(ctx);
    e->ctx = ctx;
    e->dev = dev;
    e->key = cln_hash64(options, strlen(options), src_hash);
    e->src_hash = src_hash;
    e->src_len = len;
    e->prof = p;
    e->only = only;
    snprintf(e->options, sizeof e->options, "%s", options);
    e->next = cln_progs;
    cln_progs = e;
    pthread_mutex_unlock(&cln_cache_lock);

    st = cln_build(e, p, src, len, src_hash);
    if (owned) free(src);

    pthread_mutex_lock(&cln_cache_lock);
    if (st) {
        for (cln_prog **pp = &cln_progs; *pp; pp = &(*pp)->next)
            if (*pp == e) { *pp = e->next; break; }
        cln_prog_free(e);
    } else {
        e->state = 1;
        *out = e;
    }
    pthread_cond_broadcast(&cln_cache_built);
    pthread_mutex_unlock(&cln_cache_lock);
    return st;
}

clnorm_status cln_program_get(cl_context ctx, cl_device_id dev, const cln_profile *p,
                              clnorm_dtype dtype, cln_path path, cl_program *out)
{
    cln_prog *e = NULL;
    clnorm_status st = cln_prog_get(ctx, dev, p, dtype, path, CLN_K_COUNT, &e);
    if (!st) *out = e->program;
    return st;
}

clnorm_status cln_kernel_acquire(cl_context ctx, cl_device_id dev, const cln_profile *p,
                                 clnorm_dtype dtype, cln_path path, cln_kernel_id kid,
                                 int one_kernel, cln_kernel_lease *out)
{
    cln_prog *e = NULL;
    clnorm_status st =
        cln_prog_get(ctx, dev, p, dtype, path, one_kernel ? kid : CLN_K_COUNT, &e);
    if (st) return st;
    cln_lease_slot *ls = malloc(sizeof *ls);
    if (!ls) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a kernel lease");
    ls->prog = e;
    ls->kid = kid;
    pthread_mutex_lock(&cln_cache_lock);
    cln_capture(e);
    out->wants_event = e->capture && !e->first_run;
    ls->slot = e->free_kernels[kid];
    if (ls->slot) e->free_kernels[kid] = ls->slot->next;
    pthread_mutex_unlock(&cln_cache_lock);
    if (!ls->slot) {
        cl_int err;
        cl_kernel k = clCreateKernel(e->program, cln_kernel_name(kid), &err);
        if (err != CL_SUCCESS) {
            free(ls);
            return cln_cl_fail(err, "clCreateKernel(\"%s\")", cln_kernel_name(kid));
        }
        ls->slot = malloc(sizeof *ls->slot);
        if (!ls->slot) {
            clReleaseKernel(k);
            free(ls);
            return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a kernel");
        }
        ls->slot->kernel = k;
        /* A kernel's limit never changes: read it here, not at every call. Rusticl 22
           and NVIDIA understate it (device.c), so it is not trusted there. */
        size_t m = 0;
        if (!p->kernel_wg_understated &&
            (err = clGetKernelWorkGroupInfo(k, e->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof m, &m,
                                            NULL)) != CL_SUCCESS) {
            clReleaseKernel(k);
            free(ls->slot);
            free(ls);
            return cln_cl_fail(err, "clGetKernelWorkGroupInfo(%s)", cln_kernel_name(kid));
        }
        ls->slot->max_wg = m;
        ls->slot->next = NULL;
    }
    out->kernel = ls->slot->kernel;
    out->max_wg = ls->slot->max_wg;
    out->slot = ls;
    return CLNORM_SUCCESS;
}

void cln_kernel_ran(cln_kernel_lease *lease, cl_event ev)
{
    cln_lease_slot *ls = lease->slot;
    if (!ls || !ev) return;
    pthread_mutex_lock(&cln_cache_lock);
    if (ls->prog->capture && !ls->prog->first_run && clRetainEvent(ev) == CL_SUCCESS)
        ls->prog->first_run = ev;
    pthread_mutex_unlock(&cln_cache_lock);
}

void cln_kernel_return(cln_kernel_lease *lease)
{
    cln_lease_slot *ls = lease->slot;
    if (!ls) return;
    pthread_mutex_lock(&cln_cache_lock);
    ls->slot->next = ls->prog->free_kernels[ls->kid];
    ls->prog->free_kernels[ls->kid] = ls->slot;
    pthread_mutex_unlock(&cln_cache_lock);
    free(ls);
    lease->slot = NULL;
    lease->kernel = NULL;
}

void clnorm_release_cache(cl_context context)
{
    cln_config_take(); /* programs stored below go to the folder in force */
    cln_queue_hints_forget(context);
    cln_serial_forget(context);
    cln_scratch_drop(context);
    pthread_mutex_lock(&cln_cache_lock);
    /* Store what has run to completion; the lock drops during a store, so the scan
       starts again after each. */
    for (cln_prog *e = cln_progs; e;)
        e = (!context || e->ctx == context) && e->state == 1 && cln_capture(e) ? cln_progs
                                                                             : e->next;
    cln_prog **pp = &cln_progs;
    while (*pp) {
        cln_prog *e = *pp;
        /* Entries still being built belong to a running call; leave them. */
        if ((!context || e->ctx == context) && e->state == 1) {
            *pp = e->next;
            cln_prog_free(e);
        } else {
            pp = &e->next;
        }
    }
    if (!context) {
        free(cln_embedded_src);
        cln_embedded_src = NULL;
    }
    pthread_mutex_unlock(&cln_cache_lock);
}
