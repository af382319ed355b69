/* MPI's state and a communicator's fitness for a collective, as statuses. */
#include "internal.h"

#include "clnorm_advanced.h"

#include <stdio.h>

clnorm_status cmpi_fail_mpi(int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING + 1] = "";
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
    char msg[MPI_MAX_ERROR_STRING + 256];
    snprintf(msg, sizeof msg, "%s failed: %s (MPI error %d)", what, text, err);
    return clnorm_set_last_error(CLNORM_UNSUPPORTED, msg);
}

clnorm_status cmpi_check_mpi(const char *fn)
{
    /* Both queries may be called before MPI_Init and after MPI_Finalize. */
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    char msg[256];
    if (!init || fin) {
        snprintf(msg, sizeof msg, "%s: MPI is %s", fn,
                 fin ? "finalised (MPI_Finalize has been called)"
                     : "not initialised (call MPI_Init or MPI_Init_thread first)");
        return clnorm_set_last_error(CLNORM_UNSUPPORTED, msg);
    }
    return CLNORM_SUCCESS;
}

clnorm_status cmpi_check_comm(const char *fn, MPI_Comm comm, int *rank, int *size)
{
    clnorm_status st = cmpi_check_mpi(fn);
    if (st) return st;
    char msg[256];
    if (comm == MPI_COMM_NULL) {
        snprintf(msg, sizeof msg, "%s: comm is MPI_COMM_NULL", fn);
        return clnorm_set_last_error(CLNORM_INVALID_ARGUMENT, msg);
    }
    int inter = 0, err = MPI_Comm_test_inter(comm, &inter);
    if (err != MPI_SUCCESS) return cmpi_fail_mpi(err, "MPI_Comm_test_inter(comm)");
    if (inter) {
        /* Every rank of an intercommunicator sees it as one, so all refuse alike. */
        snprintf(msg, sizeof msg, "%s: comm is an intercommunicator; the shards' ranks "
                 "must share an intracommunicator", fn);
        return clnorm_set_last_error(CLNORM_INVALID_ARGUMENT, msg);
    }
    if ((err = MPI_Comm_rank(comm, rank)) != MPI_SUCCESS)
        return cmpi_fail_mpi(err, "MPI_Comm_rank(comm)");
    if ((err = MPI_Comm_size(comm, size)) != MPI_SUCCESS)
        return cmpi_fail_mpi(err, "MPI_Comm_size(comm)");
    return CLNORM_SUCCESS;
}
