/* Embedded limits: the plan on the profiles of small GPUs (sub-groups of 8 to 128,
   work-groups of 64 to 256, 4 to 32 KiB of local memory), the plan's own launch check,
   CLNORM_EMULATE (parse, profile, and the plans a device runs under it), and the
   kernel source held to OpenCL C 1.2 without cl_khr_fp16 outside the sub-group path. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "clnorm_advanced.h"
#include "emulate.h"
#include "plan.h"
#include "source.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static cln_profile small_gpu(size_t sg, size_t max_wg, cl_ulong local, int subgroups)
{
    cln_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.device_name, sizeof p.device_name, "GPU sg%zu wg%zu local%llu%s", sg, max_wg,
             (unsigned long long)local, subgroups ? "" : " CL C 1.2");
    snprintf(p.platform_name, sizeof p.platform_name, "test platform");
    p.type = CL_DEVICE_TYPE_GPU;
    p.compute_units = 4;
    p.max_wg = max_wg;
    p.local_mem = local;
    p.pref_multiple = sg; /* a probe kernel's preferred multiple is the sub-group size */
    p.has_subgroups = subgroups;
    p.subgroup_std = subgroups ? "-cl-std=CL2.0" : "";
    p.vec = 4;
    p.best_path = subgroups ? CLN_PATH_SUBGROUP : CLN_PATH_LOCAL;
    return p;
}

static cln_limits free_limits(void)
{
    cln_limits l;
    memset(&l, 0, sizeof l);
    l.force_path = -1;
    l.force_variant = -1;
    return l;
}

/* The launch of pl stays within p and covers rows x cols; 1 when it does. */
static int within(const cln_profile *p, clnorm_dtype dt, size_t rows, size_t cols,
                  const cln_plan *pl, const char *label)
{
    int ok = CHECK(pl->wg >= 1 && pl->wg <= p->max_wg && pl->team >= 1 && pl->wg % pl->team == 0 &&
                       pl->rows_per_wg * pl->team == pl->wg,
                   "%s: wg %zu team %zu rows/wg %zu on a device of %zu work-items", label, pl->wg,
                   pl->team, pl->rows_per_wg, p->max_wg);
    ok &= CHECK(pl->local_bytes >= pl->wg * sizeof(float) && pl->local_bytes <= p->local_mem,
                "%s: %zu bytes of local memory for wg %zu, the device has %llu", label,
                pl->local_bytes, pl->wg, (unsigned long long)p->local_mem);
    ok &= CHECK(pl->path == CLN_PATH_LOCAL || (pl->path == CLN_PATH_SUBGROUP && p->has_subgroups),
                "%s: path %s", label, cln_path_name(pl->path));
    if (pl->variant == CLN_VAR_SPLIT)
        ok &= CHECK(pl->team == pl->wg && pl->slices * pl->slice_len >= cols &&
                        pl->slice_len % pl->wg == 0 && pl->groups == rows * pl->slices,
                    "%s: split wg %zu, %zu slices of %zu, %zu groups", label, pl->wg, pl->slices,
                    pl->slice_len, pl->groups);
    else
        ok &= CHECK(pl->groups * pl->rows_per_wg >= rows, "%s: %zu groups of %zu rows", label,
                    pl->groups, pl->rows_per_wg);
    if (pl->variant == CLN_VAR_REGISTERS || pl->variant == CLN_VAR_WORDS)
        ok &= CHECK(pl->team * cln_plan_reg_elems(pl, dt) >= cols,
                    "%s: %zu work-items of %zu elements for %zu columns", label, pl->team,
                    cln_plan_reg_elems(pl, dt), cols);
    return ok;
}

/* Every op, dtype and a grid of awkward lengths on small GPUs, with and without
   sub-groups, and with OpenCL C 1.2 emulated over a sub-group device. */
void test_plan_embedded(void)
{
    static const size_t sgs[] = {8, 16, 64, 128}, wgs[] = {64, 128, 256};
    static const cl_ulong locals[] = {4096, 16384, 32768};
    static const size_t rows_list[] = {1, 3, 64, 4096};
    static const size_t cols_list[] = {1, 2, 3, 7, 31, 32, 33, 64, 100, 127, 128, 129, 255, 256,
                                       257, 1000, 1023, 1024, 1025, 4096, 4097, 16384, 65537,
                                       262144, (1u << 20) + 3};
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    cln_emulation c12;
    CHECK_ST(cln_emulate_parse("clc=1.2", &c12), CLNORM_SUCCESS);
    size_t plans = 0, bad = 0, on_subgroups = 0;
    char label[400], why[256];
    for (size_t s = 0; s < COUNT_OF(sgs); s++)
        for (size_t w = 0; w < COUNT_OF(wgs); w++)
            for (size_t l = 0; l < COUNT_OF(locals); l++)
                for (int form = 0; form < 3; form++) {
                    cln_profile p = small_gpu(sgs[s], wgs[w], locals[l], form != 1);
                    if (form == 2) cln_emulate_apply(&c12, &p);
                    const cln_limits lim = free_limits();
                    for (int op = 0; op < CLN_OP_COUNT; op++)
                        for (size_t d = 0; d < COUNT_OF(dts); d++)
                            for (size_t r = 0; r < COUNT_OF(rows_list); r++)
                                for (size_t c = 0; c < COUNT_OF(cols_list); c++) {
                                    size_t rows = rows_list[r], cols = cols_list[c];
                                    cln_plan pl;
                                    why[0] = '\0';
                                    snprintf(label, sizeof label, "%s%s: %s %s %zux%zu",
                                             p.device_name, form == 2 ? " (emulated clc=1.2)" : "",
                                             cln_op_name((cln_op)op), cln_dtype_name(dts[d]), rows,
                                             cols);
                                    clnorm_status st = cln_plan_make(&p, &lim, (cln_op)op, dts[d],
                                                                     rows, cols, &pl, why, sizeof why);
                                    plans++;
                                    if (!CHECK(st == CLNORM_SUCCESS, "%s: %s (%s)", label,
                                               clnorm_status_string(st), why) ||
                                        !within(&p, dts[d], rows, cols, &pl, label)) {
                                        if (++bad > 20) return;
                                        continue;
                                    }
                                    on_subgroups += pl.path == CLN_PATH_SUBGROUP;
                                    if (form == 2)
                                        CHECK(pl.path == CLN_PATH_LOCAL, "%s: path %s under "
                                              "OpenCL C 1.2", label, cln_path_name(pl.path));
                                }
                }
    CHECK(on_subgroups > 0, "no plan of a sub-group device took the sub-group path");
    NOTE("%zu plans on small GPUs, %zu on sub-groups", plans, on_subgroups);
}

/* cln_plan_check, which every plan ends with, refuses launches over the limits. */
static void check_plan_check(void)
{
    cln_profile p = small_gpu(16, 128, 4096, 0);
    cln_limits lim = free_limits();
    cln_plan pl;
    char why[256];
    if (!CHECK_ST(cln_plan_make(&p, &lim, CLN_OP_SOFTMAX_ONLINE, CLNORM_F32, 64, 1000, &pl, why,
                                sizeof why), CLNORM_SUCCESS))
        return;
    CHECK_ST(cln_plan_check(&p, &lim, &pl, why, sizeof why), CLNORM_SUCCESS);
    struct { const char *what; cln_plan pl; cln_limits lim; const char *named; } bad[6];
    for (int i = 0; i < 6; i++) bad[i].pl = pl, bad[i].lim = lim;
    bad[0].what = "wg over the device", bad[0].pl.wg = 256, bad[0].pl.team = 256, bad[0].named = "128";
    bad[1].what = "wg over the limit", bad[1].lim.max_wg = 16, bad[1].pl.wg = 32,
    bad[1].pl.team = 32, bad[1].named = "16";
    bad[2].what = "local over the device", bad[2].pl.local_bytes = 4097, bad[2].named = "4096";
    bad[3].what = "local over the limit", bad[3].lim.max_local = 1024,
    bad[3].pl.local_bytes = 2048, bad[3].named = "1024";
    bad[4].what = "sub-group path on a device without", bad[4].pl.path = CLN_PATH_SUBGROUP,
    bad[4].named = "subgroup";
    bad[5].what = "team not dividing", bad[5].pl.wg = 96, bad[5].pl.team = 64, bad[5].named = "96";
    for (int i = 0; i < 6; i++) {
        why[0] = '\0';
        clnorm_status st = cln_plan_check(&p, &bad[i].lim, &bad[i].pl, why, sizeof why);
        CHECK(st == CLNORM_UNSUPPORTED && strstr(why, bad[i].named),
              "%s: %s, why \"%s\"; expected UNSUPPORTED naming %s", bad[i].what,
              clnorm_status_string(st), why, bad[i].named);
    }
}

void test_emulate(void)
{
    static const struct {
        const char *text;
        size_t wg;
        cl_ulong local;
        int fp16, clc;
    } good[] = {
        {"", 0, 0, -1, 0},
        {"wg=64,local=4096,fp16=0,clc=1.2", 64, 4096, 0, 12},
        {"local=16k", 0, 16384, -1, 0},
        {"local=32K,wg=256", 256, 32768, -1, 0},
        {"clc=3.0,fp16=1", 0, 0, 1, 30},
        {"wg=128,", 128, 0, -1, 0},
    };
    for (size_t i = 0; i < COUNT_OF(good); i++) {
        cln_emulation e;
        if (CHECK_ST(cln_emulate_parse(good[i].text, &e), CLNORM_SUCCESS))
            CHECK(e.max_wg == good[i].wg && e.local_mem == good[i].local && e.fp16 == good[i].fp16 &&
                      e.clc_major * 10 + e.clc_minor == good[i].clc,
                  "\"%s\": wg %zu local %llu fp16 %d clc %d.%d", good[i].text, e.max_wg,
                  (unsigned long long)e.local_mem, e.fp16, e.clc_major, e.clc_minor);
    }
    static const struct { const char *text, *named; } bad[] = {
        {"wg=abc", "wg=abc"},  {"wg=0", "wg=0"},         {"local=-4", "local=-4"},
        {"local=k", "local=k"}, {"fp16=2", "fp16=2"},    {"clc=1.1", "clc=1.1"},
        {"clc=2", "clc=2"},     {"wg=64,size=3", "size=3"}, {",wg=64", "item \"\""},
        {"wg", "item \"wg\""},  {"wg=64x", "wg=64x"},    {"wg=99999999999999999999", "wg=9"},
    };
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        cln_emulation e;
        clnorm_status st = cln_emulate_parse(bad[i].text, &e);
        CHECK(st == CLNORM_INVALID_ARGUMENT && strstr(clnorm_last_error(), bad[i].named) &&
                  strstr(clnorm_last_error(), "CLNORM_EMULATE"),
              "\"%s\": %s, \"%s\"; expected INVALID_ARGUMENT naming CLNORM_EMULATE and %s",
              bad[i].text, clnorm_status_string(st), clnorm_last_error(), bad[i].named);
    }
    /* Limits only lower; OpenCL C 1.2 drops sub-groups, not NVIDIA's shuffles. */
    cln_emulation e;
    CHECK_ST(cln_emulate_parse("wg=64,local=16k,clc=1.2,fp16=0", &e), CLNORM_SUCCESS);
    cln_profile sg = small_gpu(32, 1024, 65536, 1), tiny = small_gpu(8, 32, 2048, 0),
                nv = small_gpu(32, 1024, 49152, 0);
    nv.nv = 1, nv.warp = 32, nv.has_nv_shuffle = 1, nv.best_path = CLN_PATH_NV;
    cln_emulate_apply(&e, &sg);
    cln_emulate_apply(&e, &tiny);
    cln_emulate_apply(&e, &nv);
    CHECK(sg.max_wg == 64 && sg.local_mem == 16384 && !sg.has_subgroups &&
              sg.best_path == CLN_PATH_LOCAL && !*sg.subgroup_std,
          "sub-group GPU under emulation: wg %zu local %llu subgroups %d path %d", sg.max_wg,
          (unsigned long long)sg.local_mem, sg.has_subgroups, (int)sg.best_path);
    CHECK(tiny.max_wg == 32 && tiny.local_mem == 2048, "a device already smaller: wg %zu local %llu",
          tiny.max_wg, (unsigned long long)tiny.local_mem);
    CHECK(nv.best_path == CLN_PATH_NV && nv.max_wg == 64, "NVIDIA under emulation: path %d wg %zu",
          (int)nv.best_path, nv.max_wg);
    check_plan_check();
}

/* ---- The kernel source: OpenCL C 1.2 and no cl_khr_fp16 -------------------------------- */
/* The source without comments, so that prose may name what code may not use. */
static char *strip_comments(const char *s, size_t len)
{
    char *out = malloc(len + 1), *o = out;
    for (size_t i = 0; i < len;) {
        if (s[i] == '/' && i + 1 < len && s[i + 1] == '*') {
            const char *e = strstr(s + i + 2, "*/");
            size_t end = e ? (size_t)(e - s) + 2 : len;
            for (; i < end; i++) if (s[i] == '\n') *o++ = '\n';
        } else if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n') i++;
        } else {
            *o++ = s[i++];
        }
    }
    *o = '\0';
    return out;
}

static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether the identifier at p (of length n) in text is a whole token. */
static int whole(const char *text, const char *p, size_t n)
{
    return (p == text || !ident_char(p[-1])) && !ident_char(p[n]);
}

/* The OpenCL C 2.0 names a 1.2 compiler lacks, and the sub-group names, which only the
   sub-group path (CLN_PATH == 1) may use; float16 only as pointers (vload_half). */
void test_kernel_source_c12(void)
{
    static const char *const v20[] = {"generic", "__generic", "work_group_reduce_add",
                                      "work_group_reduce_max", "work_group_broadcast",
                                      "atomic_load", "atomic_store", "atomic_fetch_add",
                                      "memory_scope_device", "enqueue_kernel", "ndrange_t",
                                      "get_enqueued_local_size", "to_global", "to_local",
                                      "pipe", "__opencl_c_generic_address_space"};
    static const char *const sg_names[] = {"sub_group_reduce_add", "sub_group_reduce_max",
                                           "get_sub_group_size", "get_num_sub_groups",
                                           "get_sub_group_id", "get_sub_group_local_id",
                                           "sub_group_broadcast", "cl_khr_subgroups"};
    char *src = NULL;
    size_t len = 0;
    t_config("CLNORM_KERNEL_DIR", NULL); /* the embedded source */
    if (!CHECK_ST(cln_source_get(&src, &len), CLNORM_SUCCESS)) return;
    char *text = strip_comments(src, len);
    free(src);
    CHECK(!strstr(text, "cl_khr_fp16"), "the kernels name cl_khr_fp16");
    CHECK(!strstr(text, "cl_khr_int64") && !strstr(text, "cl_khr_fp64"),
          "the kernels enable a 64-bit extension");
    /* The half type and its aliases only as pointers: the aliases are typedef names. */
    char alias[8][64];
    size_t nalias = 0;
    snprintf(alias[nalias++], sizeof alias[0], "half");
    for (const char *t = text; (t = strstr(t, "typedef half ")) != NULL && nalias < 8; t += 13) {
        size_t n = 0;
        while (ident_char(t[13 + n]) && n < 63) n++;
        snprintf(alias[nalias++], sizeof alias[0], "%.*s", (int)n, t + 13);
    }
    size_t uses = 0;
    for (size_t a = 0; a < nalias; a++) {
        const size_t n = strlen(alias[a]);
        for (const char *t = text; (t = strstr(t, alias[a])) != NULL; t += n) {
            if (!whole(text, t, n)) continue;
            const char *q = t + n;
            while (*q == ' ' || *q == '\t') q++;
            /* A typedef's own line (of any dtype's alias), or sizeof, are no values. */
            const char *bol = t;
            while (bol > text && bol[-1] != '\n') bol--;
            const int typedef_line = !strncmp(bol, "typedef ", 8);
            const int size_of = t >= text + 7 && !strncmp(t - 7, "sizeof(", 7);
            uses++;
            CHECK(*q == '*' || typedef_line || size_of,
                  "%s used as a value (needs cl_khr_fp16): \"%.60s\"", alias[a], t);
        }
    }
    /* Preprocessor regions: inside "#if CLN_PATH == 1" (or its #elif) the sub-group
       names are allowed. */
    int stack[64], depth = 0;
    size_t sg_uses = 0;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        const char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#') {
            const char *p1 = strstr(s, "CLN_PATH == 1");
            const int path1 = p1 && (size_t)(p1 - line) < ll;
            if (!strncmp(s, "#if", 3) && depth < 64) stack[depth++] = path1;
            else if (!strncmp(s, "#elif", 5) && depth) stack[depth - 1] = path1;
            else if (!strncmp(s, "#else", 5) && depth) stack[depth - 1] = 0;
            else if (!strncmp(s, "#endif", 6) && depth) depth--;
        }
        int in_sg = 0;
        for (int i = 0; i < depth; i++) in_sg |= stack[i];
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(ll < sizeof buf - 1 ? ll : sizeof buf - 1), line);
        for (size_t k = 0; k < COUNT_OF(v20); k++)
            for (const char *t = buf; (t = strstr(t, v20[k])) != NULL; t++)
                if (whole(buf, t, strlen(v20[k])))
                    t_fail(__FILE__, __LINE__, "OpenCL C 2.0 name %s in \"%s\"", v20[k], buf);
        for (size_t k = 0; k < COUNT_OF(sg_names); k++)
            for (const char *t = buf; (t = strstr(t, sg_names[k])) != NULL; t++)
                if (whole(buf, t, strlen(sg_names[k]))) {
                    sg_uses++;
                    CHECK(in_sg, "%s outside the sub-group path: \"%s\"", sg_names[k], buf);
                }
        line = eol ? eol + 1 : line + ll;
    }
    CHECK(depth == 0, "unbalanced #if/#endif in the program source (%d open)", depth);
    CHECK(uses > 0 && sg_uses > 0, "the scan found %zu uses of half and %zu of sub-groups; "
          "it scanned nothing", uses, sg_uses);
    NOTE("%zu uses of half (all pointers), %zu sub-group names (all in CLN_PATH == 1)", uses,
         sg_uses);
    free(text);
}

/* ---- A device under CLNORM_EMULATE: its profile, and every plan within it ------------- */
void test_emulated_limits(void)
{
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS)) return;
    size_t dev_wg = 0;
    cl_ulong dev_local = 0;
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev_wg, &dev_wg, NULL));
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof dev_local, &dev_local, NULL));
    const char *text = getenv("CLNORM_EMULATE");
    cln_emulation e;
    if (!CHECK_ST(cln_emulate_parse(text, &e), CLNORM_SUCCESS)) return;
    CHECK(info.max_work_group <= dev_wg && info.local_mem <= dev_local,
          "profile wg %zu local %llu above the device's %zu, %llu", info.max_work_group,
          (unsigned long long)info.local_mem, dev_wg, (unsigned long long)dev_local);
    if (e.max_wg)
        CHECK(info.max_work_group <= e.max_wg, "CLNORM_EMULATE=%s: profile wg %zu", text,
              info.max_work_group);
    if (e.local_mem)
        CHECK(info.local_mem == (e.local_mem < dev_local ? e.local_mem : dev_local),
              "CLNORM_EMULATE=%s: profile local memory %llu", text,
              (unsigned long long)info.local_mem);
    if (e.clc_major == 1)
        CHECK(!info.subgroups && info.reduction != CLNORM_REDUCTION_SUBGROUP,
              "CLNORM_EMULATE=%s: sub-groups %d, reduction %s", text, info.subgroups,
              clnorm_reduction_name(info.reduction));
    NOTE("CLNORM_EMULATE=%s: work-groups of %zu, %llu bytes of local memory, %s path",
         text ? text : "(unset)", info.max_work_group, (unsigned long long)info.local_mem,
         clnorm_reduction_name(info.reduction));

    /* Every op and dtype on awkward lengths, the library's plan and a forced split:
       results against float64, and the plan that ran within the profile. */
    static const size_t cols_list[] = {1, 7, 64, 65, 257, 1000, 4097, 70001};
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    size_t calls = 0;
    for (int split = 0; split < 2; split++)
        for (size_t c = 0; c < COUNT_OF(cols_list); c++)
            for (size_t d = 0; d < COUNT_OF(dts); d++)
                for (int op = 0; op < OP_COUNT; op++) {
                    size_t cols = cols_list[c], rows = cols > 4097 ? 2 : 1 + rng_below(&R, 9);
                    if (split && cols < 1000) continue;
                    if (split) plan_set("split", 0, 0, 3);
                    op_args a;
                    float *x, *g;
                    make_problem(&R, &a, (top)op, rows, cols, &x, &g);
                    a.dt = dts[d];
                    clnorm_plan_info pl;
                    memset(&pl, 0, sizeof pl);
                    if (check_op(&a, CLNORM_SUCCESS) == CLNORM_SUCCESS &&
                        CHECK(clnorm_last_plan(&pl), "no last plan")) {
                        char label[400];
                        op_label(&a, label, sizeof label);
                        CHECK(pl.work_group >= 1 && pl.work_group <= info.max_work_group &&
                                  pl.local_bytes <= info.local_mem &&
                                  (info.subgroups || pl.reduction != CLNORM_REDUCTION_SUBGROUP),
                              "%s [%s]: work-group %zu, %zu bytes of local memory, %s path; the "
                              "profile allows %zu, %llu", label, plan_now(), pl.work_group,
                              pl.local_bytes, clnorm_reduction_name(pl.reduction),
                              info.max_work_group, (unsigned long long)info.local_mem);
                    }
                    plan_clear();
                    free(x);
                    free(g);
                    calls++;
                }
    /* A forced work-group over the (emulated) limit is refused, naming it. */
    plan_set("stream", info.max_work_group * 2, 0, 0);
    {
        op_args a;
        float *x, *g;
        make_problem(&R, &a, OP_SOFTMAX_ONLINE, 3, 100, &x, &g);
        char want[32];
        snprintf(want, sizeof want, "%zu", info.max_work_group * 2);
        if (check_op(&a, CLNORM_INVALID_ARGUMENT) == CLNORM_INVALID_ARGUMENT)
            CHECK(strstr(clnorm_last_error(), want) != NULL, "refusal \"%s\" does not name %s",
                  clnorm_last_error(), want);
        free(x);
        free(g);
    }
    plan_clear();
    NOTE("%zu calls within the profile's limits", calls);
}
