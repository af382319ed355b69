/* coop_softmax: the one-launch split (coop variant) of softmax, forced and automatic,
   on random and special rows of every dtype, against the float64 reference. Where the
   device cannot take it (all but NVIDIA) the forced variant must run the two-launch
   split instead, and the same values are checked. */
#include "clnorm_advanced.h"
#include "faults.h"
#include "profile.h"
#include "scratch.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs one softmax call with the settings in force, x at offset xoff and y at yoff,
   both with leading dimension ld; returns the variant that ran, or -1 where the call
   failed its check. */
static int run_softmax_at(top op, clnorm_dtype dt, size_t rows, size_t cols, const float *x,
                          size_t xoff, size_t yoff, size_t ld)
{
    op_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.dt = dt;
    a.rows = rows;
    a.cols = cols;
    a.x = x;
    a.xoff = xoff;
    a.yoff = yoff;
    a.xld = ld;
    a.yld = ld;
    clnorm_plan_info pl;
    if (check_op(&a, CLNORM_SUCCESS) != CLNORM_SUCCESS) return -1;
    if (!CHECK(clnorm_last_plan(&pl), "softmax %zux%zu: no plan recorded", rows, cols)) return -1;
    return pl.variant;
}

/* The same with x and y at one offset. */
static int run_softmax(top op, clnorm_dtype dt, size_t rows, size_t cols, const float *x,
                       size_t off, size_t ld)
{
    return run_softmax_at(op, dt, rows, cols, x, off, off, ld);
}

/* Special rows: all -inf; -inf in every slice but one; a NaN in the last slice; +inf
   in the first and the last slice; one finite maximum in the middle of -inf. */
static void special_rows(float *x, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * cols;
        switch (r % 5) {
        case 0:
            for (size_t c = 0; c < cols; c++) row[c] = -INFINITY;
            break;
        case 1:
            for (size_t c = 0; c < cols; c++) row[c] = c < cols - cols / 7 ? -INFINITY : row[c];
            break;
        case 2: row[cols - 1] = NAN; break;
        case 3:
            row[0] = INFINITY;
            row[cols - 1] = INFINITY;
            break;
        case 4:
            for (size_t c = 0; c < cols; c++) row[c] = -INFINITY;
            row[cols / 2] = 3.0f;
            break;
        }
    }
}

void test_coop_softmax(void)
{
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 0, &info), CLNORM_SUCCESS)) return;
    /* Only NVIDIA devices take the coop form; everywhere else a forced coop runs the
       two-launch split. */
    const int nv = strstr(info.platform_name, "NVIDIA") != NULL;
    const clnorm_variant want = nv ? CLNORM_VARIANT_COOP : CLNORM_VARIANT_SPLIT;
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    /* Columns: one short row, primes, a power of two plus one; slices forced from 1 to
       7 so that slices end inside vectors and rows hold several. */
    static const size_t cols_list[] = {1, 997, 4104, 32776, 100003};
    static const size_t rows_list[] = {1, 3, 5};
    size_t runs = 0, as_want = 0;
    for (size_t c = 0; c < COUNT_OF(cols_list); c++)
        for (size_t ri = 0; ri < COUNT_OF(rows_list); ri++)
            for (size_t d = 0; d < COUNT_OF(dts); d++) {
                const size_t cols = cols_list[c], rows = rows_list[ri];
                const size_t slices = 1 + (c + ri + d) % 7;
                float *x = malloc(rows * cols * sizeof *x);
                if (!CHECK(x != NULL, "out of memory")) return;
                gen_rows(&R, x, rows, cols);
                const int special = (c + d) % 2 && cols > 7;
                if (special) special_rows(x, rows, cols);
                t_env_restore();
                plan_set("coop", 0, 0, slices);
                const top op = (c + ri + d) % 2 ? OP_SOFTMAX_ONLINE : OP_SOFTMAX_3PASS;
                /* A forced coop runs at any alignment (past a few loose elements
                   where x and y start at one place in the vector, element by element
                   where they start at two). */
                const clnorm_variant here = want;
                int v = run_softmax(op, dts[d], rows, cols, x, 0, 0);
                runs++;
                as_want += v == (int)want;
                CHECK(v < 0 || v == (int)here,
                      "%s %s %zux%zu%s, coop forced with %zu slices: ran %s, expected %s",
                      op_name(op), dt_name(dts[d]), rows, cols, special ? " (special rows)" : "",
                      slices, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v),
                      clnorm_variant_name(here));
                /* Rows that do not start at a whole vector, x and y at one place in
                   it and at two. */
                if (rows > 1 && cols > 7)
                    for (size_t yoff = 0; yoff < 2; yoff++) {
                        v = run_softmax_at(op, dts[d], rows, cols, x, 1, yoff, cols + 3);
                        CHECK(v < 0 || v == (int)want,
                              "%s %s %zux%zu, x at offset 1, y at %zu, ld %zu: ran %s, "
                              "expected %s", op_name(op), dt_name(dts[d]), rows, cols, yoff,
                              cols + 3, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v),
                              clnorm_variant_name(want));
                    }
                free(x);
            }
    t_env_restore();
    NOTE("%zu forced calls, %zu ran %s", runs, as_want, clnorm_variant_name(want));
    CHECK(as_want > runs / 3, "the forced coop form ran %s in %zu of %zu calls",
          clnorm_variant_name(want), as_want, runs);

    /* Every device runs the coop kernel where each row is one slice, so no group waits
       for another: injected as if the device ran its groups side by side, with rows
       at every alignment (the kernel leaves a slice's first elements loose where x and
       y start at one place in the vector, and loads element by element where they
       start at two). */
    if (!nv) {
        t_setenv("CLNORM_TEST_FAULTS", "coop");
        CHECK(cln_faults_set("coop") == 0, "fault coop refused");
        CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
    }
    /* At most 8 x (32 + 48) columns: one slice for the CPU classes' groups of 8, held
       in registers up to 256 columns and past them in local memory, in one batch up to
       512 and in two past it. */
    static const size_t one_cols[] = {1, 37, 200, 256, 389, 512, 577, 640};
    size_t coop_ran = 0, coop_runs = 0;
    for (size_t c = 0; c < COUNT_OF(one_cols); c++)
        for (size_t d = 0; d < COUNT_OF(dts); d++) {
            const size_t cols = one_cols[c], rows = 3;
            float *x = malloc(rows * cols * sizeof *x);
            if (!CHECK(x != NULL, "out of memory")) break;
            gen_rows(&R, x, rows, cols);
            if ((c + d) % 2 && cols > 7) special_rows(x, rows, cols);
            t_config("CLNORM_VARIANT", "coop");
            t_config_num("CLNORM_SPLIT", 1);
            for (size_t off = 0; off < 3; off++) {
                /* x and y at offset 0, then 1 with leading dimension cols + 1 (rows at
                   every place in the vector, the first elements of each loose), then x
                   at 1 and y at 0 (element by element). */
                int v = run_softmax_at(d % 2 ? OP_SOFTMAX_ONLINE : OP_SOFTMAX_3PASS, dts[d],
                                       rows, cols, x, off ? 1 : 0, off == 1, off ? cols + 1 : 0);
                coop_runs++;
                coop_ran += v == CLNORM_VARIANT_COOP;
            }
            free(x);
        }
    if (!nv) {
        t_setenv("CLNORM_TEST_FAULTS", NULL);
        cln_faults_set("");
        CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
    }
    t_env_restore();
    CHECK(coop_ran * 4 >= coop_runs, "the coop kernel ran %zu of %zu one-slice calls", coop_ran,
          coop_runs);

    /* The plan's own choice on vocabulary-sized rows, and the same values whatever ran:
       on NVIDIA, coop for many rows or few, in float32 or bfloat16, the split for a
       row whose slices would outnumber the compute units (cln_plan_coop_slices). */
    const size_t rows = 32, cols = 128256;
    float *x = malloc(rows * cols * sizeof *x);
    if (!CHECK(x != NULL, "out of memory")) return;
    gen_rows(&R, x, rows, cols);
    int v = run_softmax(OP_SOFTMAX_AUTO, CLNORM_F32, rows, cols, x, 0, 0);
    if (nv)
        CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax f32 %zux%zu: the plan ran %s, "
              "expected coop", rows, cols, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
    v = run_softmax(OP_SOFTMAX_AUTO, CLNORM_BF16, rows, cols, x, 0, 0);
    if (nv)
        CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax bf16 %zux%zu: the plan ran %s, "
              "expected coop", rows, cols, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
    v = run_softmax(OP_SOFTMAX_AUTO, CLNORM_BF16, 4, cols, x, 0, 0);
    if (nv)
        CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax bf16 4x%zu: the plan ran %s, "
              "expected coop", cols, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
    v = run_softmax(OP_SOFTMAX_AUTO, CLNORM_F32, 1, cols, x, 0, 0);
    if (nv)
        CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax f32 1x%zu: the plan ran %s, "
              "expected coop", cols, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
    /* One row of all the buffer: slices of at most 128 x 64 elements, more of them than
       an H100's or H200's 132 compute units. */
    cl_uint cus = 0;
    clGetDeviceInfo(T.dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    if (nv && (size_t)cus * 128 * 64 < rows * cols) {
        v = run_softmax(OP_SOFTMAX_AUTO, CLNORM_F32, 1, rows * cols, x, 0, 0);
        CHECK(v < 0 || v == CLNORM_VARIANT_SPLIT, "softmax f32 1x%zu: the plan ran %s, "
              "expected split", rows * cols,
              v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
    }
    /* Rows that do not start at whole vectors take the one launch where x's and y's
       rows sit at one place in the vector (loading in vectors past their first
       elements). Where they sit at two, float32 rows still take it, loading element
       by element, and 16-bit rows split. */
    for (size_t d = 0; d < 3; d++)
        for (size_t yoff = 0; yoff < 2; yoff++) {
            const clnorm_dtype dt = d == 0 ? CLNORM_F32 : d == 1 ? CLNORM_F16 : CLNORM_BF16;
            const clnorm_variant w =
                yoff || dt == CLNORM_F32 ? CLNORM_VARIANT_COOP : CLNORM_VARIANT_SPLIT;
            v = run_softmax_at(OP_SOFTMAX_AUTO, dt, rows, cols - 1, x, 1, yoff, cols);
            if (nv)
                CHECK(v < 0 || v == (int)w, "softmax %s %zux%zu, x at offset 1, y at %zu, ld "
                      "%zu: the plan ran %s, expected %s", dt_name(dt), rows, cols - 1, yoff,
                      cols, v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v),
                      clnorm_variant_name(w));
        }
    free(x);
    /* Rows of odd length that the register form would load element by element take
       the one launch on NVIDIA from a few thousand columns, one slice a row, with
       special rows among them. */
    {
        const size_t orows = 97, ocols = 5003;
        float *ox = malloc(orows * ocols * sizeof *ox);
        if (!CHECK(ox != NULL, "out of memory")) return;
        gen_rows(&R, ox, orows, ocols);
        special_rows(ox, orows, ocols);
        for (size_t d = 0; d < 3; d++) {
            const clnorm_dtype dt = d == 0 ? CLNORM_F32 : d == 1 ? CLNORM_F16 : CLNORM_BF16;
            v = run_softmax(OP_SOFTMAX_AUTO, dt, orows, ocols, ox, 0, 0);
            if (nv)
                CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax %s %zux%zu: the plan ran %s, "
                      "expected coop", dt_name(dt), orows, ocols,
                      v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
        }
        free(ox);
    }
    /* Many rows too long for the registers take the one launch on NVIDIA however many
       there are: 830 rows of 5 slices, 4150 groups, whose synchronisation words
       outnumber the fault sync-small's pool, with special rows among them and a
       leading dimension past the row. */
    if (nv) {
        const size_t mrows = 830, mcols = 32776, ld = mcols + 8;
        float *mx = malloc(mrows * mcols * sizeof *mx);
        if (!CHECK(mx != NULL, "out of memory")) return;
        gen_rows(&R, mx, mrows, mcols);
        special_rows(mx, mrows / 4, mcols);
        for (size_t d = 0; d < 2; d++) {
            const clnorm_dtype dt = d ? CLNORM_BF16 : CLNORM_F32;
            v = run_softmax(OP_SOFTMAX_AUTO, dt, mrows, mcols, mx, 0, ld);
            CHECK(v < 0 || v == CLNORM_VARIANT_COOP, "softmax %s %zux%zu (ld %zu): the plan "
                  "ran %s, expected coop", dt_name(dt), mrows, mcols, ld,
                  v < 0 ? "none" : clnorm_variant_name((clnorm_variant)v));
        }
        free(mx);
    }
}

/* Coop calls from several threads on queues of their own at once: they run one at a
   time (src/serial.c), so none waits forever for groups of another, and each gives
   the same values. */
typedef struct coop_job {
    cl_command_queue q;
    cl_mem x, y;
    size_t rows, cols;
    clnorm_status st;
    float *got;
} coop_job;

static void *coop_worker(void *arg)
{
    coop_job *j = arg;
    clnorm_matrix vx = {j->x, 0, 0}, vy = {j->y, 0, 0};
    for (int i = 0; i < 4 && !j->st; i++)
        j->st = clnorm_softmax(j->q, CLNORM_F32, j->rows, j->cols, vx, vy, CLNORM_SOFTMAX_AUTO,
                               0, NULL, NULL);
    if (!j->st && clFinish(j->q) != CL_SUCCESS) j->st = CLNORM_OPENCL_ERROR;
    if (!j->st && !t_read(j->q, j->y, j->rows * j->cols * sizeof(float), j->got))
        j->st = CLNORM_OPENCL_ERROR;
    return NULL;
}

void test_coop_threads(void)
{
    enum { THREADS = 6 };
    const size_t rows = 2, cols = 262144, n = rows * cols;
    float *x = malloc(n * sizeof *x);
    double *want = malloc(n * sizeof *want);
    coop_job jobs[THREADS];
    pthread_t tid[THREADS];
    memset(jobs, 0, sizeof jobs);
    if (!CHECK(x && want, "out of memory")) goto done;
    gen_rows(&R, x, rows, cols);
    ref_softmax(x, rows, cols, want);
    for (int i = 0; i < THREADS; i++) {
        jobs[i].q = t_new_queue(T.ctx, T.dev, 0);
        jobs[i].x = t_buffer(T.ctx, n * sizeof(float), x);
        jobs[i].y = t_buffer(T.ctx, n * sizeof(float), NULL);
        jobs[i].got = malloc(n * sizeof(float));
        jobs[i].rows = rows;
        jobs[i].cols = cols;
        if (!CHECK(jobs[i].q && jobs[i].x && jobs[i].y && jobs[i].got, "thread %d: setup", i))
            goto done;
    }
    for (int i = 0; i < THREADS; i++) pthread_create(&tid[i], NULL, coop_worker, &jobs[i]);
    for (int i = 0; i < THREADS; i++) pthread_join(tid[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        char label[64];
        snprintf(label, sizeof label, "thread %d: softmax f32 %zux%zu", i, rows, cols);
        if (CHECK_ST(jobs[i].st, CLNORM_SUCCESS))
            COMPARE(label, jobs[i].got, want, rows, cols, tol_rel(CLNORM_F32, cols),
                    tol_abs(CLNORM_F32));
    }
done:
    for (int i = 0; i < THREADS; i++) {
        if (jobs[i].q) clReleaseCommandQueue(jobs[i].q);
        if (jobs[i].x) clReleaseMemObject(jobs[i].x);
        if (jobs[i].y) clReleaseMemObject(jobs[i].y);
        free(jobs[i].got);
    }
    free(x);
    free(want);
}

/* The same vocabulary-sized softmax called again and again gives the same bits every
   time, and the first call is within the contract: on NVIDIA the one-launch form, whose
   groups pass their pairs through memory (a pair read before it was written, or one
   left from an earlier call, would show as a changed result), elsewhere whatever the
   plan runs. The second half of the calls runs with few synchronisation words, so
   that they run out and are zeroed again every few calls. */
void test_coop_repeat(void)
{
    enum { CALLS = 24 };
    const size_t rows = 32, cols = 128256, n = rows * cols;
    float *x = malloc(n * sizeof *x), *first = malloc(n * sizeof *first),
          *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want);
    cl_mem bx = NULL, by = NULL;
    if (!CHECK(x && first && got && want, "out of memory")) goto done;
    gen_rows(&R, x, rows, cols);
    ref_softmax(x, rows, cols, want);
    bx = t_buffer(T.ctx, n * sizeof(float), x);
    by = t_buffer(T.ctx, n * sizeof(float), NULL);
    if (!CHECK(bx && by, "buffers of %zu floats", n)) goto done;
    clnorm_matrix vx = {bx, 0, 0}, vy = {by, 0, 0};
    const char *ran = "?";
    for (int i = 0; i < CALLS; i++) {
        if (i == CALLS / 2 && !CHECK(cln_faults_set("sync-small") == 0, "fault sync-small refused"))
            goto done;
        /* Poison the output so that an element left unwritten shows too. */
        const float nan = NAN;
        if (!CHECK_CL(clEnqueueFillBuffer(T.q, by, &nan, sizeof nan, 0, n * sizeof(float), 0,
                                          NULL, NULL)))
            goto done;
        if (!CHECK_ST(clnorm_softmax(T.q, CLNORM_F32, rows, cols, vx, vy, CLNORM_SOFTMAX_AUTO, 0,
                                     NULL, NULL),
                      CLNORM_SUCCESS) ||
            !CHECK(t_read(T.q, by, n * sizeof(float), i ? got : first), "reading call %d", i))
            goto done;
        if (!i) {
            clnorm_plan_info pl;
            if (clnorm_last_plan(&pl)) ran = clnorm_variant_name(pl.variant);
            COMPARE("softmax f32 32x128256, first call", first, want, rows, cols,
                    tol_rel(CLNORM_F32, cols), tol_abs(CLNORM_F32));
        } else {
            size_t k = 0; /* the first element whose bits differ, n where none does */
            while (k < n && !memcmp(got + k, first + k, sizeof(float))) k++;
            CHECK(k == n, "call %d of softmax f32 32x128256 (%s) differs from the first at row %zu, "
                  "column %zu: %a against %a", i, ran, k / cols, k % cols, got[k], first[k]);
        }
    }
    NOTE("%d calls (%s)", CALLS, ran);
done:
    cln_faults_set("");
    if (bx) clReleaseMemObject(bx);
    if (by) clReleaseMemObject(by);
    free(x);
    free(first);
    free(got);
    free(want);
}

/* Whether words [from, end) of mem read back as zero; what names the call. */
static int sync_words_zero(cl_mem mem, cl_uint *back, size_t from, size_t end, const char *what)
{
    if (!CHECK(t_read(T.q, mem, end * sizeof *back, back), "%s: reading the words", what))
        return 0;
    size_t k = from;
    while (k < end && back[k] == 0) k++;
    return CHECK(k == end, "%s: word %zu is %#x after zeroing", what, k, k < end ? back[k] : 0);
}

/* The coop variant's synchronisation words (src/scratch.c): each call gets words from
   an even index that no call has used since they were zeroed; when they run out, a
   fill on the queue zeroes them again and the call gets its event to wait for. The
   words are dirtied here after each call as its kernel would, and the whole pool is
   read back after each refill. */
void test_coop_sync_words(void)
{
    enum { WORDS = 1025, POOL = CLN_SYNC_WORDS_SMALL, CALLS = 24 };
    cln_scratch *s = NULL;
    cl_uint *back = malloc((POOL + 2) * sizeof *back);
    int refills = 0;
    if (!CHECK(back, "out of memory") ||
        !CHECK(cln_faults_set("sync-small") == 0, "fault sync-small refused") ||
        !CHECK_ST(cln_scratch_acquire(T.ctx, T.q, 1, 64, &s), CLNORM_SUCCESS))
        goto done;
    size_t next = 0;
    for (int i = 0; i < CALLS; i++) {
        cl_mem mem = NULL;
        cl_uint base = 0;
        cl_event zeroed = NULL;
        if (!CHECK_ST(cln_scratch_sync(s, T.q, WORDS, &mem, &base, &zeroed), CLNORM_SUCCESS))
            goto done;
        /* The first call creates the words: zero, from the host. */
        const int wrapped = i > 0 && next + WORDS > POOL;
        const size_t want = wrapped ? 0 : next;
        CHECK(i == 0 ? base % 2 == 0 : base == want,
              "call %d: words from %u, expected %zu (the last ended at %zu)", i, base, want, next);
        CHECK((zeroed != NULL) == wrapped, "call %d: %s fill event, words from %u of %d", i,
              zeroed ? "a" : "no", base, POOL);
        if (zeroed) {
            refills++;
            CHECK_CL(clWaitForEvents(1, &zeroed));
            clReleaseEvent(zeroed);
        }
        if (i == 0 || wrapped) {
            char what[32];
            snprintf(what, sizeof what, "call %d", i);
            sync_words_zero(mem, back, i == 0 ? base : 0, i == 0 ? base + WORDS : POOL, what);
        }
        const cl_uint dirt = 0xdeadbeefu;
        if (!CHECK_CL(clEnqueueFillBuffer(T.q, mem, &dirt, sizeof dirt, base * sizeof dirt,
                                          WORDS * sizeof dirt, 0, NULL, NULL)))
            goto done;
        next = ((size_t)base + WORDS + 1) & ~(size_t)1;
    }
    CHECK(refills >= 2, "%d refills in %d calls of %d words from %d", refills, CALLS, WORDS, POOL);
    {
        /* A call larger than the fault's pool takes the buffer's words from the start,
           zeroed again, every time; one larger than the buffer is refused. */
        cl_mem mem = NULL;
        cl_uint base = 1;
        cl_event zeroed = NULL;
        for (int i = 0; i < 2; i++) {
            if (!CHECK_ST(cln_scratch_sync(s, T.q, POOL + 2, &mem, &base, &zeroed), CLNORM_SUCCESS))
                goto done;
            CHECK(base == 0 && zeroed != NULL, "a call of %d words from a pool of %d: words from "
                  "%u, %s fill event", POOL + 2, POOL, base, zeroed ? "a" : "no");
            if (zeroed) {
                CHECK_CL(clWaitForEvents(1, &zeroed));
                clReleaseEvent(zeroed);
                zeroed = NULL;
            }
            sync_words_zero(mem, back, 0, POOL + 2, "a call past the pool");
            const cl_uint dirt = 0xdeadbeefu;
            CHECK_CL(clEnqueueFillBuffer(T.q, mem, &dirt, sizeof dirt, 0, (POOL + 2) * sizeof dirt,
                                         0, NULL, NULL));
        }
        CHECK_ST(cln_scratch_sync(s, T.q, (size_t)CLN_SYNC_WORDS + 1, &mem, &base, &zeroed),
                 CLNORM_INVALID_ARGUMENT);
    }
    NOTE("%d refills in %d calls", refills, CALLS);
done:
    if (s) cln_scratch_release(s, NULL);
    clFinish(T.q);
    cln_faults_set("");
    free(back);
}

/* Whether e stays incomplete for secs seconds, polling. */
static int coop_stays_pending(cl_event e, double secs)
{
    for (double t0 = t_now(); t_now() - t0 < secs; t_sleep_ms(5))
        if (t_event_status(e) <= CL_COMPLETE) return 0;
    return 1;
}

/* One coop softmax of x into y on q, waiting for gate where not NULL; checks that the
   coop variant ran. */
static int coop_call(cl_command_queue q, cl_mem x, cl_mem y, size_t rows, size_t cols,
                     cl_event gate, cl_event *event, const char *what)
{
    clnorm_matrix vx = {x, 0, 0}, vy = {y, 0, 0};
    clnorm_plan_info pl;
    if (!CHECK_ST(clnorm_softmax(q, CLNORM_F32, rows, cols, vx, vy, CLNORM_SOFTMAX_AUTO,
                                 gate ? 1 : 0, gate ? &gate : NULL, event),
                  CLNORM_SUCCESS))
        return 0;
    return CHECK(clnorm_last_plan(&pl) && pl.variant == CLNORM_VARIANT_COOP,
                 "%s: softmax f32 %zux%zu did not run the coop variant", what, rows, cols);
}

/* Coop calls run one at a time in the process whatever queue they come on
   (src/serial.c): one after another on an in-order queue by the queue's order, a call
   on another queue behind a marker on the last one's queue, or behind its event where
   that queue runs out of order. A call held back by a user event on one queue holds
   back the next coop call on another until it is set, and every output is right. A
   queue the caller releases while the library records it stays usable to the library.
   Elsewhere than NVIDIA the coop kernel runs with one slice per row, the serial mode
   of every operation off, so that only the coop chain orders the calls. */
void test_coop_queues(void)
{
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 0, &info), CLNORM_SUCCESS)) return;
    const int nv = strstr(info.platform_name, "NVIDIA") != NULL;
    const size_t rows = nv ? 32 : 3, cols = nv ? 128256 : 389, n = rows * cols;
    const size_t bytes = n * sizeof(float);
    enum { OUTS = 4 };
    float *x = malloc(bytes), *got = malloc(bytes);
    double *want = malloc(n * sizeof *want);
    cl_command_queue a = t_new_queue(T.ctx, T.dev, 0), b = t_new_queue(T.ctx, T.dev, 0);
    cl_command_queue ooo = t_new_queue(T.ctx, T.dev, 1), a2 = NULL;
    cl_mem bx = NULL, y[OUTS] = {0};
    cl_event u = NULL, eb = NULL;
    cl_int err = CL_SUCCESS;
    if (!nv) {
        t_setenv("CLNORM_TEST_FAULTS", "coop");
        CHECK(cln_faults_set("coop") == 0, "fault coop refused");
        CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
        t_config("CLNORM_VARIANT", "coop");
        t_config_num("CLNORM_SPLIT", 1);
        t_config_num("CLNORM_SERIAL", 0);
    }
    if (!CHECK(x && got && want, "out of memory") || !CHECK(a && b, "two in-order queues"))
        goto done;
    gen_rows(&R, x, rows, cols);
    ref_softmax(x, rows, cols, want);
    bx = t_buffer(T.ctx, bytes, x);
    for (int i = 0; i < OUTS; i++) y[i] = t_buffer(T.ctx, bytes, NULL);
    if (!CHECK(bx && y[0] && y[1] && y[2] && y[3], "buffers of %zu floats", n)) goto done;

    /* Queue a holds two calls behind a user event; the call on b must wait for them. */
    const char *firsts[] = {"in-order queue", "out-of-order queue"};
    for (int round = 0; round < 2; round++) {
        cl_command_queue q = round ? ooo : a;
        if (!q) {
            NOTE("no out-of-order queue on this device: only in-order queues checked");
            break;
        }
        const float nan = NAN;
        for (int i = 0; i < OUTS; i++)
            if (!CHECK_CL(clEnqueueFillBuffer(T.q, y[i], &nan, sizeof nan, 0, bytes, 0, NULL,
                                              NULL)))
                goto done;
        if (!CHECK_CL(clFinish(T.q))) goto done;
        u = clCreateUserEvent(T.ctx, &err);
        if (!CHECK_CL(err) || !coop_call(q, bx, y[0], rows, cols, u, NULL, firsts[round]) ||
            !coop_call(q, bx, y[1], rows, cols, NULL, NULL, firsts[round]) ||
            !coop_call(b, bx, y[2], rows, cols, NULL, &eb, "the other queue"))
            goto done;
        clFlush(q);
        clFlush(b);
        CHECK(coop_stays_pending(eb, 0.2),
              "a coop call on a second queue ran while two coop calls on an %s were held "
              "back by a user event", firsts[round]);
        CHECK_CL(clSetUserEventStatus(u, CL_COMPLETE));
        if (!CHECK_CL(clFinish(q)) || !CHECK_CL(clFinish(b))) goto done;
        /* Each output is read on the queue that wrote it: Rusticl 22.3 shows another
           queue the contents from before a kernel that a user event held back
           (docs/DESIGN.md, 'Driver quirks'). */
        for (int i = 0; i < 3; i++) {
            char label[96];
            snprintf(label, sizeof label, "softmax f32 %zux%zu, call %d (%s first)", rows, cols,
                     i, firsts[round]);
            if (CHECK(t_read(i < 2 ? q : b, y[i], bytes, got), "reading call %d", i))
                COMPARE(label, got, want, rows, cols, tol_rel(CLNORM_F32, cols),
                        tol_abs(CLNORM_F32));
        }
        clReleaseEvent(u), u = NULL;
        clReleaseEvent(eb), eb = NULL;
    }

    /* A queue released by the caller right after its call: the library still holds it
       until the next call, on b, waits for it. */
    a2 = t_new_queue(T.ctx, T.dev, 0);
    if (!CHECK(a2 != NULL, "a third in-order queue") ||
        !coop_call(a2, bx, y[3], rows, cols, NULL, NULL, "a queue released after its call"))
        goto done;
    clReleaseCommandQueue(a2), a2 = NULL;
    if (coop_call(b, bx, y[2], rows, cols, NULL, NULL, "after a released queue") &&
        CHECK_CL(clFinish(b))) {
        for (int i = 2; i < 4; i++)
            if (CHECK(t_read(b, y[i], bytes, got), "reading output %d", i))
                COMPARE("softmax f32 beside a released queue", got, want, rows, cols,
                        tol_rel(CLNORM_F32, cols), tol_abs(CLNORM_F32));
    }
done:
    if (u) {
        clSetUserEventStatus(u, CL_COMPLETE);
        clReleaseEvent(u);
    }
    if (eb) clReleaseEvent(eb);
    if (a) clFinish(a), clReleaseCommandQueue(a);
    if (b) clFinish(b), clReleaseCommandQueue(b);
    if (ooo) clFinish(ooo), clReleaseCommandQueue(ooo);
    if (a2) clReleaseCommandQueue(a2);
    for (int i = 0; i < OUTS; i++)
        if (y[i]) clReleaseMemObject(y[i]);
    if (bx) clReleaseMemObject(bx);
    if (!nv) {
        t_setenv("CLNORM_TEST_FAULTS", NULL);
        cln_faults_set("");
        CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
    }
    t_env_restore();
    free(x);
    free(got);
    free(want);
}
