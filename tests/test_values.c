/* values_*: each op against its float64 reference over row lengths around every
   power-of-two and work-group boundary, awkward row counts and random data. */
#include "test.h"

#include <stdlib.h>

static const size_t value_cols[] = {1, 2, 3, 31, 32, 33, 127, 128, 129, 1000, 4097, 65537,
                                    (1u << 18) + 1, 1u << 20, (1u << 20) + 3};
static const size_t value_rows[] = {1, 3, 7, 17, 129, 1000, 4099};
enum { ELEM_BUDGET = 300000 };  /* per call, to stay quick on a 2-core CPU */

static void one(top op, clnorm_dtype dt, size_t rows, size_t cols)
{
    op_args a;
    float *x, *g;
    make_problem(&R, &a, op, rows, cols, &x, &g);
    /* The kinds hardest on float32 accumulation and on the max subtraction go first in
       every shape, so that few-row shapes never miss them. */
    for (size_t r = 0; r < rows && r < 2; r++)
        gen_row(&R, x + r * cols, cols, r ? ROW_FAR_OFFSET : ROW_NEAR_CONSTANT);
    a.dt = dt;
    clnorm_status st = check_op(&a, CLNORM_SUCCESS);
    if (dt != CLNORM_F32 && t_verbose())
        NOTE("%s %s %zux%zu: %s", op_name(op), dt_name(dt), rows, cols, clnorm_status_string(st));
    free(x);
    free(g);
}

static void values_case(top op)
{
    size_t calls = 0, elems = 0;
    for (size_t i = 0; i < COUNT_OF(value_cols); i++) {
        size_t cols = value_cols[i];
        if (cols > ELEM_BUDGET / 2) {   /* the longest rows: two of them */
            one(op, CLNORM_F32, 2, cols);
            calls++, elems += 2 * cols;
            continue;
        }
        for (size_t k = 0; k < COUNT_OF(value_rows); k++) {
            size_t rows = value_rows[k];
            if (k > 0 && rows * cols > ELEM_BUDGET) break;
            one(op, CLNORM_F32, rows, cols);
            calls++, elems += rows * cols;
        }
    }
    NOTE("%s: %zu f32 shapes, %zu elements checked", op_name(op), calls, elems);
}

/* F16 and BF16 on every op, through the device and the host API, values checked
   against float64 references of the rounded inputs. A case of their own, so that a
   crash there does not hide the float32 results. */
void test_values_lowp(void)
{
    const clnorm_dtype low[] = {CLNORM_F16, CLNORM_BF16};
    for (size_t d = 0; d < 2; d++)
        for (int op = 0; op < OP_COUNT; op++) {
            one((top)op, low[d], 7, 33);
            one((top)op, low[d], 3, 4097);
            check_host_op((top)op, low[d], 3, 33, 0);
        }
}

void test_values_rmsnorm(void) { values_case(OP_RMSNORM); }
void test_values_softmax_3pass(void) { values_case(OP_SOFTMAX_3PASS); }
void test_values_softmax_online(void) { values_case(OP_SOFTMAX_ONLINE); }
void test_values_softmax_auto(void) { values_case(OP_SOFTMAX_AUTO); }
void test_values_stats(void) { values_case(OP_STATS); }

/* CLNORM_PROGRAMS=one (a program per kernel, PoCL's default with the disk cache on) on
   every device, with the disk cache off so that each program is built here: every op
   in float32 and bfloat16, short rows and long ones, and the host API. */
void test_programs_one(void)
{
    t_config("CLNORM_CACHE_DIR", "off");
    t_config("CLNORM_PROGRAMS", "one");
    clnorm_release_cache(NULL);
    const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_BF16};
    for (size_t d = 0; d < COUNT_OF(dts); d++)
        for (int op = 0; op < OP_COUNT; op++) {
            one((top)op, dts[d], 7, 33);
            one((top)op, dts[d], 3, 4097);
            check_host_op((top)op, dts[d], 3, 33, 0);
        }
    clnorm_release_cache(NULL);
    t_env_restore();
}
