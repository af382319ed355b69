/* The plan: variant, work-group size, work-items per row, split and reduction path
   for one call. cln_plan_make is a pure function of its arguments so tests can call
   it with the profile of any device, real or not; it runs the steps below, which take
   every threshold from the device's row of the plan table (src/plan_table.c). */
#include "plan.h"
#include "build_options.h"
#include "kernels.h"
#include "plan_table.h"
#include "types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
   form. CPUs run the words kernels only when forced; they keep 2. The word is the
   word of the device's row in the plan table. */
size_t cln_word_size(const cln_profile *p, size_t forced)
{
    if (forced == 2 || forced == 4) return forced;
    return cln_plan_params_for(p)->word;
}

/* Scratch bytes per work-group: (m, l) pairs need two floats per work-item. The
   split kernels of every op reduce pairs. */
static size_t cln_local_floats(cln_op op, cln_variant v)
{
    if (v == CLN_VAR_SPLIT || v == CLN_VAR_COOP) return 2;
    return op == CLN_OP_SOFTMAX_ONLINE || op == CLN_OP_STATS ? 2 : 1;
}

/* The plan's kernels, stage by stage, from the table (src/kernels.c). */
static void cln_kernels(cln_plan *pl)
{
    pl->k1 = cln_kernel_find(pl->op, pl->variant, pl->words_half, 1);
    pl->k2 = cln_kernel_find(pl->op, pl->variant, pl->words_half, 2);
    pl->k3 = cln_kernel_find(pl->op, pl->variant, pl->words_half, 3);
}

/* Elements per work-item the register form of op holds (see cl/). RMSNorm's plain
   form holds fewer: with 32, NVIDIA spills around its rarely taken rescaling path
   (docs/DESIGN.md, 'Register slots per work-item'). The words forms hold CLN_REG_K
   (float32) or twice as many 16-bit elements in the same registers (cl/dtype.cl). */
static size_t cln_reg_k(cln_op op, clnorm_dtype dtype, int words)
{
    if (words) return dtype != CLNORM_F32 ? 2 * CLN_REG_K : CLN_REG_K;
    return op == CLN_OP_RMSNORM || op == CLN_OP_ADD_RMSNORM ? CLN_RMS_REG_K : CLN_REG_K;
}

size_t cln_plan_reg_elems(const cln_plan *pl, clnorm_dtype dtype)
{
    if (pl->variant != CLN_VAR_REGISTERS && pl->variant != CLN_VAR_WORDS) return 0;
    size_t k = cln_reg_k(pl->op, dtype, pl->variant == CLN_VAR_WORDS);
    return pl->words_half ? k / 2 : k;
}

static int cln_has_variant(cln_op op, cln_variant v)
{
    if (v == CLN_VAR_REGISTERS || v == CLN_VAR_WORDS) return op != CLN_OP_STATS;
    if (v == CLN_VAR_SPLIT) return op != CLN_OP_ADD_RMSNORM;
    if (v == CLN_VAR_COOP) return op == CLN_OP_SOFTMAX_THREE_PASS || op == CLN_OP_SOFTMAX_ONLINE;
    return 1;
}

/* ---- the plan steps ------------------------------------------------------------------
   cln_plan_make runs the steps below in order. Each reads the call, the device's row
   of the plan table (src/plan_table.c) and what earlier steps decided, and returns its
   own decision; none keeps state. See docs/DESIGN.md, 'How a plan is made'. */

/* What every step reads: the call, the device's row of the table, and the widest
   work-group the device, the limits and local memory allow. A failing step writes its
   reason to why. */
typedef struct cln_plan_in {
    const cln_profile *p;
    const cln_limits *lim;
    const cln_plan_params *t;
    cln_op op;            /* as asked: CLN_OP_SOFTMAX_AUTO until cln_plan_algorithm */
    clnorm_dtype dtype;
    size_t rows, cols;
    size_t cus;           /* compute units, at least one */
    size_t max_wg;        /* set by cln_plan_capacity */
    cl_ulong local;       /* local memory the plan may use, set by cln_plan_capacity */
    char *why;
    size_t why_len;
} cln_plan_in;

/* How the register form would hold a row. */
typedef struct cln_plan_regs {
    int words;            /* the words variant possible: whole words, none refused */
    int half;             /* the words kernels with half the slots */
    size_t k;             /* elements per work-item of the kernel that would run */
    size_t team;          /* the power-of-two team that holds the row */
    int fits;             /* that team runs, and the row should stay in registers */
} cln_plan_regs;

static int cln_op_is_rms(cln_op op) { return op == CLN_OP_RMSNORM || op == CLN_OP_ADD_RMSNORM; }

/* Elements per trip of a work-item's loop: a CPU build's loops step by vectors; GPU
   builds fall back to scalar loops on views of mixed alignment (cl/rows.cl), so their
   trips count one element each. */
static size_t cln_plan_loop_vec(const cln_plan_in *in)
{
    return in->t->loop_vectors && in->p->vec ? in->p->vec : 1;
}

/* Step 1: the row length and the widest work-group. Local memory must hold the
   scratch of every work-item of a group, plus the flag word. */
static clnorm_status cln_plan_capacity(cln_plan_in *in)
{
    const cln_plan_params *t = in->t;
    /* No buffer holds a longer row, and the size arithmetic below (slices rounded up
       to whole work-groups) must not wrap. */
    if (in->cols > ((size_t)1 << t->cols_max_log2)) {
        snprintf(in->why, in->why_len, "cols = %zu exceeds 2^%u, more than any device holds",
                 in->cols, t->cols_max_log2);
        return CLNORM_INVALID_ARGUMENT;
    }
    size_t max_wg = in->p->max_wg ? in->p->max_wg : 1;
    if (in->lim->max_wg && in->lim->max_wg < max_wg) max_wg = in->lim->max_wg;
    cl_ulong local = in->p->local_mem;
    if (in->lim->max_local && in->lim->max_local < local) local = in->lim->max_local;
    const size_t item_bytes = t->local_floats * sizeof(float);
    size_t local_cap =
        local > t->local_reserve ? (size_t)((local - t->local_reserve) / item_bytes) : 0;
    if (local_cap < max_wg) max_wg = cln_pow2_floor(local_cap ? local_cap : 1);
    if (local_cap == 0) {
        snprintf(in->why, in->why_len, "the device has %llu bytes of local memory, fewer than "
                 "one work-item needs", (unsigned long long)local);
        return CLNORM_UNSUPPORTED;
    }
    in->max_wg = max_wg;
    in->local = local;
    return CLNORM_SUCCESS;
}

clnorm_status cln_plan_forced_path(const cln_profile *p, const cln_limits *lim, char *why,
                                   size_t why_len)
{
    const int force = lim->force_path;
    if ((force == CLN_PATH_SUBGROUP || force == CLN_PATH_NV) && p->best_path == CLN_PATH_LOCAL) {
        snprintf(why, why_len, "CLNORM_REDUCTION=subgroup, but device \"%s\" has neither "
                 "cl_khr_subgroups nor NVIDIA warp shuffles", p->device_name);
        return CLNORM_UNSUPPORTED;
    }
    return CLNORM_SUCCESS;
}

/* Step 2: the reduction path, the device's best unless forced. */
static clnorm_status cln_plan_path(const cln_plan_in *in, cln_path *path)
{
    clnorm_status st = cln_plan_forced_path(in->p, in->lim, in->why, in->why_len);
    if (st) return st;
    *path = in->lim->force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : in->p->best_path;
    return CLNORM_SUCCESS;
}

/* Step 3, part one: whether rows of words take the kernels with half the slots (see
   docs/DESIGN.md, 'Half and full paired kernels'). RMSNorm and 16-bit softmax take
   them wherever a narrow enough team then holds the row; 16-bit softmax holds its
   words unpacked there, so that its weights stay in place. float32 softmax takes them
   where the full kernel would need a wide team, for more work-groups in flight. A
   forced team gets them in every op where it holds the row in half the slots. */
static int cln_plan_half(const cln_plan_in *in, int words, size_t k)
{
    const cln_plan_params *t = in->t;
    const int rms = cln_op_is_rms(in->op);
    const int soft16 = in->dtype != CLNORM_F32 && !rms;
    const int soft32_wide = !rms && in->dtype == CLNORM_F32 &&
                            cln_pow2_ceil(cln_div_up(in->cols, k)) >= t->soft32_half_team_min;
    if (!words || !(rms || soft16 || soft32_wide || in->lim->force_team)) return 0;
    if (cln_pow2_ceil(cln_div_up(in->cols, k / 2)) > t->half_team_max) return 0;
    /* A forced team that holds the row only in all the slots gets the full kernels. */
    return !(in->lim->force_team && in->lim->force_team * (k / 2) < in->cols);
}

/* Step 3: the register form's shape. The words form wants whole words at every row
   start; it is the register form wherever it can run (see docs/DESIGN.md, 'Paired
   register kernels'). CLNORM_VARIANT=reg keeps the plain form. */
static cln_plan_regs cln_plan_registers(const cln_plan_in *in)
{
    const cln_plan_params *t = in->t;
    const cln_limits *lim = in->lim;
    cln_plan_regs r;
    const size_t word = cln_word_size(in->p, lim->word);
    r.words = in->cols % word == 0 && !lim->no_words && lim->force_variant != CLN_VAR_REGISTERS;
    r.k = cln_reg_k(in->op, in->dtype, r.words);
    r.half = cln_plan_half(in, r.words, r.k);
    if (r.half) r.k /= 2;
    r.team = cln_pow2_ceil(cln_div_up(in->cols, r.k));
    r.fits = r.team <= in->max_wg && r.team <= t->reg_team_max;
    /* 16-bit softmax rows that need a wide register team stay in words in the full form
       where the row nearly fills the slots, and stream otherwise; the plain register
       form (rows not of whole words) loads 2 bytes at a time and streams too (see
       docs/DESIGN.md, '16-bit softmax'). */
    const int soft16 = in->dtype != CLNORM_F32 && !cln_op_is_rms(in->op);
    if (t->soft16_reg_team_max && soft16 && r.team > t->soft16_reg_team_max &&
        lim->force_variant < 0 &&
        (!r.words || t->soft16_fill_den * in->cols < t->soft16_fill_num * r.team * r.k))
        r.fits = 0;
    return r;
}

/* Step 4: the softmax algorithm for CLNORM_SOFTMAX_AUTO: three-pass (one read, one
   exp per element) where the row stays in registers on a GPU or in cache on a CPU
   whose work-items vectorise, online (two reads, not three) otherwise. See
   docs/DESIGN.md, 'Softmax algorithm choice'. */
static cln_op cln_plan_algorithm(const cln_plan_in *in, int reg_fits)
{
    if (in->op != CLN_OP_SOFTMAX_AUTO) return in->op;
    const int three = in->t->auto_three_pass || (in->t->auto_three_pass_in_regs && reg_fits);
    return three ? CLN_OP_SOFTMAX_THREE_PASS : CLN_OP_SOFTMAX_ONLINE;
}

/* The work-group of a coop plan: forced, or the table's within the device's. */
static size_t cln_plan_coop_wg(const cln_plan_in *in)
{
    if (in->lim->force_wg) return in->lim->force_wg;
    const size_t wg = in->t->coop_wg;
    return wg > in->max_wg ? cln_pow2_floor(in->max_wg) : wg;
}

/* Elements per work-item a coop slice of groups of wg may hold in local memory: the
   table's, within the local memory beside the pair scratch and the flag word, whole
   CLN_COOP_HOLD_STEP blocks so that any kernel vector divides it. */
static size_t cln_plan_coop_local_elems(const cln_plan_in *in, size_t wg)
{
    const size_t fixed = wg * sizeof(float) * 2 + sizeof(cl_int) + in->t->local_reserve;
    if (!wg || in->local <= fixed) return 0;
    size_t e = (size_t)((in->local - fixed) / (wg * sizeof(float)));
    if (e > in->t->coop_local_elems) e = in->t->coop_local_elems;
    /* The kernel holds CLN_COOP_BATCHES batches of its registers' size there at most
       (cl/coop.cl). */
    if (e > CLN_COOP_BATCHES * CLN_COOP_ELEMS) e = CLN_COOP_BATCHES * CLN_COOP_ELEMS;
    return e / CLN_COOP_HOLD_STEP * CLN_COOP_HOLD_STEP;
}

/* Slices of a coop plan in groups of wg, or 0 where it cannot run: the device must be
   one whose running groups progress side by side (NVIDIA), the op softmax, 16-bit
   rows of x and y at one place in the vector, a row's slices no more than the compute
   units (so that they all run at once) and the groups within the synchronisation
   words' count. Slices hold at most CLN_COOP_ELEMS elements per work-item in
   registers and the table's coop_local_elems in local memory (as many again only,
   where the groups then fit one wave of coop_resident_per_cu a compute unit), and are
   as many as give the table's groups per compute unit. See docs/DESIGN.md, 'One-launch
   split rows'. */
static size_t cln_plan_coop_slices(const cln_plan_in *in, cln_op op, size_t wg, size_t *slice_len)
{
    const cln_plan_params *t = in->t;
    /* Views whose x and y rows sit at different places in the vector cost the kernel
       element-by-element accesses. float32 rows still read once at 4 bytes a load,
       16-bit ones take 2 bytes a load and lose to reading twice in vectors: the
       automatic plan splits or streams those, a forced coop takes any
       (docs/DESIGN.md, 'One-launch split rows'). */
    const int misaligned = in->lim->no_coop && in->dtype != CLNORM_F32 &&
                           in->lim->force_variant != CLN_VAR_COOP;
    if (!t->coop_wg || !in->p->coop || misaligned || !wg || wg > in->max_wg ||
        !cln_has_variant(op, CLN_VAR_COOP) || !in->rows)
        return 0;
    /* Past one batch only where slices of one batch would not fit one wave of the
       table's resident groups (counted for its own work-group) or the compute units. */
    size_t local = cln_plan_coop_local_elems(in, wg);
    if (t->coop_resident_per_cu && wg == t->coop_wg && local > CLN_COOP_ELEMS) {
        const size_t one = cln_div_up(in->cols, wg * 2 * CLN_COOP_ELEMS);
        if (one <= in->cus && one <= t->coop_resident_per_cu * in->cus / in->rows)
            local = CLN_COOP_ELEMS;
    }
    const size_t least = cln_div_up(in->cols, wg * (CLN_COOP_ELEMS + local));
    size_t slices = in->lim->force_slices;
    if (!slices) {
        slices = cln_div_up(t->coop_groups_per_cu * in->cus, in->rows);
        if (slices > in->cus) slices = in->cus;
    }
    if (slices < least) slices = least;
    /* Whole vectors per slice, so every slice of a row starts at the row's place in
       the vector. */
    const size_t step = wg * cln_build_vec(in->p, in->dtype);
    const size_t len = cln_div_up(cln_div_up(in->cols, slices), step) * step;
    slices = cln_div_up(in->cols, len);
    if (slices > in->cus || in->rows * slices > CLN_COOP_GROUPS_MAX) return 0;
    if (slice_len) *slice_len = len;
    return slices;
}

/* Whether the shape can take the coop variant in the table's work-groups. */
static int cln_plan_coop_fits(const cln_plan_in *in, cln_op op)
{
    return cln_plan_coop_slices(in, op, cln_plan_coop_wg(in), NULL) != 0;
}

/* Step 5: the variant. Split when rows are too few to fill the device and long enough
   to share (in one launch, coop, where the device takes it and a row's slices fit
   its compute units); registers when the row fits; else coop where the device takes
   it, stream otherwise. A forced variant the op lacks streams; a forced work-group
   size or team keeps an unforced plan whole. */
static cln_variant cln_plan_variant(const cln_plan_in *in, cln_op op, const cln_plan_regs *r)
{
    const cln_plan_params *t = in->t;
    const cln_limits *lim = in->lim;
    const cln_variant in_regs = r->words ? CLN_VAR_WORDS : CLN_VAR_REGISTERS;
    if (lim->force_variant >= 0) {
        cln_variant var = (cln_variant)lim->force_variant;
        if (var == CLN_VAR_WORDS && !r->words) var = CLN_VAR_REGISTERS; /* odd columns or rows */
        if (var == CLN_VAR_COOP && !cln_plan_coop_fits(in, op))
            var = CLN_VAR_SPLIT; /* a device, shape or view the coop form cannot take */
        return cln_has_variant(op, var) ? var : CLN_VAR_STREAM;
    }
    const int whole = lim->force_wg || lim->force_team;
    const int few = in->rows < t->split_rows_per_cu * in->cus;
    if (few && in->cols >= t->split_cols_min && cln_has_variant(op, CLN_VAR_SPLIT)) {
        if (!whole) return cln_plan_coop_fits(in, op) ? CLN_VAR_COOP : CLN_VAR_SPLIT;
        return r->fits && cln_has_variant(op, CLN_VAR_REGISTERS) ? in_regs : CLN_VAR_STREAM;
    }
    if (t->auto_registers && r->fits && cln_has_variant(op, CLN_VAR_REGISTERS)) {
        /* The plain register form loads element by element; from a few thousand
           columns the one launch, a slice a row in vectors, reads such rows faster
           (6706x5003 on an H100: 90 % of the copy against 57 %). Views of x and y out
           of step in the vector stay: the one launch would load them element by
           element too. */
        const size_t unpaired = t->coop_unpaired_cols_min;
        if (!r->words && unpaired && in->cols >= unpaired && !lim->no_coop && !whole &&
            cln_plan_coop_fits(in, op))
            return CLN_VAR_COOP;
        return in_regs;
    }
    /* Rows the registers cannot hold: the streaming kernel reads each twice, the one
       launch once, however many rows there are (1.5-1.7x on an H100 past 256 rows of
       128256 columns: docs/DESIGN.md, 'One-launch split rows'). */
    if (t->coop_long_rows && !whole && cln_plan_coop_fits(in, op)) return CLN_VAR_COOP;
    return CLN_VAR_STREAM;
}

/* Step 6a: the work-group of a split plan, one team. */
static size_t cln_plan_split_wg(const cln_plan_in *in)
{
    if (in->lim->force_wg) return in->lim->force_wg;
    return in->t->split_wg > in->max_wg ? cln_pow2_floor(in->max_wg) : in->t->split_wg;
}

/* Step 6b: the team within a forced work-group: the streaming team, narrowed to a
   power of two that divides the group. */
static size_t cln_plan_forced_team(const cln_plan_in *in, size_t wg)
{
    if (in->lim->force_team) return in->lim->force_team;
    size_t team = cln_pow2_ceil(cln_div_up(in->cols, in->t->stream_items));
    if (team > wg) team = wg;
    while (wg % team) team /= 2; /* a power of two: 1 always divides */
    return team;
}

/* Step 6c: a CPU's group. CPUs run a work-group on one thread, its work-items as loop
   iterations: one work-item per row, enough rows per group to amortise the barriers,
   and groups for every core; a few long rows share their work among a handful of
   work-items instead. Where work-items vectorise their own loops, a group's rows stay
   in cache between passes; where they are SIMD lanes, long rows get a wide team. See
   docs/DESIGN.md, 'CPU plans'. */
static void cln_plan_cpu_group(const cln_plan_in *in, size_t *wg, size_t *team_out)
{
    const cln_plan_params *t = in->t;
    const size_t per_cu = in->rows / (t->cpu_groups_per_cu * in->cus);
    size_t rpw = cln_pow2_floor(per_cu ? per_cu : 1);
    if (rpw > t->cpu_rows_max) rpw = t->cpu_rows_max;
    const size_t row_bytes = in->cols * cln_dtype_size(in->dtype);
    const size_t bytes = t->cpu_group_bytes;
    const int long_rows = bytes && row_bytes > bytes;
    while (bytes && rpw > 1 && rpw * row_bytes > bytes) rpw /= 2;
    const size_t least = t->cpu_group_items_min;
    size_t team = least / (rpw < least ? rpw : least);
    if (long_rows && team > t->cpu_long_row_team) team = t->cpu_long_row_team;
    if (t->cpu_wide_cols && in->cols >= t->cpu_wide_cols) {
        team = t->cpu_wide_team;
        if (rpw > t->cpu_wide_rows_max) rpw = t->cpu_wide_rows_max;
    }
    const size_t vec = in->p->vec ? in->p->vec : 1;
    const size_t chunks = cln_div_up(in->cols, t->cpu_chunk_vectors * vec);
    while (team > 1 && team > chunks) team /= 2;
    while (team * rpw > in->max_wg && rpw > 1) rpw /= 2;
    while (team * rpw > in->max_wg && team > 1) team /= 2;
    /* Enough work-items for the vector lanes; spare rows cost nothing. Not for long
       rows, whose work-items vectorise their own loops. */
    while (!long_rows && team * rpw < least && team * rpw * 2 <= in->max_wg) rpw *= 2;
    *team_out = team;
    *wg = team * rpw;
}

/* Step 6d: the team by columns (GPUs, and CPUs given a forced team). A GPU register
   plan fills every slot: its loads all go out at once, so bytes in flight per
   work-item set the bandwidth, even in teams narrower than a warp (see docs/DESIGN.md,
   'Work-items per row on GPUs'). Streaming teams take a few elements per work-item,
   wider where rows are few. */
static clnorm_status cln_plan_column_team(const cln_plan_in *in, int in_regs, size_t reg_team,
                                          size_t *out)
{
    const cln_plan_params *t = in->t;
    const size_t forced = in->lim->force_team;
    size_t team;
    if (forced) {
        team = forced;
    } else if (in_regs && t->reg_team_exact) {
        team = reg_team;
    } else {
        const int few = in->rows < t->stream_few_rows_per_cu * in->cus;
        const size_t cap = few ? t->stream_team_max_few : t->stream_team_max;
        team = cln_pow2_ceil(cln_div_up(in->cols, t->stream_items));
        if (team > cap) team = cap;
        if (in_regs && team < reg_team) team = reg_team;
    }
    if (!forced && team > in->max_wg) team = cln_pow2_floor(in->max_wg);
    if (team > in->max_wg) {
        snprintf(in->why, in->why_len, "CLNORM_ROW_THREADS=%zu exceeds the %zu work-items "
                 "this device and kernel allow", team, in->max_wg);
        return CLNORM_INVALID_ARGUMENT;
    }
    *out = team;
    return CLNORM_SUCCESS;
}

/* Step 6e: rows per group for a team by columns: whole rows fill a group of about
   the table's group_items, at least the preferred multiple even where rows are few:
   spare rows cost little. */
static size_t cln_plan_rows_per_group(const cln_plan_in *in, size_t team)
{
    size_t target = in->t->group_items;
    if (target > in->max_wg) target = in->max_wg;
    size_t rpw = target > team ? target / team : 1;
    const size_t rows_p2 = cln_pow2_ceil(in->rows ? in->rows : 1);
    if (rpw > rows_p2) rpw = rows_p2;
    size_t min_wg = in->p->pref_multiple ? in->p->pref_multiple : 1;
    if (min_wg > target) min_wg = target;
    while (team * rpw < min_wg && team * rpw * 2 <= target) rpw *= 2;
    return rpw;
}

/* Step 6: work-group size and team (work-items per row), then the checks of forced
   sizes. */
static clnorm_status cln_plan_team(const cln_plan_in *in, cln_variant var,
                                   const cln_plan_regs *r, size_t *wg, size_t *team)
{
    const cln_limits *lim = in->lim;
    if (var == CLN_VAR_SPLIT) {
        *wg = *team = cln_plan_split_wg(in);
    } else if (var == CLN_VAR_COOP) {
        *wg = *team = cln_plan_coop_wg(in);
    } else if (lim->force_wg) {
        *wg = lim->force_wg;
        *team = cln_plan_forced_team(in, *wg);
    } else if (in->t->cpu_groups && !lim->force_team) {
        cln_plan_cpu_group(in, wg, team);
    } else {
        const int in_regs = var == CLN_VAR_REGISTERS || var == CLN_VAR_WORDS;
        clnorm_status st = cln_plan_column_team(in, in_regs, r->team, team);
        if (st) return st;
        *wg = *team * cln_plan_rows_per_group(in, *team);
    }
    if (lim->force_wg && *wg > in->max_wg) {
        snprintf(in->why, in->why_len, "CLNORM_WORK_GROUP=%zu exceeds the %zu work-items this "
                 "device and kernel allow (local memory %llu bytes)", *wg, in->max_wg,
                 (unsigned long long)in->local);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (*team == 0 || *wg % *team) {
        snprintf(in->why, in->why_len, "CLNORM_ROW_THREADS=%zu does not divide the work-group "
                 "size %zu", *team, *wg);
        return CLNORM_INVALID_ARGUMENT;
    }
    return CLNORM_SUCCESS;
}

/* Step 7: a device with a loop-trip limit (see docs/DESIGN.md, 'Driver quirks'):
   widen the team, then split the row, so that no work-item's loop runs longer than
   the limit. A forced shape that loops too long is an error. */
static clnorm_status cln_plan_loop_limit(const cln_plan_in *in, cln_op op, cln_variant *var,
                                         size_t *wg, size_t *team)
{
    const cln_profile *p = in->p;
    if (!p->loop_limit || *var == CLN_VAR_SPLIT || *var == CLN_VAR_COOP) return CLNORM_SUCCESS;
    const size_t vec = cln_plan_loop_vec(in);
    if (in->lim->force_wg || in->lim->force_team) {
        if (cln_div_up(in->cols, *team * vec) <= p->loop_limit) return CLNORM_SUCCESS;
        snprintf(in->why, in->why_len, "with %zu work-items per row, rows of %zu columns "
                 "exceed what device \"%s\" can loop over (%u trips per work-item)", *team,
                 in->cols, p->device_name, p->loop_limit);
        return CLNORM_UNSUPPORTED;
    }
    while (cln_div_up(in->cols, *team * vec) > p->loop_limit && *team * 2 <= in->max_wg)
        *team *= 2;
    if (*wg < *team) *wg = *team;
    *wg = *wg / *team * *team;
    if (cln_div_up(in->cols, *team * vec) <= p->loop_limit) return CLNORM_SUCCESS;
    if (!cln_has_variant(op, CLN_VAR_SPLIT)) {
        snprintf(in->why, in->why_len, "rows of %zu columns exceed what device \"%s\" can loop "
                 "over (%u trips per work-item)", in->cols, p->device_name, p->loop_limit);
        return CLNORM_UNSUPPORTED;
    }
    *var = CLN_VAR_SPLIT;
    *wg = *team = cln_pow2_floor(in->max_wg);
    return CLNORM_SUCCESS;
}

/* Step 9: slices of a split plan: enough groups for the table's groups per compute
   unit over all rows, no fewer elements per work-item than its least, and enough
   slices for a loop-trip limit; a slice is whole work-group strides (see
   docs/DESIGN.md, 'Split rows'). */
static void cln_plan_split(const cln_plan_in *in, size_t wg, cln_plan *out)
{
    const cln_profile *p = in->p;
    size_t slices = in->lim->force_slices;
    if (!slices) {
        slices = cln_div_up(in->t->split_groups_per_cu * in->cus, in->rows ? in->rows : 1);
        const size_t most = in->cols / (wg * in->t->split_items_min);
        if (slices > most) slices = most;
    }
    if (slices < 1) slices = 1;
    if (p->loop_limit) {
        const size_t need = cln_div_up(in->cols, wg * cln_plan_loop_vec(in) * p->loop_limit);
        if (slices < need) slices = need;
    }
    if (slices > in->cols) slices = in->cols;
    const size_t len = cln_div_up(in->cols, slices);
    out->slice_len = cln_div_up(len, wg) * wg;
    out->slices = cln_div_up(in->cols, out->slice_len);
    out->groups = in->rows * out->slices;
}

/* Step 10: local memory per group: the kernels' scratch, then one int, RMSNorm's flag
   word (CLN_FLAG in cl/). */
static size_t cln_plan_local_bytes(cln_op op, cln_variant var, size_t wg)
{
    return wg * sizeof(float) * cln_local_floats(op, var) + sizeof(cl_int);
}

/* Step 11: PoCL 4+ compiles the smallest groups by replicating work-items, and that
   path cannot expand the __pocl_work_group_alloca its sub-group builtins call: the
   kernel then fails to load (docs/DESIGN.md, 'Driver quirks'). Such groups gain
   nothing from sub-groups anyway. */
static cln_path cln_plan_driver_path(const cln_plan_in *in, size_t wg, cln_path path)
{
    const cln_plan_params *t = in->t;
    if (in->p->pocl_major >= t->pocl_tiny_major && wg <= t->pocl_tiny_wg) return CLN_PATH_LOCAL;
    return path;
}

size_t cln_plan_paths(const cln_profile *p, const cln_limits *lim, cln_path out[2])
{
    cln_plan_in in = {.p = p, .lim = lim, .t = cln_plan_params_for(p)};
    size_t n = 0;
    out[n++] = lim->force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : p->best_path;
    /* The smallest group shows whether the driver step can move a plan off it. */
    cln_path tiny = cln_plan_driver_path(&in, 1, out[0]);
    if (tiny != out[0]) out[n++] = tiny;
    return n;
}

clnorm_status cln_plan_make(const cln_profile *p, const cln_limits *lim, cln_op op,
                            clnorm_dtype dtype, size_t rows, size_t cols, cln_plan *out,
                            char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    cln_plan_in in = {.p = p, .lim = lim, .t = cln_plan_params_for(p), .op = op,
                      .dtype = dtype, .rows = rows, .cols = cols,
                      .cus = p->compute_units ? p->compute_units : 1,
                      .why = why, .why_len = why_len};
    clnorm_status st = cln_plan_capacity(&in);
    if (!st) st = cln_plan_path(&in, &out->path);
    if (st) return st;
    const cln_plan_regs regs = cln_plan_registers(&in);
    out->op = cln_plan_algorithm(&in, regs.fits);
    out->online = out->op == CLN_OP_SOFTMAX_ONLINE;
    cln_variant var = cln_plan_variant(&in, out->op, &regs);
    size_t wg, team;
    st = cln_plan_team(&in, var, &regs, &wg, &team);
    if (!st) st = cln_plan_loop_limit(&in, out->op, &var, &wg, &team);
    if (st) return st;
    /* Step 8: a forced shape whose row does not fit the registers streams instead. */
    if ((var == CLN_VAR_REGISTERS || var == CLN_VAR_WORDS) && team * regs.k < cols)
        var = CLN_VAR_STREAM;
    out->variant = var;
    out->words_half = var == CLN_VAR_WORDS && regs.half;
    out->wg = wg;
    out->team = team;
    out->rows_per_wg = wg / team;
    if (var == CLN_VAR_SPLIT) {
        cln_plan_split(&in, wg, out);
    } else if (var == CLN_VAR_COOP) {
        out->slices = cln_plan_coop_slices(&in, out->op, wg, &out->slice_len);
        out->groups = rows * out->slices;
    } else {
        out->groups = rows ? cln_div_up(rows, out->rows_per_wg) : 0;
    }
    out->local_bytes = cln_plan_local_bytes(out->op, var, wg);
    if (var == CLN_VAR_COOP && out->slices) /* the part of a slice past the registers */
        out->local_bytes += wg * sizeof(float) * cln_coop_held(out->slice_len / wg);
    out->path = cln_plan_driver_path(&in, wg, out->path);
    cln_kernels(out); /* step 12: the kernel of each stage */
    /* Step 13: the launch stays within the device and the limits, whatever the steps
       above decided. */
    return cln_plan_check(p, lim, out, why, why_len);
}
