/* softmax_apply, stats_merge_rows, given_events, plan_apply: the functions of given
   statistics alone. apply against exp(x - m) / l in float64 with the float32
   statistics given (special pairs included), on views with poisoned padding, in
   place, through the host-array form too, and every refusal writing nothing; merge_rows against the host's
   clnorm_stats_merge on random and special pairs; both with wait lists and events;
   the plan of apply on model devices. */
#include "test.h"
#include "kernels.h"
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The value apply must give: the contract's rule for given statistics. */
static double want_apply(float x, float m, float l)
{
    if (isnan(m) || isnan(l)) return NAN;
    if (m == -INFINITY || l == 0.0f) return 0.0;
    if (m == INFINITY) return isnan(x) ? NAN : x == INFINITY ? 1.0 / l : 0.0;
    return exp((double)x - m) / l;
}

/* One apply call on rows x cols with views at random offsets and ld > cols, in place
   or not; stats per row from the reference, or a special pair where special. */
static void apply_case(clnorm_dtype dt, size_t rows, size_t cols, int inplace, int special)
{
    const size_t es = dt_size(dt), xo = rng_below(&R, 5), xld = cols + rng_below(&R, 4);
    const size_t yo = inplace ? xo : rng_below(&R, 5), yld = inplace ? xld : cols + rng_below(&R, 4);
    const size_t xn = xo + rows * xld + 1, yn = yo + rows * yld + 1;
    float *x = malloc(rows * cols * sizeof *x), *m = malloc(rows * 4), *l = malloc(rows * 4);
    double *wm = malloc(rows * 8), *wl = malloc(rows * 8), *want = malloc(rows * cols * 8);
    float *got = malloc(rows * cols * sizeof *got);
    unsigned char *xi = malloc(xn * es), *yi = malloc(yn * es), *yb = malloc(yn * es);
    gen_rows(&R, x, rows, cols);
    dt_round(dt, x, x, rows * cols);
    ref_stats(x, rows, cols, wm, wl);
    for (size_t r = 0; r < rows; r++) {
        m[r] = (float)wm[r], l[r] = (float)wl[r];
        if (!special) continue;
        float *xr = x + r * cols;
        switch (r % 6) {
        case 0: m[r] = -INFINITY, l[r] = 0; break;
        case 1: m[r] = NAN; break;
        case 2: l[r] = NAN; break;
        case 3: /* +inf entries, one NaN elsewhere stays NaN */
            xr[rng_below(&R, cols)] = INFINITY, xr[0] = INFINITY, m[r] = INFINITY;
            l[r] = 2;
            break;
        case 4: xr[rng_below(&R, cols)] = NAN; break; /* finite statistics, IEEE */
        default: xr[rng_below(&R, cols)] = -INFINITY; break;
        }
    }
    dt_fill_bits(dt, xi, xn, canary_of(dt));
    dt_fill_bits(dt, yi, yn, poison_of(dt));
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            put_el(xi, xo + r * xld + c, es, pack1(dt, x[r * cols + c]));
            want[r * cols + c] = want_apply(x[r * cols + c], m[r], l[r]);
        }
    cl_mem xm = t_buffer(T.ctx, xn * es, xi), ym = inplace ? xm : t_buffer(T.ctx, yn * es, yi);
    cl_mem mm = t_buffer(T.ctx, rows * 4, m), lm = t_buffer(T.ctx, rows * 4, l);
    char label[128];
    snprintf(label, sizeof label, "apply %s %zux%zu%s%s", dt_name(dt), rows, cols,
             inplace ? " in place" : "", special ? " special" : "");
    const unsigned char *before = inplace ? xi : yi;
    if (CHECK_ST(clnorm_softmax_apply(T.q, dt, rows, cols, (clnorm_matrix){xm, xo, xld}, mm, lm,
                                      (clnorm_matrix){ym, yo, yld}, 0, NULL, NULL),
                 CLNORM_SUCCESS) &&
        t_read(T.q, ym, (inplace ? xn : yn) * es, yb)) {
        size_t bad = 0;
        for (size_t e = 0; e < (inplace ? xn : yn); e++) {
            const size_t r = (e - yo) / yld, c = (e - yo) % yld;
            if (e >= yo && r < rows && c < cols) got[r * cols + c] = unpack1(dt, get_el(yb, e, es));
            else bad += get_el(yb, e, es) != get_el(before, e, es);
        }
        CHECK(bad == 0, "%s: %zu elements outside y changed", label, bad);
        COMPARE(label, got, want, rows, cols, tol_rel(dt, cols), tol_abs(dt));
    }
    /* Statistics arrays shorter than rows floats: refused, nothing written. */
    cl_mem shortm = rows > 1 ? t_buffer(T.ctx, rows * 4 - 4, NULL) : NULL;
    if (rows > 1 && shortm) {
        CHECK_ST(clnorm_softmax_apply(T.q, dt, rows, cols, (clnorm_matrix){xm, xo, xld}, shortm,
                                      lm, (clnorm_matrix){ym, yo, yld}, 0, NULL, NULL),
                 CLNORM_OUT_OF_BOUNDS);
        CHECK(t_mentions(clnorm_last_error(), "row_max"), "%s: message %s", label,
              clnorm_last_error());
    }
    if (shortm) clReleaseMemObject(shortm);
    CHECK_ST(clnorm_softmax_apply(T.q, dt, rows, cols, (clnorm_matrix){xm, xo, xld}, mm, NULL,
                                  (clnorm_matrix){ym, yo, yld}, 0, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "row_sum"), "%s: message %s", label, clnorm_last_error());
    CHECK_ST(clnorm_softmax_apply(T.q, dt, rows, cols, (clnorm_matrix){xm, xo, xld}, mm, lm,
                                  (clnorm_matrix){ym, yo + xn + yn, yld}, 0, NULL, NULL),
             CLNORM_OUT_OF_BOUNDS);
    /* The host-array form on packed rows, in place or not: the same values, and the
       element past y untouched. */
    const size_t n = rows * cols;
    unsigned char *hx = malloc(n * es), *hy = malloc((n + 1) * es);
    for (size_t e = 0; e < n; e++) put_el(hx, e, es, pack1(dt, x[e]));
    dt_fill_bits(dt, hy, n + 1, poison_of(dt));
    unsigned char *hout = inplace ? hx : hy;
    if (CHECK_ST(clnorm_softmax_apply_host(T.s, dt, rows, cols, hx, m, l, hout),
                 CLNORM_SUCCESS)) {
        for (size_t e = 0; e < n; e++) got[e] = unpack1(dt, get_el(hout, e, es));
        char hlabel[160];
        snprintf(hlabel, sizeof hlabel, "%s (host arrays)", label);
        COMPARE(hlabel, got, want, rows, cols, tol_rel(dt, cols), tol_abs(dt));
        CHECK(get_el(hy, n, es) == poison_of(dt), "%s: the host form wrote past y", hlabel);
    }
    free(hx), free(hy);
    unsigned char *after = malloc((inplace ? xn : yn) * es);
    if (t_read(T.q, ym, (inplace ? xn : yn) * es, after))
        CHECK(!memcmp(after, yb, (inplace ? xn : yn) * es), "%s: a refused call wrote y", label);
    free(after);
    clReleaseMemObject(xm), clReleaseMemObject(mm), clReleaseMemObject(lm);
    if (!inplace) clReleaseMemObject(ym);
    free(x), free(m), free(l), free(wm), free(wl), free(want), free(got), free(xi), free(yi),
        free(yb);
}

void test_softmax_apply(void)
{
    static const size_t shapes[][2] = {{1, 1}, {3, 5}, {17, 129}, {6, 4097}, {1, 100003},
                                       {2, 262145}, {64, 31}};
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++)
            for (int k = 0; k < 2; k++)
                apply_case((clnorm_dtype)d, shapes[s][0], shapes[s][1], (int)(s + k) % 2, k);
}

/* merge_rows against the host merge, on random pairs and every special pair. */
void test_stats_merge_rows(void)
{
    static const float sp[] = {-INFINITY, INFINITY, NAN, 0.0f, 3.0f, -2.5f, 40.0f, -1e30f};
    /* Weights stay normal numbers (at least e^-42.5): devices that flush subnormals
       (llvmpipe) would otherwise give inf * 0 where the host keeps inf. */
    static const float sl[] = {0.0f, 1.0f, 2.0f, NAN, INFINITY, 1e-30f, 7.5f};
    const size_t ns = COUNT_OF(sp) * COUNT_OF(sl), rows = ns * ns + 1000;
    float *am = malloc(rows * 4), *al = malloc(rows * 4), *bm = malloc(rows * 4),
          *bl = malloc(rows * 4), *gm = malloc(rows * 4), *gl = malloc(rows * 4);
    for (size_t r = 0; r < rows; r++) {
        if (r < ns * ns) {
            const size_t a = r / ns, b = r % ns;
            am[r] = sp[a / COUNT_OF(sl)], al[r] = sl[a % COUNT_OF(sl)];
            bm[r] = sp[b / COUNT_OF(sl)], bl[r] = sl[b % COUNT_OF(sl)];
        } else {
            am[r] = (float)rng_range(&R, -50, 50), al[r] = (float)rng_range(&R, 1, 1000);
            bm[r] = (float)rng_range(&R, -50, 50), bl[r] = (float)rng_range(&R, 1, 1000);
        }
    }
    cl_mem m1 = t_buffer(T.ctx, rows * 4, am), l1 = t_buffer(T.ctx, rows * 4, al);
    cl_mem m2 = t_buffer(T.ctx, rows * 4, bm), l2 = t_buffer(T.ctx, rows * 4, bl);
    if (CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, l1, m2, l2, 0, NULL, NULL), CLNORM_SUCCESS) &&
        t_read(T.q, m1, rows * 4, gm) && t_read(T.q, l1, rows * 4, gl)) {
        size_t bad = 0;
        for (size_t r = 0; r < rows; r++) {
            float wm, wl;
            clnorm_stats_merge(am[r], al[r], bm[r], bl[r], &wm, &wl);
            if (!t_close(gm[r], wm, 0, 0) || !t_close(gl[r], wl, 1e-6, 1e-37)) {
                if (bad++ < 5)
                    t_fail(__FILE__, __LINE__, "merge_rows row %zu: (%g, %g) + (%g, %g) gave "
                           "(%g, %g), the host (%g, %g)", r, (double)am[r], (double)al[r],
                           (double)bm[r], (double)bl[r], (double)gm[r], (double)gl[r],
                           (double)wm, (double)wl);
            }
        }
        CHECK(bad == 0, "%zu of %zu rows differ from clnorm_stats_merge", bad, rows);
    }
    /* Refusals: short b, a_max == a_sum; nothing written. */
    cl_mem shortb = t_buffer(T.ctx, 8, NULL);
    CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, l1, shortb, l2, 0, NULL, NULL),
             CLNORM_OUT_OF_BOUNDS);
    CHECK(t_mentions(clnorm_last_error(), "b_max"), "message: %s", clnorm_last_error());
    CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, m1, m2, l2, 0, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, l1, NULL, l2, 0, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    float *again = malloc(rows * 4);
    if (t_read(T.q, m1, rows * 4, again))
        CHECK(!memcmp(again, gm, rows * 4), "a refused merge_rows wrote a_max");
    /* b the same buffers as a: each row merged with itself. */
    if (CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, l1, m1, l1, 0, NULL, NULL), CLNORM_SUCCESS) &&
        t_read(T.q, l1, rows * 4, again))
        for (size_t r = ns * ns; r < rows; r++)
            if (!CHECK(t_close(again[r], 2.0 * gl[r], 1e-6, 0), "row %zu merged with itself: %g, "
                       "expected %g", r, (double)again[r], 2.0 * gl[r]))
                break;
    /* b's buffers a's swapped (b_max is a_sum, b_sum is a_max): each row reads its
       four values before writing, so (m, l) merged with (l, m), as on the host. */
    float *cm = malloc(rows * 4), *cs = malloc(rows * 4);
    if (t_read(T.q, m1, rows * 4, cm) && t_read(T.q, l1, rows * 4, cs) &&
        CHECK_ST(clnorm_stats_merge_rows(T.q, rows, m1, l1, l1, m1, 0, NULL, NULL), CLNORM_SUCCESS) &&
        t_read(T.q, m1, rows * 4, gm) && t_read(T.q, l1, rows * 4, gl)) {
        size_t bad = 0;
        for (size_t r = 0; r < rows; r++) {
            float wm, wl;
            clnorm_stats_merge(cm[r], cs[r], cs[r], cm[r], &wm, &wl);
            if ((!t_close(gm[r], wm, 0, 0) || !t_close(gl[r], wl, 1e-6, 1e-37)) && bad++ < 5)
                t_fail(__FILE__, __LINE__, "swapped merge_rows row %zu: (%g, %g) gave (%g, %g), "
                       "the host (%g, %g)", r, (double)cm[r], (double)cs[r], (double)gm[r],
                       (double)gl[r], (double)wm, (double)wl);
        }
        CHECK(bad == 0, "%zu of %zu swapped rows differ from clnorm_stats_merge", bad, rows);
    }
    /* b_max a sub-buffer over a_max shifted by some rows: row r would read what row
       r + shift writes, so it is refused and writes nothing. */
    {
        cl_uint align_bits = 0;
        clGetDeviceInfo(T.dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL);
        const size_t align = align_bits / 8 ? align_bits / 8 : 128, sub_rows = rows - align / 4;
        cl_buffer_region reg = {align, sub_rows * 4};
        cl_int err = 0;
        cl_mem shifted = clCreateSubBuffer(m1, 0, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
        if (CHECK(err == CL_SUCCESS && align < rows * 4, "clCreateSubBuffer: %d", err) &&
            t_read(T.q, m1, rows * 4, cm)) {
            CHECK_ST(clnorm_stats_merge_rows(T.q, sub_rows, m1, l1, shifted, l2, 0, NULL, NULL),
                     CLNORM_INVALID_ARGUMENT);
            CHECK(t_mentions(clnorm_last_error(), "b_max") &&
                      t_mentions(clnorm_last_error(), "a_max"),
                  "message: %s", clnorm_last_error());
            if (t_read(T.q, m1, rows * 4, again))
                CHECK(!memcmp(again, cm, rows * 4), "a refused shifted merge_rows wrote a_max");
        }
        if (shifted) clReleaseMemObject(shifted);
    }
    free(cm), free(cs);
    free(again);
    clReleaseMemObject(shortb);
    clReleaseMemObject(m1), clReleaseMemObject(l1), clReleaseMemObject(m2), clReleaseMemObject(l2);
    free(am), free(al), free(bm), free(bl), free(gm), free(gl);
}

/* Both wait for their wait list and hand out an event that completes with them;
   rows == 0 gives a marker event. */
void test_given_events(void)
{
    const size_t rows = 5, cols = 300;
    cl_int err;
    float x[5 * 300], m[5], l[5], y[5 * 300];
    gen_rows(&R, x, rows, cols);
    double wm[5], wl[5];
    ref_stats(x, rows, cols, wm, wl);
    for (size_t r = 0; r < rows; r++) m[r] = (float)wm[r], l[r] = (float)wl[r];
    cl_mem xm = t_buffer(T.ctx, sizeof x, x), ym = t_buffer(T.ctx, sizeof x, NULL);
    cl_mem mm = t_buffer(T.ctx, sizeof m, m), lm = t_buffer(T.ctx, sizeof l, l);
    cl_mem m2 = t_buffer(T.ctx, sizeof m, m), l2 = t_buffer(T.ctx, sizeof l, l);
    cl_command_queue qo = t_new_queue(T.ctx, T.dev, 1);
    cl_command_queue qs[2] = {T.q, qo};
    for (int k = 0; k < 2 && qs[k]; k++) {
        cl_event gate = clCreateUserEvent(T.ctx, &err), ev = NULL, ev2 = NULL;
        if (!CHECK_CL(err)) break;
        CHECK_ST(clnorm_softmax_apply(qs[k], CLNORM_F32, rows, cols, (clnorm_matrix){xm, 0, 0}, mm,
                                      lm, (clnorm_matrix){ym, 0, 0}, 1, &gate, &ev),
                 CLNORM_SUCCESS);
        CHECK_ST(clnorm_stats_merge_rows(qs[k], rows, m2, l2, mm, lm, 1, &ev, &ev2), CLNORM_SUCCESS);
        cl_int s = CL_COMPLETE;
        if (ev) clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
        CHECK(s != CL_COMPLETE, "apply completed before its wait list (queue %d)", k);
        clSetUserEventStatus(gate, CL_COMPLETE);
        t_check_event("apply", ev);
        t_check_event("merge_rows", ev2);
        if (t_read(T.q, ym, sizeof y, y)) {
            double want[5 * 300];
            ref_softmax(x, rows, cols, want);
            COMPARE("apply after a user event", y, want, rows, cols, tol_rel(CLNORM_F32, cols),
                    1e-30);
        }
        float gl[5];
        if (t_read(T.q, l2, sizeof gl, gl))
            for (size_t r = 0; r < rows; r++)
                CHECK(t_close(gl[r], (k ? 3.0 : 2.0) * l[r], 1e-6, 0), "merge_rows row %zu: %g",
                      r, (double)gl[r]);
        if (ev) clReleaseEvent(ev);
        if (ev2) clReleaseEvent(ev2);
        clReleaseEvent(gate);
    }
    cl_event e0 = NULL;
    CHECK_ST(clnorm_softmax_apply(T.q, CLNORM_F32, 0, cols, (clnorm_matrix){xm, 0, 0}, mm, lm,
                                  (clnorm_matrix){ym, 0, 0}, 0, NULL, &e0), CLNORM_SUCCESS);
    t_check_event("apply rows == 0", e0);
    if (e0) clReleaseEvent(e0), e0 = NULL;
    CHECK_ST(clnorm_stats_merge_rows(T.q, 0, mm, lm, m2, l2, 0, NULL, &e0), CLNORM_SUCCESS);
    t_check_event("merge_rows rows == 0", e0);
    if (e0) clReleaseEvent(e0);
    CHECK_ST(clnorm_stats_merge_rows(T.q, rows, mm, lm, m2, l2, 1, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    if (qo) clReleaseCommandQueue(qo);
    clReleaseMemObject(xm), clReleaseMemObject(ym), clReleaseMemObject(mm), clReleaseMemObject(lm);
    clReleaseMemObject(m2), clReleaseMemObject(l2);
}

/* The apply plan on model devices: slices cover each row exactly, slice starts keep
   the row's alignment, teams divide groups, few long rows fill the device, and a
   loop-trip limit is kept. */
void test_plan_apply(void)
{
    cln_profile gpu = {.type = CL_DEVICE_TYPE_GPU, .compute_units = 132, .max_wg = 1024,
                       .local_mem = 49152, .vec = 4, .best_path = CLN_PATH_NV};
    cln_profile cpu = {.type = CL_DEVICE_TYPE_CPU, .compute_units = 2, .max_wg = 4096,
                       .local_mem = 524288, .vec = 8, .pocl_major = 3};
    cln_profile lanes = {.type = CL_DEVICE_TYPE_CPU, .compute_units = 8, .max_wg = 1024,
                         .local_mem = 32768, .vec = 4, .simd_lanes = 1, .loop_limit = 16000,
                         .flat_barriers = 1};
    const cln_profile *ps[] = {&gpu, &cpu, &lanes};
    static const size_t shapes[][2] = {{1, 1}, {1, 1048576}, {8, 262144}, {64, 128256},
                                       {128, 151936}, {4096, 128}, {3, 5}, {1, 3000001}};
    const cln_limits lim = {.force_path = -1, .force_variant = -1};
    for (size_t d = 0; d < COUNT_OF(ps); d++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++) {
            const size_t rows = shapes[s][0], cols = shapes[s][1];
            cln_plan pl;
            char why[256];
            if (!CHECK_ST(cln_plan_apply(ps[d], &lim, CLN_K_SOFTMAX_APPLY, rows, cols, &pl, why,
                                         sizeof why), CLNORM_SUCCESS))
                continue;
            CHECK(pl.k1 == CLN_K_SOFTMAX_APPLY && pl.k2 == CLN_K_COUNT && pl.team &&
                      pl.wg % pl.team == 0 && pl.wg <= ps[d]->max_wg,
                  "device %zu %zux%zu: wg %zu team %zu", d, rows, cols, pl.wg, pl.team);
            CHECK(pl.slices * pl.slice_len >= cols && (pl.slices - 1) * pl.slice_len < cols &&
                      (pl.slices == 1 || pl.slice_len % 16 == 0) &&
                      pl.groups * pl.rows_per_wg >= rows * pl.slices &&
                      (pl.groups - 1) * pl.rows_per_wg < rows * pl.slices,
                  "device %zu %zux%zu: %zu slices of %zu, %zu groups of %zu units", d, rows,
                  cols, pl.slices, pl.slice_len, pl.groups, pl.rows_per_wg);
            if (ps[d]->loop_limit)
                CHECK(pl.slice_len / pl.team <= ps[d]->loop_limit + 16,
                      "device %zu %zux%zu: %zu elements per work-item", d, rows, cols,
                      pl.slice_len / pl.team);
            if (d == 0 && rows * cols >= 1000000)
                CHECK(pl.groups >= 4 * ps[d]->compute_units, "GPU %zux%zu: only %zu groups",
                      rows, cols, pl.groups);
        }
    cln_plan pl;
    char why[256];
    CHECK_ST(cln_plan_apply(&gpu, &lim, CLN_K_STATS_MERGE_ROWS, 1000, 1, &pl, why, sizeof why),
             CLNORM_SUCCESS);
    CHECK(pl.team == 1 && pl.groups * pl.wg >= 1000, "merge_rows: %zu groups of %zu", pl.groups,
          pl.wg);
    const cln_limits forced = {.force_path = CLN_PATH_SUBGROUP, .force_variant = -1};
    CHECK_ST(cln_plan_apply(&cpu, &forced, CLN_K_SOFTMAX_APPLY, 4, 4, &pl, why, sizeof why),
             CLNORM_UNSUPPORTED);
}
