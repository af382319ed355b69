/* The agreement step of a collective call: every rank learns whether any rank
   failed its local part or passed another dtype or rows, so that all return the
   same status and no rank goes on to a collective the others will not join. */
#include "internal.h"

#include "clnorm_advanced.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The failing rank's status (first byte) and message, as sent to every rank. */
enum { CMPI_MSG = 2048 };

/* dtype travels biased by 2^31, so that every int, negative ones included, keeps its
   order under MPI_MIN and comes back as the value the caller passed. */
#define CMPI_DTYPE_BIAS 2147483648LL

static const char *cmpi_dtype_text(uint64_t biased, char *buf, size_t len)
{
    const long long d = (long long)biased - CMPI_DTYPE_BIAS;
    if (d >= 0 && d <= CLNORM_BF16) return clnorm_dtype_name((clnorm_dtype)d);
    snprintf(buf, len, "%lld", d);
    return buf;
}

clnorm_status cmpi_agree(const char *fn, MPI_Comm comm, int rank, int size,
                         clnorm_status local, clnorm_dtype dtype, size_t rows)
{
    /* One MPI_MIN reduction of fixed-size fields, so that it takes no memory that
       could run out and its cost does not grow with the ranks: the lowest failing
       rank (size where none), and the least and greatest dtype and rows (the
       greatest as the least of their complements). */
    const uint64_t d = (uint64_t)((long long)(int)dtype + CMPI_DTYPE_BIAS), n = (uint64_t)rows;
    uint64_t v[5] = {local ? (uint64_t)rank : (uint64_t)size, d, ~d, n, ~n};
    int err = MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_UINT64_T, MPI_MIN, comm);
    if (err != MPI_SUCCESS) return cmpi_fail_mpi(err, "MPI_Allreduce of the ranks' outcomes");
    char msg[CMPI_MSG + 256];
    /* A rank's own refusal comes first, as the contract says (the lowest-ranked
       failure's status), even where the ranks also disagree: a bad dtype or rows on
       one rank is that rank's refusal before it is a disagreement. */
    if (v[0] < (uint64_t)size) {
        const int failed = (int)v[0];
        unsigned char buf[CMPI_MSG];
        memset(buf, 0, sizeof buf);
        if (rank == failed) {
            buf[0] = (unsigned char)local;
            snprintf((char *)buf + 1, sizeof buf - 1, "%s", clnorm_last_error());
        }
        err = MPI_Bcast(buf, CMPI_MSG, MPI_BYTE, failed, comm);
        if (err != MPI_SUCCESS)
            return cmpi_fail_mpi(err, "MPI_Bcast of the failing rank's message");
        buf[CMPI_MSG - 1] = '\0';
        snprintf(msg, sizeof msg, "%s: rank %d of %d: %s", fn, failed, size,
                 (const char *)buf + 1);
        return clnorm_set_last_error((clnorm_status)buf[0], msg);
    }
    if (v[1] != ~v[2] || v[3] != ~v[4]) {
        /* Only what differs is named: dtype, rows or both. */
        char lo[24], hi[24], own[24], dt[80] = "", rw[80] = "";
        if (v[1] != ~v[2])
            snprintf(dt, sizeof dt, "dtype from %s to %s", cmpi_dtype_text(v[1], lo, sizeof lo),
                     cmpi_dtype_text(~v[2], hi, sizeof hi));
        if (v[3] != ~v[4])
            snprintf(rw, sizeof rw, "rows from %llu to %llu", (unsigned long long)v[3],
                     (unsigned long long)~v[4]);
        snprintf(msg, sizeof msg,
                 "%s: the %d ranks of comm disagree: %s%s%s; every rank must pass the same "
                 "dtype and rows (this rank, %d: dtype %s, rows = %llu)", fn, size, dt,
                 *dt && *rw ? ", " : "", rw, rank, cmpi_dtype_text(d, own, sizeof own),
                 (unsigned long long)n);
        return clnorm_set_last_error(CLNORM_INVALID_ARGUMENT, msg);
    }
    return CLNORM_SUCCESS;
}
