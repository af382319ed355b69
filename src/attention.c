/* Attention on device buffers: clnorm_attention and clnorm_attention_merge. Validate,
   plan (plan_attention.c), lease the kernels of cl/attention.cl, enqueue. */
#include "build_options.h"
#include "config.h"
#include "enqueue.h"
#include "kernels.h"
#include "plan_attention.h"
#include "profile.h"
#include "program_cache.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The flags of cl/attention.cl. */
#define CLN_ATT_CAUSAL 1u
#define CLN_ATT_LSE 2u
#define CLN_ATT_LENS 4u
#define CLN_ATT_VEC4 8u

/* Everything the attention kernels take; each call fills what it uses. */
typedef struct cln_att_args {
    clnorm_tensor q, k, v, out;
    cl_mem lse, kv_lens, any; /* any: a buffer passed where an optional one is absent */
    cl_uint flags, q_heads, kv_heads, q_len, kv_len, head_dim;
    float scale;
    clnorm_matrix a, b, y;    /* the merge's views */
    cl_mem lse_a, lse_b;
} cln_att_args;

/* A call: its arguments and its plan. */
typedef struct cln_att_call {
    const cln_att_args *a;
    const cln_att_plan *pl;
} cln_att_call;

/* The value of argument kind of an attention call (a cln_att_call); the partials and
   the scratch's size are the call's (enqueue.c). */
static void cln_att_fill(const void *call, cln_arg kind, cln_arg_value *v)
{
    const cln_att_args *a = ((const cln_att_call *)call)->a;
    const cln_att_plan *pl = ((const cln_att_call *)call)->pl;
    switch (kind) {
    case CLN_A_Q: v->mem = a->q.mem; break;
    case CLN_A_Q_OFF: v->ul = a->q.offset; break;
    case CLN_A_Q_SB: v->ul = a->q.stride_batch; break;
    case CLN_A_Q_SH: v->ul = a->q.stride_head; break;
    case CLN_A_Q_SL: v->ul = a->q.stride_len; break;
    case CLN_A_K: v->mem = a->k.mem; break;
    case CLN_A_K_OFF: v->ul = a->k.offset; break;
    case CLN_A_K_SB: v->ul = a->k.stride_batch; break;
    case CLN_A_K_SH: v->ul = a->k.stride_head; break;
    case CLN_A_K_SL: v->ul = a->k.stride_len; break;
    case CLN_A_V: v->mem = a->v.mem; break;
    case CLN_A_V_OFF: v->ul = a->v.offset; break;
    case CLN_A_V_SB: v->ul = a->v.stride_batch; break;
    case CLN_A_V_SH: v->ul = a->v.stride_head; break;
    case CLN_A_V_SL: v->ul = a->v.stride_len; break;
    case CLN_A_OUT: v->mem = a->out.mem; break;
    case CLN_A_OUT_OFF: v->ul = a->out.offset; break;
    case CLN_A_OUT_SB: v->ul = a->out.stride_batch; break;
    case CLN_A_OUT_SH: v->ul = a->out.stride_head; break;
    case CLN_A_OUT_SL: v->ul = a->out.stride_len; break;
    /* Never touched where the flags say absent, but a buffer must be passed. */
    case CLN_A_LSE: v->mem = a->lse ? a->lse : a->any; break;
    case CLN_A_KV_LENS: v->mem = a->kv_lens ? a->kv_lens : a->any; break;
    case CLN_A_PART: v->mem = a->any; break; /* a one-stage call has no partials */
    case CLN_A_FLAGS: v->ui = a->flags; break;
    case CLN_A_Q_HEADS: v->ui = a->q_heads; break;
    case CLN_A_KV_HEADS: v->ui = a->kv_heads; break;
    case CLN_A_Q_LEN: v->ui = a->q_len; break;
    case CLN_A_KV_LEN: v->ui = a->kv_len; break;
    case CLN_A_HEAD_DIM: v->ui = a->head_dim; break;
    case CLN_A_SCALE: v->f = a->scale; break;
    case CLN_A_QBLOCK: v->ui = (cl_uint)pl->qblock; break;
    case CLN_A_QBLOCKS: v->ui = (cl_uint)pl->qblocks; break;
    case CLN_A_CHUNKS: v->ui = (cl_uint)pl->chunks; break;
    case CLN_A_CHUNK_LEN: v->ui = (cl_uint)pl->chunk_len; break;
    case CLN_A_COL_LANES: v->ui = (cl_uint)pl->col_lanes; break;
    case CLN_A_ITEMS: v->ul = pl->items; break;
    case CLN_A_A: v->mem = a->a.mem; break;
    case CLN_A_A_OFF: v->ul = a->a.offset; break;
    case CLN_A_A_LD: v->ul = a->a.ld; break;
    case CLN_A_LSE_A: v->mem = a->lse_a; break;
    case CLN_A_B: v->mem = a->b.mem; break;
    case CLN_A_B_OFF: v->ul = a->b.offset; break;
    case CLN_A_B_LD: v->ul = a->b.ld; break;
    case CLN_A_LSE_B: v->mem = a->lse_b; break;
    case CLN_A_Y: v->mem = a->y.mem; break;
    case CLN_A_Y_OFF: v->ul = a->y.offset; break;
    case CLN_A_Y_LD: v->ul = a->y.ld; break;
    default: break;
    }
}

/* Whether a view's offset and strides let its columns move in 4-element units. */
static int cln_att_vec4(const clnorm_tensor *t)
{
    return ((t->offset | t->stride_batch | t->stride_head | t->stride_len) & 3) == 0;
}

/* The validated desc's sizes as the kernels take them: each fits 32 bits. */
static clnorm_status cln_att_check_desc(const clnorm_attention_desc *d)
{
    if (!d) return cln_fail(CLNORM_INVALID_ARGUMENT, "desc is NULL");
    if (d->q_heads == 0 || d->kv_heads == 0)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "desc->q_heads = %zu and desc->kv_heads = %zu "
                        "must both be at least 1", d->q_heads, d->kv_heads);
    if (d->q_heads % d->kv_heads)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "desc->q_heads = %zu is not a multiple of "
                        "desc->kv_heads = %zu", d->q_heads, d->kv_heads);
    if (d->head_dim == 0 || d->head_dim > CLN_ATT_HEAD_DIM_MAX)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "desc->head_dim = %zu is outside 1..%d",
                        d->head_dim, CLN_ATT_HEAD_DIM_MAX);
    /* A negative scale is a score like any other (it reverses the keys' order). */
    if (!isfinite(d->scale))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "desc->scale = %g is not finite",
                        (double)d->scale);
    const size_t big = 0x7fffffffu;
    if (d->q_heads > big || d->kv_len > big || d->q_len > big ||
        d->q_heads / d->kv_heads * d->q_len > big || d->q_heads * d->q_len > big)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "desc: q_heads %zu, q_len %zu or kv_len %zu "
                        "is too large (each, and q_heads x q_len, at most %zu)", d->q_heads,
                        d->q_len, d->kv_len, big);
    return CLNORM_SUCCESS;
}

/* CLNORM_TRACE=1: one line per call on stderr, with the plan that ran (as ops.c does
   for the rows operations). */
static void cln_att_trace(const cln_att_shape *s, clnorm_dtype dtype, const cln_profile *prof,
                          const cln_att_plan *pl)
{
    if (!cln_config_now()->pub.trace) return;
    fprintf(stderr, "clnorm: attention b%zu %zu/%zu heads q_len %zu kv_len %zu d %zu %s on "
            "\"%s\": %s wg %zu, %zu x %zu queries, %zu chunks of %zu keys, %zu groups\n",
            s->batch, s->q_heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim,
            cln_dtype_name(dtype), prof->device_name,
            pl->cpu ? cln_kernel_name(CLN_K_ATTENTION_CPU) : cln_kernel_name(CLN_K_ATTENTION),
            pl->wg, pl->qblocks, pl->qblock, pl->chunks, pl->chunk_len, pl->groups);
}

/* Leases the stages' kernels for plan pl, re-planning once under a compiled kernel's
   lower work-group limit. */
static clnorm_status cln_att_prepare(cl_context ctx, cl_device_id dev,
                                     const cln_profile **profp, cln_limits *lim, clnorm_dtype dtype, const cln_att_shape *sh,
                                     cln_att_plan *pl, cln_kernel_lease lease[2])
{
    char why[512] = "";
    const cln_profile *prof = *profp;
    const int one = cln_programs_one(prof);
    for (int attempt = 0; attempt < 2; attempt++) {
        clnorm_status st = cln_att_plan_make(prof, lim, sh, pl, why, sizeof why);
        if (st)
            return cln_fail(st, "attention (head_dim %zu, q_len %zu, kv_len %zu) on \"%s\": %s",
                            sh->head_dim, sh->q_len, sh->kv_len, prof->device_name, why);
        const cln_kernel_id kids[2] = {pl->cpu ? CLN_K_ATTENTION_CPU : CLN_K_ATTENTION,
                                       CLN_K_ATTENTION_REDUCE};
        const int n = pl->chunks > 1 ? 2 : 1;
        size_t kmax = (size_t)-1;
        for (int j = 0; j < n; j++) {
            st = cln_kernel_acquire(ctx, dev, prof, dtype, pl->path, kids[j], one, &lease[j]);
            if (st) {
                for (int i = 0; i < j; i++) cln_kernel_return(&lease[i]);
                /* A fast path that does not build is dropped, as the rows operations
                   drop it (ops.c), and the call planned again without it. */
                const cln_profile *now = st == CLNORM_BUILD_FAILED && pl->path != CLN_PATH_LOCAL
                                             ? cln_profile_drop_path(dev, pl->path) : NULL;
                if (now && now != prof) {
                    *profp = prof = now;
                    attempt--;
                    goto next;
                }
                return st;
            }
            if (lease[j].max_wg && lease[j].max_wg < kmax) kmax = lease[j].max_wg;
        }
        if (pl->wg <= kmax && pl->reduce_wg <= kmax) return CLNORM_SUCCESS;
        for (int j = 0; j < n; j++) cln_kernel_return(&lease[j]);
        lim->max_wg = kmax;
    next:;
    }
    return cln_fail(CLNORM_UNSUPPORTED, "attention on \"%s\": the compiled kernel allows only "
                    "%zu work-items", prof->device_name, lim->max_wg);
}

clnorm_status clnorm_attention(cl_command_queue queue, clnorm_dtype dtype,
                               const clnorm_attention_desc *desc, clnorm_tensor q,
                               clnorm_tensor k, clnorm_tensor v, clnorm_tensor out, cl_mem lse,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st) st = cln_check_dtype(dtype);
    if (!st) st = cln_check_waits(ctx, num_wait, wait_list);
    if (!st) st = cln_att_check_desc(desc);
    if (st) return st;
    const clnorm_attention_desc d = *desc;
    const size_t es = cln_dtype_size(dtype);
    const size_t qd[4] = {d.batch, d.q_heads, d.q_len, d.head_dim};
    const size_t kd[4] = {d.batch, d.kv_heads, d.kv_len, d.head_dim};
    size_t q0, qn, k0, kn, v0, vn, o0, on;
    if ((st = cln_check_tensor("q", ctx, &q, qd, es, &q0, &qn)) ||
        (st = cln_check_tensor("k", ctx, &k, kd, es, &k0, &kn)) ||
        (st = cln_check_tensor("v", ctx, &v, kd, es, &v0, &vn)) ||
        (st = cln_check_tensor("out", ctx, &out, qd, es, &o0, &on)) ||
        (st = cln_check_tensor_distinct("out", &out, qd)))
        return st;
    const size_t rows = d.batch * d.q_heads * d.q_len;
    if ((st = cln_check_disjoint("out", out.mem, o0, on, "q", q.mem, q0, qn)) ||
        (st = cln_check_disjoint("out", out.mem, o0, on, "k", k.mem, k0, kn)) ||
        (st = cln_check_disjoint("out", out.mem, o0, on, "v", v.mem, v0, vn)))
        return st;
    if (lse) {
        const size_t ln = rows * sizeof(float);
        if ((st = cln_check_array("lse", ctx, lse, rows, sizeof(float))) ||
            (st = cln_check_disjoint("lse", lse, 0, ln, "out", out.mem, o0, on)) ||
            (st = cln_check_disjoint("lse", lse, 0, ln, "q", q.mem, q0, qn)) ||
            (st = cln_check_disjoint("lse", lse, 0, ln, "k", k.mem, k0, kn)) ||
            (st = cln_check_disjoint("lse", lse, 0, ln, "v", v.mem, v0, vn)))
            return st;
    }
    if (d.kv_lens) {
        const size_t bn = d.batch * sizeof(cl_int);
        if ((st = cln_check_array("desc->kv_lens", ctx, d.kv_lens, d.batch, sizeof(cl_int))) ||
            (st = cln_check_disjoint("desc->kv_lens", d.kv_lens, 0, bn, "out", out.mem, o0, on)) ||
            (lse && (st = cln_check_disjoint("desc->kv_lens", d.kv_lens, 0, bn, "lse", lse, 0,
                                             rows * sizeof(float)))))
            return st;
    }
    /* No query: nothing to compute (docs/API.md, 'Attention'). */
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);

    const cln_settings *set;
    const cln_profile *prof;
    if ((st = cln_settings_begin(queue, &set)) || (st = cln_profile_get(dev, &prof))) return st;
    cln_limits lim = set->lim;
    const cln_att_shape sh = {
        .batch = d.batch, .q_heads = d.q_heads, .kv_heads = d.kv_heads, .q_len = d.q_len,
        .kv_len = d.kv_len, .head_dim = d.head_dim,
        .vec4 = d.head_dim % 4 == 0 && cln_att_vec4(&q) && cln_att_vec4(&k) &&
                cln_att_vec4(&v) && cln_att_vec4(&out)};
    cln_att_plan pl;
    cln_kernel_lease lease[2] = {{0}, {0}};
    if ((st = cln_att_prepare(ctx, dev, &prof, &lim, dtype, &sh, &pl, lease))) return st;
    cln_att_trace(&sh, dtype, prof, &pl);
    cln_att_args a = {
        .q = q, .k = k, .v = v, .out = out, .lse = lse, .kv_lens = d.kv_lens, .any = out.mem,
        .flags = (d.causal ? CLN_ATT_CAUSAL : 0) | (lse ? CLN_ATT_LSE : 0) |
                 (d.kv_lens ? CLN_ATT_LENS : 0) | (sh.vec4 ? CLN_ATT_VEC4 : 0),
        .q_heads = (cl_uint)d.q_heads, .kv_heads = (cl_uint)d.kv_heads,
        .q_len = (cl_uint)d.q_len, .kv_len = (cl_uint)d.kv_len,
        .head_dim = (cl_uint)d.head_dim,
        .scale = d.scale != 0.0f ? d.scale : (float)(1.0 / sqrt((double)d.head_dim))};
    const cln_att_call call = {&a, &pl};
    const int n = pl.chunks > 1 ? 2 : 1;
    const cln_stages c = {
        .n = n,
        .s = {{pl.cpu ? CLN_K_ATTENTION_CPU : CLN_K_ATTENTION, pl.groups * pl.wg, pl.wg,
               pl.local_bytes},
              {CLN_K_ATTENTION_REDUCE, rows * pl.reduce_wg, pl.reduce_wg, 0}},
        .lease = lease, .part_bytes = n > 1 ? pl.part_bytes : 0, .fill = cln_att_fill,
        .call = &call};
    st = cln_enqueue_stages(queue, ctx, prof, &c, num_wait, wait_list, event);
    for (int j = 0; j < 2; j++) cln_kernel_return(&lease[j]);
    return st;
}

clnorm_status clnorm_attention_merge(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                                     size_t head_dim, clnorm_matrix out_a, cl_mem lse_a,
                                     clnorm_matrix out_b, cl_mem lse_b, clnorm_matrix out,
                                     cl_mem lse, cl_uint num_wait, const cl_event *wait_list,
                                     cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st) st = cln_check_dtype(dtype);
    if (!st && (head_dim == 0 || head_dim > 0x7fffffffu))
        st = cln_fail(CLNORM_INVALID_ARGUMENT, "head_dim = %zu is 0 or too large", head_dim);
    if (!st) st = cln_check_waits(ctx, num_wait, wait_list);
    if (st) return st;
    const size_t es = cln_dtype_size(dtype), n4 = rows * sizeof(float);
    if ((st = cln_check_view("out_a", ctx, &out_a, rows, head_dim, es)) ||
        (st = cln_check_view("out_b", ctx, &out_b, rows, head_dim, es)) ||
        (st = cln_check_view("out", ctx, &out, rows, head_dim, es)) ||
        (st = cln_check_array("lse_a", ctx, lse_a, rows, sizeof(float))) ||
        (st = cln_check_array("lse_b", ctx, lse_b, rows, sizeof(float))) ||
        (st = cln_check_array("lse", ctx, lse, rows, sizeof(float))))
        return st;
    /* out may be exactly out_a and lse exactly lse_a; nothing else written may share
       memory with what is read. */
    const size_t ob = cln_view_bytes(&out, rows, head_dim, es);
    if ((st = cln_check_overlap("out", &out, "out_a", &out_a, rows, head_dim, es, &same)) ||
        (st = cln_check_overlap("out", &out, "out_b", &out_b, rows, head_dim, es, &same)) ||
        (same && (st = cln_fail(CLNORM_INVALID_ARGUMENT, "out is the same view as out_b"))) ||
        (lse != lse_a && (st = cln_check_disjoint("lse", lse, 0, n4, "lse_a", lse_a, 0, n4))) ||
        (st = cln_check_disjoint("lse", lse, 0, n4, "lse_b", lse_b, 0, n4)) ||
        (st = cln_check_disjoint("lse", lse, 0, n4, "out", out.mem, out.offset * es, ob)) ||
        (st = cln_check_disjoint("lse", lse, 0, n4, "out_a", out_a.mem, out_a.offset * es,
                                 cln_view_bytes(&out_a, rows, head_dim, es))) ||
        (st = cln_check_disjoint("lse", lse, 0, n4, "out_b", out_b.mem, out_b.offset * es,
                                 cln_view_bytes(&out_b, rows, head_dim, es))) ||
        (st = cln_check_disjoint("out", out.mem, out.offset * es, ob, "lse_a", lse_a, 0, n4)) ||
        (st = cln_check_disjoint("out", out.mem, out.offset * es, ob, "lse_b", lse_b, 0, n4)))
        return st;
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);

    const cln_settings *set;
    const cln_profile *prof;
    if ((st = cln_settings_begin(queue, &set)) || (st = cln_profile_get(dev, &prof))) return st;
    cln_att_plan pl = {.path = set->lim.force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL
                                                                      : prof->best_path};
    cln_kernel_lease lease = {0};
    st = cln_kernel_acquire(ctx, dev, prof, dtype, pl.path, CLN_K_ATTENTION_MERGE,
                            cln_programs_one(prof), &lease);
    if (st == CLNORM_BUILD_FAILED && pl.path != CLN_PATH_LOCAL) {
        /* A fast path that does not build is dropped (ops.c); the merge reduces
           nothing across work-items, so it runs as well on the local path. */
        const cln_profile *now = cln_profile_drop_path(dev, pl.path);
        if (now && now != prof) {
            prof = now;
            pl.path = CLN_PATH_LOCAL;
            st = cln_kernel_acquire(ctx, dev, prof, dtype, pl.path, CLN_K_ATTENTION_MERGE,
                                    cln_programs_one(prof), &lease);
        }
    }
    if (st) return st;
    cln_limits lim = set->lim;
    if (lease.max_wg && (!lim.max_wg || lease.max_wg < lim.max_wg)) lim.max_wg = lease.max_wg;
    const size_t wg = cln_att_merge_wg(prof, &lim, head_dim);
    cln_att_args a = {.a = out_a, .b = out_b, .y = out, .lse = lse, .lse_a = lse_a,
                      .lse_b = lse_b, .any = lse, .head_dim = (cl_uint)head_dim};
    const cln_att_call call = {&a, &pl};
    const cln_stages c = {.n = 1, .s = {{CLN_K_ATTENTION_MERGE, rows * wg, wg, 0}},
                          .lease = &lease, .fill = cln_att_fill, .call = &call};
    st = cln_enqueue_stages(queue, ctx, prof, &c, num_wait, wait_list, event);
    cln_kernel_return(&lease);
    return st;
}
