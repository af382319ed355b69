/* `clnorm tune`: times the candidate plans of each operation, dtype and column bucket
   on one device and stores the fastest in the device's tuning table, which the
   library then uses. Candidates are forced through the calling thread's plan hints
   (clnorm_set_thread_hints) and timed with profiling events on the session's
   queue. */
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

typedef struct cand {
    clnorm_variant variant;
    clnorm_reduction path;
    size_t wg, team, slices;
} cand;

/* The hints of candidate c: its variant and sizes, on the local path where c says
   so and otherwise on the path the process configuration allows. No tuning table:
   the built-in plans are the baseline. */
static clnorm_plan_hints cand_hints(const cand *c)
{
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.tuning = 0;
    h.variant = (int)c->variant;
    h.work_group = c->wg;
    if (c->variant == CLNORM_VARIANT_SPLIT) h.split = c->slices;
    else h.items_per_row = c->team;
    if (c->path == CLNORM_REDUCTION_LOCAL) h.reduction = CLNORM_REDUCTION_LOCAL;
    return h;
}

/* Forces candidate c for this thread's calls, or the built-in plan (c NULL): the
   process configuration, whose shape settings cmd_tune has cleared. */
static void force(const cand *c)
{
    clnorm_plan_hints h;
    if (c) h = cand_hints(c);
    if (clnorm_set_thread_hints(c ? &h : NULL) != CLNORM_SUCCESS)
        tool_report("clnorm_set_thread_hints", CLNORM_INVALID_ARGUMENT);
}

static clnorm_status enqueue(const tune_bufs *b, clnorm_op op, cl_uint nw, const cl_event *w,
                             cl_event *ev)
{
    clnorm_matrix x = {b->x, 0, 0}, y = {b->y, 0, 0};
    switch (op) {
    case CLNORM_OP_RMSNORM:
        return clnorm_rmsnorm(b->q, b->dtype, b->rows, b->cols, x, b->gamma, y, 1e-6f, nw, w, ev);
    case CLNORM_OP_SOFTMAX_STATS:
        return clnorm_softmax_stats(b->q, b->dtype, b->rows, b->cols, x, b->m, b->l, nw, w, ev);
    default:
        return clnorm_softmax(b->q, b->dtype, b->rows, b->cols, x, y,
                              op == CLNORM_OP_SOFTMAX_THREE_PASS ? CLNORM_SOFTMAX_THREE_PASS
                              : op == CLNORM_OP_SOFTMAX_ONLINE ? CLNORM_SOFTMAX_ONLINE
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
static double time_batch(const tune_bufs *b, clnorm_op op, size_t k)
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
static double time_median(const tune_bufs *b, clnorm_op op, size_t n, size_t *k)
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
static float *read_out(const tune_bufs *b, clnorm_op op, size_t *n)
{
    size_t es = b->dtype == CLNORM_F32 ? 4 : 2;
    int stats = op == CLNORM_OP_SOFTMAX_STATS;
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
static int same_result(const tune_bufs *b, clnorm_op op, const float *ref, size_t n, double *worst)
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

static int has_reg(clnorm_op op) { return op != CLNORM_OP_SOFTMAX_STATS; }
static int has_split(clnorm_op op)
{
    return op == CLNORM_OP_RMSNORM || op == CLNORM_OP_SOFTMAX_ONLINE ||
           op == CLNORM_OP_SOFTMAX_STATS;
}

/* Elements per work-item of the register variant (CLN_REG_K in the kernels): a
   float32 words plan holds as many, a 16-bit one twice as many. 0 if unknown. */
static size_t reg_elems(cl_device_id dev)
{
    clnorm_plan_hints h;
    clnorm_plan_info pl;
    clnorm_plan_hints_init(&h);
    h.variant = CLNORM_VARIANT_REGISTERS;
    h.tuning = 0;
    if (clnorm_plan_query(dev, &h, CLNORM_OP_SOFTMAX_THREE_PASS, CLNORM_F32, 1, 1, &pl))
        return 0;
    return pl.elems_per_item;
}

/* Candidates whose plans differ, as the library resolves them. */
static size_t candidates(const clnorm_device_info *p, size_t reg_k, clnorm_op op,
                         clnorm_dtype dt, size_t rows, size_t cols, int quick, int only_local,
                         cand *out, size_t cap)
{
    const int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    size_t maxwg = p->max_work_group < 1024 ? p->max_work_group : 1024, n = 0;
    clnorm_reduction paths[2] = {CLNORM_REDUCTION_LOCAL, p->reduction};
    for (int pi = 0; pi < (p->reduction == CLNORM_REDUCTION_LOCAL || only_local ? 1 : 2); pi++)
        for (size_t wg = cpu ? 8 : 32; wg <= maxwg; wg *= quick ? 4 : 2) {
            cand c[96];
            size_t k = 0;
            for (size_t team = wg; team >= 1 && wg / team <= 64; team /= quick ? 4 : 2) {
                if (team > 1 && team / 2 >= cols) continue; /* more work-items than columns */
                c[k++] = (cand){CLNORM_VARIANT_STREAM, paths[pi], wg, team, 0};
                if (has_reg(op) && team * reg_k >= cols)
                    c[k++] = (cand){CLNORM_VARIANT_REGISTERS, paths[pi], wg, team, 0};
                /* Words (16-bit rows hold twice the elements per work-item). */
                if (has_reg(op) && team * reg_k * (dt == CLNORM_F32 ? 1 : 2) >= cols)
                    c[k++] = (cand){CLNORM_VARIANT_WORDS, paths[pi], wg, team, 0};
            }
            if (has_split(op))
                for (size_t s = 2; s <= 64 && cols / s >= wg * 8; s *= quick ? 4 : 2)
                    c[k++] = (cand){CLNORM_VARIANT_SPLIT, paths[pi], wg, wg, s};
            for (size_t i = 0; i < k && n < cap; i++) {
                /* What the library would run with these settings; skip the impossible
                   and the duplicates (a forced shape may resolve to another). */
                clnorm_plan_hints h = cand_hints(&c[i]);
                clnorm_plan_info pl;
                if (clnorm_plan_query(p->device, &h, op, dt, rows, cols, &pl)) continue;
                cand r = {pl.variant, pl.reduction, pl.work_group, pl.items_per_row,
                          pl.variant == CLNORM_VARIANT_SPLIT ? c[i].slices : 0};
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
    if (c->variant == CLNORM_VARIANT_SPLIT)
        snprintf(buf, len, "split/%s wg %zu x%zu slices", tool_reduction_name(c->path), c->wg,
                 c->slices);
    else
        snprintf(buf, len, "%s/%s wg %zu, %zu/row", tool_variant_name(c->variant),
                 tool_reduction_name(c->path), c->wg, c->team);
}

/* The built-in plan of (op, dtype, shape) as a candidate; 0 when the library
   refuses it. */
static int builtin_plan(const clnorm_device_info *p, clnorm_op op, const tune_bufs *b,
                        cand *out, clnorm_op *resolved)
{
    clnorm_plan_info pl;
    if (clnorm_plan_query(p->device, NULL, op, b->dtype, b->rows, b->cols, &pl)) {
        memset(out, 0, sizeof *out);
        *resolved = op;
        return 0;
    }
    *out = (cand){pl.variant, pl.reduction, pl.work_group, pl.items_per_row,
                  pl.variant == CLNORM_VARIANT_SPLIT ? pl.split : 0};
    *resolved = pl.op;
    return 1;
}

/* Tunes one (op, dtype, shape): fills e; 0 when nothing ran. */
static int tune_one(const clnorm_device_info *p, size_t reg_k, tune_bufs *b, clnorm_op op,
                    int quick, size_t repeats, int only_local, clnorm_tuning_entry *e)
{
    static cand c[1024];
    force(NULL);
    size_t kb = 1, kw = 1;
    double builtin = time_median(b, op, repeats, &kb);
    size_t nref = 0;
    float *ref = builtin >= 0 ? read_out(b, op, &nref) : NULL;
    if (!ref) {
        tool_report(tool_op_name(op), CLNORM_OPENCL_ERROR);
        return 0;
    }
    char bdesc[96];
    cand bc;
    clnorm_op resolved;
    builtin_plan(p, op, b, &bc, &resolved);
    describe(&bc, bdesc, sizeof bdesc);

    size_t n = candidates(p, reg_k, op, b->dtype, b->rows, b->cols, quick, only_local, c, 1024);
    size_t wrong = 0;
    double best = builtin;
    cand win = bc;
    for (size_t i = 0; i < n; i++) {
        force(&c[i]);
        size_t k;
        double t = time_median(b, op, repeats, &k);
        if (t < 0) continue; /* e.g. more work-items than the compiled kernel allows */
        double diff;
        if (!same_result(b, op, ref, nref, &diff)) {
            char d[96];
            describe(&c[i], d, sizeof d);
            fprintf(stderr, "clnorm tune: %s %s %zux%zu with %s: result differs from the "
                    "built-in plan's by %.2g relative; skipped\n", tool_op_name(op),
                    clnorm_dtype_name(b->dtype), b->rows, b->cols, d, diff);
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
            force(NULL);
            tb[r] = time_batch(b, op, kb);
            force(&win);
            tw[r] = time_batch(b, op, kw);
        }
        builtin = tool_median(tb, (size_t)r);
        best = tool_median(tw, (size_t)r);
        if (best >= builtin) best = builtin, win = bc;
    }
    force(NULL);
    char wdesc[96];
    describe(&win, wdesc, sizeof wdesc);
    printf("%-15s %-4s %6zu x %-6zu %-30s %9.1f  %-30s %9.1f %6.1f%%%s\n", tool_op_name(op),
           clnorm_dtype_name(b->dtype), b->rows, b->cols, bdesc, builtin, wdesc, best,
           100.0 * (builtin / best - 1.0), wrong ? "  (results differ: see above)" : "");
    *e = (clnorm_tuning_entry){op, b->dtype, b->cols, b->rows, op, win.variant, win.path,
                               win.wg, win.team, win.slices, best, builtin};
    return 1;
}

static int show(const clnorm_device_info *p)
{
    char path[4300], dir[4096];
    if (clnorm_cache_dir(dir, sizeof dir) == CLNORM_CACHE_FILE_OFF) {
        printf("the cache folder is disabled (CLNORM_CACHE_DIR=off, or no HOME): built-in plans\n");
        return TOOL_OK;
    }
    clnorm_tuning_entry *e = NULL;
    size_t n = 0;
    clnorm_cache_file_status r = clnorm_tuning_read(p->device, &e, &n, path, sizeof path);
    clnorm_config cfg;
    clnorm_config_get(&cfg);
    printf("device  %s (%s, driver %s)\ntable   %s: %s%s\n", p->device_name, p->platform_name,
           p->driver_version, path,
           r == CLNORM_CACHE_FILE_OK ? "valid" : r == CLNORM_CACHE_FILE_ABSENT ? "none" :
           "damaged or stale (another driver, library or kernel source): ignored",
           cfg.hints.tuning == 0 ? "; CLNORM_TUNING=off: not used" : "");
    if (r != CLNORM_CACHE_FILE_OK) {
        printf("built-in plans in use; `clnorm tune` makes a table\n");
        free(e);
        return TOOL_OK;
    }
    printf("\n%-15s %-4s %8s %7s %-15s %-7s %-9s %5s %5s %6s %10s %10s %6s\n", "operation", "type",
           "cols", "rows", "algorithm", "variant", "path", "wg", "team", "slices", "tuned us",
           "built-in", "gain");
    for (size_t i = 0; i < n; i++)
        printf("%-15s %-4s %8zu %7zu %-15s %-7s %-9s %5zu %5zu %6zu %10.1f %10.1f %5.1f%%\n",
               tool_op_name(e[i].op), clnorm_dtype_name(e[i].dtype), e[i].cols, e[i].rows,
               tool_op_name(e[i].algorithm), tool_variant_name(e[i].variant),
               tool_reduction_name(e[i].reduction), e[i].work_group, e[i].items_per_row,
               e[i].split, e[i].best_us, e[i].builtin_us,
               100.0 * (e[i].builtin_us / e[i].best_us - 1.0));
    free(e);
    return TOOL_OK;
}

/* Adds e to the table, replacing an entry of the same (op, dtype, cols). */
static void merge(clnorm_tuning_entry **t, size_t *n, size_t *cap, const clnorm_tuning_entry *e)
{
    for (size_t i = 0; i < *n; i++)
        if ((*t)[i].op == e->op && (*t)[i].dtype == e->dtype && (*t)[i].cols == e->cols) {
            (*t)[i] = *e;
            return;
        }
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        clnorm_tuning_entry *nt = realloc(*t, nc * sizeof *nt);
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
    clnorm_device_info info;
    const clnorm_device_info *p = &info;
    cl_context ctx = clnorm_session_context(s);
    tune_bufs b = {clnorm_session_queue(s), NULL, NULL, NULL, NULL, NULL, 0, 0, CLNORM_F32};
    if (clGetCommandQueueInfo(b.q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != CL_SUCCESS ||
        (st = clnorm_device_describe(dev, 1, &info)) != CLNORM_SUCCESS) {
        tool_report("device profile", st ? st : CLNORM_OPENCL_ERROR);
        clnorm_session_destroy(s);
        return TOOL_FAIL;
    }
    if (only_show) {
        int rc = show(p);
        clnorm_session_destroy(s);
        return rc;
    }

    /* A user's CLNORM_REDUCTION stays (it limits the paths); shape settings go, and
       the built-in plans are the baseline: no tuning table. */
    clnorm_config cfg;
    clnorm_config_get(&cfg);
    static const char *const shape_vars[] = {"CLNORM_VARIANT", "CLNORM_WORK_GROUP",
                                             "CLNORM_ROW_THREADS", "CLNORM_SPLIT"};
    const int shape_set[] = {cfg.hints.variant != CLNORM_VARIANT_AUTO, cfg.hints.work_group != 0,
                             cfg.hints.items_per_row != 0, cfg.hints.split != 0};
    for (size_t i = 0; i < 4; i++)
        if (shape_set[i]) fprintf(stderr, "clnorm tune: %s ignored while tuning\n", shape_vars[i]);
    cfg.hints.variant = CLNORM_VARIANT_AUTO;
    cfg.hints.work_group = cfg.hints.items_per_row = cfg.hints.split = 0;
    cfg.hints.tuning = 0;
    if ((st = clnorm_config_set(&cfg)) != CLNORM_SUCCESS) {
        tool_report("clnorm_config_set", st);
        clnorm_session_destroy(s);
        return TOOL_FAIL;
    }
    int only_local = cfg.hints.reduction == CLNORM_REDUCTION_LOCAL;
    size_t reg_k = reg_elems(dev);

    static const size_t full_cols[] = {128, 1024, 4096, 32768, 262144}, quick_cols[] = {128, 4096, 262144};
    static const clnorm_op ops[] = {CLNORM_OP_RMSNORM, CLNORM_OP_SOFTMAX_THREE_PASS,
                                    CLNORM_OP_SOFTMAX_ONLINE, CLNORM_OP_SOFTMAX_STATS};
    const size_t *colv = quick ? quick_cols : full_cols;
    size_t ncols = quick ? 3 : 5, elems = quick ? ((size_t)1 << 20) : ((size_t)1 << 22);
    int ndt = quick ? 1 : 3, ok = 1;
    clnorm_tuning_entry *table = NULL;
    size_t n = 0, cap = 0;
    char path[4300] = "";
    /* Entries of other shapes already in the table are kept. */
    if (clnorm_tuning_read(dev, &table, &n, path, sizeof path) != CLNORM_CACHE_FILE_OK) {
        free(table);
        table = NULL, n = 0;
    }
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
            clnorm_tuning_entry sm[2];
            int have = 0;
            for (size_t o = 0; o < 4 && ok; o++) {
                clnorm_tuning_entry e;
                if (!tune_one(p, reg_k, &b, ops[o], quick, repeats, only_local, &e)) continue;
                merge(&table, &n, &cap, &e);
                if (ops[o] == CLNORM_OP_SOFTMAX_THREE_PASS) sm[0] = e, have |= 1;
                if (ops[o] == CLNORM_OP_SOFTMAX_ONLINE) sm[1] = e, have |= 2;
                double ratio = e.builtin_us / e.best_us;
                log_sum += log(ratio), measured++, within += ratio <= 1.1;
                if (ratio > worst) worst = ratio;
            }
            if (have == 3) {
                /* softmax AUTO: the faster algorithm's best plan, against AUTO's own
                   choice, timed interleaved; AUTO's plan stays when it is as fast. */
                clnorm_tuning_entry a = sm[0].best_us <= sm[1].best_us ? sm[0] : sm[1];
                cand w = {a.variant, a.reduction, a.work_group, a.items_per_row, a.split};
                double tb[16], tw[16];
                size_t r = 0;
                size_t k = batch_for(a.best_us);
                for (; r < repeats && r < 16; r++) {
                    force(NULL);
                    tb[r] = time_batch(&b, CLNORM_OP_SOFTMAX_AUTO, k);
                    force(&w);
                    tw[r] = time_batch(&b, a.op, k);
                }
                force(NULL);
                double med_b = tool_median(tb, (size_t)r), med_w = tool_median(tw, (size_t)r);
                char desc[96];
                cand bc;
                clnorm_op auto_op;
                builtin_plan(p, CLNORM_OP_SOFTMAX_AUTO, &b, &bc, &auto_op);
                a.algorithm = a.op;
                a.op = CLNORM_OP_SOFTMAX_AUTO;
                a.builtin_us = med_b;
                a.best_us = med_w;
                if (a.best_us >= a.builtin_us)
                    a = (clnorm_tuning_entry){CLNORM_OP_SOFTMAX_AUTO, b.dtype, b.cols, b.rows,
                                              auto_op, bc.variant, bc.path, bc.wg, bc.team,
                                              bc.slices, tb[r / 2], tb[r / 2]};
                merge(&table, &n, &cap, &a);
                describe(&bc, desc, sizeof desc);
                printf("%-15s %-4s %6zu x %-6zu %-30.30s %9.1f  %-30s %9.1f %6.1f%%\n",
                       "softmax-auto", clnorm_dtype_name(b.dtype), b.rows, b.cols, desc,
                       a.builtin_us, tool_op_name(a.algorithm), a.best_us,
                       100.0 * (a.builtin_us / a.best_us - 1.0));
                double ratio = a.builtin_us / a.best_us;
                log_sum += log(ratio), measured++, within += ratio <= 1.1;
                if (ratio > worst) worst = ratio;
            }
            for (size_t i = 0; i < 5; i++)
                if (*mems[i]) clReleaseMemObject(*mems[i]), *mems[i] = NULL;
            fflush(stdout);
        }
    force(NULL);
    if (measured)
        printf("\nbuilt-in plans against the best: geometric mean %.1f%% slower, worst %.1f%%, "
               "%zu of %zu within 10%%\n", 100.0 * (exp(log_sum / (double)measured) - 1.0),
               100.0 * (worst - 1.0), within, measured);
    clnorm_status r = ok && n ? clnorm_tuning_write(dev, table, n) : CLNORM_INVALID_ARGUMENT;
    if (r == CLNORM_SUCCESS) printf("tuning table (%zu entries) written to %s\n", n, path);
    else {
        fprintf(stderr, "clnorm tune: %s\n", !ok ? "stopped by an error: table not written"
                : r == CLNORM_UNSUPPORTED ? "the cache folder is disabled: table not written"
                : "could not write the tuning table into the cache folder");
        ok = 0;
    }
    free(table);
    clnorm_session_destroy(s);
    return ok ? TOOL_OK : TOOL_FAIL;
}
