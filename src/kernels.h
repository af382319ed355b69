/* The table of kernels: for each kernel of cl/, its OpenCL name, the operations,
   variant and stage that run it, and its arguments in the order of its declaration.
   The plan picks its kernels here (cln_kernel_find), ops.c sets their arguments by
   walking the list, and the kernel_table test checks the table against cl/. */
#ifndef CLNORM_KERNELS_H
#define CLNORM_KERNELS_H

#include "types.h"

/* Every kernel of the program, in the order of the table below; the program cache
   keeps a pool per kernel. */
typedef enum cln_kernel_id {
    CLN_K_RMSNORM, CLN_K_RMSNORM_REG, CLN_K_ADD_RMSNORM, CLN_K_ADD_RMSNORM_REG,
    CLN_K_SPLIT_SUM_SQUARES, CLN_K_SPLIT_RMSNORM, CLN_K_SOFTMAX_THREE_PASS,
    CLN_K_SOFTMAX_ONLINE, CLN_K_SOFTMAX_REG, CLN_K_SOFTMAX_STATS, CLN_K_SPLIT_STATS,
    CLN_K_SPLIT_SOFTMAX, CLN_K_SPLIT_STATS_FINAL, CLN_K_SPLIT_MAX, CLN_K_SPLIT_SUM_EXP,
    CLN_K_SOFTMAX_WORDS, CLN_K_RMSNORM_WORDS, CLN_K_ADD_RMSNORM_WORDS,
    CLN_K_RMSNORM_WORDS_HALF, CLN_K_ADD_RMSNORM_WORDS_HALF, CLN_K_SOFTMAX_WORDS_HALF,
    CLN_K_SOFTMAX_APPLY, CLN_K_STATS_MERGE_ROWS,
    CLN_K_COOP_SOFTMAX,
    CLN_K_ATTENTION, CLN_K_ATTENTION_REDUCE, CLN_K_ATTENTION_MERGE, CLN_K_ATTENTION_CPU,
    CLN_K_COUNT
} cln_kernel_id;

/* What an argument holds. Each kind has one OpenCL type and one parameter name,
   which every kernel that takes it uses. */
typedef enum cln_arg {
    CLN_A_END = 0,      /* ends a list */
    CLN_A_X,            /* the input view: buffer, then offset and leading dimension */
    CLN_A_X_OFF,        /* (offsets and leading dimensions count elements) */
    CLN_A_X_LD,
    CLN_A_Y,            /* the output view */
    CLN_A_Y_OFF,
    CLN_A_Y_LD,
    CLN_A_RES,          /* the fused add's residual view */
    CLN_A_RES_OFF,
    CLN_A_RES_LD,
    CLN_A_UPDATE,       /* 1: the fused add stores x + residual over the residual */
    CLN_A_GAMMA,        /* the weights, or x's buffer where there are none (unread) */
    CLN_A_HAS_GAMMA,
    CLN_A_ROW_MAX,      /* the statistics' outputs */
    CLN_A_ROW_SUM,
    CLN_A_B_MAX,        /* clnorm_stats_merge_rows: the statistics merged into them */
    CLN_A_B_SUM,
    CLN_A_ROWS,
    CLN_A_COLS,
    CLN_A_EPS,
    CLN_A_TEAM,         /* work-items per row */
    CLN_A_ONLINE,       /* register softmax: online (1) or three-pass (0) */
    CLN_A_SLICES,       /* split: work-groups per row */
    CLN_A_SLICE_LEN,    /* split: columns per work-group */
    CLN_A_PART,         /* split: the partials buffer, four floats per work-group */
    CLN_A_MAXIMA,       /* the same buffer, read for the slice maxima it holds */
    CLN_A_WEIGHTED,     /* split softmax: scale the weights an earlier stage stored */
    CLN_A_SCRATCH,      /* __local scratch of the plan's local_bytes */
    CLN_A_SYNC,         /* coop: the synchronisation words, and the first of the call's */
    CLN_A_SYNC_BASE,
    /* Attention (cl/attention.cl): the 4-D views q, k, v and out, each a buffer, its
       offset and its batch, head and length strides (elements). */
    CLN_A_Q, CLN_A_Q_OFF, CLN_A_Q_SB, CLN_A_Q_SH, CLN_A_Q_SL,
    CLN_A_K, CLN_A_K_OFF, CLN_A_K_SB, CLN_A_K_SH, CLN_A_K_SL,
    CLN_A_V, CLN_A_V_OFF, CLN_A_V_SB, CLN_A_V_SH, CLN_A_V_SL,
    CLN_A_OUT, CLN_A_OUT_OFF, CLN_A_OUT_SB, CLN_A_OUT_SH, CLN_A_OUT_SL,
    CLN_A_LSE,          /* float32 per query row, or another buffer (unwritten) */
    CLN_A_KV_LENS,      /* int32 per batch entry, or another buffer (unread) */
    CLN_A_FLAGS,        /* CLN_ATT_* bits of cl/attention.cl */
    CLN_A_Q_HEADS, CLN_A_KV_HEADS, CLN_A_Q_LEN, CLN_A_KV_LEN, CLN_A_HEAD_DIM,
    CLN_A_SCALE,
    CLN_A_QBLOCK,       /* queries per work-group */
    CLN_A_QBLOCKS,      /* blocks of queries per (batch entry, kv head) */
    CLN_A_CHUNKS,       /* key chunks (split-K) */
    CLN_A_CHUNK_LEN,    /* keys per chunk */
    CLN_A_COL_LANES,    /* work-items across the columns in the weighted sum */
    CLN_A_ITEMS,        /* work-items with work (cl/attention_cpu.cl: the NDRange is
                           rounded up to whole work-groups) */
    /* clnorm_attention_merge: out_a, lse_a, out_b, lse_b (out is CLN_A_Y). */
    CLN_A_A, CLN_A_A_OFF, CLN_A_A_LD, CLN_A_LSE_A,
    CLN_A_B, CLN_A_B_OFF, CLN_A_B_LD, CLN_A_LSE_B,
    CLN_A_COUNT
} cln_arg;

/* The OpenCL type of an argument, as clSetKernelArg takes it. */
typedef enum cln_arg_type {
    CLN_T_GLOBAL, /* __global pointer: a cl_mem */
    CLN_T_ULONG,
    CLN_T_UINT,
    CLN_T_FLOAT,
    CLN_T_LOCAL   /* __local pointer: a size, no value */
} cln_arg_type;

typedef struct cln_arg_desc {
    const char *name; /* the parameter's name in cl/ */
    cln_arg_type type;
} cln_arg_desc;
/* Indexed by cln_arg. */
CLN_HIDDEN extern const cln_arg_desc cln_arg_descs[CLN_A_COUNT];

/* Most arguments of any kernel, and room for the list's end. */
#define CLN_KERNEL_ARGS_MAX 40

typedef struct cln_kernel_info {
    cln_kernel_id id;
    const char *name;       /* OpenCL name; CLN_ONLY_<name> compiles it alone */
    cln_variant variant;
    int words_half;         /* the words variant's form with half the slots */
    /* The stage (1, 2 or 3) at which each operation runs the kernel, 0 where it does
       not. Softmax AUTO is resolved by the plan before kernels are chosen. */
    unsigned char stage[CLN_OP_COUNT];
    int group_per_row;      /* launched as one work-group per row, not the plan's groups */
    int entry;              /* run by an entry point of its own (clnorm_softmax_apply,
                               clnorm_stats_merge_rows) with the plan of cln_plan_apply,
                               not as a stage of an operation: its stages are all 0 */
    int attention;          /* chosen by the attention plan (plan_attention.c), not by
                               cln_kernel_find */
    cln_arg args[CLN_KERNEL_ARGS_MAX]; /* in declaration order, ending at CLN_A_END */
} cln_kernel_info;

/* Indexed by cln_kernel_id. */
CLN_HIDDEN extern const cln_kernel_info cln_kernel_table[CLN_K_COUNT];

/* The kernel's OpenCL name. */
CLN_HIDDEN const char *cln_kernel_name(cln_kernel_id k);
/* The kernel that runs stage `stage` of op in variant v (words_half: the half-slot
   form, for the words variant), or CLN_K_COUNT where there is none. Pure. */
CLN_HIDDEN cln_kernel_id cln_kernel_find(cln_op op, cln_variant v, int words_half, int stage);

#endif
