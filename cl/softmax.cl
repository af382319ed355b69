/* Softmax and its online statistics, one team of work-items per row.
   Special values follow the contract through cln_w: a NaN makes the sum NaN and so
   the whole row; an all -inf row has l == 0 and gives zeros; k entries of +inf give
   m = +inf, l = k and 1/k at those entries. */

/* 1/l, except 0 for an empty (all -inf) row and NaN for a NaN row. */
inline float cln_inv_sum(float l)
{
    if (isnan(l)) return l;
    return l > 0.0f ? 1.0f / l : 0.0f;
}

inline void cln_softmax_write(__global const cln_t *xr, __global cln_t *yr, ulong cols,
                              uint lane, uint team, float m, float l)
{
    float inv = cln_inv_sum(l);
    for (ulong c = lane; c < cols; c += team) CLN_STORE(yr, c, cln_w(CLN_LOAD(xr, c), m) * inv);
}

/* Three passes over the row: the maximum, the sum of exp(x - max), then the write. */
__kernel void clnorm_softmax_3pass(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                   ulong cols, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float m = -INFINITY;
    if (active)
        for (ulong c = lane; c < cols; c += team) m = fmax(m, CLN_LOAD(xr, c));
    m = cln_max(m, scratch, lid, lane, team);
    float l = 0.0f;
    if (active)
        for (ulong c = lane; c < cols; c += team) l += cln_w(CLN_LOAD(xr, c), m);
    l = cln_sum(l, scratch, lid, lane, team);
    if (!active) return;
    cln_softmax_write(xr, y + yoff + row * yld, cols, lane, team, m, l);
}

/* Online statistics of the elements this work-item visits: (m, l) with the old sum
   rescaled whenever the maximum grows, so each element costs one exp. */
inline void cln_online_stats(__global const cln_t *xr, ulong cols, uint lane, uint team,
                             float *m_out, float *l_out)
{
    float m = -INFINITY, l = 0.0f;
    for (ulong c = lane; c < cols; c += team) {
        float v = CLN_LOAD(xr, c);
        if (v > m) {
            l *= cln_w(m, v);
            m = v;
        }
        l += cln_w(v, m);
    }
    *m_out = m;
    *l_out = l;
}

/* One statistics pass, a merge of the (m, l) pairs across the team, then the write. */
__kernel void clnorm_softmax_online(__global const cln_t *x, ulong xoff, ulong xld,
                                    __global cln_t *y, ulong yoff, ulong yld, ulong rows,
                                    ulong cols, uint team, __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float m = -INFINITY, l = 0.0f;
    if (active) cln_online_stats(xr, cols, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    if (!active) return;
    cln_softmax_write(xr, y + yoff + row * yld, cols, lane, team, m, l);
}

/* The statistics alone, as float32: row_max (NaN for a NaN row) and row_sum. */
__kernel void clnorm_softmax_stats(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global float *row_max, __global float *row_sum,
                                   ulong rows, ulong cols, uint team,
                                   __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float m = -INFINITY, l = 0.0f;
    if (active) cln_online_stats(xr, cols, lane, team, &m, &l);
    cln_pair(&m, &l, scratch, scratch + get_local_size(0), lid, lane, team);
    if (!active || lane != 0) return;
    row_max[row] = isnan(l) ? l : m;
    row_sum[row] = l;
}
