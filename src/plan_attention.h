/* The plan of an attention call (plan_attention.c): work-group size, queries per
   work-group, the columns' layout and the split of the keys into chunks (split-K).
   A pure function of the device's profile, the limits and the shape, like plan.c. */
#ifndef CLNORM_PLAN_ATTENTION_H
#define CLNORM_PLAN_ATTENTION_H

#include "plan.h"
#include "types.h"

/* Column units and queries per work-item in the weighted sum, and queries scored per
   pass: CLN_ATT_UPI, CLN_ATT_QPI and CLN_ATT_QS of cl/attention.cl. */
#define CLN_ATT_UPI 2
#define CLN_ATT_QPI 4
#define CLN_ATT_QS 8
/* The CPU form (cl/attention_cpu.cl): queries a work-item holds, keys per block,
   queries per pass over a block (CLN_ATTC_QMAX, _KB and _R there). */
#define CLN_ATTC_QMAX 16
#define CLN_ATTC_KB 16
#define CLN_ATTC_R 4
/* Largest head_dim of the contract. */
#define CLN_ATT_HEAD_DIM_MAX 256

typedef struct cln_att_shape {
    size_t batch, q_heads, kv_heads, q_len, kv_len, head_dim;
    int vec4;             /* head_dim and every view's offset and strides are multiples
                             of 4: columns move as 4-element units */
} cln_att_shape;

typedef struct cln_att_plan {
    cln_path path;
    int cpu;              /* 1: the CPU form clnorm_attention_cpu, a work-item per
                             (batch entry, kv head, query block, chunk), no local
                             memory; 0: clnorm_attention, a work-group each */
    size_t wg;            /* work-group size and keys per tile; a power of two */
    size_t units;         /* column units of a row: head_dim / 4 or head_dim */
    size_t col_lanes;     /* work-items across the units in the weighted sum */
    size_t qblock;        /* queries per work-group (the CPU form: per work-item); in
                             the GPU form a power of two dividing wg */
    size_t qblocks;       /* blocks per (batch entry, kv head) */
    size_t chunks;        /* key chunks, one work-group each; 1: no split */
    size_t chunk_len;     /* keys per chunk */
    size_t items;         /* the CPU form's work-items with work (0 in the other) */
    size_t groups;        /* work-groups of the attention kernel */
    size_t local_bytes;   /* its local memory */
    size_t reduce_wg;     /* work-group of the split-K merge, one per query row */
    size_t part_bytes;    /* the chunk records: (head_dim + 2) floats per row and chunk */
} cln_att_plan;

/* Plans attention of shape s on p under lim (its force_path, max_wg, force_wg,
   max_local and force_slices, the forced chunk count; force_variant REGISTERS forces
   the CPU form, STREAM the work-group form). Returns CLNORM_UNSUPPORTED
   (no shape fits the device, a forced path it lacks) or CLNORM_INVALID_ARGUMENT (a
   forced size that cannot work), with the reason in why. */
CLN_HIDDEN clnorm_status cln_att_plan_make(const cln_profile *p, const cln_limits *lim,
                                           const cln_att_shape *s, cln_att_plan *out,
                                           char *why, size_t why_len);
/* Loop trips of a work-item of the CPU form with nq queries over `keys` keys (whole
   blocks of CLN_ATTC_KB), as the plan counts them against a loop limit. Pure. */
CLN_HIDDEN size_t cln_att_cpu_trips(size_t nq, size_t head_dim, size_t keys);
/* Work-group size of clnorm_attention_merge (one group per row). Pure. */
CLN_HIDDEN size_t cln_att_merge_wg(const cln_profile *p, const cln_limits *lim,
                                   size_t head_dim);

#endif
