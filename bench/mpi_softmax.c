/* clnorm_mpi_softmax against clnorm_softmax on the same total bytes: the rows' columns
   split evenly over the ranks, against one process holding whole rows. Built where
   clnorm_mpi is; BENCHMARKS.md ('Softmax across MPI ranks') has the numbers.

     mpirun -np 2 mpi_softmax [--rows R] [--cols C] [--dtype f32|f16|bf16] [--reps N]
                              [--device SPEC]

   Reported by rank 0, medians over N calls each (after two untimed ones):
   - one process: clnorm_softmax of rows x cols on rank 0 alone, while the other
     ranks wait without spinning;
   - MPI: clnorm_mpi_softmax of each rank's rows x cols/ranks, timed from a barrier
     to the last rank's return;
   - the ratio of their rates, counting 2 x rows x cols elements (read and written)
     for both;
   - communication: the MPI_Allreduce of the rows' (max, sum) pairs with
     clnorm_mpi_stats_op, and the agreement's small MPI_Allreduce (five 64-bit
     integers), per call and per row. */
#define _POSIX_C_SOURCE 200809L
#include <clnorm_advanced.h>
#include <clnorm_mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* A barrier that sleeps instead of spinning, so that waiting ranks leave the cores
   to the one working. */
static void quiet_barrier(void)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) nanosleep(&(struct timespec){0, 200000}, NULL);
    }
}

static int check(clnorm_status st, const char *what)
{
    if (st) fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    return st != CLNORM_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t rows = 64, cols = 128256;
    int reps = 20;
    clnorm_dtype dt = CLNORM_F32;
    const char *spec = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rows")) rows = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--cols")) cols = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--device")) spec = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype"))
            dt = !strcmp(argv[i + 1], "f16") ? CLNORM_F16 : !strcmp(argv[i + 1], "bf16") ? CLNORM_BF16 : CLNORM_F32;
    }
    if (reps < 1) reps = 1;
    const size_t es = dt == CLNORM_F32 ? 4 : 2;
    const size_t mine = cols / (size_t)size + ((size_t)rank < cols % (size_t)size);
    clnorm_session *s = NULL;
    if (check(clnorm_session_create(spec, &s), "clnorm_session_create")) MPI_Abort(MPI_COMM_WORLD, 1);
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    /* Inputs: a ramp, so that every row has work; the values do not matter here. */
    const size_t nmax = rows * cols;
    unsigned char *host = calloc(nmax, es);
    cl_int err;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nmax * es, host, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nmax * es, NULL, &err);
    clnorm_matrix xv = {x, 0, 0}, yv = {y, 0, 0};
    double *t = malloc((size_t)reps * sizeof *t);

    /* One process, whole rows. */
    double single = 0;
    if (rank == 0) {
        for (int i = -2; i < reps; i++) {
            double t0 = now();
            if (check(clnorm_softmax(q, dt, rows, cols, xv, yv, CLNORM_SOFTMAX_AUTO, 0, NULL, NULL),
                      "clnorm_softmax"))
                MPI_Abort(MPI_COMM_WORLD, 1);
            clFinish(q);
            if (i >= 0) t[i] = now() - t0;
        }
        single = median(t, reps);
    }
    quiet_barrier();

    /* The ranks' shards through clnorm_mpi_softmax. */
    for (int i = -2; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (check(clnorm_mpi_softmax(MPI_COMM_WORLD, q, dt, rows, mine, xv, yv, NULL, NULL),
                  "clnorm_mpi_softmax"))
            MPI_Abort(MPI_COMM_WORLD, 1);
        double mine_t = now() - t0, last = 0;
        MPI_Allreduce(&mine_t, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) t[i] = last;
    }
    const double sharded = median(t, reps);

    /* The collectives alone, on the same rows. */
    MPI_Op op;
    MPI_Datatype pair;
    if (check(clnorm_mpi_stats_op(&op, &pair), "clnorm_mpi_stats_op")) MPI_Abort(MPI_COMM_WORLD, 1);
    float *pairs = malloc(2 * rows * sizeof(float));
    for (size_t r = 0; r < rows; r++) pairs[2 * r] = 0, pairs[2 * r + 1] = 1;
    const int creps = 200;
    double *c = malloc(creps * sizeof *c), *g = malloc(creps * sizeof *g);
    for (int i = -10; i < creps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        MPI_Allreduce(MPI_IN_PLACE, pairs, (int)rows, pair, op, MPI_COMM_WORLD);
        double t1 = now();
        unsigned long long v[5] = {0, 0, 0, 0, 0};
        MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        double t2 = now(), ct[2] = {t1 - t0, t2 - t1}, worst[2];
        MPI_Allreduce(ct, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) c[i] = worst[0], g[i] = worst[1];
    }
    const double comm = median(c, creps), agree = median(g, creps);

    if (rank == 0) {
        const double gb = 2.0 * (double)(rows * cols * es) / 1e9;
        printf("device %s, %d ranks, %zu x %zu %s (%zu columns a rank), medians of %d\n",
               clnorm_session_device_name(s), size, rows, cols, clnorm_dtype_name(dt),
               cols / (size_t)size, reps);
        printf("one process  clnorm_softmax       %9.3f ms  %7.2f GB/s\n", single * 1e3, gb / single);
        printf("%d ranks      clnorm_mpi_softmax   %9.3f ms  %7.2f GB/s  (%.2fx one process)\n",
               size, sharded * 1e3, gb / sharded, single / sharded);
        printf("stats allreduce  %8.1f us a call, %6.3f us a row (%zu rows)\n", comm * 1e6,
               comm * 1e6 / (double)rows, rows);
        printf("agreement        %8.1f us a call\n", agree * 1e6);
    }
    free(pairs);
    free(c);
    free(g);
    free(t);
    free(host);
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clnorm_session_destroy(s);
    MPI_Finalize();
    return 0;
}
