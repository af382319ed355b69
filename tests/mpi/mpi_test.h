/* The clnorm_mpi test cases: their registry, the rank they run on, and the shard
   harness (harness.c). Every rank of MPI_COMM_WORLD runs the same case on its own
   device session; the assertions and helpers of tests/ (test.h, util.h) apply. */
#ifndef CLNORM_MPI_TEST_H
#define CLNORM_MPI_TEST_H

#include "clnorm_mpi.h"
#include "test.h"

/* One line per case: MPI_CASE(<name>), the function void mpi_<name>(void) in a
   test_mpi_*.c file. tests/mpi/CMakeLists.txt lists the same names. */
#define MPI_CASES(MPI_CASE) \
    MPI_CASE(values)        \
    MPI_CASE(special)       \
    MPI_CASE(refusals)      \
    MPI_CASE(stats_op)

#define MPI_DECLARE_(name) void mpi_##name(void);
MPI_CASES(MPI_DECLARE_)
#undef MPI_DECLARE_

/* This process in MPI_COMM_WORLD. */
extern int M_rank, M_size;

/* What clnorm_mpi_stats_op and clnorm_mpi_softmax returned before MPI_Init (the
   runner calls them there). */
extern clnorm_status M_before_init_op, M_before_init_softmax;

/* Every rank's failure count so far, summed: the same on every rank. Collective. */
int m_failures_all(void);

/* ---- The shard harness -------------------------------------------------------------
   A problem of rows x total columns, the same on every rank (drawn from the shared
   generator), of which each rank holds the columns [start[rank], start[rank] + w). */
typedef struct mshard {
    clnorm_dtype dt;
    size_t rows, total;
    size_t *widths;          /* per rank; sums to total. NULL: even split */
    size_t xoff, xpad;       /* x view: offset, ld = width + xpad (0 pad: ld 0 passed) */
    size_t yoff, ypad;
    int inplace;             /* y is exactly x */
    int stats;               /* pass row_max and row_sum */
    cl_command_queue q;      /* NULL: the session's queue */
    const float *x;          /* rows x total values (rounded to dt by the harness) */
    int bad_rank, bad;       /* the rank whose call is spoilt (-1: none) and how (M_BAD_*) */
    int bad_rank2, bad2;     /* a second one, or -1 */
} mshard;

/* Ways to spoil one rank's call. */
enum {
    M_BAD_NONE,
    M_BAD_Y_PAST_END,  /* y's offset puts its last row past the buffer: OUT_OF_BOUNDS */
    M_BAD_COLS_0,      /* cols == 0: INVALID_ARGUMENT */
    M_BAD_ROWS,        /* one row fewer than the others: the ranks disagree */
    M_BAD_DTYPE,       /* another dtype (views still in bounds): the ranks disagree */
    M_BAD_OVERLAP,     /* y one element after x in the same buffer: INVALID_ARGUMENT */
    M_BAD_QUEUE,       /* a NULL queue: INVALID_ARGUMENT */
    M_BAD_KERNEL_DIR,  /* accepted, then the statistics' build fails: BUILD_FAILED */
    M_BAD_DTYPE_7,     /* dtype 7, no clnorm_dtype: the rank's own INVALID_ARGUMENT */
    M_BAD_DTYPE_NEG,   /* dtype -1: the rank's own INVALID_ARGUMENT */
    M_BAD_TEAMS        /* CLNORM_ROW_THREADS=3: the statistics run, the write's plan is
                          refused (no work-group of the apply kernel takes teams of 3) */
};

/* Runs clnorm_mpi_softmax on this rank's shard of p (collective), checks the status
   is want, then: on success the shard's values and statistics against the float64
   softmax of the whole rows, and that nothing outside the shard's y view changed
   (padding between cols and ld, the tails, x where not in place); on a refusal that
   no buffer changed and, where expect_rank >= 0, that clnorm_last_error() names that
   rank. label names the problem in failures. Returns the status. */
clnorm_status m_run(const char *label, const mshard *p, clnorm_status want, int expect_rank);

/* Widths of total columns over the ranks: 0 even, 1 one column on every rank but
   the last, 2 random (each at least 1). total >= M_size. */
void m_widths(size_t *w, size_t total, int how);

/* The generator every rank draws the same numbers from (seeded per case). */
extern rng MR;

#endif
