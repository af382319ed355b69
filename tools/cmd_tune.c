/* `clnorm tune`: times the candidate plans of each operation, dtype and column bucket
   on one device and stores the fastest in the device's tuning file, which the
   library then uses (src/tuning.c). Candidates are forced through the environment
   overrides the library reads at every call (CLNORM_VARIANT, CLNORM_WORK_GROUP,
   CLNORM_ROW_THREADS, CLNORM_SPLIT, CLNORM_REDUCTION) and timed with profiling
   events on the session's queue. */
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char tune_usage[] =
    "usage: clnorm tune [--device SPEC] [--quick] [--repeats N] [--show] [--help]\n"
    "\n"
    "For rmsnorm, softmax three-pass, softmax online and softmax statistics, in f32, f16\n"
    "and bf16, on rows of 128, 1024, 4096, 32768 and 262144 columns (rows enough for\n"
    "4M elements), times every candidate plan: variant (stream, reg, words, split), work-group\n"
    "size, work-items per row (so rows per work-group), work-groups per row (split) and\n"
    "reduction path, on random data, checked against the built-in plan's result. Each\n"
    "is timed with profiling events on the session queue: a warm-up run, then the\n"
    "median of N (default 5) batches of back-to-back runs (about 2 ms a batch). The\n"
    "fastest is timed again against the built-in plan, interleaved, and kept only if\n"
    "it still wins. The winners per (operation, dtype, columns), and the faster softmax\n"
    "algorithm for softmax AUTO, go into the device's tuning file in the cache folder;\n"
    "entries of other shapes already there are kept.\n"
    "\n"
    "  --device SPEC  \"P:D\", cpu, gpu or a name substring (see `clnorm devices`)\n"
    "  --quick        f32 only, 128, 4096 and 262144 columns, 1M elements, fewer\n"
    "                 candidates, 3 runs each\n"
    "  --show         print the tuning table in use for the device, and nothing else\n"
    "\n"
    "The library uses the table while it is valid for the device, driver, library and\n"
    "kernel source; CLNORM_TUNING=off, or any of CLNORM_WORK_GROUP, CLNORM_ROW_THREADS,\n"
    "CLNORM_VARIANT and CLNORM_SPLIT, sets it aside. A table entry applies to calls\n"
    "within a factor of 4 of its columns and with at least 1/8 of its rows.\n";

typedef struct tune_bufs {
    cl_command_queue q;
    cl_mem x, y, gamma, m, l;
    size_t rows, cols;
    clnorm_dtype dtype;
} tune_bufs;

typedef struct cand { cln_variant variant; cln_path path; size_t wg, team, slices; } cand;

static const char *const force_vars[] = {"CLNORM_VARIANT", "CLNORM_WORK_GROUP",
                                         "CLNORM_ROW_THREADS", "CLNORM_SPLIT",
                                         "CLNORM_REDUCTION"};

/* Forces candidate c through the environment, or clears it (c NULL): built-in. */
static void force(const cand *c, const char *reduction)
{
    char v[32];
    for (size_t i = 0; i < 4; i++) unsetenv(force_vars[i]);
    if (reduction) setenv("CLNORM_REDUCTION", reduction, 1);
    else unsetenv("CLNORM_REDUCTION");
    if (!c) return;
    setenv("CLNORM_VARIANT", cln_variant_name(c->variant), 1);
    snprintf(v, sizeof v, "%zu", c->wg);
    setenv("CLNORM_WORK_GROUP", v, 1);
    if (c->variant == CLN_VAR_SPLIT) {
        snprintf(v, sizeof v, "%zu", c->slices);
        setenv("CLNORM_SPLIT", v, 1);
    } else {
        snprintf(v, sizeof v, "%zu", c->team);
        setenv("CLNORM_ROW_THREADS", v, 1);
    }
    if (c->path == CLN_PATH_LOCAL) setenv("CLNORM_REDUCTION", "local", 1);
}

static clnorm_status enqueue(const tune_bufs *b, cln_op op, cl_uint nw, const cl_event *w,
                             cl_event *ev)
{
    clnorm_matrix x = {b->x, 0, 0}, y = {b->y, 0, 0};
    switch (op) {
    case CLN_OP_RMSNORM:
        return clnorm_rmsnorm(b->q, b->dtype, b->rows, b->cols, x, b->gamma, y, 1e-6f, nw, w, ev);
    case CLN_OP_STATS:
        return clnorm_softmax_stats(b->q, b->dtype, b->rows, b->cols, x, b->m, b->l, nw, w, ev);
    default:
        return clnorm_softmax(b->q, b->dtype, b->rows, b->cols, x, y,
                              op == CLN_OP_SOFTMAX_THREE_PASS ? CLNORM_SOFTMAX_THREE_PASS
                              : op == CLN_OP_SOFTMAX_ONLINE ? CLNORM_SOFTMAX_ONLINE
                                                            : CLNORM_SOFTMAX_AUTO,
                              nw, w, ev);
    }
}

static cl_ulong prof_time(cl_event e, cl_profiling_info what)
{
    cl_ulong t = 0;
    if (clGetEventProfilingInfo(e, what, sizeof t, &t, NULL) != CL_SUCCESS) return 0;
    return t;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Microseconds per run over k runs enqueued back to back, from the first run's start
   to the last run's end (profiling events); < 0 on error. A split plan's event is
   its second kernel's, so the first run's first kernel is not counted: 1/k of one. */
static double time_batch(const tune_bufs *b, cln_op op, size_t k)
{
    cl_event first = NULL, last = NULL;
    double us = -1, h0 = now_us();
    int ok = 1;
    for (size_t i = 0; i < k && ok; i++)
        ok = enqueue(b, op, 0, NULL, i == 0 ? &first : i + 1 == k ? &last : NULL) == CLNORM_SUCCESS;
    if (ok && clWaitForEvents(1, last ? &last : &first) == CL_SUCCESS) {
        double wall = now_us() - h0;
        cl_ulong t0 = prof_time(first, CL_PROFILING_COMMAND_START);
        cl_ulong t1 = prof_time(last ? last : first, CL_PROFILING_COMMAND_END);
        double prof = t1 > t0 ? (double)(t1 - t0) / 1e3 : 0;
        /* A profiled span under half the host's is not a time: Rusticl's counters
           read zero, and PoCL's can report a small fraction of a batch's length. */
        us = (prof >= wall / 2 ? prof : wall) / (double)k;
    }
    clFinish(b->q);
    if (first) clReleaseEvent(first);
    if (last) clReleaseEvent(last);
    return us;
}

/* Runs per timed batch: enough for about 2 ms, so launch gaps and timer steps
   average out, at most 64. */
static size_t batch_for(double us) { return us <= 0 ? 1 : us >= 2000 ? 1 : us < 2000.0 / 64 ? 64 : (size_t)(2000 / us); }

/* Warm-up, then the median of n batches; < 0 when the call fails. *k receives the
   batch length used. */
static double time_median(const tune_bufs *b, cln_op op, size_t n, size_t *k)
{
    double t[16];
    if (n > 16) n = 16;
    /* Two warm-ups: the first run of a plan may build the program (NVIDIA: seconds)
       or compile for its work-group size (PoCL), and a batch sized on that is a
       single run, which times launch latency rather than the kernel and would make
       that plan lose to rivals timed in batches. */
    double w = time_batch(b, op, 1);
    if (w < 0) return -1;
    if ((w = time_batch(b, op, 1)) < 0) return -1;
    *k = batch_for(w);
    for (size_t i = 0; i < n; i++)
        if ((t[i] = time_batch(b, op, *k)) < 0) return -1;
    return tool_median(t, n);
}

/* The output (y, or row max and sum) as floats. */
static float *read_out(const tune_bufs *b, cln_op op, size_t *n)
{
    size_t es = b->dtype == CLNORM_F32 ? 4 : 2;
    int stats = op == CLN_OP_STATS;
    *n = stats ? 2 * b->rows : b->rows * b->cols;
    float *f = malloc(*n * sizeof *f);
    void *raw = malloc(stats ? 1 : *n * es);
    int ok = f && raw;
    if (ok && stats)
        ok = clEnqueueReadBuffer(b->q, b->m, CL_TRUE, 0, b->rows * 4, f, 0, NULL, NULL) == CL_SUCCESS &&
             clEnqueueReadBuffer(b->q, b->l, CL_TRUE, 0, b->rows * 4, f + b->rows, 0, NULL, NULL) == CL_SUCCESS;
    else if (ok) {
        ok = clEnqueueReadBuffer(b->q, b->y, CL_TRUE, 0, *n * es, raw, 0, NULL, NULL) == CL_SUCCESS;
        if (ok) tool_load(b->dtype, raw, f, *n);
    }
    free(raw);
    if (!ok) { free(f); return NULL; }
    return f;
}

/* Same result as the built-in plan, within a few roundings of the storage type?
   *worst receives the largest relative difference. */
static int same_result(const tune_bufs *b, cln_op op, const float *ref, size_t n, double *worst)
{
    size_t m;
    float *got = read_out(b, op, &m);
    *worst = INFINITY;
    if (!got || m != n) { free(got); return 0; }
    double tol = b->dtype == CLNORM_F32 ? 1e-4 : b->dtype == CLNORM_F16 ? 4e-3 : 3e-2, w = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - ref[i]) / (fabs((double)ref[i]) + 1e-6 / tol);
        if (!(d <= w)) w = d; /* NaN sticks */
    }
    free(got);
    *worst = w;
    return w <= tol;
}

static int has_reg(cln_op op) { return op != CLN_OP_STATS; }
static int has_split(cln_op op) { return op == CLN_OP_RMSNORM || op == CLN_OP_SOFTMAX_ONLINE || op == CLN_OP_STATS; }

/* Candidates whose plans differ, as the plan function resolves them. */
static size_t candidates(const cln_profile *p, cln_op op, clnorm_dtype dt, size_t rows,
                         size_t cols, int quick, int only_local, cand *out, size_t cap)
{
    const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    size_t maxwg = p->max_wg < 1024 ? p->max_wg : 1024, n = 0;
    cln_path paths[2] = {CLN_PATH_LOCAL, p->best_path};
    for (int pi = 0; pi < (p->best_path == CLN_PATH_LOCAL || only_local ? 1 : 2); pi++)
        for (size_t wg = cpu ? 8 : 32; wg <= maxwg; wg *= quick ? 4 : 2) {
            cand c[96];
            size_t k = 0;
            for (size_t team = wg; team >= 1 && wg / team <= 64; team /= quick ? 4 : 2) {
                if (team > 1 && team / 2 >= cols) continue; /* more work-items than columns */
                c[k++] = (cand){CLN_VAR_STREAM, paths[pi], wg, team, 0};
                if (has_reg(op) && team * CLN_REG_K >= cols)
                    c[k++] = (cand){CLN_VAR_REGISTERS, paths[pi], wg, team, 0};
                /* Paired words (16-bit rows hold twice the elements per work-item). */
                if (has_reg(op) && team * CLN_REG_K * (dt == CLNORM_F32 ? 1 : 2) >= cols)
                    c[k++] = (cand){CLN_VAR_WORDS, paths[pi], wg, team, 0};
            }
            if (has_split(op))
                for (size_t s = 2; s <= 64 && cols / s >= wg * 8; s *= quick ? 4 : 2)
                    c[k++] = (cand){CLN_VAR_SPLIT, paths[pi], wg, wg, s};
            for (size_t i = 0; i < k && n < cap; i++) {
                /* What the library would run with these settings; skip the impossible
                   and the duplicates (a forced shape may resolve to another). */
                cln_limits lim;
                memset(&lim, 0, sizeof lim);
                lim.force_path = c[i].path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : -1;
                lim.force_variant = (int)c[i].variant;
                lim.force_wg = c[i].wg;
                if (c[i].variant == CLN_VAR_SPLIT) lim.force_slices = c[i].slices;
                else lim.force_team = c[i].team;
                cln_plan pl;
                char why[256];
                if (cln_plan_make(p, &lim, op, dt, rows, cols, &pl, why, sizeof why)) continue;
                cand r = {pl.variant, pl.path, pl.wg, pl.team,
                          pl.variant == CLN_VAR_SPLIT ? c[i].slices : 0};
                int dup = 0;
                for (size_t j = 0; j < n && !dup; j++)
                    dup = !memcmp(&out[j], &r, sizeof r);
                if (!dup) out[n++] = r;
            }
        }
    return n;
}

static void describe(const cand *c, char *buf, size_t len)
{
    if (c->variant == CLN_VAR_SPLIT)
        snprintf(buf, len, "split/%s wg %zu x%zu slices", cln_path_name(c->path), c->wg, c->slices);
    else
        snprintf(buf, len, "%s/%s wg %zu, %zu/row", cln_variant_name(c->variant),
                 cln_path_name(c->path), c->wg, c->team);
}

/* Tunes one (op, dtype, shape): fills e; 0 when nothing ran. */
static int tune_one(const cln_profile *p, tune_bufs *b, cln_op op, int quick,
                    size_t repeats, const char *user_reduction, cln_tune_entry *e)
{
    static cand c[1024];
    force(NULL, user_reduction);
    size_t kb = 1, kw = 1;
    double builtin = time_median(b, op, repeats, &kb);
    size_t nref = 0;
    float *ref = builtin >= 0 ? read_out(b, op, &nref) : NULL;
    if (!ref) {
        tool_report(cln_op_name(op), CLNORM_OPENCL_ERROR);
        return 0;
    }
    cln_limits lim;
    cln_plan bp;
    char why[256], bdesc[96];
    cln_limits_from_env(&lim);
    cln_plan_make(p, &lim, op, b->dtype, b->rows, b->cols, &bp, why, sizeof why);
    cand bc = {bp.variant, bp.path, bp.wg, bp.team, bp.variant == CLN_VAR_SPLIT ? bp.slices : 0};
    describe(&bc, bdesc, sizeof bdesc);

    int only_local = user_reduction && !strcmp(user_reduction, "local");
    size_t n = candidates(p, op, b->dtype, b->rows, b->cols, quick, only_local, c, 1024);
    size_t wrong = 0;
    double best = builtin;
    cand win = bc;
    for (size_t i = 0; i < n; i++) {
        force(&c[i], NULL);
        size_t k;
        double t = time_median(b, op, repeats, &k);
        if (t < 0) continue; /* e.g. more work-items than the compiled kernel allows */
        double diff;
        if (!same_result(b, op, ref, nref, &diff)) {
            char d[96];
            describe(&c[i], d, sizeof d);
            fprintf(stderr, "clnorm tune: %s %s %zux%zu with %s: result differs from the "
                    "built-in plan's by %.2g relative; skipped\n", cln_op_name(op),
                    cln_dtype_name(b->dtype), b->rows, b->cols, d, diff);
            wrong++;
            continue;
        }
        if (t < best) best = t, win = c[i], kw = k;
    }
    free(ref);
    if (!memcmp(&win, &bc, sizeof win)) {
        best = builtin; /* the built-in plan itself, timed again: no gain */
    } else {
        /* The fastest of many noisy timings is flattered: time it again against the
           built-in plan, interleaved, and keep the built-in plan unless it loses. */
        double tb[16], tw[16];
        size_t r = 0;
        for (; r < repeats && r < 16; r++) {
            force(NULL, user_reduction);
            tb[r] = time_batch(b, op, kb);
            force(&win, NULL);
            tw[r] = time_batch(b, op, kw);
        }
        builtin = tool_median(tb, (size_t)r);
        best = tool_median(tw, (size_t)r);
        if (best >= builtin) best = builtin, win = bc;
    }
    force(NULL, user_reduction);
    char wdesc[96];
    describe(&win, wdesc, sizeof wdesc);
    printf("%-15s %-4s %6zu x %-6zu %-30s %9.1f  %-30s %9.1f %6.1f%%%s\n", cln_op_name(op),
           cln_dtype_name(b->dtype), b->rows, b->cols, bdesc, builtin, wdesc, best,
           100.0 * (builtin / best - 1.0), wrong ? "  (results differ: see above)" : "");
    *e = (cln_tune_entry){op, b->dtype, b->cols, b->rows, op, win.variant, win.path, win.wg,
                          win.team, win.slices, best, builtin};
    return 1;
}

static int show(const cln_profile *p)
{
    char path[4300];
    int r = cln_tuning_file(p, path, sizeof path, NULL, 0);
    if (r == CLN_DISK_OFF) {
        printf("the cache folder is disabled (CLNORM_CACHE_DIR=off, or no HOME): built-in plans\n");
        return TOOL_OK;
    }
    cln_tune_entry *e = NULL;
    size_t n = 0;
    r = cln_tuning_read(p, &e, &n);
    const char *env = getenv("CLNORM_TUNING");
    printf("device  %s (%s, driver %s)\ntable   %s: %s%s\n", p->device_name, p->platform_name,
           p->driver_version, path,
           r == CLN_DISK_OK ? "valid" : r == CLN_DISK_ABSENT ? "none" :
           "damaged or stale (another driver, library or kernel source): ignored",
           env && !strcmp(env, "off") ? "; CLNORM_TUNING=off: not used" : "");
    if (r != CLN_DISK_OK) {
        printf("built-in plans in use; `clnorm tune` makes a table\n");
        return TOOL_OK;
    }
    printf("\n%-15s %-4s %8s %7s %-15s %-7s %-9s %5s %5s %6s %10s %10s %6s\n", "operation", "type",
           "cols", "rows", "algorithm", "variant", "path", "wg", "team", "slices", "tuned us",
           "built-in", "gain");
    for (size_t i = 0; i < n; i++)
        printf("%-15s %-4s %8zu %7zu %-15s %-7s %-9s %5zu %5zu %6zu %10.1f %10.1f %5.1f%%\n",
               cln_op_name(e[i].op), cln_dtype_name(e[i].dtype), e[i].cols, e[i].rows,
               cln_op_name(e[i].algo), cln_variant_name(e[i].variant), cln_path_name(e[i].path),
               e[i].wg, e[i].team, e[i].slices, e[i].best_us, e[i].builtin_us,
               100.0 * (e[i].builtin_us / e[i].best_us - 1.0));
    free(e);
    return TOOL_OK;
}

/* Adds e to the table, replacing an entry of the same (op, dtype, cols). */
static void merge(cln_tune_entry **t, size_t *n, size_t *cap, const cln_tune_entry *e)
{
    for (size_t i = 0; i < *n; i++)
        if ((*t)[i].op == e->op && (*t)[i].dtype == e->dtype && (*t)[i].cols == e->cols) {
            (*t)[i] = *e;
            return;
        }
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        cln_tune_entry *nt = realloc(*t, nc * sizeof *nt);
        if (!nt) return;
        *t = nt, *cap = nc;
    }
    (*t)[(*n)++] = *e;
}

int cmd_tune(int argc, char **argv)
{
    const char *spec = NULL, *val;
    int quick = 0, only_show = 0;
    size_t repeats = 0;
    for (int i = 1; i < argc; i++) {
        int r = 0;
        if (tool_is_help(argv[i])) {
            fputs(tune_usage, stdout);
            return TOOL_OK;
        } else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--show")) only_show = 1;
        else if ((r = tool_opt(argc, argv, &i, "--device", &val)) == 1) spec = val;
        else if (r == 0 && (r = tool_opt(argc, argv, &i, "--repeats", &val)) == 1) {
            if (!tool_parse_size("--repeats", val, &repeats)) return TOOL_USAGE;
        } else {
            if (r == 0) fprintf(stderr, "clnorm tune: unknown option \"%s\"\n\n", argv[i]);
            fputs(tune_usage, stderr);
            return TOOL_USAGE;
        }
    }
    if (!repeats) repeats = quick ? 3 : 5;

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st) {
        tool_report(spec ? spec : "default device", st);
        return TOOL_FAIL;
    }
    cl_device_id dev;
    const cln_profile *p = NULL;
    cl_context ctx = clnorm_session_context(s);
    tune_bufs b = {clnorm_session_queue(s), NULL, NULL, NULL, NULL, NULL, 0, 0, CLNORM_F32};
    if (clGetCommandQueueInfo(b.q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != CL_SUCCESS ||
        (st = cln_profile_get(dev, &p)) != CLNORM_SUCCESS) {
        tool_report("device profile", st ? st : CLNORM_OPENCL_ERROR);
        clnorm_session_destroy(s);
        return TOOL_FAIL;
    }
    if (only_show) {
        int rc = show(p);
        clnorm_session_destroy(s);
        return rc;
    }

    /* A user's CLNORM_REDUCTION stays (it limits the paths); shape settings go. */
    const char *red = getenv("CLNORM_REDUCTION");
    char *user_reduction = red && *red ? strdup(red) : NULL;
    for (size_t i = 0; i < 4; i++)
        if (getenv(force_vars[i])) fprintf(stderr, "clnorm tune: %s ignored while tuning\n", force_vars[i]);
    setenv("CLNORM_TUNING", "off", 1); /* built-in plans are the baseline */

    static const size_t full_cols[] = {128, 1024, 4096, 32768, 262144}, quick_cols[] = {128, 4096, 262144};
    static const cln_op ops[] = {CLN_OP_RMSNORM, CLN_OP_SOFTMAX_THREE_PASS, CLN_OP_SOFTMAX_ONLINE, CLN_OP_STATS};
    const size_t *colv = quick ? quick_cols : full_cols;
    size_t ncols = quick ? 3 : 5, elems = quick ? ((size_t)1 << 20) : ((size_t)1 << 22);
    int ndt = quick ? 1 : 3, ok = 1;
    cln_tune_entry *table = NULL;
    size_t n = 0, cap = 0;
    if (cln_tuning_read(p, &table, &n) != CLN_DISK_OK) table = NULL, n = 0; /* keep the rest */
    cap = n;

    printf("device %s (%s), %s, median of %zu runs (us), built-in plan against the best\n\n",
           p->device_name, p->platform_name, quick ? "quick" : "full", repeats);
    const char *pocl = tool_pocl_note(b.q);
    if (pocl) printf("%s\n", pocl);
    printf("%-15s %-4s %15s %-30s %9s  %-30s %9s %7s\n", "operation", "type", "rows x cols",
           "built-in plan", "us", "best plan", "us", "gain");
    double log_sum = 0, worst = 1;
    size_t measured = 0, within = 0;
    for (int d = 0; d < ndt && ok; d++)
        for (size_t ci = 0; ci < ncols && ok; ci++) {
            b.dtype = (clnorm_dtype)d;
            b.cols = colv[ci];
            b.rows = elems / b.cols ? elems / b.cols : 1;
            size_t es = d == CLNORM_F32 ? 4 : 2, nel = b.rows * b.cols;
            cl_int err;
            cl_mem *mems[] = {&b.x, &b.y, &b.gamma, &b.m, &b.l};
            size_t sizes[] = {nel * es, nel * es, b.cols * es, b.rows * 4, b.rows * 4};
            for (size_t i = 0; i < 5 && ok; i++) {
                *mems[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizes[i], NULL, &err);
                ok = err == CL_SUCCESS;
            }
            /* Random non-zero data: values in +-[0.25, 4), gamma in [0.5, 1.5). */
            float *h = malloc(nel * sizeof *h);
            void *raw = malloc(nel * es);
            uint64_t seed = 0x9E3779B97F4A7C15ull * (ci + 1 + 8 * (size_t)d);
            for (size_t i = 0; ok && h && i < nel; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(seed >> 11) * 0x1.0p-53;
                h[i] = (float)((u < 0.5 ? -1 : 1) * (0.25 + 7.5 * fabs(u - 0.5)));
            }
            ok = ok && h && raw;
            if (ok) {
                tool_store(b.dtype, h, raw, nel);
                ok = clEnqueueWriteBuffer(b.q, b.x, CL_TRUE, 0, nel * es, raw, 0, NULL, NULL) == CL_SUCCESS;
                for (size_t i = 0; i < b.cols; i++) h[i] = 0.5f + (float)(i % 97) / 97.0f;
                tool_store(b.dtype, h, raw, b.cols);
                ok = ok && clEnqueueWriteBuffer(b.q, b.gamma, CL_TRUE, 0, b.cols * es, raw, 0,
                                                NULL, NULL) == CL_SUCCESS;
            }
            free(h);
            free(raw);
            if (!ok) fprintf(stderr, "clnorm tune: cannot make %zu x %zu buffers\n", b.rows, b.cols);
            cln_tune_entry sm[2];
            int have = 0;
            for (size_t o = 0; o < 4 && ok; o++) {
                cln_tune_entry e;
                if (!tune_one(p, &b, ops[o], quick, repeats, user_reduction, &e)) continue;
                merge(&table, &n, &cap, &e);
                if (ops[o] == CLN_OP_SOFTMAX_THREE_PASS) sm[0] = e, have |= 1;
                if (ops[o] == CLN_OP_SOFTMAX_ONLINE) sm[1] = e, have |= 2;
                double ratio = e.builtin_us / e.best_us;
                log_sum += log(ratio), measured++, within += ratio <= 1.1;
                if (ratio > worst) worst = ratio;
            }
            if (have == 3) {
                /* softmax AUTO: the faster algorithm's best plan, against AUTO's own
                   choice, timed interleaved; AUTO's plan stays when it is as fast. */
                cln_tune_entry a = sm[0].best_us <= sm[1].best_us ? sm[0] : sm[1];
                cand w = {a.variant, a.path, a.wg, a.team, a.slices};
                double tb[16], tw[16];
                size_t r = 0;
                size_t k = batch_for(a.best_us);
                for (; r < repeats && r < 16; r++) {
                    force(NULL, user_reduction);
                    tb[r] = time_batch(&b, CLN_OP_SOFTMAX_AUTO, k);
                    force(&w, NULL);
                    tw[r] = time_batch(&b, a.op, k);
                }
                force(NULL, user_reduction);
                double med_b = tool_median(tb, (size_t)r), med_w = tool_median(tw, (size_t)r);
                cln_limits lim;
                cln_plan pl;
                char why[256], desc[96];
                cln_limits_from_env(&lim);
                cln_plan_make(p, &lim, CLN_OP_SOFTMAX_AUTO, b.dtype, b.rows, b.cols, &pl, why,
                              sizeof why);
                cand bc = {pl.variant, pl.path, pl.wg, pl.team,
                           pl.variant == CLN_VAR_SPLIT ? pl.slices : 0};
                a.algo = a.op;
                a.op = CLN_OP_SOFTMAX_AUTO;
                a.builtin_us = med_b;
                a.best_us = med_w;
                if (a.best_us >= a.builtin_us)
                    a = (cln_tune_entry){CLN_OP_SOFTMAX_AUTO, b.dtype, b.cols, b.rows, pl.op,
                                         bc.variant, bc.path, bc.wg, bc.team, bc.slices,
                                         tb[r / 2], tb[r / 2]};
                merge(&table, &n, &cap, &a);
                describe(&bc, desc, sizeof desc);
                printf("%-15s %-4s %6zu x %-6zu %-30.30s %9.1f  %-30s %9.1f %6.1f%%\n",
                       "softmax-auto", cln_dtype_name(b.dtype), b.rows, b.cols, desc,
                       a.builtin_us, cln_op_name(a.algo), a.best_us,
                       100.0 * (a.builtin_us / a.best_us - 1.0));
                double ratio = a.builtin_us / a.best_us;
                log_sum += log(ratio), measured++, within += ratio <= 1.1;
                if (ratio > worst) worst = ratio;
            }
            for (size_t i = 0; i < 5; i++)
                if (*mems[i]) clReleaseMemObject(*mems[i]), *mems[i] = NULL;
            fflush(stdout);
        }
    force(NULL, user_reduction);
    free(user_reduction);
    if (measured)
        printf("\nbuilt-in plans against the best: geometric mean %.1f%% slower, worst %.1f%%, "
               "%zu of %zu within 10%%\n", 100.0 * (exp(log_sum / (double)measured) - 1.0),
               100.0 * (worst - 1.0), within, measured);
    char path[4300];
    int r = ok && n ? cln_tuning_write(p, table, n) : CLN_DISK_BAD;
    cln_tuning_file(p, path, sizeof path, NULL, 0);
    if (r == CLN_DISK_OK) printf("tuning table (%zu entries) written to %s\n", n, path);
    else {
        fprintf(stderr, "clnorm tune: %s\n", !ok ? "stopped by an error: table not written"
                : r == CLN_DISK_OFF ? "the cache folder is disabled: table not written"
                : "could not write the tuning table into the cache folder");
        ok = 0;
    }
    free(table);
    clnorm_session_destroy(s);
    return ok ? TOOL_OK : TOOL_FAIL;
}
