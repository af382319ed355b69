/* attention_plan: the pure attention plan (src/plan_attention.c) on synthetic devices:
   the GPU form's shape, the CPU form's work-items and chunks, split-K where the
   (batch entry, kv head) items are too few, loop limits, forced sizes. */
#include "plan_attention.h"
#include "test.h"

#include <string.h>

static cln_profile synth(int gpu, cl_uint cus, size_t max_wg, cl_ulong local, unsigned loop,
                         cl_uint vec)
{
    cln_profile p;
    memset(&p, 0, sizeof p);
    strcpy(p.device_name, gpu ? "synthetic GPU" : "synthetic CPU");
    p.type = gpu ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU;
    p.compute_units = cus;
    p.max_wg = max_wg;
    p.local_mem = local;
    p.loop_limit = loop;
    /* As profile.c finds them: a CPU that prefers scalars runs work-items as SIMD lanes
       and takes vectors of 4. */
    p.simd_lanes = !gpu && vec == 1;
    p.vec = p.simd_lanes ? 4 : vec;
    p.best_path = gpu ? CLN_PATH_NV : CLN_PATH_LOCAL;
    return p;
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* The GPU form's invariants. */
static void check_gpu(size_t di, size_t si, const cln_profile *p, const size_t *s,
                      const cln_att_plan *pl)
{
    const size_t gq = s[1] / s[2] * s[3], keys = s[4] ? s[4] : 1;
    CHECK(!pl->cpu && (pl->wg & (pl->wg - 1)) == 0 && pl->wg <= p->max_wg && pl->qblock &&
              pl->wg % pl->qblock == 0 && pl->local_bytes <= p->local_mem &&
              pl->qblocks * pl->qblock >= gq && (pl->qblocks - 1) * pl->qblock < gq &&
              pl->col_lanes * CLN_ATT_UPI >= pl->units &&
              pl->qblock <= pl->wg / pl->col_lanes * CLN_ATT_QPI &&
              pl->chunks * pl->chunk_len >= keys && (pl->chunks - 1) * pl->chunk_len < keys &&
              pl->groups == s[0] * s[2] * pl->qblocks * pl->chunks,
          "device %zu shape %zu: wg %zu qblock %zu x %zu, lanes %zu, chunks %zu x %zu, local %zu",
          di, si, pl->wg, pl->qblock, pl->qblocks, pl->col_lanes, pl->chunks, pl->chunk_len,
          pl->local_bytes);
    if (p->loop_limit)
        CHECK((pl->chunk_len + pl->wg - 1) / pl->wg * (pl->units + 2 * pl->qblock + pl->wg) <=
                  2 * (size_t)p->loop_limit,
              "device %zu shape %zu: %zu keys a group pass the loop limit", di, si, pl->chunk_len);
}

/* The CPU form's: a work-item per (entry, kv head, query block, chunk), every query and
   key covered once, a work-item alone where the device vectorises its own loop, items
   for every compute unit where the keys allow, no loop past the limit. */
static void check_cpu(size_t di, size_t si, const cln_profile *p, const size_t *s,
                      const cln_att_plan *pl)
{
    const size_t gq = s[1] / s[2] * s[3], keys = s[4] ? s[4] : 1;
    CHECK(pl->cpu && pl->wg >= 1 && pl->wg <= p->max_wg && (p->simd_lanes || pl->wg == 1) &&
              pl->local_bytes == 0 && pl->qblock >= 1 && pl->qblock <= CLN_ATTC_QMAX &&
              pl->qblocks * pl->qblock >= gq && (pl->qblocks - 1) * pl->qblock < gq &&
              pl->chunks * pl->chunk_len >= keys && (pl->chunks - 1) * pl->chunk_len < keys &&
              pl->items == s[0] * s[2] * pl->qblocks * pl->chunks &&
              pl->groups == div_up(pl->items, pl->wg) &&
              (pl->chunks == 1 || pl->part_bytes == s[0] * s[1] * s[3] * pl->chunks *
                                                        (s[5] + 2) * sizeof(float)),
          "device %zu shape %zu: wg %zu, %zu x %zu queries, chunks %zu x %zu, items %zu, "
          "groups %zu", di, si, pl->wg, pl->qblocks, pl->qblock, pl->chunks, pl->chunk_len,
          pl->items, pl->groups);
    CHECK(pl->items >= 2 * p->compute_units || pl->chunk_len <= 256 + CLN_ATTC_KB,
          "device %zu shape %zu: %zu work-items for %u compute units, chunks of %zu keys", di,
          si, pl->items, p->compute_units, pl->chunk_len);
    if (p->loop_limit)
        CHECK(cln_att_cpu_trips(pl->qblock, s[5], pl->chunk_len) <= 4 * (size_t)p->loop_limit,
              "device %zu shape %zu: %zu keys a work-item pass the loop limit", di, si,
              pl->chunk_len);
}

void test_attention_plan(void)
{
    /* An H200-like GPU, a 2-core PoCL, an 8-core llvmpipe (loop limit, SIMD lanes), a
       small GPU, a 16-core PoCL. */
    const cln_profile devs[] = {synth(1, 132, 1024, 49152, 0, 4), synth(0, 2, 4096, 524288, 0, 8),
                                synth(0, 8, 1024, 32768, 16000, 1), synth(1, 4, 256, 16384, 0, 4),
                                synth(0, 16, 4096, 524288, 0, 16)};
    static const size_t shapes[][6] = {/* batch, q_heads, kv_heads, q_len, kv_len, head_dim */
                                       {1, 32, 8, 1, 8192, 128}, {64, 32, 8, 1, 8192, 128},
                                       {8, 32, 8, 16, 8192, 128}, {1, 1, 1, 1, 1, 1},
                                       {2, 8, 1, 37, 37, 256},    {1, 4, 4, 1, 40000, 80},
                                       {3, 6, 2, 5, 0, 3},        {1, 40, 8, 3, 65537, 256}};
    cln_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.force_path = -1;
    lim.force_variant = -1;
    char why[256];
    for (size_t di = 0; di < COUNT_OF(devs); di++)
        for (size_t si = 0; si < COUNT_OF(shapes); si++)
            for (int vec4 = 0; vec4 <= 1; vec4++) {
                const size_t *s = shapes[si];
                const cln_att_shape sh = {s[0], s[1], s[2], s[3], s[4], s[5], vec4 && s[5] % 4 == 0};
                cln_att_plan pl;
                const cln_profile *p = &devs[di];
                if (!CHECK_ST(cln_att_plan_make(p, &lim, &sh, &pl, why, sizeof why),
                              CLNORM_SUCCESS))
                    continue;
                if (p->type & CL_DEVICE_TYPE_CPU) check_cpu(di, si, p, s, &pl);
                else check_gpu(di, si, p, s, &pl);
            }
    /* Split-K where (batch, kv head) groups are too few: decode on the big GPU. */
    cln_att_plan pl;
    const cln_att_shape dec1 = {1, 32, 8, 1, 8192, 128, 1}, dec64 = {64, 32, 8, 1, 8192, 128, 1};
    if (CHECK_ST(cln_att_plan_make(&devs[0], &lim, &dec1, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.chunks >= 8 && pl.groups >= 2 * 132, "batch 1 decode: %zu chunks, %zu groups",
              pl.chunks, pl.groups);
    if (CHECK_ST(cln_att_plan_make(&devs[0], &lim, &dec64, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.chunks <= 4 && pl.chunks < (8192 + 127) / 128, "batch 64 decode: %zu chunks", pl.chunks);
    /* On CPUs: the 8 (entry, kv head) items fill 2 cores unsplit, 16 cores get 4 each. */
    if (CHECK_ST(cln_att_plan_make(&devs[1], &lim, &dec1, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.cpu && pl.chunks == 1 && pl.items == 8 && pl.qblock == 4,
              "2-core batch 1 decode: %zu chunks, %zu items, %zu queries", pl.chunks, pl.items,
              pl.qblock);
    if (CHECK_ST(cln_att_plan_make(&devs[4], &lim, &dec1, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.cpu && pl.items >= 4 * 16 && pl.chunk_len % CLN_ATTC_KB == 0,
              "16-core batch 1 decode: %zu chunks of %zu, %zu items", pl.chunks, pl.chunk_len,
              pl.items);
    /* Forced: chunks, a work-group, a path. */
    lim.force_slices = 3;
    if (CHECK_ST(cln_att_plan_make(&devs[1], &lim, &dec1, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.chunks == 3, "CLNORM_SPLIT=3 gave %zu chunks", pl.chunks);
    /* Too long a chunk for llvmpipe's loops. */
    if (CHECK_ST(cln_att_plan_make(&devs[2], &lim, &dec1, &pl, why, sizeof why),
                 CLNORM_INVALID_ARGUMENT))
        CHECK(t_mentions(why, "CLNORM_SPLIT=3"), "\"%s\" names CLNORM_SPLIT=3", why);
    lim.force_slices = 0;
    lim.force_wg = 48;
    CHECK_ST(cln_att_plan_make(&devs[0], &lim, &dec1, &pl, why, sizeof why),
             CLNORM_INVALID_ARGUMENT);
    /* The CPU form takes any size within the device's. */
    if (CHECK_ST(cln_att_plan_make(&devs[1], &lim, &dec1, &pl, why, sizeof why), CLNORM_SUCCESS))
        CHECK(pl.wg == 48 && pl.groups == 1, "CLNORM_WORK_GROUP=48: wg %zu, %zu groups", pl.wg,
              pl.groups);
    lim.force_wg = 2048;
    if (CHECK_ST(cln_att_plan_make(&devs[2], &lim, &dec1, &pl, why, sizeof why),
                 CLNORM_INVALID_ARGUMENT))
        CHECK(t_mentions(why, "2048"), "\"%s\" names 2048", why);
    lim.force_wg = 0;
    lim.force_path = CLN_PATH_SUBGROUP;
    CHECK_ST(cln_att_plan_make(&devs[1], &lim, &dec1, &pl, why, sizeof why), CLNORM_UNSUPPORTED);
    CHECK(t_mentions(why, "CLNORM_REDUCTION"), "\"%s\" names CLNORM_REDUCTION", why);
}
