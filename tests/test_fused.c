/* The fused residual add + RMSNorm, RMSNorm on rows whose float32 sum of squares
   overflows or underflows, and the special values and rounding of the 16-bit types.

   add_rmsnorm_values  f32, f16 and bf16 against float64 references computed from the
                       rounded inputs (h = x + residual added in float32 and rounded to
                       the dtype, as the header says); residual updated bit for bit or
                       left untouched bit for bit; y poisoned first
   add_rmsnorm_views   strided, offset, in-place, one-buffer and interleaved layouts with
                       canaries; residual overlapping x or y refused with nothing
                       written; the other refusals; rows == 0; the host variant
   rmsnorm_extreme     rows of +-3e30, of 3e-25 (eps = 0), of float32 denormals and of
                       1e19..1e20 beside ordinary magnitudes, with ordinary rows in the
                       same call, for rmsnorm and add_rmsnorm under forced plans
   lowp_special        f16/bf16 +-inf and NaN inputs for every op against API.md's
                       special-value rules; NaN stays NaN; outputs rounded to nearest
                       even, compared bit for bit away from rounding ties */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define F32 CLNORM_F32
#define F16 CLNORM_F16
#define BF16 CLNORM_BF16

/* ---- elements ---------------------------------------------------------------------- */
static uint32_t pack1(clnorm_dtype dt, float v)
{
    uint32_t b = 0;
    dt_pack(dt, &v, &b, 1);
    return b;
}

static float unpack1(clnorm_dtype dt, uint32_t b)
{
    float v;
    dt_unpack(dt, &b, &v, 1);
    return v;
}

static float rnd(clnorm_dtype dt, float v) { return unpack1(dt, pack1(dt, v)); }

static uint32_t get_el(const unsigned char *img, size_t i, size_t es)
{
    uint32_t v = 0;
    memcpy(&v, img + i * es, es);
    return v;
}

static void put_el(unsigned char *img, size_t i, size_t es, uint32_t v)
{
    memcpy(img + i * es, &v, es);
}

/* Output poison: a NaN payload no kernel makes from these inputs; input canary: a NaN,
   so that a kernel reading outside its view turns a row into NaN. */
static uint32_t poison_of(clnorm_dtype dt)
{
    return dt == F32 ? 0x7FA5A5A5u : dt == F16 ? 0x7D2Au : 0x7FA5u;
}

static uint32_t canary_of(clnorm_dtype dt)
{
    return dt == F32 ? 0x7F8A11CEu : dt == F16 ? 0x7C3Bu : 0x7F8Bu;
}

static int bits_nan(clnorm_dtype dt, uint32_t b)
{
    if (dt == F32) return (b & 0x7FFFFFFFu) > 0x7F800000u;
    if (dt == F16) return (b & 0x7FFFu) > 0x7C00u;
    return (b & 0x7FFFu) > 0x7F80u;
}

/* The float32 accuracy the contract gives, which every pre-storage value of a 16-bit
   op has too (all arithmetic is float32): a float64 result farther than this from a
   rounding tie of the dtype must be stored as its nearest-even rounding. */
static const double TIE_WINDOW = 2.5e-5;
static size_t g_bits_checked, g_bits_bad;
/* Whether the device keeps float32 denormals (CL_FP_DENORM); where it does not, an
   output below FLT_MIN may be flushed to zero. Set at the start of each case. */
static int g_denorm_ok = 1;

static int device_denormals(void)
{
    cl_device_fp_config fp = 0;
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL));
    return (fp & CL_FP_DENORM) != 0;
}

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
static int rne_ok(clnorm_dtype dt, uint32_t got, double want, uint32_t *exp_bits)
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

/* ---- the environment of a forced plan ------------------------------------------------ */
static const char *env_names[] = {"CLNORM_VARIANT", "CLNORM_WORK_GROUP", "CLNORM_ROW_THREADS",
                                  "CLNORM_SPLIT", "CLNORM_PAIR_WORD"};

static const char *plan_now(void)
{
    static char buf[200];
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT_OF(env_names); i++) {
        const char *v = getenv(env_names[i]);
        if (v) {
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%s=%s", n ? " " : "", env_names[i], v);
        }
    }
    if (!buf[0]) snprintf(buf, sizeof buf, "auto plan");
    return buf;
}

static void set_num(const char *name, size_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%zu", v);
    t_setenv(name, b);
}

static void plan_clear(void)
{
    for (size_t i = 0; i < COUNT_OF(env_names); i++) t_setenv(env_names[i], NULL);
}

/* Forced plan: variant (NULL: auto), work-group and row threads (0: library's). */
static void plan_set(const char *variant, size_t wg, size_t team, size_t split)
{
    plan_clear();
    if (variant) t_setenv("CLNORM_VARIANT", variant);
    if (wg) set_num("CLNORM_WORK_GROUP", wg);
    if (team) set_num("CLNORM_ROW_THREADS", team);
    if (split) set_num("CLNORM_SPLIT", split);
}

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v) p *= 2;
    return p;
}

/* Forced shapes use few work-group sizes (64 and 256): PoCL compiles a kernel anew
   for every local size, which would dominate the time of a cold run. */
/* The register variant in groups of 64 with enough row threads to hold a row of
   cols (up to 2048 columns); longer rows are left to the library's shape. */
static void plan_reg(size_t cols)
{
    size_t team = pow2_ceil((cols + 31) / 32);
    if (team > 64) plan_set("reg", 0, 0, 0);
    else plan_set("reg", 64, team, 0);
}

/* The paired register variant likewise (16 elements per work-item covers every op
   and dtype), in words of 2 or 4 elements; views whose row starts or cols are not
   multiples of the word run the plain register form. */
static void plan_pair(size_t cols)
{
    static const char *words[] = {"2", "4"};
    size_t team = pow2_ceil((cols + 15) / 16);
    if (team > 64) plan_set("pair", 0, 0, 0);
    else plan_set("pair", 64, team, 0);
    t_setenv("CLNORM_PAIR_WORD", PICK(&R, words));
}

/* The streaming variant with 1, 8 or 64 work-items per row in groups of 64. */
static void plan_stream(void)
{
    static const size_t teams[] = {1, 8, 64};
    plan_set("stream", 64, PICK(&R, teams), 0);
}

/* ---- the fused operation on canary-guarded buffers ------------------------------------ */
typedef struct fview { int buf; size_t off, ld; } fview; /* ld 0: packed, passed as 0 */

typedef struct fz {
    clnorm_dtype dt;
    size_t rows, cols;
    fview x, r, y;            /* buffers 0..2 */
    int update, exact;        /* exact: buffers end at the last view element */
    const float *xv, *rv;     /* rows x cols values, rounded to dt on the way in */
    const float *g;           /* cols values or NULL */
    float eps;
    const unsigned char *skip; /* rows whose values are not asserted (or NULL) */
    double rel, abs;          /* 0, 0: API.md's rule for the dtype */
} fz;

static char g_msg[2048];      /* clnorm_last_error() right after the call */

/* A forced number of row threads may exceed what a device can loop over (llvmpipe's
   loop-trip limit): UNSUPPORTED is then a fair answer, counted and noted. */
static size_t g_unsupported;

static int forced_team(void) { return getenv("CLNORM_ROW_THREADS") != NULL; }

static size_t v_ld(const fz *f, const fview *v) { return v->ld ? v->ld : f->cols; }

static size_t v_end(const fz *f, const fview *v)
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

static void fz_label(const fz *f, char *buf, size_t len)
{
    snprintf(buf, len, "add_rmsnorm %s rows=%zu cols=%zu x(buf%d off=%zu ld=%zu) "
             "residual(buf%d off=%zu ld=%zu) y(buf%d off=%zu ld=%zu) update=%d %s eps=%g%s [%s]",
             dt_name(f->dt), f->rows, f->cols, f->x.buf, f->x.off, f->x.ld, f->r.buf, f->r.off,
             f->r.ld, f->y.buf, f->y.off, f->y.ld, f->update, f->g ? "gamma" : "no-gamma",
             (double)f->eps, f->exact ? " exact-fit" : "", plan_now());
}

/* h = round(float32(x + residual)) of the rounded inputs: its bits and values. */
static void fused_h(clnorm_dtype dt, size_t n, const float *xv, const float *rv, uint32_t *hb,
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
static size_t check_rms_y(const char *file, int line, const char *label, clnorm_dtype dt,
                          size_t rows, size_t cols, const float *v, const float *g, float eps,
                          const uint32_t *yb, const unsigned char *skip, double rel,
                          double abs_, int check_poison)
{
    size_t bad = 0, unwritten = 0, badbits = 0, shown = 0;
    char first[3][260];
    for (size_t r = 0; r < rows; r++) {
        if (skip && skip[r]) continue;
        const float *vr = v + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) ss += (double)vr[c] * vr[c];
        double rs = 1.0 / sqrt(ss / (double)cols + (double)eps);
        for (size_t c = 0; c < cols; c++) {
            size_t i = r * cols + c;
            double want = (double)vr[c] * rs * (g ? (double)rnd(dt, g[c]) : 1.0);
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
static clnorm_status fused_run(const fz *f, clnorm_status want)
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
    if (st == CLNORM_UNSUPPORTED && want == CLNORM_SUCCESS && forced_team()) {
        g_unsupported++;
        NOTE("%s: UNSUPPORTED under the forced shape (\"%s\")", label, g_msg);
        want = st;
    }
    if (st != want)
        t_fail(__FILE__, __LINE__, "%s: returned %s, expected %s; last error \"%s\"", label,
               clnorm_status_string(st), clnorm_status_string(want), g_msg);
    if (st == CLNORM_SUCCESS) {
        if (CHECK(ev != NULL, "%s: no event returned", label)) {
            CHECK_CL(clWaitForEvents(1, &ev));
            cl_int s = -1;
            CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
            CHECK(s == CL_COMPLETE, "%s: event status %d after clWaitForEvents", label, s);
        }
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

/* ---- rmsnorm_extreme --------------------------------------------------------------------- */
enum { XK_ORD, XK_BIG, XK_TINY, XK_DENORM, XK_MIXED, XK_COUNT };
static const char *xk_names[] = {"ordinary", "+-3e30", "3e-25", "1e-40 (denormal)",
                                 "1e19..1e20 mixed"};

static double rsign(void) { return rng_below(&R, 2) ? 1.0 : -1.0; }

static void gen_extreme_row(float *x, size_t cols, int kind)
{
    switch (kind) {
    case XK_BIG: /* sum of squares overflows float32 */
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, 29, log10(3e30))));
        break;
    case XK_TINY: /* sum of squares underflows to zero */
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, -26, log10(3e-25))));
        break;
    case XK_DENORM:
        for (size_t c = 0; c < cols; c++)
            x[c] = (float)(rsign() * pow(10, rng_range(&R, -41, -40)));
        break;
    case XK_MIXED: { /* a few 1e19..1e20 among ordinary magnitudes */
        size_t big = 0;
        for (size_t c = 0; c < cols; c++) {
            if (rng_below(&R, 4) == 0) {
                x[c] = (float)(rsign() * pow(10, rng_range(&R, 19, 20)));
                big++;
            } else {
                x[c] = (float)(rsign() * pow(10, rng_range(&R, -3, 3)));
            }
        }
        if (!big) x[rng_below(&R, cols)] = (float)(rsign() * pow(10, rng_range(&R, 19, 20)));
        break;
    }
    default:
        gen_row(&R, x, cols, -1);
        break;
    }
}

typedef struct xplan { const char *variant; size_t wg, team, split; } xplan;
static const xplan xplans[] = {
    {NULL, 0, 0, 0},          /* the library's own */
    {"stream", 64, 8, 0},     /* 8 rows per work-group */
    {"stream", 64, 1, 0},     /* 64 rows per work-group, one work-item each */
    {"stream", 64, 64, 0},    /* one row per work-group */
    {"reg", 64, 4, 0},        /* rows up to 128 in registers, 16 per group */
    {"reg", 256, 128, 0},     /* rows up to 4096 in registers, 2 per group */
    {"pair", 256, 128, 0},    /* even rows as words of two elements (odd: reg) */
    {"split", 0, 0, 3},       /* rmsnorm in 3 slices per row (add_rmsnorm streams) */
    {"split", 64, 0, 0},      /* rmsnorm split as the library slices it */
};

static void extreme_call(int fused, clnorm_dtype dt, size_t cols, float eps, int inplace,
                         int denorm_ok, size_t *nrows_checked)
{
    /* Each special kind twice among ordinary rows, shuffled: work-groups of several
       rows mix rescaled and ordinary ones. More rows when they are short. */
    int kinds[64];
    size_t rows = 0, reps = cols < 100 ? 3 : 1;
    for (size_t rep = 0; rep < reps; rep++) {
        for (int k = XK_BIG; k < XK_COUNT; k++) kinds[rows++] = k, kinds[rows++] = k;
        for (int k = 0; k < 6; k++) kinds[rows++] = XK_ORD;
    }
    for (size_t i = rows - 1; i > 0; i--) {
        size_t j = rng_below(&R, i + 1);
        int t = kinds[i]; kinds[i] = kinds[j]; kinds[j] = t;
    }
    size_t n = rows * cols;
    float *x = malloc(n * 4), *r = malloc(n * 4), *g = NULL;
    unsigned char skip[64] = {0};
    for (size_t i = 0; i < rows; i++) {
        gen_extreme_row(x + i * cols, cols, kinds[i]);
        /* The residual of a mixed row stays ordinary, so that its big entries survive. */
        gen_extreme_row(r + i * cols, cols, kinds[i] == XK_MIXED ? XK_ORD : kinds[i]);
        skip[i] = kinds[i] == XK_DENORM && !denorm_ok;
        if (!skip[i]) (*nrows_checked)++;
    }
    if (rng_below(&R, 2)) {
        g = malloc(cols * 4);
        gen_gamma(&R, g, cols);
    }
    /* Relative, except where y is itself a float32 denormal, whose spacing of 2^-149
       (2^-133 in bf16) no relative bound survives. */
    double rel = dt == F32 ? 2e-5 : tol_rel(dt, cols), abs_ = dt == F32 ? 0x1p-147 : 0x1p-133;
    if (fused) {
        fz f;
        memset(&f, 0, sizeof f);
        f.dt = dt, f.rows = rows, f.cols = cols, f.xv = x, f.rv = r, f.g = g, f.eps = eps;
        f.update = (int)rng_below(&R, 2);
        f.x.buf = 0, f.r.buf = 1, f.y.buf = inplace ? 0 : 2;
        f.skip = skip;
        f.rel = rel, f.abs = abs_;
        fused_run(&f, CLNORM_SUCCESS);
    } else {
        op_args a;
        memset(&a, 0, sizeof a);
        a.op = OP_RMSNORM, a.dt = dt, a.rows = rows, a.cols = cols, a.x = x, a.gamma = g;
        a.eps = eps, a.poison = POISON_NAN;
        a.layout = inplace ? LAYOUT_INPLACE : LAYOUT_SEPARATE;
        op_out o = {0};
        char label[600], base[400];
        op_label(&a, base, sizeof base);
        snprintf(label, sizeof label, "%s [%s]", base, plan_now());
        clnorm_status st = run_op(&a, &o);
        if (st == CLNORM_UNSUPPORTED && forced_team()) {
            g_unsupported++;
            NOTE("%s: UNSUPPORTED under the forced shape (\"%s\")", label, clnorm_last_error());
        } else if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st),
                         clnorm_last_error())) {
            float *xr = malloc(n * 4);
            uint32_t *yb = malloc(n * 4);
            for (size_t i = 0; i < n; i++) xr[i] = rnd(dt, x[i]), yb[i] = pack1(dt, o.y[i]);
            /* run_op has checked that every y element was written. */
            check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, xr, g, eps, yb, skip, rel,
                        abs_, 0);
            free(xr), free(yb);
        }
        op_out_free(&o);
    }
    if (t_verbose()) {
        char kb[200] = "";
        for (size_t i = 0; i < rows && strlen(kb) < 180; i++)
            snprintf(kb + strlen(kb), sizeof kb - strlen(kb), "%d", kinds[i]);
        NOTE("%s %s rows=%zu cols=%zu eps=%g [%s] kinds %s", fused ? "add_rmsnorm" : "rmsnorm",
             dt_name(dt), rows, cols, (double)eps, plan_now(), kb);
    }
    free(x), free(r), free(g);
}

void test_rmsnorm_extreme(void)
{
    static const size_t xcols[] = {1, 7, 33, 1000, 4097};
    static const float more_eps[] = {1e-30f, 1e-22f, 1e-6f, 0.0f};
    int denorm_ok = g_denorm_ok = device_denormals();
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    NOTE("device %s float32 denormals%s", denorm_ok ? "supports" : "does not support",
         denorm_ok ? "" : ": rows of 1e-40 are run but not asserted");
    for (int k = 0; k < XK_COUNT; k++)
        if (t_verbose()) NOTE("row kind %d: %s", k, xk_names[k]);
    size_t calls = 0, checked = 0, e = 0;
    for (size_t p = 0; p < COUNT_OF(xplans); p++) {
        for (size_t i = 0; i < COUNT_OF(xcols); i++) {
            size_t cols = xcols[i];
            plan_set(xplans[p].variant, xplans[p].wg, xplans[p].team, xplans[p].split);
            /* Separate and in place (where a split row's other work-groups must not
               see a slice already written). */
            int odd = (int)(i & 1);
            extreme_call(0, F32, cols, 0.0f, 0, denorm_ok, &checked);
            extreme_call(0, F32, cols, more_eps[e++ % COUNT_OF(more_eps)], 1, denorm_ok, &checked);
            extreme_call(1, F32, cols, 0.0f, odd, denorm_ok, &checked);
            extreme_call(0, BF16, cols, 0.0f, odd, denorm_ok, &checked);
            extreme_call(1, BF16, cols, more_eps[e % COUNT_OF(more_eps)], !odd, denorm_ok, &checked);
            calls += 5;
            plan_clear();
        }
    }
    NOTE("%zu calls under %zu plans, %zu rows checked, %zu UNSUPPORTED under forced shapes",
         calls, COUNT_OF(xplans), checked, g_unsupported);
    CHECK(g_unsupported < calls / 4, "%zu of %zu calls UNSUPPORTED", g_unsupported, calls);
}

/* ---- lowp_special -------------------------------------------------------------------- */
enum sk {
    SK_ORD, SK_NAN, SK_ALL_NEG_INF, SK_POS_INF, SK_POS_INF_TIES, SK_SOME_NEG_INF,
    SK_NAN_AND_INF, SK_ALL_POS_INF, SK_ZERO, SK_MAX_FINITE, SK_COUNT
};

static uint16_t pinf_of(clnorm_dtype dt) { return dt == F16 ? 0x7C00 : 0x7F80; }
static uint16_t ninf_of(clnorm_dtype dt) { return dt == F16 ? 0xFC00 : 0xFF80; }

/* NaNs of several payloads and signs, quiet and signalling; none is the poison. */
static uint16_t nan_of(clnorm_dtype dt)
{
    static const uint16_t h[] = {0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD00, 0x7E55};
    static const uint16_t b[] = {0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0xFF81, 0x7FD5};
    return dt == F16 ? PICK(&R, h) : PICK(&R, b);
}

static void fill_special(clnorm_dtype dt, uint16_t *x, size_t cols, enum sk k)
{
    float *v = malloc(cols * 4);
    int kind;
    do kind = (int)rng_below(&R, ROW_KINDS);
    while (dt == F16 && kind == ROW_FAR_OFFSET); /* beyond float16's range */
    gen_row(&R, v, cols, kind);
    dt_pack(dt, v, x, cols);
    free(v);
    size_t p = rng_below(&R, cols);
    switch (k) {
    case SK_ORD: break;
    case SK_NAN: x[p] = nan_of(dt); break;
    case SK_ALL_NEG_INF: for (size_t c = 0; c < cols; c++) x[c] = ninf_of(dt); break;
    case SK_POS_INF: x[p] = pinf_of(dt); break;
    case SK_POS_INF_TIES:
        for (size_t n = 1 + rng_below(&R, 3); n > 0; n--) x[rng_below(&R, cols)] = pinf_of(dt);
        for (size_t n = rng_below(&R, 3); n > 0; n--) {
            size_t q = rng_below(&R, cols);
            if (x[q] != pinf_of(dt)) x[q] = ninf_of(dt);
        }
        break;
    case SK_SOME_NEG_INF:
        for (size_t n = 1 + rng_below(&R, cols); n > 0; n--) x[rng_below(&R, cols)] = ninf_of(dt);
        x[p] = (uint16_t)pack1(dt, (float)rng_range(&R, -5, 5));
        break;
    case SK_NAN_AND_INF:
        x[rng_below(&R, cols)] = pinf_of(dt);
        x[rng_below(&R, cols)] = ninf_of(dt);
        x[p] = nan_of(dt);
        break;
    case SK_ALL_POS_INF: for (size_t c = 0; c < cols; c++) x[c] = pinf_of(dt); break;
    case SK_ZERO: for (size_t c = 0; c < cols; c++) x[c] = rng_below(&R, 2) ? 0x8000 : 0; break;
    case SK_MAX_FINITE: /* bf16's overflows the float32 sum of squares */
        for (size_t c = 0; c < cols; c++)
            x[c] = (uint16_t)((rng_below(&R, 2) ? 0x8000 : 0) | (dt == F16 ? 0x7BFF : 0x7F7F));
        break;
    default: break;
    }
}

/* One op on packed 16-bit rows; checks x unchanged and every output written, then the
   values against the references of API.md's rules, 16-bit outputs bit for bit. */
static void lowp_call(top op, clnorm_dtype dt, size_t cols, float eps)
{
    enum sk kinds[4 * SK_COUNT];
    size_t rows = 0;
    for (int rep = 0; rep < 2; rep++)
        for (int k = 0; k < SK_COUNT; k++) kinds[rows++] = (enum sk)k, kinds[rows++] = SK_ORD;
    for (size_t i = rows - 1; i > 0; i--) {
        size_t j = rng_below(&R, i + 1);
        enum sk t = kinds[i]; kinds[i] = kinds[j]; kinds[j] = t;
    }
    size_t n = rows * cols;
    uint16_t *xb = malloc(n * 2), *yb = malloc(n * 2 + 2), *ypo = malloc(n * 2 + 2), *gb = NULL;
    uint16_t *xback = malloc(n * 2);
    float *xf = malloc(n * 4), *gf = NULL, *m = malloc(rows * 4), *l = malloc(rows * 4);
    for (size_t r = 0; r < rows; r++) fill_special(dt, xb + r * cols, cols, kinds[r]);
    dt_unpack(dt, xb, xf, n);
    dt_fill_bits(dt, ypo, n, poison_of(dt));
    float *stpo = malloc(rows * 4);
    dt_fill_bits(F32, stpo, rows, poison_of(F32));
    if (op == OP_RMSNORM && rng_below(&R, 2)) {
        float *g = malloc(cols * 4);
        gen_gamma(&R, g, cols);
        gb = malloc(cols * 2), gf = malloc(cols * 4);
        dt_pack(dt, g, gb, cols);
        dt_unpack(dt, gb, gf, cols);
        free(g);
    }
    char label[400];
    snprintf(label, sizeof label, "%s %s rows=%zu cols=%zu%s%s [%s]", op_name(op), dt_name(dt),
             rows, cols, op == OP_RMSNORM ? (gb ? " gamma" : " no-gamma") : "",
             op == OP_RMSNORM ? (eps ? " eps=1e-5" : " eps=0") : "", plan_now());
    cl_mem X = t_buffer(T.ctx, n * 2, xb), Y = NULL, G = NULL, M = NULL, L = NULL;
    if (op == OP_STATS) M = t_buffer(T.ctx, rows * 4, stpo), L = t_buffer(T.ctx, rows * 4, stpo);
    else Y = t_buffer(T.ctx, n * 2, ypo);
    if (gb) G = t_buffer(T.ctx, cols * 2, gb);
    clnorm_matrix xm = {X, 0, 0}, ym = {Y, 0, 0};
    clnorm_status st;
    if (op == OP_RMSNORM)
        st = clnorm_rmsnorm(T.q, dt, rows, cols, xm, G, ym, eps, 0, NULL, NULL);
    else if (op == OP_STATS)
        st = clnorm_softmax_stats(T.q, dt, rows, cols, xm, M, L, 0, NULL, NULL);
    else
        st = clnorm_softmax(T.q, dt, rows, cols, xm, ym, op_algo(op), 0, NULL, NULL);
    char err[1024];
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    CHECK_CL(clFinish(T.q));
    int unsup = st == CLNORM_UNSUPPORTED && forced_team();
    if (unsup) {
        g_unsupported++;
        NOTE("%s: UNSUPPORTED under the forced shape (\"%s\")", label, err);
    }
    if (!unsup && CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label, clnorm_status_string(st), err) &&
        t_read(T.q, X, n * 2, xback)) {
        CHECK(!memcmp(xback, xb, n * 2), "%s: the input x changed", label);
        double rel = tol_rel(dt, cols), abs_ = tol_abs(dt);
        if (op == OP_STATS) {
            double *wm = malloc(rows * 8), *wl = malloc(rows * 8);
            ref_stats(xf, rows, cols, wm, wl);
            if (t_read(T.q, M, rows * 4, m) && t_read(T.q, L, rows * 4, l)) {
                char lab[460];
                snprintf(lab, sizeof lab, "%s row_max", label);
                COMPARE(lab, m, wm, rows, 1, 0, 0);
                snprintf(lab, sizeof lab, "%s row_sum (statistics in float32)", label);
                COMPARE(lab, l, wl, rows, 1, tol_rel(F32, cols), tol_abs(F32));
            }
            free(wm), free(wl);
        } else if (t_read(T.q, Y, n * 2, yb)) {
            uint32_t *y32 = malloc(n * 4);
            for (size_t i = 0; i < n; i++) y32[i] = yb[i];
            if (op == OP_RMSNORM) {
                /* gf is already rounded: rounding it again changes nothing. */
                check_rms_y(__FILE__, __LINE__, label, dt, rows, cols, xf, gf, eps, y32, NULL,
                            rel, abs_, 1);
            } else {
                double *w = malloc(n * 8);
                ref_softmax(xf, rows, cols, w);
                size_t bad = 0, unwritten = 0, badbits = 0, shown = 0;
                char first[3][260];
                for (size_t i = 0; i < n; i++) {
                    uint32_t eb;
                    float got = unpack1(dt, yb[i]);
                    int unw = yb[i] == poison_of(dt);
                    int close = !unw && t_close(got, w[i], rel, abs_);
                    int bits = unw || rne_ok(dt, yb[i], w[i], &eb);
                    if (close && bits) continue;
                    unwritten += unw, badbits += !bits;
                    if (shown < 3)
                        snprintf(first[shown++], sizeof first[0], "[%zu,%zu] got %.9g (bits "
                                 "0x%x%s) want %.17g%s%x (row kind %d)", i / cols, i % cols,
                                 (double)got, yb[i], unw ? ", the poison" : "", w[i],
                                 bits ? "" : ", nearest-even bits 0x", bits ? 0 : eb,
                                 (int)kinds[i / cols]);
                    bad++;
                }
                g_bits_bad += badbits;
                if (bad)
                    t_fail(__FILE__, __LINE__, "%s: %zu of %zu values wrong (%zu unwritten, %zu "
                           "not nearest even): %s%s%s%s%s", label, bad, n, unwritten, badbits,
                           first[0], shown > 1 ? "; " : "", shown > 1 ? first[1] : "",
                           shown > 2 ? "; " : "", shown > 2 ? first[2] : "");
                free(w);
            }
            /* NaN rows: every element NaN in the dtype (bf16 must not round a NaN
               into inf); the value checks above say so too, this names it. */
            for (size_t r = 0; r < rows; r++) {
                int has_nan = 0;
                for (size_t c = 0; c < cols; c++) has_nan |= bits_nan(dt, xb[r * cols + c]);
                if (!has_nan) continue;
                size_t notnan = 0;
                for (size_t c = 0; c < cols; c++) notnan += !bits_nan(dt, yb[r * cols + c]);
                CHECK(!notnan, "%s: row %zu holds a NaN but %zu of its outputs are not NaN",
                      label, r, notnan);
            }
            free(y32);
        }
    }
    cl_mem ms[] = {X, Y, G, M, L};
    for (int i = 0; i < 5; i++) if (ms[i]) clReleaseMemObject(ms[i]);
    free(xb), free(yb), free(ypo), free(gb), free(xback), free(xf), free(gf), free(m), free(l);
    free(stpo);
}

void test_lowp_special(void)
{
    static const size_t lcols[] = {1, 2, 7, 33, 1000};
    const clnorm_dtype dts[] = {F16, BF16};
    g_bits_checked = g_bits_bad = g_unsupported = 0;
    g_denorm_ok = device_denormals();
    size_t calls = 0;
    for (int p = 0; p < 4; p++)
        for (size_t d = 0; d < 2; d++)
            for (size_t i = 0; i < COUNT_OF(lcols); i++) {
                size_t cols = lcols[i];
                for (int op = 0; op < OP_COUNT; op++) {
                    if (p == 0) plan_clear();
                    else if (p == 1) plan_reg(cols);
                    else if (p == 3) plan_pair(cols);
                    else plan_set("split", 0, 0, 2);
                    if (op == OP_RMSNORM) {
                        lowp_call(OP_RMSNORM, dts[d], cols, 0.0f);
                        lowp_call(OP_RMSNORM, dts[d], cols, 1e-5f);
                        calls += 2;
                    } else {
                        lowp_call((top)op, dts[d], cols, 0.0f);
                        calls++;
                    }
                    plan_clear();
                }
            }
    CHECK(g_bits_checked > 1000, "only %zu outputs were clear of rounding ties; the "
          "nearest-even check did not run", g_bits_checked);
    NOTE("%zu calls (auto, reg and split plans); %zu outputs compared bit for bit with their "
         "nearest-even rounding, %zu differed", calls, g_bits_checked, g_bits_bad);
}
