/* The plan of one call: which variant, work-group size, work-items per row, split and
   reduction path (plan.c), a pure function of the device's profile, the limits and
   the shape. */
#ifndef CLNORM_PLAN_H
#define CLNORM_PLAN_H

#include "kernels.h"
#include "types.h"

/* Elements per work-item the coop variant holds in registers (CLN_COOP_ELEMS in
   cl/coop.cl), and past them at most CLN_COOP_BATCHES batches of as many in local
   memory; the most work-groups one coop call may have: the ticket's two
   synchronisation words and two a group fill at most a scratch buffer's
   CLN_SYNC_WORDS (src/scratch.h). */
#define CLN_COOP_ELEMS 32
#define CLN_COOP_BATCHES 2
#define CLN_COOP_GROUPS_MAX ((1 << 19) - 1)
/* The elements per work-item a coop slice holds in local memory, of a slice of e
   elements per work-item: those past the registers, rounded up to CLN_COOP_HOLD_STEP
   (the widest vector) so that every build of cl/coop.cl finds them all room. */
#define CLN_COOP_HOLD_STEP 16
static inline size_t cln_coop_held(size_t e)
{
    return e > CLN_COOP_ELEMS ? (e - CLN_COOP_ELEMS + CLN_COOP_HOLD_STEP - 1) /
                                    CLN_COOP_HOLD_STEP * CLN_COOP_HOLD_STEP : 0;
}
/* Elements per work-item the register variants hold (CLN_REG_K in reduce.cl). */
#define CLN_REG_K 32
#define CLN_RMS_REG_K 16

/* Limits and overrides that lower or force what the plan may use; 0 / -1 = none. */
typedef struct cln_limits {
    size_t max_wg;        /* CLNORM_MAX_WORK_GROUP, or the kernel's own limit */
    cl_ulong max_local;   /* CLNORM_MAX_LOCAL_MEM */
    size_t force_wg;      /* CLNORM_WORK_GROUP */
    size_t force_team;    /* CLNORM_ROW_THREADS: work-items per row */
    int force_path;       /* CLNORM_REDUCTION: -1 auto, else a cln_path (LOCAL or
                             SUBGROUP; SUBGROUP means the device's fast path) */
    int force_variant;    /* CLNORM_VARIANT: -1 auto, else a cln_variant */
    size_t force_slices;  /* CLNORM_SPLIT: work-groups per row for the split variant */
    int no_words;         /* set by the caller when some view's rows do not all start
                             at a multiple of the word: the words variant is
                             then off */
    int no_coop;          /* set by the caller when x's and y's rows sit at
                             different places in the programs' vector
                             (cln_build_vec): the coop variant is then off for
                             16-bit rows */
    size_t word;          /* CLNORM_PAIR_WORD: elements per word of the words variant
                             (2 or 4), 0 for the device's choice (cln_word_size) */
} cln_limits;

typedef struct cln_plan {
    cln_op op;            /* resolved: never CLN_OP_SOFTMAX_AUTO */
    cln_variant variant;
    cln_path path;        /* program compiled for; the kernel falls back to local
                             trees at run time where (wg, team) do not suit it */
    cln_kernel_id k1, k2, k3; /* stage kernels; CLN_K_COUNT where a stage is absent */
    int online;           /* register variant of softmax: online (1) or three-pass (0) */
    int words_half;       /* words variant: the kernels with half the slots */
    size_t wg;            /* work-group size */
    size_t team;          /* work-items per row; divides wg (== wg for split) */
    size_t rows_per_wg;   /* wg / team */
    size_t groups;        /* number of work-groups (stage one) */
    size_t slices;        /* split: work-groups per row */
    size_t slice_len;     /* split: columns per work-group, a multiple of wg */
    size_t local_bytes;   /* __local scratch per work-group */
} cln_plan;

/* The reduction paths plans on p under lim may end on (the plan's own, and the one
   the driver step gives tiny groups where it differs): 1 or 2, into out. Pure. */
CLN_HIDDEN size_t cln_plan_paths(const cln_profile *p, const cln_limits *lim,
                                 cln_path out[2]);
/* CLNORM_UNSUPPORTED, with the reason written to why, where lim forces a fast
   reduction path p lacks: every plan on p refuses then. Pure. */
CLN_HIDDEN clnorm_status cln_plan_forced_path(const cln_profile *p, const cln_limits *lim,
                                              char *why, size_t why_len);
/* A pure function: no device, no globals. Returns CLNORM_UNSUPPORTED when a forced
   path is missing, CLNORM_INVALID_ARGUMENT for an impossible forced size, with the
   reason written to why. */
CLN_HIDDEN clnorm_status cln_plan_make(const cln_profile *p, const cln_limits *lim,
                                       cln_op op, clnorm_dtype dtype, size_t rows,
                                       size_t cols, cln_plan *out, char *why,
                                       size_t why_len);
/* The plan's launch against what p and lim allow: the work-group size (at least one
   work-item, at most the device's and the limit's, a multiple of the team), the local
   memory per group (at most the device's and the limit's) and the reduction path (one
   the device has). CLNORM_UNSUPPORTED with the reason in why where pl breaks one;
   cln_plan_make ends with it, so no plan over a limit reaches a launch. Pure. */
CLN_HIDDEN clnorm_status cln_plan_check(const cln_profile *p, const cln_limits *lim,
                                        const cln_plan *pl, char *why, size_t why_len);
/* The plan of an entry point's own kernel (the table's entry kernels, plan_apply.c):
   CLN_K_SOFTMAX_APPLY, teams writing slices of rows, enough slices to fill the device
   where rows are few; or CLN_K_STATS_MERGE_ROWS, one work-item a row (cols unused).
   op is online softmax, whose write pass apply is. Pure; refusals as cln_plan_make's. */
CLN_HIDDEN clnorm_status cln_plan_apply(const cln_profile *p, const cln_limits *lim,
                                        cln_kernel_id kid, size_t rows, size_t cols,
                                        cln_plan *out, char *why, size_t why_len);
/* Elements per work-item the plan's register kernel holds (the kernels' CLN_REG_K,
   CLN_RMS_REG_K and the words slots); 0 for the streaming and split variants. */
CLN_HIDDEN size_t cln_plan_reg_elems(const cln_plan *pl, clnorm_dtype dtype);
/* Elements per word of the words kernels (CLN_WORD in cl/dtype.cl) on p: forced (2
   or 4) if not 0, else the device's choice. The programs are built with it and the
   plan and the views' alignment check follow it. */
CLN_HIDDEN size_t cln_word_size(const cln_profile *p, size_t forced);

#endif
