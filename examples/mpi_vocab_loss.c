/* Vocabulary-parallel softmax and cross-entropy loss across MPI ranks.

   A language model's head split by vocabulary (tensor parallelism) leaves each rank
   with the logits of its own slice of the vocabulary for every token. Here each rank
   holds the columns [first, first + n) of a ROWS x VOCAB logit matrix on its device;
   clnorm_mpi_softmax gives every rank its slice of the probabilities and the whole
   rows' statistics (m, l). The loss of token r with target t is
       loss_r = log(l) + m - x[r][t],
   where x[r][t] is held by one rank only: that rank adds its term, and an
   MPI_Allreduce sums the terms. Every rank checks its slice and the mean loss
   against a single-process float64 computation of the whole matrix.

   Build: mpicc mpi_vocab_loss.c -lclnorm_mpi -lclnorm -lOpenCL -lm
   Run:   mpirun -np 2 ./a.out [device spec]     (exit 77: no device on some rank)
          (as root Open MPI wants --allow-run-as-root; --oversubscribe runs more ranks
          than cores) */
#include <clnorm_mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROWS = 6, VOCAB = 5003 };

/* The logits and targets, the same on every rank: x = 8 sin(...) with one large
   logit per row, so that the loss is neither tiny nor huge. */
static float logit(int r, int c)
{
    return (float)(8.0 * sin(0.37 * c + 1.3 * r) + (c == (r * 811 + 17) % VOCAB ? 12.0 : 0.0));
}
static int target(int r) { return (r * 1499 + 3) % VOCAB; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* This rank's slice of the vocabulary: as even as VOCAB allows. */
    const int first = (int)((long)VOCAB * rank / size);
    const int n = (int)((long)VOCAB * (rank + 1) / size) - first;
    float *x = malloc(sizeof(float) * ROWS * n), *y = malloc(sizeof(float) * ROWS * n);
    float m[ROWS], l[ROWS];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < n; c++) x[r * n + c] = logit(r, first + c);

    /* Every rank opens its device; where one has none, all stop alike. */
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    int code = st == CLNORM_DEVICE_NOT_FOUND ? 77 : st ? 1 : 0, worst = 0;
    MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst) {
        if (code == 1) fprintf(stderr, "rank %d: %s\n", rank, clnorm_last_error());
        clnorm_session_destroy(s);
        MPI_Finalize();
        return worst;
    }
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    cl_int err;
    cl_mem xb = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                               sizeof(float) * ROWS * n, x, &err);
    cl_mem yb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(float) * ROWS * n, NULL, &err);
    clnorm_matrix xv = {xb, 0, 0}, yv = {yb, 0, 0};

    /* Collective: every rank passes its own slice, the same dtype and rows. */
    st = clnorm_mpi_softmax(MPI_COMM_WORLD, q, CLNORM_F32, ROWS, (size_t)n, xv, yv, m, l);
    if (!st) err = clEnqueueReadBuffer(q, yb, CL_TRUE, 0, sizeof(float) * ROWS * n, y, 0, NULL,
                                       NULL);
    if (st) fprintf(stderr, "rank %d: %s: %s\n", rank, clnorm_status_string(st),
                    clnorm_last_error());

    /* The loss: each token's target term from the rank that holds it, summed. */
    double part = 0, loss = 0;
    for (int r = 0; r < ROWS && !st; r++) {
        const int t = target(r);
        if (t >= first && t < first + n) part += log(l[r]) + m[r] - x[r * n + (t - first)];
    }
    MPI_Allreduce(&part, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    loss /= ROWS;

    /* The same on one process, in float64: the whole rows' softmax and loss. */
    int wrong = st != CLNORM_SUCCESS || err != CL_SUCCESS;
    double ref_loss = 0;
    for (int r = 0; r < ROWS; r++) {
        double rm = -INFINITY, rl = 0;
        for (int c = 0; c < VOCAB; c++) rm = fmax(rm, logit(r, c));
        for (int c = 0; c < VOCAB; c++) rl += exp(logit(r, c) - rm);
        ref_loss += log(rl) + rm - logit(r, target(r));
        for (int c = 0; c < n && !st; c++) { /* this rank's probabilities, 2e-5 relative */
            double p = exp(logit(r, first + c) - rm) / rl;
            wrong += !(fabs(y[r * n + c] - p) <= 2e-5 * p);
        }
    }
    ref_loss /= ROWS;
    wrong += !(fabs(loss - ref_loss) <= 1e-5 * (1 + fabs(ref_loss)));
    int all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d ranks on %s: mean loss %.6f, single process %.6f; %d values differ\n", size,
               clnorm_session_device_name(s), loss, ref_loss, all_wrong);
    clReleaseMemObject(xb);
    clReleaseMemObject(yb);
    clnorm_session_destroy(s);
    free(x);
    free(y);
    MPI_Finalize();
    return all_wrong != 0;
}
