/* The (max, sum) pair datatype and the MPI_Op that merges pairs as
   clnorm_stats_merge does: created once per MPI session, freed at MPI_Finalize. */
#include "internal.h"

#include "clnorm_advanced.h"

#include <pthread.h>

static pthread_mutex_t cmpi_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Op cmpi_op = MPI_OP_NULL;
static MPI_Datatype cmpi_type = MPI_DATATYPE_NULL;
static int cmpi_keyval = MPI_KEYVAL_INVALID;

/* inout[i] <- merge(in[i], inout[i]) for each pair. The merge is commutative (a
   maximum and a sum of two weighted terms), so MPI may combine in any order. */
static void cmpi_merge_pairs(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const float *a = in;
    float *b = inout;
    for (int i = 0; i < *len; i++)
        clnorm_stats_merge(a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1], &b[2 * i],
                           &b[2 * i + 1]);
}

/* Runs at the start of MPI_Finalize, when MPI_COMM_SELF's attributes are deleted
   and MPI is still usable: frees the op and the type. */
static int cmpi_on_finalize(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)attr;
    (void)extra;
    pthread_mutex_lock(&cmpi_lock);
    if (cmpi_op != MPI_OP_NULL) MPI_Op_free(&cmpi_op);
    if (cmpi_type != MPI_DATATYPE_NULL) MPI_Type_free(&cmpi_type);
    if (cmpi_keyval != MPI_KEYVAL_INVALID) MPI_Comm_free_keyval(&cmpi_keyval);
    cmpi_op = MPI_OP_NULL;
    cmpi_type = MPI_DATATYPE_NULL;
    cmpi_keyval = MPI_KEYVAL_INVALID;
    pthread_mutex_unlock(&cmpi_lock);
    return MPI_SUCCESS;
}

/* Creates the type, the op and the finalize hook; on a failure frees what it made. */
static clnorm_status cmpi_create(void)
{
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    int keyval = MPI_KEYVAL_INVALID;
    clnorm_status st = CLNORM_SUCCESS;
    int err = MPI_Type_contiguous(2, MPI_FLOAT, &type);
    if (err != MPI_SUCCESS) {
        st = cmpi_fail_mpi(err, "MPI_Type_contiguous(2, MPI_FLOAT)");
        goto fail;
    }
    if ((err = MPI_Type_commit(&type)) != MPI_SUCCESS) {
        st = cmpi_fail_mpi(err, "MPI_Type_commit");
        goto fail;
    }
    if ((err = MPI_Op_create(cmpi_merge_pairs, 1, &op)) != MPI_SUCCESS) {
        st = cmpi_fail_mpi(err, "MPI_Op_create");
        goto fail;
    }
    err = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cmpi_on_finalize, &keyval, NULL);
    if (err != MPI_SUCCESS) {
        st = cmpi_fail_mpi(err, "MPI_Comm_create_keyval");
        goto fail;
    }
    if ((err = MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL)) != MPI_SUCCESS) {
        st = cmpi_fail_mpi(err, "MPI_Comm_set_attr(MPI_COMM_SELF)");
        goto fail;
    }
    cmpi_type = type;
    cmpi_op = op;
    cmpi_keyval = keyval;
    return CLNORM_SUCCESS;
fail:
    if (keyval != MPI_KEYVAL_INVALID) MPI_Comm_free_keyval(&keyval);
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
    if (type != MPI_DATATYPE_NULL) MPI_Type_free(&type);
    return st;
}

clnorm_status clnorm_mpi_stats_op(MPI_Op *op, MPI_Datatype *pair_type)
{
    if (!op || !pair_type)
        return clnorm_set_last_error(CLNORM_INVALID_ARGUMENT,
                                     !op ? "clnorm_mpi_stats_op: op is NULL"
                                         : "clnorm_mpi_stats_op: pair_type is NULL");
    clnorm_status st = cmpi_check_mpi("clnorm_mpi_stats_op");
    if (st) return st;
    pthread_mutex_lock(&cmpi_lock);
    if (cmpi_op == MPI_OP_NULL) st = cmpi_create();
    if (!st) {
        *op = cmpi_op;
        *pair_type = cmpi_type;
    }
    pthread_mutex_unlock(&cmpi_lock);
    return st;
}
