/* Shared helpers of the clnorm fuzz targets: a byte reader that never fails (missing
   bytes read as 0), the "interesting sizes" decoder, and the plan invariants. */
#ifndef CLNORM_FUZZ_COMMON_H
#define CLNORM_FUZZ_COMMON_H

#include "internal.h"
#include <stddef.h>
#include <stdint.h>

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

/* A made-up device profile from the input (names fixed, numbers fuzzed). */
void fz_profile(fz *f, cln_profile *p);

/* Aborts (a finding) when a plan cln_plan_make accepted breaks an invariant the
   kernels rely on to stay inside their views; label says which input. */
void fz_check_plan(const cln_profile *p, const cln_limits *lim, cln_op op, clnorm_dtype dt,
                   size_t rows, size_t cols, const cln_plan *pl);

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
