/* special_values: NaN, +-inf, all -inf rows, +inf ties and zero rows mixed with
   ordinary rows in one call, at several row lengths, against the references, which
   spell out API.md's special-value rules. Outputs are poisoned with 0xCD so that an
   unwritten element cannot pass for an expected NaN. */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum kind {
    K_ORDINARY, K_NAN, K_ALL_NEG_INF, K_POS_INF, K_POS_INF_TIES, K_SOME_NEG_INF,
    K_NAN_AND_INF, K_ALL_POS_INF, K_EXTREMES, K_ZERO, K_COUNT
};

static void fill_row(float *x, size_t cols, enum kind k)
{
    gen_rows(&R, x, 1, cols);
    size_t p = rng_below(&R, cols);
    switch (k) {
    case K_ORDINARY: break;
    case K_NAN: x[p] = NAN; break;
    case K_ALL_NEG_INF: for (size_t c = 0; c < cols; c++) x[c] = -INFINITY; break;
    case K_POS_INF: x[p] = INFINITY; break;
    case K_POS_INF_TIES: /* 1 to 3 +inf (fewer on short rows) and a few -inf */
        for (size_t n = 1 + rng_below(&R, 3); n > 0; n--) x[rng_below(&R, cols)] = INFINITY;
        for (size_t n = rng_below(&R, 3); n > 0; n--) {
            size_t q = rng_below(&R, cols);
            if (x[q] != INFINITY) x[q] = -INFINITY;
        }
        break;
    case K_SOME_NEG_INF: /* never all of them: one entry stays finite */
        for (size_t n = 1 + rng_below(&R, cols); n > 0; n--) x[rng_below(&R, cols)] = -INFINITY;
        x[p] = (float)rng_range(&R, -5, 5);
        break;
    case K_NAN_AND_INF:
        x[rng_below(&R, cols)] = INFINITY;
        x[rng_below(&R, cols)] = -INFINITY;
        x[p] = NAN;
        break;
    case K_ALL_POS_INF: for (size_t c = 0; c < cols; c++) x[c] = INFINITY; break;
    case K_EXTREMES: { /* x - max overflows to -inf in float32 (no subnormals: the
                          contract leaves flushing them to the device) */
        const float v[] = {FLT_MAX, -FLT_MAX, 0.0f, FLT_MIN, -FLT_MIN};
        for (size_t c = 0; c < cols; c++) x[c] = PICK(&R, v);
        break;
    }
    case K_ZERO: memset(x, 0, cols * sizeof(float)); break;
    default: break;
    }
}

/* RMSNorm: rows whose float32 sum of squares overflows differ from a float64
   reference legitimately, so only NaN, inf, zero and ordinary rows. */
static int kind_for_rmsnorm(enum kind k)
{
    return k == K_ORDINARY || k == K_NAN || k == K_ALL_NEG_INF || k == K_POS_INF ||
           k == K_SOME_NEG_INF || k == K_NAN_AND_INF || k == K_ALL_POS_INF || k == K_ZERO;
}

static void special_call(top op, size_t cols, float eps)
{
    /* Every kind twice, in random order, between ordinary rows. */
    enum kind kinds[4 * K_COUNT];
    size_t rows = 0;
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k < K_COUNT; k++) {
            if (op == OP_RMSNORM ? !kind_for_rmsnorm((enum kind)k) : k == K_ZERO) continue;
            kinds[rows++] = (enum kind)k;
            kinds[rows++] = K_ORDINARY;
        }
    for (size_t i = rows - 1; i > 0; i--) {
        size_t j = rng_below(&R, i + 1);
        enum kind t = kinds[i]; kinds[i] = kinds[j]; kinds[j] = t;
    }
    float *x = malloc(rows * cols * sizeof(float)), *g = NULL;
    for (size_t r = 0; r < rows; r++) fill_row(x + r * cols, cols, kinds[r]);
    op_args a;
    memset(&a, 0, sizeof a);
    a.op = op, a.dt = CLNORM_F32, a.rows = rows, a.cols = cols, a.x = x;
    a.poison = POISON_CD;
    a.eps = eps;
    if (op == OP_RMSNORM && rng_below(&R, 2)) {
        g = malloc(cols * sizeof(float));
        gen_gamma(&R, g, cols);
        a.gamma = g;
    }
    check_op(&a, CLNORM_SUCCESS);
    free(x);
    free(g);
}

void test_special_values(void)
{
    const size_t lens[] = {1, 33, 4097};
    for (size_t i = 0; i < COUNT_OF(lens); i++) {
        for (int op = OP_SOFTMAX_3PASS; op < OP_COUNT; op++) special_call((top)op, lens[i], 0);
        /* eps = 0 makes a zero row 0 * inf = NaN; eps > 0 makes it zeros. */
        special_call(OP_RMSNORM, lens[i], 0.0f);
        special_call(OP_RMSNORM, lens[i], 1e-5f);
    }
    /* Split rows (3 slices) merge partials that hold the special values; on CPUs the
       three-pass split keeps its weights in y between its stages. */
    t_config("CLNORM_VARIANT", "split");
    t_config("CLNORM_SPLIT", "3");
    for (size_t i = 1; i < COUNT_OF(lens); i++) {
        for (int op = OP_SOFTMAX_3PASS; op < OP_COUNT; op++) special_call((top)op, lens[i], 0);
        special_call(OP_RMSNORM, lens[i], 0.0f);
    }
    t_env_restore();
}
