/* An outside MPI program that finds clnorm_mpi through its installed CMake package
   or pkg-config file: softmax of rows whose columns are split over the ranks, on the
   device named by argv[1], checked against a double-precision reference of the whole
   rows. Exits 0 when right on every rank, 77 when some rank has no device, 1
   otherwise. */
#include <clnorm_mpi.h>
#include <math.h>
#include <stdio.h>

#define ROWS 3
#define COLS 5 /* per rank */

static float value(int r, int c) { return (float)((r * 31 + c * 17) % 13 - 6) * 0.5f; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float x[ROWS * COLS], y[ROWS * COLS], m[ROWS], l[ROWS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = value(i / COLS, rank * COLS + i % COLS);
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    int code = st == CLNORM_DEVICE_NOT_FOUND ? 77 : st ? 1 : 0, worst = 0;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int bad = 0;
    if (!worst) {
        cl_int err;
        cl_mem xb = clCreateBuffer(clnorm_session_context(s), CL_MEM_COPY_HOST_PTR, sizeof x, x,
                                   &err);
        clnorm_matrix v = {xb, 0, 0};
        st = clnorm_mpi_softmax(MPI_COMM_WORLD, clnorm_session_queue(s), CLNORM_F32, ROWS, COLS,
                                v, v, m, l);
        if (!st) clEnqueueReadBuffer(clnorm_session_queue(s), xb, CL_TRUE, 0, sizeof y, y, 0,
                                     NULL, NULL);
        else fprintf(stderr, "%s: %s\n", clnorm_status_string(st), clnorm_last_error());
        clReleaseMemObject(xb);
        bad = st != CLNORM_SUCCESS;
        for (int r = 0; r < ROWS && !st; r++) {
            double rm = -INFINITY, rl = 0;
            for (int c = 0; c < size * COLS; c++) rm = fmax(rm, value(r, c));
            for (int c = 0; c < size * COLS; c++) rl += exp(value(r, c) - rm);
            bad += m[r] != rm;
            for (int c = 0; c < COLS; c++) {
                double want = exp(value(r, rank * COLS + c) - rm) / rl;
                bad += !(fabs(y[r * COLS + c] - want) <= 1e-5 * want);
            }
        }
        MPI_Op op;
        MPI_Datatype pair;
        bad += clnorm_mpi_stats_op(&op, &pair) != CLNORM_SUCCESS;
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !worst) printf("clnorm_mpi on %d ranks: %d wrong\n", size, all);
    clnorm_session_destroy(s);
    MPI_Finalize();
    return worst ? worst : all != 0;
}
