/*
 * clnorm_mpi: softmax of rows sharded by columns across the ranks of an MPI
 * communicator, and the (max, sum) reduction behind it for the caller's own
 * collectives. Library clnorm_mpi (CMake target clnorm::clnorm_mpi, pkg-config
 * clnorm-mpi), built where an MPI implementation is found.
 */
#ifndef CLNORM_MPI_H
#define CLNORM_MPI_H

#include "clnorm.h"
/* This header uses MPI's C API only. Without these, Open MPI's and MPICH's mpi.h
   declare their C++ bindings in a C++ program, whose library clnorm_mpi does not
   link: a C++ program linking clnorm_mpi alone would fail to link. */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! clnorm_mpi_softmax() :
 *  Softmax over the column shards of every rank of comm, concatenated in rank order;
 *  each rank passes its own shard on its own queue. Collective: every rank of comm
 *  calls it with the same dtype and rows.
 *  Borrows: x and y (views of dtype on queue's context), for the call; row_max,
 *           row_sum: NULL, or host arrays of rows floats receiving the whole rows'
 *           statistics on that rank.
 *  Returns: CLNORM_SUCCESS once y is written on every rank. Blocks.
 *  Refuses: where any rank's request is refused, every rank returns that status (the
 *           lowest-ranked failure's) with its message, and no rank writes y: no rank
 *           is left waiting. Where no rank refuses its own request, ranks that
 *           disagree on dtype or rows are refused with CLNORM_INVALID_ARGUMENT.
 *           Before any collective, on the calling rank alone: CLNORM_UNSUPPORTED
 *           before MPI_Init or after MPI_Finalize, and CLNORM_INVALID_ARGUMENT for
 *           comm MPI_COMM_NULL or an intercommunicator (every rank of one sees it
 *           so). A failed MPI call during the collective returns
 *           CLNORM_UNSUPPORTED with MPI's message. */
CLNORM_API clnorm_status clnorm_mpi_softmax(MPI_Comm comm, cl_command_queue queue,
                                            clnorm_dtype dtype, size_t rows, size_t cols,
                                            clnorm_matrix x, clnorm_matrix y,
                                            float *row_max, float *row_sum);

/*! clnorm_mpi_stats_op() :
 *  An MPI datatype of one (max, sum) float pair and a commutative MPI_Op that merges
 *  arrays of them as clnorm_stats_merge does, for the caller's own reductions.
 *  Created on first call; valid until MPI_Finalize.
 *  Borrows: op and pair_type, written on success.
 *  Refuses: NULL pointers (CLNORM_INVALID_ARGUMENT); MPI not initialised or failing
 *           (CLNORM_UNSUPPORTED). */
CLNORM_API clnorm_status clnorm_mpi_stats_op(MPI_Op *op, MPI_Datatype *pair_type);

#ifdef __cplusplus
}
#endif
#endif /* CLNORM_MPI_H */
