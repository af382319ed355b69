/* attention_bad_input (every refusal: its status, a message naming the value, nothing
   written) and attention_events (wait lists, events, the no-op calls). */
#include "attention.h"
#include "clnorm_advanced.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, QH = 4, KVH = 2, QL = 3, KL = 10, HD = 8 };
#define NQ (B * QH * QL * HD)
#define NK (B * KVH * KL * HD)

typedef struct fixture {
    cl_mem q, k, v, out, lse, lens;
    clnorm_tensor tq, tk, tv, to;
    clnorm_attention_desc d;
} fixture;

static void fx_make(fixture *f)
{
    float q[NQ], k[NK], out[NQ + 8], lse[B * QH * QL + 4];
    for (size_t i = 0; i < NQ; i++) q[i] = (float)rng_range(&R, -1, 1);
    for (size_t i = 0; i < NK; i++) k[i] = (float)rng_range(&R, -1, 1);
    for (size_t i = 0; i < COUNT_OF(out); i++) out[i] = 1234.5f;
    for (size_t i = 0; i < COUNT_OF(lse); i++) lse[i] = 1234.5f;
    const int lens[B] = {3, 10};
    f->q = t_buffer(T.ctx, sizeof q, q);
    f->k = t_buffer(T.ctx, sizeof k, k);
    f->v = t_buffer(T.ctx, sizeof k, k);
    f->out = t_buffer(T.ctx, sizeof out, out);
    f->lse = t_buffer(T.ctx, (B * QH * QL) * 4, lse);
    f->lens = t_buffer(T.ctx, sizeof lens, lens);
    const clnorm_tensor q4 = {f->q, 0, QH * QL * HD, QL * HD, HD};
    const clnorm_tensor k4 = {f->k, 0, KVH * KL * HD, KL * HD, HD};
    f->tq = q4;
    f->tk = k4;
    f->tv = k4;
    f->tv.mem = f->v;
    f->to = q4;
    f->to.mem = f->out;
    const clnorm_attention_desc d = {.batch = B, .q_heads = QH, .kv_heads = KVH, .q_len = QL,
                                     .kv_len = KL, .head_dim = HD, .causal = 1,
                                     .kv_lens = f->lens};
    f->d = d;
}

static void fx_free(fixture *f)
{
    cl_mem *m[] = {&f->q, &f->k, &f->v, &f->out, &f->lse, &f->lens};
    for (size_t i = 0; i < COUNT_OF(m); i++) clReleaseMemObject(*m[i]);
}

/* out and lse still hold the fill. */
static int fx_untouched(const fixture *f)
{
    float out[NQ + 8], lse[B * QH * QL];
    t_read(T.q, f->out, sizeof out, out);
    t_read(T.q, f->lse, sizeof lse, lse);
    for (size_t i = 0; i < COUNT_OF(out); i++)
        if (out[i] != 1234.5f) return 0;
    for (size_t i = 0; i < COUNT_OF(lse); i++)
        if (lse[i] != 1234.5f) return 0;
    return 1;
}

void test_attention_bad_input(void)
{
    fixture f;
    fx_make(&f);
    cl_mem small = t_buffer(T.ctx, 4, NULL);
    for (int i = 0; i < 22; i++) {
        clnorm_attention_desc d = f.d;
        clnorm_tensor q = f.tq, k = f.tk, v = f.tv, o = f.to;
        cl_mem lse = f.lse;
        const clnorm_attention_desc *dp = &d;
        clnorm_dtype dt = CLNORM_F32;
        cl_command_queue queue = T.q;
        cl_uint nw = 0;
        const cl_event *wl = NULL;
        clnorm_status want = CLNORM_INVALID_ARGUMENT;
        const char *word = NULL;
        switch (i) {
        case 0: dp = NULL, word = "desc"; break;
        case 1: q.mem = NULL, word = "q.mem"; break;
        case 2: k.mem = NULL, word = "k.mem"; break;
        case 3: v.mem = NULL, word = "v.mem"; break;
        case 4: o.mem = NULL, word = "out.mem"; break;
        case 5: d.q_heads = 0, word = "q_heads"; break;
        case 6: d.kv_heads = 0, word = "kv_heads"; break;
        case 7: d.head_dim = 0, word = "head_dim"; break;
        case 8: d.head_dim = 257, word = "257"; break;
        case 9: d.kv_heads = 3, word = "kv_heads"; break;
        case 10: d.scale = -INFINITY, word = "scale"; break;
        case 11: d.scale = INFINITY, word = "scale"; break;
        case 12: d.scale = NAN, word = "scale"; break;
        case 13: q.offset = 1, want = CLNORM_OUT_OF_BOUNDS, word = "q"; break;
        case 14: k.stride_len = HD + 1, want = CLNORM_OUT_OF_BOUNDS, word = "k"; break;
        case 15: v.stride_batch = (size_t)1 << 62, want = CLNORM_OUT_OF_BOUNDS, word = "v"; break;
        case 16: o.mem = f.q, word = "out"; break;
        case 17: o.mem = f.v, o.stride_batch = 0, word = "stride_batch"; break;
        case 18: lse = small, want = CLNORM_OUT_OF_BOUNDS, word = "lse"; break;
        case 19: d.kv_lens = small, want = CLNORM_OUT_OF_BOUNDS, word = "kv_lens"; break;
        case 20: dt = (clnorm_dtype)7, word = "dtype"; break;
        case 21: nw = 1, word = "wait_list"; break;
        }
        clnorm_status st = clnorm_attention(queue, dt, dp, q, k, v, o, lse, nw, wl, NULL);
        CHECK(st == want, "refusal %d: %s, want %s (%s)", i, clnorm_status_string(st),
              clnorm_status_string(want), clnorm_last_error());
        CHECK(t_mentions(clnorm_last_error(), word), "refusal %d: \"%s\" does not name %s", i,
              clnorm_last_error(), word);
        CHECK(fx_untouched(&f), "refusal %d wrote out or lse", i);
    }
    /* The merge's refusals. */
    clnorm_matrix a = {f.q, 0, HD}, b = {f.k, 0, HD}, o = {f.out, 0, HD};
    const size_t rows = B * QH * QL;
    cl_mem lsb = t_buffer(T.ctx, rows * 4, NULL);
    CHECK_ST(clnorm_attention_merge(T.q, CLNORM_F32, rows, 0, a, f.lse, b, f.lens, o, f.lse, 0,
                                    NULL, NULL), CLNORM_INVALID_ARGUMENT);
    CHECK_ST(clnorm_attention_merge(T.q, CLNORM_F32, rows, HD, a, f.lse, b, small, o, f.lse, 0,
                                    NULL, NULL), CLNORM_OUT_OF_BOUNDS);
    CHECK_ST(clnorm_attention_merge(T.q, CLNORM_F32, rows, HD, a, f.lse, o, lsb, o, f.lse, 0,
                                    NULL, NULL), CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "out_b"), "\"%s\" names out_b", clnorm_last_error());
    CHECK(fx_untouched(&f), "a refused merge wrote out or lse");
    clReleaseMemObject(small);
    clReleaseMemObject(lsb);
    fx_free(&f);
}

void test_attention_events(void)
{
    fixture f;
    fx_make(&f);
    cl_int err;
    cl_event gate = clCreateUserEvent(T.ctx, &err), ev = NULL;
    if (!CHECK_CL(err)) return;
    if (CHECK_ST(clnorm_attention(T.q, CLNORM_F32, &f.d, f.tq, f.tk, f.tv, f.to, f.lse, 1, &gate,
                                  &ev),
                 CLNORM_SUCCESS)) {
        cl_int s = CL_COMPLETE;
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
        CHECK(s != CL_COMPLETE, "the call completed before its wait list");
        clSetUserEventStatus(gate, CL_COMPLETE);
        t_check_event("attention after a user event", ev);
        clReleaseEvent(ev);
        CHECK(!fx_untouched(&f), "the gated call wrote nothing");
    } else {
        clSetUserEventStatus(gate, CL_COMPLETE);
    }
    clReleaseEvent(gate);
    /* No query (batch 0, q_len 0): nothing written, the event a marker. */
    fixture g;
    fx_make(&g);
    for (int i = 0; i < 2; i++) {
        clnorm_attention_desc d = g.d;
        if (i) d.q_len = 0;
        else d.batch = 0;
        ev = NULL;
        if (CHECK_ST(clnorm_attention(T.q, CLNORM_BF16, &d, g.tq, g.tk, g.tv, g.to, g.lse, 0, NULL,
                                      &ev),
                     CLNORM_SUCCESS)) {
            t_check_event("attention with no query", ev);
            clReleaseEvent(ev);
        }
        CHECK(fx_untouched(&g), "a call with no query wrote");
    }
    /* On an out-of-order queue, split-K's two stages still follow each other. */
    cl_command_queue ooo = t_new_queue(T.ctx, T.dev, 1);
    if (ooo) {
        clnorm_plan_hints h;
        clnorm_plan_hints_init(&h);
        h.split = 3;
        clnorm_set_thread_hints(&h);
        float want[NQ], got[NQ];
        CHECK_ST(clnorm_attention(T.q, CLNORM_F32, &f.d, f.tq, f.tk, f.tv, f.to, NULL, 0, NULL,
                                  NULL), CLNORM_SUCCESS);
        t_read(T.q, f.out, sizeof want, want);
        ev = NULL;
        if (CHECK_ST(clnorm_attention(ooo, CLNORM_F32, &g.d, g.tq, f.tk, f.tv, g.to, NULL, 0,
                                      NULL, &ev), CLNORM_SUCCESS)) {
            t_check_event("split attention on an out-of-order queue", ev);
            clReleaseEvent(ev);
            t_read(T.q, g.out, sizeof got, got);
            /* g's q differs from f's; with f's q the results would match: compare g
               against itself run in order instead. */
            CHECK_ST(clnorm_attention(T.q, CLNORM_F32, &g.d, g.tq, f.tk, f.tv, f.to, NULL, 0,
                                      NULL, NULL), CLNORM_SUCCESS);
            t_read(T.q, f.out, sizeof want, want);
            CHECK(!memcmp(want, got, sizeof got), "split attention differs between an "
                  "out-of-order and an in-order queue");
        }
        clnorm_set_thread_hints(NULL);
        clReleaseCommandQueue(ooo);
    }
    fx_free(&g);
    fx_free(&f);
}
