/* Softmax and its online statistics.
   Special values follow the contract through cln_w: a NaN makes the sum NaN and so
   the whole row; an all -inf row has l == 0 and gives zeros; k entries of +inf give
   m = +inf, l = k and 1/k at those entries.

   Variants, chosen by the host plan:
   - stream: a team of work-items per row, reading the row from memory each pass;
   - reg:    the row is held in registers (up to CLN_REG_K elements per work-item, or
             in words of CLN_WORD elements: the words forms), so it is read once and
             exp is taken once per element where the weights stay in registers;
   - split:  several work-groups per row; each reduces its slice to a partial (m, l),
             then each merges its row's partials and writes its slice. */

/* Three passes over the row: the maximum, the sum of exp(x - max), then the write. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_three_pass
__kernel void clnorm_softmax_three_pass(__global const cln_t *x, ulong xoff, ulong xld,
                                        __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                        ulong cols, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *yr = y + yoff + at * yld;
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
    __global const cln_t *xr = x + xoff + at * xld;
    float m = -INFINITY, l = 0.0f;
    if (active) cln_seg_online(xr, cols, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    if (!active) return;
    cln_seg_softmax_write(xr, y + yoff + at * yld, cols, m, l, lane, team);
}
#endif

/* The register forms share their steps (macros, since OpenCL C has no templates):
   K slots of register type RT, n of them filled; SLOT(i) is slot i as float (plain
   form) or cln_pf (words forms: a word as floats); W(i, f) keeps the weights f of
   slot i in place, or does nothing where the registers stay packed (16-bit full words
   form), and OUT(i, WF) gives slot i's weights for the write, from the registers or
   by exp again (WF). The weights are taken under the work-item's own maximum in the
   online form and rescaled once per work-item after the merge, so both algorithms
   take exp once per element where the weights stay in registers. Every loop comes twice: where the maximum is
   finite (nearly always; uniform over the team once it is the row's) cln_w_fin spares
   each element cln_w's special cases. */
#define CLN_SUM1(f, WF) ((f) = WF((f), m), (f))
#define CLN_SUMW(f, WF) ((f) = CLN_PF_W((f), WF, m), CLN_PF_SUM(f))
#define CLN_MAX1(f) (f)
/* Each loop over the slots takes its bound N: n, or K itself where every work-item of
   the group holds all K slots (FULL, uniform over the group), so that the compiler
   drops the guards. Only the loops are versioned: the reductions between them hold
   barriers and stay outside every branch on FULL. */
#define CLN_REG_MAXLOOP(K, N, SLOT, MAXF)                                            \
    _Pragma("unroll") for (uint i = 0; i < (K); i++)                                 \
        if (i < (N)) m = fmax(m, MAXF(SLOT(i)));
#define CLN_REG_WEIGH(K, N, FT, SLOT, SUMF, W, WF)                                   \
    _Pragma("unroll") for (uint i = 0; i < (K); i++) {                               \
        if (i < (N)) {                                                               \
            FT f = SLOT(i);                                                          \
            l += SUMF(f, WF);                                                        \
            W(i, f);                                                                 \
        }                                                                            \
    }
#define CLN_REG_STORES(K, N, OUT, STORE, WF)                                         \
    _Pragma("unroll") for (uint i = 0; i < (K); i++)                                 \
        if (i < (N)) STORE(i, OUT(i, WF) * sc);
#define CLN_REG_SOFTMAX(K, FULL, FT, SLOT, MAXF, SUMF, W, OUT, KEPT, STORE)          \
    float m = -INFINITY, l = 0.0f;                                                   \
    if (FULL) { CLN_REG_MAXLOOP(K, K, SLOT, MAXF) }                                  \
    else { CLN_REG_MAXLOOP(K, n, SLOT, MAXF) }                                       \
    if (!online) m = cln_max(m, scratch, lid, lane, team);                           \
    const float m_own = m;                                                           \
    if (isfinite(m) && (FULL)) { CLN_REG_WEIGH(K, K, FT, SLOT, SUMF, W, cln_w_fin) } \
    else if (isfinite(m)) { CLN_REG_WEIGH(K, n, FT, SLOT, SUMF, W, cln_w_fin) }      \
    else { CLN_REG_WEIGH(K, n, FT, SLOT, SUMF, W, cln_w) }                           \
    if (online) cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team); \
    else l = cln_sum(l, scratch, lid, lane, team);                                   \
    /* Online: weights kept in place were taken under m_own. */                     \
    const float sc = cln_inv_sum(l) * (online && (KEPT) ? cln_w(m_own, m) : 1.0f);  \
    if (isfinite(m) && (FULL)) { CLN_REG_STORES(K, K, OUT, STORE, cln_w_fin) }       \
    else if (isfinite(m)) { CLN_REG_STORES(K, n, OUT, STORE, cln_w_fin) }            \
    else { CLN_REG_STORES(K, n, OUT, STORE, cln_w) }

/* The row in registers: element i*team + lane of the row lives in v[i]. online == 0
   is the three-pass algorithm over the registers, online == 1 keeps (m, l) per
   work-item and merges the pairs online; both read the row once and take exp once. */
#define CLN_SLOT_V(i) v[i]
#define CLN_W_V(i, f) (v[i] = (f))
#define CLN_OUT_V(i, WF) v[i]
#define CLN_STORE_REG(i, o) CLN_STORE(yr, (ulong)(i) * team + lane, (o))
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_reg
__kernel void clnorm_softmax_reg(__global const cln_t *x, ulong xoff, ulong xld,
                                 __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                 ulong cols, uint online, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *yr = y + yoff + at * yld;
    /* Slots at or past n hold nothing: skip their exp, which would otherwise be paid
       for every one of the CLN_REG_K slots whatever the row's length. */
    const uint n = cln_reg_count(active, cols, lane, team, CLN_REG_K);
    float v[CLN_REG_K];
#pragma unroll
    for (uint i = 0; i < CLN_REG_K; i++)
        v[i] = i < n ? CLN_LOAD(xr, (ulong)i * team + lane) : -INFINITY;
    CLN_REG_SOFTMAX(CLN_REG_K, 0, float, CLN_SLOT_V, CLN_MAX1, CLN_SUM1, CLN_W_V, CLN_OUT_V, 1,
                    CLN_STORE_REG)
}
#endif

/* The words register forms: word i * team + lane of the row (its CLN_WORD elements)
   lives in v[i]; cols is a multiple of CLN_WORD. Two sizes, as for RMSNorm:
   - _words holds CLN_WORD_SLOTS(CLN_REG_K) words. 16-bit words stay packed there, so
     that a register carries as many bytes of the row as in float32, and exp is taken
     again for the write.
   - _words_half holds half as many words, as floats in every dtype: the weights stay
     in place, one exp per element. The plan takes it for 16-bit rows a team of up to
     256 holds that way, and for float32 rows of 513 to 4096 columns (more groups). */
#if CLN_DTYPE == 0
#define CLN_W_PW(i, f) (v[i] = (f))
#define CLN_KEPT_PW 1
#define CLN_OUT_PW(i, WF) v[i]
#else
#define CLN_W_PW(i, f) ((void)0)
#define CLN_KEPT_PW 0
#define CLN_OUT_PW(i, WF) CLN_PF_W(cln_unpackw(v[i]), WF, m)
#endif
#define CLN_SLOT_PW(i) cln_unpackw(v[i])
#define CLN_UNPACKED(w) cln_unpackw(w)
#define CLN_PACKED(w) (w)
#define CLN_STORE_WORD(i, o) (yr[(i) * team + lane] = cln_packw(o))
/* Every work-item of the group holds all K of its slots: the row is exactly team * K
   words and every row of the group exists (rows of a power-of-two length, mostly).
   Uniform over the group. The loops then run without guards, which pays where a
   group's own loads are all that is in flight; float32 in teams under
   CLN_FULL_F32_TEAM keeps the guards, and its half kernel (teams of 256 at most) has
   no unguarded copy at all (docs/DESIGN.md, 'Unguarded slot loops'). GPU builds only:
   CPUs run the words kernels only when forced, and PoCL's compile time grows with
   every copy of the loops. -DCLN_FULL_F32_TEAM=1 lets the Oclgrind sweep's small
   teams reach it in float32. */
#ifndef CLN_FULL_F32_TEAM
#define CLN_FULL_F32_TEAM 512
#endif
#if CLN_BLOCKED
#define CLN_REG_FULL(HAS, K, words) 0
#else
#define CLN_REG_FULL(HAS, K, words)                                                  \
    ((HAS) && (CLN_DTYPE != 0 || team >= CLN_FULL_F32_TEAM) &&                       \
     (words) == (ulong)team * (K) &&                                                 \
     ((ulong)get_group_id(0) + 1) * (get_local_size(0) / team) <= rows)
#endif
#define CLN_SM_WORDS_KERNEL(SUFFIX, K, RT, LOADW, SLOT, W, OUT, KEPT, HAS_FULL)      \
    __kernel void clnorm_softmax_##SUFFIX(                                           \
        __global const cln_t *x, ulong xoff, ulong xld, __global cln_t *y, ulong yoff, \
        ulong yld, ulong rows, ulong cols, uint online, uint team,                   \
        __local float *scratch)                                                      \
    {                                                                                \
        CLN_ROW_SETUP();                                                             \
        __global const cln_pw *xr = (__global const cln_pw *)(x + xoff + at * xld);  \
        __global cln_pw *yr = (__global cln_pw *)(y + yoff + at * yld);              \
        RT v[K];                                                                     \
        const bool full = CLN_REG_FULL(HAS_FULL, K, cols / CLN_WORD);                \
        const uint n = cln_reg_count(active, cols / CLN_WORD, lane, team, (K));      \
        if (full) {                                                                  \
            _Pragma("unroll") for (uint i = 0; i < (K); i++)                         \
                v[i] = LOADW(xr[i * team + lane]);                                   \
        } else {                                                                     \
            _Pragma("unroll") for (uint i = 0; i < (K); i++)                         \
                v[i] = i < n ? LOADW(xr[i * team + lane]) : (RT)0;                   \
        }                                                                            \
        CLN_REG_SOFTMAX(K, full, cln_pf, SLOT, CLN_PF_MAX, CLN_SUMW, W, OUT, KEPT, CLN_STORE_WORD) \
    }
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_words
CLN_SM_WORDS_KERNEL(words, CLN_WORD_SLOTS(CLN_REG_K), cln_pw, CLN_PACKED, CLN_SLOT_PW, CLN_W_PW,
                    CLN_OUT_PW, CLN_KEPT_PW, 1)
#endif
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_words_half
CLN_SM_WORDS_KERNEL(words_half, CLN_WORD_SLOTS(CLN_REG_K) / 2, cln_pf, CLN_UNPACKED, CLN_SLOT_V,
                    CLN_W_V, CLN_OUT_V, 1, CLN_DTYPE != 0)
#endif

/* The statistics alone, as float32: row_max (NaN for a NaN row) and row_sum. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_stats
__kernel void clnorm_softmax_stats(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global float *row_max, __global float *row_sum,
                                   ulong rows, ulong cols, uint team,
                                   __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + at * xld;
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
CLN_INLINE void cln_merge_parts(__global const float *part, ulong row, ulong slices, uint lid,
                            uint team, __local float *scratch, float *m, float *l)
{
    *m = -INFINITY;
    *l = 0.0f;
    for (ulong i = lid; i < slices; i += team)
        cln_stats_merge(m, l, part[4 * (row * slices + i)], part[4 * (row * slices + i) + 1]);
    cln_pair(m, l, scratch, scratch + team, lid, lid, team);
}

/* CPU builds of float32 keep the three-pass split's weights: clnorm_split_sum_exp
   stores exp(x - m) in y as it sums, and the last stage scales y in place, so exp is
   taken once per element, as in the CPU three-pass kernel above. Other builds ignore
   the y of clnorm_split_sum_exp and the weighted flag of clnorm_split_softmax. */
#define CLN_SPLIT_WEIGHTS (CLN_BLOCKED && CLN_DTYPE == 0)

/* Stage two of softmax: merge the row's partials, write this slice (weighted: scale
   the weights stage two of the three-pass split left there). */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_softmax
__kernel void clnorm_split_softmax(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong cols,
                                   ulong slices, ulong slice_len, __global const float *part,
                                   uint weighted, __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m, l;
    cln_merge_parts(part, row, slices, lid, team, scratch, &m, &l);
    __global cln_t *ys = y + yoff + row * yld + c0;
#if CLN_SPLIT_WEIGHTS
    if (weighted) {
        cln_seg_scale_inplace(ys, c1 - c0, l, lane, team);
        return;
    }
#else
    (void)weighted;
#endif
    cln_seg_softmax_write(x + xoff + row * xld + c0, ys, c1 - c0, m, l, lane, team);
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
   which the host passes as both maxima and part (no sub-buffers, whose creation at
   every call costs more than the kernels: docs/DESIGN.md, 'Split rows'). */
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

#if !CLN_ONLY || CLN_ONLY_clnorm_split_sum_exp
__kernel void clnorm_split_sum_exp(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong cols,
                                   ulong slices, ulong slice_len, __global const float *maxima,
                                   __global float *part, __local float *scratch)
{
    CLN_SPLIT_SETUP();
    float m = -INFINITY;
    for (ulong i = lid; i < slices; i += team) m = fmax(m, maxima[4 * (row * slices + i) + 2]);
    m = cln_max(m, scratch, lid, lane, team);
#if CLN_SPLIT_WEIGHTS
    float l = cln_seg_sumexp_store(x + xoff + row * xld + c0, y + yoff + row * yld + c0, c1 - c0,
                                   m, lane, team);
#else
    (void)y, (void)yoff, (void)yld;
    float l = cln_seg_sumexp(x + xoff + row * xld + c0, c1 - c0, m, lane, team);
#endif
    l = cln_sum(l, scratch, lid, lane, team);
    if (lid == 0) {
        part[4 * g] = m;
        part[4 * g + 1] = l;
    }
}
#endif

/* ---- Statistics given (clnorm_softmax_apply, clnorm_stats_merge_rows). ---------------- */

/* y = exp(x - row_max) / row_sum with the statistics given. Rows are cut into slices
   of slice_len columns, a team writes one: unit u = group * (wg / team) + lid / team
   is slice u % slices of row u / slices, so that a few long rows still fill the
   device. Nothing is reduced, so there is no barrier and no scratch, and spare units
   return at once. The write is the softmax write pass itself (cln_seg_softmax_write),
   which gives the special values the contract asks of given statistics: a NaN one
   NaN, row_max = +inf 1/row_sum at the +inf entries and 0 elsewhere. Only empty
   statistics (row_max = -inf or row_sum = 0, neither NaN) take their own branch,
   zeros, where the write would form inf * 0. */
#if !CLN_ONLY || CLN_ONLY_clnorm_softmax_apply
__kernel void clnorm_softmax_apply(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global const float *row_max,
                                   __global const float *row_sum, __global cln_t *y,
                                   ulong yoff, ulong yld, ulong rows, ulong cols,
                                   ulong slices, ulong slice_len, uint team)
{
    const uint lid = get_local_id(0), lane = lid % team;
    const ulong u = (ulong)get_group_id(0) * (get_local_size(0) / team) + lid / team;
    const ulong row = u / slices, c0 = u % slices * slice_len;
    if (row >= rows) return;
    const ulong n = c0 + slice_len < cols ? slice_len : cols - c0;
    const float m = row_max[row], l = row_sum[row];
    __global cln_t *ys = y + yoff + row * yld + c0;
    if (!isnan(m) && !isnan(l) && (m == -INFINITY || l == 0.0f)) {
        cln_seg_zero(ys, n, lane, team);
        return;
    }
    cln_seg_softmax_write(x + xoff + row * xld + c0, ys, n, m, l, lane, team);
}
#endif

/* Per row, (row_max, row_sum) <- their merge with (b_max, b_sum): one work-item a row.
   Each work-item reads its row's four values before it writes, so b may be a. */
#if !CLN_ONLY || CLN_ONLY_clnorm_stats_merge_rows
__kernel void clnorm_stats_merge_rows(__global float *row_max, __global float *row_sum,
                                      __global const float *b_max, __global const float *b_sum,
                                      ulong rows)
{
    const ulong r = get_global_id(0);
    if (r >= rows) return;
    float m = row_max[r], l = row_sum[r];
    cln_stats_merge(&m, &l, b_max[r], b_sum[r]);
    row_max[r] = m;
    row_sum[r] = l;
}
#endif
