/* Attention values against float64: attention_values (head sizes, GQA and MQA ratios,
   causal, decode and prefill, every dtype), attention_views (both layouts with padded
   rows and offsets, ragged and clamped kv_lens), attention_long (one 32k+ cache),
   attention_split (split-K forced, both reduction paths). */
#include "attention.h"
#include "clnorm_advanced.h"
#include "plan_attention.h"
#include "profile.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

void test_attention_values(void)
{
    /* CPU devices run the CPU form (cl/attention_cpu.cl; CLNORM_TRACE=1 names the kernel
       of each call), other devices the work-group form. */
    const cln_profile *prof;
    if (CHECK_ST(cln_profile_get(T.dev, &prof), CLNORM_SUCCESS)) {
        cln_limits lim;
        memset(&lim, 0, sizeof lim);
        lim.force_path = -1;
        lim.force_variant = -1;
        const cln_att_shape sh = {1, 32, 8, 1, 8192, 128, 1};
        cln_att_plan pl;
        char why[256];
        if (CHECK_ST(cln_att_plan_make(prof, &lim, &sh, &pl, why, sizeof why), CLNORM_SUCCESS))
            CHECK(pl.cpu == ((prof->type & CL_DEVICE_TYPE_CPU) != 0),
                  "device type %#llx planned the %s form", (unsigned long long)prof->type,
                  pl.cpu ? "CPU" : "work-group");
    }
    /* batch, q_heads, kv_heads, q_len, kv_len, head_dim, causal */
    static const size_t shapes[][7] = {
        {1, 1, 1, 1, 1, 1, 0},      {2, 4, 1, 1, 13, 64, 0},   {1, 8, 8, 3, 31, 80, 1},
        {3, 8, 2, 1, 97, 128, 0},   {1, 8, 1, 16, 127, 128, 1}, {2, 2, 2, 3, 65, 256, 1},
        {1, 16, 2, 1, 257, 128, 0}, {1, 4, 4, 37, 37, 64, 1},  {2, 4, 2, 37, 37, 80, 1},
        {1, 3, 3, 5, 7, 3, 1},      {1, 8, 1, 16, 129, 256, 0}, {1, 2, 1, 1, 1, 256, 1},
    };
    for (size_t i = 0; i < COUNT_OF(shapes); i++) {
        const size_t *s = shapes[i];
        att_case c = {.dt = CLNORM_F32, .batch = s[0], .qh = s[1], .kvh = s[2], .q_len = s[3],
                      .kv_len = s[4], .hd = s[5], .causal = (int)s[6]};
        att_check(&c);
    }
    /* 16-bit storage on a few shapes, with an explicit scale. */
    static const clnorm_dtype lowp[] = {CLNORM_F16, CLNORM_BF16};
    for (size_t i = 0; i < COUNT_OF(lowp); i++) {
        att_case a = {.dt = lowp[i], .batch = 2, .qh = 8, .kv_len = 61, .kvh = 2, .q_len = 3,
                      .hd = 128, .causal = 1, .scale = 0.05f};
        att_check(&a);
        att_case b = {.dt = lowp[i], .batch = 1, .qh = 4, .kvh = 1, .q_len = 1, .kv_len = 200,
                      .hd = 80, .pad = 1};
        att_check(&b);
        att_case p = {.dt = lowp[i], .batch = 1, .qh = 2, .kvh = 2, .q_len = 37, .kv_len = 37,
                      .hd = 64, .causal = 1, .q_bthd = 1, .kv_bthd = 1};
        att_check(&p);
    }
    /* A negative scale: scores like any other, the keys' order reversed. */
    static const clnorm_dtype all[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    for (size_t i = 0; i < COUNT_OF(all); i++) {
        att_case n = {.dt = all[i], .batch = 2, .qh = 4, .kvh = 2, .q_len = 5, .kv_len = 67,
                      .hd = 48, .causal = (int)(i & 1), .scale = -0.125f};
        att_check(&n);
    }
}

void test_attention_views(void)
{
    /* Both layouts of q/out and of the cache, rows padded (the scalar path) or not (the
       4-element path), offsets; out's gaps stay poisoned (att_run). */
    for (int layout = 0; layout < 4; layout++)
        for (size_t pad = 0; pad <= 3; pad += 3) {
            att_case c = {.dt = CLNORM_F32, .batch = 2, .qh = 4, .kvh = 2, .q_len = 3,
                          .kv_len = 41, .hd = 64, .causal = layout & 1, .q_bthd = layout & 1,
                          .kv_bthd = layout >> 1, .pad = pad, .off = pad ? 5 : 8};
            att_check(&c);
        }
    /* Ragged caches: an entry with no key, values past kv_len and below 0 (clamped),
       causal where the queries outnumber an entry's keys. */
    static const int lens[] = {0, 17, 29, 1000, -3, 2};
    for (int causal = 0; causal <= 1; causal++) {
        att_case c = {.dt = CLNORM_F32, .batch = 6, .qh = 4, .kvh = 1, .q_len = 3, .kv_len = 29,
                      .hd = 32, .causal = causal, .lens = lens, .kv_bthd = 1, .pad = 2};
        att_check(&c);
        att_case h = c;
        h.dt = CLNORM_BF16;
        h.no_lse = 1;
        att_check(&h);
    }
    /* No key at all: zeros and lse -inf everywhere. */
    att_case z = {.dt = CLNORM_F16, .batch = 2, .qh = 2, .kvh = 1, .q_len = 2, .kv_len = 0,
                  .hd = 8, .causal = 1};
    att_check(&z);
}

void test_attention_long(void)
{
    /* One long cache: 32771 keys, GQA 4, decode, in both storage widths. */
    att_case c = {.dt = CLNORM_F32, .batch = 1, .qh = 8, .kvh = 2, .q_len = 1, .kv_len = 32771,
                  .hd = 64, .kv_bthd = 1};
    att_check(&c);
    att_case h = {.dt = CLNORM_BF16, .batch = 2, .qh = 4, .kvh = 1, .q_len = 2, .kv_len = 9001,
                  .hd = 128, .causal = 1};
    att_check(&h);
}

void test_attention_split(void)
{
    /* Split-K forced through the plan hints' split (chunks), on both reduction paths:
       local trees, and the device's fast path where it has one. */
    clnorm_device_info info;
    const int fast = clnorm_device_describe(T.dev, 1, &info) == CLNORM_SUCCESS &&
                     info.reduction != CLNORM_REDUCTION_LOCAL;
    static const size_t chunks[] = {2, 3, 7, 64};
    for (int path = 0; path <= fast; path++)
        for (size_t i = 0; i < COUNT_OF(chunks); i++) {
            clnorm_plan_hints h;
            clnorm_plan_hints_init(&h);
            h.split = chunks[i];
            h.reduction = path ? CLNORM_REDUCTION_SUBGROUP : CLNORM_REDUCTION_LOCAL;
            if (!CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_SUCCESS)) return;
            att_case c = {.dt = i & 1 ? CLNORM_F16 : CLNORM_F32, .batch = 2, .qh = 8, .kvh = 2,
                          .q_len = i == 3 ? 16 : 1, .kv_len = 300 + 37 * i, .hd = 128,
                          .causal = (int)(i & 1)};
            att_check(&c);
            static const int lens[] = {0, 250};
            att_case r = {.dt = CLNORM_F32, .batch = 2, .qh = 2, .kvh = 1, .q_len = 3,
                          .kv_len = 251, .hd = 40, .causal = 1, .lens = lens, .pad = 1};
            att_check(&r);
        }
    /* A forced subgroup path where the device has none is refused, writing nothing. */
    if (!fast) {
        clnorm_plan_hints h;
        clnorm_plan_hints_init(&h);
        h.reduction = CLNORM_REDUCTION_SUBGROUP;
        if (!CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_SUCCESS)) return;
        att_case c = {.dt = CLNORM_F32, .batch = 1, .qh = 1, .kvh = 1, .q_len = 1, .kv_len = 5,
                      .hd = 4};
        att_data d;
        att_result r = {0};
        att_make(&c, &d);
        CHECK_ST(att_run(&c, &d, &r), CLNORM_UNSUPPORTED);
        att_result_free(&r);
        att_data_free(&d);
    }
    clnorm_set_thread_hints(NULL);
}
