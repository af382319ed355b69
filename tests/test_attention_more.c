/* attention_special (NaN and infinite scores, NaN values) and attention_merge (halves
   of the keys merged equal attention over all; special rows). */
#include "attention.h"
#include "plan_attention.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t kidx(const att_case *c, size_t b, size_t h, size_t j, size_t e)
{
    return ((b * c->kvh + h) * c->kv_len + j) * c->hd + e;
}

void test_attention_special(void)
{
    for (int causal = 0; causal <= 1; causal++) {
        att_case c = {.dt = causal ? CLNORM_BF16 : CLNORM_F32, .batch = 1, .qh = 6, .kvh = 2,
                      .q_len = 4, .kv_len = 23, .hd = 8, .causal = causal};
        att_data d;
        att_result r = {0};
        att_make(&c, &d);
        /* Heads 0-2 read kv head 0. Head 0: a NaN in one query. Head 1: +inf in dim 0
           against keys whose dim 0 is positive at 3 and 11 only: those two share the
           weight. Head 2: -inf in dim 0, so +inf against every other key. */
        d.q[(0 * 4 + 1) * 8 + 3] = NAN;
        for (size_t t = 0; t < 4; t++) {
            d.q[(1 * 4 + t) * 8] = INFINITY;
            d.q[(2 * 4 + t) * 8] = -INFINITY;
        }
        for (size_t j = 0; j < c.kv_len; j++) {
            const float mag = 0.25f + (float)j / 16;
            d.k[kidx(&c, 0, 0, j, 0)] = rnd(c.dt, j == 3 || j == 11 ? mag : -mag);
        }
        /* A NaN value at key 21, column 2: NaN there for the queries that weigh key 21
           (head 2; causal: t >= 2 only), not for head 1, which gives it weight 0. Heads
           3-5 read kv head 1, where key 5 holds a NaN: every score of theirs that sees
           it is NaN. */
        d.v[kidx(&c, 0, 0, 21, 2)] = NAN;
        d.k[kidx(&c, 0, 1, 5, 4)] = NAN;
        clnorm_status st = att_run(&c, &d, &r);
        if (CHECK(st == CLNORM_SUCCESS, "%s: %s", att_label(&c), clnorm_last_error())) {
            att_verify(&c, &d, &r);
            /* The reference's reading, checked directly on the two clearest rows. */
            const size_t r1 = 1 * 4 + 3;
            CHECK(isnan(r.out[(2 * 4 + 3) * 8 + 2]) && !isnan(r.out[(1 * 4 + 3) * 8 + 2]) &&
                      isnan(r.lse[3 * 4 + 3]),
                  "%s: NaN value and NaN score rows not as expected", att_label(&c));
            CHECK(isinf(r.lse[r1]) && r.lse[r1] > 0, "%s: +inf scores give lse %g, want +inf",
                  att_label(&c), (double)r.lse[r1]);
        }
        att_result_free(&r);
        att_data_free(&d);
    }
    /* Every key at -inf for every query: zeros, lse -inf. */
    att_case c = {.dt = CLNORM_F16, .batch = 2, .qh = 2, .kvh = 2, .q_len = 1, .kv_len = 9,
                  .hd = 4};
    att_data d;
    att_result r = {0};
    att_make(&c, &d);
    for (size_t i = 0; i < c.batch * c.qh; i++) d.q[i * 4] = -INFINITY;
    for (size_t i = 0; i < c.batch * c.kvh * c.kv_len; i++) d.k[i * 4] = 1.0f;
    if (CHECK_ST(att_run(&c, &d, &r), CLNORM_SUCCESS)) {
        att_verify(&c, &d, &r);
        for (size_t i = 0; i < c.batch * c.qh; i++)
            CHECK(r.lse[i] == -INFINITY && r.out[i * 4] == 0.0f, "row %zu: lse %g out %g", i,
                  (double)r.lse[i], (double)r.out[i * 4]);
    }
    att_result_free(&r);
    att_data_free(&d);
}

/* Device buffers of packed host rows, in the dtype, each row padded to ld. */
static cl_mem rows_buffer(clnorm_dtype dt, const float *x, size_t rows, size_t hd, size_t ld)
{
    const size_t es = dt_size(dt);
    unsigned char *img = malloc(rows * ld * es + es);
    for (size_t i = 0; i < rows * ld; i++)
        put_el(img, i, es, i % ld < hd ? pack1(dt, x[i / ld * hd + i % ld]) : poison_of(dt));
    cl_mem m = t_buffer(T.ctx, rows * ld * es, img);
    free(img);
    return m;
}

/* Merges a = keys [0, split) and b = [split, kv_len) and compares with the whole. */
static void merge_halves(clnorm_dtype dt, size_t split, int in_place)
{
    att_case c = {.dt = dt, .batch = 2, .qh = 4, .kvh = 2, .q_len = 2, .kv_len = 45, .hd = 24};
    att_data d, h[2];
    att_make(&c, &d);
    att_case hc[2] = {c, c};
    hc[0].kv_len = split;
    hc[1].kv_len = c.kv_len - split;
    att_result hr[2] = {{0}, {0}};
    for (int s = 0; s < 2; s++) {
        const size_t n = c.batch * c.kvh * hc[s].kv_len * c.hd;
        h[s].q = d.q;
        h[s].k = malloc((n + 1) * sizeof(float));
        h[s].v = malloc((n + 1) * sizeof(float));
        for (size_t b = 0; b < c.batch * c.kvh; b++)
            for (size_t j = 0; j < hc[s].kv_len; j++)
                for (size_t e = 0; e < c.hd; e++) {
                    const size_t src = (b * c.kv_len + j + (s ? split : 0)) * c.hd + e;
                    h[s].k[(b * hc[s].kv_len + j) * c.hd + e] = d.k[src];
                    h[s].v[(b * hc[s].kv_len + j) * c.hd + e] = d.v[src];
                }
        CHECK_ST(att_run(&hc[s], &h[s], &hr[s]), CLNORM_SUCCESS);
    }
    const size_t rows = c.batch * c.qh * c.q_len, ld = c.hd + 3, es = dt_size(dt);
    cl_mem oa = rows_buffer(dt, hr[0].out, rows, c.hd, ld);
    cl_mem ob = rows_buffer(dt, hr[1].out, rows, c.hd, ld);
    cl_mem la = t_buffer(T.ctx, rows * 4, hr[0].lse), lb = t_buffer(T.ctx, rows * 4, hr[1].lse);
    cl_mem oo = in_place ? oa : rows_buffer(dt, hr[1].out, rows, 0, ld);
    cl_mem lo = in_place ? la : t_buffer(T.ctx, rows * 4, NULL);
    clnorm_matrix ma = {oa, 0, ld}, mb = {ob, 0, ld}, mo = {oo, 0, ld};
    cl_event ev = NULL;
    if (CHECK_ST(clnorm_attention_merge(T.q, dt, rows, c.hd, ma, la, mb, lb, mo, lo, 0, NULL,
                                        &ev),
                 CLNORM_SUCCESS)) {
        t_check_event("attention_merge", ev);
        clReleaseEvent(ev);
        unsigned char *img = malloc(rows * ld * es);
        att_result m = {malloc(rows * c.hd * sizeof(float)), malloc(rows * sizeof(float))};
        t_read(T.q, oo, rows * ld * es, img);
        t_read(T.q, lo, rows * 4, m.lse);
        size_t gaps = 0;
        for (size_t i = 0; i < rows * ld; i++) {
            if (i % ld < c.hd) m.out[i / ld * c.hd + i % ld] = unpack1(dt, get_el(img, i, es));
            else gaps += get_el(img, i, es) != poison_of(dt);
        }
        CHECK(gaps == 0, "merge wrote %zu elements between out's rows", gaps);
        size_t bad = att_verify(&c, &d, &m);
        CHECK(bad == 0, "merge %s split %zu in place %d: %zu bad", dt_name(dt), split, in_place,
              bad);
        att_result_free(&m);
        free(img);
    }
    clReleaseMemObject(oa), clReleaseMemObject(ob), clReleaseMemObject(la);
    clReleaseMemObject(lb);
    if (!in_place) clReleaseMemObject(oo), clReleaseMemObject(lo);
    for (int s = 0; s < 2; s++) {
        free(h[s].k), free(h[s].v);
        att_result_free(&hr[s]);
    }
    att_data_free(&d);
}

void test_attention_merge(void)
{
    merge_halves(CLNORM_F32, 20, 0);
    merge_halves(CLNORM_F32, 1, 1);
    merge_halves(CLNORM_BF16, 44, 1);
    merge_halves(CLNORM_F16, 0, 0); /* one side has no key: lse -inf, zeros */
    /* Special rows: both -inf; one -inf (the other side exactly); a NaN; both +inf. */
    const float la[] = {-INFINITY, -INFINITY, 2.0f, NAN, INFINITY, 1.0f};
    const float lb[] = {-INFINITY, 3.0f, -INFINITY, 0.0f, INFINITY, 1.0f};
    const float oa[] = {7, 1, 2, 3, 4, 8}, ob[] = {9, 5, 6, 1, 2, 8};
    const double wl[] = {-INFINITY, 3.0, 2.0, NAN, INFINITY, 1.0 + log(2.0)};
    const double wo[] = {0, 5, 2, NAN, 3, 8};
    const size_t rows = COUNT_OF(la);
    cl_mem ba = t_buffer(T.ctx, sizeof oa, oa), bb = t_buffer(T.ctx, sizeof ob, ob);
    cl_mem bla = t_buffer(T.ctx, sizeof la, la), blb = t_buffer(T.ctx, sizeof lb, lb);
    clnorm_matrix ma = {ba, 0, 1}, mb = {bb, 0, 1};
    if (CHECK_ST(clnorm_attention_merge(T.q, CLNORM_F32, rows, 1, ma, bla, mb, blb, ma, bla, 0,
                                        NULL, NULL),
                 CLNORM_SUCCESS)) {
        float go[COUNT_OF(la)], gl[COUNT_OF(la)];
        t_read(T.q, ba, sizeof go, go);
        t_read(T.q, bla, sizeof gl, gl);
        for (size_t i = 0; i < rows; i++)
            CHECK(t_close(go[i], wo[i], 1e-6, 1e-6) && t_close(gl[i], wl[i], 1e-6, 1e-6),
                  "merge row %zu (lse %g, %g): out %g lse %g, want %g, %g", i, (double)la[i],
                  (double)lb[i], (double)go[i], (double)gl[i], wo[i], wl[i]);
    }
    clReleaseMemObject(ba), clReleaseMemObject(bb), clReleaseMemObject(bla);
    clReleaseMemObject(blb);
}
