/* RMSNorm: y = x * (sum(x^2) / cols + eps)^(-1/2) * gamma, and the fused residual add.
   The sum of squares is float32 whatever the storage. Where it overflows (|x| from
   about 1e19) or loses its precision to underflow (|x| below about 1e-19, with eps
   too small to dominate), the row is scaled by a power of two and summed again, so
   every finite row gets the right answer; ordinary rows only pay one comparison. */

CLN_INLINE bool cln_rms_needs_rescale(float ss, float eps)
{
    return isinf(ss) || (ss < 0x1p-96f && eps < 0x1p-70f);
}

/* 2^-ilogb(maxabs), clamped so that it is finite and brings even denormals up. */
CLN_INLINE float cln_rms_scale(float maxabs)
{
    if (!(maxabs > 0.0f) || isinf(maxabs)) return 1.0f;
    return ldexp(1.0f, clamp(-ilogb(maxabs), -126, 126));
}

/* From the (scaled) sum of squares: y = (x * sc) * rs. When eps * scale^2 overflows,
   the mean is negligible beside eps and the unscaled form is exact. */
CLN_INLINE void cln_rms_factor(float ss, ulong cols, float eps, float scale, float *sc, float *rs)
{
    float t = eps * scale * scale;
    if (isinf(t)) {
        *sc = 1.0f;
        *rs = 1.0f / sqrt(eps);
    } else {
        *sc = scale;
        *rs = 1.0f / sqrt(ss / (float)cols + t);
    }
}

/* True in every work-item when any row of the work-group wants b; flag is the
   __local int after the reduction scratch (CLN_FLAG), cleared by work-item 0 at the
   kernel's start. It lives in the scratch argument rather than in a kernel-scope
   __local variable, with which PoCL 5 writes outside the output (docs/DESIGN.md,
   'Driver quirks'). */
#define CLN_FLAG ((__local int *)(scratch + get_local_size(0)))
CLN_INLINE bool cln_any(bool b, __local int *flag, uint team)
{
    if (team == get_local_size(0)) return b; /* one row: already uniform */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (b) atomic_or(flag, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    return *flag != 0;
}

/* The rescaling branch holds barriers. Mesa llvmpipe 22.3 loses the lanes of a
   work-group's partial last SIMD group after barriers inside a branch, even a
   uniform one (docs/DESIGN.md, 'Driver quirks'). There (CLN_FLAT_BARRIERS) the
   branch's body runs for every row; its effects are guarded by `need` inside, so
   only time is spent. */
#ifdef CLN_FLAT_BARRIERS
#define CLN_IF_ANY(c) if ((c) || 1)
#else
#define CLN_IF_ANY(c) if (c)
#endif

/* Rounds a float to the storage type and back, for the fused add's h. */
CLN_INLINE float cln_round(float v)
{
#if CLN_DTYPE == 0
    return v;
#elif CLN_DTYPE == 1
    /* A half variable needs cl_khr_fp16, a pointer to half does not. */
    ushort u;
    vstore_half_rte(v, 0, (__private half *)&u);
    return vload_half(0, (__private const half *)&u);
#else
    return as_float((uint)cln_to_bf16(v) << 16);
#endif
}

/* h of the fused add: read back from residual once written there, else recomputed. */
#define CLN_H(c) (update ? CLN_LOAD(rr, c) : cln_round(CLN_LOAD(xr, c) + CLN_LOAD(rr, c)))

/* Streaming form, shared by rmsnorm (rr == 0) and the fused add. */
#define CLN_RMS_STREAM_BODY(LOADV)                                                   \
    float ss = 0.0f, se = 0.0f;                                                      \
    if (active)                                                                      \
        for (ulong c = lane; c < cols; c += team) {                                  \
            float v = LOADV(c);                                                      \
            CLN_KAHAN(ss, se, v * v);                                                \
        }                                                                            \
    ss -= se;                                                                        \
    ss = cln_sum(ss, scratch, lid, lane, team);                                      \
    float scale = 1.0f;                                                              \
    bool need = active && cln_rms_needs_rescale(ss, eps);                            \
    CLN_IF_ANY(cln_any(need, CLN_FLAG, team)) {                                      \
        float ma = 0.0f, s2 = 0.0f;                                                  \
        if (active)                                                                  \
            for (ulong c = lane; c < cols; c += team) ma = fmax(ma, fabs(LOADV(c))); \
        ma = cln_max(ma, scratch, lid, lane, team);                                  \
        if (need) scale = cln_rms_scale(ma);                                         \
        float e2 = 0.0f;                                                             \
        if (need)                                                                    \
            for (ulong c = lane; c < cols; c += team) {                              \
                float t = LOADV(c) * scale;                                          \
                CLN_KAHAN(s2, e2, t * t);                                            \
            }                                                                        \
        s2 = cln_sum(s2 - e2, scratch, lid, lane, team);                             \
        if (need) ss = s2;                                                           \
    }                                                                                \
    float sc, rs;                                                                    \
    cln_rms_factor(ss, cols, eps, scale, &sc, &rs);                                  \
    __global cln_t *yr = y + yoff + at * yld;                                        \
    for (ulong c = lane; active && c < cols; c += team) {                            \
        float o = (LOADV(c) * sc) * rs;                                              \
        if (has_gamma) o *= CLN_LOAD(gamma, c);                                      \
        CLN_STORE(yr, c, o);                                                         \
    }

#if !CLN_ONLY || CLN_ONLY_clnorm_rmsnorm
__kernel void clnorm_rmsnorm(__global const cln_t *x, ulong xoff, ulong xld,
                             __global const cln_t *gamma, uint has_gamma,
                             __global cln_t *y, ulong yoff, ulong yld,
                             ulong rows, ulong cols, float eps, uint team,
                             __local float *scratch)
{
    CLN_ROW_SETUP();
    if (lid == 0) *CLN_FLAG = 0;
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *yr = y + yoff + at * yld;
    __global const cln_t *gr = has_gamma ? gamma : yr; /* the write pass's pointers */
    float ma;
    float ss = active ? cln_seg_sumsq(xr, yr, gr, cols, 1.0f, lane, team, &ma) : 0.0f;
    ss = cln_sum(ss, scratch, lid, lane, team);
    float scale = 1.0f;
    bool need = active && cln_rms_needs_rescale(ss, eps);
    CLN_IF_ANY(cln_any(need, CLN_FLAG, team)) {
        ma = cln_max(need ? ma : 0.0f, scratch, lid, lane, team);
        if (need) scale = cln_rms_scale(ma);
        float s2 = need ? cln_seg_sumsq(xr, yr, gr, cols, scale, lane, team, &ma) : 0.0f;
        s2 = cln_sum(s2, scratch, lid, lane, team);
        if (need) ss = s2;
    }
    float sc, rs;
    cln_rms_factor(ss, cols, eps, scale, &sc, &rs);
    /* Spare rows leave after the last barrier rather than write with a zero length,
       which makes llvmpipe skip the writes of a partial last SIMD group
       (docs/DESIGN.md, 'Driver quirks'). */
    if (!active) return;
    cln_seg_scale_write(xr, yr, gamma, has_gamma, cols, sc, rs, lane, team);
}
#endif

/* Fused: h = x + residual (rounded to the storage type), optionally stored over
   residual, and y = rmsnorm(h) * gamma. Pass one computes h (and stores it); the
   write pass reads h back from residual, or recomputes it, in the same work-item. */
#if !CLN_ONLY || CLN_ONLY_clnorm_add_rmsnorm
__kernel void clnorm_add_rmsnorm(__global const cln_t *x, ulong xoff, ulong xld,
                                 __global cln_t *res, ulong roff, ulong rld, uint update,
                                 __global const cln_t *gamma, uint has_gamma,
                                 __global cln_t *y, ulong yoff, ulong yld,
                                 ulong rows, ulong cols, float eps, uint team,
                                 __local float *scratch)
{
    CLN_ROW_SETUP();
    if (lid == 0) *CLN_FLAG = 0;
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *rr = res + roff + at * rld;
    if (active && update)
        for (ulong c = lane; c < cols; c += team)
            CLN_STORE(rr, c, CLN_LOAD(xr, c) + CLN_LOAD(rr, c));
    /* The stored h is re-read by the same work-item only: no barrier needed. */
    CLN_RMS_STREAM_BODY(CLN_H)
}
#endif

/* Register forms: the row (or h) is read once into v[], everything else works
   there. The tail is shared by the float form (a value per slot) and the words one
   (CLN_WORD neighbouring elements per slot, see cl/dtype.cl): K slots, n of them filled
   and the spare ones zero; SLOT(i) is slot i as float or cln_pf, SQ(a, t) adds the
   squares of t to a, AMAX(t) is its largest magnitude, PUT(i) writes slot i. */
#define CLN_RMS_REG_TAIL(K, SLOT, SQ, AMAX, PUT)                                     \
    float ss = 0.0f;                                                                 \
    _Pragma("unroll") for (uint i = 0; i < (K); i++) ss = SQ(ss, SLOT(i));           \
    ss = cln_sum(ss, scratch, lid, lane, team);                                      \
    float scale = 1.0f;                                                              \
    bool need = active && cln_rms_needs_rescale(ss, eps);                            \
    CLN_IF_ANY(cln_any(need, CLN_FLAG, team)) {                                      \
        float ma = 0.0f, s2 = 0.0f;                                                  \
        _Pragma("unroll") for (uint i = 0; i < (K); i++) ma = fmax(ma, AMAX(SLOT(i))); \
        ma = cln_max(ma, scratch, lid, lane, team);                                  \
        if (need) scale = cln_rms_scale(ma);                                         \
        _Pragma("unroll") for (uint i = 0; i < (K); i++) s2 = SQ(s2, SLOT(i) * scale); \
        s2 = cln_sum(s2, scratch, lid, lane, team);                                  \
        if (need) ss = s2;                                                           \
    }                                                                                \
    float sc, rs;                                                                    \
    cln_rms_factor(ss, cols, eps, scale, &sc, &rs);                                  \
    _Pragma("unroll") for (uint i = 0; i < (K); i++)                                 \
        if (i < n) PUT(i)

#define CLN_SLOT1(i) v[i]
#define CLN_SQ1(a, t) fma((t), (t), (a))
#define CLN_PUT1(i)                                                                  \
    {                                                                                \
        ulong c = (ulong)i * team + lane;                                            \
        float o = (v[i] * sc) * rs;                                                  \
        if (has_gamma) o *= CLN_LOAD(gamma, c);                                      \
        CLN_STORE(yr, c, o);                                                         \
    }
#define CLN_SLOTW(i) cln_unpackw(v[i])
#define CLN_PUTW(i)                                                                  \
    {                                                                                \
        ulong c = (ulong)i * team + lane;                                            \
        cln_pf o = (cln_unpackw(v[i]) * sc) * rs;                                    \
        if (has_gamma) o *= cln_unpackw(((__global const cln_pw *)gamma)[c]);        \
        ((__global cln_pw *)yr)[c] = cln_packw(o);                                   \
    }

#if !CLN_ONLY || CLN_ONLY_clnorm_rmsnorm_reg
__kernel void clnorm_rmsnorm_reg(__global const cln_t *x, ulong xoff, ulong xld,
                                 __global const cln_t *gamma, uint has_gamma,
                                 __global cln_t *y, ulong yoff, ulong yld,
                                 ulong rows, ulong cols, float eps, uint team,
                                 __local float *scratch)
{
    CLN_ROW_SETUP();
    if (lid == 0) *CLN_FLAG = 0;
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *yr = y + yoff + at * yld;
    const uint n = cln_reg_count(active, cols, lane, team, CLN_RMS_REG_K);
    float v[CLN_RMS_REG_K];
#pragma unroll
    for (uint i = 0; i < CLN_RMS_REG_K; i++) v[i] = i < n ? CLN_LOAD(xr, (ulong)i * team + lane) : 0.0f;
    CLN_RMS_REG_TAIL(CLN_RMS_REG_K, CLN_SLOT1, CLN_SQ1, fabs, CLN_PUT1);
}
#endif

#if !CLN_ONLY || CLN_ONLY_clnorm_add_rmsnorm_reg
__kernel void clnorm_add_rmsnorm_reg(__global const cln_t *x, ulong xoff, ulong xld,
                                     __global cln_t *res, ulong roff, ulong rld, uint update,
                                     __global const cln_t *gamma, uint has_gamma,
                                     __global cln_t *y, ulong yoff, ulong yld,
                                     ulong rows, ulong cols, float eps, uint team,
                                     __local float *scratch)
{
    CLN_ROW_SETUP();
    if (lid == 0) *CLN_FLAG = 0;
    __global const cln_t *xr = x + xoff + at * xld;
    __global cln_t *rr = res + roff + at * rld;
    __global cln_t *yr = y + yoff + at * yld;
    const uint n = cln_reg_count(active, cols, lane, team, CLN_RMS_REG_K);
    float v[CLN_RMS_REG_K];
#pragma unroll
    for (uint i = 0; i < CLN_RMS_REG_K; i++) {
        ulong c = (ulong)i * team + lane;
        v[i] = 0.0f;
        if (i < n) {
            v[i] = cln_round(CLN_LOAD(xr, c) + CLN_LOAD(rr, c));
            if (update) CLN_STORE(rr, c, v[i]);
        }
    }
    CLN_RMS_REG_TAIL(CLN_RMS_REG_K, CLN_SLOT1, CLN_SQ1, fabs, CLN_PUT1);
}
#endif

/* The words forms (cols and every row start multiples of CLN_WORD), in two sizes: K
   words per work-item, as many elements as softmax's register form (_words) or half
   as many (_words_half). The plan takes the half form where a team of up to 256 holds
   the row and the full one for longer rows (docs/DESIGN.md, 'Half and full paired
   kernels'). Keep in step with cln_reg_k in src/plan.c. h of the fused add is rounded
   to the storage type by cln_packw itself, as cln_round does. */
/* What both words kernels start with: the row as words, and its slots. */
#define CLN_WORDS_ROW(K)                                                             \
    CLN_ROW_SETUP();                                                                 \
    if (lid == 0) *CLN_FLAG = 0;                                                     \
    __global const cln_pw *xr = (__global const cln_pw *)(x + xoff + at * xld);      \
    __global cln_t *yr = y + yoff + at * yld;                                        \
    const uint n = cln_reg_count(active, cols / CLN_WORD, lane, team, (K));          \
    cln_pw v[K]
#define CLN_RMS_WORDS_KERNELS(SUFFIX, K)                                             \
    __kernel void clnorm_rmsnorm_##SUFFIX(                                           \
        __global const cln_t *x, ulong xoff, ulong xld, __global const cln_t *gamma,  \
        uint has_gamma, __global cln_t *y, ulong yoff, ulong yld, ulong rows,         \
        ulong cols, float eps, uint team, __local float *scratch)                     \
    {                                                                                \
        CLN_WORDS_ROW(K);                                                            \
        _Pragma("unroll") for (uint i = 0; i < (K); i++)                             \
            v[i] = i < n ? xr[(ulong)i * team + lane] : (cln_pw)0;                   \
        CLN_RMS_REG_TAIL((K), CLN_SLOTW, CLN_PF_SQ, CLN_PF_AMAX, CLN_PUTW);              \
    }                                                                                \
    __kernel void clnorm_add_rmsnorm_##SUFFIX(                                       \
        __global const cln_t *x, ulong xoff, ulong xld, __global cln_t *res,          \
        ulong roff, ulong rld, uint update, __global const cln_t *gamma,              \
        uint has_gamma, __global cln_t *y, ulong yoff, ulong yld, ulong rows,         \
        ulong cols, float eps, uint team, __local float *scratch)                     \
    {                                                                                \
        CLN_WORDS_ROW(K);                                                            \
        __global cln_pw *rr = (__global cln_pw *)(res + roff + at * rld);            \
        _Pragma("unroll") for (uint i = 0; i < (K); i++) {                           \
            ulong c = (ulong)i * team + lane;                                        \
            v[i] = (cln_pw)0;                                                        \
            if (i < n) {                                                             \
                v[i] = cln_packw(cln_unpackw(xr[c]) + cln_unpackw(rr[c]));           \
                if (update) rr[c] = v[i];                                            \
            }                                                                        \
        }                                                                            \
        CLN_RMS_REG_TAIL((K), CLN_SLOTW, CLN_PF_SQ, CLN_PF_AMAX, CLN_PUTW);              \
    }
#if !CLN_ONLY || CLN_ONLY_clnorm_rmsnorm_words || CLN_ONLY_clnorm_add_rmsnorm_words
CLN_RMS_WORDS_KERNELS(words, CLN_WORD_SLOTS(CLN_REG_K))
#endif
#if !CLN_ONLY || CLN_ONLY_clnorm_rmsnorm_words_half || CLN_ONLY_clnorm_add_rmsnorm_words_half
CLN_RMS_WORDS_KERNELS(words_half, CLN_WORD_SLOTS(CLN_REG_K) / 2)
#endif

/* ---- Split rows: stage one leaves per slice (sum of squares, max |x|, e) where
   the sum is of (x * 2^e)^2: e = 0 normally, or the slice's own scale when its plain
   sum overflowed or underflowed. Stage two rescales every part to one common power
   of two, so no stage needs to read x again after another may have written y over
   it (in place). ------------------------------------------------------------------ */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_sum_squares
__kernel void clnorm_split_sum_squares(__global const cln_t *x, ulong xoff, ulong xld, ulong cols,
                                       ulong slices, ulong slice_len, __global float *part,
                                       __local float *scratch)
{
    CLN_SPLIT_SETUP();
    __global const cln_t *xr = x + xoff + row * xld + c0;
    float ma, ss = cln_seg_sumsq(xr, xr, xr, c1 - c0, 1.0f, lane, team, &ma);
    ss = cln_sum(ss, scratch, lid, lane, team);
    ma = cln_max(ma, scratch, lid, lane, team);
    float e = 0.0f;
    if (cln_rms_needs_rescale(ss, 0.0f) && ma > 0.0f && !isinf(ma)) { /* uniform */
        float sc = cln_rms_scale(ma);
        e = (float)ilogb(sc);
        ss = cln_sum(cln_seg_sumsq(xr, xr, xr, c1 - c0, sc, lane, team, &ma), scratch, lid,
                     lane, team);
        ma = cln_max(ma, scratch, lid, lane, team) / sc;
    }
    if (lid == 0) {
        part[4 * g] = ss;
        part[4 * g + 1] = ma;
        part[4 * g + 2] = e;
    }
}
#endif

/* Stage two: merge the row's parts at one scale, then write this slice. */
#if !CLN_ONLY || CLN_ONLY_clnorm_split_rmsnorm
__kernel void clnorm_split_rmsnorm(__global const cln_t *x, ulong xoff, ulong xld,
                                   __global const cln_t *gamma, uint has_gamma,
                                   __global cln_t *y, ulong yoff, ulong yld, ulong cols,
                                   float eps, ulong slices, ulong slice_len,
                                   __global const float *part, __local float *scratch)
{
    CLN_SPLIT_SETUP();
    __global const float *pr = part + 4 * row * slices;
    float ss = 0.0f, ma = 0.0f, scaled = 0.0f;
    for (ulong i = lid; i < slices; i += team) {
        ss += pr[4 * i];
        ma = fmax(ma, pr[4 * i + 1]);
        scaled = fmax(scaled, pr[4 * i + 2] != 0.0f ? 1.0f : 0.0f);
    }
    ss = cln_sum(ss, scratch, lid, lane, team);
    ma = cln_max(ma, scratch, lid, lane, team);
    scaled = cln_max(scaled, scratch, lid, lane, team);
    float scale = 1.0f;
    /* Uniform: one row per work-group. */
    if ((scaled != 0.0f || cln_rms_needs_rescale(ss, eps)) && ma > 0.0f && !isinf(ma)) {
        scale = cln_rms_scale(ma);
        int es = ilogb(scale);
        float s2 = 0.0f;
        for (ulong i = lid; i < slices; i += team)
            s2 += ldexp(pr[4 * i], 2 * (es - (int)pr[4 * i + 2]));
        ss = cln_sum(s2, scratch, lid, lane, team);
    }
    float sc, rs;
    cln_rms_factor(ss, cols, eps, scale, &sc, &rs);
    cln_seg_scale_write(x + xoff + row * xld + c0, y + yoff + row * yld + c0, gamma + c0,
                        has_gamma, c1 - c0, sc, rs, lane, team);
}
#endif
