/* Attention on CPUs: the same results as clnorm_attention (cl/attention.cl), shaped for
 * devices that run a work-item as one thread's loop and vectorise only its own code.
 *
 * clnorm_attention_cpu: one work-item serves one (batch entry, kv head, block of up to
 * CLN_ATTC_QMAX queries, chunk of keys), with no local memory and no barrier, and
 * walks its keys in blocks of CLN_ATTC_KB. With one chunk it writes out and lse; with
 * several, the records that clnorm_attention_reduce merges (the layout of
 * cl/attention.cl). Two forms, by the block's query count:
 *
 * Passes (up to CLN_ATTC_LANES_FROM queries, and every scalar build): for CLN_ATTC_R
 * queries at a time it scores the block's keys (vectors of CLN_VEC elements over
 * head_dim, two keys at a time so that a q vector serves both), folds the block into
 * each query's (m, l), rescales the accumulators once and adds p * v two column
 * vectors at a time, each V vector read once for the pass's queries. Decoding (a few
 * queries per kv head) is bound by reading K and V, which this form does once. On
 * scalars (CLN_SIMD_LANES, llvmpipe) it takes a key and a column at a time, the loops
 * whose trips the plan counts against llvmpipe's loop limit.
 *
 * Lanes (more queries, vector builds): the block's queries lie across the vector
 * lanes, so that no step sums across lanes: the scaled q, the scores, the running
 * (m, l) and the output accumulators are held transposed, CLN_ATTC_QV vectors per
 * column. Scores are sums over the columns of q vectors times a broadcast K element,
 * and the weighted sum adds weight vectors times a broadcast V element, each
 * CLN_ATTC_KR keys (or columns) at a time against the queries' vectors, so that
 * CLN_ATTC_KR x CLN_ATTC_QV accumulators stay in registers; the online softmax steps
 * are elementwise over the lanes. Many queries per key are bound by arithmetic, which
 * this form does without the passes' sums across lanes.
 *
 * Vector builds first copy each block of K and V rows, as float, into private rows.
 *
 * Special values as clnorm_attention: an unseen key (causal, kv_lens) scores -inf and
 * a weight of 0 adds nothing, so its NaN or inf never leaks; a NaN score makes the
 * query's l and output NaN; +inf scores share the weight (cln_w).
 */
/* Queries a work-item holds, keys per block, queries per pass of the passes form, and
   the most queries that form takes in vector builds; the plan keeps to CLN_ATTC_QMAX
   (src/plan_attention.h). */
#define CLN_ATTC_QMAX 16
#define CLN_ATTC_KB 16
#define CLN_ATTC_R 4
#define CLN_ATTC_LANES_FROM 8
/* Row length of the private rows: the contract's largest head_dim. The loops over a
   pass's CLN_ATTC_R queries are unrolled by pragma: PoCL 3.1 leaves them rolled
   otherwise, with the accumulators on the stack. */
#define CLN_ATTC_HD 256

/* Vectors of CLN_VEC elements; scalars where CLN_VEC is 1 or the device runs
   work-items as SIMD lanes (CLN_SIMD_LANES, llvmpipe, where the vector form wrote
   zeros). vloadn asks only for the element's alignment, so any offset and stride
   work. The kernel also compiles for GPUs (clnorm_warmup builds every kernel), where
   CLN_LOADV would assume aligned vectors. */
#if CLN_VEC > 1 && !CLN_SIMD_LANES
#define CLN_ATTC_W CLN_VEC
typedef cln_fv cln_attc_v;
#define CLN_ATTC_PLOAD(p, u) CLN_CAT(vload, CLN_VEC)((u), (p))
#define CLN_ATTC_PSTORE(p, u, x) CLN_CAT(vstore, CLN_VEC)((x), (u), (p))
#if CLN_DTYPE == 0
#define CLN_ATTC_GLOAD(p, u) CLN_CAT(vload, CLN_VEC)((u), (p))
#elif CLN_DTYPE == 2
#define CLN_ATTC_GLOAD(p, u) \
    CLN_CAT(as_float, CLN_VEC)(CLN_CAT(convert_uint, CLN_VEC)(CLN_CAT(vload, CLN_VEC)((u), (p))) << 16)
#elif CLN_BLOCKED
#define CLN_ATTC_GLOAD(p, u) CLN_LOADV((p), (u))
#else
#define CLN_ATTC_GLOAD(p, u) CLN_CAT(vload_half, CLN_VEC)((u), (p))
#endif
#else
#define CLN_ATTC_W 1
typedef float cln_attc_v;
#define CLN_ATTC_PLOAD(p, u) ((p)[(u)])
#define CLN_ATTC_PSTORE(p, u, x) ((p)[(u)] = (x))
#define CLN_ATTC_GLOAD(p, u) CLN_LOAD((p), (u))
#endif

/* The block's K and V rows: in vector builds copied, as float, into private arrays of
   vectors, which the passes read as whole aligned vectors (x86 compilers split loads of
   32 bytes at any element offset in two) and the lanes form element by element,
   bfloat16 and float16 converted once per block; scalar builds read K and V where they
   are. */
#if CLN_ATTC_W > 1
#define CLN_ATTC_STAGE 1
#define CLN_ATTC_HV (CLN_ATTC_HD / CLN_ATTC_W)
typedef __private const cln_attc_v *cln_attc_row;
#define CLN_ATTC_KROW(jj) (kf + (jj) * CLN_ATTC_HV)
#define CLN_ATTC_VROW(jj) (vf + (jj) * CLN_ATTC_HV)
#define CLN_ATTC_RLOAD(p, u) ((p)[u])
#define CLN_ATTC_RSCALAR(p, d) (((__private const float *)(p))[d])
/* Copies the block's nk K and V rows from key jb on into kf and vf. */
#define CLN_ATTC_COPY_BLOCK()                                                            \
    for (uint jj = 0; jj < nk; jj++) {                                                   \
        const __global cln_t *kr = k + kbase + (ulong)(jb + jj) * ksl;                   \
        const __global cln_t *vr = v + vbase + (ulong)(jb + jj) * vsl;                   \
        for (uint u = 0; u < units; u++) {                                               \
            kf[jj * CLN_ATTC_HV + u] = CLN_ATTC_GLOAD(kr, u);                            \
            vf[jj * CLN_ATTC_HV + u] = CLN_ATTC_GLOAD(vr, u);                            \
        }                                                                                \
        __private float *kt = (__private float *)(kf + jj * CLN_ATTC_HV);               \
        __private float *vt = (__private float *)(vf + jj * CLN_ATTC_HV);               \
        for (uint d = tail0; d < head_dim; d++) {                                        \
            kt[d] = CLN_LOAD(kr, d);                                                     \
            vt[d] = CLN_LOAD(vr, d);                                                     \
        }                                                                                \
    }
#else
#define CLN_ATTC_STAGE 0
typedef const __global cln_t *cln_attc_row;
#define CLN_ATTC_KROW(jj) (k + kbase + (ulong)(jb + (jj)) * ksl)
#define CLN_ATTC_VROW(jj) (v + vbase + (ulong)(jb + (jj)) * vsl)
#define CLN_ATTC_RLOAD(p, u) CLN_ATTC_GLOAD(p, u)
#define CLN_ATTC_RSCALAR(p, d) CLN_LOAD(p, d)
#endif

#if CLN_ATTC_W > 1
/* Vectors of the queries' lanes, and keys or columns per step: eight accumulators
   (sixteen registers of AVX2 hold them, the operands and a broadcast). */
#define CLN_ATTC_QV (CLN_ATTC_QMAX / CLN_ATTC_W)
#define CLN_ATTC_KR (CLN_ATTC_QV >= 8 ? 1 : 8 / CLN_ATTC_QV)
typedef CLN_CAT(int, CLN_ATTC_W) cln_attc_i;

/* cln_w lane by lane: the weight of score x under maximum m. */
CLN_INLINE cln_attc_v cln_attc_w(cln_attc_v x, cln_attc_v m)
{
    const cln_attc_v one = select((cln_attc_v)(1.0f), (cln_attc_v)(0.0f), m == -INFINITY);
    return select(CLN_EXP(x - m), one, x == m);
}

/* An element of the block's copied rows, for the lanes form's broadcasts. */
#define CLN_ATTC_KEL(jj, d) CLN_ATTC_RSCALAR(CLN_ATTC_KROW(jj), d)
#define CLN_ATTC_VEL(jj, d) CLN_ATTC_RSCALAR(CLN_ATTC_VROW(jj), d)

/* The weighted V rows of a block's keys into the accumulators a of CLN_ATTC_KR columns
   dc: NEXT is a[r][w]'s new value given f = a[r][w] + p * v, and live[w] (p != 0).
   Written twice, guarded and not, so that the test of the block stays out of the
   loop. */
#define CLN_ATTC_PV_KEYS(NEXT)                                                           \
    for (uint jj = 0; jj < nk; jj++) {                                                   \
        cln_attc_v p[CLN_ATTC_QV];                                                       \
        cln_attc_i live[CLN_ATTC_QV];                                                    \
        _Pragma("unroll") for (uint w = 0; w < CLN_ATTC_QV; w++) {                       \
            p[w] = st[jj * CLN_ATTC_QV + w];                                             \
            live[w] = p[w] != 0.0f;                                                      \
        }                                                                                \
        _Pragma("unroll") for (uint r = 0; r < CLN_ATTC_KR; r++) {                       \
            const cln_attc_v vv = (cln_attc_v)(CLN_ATTC_VEL(jj, dc[r]));                 \
            _Pragma("unroll") for (uint w = 0; w < CLN_ATTC_QV; w++) {                   \
                const cln_attc_v f = fma(p[w], vv, a[r][w]);                             \
                a[r][w] = NEXT;                                                          \
            }                                                                            \
        }                                                                                \
    }
#endif

/* The sum of a vector's lanes. */
CLN_INLINE float cln_attc_hsum(cln_attc_v x)
{
#if CLN_ATTC_W == 16
    const float8 a = x.lo + x.hi;
    const float4 b = a.lo + a.hi;
#elif CLN_ATTC_W == 8
    const float4 b = x.lo + x.hi;
#elif CLN_ATTC_W == 4
    const float4 b = x;
#endif
#if CLN_ATTC_W >= 4
    const float2 c = b.lo + b.hi;
    return c.x + c.y;
#elif CLN_ATTC_W == 2
    return x.x + x.y;
#else
    return x;
#endif
}

/* The work-item's results: out and lse, or the chunk's records. ACC(i, d) is query i's
   accumulator of column d; mrun and lrun hold each query's (m, l). */
#define CLN_ATTC_RESULTS(ACC)                                                            \
    for (uint i = 0; i < nq; i++) {                                                      \
        const float lq = lrun[i];                                                        \
        const uint qq = q0 + i, h = kvh * g + qq / q_len, t = qq % q_len;                \
        const ulong r = (b * kv_heads + kvh) * gq + qq;                                  \
        if (chunks == 1u) {                                                              \
            const ulong orow = ooff + b * osb + (ulong)h * osh + (ulong)t * osl;         \
            for (uint d = 0; d < head_dim; d++)                                          \
                CLN_STORE(out, orow + d, lq == 0.0f ? 0.0f : ACC(i, d) / lq);            \
            if (flags & CLN_ATT_LSE) lse[r] = cln_att_lse(mrun[i], lq);                  \
        } else {                                                                         \
            __global float *rec = part + (r * chunks + c) * (head_dim + 2ul);            \
            rec[0] = mrun[i];                                                            \
            rec[1] = lq;                                                                 \
            for (uint d = 0; d < head_dim; d++) rec[2 + d] = lq == 0.0f ? 0.0f : ACC(i, d) / lq; \
        }                                                                                \
    }
#define CLN_ATTC_LANES_ACC(i, d) otf[(d) * CLN_ATTC_QMAX + (i)]
#define CLN_ATTC_PASSES_ACC(i, d) acc[(i) * CLN_ATTC_HD + (d)]

#if !CLN_ONLY || CLN_ONLY_clnorm_attention_cpu
__kernel void clnorm_attention_cpu(const __global cln_t *q, ulong qoff, ulong qsb, ulong qsh,
                                   ulong qsl, const __global cln_t *k, ulong koff, ulong ksb,
                                   ulong ksh, ulong ksl, const __global cln_t *v, ulong voff,
                                   ulong vsb, ulong vsh, ulong vsl, __global cln_t *out,
                                   ulong ooff, ulong osb, ulong osh, ulong osl,
                                   __global float *lse, const __global int *kv_lens,
                                   uint flags, uint q_heads, uint kv_heads, uint q_len,
                                   uint kv_len, uint head_dim, float scale, uint qblock,
                                   uint qblocks, uint chunks, uint chunk_len, ulong items,
                                   __global float *part)
{
    const ulong gid = get_global_id(0);
    /* The NDRange is rounded up to whole work-groups. */
    if (gid >= items) return;
    const uint c = (uint)(gid % chunks);
    ulong rest = gid / chunks;
    const uint qb = (uint)(rest % qblocks);
    rest /= qblocks;
    const uint kvh = (uint)(rest % kv_heads);
    const ulong b = rest / kv_heads;
    const uint g = q_heads / kv_heads, gq = g * q_len;
    const uint q0 = qb * qblock, nq = min(qblock, gq - q0);
    const bool causal = (flags & CLN_ATT_CAUSAL) != 0;

    const long keys = cln_att_keys(kv_lens, b, kv_len, flags);
    const long kend = cln_att_kend(keys, causal, q_len, q0, nq);
    const long j0 = (long)c * chunk_len, j1 = min(j0 + (long)chunk_len, kend);
    const uint units = head_dim / CLN_ATTC_W, tail0 = units * CLN_ATTC_W;
    const ulong kbase = koff + b * ksb + (ulong)kvh * ksh;
    const ulong vbase = voff + b * vsb + (ulong)kvh * vsh;
#if CLN_ATTC_STAGE
    cln_attc_v kf[CLN_ATTC_KB * CLN_ATTC_HV], vf[CLN_ATTC_KB * CLN_ATTC_HV];
#endif
#if CLN_ATTC_W > 1
    if (nq > CLN_ATTC_LANES_FROM) {
        /* Transposed: column d of the queries in qt[d * QV + lane / W], lane = query in the
           block; lanes past nq hold zeros and see no key. */
        cln_attc_v qt[CLN_ATTC_HD * CLN_ATTC_QV], ot[CLN_ATTC_HD * CLN_ATTC_QV];
        cln_attc_v st[CLN_ATTC_KB * CLN_ATTC_QV], mv[CLN_ATTC_QV], lv[CLN_ATTC_QV];
        cln_attc_i lastv[CLN_ATTC_QV];
        __private float *qtf = (__private float *)qt, *otf = (__private float *)ot;
        __private float *mrun = (__private float *)mv, *lrun = (__private float *)lv;
        __private int *last = (__private int *)lastv;
        const ulong qbase = qoff + b * qsb;
        for (uint i = 0; i < CLN_ATTC_QMAX; i++) {
            const uint qq = q0 + i, h = kvh * g + qq / q_len, t = qq % q_len;
            const ulong qrow = qbase + (ulong)h * qsh + (ulong)t * qsl;
            for (uint d = 0; d < head_dim; d++) {
                qtf[d * CLN_ATTC_QMAX + i] = i < nq ? scale * CLN_LOAD(q, qrow + d) : 0.0f;
                otf[d * CLN_ATTC_QMAX + i] = 0.0f;
            }
            mrun[i] = -INFINITY;
            lrun[i] = 0.0f;
            last[i] = i >= nq ? -1 : (int)(causal ? (long)t + keys - (long)q_len : keys - 1);
        }

        for (long jb = j0; jb < j1; jb += CLN_ATTC_KB) {
            const uint nk = (uint)min((long)CLN_ATTC_KB, j1 - jb);
            CLN_ATTC_COPY_BLOCK()
            /* Scores, CLN_ATTC_KR keys at a time; keys past nk repeat the last one and,
               like keys a query does not see, score -inf. */
            for (uint j = 0; j < nk; j += CLN_ATTC_KR) {
                uint kj[CLN_ATTC_KR];
                cln_attc_v a[CLN_ATTC_KR][CLN_ATTC_QV];
                #pragma unroll
                for (uint r = 0; r < CLN_ATTC_KR; r++) {
                    kj[r] = min(j + r, nk - 1u);
                    #pragma unroll
                    for (uint w = 0; w < CLN_ATTC_QV; w++) a[r][w] = (cln_attc_v)(0.0f);
                }
                for (uint d = 0; d < head_dim; d++) {
                    cln_attc_v qd[CLN_ATTC_QV];
                    #pragma unroll
                    for (uint w = 0; w < CLN_ATTC_QV; w++) qd[w] = qt[d * CLN_ATTC_QV + w];
                    #pragma unroll
                    for (uint r = 0; r < CLN_ATTC_KR; r++) {
                        const cln_attc_v kk = (cln_attc_v)(CLN_ATTC_KEL(kj[r], d));
                        #pragma unroll
                        for (uint w = 0; w < CLN_ATTC_QV; w++) a[r][w] = fma(qd[w], kk, a[r][w]);
                    }
                }
                #pragma unroll
                for (uint r = 0; r < CLN_ATTC_KR; r++) {
                    const int key = j + r < nk ? (int)(jb + j + r) : INT_MAX;
                    #pragma unroll
                    for (uint w = 0; w < CLN_ATTC_QV; w++)
                        st[(j + r) * CLN_ATTC_QV + w] =
                                select((cln_attc_v)(-INFINITY), a[r][w], (cln_attc_i)(key) <= lastv[w]);
                }
            }
            /* The block into each query's running (m, l); the scores become weights.
               sparse: some weight is 0. */
            cln_attc_v alpha[CLN_ATTC_QV];
            cln_attc_i zero = (cln_attc_i)(0);
            #pragma unroll
            for (uint w = 0; w < CLN_ATTC_QV; w++) {
                cln_attc_v mb = (cln_attc_v)(-INFINITY);
                for (uint jj = 0; jj < nk; jj++) mb = fmax(mb, st[jj * CLN_ATTC_QV + w]);
                const cln_attc_v mn = fmax(mv[w], mb);
                cln_attc_v l = (cln_attc_v)(0.0f);
                for (uint jj = 0; jj < nk; jj++) {
                    const cln_attc_v p = cln_attc_w(st[jj * CLN_ATTC_QV + w], mn);
                    st[jj * CLN_ATTC_QV + w] = p;
                    l += p;
                    zero |= p == 0.0f;
                }
                alpha[w] = cln_attc_w(mv[w], mn);
                lv[w] = lv[w] * alpha[w] + l;
                mv[w] = mn;
            }
            const bool sparse = any(zero);
            /* Rescale, then add the weighted V rows, CLN_ATTC_KR columns at a time. A
               weight of 0 adds nothing, even where v is NaN: where the block has one,
               every product is guarded. */
            for (uint d0 = 0; d0 < head_dim; d0 += CLN_ATTC_KR) {
                uint dc[CLN_ATTC_KR];
                cln_attc_v a[CLN_ATTC_KR][CLN_ATTC_QV];
                #pragma unroll
                for (uint r = 0; r < CLN_ATTC_KR; r++) {
                    dc[r] = min(d0 + r, head_dim - 1u);
                    #pragma unroll
                    for (uint w = 0; w < CLN_ATTC_QV; w++)
                        a[r][w] = ot[dc[r] * CLN_ATTC_QV + w] * alpha[w];
                }
                if (sparse) {
                    CLN_ATTC_PV_KEYS(select(a[r][w], f, live[w]))
                } else {
                    CLN_ATTC_PV_KEYS(f)
                }
                /* Columns past head_dim repeat the last one and are not stored. */
                #pragma unroll
                for (uint r = 0; r < CLN_ATTC_KR; r++)
                    #pragma unroll
                    for (uint w = 0; w < CLN_ATTC_QV; w++)
                        if (d0 + r < head_dim) ot[dc[r] * CLN_ATTC_QV + w] = a[r][w];
            }
        }
        CLN_ATTC_RESULTS(CLN_ATTC_LANES_ACC)
        return;
    }
#endif
    /* The block's queries, scaled; a pass's queries past nq are zeros, never written. */
    float qp[CLN_ATTC_QMAX * CLN_ATTC_HD], acc[CLN_ATTC_QMAX * CLN_ATTC_HD];
    float mrun[CLN_ATTC_QMAX], lrun[CLN_ATTC_QMAX];
    long last[CLN_ATTC_QMAX];
    const uint npass = (nq + CLN_ATTC_R - 1u) / CLN_ATTC_R, nqp = npass * CLN_ATTC_R;
    const ulong qbase = qoff + b * qsb;
    for (uint i = 0; i < nqp; i++) {
        __private float *qr = qp + i * CLN_ATTC_HD, *ar = acc + i * CLN_ATTC_HD;
        const uint qq = q0 + i, h = kvh * g + qq / q_len, t = qq % q_len;
        const ulong qrow = qbase + (ulong)h * qsh + (ulong)t * qsl;
        for (uint d = 0; d < head_dim; d++) {
            qr[d] = i < nq ? scale * CLN_LOAD(q, qrow + d) : 0.0f;
            ar[d] = 0.0f;
        }
        mrun[i] = -INFINITY;
        lrun[i] = 0.0f;
        last[i] = causal ? (long)t + keys - (long)q_len : keys - 1;
    }

    for (long jb = j0; jb < j1; jb += CLN_ATTC_KB) {
        const uint nk = (uint)min((long)CLN_ATTC_KB, j1 - jb);
#if CLN_ATTC_STAGE
        CLN_ATTC_COPY_BLOCK()
#endif
        for (uint q4 = 0; q4 < nqp; q4 += CLN_ATTC_R) {
#if CLN_ATTC_W > 1
            /* Scores of the block's keys, two keys at a time (an odd last one is scored
               twice), so that each q vector loaded serves both; -inf where a query does
               not see the key. */
            float s[CLN_ATTC_R][CLN_ATTC_KB];
            for (uint jj = 0; jj < nk; jj += 2) {
                const uint j2 = min(jj + 1u, nk - 1u);
                const cln_attc_row k0 = CLN_ATTC_KROW(jj), k1 = CLN_ATTC_KROW(j2);
                cln_attc_v s0[CLN_ATTC_R], s1[CLN_ATTC_R];
                float t0[CLN_ATTC_R], t1[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) {
                    s0[i] = s1[i] = (cln_attc_v)(0.0f);
                    t0[i] = t1[i] = 0.0f;
                }
                for (uint u = 0; u < units; u++) {
                    const cln_attc_v x0 = CLN_ATTC_RLOAD(k0, u), x1 = CLN_ATTC_RLOAD(k1, u);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++) {
                        const cln_attc_v qv = CLN_ATTC_PLOAD(qp + (q4 + i) * CLN_ATTC_HD, u);
                        s0[i] = fma(qv, x0, s0[i]);
                        s1[i] = fma(qv, x1, s1[i]);
                    }
                }
                for (uint d = tail0; d < head_dim; d++) {
                    const float x0 = CLN_ATTC_RSCALAR(k0, d), x1 = CLN_ATTC_RSCALAR(k1, d);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++) {
                        const float qv = qp[(q4 + i) * CLN_ATTC_HD + d];
                        t0[i] = fma(qv, x0, t0[i]);
                        t1[i] = fma(qv, x1, t1[i]);
                    }
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) {
                    s[i][jj] = jb + jj <= last[q4 + i] ? cln_attc_hsum(s0[i]) + t0[i] : -INFINITY;
                    s[i][j2] = jb + j2 <= last[q4 + i] ? cln_attc_hsum(s1[i]) + t1[i] : -INFINITY;
                }
            }
            /* The block into each query's running (m, l); the scores become weights,
               as one vector of CLN_ATTC_KB where the maximum is finite (cln_w is then
               a plain exp), else key by key. sparse: some weight is 0. */
            float alpha[CLN_ATTC_R];
            bool sparse = nk < CLN_ATTC_KB;
            #pragma unroll
            for (uint i = 0; i < CLN_ATTC_R; i++) {
                for (uint jj = nk; jj < CLN_ATTC_KB; jj++) s[i][jj] = -INFINITY;
                const float16 x = vload16(0, s[i]);
                const float8 m8 = fmax(x.lo, x.hi);
                const float4 m4 = fmax(m8.lo, m8.hi);
                const float2 m2 = fmax(m4.lo, m4.hi);
                const float mo = mrun[q4 + i], mn = fmax(mo, fmax(m2.x, m2.y));
                float l = 0.0f;
                if (isfinite(mn)) {
                    const float16 p = CLN_EXP(x - mn);
                    vstore16(p, 0, s[i]);
                    const float8 l8 = p.lo + p.hi;
                    const float4 l4 = l8.lo + l8.hi;
                    const float2 l2 = l4.lo + l4.hi;
                    l = l2.x + l2.y;
                    sparse |= any(p == 0.0f);
                } else {
                    for (uint jj = 0; jj < nk; jj++) {
                        const float p = cln_w(s[i][jj], mn);
                        s[i][jj] = p;
                        l += p;
                        sparse |= p == 0.0f;
                    }
                }
                alpha[i] = cln_w(mo, mn);
                lrun[q4 + i] = lrun[q4 + i] * alpha[i] + l;
                mrun[q4 + i] = mn;
            }
            /* Rescale, then add the weighted V rows, two column vectors at a time (64
               bytes of a float32 row on AVX2), each read once for the pass's queries.
               A weight of 0 adds nothing, even where v is NaN: where the pass has one,
               every product is guarded. */
            uint u = 0;
            for (; u + 1u < units; u += 2u) {
                cln_attc_v a0[CLN_ATTC_R], a1[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) {
                    a0[i] = CLN_ATTC_PLOAD(acc + (q4 + i) * CLN_ATTC_HD, u) * alpha[i];
                    a1[i] = CLN_ATTC_PLOAD(acc + (q4 + i) * CLN_ATTC_HD, u + 1u) * alpha[i];
                }
                for (uint jj = 0; jj < nk; jj++) {
                    const cln_attc_row vr = CLN_ATTC_VROW(jj);
                    const cln_attc_v v0 = CLN_ATTC_RLOAD(vr, u), v1 = CLN_ATTC_RLOAD(vr, u + 1u);
                    if (sparse) {
                        #pragma unroll
                        for (uint i = 0; i < CLN_ATTC_R; i++) {
                            const float p = s[i][jj];
                            a0[i] = p != 0.0f ? fma((cln_attc_v)(p), v0, a0[i]) : a0[i];
                            a1[i] = p != 0.0f ? fma((cln_attc_v)(p), v1, a1[i]) : a1[i];
                        }
                    } else {
                        #pragma unroll
                        for (uint i = 0; i < CLN_ATTC_R; i++) {
                            const cln_attc_v p = (cln_attc_v)(s[i][jj]);
                            a0[i] = fma(p, v0, a0[i]);
                            a1[i] = fma(p, v1, a1[i]);
                        }
                    }
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) {
                    CLN_ATTC_PSTORE(acc + (q4 + i) * CLN_ATTC_HD, u, a0[i]);
                    CLN_ATTC_PSTORE(acc + (q4 + i) * CLN_ATTC_HD, u + 1u, a1[i]);
                }
            }
            if (u < units) {
                cln_attc_v a[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++)
                    a[i] = CLN_ATTC_PLOAD(acc + (q4 + i) * CLN_ATTC_HD, u) * alpha[i];
                for (uint jj = 0; jj < nk; jj++) {
                    const cln_attc_v vv = CLN_ATTC_RLOAD(CLN_ATTC_VROW(jj), u);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++) {
                        const float p = s[i][jj];
                        a[i] = p != 0.0f ? fma((cln_attc_v)(p), vv, a[i]) : a[i];
                    }
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++)
                    CLN_ATTC_PSTORE(acc + (q4 + i) * CLN_ATTC_HD, u, a[i]);
            }
#else
            /* On scalars (llvmpipe, whose loop limit the plan counts for these loops):
               a key and a column at a time. */
            /* Scores of the block's keys; -inf where a query does not see the key. */
            float s[CLN_ATTC_R][CLN_ATTC_KB];
            for (uint jj = 0; jj < nk; jj++) {
                const __global cln_t *kr = k + kbase + (ulong)(jb + jj) * ksl;
                cln_attc_v sv[CLN_ATTC_R];
                float st[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) {
                    sv[i] = (cln_attc_v)(0.0f);
                    st[i] = 0.0f;
                }
                for (uint u = 0; u < units; u++) {
                    const cln_attc_v kk = CLN_ATTC_GLOAD(kr, u);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++)
                        sv[i] = fma(CLN_ATTC_PLOAD(qp + (q4 + i) * CLN_ATTC_HD, u), kk, sv[i]);
                }
                for (uint d = tail0; d < head_dim; d++) {
                    const float kk = CLN_LOAD(kr, d);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++)
                        st[i] = fma(qp[(q4 + i) * CLN_ATTC_HD + d], kk, st[i]);
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++)
                    s[i][jj] = jb + jj <= last[q4 + i] ? cln_attc_hsum(sv[i]) + st[i] : -INFINITY;
            }
            /* The block into each query's running (m, l); the scores become weights. */
            float alpha[CLN_ATTC_R];
            #pragma unroll
            for (uint i = 0; i < CLN_ATTC_R; i++) {
                float mb = -INFINITY;
                for (uint jj = 0; jj < nk; jj++) mb = fmax(mb, s[i][jj]);
                const float mo = mrun[q4 + i], mn = fmax(mo, mb);
                float l = 0.0f;
                for (uint jj = 0; jj < nk; jj++) {
                    const float p = cln_w(s[i][jj], mn);
                    s[i][jj] = p;
                    l += p;
                }
                alpha[i] = cln_w(mo, mn);
                lrun[q4 + i] = lrun[q4 + i] * alpha[i] + l;
                mrun[q4 + i] = mn;
            }
            /* Rescale, then add the weighted V rows, each vector read once for the
               pass's queries. A weight of 0 adds nothing, even where v is NaN. */
            for (uint u = 0; u < units; u++) {
                cln_attc_v a[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++)
                    a[i] = CLN_ATTC_PLOAD(acc + (q4 + i) * CLN_ATTC_HD, u) * alpha[i];
                for (uint jj = 0; jj < nk; jj++) {
                    const cln_attc_v vv = CLN_ATTC_RLOAD(CLN_ATTC_VROW(jj), u);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++) {
                        const float p = s[i][jj];
                        a[i] = p != 0.0f ? fma((cln_attc_v)(p), vv, a[i]) : a[i];
                    }
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++)
                    CLN_ATTC_PSTORE(acc + (q4 + i) * CLN_ATTC_HD, u, a[i]);
            }
#endif
            for (uint d = tail0; d < head_dim; d++) {
                float a[CLN_ATTC_R];
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) a[i] = acc[(q4 + i) * CLN_ATTC_HD + d] * alpha[i];
                for (uint jj = 0; jj < nk; jj++) {
                    const float vv = CLN_ATTC_RSCALAR(CLN_ATTC_VROW(jj), d);
                    #pragma unroll
                    for (uint i = 0; i < CLN_ATTC_R; i++) {
                        const float p = s[i][jj];
                        a[i] = p != 0.0f ? fma(p, vv, a[i]) : a[i];
                    }
                }
                #pragma unroll
                for (uint i = 0; i < CLN_ATTC_R; i++) acc[(q4 + i) * CLN_ATTC_HD + d] = a[i];
            }
        }
    }

    CLN_ATTC_RESULTS(CLN_ATTC_PASSES_ACC)
}
#endif
