/* `clnorm bench --op attention`: clnorm_attention over a grid of decode shapes (a KV
   cache of kv_len keys per head, q_len new queries), in GB/s of the bytes a call must
   move (K and V read, q read, out written), beside a copy of the K and V bytes through
   the same buffers and a 1 GB copy, both measured in the same run. */
#include "tool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LIST = 16, MAX_ROT = 16, LAYOUT_BHTD = 0, LAYOUT_BTHD = 1 };

typedef struct attn_cfg {
    const char *device, *json, *csv;
    size_t batches[MAX_LIST], kv_lens[MAX_LIST];
    int n_batches, n_kv_lens;
    size_t q_heads, kv_heads, head_dim, q_len;
    int prefill, repeats, calls, quick;
    int dtype_on[3], layout_on[2];
} attn_cfg;

typedef struct attn_result {
    clnorm_dtype dtype;
    int layout;
    size_t batch, q_len, kv_len;
    double bytes, flops, ms, gbps, gflops;
    double copy_gbps; /* K and V copied through the same buffers, same run (0: none) */
    char skipped[160]; /* why the shape did not run; empty when it ran */
} attn_result;

static const char *layout_name(int l) { return l == LAYOUT_BTHD ? "bthd" : "bhtd"; }

/* A view of a [batch][heads][len][dim] tensor stored packed in the layout. */
static clnorm_tensor view(cl_mem m, int layout, size_t heads, size_t len, size_t dim)
{
    clnorm_tensor t = {m, 0, heads * len * dim, len * dim, dim};
    if (layout == LAYOUT_BTHD) t.stride_head = dim, t.stride_len = heads * dim;
    return t;
}

/* Fills a device buffer with random non-zero values in (-1, 1): a 16 MB block made
   on the host, written over the buffer as many times as it takes (a 30 GB cache would
   take a minute to generate element by element on the host). */
static cl_int fill_buffer(cl_command_queue q, cl_mem m, size_t bytes, clnorm_dtype d, uint64_t seed)
{
    size_t es = d == CLNORM_F32 ? 4 : 2, block = (size_t)16 << 20;
    if (block > bytes) block = bytes;
    size_t n = block / es;
    float *f = malloc(n * sizeof *f);
    void *h = malloc(block);
    cl_int err = f && h ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < n && !err; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f[i] = (float)(((double)(seed >> 40) + 0.5) * 0x1p-23 - 1.0);
    }
    if (!err) tool_store(d, f, h, n);
    for (size_t at = 0; at < bytes && !err; at += block) {
        size_t len = bytes - at < block ? bytes - at : block;
        err = clEnqueueWriteBuffer(q, m, CL_TRUE, at, len, h, 0, NULL, NULL);
    }
    free(f), free(h);
    return err;
}

typedef struct attn_bufs {
    int nin;                           /* K, V and q sets rotated per call */
    cl_mem k[MAX_ROT], v[MAX_ROT], q[MAX_ROT], out;
    clnorm_attention_desc desc;
    int layout;
} attn_bufs;

static clnorm_status call(cl_command_queue q, clnorm_dtype d, const attn_bufs *b, int i,
                          cl_event *ev)
{
    const clnorm_attention_desc *a = &b->desc;
    clnorm_tensor tq = view(b->q[i], b->layout, a->q_heads, a->q_len, a->head_dim);
    clnorm_tensor tk = view(b->k[i], b->layout, a->kv_heads, a->kv_len, a->head_dim);
    clnorm_tensor tv = view(b->v[i], b->layout, a->kv_heads, a->kv_len, a->head_dim);
    clnorm_tensor to = view(b->out, b->layout, a->q_heads, a->q_len, a->head_dim);
    return clnorm_attention(q, d, a, tq, tk, tv, to, NULL, 0, NULL, ev);
}

/* Times reps repeats of `calls` calls back to back, rotating over the input sets, into
   t (seconds per call). kv_bytes > 0 times copies of K to V and V to K of each set
   instead (kv_bytes of each). Returns 0 when a call failed. */
static int time_calls(cl_command_queue q, clnorm_dtype d, const attn_bufs *b, int calls,
                      int reps, size_t kv_bytes, double *t)
{
    int ok = 1;
    for (int i = 0; ok && i < reps; i++) {
        cl_event m = NULL, e = NULL;
        double w0 = tool_now();
        clEnqueueMarkerWithWaitList(q, 0, NULL, &m);
        for (int c = 0; ok && c < calls; c++) {
            int set = (i * calls + c) % b->nin;
            cl_event *ev = c + 1 == calls ? &e : NULL; /* only the last asks for an event */
            if (kv_bytes) {
                ok = clEnqueueCopyBuffer(q, b->k[set], b->v[set], 0, 0, kv_bytes, 0, NULL, NULL) ==
                         CL_SUCCESS &&
                     clEnqueueCopyBuffer(q, b->v[set], b->k[set], 0, 0, kv_bytes, 0, NULL, ev) ==
                         CL_SUCCESS;
            } else {
                clnorm_status st = call(q, d, b, set, ev);
                if (st) tool_report("clnorm_attention", st), ok = 0;
            }
        }
        if (ok) {
            clWaitForEvents(1, &e);
            /* Drivers without working profiling (Rusticl 22) report zeros: take the
               wall clock around enqueue and wait instead. */
            double w = tool_now() - w0;
            t[i] = tool_event_seconds(m, e);
            if (t[i] <= 0.05 * w) t[i] = w;
            t[i] /= calls;
        }
        if (e) clReleaseEvent(e);
        if (m) clReleaseEvent(m);
    }
    clFinish(q);
    return ok;
}

static void release(attn_bufs *b)
{
    for (int i = 0; i < MAX_ROT; i++) {
        if (b->k[i]) clReleaseMemObject(b->k[i]);
        if (b->v[i]) clReleaseMemObject(b->v[i]);
        if (b->q[i]) clReleaseMemObject(b->q[i]);
    }
    if (b->out) clReleaseMemObject(b->out);
}

/* One shape: 0 measured, -1 skipped (the reason in r->skipped), 1 failed. */
static int bench_shape(cl_context ctx, cl_command_queue q, cl_device_id dev, const attn_cfg *c,
                       attn_result *r)
{
    size_t es = r->dtype == CLNORM_F32 ? 4 : 2;
    size_t kv_bytes = r->batch * c->kv_heads * r->kv_len * c->head_dim * es; /* each of K, V */
    size_t q_bytes = r->batch * c->q_heads * r->q_len * c->head_dim * es;
    double visible = (double)r->q_len * (double)r->kv_len - 0.5 * (double)r->q_len * (double)(r->q_len - 1);
    r->bytes = 2.0 * (double)kv_bytes + 2.0 * (double)q_bytes;
    r->flops = 4.0 * (double)r->batch * (double)c->q_heads * (double)c->head_dim * visible;
    cl_ulong max_alloc = 0, global = 0;
    cl_device_type type = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    int cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    double set_bytes = 2.0 * (double)kv_bytes + (double)q_bytes;
    if (kv_bytes > max_alloc || q_bytes > max_alloc) {
        snprintf(r->skipped, sizeof r->skipped, "K of %.0f MB is over the device's largest "
                 "buffer, %.0f MB", (double)kv_bytes / 1e6, (double)max_alloc / 1e6);
        return -1;
    }
    if (set_bytes + (double)q_bytes > 0.75 * (double)global) {
        snprintf(r->skipped, sizeof r->skipped, "K and V of %.0f MB are over 3/4 of the "
                 "device's %.0f MB", 2.0 * (double)kv_bytes / 1e6, (double)global / 1e6);
        return -1;
    }
    /* Rotate input sets so that together they exceed the last-level cache (512 MB on
       GPUs, 64 MB on CPUs), within half of the device's memory. */
    double rotate = cpu ? (double)(64 << 20) : (double)(512 << 20);
    int nin = (int)(rotate / set_bytes) + 1;
    if (nin > MAX_ROT) nin = MAX_ROT;
    while (nin > 1 && (double)nin * set_bytes > 0.5 * (double)global) nin--;
    attn_bufs b = {.nin = nin, .layout = r->layout};
    b.desc = (clnorm_attention_desc){.batch = r->batch, .q_heads = c->q_heads,
                                     .kv_heads = c->kv_heads, .q_len = r->q_len,
                                     .kv_len = r->kv_len, .head_dim = c->head_dim,
                                     .scale = 0, .causal = 1, .kv_lens = NULL};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < nin && !err; i++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(3 * i + 1);
        b.k[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kv_bytes, NULL, &err);
        if (!err) err = fill_buffer(q, b.k[i], kv_bytes, r->dtype, seed);
        if (!err) b.v[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, kv_bytes, NULL, &err);
        if (!err) err = fill_buffer(q, b.v[i], kv_bytes, r->dtype, seed + 1);
        if (!err) b.q[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, q_bytes, NULL, &err);
        if (!err) err = fill_buffer(q, b.q[i], q_bytes, r->dtype, seed + 2);
    }
    if (!err) b.out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, q_bytes, NULL, &err);
    if (err) {
        release(&b);
        snprintf(r->skipped, sizeof r->skipped, "%.0f MB of buffers could not be made or "
                 "filled: %s", (double)nin * set_bytes / 1e6, clnorm_opencl_error_name(err));
        return -1;
    }
    /* Warm-up: builds the kernels and touches every input set once. */
    clnorm_status st = CLNORM_SUCCESS;
    for (int i = 0; i < nin && !st; i++) {
        cl_event e = NULL;
        st = call(q, r->dtype, &b, i, &e);
        if (!st) clWaitForEvents(1, &e), clReleaseEvent(e);
    }
    if (st == CLNORM_UNSUPPORTED) {
        snprintf(r->skipped, sizeof r->skipped, "unsupported: %.120s", clnorm_last_error());
        release(&b);
        return -1;
    }
    if (st) tool_report("clnorm_attention", st);
    double t[64], tc[64];
    int reps = c->repeats > 64 ? 64 : c->repeats;
    int ok = !st && time_calls(q, r->dtype, &b, c->calls, reps, 0, t);
    int have_copy = ok && time_calls(q, r->dtype, &b, 1, 1, kv_bytes, tc) &&
                    time_calls(q, r->dtype, &b, c->calls, reps, kv_bytes, tc);
    release(&b);
    if (!ok) return 1;
    double s = tool_median(t, (size_t)reps);
    r->ms = s * 1e3;
    r->gbps = r->bytes / s * 1e-9;
    r->gflops = r->flops / s * 1e-9;
    double cs = have_copy ? tool_median(tc, (size_t)reps) : 0;
    r->copy_gbps = cs > 0 ? 4.0 * (double)kv_bytes / cs * 1e-9 : 0;
    return 0;
}

/* "1,8,64" or "1k,32k" (k: 1024) into out; 0 after a message when malformed. */
static int parse_list(const char *opt, const char *arg, size_t *out, int *n)
{
    const char *s = arg;
    *n = 0;
    while (*s) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (end != s && (*end == 'k' || *end == 'K')) v *= 1024, end++;
        if (errno || end == s || v == 0 || s[0] == '-' || (*end && *end != ',') || *n == MAX_LIST) {
            fprintf(stderr, "clnorm bench: %s \"%s\" is not a list of up to %d positive "
                    "integers (1k = 1024)\n", opt, arg, MAX_LIST);
            return 0;
        }
        out[(*n)++] = (size_t)v;
        s = *end ? end + 1 : end;
    }
    if (!*n) fprintf(stderr, "clnorm bench: %s is empty\n", opt);
    return *n > 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clnorm bench --op attention [--device SPEC] [--quick]\n"
            "         [--dtype f32|f16|bf16|all[,...]] [--layout bhtd|bthd|all]\n"
            "         [--batch-size LIST] [--kv-len LIST] [--q-len N | --prefill]\n"
            "         [--q-heads N] [--kv-heads N] [--head-dim N]\n"
            "         [--repeats N] [--batch N] [--json FILE] [--csv FILE]\n"
            "\n"
            "Times clnorm_attention (causal, scale 1/sqrt(head_dim)) over a grid of shapes:\n"
            "batch sizes 1,8,64 x KV lengths 1k,8k,32k,128k, 32 query heads on 8 KV heads\n"
            "of dimension 128, one query per head, float32 and bf16, the cache laid out\n"
            "[b][h][t][d] (bhtd) or [b][t][h][d] (bthd; q and out alike). --quick: batch\n"
            "sizes 1,8 and KV lengths 1k,8k. --q-len N: N queries per head (speculative\n"
            "decoding); --prefill: as many queries as keys. Shapes whose K or V is over the\n"
            "device's largest buffer, or whose K and V are over 3/4 of its memory, are\n"
            "listed as skipped.\n"
            "\n"
            "Prints per shape the median time of N runs after a warm-up (OpenCL profiling\n"
            "events, inputs rotated past the caches, random non-zero data), GB/s of the\n"
            "bytes a call moves (K and V read, q read, out written), the share of the\n"
            "device's 1 GB buffer copy (64 MB on CPUs), the share of a copy of the shape's\n"
            "K and V bytes through the same buffers (%%copy@sz), and GFLOP/s. --batch N\n"
            "times N calls back to back per repeat. FILE may be - for standard output.\n");
}

static int parse(int argc, char **argv, attn_cfg *c)
{
    const char *list_b = NULL, *list_kv = NULL, *layout = "bhtd", *dtypes = "f32,bf16";
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        size_t n;
        if (tool_is_help(argv[i])) { usage(stdout); return -1; }
        if (!strcmp(argv[i], "--quick")) { c->quick = 1; continue; }
        if (!strcmp(argv[i], "--prefill")) { c->prefill = 1; continue; }
#define STR_OPT(name, dst) \
    if ((m = tool_opt(argc, argv, &i, name, &v))) { if (m < 0) return 1; dst = v; continue; }
#define SIZE_OPT(name, dst) \
    if ((m = tool_opt(argc, argv, &i, name, &v))) { \
        if (m < 0 || !tool_parse_size(name, v, &n)) return 1; \
        dst = n; \
        continue; \
    }
        STR_OPT("--op", v)
        STR_OPT("--device", c->device)
        STR_OPT("--json", c->json)
        STR_OPT("--csv", c->csv)
        STR_OPT("--batch-size", list_b)
        STR_OPT("--kv-len", list_kv)
        STR_OPT("--layout", layout)
        STR_OPT("--dtype", dtypes)
        SIZE_OPT("--q-len", c->q_len)
        SIZE_OPT("--q-heads", c->q_heads)
        SIZE_OPT("--kv-heads", c->kv_heads)
        SIZE_OPT("--head-dim", c->head_dim)
        SIZE_OPT("--repeats", c->repeats)
        SIZE_OPT("--batch", c->calls)
#undef STR_OPT
#undef SIZE_OPT
        fprintf(stderr, "clnorm bench --op attention: unknown option %s\n", argv[i]);
        usage(stderr);
        return 1;
    }
    if (!parse_list("--batch-size", list_b ? list_b : c->quick ? "1,8" : "1,8,64", c->batches,
                    &c->n_batches) ||
        !parse_list("--kv-len", list_kv ? list_kv : c->quick ? "1k,8k" : "1k,8k,32k,128k",
                    c->kv_lens, &c->n_kv_lens))
        return 1;
    if (!strcmp(layout, "all")) c->layout_on[0] = c->layout_on[1] = 1;
    else if (!strcmp(layout, "bhtd") || !strcmp(layout, "bthd")) c->layout_on[!strcmp(layout, "bthd")] = 1;
    else {
        fprintf(stderr, "clnorm bench: --layout \"%s\" is not bhtd, bthd or all\n", layout);
        return 1;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%s", dtypes);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        clnorm_dtype d;
        if (!strcmp(tok, "all")) c->dtype_on[0] = c->dtype_on[1] = c->dtype_on[2] = 1;
        else if (tool_parse_dtype(tok, &d)) c->dtype_on[d] = 1;
        else return 1;
    }
    if (c->q_heads % c->kv_heads) {
        fprintf(stderr, "clnorm bench: --q-heads %zu is not a multiple of --kv-heads %zu\n",
                c->q_heads, c->kv_heads);
        return 1;
    }
    if (c->calls > 1000) c->calls = 1000;
    if (c->repeats > 64) c->repeats = 64;
    return 0;
}

static void write_results(const attn_cfg *c, const char *device, const char *note, double copy,
                          const attn_result *rs, int n)
{
    FILE *fj = c->json ? strcmp(c->json, "-") ? fopen(c->json, "w") : stdout : NULL;
    FILE *fc = c->csv ? strcmp(c->csv, "-") ? fopen(c->csv, "w") : stdout : NULL;
    if (fj) {
        fprintf(fj, "{\"impl\": \"clnorm\", \"device\": \"%s\", \"note\": \"%s\", "
                "\"copy_gbps\": %.2f, \"results\": [\n", device, note ? note : "", copy);
        for (int i = 0; i < n; i++)
            fprintf(fj, "  {\"op\": \"attention\", \"dtype\": \"%s\", \"layout\": \"%s\", "
                    "\"batch\": %zu, \"q_heads\": %zu, \"kv_heads\": %zu, \"q_len\": %zu, "
                    "\"kv_len\": %zu, \"head_dim\": %zu, \"causal\": 1, \"bytes\": %.0f, "
                    "\"flops\": %.0f, \"ms\": %.5f, \"gbps\": %.2f, \"gflops\": %.2f, "
                    "\"copy_size_gbps\": %.2f, \"skipped\": \"%s\"}%s\n",
                    clnorm_dtype_name(rs[i].dtype), layout_name(rs[i].layout), rs[i].batch,
                    c->q_heads, c->kv_heads, rs[i].q_len, rs[i].kv_len, c->head_dim, rs[i].bytes,
                    rs[i].flops, rs[i].ms, rs[i].gbps, rs[i].gflops, rs[i].copy_gbps,
                    rs[i].skipped, i + 1 < n ? "," : "");
        fprintf(fj, "]}\n");
        if (fj != stdout) fclose(fj);
    }
    if (fc) {
        fprintf(fc, "device,dtype,layout,batch,q_heads,kv_heads,q_len,kv_len,head_dim,ms,gbps,"
                "gflops,copy_gbps,copy_size_gbps,skipped\n");
        for (int i = 0; i < n; i++)
            fprintf(fc, "\"%s\",%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%.5f,%.2f,%.2f,%.2f,%.2f,\"%s\"\n",
                    device, clnorm_dtype_name(rs[i].dtype), layout_name(rs[i].layout),
                    rs[i].batch, c->q_heads, c->kv_heads, rs[i].q_len, rs[i].kv_len,
                    c->head_dim, rs[i].ms, rs[i].gbps, rs[i].gflops, copy, rs[i].copy_gbps,
                    rs[i].skipped);
        if (fc != stdout) fclose(fc);
    }
}

int cmd_bench_attention(int argc, char **argv)
{
    attn_cfg c = {.q_heads = 32, .kv_heads = 8, .head_dim = 128, .q_len = 1, .calls = 1};
    int rc = parse(argc, argv, &c);
    if (rc) return rc < 0 ? TOOL_OK : TOOL_USAGE;
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(c.device, &s);
    if (st) { tool_report("session", st); return TOOL_FAIL; }
    const char *device = clnorm_session_device_name(s);
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    cl_device_id dev = NULL;
    cl_device_type type = 0;
    clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    int cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    const char *note = tool_pocl_note(q);
    double copy = tool_copy_gbps(ctx, q, cpu ? ((size_t)64 << 20) : ((size_t)1 << 30), 5, NULL);
    if (!c.repeats) c.repeats = cpu ? 5 : 20;
    printf("clnorm bench %s on %s: attention, %zu query heads on %zu KV heads of dimension "
           "%zu, causal, median of %d\n", clnorm_version(), device, c.q_heads, c.kv_heads,
           c.head_dim, c.repeats);
    if (c.calls > 1) printf("each a batch of %d calls back to back\n", c.calls);
    if (note) printf("%s\n", note);
    printf("device buffer copy: %.1f GB/s (read + write)\n", copy);
    printf("%-5s %-6s %5s %7s %7s %10s %9s %7s %9s %9s\n", "dtype", "layout", "batch", "kv_len",
           "q_len", "ms", "GB/s", "%copy", "%copy@sz", "GFLOP/s");
    int total = 0, done = 0, n = 0, failed = 0;
    for (int d = 0; d < 3; d++)
        for (int l = 0; l < 2; l++) total += c.dtype_on[d] * c.layout_on[l];
    total *= c.n_batches * c.n_kv_lens;
    attn_result *rs = calloc((size_t)total + 1, sizeof *rs);
    for (int d = 0; d < 3 && rs; d++)
        for (int l = 0; l < 2; l++) {
            if (!c.dtype_on[d] || !c.layout_on[l]) continue;
            for (int ib = 0; ib < c.n_batches; ib++)
                for (int ik = 0; ik < c.n_kv_lens; ik++) {
                    attn_result *r = &rs[n++];
                    r->dtype = (clnorm_dtype)d;
                    r->layout = l;
                    r->batch = c.batches[ib];
                    r->kv_len = c.kv_lens[ik];
                    r->q_len = c.prefill ? r->kv_len : c.q_len;
                    fprintf(stderr, "\r[%d/%d] attention %s %s b%zu kv%zu q%zu ...        ",
                            ++done, total, clnorm_dtype_name(r->dtype), layout_name(l), r->batch,
                            r->kv_len, r->q_len);
                    int sr = r->q_len > r->kv_len ? -1 : bench_shape(ctx, q, dev, &c, r);
                    if (r->q_len > r->kv_len)
                        snprintf(r->skipped, sizeof r->skipped, "q_len %zu is over kv_len",
                                 r->q_len);
                    fprintf(stderr, "\r%70s\r", "");
                    printf("%-5s %-6s %5zu %7zu %7zu ", clnorm_dtype_name(r->dtype),
                           layout_name(l), r->batch, r->kv_len, r->q_len);
                    if (sr > 0) failed++, printf("failed\n");
                    else if (sr < 0) printf("skipped: %s\n", r->skipped);
                    else
                        printf("%10.4f %9.1f %6.1f%% %8.1f%% %9.1f\n", r->ms, r->gbps,
                               copy > 0 ? 100.0 * r->gbps / copy : 0,
                               r->copy_gbps > 0 ? 100.0 * r->gbps / r->copy_gbps : 0, r->gflops);
                    fflush(stdout);
                    if (sr > 0) n--;
                }
        }
    write_results(&c, device, note, copy, rs, n);
    free(rs);
    clnorm_session_destroy(s);
    return failed ? TOOL_FAIL : TOOL_OK;
}
