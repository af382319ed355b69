/* The fused residual add + RMSNorm (clnorm_add_rmsnorm and its host variant).
   RMSNorm on extreme rows and the 16-bit special values are in test_extreme.c; the
   harness both files use is in fused.c (fused.h).

   add_rmsnorm_values  f32, f16 and bf16 against float64 references computed from the
                       rounded inputs (h = x + residual added in float32 and rounded to
                       the dtype, as the header says); residual updated bit for bit or
                       left untouched bit for bit; y poisoned first
   add_rmsnorm_views   strided, offset, in-place, one-buffer and interleaved layouts with
                       canaries; residual overlapping x or y refused with nothing
                       written; the other refusals; rows == 0; the host variant */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "fused.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a forced plan only add_rmsnorm_values uses ------------------------------------ */
/* The streaming variant with 1, 8 or 64 work-items per row in groups of 64. */
static void plan_stream(void)
{
    static const size_t teams[] = {1, 8, 64};
    plan_set("stream", 64, PICK(&R, teams), 0);
}

/* ---- random problems of the fused op ----------------------------------------------- */
/* One row of x and residual: mixed scales, a residual stream far larger than x, x and
   residual nearly cancelling, near-constant rows. Within float16's range. */
static void gen_pair_row(clnorm_dtype dt, float *x, float *r, size_t cols)
{
    double s, off;
    switch (rng_below(&R, 5)) {
    case 0:
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)rng_range(&R, -1, 1), r[c] = (float)rng_range(&R, -1, 1);
        break;
    case 1:
        s = pow(10, rng_range(&R, dt == F16 ? -2 : -4, 3));
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(s * rng_range(&R, -1, 1)), r[c] = (float)(s * rng_range(&R, -1, 1));
        break;
    case 2:
        off = (rng_below(&R, 2) ? 1 : -1) * rng_range(&R, 10, 1000);
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)rng_range(&R, -0.01, 0.01), r[c] = (float)(off + rng_range(&R, -1, 1));
        break;
    case 3:
        for (size_t c = 0; c < cols; c++) {
            x[c] = (float)rng_range(&R, -100, 100);
            r[c] = -rnd(dt, x[c]) * (float)(1 + rng_range(&R, -1e-2, 1e-2));
        }
        break;
    default:
        off = rng_range(&R, -100, 100);
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(off + rng_range(&R, -1e-2, 1e-2)),
            r[c] = (float)rng_range(&R, -1e-3, 1e-3);
        break;
    }
}

static void gen_pairs(clnorm_dtype dt, float *x, float *r, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++) gen_pair_row(dt, x + i * cols, r + i * cols, cols);
}

static const float eps_values[] = {0.0f, 1e-6f, 1e-5f, 0.1f, 1.0f};
static const size_t offsets[] = {0, 1, 7, 1000};
static const size_t pads[] = {1, 3, 16, 61};

/* ---- add_rmsnorm_values ---------------------------------------------------------------- */
void test_add_rmsnorm_values(void)
{
    static const size_t cols_list[] = {1, 2, 33, 1000, 4097, 65537};
    static const size_t rows_list[] = {1, 3, 7, 17, 129, 1000, 4099};
    const clnorm_dtype dts[] = {F32, F16, BF16};
    enum { BUDGET = 300000 };
    size_t calls = 0, elems = 0, k = 0;
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    g_denorm_ok = device_denormals();
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < COUNT_OF(cols_list); i++)
            for (int upd = 0; upd < 2; upd++) {
                size_t cols = cols_list[i], rows = 1;
                if ((upd ^ d ^ i) & 1) { /* the most rows within the budget */
                    for (size_t j = 0; j < COUNT_OF(rows_list); j++)
                        if (rows_list[j] * cols <= BUDGET) rows = rows_list[j];
                } else {
                    do rows = rows_list[rng_below(&R, 4)];
                    while (rows * cols > BUDGET);
                }
                size_t n = rows * cols;
                float *x = malloc(n * 4), *r = malloc(n * 4), *g = NULL;
                gen_pairs(dts[d], x, r, rows, cols);
                if ((i + upd + d) & 1) {
                    g = malloc(cols * 4);
                    gen_gamma(&R, g, cols);
                }
                fz f;
                memset(&f, 0, sizeof f);
                f.dt = dts[d], f.rows = rows, f.cols = cols, f.update = upd;
                f.xv = x, f.rv = r, f.g = g, f.eps = PICK(&R, eps_values);
                f.x.buf = 0, f.r.buf = 1, f.y.buf = 2;
                /* Packed as 0 or as cols, or a little padding, small offsets. */
                fview *vw[3] = {&f.x, &f.r, &f.y};
                for (int v = 0; v < 3; v++) {
                    size_t pick = rng_below(&R, 4);
                    vw[v]->ld = pick == 0 ? 0 : pick == 1 ? cols : cols + 1 + rng_below(&R, 3);
                    vw[v]->off = rng_below(&R, 2) ? 0 : rng_below(&R, 5);
                }
                switch (k++ % 4) {
                case 0: plan_clear(); break;
                case 1: plan_stream(); break;
                case 2: plan_pair(cols); break;
                default: plan_reg(cols); break;
                }
                fused_run(&f, CLNORM_SUCCESS);
                plan_clear();
                calls++, elems += n;
                free(x), free(r), free(g);
            }
    /* Long rows of one sign, nearly constant, are the hardest on a float32 sum of
       squares: under the library's plan and with 1 or 8 work-items per row. */
    const size_t long_cols[] = {65537, 1u << 20};
    for (size_t i = 0; i < 2; i++)
        for (int p = 0; p < 3; p++) {
            size_t cols = long_cols[i], rows = i ? 1 : 3, n = rows * cols;
            float *x = malloc(n * 4), *r = malloc(n * 4);
            for (size_t j = 0; j < rows; j++) {
                gen_row(&R, x + j * cols, cols, ROW_NEAR_CONSTANT);
                for (size_t c = 0; c < cols; c++) r[j * cols + c] = (float)rng_range(&R, -1e-3, 1e-3);
            }
            fz f;
            memset(&f, 0, sizeof f);
            f.dt = F32, f.rows = rows, f.cols = cols, f.xv = x, f.rv = r, f.eps = 1e-6f;
            f.update = p & 1, f.x.buf = 0, f.r.buf = 1, f.y.buf = 2;
            if (p) plan_set("stream", 64, p == 1 ? 1 : 8, 0);
            fused_run(&f, CLNORM_SUCCESS);
            plan_clear();
            calls++, elems += n;
            free(x), free(r);
        }
    CHECK(g_bits_checked > 1000, "only %zu 16-bit outputs were clear of rounding ties; the "
          "nearest-even check did not run", g_bits_checked);
    NOTE("%zu calls, %zu elements; %zu f16/bf16 outputs compared bit for bit with their "
         "nearest-even rounding, %zu differed; %zu UNSUPPORTED under forced shapes", calls,
         elems, g_bits_checked, g_bits_bad, g_unsupported);
    CHECK(g_unsupported < calls / 4, "%zu of %zu calls UNSUPPORTED", g_unsupported, calls);
}

/* ---- add_rmsnorm_views --------------------------------------------------------------- */
static void base_problem(fz *f, clnorm_dtype dt, size_t rows, size_t cols, float **x, float **r,
                         float **g)
{
    memset(f, 0, sizeof *f);
    *x = malloc(rows * cols * 4 + 4), *r = malloc(rows * cols * 4 + 4), *g = NULL;
    gen_pairs(dt, *x, *r, rows, cols);
    if (rng_below(&R, 2)) {
        *g = malloc(cols * 4);
        gen_gamma(&R, *g, cols);
    }
    f->dt = dt, f->rows = rows, f->cols = cols, f->xv = *x, f->rv = *r, f->g = *g;
    f->eps = PICK(&R, eps_values);
    f->update = (int)rng_below(&R, 2);
}

static void strided(fview *v, int buf, size_t cols)
{
    v->buf = buf, v->off = PICK(&R, offsets), v->ld = cols + PICK(&R, pads);
}

/* Three views placed one after another in buffer 0, in a random order, with gaps. */
static void one_buffer(fz *f)
{
    fview *vw[3] = {&f->x, &f->r, &f->y};
    for (int i = 2; i > 0; i--) {
        int j = (int)rng_below(&R, (size_t)i + 1);
        fview *t = vw[i]; vw[i] = vw[j]; vw[j] = t;
    }
    size_t off = PICK(&R, offsets);
    for (int i = 0; i < 3; i++) {
        vw[i]->buf = 0, vw[i]->off = off, vw[i]->ld = f->cols + PICK(&R, pads);
        off = v_end(f, vw[i]) + rng_below(&R, 3);
    }
}

/* Rows of x, residual and y interleaved in buffer 0 under one ld: no shared element. */
static void interleaved(fz *f)
{
    fview *vw[3] = {&f->x, &f->r, &f->y};
    for (int i = 2; i > 0; i--) {
        int j = (int)rng_below(&R, (size_t)i + 1);
        fview *t = vw[i]; vw[i] = vw[j]; vw[j] = t;
    }
    size_t pad = PICK(&R, pads), a = rng_below(&R, pad + 1), b = rng_below(&R, pad - a + 1);
    size_t base = PICK(&R, offsets), ld = 3 * f->cols + pad;
    size_t pos[3] = {base, base + f->cols + a, base + 2 * f->cols + a + b};
    for (int i = 0; i < 3; i++) vw[i]->buf = 0, vw[i]->off = pos[i], vw[i]->ld = ld;
}

static void view_layouts(void)
{
    static const size_t vcols[] = {1, 5, 33, 129, 1000, 4097};
    static const size_t vrows[] = {1, 3, 17};
    const clnorm_dtype dts[] = {F32, F16, BF16};
    size_t calls = 0;
    for (size_t i = 0; i < COUNT_OF(vcols); i++)
        for (size_t d = 0; d < 3; d++) {
            size_t cols = vcols[i], rows = PICK(&R, vrows);
            fz f;
            float *x, *r, *g;
            base_problem(&f, dts[d], rows, cols, &x, &r, &g);

            /* Three buffers, strided and offset; then exactly fitting ones. */
            strided(&f.x, 0, cols), strided(&f.r, 1, cols), strided(&f.y, 2, cols);
            fused_run(&f, CLNORM_SUCCESS), calls++;
            f.exact = 1;
            fused_run(&f, CLNORM_SUCCESS), calls++;
            f.update = !f.update;
            fused_run(&f, CLNORM_SUCCESS), calls++;
            f.exact = 0;

            /* In place: y is exactly x. */
            f.y = f.x;
            fused_run(&f, CLNORM_SUCCESS), calls++;
            f.update = !f.update;
            f.exact = 1;
            fused_run(&f, CLNORM_SUCCESS), calls++;
            f.exact = 0;

            /* All three in one buffer, apart; then rows interleaved under one ld. */
            one_buffer(&f);
            fused_run(&f, CLNORM_SUCCESS), calls++;
            interleaved(&f);
            fused_run(&f, CLNORM_SUCCESS), calls++;

            /* In place with residual's rows between x's in the same buffer. */
            size_t pad = PICK(&R, pads);
            f.x.buf = 0, f.x.off = PICK(&R, offsets), f.x.ld = 2 * cols + pad;
            f.y = f.x;
            f.r = f.x, f.r.off = f.x.off + cols + rng_below(&R, pad + 1);
            f.update = !f.update;
            fused_run(&f, CLNORM_SUCCESS), calls++;
            free(x), free(r), free(g);
        }
    NOTE("%zu layouts of x, residual and y checked", calls);
}

/* The message names each word ("a|b": either). */
static void check_words(const char *what, const char *msg, const char *const *words)
{
    for (; *words; words++) {
        char alt[128];
        snprintf(alt, sizeof alt, "%s", *words);
        int found = 0;
        for (char *w = strtok(alt, "|"); w && !found; w = strtok(NULL, "|"))
            found = t_mentions(msg, w);
        CHECK(found, "%s: last error \"%s\" does not name \"%s\"", what, msg, *words);
    }
}

/* A failing call whose message is unique, so that a stale message cannot pass. */
static void prime_error(void)
{
    clnorm_session *s = NULL;
    if (clnorm_session_create("clnorm-fused-primer-device", &s) == CLNORM_SUCCESS)
        clnorm_session_destroy(s);
}

static void fused_refused(const fz *f, clnorm_status want, const char *const *words)
{
    char label[700];
    fz_label(f, label, sizeof label);
    prime_error();
    clnorm_status st = fused_run(f, want);
    if (st == CLNORM_SUCCESS) return;
    CHECK(!strstr(g_msg, "clnorm-fused-primer"), "%s: last error still the previous one: \"%s\"",
          label, g_msg);
    check_words(label, g_msg, words);
}
#define FUSED_REFUSED(f, want, ...) fused_refused((f), (want), (const char *const[]){__VA_ARGS__, NULL})

static void overlap_refusals(void)
{
    const clnorm_dtype dts[] = {F32, F16, BF16};
    for (size_t d = 0; d < 3; d++)
        for (int upd = 0; upd < 2; upd++) {
            size_t rows = 3, cols = 33;
            fz f;
            float *x, *r, *g;
            base_problem(&f, dts[d], rows, cols, &x, &r, &g);
            f.update = upd;
            fview X = {0, 5, cols + 4}, Y = {2, 3, cols + 2}, Rv = {1, 0, 0};
            /* residual the same view as x, as y, as x == y. */
            f.x = X, f.y = Y, f.r = X;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual");
            f.r = Y;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual");
            f.y = X, f.r = X;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual");
            /* Partial overlaps: one element on, a different ld, the last element. */
            f.y = Y;
            f.r = X, f.r.off = X.off + 1;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual", "overlap");
            f.r = X, f.r.ld = X.ld + 1;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual");
            f.r = Y, f.r.off = Y.off + cols - 1;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual", "overlap");
            f.r = Y, f.r.off = v_end(&f, &Y) - 1; /* residual starts at y's last element */
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual", "overlap");
            /* residual overlapping x when y is x (in place). */
            f.y = X, f.r = X, f.r.off = X.off + 2 * X.ld - 1;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "residual", "overlap");
            /* x and y partly overlapping, residual apart. */
            f.r = Rv, f.y = X, f.y.off = X.off + 1;
            FUSED_REFUSED(&f, CLNORM_INVALID_ARGUMENT, "overlap");
            /* Next to the refusals: residual ending right where x starts, and
               residual starting right after y's last element, are fine. */
            f.x = X, f.x.off = 200;
            f.r = X, f.r.off = 200 - v_end(&f, &(fview){0, 0, X.ld});
            f.y = Y;
            fused_run(&f, CLNORM_SUCCESS);
            f.r = Y, f.r.off = v_end(&f, &Y);
            fused_run(&f, CLNORM_SUCCESS);
            free(x), free(r), free(g);
        }
}

/* ---- other refusals, on guarded buffers ---------------------------------------------- */
typedef struct guard { cl_mem mem; size_t bytes; void *img; const char *name; } guard;
static guard guards[12];
static int nguards;

static cl_mem guarded(const char *name, size_t floats)
{
    float *img = malloc(floats * 4);
    for (size_t i = 0; i < floats; i++) img[i] = (float)rng_range(&R, -5, 5);
    cl_mem m = t_buffer(T.ctx, floats * 4, img);
    guards[nguards++] = (guard){m, floats * 4, img, name};
    return m;
}

static void check_guards(const char *expr)
{
    CHECK_CL(clFinish(T.q));
    for (int i = 0; i < nguards; i++) {
        void *b = malloc(guards[i].bytes);
        if (t_read(T.q, guards[i].mem, guards[i].bytes, b))
            CHECK(!memcmp(b, guards[i].img, guards[i].bytes),
                  "%s was refused but changed buffer %s", expr, guards[i].name);
        free(b);
    }
}

static void free_guards(void)
{
    for (int i = 0; i < nguards; i++) {
        clReleaseMemObject(guards[i].mem);
        free(guards[i].img);
    }
    nguards = 0;
}

static void refused(const char *expr, clnorm_status got, clnorm_status want,
                    const char *const *words)
{
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", clnorm_last_error());
    CHECK(got == want, "%s returned %s, expected %s; last error \"%s\"", expr,
          clnorm_status_string(got), clnorm_status_string(want), msg);
    if (got != CLNORM_SUCCESS) {
        CHECK(msg[0] != '\0', "%s: empty clnorm_last_error()", expr);
        CHECK(!strstr(msg, "clnorm-fused-primer"), "%s: last error still the previous one: "
              "\"%s\"", expr, msg);
        check_words(expr, msg, words);
    }
    if (T.q) check_guards(expr);
}
#define REFUSED(call, want, ...)                                                          \
    do {                                                                                  \
        prime_error();                                                                    \
        clnorm_status st_ = (call);                                                       \
        refused(#call, st_, (want), (const char *const[]){__VA_ARGS__, NULL});            \
    } while (0)
#define INVALID CLNORM_INVALID_ARGUMENT
#define OOB CLNORM_OUT_OF_BOUNDS

static clnorm_matrix V(cl_mem m, size_t off, size_t ld)
{
    clnorm_matrix v = {m, off, ld};
    return v;
}

static void bad_inputs(void)
{
    enum { BR = 5, BC = 37 };
    cl_command_queue q = T.q;
    const clnorm_dtype F = F32;
    cl_mem X = guarded("x", BR * BC), Rs = guarded("residual", BR * BC), Y = guarded("y", BR * BC);
    cl_mem G = guarded("gamma", BC), Gs = guarded("short gamma", BC - 1);
    cl_mem B = guarded("shared", 3 * BR * BC + 8);
    clnorm_matrix x = V(X, 0, 0), r = V(Rs, 0, 0), y = V(Y, 0, 0), nul = V(NULL, 0, 0);
    for (int u = 0; u < 2; u++) {
        REFUSED(clnorm_add_rmsnorm(NULL, F, BR, BC, x, r, u, G, y, 1e-5f, 0, NULL, NULL), INVALID, "queue");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, nul, r, u, G, y, 1e-5f, 0, NULL, NULL), INVALID, "x");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, nul, u, G, y, 1e-5f, 0, NULL, NULL), INVALID, "residual");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, nul, 1e-5f, 0, NULL, NULL), INVALID, "y");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, 0, x, r, u, G, y, 1e-5f, 0, NULL, NULL), INVALID, "cols");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, V(X, 0, BC - 1), r, u, G, y, 1e-5f, 0, NULL, NULL),
                INVALID, "ld", "36");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, V(Rs, 0, BC - 1), u, G, y, 1e-5f, 0, NULL, NULL),
                INVALID, "residual", "ld", "36");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, V(Y, 0, BC - 1), 1e-5f, 0, NULL, NULL),
                INVALID, "ld", "36");
        const float bad_eps[] = {-0.5f, NAN, INFINITY, -INFINITY};
        const char *eps_word[] = {"-0.5", "nan", "inf", "inf"};
        for (int i = 0; i < 4; i++)
            REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, y, bad_eps[i], 0, NULL, NULL),
                    INVALID, "eps", eps_word[i]);
        REFUSED(clnorm_add_rmsnorm(q, (clnorm_dtype)7, BR, BC, x, r, u, G, y, 1e-5f, 0, NULL, NULL),
                INVALID, "dtype", "7");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, y, 1e-5f, 1, NULL, NULL), INVALID, "wait");
        /* Views one element past the end of their buffers. */
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, V(X, 1, 0), r, u, G, y, 1e-5f, 0, NULL, NULL), OOB, "x");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, V(X, 0, BC + 1), r, u, G, y, 1e-5f, 0, NULL, NULL), OOB, "x");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, V(Rs, 1, 0), u, G, y, 1e-5f, 0, NULL, NULL), OOB, "residual");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, V(Rs, 0, BC + 1), u, G, y, 1e-5f, 0, NULL, NULL), OOB, "residual");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, V(Y, 1, 0), 1e-5f, 0, NULL, NULL), OOB, "y");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, G, V(Y, 0, BC + 1), 1e-5f, 0, NULL, NULL), OOB, "y");
        REFUSED(clnorm_add_rmsnorm(q, F, BR + 1, BC, x, r, u, G, V(B, 0, 0), 1e-5f, 0, NULL, NULL),
                OOB, "x|residual");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, Gs, y, 1e-5f, 0, NULL, NULL), OOB, "gamma");
        /* gamma sharing bytes with the output y. */
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, u, Y, y, 1e-5f, 0, NULL, NULL), INVALID, "gamma");
        /* Partial overlaps in one buffer. */
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, V(B, 0, BC), r, u, G, V(B, 1, BC), 1e-5f, 0, NULL, NULL),
                INVALID, "overlap");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, V(B, 0, BC), V(B, BC, BC), u, G, y, 1e-5f, 0, NULL, NULL),
                INVALID, "residual");
        REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, V(B, 0, 0), u, G, V(B, 0, 0), 1e-5f, 0, NULL, NULL),
                INVALID, "residual");
    }
    /* gamma sharing bytes with the residual that is written. */
    REFUSED(clnorm_add_rmsnorm(q, F, BR, BC, x, r, 1, Rs, y, 1e-5f, 0, NULL, NULL), INVALID, "gamma");
    free_guards();
}

/* rows == 0: a valid no-op; an asked-for event is a marker that follows the wait list. */
static void rows_zero(void)
{
    cl_mem X = guarded("x", 64), Rs = guarded("residual", 64), Y = guarded("y", 64);
    clnorm_matrix x = V(X, 0, 0), r = V(Rs, 0, 0), y = V(Y, 0, 0);
    for (int u = 0; u < 2; u++) {
        cl_event ev = NULL;
        CHECK_ST(clnorm_add_rmsnorm(T.q, F32, 0, 8, x, r, u, NULL, y, 1e-5f, 0, NULL, NULL),
                 CLNORM_SUCCESS);
        if (CHECK_ST(clnorm_add_rmsnorm(T.q, F16, 0, 8, x, r, u, NULL, y, 0.0f, 0, NULL, &ev),
                     CLNORM_SUCCESS) &&
            CHECK(ev != NULL, "rows == 0 with an event pointer: no event returned")) {
            CHECK_CL(clWaitForEvents(1, &ev));
            cl_int s = -1;
            CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
            CHECK(s == CL_COMPLETE, "rows == 0: event status %d after clWaitForEvents", s);
            clReleaseEvent(ev);
        }
        cl_int err;
        cl_event ue = clCreateUserEvent(T.ctx, &err);
        if (!CHECK_CL(err)) continue;
        ev = NULL;
        if (CHECK_ST(clnorm_add_rmsnorm(T.q, BF16, 0, 8, x, r, u, NULL, y, 1e-5f, 1, &ue, &ev),
                     CLNORM_SUCCESS) &&
            CHECK(ev != NULL, "rows == 0 with a wait list: no event returned")) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
            cl_int s = -1;
            CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
            CHECK(s != CL_COMPLETE, "rows == 0: the marker completed before its wait list's user "
                  "event was set");
            clSetUserEventStatus(ue, CL_COMPLETE);
            CHECK_CL(clWaitForEvents(1, &ev));
            CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
            CHECK(s == CL_COMPLETE, "rows == 0: event status %d after the wait list completed", s);
            clReleaseEvent(ev);
        } else {
            clSetUserEventStatus(ue, CL_COMPLETE);
        }
        clReleaseEvent(ue);
    }
    check_guards("rows == 0");
    free_guards();
}

/* ---- the host variant ------------------------------------------------------------------ */
static void host_one(clnorm_dtype dt, size_t rows, size_t cols, int update, int with_g,
                     int inplace)
{
    size_t n = rows * cols, es = dt_size(dt);
    float *x = malloc(n * 4), *r = malloc(n * 4), *g = NULL, *h = malloc(n * 4);
    uint32_t *hb = malloc(n * 4), *yb = malloc(n * 4);
    gen_pairs(dt, x, r, rows, cols);
    if (with_g) {
        g = malloc(cols * 4);
        gen_gamma(&R, g, cols);
    }
    float eps = PICK(&R, eps_values);
    void *xs = malloc(n * es), *x0 = malloc(n * es), *rs = malloc(n * es), *r0 = malloc(n * es);
    void *ys = malloc(n * es), *gs = g ? malloc(cols * es) : NULL;
    dt_pack(dt, x, xs, n), dt_pack(dt, x, x0, n);
    dt_pack(dt, r, rs, n), dt_pack(dt, r, r0, n);
    dt_fill_bits(dt, ys, n, poison_of(dt));
    if (g) dt_pack(dt, g, gs, cols);
    fused_h(dt, n, x, r, hb, h);
    char label[300];
    snprintf(label, sizeof label, "add_rmsnorm_host %s rows=%zu cols=%zu update=%d %s eps=%g%s",
             dt_name(dt), rows, cols, update, g ? "gamma" : "no-gamma", (double)eps,
             inplace ? " in place (y == x)" : "");
    void *out = inplace ? xs : ys;
    clnorm_status st = clnorm_add_rmsnorm_host(T.s, dt, rows, cols, xs, rs, update, gs, out, eps);
    if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st),
              clnorm_last_error())) {
        size_t bad = 0, fi = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t want = update ? hb[i] : get_el(r0, i, es);
            if (get_el(rs, i, es) != want && !bad++) fi = i;
        }
        CHECK(!bad, "%s: %zu residual element(s) wrong; first [%zu,%zu] 0x%x, expected 0x%x (%s)",
              label, bad, fi / cols, fi % cols, get_el(rs, fi, es),
              update ? hb[fi] : get_el(r0, fi, es),
              update ? "round(x + residual)" : "untouched");
        if (!inplace)
            CHECK(!memcmp(xs, x0, n * es), "%s: the input x array changed", label);
        for (size_t i = 0; i < n; i++) yb[i] = get_el(out, i, es);
        check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, h, g, eps, yb, NULL,
                    tol_rel(dt, cols), tol_abs(dt), !inplace);
    }
    free(x), free(r), free(g), free(h), free(hb), free(yb);
    free(xs), free(x0), free(rs), free(r0), free(ys), free(gs);
}

static void host_refusals(void)
{
    enum { HR = 3, HC = 11 };
    float x[HR * HC], r[HR * HC], r0[HR * HC], y[HR * HC], y0[HR * HC], g[HC];
    gen_pairs(F32, x, r, HR, HC);
    gen_gamma(&R, g, HC);
    memcpy(r0, r, sizeof r);
    for (int i = 0; i < HR * HC; i++) y[i] = y0[i] = -1.0f / 1024;
    clnorm_session *s = T.s;
    cl_command_queue keep = T.q;
    T.q = NULL; /* no device buffers to guard here */
    for (int u = 0; u < 2; u++) {
        REFUSED(clnorm_add_rmsnorm_host(NULL, F32, HR, HC, x, r, u, g, y, 1e-5f), INVALID, "session");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, NULL, r, u, g, y, 1e-5f), INVALID, "x");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, x, NULL, u, g, y, 1e-5f), INVALID, "residual");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, x, r, u, g, NULL, 1e-5f), INVALID, "y");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, 0, x, r, u, g, y, 1e-5f), INVALID, "cols");
        REFUSED(clnorm_add_rmsnorm_host(s, (clnorm_dtype)7, HR, HC, x, r, u, g, y, 1e-5f), INVALID,
                "dtype", "7");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, x, r, u, g, y, -0.5f), INVALID, "eps", "-0.5");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, x, r, u, g, y, NAN), INVALID, "eps", "nan");
        REFUSED(clnorm_add_rmsnorm_host(s, F32, HR, HC, x, r, u, g, y, INFINITY), INVALID, "eps", "inf");
    }
    T.q = keep;
    CHECK(!memcmp(y, y0, sizeof y), "a refused clnorm_add_rmsnorm_host wrote into y");
    CHECK(!memcmp(r, r0, sizeof r), "a refused clnorm_add_rmsnorm_host wrote into residual");
}

static void host_variant(void)
{
    const clnorm_dtype dts[] = {F32, F16, BF16};
    for (size_t d = 0; d < 3; d++)
        for (int u = 0; u < 2; u++) {
            host_one(dts[d], 5, 33, u, 1, 0);
            host_one(dts[d], 3, 1000, u, 0, 1);
            host_one(dts[d], 2, 4097, u, (int)rng_below(&R, 2), (int)rng_below(&R, 2));
        }
    host_refusals();
}

void test_add_rmsnorm_views(void)
{
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    g_denorm_ok = device_denormals();
    view_layouts();
    overlap_refusals();
    bad_inputs();
    rows_zero();
    host_variant();
}
