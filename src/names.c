/* The names of the plan's vocabulary (operations, variants, reduction paths,
   element types) as tools, traces, messages and tuning files write them, and the
   size of an element. Pure: no device, no state. */
#include "types.h"

const char *cln_op_name(cln_op op)
{
    switch (op) {
    case CLN_OP_RMSNORM: return "rmsnorm";
    case CLN_OP_SOFTMAX_THREE_PASS: return "softmax-3pass";
    case CLN_OP_SOFTMAX_ONLINE: return "softmax-online";
    case CLN_OP_STATS: return "softmax-stats";
    case CLN_OP_ADD_RMSNORM: return "add-rmsnorm";
    case CLN_OP_SOFTMAX_AUTO: return "softmax-auto";
    }
    return "?";
}

const char *cln_variant_name(cln_variant v)
{
    switch (v) {
    case CLN_VAR_STREAM: return "stream";
    case CLN_VAR_REGISTERS: return "reg";
    case CLN_VAR_SPLIT: return "split";
    case CLN_VAR_WORDS: return "words";
    case CLN_VAR_COOP: return "coop";
    }
    return "?";
}

const char *cln_path_name(cln_path p)
{
    switch (p) {
    case CLN_PATH_LOCAL: return "local";
    case CLN_PATH_SUBGROUP: return "subgroup";
    case CLN_PATH_NV: return "nv-shuffle";
    }
    return "?";
}

const char *cln_dtype_name(clnorm_dtype d)
{
    switch (d) {
    case CLNORM_F32: return "f32";
    case CLNORM_F16: return "f16";
    case CLNORM_BF16: return "bf16";
    }
    return "?";
}

size_t cln_dtype_size(clnorm_dtype d) { return d == CLNORM_F32 ? 4 : 2; }
