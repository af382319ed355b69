/* The coop variant: softmax of split rows in one launch. Several work-groups share a
   row; each holds its slice in registers (CLN_COOP_ELEMS elements per work-item) and,
   past them, in local memory (the plan's scratch before the pair's, cln_coop_held, in
   at most CLN_COOP_BATCHES batches of the registers' size), publishes the slice's
   (m, l), waits until every slice of its row has published, merges them all and
   writes its slice from where it holds it. The row is read from memory once, against
   twice in the two-launch split (docs/DESIGN.md, 'One-launch split rows').

   Waiting inside a kernel is safe only if every group waited for runs or will run.
   Groups therefore take their slice from a ticket in the order they start, not from
   their group id: a running group waits only for its row's other slices, whose
   tickets were taken before it or will be taken by the next groups to start, and the
   plan keeps a row's slices within the compute units, so a row's groups always fit
   on the device together. The plan takes this variant only on devices whose running
   groups are known to progress side by side (NVIDIA).

   Each call exchanges its pairs through words of its own, zero when it starts
   (src/scratch.c hands out fresh ones, from an even index): sync[0] hands out
   tickets, and from sync[2] on, 64 bits a slice, row r's slice i publishes its (m, l)
   at 1 + r * slices + i. A published pair is never all zeros (l is at least 1 where m
   is finite, and m is -inf or NaN otherwise), so the pair is its own flag: a group
   waits until none of its row's pairs reads zero, with no count to increment and
   nothing else to order. */
/* CLN_COOP_ELEMS comes from the host's plan (src/plan.h), which sizes slices by it. */
#ifndef CLN_COOP_ELEMS
#define CLN_COOP_ELEMS 32
#endif
#ifndef CLN_COOP_BATCHES
#define CLN_COOP_BATCHES 2
#endif
#define CLN_COOP_CHUNKS (CLN_COOP_ELEMS / CLN_VEC)

/* Chunks of CLN_VEC elements, or single elements where CLN_VEC is 1. */
#if CLN_VEC > 1
typedef cln_fv cln_coop_t;
/* Element by element where x's and y's slices sit at different places in the vector
   (float32 views the plan sends here anyway, forced calls, and builds whose vector
   differs from the plan's, as in the Oclgrind sweep). */
CLN_INLINE cln_fv cln_coop_load_any(__global const cln_t *p, ulong k)
{
    float t[CLN_VEC];
    for (int e = 0; e < CLN_VEC; e++) t[e] = CLN_LOAD(p, k * CLN_VEC + e);
    return CLN_CAT(vload, CLN_VEC)(0, t);
}
CLN_INLINE void cln_coop_store(__global cln_t *p, ulong k, cln_fv v, bool aligned)
{
    if (aligned) {
        CLN_STOREV(p, k, v);
        return;
    }
    float t[CLN_VEC];
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (int e = 0; e < CLN_VEC; e++) CLN_STORE(p, k * CLN_VEC + e, t[e]);
}
/* Held chunks go to local memory element by element, element e of chunk j of a
   work-item at (j * CLN_VEC + e) * team + lane: the scratch is a float pointer,
   aligned for floats only, and neighbouring work-items touch neighbouring words. */
CLN_INLINE void cln_coop_put(__local float *held, uint j, uint team, uint lane, cln_fv v)
{
    float t[CLN_VEC];
    CLN_CAT(vstore, CLN_VEC)(v, 0, t);
    for (uint e = 0; e < CLN_VEC; e++) held[(j * CLN_VEC + e) * team + lane] = t[e];
}
CLN_INLINE cln_fv cln_coop_get(__local const float *held, uint j, uint team, uint lane)
{
    float t[CLN_VEC];
    for (uint e = 0; e < CLN_VEC; e++) t[e] = held[(j * CLN_VEC + e) * team + lane];
    return CLN_CAT(vload, CLN_VEC)(0, t);
}
#define CLN_COOP_LOAD(p, k) cln_coop_load_any(p, k)
/* On NVIDIA (CLN_NV_NOALLOC, float32 programs) the slice's vectors are loaded without
   allocating in L1: the slice is read once, and L1 shares its room with the local
   memory that holds the slice's other part. 6-7 % off float32 64x128256 on an H100;
   16-bit rows gained nothing (docs/DESIGN.md, 'One-launch split rows'). */
#if defined(CLN_NV_NOALLOC) && CLN_DTYPE == 0 && CLN_VEC == 4
CLN_INLINE float4 cln_nv_ld_noalloc(__global const float4 *p)
{
    float4 r;
    asm volatile("ld.global.L1::no_allocate.v4.f32 {%0,%1,%2,%3}, [%4];"
                 : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
                 : "l"((ulong)p));
    return r;
}
#define CLN_COOP_LOAD_ALIGNED(p, k) cln_nv_ld_noalloc((__global const float4 *)(p) + (k))
#else
#define CLN_COOP_LOAD_ALIGNED(p, k) CLN_LOADV(p, k)
#endif
#define CLN_COOP_STORE(p, k, v) cln_coop_store(p, k, v, aligned)
#define CLN_COOP_HMAX cln_hmax
#define CLN_COOP_HSUM cln_hsum
#define CLN_COOP_W cln_wv
#else
typedef float cln_coop_t;
#define CLN_COOP_LOAD(p, k) CLN_LOAD(p, k)
#define CLN_COOP_LOAD_ALIGNED(p, k) CLN_LOAD(p, k)
#define CLN_COOP_STORE(p, k, v) CLN_STORE(p, k, v)
#define CLN_COOP_HMAX(v) (v)
#define CLN_COOP_HSUM(v) (v)
#define CLN_COOP_W cln_w
#define cln_coop_put(held, j, team, lane, v) ((held)[(j) * (team) + (lane)] = (v))
#define cln_coop_get(held, j, team, lane) ((held)[(j) * (team) + (lane)])
#endif

/* Loads chunks c0 + i of the slice (i < CLN_COOP_CHUNKS, c0 + i < cend, within the
   slice's whole vectors) into v, -inf past them. */
#define CLN_COOP_FETCH_WITH(LOAD, c0, cend)                                                  \
    _Pragma("unroll") for (uint i = 0; i < CLN_COOP_CHUNKS; i++)                         \
    {                                                                                      \
        const ulong k = (ulong)((c0) + i) * team + lane;                                   \
        v[i] = (c0) + i < (cend) && k < nc ? LOAD(xv, k) : (cln_coop_t)(-INFINITY);       \
    }
#define CLN_COOP_FETCH(c0, cend)                                                           \
    do {                                                                                   \
        if (aligned)                                                                       \
            CLN_COOP_FETCH_WITH(CLN_COOP_LOAD_ALIGNED, c0, cend)                           \
        else                                                                               \
            CLN_COOP_FETCH_WITH(CLN_COOP_LOAD, c0, cend)                                   \
    } while (0)

/* The maximum mx of v's chunks (and of what mx holds already), then v's weights under
   it in place and their sum added to sum: one exp per element where mx is finite. */
#define CLN_COOP_WEIGH(mx, sum)                                                            \
    do {                                                                                   \
        _Pragma("unroll") for (uint i = 0; i < CLN_COOP_CHUNKS; i++)                     \
            mx = fmax(mx, CLN_COOP_HMAX(v[i]));                                            \
        if (isfinite(mx)) {                                                                \
            _Pragma("unroll") for (uint i = 0; i < CLN_COOP_CHUNKS; i++)                 \
            {                                                                              \
                v[i] = CLN_EXP(v[i] - mx);                                                 \
                sum += CLN_COOP_HSUM(v[i]);                                                \
            }                                                                              \
        } else {                                                                           \
            _Pragma("unroll") for (uint i = 0; i < CLN_COOP_CHUNKS; i++)                 \
            {                                                                              \
                v[i] = CLN_COOP_W(v[i], mx);                                               \
                sum += CLN_COOP_HSUM(v[i]);                                                \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* A pair goes out and comes in as one 64-bit access past the compute unit's cache,
   where another group's pair would not be seen: on NVIDIA from compute capability 7
   (CLN_NV_RELAXED) relaxed accesses at the device's scope, elsewhere volatile ones,
   which NVIDIA before it also sends to L2. Only NVIDIA runs groups that wait for
   others; on other devices each row is one slice, read back by the group that wrote it. */
#ifdef CLN_NV_RELAXED
CLN_INLINE void cln_coop_publish(volatile __global ulong *p, ulong bits)
{
    asm volatile("st.relaxed.gpu.b64 [%0], %1;" ::"l"((ulong)p), "l"(bits) : "memory");
}
CLN_INLINE ulong cln_coop_peek(volatile __global ulong *p)
{
    ulong bits;
    asm volatile("ld.relaxed.gpu.b64 %0, [%1];" : "=l"(bits) : "l"((ulong)p) : "memory");
    return bits;
}
#else
#define cln_coop_publish(p, bits) (*(p) = (bits))
#define cln_coop_peek(p) (*(p))
#endif

/* Pairs first, first + step, ... of the row merged into (*rm, *rl), each read until it
   is no longer zero. */
CLN_INLINE void cln_coop_read_pairs(volatile __global ulong *pairs, ulong slices, uint first,
                                    uint step, float *rm, float *rl)
{
    for (ulong i = first; i < slices; i += step) {
        ulong bits;
        while (!(bits = cln_coop_peek(pairs + i)))
            ;
        const float2 p = as_float2(bits);
        cln_merge(rm, rl, p.x, p.y);
    }
}

/* The row's pairs merged into (*rm, *rl) in every work-item. With NVIDIA's shuffles
   the first warp reads and merges them all, with one barrier to hand out the result,
   where a merge over the whole group takes two: 4 % off a vocabulary row on the H200. */
CLN_INLINE void cln_coop_merge_row(volatile __global ulong *pairs, ulong slices, uint lid,
                                   uint team, __local float *pair, float *rm, float *rl)
{
#if CLN_PATH == 2
    if (team % 32u == 0) {
        if (lid < 32u) {
            cln_coop_read_pairs(pairs, slices, lid, 32u, rm, rl);
            cln_warp_pair(rm, rl, 32u);
            if (lid == 0) {
                pair[0] = *rm;
                pair[1] = *rl;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        *rm = pair[0];
        *rl = pair[1];
        return;
    }
#endif
    cln_coop_read_pairs(pairs, slices, lid, team, rm, rl);
    cln_pair(rm, rl, pair, pair + team, lid, lid, team);
}

#if !CLN_ONLY || CLN_ONLY_clnorm_coop_softmax

__kernel void clnorm_coop_softmax(__global const cln_t *x, ulong xoff, ulong xld,
                                  __global cln_t *y, ulong yoff, ulong yld, ulong cols,
                                  ulong slices, ulong slice_len, __global uint *sync,
                                  uint base, __local float *scratch)
{
    const uint lid = get_local_id(0), team = get_local_size(0), lane = lid;
    volatile __global uint *w = (volatile __global uint *)(sync + base);
    /* The scratch: the held part of the slice (its size follows from slice_len), the
       pair's 2 * team floats, then the ticket's word (a kernel-scope __local breaks
       PoCL 5: docs/DESIGN.md, 'Driver quirks'). */
    const ulong per = (slice_len / team + CLN_VEC - 1) / CLN_VEC;
    const uint hc = per > CLN_COOP_CHUNKS ? (uint)(per - CLN_COOP_CHUNKS) : 0;
    __local float *held = scratch;
    __local float *pair = scratch + (ulong)hc * team * CLN_VEC;
    __local uint *ticket = (__local uint *)(pair + 2 * team);
    if (lid == 0) *ticket = atomic_inc(w);
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong g = *ticket, row = g / slices, s = g % slices;
    const ulong c0 = s * slice_len;
    const ulong n = (c0 + slice_len < cols ? c0 + slice_len : cols) - c0;
    __global const cln_t *xs = x + xoff + row * xld + c0;
    __global cln_t *ys = y + yoff + row * yld + c0;
    /* A slice that starts inside a vector, in x and y alike, leaves its first h
       elements loose so that the rest starts at a whole vector (a row of odd length,
       or a view at an odd offset, loads in vectors all the same); where x and y sit at
       different places in the vector, or the slice is shorter than the head, h is 0
       and the kernel loads element by element. */
    const ulong vb = CLN_VEC * sizeof(cln_t);
    const ulong hv = cln_vhead((ulong)xs, (ulong)ys, (ulong)ys, n);
    const ulong h = hv <= n ? hv : 0;
    __global const cln_t *xv = xs + h;
    __global cln_t *yv = ys + h;
    const ulong nc = (n - h) / CLN_VEC, loose = n - nc * CLN_VEC;
    const bool aligned = (ulong)xv % vb == 0 && (ulong)yv % vb == 0;

    /* The slice past its first h elements: chunk i * team + lane in v[i], and past the
       registers' chunks, chunk (CLN_COOP_CHUNKS + j) * team + lane in held
       (cln_coop_put), which only this work-item touches. Its loose elements (the first
       h and the last (n - h) % CLN_VEC, where CLN_REST_COL puts them) are read again
       at the write instead of held, as teams may be smaller than vectors. The held
       part comes in batches of at most CLN_COOP_CHUNKS chunks, CLN_COOP_BATCHES at
       most (the plan holds no more in local memory).

       Each batch's weights are taken under that batch's own maximum as soon as it
       arrives, the held batches' before the registers' part is asked for: work-items
       whose data came early compute while the memory still serves the others, where
       one maximum over all parts would leave the compute units idle during the loads
       and the memory idle during the exps. Loads are issued together, with the
       alignment test outside the unrolled loop. */
    cln_coop_t v[CLN_COOP_CHUNKS];
    float mh = -INFINITY, lh = 0.0f, mr = -INFINITY, lr = 0.0f;
    float hm[CLN_COOP_BATCHES]; /* each held batch's maximum, which its weights are under */
#pragma unroll
    for (uint b = 0; b < CLN_COOP_BATCHES; b++) {
        const uint j0 = b * CLN_COOP_CHUNKS;
        hm[b] = -INFINITY;
        if (j0 < hc) {
            float lb = 0.0f;
            CLN_COOP_FETCH(CLN_COOP_CHUNKS + j0, CLN_COOP_CHUNKS + hc);
            CLN_COOP_WEIGH(hm[b], lb);
#pragma unroll
            for (uint i = 0; i < CLN_COOP_CHUNKS; i++)
                if (j0 + i < hc) cln_coop_put(held, j0 + i, team, lane, v[i]);
            cln_merge(&mh, &lh, hm[b], lb);
        }
    }
    CLN_COOP_FETCH(0, CLN_COOP_CHUNKS);
    for (ulong t = lane; t < loose; t += team)
        mr = fmax(mr, CLN_LOAD(xs, CLN_REST_COL(t, h, nc)));
    CLN_COOP_WEIGH(mr, lr);
    for (ulong t = lane; t < loose; t += team)
        lr += cln_w(CLN_LOAD(xs, CLN_REST_COL(t, h, nc)), mr);
    float m = mh, l = lh;
    cln_merge(&m, &l, mr, lr);
    cln_pair(&m, &l, pair, pair + team, lid, lane, team);

    /* Publish the slice's pair, then read the row's pairs as they come, each work-item
       its share. Every group of the row merges the same pairs in the same order, so
       all write with one (m, l). */
    volatile __global ulong *pairs = (volatile __global ulong *)w + 1 + row * slices;
    if (lid == 0) cln_coop_publish(pairs + s, as_ulong((float2)(m, l)));
    float rm = -INFINITY, rl = 0.0f;
    cln_coop_merge_row(pairs, slices, lid, team, pair, &rm, &rl);

    const float inv = cln_inv_sum(rl), sr = inv * cln_w(mr, rm);
#pragma unroll
    for (uint i = 0; i < CLN_COOP_CHUNKS; i++) {
        const ulong k = (ulong)i * team + lane;
        if (k < nc) CLN_COOP_STORE(yv, k, v[i] * sr);
    }
#pragma unroll
    for (uint b = 0; b < CLN_COOP_BATCHES; b++) {
        const uint j0 = b * CLN_COOP_CHUNKS;
        const float sh = inv * cln_w(hm[b], rm);
        for (uint j = j0; j < j0 + CLN_COOP_CHUNKS && j < hc; j++) {
            const ulong k = (ulong)(CLN_COOP_CHUNKS + j) * team + lane;
            if (k < nc) CLN_COOP_STORE(yv, k, cln_coop_get(held, j, team, lane) * sh);
        }
    }
    /* The loose elements, read again: each element is read and written by one
       work-item, so y may be x. */
    for (ulong t = lane; t < loose; t += team) {
        const ulong e = CLN_REST_COL(t, h, nc);
        CLN_STORE(ys, e, cln_w(CLN_LOAD(xs, e), rm) * inv);
    }
}
#endif
