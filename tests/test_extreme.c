/* RMSNorm on rows whose float32 sum of squares overflows or underflows, and the
   special values and rounding of the 16-bit types. The fused op's values and views are
   in test_fused.c; the harness both files use is in fused.c (fused.h).

   rmsnorm_extreme     rows of +-3e30, of 3e-25 (eps = 0), of float32 denormals and of
                       1e19..1e20 beside ordinary magnitudes, with ordinary rows in the
                       same call, for rmsnorm and add_rmsnorm under forced plans
   lowp_special        f16/bf16 +-inf and NaN inputs for every op against API.md's
                       special-value rules; NaN stays NaN; outputs rounded to nearest
                       even, compared bit for bit away from rounding ties
   softmax_bf16_tiny   bf16 softmax outputs in bfloat16's denormal range, also where
                       the device flushes float32 denormals */
#include "clnorm_advanced.h"
#include "fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rmsnorm_extreme --------------------------------------------------------------------- */
enum { XK_ORD, XK_BIG, XK_TINY, XK_DENORM, XK_MIXED, XK_COUNT };
static const char *xk_names[] = {"ordinary", "+-3e30", "3e-25", "1e-40 (denormal)",
                                 "1e19..1e20 mixed"};

static double rsign(void) { return rng_below(&R, 2) ? 1.0 : -1.0; }

static void gen_extreme_row(float *x, size_t cols, int kind)
{
    switch (kind) {
    case XK_BIG: /* sum of squares overflows float32 */
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, 29, log10(3e30))));
        break;
    case XK_TINY: /* sum of squares underflows to zero */
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, -26, log10(3e-25))));
        break;
    case XK_DENORM:
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, -41, -40)));
        break;
    case XK_MIXED: { /* a few 1e19..1e20 among ordinary magnitudes */
        size_t big = 0;
        for (size_t c = 0; c < cols; c++) {
            if (rng_below(&R, 4) == 0) {
                x[c] = (float)(rsign() * pow(10, rng_range(&R, 19, 20)));
                big++;
            } else {
                x[c] = (float)(rsign() * pow(10, rng_range(&R, -3, 3)));
            }
        }
        if (!big) x[rng_below(&R, cols)] = (float)(rsign() * pow(10, rng_range(&R, 19, 20)));
        break;
    }
    default:
        gen_row(&R, x, cols, -1);
        break;
    }
}

typedef struct xplan { const char *variant; size_t wg, team, split; } xplan;
static const xplan xplans[] = {
    {NULL, 0, 0, 0},          /* the library's own */
    {"stream", 64, 8, 0},     /* 8 rows per work-group */
    {"stream", 64, 1, 0},     /* 64 rows per work-group, one work-item each */
    {"stream", 64, 64, 0},    /* one row per work-group */
    {"reg", 64, 4, 0},        /* rows up to 128 in registers, 16 per group */
    {"reg", 256, 128, 0},     /* rows up to 4096 in registers, 2 per group */
    {"words", 256, 128, 0},   /* even rows as words of two elements (odd: reg) */
    {"split", 0, 0, 3},       /* rmsnorm in 3 slices per row (add_rmsnorm streams) */
    {"split", 64, 0, 0},      /* rmsnorm split as the library slices it */
};

static void extreme_call(int fused, clnorm_dtype dt, size_t cols, float eps, int inplace,
                         int denorm_ok, size_t *nrows_checked)
{
    /* Each special kind twice among ordinary rows, shuffled: work-groups of several
       rows mix rescaled and ordinary ones. More rows when they are short. */
    int kinds[64];
    size_t rows = 0, reps = cols < 100 ? 3 : 1;
    for (size_t rep = 0; rep < reps; rep++) {
        for (int k = XK_BIG; k < XK_COUNT; k++) kinds[rows++] = k, kinds[rows++] = k;
        for (int k = 0; k < 6; k++) kinds[rows++] = XK_ORD;
    }
    for (size_t i = rows - 1; i > 0; i--) {
        size_t j = rng_below(&R, i + 1);
        int t = kinds[i]; kinds[i] = kinds[j]; kinds[j] = t;
    }
    size_t n = rows * cols;
    float *x = malloc(n * 4), *r = malloc(n * 4), *g = NULL;
    unsigned char skip[64] = {0};
    for (size_t i = 0; i < rows; i++) {
        gen_extreme_row(x + i * cols, cols, kinds[i]);
        /* The residual of a mixed row stays ordinary, so that its big entries survive. */
        gen_extreme_row(r + i * cols, cols, kinds[i] == XK_MIXED ? XK_ORD : kinds[i]);
        skip[i] = kinds[i] == XK_DENORM && !denorm_ok;
        if (!skip[i]) (*nrows_checked)++;
    }
    if (rng_below(&R, 2)) {
        g = malloc(cols * 4);
        gen_gamma(&R, g, cols);
    }
    /* Relative, except where y is itself a float32 denormal, whose spacing of 2^-149
       (2^-133 in bf16) no relative bound survives. */
    double rel = dt == F32 ? 2e-5 : tol_rel(dt, cols), abs_ = dt == F32 ? 0x1p-147 : 0x1p-133;
    if (fused) {
        fz f;
        memset(&f, 0, sizeof f);
        f.dt = dt, f.rows = rows, f.cols = cols, f.xv = x, f.rv = r, f.g = g, f.eps = eps;
        f.update = (int)rng_below(&R, 2);
        f.x.buf = 0, f.r.buf = 1, f.y.buf = inplace ? 0 : 2;
        f.skip = skip;
        f.rel = rel, f.abs = abs_;
        fused_run(&f, CLNORM_SUCCESS);
    } else {
        op_args a;
        memset(&a, 0, sizeof a);
        a.op = OP_RMSNORM, a.dt = dt, a.rows = rows, a.cols = cols, a.x = x, a.gamma = g;
        a.eps = eps, a.poison = POISON_NAN;
        a.layout = inplace ? LAYOUT_INPLACE : LAYOUT_SEPARATE;
        op_out o = {0};
        char label[600], base[400];
        op_label(&a, base, sizeof base);
        snprintf(label, sizeof label, "%s [%s]", base, plan_now());
        clnorm_status st = run_op(&a, &o);
        if (st == CLNORM_UNSUPPORTED && forced_team()) {
            /* Only a loop-limited device (llvmpipe) refuses a forced team, saying so. */
            g_unsupported++;
            CHECK(strstr(clnorm_last_error(), "can loop over") != NULL, "%s: UNSUPPORTED for "
                  "another reason than the loop limit: \"%s\"", label, clnorm_last_error());
        } else if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st),
                         clnorm_last_error())) {
            float *xr = malloc(n * 4);
            uint32_t *yb = malloc(n * 4);
            for (size_t i = 0; i < n; i++) xr[i] = rnd(dt, x[i]), yb[i] = pack1(dt, o.y[i]);
            /* run_op has checked that every y element was written. */
            check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, xr, g, eps, yb, skip, rel,
                        abs_, 0);
            free(xr), free(yb);
        }
        op_out_free(&o);
    }
    if (t_verbose()) {
        char kb[200] = "";
        for (size_t i = 0; i < rows && strlen(kb) < 180; i++)
            snprintf(kb + strlen(kb), sizeof kb - strlen(kb), "%d", kinds[i]);
        NOTE("%s %s rows=%zu cols=%zu eps=%g [%s] kinds %s", fused ? "add_rmsnorm" : "rmsnorm",
             dt_name(dt), rows, cols, (double)eps, plan_now(), kb);
    }
    free(x), free(r), free(g);
}

void test_rmsnorm_extreme(void)
{
    static const size_t xcols[] = {1, 7, 33, 1000, 4097};
    static const float more_eps[] = {1e-30f, 1e-22f, 1e-6f, 0.0f};
    int denorm_ok = g_denorm_ok = device_denormals();
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    NOTE("device %s float32 denormals%s", denorm_ok ? "supports" : "does not support",
         denorm_ok ? "" : ": rows of 1e-40 are run but not asserted");
    for (int k = 0; k < XK_COUNT; k++)
        if (t_verbose()) NOTE("row kind %d: %s", k, xk_names[k]);
    size_t calls = 0, checked = 0, e = 0;
    for (size_t p = 0; p < COUNT_OF(xplans); p++) {
        for (size_t i = 0; i < COUNT_OF(xcols); i++) {
            size_t cols = xcols[i];
            plan_set(xplans[p].variant, xplans[p].wg, xplans[p].team, xplans[p].split);
            /* Separate and in place (where a split row's other work-groups must not
               see a slice already written). */
            int odd = (int)(i & 1);
            extreme_call(0, F32, cols, 0.0f, 0, denorm_ok, &checked);
            extreme_call(0, F32, cols, more_eps[e++ % COUNT_OF(more_eps)], 1, denorm_ok, &checked);
            extreme_call(1, F32, cols, 0.0f, odd, denorm_ok, &checked);
            extreme_call(0, BF16, cols, 0.0f, odd, denorm_ok, &checked);
            extreme_call(1, BF16, cols, more_eps[e % COUNT_OF(more_eps)], !odd, denorm_ok, &checked);
            calls += 5;
            plan_clear();
        }
    }
    NOTE("%zu calls under %zu plans, %zu rows checked, %zu UNSUPPORTED under forced shapes",
         calls, COUNT_OF(xplans), checked, g_unsupported);
    CHECK(g_unsupported < calls / 4, "%zu of %zu calls UNSUPPORTED", g_unsupported, calls);
}

/* ---- lowp_special -------------------------------------------------------------------- */
enum sk {
    SK_ORD, SK_NAN, SK_ALL_NEG_INF, SK_POS_INF, SK_POS_INF_TIES, SK_SOME_NEG_INF,
    SK_NAN_AND_INF, SK_ALL_POS_INF, SK_ZERO, SK_MAX_FINITE, SK_COUNT
};

static uint16_t pinf_of(clnorm_dtype dt) { return dt == F16 ? 0x7C00 : 0x7F80; }
static uint16_t ninf_of(clnorm_dtype dt) { return dt == F16 ? 0xFC00 : 0xFF80; }

static int bits_nan(clnorm_dtype dt, uint32_t b)
{
    if (dt == F32) return (b & 0x7FFFFFFFu) > 0x7F800000u;
    if (dt == F16) return (b & 0x7FFFu) > 0x7C00u;
    return (b & 0x7FFFu) > 0x7F80u;
}

/* NaNs of several payloads and signs, quiet and signalling; none is the poison. */
static uint16_t nan_of(clnorm_dtype dt)
{
    static const uint16_t h[] = {0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD00, 0x7E55};
    static const uint16_t b[] = {0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0xFF81, 0x7FD5};
    return dt == F16 ? PICK(&R, h) : PICK(&R, b);
}

static void fill_special(clnorm_dtype dt, uint16_t *x, size_t cols, enum sk k)
{
    float *v = malloc(cols * 4);
    int kind;
    do kind = (int)rng_below(&R, ROW_KINDS);
    while (dt == F16 && kind == ROW_FAR_OFFSET); /* beyond float16's range */
    gen_row(&R, v, cols, kind);
    dt_pack(dt, v, x, cols);
    free(v);
    size_t p = rng_below(&R, cols);
    switch (k) {
    case SK_ORD: break;
    case SK_NAN: x[p] = nan_of(dt); break;
    case SK_ALL_NEG_INF: for (size_t c = 0; c < cols; c++) x[c] = ninf_of(dt); break;
    case SK_POS_INF: x[p] = pinf_of(dt); break;
    case SK_POS_INF_TIES:
        for (size_t n = 1 + rng_below(&R, 3); n > 0; n--) x[rng_below(&R, cols)] = pinf_of(dt);
        for (size_t n = rng_below(&R, 3); n > 0; n--) {
            size_t q = rng_below(&R, cols);
            if (x[q] != pinf_of(dt)) x[q] = ninf_of(dt);
        }
        break;
    case SK_SOME_NEG_INF:
        for (size_t n = 1 + rng_below(&R, cols); n > 0; n--) x[rng_below(&R, cols)] = ninf_of(dt);
        x[p] = (uint16_t)pack1(dt, (float)rng_range(&R, -5, 5));
        break;
    case SK_NAN_AND_INF:
        x[rng_below(&R, cols)] = pinf_of(dt);
        x[rng_below(&R, cols)] = ninf_of(dt);
        x[p] = nan_of(dt);
        break;
    case SK_ALL_POS_INF: for (size_t c = 0; c < cols; c++) x[c] = pinf_of(dt); break;
    case SK_ZERO: for (size_t c = 0; c < cols; c++) x[c] = rng_below(&R, 2) ? 0x8000 : 0; break;
    case SK_MAX_FINITE: /* bf16's overflows the float32 sum of squares */
        for (size_t c = 0; c < cols; c++)
            x[c] = (uint16_t)((rng_below(&R, 2) ? 0x8000 : 0) | (dt == F16 ? 0x7BFF : 0x7F7F));
        break;
    default: break;
    }
}

/* One op on packed 16-bit rows; checks x unchanged and every output written, then the
   values against the references of API.md's rules, 16-bit outputs bit for bit. */
static void lowp_call(top op, clnorm_dtype dt, size_t cols, float eps)
{
    enum sk kinds[4 * SK_COUNT];
    size_t rows = 0;
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k < SK_COUNT; k++) kinds[rows++] = (enum sk)k, kinds[rows++] = SK_ORD;
    for (size_t i = rows - 1; i > 0; i--) {
        size_t j = rng_below(&R, i + 1);
        enum sk t = kinds[i]; kinds[i] = kinds[j]; kinds[j] = t;
    }
    size_t n = rows * cols;
    uint16_t *xb = malloc(n * 2), *yb = malloc(n * 2 + 2), *ypo = malloc(n * 2 + 2), *gb = NULL;
    uint16_t *xback = malloc(n * 2);
    float *xf = malloc(n * 4), *gf = NULL, *m = malloc(rows * 4), *l = malloc(rows * 4);
    for (size_t r = 0; r < rows; r++) fill_special(dt, xb + r * cols, cols, kinds[r]);
    dt_unpack(dt, xb, xf, n);
    dt_fill_bits(dt, ypo, n, poison_of(dt));
    float *stpo = malloc(rows * 4);
    dt_fill_bits(F32, stpo, rows, poison_of(F32));
    if (op == OP_RMSNORM && rng_below(&R, 2)) {
        float *g = malloc(cols * 4);
        gen_gamma(&R, g, cols);
        gb = malloc(cols * 2), gf = malloc(cols * 4);
        dt_pack(dt, g, gb, cols);
        dt_unpack(dt, gb, gf, cols);
        free(g);
    }
    char label[400];
    snprintf(label, sizeof label, "%s %s rows=%zu cols=%zu%s%s [%s]", op_name(op), dt_name(dt),
             rows, cols, op == OP_RMSNORM ? (gb ? " gamma" : " no-gamma") : "",
             op == OP_RMSNORM ? (eps ? " eps=1e-5" : " eps=0") : "", plan_now());
    cl_mem X = t_buffer(T.ctx, n * 2, xb), Y = NULL, G = NULL, M = NULL, L = NULL;
    if (op == OP_STATS) M = t_buffer(T.ctx, rows * 4, stpo), L = t_buffer(T.ctx, rows * 4, stpo);
    else Y = t_buffer(T.ctx, n * 2, ypo);
    if (gb) G = t_buffer(T.ctx, cols * 2, gb);
    clnorm_matrix xm = {X, 0, 0}, ym = {Y, 0, 0};
    clnorm_status st;
    if (op == OP_RMSNORM)
        st = clnorm_rmsnorm(T.q, dt, rows, cols, xm, G, ym, eps, 0, NULL, NULL);
    else if (op == OP_STATS)
        st = clnorm_softmax_stats(T.q, dt, rows, cols, xm, M, L, 0, NULL, NULL);
    else
        st = clnorm_softmax(T.q, dt, rows, cols, xm, ym, op_algo(op), 0, NULL, NULL);
    char err[1024];
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    CHECK_CL(clFinish(T.q));
    int unsup = st == CLNORM_UNSUPPORTED && forced_team();
    if (unsup) {
        /* Only a loop-limited device (llvmpipe) refuses a forced team, saying so. */
        g_unsupported++;
        CHECK(strstr(err, "can loop over") != NULL, "%s: UNSUPPORTED for another reason than "
              "the loop limit: \"%s\"", label, err);
    }
    if (!unsup && CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st), err) &&
        t_read(T.q, X, n * 2, xback)) {
        CHECK(!memcmp(xback, xb, n * 2), "%s: the input x changed", label);
        double rel = tol_rel(dt, cols), abs_ = tol_abs(dt);
        if (op == OP_STATS) {
            double *wm = malloc(rows * 8), *wl = malloc(rows * 8);
            ref_stats(xf, rows, cols, wm, wl);
            if (t_read(T.q, M, rows * 4, m) && t_read(T.q, L, rows * 4, l)) {
                char lab[460];
                snprintf(lab, sizeof lab, "%s row_max", label);
                COMPARE(lab, m, wm, rows, 1, 0, 0);
                snprintf(lab, sizeof lab, "%s row_sum (statistics in float32)", label);
                COMPARE(lab, l, wl, rows, 1, tol_rel(F32, cols), tol_abs(F32));
            }
            free(wm), free(wl);
        } else if (t_read(T.q, Y, n * 2, yb)) {
            uint32_t *y32 = malloc(n * 4);
            for (size_t i = 0; i < n; i++) y32[i] = yb[i];
            if (op == OP_RMSNORM) {
                /* gf is already rounded: rounding it again changes nothing. */
                check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, xf, gf, eps, y32, NULL,
                            rel, abs_, 1);
            } else {
                double *w = malloc(n * 8);
                ref_softmax(xf, rows, cols, w);
                size_t bad = 0, unwritten = 0, badbits = 0, shown = 0;
                char first[3][260];
                for (size_t i = 0; i < n; i++) {
                    uint32_t eb;
                    float got = unpack1(dt, yb[i]);
                    int unw = yb[i] == poison_of(dt);
                    int close = !unw && t_close(got, w[i], rel, abs_);
                    int bits = unw || rne_ok(dt, yb[i], w[i], &eb);
                    if (close && bits) continue;
                    unwritten += unw, badbits += !bits;
                    if (shown < 3)
                        snprintf(first[shown++], sizeof first[0], "[%zu,%zu] got %.9g (bits "
                                 "0x%x%s) want %.17g%s%x (row kind %d)", i / cols, i % cols,
                                 (double)got, yb[i], unw ? ", the poison" : "", w[i],
                                 bits ? "" : ", nearest-even bits 0x", bits ? 0 : eb,
                                 (int)kinds[i / cols]);
                    bad++;
                }
                g_bits_bad += badbits;
                if (bad)
                    t_fail(__FILE__, __LINE__, "%s: %zu of %zu values wrong (%zu unwritten, %zu "
                           "not nearest even): %s%s%s%s%s", label, bad, n, unwritten, badbits,
                           first[0], shown > 1 ? "; " : "", shown > 1 ? first[1] : "",
                           shown > 2 ? "; " : "", shown > 2 ? first[2] : "");
                free(w);
            }
            /* NaN rows: every element NaN in the dtype (bf16 must not round a NaN
               into inf); the value checks above say so too, this names it. */
            for (size_t r = 0; r < rows; r++) {
                int has_nan = 0;
                for (size_t c = 0; c < cols; c++) has_nan |= bits_nan(dt, xb[r * cols + c]);
                if (!has_nan) continue;
                size_t notnan = 0;
                for (size_t c = 0; c < cols; c++) notnan += !bits_nan(dt, yb[r * cols + c]);
                CHECK(!notnan, "%s: row %zu holds a NaN but %zu of its outputs are not NaN",
                      label, r, notnan);
            }
            free(y32);
        }
    }
    cl_mem ms[] = {X, Y, G, M, L};
    for (int i = 0; i < 5; i++) if (ms[i]) clReleaseMemObject(ms[i]);
    free(xb), free(yb), free(ypo), free(gb), free(xback), free(xf), free(gf), free(m), free(l);
    free(stpo);
}

void test_lowp_special(void)
{
    static const size_t lcols[] = {1, 2, 7, 33, 1000};
    const clnorm_dtype dts[] = {F16, BF16};
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    g_denorm_ok = device_denormals();
    size_t calls = 0;
    for (int p = 0; p < 4; p++)
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < COUNT_OF(lcols); i++) {
                size_t cols = lcols[i];
                for (int op = 0; op < OP_COUNT; op++) {
                    if (p == 0) plan_clear();
                    else if (p == 1) plan_reg(cols);
                    else if (p == 3) plan_pair(cols);
                    else plan_set("split", 0, 0, 2);
                    if (op == OP_RMSNORM) {
                        lowp_call(OP_RMSNORM, dts[d], cols, 0.0f);
                        lowp_call(OP_RMSNORM, dts[d], cols, 1e-5f);
                        calls += 2;
                    } else {
                        lowp_call((top)op, dts[d], cols, 0.0f);
                        calls++;
                    }
                    plan_clear();
                }
            }
    CHECK(g_bits_checked > 1000, "only %zu outputs were clear of rounding ties; the "
          "nearest-even check did not run", g_bits_checked);
    NOTE("%zu calls (auto, reg and split plans); %zu outputs compared bit for bit with their "
         "nearest-even rounding, %zu differed", calls, g_bits_checked, g_bits_bad);
}

/* ---- softmax_bf16_tiny ------------------------------------------------------------------- */
/* bfloat16 softmax outputs from 2^-133 to 2^-126 (bfloat16's denormals) on every device:
   where float32 denormals flush to zero, the streaming write forms them from a scaled
   weight (cln_seg_softmax_write, cl/rows.cl). Rows whose entries lie 78 to 100 below
   their maximum, a few near it, through the plans each device takes for AUTO, online
   and three-pass, and through the write with given statistics. Each output is checked
   against float64 within 8e-3 relative or half a bfloat16 denormal step (2^-134), and
   one whose exact value is 2^-133 or more must not be zero, except where a register
   variant ran on a device without denormals: its weights are taken before the write
   and may flush (docs/API.md). */
static void tiny_check(const char *label, const uint16_t *yb, const double *ref, size_t n,
                       int may_flush, size_t *tiny_seen)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        const float got = unpack1(BF16, yb[i]);
        if (may_flush && got == 0.0f && ref[i] < 0x1p-126) continue;
        const int ok = t_close(got, ref[i], 8e-3, 0x1p-134) && !(ref[i] >= 0x1p-133 && got == 0.0f);
        if (!ok && bad++ < 3)
            t_fail(__FILE__, __LINE__, "%s: element %zu got %g (bits 0x%04x), want %g", label, i,
                   got, yb[i], ref[i]);
        if (ref[i] >= 0x1p-133 && ref[i] < 0x1p-126 && got > 0.0f) (*tiny_seen)++;
    }
    CHECK(bad == 0, "%s: %zu of %zu elements off", label, bad, n);
}

void test_softmax_bf16_tiny(void)
{
    static const size_t tcols[] = {1, 3, 4, 17, 64, 257, 4097, 65537};
    const size_t rows = 3;
    const int denorm = device_denormals();
    size_t tiny_seen = 0;
    for (size_t ci = 0; ci < COUNT_OF(tcols); ci++) {
        const size_t cols = tcols[ci], n = rows * cols;
        float *x = malloc(n * sizeof *x), *m = malloc(rows * sizeof *m), *l = malloc(rows * sizeof *l);
        uint16_t *xb = malloc(n * sizeof *xb), *yb = malloc(n * sizeof *yb);
        double *ref = malloc(n * sizeof *ref);
        if (!CHECK(x && m && l && xb && yb && ref, "out of host memory")) goto next;
        for (size_t r = 0; r < rows; r++) {
            const double peak = rng_range(&R, -2, 2);
            for (size_t c = 0; c < cols; c++)
                x[r * cols + c] = (float)(peak - (rng_below(&R, 8) == 0 ? rng_range(&R, 0, 3)
                                                                      : rng_range(&R, 78, 100)));
            x[r * cols + rng_below(&R, cols)] = (float)peak;
        }
        dt_pack(BF16, x, xb, n);
        dt_unpack(BF16, xb, x, n);
        ref_softmax(x, rows, cols, ref);
        const clnorm_softmax_algo algos[] = {CLNORM_SOFTMAX_AUTO, CLNORM_SOFTMAX_ONLINE,
                                             CLNORM_SOFTMAX_THREE_PASS};
        char label[128];
        for (size_t a = 0; a < COUNT_OF(algos); a++) {
            dt_fill_bits(BF16, yb, n, poison_of(BF16));
            snprintf(label, sizeof label, "bf16 softmax %zux%zu algo %d", rows, cols, (int)algos[a]);
            if (CHECK_ST(clnorm_softmax_host(T.s, CLNORM_BF16, rows, cols, xb, yb, algos[a]),
                         CLNORM_SUCCESS)) {
                clnorm_plan_info pl;
                const int streams = clnorm_last_plan(&pl) && (pl.variant == CLNORM_VARIANT_STREAM ||
                                                              pl.variant == CLNORM_VARIANT_SPLIT);
                tiny_check(label, yb, ref, n, !denorm && !streams, &tiny_seen);
            }
        }
        dt_fill_bits(BF16, yb, n, poison_of(BF16));
        snprintf(label, sizeof label, "bf16 softmax_apply %zux%zu", rows, cols);
        if (CHECK_ST(clnorm_softmax_stats_host(T.s, CLNORM_BF16, rows, cols, xb, m, l),
                     CLNORM_SUCCESS) &&
            CHECK_ST(clnorm_softmax_apply_host(T.s, CLNORM_BF16, rows, cols, xb, m, l, yb),
                     CLNORM_SUCCESS))
            tiny_check(label, yb, ref, n, 0, &tiny_seen);
    next:
        free(x), free(m), free(l), free(xb), free(yb), free(ref);
    }
    CHECK(tiny_seen > 1000, "only %zu outputs between 2^-133 and 2^-126 were checked", tiny_seen);
    NOTE("%zu outputs between 2^-133 and 2^-126 checked; device %s float32 denormals",
         tiny_seen, denorm ? "keeps" : "flushes");
}
