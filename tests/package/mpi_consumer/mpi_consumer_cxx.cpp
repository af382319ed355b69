/* An outside C++ MPI program that links clnorm::clnorm_mpi alone: clnorm_mpi.h must
   compile as C++ and must not pull in MPI's C++ bindings, whose library that target
   does not link. Merges one (max, sum) pair per rank with clnorm_mpi_stats_op and
   checks the result against clnorm_stats_merge folded on the host. Needs no device.
   Exits 0 when right on every rank, 1 otherwise. */
#include <clnorm_mpi.h>

#include <cmath>
#include <cstdio>

static void part(int rank, float *m, float *l)
{
    *m = static_cast<float>((rank * 7) % 5) - 2.0f;
    *l = 1.0f + static_cast<float>(rank % 3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Op op;
    MPI_Datatype pair;
    int bad = clnorm_mpi_stats_op(&op, &pair) != CLNORM_SUCCESS;
    float mine[2], all[2] = {0.0f, 0.0f};
    part(rank, &mine[0], &mine[1]);
    if (!bad) bad = MPI_Allreduce(mine, all, 1, pair, op, MPI_COMM_WORLD) != MPI_SUCCESS;
    float m = -INFINITY, l = 0.0f;
    for (int r = 0; r < size; r++) {
        float pm, pl;
        part(r, &pm, &pl);
        clnorm_stats_merge(m, l, pm, pl, &m, &l);
    }
    bad += !(all[0] == m && std::fabs(all[1] - l) <= 1e-6f * l);
    int worst = 0;
    MPI_Allreduce(&bad, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) std::printf("clnorm_mpi from C++ on %d ranks: %s\n", size, worst ? "wrong" : "right");
    MPI_Finalize();
    return worst != 0;
}
