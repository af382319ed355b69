/* Attention: out = softmax(scale * q k^T) v per query, online over key tiles.
 *
 * clnorm_attention: one work-group serves one (batch entry, kv head, block of
 * queries, chunk of keys). The block holds up to `qblock` of the g * q_len queries
 * that read this kv head (g = q_heads / kv_heads), so K and V are read once per
 * block. Per tile of wg keys: each work-item scores one key against every query of
 * the block (q staged in local memory, scaled), teams of wg / qblock work-items
 * reduce each query's scores to (m, l) with the reduction layer, the running (m, l)
 * takes the tile in as online softmax does, and the scores become weights; then
 * work-items over (query, column unit) add p * v with the V row read once per unit.
 * With one chunk the group writes out and lse; with several (split-K) it writes a
 * record per (query, chunk) to `part`, and clnorm_attention_reduce merges them.
 *
 * Record of (query row r, chunk c) in part: at (r * chunks + c) * (head_dim + 2),
 * m, l, then the chunk's output normalised by its own l.
 *
 * flags: CLN_ATT_CAUSAL, CLN_ATT_LSE (lse is written), CLN_ATT_LENS (kv_lens is
 * read), CLN_ATT_VEC4 (head_dim, offsets and strides are multiples of 4: columns
 * move as float4 units).
 */
#define CLN_ATT_CAUSAL 1u
#define CLN_ATT_LSE 2u
#define CLN_ATT_LENS 4u
#define CLN_ATT_VEC4 8u
/* Queries a work-item scores per pass over its key row. */
#define CLN_ATT_QS 8
/* Column units and queries per work-item in the weighted sum; the plan keeps to
   them (CLN_ATT_UPI and CLN_ATT_QPI in src/plan_attention.h). */
#define CLN_ATT_UPI 2
#define CLN_ATT_QPI 4

/* Folds a part (mb, lb) into the running (m, l) of a softmax and returns the weights
   of the running output and of the part's, each normalised by its own l, in the
   merged output. Both empty gives (0, 0); a NaN in either gives NaN weights and l.
   The split-K merge and clnorm_attention_merge both merge through it. */
CLN_INLINE float2 cln_att_fold(float *m, float *l, float mb, float lb)
{
    const float mm = fmax(*m, mb);
    const float a = *l == 0.0f ? 0.0f : *l * cln_w(*m, mm);
    const float b = lb == 0.0f ? 0.0f : lb * cln_w(mb, mm);
    const float s = a + b;
    *m = mm;
    *l = s;
    return s == 0.0f ? (float2)(0.0f, 0.0f) : (float2)(a / s, b / s);
}

/* An output of weight 0 contributes nothing, whatever it holds. */
CLN_INLINE float cln_att_mix(float2 w, float oa, float ob)
{
    return (w.x == 0.0f ? 0.0f : w.x * oa) + (w.y == 0.0f ? 0.0f : w.y * ob);
}

/* The keys of entry b; kv_lens values outside 0..kv_len are clamped. */
CLN_INLINE long cln_att_keys(const __global int *kv_lens, ulong b, uint kv_len, uint flags)
{
    if (!(flags & CLN_ATT_LENS)) return kv_len;
    const int kl = kv_lens[b];
    return kl < 0 ? 0 : min((long)kl, (long)kv_len);
}

/* One past the last key any of the block's nq queries from q0 sees: keys past it are
   not read. */
CLN_INLINE long cln_att_kend(long keys, bool causal, uint q_len, uint q0, uint nq)
{
    if (!causal) return keys;
    uint tmax = q_len - 1u;
    if (nq < q_len) {
        const uint t0 = q0 % q_len, t1 = (q0 + nq - 1u) % q_len;
        if (t1 >= t0) tmax = t1;
    }
    return min(keys, (long)tmax + keys - (long)q_len + 1);
}

/* The log-sum-exp of (m, l): -inf for no weight. */
CLN_INLINE float cln_att_lse(float m, float l) { return l == 0.0f ? -INFINITY : m + log(l); }

/* Four elements at i, a multiple of 4 in a view whose offset and strides are too. */
CLN_INLINE float4 cln_att_load4(const __global cln_t *p, ulong i)
{
#if CLN_DTYPE == 0
    return *(const __global float4 *)(p + i);
#elif CLN_DTYPE == 1
    return vload_half4(0, p + i);
#else
    const ushort4 h = *(const __global ushort4 *)(p + i);
    return as_float4(convert_uint4(h) << 16);
#endif
}

/* Column unit u of the row at base: four elements, or one in .x. */
CLN_INLINE float4 cln_att_unit(const __global cln_t *p, ulong base, uint u, bool w4)
{
    if (w4) return cln_att_load4(p, base + 4ul * u);
    return (float4)(CLN_LOAD(p, base + u), 0.0f, 0.0f, 0.0f);
}

#if !CLN_ONLY || CLN_ONLY_clnorm_attention
__kernel void clnorm_attention(const __global cln_t *q, ulong qoff, ulong qsb, ulong qsh,
                               ulong qsl, const __global cln_t *k, ulong koff, ulong ksb,
                               ulong ksh, ulong ksl, const __global cln_t *v, ulong voff,
                               ulong vsb, ulong vsh, ulong vsl, __global cln_t *out,
                               ulong ooff, ulong osb, ulong osh, ulong osl,
                               __global float *lse, const __global int *kv_lens, uint flags,
                               uint q_heads, uint kv_heads, uint q_len, uint kv_len,
                               uint head_dim, float scale, uint qblock, uint qblocks,
                               uint chunks, uint chunk_len, uint col_lanes,
                               __global float *part, __local float *scratch)
{
    const uint wg = get_local_size(0), lid = get_local_id(0);
    const ulong gid = get_group_id(0);
    const uint c = (uint)(gid % chunks);
    ulong rest = gid / chunks;
    const uint qb = (uint)(rest % qblocks);
    rest /= qblocks;
    const uint kvh = (uint)(rest % kv_heads);
    const ulong b = rest / kv_heads;
    const uint g = q_heads / kv_heads, gq = g * q_len;
    const uint q0 = qb * qblock, nq = min(qblock, gq - q0);
    const bool w4 = (flags & CLN_ATT_VEC4) != 0, causal = (flags & CLN_ATT_CAUSAL) != 0;
    const uint units = w4 ? head_dim / 4u : head_dim;

    __local float *ql = scratch;                    /* qblock x head_dim, scaled */
    __local float *sc = ql + qblock * head_dim;     /* qblock x wg scores, then weights */
    __local float *mrun = sc + qblock * wg;         /* running m of each query */
    __local float *lrun = mrun + qblock;            /* running l */
    __local float *alpha = lrun + qblock;           /* the tile's rescaling of each query */
    __local float *red = alpha + qblock;            /* 2 wg: the reduction's scratch */

    const long keys = cln_att_keys(kv_lens, b, kv_len, flags);
    const long kend = cln_att_kend(keys, causal, q_len, q0, nq);
    const long j0 = (long)c * chunk_len, j1 = min(j0 + (long)chunk_len, kend);
    const uint ntiles = j1 > j0 ? (uint)((j1 - j0 + wg - 1) / wg) : 0u;

    const ulong qbase = qoff + b * qsb, kbase = koff + b * ksb + (ulong)kvh * ksh;
    const ulong vbase = voff + b * vsb + (ulong)kvh * vsh;
    for (uint e = lid; e < qblock * head_dim; e += wg) {
        const uint qi = e / head_dim, d = e % head_dim;
        float x = 0.0f;
        if (qi < nq) {
            const uint qq = q0 + qi, h = kvh * g + qq / q_len, t = qq % q_len;
            x = scale * CLN_LOAD(q, qbase + (ulong)h * qsh + (ulong)t * qsl + d);
        }
        ql[e] = x;
    }
    for (uint e = lid; e < qblock; e += wg) {
        mrun[e] = -INFINITY;
        lrun[e] = 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* This work-item's share of the weighted sum: column units cl + i * col_lanes,
       queries qlane + j * qlanes. */
    const uint cl = lid % col_lanes, qlane = lid / col_lanes, qlanes = wg / col_lanes;
    /* Its team in the per-query reductions. */
    const uint team = wg / qblock, rq = lid / team, lane = lid % team;
    float4 acc[CLN_ATT_UPI][CLN_ATT_QPI];
#pragma unroll
    for (uint i = 0; i < CLN_ATT_UPI; i++)
#pragma unroll
        for (uint j = 0; j < CLN_ATT_QPI; j++) acc[i][j] = (float4)(0.0f);

    for (uint tile = 0; tile < ntiles; tile++) {
        const long jt = j0 + (long)tile * wg;
        const uint nk = (uint)min((long)wg, j1 - jt);
        /* Scores of key jt + lid; -inf where a query does not see it. */
        const long j = jt + lid;
        const bool have = lid < nk;
        const ulong kr = kbase + (ulong)(have ? j : jt) * ksl;
        for (uint qs = 0; qs < qblock; qs += CLN_ATT_QS) {
            float s[CLN_ATT_QS];
#pragma unroll
            for (uint i = 0; i < CLN_ATT_QS; i++) s[i] = 0.0f;
            if (have) {
                for (uint u = 0; u < units; u++) {
                    const float4 kk = cln_att_unit(k, kr, u, w4);
#pragma unroll
                    for (uint i = 0; i < CLN_ATT_QS; i++) {
                        if (qs + i >= qblock) break;
                        __local const float *qr = ql + (qs + i) * head_dim;
                        s[i] += w4 ? dot(vload4(u, qr), kk) : qr[u] * kk.x;
                    }
                }
            }
#pragma unroll
            for (uint i = 0; i < CLN_ATT_QS; i++) {
                const uint qi = qs + i;
                if (qi >= qblock) break;
                float x = -INFINITY;
                if (have && qi < nq) {
                    const long t = (q0 + qi) % q_len;
                    const long last = causal ? t + keys - (long)q_len : keys - 1;
                    if (j <= last) x = s[i];
                }
                sc[qi * wg + lid] = x;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* The tile's (m, l) per query, into the running pair. */
        float m = -INFINITY, l = 0.0f;
        for (uint jj = lane; jj < nk; jj += team) cln_merge(&m, &l, sc[rq * wg + jj], 1.0f);
        cln_pair(&m, &l, red, red + wg, lid, lane, team);
        if (lane == 0) {
            const float mo = mrun[rq], mn = fmax(mo, m), a = cln_w(mo, mn);
            lrun[rq] = lrun[rq] * a + (l == 0.0f ? 0.0f : l * cln_w(m, mn));
            mrun[rq] = mn;
            alpha[rq] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const float mq = mrun[rq];
        for (uint jj = lane; jj < nk; jj += team) sc[rq * wg + jj] = cln_w(sc[rq * wg + jj], mq);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* Rescale, then add the tile's weighted V rows. A weight of 0 (a key the query
           does not see) adds nothing, even where v is NaN. */
#pragma unroll
        for (uint j = 0; j < CLN_ATT_QPI; j++) {
            const uint qi = qlane + j * qlanes;
            const float a = qi < qblock ? alpha[qi] : 1.0f;
#pragma unroll
            for (uint i = 0; i < CLN_ATT_UPI; i++) acc[i][j] *= a;
        }
        for (uint jj = 0; jj < nk; jj++) {
            const ulong vr = vbase + (ulong)(jt + jj) * vsl;
#pragma unroll
            for (uint i = 0; i < CLN_ATT_UPI; i++) {
                const uint u = cl + i * col_lanes;
                if (u >= units) break;
                const float4 vv = cln_att_unit(v, vr, u, w4);
#pragma unroll
                for (uint j = 0; j < CLN_ATT_QPI; j++) {
                    const uint qi = qlane + j * qlanes;
                    if (qi >= qblock) break;
                    const float p = sc[qi * wg + jj];
                    if (p != 0.0f) acc[i][j] = fma((float4)(p), vv, acc[i][j]);
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* The block's results: out and lse, or the chunk's records. */
    const uint wu = w4 ? 4u : 1u;
#pragma unroll
    for (uint j = 0; j < CLN_ATT_QPI; j++) {
        const uint qi = qlane + j * qlanes;
        if (qi >= nq) break;
        const float lq = lrun[qi];
        const uint qq = q0 + qi, h = kvh * g + qq / q_len, t = qq % q_len;
        const ulong r = (b * kv_heads + kvh) * gq + qq;
        const ulong obase = ooff + b * osb + (ulong)h * osh + (ulong)t * osl;
        const ulong pbase = (r * chunks + c) * (head_dim + 2ul) + 2ul;
#pragma unroll
        for (uint i = 0; i < CLN_ATT_UPI; i++) {
            const uint u = cl + i * col_lanes;
            if (u >= units) break;
            const float4 o = lq == 0.0f ? (float4)(0.0f) : acc[i][j] / lq;
            const float ov[4] = {o.x, o.y, o.z, o.w};
            for (uint e = 0; e < wu; e++) {
                if (chunks == 1u) CLN_STORE(out, obase + u * wu + e, ov[e]);
                else part[pbase + u * wu + e] = ov[e];
            }
        }
    }
    if (lid < nq) {
        const ulong r = (b * kv_heads + kvh) * gq + q0 + lid;
        if (chunks == 1u) {
            if (flags & CLN_ATT_LSE) lse[r] = cln_att_lse(mrun[lid], lrun[lid]);
        } else {
            const ulong pbase = (r * chunks + c) * (head_dim + 2ul);
            part[pbase] = mrun[lid];
            part[pbase + 1] = lrun[lid];
        }
    }
}
#endif

/* Split-K's second stage: one work-group per query row r merges the row's chunk
   records and writes out and lse. */
#if !CLN_ONLY || CLN_ONLY_clnorm_attention_reduce
__kernel void clnorm_attention_reduce(const __global float *part, uint chunks,
                                      uint head_dim, __global cln_t *out, ulong ooff,
                                      ulong osb, ulong osh, ulong osl, __global float *lse,
                                      uint flags, uint q_heads, uint q_len)
{
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const ulong r = get_group_id(0), hq = (ulong)q_heads * q_len;
    const ulong b = r / hq, h = (r / q_len) % q_heads, t = r % q_len;
    const ulong obase = ooff + b * osb + h * osh + t * osl;
    const __global float *rec = part + r * chunks * (head_dim + 2ul);
    float m = -INFINITY, l = 0.0f;
    for (uint d = lid; d < head_dim; d += wg) {
        float o = 0.0f;
        m = -INFINITY;
        l = 0.0f;
        for (uint c = 0; c < chunks; c++) {
            const __global float *pc = rec + c * (head_dim + 2ul);
            const float2 w = cln_att_fold(&m, &l, pc[0], pc[1]);
            o = cln_att_mix(w, o, pc[2 + d]);
        }
        CLN_STORE(out, obase + d, o);
    }
    /* Work-item 0 served column 0, so (m, l) is the row's. */
    if (lid == 0 && (flags & CLN_ATT_LSE)) lse[r] = cln_att_lse(m, l);
}
#endif

/* clnorm_attention_merge: one work-group per row. Every work-item reads both lse
   before any writes lse, which may be lse_a; each output element is read and written
   by one work-item, so out may be out_a. */
#if !CLN_ONLY || CLN_ONLY_clnorm_attention_merge
__kernel void clnorm_attention_merge(const __global cln_t *a, ulong aoff, ulong ald,
                                     const __global float *lse_a, const __global cln_t *b,
                                     ulong boff, ulong bld, const __global float *lse_b,
                                     __global cln_t *y, ulong yoff, ulong yld,
                                     __global float *lse, uint head_dim)
{
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const ulong r = get_group_id(0);
    float m = lse_a[r], l = 1.0f;
    const float2 w = cln_att_fold(&m, &l, lse_b[r], 1.0f);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) lse[r] = cln_att_lse(m, l);
    for (uint d = lid; d < head_dim; d += wg)
        CLN_STORE(y, yoff + r * yld + d,
                  cln_att_mix(w, CLN_LOAD(a, aoff + r * ald + d), CLN_LOAD(b, boff + r * bld + d)));
}
#endif
