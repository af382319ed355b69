/* What the files of clnorm_mpi share: MPI failures as statuses, the communicator
   check, and the agreement of every rank on one call's local outcome. */
#ifndef CLNORM_MPI_INTERNAL_H
#define CLNORM_MPI_INTERNAL_H

#include "clnorm_mpi.h"

#define CMPI_HIDDEN __attribute__((visibility("hidden")))

/* Records "<what>: <MPI error string>" as the thread's last error; returns
   CLNORM_UNSUPPORTED, the status clnorm_mpi gives a failing MPI. */
CMPI_HIDDEN clnorm_status cmpi_fail_mpi(int err, const char *what);

/* UNSUPPORTED unless MPI is initialised and not finalised. */
CMPI_HIDDEN clnorm_status cmpi_check_mpi(const char *fn);

/* Checks that comm can carry a collective (MPI running, comm neither MPI_COMM_NULL
   nor an intercommunicator) and gives this rank and the size. A refusal here is
   local: no rank of such a comm can reach the others. */
CMPI_HIDDEN clnorm_status cmpi_check_comm(const char *fn, MPI_Comm comm, int *rank, int *size);

/* One collective over comm that combines every rank's local status, dtype and rows.
   Returns the same on every rank: the status of the lowest-ranked failure, whose
   clnorm_last_error() message every rank then carries, prefixed with that rank; else
   CLNORM_INVALID_ARGUMENT where ranks disagree on dtype or rows; CLNORM_SUCCESS
   where every rank succeeded and all agree. */
CMPI_HIDDEN clnorm_status cmpi_agree(const char *fn, MPI_Comm comm, int rank, int size,
                                     clnorm_status local, clnorm_dtype dtype, size_t rows);

#endif
