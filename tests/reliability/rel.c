/* Helpers shared by the reliability programs; see rel.h. */
#define _POSIX_C_SOURCE 200809L
#include "rel.h"
#include "clnorm_advanced.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

size_t rel_esize(clnorm_dtype dt) { return dt == CLNORM_F32 ? 4 : 2; }

const char *rel_dtype_name(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? "f32" : dt == CLNORM_F16 ? "f16" : dt == CLNORM_BF16 ? "bf16" : "?";
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t rel_f32_to_f16(float f)
{
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u;
    uint32_t au = u & 0x7fffffffu;
    if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((au >> 13) & 0x3ffu)); /* NaN */
    if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf (>= 65520) */
    if (au < 0x38800000u) {
        /* subnormal half (or zero): value / 2^-24, rounded to nearest even */
        float a = u2f(au) * 16777216.0f; /* exact scaling by 2^24 */
        float r = nearbyintf(a);         /* default rounding mode: nearest even */
        return (uint16_t)(sign | (uint32_t)r);
    }
    uint32_t mant = au & 0x7fffffu, exp = (au >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float rel_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float v = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (mant << 13));
    return u2f(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t rel_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float rel_bf16_to_f32(uint16_t b) { return u2f((uint32_t)b << 16); }

void rel_pack(clnorm_dtype dt, const float *src, void *dst, size_t n)
{
    if (dt == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++)
        d[i] = dt == CLNORM_F16 ? rel_f32_to_f16(src[i]) : rel_f32_to_bf16(src[i]);
}

float rel_get(clnorm_dtype dt, const void *base, size_t i)
{
    if (dt == CLNORM_F32) { float f; memcpy(&f, (const char *)base + 4 * i, 4); return f; }
    uint16_t h;
    memcpy(&h, (const char *)base + 2 * i, 2);
    return dt == CLNORM_F16 ? rel_f16_to_f32(h) : rel_bf16_to_f32(h);
}

void rel_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = rel_get(dt, src, i);
}

float rel_round(clnorm_dtype dt, float v)
{
    if (dt == CLNORM_F32) return v;
    return dt == CLNORM_F16 ? rel_f16_to_f32(rel_f32_to_f16(v)) : rel_bf16_to_f32(rel_f32_to_bf16(v));
}

void rel_ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                     double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        double rs = 1.0 / sqrt(ss / (double)cols + (double)eps);
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = (double)xr[c] * rs * (gamma ? (double)gamma[c] : 1.0);
    }
}

/* (m, l) of one row with the contract's special values. */
static void ref_row_stats(const float *xr, size_t cols, double *m, double *l)
{
    double mm = -INFINITY, ll = 0;
    int nan = 0;
    for (size_t c = 0; c < cols; c++) {
        if (isnan(xr[c])) nan = 1;
        else if (xr[c] > mm) mm = xr[c];
    }
    if (nan) { *m = NAN; *l = NAN; return; }
    if (mm == -INFINITY) { *m = -INFINITY; *l = 0; return; }
    for (size_t c = 0; c < cols; c++) {
        if (mm == INFINITY) ll += xr[c] == INFINITY;
        else ll += exp((double)xr[c] - mm);
    }
    *m = mm;
    *l = ll;
}

void rel_ref_softmax(const float *x, size_t rows, size_t cols, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double m, l;
        ref_row_stats(xr, cols, &m, &l);
        for (size_t c = 0; c < cols; c++) {
            double v;
            if (isnan(m)) v = NAN;
            else if (m == -INFINITY) v = 0;
            else if (m == INFINITY) v = xr[c] == INFINITY ? 1.0 / l : 0;
            else v = exp((double)xr[c] - m) / l;
            y[r * cols + c] = v;
        }
    }
}

void rel_ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l)
{
    for (size_t r = 0; r < rows; r++) ref_row_stats(x + r * cols, cols, &m[r], &l[r]);
}

void rel_tolerance(clnorm_dtype dt, double *rel, double *abs)
{
    /* API.md: f32 2e-5 relative or 1e-30 absolute; f16 1e-3 relative plus storage
       rounding (2^-11, and 2^-25 absolute for subnormal halves); bf16 8e-3 relative
       plus its storage rounding (2^-8). */
    switch (dt) {
    case CLNORM_F16: *rel = 1e-3 + 0x1p-11; *abs = 0x1p-25; break;
    case CLNORM_BF16: *rel = 8e-3 + 0x1p-8; *abs = 1e-38; break;
    default: *rel = 2e-5; *abs = 1e-30; break;
    }
}

int rel_close(float got, double want, double rel, double abs)
{
    if (isnan(want)) return isnan(got);
    if (isinf(want)) return got == (float)want;
    if (!isfinite(got)) return 0;
    return fabs((double)got - want) <= rel * fabs(want) + abs;
}

double rel_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

long rel_rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int rel_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

uint64_t rel_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rel_unit(uint64_t *s) { return (double)(rel_rand(s) >> 11) * 0x1.0p-53; }

void rel_configure(const char *cache_dir, int builtin_plans)
{
    clnorm_config c;
    clnorm_config_get(&c);
    snprintf(c.cache_dir, sizeof c.cache_dir, "%s", cache_dir);
    if (builtin_plans) c.hints.tuning = 0;
    if (clnorm_config_set(&c) != CLNORM_SUCCESS) {
        fprintf(stderr, "configuration refused: %s\n", clnorm_last_error());
        exit(2);
    }
}
