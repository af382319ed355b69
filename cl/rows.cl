/* A work-item's share of a row segment p[0, n): a scalar head of h elements, then
   chunks of CLN_VEC elements dealt round-robin over the team's lanes, then the scalar
   tail. With CLN_VEC == 1 only the scalar loop remains. Each helper returns this
   work-item's partial; the kernels reduce the partials across the team. */

/* Which chunks a lane takes: round-robin on GPUs, so that neighbouring work-items
   touch neighbouring memory at once (coalescing); a contiguous block on CPUs, where
   a work-group's work-items run one after another on one core and each should
   stream its own part of the row. */
#if CLN_BLOCKED
#define CLN_FOR_CHUNKS(k, nc) \
    for (ulong k = (nc) * lane / team; k < (nc) * (lane + 1) / team; k++)
#else
#define CLN_FOR_CHUNKS(k, nc) for (ulong k = lane; k < (nc); k += team)
#endif

/* Elements from address a to its next whole vector, where b and c (a loop's other
   pointers, or a again) sit at the same place in the vector; n + 1 where they do not.
   The coop kernel takes it in every build. */
CLN_INLINE ulong cln_vhead(ulong a, ulong b, ulong c, ulong n)
{
    const ulong vb = CLN_VEC * sizeof(cln_t);
    const ulong pa = a % vb;
    if (pa != b % vb || pa != c % vb || pa % sizeof(cln_t)) return n + 1;
    return (vb - pa) % vb / sizeof(cln_t);
}

/* Where the chunks of a segment lie: h scalar elements first, then nc chunks. CPU
   builds load chunks anywhere (vloadn), so h is 0. GPU builds need every pointer of a
   loop aligned to the vector: the chunks start at a's first aligned element when b
   and c have the same phase (cln_vhead); otherwise, or when the segment is shorter
   than the head, the loop is all scalar. */
#if CLN_VEC > 1 && !CLN_BLOCKED
#define CLN_LAYOUT(n, a, b, c)                                                       \
    const ulong h_ = cln_vhead((ulong)(a), (ulong)(b), (ulong)(c), (n));                         \
    const ulong h = h_ <= (n) ? h_ : 0;                                              \
    const ulong nc = h_ <= (n) ? ((n) - h_) / CLN_VEC : 0
#else
#define CLN_LAYOUT(n, a, b, c)                                                       \
    const ulong h = 0;                                                               \
    const ulong nc = (n) / CLN_VEC * (CLN_VEC > 1)
#endif

/* The scalar elements c of a segment: the head [0, h) and the tail after the chunks. */
#define CLN_REST_COL(r, h, nc) ((r) < (h) ? (r) : (r) + (nc) * CLN_VEC)
#define CLN_FOR_REST(c, n, h, nc)                                                    \
    for (ulong r_ = lane, c = CLN_REST_COL(r_, h, nc); r_ < (n) - (nc) * CLN_VEC;     \
         r_ += team, c = CLN_REST_COL(r_, h, nc))

#if CLN_VEC > 1
/* Horizontal sum and maximum through a private array; compilers fold it. */
CLN_INLINE float cln_hsum(cln_fv v)
{
    float t[CLN_VEC], s = 0.0f;
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (int i = 0; i < CLN_VEC; i++) s += t[i];
    return s;
}

CLN_INLINE float cln_hmax(cln_fv v)
{
    float t[CLN_VEC], s = -INFINITY;
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (int i = 0; i < CLN_VEC; i++) s = fmax(s, t[i]);
    return s;
}

/* cln_w lane by lane, each lane with its own maximum. */
CLN_INLINE cln_fv cln_wvv(cln_fv x, cln_fv m)
{
    cln_fv eq = select((cln_fv)1.0f, (cln_fv)0.0f, isequal(m, (cln_fv)(-INFINITY)));
    return select(CLN_EXP(x - m), eq, isequal(x, m));
}

/* cln_w on a vector: exp(x - m), with the same special cases. */
CLN_INLINE cln_fv cln_wv(cln_fv x, float m)
{
    cln_fv e = CLN_EXP(x - m);
    float eq = m == -INFINITY ? 0.0f : 1.0f;
    return select(e, (cln_fv)eq, isequal(x, (cln_fv)m));
}
#endif

/* Compensated (Kahan) accumulation: a work-item may add up to a million terms, and
   plain float32 sums drift past the contract's 2e-5 there. Without fast-math the
   compiler keeps the correction; it costs three adds, free beside memory or exp.
   Once the sum is inf or NaN the correction is dropped, so inf stays inf. */
#define CLN_KAHAN(s, c, v)                                                           \
    do {                                                                             \
        __typeof__(s) y_ = (v) - (c), t_ = (s) + y_;                                 \
        (c) = select((__typeof__(s))0.0f, (t_ - (s)) - y_, isfinite(t_));            \
        (s) = t_;                                                                    \
    } while (0)

/* sum((x * scale)^2) and max |x| of this work-item's share. q and g are the pointers of
   the write pass that follows in the same kernel (or p again): the layout covers them
   so that every element stays with one work-item. In place, an element read here by
   one work-item and written later by another would race across the local-memory
   barriers between. */
CLN_INLINE float cln_seg_sumsq(__global const cln_t *p, __global const cln_t *q,
                           __global const cln_t *g, ulong n, float scale, uint lane, uint team,
                           float *maxabs)
{
    float ss = 0.0f, ma = 0.0f, e = 0.0f;
    CLN_LAYOUT(n, p, q, g);
#if CLN_VEC > 1
    cln_fv sv = 0.0f, ev = 0.0f, mv = 0.0f;
    CLN_FOR_CHUNKS(k, nc) {
        cln_fv v = CLN_LOADV(p + h, k) * scale;
        CLN_KAHAN(sv, ev, v * v);
        mv = fmax(mv, fabs(v));
    }
    ss = cln_hsum(sv) - cln_hsum(ev);
    ma = cln_hmax(mv);
#endif
    CLN_FOR_REST(c, n, h, nc) {
        float v = CLN_LOAD(p, c) * scale;
        CLN_KAHAN(ss, e, v * v);
        ma = fmax(ma, fabs(v));
    }
    ss -= e;
    *maxabs = ma;
    return ss;
}

CLN_INLINE float cln_seg_max(__global const cln_t *p, ulong n, uint lane, uint team)
{
    float m = -INFINITY;
    CLN_LAYOUT(n, p, p, p);
#if CLN_VEC > 1
    cln_fv mv = -INFINITY;
    CLN_FOR_CHUNKS(k, nc) mv = fmax(mv, CLN_LOADV(p + h, k));
    m = cln_hmax(mv);
#endif
    CLN_FOR_REST(c, n, h, nc) m = fmax(m, CLN_LOAD(p, c));
    return m;
}

CLN_INLINE float cln_seg_sumexp(__global const cln_t *p, ulong n, float m, uint lane, uint team)
{
    float l = 0.0f, e = 0.0f;
    CLN_LAYOUT(n, p, p, p);
#if CLN_VEC > 1
    cln_fv lv = 0.0f, ev = 0.0f;
    CLN_FOR_CHUNKS(k, nc) CLN_KAHAN(lv, ev, cln_wv(CLN_LOADV(p + h, k), m));
    l = cln_hsum(lv) - cln_hsum(ev);
#endif
    CLN_FOR_REST(c, n, h, nc) CLN_KAHAN(l, e, cln_w(CLN_LOAD(p, c), m));
    return l - e;
}

/* Online (m, l): the old sum is rescaled whenever the maximum grows, per chunk in
   the vector loop (per block of CLN_ONLINE_BLOCK chunks on CPUs) and per element in
   the tail, so each element costs one exp. */
#define CLN_ONLINE_BLOCK 16
CLN_INLINE void cln_seg_online(__global const cln_t *p, ulong n, uint lane, uint team, float *m_out,
                           float *l_out)
{
    float m = -INFINITY, l = 0.0f, e = 0.0f;
    CLN_LAYOUT(n, p, p, p);
#if CLN_VEC > 1 && CLN_BLOCKED
    /* CPUs: an (m, l) per vector lane, merged once at the end; a horizontal maximum
       and sum per chunk, as in the GPU loop below, would keep this loop from
       vectorising. The lanes rescale once per block of CLN_ONLINE_BLOCK chunks (1 KB
       of float32 at 16 lanes, read twice from L1): the block's maxima first, then one
       exp per element under them, without cln_w's special cases where every lane's
       maximum is finite. See docs/DESIGN.md, 'CPU softmax loops'. */
    cln_fv mv = -INFINITY, lv = 0.0f, ev = 0.0f;
    const ulong k0 = nc * lane / team, k1 = nc * (lane + 1) / team; /* CLN_FOR_CHUNKS's */
    for (ulong b = k0; b < k1; b += CLN_ONLINE_BLOCK) {
        const ulong be = b + CLN_ONLINE_BLOCK < k1 ? b + CLN_ONLINE_BLOCK : k1;
        cln_fv mn = mv;
        for (ulong k = b; k < be; k++) mn = fmax(mn, CLN_LOADV(p + h, k));
        const cln_fv w = cln_wvv(mv, mn); /* 1 where unchanged, 0 from -inf */
        lv *= w;
        ev *= w;
        mv = mn;
        cln_fv s = 0.0f;
        if (all(isfinite(mn)))
            for (ulong k = b; k < be; k++) s += CLN_EXP(CLN_LOADV(p + h, k) - mn);
        else
            for (ulong k = b; k < be; k++) s += cln_wvv(CLN_LOADV(p + h, k), mn);
        CLN_KAHAN(lv, ev, s);
    }
    float tm[CLN_VEC], tl[CLN_VEC];
    CLN_CAT(vstore, CLN_VEC)(mv, 0, tm);
    CLN_CAT(vstore, CLN_VEC)(lv - ev, 0, tl);
    for (int i = 0; i < CLN_VEC; i++) cln_merge(&m, &l, tm[i], tl[i]);
#elif CLN_VEC > 1
    CLN_FOR_CHUNKS(k, nc) {
        cln_fv v = CLN_LOADV(p + h, k);
        float cm = cln_hmax(v);
        if (cm > m) {
            float w = cln_w(m, cm);
            l *= w;
            e *= w;
            m = cm;
        }
        CLN_KAHAN(l, e, cln_hsum(cln_wv(v, m)));
    }
#endif
    CLN_FOR_REST(c, n, h, nc) {
        float v = CLN_LOAD(p, c);
        if (v > m) {
            float w = cln_w(m, v);
            l *= w;
            e *= w;
            m = v;
        }
        CLN_KAHAN(l, e, cln_w(v, m));
    }
    *m_out = m;
    *l_out = l - e;
}

/* 1/l, except 0 for an empty (all -inf) row and NaN for a NaN row. */
CLN_INLINE float cln_inv_sum(float l)
{
    if (isnan(l)) return l;
    return l > 0.0f ? 1.0f / l : 0.0f;
}

#if CLN_BF16_TINY && CLN_DTYPE == 2
/* bfloat16 keeps values down to 2^-133, but a device without float32 denormals
   (CLN_BF16_TINY) flushes a weight below 2^-126 to zero. Such a weight, where x - m =
   d lies within reach of 2^-133 (above CLN_BF16_TINY_D, which leaves room for given
   statistics with l below 1) and the row is not empty (inv > 0), is taken again 2^64
   times larger, a normal float down to that d, and its bits formed from that: the
   bfloat16 of w itself from 2^-126 up, else the count of 2^-133 steps, rounded to
   nearest even as the store rounds. cln_bf16_weight gives the stored bits of
   cln_w(x, m) * inv, either way. */
#define CLN_BF16_TINY_D (-130.0f)
CLN_INLINE ushort cln_bf16_weight(float x, float m, float inv)
{
    const float w = cln_w(x, m) * inv, d = x - m;
    if (!(w < 0x1p-126f && d > CLN_BF16_TINY_D && inv > 0.0f)) return cln_to_bf16(w);
    const float ys = exp2(fma(d, M_LOG2E_F, 64.0f)) * inv;
    return ys >= 0x1p-62f ? cln_to_bf16(ys * 0x1p-64f) : (ushort)rint(ys * 0x1p69f);
}
#endif

/* q = exp(p - m) / l over this work-item's share. */
CLN_INLINE void cln_seg_softmax_write(__global const cln_t *p, __global cln_t *q, ulong n, float m,
                                  float l, uint lane, uint team)
{
    float inv = cln_inv_sum(l);
    CLN_LAYOUT(n, p, q, q);
#if CLN_VEC > 1
    CLN_FOR_CHUNKS(k, nc) {
        const cln_fv x = CLN_LOADV(p + h, k), w = cln_wv(x, m) * inv;
#if CLN_BF16_TINY && CLN_DTYPE == 2
        /* Rare: a chunk with a tiny weight is converted element by element, before it
           is stored, since in place its x is gone after the store. */
        if (inv > 0.0f &&
            any(isless(w, (cln_fv)0x1p-126f) & isgreater(x - m, (cln_fv)CLN_BF16_TINY_D))) {
            float xt[CLN_VEC];
            ushort b[CLN_VEC];
            CLN_CAT(vstore, CLN_VEC)(x, 0, xt);
            for (uint e = 0; e < CLN_VEC; e++) b[e] = cln_bf16_weight(xt[e], m, inv);
            CLN_RAWV_STORE(cln_sv, q + h, k, CLN_CAT(vload, CLN_VEC)(0, b));
            continue;
        }
#endif
        CLN_STOREV(q + h, k, w);
    }
#endif
#if CLN_BF16_TINY && CLN_DTYPE == 2
    CLN_FOR_REST(c, n, h, nc) q[c] = cln_bf16_weight(CLN_LOAD(p, c), m, inv);
#else
    CLN_FOR_REST(c, n, h, nc) CLN_STORE(q, c, cln_w(CLN_LOAD(p, c), m) * inv);
#endif
}

/* q = 0 over this work-item's share: the rows clnorm_softmax_apply is given empty
   statistics for, where exp(x - m) / l would form inf * 0. */
CLN_INLINE void cln_seg_zero(__global cln_t *q, ulong n, uint lane, uint team)
{
    CLN_LAYOUT(n, q, q, q);
#if CLN_VEC > 1
    CLN_FOR_CHUNKS(k, nc) CLN_STOREV(q + h, k, (cln_fv)0.0f);
#endif
    CLN_FOR_REST(c, n, h, nc) CLN_STORE(q, c, 0.0f);
}

/* q = (p * sc) * rs * g over this work-item's share (g: gamma from the same column,
   or NULL-like when has_gamma is 0). */
CLN_INLINE void cln_seg_scale_write(__global const cln_t *p, __global cln_t *q,
                                __global const cln_t *g, uint has_gamma, ulong n, float sc,
                                float rs, uint lane, uint team)
{
    CLN_LAYOUT(n, p, q, has_gamma ? g : q);
#if CLN_VEC > 1
    CLN_FOR_CHUNKS(k, nc) {
        cln_fv o = (CLN_LOADV(p + h, k) * sc) * rs;
        if (has_gamma) o *= CLN_LOADV(g + h, k);
        CLN_STOREV(q + h, k, o);
    }
#endif
    CLN_FOR_REST(c, n, h, nc) {
        float o = (CLN_LOAD(p, c) * sc) * rs;
        if (has_gamma) o *= CLN_LOAD(g, c);
        CLN_STORE(q, c, o);
    }
}

#if CLN_BLOCKED && CLN_DTYPE == 0
/* cln_seg_sumexp_store's vector loop adds its weights plainly within blocks of
   CLN_SUM_BLOCK chunks and compensates only the blocks' sums: each lane's error stays
   under CLN_SUM_BLOCK roundings of its sum (2e-6 relative). Where the row's maximum is
   finite (a test uniform over the row) it takes exp without cln_w's special cases,
   which then cannot occur. See docs/DESIGN.md, 'CPU softmax loops'. */
#define CLN_SUM_BLOCK 32
#define CLN_SUMEXP_STORE_LOOP(WV)                                                    \
    CLN_FOR_CHUNKS(k, nc) {                                                          \
        cln_fv w = WV;                                                               \
        CLN_STOREV(q + h, k, w);                                                     \
        bv += w;                                                                     \
        if (++j == CLN_SUM_BLOCK) {                                                  \
            CLN_KAHAN(lv, ev, bv);                                                   \
            bv = 0.0f;                                                               \
            j = 0;                                                                   \
        }                                                                            \
    }

/* The CPU form of the three-pass softmax's second pass: q = exp(p - m) as it sums,
   so that the last pass scales q in place instead of taking exp again (exp dominates
   softmax on CPUs). The values are those of cln_seg_softmax_write, bit for bit: the
   same float weight times the same 1/l. Float32 only: 16-bit storage would round the
   weight twice. q may be p (in place): each element is read before it is written, by
   the same work-item. */
CLN_INLINE float cln_seg_sumexp_store(__global const cln_t *p, __global cln_t *q, ulong n, float m,
                                  uint lane, uint team)
{
    float l = 0.0f, e = 0.0f;
    CLN_LAYOUT(n, p, q, q);
#if CLN_VEC > 1
    cln_fv lv = 0.0f, ev = 0.0f, bv = 0.0f;
    uint j = 0;
    if (isfinite(m)) {
        CLN_SUMEXP_STORE_LOOP(CLN_EXP(CLN_LOADV(p + h, k) - m))
    } else {
        CLN_SUMEXP_STORE_LOOP(cln_wv(CLN_LOADV(p + h, k), m))
    }
    CLN_KAHAN(lv, ev, bv);
    l = cln_hsum(lv) - cln_hsum(ev);
#endif
    CLN_FOR_REST(c, n, h, nc) {
        float w = cln_w(CLN_LOAD(p, c), m);
        CLN_STORE(q, c, w);
        CLN_KAHAN(l, e, w);
    }
    return l - e;
}

/* q *= 1/l over this work-item's share (the same elements it stored above). */
CLN_INLINE void cln_seg_scale_inplace(__global cln_t *q, ulong n, float l, uint lane, uint team)
{
    float inv = cln_inv_sum(l);
    CLN_LAYOUT(n, q, q, q);
#if CLN_VEC > 1
    CLN_FOR_CHUNKS(k, nc) CLN_STOREV(q + h, k, CLN_LOADV(q + h, k) * inv);
#endif
    CLN_FOR_REST(c, n, h, nc) CLN_STORE(q, c, CLN_LOAD(q, c) * inv);
}
#endif
