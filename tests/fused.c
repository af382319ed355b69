/* The add_rmsnorm harness that test_fused.c (add_rmsnorm_values, add_rmsnorm_views)
   and test_extreme.c (rmsnorm_extreme, lowp_special) share, declared in fused.h: the
   nearest-even check of 16-bit outputs, and clnorm_add_rmsnorm run on canary-guarded
   buffers and checked. */
#include "fused.h"
#include "clnorm_advanced.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows longer than the device's widest work-group can loop over: where the device has
   a loop-trip limit (llvmpipe), under a low (or emulated) work-group limit. */
static int beyond_loop_limit(size_t cols)
{
    clnorm_device_info info;
    if (clnorm_device_describe(T.dev, 1, &info) != CLNORM_SUCCESS || !info.loop_limit) return 0;
    return cols > (size_t)info.loop_limit * info.max_work_group;
}

/* ---- nearest-even rounding of 16-bit outputs ---------------------------------------- */
/* The float32 accuracy the contract gives, which every pre-storage value of a 16-bit
   op has too (all arithmetic is float32): a float64 result farther than this from a
   rounding tie of the dtype must be stored as its nearest-even rounding. */
static const double TIE_WINDOW = 2.5e-5;
size_t g_bits_checked, g_bits_bad;
/* device_denormals() of the case's device, set at the start of each case; where the
   device does not keep denormals, an output below FLT_MIN may be flushed to zero. */
int g_denorm_ok = 1;

/* Magnitude bits of v rounded to nearest even in dt (through float32, which only
   matters within a float32 ulp of a tie) and whether v is clear of every tie. */
static int rne_ref(clnorm_dtype dt, double v, uint32_t *mag)
{
    double a = fabs(v);
    uint32_t m = pack1(dt, (float)a) & 0x7FFFu, infm = dt == F16 ? 0x7C00u : 0x7F80u;
    *mag = m;
    if (m + 1 >= infm) return 0; /* next to the overflow threshold: leave it */
    double y0 = unpack1(dt, m), yu = unpack1(dt, m + 1);
    double yd = m ? (double)unpack1(dt, m - 1) : -(double)unpack1(dt, 1);
    double d = fmin(fabs(a - (y0 + yu) / 2), fabs(a - (y0 + yd) / 2));
    return d > TIE_WINDOW * a + 1e-44;
}

/* 1 if the stored bits are the nearest-even rounding of want (or it is near a tie,
   or not finite). Zero matches either sign. */
int rne_ok(clnorm_dtype dt, uint32_t got, double want, uint32_t *exp_bits)
{
    uint32_t m;
    *exp_bits = 0;
    if (dt == F32 || !isfinite(want) || !rne_ref(dt, want, &m)) return 1;
    if (!g_denorm_ok && fabs(want) < FLT_MIN) return 1; /* may be flushed */
    g_bits_checked++;
    *exp_bits = (signbit(want) ? 0x8000u : 0) | m;
    if (m == 0) return (got & 0x7FFFu) == 0;
    return got == *exp_bits;
}

/* ---- the fused operation on canary-guarded buffers ------------------------------------ */
/* fz and fview, the problem and its views, are in fused.h. */
char g_msg[2048];      /* clnorm_last_error() right after the call */

/* A forced number of row threads may exceed what a device can loop over (llvmpipe's
   loop-trip limit): UNSUPPORTED is then a fair answer, counted and noted. */
size_t g_unsupported;

static size_t v_ld(const fz *f, const fview *v) { return v->ld ? v->ld : f->cols; }

size_t v_end(const fz *f, const fview *v)
{
    return f->rows ? v->off + (f->rows - 1) * v_ld(f, v) + f->cols : v->off;
}

static size_t v_index(const fz *f, const fview *v, size_t r, size_t c)
{
    return v->off + r * v_ld(f, v) + c;
}

static int v_has(const fz *f, const fview *v, int buf, size_t i)
{
    if (v->buf != buf || !f->rows || i < v->off) return 0;
    size_t k = i - v->off, ld = v_ld(f, v);
    return k / ld < f->rows && k % ld < f->cols;
}

void fz_label(const fz *f, char *buf, size_t len)
{
    snprintf(buf, len, "add_rmsnorm %s rows=%zu cols=%zu x(buf%d off=%zu ld=%zu) "
             "residual(buf%d off=%zu ld=%zu) y(buf%d off=%zu ld=%zu) update=%d %s eps=%g%s [%s]",
             dt_name(f->dt), f->rows, f->cols, f->x.buf, f->x.off, f->x.ld, f->r.buf, f->r.off,
             f->r.ld, f->y.buf, f->y.off, f->y.ld, f->update, f->g ? "gamma" : "no-gamma",
             (double)f->eps, f->exact ? " exact-fit" : "", plan_now());
}

/* h = round(float32(x + residual)) of the rounded inputs: its bits and values. */
void fused_h(clnorm_dtype dt, size_t n, const float *xv, const float *rv, uint32_t *hb,
             float *h)
{
    for (size_t i = 0; i < n; i++) {
        volatile float s = rnd(dt, xv[i]) + rnd(dt, rv[i]); /* float32, as the kernel */
        hb[i] = pack1(dt, s);
        h[i] = unpack1(dt, hb[i]);
    }
}

/* y (packed bits) against the float64 RMSNorm of rows v (already in the dtype),
   with gamma rounded to the dtype; 16-bit outputs also bit for bit where clear of a
   tie. check_poison: every y element must have been written. Returns bad count. */
size_t check_rms_y(const char *file, int line, const char *label, clnorm_dtype dt,
                   size_t rows, size_t cols, const float *v, const float *g, float eps,
                   const uint32_t *yb, const unsigned char *skip, double rel, double abs_,
                   int check_poison)
{
    size_t bad = 0, unwritten = 0, badbits = 0, shown = 0;
    char first[3][260];
    float *gr = g ? malloc(cols * sizeof(float)) : NULL;
    double *ref = malloc(rows * cols * sizeof(double) + 8);
    if (g) dt_round(dt, g, gr, cols);
    ref_rmsnorm(v, rows, cols, gr, eps, ref);
    for (size_t r = 0; r < rows; r++) {
        if (skip && skip[r]) continue;
        const float *vr = v + r * cols;
        for (size_t c = 0; c < cols; c++) {
            size_t i = r * cols + c;
            double want = ref[i];
            if (check_poison && yb[i] == poison_of(dt)) {
                if (!unwritten++ && shown < 3)
                    snprintf(first[shown++], sizeof first[0], "[%zu,%zu] never written", r, c);
                bad++;
                continue;
            }
            float got = unpack1(dt, yb[i]);
            uint32_t eb;
            int close = t_close(got, want, rel, abs_), bits = rne_ok(dt, yb[i], want, &eb);
            if (close && bits) continue;
            if (!bits) badbits++;
            if (shown < 3)
                snprintf(first[shown++], sizeof first[0],
                         "[%zu,%zu] got %.9g (bits 0x%x) want %.17g%s%x (input %.9g)", r, c,
                         (double)got, yb[i], want, bits ? "" : ", nearest-even bits 0x",
                         bits ? 0 : eb, (double)vr[c]);
            bad++;
        }
    }
    free(gr);
    free(ref);
    g_bits_bad += badbits;
    if (bad)
        t_fail(file, line, "%s: %zu of %zu y values wrong (rel %.3g, abs %.3g%s; %zu unwritten, "
               "%zu not rounded to nearest even): %s%s%s%s%s", label, bad, rows * cols, rel,
               abs_, dt == F32 ? "" : ", bits where clear of ties", unwritten, badbits, first[0],
               shown > 1 ? "; " : "", shown > 1 ? first[1] : "", shown > 2 ? "; " : "",
               shown > 2 ? first[2] : "");
    return bad;
}

/* Runs clnorm_add_rmsnorm on buffers laid out as f says, canaries everywhere outside
   the views, y poisoned, waits for its event and checks: status as wanted; on success
   residual holds exactly round(x + residual) (update) and nothing else outside y
   changed, every y element written and right; on refusal no buffer changed. */
clnorm_status fused_run(const fz *f, clnorm_status want)
{
    char label[700];
    fz_label(f, label, sizeof label);
    clnorm_dtype dt = f->dt;
    size_t es = dt_size(dt), rows = f->rows, cols = f->cols, n = rows * cols;
    size_t tail = f->exact ? 0 : 1 + (rows + cols) % 3;
    const fview *vs[3] = {&f->x, &f->r, &f->y};
    const char *vnames[3] = {"x", "residual", "y"};
    size_t nb[3] = {0, 0, 0};
    int used[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        used[vs[k]->buf] = 1;
        if (v_end(f, vs[k]) > nb[vs[k]->buf]) nb[vs[k]->buf] = v_end(f, vs[k]);
    }
    unsigned char *img[3] = {0}, *back[3] = {0}, *mask[3] = {0};
    for (int b = 0; b < 3; b++) {
        if (!used[b]) continue;
        nb[b] += tail;
        img[b] = malloc(nb[b] * es + 4);
        back[b] = malloc(nb[b] * es + 4);
        mask[b] = calloc(nb[b] + 1, 1);
        dt_fill_bits(dt, img[b], nb[b], canary_of(dt));
    }
    /* y poisoned, then x and residual written (a refused overlap decides nothing). */
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            put_el(img[f->y.buf], v_index(f, &f->y, r, c), es, poison_of(dt));
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            put_el(img[f->x.buf], v_index(f, &f->x, r, c), es, pack1(dt, f->xv[r * cols + c]));
            put_el(img[f->r.buf], v_index(f, &f->r, r, c), es, pack1(dt, f->rv[r * cols + c]));
        }
    uint32_t *hb = malloc(n * 4 + 4);
    float *h = malloc(n * 4 + 4);
    fused_h(dt, n, f->xv, f->rv, hb, h);

    cl_mem mem[3] = {0}, gm = NULL;
    void *gimg = NULL;
    int setup = 1;
    for (int b = 0; b < 3; b++)
        if (used[b] && !(mem[b] = t_buffer(T.ctx, nb[b] * es, img[b]))) setup = 0;
    if (f->g) {
        gimg = malloc(cols * es);
        dt_pack(dt, f->g, gimg, cols);
        if (!(gm = t_buffer(T.ctx, cols * es, gimg))) setup = 0;
    }
    clnorm_status st = CLNORM_OPENCL_ERROR;
    if (!setup) goto done;
    clnorm_matrix xm = {mem[f->x.buf], f->x.off, f->x.ld};
    clnorm_matrix rm = {mem[f->r.buf], f->r.off, f->r.ld};
    clnorm_matrix ym = {mem[f->y.buf], f->y.off, f->y.ld};
    cl_event ev = NULL;
    double t0 = t_now();
    st = clnorm_add_rmsnorm(T.q, dt, rows, cols, xm, rm, f->update, gm, ym, f->eps, 0, NULL, &ev);
    snprintf(g_msg, sizeof g_msg, "%s", st ? clnorm_last_error() : "");
    if (st == CLNORM_UNSUPPORTED && want == CLNORM_SUCCESS &&
        (forced_team() || beyond_loop_limit(cols))) {
        /* Only a loop-limited device (llvmpipe) refuses a forced team, or a row longer
           than its widest team can loop over (the fused add has no split form),
           saying so. */
        g_unsupported++;
        CHECK(strstr(g_msg, "can loop over") != NULL, "%s: UNSUPPORTED for another reason "
              "than the loop limit: \"%s\"", label, g_msg);
        want = st;
    }
    if (st != want)
        t_fail(__FILE__, __LINE__, "%s: returned %s, expected %s; last error \"%s\"", label,
               clnorm_status_string(st), clnorm_status_string(want), g_msg);
    if (st == CLNORM_SUCCESS) {
        t_check_event(label, ev);
    } else {
        CHECK(g_msg[0] != '\0', "%s: %s with an empty clnorm_last_error()", label,
              clnorm_status_string(st));
        CHECK(ev == NULL, "%s: refused with %s but returned an event", label,
              clnorm_status_string(st));
    }
    if (ev) clReleaseEvent(ev);
    CHECK_CL(clFinish(T.q));

    /* What each element must hold now: 0 as before, 1 y (checked below), 2 h. */
    int ok = st == CLNORM_SUCCESS;
    if (ok) {
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++) {
                mask[f->y.buf][v_index(f, &f->y, r, c)] = 1;
                if (!f->update) continue;
                size_t i = v_index(f, &f->r, r, c);
                if (f->skip && f->skip[r]) mask[f->r.buf][i] = 1; /* not asserted */
                else {
                    mask[f->r.buf][i] = 2;
                    put_el(img[f->r.buf], i, es, hb[r * cols + c]);
                }
            }
    }
    for (int b = 0; b < 3; b++) {
        if (!used[b] || !t_read(T.q, mem[b], nb[b] * es, back[b])) continue;
        size_t bad = 0, fi = 0;
        for (size_t i = 0; i < nb[b]; i++)
            if (mask[b][i] != 1 && get_el(img[b], i, es) != get_el(back[b], i, es) && !bad++)
                fi = i;
        if (!bad) continue;
        const char *where = "padding or canary";
        for (int k = 2; k >= 0; k--)
            if (v_has(f, vs[k], b, fi)) where = vnames[k];
        if (mask[b][fi] == 2) {
            size_t k = fi - f->r.off, rr = k / v_ld(f, &f->r), cc = k % v_ld(f, &f->r);
            t_fail(__FILE__, __LINE__, "%s: %zu element(s) of buffer %d wrong; first: residual "
                   "[%zu,%zu] holds 0x%x, expected round(x + residual) = 0x%x (x %.9g, "
                   "residual %.9g)", label, bad, b, rr, cc, get_el(back[b], fi, es),
                   get_el(img[b], fi, es), (double)rnd(dt, f->xv[rr * cols + cc]),
                   (double)rnd(dt, f->rv[rr * cols + cc]));
        } else {
            t_fail(__FILE__, __LINE__, "%s%s: %zu element(s) of buffer %d changed that must "
                   "not; first at element %zu (%s): 0x%x became 0x%x", label,
                   ok ? "" : " (refused)", bad, b, fi, where, get_el(img[b], fi, es),
                   get_el(back[b], fi, es));
        }
    }
    if (gm) {
        unsigned char *gb = malloc(cols * es + 4);
        if (t_read(T.q, gm, cols * es, gb))
            CHECK(!memcmp(gb, gimg, cols * es), "%s: gamma changed", label);
        free(gb);
    }
    if (ok) {
        uint32_t *yb = malloc(n * 4 + 4);
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < cols; c++)
                yb[r * cols + c] = get_el(back[f->y.buf], v_index(f, &f->y, r, c), es);
        int inplace = f->y.buf == f->x.buf && f->y.off == f->x.off && v_ld(f, &f->y) == v_ld(f, &f->x);
        double rel = f->rel ? f->rel : tol_rel(dt, cols), abs_ = f->rel ? f->abs : tol_abs(dt);
        check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, h, f->g, f->eps, yb, f->skip,
                    rel, abs_, !inplace);
        free(yb);
    }
    if (t_verbose()) NOTE("%s: %s, %.3f s", label, clnorm_status_string(st), t_now() - t0);
done:
    for (int b = 0; b < 3; b++) {
        if (mem[b]) clReleaseMemObject(mem[b]);
        free(img[b]), free(back[b]), free(mask[b]);
    }
    if (gm) clReleaseMemObject(gm);
    free(gimg), free(hb), free(h);
    return st;
}
