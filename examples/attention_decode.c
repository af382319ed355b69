/* One decoder layer's attention over a growing KV cache, one token at a time.

   The cache is preallocated as [batch][kv_heads][capacity][head_dim] and each step
   appends the new token's key and value of every batch entry at that entry's current
   length, then runs clnorm_attention with one query per head. The views span the
   whole capacity (desc.kv_len = CAPACITY); desc.kv_lens, an int32 buffer of the
   entries' current lengths, says how many keys each entry has, so that entries of
   different lengths share one call and no buffer is reallocated as they grow. Four
   query heads share each key/value head (grouped-query attention). Every step's output
   and log-sum-exp are checked against a float64 computation on the host copy of the
   cache.

   Build: cc attention_decode.c -lclnorm -lOpenCL -lm    Run: ./a.out [device spec] */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum { BATCH = 2, Q_HEADS = 8, KV_HEADS = 2, DIM = 40, CAPACITY = 48, STEPS = 29 };
/* Each entry's prompt, already in the cache before the first step. */
static const int PROMPT[BATCH] = {3, 17};
/* The contract's float32 accuracy, relative to the largest |v| the query sees; the
   log-sum-exp is held to the same, relative to max(1, |lse|). */
#define TOLERANCE 1e-4

static float kcache[BATCH][KV_HEADS][CAPACITY][DIM], vcache[BATCH][KV_HEADS][CAPACITY][DIM];
static float q[BATCH][Q_HEADS][DIM], out[BATCH][Q_HEADS][DIM], lse[BATCH][Q_HEADS];

static int failed(clnorm_status st, const char *what)
{
    if (st != CLNORM_SUCCESS)
        fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    return st != CLNORM_SUCCESS;
}

static int cl_failed(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) fprintf(stderr, "%s: OpenCL error %d\n", what, (int)err);
    return err != CL_SUCCESS;
}

/* Deterministic values in [-1, 1). */
static float next_value(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(2.0 * (((*state >> 8) + 0.5) / 16777216.0) - 1.0);
}

/* Writes position t of entry b (every KV head) into the host cache and the device's. */
static cl_int append(cl_command_queue cq, cl_mem kbuf, cl_mem vbuf, int b, int t, unsigned *state)
{
    cl_int err = CL_SUCCESS;
    for (int h = 0; h < KV_HEADS && !err; h++) {
        for (int d = 0; d < DIM; d++) {
            kcache[b][h][t][d] = 2 * next_value(state);
            vcache[b][h][t][d] = next_value(state) + (float)h; /* heads differ in scale */
        }
        size_t at = (((size_t)b * KV_HEADS + (size_t)h) * CAPACITY + (size_t)t) * DIM * sizeof(float);
        err = clEnqueueWriteBuffer(cq, kbuf, CL_FALSE, at, DIM * sizeof(float), kcache[b][h][t], 0,
                                   NULL, NULL);
        if (!err)
            err = clEnqueueWriteBuffer(cq, vbuf, CL_FALSE, at, DIM * sizeof(float),
                                       vcache[b][h][t], 0, NULL, NULL);
    }
    return err;
}

/* The largest error of this step's outputs, relative to the largest |v| each query
   sees, and of its log-sum-exp (relative to max(1, |lse|)), against float64 over the first len[b] keys. */
static double check_step(const int *len, double *lse_err)
{
    double worst = 0, scale = 1.0 / sqrt((double)DIM);
    for (int b = 0; b < BATCH; b++)
        for (int h = 0; h < Q_HEADS; h++) {
            int kv = h / (Q_HEADS / KV_HEADS);
            double s[CAPACITY], m = -INFINITY, l = 0, vmax = 0;
            for (int j = 0; j < len[b]; j++) {
                double dot = 0;
                for (int d = 0; d < DIM; d++) dot += (double)q[b][h][d] * kcache[b][kv][j][d];
                s[j] = scale * dot;
                m = fmax(m, s[j]);
            }
            for (int j = 0; j < len[b]; j++) l += exp(s[j] - m);
            for (int d = 0; d < DIM; d++) {
                double o = 0;
                for (int j = 0; j < len[b]; j++) {
                    o += exp(s[j] - m) / l * vcache[b][kv][j][d];
                    vmax = fmax(vmax, fabs(vcache[b][kv][j][d]));
                }
                double e = fabs(out[b][h][d] - o) / vmax;
                worst = e > worst || e != e ? e : worst; /* a NaN stays */
            }
            double le = fabs(lse[b][h] - (m + log(l))) / fmax(1.0, fabs(m + log(l)));
            *lse_err = le > *lse_err || le != le ? le : *lse_err;
        }
    return worst;
}

int main(int argc, char **argv)
{
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) {
        printf("skipped: %s\n", clnorm_last_error());
        return 77;
    }
    if (failed(st, "clnorm_session_create")) return 1;
    printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));

    int rc = 1, len[BATCH];
    cl_int err;
    unsigned state = 2024;
    double worst = 0, worst_lse = 0;
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue cq = clnorm_session_queue(s);
    cl_mem kbuf = NULL, vbuf = NULL, qbuf = NULL, obuf = NULL, lbuf = NULL, lens = NULL;

    kbuf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof kcache, NULL, &err);
    if (cl_failed(err, "clCreateBuffer k")) goto done;
    vbuf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof vcache, NULL, &err);
    if (cl_failed(err, "clCreateBuffer v")) goto done;
    qbuf = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof q, NULL, &err);
    if (cl_failed(err, "clCreateBuffer q")) goto done;
    obuf = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof out, NULL, &err);
    if (cl_failed(err, "clCreateBuffer out")) goto done;
    lbuf = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof lse, NULL, &err);
    if (cl_failed(err, "clCreateBuffer lse")) goto done;
    lens = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof len, NULL, &err);
    if (cl_failed(err, "clCreateBuffer kv_lens")) goto done;

    /* The prompts' keys and values. */
    for (int b = 0; b < BATCH; b++) {
        for (len[b] = 0; len[b] < PROMPT[b]; len[b]++)
            if (cl_failed(append(cq, kbuf, vbuf, b, len[b], &state), "append prompt")) goto done;
    }

    /* q and out: [batch][q_heads][1][dim], packed. k and v: the whole capacity. */
    clnorm_tensor tq = {qbuf, 0, Q_HEADS * DIM, DIM, DIM};
    clnorm_tensor to = {obuf, 0, Q_HEADS * DIM, DIM, DIM};
    clnorm_tensor tk = {kbuf, 0, KV_HEADS * CAPACITY * DIM, CAPACITY * DIM, DIM};
    clnorm_tensor tv = {vbuf, 0, KV_HEADS * CAPACITY * DIM, CAPACITY * DIM, DIM};
    clnorm_attention_desc desc = {.batch = BATCH, .q_heads = Q_HEADS, .kv_heads = KV_HEADS,
                                  .q_len = 1, .kv_len = CAPACITY, .head_dim = DIM,
                                  .scale = 0 /* 1/sqrt(DIM) */, .causal = 0, .kv_lens = lens};

    for (int step = 0; step < STEPS; step++) {
        /* The new token: its key and value join the cache, its query asks. The writes
           are on the same in-order queue, so the call below sees them. */
        for (int b = 0; b < BATCH; b++) {
            if (cl_failed(append(cq, kbuf, vbuf, b, len[b], &state), "append")) goto done;
            len[b]++;
            for (int h = 0; h < Q_HEADS; h++)
                for (int d = 0; d < DIM; d++) q[b][h][d] = next_value(&state);
        }
        err = clEnqueueWriteBuffer(cq, qbuf, CL_FALSE, 0, sizeof q, q, 0, NULL, NULL);
        if (!err) err = clEnqueueWriteBuffer(cq, lens, CL_FALSE, 0, sizeof len, len, 0, NULL, NULL);
        if (cl_failed(err, "write q and kv_lens")) goto done;
        cl_event ev = NULL;
        st = clnorm_attention(cq, CLNORM_F32, &desc, tq, tk, tv, to, lbuf, 0, NULL, &ev);
        if (failed(st, "clnorm_attention")) goto done;
        err = clEnqueueReadBuffer(cq, obuf, CL_FALSE, 0, sizeof out, out, 1, &ev, NULL);
        if (!err) err = clEnqueueReadBuffer(cq, lbuf, CL_TRUE, 0, sizeof lse, lse, 1, &ev, NULL);
        clReleaseEvent(ev);
        if (cl_failed(err, "read out and lse")) goto done;
        double e = check_step(len, &worst_lse);
        worst = e > worst || e != e ? e : worst;
    }

    printf("%d decode steps, batch %d (%d and %d keys at the end, capacity %d), %d query heads "
           "on %d KV heads of %d\n", STEPS, BATCH, len[0], len[1], CAPACITY, Q_HEADS, KV_HEADS,
           DIM);
    printf("largest error against float64: %.2e of max|v| (limit %.0e), log-sum-exp %.2e\n",
           worst, TOLERANCE, worst_lse);
    rc = !(worst <= TOLERANCE && worst_lse <= TOLERANCE);
    printf("%s\n", rc ? "MISMATCH" : "ok");

done:
    if (kbuf) clReleaseMemObject(kbuf);
    if (vbuf) clReleaseMemObject(vbuf);
    if (qbuf) clReleaseMemObject(qbuf);
    if (obuf) clReleaseMemObject(obuf);
    if (lbuf) clReleaseMemObject(lbuf);
    if (lens) clReleaseMemObject(lens);
    clnorm_session_destroy(s);
    return rc;
}
