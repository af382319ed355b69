/* Shared helpers of the clnorm fuzz targets; see fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t fz_u8(fz *f)
{
    if (!f->n) return 0;
    f->n--;
    return *f->p++;
}

uint16_t fz_u16(fz *f) { return (uint16_t)(fz_u8(f) | (uint16_t)fz_u8(f) << 8); }
uint32_t fz_u32(fz *f) { return (uint32_t)fz_u16(f) | (uint32_t)fz_u16(f) << 16; }
uint64_t fz_u64(fz *f) { return (uint64_t)fz_u32(f) | (uint64_t)fz_u32(f) << 32; }

size_t fz_size(fz *f)
{
    static const size_t edge[] = {0, 1, 2, 3, 7, 8, 31, 32, 33, 255, 256, 1023, 1024, 4097,
                                  65535, 65536, (size_t)1 << 31, (size_t)1 << 32,
                                  ((size_t)1 << 32) + 1, SIZE_MAX / 2, SIZE_MAX / 4 + 1,
                                  SIZE_MAX - 1, SIZE_MAX};
    uint8_t k = fz_u8(f);
    switch (k >> 6) {
    case 0: return k & 63;                                   /* 0..63 */
    case 1: return fz_u16(f) & 0x1fff;                       /* 0..8191 */
    case 2: return edge[(k & 63) % (sizeof edge / sizeof edge[0])];
    default: return (size_t)fz_u64(f);
    }
}

void fz_shape(size_t *rows, size_t *cols)
{
    const size_t cap = (size_t)1 << 56;
    size_t n;
    if (*cols == 0) *cols = 1;
    if (*cols > cap) *cols = 1 + *cols % cap;
    if (__builtin_mul_overflow(*rows, *cols, &n) || n > cap) *rows = cap / *cols;
}

void fz_str(fz *f, char *buf, size_t max)
{
    size_t n = fz_u8(f) % (max + 1), i;
    for (i = 0; i < n && f->n; i++) buf[i] = (char)fz_u8(f);
    buf[i] = '\0';
}

/* glibc's setenv never frees the strings it replaces, and millions of executions
   would fill memory; putenv of one static buffer per variable, rewritten in place,
   allocates nothing. */
void fz_setenv(const char *name, const char *value)
{
    static struct { char name[32]; char text[320]; } slots[16];
    static int nslots;
    int i;
    for (i = 0; i < nslots && strcmp(slots[i].name, name); i++) {}
    if (i == nslots) {
        if (nslots == 16 || strlen(name) >= sizeof slots[0].name) abort();
        snprintf(slots[i].name, sizeof slots[i].name, "%s", name);
        nslots++;
    }
    unsetenv(name);
    if (!value) return;
    snprintf(slots[i].text, sizeof slots[i].text, "%s=%s", name, value);
    putenv(slots[i].text);
}

void fz_env(fz *f, const char *name, size_t max)
{
    char val[256];
    if (max > 255) max = 255;
    uint8_t k = fz_u8(f);
    if ((k & 3) == 0) { fz_setenv(name, NULL); return; }
    fz_str(f, val, max);
    fz_setenv(name, val);
}

void fz_profile(fz *f, cln_profile *p)
{
    static const cl_device_type types[] = {CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
                                           CL_DEVICE_TYPE_ACCELERATOR,
                                           CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU |
                                               CL_DEVICE_TYPE_ACCELERATOR,
                                           0};
    static const size_t wgs[] = {1, 2, 64, 128, 256, 512, 1024, 4096, 3, 100};
    static const cl_ulong locals[] = {0, 16, 24, 1024, 16384, 32768, 49152, 65536, 1 << 20};
    memset(p, 0, sizeof *p);
    snprintf(p->platform_name, sizeof p->platform_name, "Fuzz Platform");
    snprintf(p->platform_vendor, sizeof p->platform_vendor, "clnorm");
    snprintf(p->platform_version, sizeof p->platform_version, "OpenCL 3.0 fuzz");
    snprintf(p->device_name, sizeof p->device_name, "fuzz device");
    snprintf(p->device_vendor, sizeof p->device_vendor, "clnorm");
    snprintf(p->driver_version, sizeof p->driver_version, "1.0");
    p->subgroup_std = "";
    uint8_t k = fz_u8(f);
    p->type = types[k % 5];
    p->compute_units = (k & 0x80) ? fz_u8(f) : (cl_uint)(1 + (fz_u8(f) & 0x7f));
    k = fz_u8(f);
    p->max_wg = k < 200 ? wgs[k % 10] : fz_u16(f);
    k = fz_u8(f);
    p->local_mem = k < 200 ? locals[k % 9] : fz_u32(f);
    p->pref_multiple = (size_t)1 << (fz_u8(f) % 7);
    k = fz_u8(f);
    p->vec = k < 200 ? (cl_uint)1 << (k % 5) : k;
    k = fz_u8(f);
    p->best_path = (cln_path)(k % 3);
    p->has_subgroups = p->best_path == CLN_PATH_SUBGROUP;
    p->has_nv_shuffle = p->nv = p->best_path == CLN_PATH_NV;
    p->warp = p->nv ? 32 : 0;
    p->nv_cc_major = p->nv ? 9 : 0;
    k = fz_u8(f);
    p->loop_limit = k < 128 ? 0 : k < 200 ? 2000 : fz_u16(f);
    p->pocl_major = fz_u8(f) % 7;
}

static size_t div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

static size_t pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

void fz_check_plan(const cln_profile *p, const cln_limits *lim, cln_op op, clnorm_dtype dt,
                   size_t rows, size_t cols, const cln_plan *pl)
{
    char d[256];
    cln_plan_describe(pl, d, sizeof d);
    /* Shapes no buffer can hold (validation refuses them first) need only not crash. */
    size_t elems;
    if (rows > ((size_t)1 << 40) || cols > ((size_t)1 << 40) ||
        __builtin_mul_overflow(rows, cols, &elems) || elems > ((size_t)1 << 48))
        return;
    /* The limits the plan must respect. */
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    cl_ulong local = p->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    size_t local_cap = local > 16 ? (size_t)((local - 16) / 8) : 0;
    if (local_cap < max_wg) max_wg = pow2_floor(local_cap ? local_cap : 1);

    FZ_ASSERT(pl->op != CLN_OP_SOFTMAX_AUTO && (unsigned)pl->op < CLN_OP_COUNT, "%s", d);
    FZ_ASSERT(op == CLN_OP_SOFTMAX_AUTO ? (pl->op == CLN_OP_SOFTMAX_THREE_PASS ||
                                           pl->op == CLN_OP_SOFTMAX_ONLINE)
                                        : pl->op == op, "op %d planned as %d", (int)op,
              (int)pl->op);
    FZ_ASSERT(pl->wg >= 1 && pl->team >= 1 && pl->wg % pl->team == 0, "%s", d);
    FZ_ASSERT(pl->rows_per_wg == pl->wg / pl->team, "%s", d);
    FZ_ASSERT(pl->wg <= max_wg, "%s: work-group over the %zu the device allows", d, max_wg);
    FZ_ASSERT(pl->local_bytes >= pl->wg * sizeof(float) && pl->local_bytes <= local,
              "%s: %zu bytes of local scratch, device has %llu", d, pl->local_bytes,
              (unsigned long long)local);
    /* PoCL 4+ groups of one or two work-items take the local path (src/plan.c). */
    if (lim->force_path == CLN_PATH_LOCAL || (p->pocl_major >= 4 && pl->wg <= 2))
        FZ_ASSERT(pl->path == CLN_PATH_LOCAL, "%s", d);
    else FZ_ASSERT(pl->path == p->best_path, "%s", d);
    FZ_ASSERT((unsigned)pl->variant < CLN_VAR_COUNT, "%s", d);
    FZ_ASSERT(!((pl->variant == CLN_VAR_REGISTERS || pl->variant == CLN_VAR_WORDS) &&
                pl->op == CLN_OP_STATS), "%s", d);
    /* The paired kernels move words of two elements from every row start. */
    if (pl->variant == CLN_VAR_WORDS)
        FZ_ASSERT(cols % 2 == 0 && !lim->no_pairs, "%s: paired plan for %zu columns%s", d, cols,
                  lim->no_pairs ? " on views with odd row starts" : "");
    FZ_ASSERT(!(pl->variant == CLN_VAR_SPLIT && pl->op == CLN_OP_ADD_RMSNORM), "%s", d);
    FZ_ASSERT(pl->k1 < CLN_K_COUNT && pl->k2 <= CLN_K_COUNT && pl->k3 <= CLN_K_COUNT &&
                  !(pl->k2 == CLN_K_COUNT && pl->k3 != CLN_K_COUNT),
              "%s: kernels %d %d %d", d, (int)pl->k1, (int)pl->k2, (int)pl->k3);
    FZ_ASSERT((pl->variant == CLN_VAR_SPLIT) == (pl->k2 != CLN_K_COUNT), "%s", d);
    /* GPU builds loop one element at a time on views of mixed alignment. */
    size_t vec = (p->type & CL_DEVICE_TYPE_CPU) && p->vec ? p->vec : 1;
    if (pl->variant == CLN_VAR_REGISTERS || pl->variant == CLN_VAR_WORDS)
        FZ_ASSERT(pl->team * cln_plan_reg_elems(pl, dt) >= cols,
                  "%s: register row of %zu columns", d, cols);
    if (pl->variant != CLN_VAR_SPLIT) {
        /* Every row has a team: groups x rows per group cover the rows. */
        size_t cover;
        FZ_ASSERT(!__builtin_mul_overflow(pl->groups, pl->rows_per_wg, &cover) &&
                      cover >= rows && (rows == 0 || cover - rows < pl->rows_per_wg),
                  "%s: %zu groups for %zu rows", d, pl->groups, rows);
        if (p->loop_limit)
            FZ_ASSERT(div_up(cols, pl->team * vec) <= p->loop_limit, "%s: loop of %zu trips",
                      d, div_up(cols, pl->team * vec));
    } else {
        /* Slices tile the row exactly: none empty (c1 - c0 would wrap), none past it. */
        size_t span, groups;
        FZ_ASSERT(pl->team == pl->wg && pl->slices >= 1 && pl->slice_len >= pl->wg &&
                      pl->slice_len % pl->wg == 0, "%s", d);
        FZ_ASSERT(!__builtin_mul_overflow(pl->slices, pl->slice_len, &span) && span >= cols &&
                      (pl->slices - 1) * pl->slice_len < cols,
                  "%s: %zu slices of %zu for %zu columns", d, pl->slices, pl->slice_len, cols);
        if (!__builtin_mul_overflow(rows, pl->slices, &groups))
            FZ_ASSERT(pl->groups == groups, "%s: %zu groups for %zu rows", d, pl->groups, rows);
        if (p->loop_limit)
            FZ_ASSERT(div_up(pl->slice_len, pl->wg * vec) <= p->loop_limit,
                      "%s: loop of %zu trips", d, div_up(pl->slice_len, pl->wg * vec));
    }
}
