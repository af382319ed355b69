/* The runner of the clnorm_mpi cases, started under mpirun on every rank:

     clnorm_mpi_tests NAME     exit 0 pass, 1 fail, 77 skipped (no device)

   Each rank opens a session on $CLNORM_DEVICE (the suite sets pocl), runs the case,
   and the failures of every rank are summed so that every rank exits alike. One seed
   per run, from rank 0, shared by all (CLNORM_TEST_SEED reproduces it). */
#define _POSIX_C_SOURCE 200809L
#include "mpi_test.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct mcase { const char *name; void (*fn)(void); } mcase;
#define MPI_ENTRY_(name) {#name, mpi_##name},
static const mcase cases[] = { MPI_CASES(MPI_ENTRY_) };
#undef MPI_ENTRY_

test_env T;
rng MR;
int M_rank, M_size;
clnorm_status M_before_init_op, M_before_init_softmax;
static atomic_int g_failures;
static char g_where[256] = "no device";
enum { MAX_PRINTED = 100 };

static void vreport(const char *file, int line, const char *cond, const char *fmt, va_list ap)
{
    int n = atomic_fetch_add(&g_failures, 1);
    if (n >= MAX_PRINTED) return;
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    printf("%s:%d: FAIL [%s]: %s%s%s%s\n", file, line, g_where, cond ? "CHECK(" : "",
           cond ? cond : "", cond ? ") " : "", msg);
    fflush(stdout);
}

void t_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(file, line, NULL, fmt, ap);
    va_end(ap);
}

void t_fail_check(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(file, line, cond, fmt, ap);
    va_end(ap);
}

void t_note(const char *fmt, ...)
{
    if (M_rank) return; /* one note per run, from rank 0 */
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("  note: %s\n", msg);
    fflush(stdout);
}

int t_failures(void) { return atomic_load(&g_failures); }

int t_check_status(const char *file, int line, const char *expr, clnorm_status got,
                   clnorm_status want)
{
    if (got == want) return 1;
    char err[2048];
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    t_fail(file, line, "%s returned %s, expected %s; last error: \"%s\"", expr,
           clnorm_status_string(got), clnorm_status_string(want), err);
    return 0;
}

int t_check_cl(const char *file, int line, const char *expr, cl_int err)
{
    if (err == CL_SUCCESS) return 1;
    t_fail(file, line, "%s returned OpenCL error %d", expr, (int)err);
    return 0;
}

int m_failures_all(void)
{
    int mine = t_failures(), all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    /* Before MPI_Init, both functions must refuse with CLNORM_UNSUPPORTED. */
    MPI_Op op0;
    MPI_Datatype type0;
    M_before_init_op = clnorm_mpi_stats_op(&op0, &type0);
    clnorm_matrix none = {0};
    M_before_init_softmax = clnorm_mpi_softmax(MPI_COMM_WORLD, NULL, CLNORM_F32, 1, 1, none,
                                               none, NULL, NULL);
    /* Threads may race to create the stats op where MPI allows it (stats_op case). */
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &M_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &M_size);
    const mcase *c = NULL;
    for (size_t i = 0; argc == 2 && i < COUNT_OF(cases); i++)
        if (!strcmp(cases[i].name, argv[1])) c = &cases[i];
    if (!c) {
        if (!M_rank) printf("usage: mpirun -np N clnorm_mpi_tests NAME (a case of mpi_test.h)\n");
        MPI_Finalize();
        return 2;
    }
    /* One seed, rank 0's, for every rank. */
    unsigned long long seed = 0;
    const char *env_seed = getenv("CLNORM_TEST_SEED");
    if (!M_rank)
        seed = env_seed && *env_seed ? strtoull(env_seed, NULL, 0)
                                     : (unsigned long long)time(NULL) ^ ((unsigned long long)clock() << 32);
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MR = rng_make(seed);
    R = rng_make(seed ^ (0x51ED27ull * (unsigned long long)(M_rank + 1)));

    /* Every rank opens its device; where any rank has none, all skip. */
    const char *spec = getenv("CLNORM_DEVICE");
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    int mine = st == CLNORM_DEVICE_NOT_FOUND ? 77 : st ? 1 : 0, worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst) {
        if (!M_rank) printf("%s: %s on some rank (device %s)\n", c->name,
                            worst == 77 ? "SKIP: no device" : "FAIL: no session",
                            spec ? spec : "default");
        if (mine == 1) printf("rank %d: %s\n", M_rank, clnorm_last_error());
        clnorm_session_destroy(s);
        MPI_Finalize();
        return worst;
    }
    T.spec = spec;
    T.s = s;
    T.ctx = clnorm_session_context(s);
    T.q = clnorm_session_queue(s);
    T.dev_name = clnorm_session_device_name(s);
    clGetCommandQueueInfo(T.q, CL_QUEUE_DEVICE, sizeof T.dev, &T.dev, NULL);
    snprintf(g_where, sizeof g_where, "rank %d of %d, %s", M_rank, M_size, T.dev_name);
    if (!M_rank)
        printf("== %s on %d rank%s, device \"%s\", seed %llu (CLNORM_TEST_SEED=%llu reproduces)\n",
               c->name, M_size, M_size == 1 ? "" : "s", T.dev_name, seed, seed);
    fflush(stdout);
    double t0 = t_now();
    c->fn();
    int failed = m_failures_all();
    if (!M_rank)
        printf("== %s: %s on %d rank%s, %d failed assertion%s, %.2f s\n", c->name,
               failed ? "FAILED" : "passed", M_size, M_size == 1 ? "" : "s", failed,
               failed == 1 ? "" : "s", t_now() - t0);
    clnorm_session_destroy(s);
    MPI_Finalize();
    /* After MPI_Finalize, clnorm_mpi_stats_op must refuse again. */
    MPI_Op op1;
    MPI_Datatype type1;
    st = clnorm_mpi_stats_op(&op1, &type1);
    if (st != CLNORM_UNSUPPORTED || !t_mentions(clnorm_last_error(), "finalised")) {
        printf("rank %d: clnorm_mpi_stats_op after MPI_Finalize returned %s: %s\n", M_rank,
               clnorm_status_string(st), clnorm_last_error());
        failed++;
    }
    return failed ? 1 : 0;
}
