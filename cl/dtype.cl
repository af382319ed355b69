/* Storage types. Every kernel loads its dtype into float and stores float back,
   so all arithmetic and statistics are float32 whatever the storage.
   CLN_DTYPE: 0 float32, 1 float16 (core vload_half/vstore_half, no cl_khr_fp16),
   2 bfloat16 (the high 16 bits of a float32). */
/* CLN_ONLY=1 with CLN_ONLY_<kernel>=1 compiles that kernel alone (programs of one
   kernel, src/build_options.c); by default every kernel is compiled. */
#ifndef CLN_ONLY
#define CLN_ONLY 0
#endif
#ifndef CLN_DTYPE
#define CLN_DTYPE 0
#endif
/* CLN_BLOCKED: 1 in builds for CPUs that vectorise work-items (PoCL), 0 for GPUs and
   for CPUs that run work-items as SIMD lanes (CLN_SIMD_LANES 1, Mesa llvmpipe). */
#ifndef CLN_BLOCKED
#define CLN_BLOCKED 0
#endif
#ifndef CLN_SIMD_LANES
#define CLN_SIMD_LANES 0
#endif
/* CLN_BF16_TINY: 1 in bfloat16 builds for devices without float32 denormals
   (cln_seg_softmax_write, cl/rows.cl); other dtypes ignore it. */
#ifndef CLN_BF16_TINY
#define CLN_BF16_TINY 0
#endif
/* Every helper is declared CLN_INLINE. CPU builds have them inlined before the
   driver's work-group passes run: otherwise PoCL 5 aborts the process compiling the
   16-bit words kernels in groups of 64 ("Cannot add context restore for a PHI node at
   the region entry"; docs/DESIGN.md, 'Driver quirks'). */
#if CLN_BLOCKED
#define CLN_INLINE inline __attribute__((always_inline))
#else
#define CLN_INLINE inline
#endif

#if CLN_DTYPE == 0
typedef float cln_t;
#define CLN_LOAD(p, i) ((p)[(i)])
#define CLN_STORE(p, i, v) ((p)[(i)] = (v))
#elif CLN_DTYPE == 1
typedef half cln_t;
#define CLN_LOAD(p, i) vload_half((i), (p))
/* The default vstore_half rounds toward zero; the contract wants nearest-even. */
#define CLN_STORE(p, i, v) vstore_half_rte((v), (i), (p))
#elif CLN_DTYPE == 2
typedef ushort cln_t;
#define CLN_LOAD(p, i) as_float((uint)(p)[(i)] << 16)
/* Round to nearest even; a NaN stays a (quiet) NaN instead of rounding to inf.
   NVIDIA GPUs from compute capability 8 do both in one instruction, for two values
   at once (the host passes -DCLN_NV_CVT there), where the integer form costs about
   seven instructions per element (docs/DESIGN.md, 'bfloat16 conversion'). Its NaN
   is the canonical 0x7fff, still a NaN. */
#ifdef CLN_NV_CVT
#define CLN_NV_BF16 1
CLN_INLINE uint cln_nv_bf16x2(float lo, float hi)
{
    uint w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}
CLN_INLINE ushort cln_to_bf16(float f) { return (ushort)cln_nv_bf16x2(f, 0.0f); }
#else
#define CLN_NV_BF16 0
CLN_INLINE ushort cln_to_bf16(float f)
{
    uint u = as_uint(f);
    if (isnan(f)) return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
#endif
#define CLN_STORE(p, i, v) ((p)[(i)] = cln_to_bf16(v))
#else
#error "unknown CLN_DTYPE"
#endif

/* Words of CLN_WORD (2 or 4) neighbouring elements, for the words register forms
   (the plan uses them only where the row length and every row start are multiples
   of CLN_WORD, so a word is aligned). In float32 a word is a float2 or float4, one
   8- or 16-byte load; in 16-bit storage a uint or uint2 that stays packed in its
   registers, so that a register carries as many bytes of the row as in float32.
   cln_pf is a word unpacked to float; CLN_WORD_SLOTS(k): words a work-item holds
   where the float32 plain form holds k values. */
#ifndef CLN_WORD
#define CLN_WORD 2
#endif
#if CLN_WORD != 2 && CLN_WORD != 4
#error "CLN_WORD must be 2 or 4"
#endif
#if CLN_DTYPE == 0
#define CLN_WORD_SLOTS(k) ((k) / CLN_WORD)
#if CLN_WORD == 4
typedef float4 cln_pw;
#else
typedef float2 cln_pw;
#endif
#define cln_unpackw(w) (w)
#define cln_packw(v) (v)
#else
#define CLN_WORD_SLOTS(k) (2 * (k) / CLN_WORD)
#if CLN_DTYPE == 1
CLN_INLINE float2 cln_unpack2(uint w) { return vload_half2(0, (__private const half *)&w); }
CLN_INLINE uint cln_pack2(float2 v)
{
    uint w;
    vstore_half2_rte(v, 0, (__private half *)&w);
    return w;
}
#else
#ifdef __ENDIAN_LITTLE__ /* the element at the lower address is the low half */
CLN_INLINE float2 cln_unpack2(uint w) { return (float2)(as_float(w << 16), as_float(w & 0xffff0000u)); }
#if CLN_NV_BF16
CLN_INLINE uint cln_pack2(float2 v) { return cln_nv_bf16x2(v.x, v.y); }
#else
CLN_INLINE uint cln_pack2(float2 v) { return (uint)cln_to_bf16(v.x) | (uint)cln_to_bf16(v.y) << 16; }
#endif
#else
CLN_INLINE float2 cln_unpack2(uint w) { return (float2)(as_float(w & 0xffff0000u), as_float(w << 16)); }
CLN_INLINE uint cln_pack2(float2 v) { return (uint)cln_to_bf16(v.x) << 16 | (uint)cln_to_bf16(v.y); }
#endif
#endif
#if CLN_WORD == 4
typedef uint2 cln_pw;
#if CLN_DTYPE == 1
/* One builtin for the four halves: Oclgrind's --uninitialized check crashes on two
   vload_half2 of one word in unoptimised builds (docs/DESIGN.md, 'Driver quirks'). */
CLN_INLINE float4 cln_unpackw(uint2 w) { return vload_half4(0, (__private const half *)&w); }
CLN_INLINE uint2 cln_packw(float4 v)
{
    uint2 w;
    vstore_half4_rte(v, 0, (__private half *)&w);
    return w;
}
#else
/* Unpacked lane-wise, since Oclgrind's --uninitialized check crashes on a float4
   built of two float2 (docs/DESIGN.md, 'Driver quirks'); packed as two words of two,
   so that the rounding and the NaN rule live in cln_to_bf16 alone (NVIDIA's
   cln_pack2 is one instruction per pair). */
#ifdef __ENDIAN_LITTLE__
CLN_INLINE float4 cln_unpackw(uint2 w)
{
    return as_float4((uint4)(w.x << 16, w.x & 0xffff0000u, w.y << 16, w.y & 0xffff0000u));
}
#else
CLN_INLINE float4 cln_unpackw(uint2 w) { return (float4)(cln_unpack2(w.x), cln_unpack2(w.y)); }
#endif
CLN_INLINE uint2 cln_packw(float4 v) { return (uint2)(cln_pack2(v.lo), cln_pack2(v.hi)); }
#endif
#else
typedef uint cln_pw;
#define cln_unpackw cln_unpack2
#define cln_packw cln_pack2
#endif
#endif
/* A word as floats, and what the kernels do with one. */
#if CLN_WORD == 4
typedef float4 cln_pf;
#define CLN_PF_W(f, WF, m) (float4)(WF((f).x, m), WF((f).y, m), WF((f).z, m), WF((f).w, m))
#define CLN_PF_SUM(f) (((f).x + (f).y) + ((f).z + (f).w))
#define CLN_PF_MAX(f) fmax(fmax((f).x, (f).y), fmax((f).z, (f).w))
#define CLN_PF_SQ(a, t) \
    fma((t).w, (t).w, fma((t).z, (t).z, fma((t).y, (t).y, fma((t).x, (t).x, (a)))))
#else
typedef float2 cln_pf;
#define CLN_PF_W(f, WF, m) (float2)(WF((f).x, m), WF((f).y, m))
#define CLN_PF_SUM(f) ((f).x + (f).y)
#define CLN_PF_MAX(f) fmax((f).x, (f).y)
#define CLN_PF_SQ(a, t) fma((t).y, (t).y, fma((t).x, (t).x, (a)))
#endif
#define CLN_PF_AMAX(t) CLN_PF_MAX(fabs(t))

/* Vector access for the streaming loops: CLN_VEC elements per chunk (1 disables).
   CPUs vectorise a work-item's own loop only through explicit vector types, since
   float reductions may not be reordered without fast-math; vloadn needs only the
   element's alignment, so any offset works there. GPUs coalesce scalar accesses
   across work-items, but one wide access per work-item keeps four times the bytes in
   flight per instruction, and a vloadn, promising only element alignment, is split
   back into scalar loads: GPU builds (CLN_BLOCKED 0) access through vector pointers,
   and the loops in cl/rows.cl only give them aligned chunks. */
#ifndef CLN_VEC
#define CLN_VEC 1
#endif
#if CLN_VEC > 1
#define CLN_CAT_(a, b) a##b
#define CLN_CAT(a, b) CLN_CAT_(a, b)
typedef CLN_CAT(float, CLN_VEC) cln_fv;
typedef CLN_CAT(int, CLN_VEC) cln_iv;
typedef CLN_CAT(uint, CLN_VEC) cln_uv;
typedef CLN_CAT(ushort, CLN_VEC) cln_sv;
#if CLN_BLOCKED
#define CLN_RAWV_LOAD(T, p, k) CLN_CAT(vload, CLN_VEC)((k), (p))
#define CLN_RAWV_STORE(T, p, k, v) CLN_CAT(vstore, CLN_VEC)((v), (k), (p))
#else
#define CLN_RAWV_LOAD(T, p, k) (((__global const T *)(p))[k])
#define CLN_RAWV_STORE(T, p, k, v) (((__global T *)(p))[k] = (v))
#endif
#if CLN_DTYPE == 0
#define CLN_LOADV(p, k) CLN_RAWV_LOAD(cln_fv, p, k)
#define CLN_STOREV(p, k, v) CLN_RAWV_STORE(cln_fv, p, k, v)
#elif CLN_DTYPE == 1
#if CLN_BLOCKED
/* Element by element: PoCL 3.1's vload_half8 faults on addresses that are not
   vector-aligned, although the specification asks only for half alignment
   (docs/DESIGN.md, 'Driver quirks'). */
CLN_INLINE cln_fv cln_loadv_half(size_t k, __global const half *p)
{
    float t[CLN_VEC];
    for (int i = 0; i < CLN_VEC; i++) t[i] = vload_half(k * CLN_VEC + i, p);
    return CLN_CAT(vload, CLN_VEC)(0, t);
}
CLN_INLINE void cln_storev_half(cln_fv v, size_t k, __global half *p)
{
    float t[CLN_VEC];
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (int i = 0; i < CLN_VEC; i++) vstore_half_rte(t[i], k * CLN_VEC + i, p);
}
#else
/* One aligned wide load of the bits, converted in registers. */
CLN_INLINE cln_fv cln_loadv_half(size_t k, __global const half *p)
{
    cln_sv u = CLN_RAWV_LOAD(cln_sv, p, k);
    return CLN_CAT(vload_half, CLN_VEC)(0, (__private const half *)&u);
}
CLN_INLINE void cln_storev_half(cln_fv v, size_t k, __global half *p)
{
    cln_sv u;
    CLN_CAT(CLN_CAT(vstore_half, CLN_VEC), _rte)(v, 0, (__private half *)&u);
    CLN_RAWV_STORE(cln_sv, p, k, u);
}
#endif
#define CLN_LOADV(p, k) cln_loadv_half((k), (p))
#define CLN_STOREV(p, k, v) cln_storev_half((v), (k), (p))
#else
#define CLN_LOADV(p, k) \
    CLN_CAT(as_float, CLN_VEC)(CLN_CAT(convert_uint, CLN_VEC)(CLN_RAWV_LOAD(cln_sv, p, k)) << 16)
CLN_INLINE void cln_storev_bf16(cln_fv v, size_t k, __global ushort *p)
{
#if CLN_NV_BF16 && CLN_VEC % 2 == 0
    float t[CLN_VEC];
    uint w[CLN_VEC / 2];
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (int i = 0; i < CLN_VEC / 2; i++) w[i] = cln_nv_bf16x2(t[2 * i], t[2 * i + 1]);
    CLN_RAWV_STORE(cln_sv, p, k, CLN_CAT(vload, CLN_VEC)(0, (__private const ushort *)w));
#else
    cln_uv u = CLN_CAT(as_uint, CLN_VEC)(v);
    cln_uv r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    cln_uv q = (u >> 16) | 0x40u; /* NaN stays NaN */
    r = select(r, q, CLN_CAT(as_uint, CLN_VEC)(isnan(v)));
    CLN_RAWV_STORE(cln_sv, p, k, CLN_CAT(convert_ushort, CLN_VEC)(r));
#endif
}
#define CLN_STOREV(p, k, v) cln_storev_bf16((v), (k), (p))
#endif
#endif
