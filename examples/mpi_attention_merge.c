/* Attention over a KV cache split by keys across MPI ranks (sequence parallelism).

   Each rank holds a contiguous part [first, first + n) of the keys and values of every
   batch entry and KV head, and runs clnorm_attention over its part with the
   log-sum-exp output. Attention over a union of key sets follows from the results
   over each part, so rank 0 gathers every rank's (out, lse) with MPI_Gather and folds
   them on its device with clnorm_attention_merge, in place. It then checks the merged
   result against clnorm_attention over the whole cache in one process and against a
   float64 reference. The parts are uneven; in the causal case with three or more
   ranks, rank 1 holds no keys: clnorm_attention needs at least one key, so that rank
   contributes the identity of the merge (out = 0, lse = -inf) without calling it.

   Causal masking with split keys. The queries are the last q_len tokens of the whole
   cache of N keys: query t (0 .. q_len-1) sits at position N - q_len + t and sees key
   j where j <= t + N - q_len. A part's call sees its keys at local index i = j - first,
   and the library's causal rule for a call of n keys, i <= t + n - q_len, is that
   condition only where first + n = N: the part holding the last keys. A part that ends
   earlier needs a shift the rule cannot express, but none is needed where the part
   ends at or before N - q_len + 1: all its keys are at most N - q_len, which even
   query 0 sees, so it is exactly non-causal. The causal mask hides only keys among
   the last q_len - 1; the split below gives the last rank at least q_len keys, and
   the program checks that condition before trusting it.

   Build: mpicc mpi_attention_merge.c -lclnorm -lOpenCL -lm
   Run:   mpirun -np 3 ./a.out [device spec]     (exit 77: no device on some rank)
          (as root Open MPI wants --allow-run-as-root; --oversubscribe runs more ranks
          than cores) */
#include <clnorm.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 2, Q_HEADS = 8, KV_HEADS = 2, DIM = 64, MAX_ROWS = BATCH * Q_HEADS * 3 };
/* The contract's float32 accuracy, relative to the largest |v| the query sees; the
   log-sum-exp is held to the same, relative to max(1, |lse|). */
#define TOLERANCE 1e-4

/* A decode step (q_len 1) and a causal chunk of three new tokens. */
static const struct { int q_len, keys, causal; } CASES[] = {{1, 2311, 0}, {3, 1031, 1}};

/* Deterministic values in [-1, 1) of (tensor, batch entry, head, position, d), the same
   on every rank, so that each can build its own part and rank 0 the whole cache. */
static float value(unsigned which, int b, int h, int j, int d)
{
    unsigned x = which * 0x9e3779b9u ^ (unsigned)(((b * 16 + h) * 4096 + j) * DIM + d);
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
    return (float)(2.0 * ((x >> 8) + 0.5) / 16777216.0 - 1.0);
}

/* Fills a packed [BATCH][heads][n][DIM] array with positions first .. first+n-1.
   Keys are tensor 0 (scaled by 3, so that the weights are far from uniform), values
   tensor 1, queries tensor 2. */
static void fill(float *x, unsigned which, int heads, int first, int n)
{
    for (int b = 0; b < BATCH; b++)
        for (int h = 0; h < heads; h++)
            for (int j = 0; j < n; j++)
                for (int d = 0; d < DIM; d++)
                    x[(((size_t)b * heads + h) * n + j) * DIM + d] =
                        (which == 0 ? 3.0f : 1.0f) * value(which, b, h, first + j, d);
}

static int failed(clnorm_status st, cl_int err, const char *what)
{
    if (st) fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    else if (err) fprintf(stderr, "%s: OpenCL error %d\n", what, (int)err);
    return st != CLNORM_SUCCESS || err != CL_SUCCESS;
}

/* clnorm_attention over n keys starting at position first, with the queries of the
   case; out and lse receive the result. Returns nonzero on failure. */
static int attend(cl_context ctx, cl_command_queue q, int q_len, int first, int n, int causal,
                  float *out, float *lse)
{
    const size_t nq = (size_t)BATCH * Q_HEADS * q_len * DIM, nk = (size_t)BATCH * KV_HEADS * n * DIM;
    float *qh = malloc(nq * sizeof(float)), *kh = malloc(nk * sizeof(float)),
          *vh = malloc(nk * sizeof(float));
    cl_mem b[5] = {NULL, NULL, NULL, NULL, NULL}; /* q, k, v, out, lse */
    cl_int err = !qh || !kh || !vh ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
    clnorm_status st = CLNORM_SUCCESS;
    if (err) goto done;
    fill(qh, 2, Q_HEADS, 0, q_len);
    fill(kh, 0, KV_HEADS, first, n);
    fill(vh, 1, KV_HEADS, first, n);
    const size_t bytes[5] = {nq, nk, nk, nq, (size_t)BATCH * Q_HEADS * q_len};
    float *init[5] = {qh, kh, vh, NULL, NULL};
    for (int i = 0; i < 5 && !err; i++)
        b[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init[i] ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes[i] * sizeof(float), init[i], &err);
    if (err) goto done;
    /* Packed views: q and out [b][h][t][d], k and v [b][kv][j][d]. */
    clnorm_tensor tq = {b[0], 0, (size_t)Q_HEADS * q_len * DIM, (size_t)q_len * DIM, DIM};
    clnorm_tensor tk = {b[1], 0, (size_t)KV_HEADS * n * DIM, (size_t)n * DIM, DIM};
    clnorm_tensor tv = {b[2], 0, (size_t)KV_HEADS * n * DIM, (size_t)n * DIM, DIM};
    clnorm_tensor to = {b[3], 0, (size_t)Q_HEADS * q_len * DIM, (size_t)q_len * DIM, DIM};
    clnorm_attention_desc desc = {.batch = BATCH, .q_heads = Q_HEADS, .kv_heads = KV_HEADS,
                                  .q_len = (size_t)q_len, .kv_len = (size_t)n, .head_dim = DIM,
                                  .scale = 0, .causal = causal, .kv_lens = NULL};
    st = clnorm_attention(q, CLNORM_F32, &desc, tq, tk, tv, to, b[4], 0, NULL, NULL);
    if (!st) err = clEnqueueReadBuffer(q, b[3], CL_FALSE, 0, nq * sizeof(float), out, 0, NULL, NULL);
    if (!st && !err)
        err = clEnqueueReadBuffer(q, b[4], CL_TRUE, 0, bytes[4] * sizeof(float), lse, 0, NULL, NULL);
done:
    for (int i = 0; i < 5; i++)
        if (b[i]) clReleaseMemObject(b[i]);
    free(qh); free(kh); free(vh);
    return failed(st, err, "clnorm_attention");
}

/* Rank 0: folds the gathered parts (out and lse of each of `parts` ranks, `rows` rows
   each) into the first, in place on the device, and reads the result into out, lse. */
static int merge(cl_context ctx, cl_command_queue q, int parts, size_t rows, const float *outs,
                 const float *lses, float *out, float *lse)
{
    const size_t ob = rows * DIM * sizeof(float), lb = rows * sizeof(float);
    cl_mem acc = NULL, acc_lse = NULL, part = NULL, part_lse = NULL;
    clnorm_status st = CLNORM_SUCCESS;
    cl_int err;
    acc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, ob, (void *)outs, &err);
    if (!err) acc_lse = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, lb,
                                       (void *)lses, &err);
    if (!err) part = clCreateBuffer(ctx, CL_MEM_READ_ONLY, ob, NULL, &err);
    if (!err) part_lse = clCreateBuffer(ctx, CL_MEM_READ_ONLY, lb, NULL, &err);
    clnorm_matrix va = {acc, 0, 0}, vb = {part, 0, 0};
    /* The in-order queue orders each upload before the merge that reads it and each
       merge before the next upload overwrites the part's buffers. */
    for (int r = 1; r < parts && !err && !st; r++) {
        err = clEnqueueWriteBuffer(q, part, CL_FALSE, 0, ob, outs + (size_t)r * rows * DIM, 0,
                                   NULL, NULL);
        if (!err) err = clEnqueueWriteBuffer(q, part_lse, CL_FALSE, 0, lb, lses + (size_t)r * rows,
                                             0, NULL, NULL);
        if (!err) st = clnorm_attention_merge(q, CLNORM_F32, rows, DIM, va, acc_lse, vb, part_lse,
                                              va, acc_lse, 0, NULL, NULL);
    }
    if (!err && !st) err = clEnqueueReadBuffer(q, acc, CL_FALSE, 0, ob, out, 0, NULL, NULL);
    if (!err && !st) err = clEnqueueReadBuffer(q, acc_lse, CL_TRUE, 0, lb, lse, 0, NULL, NULL);
    /* The uploads read the host arrays until they complete, also after a failure. */
    clFinish(q);
    cl_mem all[4] = {acc, acc_lse, part, part_lse};
    for (int i = 0; i < 4; i++)
        if (all[i]) clReleaseMemObject(all[i]);
    return failed(st, err, "clnorm_attention_merge");
}

/* The largest error of out and lse against float64 attention over all N keys:
   out relative to the largest |v| the query sees, lse relative to max(1, |lse|). */
static double check(int q_len, int N, int causal, const float *out, const float *lse,
                    double *lse_err)
{
    double worst = 0, scale = 1.0 / sqrt((double)DIM), *s = malloc((size_t)N * sizeof(double));
    for (int b = 0; b < BATCH && s; b++)
        for (int h = 0; h < Q_HEADS; h++)
            for (int t = 0; t < q_len; t++) {
                const int kv = h / (Q_HEADS / KV_HEADS), seen = causal ? N - q_len + t + 1 : N;
                const size_t row = ((size_t)b * Q_HEADS + h) * q_len + t;
                double m = -INFINITY, l = 0, vmax = 0;
                for (int j = 0; j < seen; j++) {
                    double dot = 0;
                    for (int d = 0; d < DIM; d++)
                        dot += (double)value(2, b, h, t, d) * (3.0f * value(0, b, kv, j, d));
                    s[j] = scale * dot;
                    m = fmax(m, s[j]);
                }
                for (int j = 0; j < seen; j++) l += (s[j] = exp(s[j] - m));
                for (int d = 0; d < DIM; d++) {
                    double o = 0;
                    for (int j = 0; j < seen; j++) {
                        o += s[j] / l * value(1, b, kv, j, d);
                        vmax = fmax(vmax, fabs(value(1, b, kv, j, d)));
                    }
                    double e = fabs(out[row * DIM + d] - o) / vmax;
                    worst = e > worst || e != e ? e : worst; /* a NaN stays */
                }
                double le = fabs(lse[row] - (m + log(l))) / fmax(1.0, fabs(m + log(l)));
                *lse_err = le > *lse_err || le != le ? le : *lse_err;
            }
    free(s);
    return s ? worst : INFINITY;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Every rank opens its device; where one has none, all stop alike. */
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    int code = st == CLNORM_DEVICE_NOT_FOUND ? 77 : st ? 1 : 0, worst = 0, wrong = 0;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst) {
        if (code == 1) fprintf(stderr, "rank %d: %s\n", rank, clnorm_last_error());
        clnorm_session_destroy(s);
        MPI_Finalize();
        return worst;
    }
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    static float out[MAX_ROWS * DIM], lse[MAX_ROWS], whole[MAX_ROWS * DIM], whole_lse[MAX_ROWS];
    float *outs = malloc(sizeof out * (size_t)size), *lses = malloc(sizeof lse * (size_t)size);

    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const int q_len = CASES[c].q_len, N = CASES[c].keys, causal = CASES[c].causal;
        const size_t rows = (size_t)BATCH * Q_HEADS * q_len;
        /* Uneven parts: rank r's share grows as 2r + 1, and in the causal case with
           three or more ranks rank 1 holds none. */
        long w = 0, below = 0;
        for (int r = 0; r < size; r++) {
            const long share = causal && size > 2 && r == 1 ? 0 : 2 * r + 1;
            below += r < rank ? share : 0;
            w += share;
        }
        const long mine = causal && size > 2 && rank == 1 ? 0 : 2 * rank + 1;
        const int first = (int)(N * below / w), n = (int)(N * (below + mine) / w) - first;
        const int last = first + n == N;
        /* The reasoning at the top: a part other than the last must end by N - q_len + 1. */
        int bad = causal && !last && first + n > N - q_len + 1;
        if (bad) fprintf(stderr, "rank %d: keys %d..%d reach the causal mask\n", rank, first,
                         first + n - 1);
        else if (n == 0)
            for (size_t i = 0; i < rows; i++) {
                lse[i] = -INFINITY;
                for (int d = 0; d < DIM; d++) out[i * DIM + d] = 0.0f;
            }
        else bad = attend(ctx, q, q_len, first, n, causal && last, out, lse);
        /* A rank that failed must not leave the others waiting in the gather. */
        int any_bad = 0;
        MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_bad) { wrong++; break; }
        MPI_Gather(out, (int)(rows * DIM), MPI_FLOAT, outs, (int)(rows * DIM), MPI_FLOAT, 0,
                   MPI_COMM_WORLD);
        MPI_Gather(lse, (int)rows, MPI_FLOAT, lses, (int)rows, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (n == 0) printf("rank %d: no keys of %d (out 0, lse -inf)\n", rank, N);
        else printf("rank %d: keys %d..%d of %d%s\n", rank, first, first + n - 1, N,
                    causal && last ? " (causal)" : "");

        /* Rank 0: the merge, attention over the whole cache, and the float64 reference. */
        int stop = 0;
        if (rank == 0 && (merge(ctx, q, size, rows, outs, lses, out, lse) ||
                          attend(ctx, q, q_len, 0, N, causal, whole, whole_lse)))
            stop = 1;
        else if (rank == 0) {
            double lse_err = 0, whole_lse_err = 0, apart = 0;
            const double err = check(q_len, N, causal, out, lse, &lse_err);
            const double whole_err = check(q_len, N, causal, whole, whole_lse, &whole_lse_err);
            /* |v| < 1 here, so the absolute difference is within max|v|'s bound. */
            for (size_t i = 0; i < rows * DIM; i++) apart = fmax(apart, fabs(out[i] - whole[i]));
            printf("q_len %d%s over %d keys on %d ranks: merged %.2e, lse %.2e; one process "
                   "%.2e, lse %.2e; merged - one process %.2e (limit %.0e)\n", q_len,
                   causal ? " causal" : "", N, size, err, lse_err, whole_err, whole_lse_err,
                   apart, TOLERANCE);
            wrong += !(err <= TOLERANCE && lse_err <= TOLERANCE && whole_err <= TOLERANCE &&
                       whole_lse_err <= TOLERANCE && apart <= 2 * TOLERANCE);
        }
        /* The other ranks learn whether rank 0 could go on, so that all stop alike. */
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (stop) { wrong++; break; }
    }
    MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%s on %s\n", wrong ? "MISMATCH" : "ok", clnorm_session_device_name(s));
    free(outs);
    free(lses);
    clnorm_session_destroy(s);
    MPI_Finalize();
    return wrong != 0;
}
