/* views: strided views with canaries in the padding and around the views, nonzero
   offsets, in place, x and y sharing one buffer, and views that end exactly at the
   end of their buffer. run_op checks every element outside y's view. */
#include "test.h"

#include <stdlib.h>

static const size_t view_cols[] = {1, 5, 33, 129, 1000, 4097};
static const size_t view_rows[] = {1, 3, 17};
static const size_t offsets[] = {0, 1, 7, 1000};
static const size_t pads[] = {1, 3, 16, 61};

void test_views(void)
{
    size_t calls = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        for (size_t i = 0; i < COUNT_OF(view_cols); i++) {
            size_t cols = view_cols[i], rows = PICK(&R, view_rows);
            op_args a;
            float *x, *g;
            make_problem(&R, &a, (top)op, rows, cols, &x, &g);

            /* Separate buffers, both strided and offset. */
            a.layout = LAYOUT_SEPARATE;
            a.xoff = PICK(&R, offsets), a.xld = cols + PICK(&R, pads);
            a.yoff = PICK(&R, offsets), a.yld = cols + PICK(&R, pads);
            a.exact = 0;
            check_op(&a, CLNORM_SUCCESS), calls++;

            /* Exactly fitting buffers: the last row ends at the buffer's end, so a
               check of rows * ld instead of (rows-1) * ld + cols refuses it. */
            a.exact = 1;
            check_op(&a, CLNORM_SUCCESS), calls++;
            a.exact = 0;

            if (op == OP_STATS) { free(x); free(g); continue; }

            /* In place on a strided, offset view: padding keeps its canaries. */
            a.layout = LAYOUT_INPLACE;
            a.yoff = a.xoff, a.yld = a.xld;
            check_op(&a, CLNORM_SUCCESS), calls++;
            a.exact = 1;
            check_op(&a, CLNORM_SUCCESS), calls++;
            a.exact = 0;

            /* One buffer, y after x with a gap, then y before x. */
            a.layout = LAYOUT_SAME_BUFFER;
            a.xoff = PICK(&R, offsets), a.xld = cols + PICK(&R, pads), a.yld = cols + PICK(&R, pads);
            a.yoff = a.xoff + (rows - 1) * a.xld + cols + rng_below(&R, 3);
            check_op(&a, CLNORM_SUCCESS), calls++;
            a.yoff = PICK(&R, offsets);
            a.xoff = a.yoff + (rows - 1) * a.yld + cols + rng_below(&R, 3);
            check_op(&a, CLNORM_SUCCESS), calls++;

            /* Interleaved rows of one buffer: no element is shared, so this is not an
               overlap and must work. */
            size_t pad = PICK(&R, pads);
            a.xoff = PICK(&R, offsets);
            a.xld = a.yld = 2 * cols + pad;
            a.yoff = a.xoff + cols + rng_below(&R, pad + 1);
            check_op(&a, CLNORM_SUCCESS), calls++;

            /* Interleaved at two strides: x in every fourth block of ld2, y in the
               blocks between every other (spans crossing, no element shared). */
            const size_t ld2 = cols + PICK(&R, pads);
            a.xoff = PICK(&R, offsets);
            a.xld = 4 * ld2, a.yld = 2 * ld2;
            a.yoff = a.xoff + ld2;
            check_op(&a, CLNORM_SUCCESS), calls++;
            free(x);
            free(g);
        }
    }
    NOTE("%zu view layouts checked", calls);
}
