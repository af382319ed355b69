/* The numbers behind every plan decision, one row per device class. The plan steps in
   src/plan.c read them from here and hold no numbers of their own. Each field's
   comment names the section of docs/DESIGN.md that gives its measurement or reason. */
#ifndef CLNORM_PLAN_TABLE_H
#define CLNORM_PLAN_TABLE_H

#include "types.h"

/* The device classes the plan tells apart. */
typedef enum cln_plan_class {
    CLN_CLASS_GPU = 0,        /* every device that is not a CPU */
    CLN_CLASS_CPU_VECTOR = 1, /* a CPU whose work-items vectorise their loops (PoCL) */
    CLN_CLASS_CPU_LANES = 2   /* a CPU running work-items as SIMD lanes (llvmpipe) */
} cln_plan_class;
#define CLN_CLASS_COUNT 3

typedef struct cln_plan_params {
    const char *name; /* the class, in words */

    /* ---- limits of every plan */
    /* Longest row, 2 to this power: 'Constants chosen without a measurement'. */
    unsigned cols_max_log2;
    /* Local bytes kept beside the scratch: 'Constants chosen without a measurement'. */
    size_t local_reserve;
    /* Scratch floats per work-item: 'Constants chosen without a measurement'. */
    size_t local_floats;

    /* ---- register and words forms */
    /* Elements per word: 'Paired register kernels'. */
    size_t word;
    /* Unforced plans hold rows that fit in registers: 'Paired register kernels'. */
    int auto_registers;
    /* Widest register team: 'Constants chosen without a measurement'. */
    size_t reg_team_max;
    /* Widest team of the half words kernels: 'Half and full paired kernels'. */
    size_t half_team_max;
    /* float32 softmax: half kernels from this full team: 'Half and full paired kernels'. */
    size_t soft32_half_team_min;
    /* 16-bit softmax: wider teams stream unless nearly full (0: never): '16-bit softmax'. */
    size_t soft16_reg_team_max;
    /* Nearly full: at least num/den of the slots filled: '16-bit softmax'. */
    size_t soft16_fill_num, soft16_fill_den;

    /* ---- softmax algorithm for CLNORM_SOFTMAX_AUTO */
    /* Three-pass for every row: 'Softmax algorithm choice'. */
    int auto_three_pass;
    /* Three-pass where the row fits the registers: 'Softmax algorithm choice'. */
    int auto_three_pass_in_regs;

    /* ---- split rows */
    /* Shortest row that splits: 'Split rows'. */
    size_t split_cols_min;
    /* Rows split when fewer than this times the compute units: 'Split rows'. */
    size_t split_rows_per_cu;
    /* Work-group size of a split plan: 'Split rows'. */
    size_t split_wg;
    /* Slices give this many groups per compute unit: 'Split rows'. */
    size_t split_groups_per_cu;
    /* Elements per work-item a slice keeps at least: 'Split rows'. */
    size_t split_items_min;
    /* Work-group of the one-launch split (coop) of softmax; slices for this many
       groups per compute unit: 'One-launch split rows'. The plan takes it only on
       devices whose groups run side by side (the profile's coop: NVIDIA). */
    size_t coop_wg;
    size_t coop_groups_per_cu;
    /* Elements per work-item a coop slice may hold in local memory besides the
       registers' CLN_COOP_ELEMS (at most CLN_COOP_BATCHES times as many): longer
       slices, fewer groups per row, more of the rows held at once. */
    size_t coop_local_elems;
    /* Groups of coop_wg a compute unit runs at once. Where the rows' groups would
       outnumber one wave of them with slices of twice the registers' elements, the
       slices take all of coop_local_elems, so that fewer waves pay the wait for a
       row's slices; within one wave they stay shorter, more groups sharing the
       loads. 0: slices always take all of it: 'One-launch split rows'. */
    size_t coop_resident_per_cu;
    /* 1: rows too long for the registers take the one launch instead of streaming,
       however many rows there are (one read of each row instead of two): 'One-launch
       split rows'. */
    int coop_long_rows;
    /* Softmax rows the register form would hold element by element (not of whole
       words) take the one launch from this many columns, one slice a row loaded in
       vectors; 0: never: 'One-launch split rows'. */
    size_t coop_unpaired_cols_min;

    /* ---- softmax with given statistics (clnorm_softmax_apply) */
    /* Work-items of a group: 'Softmax with given statistics'. */
    size_t apply_wg;
    /* Elements per work-item a team keeps at least: 'Softmax with given statistics'. */
    size_t apply_items;
    /* Slices give this many groups per compute unit: 'Softmax with given statistics'. */
    size_t apply_groups_per_cu;

    /* ---- teams by columns (GPUs; CPUs given a forced team or group) */
    /* Elements per work-item of a streaming team: 'Work-items per row on GPUs', 'CPU plans'. */
    size_t stream_items;
    /* Widest streaming team: 'Work-items per row on GPUs'. */
    size_t stream_team_max;
    /* Widest streaming team where rows are few: 'Work-items per row on GPUs'. */
    size_t stream_team_max_few;
    /* Rows are few below this times the compute units: 'Work-items per row on GPUs'. */
    size_t stream_few_rows_per_cu;
    /* A register team is as wide as its slots need: 'Work-items per row on GPUs'. */
    int reg_team_exact;
    /* Work-items a group of whole rows aims for: 'Work-items per row on GPUs', 'CPU plans'. */
    size_t group_items;

    /* ---- groups by rows (CPUs, which run a work-group on one thread) */
    /* Plan rows per group first, then work-items per row: 'CPU plans'. */
    int cpu_groups;
    /* Groups per compute unit aimed for: 'CPU plans'. */
    size_t cpu_groups_per_cu;
    /* Most rows a group: 'CPU plans'. */
    size_t cpu_rows_max;
    /* Fewest work-items a group: 'CPU plans'. */
    size_t cpu_group_items_min;
    /* Most bytes of rows a group, 0 for no limit: 'CPU plans'. */
    size_t cpu_group_bytes;
    /* Most work-items of a row longer than those bytes: 'CPU plans'. */
    size_t cpu_long_row_team;
    /* Rows at least this long take the wide team, 0 never: 'CPU plans'. */
    size_t cpu_wide_cols;
    /* Work-items per row of the wide team: 'CPU plans'. */
    size_t cpu_wide_team;
    /* Most rows a group of wide teams: 'CPU plans'. */
    size_t cpu_wide_rows_max;
    /* Vectors per chunk; a row gets no more work-items than chunks: 'CPU plans'. */
    size_t cpu_chunk_vectors;

    /* ---- loops and drivers */
    /* A loop trip covers vec elements (else one): 'The streaming form'. */
    int loop_vectors;
    /* PoCL from this major version...: 'Driver quirks'. */
    int pocl_tiny_major;
    /* ...takes the local path in groups of at most this many: 'Driver quirks'. */
    size_t pocl_tiny_wg;
} cln_plan_params;

/* The row of the table for a device, by its class, which its profile alone gives
   (pure: the table is constant). */
CLN_HIDDEN const cln_plan_params *cln_plan_params_for(const cln_profile *p);

#endif
