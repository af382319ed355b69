/* Device-free cases: clnorm_stats_merge, status strings, the version, and the pure
   plan function of src/plan.h on hand-written device profiles. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "build_options.h"
#include "kernels.h"
#include "plan.h"
#include "validate.h"
#include "clnorm_advanced.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- merge --------------------------------------------------------------------------- */
static void expect_merge(float ma, float la, float mb, float lb, double wm, double wl)
{
    float m = 12345.f, l = 12345.f;
    clnorm_stats_merge(ma, la, mb, lb, &m, &l);
    CHECK(t_close(m, wm, 0, 0) && t_close(l, wl, 2e-6, 0),
          "merge(%g, %g, %g, %g) = (%g, %g), expected (%g, %g)", (double)ma, (double)la,
          (double)mb, (double)lb, (double)m, (double)l, wm, wl);
}

/* A random row with, sometimes, the special values of API.md. */
static size_t merge_row(float *x, size_t cap)
{
    size_t n = 1 + rng_below(&R, cap);
    gen_rows(&R, x, 1, n);
    switch (rng_below(&R, 10)) {
    case 0: for (size_t k = rng_below(&R, n) + 1; k; k--) x[rng_below(&R, n)] = -INFINITY; break;
    case 1: for (size_t c = 0; c < n; c++) x[c] = -INFINITY; break;
    case 2: for (size_t k = rng_below(&R, 3) + 1; k; k--) x[rng_below(&R, n)] = INFINITY; break;
    case 3: x[rng_below(&R, n)] = NAN; break;
    default: break;
    }
    return n;
}

void test_merge(void)
{
    const float ord[][2] = {{3.5f, 2.0f}, {-1000.25f, 1.0f}, {0.0f, 17.5f}, {1e6f, 3.0f}};
    for (size_t i = 0; i < COUNT_OF(ord); i++) {
        float a = ord[i][0], b = ord[i][1];
        expect_merge(-INFINITY, 0, a, b, a, b);     /* identity on either side */
        expect_merge(a, b, -INFINITY, 0, a, b);
        expect_merge(NAN, b, a, b, NAN, NAN);       /* a NaN anywhere */
        expect_merge(a, NAN, a, b, NAN, NAN);
        expect_merge(a, b, NAN, b, NAN, NAN);
        expect_merge(a, b, a, NAN, NAN, NAN);
        expect_merge(a, b, a, b, a, 2.0 * b);       /* equal maxima add */
        expect_merge(INFINITY, 2, a, b, INFINITY, 2); /* +inf parts: counts of +inf */
        expect_merge(a, b, INFINITY, 1, INFINITY, 1);
    }
    expect_merge(-INFINITY, 0, -INFINITY, 0, -INFINITY, 0);  /* no -inf - -inf */
    expect_merge(INFINITY, 2, INFINITY, 3, INFINITY, 5);
    expect_merge(INFINITY, 1, -INFINITY, 0, INFINITY, 1);
    expect_merge(-INFINITY, 0, NAN, NAN, NAN, NAN);
    expect_merge(NAN, NAN, INFINITY, 1, NAN, NAN);
    expect_merge(1.0f, 1.0f, 0.0f, 1.0f, 1.0, 1.0 + exp(-1.0));

    /* Random splits of rows into parts, merged in random orders and shapes, against
       the float64 statistics of the whole row. */
    enum { CAP = 300, TRIALS = 3000 };
    float x[CAP];
    for (int t = 0; t < TRIALS; t++) {
        size_t n = merge_row(x, CAP), parts = 1 + rng_below(&R, 8);
        size_t cut[10];
        cut[0] = 0;
        cut[parts] = n;
        for (size_t k = 1; k < parts; k++) cut[k] = rng_below(&R, n + 1);  /* may be empty */
        for (size_t a = 1; a < parts; a++)                                   /* sort */
            for (size_t b = a; b > 1 && cut[b - 1] > cut[b]; b--) {
                size_t s = cut[b]; cut[b] = cut[b - 1]; cut[b - 1] = s;
            }
        float pm[10], pl[10];
        for (size_t k = 0; k < parts; k++) {
            double m = -INFINITY, l = 0;
            if (cut[k + 1] > cut[k]) ref_stats(x + cut[k], 1, cut[k + 1] - cut[k], &m, &l);
            pm[k] = (float)m, pl[k] = (float)l;
        }
        double wm, wl;
        ref_stats(x, 1, n, &wm, &wl);
        /* Left fold in a random order, and a right-leaning fold. */
        size_t perm[10];
        for (size_t k = 0; k < parts; k++) perm[k] = k;
        for (size_t k = parts - 1; k > 0; k--) {
            size_t j = rng_below(&R, k + 1), s = perm[k];
            perm[k] = perm[j], perm[j] = s;
        }
        float m = -INFINITY, l = 0, rm = pm[parts - 1], rl = pl[parts - 1];
        for (size_t k = 0; k < parts; k++) clnorm_stats_merge(m, l, pm[perm[k]], pl[perm[k]], &m, &l);
        for (size_t k = parts - 1; k-- > 0;) clnorm_stats_merge(pm[k], pl[k], rm, rl, &rm, &rl);
        double rel = 1e-5;
        if (!CHECK(t_close(m, wm, 0, 0) && t_close(l, wl, rel, 1e-30) && t_close(rm, wm, 0, 0) &&
                   t_close(rl, wl, rel, 1e-30),
                   "trial %d: %zu elements in %zu parts: fold (%.9g, %.9g), right fold "
                   "(%.9g, %.9g), float64 (%.17g, %.17g)", t, n, parts, (double)m, (double)l,
                   (double)rm, (double)rl, wm, wl))
            break;
    }
}

/* ---- status strings, version ------------------------------------------------------ */
static void *fresh_thread(void *arg)
{
    const char *e = clnorm_last_error();
    *(int *)arg = e != NULL && e[0] == '\0';
    return NULL;
}

/* cln_strided_meet, which decides whether two views of one buffer share an element,
   against marking every byte of both: random small views of one stride and of two,
   spans crossing or not, one row and many. */
void test_views_meet(void)
{
    enum { SPACE = 4096 };
    static unsigned char mark[SPACE];
    size_t cases = 0, met = 0;
    for (int t = 0; t < 200000; t++) {
        const size_t rows = 1 + rng_below(&R, t % 3 ? 9 : 2);
        const size_t alen = 1 + rng_below(&R, 12), blen = 1 + rng_below(&R, 12);
        const size_t ald = alen + rng_below(&R, 16);
        const size_t bld = rng_below(&R, 3) ? ald + (alen < blen ? blen - alen : 0)
                                            : blen + rng_below(&R, 16);
        const size_t a0 = rng_below(&R, 64), b0 = rng_below(&R, 64);
        if (bld < blen) continue;
        memset(mark, 0, SPACE);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < alen; c++) mark[a0 + r * ald + c] = 1;
        int want = 0;
        for (size_t r = 0; r < rows && !want; r++)
            for (size_t c = 0; c < blen && !want; c++) want = mark[b0 + r * bld + c];
        const int got = cln_strided_meet(a0, ald, alen, b0, bld, blen, rows);
        const int back = cln_strided_meet(b0, bld, blen, a0, ald, alen, rows);
        cases++, met += (size_t)want;
        if (!CHECK(got == want && back == want,
                   "views [%zu + i * %zu, +%zu) and [%zu + i * %zu, +%zu), %zu rows: gave %d "
                   "(%d the other way round), marking every byte gives %d", a0, ald, alen, b0,
                   bld, blen, rows, got, back, want))
            break;
    }
    CHECK(met > cases / 10 && met < cases - cases / 10, "%zu of %zu cases met: too few of one "
          "kind to test both", met, cases);
    /* Large offsets and many rows: rows of two strides that interleave without meeting,
       then one that meets only in its last row. */
    const size_t big = (size_t)1 << 40, rows = 100000;
    CHECK(!cln_strided_meet(big, 64, 16, big + 16, 128, 16, rows), "interleaved at two strides");
    CHECK(cln_strided_meet(big, 64, 16, big + (rows - 1) * 64 + 8, 1 << 20, 4, rows),
          "meeting in the last row");
    NOTE("%zu view pairs, %zu sharing an element", cases, met);
}

void test_status_strings(void)
{
    const char *names[] = {"CLNORM_SUCCESS", "CLNORM_INVALID_ARGUMENT", "CLNORM_OUT_OF_BOUNDS",
                           "CLNORM_DEVICE_NOT_FOUND", "CLNORM_UNSUPPORTED",
                           "CLNORM_BUILD_FAILED", "CLNORM_OUT_OF_RESOURCES",
                           "CLNORM_OPENCL_ERROR"};
    for (int i = 0; i < (int)COUNT_OF(names); i++) {
        const char *s = clnorm_status_string((clnorm_status)i);
        CHECK(s && !strcmp(s, names[i]), "clnorm_status_string(%d) = \"%s\", expected \"%s\"", i,
              s ? s : "(null)", names[i]);
    }
    const int unknown[] = {8, 99, -1, INT_MAX, INT_MIN};
    for (size_t i = 0; i < COUNT_OF(unknown); i++) {
        const char *s = clnorm_status_string((clnorm_status)unknown[i]);
        CHECK(s && !strcmp(s, "CLNORM_UNKNOWN_STATUS"),
              "clnorm_status_string(%d) = \"%s\", expected \"CLNORM_UNKNOWN_STATUS\"",
              unknown[i], s ? s : "(null)");
    }
    CHECK(clnorm_last_error() != NULL, "clnorm_last_error() is NULL");
    int fresh = 0;
    pthread_t th;
    if (CHECK(pthread_create(&th, NULL, fresh_thread, &fresh) == 0, "pthread_create")) {
        pthread_join(th, NULL);
        CHECK(fresh, "clnorm_last_error() on a new thread is not \"\"");
    }
}

void test_version(void)
{
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
             CLNORM_VERSION_PATCH);
    const char *v = clnorm_version();
    CHECK(v && !strcmp(v, want), "clnorm_version() = \"%s\", the macros say \"%s\"",
          v ? v : "(null)", want);
}

/* ---- plan ------------------------------------------------------------------------------ */
typedef struct named_profile { cln_profile p; int gpu; } named_profile;

static named_profile make_profile(const char *name, cl_device_type type, cl_uint cu,
                                  size_t max_wg, cl_ulong local, size_t pref, int subgroups,
                                  int nv)
{
    named_profile n;
    memset(&n, 0, sizeof n);
    cln_profile *p = &n.p;
    snprintf(p->device_name, sizeof p->device_name, "%s", name);
    snprintf(p->platform_name, sizeof p->platform_name, "test platform");
    p->type = type;
    p->compute_units = cu;
    p->max_wg = max_wg;
    p->local_mem = local;
    p->pref_multiple = pref;
    p->has_subgroups = subgroups;
    p->subgroup_std = "";
    if (nv) {
        p->nv = 1, p->coop = 1, p->nv_cc_major = 9, p->nv_cc_minor = 0, p->warp = 32,
        p->has_nv_shuffle = 1;
    }
    p->best_path = nv ? CLN_PATH_NV : subgroups ? CLN_PATH_SUBGROUP : CLN_PATH_LOCAL;
    n.gpu = type == CL_DEVICE_TYPE_GPU;
    return n;
}

static cln_limits no_limits(void)
{
    cln_limits l;
    memset(&l, 0, sizeof l);   /* 0: no limit, nothing forced */
    l.force_path = -1;
    l.force_variant = -1;
    return l;
}

/* Checks the invariants of a plan; returns 1 when all hold. */
static int plan_ok(const cln_profile *p, const cln_limits *lim, cln_op op, clnorm_dtype dt,
                   size_t rows, size_t cols, const cln_plan *pl, const char *label)
{
    int ok = 1;
    if (op == CLN_OP_SOFTMAX_AUTO)
        ok &= CHECK(pl->op == CLN_OP_SOFTMAX_THREE_PASS || pl->op == CLN_OP_SOFTMAX_ONLINE,
                    "%s: AUTO resolved to op %d", label, (int)pl->op);
    else
        ok &= CHECK(pl->op == op, "%s: plan op %d", label, (int)pl->op);
    ok &= CHECK(pl->wg >= 1 && pl->wg <= p->max_wg, "%s: wg %zu outside [1, %zu]", label, pl->wg,
                p->max_wg);
    if (lim->max_wg)
        ok &= CHECK(pl->wg <= lim->max_wg, "%s: wg %zu over the limit %zu", label, pl->wg, lim->max_wg);
    ok &= CHECK(pl->team >= 1 && pl->wg % pl->team == 0, "%s: team %zu does not divide wg %zu",
                label, pl->team, pl->wg);
    ok &= CHECK(pl->rows_per_wg * pl->team == pl->wg, "%s: rows_per_wg %zu * team %zu != wg %zu",
                label, pl->rows_per_wg, pl->team, pl->wg);
    ok &= CHECK(pl->groups >= 1 && pl->groups * pl->rows_per_wg >= rows,
                "%s: %zu groups of %zu rows do not cover %zu rows", label, pl->groups,
                pl->rows_per_wg, rows);
    ok &= CHECK(pl->groups <= rows * cols, "%s: %zu groups for %zu elements", label, pl->groups,
                rows * cols);
    ok &= CHECK(pl->variant < CLN_VAR_COUNT, "%s: variant %d", label, (int)pl->variant);
    ok &= CHECK(pl->local_bytes <= p->local_mem, "%s: local_bytes %zu over the device's %llu",
                label, pl->local_bytes, (unsigned long long)p->local_mem);
    if (lim->max_local)
        ok &= CHECK(pl->local_bytes <= lim->max_local, "%s: local_bytes %zu over the limit %llu",
                    label, pl->local_bytes, (unsigned long long)lim->max_local);
    if (pl->variant == CLN_VAR_SPLIT) {
        /* Several work-groups per row, each a slice of whole work-group strides. */
        ok &= CHECK(pl->team == pl->wg && pl->slices >= 2 && pl->slice_len % pl->wg == 0 &&
                    pl->slices * pl->slice_len >= cols &&
                    pl->groups == rows * pl->slices && pl->k2 != CLN_K_COUNT,
                    "%s: split plan wg %zu team %zu slices %zu x %zu cols, %zu groups, k2 %d",
                    label, pl->wg, pl->team, pl->slices, pl->slice_len, pl->groups, (int)pl->k2);
    } else if (pl->variant == CLN_VAR_COOP) {
        /* One launch: slices of whole work-group strides, a row's all on the device at
           once, the part of a slice past the registers in the local memory planned. */
        const size_t e = pl->slice_len / pl->wg;
        ok &= CHECK(p->coop && pl->team == pl->wg && pl->slices >= 1 &&
                    pl->slice_len % pl->wg == 0 && pl->slices * pl->slice_len >= cols &&
                    (pl->slices - 1) * pl->slice_len < cols && pl->slices <= p->compute_units &&
                    pl->groups == rows * pl->slices && pl->groups <= CLN_COOP_GROUPS_MAX &&
                    pl->k2 == CLN_K_COUNT,
                    "%s: coop plan wg %zu team %zu slices %zu x %zu cols, %zu groups, k2 %d",
                    label, pl->wg, pl->team, pl->slices, pl->slice_len, pl->groups, (int)pl->k2);
        ok &= CHECK(pl->local_bytes >= pl->wg * sizeof(float) * (2 + cln_coop_held(e)),
                    "%s: coop slices of %zu elements a work-item in %zu bytes of local memory",
                    label, e, pl->local_bytes);
        /* The kernel holds at most CLN_COOP_BATCHES batches of the registers' size in
           local memory. */
        ok &= CHECK(cln_coop_held(e) <= CLN_COOP_BATCHES * CLN_COOP_ELEMS,
                    "%s: coop slices of %zu elements a work-item hold %zu in local memory, more "
                    "than the kernel's %d batches of %d", label, e, cln_coop_held(e),
                    CLN_COOP_BATCHES, CLN_COOP_ELEMS);
    } else if (pl->variant == CLN_VAR_REGISTERS || pl->variant == CLN_VAR_WORDS) {
        size_t k = cln_plan_reg_elems(pl, dt);
        /* The half-slot kernels are exactly the words_half plans. */
        ok &= CHECK((pl->k1 == CLN_K_RMSNORM_WORDS_HALF || pl->k1 == CLN_K_ADD_RMSNORM_WORDS_HALF ||
                     pl->k1 == CLN_K_SOFTMAX_WORDS_HALF) ==
                        (pl->words_half != 0), "%s: kernel %s with words_half %d", label,
                    cln_kernel_name(pl->k1), pl->words_half);
        ok &= CHECK(cols <= pl->team * k, "%s: register plan of team %zu for %zu cols "
                    "(%zu per work-item)", label, pl->team, cols, k);
        /* The paired kernels move words of two elements from every row start. */
        if (pl->variant == CLN_VAR_WORDS)
            ok &= CHECK(cols % 2 == 0 && !lim->no_words, "%s: paired plan for %zu cols%s",
                        label, cols, lim->no_words ? " on views with odd row starts" : "");
    }
    ok &= CHECK(pl->path != CLN_PATH_SUBGROUP || p->has_subgroups,
                "%s: sub-group path on a device without sub-groups", label);
    ok &= CHECK(pl->path != CLN_PATH_NV || p->has_nv_shuffle,
                "%s: NV path on a device without PTX shuffles", label);
    /* PoCL 4+ cannot load sub-group builtins in groups of two work-items or fewer. */
    if (p->pocl_major >= 4 && pl->wg <= 2)
        ok &= CHECK(pl->path == CLN_PATH_LOCAL, "%s: path %d in a group of %zu on PoCL %d",
                    label, (int)pl->path, pl->wg, p->pocl_major);
    return ok;
}

static clnorm_status plan(const named_profile *np, const cln_limits *lim, cln_op op,
                          clnorm_dtype dt, size_t rows, size_t cols, cln_plan *out, char *why)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    return cln_plan_make(&np->p, lim, op, dt, rows, cols, out, why, 256);
}

static void plan_label(char *buf, size_t n, const named_profile *np, const cln_limits *lim,
                       cln_op op, clnorm_dtype dt, size_t rows, size_t cols)
{
    snprintf(buf, n, "%s %s %s %zux%zu (limits wg %zu local %llu force wg %zu team %zu path %d)",
             np->p.device_name, cln_op_name(op), dt_name(dt), rows, cols, lim->max_wg,
             (unsigned long long)lim->max_local, lim->force_wg, lim->force_team, lim->force_path);
}

/* The CLNORM_* variables of the plan as clnorm_config_from_env reads them. */
static void check_env_limits(void)
{
    const char *vars[] = {"CLNORM_REDUCTION", "CLNORM_WORK_GROUP", "CLNORM_ROW_THREADS",
                          "CLNORM_MAX_WORK_GROUP", "CLNORM_MAX_LOCAL_MEM", "CLNORM_VARIANT",
                          "CLNORM_SPLIT"};
    for (size_t i = 0; i < COUNT_OF(vars); i++) t_setenv(vars[i], NULL);
    clnorm_config c;
    memset(&c, 0x5A, sizeof c);
    const clnorm_plan_hints *h = &c.hints;
    if (CHECK_ST(clnorm_config_from_env(&c), CLNORM_SUCCESS))
        CHECK(!h->max_work_group && !h->max_local_mem && !h->work_group && !h->items_per_row &&
              h->reduction == CLNORM_REDUCTION_AUTO && h->variant == CLNORM_VARIANT_AUTO &&
              !h->split,
              "no variables set: hints {%zu, %llu, %zu, %zu, %d, %d, %zu}, expected "
              "{0, 0, 0, 0, -1, -1, 0}", h->max_work_group, (unsigned long long)h->max_local_mem,
              h->work_group, h->items_per_row, h->reduction, h->variant, h->split);
    t_setenv("CLNORM_REDUCTION", "local");
    t_setenv("CLNORM_WORK_GROUP", "48");
    t_setenv("CLNORM_ROW_THREADS", "4");
    t_setenv("CLNORM_MAX_WORK_GROUP", "64");
    t_setenv("CLNORM_MAX_LOCAL_MEM", "16384");
    if (CHECK_ST(clnorm_config_from_env(&c), CLNORM_SUCCESS))
        CHECK(h->max_work_group == 64 && h->max_local_mem == 16384 && h->work_group == 48 &&
              h->items_per_row == 4 && h->reduction == CLNORM_REDUCTION_LOCAL,
              "hints {%zu, %llu, %zu, %zu, %d}, expected {64, 16384, 48, 4, LOCAL}",
              h->max_work_group, (unsigned long long)h->max_local_mem, h->work_group,
              h->items_per_row, h->reduction);
    t_setenv("CLNORM_REDUCTION", "subgroup");
    if (CHECK_ST(clnorm_config_from_env(&c), CLNORM_SUCCESS))
        CHECK(h->reduction == CLNORM_REDUCTION_SUBGROUP, "CLNORM_REDUCTION=subgroup: reduction %d",
              h->reduction);
    t_setenv("CLNORM_REDUCTION", "auto");
    if (CHECK_ST(clnorm_config_from_env(&c), CLNORM_SUCCESS))
        CHECK(h->reduction == CLNORM_REDUCTION_AUTO, "CLNORM_REDUCTION=auto: reduction %d",
              h->reduction);
    t_setenv("CLNORM_WORK_GROUP", "abc");
    CHECK_ST(clnorm_config_from_env(&c), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "CLNORM_WORK_GROUP") != NULL &&
              strstr(clnorm_last_error(), "abc") != NULL,
          "CLNORM_WORK_GROUP=abc refused with \"%s\", which lacks the variable "
          "or the value", clnorm_last_error());
    for (size_t i = 0; i < COUNT_OF(vars); i++) t_setenv(vars[i], NULL);
}

void test_plan(void)
{
    named_profile profs[] = {
        make_profile("NVIDIA H200", CL_DEVICE_TYPE_GPU, 132, 1024, 48 * 1024, 32, 0, 1),
        make_profile("PoCL CPU", CL_DEVICE_TYPE_CPU, 2, 4096, 512 * 1024, 8, 0, 0),
        make_profile("PoCL 5 CPU", CL_DEVICE_TYPE_CPU, 16, 4096, 512 * 1024, 8, 1, 0),
        make_profile("Rusticl llvmpipe", CL_DEVICE_TYPE_CPU, 2, 1024, 32 * 1024, 8, 0, 0),
        make_profile("Adreno sg64", CL_DEVICE_TYPE_GPU, 6, 1024, 32 * 1024, 64, 1, 0),
        make_profile("Adreno sg128", CL_DEVICE_TYPE_GPU, 6, 1024, 32 * 1024, 128, 1, 0),
        make_profile("Mali", CL_DEVICE_TYPE_GPU, 16, 256, 32 * 1024, 4, 0, 0),
        make_profile("Intel sg8", CL_DEVICE_TYPE_GPU, 96, 512, 64 * 1024, 8, 1, 0),
        make_profile("Intel sg16", CL_DEVICE_TYPE_GPU, 96, 512, 64 * 1024, 16, 1, 0),
        make_profile("Intel sg32", CL_DEVICE_TYPE_GPU, 96, 1024, 64 * 1024, 32, 1, 0),
        make_profile("small GPU", CL_DEVICE_TYPE_GPU, 4, 64, 16 * 1024, 16, 0, 0),
        /* A CPU whose groups are taken to run side by side (CLNORM_TEST_FAULTS=coop):
           its table's coop slices hold part of themselves in local memory. */
        make_profile("PoCL CPU, coop", CL_DEVICE_TYPE_CPU, 2, 4096, 512 * 1024, 8, 0, 0),
    };
    profs[2].p.pocl_major = 5;
    named_profile *coop_cpu = &profs[COUNT_OF(profs) - 1];
    coop_cpu->p.coop = 1;
    /* The streaming loops' vector width, as profile.c finds it: PoCL's AVX2 8, GPUs 4,
       and 4 on llvmpipe, whose work-items are the SIMD lanes. */
    profs[1].p.vec = profs[2].p.vec = coop_cpu->p.vec = 8;
    profs[3].p.vec = 4;
    profs[3].p.simd_lanes = 1;
    for (size_t i = 0; i < COUNT_OF(profs); i++)
        if (profs[i].gpu) profs[i].p.vec = 4;
    const size_t rows_list[] = {1, 2, 3, 7, 8, 100, 4096, 65536, 1u << 20};
    const size_t cols_list[] = {1, 2, 31, 32, 33, 128, 1000, 4096, 4097, 32768, 65537, 262144,
                                1u << 20, (1u << 20) + 3};
    const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    char label[400], why[256];
    cln_plan pl, pl2;
    size_t plans = 0;
    int bad_shown = 0;

    for (size_t i = 0; i < COUNT_OF(profs); i++) {
        const named_profile *np = &profs[i];
        const cln_profile *p = &np->p;
        cln_limits none = no_limits(), small = no_limits(), odd = no_limits();
        small.max_wg = 64, small.max_local = 16384;
        odd.no_words = 1;
        const cln_limits *lims[] = {&none, &small, &odd};
        for (int op = 0; op < CLN_OP_COUNT; op++)
            for (size_t d = 0; d < COUNT_OF(dts); d++)
                for (size_t r = 0; r < COUNT_OF(rows_list); r++)
                    for (size_t c = 0; c < COUNT_OF(cols_list); c++)
                        for (size_t k = 0; k < COUNT_OF(lims); k++) {
                            size_t rows = rows_list[r], cols = cols_list[c];
                            plan_label(label, sizeof label, np, lims[k], (cln_op)op, dts[d], rows, cols);
                            clnorm_status st = plan(np, lims[k], (cln_op)op, dts[d], rows, cols, &pl, why);
                            plans++;
                            if (dts[d] != CLNORM_F32 && st == CLNORM_UNSUPPORTED) continue;
                            if (!CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label,
                                       clnorm_status_string(st), why))
                                continue;
                            if (!plan_ok(p, lims[k], (cln_op)op, dts[d], rows, cols, &pl, label) && ++bad_shown > 20)
                                return;  /* a broken plan function: enough said */
                            /* A pure function: the same question, the same answer. */
                            plan(np, lims[k], (cln_op)op, dts[d], rows, cols, &pl2, why);
                            CHECK(pl2.wg == pl.wg && pl2.team == pl.team && pl2.groups == pl.groups &&
                                  pl2.path == pl.path && pl2.local_bytes == pl.local_bytes,
                                  "%s: two calls gave different plans", label);
                        }

        /* Short rows on GPUs share a work-group between rows. */
        if (np->gpu) {
            const size_t short_cols[] = {1, 2, 31, 32, 128};
            for (size_t c = 0; c < COUNT_OF(short_cols); c++)
                for (int op = 0; op < CLN_OP_COUNT; op++) {
                    plan_label(label, sizeof label, np, &none, (cln_op)op, CLNORM_F32, 65536, short_cols[c]);
                    if (plan(np, &none, (cln_op)op, CLNORM_F32, 65536, short_cols[c], &pl, why) == CLNORM_SUCCESS)
                        CHECK(pl.rows_per_wg > 1, "%s: rows_per_wg %zu (wg %zu, team %zu) for short rows",
                              label, pl.rows_per_wg, pl.wg, pl.team);
                }
        }
        /* Few long rows on the H200: several work-groups per row (DESIGN.md), for the
           ops whose algorithm the library picks. */
        if (p->nv) {
            const size_t long_shapes[][2] = {{8, 262144}, {1, 1u << 20}};
            const cln_op picked[] = {CLN_OP_RMSNORM, CLN_OP_STATS, CLN_OP_SOFTMAX_AUTO};
            for (size_t s = 0; s < 2; s++)
                for (size_t o = 0; o < COUNT_OF(picked); o++) {
                    cln_op op = picked[o];
                    size_t rows = long_shapes[s][0], cols = long_shapes[s][1];
                    plan_label(label, sizeof label, np, &none, op, CLNORM_F32, rows, cols);
                    if (plan(np, &none, op, CLNORM_F32, rows, cols, &pl, why) == CLNORM_SUCCESS)
                        CHECK(pl.groups > rows, "%s: %zu work-groups for %zu long rows leave most "
                              "of %u compute units idle", label, pl.groups, rows, p->compute_units);
                }
            /* One launch (coop) for vocabulary rows, few or many, and for any rows the
               registers cannot hold; two (split) where a row's slices would outnumber the
               compute units; streaming where the groups would exceed the synchronisation
               words (CLN_COOP_GROUPS_MAX); the registers where the row fits them.
               Views whose x and y rows sit at different places in the vector (no_coop):
               float32 keeps the one launch, loading element by element; 16-bit rows
               split where they are few and stream where they are many. Softmax rows not
               of whole words take the one launch from coop_unpaired_cols_min columns
               where x and y are in step; shorter ones, views out of step and forced
               teams keep the register form, rows of whole words the words form. */
            const struct {
                clnorm_dtype dt;
                size_t rows, cols;
                cln_variant want;
                int no_coop;
                size_t team;
            } vocab[] = {
                {CLNORM_F32, 64, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 128, 151936, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 32, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 31, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 8, 262144, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 1, 1u << 20, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 64, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F16, 128, 151936, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 16, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 1, 1u << 20, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 1, 1u << 22, CLN_VAR_SPLIT, 0, 0},
                {CLNORM_BF16, 2, 1u << 22, CLN_VAR_SPLIT, 0, 0},
                {CLNORM_F32, 256, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 320, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 1024, 128256, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 4096, 50000, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 4096, 32769, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 8192, 20000, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 8192, 20000, CLN_VAR_WORDS, 0, 0},
                {CLNORM_F32, 65536, 128256, CLN_VAR_STREAM, 0, 0},
                {CLNORM_F32, 4096, 32769, CLN_VAR_COOP, 1, 0},
                {CLNORM_F32, 64, 128255, CLN_VAR_COOP, 1, 0},
                {CLNORM_BF16, 4096, 32769, CLN_VAR_STREAM, 1, 0},
                {CLNORM_F16, 64, 128255, CLN_VAR_SPLIT, 1, 0},
                {CLNORM_F32, 6706, 5003, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 6706, 5002, CLN_VAR_COOP, 0, 0},
                {CLNORM_BF16, 8192, 3001, CLN_VAR_COOP, 0, 0},
                {CLNORM_F16, 2048, 8191, CLN_VAR_COOP, 0, 0},
                {CLNORM_F32, 16384, 999, CLN_VAR_REGISTERS, 0, 0},
                {CLNORM_BF16, 4096, 2999, CLN_VAR_REGISTERS, 0, 0},
                {CLNORM_F32, 6706, 5003, CLN_VAR_REGISTERS, 1, 0},
                {CLNORM_F32, 6706, 5003, CLN_VAR_REGISTERS, 0, 256},
                {CLNORM_F32, 6706, 5004, CLN_VAR_WORDS, 0, 0},
            };
            for (size_t v = 0; v < COUNT_OF(vocab); v++) {
                cln_limits f = no_limits();
                f.no_coop = vocab[v].no_coop;
                f.force_team = vocab[v].team;
                plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_ONLINE, vocab[v].dt,
                           vocab[v].rows, vocab[v].cols);
                if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_ONLINE, vocab[v].dt, vocab[v].rows,
                                  vocab[v].cols, &pl, why),
                             CLNORM_SUCCESS))
                    CHECK(pl.variant == vocab[v].want, "%s, no_coop %d: %s, expected %s", label,
                          vocab[v].no_coop, cln_variant_name(pl.variant),
                          cln_variant_name(vocab[v].want));
            }
            /* The one launch's slices: of at most 64 elements a work-item where the rows'
               groups then fit one wave (8 groups a compute unit: 1056 on 132), of up to
               80 (32 in registers, 48 in local memory) where they would not, so that
               fewer waves pay for the wait on a row's slices. */
            const struct {
                clnorm_dtype dt;
                size_t rows, cols, slices;
            } waves[] = {
                {CLNORM_F32, 64, 128256, 16},   /* 1024 groups of 64: one wave */
                {CLNORM_BF16, 64, 128256, 16},
                {CLNORM_F32, 66, 128256, 16},   /* 1056 groups: still one wave */
                {CLNORM_F32, 67, 128256, 13},   /* 1072 would not be: 871 of 80 */
                {CLNORM_F32, 128, 151936, 15},  /* 2432 of 64 against 1920 of 80 */
                {CLNORM_BF16, 128, 151936, 15},
                {CLNORM_F16, 80, 128256, 13},   /* 1280 of 64 against 1040 of 80 */
                {CLNORM_F32, 8, 262144, 32},    /* 2 groups a compute unit: 32 of 8192 */
                /* 147 slices of 64 would outnumber the compute units: 131 of 9216. */
                {CLNORM_F32, 1, 1200000, 131},
            };
            for (size_t v = 0; v < COUNT_OF(waves); v++) {
                plan_label(label, sizeof label, np, &none, CLN_OP_SOFTMAX_ONLINE, waves[v].dt,
                           waves[v].rows, waves[v].cols);
                if (CHECK_ST(plan(np, &none, CLN_OP_SOFTMAX_ONLINE, waves[v].dt, waves[v].rows,
                                  waves[v].cols, &pl, why),
                             CLNORM_SUCCESS))
                    CHECK(pl.variant == CLN_VAR_COOP && pl.slices == waves[v].slices,
                          "%s: %s in %zu slices of %zu, expected coop in %zu", label,
                          cln_variant_name(pl.variant), pl.slices, pl.slice_len,
                          waves[v].slices);
            }
        }

        /* Rows in registers go paired where their length and every row start are even
           (16-bit: twice the elements per work-item, so half the team, except where
           16-bit softmax takes the half form, whose words are unpacked so that exp is
           taken once); odd ones, or CLNORM_VARIANT=reg, keep the plain register form.
           The views here are out of step (no_coop), so that rows not of whole words
           stay in the register form: the one launch that takes them otherwise is
           checked above. */
        if (p->nv) {
            struct {
                clnorm_dtype dt;
                size_t cols;
                int no_words, force;
                cln_variant want;
                size_t team;
                int half;
            } pc[] = {
                {CLNORM_BF16, 4096, 0, 0, CLN_VAR_WORDS, 128, 1},
                {CLNORM_F16, 4096, 0, 0, CLN_VAR_WORDS, 128, 1},
                {CLNORM_BF16, 16384, 0, 0, CLN_VAR_WORDS, 256, 0}, /* past the half form */
                {CLNORM_BF16, 1024, 0, 0, CLN_VAR_WORDS, 32, 1},
                {CLNORM_BF16, 1024, 0, 1, CLN_VAR_WORDS, 32, 1},
                /* Short rows fill every slot too, in teams narrower than a warp. */
                {CLNORM_F32, 128, 0, 0, CLN_VAR_WORDS, 4, 0},
                {CLNORM_F32, 512, 0, 0, CLN_VAR_WORDS, 16, 0},
                {CLNORM_F32, 127, 0, 0, CLN_VAR_REGISTERS, 4, 0},
                {CLNORM_BF16, 4097, 0, 0, CLN_VAR_REGISTERS, 256, 0},
                {CLNORM_BF16, 4096, 1, 0, CLN_VAR_REGISTERS, 128, 0},
                /* float32 rows of a warp or more: the half form, twice the groups. */
                {CLNORM_F32, 4096, 0, 0, CLN_VAR_WORDS, 256, 1},
                {CLNORM_F32, 1024, 0, 0, CLN_VAR_WORDS, 64, 1},
                {CLNORM_F32, 8192, 0, 0, CLN_VAR_WORDS, 256, 0},
                {CLNORM_F32, 4096, 1, 0, CLN_VAR_REGISTERS, 128, 0},
                {CLNORM_F32, 4096, 0, 1, CLN_VAR_WORDS, 256, 1},
                {CLNORM_F32, 4097, 0, 1, CLN_VAR_REGISTERS, 256, 0},
                {CLNORM_BF16, 4096, 0, 2, CLN_VAR_REGISTERS, 128, 0}, /* forced plain: honoured */
            };
            for (size_t c = 0; c < COUNT_OF(pc); c++) {
                cln_limits f = no_limits();
                f.no_coop = 1;
                f.no_words = pc[c].no_words;
                if (pc[c].force)
                    f.force_variant = pc[c].force == 1 ? CLN_VAR_WORDS : CLN_VAR_REGISTERS;
                plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_THREE_PASS, pc[c].dt, 4096,
                           pc[c].cols);
                cln_kernel_id want_k = pc[c].want != CLN_VAR_WORDS ? CLN_K_SOFTMAX_REG
                                       : pc[c].half ? CLN_K_SOFTMAX_WORDS_HALF
                                                    : CLN_K_SOFTMAX_WORDS;
                if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_THREE_PASS, pc[c].dt, 4096, pc[c].cols,
                                  &pl, why),
                             CLNORM_SUCCESS) &&
                    plan_ok(p, &f, CLN_OP_SOFTMAX_THREE_PASS, pc[c].dt, 4096, pc[c].cols, &pl,
                            label))
                    CHECK(pl.variant == pc[c].want && pl.team == pc[c].team && pl.k1 == want_k,
                          "%s, no_words %d: %s team %zu kernel %s, expected %s team %zu kernel %s",
                          label, pc[c].no_words, cln_variant_name(pl.variant), pl.team,
                          cln_kernel_name(pl.k1), cln_variant_name(pc[c].want), pc[c].team,
                          cln_kernel_name(want_k));
            }
            /* Words of 4 elements want cols a multiple of 4 too. */
            static const struct { clnorm_dtype dt; size_t cols; cln_variant want; } wc[] = {
                {CLNORM_BF16, 1024, CLN_VAR_WORDS}, {CLNORM_BF16, 1026, CLN_VAR_REGISTERS},
                {CLNORM_F32, 4096, CLN_VAR_WORDS}, {CLNORM_F32, 4098, CLN_VAR_REGISTERS}};
            for (size_t c = 0; c < COUNT_OF(wc); c++) {
                cln_limits f = no_limits();
                f.no_coop = 1;
                f.word = 4;
                plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_THREE_PASS, wc[c].dt, 4096,
                           wc[c].cols);
                if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_THREE_PASS, wc[c].dt, 4096, wc[c].cols,
                                  &pl, why), CLNORM_SUCCESS))
                    CHECK(pl.variant == wc[c].want, "%s, words of 4: %s, expected %s", label,
                          cln_variant_name(pl.variant), cln_variant_name(wc[c].want));
            }
        }

        /* CPUs whose work-items are the SIMD lanes give rows of 1024 columns or more 8
           work-items each; vectorising CPUs keep a work-item per row. */
        if (!np->gpu && p->loop_limit == 0) {
            cln_limits f = no_limits();
            plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_ONLINE, CLNORM_F32, 256, 4096);
            if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_ONLINE, CLNORM_F32, 256, 4096, &pl, why),
                         CLNORM_SUCCESS)) {
                if (p->simd_lanes)
                    CHECK(pl.variant == CLN_VAR_STREAM && pl.team == 8 && pl.rows_per_wg <= 4,
                          "%s (SIMD lanes): team %zu, %zu rows a group; expected 8, at most 4",
                          label, pl.team, pl.rows_per_wg);
                else
                    CHECK(pl.variant == CLN_VAR_STREAM && pl.team < 8,
                          "%s (vector width %u): team %zu, expected fewer than 8", label,
                          p->vec, pl.team);
            }
        }

        /* Vectorising CPUs keep a group's rows within 256 KB, so that they stay in
           cache between passes, and give a longer row 4 work-items. */
        if (!np->gpu && !p->simd_lanes && p->loop_limit == 0) {
            struct { clnorm_dtype dt; size_t rows, cols, rpw, team; } lc[] = {
                {CLNORM_F32, 64, 128256, 1, 4},  /* 513 KB rows */
                {CLNORM_BF16, 64, 262144, 1, 4}, /* 512 KB rows in 16 bits */
                {CLNORM_F32, 4096, 4096, 16, 1}, /* 16 KB rows: 16 a group */
                {CLNORM_BF16, 4096, 4096, 32, 1},
                {CLNORM_F32, 65536, 1024, 64, 1}, /* 4 KB rows: 64 a group, as before */
            };
            for (size_t c = 0; c < COUNT_OF(lc); c++) {
                cln_limits f = no_limits();
                plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_THREE_PASS, lc[c].dt,
                           lc[c].rows, lc[c].cols);
                if (!CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_THREE_PASS, lc[c].dt, lc[c].rows,
                                   lc[c].cols, &pl, why), CLNORM_SUCCESS))
                    continue;
                size_t want_rpw = lc[c].rpw;
                /* Fewer rows a group where the rows do not give every core 4 groups. */
                size_t most = lc[c].rows / (4 * (p->compute_units ? p->compute_units : 1));
                while (want_rpw > 1 && want_rpw > most) want_rpw /= 2;
                CHECK(pl.variant == CLN_VAR_STREAM && pl.rows_per_wg == want_rpw &&
                          pl.team == lc[c].team,
                      "%s: %zu rows a group of %zu work-items each; expected %zu of %zu", label,
                      pl.rows_per_wg, pl.team, want_rpw, lc[c].team);
            }
        }

        /* 16-bit softmax rows that need a register team over 256 stay paired in the
           full form (words packed: 64 elements a work-item, a team of 512) where they
           fill 3/4 of the slots; otherwise, as for rows not of whole words, the one
           launch reads them once (online), and where views keep it from them
           (no_coop) they stream online. float32 rows of the same length stay paired,
           in one group of 1024. */
        if (p->nv && p->max_wg >= 1024) {
            cln_limits f = no_limits(), off = no_limits();
            off.no_coop = 1;
            const struct { clnorm_dtype dt; size_t rows, cols; } unpaired[] = {
                {CLNORM_F16, 2048, 20000}, {CLNORM_BF16, 1024, 32767}, {CLNORM_BF16, 1024, 32766}};
            for (size_t c = 0; c < COUNT_OF(unpaired); c++)
                for (int o = 0; o < 2; o++) {
                    cln_limits *lm = o ? &off : &f;
                    const cln_variant want = o ? CLN_VAR_STREAM : CLN_VAR_COOP;
                    plan_label(label, sizeof label, np, lm, CLN_OP_SOFTMAX_AUTO, unpaired[c].dt,
                               unpaired[c].rows, unpaired[c].cols);
                    if (CHECK_ST(plan(np, lm, CLN_OP_SOFTMAX_AUTO, unpaired[c].dt, unpaired[c].rows,
                                      unpaired[c].cols, &pl, why), CLNORM_SUCCESS))
                        CHECK(pl.variant == want && pl.op == CLN_OP_SOFTMAX_ONLINE,
                              "%s%s: %s %s, expected online %s", label, o ? " (no_coop)" : "",
                              cln_op_name(pl.op), cln_variant_name(pl.variant),
                              cln_variant_name(want));
                }
            plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_F16, 512, 65536);
            if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_F16, 512, 65536, &pl, why),
                         CLNORM_SUCCESS))
                CHECK(pl.variant == CLN_VAR_WORDS && !pl.words_half && pl.team == 1024,
                      "%s: %s team %zu, expected words team 1024", label,
                      cln_variant_name(pl.variant), pl.team);
            plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_BF16, 1024, 32768);
            if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_BF16, 1024, 32768, &pl, why),
                         CLNORM_SUCCESS))
                CHECK(pl.variant == CLN_VAR_WORDS && !pl.words_half && pl.team == 512 &&
                          pl.op == CLN_OP_SOFTMAX_THREE_PASS,
                      "%s: %s %s%s team %zu, expected three-pass words team 512", label,
                      cln_op_name(pl.op), cln_variant_name(pl.variant), pl.words_half ? "-half" : "",
                      pl.team);
            plan_label(label, sizeof label, np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_F32, 1024, 32768);
            if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_F32, 1024, 32768, &pl, why),
                         CLNORM_SUCCESS))
                CHECK(pl.variant == CLN_VAR_WORDS && pl.team == 1024,
                      "%s: %s team %zu, expected words team 1024", label,
                      cln_variant_name(pl.variant), pl.team);
            f.force_variant = CLN_VAR_WORDS; /* forced: honoured */
            if (CHECK_ST(plan(np, &f, CLN_OP_SOFTMAX_AUTO, CLNORM_BF16, 1024, 32768, &pl, why),
                         CLNORM_SUCCESS))
                CHECK(pl.variant == CLN_VAR_WORDS, "forced words on bf16 1024x32768: %s",
                      cln_variant_name(pl.variant));
        }

        /* RMSNorm's paired kernels: half the slots where a team of up to 256 holds
           the row, all of them beyond. */
        if (p->nv) {
            struct { clnorm_dtype dt; size_t cols; cln_kernel_id k; size_t team; } rc[] = {
                {CLNORM_F32, 4096, CLN_K_RMSNORM_WORDS_HALF, 256},
                {CLNORM_F32, 8192, CLN_K_RMSNORM_WORDS, 256},
                {CLNORM_BF16, 8192, CLN_K_RMSNORM_WORDS_HALF, 256},
                {CLNORM_BF16, 16384, CLN_K_RMSNORM_WORDS, 256},
                {CLNORM_F32, 16384, CLN_K_RMSNORM_WORDS, 512},
            };
            for (size_t c = 0; c < COUNT_OF(rc); c++) {
                plan_label(label, sizeof label, np, &none, CLN_OP_RMSNORM, rc[c].dt, 4096, rc[c].cols);
                if (CHECK_ST(plan(np, &none, CLN_OP_RMSNORM, rc[c].dt, 4096, rc[c].cols, &pl, why),
                             CLNORM_SUCCESS) &&
                    plan_ok(p, &none, CLN_OP_RMSNORM, rc[c].dt, 4096, rc[c].cols, &pl, label))
                    CHECK(pl.k1 == rc[c].k && pl.team == rc[c].team,
                          "%s: kernel %s team %zu, expected %s team %zu", label,
                          cln_kernel_name(pl.k1), pl.team, cln_kernel_name(rc[c].k), rc[c].team);
            }
        }

        /* Forced paths. */
        for (int op = 0; op < CLN_OP_COUNT; op++) {
            cln_limits f = no_limits();
            f.force_path = CLN_PATH_LOCAL;
            plan_label(label, sizeof label, np, &f, (cln_op)op, CLNORM_F32, 100, 1000);
            if (CHECK_ST(plan(np, &f, (cln_op)op, CLNORM_F32, 100, 1000, &pl, why), CLNORM_SUCCESS))
                CHECK(pl.path == CLN_PATH_LOCAL, "%s: path %d", label, (int)pl.path);
            f.force_path = CLN_PATH_SUBGROUP;
            plan_label(label, sizeof label, np, &f, (cln_op)op, CLNORM_F32, 100, 1000);
            clnorm_status st = plan(np, &f, (cln_op)op, CLNORM_F32, 100, 1000, &pl, why);
            if (p->has_subgroups || p->has_nv_shuffle) {
                if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st), why))
                    CHECK(pl.path == p->best_path, "%s: path %d, the device's fast path is %d",
                          label, (int)pl.path, (int)p->best_path);
            } else {
                CHECK(st == CLNORM_UNSUPPORTED && why[0], "%s: %s, why \"%s\"; expected "
                      "UNSUPPORTED with a reason", label, clnorm_status_string(st), why);
            }
        }

        /* Forced sizes: honoured when possible, INVALID_ARGUMENT with a reason if not. */
        const size_t fwg[] = {1, 2, 7, 48, 64, p->max_wg};
        for (size_t w = 0; w < COUNT_OF(fwg); w++) {
            if (fwg[w] > p->max_wg) continue;
            size_t teams[] = {fwg[w], 1, fwg[w] % 2 ? fwg[w] : fwg[w] / 2};
            for (size_t t = 0; t < COUNT_OF(teams); t++)
                for (int op = 0; op < CLN_OP_COUNT; op++) {
                    cln_limits f = no_limits();
                    f.force_wg = fwg[w], f.force_team = teams[t];
                    plan_label(label, sizeof label, np, &f, (cln_op)op, CLNORM_F32, 37, 1000);
                    clnorm_status st = plan(np, &f, (cln_op)op, CLNORM_F32, 37, 1000, &pl, why);
                    if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st), why) &&
                        plan_ok(p, &f, (cln_op)op, CLNORM_F32, 37, 1000, &pl, label))
                        CHECK(pl.wg == f.force_wg && pl.team == f.force_team,
                              "%s: got wg %zu team %zu", label, pl.wg, pl.team);
                }
        }
        for (int op = 0; op < CLN_OP_COUNT; op++) {
            cln_limits bad[4] = {no_limits(), no_limits(), no_limits(), no_limits()};
            bad[0].force_wg = p->max_wg + 1;                     /* over the device */
            bad[1].max_wg = 32, bad[1].force_wg = 64;            /* over the lowered limit */
            bad[2].force_wg = 48, bad[2].force_team = 5;         /* team does not divide */
            bad[3].force_wg = 16, bad[3].force_team = 32;        /* team larger than wg */
            for (int b = 0; b < 4; b++) {
                plan_label(label, sizeof label, np, &bad[b], (cln_op)op, CLNORM_F32, 37, 1000);
                clnorm_status st = plan(np, &bad[b], (cln_op)op, CLNORM_F32, 37, 1000, &pl, why);
                CHECK(st == CLNORM_INVALID_ARGUMENT && why[0], "%s: %s, why \"%s\"; expected "
                      "INVALID_ARGUMENT with a reason", label, clnorm_status_string(st), why);
            }
        }
    }
    /* Absurd lengths are refused with a reason, never divided by a wrapped zero. */
    {
        cln_limits none = no_limits();
        const size_t huge[] = {((size_t)1 << 48) + 1, SIZE_MAX / 2 + 3, SIZE_MAX};
        for (size_t h = 0; h < COUNT_OF(huge); h++)
            for (int op = 0; op < CLN_OP_COUNT; op++) {
                clnorm_status st = plan(&profs[0], &none, (cln_op)op, CLNORM_F32, 1, huge[h], &pl, why);
                CHECK(st == CLNORM_INVALID_ARGUMENT && strstr(why, "cols"),
                      "op %d with %zu cols: %s, why \"%s\"", op, huge[h],
                      clnorm_status_string(st), why);
            }
    }
    /* Coop slices past the registers' CLN_COOP_ELEMS elements a work-item hold the rest
       in local memory, up to the table's coop_local_elems (48) and within the local
       memory left beside the pair scratch; longer slices split. The CPU classes' tables
       take all of it at once (coop_resident_per_cu 0). */
    {
        const named_profile *np = coop_cpu;
        cln_limits coop = no_limits(), tight = no_limits();
        coop.force_variant = tight.force_variant = CLN_VAR_COOP;
        coop.force_slices = tight.force_slices = 1;
        /* Room for 16 more elements a work-item in groups of 8: 8 x 4 x (2 + 16) bytes,
           the flag word and the table's 16 bytes of reserve. */
        tight.max_local = 8 * 4 * (2 + 16) + 4 + 16;
        const struct {
            const cln_limits *lim;
            clnorm_dtype dt;
            size_t cols, slices, local_bytes;
        } cc[] = {
            {&coop, CLNORM_F32, 256, 1, 8 * 4 * 2 + 4},        /* the registers hold it */
            {&coop, CLNORM_F32, 389, 1, 8 * 4 * (2 + 32) + 4}, /* 56 a work-item: 24, to 32 */
            {&coop, CLNORM_F32, 512, 1, 8 * 4 * (2 + 32) + 4}, /* 64 a work-item: 32 past */
            {&coop, CLNORM_F32, 513, 1, 8 * 4 * (2 + 48) + 4}, /* 72 a work-item: 40, to 48 */
            {&coop, CLNORM_F32, 640, 1, 8 * 4 * (2 + 48) + 4}, /* 80 a work-item: 48 past */
            /* Two slices of 384 and 257 columns (whole vectors of 8 a work-item): 48 a
               work-item, 16 past the registers. */
            {&coop, CLNORM_F32, 641, 2, 8 * 4 * (2 + 16) + 4},
            {&tight, CLNORM_F32, 384, 1, 8 * 4 * (2 + 16) + 4}, /* 48 a work-item: 16 past */
            {&tight, CLNORM_F32, 385, 2, 8 * 4 * 2 + 4},        /* more than 48: 256 + 129 */
            /* 16-bit slices hold their weights as float32 ones do. */
            {&coop, CLNORM_BF16, 640, 1, 8 * 4 * (2 + 48) + 4},
            {&coop, CLNORM_F16, 641, 2, 8 * 4 * (2 + 16) + 4},
            {&tight, CLNORM_F16, 385, 2, 8 * 4 * 2 + 4},
        };
        for (size_t i = 0; i < COUNT_OF(cc); i++) {
            plan_label(label, sizeof label, np, cc[i].lim, CLN_OP_SOFTMAX_ONLINE, cc[i].dt, 3,
                       cc[i].cols);
            clnorm_status st = plan(np, cc[i].lim, CLN_OP_SOFTMAX_ONLINE, cc[i].dt, 3,
                                    cc[i].cols, &pl, why);
            if (!CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st), why))
                continue;
            plan_ok(&np->p, cc[i].lim, CLN_OP_SOFTMAX_ONLINE, cc[i].dt, 3, cc[i].cols, &pl, label);
            CHECK(pl.variant == CLN_VAR_COOP && pl.wg == 8 && pl.slices == cc[i].slices &&
                      pl.local_bytes == cc[i].local_bytes,
                  "%s: %s wg %zu, %zu slices of %zu, %zu local bytes; expected coop wg 8, %zu "
                  "slices, %zu local bytes", label, cln_variant_name(pl.variant), pl.wg,
                  pl.slices, pl.slice_len, pl.local_bytes, cc[i].slices, cc[i].local_bytes);
        }
    }
    NOTE("%zu plans checked", plans);
    check_env_limits();
}

/* ---- build options ----------------------------------------------------------------------- */
/* The options a program is built with carry the paired word the plan assumes (4 on
   GPUs, 2 on CPUs, CLNORM_PAIR_WORD over both) and the bfloat16 conversion through
   PTX only where NVIDIA's compute capability has it (8 and up) and only for bf16, and
   float32 coop loads that skip L1 from compute capability 8 with a driver of 470 or
   later. */
void test_build_options(void)
{
    named_profile gpu = make_profile("NVIDIA H200", CL_DEVICE_TYPE_GPU, 132, 1024, 49152, 32, 0, 1);
    named_profile old = make_profile("NVIDIA V100", CL_DEVICE_TYPE_GPU, 80, 1024, 49152, 32, 0, 1);
    named_profile cpu = make_profile("PoCL CPU", CL_DEVICE_TYPE_CPU, 2, 4096, 262144, 8, 0, 0);
    snprintf(gpu.p.driver_version, sizeof gpu.p.driver_version, "580.95.05");
    old.p.nv_cc_major = 7;
    snprintf(old.p.driver_version, sizeof old.p.driver_version, "580.95.05");
    named_profile older = old;
    older.p.nv_cc_major = 6;
    /* A driver before 470 has no PTX 7.4, so no L1::no_allocate. */
    named_profile early = gpu;
    snprintf(early.p.driver_version, sizeof early.p.driver_version, "465.19.01");
    cpu.p.vec = 8;
    const struct {
        const named_profile *np;
        clnorm_dtype dt;
        const char *pair_word; /* CLNORM_PAIR_WORD, or NULL */
        const char *word;      /* the -DCLN_WORD expected */
        int cvt;               /* -DCLN_NV_CVT expected */
        int noalloc;           /* -DCLN_NV_NOALLOC expected */
    } cases[] = {
        {&gpu, CLNORM_BF16, NULL, "-DCLN_WORD=4", 1, 0},
        {&gpu, CLNORM_F32, NULL, "-DCLN_WORD=4", 0, 1},
        {&gpu, CLNORM_F16, NULL, "-DCLN_WORD=4", 0, 0},
        {&old, CLNORM_BF16, NULL, "-DCLN_WORD=4", 0, 0},
        {&cpu, CLNORM_BF16, NULL, "-DCLN_WORD=2", 0, 0},
        {&gpu, CLNORM_BF16, "2", "-DCLN_WORD=2", 1, 0},
        {&cpu, CLNORM_F32, "4", "-DCLN_WORD=4", 0, 0},
        {&older, CLNORM_F32, NULL, "-DCLN_WORD=4", 0, 0},
        {&early, CLNORM_F32, NULL, "-DCLN_WORD=4", 0, 0},
    };
    for (size_t i = 0; i < COUNT_OF(cases); i++) {
        char buf[512];
        t_config("CLNORM_PAIR_WORD", cases[i].pair_word);
        cln_build_options(&cases[i].np->p, cases[i].dt, cases[i].np->p.best_path, buf, sizeof buf);
        CHECK(strstr(buf, cases[i].word) != NULL, "%s %s, CLNORM_PAIR_WORD=%s: \"%s\" lacks %s",
              cases[i].np->p.device_name, cln_dtype_name(cases[i].dt),
              cases[i].pair_word ? cases[i].pair_word : "(unset)", buf, cases[i].word);
        CHECK((strstr(buf, "-DCLN_NV_CVT") != NULL) == cases[i].cvt,
              "%s %s: \"%s\" should %shave -DCLN_NV_CVT", cases[i].np->p.device_name,
              cln_dtype_name(cases[i].dt), buf, cases[i].cvt ? "" : "not ");
        CHECK((strstr(buf, "-DCLN_NV_NOALLOC") != NULL) == cases[i].noalloc,
              "%s driver %s %s: \"%s\" should %shave -DCLN_NV_NOALLOC", cases[i].np->p.device_name,
              cases[i].np->p.driver_version, cln_dtype_name(cases[i].dt), buf,
              cases[i].noalloc ? "" : "not ");
        /* The coop kernel's relaxed accesses at the device's scope are NVIDIA's inline
           PTX, from compute capability 7. */
        const int relaxed = cases[i].np->p.nv && cases[i].np->p.nv_cc_major >= 7;
        CHECK((strstr(buf, "-DCLN_NV_RELAXED") != NULL) == relaxed,
              "%s %s: \"%s\" should %shave -DCLN_NV_RELAXED", cases[i].np->p.device_name,
              cln_dtype_name(cases[i].dt), buf, relaxed ? "" : "not ");
    }
    /* The local path, where the NVIDIA path's program did not build, goes without it. */
    {
        char buf[512];
        t_config("CLNORM_PAIR_WORD", NULL);
        cln_build_options(&gpu.p, CLNORM_F32, CLN_PATH_LOCAL, buf, sizeof buf);
        CHECK(strstr(buf, "-DCLN_NV_NOALLOC") == NULL, "NVIDIA H200's local path: \"%s\"", buf);
    }
    /* The loops' layout: GPUs 16 bytes a work-item, dealt round-robin; PoCL its own
       block in its preferred vectors; llvmpipe, whose work-items are SIMD lanes, a GPU's
       round-robin vectors of 4 (8 in bfloat16), and the CPU attention's scalar form. */
    named_profile lanes = make_profile("Rusticl llvmpipe", CL_DEVICE_TYPE_CPU, 2, 1024, 32768, 8, 0, 0);
    lanes.p.vec = gpu.p.vec = 4;
    lanes.p.simd_lanes = 1;
    const struct {
        const named_profile *np;
        clnorm_dtype dt;
        const char *loops;
        int simd_lanes;
    } layouts[] = {
        {&gpu, CLNORM_F32, "-DCLN_VEC=4 -DCLN_BLOCKED=0", 0},
        {&gpu, CLNORM_BF16, "-DCLN_VEC=8 -DCLN_BLOCKED=0", 0},
        {&cpu, CLNORM_F32, "-DCLN_VEC=8 -DCLN_BLOCKED=1", 0},
        {&cpu, CLNORM_F16, "-DCLN_VEC=8 -DCLN_BLOCKED=1", 0},
        {&lanes, CLNORM_F32, "-DCLN_VEC=4 -DCLN_BLOCKED=0", 1},
        {&lanes, CLNORM_BF16, "-DCLN_VEC=8 -DCLN_BLOCKED=0", 1},
        {&lanes, CLNORM_F16, "-DCLN_VEC=4 -DCLN_BLOCKED=0", 1},
    };
    t_config("CLNORM_PAIR_WORD", NULL);
    for (size_t i = 0; i < COUNT_OF(layouts); i++) {
        char buf[512];
        cln_build_options(&layouts[i].np->p, layouts[i].dt, layouts[i].np->p.best_path, buf,
                          sizeof buf);
        CHECK(strstr(buf, layouts[i].loops) != NULL, "%s %s: \"%s\" lacks %s",
              layouts[i].np->p.device_name, cln_dtype_name(layouts[i].dt), buf,
              layouts[i].loops);
        CHECK((strstr(buf, "-DCLN_SIMD_LANES=1") != NULL) == layouts[i].simd_lanes,
              "%s %s: \"%s\" should %shave -DCLN_SIMD_LANES=1", layouts[i].np->p.device_name,
              cln_dtype_name(layouts[i].dt), buf, layouts[i].simd_lanes ? "" : "not ");
    }
    /* CLNORM_PROGRAMS: "one" compiles the kernel alone on any device, "all" never, and
       the default does where the disk cache is on and keeps binaries: not on Rusticl. */
    named_profile pocl = cpu, rusticl = cpu;
    pocl.p.pocl_major = 3;
    snprintf(rusticl.p.platform_name, sizeof rusticl.p.platform_name, "rusticl");
    t_config("CLNORM_PAIR_WORD", NULL);
    t_config("CLNORM_CACHE_DIR", "/tmp/clnorm-unit-cache");
    const struct {
        const named_profile *np;
        const char *programs; /* CLNORM_PROGRAMS, or NULL */
        int only;             /* -DCLN_ONLY expected */
    } progs[] = {
        {&gpu, NULL, 1},     {&gpu, "auto", 1},    {&gpu, "all", 0},    {&pocl, NULL, 1},
        {&pocl, "all", 0},   {&rusticl, NULL, 0},  {&rusticl, "one", 1}, {&rusticl, "auto", 0},
    };
    const cln_kernel_id kid = (cln_kernel_id)0;
    char want[96];
    snprintf(want, sizeof want, "-DCLN_ONLY_%s=1", cln_kernel_name(kid));
    for (size_t i = 0; i < COUNT_OF(progs); i++) {
        char buf[512];
        t_config("CLNORM_PROGRAMS", progs[i].programs);
        cln_program_options(&progs[i].np->p, CLNORM_F32, progs[i].np->p.best_path, kid, buf,
                            sizeof buf);
        CHECK((strstr(buf, want) != NULL) == progs[i].only,
              "%s (PoCL %d), CLNORM_PROGRAMS=%s: \"%s\" should %shave %s",
              progs[i].np->p.device_name, progs[i].np->p.pocl_major,
              progs[i].programs ? progs[i].programs : "(unset)", buf, progs[i].only ? "" : "not ",
              want);
    }
    t_config("CLNORM_CACHE_DIR", "off");
    t_config("CLNORM_PROGRAMS", NULL);
    {
        char buf[512];
        cln_program_options(&pocl.p, CLNORM_F32, pocl.p.best_path, kid, buf, sizeof buf);
        CHECK(!strstr(buf, "-DCLN_ONLY"), "PoCL with the disk cache off: \"%s\"", buf);
        cln_program_options(&gpu.p, CLNORM_F32, gpu.p.best_path, kid, buf, sizeof buf);
        CHECK(!strstr(buf, "-DCLN_ONLY"), "NVIDIA with the disk cache off: \"%s\"", buf);
    }
    /* A value that is none of them is refused by the reader, and named. */
    t_setenv("CLNORM_PROGRAMS", "some");
    clnorm_config c;
    CHECK_ST(clnorm_config_from_env(&c), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "CLNORM_PROGRAMS=\"some\""), "message \"%s\"",
          clnorm_last_error());
    t_env_restore();
}
