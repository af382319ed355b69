/* Softmax and its online statistics.
   Special values follow the contract through cln_w: a NaN makes the sum NaN and so
   the whole row; an all -inf row has l == 0 and gives zeros; k entries of +inf give
   m = +inf, l = k and 1/k at those entries.

   Variants, chosen by the host plan:
   - stream: a team of work-items per row, reading the row from memory each pass;
   - reg:    the row is held in registers (up to CLN_REG_K elements per work-item),
             so it is read once and, in the three-pass form, exp is taken once;
   - split:  several work-groups per row; each reduces its slice to a partial (m, l),
             then each merges its row's partials and writes its slice. */

/* Three passes over the row: the maximum, the sum of exp(x - max), then the write. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_3pass
__kernel void clnorm_softmax_3pass(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                   ulong cols, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    __global cln_t *yr = y + yoff + row * yld;
    float m = active ? cln_seg_max(xr, cols, lane, team) : -INFINITY;
    m = cln_max(m, scratch, lid, lane, team);
#if CLN_BLOCKED && CLN_DTYPE == 0
    /* CPUs: one exp per element; the weights wait in y (rows.cl). */
    float l = active ? cln_seg_sumexp_store(xr, yr, cols, m, lane, team) : 0.0f;
    l = cln_sum(l, scratch, lid, lane, team);
    if (!active) return;
    cln_seg_scale_inplace(yr, cols, l, lane, team);
#else
    float l = active ? cln_seg_sumexp(xr, cols, m, lane, team) : 0.0f;
    l = cln_sum(l, scratch, lid, lane, team);
    if (!active) return;
    cln_seg_softmax_write(xr, yr, cols, m, l, lane, team);
#endif
}
#endif

/* One statistics pass, a merge of the (m, l) pairs across the team, then the write. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_online
__kernel void clnorm_softmax_online(__global const cln_t *x, ulong xoff, ulong xld,
                                    __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                    ulong cols, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float m = -INFINITY, l = 0.0f;
    if (active) cln_seg_online(xr, cols, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    if (!active) return;
    cln_seg_softmax_write(xr, y + yoff + row * yld, cols, m, l, lane, team);
}
#endif

/* The row in registers: element i*team + lane of the row lives in v[i]. online == 0
   is the three-pass algorithm over the registers (max, then exp stored in place and
   summed, then the scaled write: one exp per element); online == 1 keeps (m, l) per
   work-item, merges the pairs online, then takes exp again for the write. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_reg
__kernel void clnorm_softmax_reg(__global const cln_t *x, ulong xoff, ulong xld,
                                 __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                 ulong cols, uint online, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    /* Slots at or past n hold nothing: skip their exp, which would otherwise be paid
       for every one of the CLN_REG_K slots whatever the row's length. */
    const uint n = cln_reg_count(active, cols, lane, team, CLN_REG_K);
    float v[CLN_REG_K];
#pragma unroll
    for (uint i = 0; i < CLN_REG_K; i++)
        v[i] = i < n ? CLN_LOAD(xr, (ulong)i * team + lane) : -INFINITY;
    float m = -INFINITY, l = 0.0f;
    if (online) {
        /* The work-item's own (m, l) from its registers, maximum first: a running
           rescale per element chains every exp on the one before (H200, 256x4096: 12.1
           us against 8.0 for the three-pass form). The pairs then merge online. */
#pragma unroll
        for (uint i = 0; i < CLN_REG_K; i++) m = fmax(m, v[i]);
#pragma unroll
        for (uint i = 0; i < CLN_REG_K; i++)
            if (i < n) l += cln_w(v[i], m);
        cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
#pragma unroll
        for (uint i = 0; i < CLN_REG_K; i++)
            if (i < n) v[i] = cln_w(v[i], m);
    } else {
#pragma unroll
        for (uint i = 0; i < CLN_REG_K; i++) m = fmax(m, v[i]);
        m = cln_max(m, scratch, lid, lane, team);
#pragma unroll
        for (uint i = 0; i < CLN_REG_K; i++) {
            if (i < n) {
                v[i] = cln_w(v[i], m);
                l += v[i];
            }
        }
        l = cln_sum(l, scratch, lid, lane, team);
    }
    float inv = cln_inv_sum(l);
    __global cln_t *yr = y + yoff + row * yld;
#pragma unroll
    for (uint i = 0; i < CLN_REG_K; i++)
        if (i < n) CLN_STORE(yr, (ulong)i * team + lane, v[i] * inv);
}
#endif

/* The paired register form: word i * team + lane of the row (elements 2w and 2w + 1)
   lives in v[i]; cols is even. In float32 the weights are stored in place as in
   clnorm_softmax_reg; 16-bit words stay packed, so exp is taken again for the write
   instead of doubling the registers a row needs. That second exp shows on rows under
   2048 columns, where the plan keeps the plain form for 16-bit data. */
#if CLN_DTYPE == 0
#define CLN_PAIR_W(i, f) (v[i] = (f))
#define CLN_PAIR_OUT(i) v[i]
#else
#define CLN_PAIR_W(i, f) ((void)0)
#define CLN_PAIR_OUT(i) \
    (float2)(cln_w(cln_unpack2(v[i]).x, m), cln_w(cln_unpack2(v[i]).y, m))
#endif
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_pair
__kernel void clnorm_softmax_pair(__global const cln_t *x, ulong xoff, ulong xld,
                                  __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                  ulong cols, uint online, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_pw *xr = (__global const cln_pw *)(x + xoff + row * xld);
    const uint n = cln_reg_count(active, cols / 2, lane, team, CLN_PAIR_SLOTS(CLN_REG_K));
    cln_pw v[CLN_PAIR_SLOTS(CLN_REG_K)];
#pragma unroll
    for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++)
        v[i] = i < n ? xr[(ulong)i * team + lane] : (cln_pw)0;
    float m = -INFINITY, l = 0.0f;
    if (online) {
        /* As in clnorm_softmax_reg: the work-item's maximum first, then its sum. */
#pragma unroll
        for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++) {
            if (i < n) {
                float2 f = cln_unpack2(v[i]);
                m = fmax(m, fmax(f.x, f.y));
            }
        }
#pragma unroll
        for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++) {
            if (i < n) {
                float2 f = cln_unpack2(v[i]);
                l += cln_w(f.x, m) + cln_w(f.y, m);
            }
        }
        cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    } else {
#pragma unroll
        for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++) {
            if (i < n) {
                float2 f = cln_unpack2(v[i]);
                m = fmax(m, fmax(f.x, f.y));
            }
        }
        m = cln_max(m, scratch, lid, lane, team);
#pragma unroll
        for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++) {
            if (i < n) {
                float2 f = cln_unpack2(v[i]);
                f = (float2)(cln_w(f.x, m), cln_w(f.y, m));
                CLN_PAIR_W(i, f);
                l += f.x + f.y;
            }
        }
        l = cln_sum(l, scratch, lid, lane, team);
    }
#if CLN_DTYPE == 0
    if (online) {
#pragma unroll
        for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++)
            if (i < n) v[i] = (float2)(cln_w(v[i].x, m), cln_w(v[i].y, m));
    }
#endif
    float inv = cln_inv_sum(l);
    __global cln_pw *yr = (__global cln_pw *)(y + yoff + row * yld);
#pragma unroll
    for (uint i = 0; i < CLN_PAIR_SLOTS(CLN_REG_K); i++)
        if (i < n) yr[(ulong)i * team + lane] = cln_pack2(CLN_PAIR_OUT(i) * inv);
}
#endif

/* The statistics alone, as float32: row_max (NaN for a NaN row) and row_sum. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_stats
__kernel void clnorm_softmax_stats(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global float *row_max, __global float *row_sum,
                                   ulong rows, ulong cols, uint team,
                                   __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float m = -INFINITY, l = 0.0f;
    if (active) cln_seg_online(xr, cols, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    if (!active || lane != 0) return;
    row_max[row] = isnan(l) ? l : m;
    row_sum[row] = l;
}
#endif

/* ---- Split rows (CLN_SPLIT_SETUP in reduce.cl). ----------------------------------- */

/* Stage one: the partial (m, l) of each slice. */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_stats
__kernel void clnorm_split_stats(__global const cln_t *x, ulong xoff, ulong xld, ulong cols,
                                 ulong slices, ulong slice_len, __global float *part,
                                 __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m, l;
    cln_seg_online(x + xoff + row * xld + c0, c1 - c0, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + team, lid, lane, team);
    if (lid == 0) {
        part[4 * g] = m;
        part[4 * g + 1] = l;
    }
}
#endif

/* The merged (m, l) of a row's partials, in every work-item. */
inline void cln_merge_parts(__global const float *part, ulong row, ulong slices, uint lid,
                            uint team, __local float *scratch, float *m, float *l)
{
    *m = -INFINITY;
    *l = 0.0f;
    for (ulong i = lid; i < slices; i += team)
        cln_merge(m, l, part[4 * (row * slices + i)], part[4 * (row * slices + i) + 1]);
    cln_pair(m, l, scratch, scratch + team, lid, lid, team);
}

/* Stage two of softmax: merge the row's partials, write this slice. */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_softmax
__kernel void clnorm_split_softmax(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong cols,
                                   ulong slices, ulong slice_len, __global const float *part,
                                   __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m, l;
    cln_merge_parts(part, row, slices, lid, team, scratch, &m, &l);
    cln_seg_softmax_write(x + xoff + row * xld + c0, y + yoff + row * yld + c0, c1 - c0, m, l,
                          lane, team);
}
#endif

/* Stage two of the statistics: one work-group per row (slices is the partial count). */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_stats_final
__kernel void clnorm_split_stats_final(__global const float *part, ulong slices,
                                       __global float *row_max, __global float *row_sum,
                                       __local float *scratch)
{
    const uint lid = get_local_id(0), team = get_local_size(0);
    const ulong row = get_group_id(0);
    float m, l;
    cln_merge_parts(part, row, slices, lid, team, scratch, &m, &l);
    if (lid == 0) {
        row_max[row] = isnan(l) ? l : m;
        row_sum[row] = l;
    }
}
#endif

/* Three-pass softmax over split rows: stage one the slice maxima; stage two merges
   the row's maxima and sums exp(x - m) over the slice, leaving (m, l) pairs that
   clnorm_split_softmax then merges (all with the same m) before the write pass. The
   maxima sit in the third float of each work-group's four in the partials buffer,
   which the host passes as both maxima and part (no sub-buffers: creating them at
   every call cost more than the kernels on the H200). */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_max
__kernel void clnorm_split_max(__global const cln_t *x, ulong xoff, ulong xld, ulong cols,
                               ulong slices, ulong slice_len, __global float *part,
                               __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m = cln_seg_max(x + xoff + row * xld + c0, c1 - c0, lane, team);
    m = cln_max(m, scratch, lid, lane, team);
    if (lid == 0) part[4 * g + 2] = m;
}
#endif

#if !CLN_ONLY || CLN_ONLY_clnorm_split_sumexp
__kernel void clnorm_split_sumexp(__global const cln_t *x, ulong xoff, ulong xld, ulong cols,
                                  ulong slices, ulong slice_len, __global const float *maxima,
                                  __global float *part, __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m = -INFINITY;
    for (ulong i = lid; i < slices; i += team) m = fmax(m, maxima[4 * (row * slices + i) + 2]);
    m = cln_max(m, scratch, lid, lane, team);
    float l = cln_seg_sumexp(x + xoff + row * xld + c0, c1 - c0, m, lane, team);
    l = cln_sum(l, scratch, lid, lane, team);
    if (lid == 0) {
        part[4 * g] = m;
        part[4 * g + 1] = l;
    }
}
#endif
