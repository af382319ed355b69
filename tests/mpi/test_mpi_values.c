/* clnorm_mpi_softmax on shards of random rows and of rows with special values, every
   dtype, checked on every rank against the float64 softmax of the whole rows. */
#include "mpi_test.h"

#include <math.h>
#include <stdlib.h>

static const clnorm_dtype dtypes[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};

/* One problem of rows x total, this rank's layout drawn from its own generator (the
   ranks need not agree on layouts), the widths by `how`. */
static void run_random(const char *label, clnorm_dtype dt, size_t rows, size_t total, int how,
                       const float *x, cl_command_queue q)
{
    size_t *w = malloc((size_t)M_size * sizeof *w);
    m_widths(w, total, how);
    mshard p = {.dt = dt, .rows = rows, .total = total, .widths = w, .x = x,
                .bad_rank = -1, .bad_rank2 = -1, .q = q};
    p.xoff = rng_below(&R, 2) ? rng_below(&R, 9) : 0;
    p.xpad = rng_below(&R, 2) ? 1 + rng_below(&R, 6) : 0;
    p.inplace = rng_below(&R, 3) == 0;
    p.yoff = rng_below(&R, 2) ? rng_below(&R, 9) : 0;
    p.ypad = rng_below(&R, 2) ? 1 + rng_below(&R, 6) : 0;
    p.stats = rng_below(&R, 2);
    m_run(label, &p, CLNORM_SUCCESS, -1);
    free(w);
}

void mpi_values(void)
{
    /* Awkward totals: one column per rank, primes, powers of two plus one, a long row. */
    const size_t totals[] = {(size_t)M_size, 37, 257, 1031, 4097, 65537};
    const size_t rowset[] = {1, 3, 8};
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (size_t t = 0; t < COUNT_OF(totals); t++) {
            const size_t total = totals[t] < (size_t)M_size ? (size_t)M_size : totals[t];
            const size_t rows = total > 10000 ? 2 : rowset[rng_below(&MR, COUNT_OF(rowset))];
            float *x = malloc(rows * total * sizeof(float));
            gen_rows(&MR, x, rows, total);
            for (int how = 0; how < 3; how++) {
                char label[96];
                snprintf(label, sizeof label, "random rows, split %s",
                         how == 0 ? "even" : how == 1 ? "one column a rank" : "random");
                run_random(label, dtypes[d], rows, total, how, x, NULL);
            }
            free(x);
        }
    /* An out-of-order queue: the statistics, their copies and the write still follow
       one another. */
    cl_command_queue ooo = t_new_queue(T.ctx, T.dev, 1);
    int have = ooo != NULL, all = 0;
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all) {
        const size_t rows = 4, total = 3001;
        float *x = malloc(rows * total * sizeof(float));
        gen_rows(&MR, x, rows, total);
        run_random("random rows, an out-of-order queue", CLNORM_F32, rows, total, 2, x, ooo);
        free(x);
    } else {
        NOTE("some rank's device has no out-of-order queues: that problem is left out");
    }
    if (ooo) clReleaseCommandQueue(ooo);
}

/* Column c of the whole row that falls in rank r's shard (its first plus k). */
static size_t col_of(const size_t *w, int r, size_t k)
{
    size_t s = 0;
    for (int i = 0; i < r; i++) s += w[i];
    return s + (k < w[r] ? k : w[r] - 1);
}

void mpi_special(void)
{
    const int last = M_size - 1, mid = M_size > 1 ? 1 : 0;
    for (size_t d = 0; d < COUNT_OF(dtypes); d++)
        for (int how = 0; how < 3; how++) {
            const size_t rows = 7, total = (size_t)M_size * 3 + 41 + rng_below(&MR, 60);
            size_t *w = malloc((size_t)M_size * sizeof *w);
            m_widths(w, total, how);
            float *x = malloc(rows * total * sizeof(float));
            gen_rows(&MR, x, rows, total);
            /* Row 0: the last rank's whole shard is -inf (with one rank, the row). */
            for (size_t k = 0; k < w[last]; k++) x[0 * total + col_of(w, last, k)] = -INFINITY;
            /* Row 1: the whole row -inf: zeros, statistics (-inf, 0). */
            for (size_t c = 0; c < total; c++) x[1 * total + c] = -INFINITY;
            /* Row 2: one NaN in one rank's shard makes the whole row NaN on every rank. */
            x[2 * total + col_of(w, mid, w[mid] / 2)] = NAN;
            /* Row 3: +inf on the first and the last rank (two entries either way). */
            size_t a = col_of(w, 0, 0), b = col_of(w, last, w[last] - 1);
            if (a == b) b = a + 1 < total ? a + 1 : a - 1;
            x[3 * total + a] = INFINITY;
            x[3 * total + b] = INFINITY;
            /* Row 4: -inf entries here and there, the rest finite. */
            for (size_t c = 0; c < total; c += 3) x[4 * total + c] = -INFINITY;
            /* Row 5: +inf, -inf and finite values together: +inf takes all the mass. */
            x[5 * total + col_of(w, mid, 0)] = INFINITY;
            x[5 * total + col_of(w, 0, w[0] - 1)] = -INFINITY;
            /* Row 6: every shard but the first all -inf. */
            for (size_t c = w[0]; c < total; c++) x[6 * total + c] = -INFINITY;
            mshard p = {.dt = dtypes[d], .rows = rows, .total = total, .widths = w, .x = x,
                        .bad_rank = -1, .bad_rank2 = -1, .stats = 1};
            p.xpad = rng_below(&R, 4);
            p.ypad = rng_below(&R, 4);
            p.yoff = rng_below(&R, 5);
            p.inplace = how == 2;
            char label[96];
            snprintf(label, sizeof label, "special values, split %s",
                     how == 0 ? "even" : how == 1 ? "one column a rank" : "random");
            m_run(label, &p, CLNORM_SUCCESS, -1);
            free(x);
            free(w);
        }
}
