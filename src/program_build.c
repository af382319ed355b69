/* Building one program: from its binary in the disk cache where there is one and the
   driver takes it, else from source, whose binary then goes to the disk cache for
   the next process (at once, or after the first run: cln_program_build). */
#include "program_build.h"
#include "config.h"
#include "disk_cache.h"
#include "kernels.h"
#include "status.h"
#include "types.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_ulong cln_n_builds, cln_n_failures;

unsigned long cln_program_builds(void) { return atomic_load(&cln_n_builds); }
unsigned long cln_program_build_failures(void) { return atomic_load(&cln_n_failures); }

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
static int cln_build_from_disk(cl_context ctx, cl_device_id dev, const cln_profile *p,
                               const char *options, int one_kernel, uint64_t src_hash,
                               size_t src_len, cl_program *out)
{
    unsigned char *bin = NULL;
    size_t n = 0, nk = 0;
    if (!cln_disk_reads_binaries(p)) return 0;
    if (cln_disk_load(p, options, src_hash, src_len, &bin, &n) != CLN_DISK_OK) return 0;
    const unsigned char *b = bin;
    cl_int err, bst = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(ctx, 1, &dev, &n, &b, &bst, &err);
    if (err == CL_SUCCESS && bst == CL_SUCCESS)
        err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    if (err == CL_SUCCESS && bst == CL_SUCCESS)
        err = clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
    /* Not our program: every kernel, or (CLN_ONLY) at least the one asked for. */
    if (err == CL_SUCCESS && nk < (one_kernel ? 1u : (size_t)CLN_K_COUNT))
        err = CL_INVALID_BINARY;
    free(bin);
    if (err != CL_SUCCESS || bst != CL_SUCCESS) {
        /* The driver refused it (another driver build, a damaged binary that passed
           the checksum): compile from source, which replaces the file. */
        if (prog) clReleaseProgram(prog);
        cln_disk_count_refused();
        return 0;
    }
    *out = prog;
    return 1;
}

/* The driver's build log of prog, malloc'd; NULL when there is none. */
static char *cln_build_log(cl_program prog, cl_device_id dev)
{
    size_t log_len = 0;
    char *log = NULL;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
    if (log_len && (log = calloc(1, log_len + 1)) != NULL)
        clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, log_len, log, NULL);
    return log;
}

clnorm_status cln_program_build(cl_context ctx, cl_device_id dev, const cln_profile *p,
                                const char *options, int one_kernel, const char *src,
                                size_t len, uint64_t src_hash, cl_program *out,
                                int *store_after_run)
{
    *store_after_run = 0;
    if (cln_build_from_disk(ctx, dev, p, options, one_kernel, src_hash, len, out))
        return CLNORM_SUCCESS;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clCreateProgramWithSource");
    err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        atomic_fetch_add(&cln_n_failures, 1);
        char *log = cln_build_log(prog, dev);
        const int refused = err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS;
        clnorm_status st = cln_fail(refused ? CLNORM_BUILD_FAILED : cln_cl_status(err),
                                    "clBuildProgram with \"%s\" failed: %s (%d); build log:\n%s",
                                    options, cln_cl_error_name(err), (int)err,
                                    log ? log : "(none)");
        free(log);
        clReleaseProgram(prog);
        return st;
    }
    *out = prog;
    atomic_fetch_add(&cln_n_builds, 1);
    /* CLNORM_BUILD_LOG=1 shows what the compiler said (with CLNORM_BUILD_OPTIONS such
       as -cl-nv-verbose: registers and spills per kernel). */
    if (cln_config_now()->pub.build_log) {
        char *log = cln_build_log(prog, dev);
        fprintf(stderr, "clnorm: built with \"%s\":\n%s\n", options, log ? log : "");
        free(log);
    }
    /* Read right after the build: NVIDIA gives PTX, Rusticl its IR. See
       cln_disk_wants_binaries for the devices where reading costs more than it saves. */
    size_t n = 0;
    unsigned char *bin = cln_disk_wants_binaries(p) ? cln_binary_of(prog, &n) : NULL;
    if (bin) cln_disk_store(p, options, src_hash, len, bin, n);
    free(bin);
    /* A program of one kernel on PoCL is stored after its first run
       (cln_program_store, from the program cache). */
    *store_after_run = !cln_disk_wants_binaries(p) && one_kernel;
    return CLNORM_SUCCESS;
}

void cln_program_store(const cln_profile *p, const char *options, uint64_t src_hash,
                       size_t src_len, cl_program prog)
{
    size_t n = 0;
    unsigned char *bin = cln_binary_of(prog, &n);
    if (bin) cln_disk_store(p, options, src_hash, src_len, bin, n);
    free(bin);
}
