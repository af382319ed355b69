/* reduction_paths and work_group_sizes: the plan hints of the reduction path, the
   work-group size, the work-items per row and the device limits (which the
   CLNORM_REDUCTION, CLNORM_WORK_GROUP, CLNORM_ROW_THREADS, CLNORM_MAX_WORK_GROUP and
   CLNORM_MAX_LOCAL_MEM variables set too), forced for the calling thread, each with
   values verified on awkward shapes. The runner clears the hints after the case. */
#include "test.h"
#include "clnorm_advanced.h"

#include <stdlib.h>
#include <string.h>

/* The hints in force for this thread's calls. */
static clnorm_plan_hints cur;

static clnorm_status force(void) { return clnorm_set_thread_hints(&cur); }

static const char *hints_now(void)
{
    static char buf[256];
    snprintf(buf, sizeof buf, "hints reduction %s, work_group %zu, items_per_row %zu, "
             "max_work_group %zu, max_local_mem %llu",
             cur.reduction < 0 ? "auto" : clnorm_reduction_name((clnorm_reduction)cur.reduction),
             cur.work_group, cur.items_per_row, cur.max_work_group,
             (unsigned long long)cur.max_local_mem);
    return buf;
}

/* Runs op on a fresh random problem; returns the status (values checked on
   SUCCESS, untouched buffers checked otherwise). */
static clnorm_status try_op(top op, size_t rows, size_t cols)
{
    op_args a;
    float *x, *g;
    op_out o;
    make_problem(&R, &a, op, rows, cols, &x, &g);
    double t0 = t_now();
    clnorm_status st = run_op(&a, &o);
    if (st == CLNORM_SUCCESS) verify_op(&a, &o);
    if (t_verbose())
        NOTE("%s %zux%zu with %s: %s, %.3f s", op_name(op), rows, cols, hints_now(),
             clnorm_status_string(st), t_now() - t0);
    op_out_free(&o);
    free(x);
    free(g);
    return st;
}

/* The reduction path a successful call must have run (-2: not checked), and the
   device's description (want_pocl_tiny: its plans use local memory for work-groups of
   1-2 items, as cln_plan_driver_path in src/plan.c decides on PoCL 4 and later). */
static int want_path = -2, want_pocl_tiny;

/* Expects want on every op and shape; `also` is a second acceptable status. */
static void expect_all(const size_t (*shapes)[2], size_t nshapes, clnorm_status want,
                       clnorm_status also, int *n_also)
{
    for (int op = 0; op < OP_COUNT; op++)
        for (size_t s = 0; s < nshapes; s++) {
            clnorm_status st = try_op((top)op, shapes[s][0], shapes[s][1]);
            /* A forced work-group size is the one that ran, never silently replaced. */
            clnorm_plan_info ran;
            if (st == CLNORM_SUCCESS && cur.work_group && clnorm_last_plan(&ran))
                CHECK(ran.work_group == cur.work_group,
                      "%s %zux%zu with %s ran in work-groups of %zu", op_name((top)op),
                      shapes[s][0], shapes[s][1], hints_now(), ran.work_group);
            if (st == CLNORM_SUCCESS && want_path != -2 && clnorm_last_plan(&ran)) {
                int path = want_pocl_tiny && ran.work_group <= 2 ? CLNORM_REDUCTION_LOCAL
                                                                 : want_path;
                CHECK((int)ran.reduction == path, "%s %zux%zu with %s ran the %s path, "
                      "expected %s (work-group %zu)", op_name((top)op), shapes[s][0],
                      shapes[s][1], hints_now(), clnorm_reduction_name(ran.reduction),
                      clnorm_reduction_name((clnorm_reduction)path), ran.work_group);
            }
            if (st == want) continue;
            if (st == also) {
                /* The second status is a refusal for a compiled kernel's own limit. */
                if (also != want)
                    CHECK(strstr(clnorm_last_error(), "compiled kernel allows") != NULL,
                          "%s %zux%zu with %s: %s for another reason: \"%s\"",
                          op_name((top)op), shapes[s][0], shapes[s][1], hints_now(),
                          clnorm_status_string(st), clnorm_last_error());
                if (n_also) (*n_also)++;
                continue;
            }
            char err[1024];
            snprintf(err, sizeof err, "%s", clnorm_last_error());
            t_fail(__FILE__, __LINE__, "%s %zux%zu with %s: %s, expected %s; last error \"%s\"",
                   op_name((top)op), shapes[s][0], shapes[s][1], hints_now(),
                   clnorm_status_string(st), clnorm_status_string(want), err);
        }
}

void test_reduction_paths(void)
{
    static const size_t shapes[][2] = {{7, 1}, {3, 33}, {129, 128}, {5, 1000}, {2, 4097}, {1, 65537}};
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS)) return;
    const int fast = info.reduction != CLNORM_REDUCTION_LOCAL;
    want_pocl_tiny = info.pocl_major >= 4;
    NOTE("device's fastest path: %s", clnorm_reduction_name(info.reduction));
    /* Forcing local runs local everywhere. Forcing subgroup runs the device's fast
       path, and is refused on every call exactly where the device has none. Auto runs
       the device's fastest path (no tuning table: the suite's disk cache is off). */
    const struct { const char *name; int hint, path; clnorm_status want; } forced[] = {
        {"local", CLNORM_REDUCTION_LOCAL, CLNORM_REDUCTION_LOCAL, CLNORM_SUCCESS},
        {"subgroup", CLNORM_REDUCTION_SUBGROUP, fast ? (int)info.reduction : -2,
         fast ? CLNORM_SUCCESS : CLNORM_UNSUPPORTED},
        {"auto", CLNORM_REDUCTION_AUTO, (int)info.reduction, CLNORM_SUCCESS},
    };
    clnorm_plan_hints_init(&cur);
    for (size_t p = 0; p < COUNT_OF(forced); p++) {
        cur.reduction = forced[p].hint;
        if (!CHECK_ST(force(), CLNORM_SUCCESS)) continue;
        want_path = forced[p].path;
        expect_all(shapes, COUNT_OF(shapes), forced[p].want, forced[p].want, NULL);
        NOTE("reduction %s: all %d calls %s", forced[p].name, OP_COUNT * (int)COUNT_OF(shapes),
             forced[p].want == CLNORM_SUCCESS ? "verified" : "refused as UNSUPPORTED");
    }
    want_path = -2;
    clnorm_set_thread_hints(NULL);
}

/* Forces work-group size wg with team work-items per row (0: the library's). A team
   that does not divide the group is refused when set, naming the field; returns 0
   then. */
static int force_sizes(size_t wg, size_t team)
{
    cur.work_group = wg;
    cur.items_per_row = team;
    if (wg && team && wg % team) {
        CHECK_ST(force(), CLNORM_INVALID_ARGUMENT);
        CHECK(strstr(clnorm_last_error(), "items_per_row") != NULL, "%s refused: \"%s\"",
              hints_now(), clnorm_last_error());
        return 0;
    }
    return CHECK_ST(force(), CLNORM_SUCCESS);
}

void test_work_group_sizes(void)
{
    static const size_t shapes[][2] = {{17, 1}, {5, 33}, {3, 1000}, {2, 4097}};
    size_t dmax = t_device_max_wg(T.dev), cap = dmax < 1024 ? dmax : 1024;
    const size_t base[] = {1, 2, 3, 7, 32, 48, 96, 100, 256, 1000};
    size_t sweep[COUNT_OF(base) + 1], nsweep = 0;
    for (size_t i = 0; i < COUNT_OF(base); i++)
        if (base[i] < cap) sweep[nsweep++] = base[i];
    sweep[nsweep++] = cap;
    NOTE("device max work-group size %zu; sweeping up to %zu", dmax, cap);
    clnorm_plan_hints_init(&cur);
    int beyond_256 = 0, runs = 0;
    for (size_t i = 0; i < nsweep; i++) {
        size_t wg = sweep[i];
        /* Row threads: all of the group, its largest proper divisor, 1, and one
           that does not divide it. */
        size_t p = 2;
        while (p < wg && wg % p) p++;
        size_t teams[] = {wg, wg > 1 ? wg / p : 1, 1, wg > 2 ? wg - 1 : wg + 1};
        for (size_t t = 0; t < COUNT_OF(teams); t++) {
            size_t team = teams[t];
            if (t > 0 && team == teams[t - 1]) continue;
            runs++;
            if (!force_sizes(wg, team)) {
                continue;
            } else if (wg <= 256) {
                expect_all(shapes, COUNT_OF(shapes), CLNORM_SUCCESS, CLNORM_SUCCESS, NULL);
            } else {
                /* A kernel may allow less than the device maximum. */
                int refused = 0;
                expect_all(shapes, COUNT_OF(shapes), CLNORM_SUCCESS, CLNORM_INVALID_ARGUMENT, &refused);
                beyond_256 += refused;
            }
        }
    }
    if (beyond_256) NOTE("%d calls with work-groups over 256 refused as beyond a kernel's limit", beyond_256);
    /* Where the kernels' reported limits are known to understate (NVIDIA, Rusticl),
       groups up to the device's maximum must run. */
    clnorm_device_info info;
    if (clnorm_device_describe(T.dev, 1, &info) == CLNORM_SUCCESS && info.kernel_wg_understated)
        CHECK(beyond_256 == 0, "%d calls over 256 refused on \"%s\", whose groups run up to %zu",
              beyond_256, T.dev_name, cap);

    /* Impossible: more than the device allows, more row threads than work-items. */
    if (force_sizes(dmax + 1, 1))
        expect_all(shapes, 1, CLNORM_INVALID_ARGUMENT, CLNORM_INVALID_ARGUMENT, NULL);
    force_sizes(32, 64); /* refused when set */

    /* Only one of the two forced: the library picks the other to fit. */
    const size_t alone[] = {1, 2, 16};
    for (size_t i = 0; i < COUNT_OF(alone); i++)
        if (force_sizes(0, alone[i]))
            expect_all(shapes, COUNT_OF(shapes), CLNORM_SUCCESS, CLNORM_SUCCESS, NULL);
    const size_t wg_alone[] = {1, 7, 64};
    for (size_t i = 0; i < COUNT_OF(wg_alone); i++)
        if (force_sizes(wg_alone[i], 0))
            expect_all(shapes, COUNT_OF(shapes), CLNORM_SUCCESS, CLNORM_SUCCESS, NULL);

    /* Lowered device limits: a small device and a Mali-like one. */
    const size_t limits[][2] = {{64, 16384}, {256, 32768}};
    for (size_t i = 0; i < COUNT_OF(limits); i++) {
        cur.max_work_group = limits[i][0];
        cur.max_local_mem = limits[i][1];
        if (force_sizes(0, 0))
            expect_all(shapes, COUNT_OF(shapes), CLNORM_SUCCESS, CLNORM_SUCCESS, NULL);
        if (force_sizes(limits[i][0], 0))
            expect_all(shapes, 2, CLNORM_SUCCESS, CLNORM_SUCCESS, NULL);
        if (force_sizes(2 * limits[i][0], 0)) /* over the lowered limit */
            expect_all(shapes, 1, CLNORM_INVALID_ARGUMENT, CLNORM_INVALID_ARGUMENT, NULL);
    }
    clnorm_set_thread_hints(NULL);
    NOTE("%d forced (work-group, row threads) pairs", runs);
}
