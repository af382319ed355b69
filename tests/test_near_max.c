/* near_flt_max: rows whose every entry lies within a factor of 4 of the largest finite
   value of the dtype (float32 3.40e38, float16 65504, bfloat16 3.39e38), with mixed
   signs, ties at the maximum and exact +-max entries, for every operation and dtype,
   checked against float64 with API.md's accuracy rule. RMSNorm's float32 sum of squares
   overflows on these rows, so they take the rescaling path (API.md, 'Special values');
   softmax's x - m overflows to -inf, whose weight is exactly 0. The fused add keeps
   x + residual finite (each within [max/4, max/2]), so its stored sum is exact IEEE. */
#include "fused.h"
#include "clnorm_advanced.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double max_of(clnorm_dtype dt)
{
    return dt == F16 ? 65504.0 : dt == BF16 ? 0x1.fep127 : (double)FLT_MAX;
}

static double sgn(void) { return rng_below(&R, 2) ? 1.0 : -1.0; }

enum { NK_MIXED, NK_TIES, NK_NEGATIVE, NK_EXACT_MAX, NK_COUNT };

/* One row of kind k with magnitudes in [lo, hi] (fractions of the dtype's maximum).
   Values are exactly representable in the dtype, so rounding on the way in cannot
   carry them past the maximum. */
static void near_row(clnorm_dtype dt, float *x, size_t cols, int k, double lo, double hi)
{
    double mx = max_of(dt);
    for (size_t c = 0; c < cols; c++) {
        double v = mx * rng_range(&R, lo, hi);
        x[c] = rnd(dt, (float)(k == NK_NEGATIVE ? -v : k == NK_TIES ? v : sgn() * v));
    }
    if (k == NK_TIES) /* several entries at the row maximum: softmax gives 1/k there */
        for (size_t i = 0; i < 1 + cols / 5; i++) x[rng_below(&R, cols)] = (float)(mx * hi);
    if (k == NK_EXACT_MAX)
        for (size_t i = 0; i < 1 + cols / 7; i++)
            x[rng_below(&R, cols)] = (float)(sgn() * mx * hi);
}

static void near_rows(clnorm_dtype dt, float *x, size_t rows, size_t cols, double lo,
                      double hi)
{
    for (size_t r = 0; r < rows; r++) near_row(dt, x + r * cols, cols, (int)(r % NK_COUNT), lo, hi);
}

static void one_op(top op, clnorm_dtype dt, size_t rows, size_t cols, const char *plan)
{
    float *x = malloc(rows * cols * sizeof(float) + 4), *g = NULL;
    near_rows(dt, x, rows, cols, 0.25, 1.0);
    op_args a;
    memset(&a, 0, sizeof a);
    a.op = op, a.dt = dt, a.rows = rows, a.cols = cols, a.x = x;
    a.poison = (unsigned)rng_below(&R, 2);
    a.layout = rng_below(&R, 3) == 0 && op != OP_STATS ? LAYOUT_INPLACE : LAYOUT_SEPARATE;
    if (op == OP_RMSNORM) {
        a.eps = 1e-6f;
        if (rng_below(&R, 2)) {
            g = malloc(cols * sizeof(float));
            gen_gamma(&R, g, cols);
            a.gamma = g;
        }
    }
    op_out o;
    clnorm_status st = run_op(&a, &o);
    char label[400];
    op_label(&a, label, sizeof label);
    if (CHECK(st == CLNORM_SUCCESS, "%s [%s]: %s (%s)", label, plan, clnorm_status_string(st),
              clnorm_last_error())) {
        verify_op(&a, &o);
        /* The exact specials: every input is finite, and so is every true result
           (RMSNorm's float32 sum of squares overflows here, and must be rescaled;
           softmax weights lie in [0, 1]). A NaN or inf is wrong, whatever the rule. */
        size_t bad = 0, n = op == OP_STATS ? rows : rows * cols;
        const float *v = op == OP_STATS ? o.l : o.y;
        for (size_t i = 0; i < n; i++)
            bad += !isfinite(v[i]) || (op != OP_RMSNORM && op != OP_STATS &&
                                       (v[i] < 0.0f || v[i] > 1.0f));
        if (op == OP_STATS)
            for (size_t r = 0; r < rows; r++) bad += !isfinite(o.m[r]) || !(o.l[r] >= 1.0f);
        CHECK(bad == 0, "%s [%s]: %zu outputs not finite or out of range", label, plan, bad);
    }
    op_out_free(&o);
    free(x);
    free(g);
}

static void one_fused(clnorm_dtype dt, size_t rows, size_t cols)
{
    size_t n = rows * cols;
    float *x = malloc(n * sizeof(float) + 4), *r = malloc(n * sizeof(float) + 4), *g = NULL;
    /* Each within [max/4, max/2]: |x + residual| <= max, so the stored sum is finite. */
    near_rows(dt, x, rows, cols, 0.25, 0.5);
    near_rows(dt, r, rows, cols, 0.25, 0.5);
    if (rng_below(&R, 2)) {
        g = malloc(cols * sizeof(float));
        gen_gamma(&R, g, cols);
    }
    fz f;
    memset(&f, 0, sizeof f);
    f.dt = dt, f.rows = rows, f.cols = cols, f.xv = x, f.rv = r, f.g = g, f.eps = 1e-6f;
    f.update = (int)rng_below(&R, 2);
    f.x.buf = 0, f.r.buf = 1, f.y.buf = rng_below(&R, 2) ? 0 : 2;
    fused_run(&f, CLNORM_SUCCESS);
    free(x), free(r), free(g);
}

void test_near_flt_max(void)
{
    static const clnorm_dtype dts[] = {F32, F16, BF16};
    static const size_t cols_list[] = {1, 7, 33, 1000, 70001};
    g_denorm_ok = device_denormals();
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    size_t calls = 0;
    for (size_t d = 0; d < COUNT_OF(dts); d++)
        for (size_t i = 0; i < COUNT_OF(cols_list); i++) {
            size_t cols = cols_list[i], rows = cols > 1000 ? 2 : 2 * NK_COUNT;
            for (int op = 0; op < OP_COUNT; op++, calls++) one_op((top)op, dts[d], rows, cols, "auto");
            one_fused(dts[d], rows, cols);
            calls++;
        }
    /* Rows split over several work-groups: the partial sums of squares and the
       partial (m, l) pairs are merged from near-overflow values too. */
    for (size_t d = 0; d < COUNT_OF(dts); d++) {
        plan_set("split", 0, 0, 3);
        for (int op = 0; op < OP_COUNT; op++, calls++) {
            one_op((top)op, dts[d], NK_COUNT, 4097, plan_now());
            clnorm_plan_info ran;
            if (op == OP_RMSNORM && clnorm_last_plan(&ran))
                CHECK(ran.variant == CLNORM_VARIANT_SPLIT, "rmsnorm %s 4097 columns under "
                      "[%s] ran the %s variant", dt_name(dts[d]), plan_now(),
                      clnorm_variant_name(ran.variant));
        }
        plan_clear();
    }
    /* Each kernel form on its own: streaming, registers and words (the fused add
       too), in the forced groups of the other cases. */
    /* One length and the device's own word: PoCL compiles each kernel anew for every
       work-group size and program it meets, which would dominate the case's time. */
    static const size_t form_cols[] = {1000};
    for (int form = 0; form < 3; form++)
        for (size_t d = 0; d < COUNT_OF(dts); d++)
            for (size_t i = 0; i < COUNT_OF(form_cols); i++) {
                size_t cols = form_cols[i];
                if (form == 0) plan_set("stream", 0, 0, 0);
                else if (form == 1) plan_reg(cols);
                else {
                    plan_pair(cols);
                    t_config("CLNORM_PAIR_WORD", NULL);
                }
                for (int op = 0; op < OP_COUNT; op++, calls++)
                    one_op((top)op, dts[d], NK_COUNT, cols, plan_now());
                one_fused(dts[d], NK_COUNT, cols);
                calls++;
                plan_clear();
            }
    NOTE("%zu calls on rows near the largest finite value of f32, f16 and bf16", calls);
}
