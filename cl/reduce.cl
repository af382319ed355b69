/* The reduction layer shared by every kernel.
 *
 * A work-group holds wg / team rows; the `team` consecutive work-items of a row
 * reduce together. Every helper is called by every work-item of the work-group
 * (barriers inside), returns the team's result to every member, and ends with a
 * barrier so that the caller may reuse the scratch at once.
 *
 * CLN_PATH selects the fast path compiled in: 0 local memory only, 1 cl_khr_subgroups
 * collectives, 2 NVIDIA warp shuffles (inline PTX). The fast paths fall back to the
 * local-memory tree at run time for shapes they do not fit; the choice depends only
 * on (wg, team), so it is uniform over the work-group.
 */
#ifndef CLN_PATH
#define CLN_PATH 0
#endif
#if CLN_PATH == 1
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
/* For testing only: the fallback from a fast path whose program does not build
   (CLNORM_TEST_FAULTS=break-fast-path, src/faults.h). */
#if defined(CLN_BREAK_FAST_PATH) && CLN_PATH != 0
#error "CLN_BREAK_FAST_PATH: this fast path's program is broken on purpose"
#endif

/* The exponential the weights take. In 16-bit storage, and on NVIDIA's path in every
   storage, it is exp2 of the difference scaled by log2(e): the scaling's rounding costs
   at most 6e-6 relative (at the bottom of float's range), far below a 16-bit step and
   within float32's 2e-5, and NVIDIA's exp takes nine instructions where exp2 takes six
   (docs/DESIGN.md, '16-bit softmax'). float32 elsewhere keeps exp's accuracy. */
#define CLN_EXP2 (CLN_DTYPE != 0 || CLN_PATH == 2)
#if CLN_EXP2
#define CLN_EXP(d) exp2((d) * M_LOG2E_F)
#else
#define CLN_EXP(d) exp(d)
#endif

/* Weight of a value (or a part's maximum) x under the maximum m: exp(x - m), but 0 for
   an all -inf part and 1 for x == m == +inf, so -inf - (-inf) and inf - inf are never
   formed. A NaN x gives NaN, which then poisons the sum as the contract wants. With
   host_exp (a constant argument, so the test folds away) float32 storage takes exp, as
   the host's clnorm_stats_merge does, where NVIDIA's path would take exp2. */
CLN_INLINE float cln_w_by(float x, float m, bool host_exp)
{
    if (x == m) return m == -INFINITY ? 0.0f : 1.0f;
    return host_exp && CLN_DTYPE == 0 ? exp(x - m) : CLN_EXP(x - m);
}
CLN_INLINE float cln_w(float x, float m) { return cln_w_by(x, m, false); }

/* cln_w where m is known finite (a row-uniform test): x - m is then never inf - inf,
   and exp gives 1 at x == m, 0 at x == -inf and NaN at a NaN by itself. The register
   kernels hoist that test out of their loops to spare a compare and a select per
   element. */
CLN_INLINE float cln_w_fin(float x, float m) { return CLN_EXP(x - m); }

/* Merges part (mb, lb) into (m, l). fmax ignores NaN; a NaN maximum is carried by l.
   host_exp: as in cln_w_by. */
CLN_INLINE void cln_merge_by(float *m, float *l, float mb, float lb, bool host_exp)
{
    float mm = fmax(*m, mb);
    *l = *l * cln_w_by(*m, mm, host_exp) + lb * cln_w_by(mb, mm, host_exp);
    *m = mm;
}
CLN_INLINE void cln_merge(float *m, float *l, float mb, float lb)
{
    cln_merge_by(m, l, mb, lb, false);
}

/* clnorm_stats_merge on the device (src/merge.c): cln_merge with the host's exp,
   except that a NaN in either part gives (NaN, NaN) (fmax would drop it from m). The
   split plans' merge of their partials and clnorm_stats_merge_rows both take it, so
   that the device's merges and the host's agree. */
CLN_INLINE void cln_stats_merge(float *m, float *l, float mb, float lb)
{
    const bool nan = isnan(*m) || isnan(*l) || isnan(mb) || isnan(lb);
    cln_merge_by(m, l, mb, lb, true);
    if (nan) *m = *l = NAN;
}

#define CLN_OP_SUM(a, b) ((a) + (b))
#define CLN_OP_MAX(a, b) fmax((a), (b))

/* Local-memory tree over each team; works for any team size, not only powers of two.
   The trip count depends on team alone, so every work-item meets every barrier. */
#define CLN_DEFINE_LOCAL(NAME, OP)                                                  \
    CLN_INLINE float NAME(float v, __local float *s, uint lid, uint lane, uint team)    \
    {                                                                                \
        s[lid] = v;                                                                  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        for (uint n = team; n > 1;) {                                                \
            uint h = (n + 1) >> 1;                                                   \
            if (lane + h < n) s[lid] = OP(s[lid], s[lid + h]);                       \
            barrier(CLK_LOCAL_MEM_FENCE);                                            \
            n = h;                                                                   \
        }                                                                            \
        float r = s[lid - lane];                                                     \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        return r;                                                                    \
    }
CLN_DEFINE_LOCAL(cln_local_sum, CLN_OP_SUM)
CLN_DEFINE_LOCAL(cln_local_max, CLN_OP_MAX)

CLN_INLINE void cln_local_pair(float *m, float *l, __local float *sm, __local float *sl,
                           uint lid, uint lane, uint team)
{
    sm[lid] = *m;
    sl[lid] = *l;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint n = team; n > 1;) {
        uint h = (n + 1) >> 1;
        if (lane + h < n) {
            float mm = sm[lid], ll = sl[lid];
            cln_merge(&mm, &ll, sm[lid + h], sl[lid + h]);
            sm[lid] = mm;
            sl[lid] = ll;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        n = h;
    }
    *m = sm[lid - lane];
    *l = sl[lid - lane];
    barrier(CLK_LOCAL_MEM_FENCE);
}

#if CLN_PATH == 2
/* NVIDIA: a warp is 32 consecutive work-items of a 1-D work-group. */
CLN_INLINE float cln_shfl_xor(float v, uint mask)
{
    float r;
#ifdef CLN_NV_SYNC
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
                 : "=f"(r) : "f"(v), "r"(mask));
#else
    asm volatile("shfl.bfly.b32 %0, %1, %2, 0x1f;" : "=f"(r) : "f"(v), "r"(mask));
#endif
    return r;
}

/* Butterfly over aligned groups of `width` lanes (a power of two up to 32): every lane
   ends with its group's result. */
#define CLN_DEFINE_WARP(NAME, OP)                                                   \
    CLN_INLINE float NAME(float v, uint width)                                           \
    {                                                                                \
        for (uint k = width >> 1; k > 0; k >>= 1) v = OP(v, cln_shfl_xor(v, k));     \
        return v;                                                                    \
    }
CLN_DEFINE_WARP(cln_warp_sum, CLN_OP_SUM)
CLN_DEFINE_WARP(cln_warp_max, CLN_OP_MAX)

CLN_INLINE void cln_warp_pair(float *m, float *l, uint width)
{
    for (uint k = width >> 1; k > 0; k >>= 1) {
        float mb = cln_shfl_xor(*m, k), lb = cln_shfl_xor(*l, k);
        cln_merge(m, l, mb, lb);
    }
}

/* 0: local tree; 1: team inside one warp; 2: team of whole warps. */
CLN_INLINE uint cln_nv_mode(uint team)
{
    if (get_local_size(0) % 32u != 0) return 0;
    if (team <= 32u && (team & (team - 1u)) == 0) return 1;
    if (team % 32u == 0 && team / 32u <= 32u) return 2;
    return 0;
}

/* Second level: each warp reads all warp results of its team from local memory
   (after the barrier) and reduces them itself, with the identity in unused lanes. */
#define CLN_DEFINE_REDUCE(NAME, LOCAL, WARP, OP, IDENT)                             \
    CLN_INLINE float NAME(float v, __local float *s, uint lid, uint lane, uint team)    \
    {                                                                                \
        uint mode = cln_nv_mode(team);                                               \
        if (mode == 0) return LOCAL(v, s, lid, lane, team);                          \
        if (mode == 1) return WARP(v, team);                                         \
        v = WARP(v, 32u);                                                            \
        if ((lid & 31u) == 0) s[lid >> 5] = v;                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        uint nw = team >> 5, w0 = (lid - lane) >> 5, wl = lid & 31u;                 \
        float t = wl < nw ? s[w0 + wl] : (IDENT);                                    \
        t = WARP(t, 32u);                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        return t;                                                                    \
    }
CLN_DEFINE_REDUCE(cln_sum, cln_local_sum, cln_warp_sum, CLN_OP_SUM, 0.0f)
CLN_DEFINE_REDUCE(cln_max, cln_local_max, cln_warp_max, CLN_OP_MAX, -INFINITY)

CLN_INLINE void cln_pair(float *m, float *l, __local float *sm, __local float *sl, uint lid,
                     uint lane, uint team)
{
    uint mode = cln_nv_mode(team);
    if (mode == 0) { cln_local_pair(m, l, sm, sl, lid, lane, team); return; }
    if (mode == 1) { cln_warp_pair(m, l, team); return; }
    cln_warp_pair(m, l, 32u);
    if ((lid & 31u) == 0) { sm[lid >> 5] = *m; sl[lid >> 5] = *l; }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint nw = team >> 5, w0 = (lid - lane) >> 5, wl = lid & 31u;
    *m = wl < nw ? sm[w0 + wl] : -INFINITY;
    *l = wl < nw ? sl[w0 + wl] : 0.0f;
    cln_warp_pair(m, l, 32u);
    barrier(CLK_LOCAL_MEM_FENCE);
}

#elif CLN_PATH == 1
/* cl_khr_subgroups: usable when a team is the whole work-group, whatever the
   sub-group size (8, 16, 32, 64, 128 or the whole work-group) and even when the last
   sub-group is partial. Level two loops over the sub-group results. */
#define CLN_DEFINE_REDUCE(NAME, LOCAL, SGOP, OP, IDENT)                             \
    CLN_INLINE float NAME(float v, __local float *s, uint lid, uint lane, uint team)    \
    {                                                                                \
        if (team != get_local_size(0)) return LOCAL(v, s, lid, lane, team);          \
        v = SGOP(v);                                                                 \
        uint nsg = get_num_sub_groups(), sgs = get_sub_group_size();                 \
        if (nsg == 1) return v;                                                      \
        if (get_sub_group_local_id() == 0) s[get_sub_group_id()] = v;                \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        float t = (IDENT);                                                           \
        for (uint i = get_sub_group_local_id(); i < nsg; i += sgs) t = OP(t, s[i]);  \
        t = SGOP(t);                                                                 \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        return t;                                                                    \
    }
CLN_DEFINE_REDUCE(cln_sum, cln_local_sum, sub_group_reduce_add, CLN_OP_SUM, 0.0f)
CLN_DEFINE_REDUCE(cln_max, cln_local_max, sub_group_reduce_max, CLN_OP_MAX, -INFINITY)

/* The merge formula as two collectives: the sub-group maximum, then the sum of the
   rescaled parts. */
CLN_INLINE void cln_sg_pair(float *m, float *l)
{
    float mm = sub_group_reduce_max(*m);
    float w = *l == 0.0f ? 0.0f : *l * cln_w(*m, mm);
    *l = sub_group_reduce_add(w);
    *m = mm;
}

CLN_INLINE void cln_pair(float *m, float *l, __local float *sm, __local float *sl, uint lid,
                     uint lane, uint team)
{
    if (team != get_local_size(0)) { cln_local_pair(m, l, sm, sl, lid, lane, team); return; }
    cln_sg_pair(m, l);
    uint nsg = get_num_sub_groups(), sgs = get_sub_group_size();
    if (nsg == 1) return;
    if (get_sub_group_local_id() == 0) {
        sm[get_sub_group_id()] = *m;
        sl[get_sub_group_id()] = *l;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float mm = -INFINITY, ll = 0.0f;
    for (uint i = get_sub_group_local_id(); i < nsg; i += sgs) cln_merge(&mm, &ll, sm[i], sl[i]);
    cln_sg_pair(&mm, &ll);
    *m = mm;
    *l = ll;
    barrier(CLK_LOCAL_MEM_FENCE);
}

#else
#define cln_sum cln_local_sum
#define cln_max cln_local_max
#define cln_pair cln_local_pair
#endif

/* Row bookkeeping shared by every kernel: which row this work-item serves, its lane
   inside the row's team, and whether the row exists (the last work-group may have
   spare rows; their work-items still take part in every barrier). */
#define CLN_ROW_SETUP()                                                              \
    const uint lid = get_local_id(0);                                                \
    const uint lane = lid % team;                                                    \
    const ulong row = (ulong)get_group_id(0) * (get_local_size(0) / team) + lid / team; \
    const bool active = row < rows;                                                  \
    /* The row to address: spare rows take row 0, since PoCL's work-group functions  \
       have been seen to load through a spare row's pointers past the buffers. */    \
    const ulong at = active ? row : 0

/* Split rows: work-group g serves slice g % slices, [c0, c1), of row g / slices,
   with all its work-items as one team. */
#define CLN_SPLIT_SETUP()                                                            \
    const uint lid = get_local_id(0), team = get_local_size(0), lane = lid;          \
    const ulong g = get_group_id(0), row = g / slices, s = g % slices;               \
    const ulong c0 = s * slice_len;                                                  \
    const ulong c1 = c0 + slice_len < cols ? c0 + slice_len : cols

/* Elements per work-item that the register variants hold. The plan counts the same
   (CLN_REG_K and CLN_RMS_REG_K in src/plan.h): keep them in step. */
#define CLN_REG_K 32
/* RMSNorm's register forms hold fewer: with 32 NVIDIA spills around the rarely
   taken rescaling path (docs/DESIGN.md, 'Register slots per work-item'). */
#define CLN_RMS_REG_K 16

/* How many register slots (i * team + lane < cols, at most k) this work-item fills;
   0 for a spare row. */
CLN_INLINE uint cln_reg_count(bool active, ulong cols, uint lane, uint team, uint k)
{
    if (!active || lane >= cols) return 0;
    ulong n = (cols - lane + team - 1) / team;
    return n < k ? (uint)n : k;
}
