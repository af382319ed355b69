/* Helper of disk_cache_processes, warmup_builds and fast_path_fallback: one process
   start against the cache folder in CLNORM_CACHE_DIR, on a session of SPEC ("" =
   default). Modes (argv[2]):
     (none), warm, prewarm  one softmax_stats, checked; "warm" (which the case passes
                            only where the device stores binaries) also checks that
                            the program came from the disk cache; "prewarm" runs with
                            a disk cache folder of its own, to fill only the driver's
                            own caches;
     bad-env VAR            run with VAR set to a value clnorm refuses: every entry
                            point that takes the environment, on 0 rows and on 1,
                            must refuse with CLNORM_INVALID_ARGUMENT naming VAR and
                            write nothing;
     every [checks...]      every operation in every dtype on the shapes warmup_builds
                            uses, each result checked, then the checks named after it:
                            no-builds (no program built from source), local (every
                            call and the device's profile on the local path),
                            no-retry (no probe run and no build refused: what an
                            earlier process learnt came from the probe record).
   Exit 0 good, 1 a failed call, a wrong value or (bad-env) a call let through, 3 not warm, 4 built, 5 not local,
   6 retried. */
#define _POSIX_C_SOURCE 200809L
#include "clnorm_advanced.h"
#include "probe.h"
#include "program_build.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static int every(const char *spec, int argc, char **argv);
static int bad_env(const char *spec, const char *var);

int main(int argc, char **argv)
{
    const char *spec = argc > 1 && *argv[1] ? argv[1] : NULL;
    if (argc > 2 && !strcmp(argv[2], "every")) return every(spec, argc - 3, argv + 3);
    if (argc > 3 && !strcmp(argv[2], "bad-env")) return bad_env(spec, argv[3]);
    int warm = argc > 2 && !strcmp(argv[2], "warm");
    /* prewarm: a folder of its own, so that the driver builds the very programs the
       others will (on PoCL, a program per kernel where the disk cache is on). */
    if (argc > 2 && !strcmp(argv[2], "prewarm")) {
        clnorm_config cfg;
        clnorm_config_get(&cfg);
        char own[sizeof cfg.cache_dir];
        snprintf(own, sizeof own, "%.1000s/prewarm", *cfg.cache_dir ? cfg.cache_dir : "/tmp");
        snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", own);
        if (clnorm_config_set(&cfg) != CLNORM_SUCCESS) {
            fprintf(stderr, "cache_child: %s\n", clnorm_last_error());
            return 1;
        }
    }
    enum { ROWS = 8, COLS = 1000 };
    static float x[ROWS * COLS], m[ROWS], l[ROWS];
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 7919) % 1000) / 100.0f;
    if (!st) st = clnorm_softmax_stats_host(s, CLNORM_F32, ROWS, COLS, x, m, l);
    if (st) {
        fprintf(stderr, "cache_child: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        clnorm_session_destroy(s);
        return 1;
    }
    for (int r = 0; r < ROWS; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < COLS; c++) mx = fmax(mx, x[r * COLS + c]);
        for (int c = 0; c < COLS; c++) sum += exp(x[r * COLS + c] - mx);
        if (m[r] != (float)mx || fabs(l[r] - sum) > 1e-4 * sum) {
            fprintf(stderr, "cache_child: row %d: (%g, %g), expected (%g, %g)\n", r, m[r], l[r],
                    mx, sum);
            clnorm_session_destroy(s);
            return 1;
        }
    }
    clnorm_cache_stats cs;
    clnorm_cache_stats_get(&cs);
    clnorm_session_destroy(s);
    if (warm && (cs.disk_hits != 1 || cs.disk_misses || cs.disk_rejected)) {
        fprintf(stderr, "cache_child: warm start: %lu hits, %lu misses, %lu rejected\n",
                cs.disk_hits, cs.disk_misses, cs.disk_rejected);
        return 3;
    }
    return 0;
}

/* ---- every --------------------------------------------------------------------------- */

/* Values that every dtype holds exactly: multiples of 1/8 below 8 in magnitude. */
static uint16_t to_bits16(clnorm_dtype dt, float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    if (dt == CLNORM_BF16) return (uint16_t)(b >> 16);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    if ((b & 0x7fffffffu) == 0) return sign;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint16_t)(e << 10) | (uint16_t)((b >> 13) & 0x3ffu));
}

static float from_bits16(clnorm_dtype dt, uint16_t h)
{
    uint32_t b;
    if (dt == CLNORM_BF16) {
        b = (uint32_t)h << 16;
    } else {
        uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
        if (e == 0x1f) b = sign | 0x7f800000u | (m << 13);
        else if (e == 0) return (sign ? -1.0f : 1.0f) * (float)m * 0x1p-24f;
        else b = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float v;
    memcpy(&v, &b, 4);
    return v;
}

static void store(clnorm_dtype dt, const float *v, void *dst, size_t n)
{
    if (dt == CLNORM_F32) memcpy(dst, v, n * 4);
    else
        for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = to_bits16(dt, v[i]);
}

static float load(clnorm_dtype dt, const void *src, size_t i)
{
    return dt == CLNORM_F32 ? ((const float *)src)[i] : from_bits16(dt, ((const uint16_t *)src)[i]);
}

static int near(float got, double want, clnorm_dtype dt)
{
    const double rel = dt == CLNORM_F32 ? 1e-4 : 1e-2, abs = dt == CLNORM_F32 ? 1e-6 : 1e-3;
    return fabs(got - want) <= rel * fabs(want) + abs;
}

/* Runs operation op (0 rmsnorm, 1 add_rmsnorm, 2 three-pass, 3 online, 4 auto softmax,
   5 statistics) on rows x cols in dt and checks it; 0 when right. */
static int run_checked(clnorm_session *s, int op, clnorm_dtype dt, size_t rows, size_t cols)
{
    const size_t n = rows * cols;
    float *x = malloc(n * 4), *r = malloc(n * 4), *m = malloc(rows * 4), *l = malloc(rows * 4);
    void *bx = malloc(n * 4), *br = malloc(n * 4), *by = malloc(n * 4);
    int bad = 1;
    clnorm_status st = CLNORM_OUT_OF_RESOURCES;
    if (!x || !r || !m || !l || !bx || !br || !by) goto done;
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)((i * 37 + 11) % 61) - 30) / 8.0f;
        r[i] = (float)((int)((i * 13 + 5) % 31) - 15) / 8.0f;
    }
    store(dt, x, bx, n);
    store(dt, r, br, n);
    const clnorm_softmax_algo algo[] = {CLNORM_SOFTMAX_THREE_PASS, CLNORM_SOFTMAX_ONLINE,
                                        CLNORM_SOFTMAX_AUTO};
    if (op == 0) st = clnorm_rmsnorm_host(s, dt, rows, cols, bx, NULL, by, 1e-5f);
    else if (op == 1) st = clnorm_add_rmsnorm_host(s, dt, rows, cols, bx, br, 1, NULL, by, 1e-5f);
    else if (op == 5) st = clnorm_softmax_stats_host(s, dt, rows, cols, bx, m, l);
    else st = clnorm_softmax_host(s, dt, rows, cols, bx, by, algo[op - 2]);
    if (st) goto done;
    bad = 0;
    for (size_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols, *rr = r + i * cols;
        double mx = -INFINITY, sum = 0, sq = 0;
        for (size_t c = 0; c < cols; c++) {
            const double h = op == 1 ? (double)xr[c] + rr[c] : xr[c];
            mx = fmax(mx, h);
            sq += h * h;
        }
        for (size_t c = 0; c < cols; c++) sum += exp(xr[c] - mx);
        const double scale = 1 / sqrt(sq / (double)cols + 1e-5);
        if (op == 5) {
            bad += m[i] != (float)mx || !near(l[i], sum, CLNORM_F32);
            continue;
        }
        for (size_t c = 0; c < cols; c++) {
            const size_t k = i * cols + c;
            const double h = op == 1 ? (double)xr[c] + rr[c] : xr[c];
            const double want = op <= 1 ? h * scale : exp(xr[c] - mx) / sum;
            bad += !near(load(dt, by, k), want, dt);
            if (op == 1) bad += load(dt, br, k) != (float)h; /* the residual, updated */
        }
    }
done:
    if (st) fprintf(stderr, "cache_child: op %d %s %zux%zu: %s: %s\n", op, clnorm_dtype_name(dt),
                    rows, cols, clnorm_status_string(st), clnorm_last_error());
    else if (bad)
        fprintf(stderr, "cache_child: op %d %s %zux%zu: %d wrong values\n", op,
                clnorm_dtype_name(dt), rows, cols, bad);
    free(x), free(r), free(m), free(l), free(bx), free(br), free(by);
    return bad;
}

static int every(const char *spec, int argc, char **argv)
{
    static const size_t shapes[][2] = {{3, 5}, {256, 128}, {2, 70000}, {3, 2}};
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st) {
        fprintf(stderr, "cache_child: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        return 1;
    }
    int wrong = 0, not_local = 0;
    for (int dt = CLNORM_F32; dt <= CLNORM_BF16; dt++)
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
            for (int op = 0; op < 6; op++) {
                wrong += run_checked(s, op, (clnorm_dtype)dt, shapes[k][0], shapes[k][1]);
                clnorm_plan_info pi;
                not_local += clnorm_last_plan(&pi) && pi.reduction != CLNORM_REDUCTION_LOCAL;
            }
    clnorm_device_info info;
    cl_device_id dev = NULL;
    clGetCommandQueueInfo(clnorm_session_queue(s), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    if (clnorm_device_describe(dev, 1, &info) == CLNORM_SUCCESS &&
        info.reduction != CLNORM_REDUCTION_LOCAL)
        not_local++;
    clnorm_cache_stats cs;
    clnorm_cache_stats_get(&cs);
    clnorm_session_destroy(s);
    if (wrong) return 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "no-builds") && cs.builds) {
            fprintf(stderr, "cache_child: %lu programs built from source\n", cs.builds);
            return 4;
        }
        if (!strcmp(argv[i], "local") && not_local) {
            fprintf(stderr, "cache_child: %d calls or the profile not on the local path\n",
                    not_local);
            return 5;
        }
        if (!strcmp(argv[i], "no-retry") && (cln_probe_count() || cln_program_build_failures())) {
            fprintf(stderr, "cache_child: %lu probes run, %lu builds refused\n",
                    cln_probe_count(), cln_program_build_failures());
            return 6;
        }
    }
    return 0;
}

/* ---- bad-env ------------------------------------------------------------------------ */
static int bad_env_failures;

/* The call's status must be CLNORM_INVALID_ARGUMENT with a message naming var. */
static void expect_refused(const char *call, size_t rows, clnorm_status st, const char *var)
{
    if (st == CLNORM_INVALID_ARGUMENT && strstr(clnorm_last_error(), var)) return;
    fprintf(stderr, "cache_child: %s on %zu rows under a bad %s: %s: \"%s\"\n", call, rows, var,
            clnorm_status_string(st), clnorm_last_error());
    bad_env_failures++;
}

static int bad_env(const char *spec, const char *var)
{
    enum { COLS = 8, N = 2 * COLS };
    static const float poison = -12345.0f;
    float host[N], out[N], rm[2], rs[2];
    for (int i = 0; i < N; i++) {
        host[i] = (float)i / 4.0f;
        out[i] = poison;
    }
    /* Opening a session reads no setting the environment could spoil. */
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st) {
        fprintf(stderr, "cache_child: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        return 1;
    }
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    cl_int err;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host,
                              &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof out, out,
                              &err);
    cl_mem r = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host,
                              &err);
    cl_mem st4[4];
    for (int i = 0; i < 4; i++)
        st4[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 2 * sizeof(float),
                                host, &err);
    clnorm_matrix mx = {x, 0, COLS}, my = {y, 0, COLS}, mr = {r, 0, COLS};
    clnorm_tensor tq = {x, 0, COLS, COLS, COLS}, tk = {r, 0, COLS, COLS, COLS};
    clnorm_tensor to = {y, 0, COLS, COLS, COLS};
    clnorm_shard shard = {q, COLS, mx, my};
    for (size_t rows = 0; rows <= 2; rows += 2) {
        clnorm_attention_desc d = {1, 1, 1, rows / 2, 1, COLS, 0.0f, 0, NULL};
        expect_refused("clnorm_rmsnorm", rows,
                       clnorm_rmsnorm(q, CLNORM_F32, rows, COLS, mx, NULL, my, 1e-6f, 0, NULL,
                                      NULL), var);
        expect_refused("clnorm_add_rmsnorm", rows,
                       clnorm_add_rmsnorm(q, CLNORM_F32, rows, COLS, mx, mr, 0, NULL, my, 1e-6f,
                                          0, NULL, NULL), var);
        expect_refused("clnorm_softmax", rows,
                       clnorm_softmax(q, CLNORM_F32, rows, COLS, mx, my, CLNORM_SOFTMAX_AUTO, 0,
                                      NULL, NULL), var);
        expect_refused("clnorm_softmax_stats", rows,
                       clnorm_softmax_stats(q, CLNORM_F32, rows, COLS, mx, st4[0], st4[1], 0,
                                            NULL, NULL), var);
        expect_refused("clnorm_softmax_apply", rows,
                       clnorm_softmax_apply(q, CLNORM_F32, rows, COLS, mx, st4[0], st4[1], my, 0,
                                            NULL, NULL), var);
        expect_refused("clnorm_stats_merge_rows", rows,
                       clnorm_stats_merge_rows(q, rows, st4[0], st4[1], st4[2], st4[3], 0, NULL,
                                               NULL), var);
        expect_refused("clnorm_softmax_sharded", rows,
                       clnorm_softmax_sharded(CLNORM_F32, rows, 1, &shard, NULL, NULL), var);
        expect_refused("clnorm_softmax_check", rows,
                       clnorm_softmax_check(q, CLNORM_F32, rows, COLS, mx, my), var);
        expect_refused("clnorm_attention", rows,
                       clnorm_attention(q, CLNORM_F32, &d, tq, tk, tk, to, NULL, 0, NULL, NULL),
                       var);
        expect_refused("clnorm_attention_merge", rows,
                       clnorm_attention_merge(q, CLNORM_F32, rows, COLS, mx, st4[0], mr, st4[1],
                                              my, st4[2], 0, NULL, NULL), var);
        expect_refused("clnorm_rmsnorm_host", rows,
                       clnorm_rmsnorm_host(s, CLNORM_F32, rows, COLS, host, NULL, out, 1e-6f),
                       var);
        expect_refused("clnorm_softmax_host", rows,
                       clnorm_softmax_host(s, CLNORM_F32, rows, COLS, host, out,
                                           CLNORM_SOFTMAX_AUTO), var);
        expect_refused("clnorm_softmax_stats_host", rows,
                       clnorm_softmax_stats_host(s, CLNORM_F32, rows, COLS, host, rm, rs), var);
        expect_refused("clnorm_softmax_apply_host", rows,
                       clnorm_softmax_apply_host(s, CLNORM_F32, rows, COLS, host, rm, rs, out),
                       var);
        expect_refused("clnorm_add_rmsnorm_host", rows,
                       clnorm_add_rmsnorm_host(s, CLNORM_F32, rows, COLS, host, out, 0, NULL,
                                               out, 1e-6f), var);
        expect_refused("clnorm_warmup", rows, clnorm_warmup(q), var);
    }
    /* Nothing was written: neither y nor the host output. */
    float back[N];
    err = clEnqueueReadBuffer(q, y, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
    for (int i = 0; i < N; i++)
        if (err != CL_SUCCESS || back[i] != poison || out[i] != poison) {
            fprintf(stderr, "cache_child: element %d written under a bad %s (%g, host %g)\n", i,
                    var, back[i], out[i]);
            bad_env_failures++;
            break;
        }
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseMemObject(r);
    for (int i = 0; i < 4; i++) clReleaseMemObject(st4[i]);
    clnorm_session_destroy(s);
    return bad_env_failures ? 1 : 0;
}
