/* Helpers shared by the reliability programs (tests/reliability, fuzz/): storage
   types, float64 references, the contract's tolerances, and small process facts.
   Independent of the suite's runner so that each program is a plain executable. */
#ifndef CLNORM_REL_H
#define CLNORM_REL_H

#include "clnorm.h"
#include <stddef.h>
#include <stdint.h>

/* ---- storage types -------------------------------------------------------------- */
size_t rel_esize(clnorm_dtype dt);
const char *rel_dtype_name(clnorm_dtype dt);
uint16_t rel_f32_to_f16(float f);   /* round to nearest even, NaN stays NaN */
float rel_f16_to_f32(uint16_t h);
uint16_t rel_f32_to_bf16(float f);  /* round to nearest even, NaN stays NaN */
float rel_bf16_to_f32(uint16_t b);
/* n floats into storage of dt (dst: n * rel_esize(dt) bytes), and back. */
void rel_pack(clnorm_dtype dt, const float *src, void *dst, size_t n);
void rel_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n);
/* Element i of storage as float. */
float rel_get(clnorm_dtype dt, const void *base, size_t i);
/* Rounds v to dt and back. */
float rel_round(clnorm_dtype dt, float v);

/* ---- float64 references of API.md's definitions (rows packed, ld = cols) --------- */
void rel_ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                     double *y);
void rel_ref_softmax(const float *x, size_t rows, size_t cols, double *y);
void rel_ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l);

/* ---- the contract's accuracy: |got - want| <= rel |want| + abs; NaN must be NaN and
   an infinity the same infinity. */
void rel_tolerance(clnorm_dtype dt, double *rel, double *abs);
int rel_close(float got, double want, double rel, double abs);

/* ---- process facts --------------------------------------------------------------- */
double rel_now(void);              /* monotonic seconds */
long rel_rss_kib(void);            /* resident set, KiB (/proc/self/statm) */
int rel_open_fds(void);            /* entries of /proc/self/fd */
uint64_t rel_rand(uint64_t *s);    /* splitmix64 */
double rel_unit(uint64_t *s);      /* [0, 1) */

/* ---- the library's configuration ------------------------------------------------- */
/* Sets the process configuration (clnorm_advanced.h) before the run: the disk cache
   folder ("off": no disk cache) and, with builtin_plans, no tuning table. The rest
   stays as the CLNORM_* environment gave it. Exits with status 2 if refused. */
void rel_configure(const char *cache_dir, int builtin_plans);

#endif
