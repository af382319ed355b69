/* fast_path_fallback and probe_checks: a fast reduction path (cl_khr_subgroups, NVIDIA
   shuffles) whose program does not build, or whose probe computes a wrong answer, is
   dropped for the device, remembered in memory and in the disk cache's probe record,
   and every call runs on the local path. The failures are injected (src/faults.h);
   on devices without a fast path the "subgroups" and "trust-probes" faults make the
   profile claim one, whose program then really fails to build. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "clnorm_advanced.h"
#include "faults.h"
#include "probe.h"
#include "profile.h"
#include "program_build.h"
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

static char *fresh_dir(void)
{
    char *d = strdup("/tmp/clnorm-fb-XXXXXX");
    if (!mkdtemp(d)) t_fail(__FILE__, __LINE__, "mkdtemp: %s", strerror(errno));
    return d;
}

/* Injects the faults of list (into this process and its children) and takes a new
   profile of the device under them. */
static void inject(const char *list)
{
    t_setenv("CLNORM_TEST_FAULTS", list);
    CHECK(cln_faults_set(list) == 0, "faults \"%s\" refused", list ? list : "(none)");
    CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
}

static clnorm_reduction device_path(void)
{
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS))
        return CLNORM_REDUCTION_AUTO;
    return info.reduction;
}

/* Every operation in every dtype on two shapes, checked; counts the calls that ran on
   another path than the local one. */
static int every_op(void)
{
    static const size_t shapes[][2] = {{7, 33}, {2, 4097}};
    int off_local = 0;
    for (int dt = CLNORM_F32; dt <= CLNORM_BF16; dt++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++)
            for (int op = 0; op < OP_COUNT; op++) {
                op_args a;
                float *x, *g;
                make_problem(&R, &a, (top)op, shapes[s][0], shapes[s][1], &x, &g);
                a.dt = (clnorm_dtype)dt;
                clnorm_plan_info pi;
                if (check_op(&a, CLNORM_SUCCESS) == CLNORM_SUCCESS && clnorm_last_plan(&pi) &&
                    pi.reduction != CLNORM_REDUCTION_LOCAL) {
                    off_local++;
                    NOTE("%s %s %zux%zu ran on the %s path", op_name((top)op), dt_name(a.dt),
                         a.rows, a.cols, clnorm_reduction_name(pi.reduction));
                }
                free(x);
                free(g);
            }
    return off_local;
}

void test_fast_path_fallback(void)
{
    const clnorm_reduction had = device_path();
    char *dir = fresh_dir(), trace_dir[64], err_file[128];
    t_config("CLNORM_CACHE_DIR", dir);
    t_config("CLNORM_PROGRAMS", "all");
    inject(had != CLNORM_REDUCTION_LOCAL ? "break-fast-path"
                                         : "subgroups,trust-probes,break-fast-path");
    const clnorm_reduction claimed = device_path();
    CHECK(claimed != CLNORM_REDUCTION_LOCAL, "the injected profile has no fast path");
    NOTE("device's path %s; with the injected faults %s", clnorm_reduction_name(had),
         clnorm_reduction_name(claimed));

    /* The first call tries the fast path, whose program fails; it and every later call
       run on the local path, with right results. */
    const unsigned long f0 = cln_program_build_failures();
    CHECK(every_op() == 0, "calls ran off the local path");
    CHECK(cln_program_build_failures() - f0 == 1, "%lu builds refused, expected 1 (the fast "
          "path's first)", cln_program_build_failures() - f0);
    CHECK(device_path() == CLNORM_REDUCTION_LOCAL, "the profile still has the %s path",
          clnorm_reduction_name(device_path()));

    /* Remembered: the same calls again build nothing, and nothing is retried. */
    const unsigned long f1 = cln_program_build_failures(), b1 = cln_program_builds();
    every_op();
    CHECK(cln_program_build_failures() == f1 && cln_program_builds() == b1,
          "the second round built %lu programs and had %lu refused",
          cln_program_builds() - b1, cln_program_build_failures() - f1);
    CHECK_ST(clnorm_warmup(T.q), CLNORM_SUCCESS);
    CHECK(cln_program_build_failures() == f1, "warm-up retried the dropped path");

    /* Forcing the dropped path is refused as UNSUPPORTED, saying why, and writes
       nothing (run_op checks the buffers). */
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.reduction = CLNORM_REDUCTION_SUBGROUP;
    CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_SUCCESS);
    op_args a;
    float *x, *g;
    make_problem(&R, &a, OP_SOFTMAX_ONLINE, 3, 100, &x, &g);
    check_op(&a, CLNORM_UNSUPPORTED);
    CHECK(t_mentions(clnorm_last_error(), "dropped"), "forced subgroup refused with \"%s\"",
          clnorm_last_error());
    free(x);
    free(g);
    clnorm_set_thread_hints(NULL);

    /* A new process reads the probe record: every call local, no probe run, no build
       refused. */
    const char *const local[] = {"every", "local", "no-retry", NULL};
    int rc = t_run_child(local, NULL, NULL, NULL);
    CHECK(rc == 0, "a new process with the probe record: exit status %d", rc);

    /* A new process on a fresh folder tries again; CLNORM_TRACE shows the build log. */
    snprintf(trace_dir, sizeof trace_dir, "%s/fresh", dir);
    snprintf(err_file, sizeof err_file, "%s/stderr.txt", dir);
    t_setenv("CLNORM_CACHE_DIR", trace_dir);
    t_setenv("CLNORM_TRACE", "1");
    const char *const traced[] = {"every", "local", NULL, NULL};
    rc = t_run_child(traced, err_file, NULL, NULL);
    CHECK(rc == 0, "a new process on a fresh folder: exit status %d", rc);
    FILE *f = fopen(err_file, "r");
    char text[16384] = "";
    if (CHECK(f != NULL, "no stderr file %s", err_file)) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    CHECK(strstr(text, "did not build") && strstr(text, "CLN_BREAK_FAST_PATH"),
          "the trace does not show the dropped path and its build log: \"%.400s\"", text);

    inject(NULL);
    t_env_restore();
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

void test_probe_checks(void)
{
    const clnorm_reduction had = device_path();
    char *dir = fresh_dir();
    t_config("CLNORM_CACHE_DIR", dir);
    const char *claim = had != CLNORM_REDUCTION_LOCAL ? "" : "subgroups,";
    char list[64];
    snprintf(list, sizeof list, "%sprobe-wrong", claim);

    /* A probe that sees a wrong answer drops the path, and the record keeps it so: a
       second profile reads it instead of probing again. */
    const unsigned long p0 = cln_probe_count();
    inject(list);
    CHECK(cln_probe_count() == p0 + 1, "%lu probe runs, expected 1", cln_probe_count() - p0);
    CHECK(device_path() == CLNORM_REDUCTION_LOCAL, "with %s the device keeps the %s path",
          list, clnorm_reduction_name(device_path()));
    CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
    CHECK(cln_probe_count() == p0 + 1, "the probe ran again instead of reading its record");
    CHECK(device_path() == CLNORM_REDUCTION_LOCAL, "the record lost the dropped path");

    /* Where the device has a fast path, its probe's real checks pass. */
    if (had != CLNORM_REDUCTION_LOCAL) {
        inject("");
        CHECK(device_path() == had, "the %s probe failed on its own",
              clnorm_reduction_name(had));
    } else {
        NOTE("no fast path here: the checks of the probes run where there is one (PoCL 5, "
             "NVIDIA)");
    }
    inject(NULL);
    t_env_restore();
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}
