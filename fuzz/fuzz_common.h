/* Shared helpers of the clnorm fuzz targets: a byte reader that never fails (missing
   bytes read as 0), the "interesting sizes" decoder, the OpenCL devices the plan
   targets query, and the plan invariants. The targets use the public and advanced
   headers only. */
#ifndef CLNORM_FUZZ_COMMON_H
#define CLNORM_FUZZ_COMMON_H

#include "clnorm_advanced.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fz { const uint8_t *p; size_t n; } fz;

uint8_t fz_u8(fz *f);
uint16_t fz_u16(fz *f);
uint32_t fz_u32(fz *f);
uint64_t fz_u64(fz *f);
/* A size: small values most of the time, boundaries and raw 64-bit values too. */
size_t fz_size(fz *f);
/* Limits a decoded shape to what a buffer could hold once validated (rows x cols at
   most 2^56 elements): larger ones never reach the plan, validation refuses them. */
void fz_shape(size_t *rows, size_t *cols);
/* A string of up to max bytes (length-prefixed), NUL-terminated into buf (max + 1). */
void fz_str(fz *f, char *buf, size_t max);
/* setenv without glibc's per-call leak (value NULL: unset); values up to 300 bytes. */
void fz_setenv(const char *name, const char *value);
/* Sets (or, one time in four, unsets) environment variable name from the input. */
void fz_env(fz *f, const char *name, size_t max);

/* The checksum of the disk cache's files (docs/DESIGN.md, 'Files and keys'):
   FNV-1a 64 whose offset basis is xored with seed; a file's checksum chains it over
   bytes 0 to 23 (seed 0), then the key (seed: the header's hash), then the payload
   (seed: the key's). */
uint64_t fz_fnv1a(const void *data, size_t len, uint64_t seed);
uint64_t fz_file_sum(const uint8_t *img, size_t key_len, size_t payload_len);

/* A device the plan targets query, picked by the input, and limits that make it
   look like a smaller one: the first device byte picks one of the OpenCL devices
   present (probed once, at the first call), the next bytes give a work-group limit
   and a local-memory limit for hints (0 where the input leaves the device's own).
   The bytes read are those of a device description (type, compute units, work-group
   size, local memory, preferred multiple, vector width, path, loop limit, PoCL
   version), so that inputs of every layout version keep their meaning. Aborts when
   there is no device. */
const clnorm_device_info *fz_device(fz *f, size_t *max_wg, cl_ulong *max_local);

/* The hints of a call as the plan sees them: the work-group and local-memory limits
   (0: the device's), the path forced (a clnorm_reduction, AUTO if none). */
typedef struct fz_limits {
    size_t max_wg;
    cl_ulong max_local;
    int reduction;
} fz_limits;

/* Aborts (a finding) when a plan clnorm_plan_query gave breaks an invariant the
   kernels rely on to stay inside their views. */
void fz_check_plan(const clnorm_device_info *d, const fz_limits *lim, clnorm_op op,
                   size_t rows, size_t cols, const clnorm_plan_info *pl);

#define FZ_ASSERT(cond, ...)                                                           \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz finding: %s: ", #cond);                              \
            fprintf(stderr, __VA_ARGS__);                                              \
            fprintf(stderr, "\n");                                                     \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#endif
