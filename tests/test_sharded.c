/* sharded_values, sharded_special, sharded_bad_input, sharded_devices, sharded_threads:
   clnorm_softmax_sharded against the float64 reference of the unsharded softmax of
   the concatenated rows. Shards live in buffers of their own (with ld > cols), side
   by side in one shared matrix, in place, or all in one buffer, each view at a stride
   of its own (spans crossing, no element shared); every byte outside the shards' y views
   starts poisoned (y buffers) or as a NaN canary (x buffers) and must come back
   unchanged. sharded_devices puts shards on two devices at once: the device under
   test and a second one, CLNORM_TEST_SECOND_DEVICE (a clnorm_session_create spec),
   by default "pocl", or "llvmpipe" where the device under test is PoCL; sharded_threads
   runs such calls from four threads at once on the same two queues. */
#include "test.h"
#include "clnorm_advanced.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SHARDS = 6, MAX_BUFS = 2 * MAX_SHARDS };
enum { L_SEPARATE, L_SHARED, L_INPLACE, L_STRIDES, L_COUNT };
static const char *const layout_names[L_COUNT] = {"separate", "shared", "in place", "strides"};

/* The buffers of one problem: host images, their originals and device copies. */
typedef struct tbuf { unsigned char *img, *orig; char *is_y; size_t n; cl_mem mem; } tbuf;
typedef struct problem {
    clnorm_dtype dt;
    size_t rows, n, total, cols[MAX_SHARDS], start[MAX_SHARDS];
    int nbuf, xbuf[MAX_SHARDS], ybuf[MAX_SHARDS];
    cl_command_queue rq[MAX_BUFS]; /* reads each buffer back: a queue of its context */
    clnorm_shard sh[MAX_SHARDS];
    tbuf b[MAX_BUFS];
    float *x; /* rows x total, rounded to dt */
} problem;

static void buf_make(problem *p, int i, size_t n, int is_x, cl_context ctx)
{
    tbuf *b = &p->b[i];
    const size_t es = dt_size(p->dt);
    b->n = n;
    b->img = malloc(n * es);
    b->orig = malloc(n * es);
    b->is_y = calloc(n, 1);
    dt_fill_bits(p->dt, b->img, n, is_x ? canary_of(p->dt) : poison_of(p->dt));
    (void)ctx;
}

/* Views of shard i: x (buffer, offset, ld) and y; marks y's elements. */
static void put_views(problem *p, size_t i, int xb, size_t xoff, size_t xld, int yb, size_t yoff,
                      size_t yld)
{
    p->xbuf[i] = xb;
    p->ybuf[i] = yb;
    p->sh[i].cols = p->cols[i];
    p->sh[i].x = (clnorm_matrix){NULL, xoff, xld};
    p->sh[i].y = (clnorm_matrix){NULL, yoff, yld};
    const size_t es = dt_size(p->dt);
    for (size_t r = 0; r < p->rows; r++)
        for (size_t c = 0; c < p->cols[i]; c++) {
            put_el(p->b[xb].img, xoff + r * xld + c, es,
                   pack1(p->dt, p->x[r * p->total + p->start[i] + c]));
            p->b[yb].is_y[yoff + r * yld + c] = 1;
        }
}

/* Lays out n shards of cols on the buffers of layout lay; x is rows x total. */
static void problem_make(problem *p, clnorm_dtype dt, size_t rows, size_t n, const size_t *cols,
                         int lay, float *x, cl_context ctx, rng *g)
{
    memset(p, 0, sizeof *p);
    p->dt = dt, p->rows = rows, p->n = n, p->x = x;
    for (size_t i = 0; i < n; i++) {
        p->cols[i] = cols[i];
        p->start[i] = p->total;
        p->total += cols[i];
    }
    if (lay == L_SHARED) {
        /* One matrix for x and one for y, shards side by side, padding between rows. */
        size_t xo = rng_below(g, 4), xld = p->total + 1 + rng_below(g, 5);
        size_t yo = rng_below(g, 4), yld = p->total + rng_below(g, 5);
        buf_make(p, 0, xo + rows * xld + 3, 1, ctx);
        buf_make(p, 1, yo + rows * yld + 3, 0, ctx);
        p->nbuf = 2;
        for (size_t i = 0; i < n; i++)
            put_views(p, i, 0, xo + p->start[i], xld, 1, yo + p->start[i], yld);
    } else if (lay == L_STRIDES) {
        /* One buffer for every x and y, each view at a stride of its own: in a matrix
           of width w, shard i's x holds columns [start, start + cols) of every
           (i + 1)-th row, its y columns [total + start, ...) of every (n - i)-th. The
           views' spans cross but they share no element, so the call must accept them. */
        const size_t w = 2 * p->total + 1 + rng_below(g, 3);
        buf_make(p, 0, rows * w * n + w, 1, ctx);
        p->nbuf = 1;
        for (size_t i = 0; i < n; i++)
            put_views(p, i, 0, p->start[i], w * (i + 1), 0, p->total + p->start[i],
                      w * (n - i));
    } else {
        for (size_t i = 0; i < n; i++) {
            size_t xo = rng_below(g, 4), xld = cols[i] + 1 + rng_below(g, 4);
            buf_make(p, p->nbuf, xo + rows * xld + 2, 1, ctx);
            const int xb = p->nbuf++;
            if (lay == L_INPLACE) {
                put_views(p, i, xb, xo, xld, xb, xo, xld);
                continue;
            }
            size_t yo = rng_below(g, 4), yld = cols[i] + rng_below(g, 3);
            buf_make(p, p->nbuf, yo + rows * yld + 2, 0, ctx);
            put_views(p, i, xb, xo, xld, p->nbuf++, yo, yld);
        }
    }
    const size_t es = dt_size(dt);
    for (int k = 0; k < p->nbuf; k++) {
        memcpy(p->b[k].orig, p->b[k].img, p->b[k].n * es);
        p->b[k].mem = t_buffer(ctx, p->b[k].n * es, p->b[k].img);
    }
    for (size_t i = 0; i < n; i++) {
        p->sh[i].x.mem = p->b[p->xbuf[i]].mem;
        p->sh[i].y.mem = p->b[p->ybuf[i]].mem;
    }
}

static void problem_free(problem *p)
{
    for (int k = 0; k < p->nbuf; k++) {
        if (p->b[k].mem) clReleaseMemObject(p->b[k].mem);
        free(p->b[k].img);
        free(p->b[k].orig);
        free(p->b[k].is_y);
    }
}

/* Reads every buffer back (each on the queue of a shard that uses it). */
static int problem_read(problem *p)
{
    const size_t es = dt_size(p->dt);
    for (int k = 0; k < p->nbuf; k++)
        if (!t_read(p->rq[k] ? p->rq[k] : T.q, p->b[k].mem, p->b[k].n * es, p->b[k].img))
            return 0;
    return 1;
}

/* Every byte outside the y views unchanged; 1 if so. */
static int check_untouched(const problem *p, const char *label)
{
    const size_t es = dt_size(p->dt);
    size_t bad = 0;
    for (int k = 0; k < p->nbuf; k++)
        for (size_t e = 0; e < p->b[k].n; e++)
            if (!p->b[k].is_y[e] && get_el(p->b[k].img, e, es) != get_el(p->b[k].orig, e, es)) {
                if (bad++ < 3)
                    t_fail(__FILE__, __LINE__, "%s: buffer %d element %zu changed (outside "
                           "every y view)", label, k, e);
            }
    return bad == 0;
}

/* The shards' y gathered into rows x total, compared with the reference; and the
   statistics given back. */
static void check_values(const problem *p, const float *m, const float *l, const char *label)
{
    const size_t rows = p->rows, total = p->total, es = dt_size(p->dt);
    float *got = malloc(rows * total * sizeof *got);
    double *want = malloc(rows * total * sizeof *want), *wm = malloc(rows * 8), *wl = malloc(rows * 8);
    for (size_t i = 0; i < p->n; i++)
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < p->cols[i]; c++)
                got[r * total + p->start[i] + c] = unpack1(
                    p->dt, get_el(p->b[p->ybuf[i]].img,
                                  p->sh[i].y.offset + r * p->sh[i].y.ld + c, es));
    ref_softmax(p->x, rows, total, want);
    COMPARE(label, got, want, rows, total, tol_rel(p->dt, total), tol_abs(p->dt));
    ref_stats(p->x, rows, total, wm, wl);
    for (size_t r = 0; r < rows; r++) {
        CHECK(t_close(m[r], wm[r], 0, 0), "%s: row_max[%zu] = %g, expected %g", label, r,
              (double)m[r], wm[r]);
        CHECK(t_close(l[r], wl[r], tol_rel(CLNORM_F32, total), 1e-30),
              "%s: row_sum[%zu] = %.9g, expected %.9g", label, r, (double)l[r], wl[r]);
    }
    free(got), free(want), free(wm), free(wl);
}

/* One sharded call on a fresh problem, checked; queues[i % nq] carries shard i. */
static void run_case(clnorm_dtype dt, size_t rows, size_t n, const size_t *cols, int lay,
                     float *x, cl_command_queue *queues, size_t nq, cl_context *ctxs, rng *g)
{
    char label[160];
    int o = snprintf(label, sizeof label, "%s %s %zu rows, shards", dt_name(dt),
                     layout_names[lay], rows);
    for (size_t i = 0; i < n && o < 120; i++) o += snprintf(label + o, sizeof label - o, " %zu", cols[i]);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += cols[i];
    dt_round(dt, x, x, rows * total);
    /* Layouts in one buffer need one context: all shards on queue 0 then. */
    problem p;
    const int one_ctx = lay == L_SHARED || lay == L_STRIDES || nq == 1;
    problem_make(&p, dt, rows, n, cols, lay, x, ctxs[0], g);
    if (!one_ctx) {
        /* Separate buffers: each shard's own, made again in its queue's context. */
        for (size_t i = 0; i < n; i++) {
            cl_context c = ctxs[i % nq];
            if (c == ctxs[0]) continue;
            const size_t es = dt_size(dt);
            for (int k = 0; k < 2; k++) {
                const int b = k ? p.ybuf[i] : p.xbuf[i];
                if (k && b == p.xbuf[i]) break;
                clReleaseMemObject(p.b[b].mem);
                p.b[b].mem = t_buffer(c, p.b[b].n * es, p.b[b].orig);
                p.rq[b] = queues[i % nq];
            }
            p.sh[i].x.mem = p.b[p.xbuf[i]].mem;
            p.sh[i].y.mem = p.b[p.ybuf[i]].mem;
        }
    }
    for (size_t i = 0; i < n; i++) p.sh[i].queue = queues[one_ctx ? 0 : i % nq];
    float *m = malloc(rows * sizeof *m), *l = malloc(rows * sizeof *l);
    if (CHECK_ST(clnorm_softmax_sharded(dt, rows, n, p.sh, m, l), CLNORM_SUCCESS) &&
        CHECK(problem_read(&p), "%s: read back", label) && check_untouched(&p, label))
        check_values(&p, m, l, label);
    if (t_verbose()) NOTE("%s", label);
    free(m), free(l);
    problem_free(&p);
}

static void random_x(float *x, size_t rows, size_t total)
{
    for (size_t r = 0; r < rows; r++) gen_row(&R, x + r * total, total, -1);
}

void test_sharded_values(void)
{
    static const size_t splits[][MAX_SHARDS] = {
        {1, 1}, {1, 5000, 3}, {37, 64, 1, 129, 2}, {4097, 1}, {300, 300, 300, 300},
        {1, 2, 3, 4, 5, 6}, {1000, 17},
    };
    static const size_t nsplit[] = {2, 3, 5, 2, 4, 6, 2};
    static const size_t rows_set[] = {1, 3, 17};
    cl_command_queue q2 = t_new_queue(T.ctx, T.dev, 0);
    cl_command_queue qs[2] = {T.q, q2 ? q2 : T.q};
    cl_context cs[2] = {T.ctx, T.ctx};
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++)
        for (size_t s = 0; s < COUNT_OF(splits); s++) {
            const size_t rows = rows_set[(s + (size_t)d) % COUNT_OF(rows_set)];
            size_t total = 0;
            for (size_t i = 0; i < nsplit[s]; i++) total += splits[s][i];
            float *x = malloc(rows * total * sizeof *x);
            for (int lay = 0; lay < L_COUNT; lay++) {
                random_x(x, rows, total);
                run_case((clnorm_dtype)d, rows, nsplit[s], splits[s], lay, x, qs, lay & 1 ? 1 : 2,
                         cs, &R);
            }
            free(x);
        }
    /* rows == 0 is a no-op that writes nothing, not even the statistics. */
    float z[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8], m0 = 7;
    cl_mem zb = t_buffer(T.ctx, sizeof z, z);
    clnorm_shard zs = {T.q, 8, {zb, 0, 0}, {zb, 0, 0}};
    CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, 0, 1, &zs, &m0, NULL), CLNORM_SUCCESS);
    CHECK(t_read(T.q, zb, sizeof back, back) && !memcmp(z, back, sizeof z) && m0 == 7,
          "rows == 0 wrote something");
    clReleaseMemObject(zb);
    if (q2) clReleaseCommandQueue(q2);
}

/* Rows where one shard is all -inf, the whole row -inf, a NaN in one shard, +inf
   entries in two shards, next to ordinary rows. */
void test_sharded_special(void)
{
    static const size_t cols[] = {7, 1, 300, 33};
    const size_t n = COUNT_OF(cols), total = 341, rows = 6;
    cl_command_queue qs[1] = {T.q};
    cl_context cs[1] = {T.ctx};
    float *x = malloc(rows * total * sizeof *x);
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++)
        for (int lay = 0; lay < L_COUNT; lay++) {
            random_x(x, rows, total);
            for (size_t c = 7; c < 8; c++) x[0 * total + c] = -INFINITY;    /* shard 1 */
            for (size_t c = 8; c < 308; c++) x[1 * total + c] = -INFINITY;  /* shard 2 */
            for (size_t c = 0; c < total; c++) x[2 * total + c] = -INFINITY; /* whole row */
            x[3 * total + 8 + rng_below(&R, 300)] = NAN;                    /* one shard */
            x[4 * total + rng_below(&R, 7)] = INFINITY;                     /* two shards */
            x[4 * total + 308 + rng_below(&R, 33)] = INFINITY;
            x[4 * total + 7] = -INFINITY;
            run_case((clnorm_dtype)d, rows, n, cols, lay, x, qs, 1, cs, &R);
        }
    free(x);
}

/* A refusal names the shard and the value, and writes nothing. */
void test_sharded_bad_input(void)
{
    static const size_t cols[] = {5, 9, 3};
    const size_t rows = 4, total = 17;
    float x[4 * 17];
    for (int bad = 0; bad < 9; bad++) {
        random_x(x, rows, total);
        problem p;
        problem_make(&p, CLNORM_F32, rows, 3, cols, bad >= 7 ? L_SHARED : L_SEPARATE, x, T.ctx, &R);
        for (size_t i = 0; i < 3; i++) p.sh[i].queue = T.q;
        const size_t k = 1 + (size_t)bad % 2; /* the shard broken */
        clnorm_status want = CLNORM_INVALID_ARGUMENT;
        const char *word = "shards[1]";
        clnorm_shard *s = &p.sh[k];
        switch (bad) {
        case 0: s->queue = NULL; word = "shards[1].queue"; break;
        case 1: s->cols = 0; word = "shards[2].cols"; break;
        case 2: s->x.mem = NULL; word = "shards[1].x.mem"; break;
        case 3: s->y.offset += 1000; want = CLNORM_OUT_OF_BOUNDS; word = "shards[2].y"; break;
        case 4: s->x.ld = s->cols - 1; word = "shards[1].x.ld"; break;
        case 5: s->y.offset = s->x.offset + 1, s->y.ld = s->x.ld, s->y.mem = s->x.mem;
                word = "shards[2].x"; break; /* x and y of one shard overlap partially */
        case 6: s->y.ld = 1; word = "shards[1].y.ld"; break;
        case 7: p.sh[2].y = p.sh[1].x; p.sh[2].y.offset += 1; p.sh[2].cols = 3;
                p.sh[2].y.mem = p.sh[1].x.mem; word = "shards[2].y"; break; /* y meets x */
        case 8: p.sh[0].y.offset += 1; word = "shards[0].y"; break; /* meets shard 1's y */
        }
        char label[64];
        snprintf(label, sizeof label, "bad input %d", bad);
        if (CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, rows, 3, p.sh, NULL, NULL), want))
            CHECK(t_mentions(clnorm_last_error(), word), "%s: the message \"%s\" names no %s",
                  label, clnorm_last_error(), word);
        for (int b = 0; b < p.nbuf; b++) memset(p.b[b].is_y, 0, p.b[b].n);
        CHECK(problem_read(&p) && check_untouched(&p, label), "%s wrote a buffer", label);
        problem_free(&p);
    }
    /* A shard whose write is refused at planning while its statistics are not: its
       queue's hints ask for teams of 3 work-items, which divide no work-group the apply
       kernel takes. Shards before it on another queue must not be written either. */
    {
        random_x(x, rows, total);
        problem p;
        problem_make(&p, CLNORM_F32, rows, 3, cols, L_SEPARATE, x, T.ctx, &R);
        cl_command_queue q2 = t_new_queue(T.ctx, T.dev, 0);
        clnorm_plan_hints h;
        clnorm_plan_hints_init(&h);
        h.items_per_row = 3;
        if (CHECK(q2 != NULL, "a second queue") &&
            CHECK_ST(clnorm_set_queue_hints(q2, &h), CLNORM_SUCCESS)) {
            p.sh[0].queue = p.sh[1].queue = T.q;
            p.sh[2].queue = q2;
            const clnorm_status st = clnorm_softmax_sharded(CLNORM_F32, rows, 3, p.sh, NULL, NULL);
            CHECK(st == CLNORM_INVALID_ARGUMENT && t_mentions(clnorm_last_error(), "3"),
                  "teams of 3 on the last shard's queue: %s, \"%s\"", clnorm_status_string(st),
                  clnorm_last_error());
            for (int b = 0; b < p.nbuf; b++) memset(p.b[b].is_y, 0, p.b[b].n);
            CHECK(problem_read(&p) && check_untouched(&p, "a shard's write refused"),
                  "a shard's write refused at planning, yet a buffer changed");
            clnorm_set_queue_hints(q2, NULL);
        }
        if (q2) clReleaseCommandQueue(q2);
        problem_free(&p);
    }
    /* Shard 0's y and shard 1's x: two sub-buffers of one buffer over the same bytes,
       which the check sees as one memory. */
    {
        cl_uint align_bits = 0;
        clGetDeviceInfo(T.dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                        NULL);
        const size_t al = align_bits / 8 ? align_bits / 8 : 128, c = 8, r = 3;
        float host[64 * 4];
        random_x(host, 1, COUNT_OF(host));
        unsigned char *init = calloc(1, al + sizeof host);
        memcpy(init + al, host, sizeof host);
        cl_mem parent = t_buffer(T.ctx, al + sizeof host, init);
        cl_mem own = t_buffer(T.ctx, sizeof host, host);
        free(init);
        cl_buffer_region reg = {al, r * c * sizeof(float)};
        cl_int e1 = 0, e2 = 0;
        cl_mem s1 = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &reg, &e1);
        cl_mem s2 = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &reg, &e2);
        if (CHECK(e1 == CL_SUCCESS && e2 == CL_SUCCESS, "clCreateSubBuffer: %d, %d", e1, e2)) {
            unsigned char *before = malloc(al + sizeof host), *after = malloc(al + sizeof host);
            t_read(T.q, parent, al + sizeof host, before);
            clnorm_shard sub[2] = {{T.q, c, {own, 0, 0}, {s1, 0, 0}},
                                   {T.q, c, {s2, 0, 0}, {own, r * c, 0}}};
            if (CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, r, 2, sub, NULL, NULL),
                         CLNORM_INVALID_ARGUMENT))
                CHECK(t_mentions(clnorm_last_error(), "shards[0].y"),
                      "sub-buffers over the same bytes: message \"%s\"", clnorm_last_error());
            CHECK(t_read(T.q, parent, al + sizeof host, after) &&
                      !memcmp(before, after, al + sizeof host),
                  "sub-buffers over the same bytes: refused, yet the buffer changed");
            free(before), free(after);
        }
        if (s1) clReleaseMemObject(s1);
        if (s2) clReleaseMemObject(s2);
        clReleaseMemObject(parent);
        clReleaseMemObject(own);
    }
    CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, 3, 0, NULL, NULL, NULL), CLNORM_INVALID_ARGUMENT);
    CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, 3, 2, NULL, NULL, NULL), CLNORM_INVALID_ARGUMENT);
    /* Counts whose views and statistics would overflow the host arrays: refused before
       any shard is read. */
    clnorm_shard one = {T.q, 5, {0}, {0}};
    CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, 3, SIZE_MAX, &one, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "overflow"), "n = SIZE_MAX: %s", clnorm_last_error());
    CHECK_ST(clnorm_softmax_sharded(CLNORM_F32, SIZE_MAX / 8, 1 << 20, &one, NULL, NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "shards"), "message: %s", clnorm_last_error());
    CHECK_ST(clnorm_softmax_sharded((clnorm_dtype)7, 3, 1, &(clnorm_shard){T.q, 5, {0}, {0}}, NULL,
                                    NULL),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "dtype"), "message: %s", clnorm_last_error());
}

/* The second device's session, its queue and context in qs[1] and cs[1]; NULL where
   there is none, both sets of shards then on the device under test. */
static clnorm_session *second_device(cl_command_queue qs[2], cl_context cs[2])
{
    const char *spec = getenv("CLNORM_TEST_SECOND_DEVICE");
    if (!spec || !*spec) {
        cl_platform_id plat = NULL;
        char pname[256] = "";
        clGetDeviceInfo(T.dev, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
        clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        const int pocl = t_mentions(pname, "Portable Computing") || t_mentions(pname, "pocl");
        spec = pocl ? "llvmpipe" : "pocl";
    }
    clnorm_session *s2 = NULL;
    clnorm_status st = clnorm_session_create(spec, &s2);
    qs[0] = qs[1] = T.q;
    cs[0] = cs[1] = T.ctx;
    if (st == CLNORM_SUCCESS) {
        qs[1] = clnorm_session_queue(s2);
        cs[1] = clnorm_session_context(s2);
        NOTE("shards on \"%s\" and \"%s\"", T.dev_name, clnorm_session_device_name(s2));
    } else {
        CHECK(st == CLNORM_DEVICE_NOT_FOUND, "second device \"%s\": %s", spec, clnorm_last_error());
        NOTE("no second device \"%s\": both sets of shards on \"%s\"", spec, T.dev_name);
    }
    return s2;
}

/* Shards on two devices (two contexts, perhaps two platforms) in one call. */
void test_sharded_devices(void)
{
    cl_command_queue qs[2];
    cl_context cs[2];
    clnorm_session *s2 = second_device(qs, cs);
    static const size_t splits[][4] = {{1, 5000, 3, 0}, {64, 129, 1, 257}, {4096, 4097, 0, 0}};
    static const size_t nsplit[] = {3, 4, 2};
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++)
        for (size_t k = 0; k < COUNT_OF(splits); k++) {
            const size_t rows = 1 + 8 * k, n = nsplit[k];
            size_t total = 0;
            for (size_t i = 0; i < n; i++) total += splits[k][i];
            float *x = malloc(rows * total * sizeof *x);
            random_x(x, rows, total);
            if (rows > 1) x[total + rng_below(&R, total)] = INFINITY, x[total + 0] = INFINITY;
            run_case((clnorm_dtype)d, rows, n, splits[k], k == 1 ? L_INPLACE : L_SEPARATE, x, qs, 2,
                     cs, &R);
            free(x);
        }
    clnorm_session_destroy(s2);
}

/* Threads that each run sharded calls of their own rows at once, on the same two
   queues: every call's transfers and waits meet the others' on those queues. */
typedef struct sharded_worker {
    rng r;
    cl_command_queue *qs;
    cl_context *cs;
} sharded_worker;

static void *sharded_work(void *arg)
{
    sharded_worker *w = arg;
    for (int it = 0; it < 6; it++) {
        const clnorm_dtype dt = (clnorm_dtype)rng_below(&w->r, 3);
        const size_t n = 2 + rng_below(&w->r, 3), rows = 1 + rng_below(&w->r, 9);
        size_t cols[MAX_SHARDS], total = 0;
        for (size_t i = 0; i < n; i++)
            total += cols[i] = 1 + rng_below(&w->r, rng_below(&w->r, 2) ? 40 : 3000);
        float *x = malloc(rows * total * sizeof *x);
        for (size_t r = 0; r < rows; r++) gen_row(&w->r, x + r * total, total, -1);
        run_case(dt, rows, n, cols, rng_below(&w->r, 2) ? L_INPLACE : L_SEPARATE, x, w->qs, 2,
                 w->cs, &w->r);
        free(x);
    }
    return NULL;
}

void test_sharded_threads(void)
{
    enum { NT = 4 };
    cl_command_queue qs[2];
    cl_context cs[2];
    clnorm_session *s2 = second_device(qs, cs);
    sharded_worker ws[NT];
    pthread_t th[NT];
    const int before = t_failures();
    for (int i = 0; i < NT; i++) {
        ws[i] = (sharded_worker){rng_make(rng_u64(&R)), qs, cs};
        if (!CHECK(pthread_create(&th[i], NULL, sharded_work, &ws[i]) == 0, "pthread_create %d", i))
            th[i] = 0;
    }
    for (int i = 0; i < NT; i++)
        if (th[i]) pthread_join(th[i], NULL);
    NOTE("%d threads x 6 sharded calls, %d failures", NT, t_failures() - before);
    clnorm_session_destroy(s2);
}
