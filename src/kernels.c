/* The table of kernels (kernels.h): one entry per __kernel of cl/. */
#include "kernels.h"
#include "types.h"

const cln_arg_desc cln_arg_descs[CLN_A_COUNT] = {
    [CLN_A_END] = {"", CLN_T_UINT},
    [CLN_A_X] = {"x", CLN_T_GLOBAL},
    [CLN_A_X_OFF] = {"xoff", CLN_T_ULONG},
    [CLN_A_X_LD] = {"xld", CLN_T_ULONG},
    [CLN_A_Y] = {"y", CLN_T_GLOBAL},
    [CLN_A_Y_OFF] = {"yoff", CLN_T_ULONG},
    [CLN_A_Y_LD] = {"yld", CLN_T_ULONG},
    [CLN_A_RES] = {"res", CLN_T_GLOBAL},
    [CLN_A_RES_OFF] = {"roff", CLN_T_ULONG},
    [CLN_A_RES_LD] = {"rld", CLN_T_ULONG},
    [CLN_A_UPDATE] = {"update", CLN_T_UINT},
    [CLN_A_GAMMA] = {"gamma", CLN_T_GLOBAL},
    [CLN_A_HAS_GAMMA] = {"has_gamma", CLN_T_UINT},
    [CLN_A_ROW_MAX] = {"row_max", CLN_T_GLOBAL},
    [CLN_A_ROW_SUM] = {"row_sum", CLN_T_GLOBAL},
    [CLN_A_B_MAX] = {"b_max", CLN_T_GLOBAL},
    [CLN_A_B_SUM] = {"b_sum", CLN_T_GLOBAL},
    [CLN_A_ROWS] = {"rows", CLN_T_ULONG},
    [CLN_A_COLS] = {"cols", CLN_T_ULONG},
    [CLN_A_EPS] = {"eps", CLN_T_FLOAT},
    [CLN_A_TEAM] = {"team", CLN_T_UINT},
    [CLN_A_ONLINE] = {"online", CLN_T_UINT},
    [CLN_A_SLICES] = {"slices", CLN_T_ULONG},
    [CLN_A_SLICE_LEN] = {"slice_len", CLN_T_ULONG},
    [CLN_A_PART] = {"part", CLN_T_GLOBAL},
    [CLN_A_MAXIMA] = {"maxima", CLN_T_GLOBAL},
    [CLN_A_WEIGHTED] = {"weighted", CLN_T_UINT},
    [CLN_A_SCRATCH] = {"scratch", CLN_T_LOCAL},
    [CLN_A_SYNC] = {"sync", CLN_T_GLOBAL},
    [CLN_A_SYNC_BASE] = {"base", CLN_T_UINT},
    [CLN_A_Q] = {"q", CLN_T_GLOBAL},
    [CLN_A_Q_OFF] = {"qoff", CLN_T_ULONG},
    [CLN_A_Q_SB] = {"qsb", CLN_T_ULONG},
    [CLN_A_Q_SH] = {"qsh", CLN_T_ULONG},
    [CLN_A_Q_SL] = {"qsl", CLN_T_ULONG},
    [CLN_A_K] = {"k", CLN_T_GLOBAL},
    [CLN_A_K_OFF] = {"koff", CLN_T_ULONG},
    [CLN_A_K_SB] = {"ksb", CLN_T_ULONG},
    [CLN_A_K_SH] = {"ksh", CLN_T_ULONG},
    [CLN_A_K_SL] = {"ksl", CLN_T_ULONG},
    [CLN_A_V] = {"v", CLN_T_GLOBAL},
    [CLN_A_V_OFF] = {"voff", CLN_T_ULONG},
    [CLN_A_V_SB] = {"vsb", CLN_T_ULONG},
    [CLN_A_V_SH] = {"vsh", CLN_T_ULONG},
    [CLN_A_V_SL] = {"vsl", CLN_T_ULONG},
    [CLN_A_OUT] = {"out", CLN_T_GLOBAL},
    [CLN_A_OUT_OFF] = {"ooff", CLN_T_ULONG},
    [CLN_A_OUT_SB] = {"osb", CLN_T_ULONG},
    [CLN_A_OUT_SH] = {"osh", CLN_T_ULONG},
    [CLN_A_OUT_SL] = {"osl", CLN_T_ULONG},
    [CLN_A_LSE] = {"lse", CLN_T_GLOBAL},
    [CLN_A_KV_LENS] = {"kv_lens", CLN_T_GLOBAL},
    [CLN_A_FLAGS] = {"flags", CLN_T_UINT},
    [CLN_A_Q_HEADS] = {"q_heads", CLN_T_UINT},
    [CLN_A_KV_HEADS] = {"kv_heads", CLN_T_UINT},
    [CLN_A_Q_LEN] = {"q_len", CLN_T_UINT},
    [CLN_A_KV_LEN] = {"kv_len", CLN_T_UINT},
    [CLN_A_HEAD_DIM] = {"head_dim", CLN_T_UINT},
    [CLN_A_SCALE] = {"scale", CLN_T_FLOAT},
    [CLN_A_QBLOCK] = {"qblock", CLN_T_UINT},
    [CLN_A_QBLOCKS] = {"qblocks", CLN_T_UINT},
    [CLN_A_CHUNKS] = {"chunks", CLN_T_UINT},
    [CLN_A_CHUNK_LEN] = {"chunk_len", CLN_T_UINT},
    [CLN_A_COL_LANES] = {"col_lanes", CLN_T_UINT},
    [CLN_A_ITEMS] = {"items", CLN_T_ULONG},
    [CLN_A_A] = {"a", CLN_T_GLOBAL},
    [CLN_A_A_OFF] = {"aoff", CLN_T_ULONG},
    [CLN_A_A_LD] = {"ald", CLN_T_ULONG},
    [CLN_A_LSE_A] = {"lse_a", CLN_T_GLOBAL},
    [CLN_A_B] = {"b", CLN_T_GLOBAL},
    [CLN_A_B_OFF] = {"boff", CLN_T_ULONG},
    [CLN_A_B_LD] = {"bld", CLN_T_ULONG},
    [CLN_A_LSE_B] = {"lse_b", CLN_T_GLOBAL},
};

/* A view's three arguments. */
#define CLN_X CLN_A_X, CLN_A_X_OFF, CLN_A_X_LD
#define CLN_Y CLN_A_Y, CLN_A_Y_OFF, CLN_A_Y_LD
#define CLN_RES CLN_A_RES, CLN_A_RES_OFF, CLN_A_RES_LD
/* An attention view's five arguments, and out's four after its buffer. */
#define CLN_ATT_VIEW(T) CLN_A_##T, CLN_A_##T##_OFF, CLN_A_##T##_SB, CLN_A_##T##_SH, CLN_A_##T##_SL
#define CLN_ATT_OUT_STRIDES CLN_A_OUT_OFF, CLN_A_OUT_SB, CLN_A_OUT_SH, CLN_A_OUT_SL

/* The lists that several kernels share, as their declarations in cl/ do. */
#define CLN_ARGS_RMSNORM                                                             \
    {CLN_X, CLN_A_GAMMA, CLN_A_HAS_GAMMA, CLN_Y, CLN_A_ROWS, CLN_A_COLS, CLN_A_EPS,    \
     CLN_A_TEAM, CLN_A_SCRATCH}
#define CLN_ARGS_ADD_RMSNORM                                                         \
    {CLN_X, CLN_RES, CLN_A_UPDATE, CLN_A_GAMMA, CLN_A_HAS_GAMMA, CLN_Y, CLN_A_ROWS,    \
     CLN_A_COLS, CLN_A_EPS, CLN_A_TEAM, CLN_A_SCRATCH}
#define CLN_ARGS_SOFTMAX                                                             \
    {CLN_X, CLN_Y, CLN_A_ROWS, CLN_A_COLS, CLN_A_TEAM, CLN_A_SCRATCH}
#define CLN_ARGS_SOFTMAX_REGISTERS                                                   \
    {CLN_X, CLN_Y, CLN_A_ROWS, CLN_A_COLS, CLN_A_ONLINE, CLN_A_TEAM, CLN_A_SCRATCH}
/* Stage one of a split plan: each work-group reduces its slice into part. */
#define CLN_ARGS_SPLIT_REDUCE                                                        \
    {CLN_X, CLN_A_COLS, CLN_A_SLICES, CLN_A_SLICE_LEN, CLN_A_PART, CLN_A_SCRATCH}

/* Which operations run a kernel, and at which stage. */
#define CLN_RMS(s) {[CLN_OP_RMSNORM] = (s)}
#define CLN_ADD_RMS(s) {[CLN_OP_ADD_RMSNORM] = (s)}
#define CLN_SOFTMAX(three_pass, online)                                              \
    {[CLN_OP_SOFTMAX_THREE_PASS] = (three_pass), [CLN_OP_SOFTMAX_ONLINE] = (online)}
#define CLN_STATS(s) {[CLN_OP_STATS] = (s)}

/* In cln_kernel_id order; the ids keep the order the kernels were added in. */
const cln_kernel_info cln_kernel_table[CLN_K_COUNT] = {
    {.id = CLN_K_RMSNORM, .name = "clnorm_rmsnorm", .variant = CLN_VAR_STREAM,
     .stage = CLN_RMS(1), .args = CLN_ARGS_RMSNORM},
    {.id = CLN_K_RMSNORM_REG, .name = "clnorm_rmsnorm_reg", .variant = CLN_VAR_REGISTERS,
     .stage = CLN_RMS(1), .args = CLN_ARGS_RMSNORM},
    {.id = CLN_K_ADD_RMSNORM, .name = "clnorm_add_rmsnorm", .variant = CLN_VAR_STREAM,
     .stage = CLN_ADD_RMS(1), .args = CLN_ARGS_ADD_RMSNORM},
    {.id = CLN_K_ADD_RMSNORM_REG, .name = "clnorm_add_rmsnorm_reg",
     .variant = CLN_VAR_REGISTERS, .stage = CLN_ADD_RMS(1), .args = CLN_ARGS_ADD_RMSNORM},
    {.id = CLN_K_SPLIT_SUM_SQUARES, .name = "clnorm_split_sum_squares",
     .variant = CLN_VAR_SPLIT, .stage = CLN_RMS(1), .args = CLN_ARGS_SPLIT_REDUCE},
    {.id = CLN_K_SPLIT_RMSNORM, .name = "clnorm_split_rmsnorm", .variant = CLN_VAR_SPLIT,
     .stage = CLN_RMS(2),
     .args = {CLN_X, CLN_A_GAMMA, CLN_A_HAS_GAMMA, CLN_Y, CLN_A_COLS, CLN_A_EPS, CLN_A_SLICES,
              CLN_A_SLICE_LEN, CLN_A_PART, CLN_A_SCRATCH}},
    {.id = CLN_K_SOFTMAX_THREE_PASS, .name = "clnorm_softmax_three_pass",
     .variant = CLN_VAR_STREAM, .stage = CLN_SOFTMAX(1, 0), .args = CLN_ARGS_SOFTMAX},
    {.id = CLN_K_SOFTMAX_ONLINE, .name = "clnorm_softmax_online", .variant = CLN_VAR_STREAM,
     .stage = CLN_SOFTMAX(0, 1), .args = CLN_ARGS_SOFTMAX},
    {.id = CLN_K_SOFTMAX_REG, .name = "clnorm_softmax_reg", .variant = CLN_VAR_REGISTERS,
     .stage = CLN_SOFTMAX(1, 1), .args = CLN_ARGS_SOFTMAX_REGISTERS},
    {.id = CLN_K_SOFTMAX_STATS, .name = "clnorm_softmax_stats", .variant = CLN_VAR_STREAM,
     .stage = CLN_STATS(1),
     .args = {CLN_X, CLN_A_ROW_MAX, CLN_A_ROW_SUM, CLN_A_ROWS, CLN_A_COLS, CLN_A_TEAM,
              CLN_A_SCRATCH}},
    {.id = CLN_K_SPLIT_STATS, .name = "clnorm_split_stats", .variant = CLN_VAR_SPLIT,
     .stage = {[CLN_OP_SOFTMAX_ONLINE] = 1, [CLN_OP_STATS] = 1},
     .args = CLN_ARGS_SPLIT_REDUCE},
    {.id = CLN_K_SPLIT_SOFTMAX, .name = "clnorm_split_softmax", .variant = CLN_VAR_SPLIT,
     .stage = CLN_SOFTMAX(3, 2),
     .args = {CLN_X, CLN_Y, CLN_A_COLS, CLN_A_SLICES, CLN_A_SLICE_LEN, CLN_A_PART,
              CLN_A_WEIGHTED, CLN_A_SCRATCH}},
    /* The only kernel that does not start with x: it merges the partials. */
    {.id = CLN_K_SPLIT_STATS_FINAL, .name = "clnorm_split_stats_final",
     .variant = CLN_VAR_SPLIT, .stage = CLN_STATS(2), .group_per_row = 1,
     .args = {CLN_A_PART, CLN_A_SLICES, CLN_A_ROW_MAX, CLN_A_ROW_SUM, CLN_A_SCRATCH}},
    {.id = CLN_K_SPLIT_MAX, .name = "clnorm_split_max", .variant = CLN_VAR_SPLIT,
     .stage = CLN_SOFTMAX(1, 0), .args = CLN_ARGS_SPLIT_REDUCE},
    /* The maxima live in the partials buffer too (cl/softmax.cl): it goes twice. */
    {.id = CLN_K_SPLIT_SUM_EXP, .name = "clnorm_split_sum_exp", .variant = CLN_VAR_SPLIT,
     .stage = CLN_SOFTMAX(2, 0),
     .args = {CLN_X, CLN_Y, CLN_A_COLS, CLN_A_SLICES, CLN_A_SLICE_LEN, CLN_A_MAXIMA,
              CLN_A_PART, CLN_A_SCRATCH}},
    {.id = CLN_K_SOFTMAX_WORDS, .name = "clnorm_softmax_words", .variant = CLN_VAR_WORDS,
     .stage = CLN_SOFTMAX(1, 1), .args = CLN_ARGS_SOFTMAX_REGISTERS},
    {.id = CLN_K_RMSNORM_WORDS, .name = "clnorm_rmsnorm_words", .variant = CLN_VAR_WORDS,
     .stage = CLN_RMS(1), .args = CLN_ARGS_RMSNORM},
    {.id = CLN_K_ADD_RMSNORM_WORDS, .name = "clnorm_add_rmsnorm_words",
     .variant = CLN_VAR_WORDS, .stage = CLN_ADD_RMS(1), .args = CLN_ARGS_ADD_RMSNORM},
    {.id = CLN_K_RMSNORM_WORDS_HALF, .name = "clnorm_rmsnorm_words_half",
     .variant = CLN_VAR_WORDS, .words_half = 1, .stage = CLN_RMS(1),
     .args = CLN_ARGS_RMSNORM},
    {.id = CLN_K_ADD_RMSNORM_WORDS_HALF, .name = "clnorm_add_rmsnorm_words_half",
     .variant = CLN_VAR_WORDS, .words_half = 1, .stage = CLN_ADD_RMS(1),
     .args = CLN_ARGS_ADD_RMSNORM},
    {.id = CLN_K_SOFTMAX_WORDS_HALF, .name = "clnorm_softmax_words_half",
     .variant = CLN_VAR_WORDS, .words_half = 1, .stage = CLN_SOFTMAX(1, 1),
     .args = CLN_ARGS_SOFTMAX_REGISTERS},
    /* The entry points' own kernels: nothing to reduce, so no scratch. */
    {.id = CLN_K_SOFTMAX_APPLY, .name = "clnorm_softmax_apply", .variant = CLN_VAR_SPLIT,
     .entry = 1,
     .args = {CLN_X, CLN_A_ROW_MAX, CLN_A_ROW_SUM, CLN_Y, CLN_A_ROWS, CLN_A_COLS,
              CLN_A_SLICES, CLN_A_SLICE_LEN, CLN_A_TEAM}},
    {.id = CLN_K_STATS_MERGE_ROWS, .name = "clnorm_stats_merge_rows",
     .variant = CLN_VAR_STREAM, .entry = 1,
     .args = {CLN_A_ROW_MAX, CLN_A_ROW_SUM, CLN_A_B_MAX, CLN_A_B_SUM, CLN_A_ROWS}},
    /* Both algorithms: the slice stays in registers, so either reads it once. */
    {.id = CLN_K_COOP_SOFTMAX, .name = "clnorm_coop_softmax", .variant = CLN_VAR_COOP,
     .stage = CLN_SOFTMAX(1, 1),
     .args = {CLN_X, CLN_Y, CLN_A_COLS, CLN_A_SLICES, CLN_A_SLICE_LEN, CLN_A_SYNC,
              CLN_A_SYNC_BASE, CLN_A_SCRATCH}},
    {.id = CLN_K_ATTENTION, .name = "clnorm_attention", .attention = 1,
     .args = {CLN_ATT_VIEW(Q), CLN_ATT_VIEW(K), CLN_ATT_VIEW(V), CLN_ATT_VIEW(OUT), CLN_A_LSE,
              CLN_A_KV_LENS, CLN_A_FLAGS, CLN_A_Q_HEADS, CLN_A_KV_HEADS, CLN_A_Q_LEN,
              CLN_A_KV_LEN, CLN_A_HEAD_DIM, CLN_A_SCALE, CLN_A_QBLOCK, CLN_A_QBLOCKS,
              CLN_A_CHUNKS, CLN_A_CHUNK_LEN, CLN_A_COL_LANES, CLN_A_PART, CLN_A_SCRATCH}},
    {.id = CLN_K_ATTENTION_REDUCE, .name = "clnorm_attention_reduce", .attention = 1,
     .args = {CLN_A_PART, CLN_A_CHUNKS, CLN_A_HEAD_DIM, CLN_A_OUT, CLN_ATT_OUT_STRIDES,
              CLN_A_LSE, CLN_A_FLAGS, CLN_A_Q_HEADS, CLN_A_Q_LEN}},
    {.id = CLN_K_ATTENTION_MERGE, .name = "clnorm_attention_merge", .attention = 1,
     .args = {CLN_A_A, CLN_A_A_OFF, CLN_A_A_LD, CLN_A_LSE_A, CLN_A_B, CLN_A_B_OFF, CLN_A_B_LD,
              CLN_A_LSE_B, CLN_Y, CLN_A_LSE, CLN_A_HEAD_DIM}},
    /* The CPU form of clnorm_attention (cl/attention_cpu.cl): no local memory. */
    {.id = CLN_K_ATTENTION_CPU, .name = "clnorm_attention_cpu", .attention = 1,
     .args = {CLN_ATT_VIEW(Q), CLN_ATT_VIEW(K), CLN_ATT_VIEW(V), CLN_ATT_VIEW(OUT), CLN_A_LSE,
              CLN_A_KV_LENS, CLN_A_FLAGS, CLN_A_Q_HEADS, CLN_A_KV_HEADS, CLN_A_Q_LEN,
              CLN_A_KV_LEN, CLN_A_HEAD_DIM, CLN_A_SCALE, CLN_A_QBLOCK, CLN_A_QBLOCKS,
              CLN_A_CHUNKS, CLN_A_CHUNK_LEN, CLN_A_ITEMS, CLN_A_PART}},
};

const char *cln_kernel_name(cln_kernel_id k)
{
    return (unsigned)k < CLN_K_COUNT ? cln_kernel_table[k].name : "?";
}

cln_kernel_id cln_kernel_find(cln_op op, cln_variant v, int words_half, int stage)
{
    if ((unsigned)op >= CLN_OP_COUNT || stage < 1) return CLN_K_COUNT;
    const int half = v == CLN_VAR_WORDS && words_half;
    for (int k = 0; k < CLN_K_COUNT; k++) {
        const cln_kernel_info *e = &cln_kernel_table[k];
        if (e->variant == v && e->words_half == half && e->stage[op] == stage)
            return (cln_kernel_id)k;
    }
    return CLN_K_COUNT;
}
