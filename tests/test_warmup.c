/* warmup_builds: after clnorm_warmup, the first call of every operation, element type
   and kind of plan builds no program, whichever program grouping is in force, with
   the disk cache off and on; and with the disk cache on, a second process making the
   same calls builds nothing either (every program comes from the disk). */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */
#include "clnorm_advanced.h"
#include "disk_cache.h"
#include "env_config.h"
#include "profile.h"
#include "test.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb, (void)flag, (void)f;
    return remove(path);
}

/* Runs the helper program's "every" mode (cache_child.c: the calls below, checked) in
   a new process that must build no program; returns its exit status. */
static int second_process(void)
{
    static const char *const args[] = {"every", "no-builds", NULL};
    return t_run_child(args, NULL, NULL, NULL);
}

static unsigned long builds_now(void)
{
    clnorm_cache_stats cs;
    clnorm_cache_stats_get(&cs);
    return cs.builds;
}

/* Enqueues operation op (0 rmsnorm, 1 add_rmsnorm, 2 three-pass, 3 online, 4 auto
   softmax, 5 softmax_stats) on zeroed buffers and waits for it. */
static clnorm_status run_one(int op, clnorm_dtype dt, size_t rows, size_t cols, cl_mem x,
                             cl_mem r, cl_mem y, cl_mem m, cl_mem l)
{
    clnorm_matrix mx = {x, 0, 0}, mr = {r, 0, 0}, my = {y, 0, 0};
    clnorm_status st;
    switch (op) {
    case 0: st = clnorm_rmsnorm(T.q, dt, rows, cols, mx, NULL, my, 1e-5f, 0, NULL, NULL); break;
    case 1:
        st = clnorm_add_rmsnorm(T.q, dt, rows, cols, mx, mr, 1, NULL, my, 1e-5f, 0, NULL, NULL);
        break;
    case 5: st = clnorm_softmax_stats(T.q, dt, rows, cols, mx, m, l, 0, NULL, NULL); break;
    default:
        st = clnorm_softmax(T.q, dt, rows, cols, mx, my,
                            op == 2 ? CLNORM_SOFTMAX_THREE_PASS
                            : op == 3 ? CLNORM_SOFTMAX_ONLINE : CLNORM_SOFTMAX_AUTO,
                            0, NULL, NULL);
    }
    if (!st) CHECK_CL(clFinish(T.q));
    return st;
}

void test_warmup_builds(void)
{
    static const char *const op_names[] = {"rmsnorm", "add_rmsnorm", "softmax three-pass",
                                           "softmax online", "softmax auto", "softmax_stats"};
    static const char *const dt_names[] = {"f32", "f16", "bf16"};
    /* Short rows, a few hundred typical ones, rows long enough for the split plan,
       and rows of two items (PoCL 4+ runs those on the local path); the helper's
       "every" mode makes the same calls. */
    const size_t shapes[][2] = {{3, 5}, {256, 128}, {2, 70000}, {3, 2}};
    size_t most = 0;
    for (size_t s = 0; s < COUNT_OF(shapes); s++)
        if (shapes[s][0] * shapes[s][1] > most) most = shapes[s][0] * shapes[s][1];
    cl_int err;
    cl_mem buf[5];
    size_t sizes[5] = {most * 4, most * 4, most * 4, 256 * 4, 256 * 4};
    for (int i = 0; i < 5; i++) {
        buf[i] = clCreateBuffer(T.ctx, CL_MEM_READ_WRITE, sizes[i], NULL, &err);
        if (!CHECK(err == CL_SUCCESS, "clCreateBuffer(%zu) = %d", sizes[i], (int)err)) return;
        const unsigned char zero = 0;
        CHECK_CL(clEnqueueFillBuffer(T.q, buf[i], &zero, 1, 0, sizes[i], 0, NULL, NULL));
    }
    CHECK_CL(clFinish(T.q));

    static const char *const groupings[] = {"one", "all"};
    for (int disk = 0; disk < 2; disk++)
    for (size_t g = 0; g < COUNT_OF(groupings); g++) {
        char dir[] = "/tmp/clnorm-warm-XXXXXX";
        if (disk && !CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno))) continue;
        CHECK_ST(t_config("CLNORM_CACHE_DIR", disk ? dir : "off"), CLNORM_SUCCESS);
        CHECK_ST(t_config("CLNORM_PROGRAMS", groupings[g]), CLNORM_SUCCESS);
        clnorm_release_cache(T.ctx);
        double t0 = t_now();
        CHECK_ST(clnorm_warmup(T.q), CLNORM_SUCCESS);
        const unsigned long warm = builds_now();
        NOTE("disk cache %s, programs=%s: warm-up %.2f s", disk ? "on" : "off", groupings[g],
             t_now() - t0);
        for (int dt = CLNORM_F32; dt <= CLNORM_BF16; dt++)
            for (size_t s = 0; s < COUNT_OF(shapes); s++)
                for (int op = 0; op < 6; op++) {
                    const unsigned long before = builds_now();
                    CHECK_ST(run_one(op, (clnorm_dtype)dt, shapes[s][0], shapes[s][1], buf[0],
                                     buf[1], buf[2], buf[3], buf[4]),
                             CLNORM_SUCCESS);
                    CHECK(builds_now() == before,
                          "disk %d, programs=%s: %s %s %zux%zu built %lu program(s) after "
                          "warm-up", disk, groupings[g], op_names[op], dt_names[dt],
                          shapes[s][0], shapes[s][1], builds_now() - before);
                }
        CHECK(builds_now() == warm, "disk %d, programs=%s: %lu builds after warm-up", disk,
              groupings[g], builds_now() - warm);
        if (!disk) continue;
        /* The programs that ran are on the disk now (PoCL stores a program of one
           kernel after its first run, at the release at the latest), so a second
           process builds none: where the disk cache keeps programs (every program
           with one kernel per program; all of them at their build off PoCL). */
        clnorm_release_cache(T.ctx);
        const cln_profile *p = NULL;
        CHECK_ST(cln_profile_get(T.dev, &p), CLNORM_SUCCESS);
        if (p && cln_disk_reads_binaries(p) && (g == 0 || cln_disk_wants_binaries(p))) {
            const int rc = second_process();
            CHECK(rc == 0, "programs=%s: a second process on the warm disk cache: exit "
                  "status %d (4: it built programs)", groupings[g], rc);
        } else {
            NOTE("programs=%s: the disk cache keeps no such programs on this device",
                 groupings[g]);
        }
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    for (int i = 0; i < 5; i++) clReleaseMemObject(buf[i]);
}
