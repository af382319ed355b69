/* The attention cases' harness (attention.h). */
#include "attention.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double att_tol(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? 1e-4 : dt == CLNORM_F16 ? 2e-3 : 1.6e-2;
}

static size_t nq_of(const att_case *c) { return c->batch * c->qh * c->q_len; }

void att_make(const att_case *c, att_data *d)
{
    const size_t nq = nq_of(c) * c->hd, nk = c->batch * c->kvh * c->kv_len * c->hd;
    d->q = malloc((nq + 1) * sizeof(float));
    d->k = malloc((nk + 1) * sizeof(float));
    d->v = malloc((nk + 1) * sizeof(float));
    /* With the default scale, scores of standard deviation 3 whatever head_dim, so
       that the weights differ widely. */
    const double spread = 3.0;
    for (size_t i = 0; i < nq; i++) d->q[i] = rnd(c->dt, (float)rng_range(&R, -spread, spread));
    for (size_t i = 0; i < nk; i++) d->k[i] = rnd(c->dt, (float)rng_range(&R, -spread, spread));
    for (size_t i = 0; i < nk; i++) d->v[i] = rnd(c->dt, (float)rng_range(&R, -3.0, 3.0));
}

void att_data_free(att_data *d)
{
    free(d->q);
    free(d->k);
    free(d->v);
    memset(d, 0, sizeof *d);
}

void att_result_free(att_result *r)
{
    free(r->out);
    free(r->lse);
    memset(r, 0, sizeof *r);
}

const char *att_label(const att_case *c)
{
    static _Thread_local char buf[320];
    snprintf(buf, sizeof buf, "attention %s b%zu qh%zu kvh%zu q_len %zu kv_len %zu hd %zu%s%s "
             "%s/%s pad %zu off %zu%s, %s", dt_name(c->dt), c->batch, c->qh, c->kvh, c->q_len,
             c->kv_len, c->hd, c->causal ? " causal" : "", c->lens ? " kv_lens" : "",
             c->q_bthd ? "bthd" : "bhtd", c->kv_bthd ? "bthd" : "bhtd", c->pad, c->off,
             c->no_lse ? " no lse" : "", plan_now());
    return buf;
}

/* A view of dims (b, h, t, d) in either layout, rows padded; *total: elements. */
static clnorm_tensor layout(const att_case *c, size_t h, size_t t, int bthd, size_t *total)
{
    clnorm_tensor v = {.offset = c->off};
    const size_t row = c->hd + c->pad;
    if (bthd) {
        v.stride_head = row;
        v.stride_len = h * row;
        v.stride_batch = t * h * row;
    } else {
        v.stride_len = row;
        v.stride_head = t * row;
        v.stride_batch = h * t * row;
    }
    *total = c->off + c->batch * h * t * row + c->pad + 1;
    return v;
}

static size_t at(const clnorm_tensor *v, size_t b, size_t h, size_t t, size_t d)
{
    return v->offset + b * v->stride_batch + h * v->stride_head + t * v->stride_len + d;
}

/* The image of a view: fill everywhere, the values at the view's elements. */
static unsigned char *image(const att_case *c, const clnorm_tensor *v, size_t total, size_t h,
                            size_t t, const float *vals, uint32_t fill)
{
    const size_t es = dt_size(c->dt);
    unsigned char *img = malloc(total * es);
    for (size_t i = 0; i < total; i++) put_el(img, i, es, fill);
    if (vals)
        for (size_t b = 0; b < c->batch; b++)
            for (size_t hh = 0; hh < h; hh++)
                for (size_t tt = 0; tt < t; tt++)
                    for (size_t d = 0; d < c->hd; d++)
                        put_el(img, at(v, b, hh, tt, d), es,
                               pack1(c->dt, vals[((b * h + hh) * t + tt) * c->hd + d]));
    return img;
}

clnorm_status att_run(const att_case *c, const att_data *d, att_result *r)
{
    const size_t es = dt_size(c->dt), rows = nq_of(c);
    size_t nqt, nkt, not;
    clnorm_tensor qv = layout(c, c->qh, c->q_len, c->q_bthd, &nqt);
    clnorm_tensor kv = layout(c, c->kvh, c->kv_len, c->kv_bthd, &nkt);
    clnorm_tensor vv = kv;
    clnorm_tensor ov = layout(c, c->qh, c->q_len, c->q_bthd, &not);
    unsigned char *qi = image(c, &qv, nqt, c->qh, c->q_len, d->q, canary_of(c->dt));
    unsigned char *ki = image(c, &kv, nkt, c->kvh, c->kv_len, d->k, canary_of(c->dt));
    unsigned char *vi = image(c, &vv, nkt, c->kvh, c->kv_len, d->v, canary_of(c->dt));
    unsigned char *oi = image(c, &ov, not, c->qh, c->q_len, NULL, poison_of(c->dt));
    unsigned char *ob = malloc(not * es);
    const size_t nl = rows + 3;
    float *li = malloc(nl * sizeof(float)), *lb = malloc(nl * sizeof(float));
    for (size_t i = 0; i < nl; i++) memcpy(&li[i], &(uint32_t){0x7FA5A5A5u}, 4);
    qv.mem = t_buffer(T.ctx, nqt * es, qi);
    kv.mem = t_buffer(T.ctx, nkt * es, ki);
    vv.mem = t_buffer(T.ctx, nkt * es, vi);
    ov.mem = t_buffer(T.ctx, not * es, oi);
    cl_mem lse = c->no_lse ? NULL : t_buffer(T.ctx, nl * sizeof(float), li);
    /* kv_lens in a buffer one int longer than the entries. */
    int *lens_img = c->lens ? calloc(c->batch + 1, sizeof(int)) : NULL;
    if (lens_img) memcpy(lens_img, c->lens, c->batch * sizeof(int));
    cl_mem lens = lens_img ? t_buffer(T.ctx, (c->batch + 1) * sizeof(int), lens_img) : NULL;
    free(lens_img);
    clnorm_attention_desc desc = {.batch = c->batch, .q_heads = c->qh, .kv_heads = c->kvh,
                                  .q_len = c->q_len, .kv_len = c->kv_len, .head_dim = c->hd,
                                  .scale = c->scale, .causal = c->causal, .kv_lens = lens};
    cl_event ev = NULL;
    double t0 = t_now();
    clnorm_status st = clnorm_attention(T.q, c->dt, &desc, qv, kv, vv, ov, lse, 0, NULL, &ev);
    if (st == CLNORM_SUCCESS) {
        t_check_event(att_label(c), ev);
        clReleaseEvent(ev);
    } else {
        CHECK(ev == NULL, "%s: a refused call returned an event", att_label(c));
        clFinish(T.q);
    }
    if (t_verbose()) NOTE("%s: %s, %.3f s", att_label(c), clnorm_status_string(st), t_now() - t0);
    t_read(T.q, ov.mem, not * es, ob);
    if (lse) t_read(T.q, lse, nl * sizeof(float), lb);
    r->out = malloc((rows * c->hd + 1) * sizeof(float));
    r->lse = malloc((rows + 1) * sizeof(float));
    /* Gaps keep their poison; the view is written in full (or not at all on a refusal). */
    size_t gaps = 0, unwritten = 0;
    unsigned char *mask = calloc(not, 1);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t h = 0; h < c->qh; h++)
            for (size_t t = 0; t < c->q_len; t++)
                for (size_t e = 0; e < c->hd; e++) {
                    const size_t i = at(&ov, b, h, t, e);
                    mask[i] = 1;
                    const uint32_t bits = get_el(ob, i, es);
                    unwritten += st == CLNORM_SUCCESS && bits == poison_of(c->dt);
                    r->out[((b * c->qh + h) * c->q_len + t) * c->hd + e] = unpack1(c->dt, bits);
                }
    for (size_t i = 0; i < not; i++)
        if (!mask[i] || st != CLNORM_SUCCESS) gaps += get_el(ob, i, es) != get_el(oi, i, es);
    CHECK(gaps == 0, "%s: %zu elements of out outside the view (or after a refusal) changed",
          att_label(c), gaps);
    CHECK(unwritten == 0, "%s: %zu elements of out were not written", att_label(c), unwritten);
    if (lse) {
        size_t bad = 0;
        for (size_t i = 0; i < nl; i++) {
            const int poisoned = !memcmp(&lb[i], &li[i], 4);
            bad += i < rows && st == CLNORM_SUCCESS ? poisoned : !poisoned;
        }
        CHECK(bad == 0, "%s: %zu lse elements written where they should not be, or not "
              "written", att_label(c), bad);
        memcpy(r->lse, lb, rows * sizeof(float));
    }
    free(mask);
    free(qi), free(ki), free(vi), free(oi), free(ob), free(li), free(lb);
    clReleaseMemObject(qv.mem);
    clReleaseMemObject(kv.mem);
    clReleaseMemObject(vv.mem);
    clReleaseMemObject(ov.mem);
    if (lse) clReleaseMemObject(lse);
    if (lens) clReleaseMemObject(lens);
    return st;
}

void att_ref(const att_case *c, const att_data *d, double *out, double *lse, double *vmax)
{
    const size_t g = c->qh / c->kvh, hd = c->hd;
    const double scale = c->scale != 0 ? c->scale : (double)(float)(1.0 / sqrt((double)hd));
    double *s = malloc((c->kv_len + 1) * sizeof(double));
    for (size_t b = 0; b < c->batch; b++) {
        long keys = (long)c->kv_len;
        if (c->lens) keys = c->lens[b] < 0 ? 0 : c->lens[b] > (long)c->kv_len ? (long)c->kv_len
                                                                              : c->lens[b];
        for (size_t h = 0; h < c->qh; h++)
            for (size_t t = 0; t < c->q_len; t++) {
                const size_t r = (b * c->qh + h) * c->q_len + t, kh = h / g;
                const float *qr = d->q + r * hd;
                const long last = c->causal ? (long)t + keys - (long)c->q_len : keys - 1;
                long seen = last + 1 < keys ? last + 1 : keys;
                if (seen < 0) seen = 0;
                double m = -INFINITY;
                int nan = 0;
                for (long j = 0; j < seen; j++) {
                    const float *kr = d->k + ((b * c->kvh + kh) * c->kv_len + (size_t)j) * hd;
                    double acc = 0;
                    for (size_t e = 0; e < hd; e++) acc += scale * qr[e] * (double)kr[e];
                    s[j] = acc;
                    if (isnan(acc)) nan = 1;
                    else if (acc > m) m = acc;
                }
                double l = 0, vm = 0;
                double *o = out + r * hd;
                for (size_t e = 0; e < hd; e++) o[e] = 0;
                for (long j = 0; j < seen; j++) {
                    const float *vr = d->v + ((b * c->kvh + kh) * c->kv_len + (size_t)j) * hd;
                    for (size_t e = 0; e < hd; e++)
                        if (fabs(vr[e]) > vm) vm = fabs(vr[e]);
                    if (m == -INFINITY || isnan(s[j])) continue;
                    const double p = s[j] == m ? 1.0 : exp(s[j] - m);
                    if (p == 0) continue;
                    l += p;
                    for (size_t e = 0; e < hd; e++) o[e] += p * vr[e];
                }
                for (size_t e = 0; e < hd; e++) o[e] = nan ? NAN : l > 0 ? o[e] / l : 0.0;
                lse[r] = nan ? NAN : l > 0 ? m + log(l) : -INFINITY;
                vmax[r] = vm;
            }
    }
    free(s);
}

size_t att_verify(const att_case *c, const att_data *d, const att_result *r)
{
    const size_t rows = nq_of(c), hd = c->hd;
    double *out = malloc((rows * hd + 1) * sizeof(double));
    double *lse = malloc((rows + 1) * sizeof(double)), *vm = malloc((rows + 1) * sizeof(double));
    att_ref(c, d, out, lse, vm);
    const double tol = att_tol(c->dt);
    size_t bad = 0, shown = 0;
    for (size_t i = 0; i < rows; i++) {
        for (size_t e = 0; e < hd; e++) {
            const double want = out[i * hd + e];
            const float got = r->out[i * hd + e];
            const int ok = isnan(want) ? isnan(got)
                           : vm[i] == 0 || lse[i] == -INFINITY
                               ? got == 0.0f
                               : fabs((double)got - want) <= tol * vm[i] + 1e-30;
            if (ok) continue;
            if (shown++ < 5)
                t_fail(__FILE__, __LINE__, "%s: out row %zu col %zu got %.9g want %.9g (max |v| "
                       "%.3g)", att_label(c), i, e, (double)got, want, vm[i]);
            bad++;
        }
        if (c->no_lse) continue;
        const double want = lse[i];
        const float got = r->lse[i];
        const int ok = isnan(want) ? isnan(got)
                       : isinf(want) ? (double)got == want
                                     : fabs((double)got - want) <= 2e-4 * (1 + fabs(want));
        if (!ok && shown++ < 5)
            t_fail(__FILE__, __LINE__, "%s: lse row %zu got %.9g want %.9g", att_label(c), i,
                   (double)got, want);
        bad += !ok;
    }
    if (bad > 5)
        t_fail(__FILE__, __LINE__, "%s: %zu bad elements in all", att_label(c), bad);
    free(out);
    free(lse);
    free(vm);
    return bad;
}

size_t att_check(const att_case *c)
{
    att_data d;
    att_result r = {0};
    att_make(c, &d);
    clnorm_status st = att_run(c, &d, &r);
    size_t bad = 1;
    if (CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", att_label(c), clnorm_status_string(st),
              clnorm_last_error()))
        bad = att_verify(c, &d, &r);
    att_result_free(&r);
    att_data_free(&d);
    return bad;
}
