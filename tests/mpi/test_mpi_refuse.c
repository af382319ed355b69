/* Refusals of clnorm_mpi_softmax (one rank's bad argument, ranks that disagree, no
   MPI), and clnorm_mpi_stats_op in the caller's own reductions. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_test.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A small problem spoilt on some ranks, expecting want on every rank. */
static void refuse(const char *label, int bad_rank, int bad, int bad_rank2, int bad2,
                   clnorm_status want, int expect_rank, const char *word)
{
    const size_t rows = 5, total = (size_t)M_size * 4 + 13;
    float *x = malloc(rows * total * sizeof(float));
    gen_rows(&MR, x, rows, total);
    mshard p = {.dt = CLNORM_F32, .rows = rows, .total = total, .x = x, .bad_rank = bad_rank,
                .bad = bad, .bad_rank2 = bad_rank2, .bad2 = bad2, .stats = 1};
    p.xpad = 2;
    p.ypad = 3;
    p.yoff = 1;
    double t0 = t_now();
    clnorm_status st = m_run(label, &p, want, expect_rank);
    double dt = t_now() - t0;
    if (st != CLNORM_SUCCESS && word)
        CHECK(t_mentions(clnorm_last_error(), word), "%s: the message does not mention %s: \"%s\"",
              label, word, clnorm_last_error());
    if (st == CLNORM_INVALID_ARGUMENT && word && !strcmp(word, "disagree")) {
        /* The message gives this rank's own dtype and rows, each its own value. */
        const int mine = M_rank == bad_rank ? bad : M_rank == bad_rank2 ? bad2 : 0;
        char own[96];
        snprintf(own, sizeof own, "(this rank, %d: dtype %s, rows = %zu)", M_rank,
                 mine == M_BAD_DTYPE ? "f16" : "f32", mine == M_BAD_ROWS ? rows - 1 : rows);
        CHECK(strstr(clnorm_last_error(), own) != NULL, "%s: the message does not give \"%s\": "
              "\"%s\"", label, own, clnorm_last_error());
        /* It names what differs, and only that. */
        const int rows_differ = bad == M_BAD_ROWS || bad2 == M_BAD_ROWS;
        const int dtype_differs = bad == M_BAD_DTYPE || bad2 == M_BAD_DTYPE;
        CHECK(!strstr(clnorm_last_error(), "rows from") == !rows_differ &&
                  !strstr(clnorm_last_error(), "dtype from") == !dtype_differs,
              "%s: the message names other differences than rows %d, dtype %d: \"%s\"", label,
              rows_differ, dtype_differs, clnorm_last_error());
    }
    /* A refusal is decided before any device work: every rank returns at once. */
    CHECK(dt < 30, "%s: took %.1f s to return", label, dt);
    free(x);
}

void mpi_refusals(void)
{
    const int last = M_size - 1;
    CHECK(M_before_init_op == CLNORM_UNSUPPORTED && M_before_init_softmax == CLNORM_UNSUPPORTED,
          "before MPI_Init: clnorm_mpi_stats_op returned %s, clnorm_mpi_softmax %s; expected "
          "CLNORM_UNSUPPORTED", clnorm_status_string(M_before_init_op),
          clnorm_status_string(M_before_init_softmax));
    /* One rank's request refused: every rank returns that status, naming the rank. */
    refuse("y past its buffer on the last rank", last, M_BAD_Y_PAST_END, -1, 0,
           CLNORM_OUT_OF_BOUNDS, last, "y");
    refuse("y past its buffer on rank 0", 0, M_BAD_Y_PAST_END, -1, 0, CLNORM_OUT_OF_BOUNDS, 0,
           "y");
    refuse("cols == 0 on the last rank", last, M_BAD_COLS_0, -1, 0, CLNORM_INVALID_ARGUMENT,
           last, "cols");
    refuse("y overlapping x on the last rank", last, M_BAD_OVERLAP, -1, 0,
           CLNORM_INVALID_ARGUMENT, last, "overlap");
    refuse("a NULL queue on the last rank", last, M_BAD_QUEUE, -1, 0, CLNORM_INVALID_ARGUMENT,
           last, "queue");
    /* Accepted by its checks, then failing in OpenCL on one rank (the statistics'
       program cannot be built): still every rank returns it, and nothing is written. */
    refuse("the statistics' build failing on the last rank", last, M_BAD_KERNEL_DIR, -1, 0,
           CLNORM_BUILD_FAILED, last, "CLNORM_KERNEL_DIR");
    /* The last rank's write refused at planning while its statistics are not: every
       rank learns of it before any writes. */
    refuse("the write's plan refused on the last rank", last, M_BAD_TEAMS, -1, 0,
           CLNORM_INVALID_ARGUMENT, last, "CLNORM_ROW_THREADS");
    refuse("dtype 7 on the last rank", last, M_BAD_DTYPE_7, -1, 0, CLNORM_INVALID_ARGUMENT, last,
           "7");
    refuse("dtype -1 on rank 0", 0, M_BAD_DTYPE_NEG, -1, 0, CLNORM_INVALID_ARGUMENT, 0, "-1");
    if (M_size > 1) {
        /* Two refusals: the lowest rank's status and message win everywhere. */
        refuse("cols == 0 on the last rank, y past its buffer on rank 0", last, M_BAD_COLS_0, 0,
               M_BAD_Y_PAST_END, CLNORM_OUT_OF_BOUNDS, 0, "y");
        /* A rank's own refusal wins over a disagreement it takes part in: dtype 7 is
           the last rank's refusal, and a lower rank's refusal comes before both. */
        refuse("y past its buffer on rank 0, dtype 7 on the last rank", last, M_BAD_DTYPE_7, 0,
               M_BAD_Y_PAST_END, CLNORM_OUT_OF_BOUNDS, 0, "y");
        refuse("y past its buffer on rank 0, one row fewer on the last rank", last, M_BAD_ROWS,
               0, M_BAD_Y_PAST_END, CLNORM_OUT_OF_BOUNDS, 0, "y");
        refuse("dtype -1 on rank 0, another dtype on the last rank", last, M_BAD_DTYPE, 0,
               M_BAD_DTYPE_NEG, CLNORM_INVALID_ARGUMENT, 0, "-1");
    }
    /* Ranks that disagree (only possible with two or more). */
    if (M_size > 1) {
        refuse("one row fewer on the last rank", last, M_BAD_ROWS, -1, 0,
               CLNORM_INVALID_ARGUMENT, -1, "disagree");
        refuse("another dtype on rank 0", 0, M_BAD_DTYPE, -1, 0, CLNORM_INVALID_ARGUMENT, -1,
               "disagree");
    }
    /* rows == 0 everywhere: a collective no-op that writes nothing. */
    mshard p = {.dt = CLNORM_BF16, .rows = 0, .total = (size_t)M_size * 2, .x = NULL,
                .bad_rank = -1, .bad_rank2 = -1, .stats = 1, .ypad = 1};
    float dummy = 0;
    p.x = &dummy;
    m_run("rows == 0", &p, CLNORM_SUCCESS, -1);
    /* A communicator no collective can run on: refused alike by every rank. */
    clnorm_matrix v = {0};
    CHECK_ST(clnorm_mpi_softmax(MPI_COMM_NULL, T.q, CLNORM_F32, 1, 1, v, v, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "MPI_COMM_NULL"), "MPI_COMM_NULL: message \"%s\"",
          clnorm_last_error());
    /* After all that, the communicator still works: a good call succeeds. */
    refuse("a good call after the refusals", -1, 0, -1, 0, CLNORM_SUCCESS, -1, NULL);
}

/* ---- clnorm_mpi_stats_op ---------------------------------------------------------- */

typedef struct op_pair { MPI_Op op; MPI_Datatype type; clnorm_status st; } op_pair;

static void *get_op(void *arg)
{
    op_pair *o = arg;
    o->st = clnorm_mpi_stats_op(&o->op, &o->type);
    return NULL;
}

/* A random (max, sum) pair: finite, empty, NaN or +inf with a count. */
static void random_pair(rng *r, float *p)
{
    switch (rng_below(r, 8)) {
    case 0: p[0] = -INFINITY; p[1] = 0; break;
    case 1: p[0] = NAN; p[1] = NAN; break;
    case 2: p[0] = INFINITY; p[1] = (float)(1 + rng_below(r, 3)); break;
    case 3: p[0] = (float)rng_range(r, -1e6, 1e6); p[1] = (float)rng_range(r, 1, 1e5); break;
    default: p[0] = (float)rng_range(r, -20, 20); p[1] = (float)rng_range(r, 1, 500); break;
    }
}

void mpi_stats_op(void)
{
    op_pair o[4];
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided == MPI_THREAD_MULTIPLE) {
        /* Created once, whichever thread asks first. */
        pthread_t th[4];
        for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, get_op, &o[i]);
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    } else {
        for (int i = 0; i < 4; i++) get_op(&o[i]);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_ST(o[i].st, CLNORM_SUCCESS);
        CHECK(o[i].op == o[0].op && o[i].type == o[0].type,
              "call %d gave other handles than call 0", i);
    }
    MPI_Op op = o[0].op;
    MPI_Datatype type = o[0].type;
    int tsize = 0, commute = 0;
    MPI_Type_size(type, &tsize);
    MPI_Op_commutative(op, &commute);
    CHECK(tsize == 8 && commute, "pair type of %d bytes (expected 8), op commutative %d", tsize,
          commute);
    CHECK_ST(clnorm_mpi_stats_op(NULL, &type), CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "op"), "NULL op: message \"%s\"", clnorm_last_error());
    CHECK_ST(clnorm_mpi_stats_op(&op, NULL), CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "pair_type"), "NULL pair_type: message \"%s\"",
          clnorm_last_error());

    /* The caller's own reductions: every rank's pairs (its own generator), merged by
       MPI, against clnorm_stats_merge over the ranks in order. */
    enum { N = 1000 };
    float *mine = malloc(2 * N * sizeof(float)), *red = malloc(2 * N * sizeof(float));
    float *all = malloc((size_t)M_size * 2 * N * sizeof(float));
    for (int i = 0; i < N; i++) random_pair(&R, mine + 2 * i);
    MPI_Allgather(mine, 2 * N, MPI_FLOAT, all, 2 * N, MPI_FLOAT, MPI_COMM_WORLD);
    for (int form = 0; form < 3; form++) {
        const char *name = form == 0 ? "MPI_Allreduce" : form == 1 ? "MPI_Allreduce in place"
                                                                  : "MPI_Reduce to the last rank";
        for (int i = 0; i < 2 * N; i++) red[i] = form == 1 ? mine[i] : -7.0f;
        if (form == 0) MPI_Allreduce(mine, red, N, type, op, MPI_COMM_WORLD);
        else if (form == 1) MPI_Allreduce(MPI_IN_PLACE, red, N, type, op, MPI_COMM_WORLD);
        else MPI_Reduce(mine, red, N, type, op, M_size - 1, MPI_COMM_WORLD);
        if (form == 2 && M_rank != M_size - 1) continue;
        size_t bad = 0;
        for (int i = 0; i < N; i++) {
            float m = all[2 * i], l = all[2 * i + 1];
            for (int r = 1; r < M_size; r++)
                clnorm_stats_merge(m, l, all[(size_t)r * 2 * N + 2 * i],
                                   all[(size_t)r * 2 * N + 2 * i + 1], &m, &l);
            /* Two parts merge exactly either way round; more may round differently. */
            const double rel = M_size <= 2 ? 0 : 1e-6;
            int ok = t_close(red[2 * i], m, 0, 0) && t_close(red[2 * i + 1], l, rel, 0);
            if (!ok && !bad++)
                t_fail(__FILE__, __LINE__, "%s: pair %d is (%.9g, %.9g), clnorm_stats_merge "
                       "gives (%.9g, %.9g)", name, i, red[2 * i], red[2 * i + 1], m, l);
        }
        CHECK(bad == 0, "%s: %zu of %d pairs differ from clnorm_stats_merge", name, bad, N);
    }
    free(mine);
    free(red);
    free(all);
}
