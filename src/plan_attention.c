/* The attention plan (plan_attention.h): pure, no device, no globals. The kernel's
   shape is in cl/attention.cl; docs/DESIGN.md, 'Attention', says why each number. */
#include "plan_attention.h"
#include "plan.h"
#include "types.h"

#include <stdio.h>
#include <string.h>

/* Keys per tile and work-items per group where the head allows: 128 on GPUs (four
   warps, the V row of a 128-wide head in float4 units across 32 of them), 64 on
   CPUs, whose work-items run one after another or as SIMD lanes. */
#define CLN_ATT_WG_GPU 128
#define CLN_ATT_WG_CPU 64
/* Split-K aims at this many work-groups per compute unit where the (batch entry, kv
   head, query block) groups are fewer: on GPUs enough groups in flight to cover the
   memory's latency, on CPUs one per core is enough. */
#define CLN_ATT_GROUPS_PER_CU_GPU 8
#define CLN_ATT_GROUPS_PER_CU_CPU 2
/* The CPU form: work-items a compute unit where the (batch entry, kv head, query
   block) items are fewer (a core takes the next as one finishes, so a few each even
   out uneven ones), the fewest keys a chunk (below that the second launch and its
   records cost more than the spread gains), and work-items a group where the device
   runs them as SIMD lanes. */
#define CLN_ATTC_ITEMS_PER_CU 4
#define CLN_ATTC_MIN_CHUNK 256
#define CLN_ATTC_LANES 8
/* Bytes of local memory a plan leaves unused, as plan.c does. */
#define CLN_ATT_LOCAL_RESERVE 16

static size_t cln_pow2_ceil(size_t n)
{
    size_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

static size_t cln_div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* Local memory of one group: q of the block, the scores, three floats per query and
   the reduction's 2 wg. */
static size_t cln_att_local(size_t qblock, size_t wg, size_t head_dim)
{
    return (qblock * head_dim + qblock * wg + 3 * qblock + 2 * wg) * sizeof(float);
}

/* Loop trips of one work-item per tile, for devices with a loop limit: the scoring
   passes over the units, the reduction's and the weights' loops, the keys of the
   weighted sum, and the reduction tree. */
static size_t cln_att_tile_trips(size_t qblock, size_t wg, size_t units)
{
    size_t trips = cln_div_up(qblock, CLN_ATT_QS) * (units + 1) + 2 * (wg / (wg / qblock)) + wg;
    for (size_t n = wg; n > 1; n >>= 1) trips++;
    return trips + 8;
}

/* Counted for llvmpipe, the device with a loop limit, where the kernel runs on scalars
   and the loops over a pass's CLN_ATTC_R queries are unrolled: the set-up and the
   results, a trip per column and query each, and per key and pass 2.5 trips per
   column (a score's and a weighted sum's take two) and 32 for the rest. Measured
   there with head_dim 64 and 4 queries: 342 keys a work-item ran whole, 410 stopped
   early (160 to 191 trips a key); this counts 192. */
size_t cln_att_cpu_trips(size_t nq, size_t head_dim, size_t keys)
{
    const size_t passes = cln_div_up(nq, CLN_ATTC_R), blocks = cln_div_up(keys, CLN_ATTC_KB);
    return 2 * passes * CLN_ATTC_R * (head_dim + 1) + 16 +
           blocks * passes * CLN_ATTC_KB * (5 * head_dim / 2 + 32);
}

/* The CPU form: no local memory and no barrier, so a work-item per (batch entry, kv
   head, query block, chunk); chunks where those are fewer than CLN_ATTC_ITEMS_PER_CU
   a compute unit, each at least CLN_ATTC_MIN_CHUNK keys; then as many more as a loop
   limit asks. */
static clnorm_status cln_att_plan_cpu(const cln_profile *p, const cln_limits *lim,
                                      const cln_att_shape *s, cln_att_plan *out, char *why,
                                      size_t why_len)
{
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    out->cpu = 1;
    out->units = s->head_dim;
    /* Work-items as one thread's loop iterations (the device vectorises each
       work-item's code, PoCL) gain nothing from company; where the device runs them as
       SIMD lanes (llvmpipe), a group fills the lanes. */
    size_t wg = p->simd_lanes ? CLN_ATTC_LANES : 1;
    if (lim->force_wg) {
        wg = lim->force_wg;
        if (wg > max_wg) {
            snprintf(why, why_len, "CLNORM_WORK_GROUP=%zu: device \"%s\" allows %zu", wg,
                     p->device_name, max_wg);
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    while (wg > max_wg) wg >>= 1;
    out->wg = wg;
    const size_t gq = s->q_heads / s->kv_heads * (s->q_len ? s->q_len : 1);
    out->qblocks = cln_div_up(gq, CLN_ATTC_QMAX);
    out->qblock = cln_div_up(gq, out->qblocks);

    const size_t keys = s->kv_len ? s->kv_len : 1;
    size_t max_keys = keys;
    if (p->loop_limit) {
        /* loop_limit is per loop of a kernel of four (src/profile.c); the form's
           loops share the shader's whole budget. */
        size_t blocks = 1;
        while (blocks * CLN_ATTC_KB < keys &&
               cln_att_cpu_trips(out->qblock, s->head_dim, (blocks + 1) * CLN_ATTC_KB) <= 4 * (size_t)p->loop_limit)
            blocks++;
        max_keys = blocks * CLN_ATTC_KB;
    }
    const size_t base = (s->batch ? s->batch : 1) * s->kv_heads * out->qblocks;
    if (lim->force_slices) {
        const size_t want = lim->force_slices < keys ? lim->force_slices : keys;
        out->chunk_len = cln_div_up(keys, want);
        if (out->chunk_len > max_keys) {
            snprintf(why, why_len, "CLNORM_SPLIT=%zu leaves %zu keys per work-item, more than "
                     "device \"%s\" may loop over (%zu)", lim->force_slices, out->chunk_len,
                     p->device_name, max_keys);
            return CLNORM_INVALID_ARGUMENT;
        }
    } else {
        const size_t target = (size_t)p->compute_units * CLN_ATTC_ITEMS_PER_CU;
        size_t want = base >= target ? 1 : cln_div_up(target, base);
        const size_t most = cln_div_up(keys, CLN_ATTC_MIN_CHUNK);
        if (want > most) want = most;
        if (cln_div_up(keys, want) > max_keys) want = cln_div_up(keys, max_keys);
        /* Whole key blocks a chunk, where that keeps within the limit. */
        out->chunk_len = cln_div_up(keys, want);
        const size_t whole = cln_div_up(out->chunk_len, CLN_ATTC_KB) * CLN_ATTC_KB;
        if (whole <= max_keys) out->chunk_len = whole;
    }
    out->chunks = cln_div_up(keys, out->chunk_len);
    if (out->chunk_len > 0xffffffffu || out->chunks > 0xffffffffu) {
        snprintf(why, why_len, "kv_len %zu is too long", s->kv_len);
        return CLNORM_INVALID_ARGUMENT;
    }
    out->items = base * out->chunks;
    out->groups = cln_div_up(out->items, wg);
    out->reduce_wg = cln_att_merge_wg(p, lim, s->head_dim);
    out->part_bytes = out->chunks > 1 ? (s->batch * s->q_heads * s->q_len) * out->chunks *
                                            (s->head_dim + 2) * sizeof(float)
                                      : 0;
    return CLNORM_SUCCESS;
}

size_t cln_att_merge_wg(const cln_profile *p, const cln_limits *lim, size_t head_dim)
{
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    size_t wg = cln_pow2_ceil(head_dim < 32 ? 32 : head_dim);
    if (wg > 256) wg = 256;
    while (wg > max_wg) wg >>= 1;
    return wg ? wg : 1;
}

clnorm_status cln_att_plan_make(const cln_profile *p, const cln_limits *lim,
                                const cln_att_shape *s, cln_att_plan *out, char *why,
                                size_t why_len)
{
    memset(out, 0, sizeof *out);
    const int gpu = !(p->type & CL_DEVICE_TYPE_CPU);
    const int force = lim->force_path;
    clnorm_status st = cln_plan_forced_path(p, lim, why, why_len);
    if (st) return st;
    out->path = force == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : p->best_path;
    if (s->head_dim == 0 || s->head_dim > CLN_ATT_HEAD_DIM_MAX || s->kv_heads == 0 ||
        s->q_heads % s->kv_heads) {
        snprintf(why, why_len, "head_dim %zu, q_heads %zu, kv_heads %zu", s->head_dim,
                 s->q_heads, s->kv_heads);
        return CLNORM_INVALID_ARGUMENT;
    }
    /* The form: CPU devices get the CPU form; CLNORM_VARIANT=reg forces it and
       stream the work-group form anywhere (the Oclgrind sweep runs both). */
    const int cpu = lim->force_variant == CLN_VAR_REGISTERS ? 1
                    : lim->force_variant == CLN_VAR_STREAM ? 0 : !gpu;
    if (cpu) return cln_att_plan_cpu(p, lim, s, out, why, why_len);
    out->units = s->vec4 ? s->head_dim / 4 : s->head_dim;

    /* Work-group: the device class's size, wide enough that CLN_ATT_UPI units per
       work-item cover the row, within the device's (or the forced) limit. */
    size_t max_wg = p->max_wg;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    const size_t need = cln_pow2_ceil(cln_div_up(out->units, CLN_ATT_UPI));
    size_t wg = gpu ? CLN_ATT_WG_GPU : CLN_ATT_WG_CPU;
    if (wg < need) wg = need;
    while (wg > max_wg && wg > need) wg >>= 1;
    if (lim->force_wg) {
        wg = lim->force_wg;
        if ((wg & (wg - 1)) || wg < need || wg > max_wg) {
            snprintf(why, why_len, "CLNORM_WORK_GROUP=%zu: attention needs a power of two "
                     "from %zu (head_dim %zu) to %zu", wg, need, s->head_dim, max_wg);
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    if (wg > max_wg) {
        snprintf(why, why_len, "head_dim %zu needs work-groups of %zu, device \"%s\" allows %zu",
                 s->head_dim, wg, p->device_name, max_wg);
        return CLNORM_UNSUPPORTED;
    }
    out->wg = wg;

    /* Queries per group: as many as the columns' layout and local memory allow, up to
       the queries of a kv head, trying one and two units per work-item. */
    cl_ulong local = p->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    const size_t avail = local > CLN_ATT_LOCAL_RESERVE ? (size_t)(local - CLN_ATT_LOCAL_RESERVE) : 0;
    const size_t gq = s->q_heads / s->kv_heads * (s->q_len ? s->q_len : 1);
    const size_t qcap = cln_pow2_ceil(gq) < wg ? cln_pow2_ceil(gq) : wg;
    out->qblock = 0;
    for (size_t upi = 1; upi <= CLN_ATT_UPI; upi++) {
        size_t cw = cln_pow2_ceil(cln_div_up(out->units, upi));
        if (cw > wg) cw = wg;
        if (cln_div_up(out->units, cw) > CLN_ATT_UPI) continue;
        const size_t qmax = wg / cw * CLN_ATT_QPI;
        size_t qb = qcap < qmax ? qcap : qmax;
        while (qb > 1 && cln_att_local(qb, wg, s->head_dim) > avail) qb >>= 1;
        if (cln_att_local(qb, wg, s->head_dim) > avail) continue;
        if (qb > out->qblock) {
            out->qblock = qb;
            out->col_lanes = cw;
        }
    }
    if (!out->qblock) {
        snprintf(why, why_len, "attention with head_dim %zu in work-groups of %zu needs %zu "
                 "bytes of local memory, device \"%s\" has %llu", s->head_dim, wg,
                 cln_att_local(1, wg, s->head_dim), p->device_name, (unsigned long long)local);
        return CLNORM_UNSUPPORTED;
    }
    out->qblocks = cln_div_up(gq, out->qblock);
    out->local_bytes = cln_att_local(out->qblock, wg, s->head_dim);

    /* Chunks: forced, else enough groups to fill the device, at least a tile each;
       then as many more as a loop limit asks. */
    const size_t keys = s->kv_len ? s->kv_len : 1;
    const size_t tiles = cln_div_up(keys, wg);
    const size_t base = (s->batch ? s->batch : 1) * s->kv_heads * out->qblocks;
    size_t max_tiles = tiles;
    if (p->loop_limit) {
        const size_t trips = cln_att_tile_trips(out->qblock, wg, out->units);
        max_tiles = 2 * (size_t)p->loop_limit / trips;
        if (max_tiles < 1) max_tiles = 1;
    }
    if (lim->force_slices) {
        size_t want = lim->force_slices < keys ? lim->force_slices : keys;
        out->chunk_len = cln_div_up(keys, want);
        if (cln_div_up(out->chunk_len, wg) > max_tiles) {
            snprintf(why, why_len, "CLNORM_SPLIT=%zu leaves %zu keys per work-group, more than "
                     "device \"%s\" may loop over (%zu)", lim->force_slices, out->chunk_len,
                     p->device_name, max_tiles * wg);
            return CLNORM_INVALID_ARGUMENT;
        }
    } else {
        const size_t target = (size_t)p->compute_units *
                              (gpu ? CLN_ATT_GROUPS_PER_CU_GPU : CLN_ATT_GROUPS_PER_CU_CPU);
        size_t want = base >= target ? 1 : cln_div_up(target, base);
        if (want > tiles) want = tiles;
        if (cln_div_up(tiles, want) > max_tiles) want = cln_div_up(tiles, max_tiles);
        out->chunk_len = cln_div_up(tiles, want) * wg;
    }
    out->chunks = cln_div_up(keys, out->chunk_len);
    if (out->chunk_len > 0xffffffffu || out->chunks > 0xffffffffu) {
        snprintf(why, why_len, "kv_len %zu is too long", s->kv_len);
        return CLNORM_INVALID_ARGUMENT;
    }
    out->groups = base * out->chunks;
    out->reduce_wg = cln_att_merge_wg(p, lim, s->head_dim);
    out->part_bytes = out->chunks > 1 ? (s->batch * s->q_heads * s->q_len) * out->chunks *
                                            (s->head_dim + 2) * sizeof(float)
                                      : 0;
    return CLNORM_SUCCESS;
}
