/* Storage types. Every kernel loads its dtype into float and stores float back,
   so all arithmetic and statistics are float32 whatever the storage.
   CLN_DTYPE: 0 float32, 1 float16 (core vload_half/vstore_half, no cl_khr_fp16),
   2 bfloat16 (the high 16 bits of a float32). */
#ifndef CLN_DTYPE
#define CLN_DTYPE 0
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
/* Round to nearest even; a NaN stays a (quiet) NaN instead of rounding to inf. */
inline ushort cln_to_bf16(float f)
{
    uint u = as_uint(f);
    if (isnan(f)) return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
#define CLN_STORE(p, i, v) ((p)[(i)] = cln_to_bf16(v))
#else
#error "unknown CLN_DTYPE"
#endif
