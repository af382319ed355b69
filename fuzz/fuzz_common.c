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

uint64_t fz_fnv1a(const void *data, size_t len, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t fz_file_sum(const uint8_t *img, size_t key_len, size_t payload_len)
{
    return fz_fnv1a(img + 32 + key_len, payload_len,
                    fz_fnv1a(img + 32, key_len, fz_fnv1a(img, 24, 0)));
}

const clnorm_device_info *fz_device(fz *f, size_t *max_wg, cl_ulong *max_local)
{
    enum { MAX_DEVICES = 8 };
    static clnorm_device_info devs[MAX_DEVICES];
    static size_t ndev;
    static int listed;
    if (!listed) {
        size_t n = 0;
        listed = 1;
        if (clnorm_device_count(&n) == CLNORM_SUCCESS)
            for (size_t i = 0; i < n && ndev < MAX_DEVICES; i++)
                if (clnorm_device_get(i, 1, &devs[ndev]) == CLNORM_SUCCESS) ndev++;
    }
    FZ_ASSERT(ndev > 0, "no OpenCL device to plan for: %s", clnorm_last_error());
    static const size_t wgs[] = {1, 2, 64, 128, 256, 512, 1024, 4096, 3, 100};
    static const cl_ulong locals[] = {0, 16, 24, 1024, 16384, 32768, 49152, 65536, 1 << 20};
    uint8_t k = fz_u8(f);
    const clnorm_device_info *d = &devs[k % ndev];
    (void)((k & 0x80) ? fz_u8(f) : fz_u8(f)); /* compute units */
    k = fz_u8(f);
    size_t wg = k < 200 ? wgs[k % 10] : fz_u16(f);
    k = fz_u8(f);
    cl_ulong local = k < 200 ? locals[k % 9] : fz_u32(f);
    uint8_t use = fz_u8(f); /* which of the two limits apply */
    *max_wg = use & 1 ? wg : 0;
    *max_local = use & 2 ? local : 0;
    fz_u8(f); /* vector width */
    fz_u8(f); /* path */
    if (fz_u8(f) >= 200) fz_u16(f); /* loop limit */
    fz_u8(f); /* PoCL version */
    return d;
}

static size_t div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

static size_t pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

void fz_check_plan(const clnorm_device_info *d, const fz_limits *lim, clnorm_op op,
                   size_t rows, size_t cols, const clnorm_plan_info *pl)
{
    char desc[256];
    clnorm_plan_describe(pl, desc, sizeof desc);
    /* Shapes no buffer can hold (validation refuses them first) need only not crash. */
    size_t elems;
    if (rows > ((size_t)1 << 40) || cols > ((size_t)1 << 40) ||
        __builtin_mul_overflow(rows, cols, &elems) || elems > ((size_t)1 << 48))
        return;
    /* A query plans rows == 0 as one row. */
    if (rows == 0) rows = 1;
    /* The limits the plan must respect. */
    size_t max_wg = d->max_work_group ? d->max_work_group : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    cl_ulong local = d->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    size_t local_cap = local > 16 ? (size_t)((local - 16) / 8) : 0;
    if (local_cap < max_wg) max_wg = pow2_floor(local_cap ? local_cap : 1);

    FZ_ASSERT(pl->op != CLNORM_OP_SOFTMAX_AUTO && (unsigned)pl->op < CLNORM_OP_COUNT, "%s",
              desc);
    FZ_ASSERT(op == CLNORM_OP_SOFTMAX_AUTO ? (pl->op == CLNORM_OP_SOFTMAX_THREE_PASS ||
                                              pl->op == CLNORM_OP_SOFTMAX_ONLINE)
                                           : pl->op == op, "op %d planned as %d", (int)op,
              (int)pl->op);
    FZ_ASSERT(pl->work_group >= 1 && pl->items_per_row >= 1 &&
                  pl->work_group % pl->items_per_row == 0, "%s", desc);
    FZ_ASSERT(pl->rows_per_group == pl->work_group / pl->items_per_row, "%s", desc);
    FZ_ASSERT(pl->work_group <= max_wg, "%s: work-group over the %zu the device allows", desc,
              max_wg);
    FZ_ASSERT(pl->local_bytes >= pl->work_group * sizeof(float) && pl->local_bytes <= local,
              "%s: %zu bytes of local scratch, device has %llu", desc, pl->local_bytes,
              (unsigned long long)local);
    /* PoCL 4+ groups of one or two work-items take the local path (docs/DESIGN.md,
       'How a path is chosen'). */
    if (lim->reduction == CLNORM_REDUCTION_LOCAL || (d->pocl_major >= 4 && pl->work_group <= 2))
        FZ_ASSERT(pl->reduction == CLNORM_REDUCTION_LOCAL, "%s", desc);
    else FZ_ASSERT(pl->reduction == d->reduction, "%s", desc);
    FZ_ASSERT((unsigned)pl->variant < CLNORM_VARIANT_COUNT, "%s", desc);
    const int regs = pl->variant == CLNORM_VARIANT_REGISTERS || pl->variant == CLNORM_VARIANT_WORDS;
    const int split = pl->variant == CLNORM_VARIANT_SPLIT;
    FZ_ASSERT(!(regs && pl->op == CLNORM_OP_SOFTMAX_STATS), "%s", desc);
    /* The words kernels move whole words from every row start. */
    if (pl->variant == CLNORM_VARIANT_WORDS)
        FZ_ASSERT((pl->word == 2 || pl->word == 4) && cols % pl->word == 0,
                  "%s: words of %zu for %zu columns", desc, pl->word, cols);
    else FZ_ASSERT(pl->word == 1, "%s: word %zu", desc, pl->word);
    FZ_ASSERT(!(split && pl->op == CLNORM_OP_ADD_RMSNORM), "%s", desc);
    FZ_ASSERT(pl->kernels[0] && !(pl->kernels[1] == NULL && pl->kernels[2] != NULL),
              "%s: kernels %s %s %s", desc, pl->kernels[0] ? pl->kernels[0] : "-",
              pl->kernels[1] ? pl->kernels[1] : "-", pl->kernels[2] ? pl->kernels[2] : "-");
    FZ_ASSERT(split == (pl->kernels[1] != NULL), "%s", desc);
    /* Loop trips count one element each: the one device with a limit (llvmpipe) runs
       the GPU's loops, one element at a time on views of mixed alignment. */
    const size_t vec = 1;
    if (regs)
        FZ_ASSERT(pl->elems_per_item && pl->items_per_row * pl->elems_per_item >= cols,
                  "%s: register row of %zu columns", desc, cols);
    else FZ_ASSERT(pl->elems_per_item == 0, "%s", desc);
    if (!split) {
        /* Every row has a team: groups x rows per group cover the rows. */
        size_t cover;
        FZ_ASSERT(pl->split == 1 && pl->split_cols == 0, "%s", desc);
        FZ_ASSERT(!__builtin_mul_overflow(pl->groups, pl->rows_per_group, &cover) &&
                      cover >= rows && cover - rows < pl->rows_per_group,
                  "%s: %zu groups for %zu rows", desc, pl->groups, rows);
        if (d->loop_limit)
            FZ_ASSERT(div_up(cols, pl->items_per_row * vec) <= d->loop_limit,
                      "%s: loop of %zu trips", desc, div_up(cols, pl->items_per_row * vec));
    } else {
        /* Slices tile the row exactly: none empty (c1 - c0 would wrap), none past it. */
        size_t span, groups;
        FZ_ASSERT(pl->items_per_row == pl->work_group && pl->split >= 1 &&
                      pl->split_cols >= pl->work_group && pl->split_cols % pl->work_group == 0,
                  "%s", desc);
        FZ_ASSERT(!__builtin_mul_overflow(pl->split, pl->split_cols, &span) && span >= cols &&
                      (pl->split - 1) * pl->split_cols < cols,
                  "%s: %zu slices of %zu for %zu columns", desc, pl->split, pl->split_cols, cols);
        if (!__builtin_mul_overflow(rows, pl->split, &groups))
            FZ_ASSERT(pl->groups == groups, "%s: %zu groups for %zu rows", desc, pl->groups, rows);
        if (d->loop_limit)
            FZ_ASSERT(div_up(pl->split_cols, pl->work_group * vec) <= d->loop_limit,
                      "%s: loop of %zu trips", desc, div_up(pl->split_cols, pl->work_group * vec));
    }
}
