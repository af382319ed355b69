/* The Oclgrind sweep's attention cases (sweep_attention.h): small enough for the
   simulator, awkward enough for every path of cl/attention.cl. */
#include "sweep_attention.h"
#include "clnorm_advanced.h"
#include "rel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint32_t CANARY = 0x7fa5a5a5u; /* a NaN no kernel writes */

/* out[b][h][t] of packed q (b, qh, t, hd) and k, v (b, kvh, kv, hd), causal, keys per
   entry in lens; lse per row. */
static void reference(const float *q, const float *k, const float *v, size_t batch, size_t qh,
                      size_t kvh, size_t ql, size_t kv, size_t hd, const int *lens,
                      double *out, double *lse)
{
    const double scale = (float)(1.0 / sqrt((double)hd));
    for (size_t b = 0; b < batch; b++)
        for (size_t h = 0; h < qh; h++)
            for (size_t t = 0; t < ql; t++) {
                const size_t r = (b * qh + h) * ql + t, kh = h / (qh / kvh);
                const long keys = lens[b], last = (long)t + keys - (long)ql;
                double m = -INFINITY, l = 0, *o = out + r * hd;
                for (size_t e = 0; e < hd; e++) o[e] = 0;
                for (int pass = 0; pass < 2; pass++)
                    for (long j = 0; j <= last && j < keys; j++) {
                        const float *kr = k + ((b * kvh + kh) * kv + (size_t)j) * hd;
                        double s = 0;
                        for (size_t e = 0; e < hd; e++) s += scale * q[r * hd + e] * kr[e];
                        if (!pass) { if (s > m) m = s; continue; }
                        const double p = exp(s - m);
                        l += p;
                        for (size_t e = 0; e < hd; e++)
                            o[e] += p * v[((b * kvh + kh) * kv + (size_t)j) * hd + e];
                    }
                for (size_t e = 0; e < hd; e++) o[e] = l > 0 ? o[e] / l : 0;
                lse[r] = l > 0 ? m + log(l) : -INFINITY;
            }
}

static cl_mem upload(cl_context ctx, clnorm_dtype dt, const float *x, size_t n)
{
    void *img = malloc(n * rel_esize(dt) + 4);
    rel_pack(dt, x, img, n);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              n * rel_esize(dt) + 4, img, NULL);
    free(img);
    return m;
}

/* One attention call of ql (at most QLMAX) queries a head, out in rows padded by 3
   canaries; returns failures. */
enum { QLMAX = 5 };
static unsigned long one(cl_context ctx, cl_command_queue q, clnorm_dtype dt, size_t hd,
                         size_t split, size_t ql, int variant, uint64_t *seed, int verbose)
{
    enum { B = 2, QH = 4, KVH = 2, KV = 37, PAD = 3 };
    const int lens[B] = {0, 30};
    const size_t nq = B * QH * ql * hd, nk = B * KVH * KV * hd, es = rel_esize(dt);
    const size_t ld = hd + PAD, no = B * QH * ql * ld, rows = B * QH * ql;
    float *x = malloc((nq + 2 * nk) * sizeof(float)), *got = malloc(no * sizeof(float));
    double *want = malloc(nq * sizeof(double)), wl[B * QH * QLMAX];
    for (size_t i = 0; i < nq + 2 * nk; i++) x[i] = rel_round(dt, (float)(6 * rel_unit(seed) - 3));
    float *k = x + nq, *v = k + nk;
    reference(x, k, v, B, QH, KVH, ql, KV, hd, lens, want, wl);
    void *oimg = malloc(no * es);
    float cf;
    uint32_t cbits = 0;
    memcpy(&cf, &CANARY, 4);
    rel_pack(dt, &cf, &cbits, 1);
    for (size_t i = 0; i < no; i++) memcpy((char *)oimg + i * es, &cbits, es);
    float lse_h[B * QH * QLMAX + 2];
    for (size_t i = 0; i < rows + 2; i++) memcpy(&lse_h[i], &CANARY, 4);
    cl_mem bq = upload(ctx, dt, x, nq), bk = upload(ctx, dt, k, nk), bv = upload(ctx, dt, v, nk);
    cl_mem bo = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, no * es, oimg, NULL);
    cl_mem bl = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof lse_h, lse_h,
                               NULL);
    cl_mem bn = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof lens,
                               (void *)lens, NULL);
    const clnorm_tensor tq = {bq, 0, QH * ql * hd, ql * hd, hd};
    const clnorm_tensor tk = {bk, 0, KVH * KV * hd, KV * hd, hd}, tv = {bv, 0, tk.stride_batch,
                                                                      tk.stride_head, hd};
    const clnorm_tensor to = {bo, 0, QH * ql * ld, ql * ld, ld};
    const clnorm_attention_desc d = {.batch = B, .q_heads = QH, .kv_heads = KVH, .q_len = ql,
                                     .kv_len = KV, .head_dim = hd, .causal = 1, .kv_lens = bn};
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.split = split;
    h.variant = variant;
    clnorm_set_thread_hints(&h);
    unsigned long bad = 0;
    clnorm_status st = clnorm_attention(q, dt, &d, tq, tk, tv, to, bl, 0, NULL, NULL);
    clnorm_set_thread_hints(NULL);
    if (st) {
        printf("FAIL: attention %s hd %zu split %zu %s: %s\n", rel_dtype_name(dt), hd, split,
               clnorm_variant_name(variant), clnorm_last_error());
        bad++;
    } else {
        clEnqueueReadBuffer(q, bo, CL_TRUE, 0, no * es, oimg, 0, NULL, NULL);
        clEnqueueReadBuffer(q, bl, CL_TRUE, 0, sizeof lse_h, lse_h, 0, NULL, NULL);
        rel_unpack(dt, oimg, got, no);
        const double tol = dt == CLNORM_F32 ? 1e-4 : dt == CLNORM_F16 ? 2e-3 : 1.6e-2;
        for (size_t i = 0; i < no; i++) {
            const size_t r = i / ld, e = i % ld;
            uint32_t bits = 0;
            memcpy(&bits, (char *)oimg + i * es, es);
            const int ok = e < hd ? fabs(got[i] - want[r * hd + e]) <= 3 * tol : bits == cbits;
            if (!ok && bad++ < 3)
                printf("FAIL: attention %s hd %zu split %zu: out element %zu (row %zu col %zu) "
                       "%g, want %g\n", rel_dtype_name(dt), hd, split, i, r, e, (double)got[i],
                       e < hd ? want[r * hd + e] : NAN);
        }
        for (size_t r = 0; r < rows + 2; r++) {
            uint32_t bits;
            memcpy(&bits, &lse_h[r], 4);
            const int ok = r >= rows ? bits == CANARY
                           : isinf(wl[r]) ? lse_h[r] == wl[r]
                                          : fabs(lse_h[r] - wl[r]) <= 1e-3 * (1 + fabs(wl[r]));
            if (!ok && bad++ < 3)
                printf("FAIL: attention %s hd %zu split %zu: lse %zu is %g, want %g\n",
                       rel_dtype_name(dt), hd, split, r, (double)lse_h[r], r < rows ? wl[r] : NAN);
        }
    }
    if (verbose) printf("attention %s hd %zu split %zu: %lu bad\n", rel_dtype_name(dt), hd, split, bad);
    cl_mem all[] = {bq, bk, bv, bo, bl, bn};
    for (size_t i = 0; i < 6; i++) clReleaseMemObject(all[i]);
    free(x), free(got), free(want), free(oimg);
    return bad;
}

/* The merge of two rows sets in place (out = out_a, lse = lse_a), with a -inf row. */
static unsigned long merge(cl_context ctx, cl_command_queue q, clnorm_dtype dt, uint64_t *seed)
{
    enum { ROWS = 5, HD = 7 };
    float a[ROWS * HD], b[ROWS * HD], la[ROWS], lb[ROWS], got[ROWS * HD], gl[ROWS];
    for (size_t i = 0; i < ROWS * HD; i++) {
        a[i] = rel_round(dt, (float)(rel_unit(seed) - 0.5));
        b[i] = rel_round(dt, (float)(rel_unit(seed) - 0.5));
    }
    for (size_t r = 0; r < ROWS; r++) {
        la[r] = (float)(4 * rel_unit(seed));
        lb[r] = r == 2 ? -INFINITY : (float)(4 * rel_unit(seed));
    }
    cl_mem ba = upload(ctx, dt, a, ROWS * HD), bb = upload(ctx, dt, b, ROWS * HD);
    cl_mem bla = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof la, la, NULL);
    cl_mem blb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof lb, lb, NULL);
    const clnorm_matrix ma = {ba, 0, HD}, mb = {bb, 0, HD};
    unsigned long bad = 0;
    if (clnorm_attention_merge(q, dt, ROWS, HD, ma, bla, mb, blb, ma, bla, 0, NULL, NULL)) {
        printf("FAIL: attention merge %s: %s\n", rel_dtype_name(dt), clnorm_last_error());
        bad++;
    } else {
        void *img = malloc(sizeof got);
        clEnqueueReadBuffer(q, ba, CL_TRUE, 0, ROWS * HD * rel_esize(dt), img, 0, NULL, NULL);
        clEnqueueReadBuffer(q, bla, CL_TRUE, 0, sizeof gl, gl, 0, NULL, NULL);
        rel_unpack(dt, img, got, ROWS * HD);
        free(img);
        for (size_t r = 0; r < ROWS; r++) {
            const double m = fmax(la[r], lb[r]), l = exp(la[r] - m) + exp(lb[r] - m);
            const double lse = m + log(l), wa = exp(la[r] - lse), wb = exp(lb[r] - lse);
            bad += fabs(gl[r] - lse) > 1e-5 * (1 + fabs(lse));
            for (size_t e = 0; e < HD; e++)
                bad += fabs(got[r * HD + e] - (wa * a[r * HD + e] + wb * b[r * HD + e])) > 2e-2;
        }
        if (bad) printf("FAIL: attention merge %s: %lu bad elements\n", rel_dtype_name(dt), bad);
    }
    clReleaseMemObject(ba), clReleaseMemObject(bb), clReleaseMemObject(bla);
    clReleaseMemObject(blb);
    return bad;
}

unsigned sw_attention(cl_context ctx, cl_command_queue q, clnorm_dtype dt, int verbose,
                      unsigned long *failures, unsigned long *cases)
{
    uint64_t seed = 0xa77e2u + (uint64_t)dt;
    /* head_dim 12: columns in 4-element units (the CPU form: a scalar tail past 8 and
       16); 5: the scalar path, a head that is not a power of two. 37 keys leave a
       partial last tile (and key block); split 3 runs split-K. 3 queries a head, 6 a
       kv head: two passes of the CPU form, the second partial; 5 queries a head, 10 a
       kv head: the CPU form's lanes form in vector builds, lanes past them empty. Both
       forms, whatever the device's type. */
    static const size_t shapes[][3] = {{12, 0, 3}, {5, 0, 3}, {12, 3, 3}, {5, 2, 3},
                                       {12, 0, 5}, {5, 2, 5}};
    static const int forms[] = {CLNORM_VARIANT_STREAM, CLNORM_VARIANT_REGISTERS};
    for (size_t f = 0; f < 2; f++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            *failures += one(ctx, q, dt, shapes[i][0], shapes[i][1], shapes[i][2], forms[f],
                             &seed, verbose);
            ++*cases;
        }
    *failures += merge(ctx, q, dt, &seed);
    ++*cases;
    return SWA_ATTENTION | SWA_REDUCE | SWA_MERGE | SWA_CPU;
}
