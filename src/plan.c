/* The plan: variant, work-group size, work-items per row, split and reduction path
   for one call. cln_plan_make is a pure function of its arguments so tests can call
   it with the profile of any device, real or not. */
#include "internal.h"
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes of rows a CPU work-group keeps in cache between its passes (see
   docs/DESIGN.md, 'CPU plans'). */
#define CLN_CPU_GROUP_BYTES ((size_t)256 * 1024)

const char *cln_op_name(cln_op op)
{
    switch (op) {
    case CLN_OP_RMSNORM: return "rmsnorm";
    case CLN_OP_SOFTMAX_THREE_PASS: return "softmax-3pass";
    case CLN_OP_SOFTMAX_ONLINE: return "softmax-online";
    case CLN_OP_STATS: return "softmax-stats";
    case CLN_OP_ADD_RMSNORM: return "add-rmsnorm";
    case CLN_OP_SOFTMAX_AUTO: return "softmax-auto";
    }
    return "?";
}

const char *cln_variant_name(cln_variant v)
{
    switch (v) {
    case CLN_VAR_STREAM: return "stream";
    case CLN_VAR_REGISTERS: return "reg";
    case CLN_VAR_SPLIT: return "split";
    case CLN_VAR_WORDS: return "words";
    }
    return "?";
}

void cln_plan_describe(const cln_plan *pl, char *buf, size_t len)
{
    if (pl->variant == CLN_VAR_SPLIT)
        snprintf(buf, len, "%s/%s wg %zu, %zu slices of %zu", cln_variant_name(pl->variant),
                 cln_path_name(pl->path), pl->wg, pl->slices, pl->slice_len);
    else
        snprintf(buf, len, "%s%s/%s wg %zu, %zu rows/wg, %zu groups",
                 cln_variant_name(pl->variant), pl->pair_half ? "-half" : "",
                 cln_path_name(pl->path), pl->wg, pl->rows_per_wg, pl->groups);
}

static size_t cln_pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

static size_t cln_pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v && p < ((size_t)1 << 62)) p *= 2;
    return p;
}

static size_t cln_div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

/* GPUs take words of 4: one 16-byte (float32) or 8-byte (16-bit) access per word
   instead of 8 or 4 bytes (see docs/DESIGN.md, 'Paired register kernels'). The price:
   rows whose length or start is a multiple of 2 but not of 4 take the plain register
   form. CPUs run the paired kernels only when forced; they keep 2. */
size_t cln_pair_word(const cln_profile *p, size_t forced)
{
    if (forced == 2 || forced == 4) return forced;
    return p->type & CL_DEVICE_TYPE_CPU ? 2 : 4;
}

/* Scratch bytes per work-group: (m, l) pairs need two floats per work-item. The
   split kernels of every op reduce pairs. */
static size_t cln_local_floats(cln_op op, cln_variant v)
{
    if (v == CLN_VAR_SPLIT) return 2;
    return op == CLN_OP_SOFTMAX_ONLINE || op == CLN_OP_STATS ? 2 : 1;
}

/* The plan's kernels, stage by stage, from the table (src/kernels.c). */
static void cln_kernels(cln_plan *pl)
{
    pl->k1 = cln_kernel_find(pl->op, pl->variant, pl->pair_half, 1);
    pl->k2 = cln_kernel_find(pl->op, pl->variant, pl->pair_half, 2);
    pl->k3 = cln_kernel_find(pl->op, pl->variant, pl->pair_half, 3);
}

/* Elements per work-item the register form of op holds (see cl/). RMSNorm's plain
   form holds fewer: with 32, NVIDIA spills around its rarely taken rescaling path
   (docs/DESIGN.md, 'Register slots per work-item'). The paired forms hold CLN_REG_K
   (float32) or twice as many 16-bit elements in the same registers (cl/dtype.cl). */
static size_t cln_reg_k(cln_op op, clnorm_dtype dtype, int pair)
{
    if (pair) return dtype != CLNORM_F32 ? 2 * CLN_REG_K : CLN_REG_K;
    return op == CLN_OP_RMSNORM || op == CLN_OP_ADD_RMSNORM ? CLN_RMS_REG_K : CLN_REG_K;
}

size_t cln_plan_reg_elems(const cln_plan *pl, clnorm_dtype dtype)
{
    if (pl->variant != CLN_VAR_REGISTERS && pl->variant != CLN_VAR_WORDS) return 0;
    size_t k = cln_reg_k(pl->op, dtype, pl->variant == CLN_VAR_WORDS);
    return pl->pair_half ? k / 2 : k;
}

static int cln_has_variant(cln_op op, cln_variant v)
{
    if (v == CLN_VAR_REGISTERS || v == CLN_VAR_WORDS) return op != CLN_OP_STATS;
    if (v == CLN_VAR_SPLIT) return op != CLN_OP_ADD_RMSNORM;
    return 1;
}

clnorm_status cln_plan_make(const cln_profile *p, const cln_limits *lim, cln_op op,
                            clnorm_dtype dtype, size_t rows, size_t cols, cln_plan *out,
                            char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    /* No buffer holds a row this long, and the size arithmetic below (slices rounded
       up to whole work-groups) must not wrap. */
    if (cols > ((size_t)1 << 48)) {
        snprintf(why, why_len, "cols = %zu exceeds 2^48, more than any device holds", cols);
        return CLNORM_INVALID_ARGUMENT;
    }
    const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    const size_t cus = p->compute_units ? p->compute_units : 1;
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    cl_ulong local = p->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    /* Two floats per work-item cover every kernel's scratch, plus a flag word. */
    size_t local_cap = local > 16 ? (size_t)((local - 16) / (2 * sizeof(float))) : 0;
    if (local_cap < max_wg) max_wg = cln_pow2_floor(local_cap ? local_cap : 1);
    if (local_cap == 0) {
        snprintf(why, why_len, "the device has %llu bytes of local memory, fewer than one "
                 "work-item needs", (unsigned long long)local);
        return CLNORM_UNSUPPORTED;
    }

    if (lim->force_path == CLN_PATH_SUBGROUP || lim->force_path == CLN_PATH_NV) {
        if (p->best_path == CLN_PATH_LOCAL) {
            snprintf(why, why_len, "CLNORM_REDUCTION=subgroup, but device \"%s\" has neither "
                     "cl_khr_subgroups nor NVIDIA warp shuffles", p->device_name);
            return CLNORM_UNSUPPORTED;
        }
    }
    out->path = lim->force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : p->best_path;

    /* The paired register form wants whole words at every row start; it is the
       register form wherever it can run (see docs/DESIGN.md, 'Paired register
       kernels'). CLNORM_VARIANT=reg keeps the plain form, =words forces the paired one. */
    const int rms = op == CLN_OP_RMSNORM || op == CLN_OP_ADD_RMSNORM;
    int soft16 = dtype != CLNORM_F32 && !rms;
    const size_t word = cln_pair_word(p, lim->pair_word);
    int pair = cols % word == 0 && !lim->no_pairs && lim->force_variant != CLN_VAR_REGISTERS;
    /* The algorithm: AUTO takes the register three-pass form (one read, one exp per
       element) when the row fits, else the online form (two reads, not three). */
    size_t reg_k = cln_reg_k(op, dtype, pair);
    /* The paired kernels come in two sizes (cl/): half the slots where a team of up
       to 256 then holds the row, all of them for longer rows. RMSNorm and 16-bit
       softmax take the half form wherever it fits; 16-bit softmax holds its words
       unpacked, so that its weights stay in place and exp is taken once per element
       instead of twice (float32 softmax always keeps them in place). float32 softmax
       takes the half form where the full one would need a team of a warp or more, for
       twice the work-groups in flight; shorter rows run fastest in narrow teams. A
       forced team that holds the row in half the slots gets the half kernels in every
       op. See docs/DESIGN.md, 'Half and full paired kernels'. */
    int soft32_wide = !rms && dtype == CLNORM_F32 && cln_pow2_ceil(cln_div_up(cols, reg_k)) >= 32;
    int pair_half = pair && (rms || soft16 || soft32_wide || lim->force_team) &&
                    cln_pow2_ceil(cln_div_up(cols, reg_k / 2)) <= 256;
    /* A forced team that holds the row only in all the slots gets the full kernels. */
    if (pair_half && lim->force_team && lim->force_team * (reg_k / 2) < cols) pair_half = 0;
    if (pair_half) reg_k /= 2;
    size_t reg_team = cln_pow2_ceil(cln_div_up(cols, reg_k));
    int reg_fits = reg_team <= max_wg && reg_team <= 1024;
    /* 16-bit softmax rows that need a register team over 256 stay paired in the full
       form where the row fills at least 3/4 of the slots, and stream otherwise (see
       docs/DESIGN.md, '16-bit softmax'). The plain register form (rows not of whole
       words) loads 2 bytes at a time: it streams too. */
    if (!cpu && soft16 && reg_team > 256 && lim->force_variant < 0 &&
        (!pair || 4 * cols < 3 * reg_team * reg_k))
        reg_fits = 0;
    /* On CPUs whose kernels vectorise a work-item's loop (CLN_VEC > 1, PoCL) the data
       sits in cache between passes and exp dominates; the three-pass loops vectorise
       more cleanly than the online rescaling, so they win there; on llvmpipe (scalar
       work-items as SIMD lanes) the online form wins. See docs/DESIGN.md, 'Softmax
       algorithm choice'. */
    int cpu_vec = cpu && p->vec > 1;
    if (op == CLN_OP_SOFTMAX_AUTO)
        op = (!cpu && reg_fits) || cpu_vec ? CLN_OP_SOFTMAX_THREE_PASS : CLN_OP_SOFTMAX_ONLINE;
    out->op = op;
    out->online = op == CLN_OP_SOFTMAX_ONLINE;

    /* The variant. Split when rows are too few to fill the device and long enough to
       share; registers when the row fits; stream otherwise. */
    cln_variant var;
    if (lim->force_variant >= 0) {
        var = (cln_variant)lim->force_variant;
        if (var == CLN_VAR_WORDS && !pair) var = CLN_VAR_REGISTERS; /* odd columns or rows */
        if (!cln_has_variant(op, var)) var = CLN_VAR_STREAM;
    } else {
        size_t split_min = cpu ? 65536 : 32768;
        int few = rows < (cpu ? cus : 2 * cus);
        if (few && cols >= split_min && cln_has_variant(op, CLN_VAR_SPLIT)) var = CLN_VAR_SPLIT;
        else if (!cpu && reg_fits && cln_has_variant(op, CLN_VAR_REGISTERS))
            var = pair ? CLN_VAR_WORDS : CLN_VAR_REGISTERS;
        else var = CLN_VAR_STREAM;
    }
    if (var == CLN_VAR_SPLIT && (lim->force_wg || lim->force_team) && lim->force_variant < 0)
        var = !reg_fits || !cln_has_variant(op, CLN_VAR_REGISTERS) ? CLN_VAR_STREAM
              : pair ? CLN_VAR_WORDS : CLN_VAR_REGISTERS;
    const int in_regs = var == CLN_VAR_REGISTERS || var == CLN_VAR_WORDS;

    size_t wg, team;
    if (var == CLN_VAR_SPLIT) {
        wg = lim->force_wg ? lim->force_wg : (cpu ? 8 : 256);
        if (wg > max_wg) wg = lim->force_wg ? wg : cln_pow2_floor(max_wg);
        team = wg;
    } else if (lim->force_wg) {
        wg = lim->force_wg;
        if (lim->force_team) team = lim->force_team;
        else {
            team = cln_pow2_ceil(cln_div_up(cols, cpu ? 64 : 8));
            if (team > wg) team = wg;
            while (wg % team) team /= 2; /* a power of two: 1 always divides */
        }
    } else if (cpu && !lim->force_team) {
        /* CPUs run a work-group on one thread, its work-items as loop iterations, and
           vectorise each work-item's own loop (CLN_VEC): one work-item per row, enough
           rows per group to amortise the barriers, and groups for every core. A few
           long rows share their work among a handful of work-items instead. */
        size_t rpw = cln_pow2_floor(rows / (4 * cus) ? rows / (4 * cus) : 1);
        if (rpw > 64) rpw = 64;
        /* Where a work-item vectorises its own loop, a group runs each pass over all
           its rows before the next, so its rows should stay in cache between passes:
           at most CLN_CPU_GROUP_BYTES of them, and a long row gets at most 4
           work-items (see docs/DESIGN.md, 'CPU plans'). */
        const size_t row_bytes = cols * cln_dtype_size(dtype);
        const int long_rows = p->vec > 1 && row_bytes > CLN_CPU_GROUP_BYTES;
        while (p->vec > 1 && rpw > 1 && rpw * row_bytes > CLN_CPU_GROUP_BYTES) rpw /= 2;
        team = 8 / (rpw < 8 ? rpw : 8);
        if (long_rows && team > 4) team = 4;
        /* Where work-items are the SIMD lanes themselves (vector width 1: llvmpipe),
           rows of 1024 columns or more go 8 work-items each, at most 4 rows a group
           (see docs/DESIGN.md, 'CPU plans'). */
        if (p->vec <= 1 && cols >= 1024) {
            team = 8;
            if (rpw > 4) rpw = 4;
        }
        size_t chunks = cln_div_up(cols, 4 * (p->vec ? p->vec : 1));
        while (team > 1 && team > chunks) team /= 2;
        while (team * rpw > max_wg && rpw > 1) rpw /= 2;
        while (team * rpw > max_wg && team > 1) team /= 2;
        /* At least 8 work-items, so the CPU's vector lanes have work; spare rows cost
           nothing. Not for long rows, whose work-items vectorise their own loops. */
        while (!long_rows && team * rpw < 8 && team * rpw * 2 <= max_wg) rpw *= 2;
        wg = team * rpw;
    } else {
        /* GPUs want about 8 elements per work-item and many rows in flight; CPUs run
           a work-group on one thread with work-items as vector lanes, so fewer
           work-items and longer loops. Long rows with few rows get big groups. */
        size_t per_item = cpu ? 64 : 8;
        size_t cap = cpu ? 64 : (rows < 2 * cus ? 1024 : 256);
        if (lim->force_team) {
            team = lim->force_team;
        } else if (in_regs && !cpu) {
            /* A GPU register plan fills every slot: a work-group's loads all go out at
               once and then it only computes, so bytes in flight per work-item set the
               bandwidth. Short rows too, in teams narrower than a warp. See
               docs/DESIGN.md, 'Work-items per row on GPUs'. */
            team = reg_team;
        } else {
            team = cln_pow2_ceil(cln_div_up(cols, per_item));
            if (team > cap) team = cap;
            if (in_regs && team < reg_team) team = reg_team;
        }
        if (!lim->force_team && team > max_wg) team = cln_pow2_floor(max_wg);
        if (team > max_wg) {
            snprintf(why, why_len, "CLNORM_ROW_THREADS=%zu exceeds the %zu work-items this "
                     "device and kernel allow", team, max_wg);
            return CLNORM_INVALID_ARGUMENT;
        }
        /* Fill a work-group of about 256 work-items (64 on CPUs) with whole rows, at
           least the preferred multiple even when rows are few: spare rows cost little,
           and a CPU runs a group of one work-item no faster. */
        size_t target = cpu ? 64 : 256;
        if (target > max_wg) target = max_wg;
        size_t rpw = target > team ? target / team : 1;
        size_t rows_p2 = cln_pow2_ceil(rows ? rows : 1);
        if (rpw > rows_p2) rpw = rows_p2;
        size_t min_wg = p->pref_multiple ? p->pref_multiple : 1;
        if (min_wg > target) min_wg = target;
        while (team * rpw < min_wg && team * rpw * 2 <= target) rpw *= 2;
        wg = team * rpw;
    }
    if (lim->force_wg) {
        if (wg > max_wg) {
            snprintf(why, why_len, "CLNORM_WORK_GROUP=%zu exceeds the %zu work-items this "
                     "device and kernel allow (local memory %llu bytes)", wg, max_wg,
                     (unsigned long long)local);
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    if (team == 0 || wg % team) {
        snprintf(why, why_len, "CLNORM_ROW_THREADS=%zu does not divide the work-group size "
                 "%zu", team, wg);
        return CLNORM_INVALID_ARGUMENT;
    }
    /* A device with a loop-trip limit: widen the team, then split the row, so that
       no work-item loop runs longer than the limit. */
    /* GPU builds fall back to scalar loops on views of mixed alignment (cl/rows.cl):
       count their trips one element each. */
    size_t vec = cpu && p->vec ? p->vec : 1;
    if (p->loop_limit && var != CLN_VAR_SPLIT && !lim->force_wg && !lim->force_team) {
        while (cln_div_up(cols, team * vec) > p->loop_limit && team * 2 <= max_wg) team *= 2;
        if (wg < team) wg = team;
        wg = wg / team * team;
        if (cln_div_up(cols, team * vec) > p->loop_limit) {
            if (!cln_has_variant(op, CLN_VAR_SPLIT)) {
                snprintf(why, why_len, "rows of %zu columns exceed what device \"%s\" can loop "
                         "over (%u trips per work-item)", cols, p->device_name, p->loop_limit);
                return CLNORM_UNSUPPORTED;
            }
            var = CLN_VAR_SPLIT;
            wg = team = cln_pow2_floor(max_wg);
        }
    }
    if (p->loop_limit && var != CLN_VAR_SPLIT && (lim->force_wg || lim->force_team) &&
        cln_div_up(cols, team * vec) > p->loop_limit) {
        snprintf(why, why_len, "with %zu work-items per row, rows of %zu columns exceed what "
                 "device \"%s\" can loop over (%u trips per work-item)", team, cols,
                 p->device_name, p->loop_limit);
        return CLNORM_UNSUPPORTED;
    }
    /* A forced shape whose row does not fit the registers streams instead. */
    if ((var == CLN_VAR_REGISTERS || var == CLN_VAR_WORDS) && team * reg_k < cols)
        var = CLN_VAR_STREAM;

    out->variant = var;
    out->pair_half = var == CLN_VAR_WORDS && pair_half;
    out->wg = wg;
    out->team = team;
    out->rows_per_wg = wg / team;
    if (var == CLN_VAR_SPLIT) {
        size_t slices = lim->force_slices;
        if (!slices) {
            slices = cln_div_up((cpu ? 2 : 4) * cus, rows ? rows : 1);
            size_t most = cols / (wg * 8); /* at least 8 elements per work-item */
            if (slices > most) slices = most;
        }
        if (slices < 1) slices = 1;
        if (p->loop_limit) {
            size_t need = cln_div_up(cols, wg * vec * p->loop_limit);
            if (slices < need) slices = need;
        }
        if (slices > cols) slices = cols;
        size_t len = cln_div_up(cols, slices);
        out->slice_len = cln_div_up(len, wg) * wg;
        out->slices = cln_div_up(cols, out->slice_len);
        out->groups = rows * out->slices;
    } else {
        out->groups = rows ? cln_div_up(rows, out->rows_per_wg) : 0;
    }
    /* Plus one int after the scratch: RMSNorm's flag word (CLN_FLAG in cl/). */
    out->local_bytes = wg * sizeof(float) * cln_local_floats(op, var) + sizeof(cl_int);
    /* PoCL 4+ compiles groups of at most two work-items by replicating them, and that
       path cannot expand the __pocl_work_group_alloca its sub-group builtins call: the
       kernel then fails to load (docs/DESIGN.md, 'Driver quirks'). Such groups gain
       nothing from sub-groups anyway. */
    if (p->pocl_major >= 4 && wg <= 2) out->path = CLN_PATH_LOCAL;
    cln_kernels(out);
    return CLNORM_SUCCESS;
}
