/* kernel_table: the table of kernels (src/kernels.c) against the kernels of cl/, read
   from the program source the library embeds: every kernel of the one is in the
   other, under its own CLN_ONLY guard, with the same arguments in the same order (type
   and name). Also the table's choice of kernels: one kernel per (operation, variant,
   half form, stage), the stages of each plan numbered from one.
   kernel_args: the same against what the device's compiler reports for the built
   program (clGetKernelArgInfo), where it reports argument information. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "build_options.h"
#include "kernels.h"
#include "profile.h"
#include "source.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARSED 64

typedef struct parsed_kernel {
    char name[64];
    size_t nargs;
    cln_arg_type type[CLN_KERNEL_ARGS_MAX];
    char arg[CLN_KERNEL_ARGS_MAX][32];
    int guarded; /* the #if just before it names CLN_ONLY_<name> */
} parsed_kernel;

/* The source with comments removed and backslash-newlines joined, so that a macro's
   definition is one line. */
static char *logical_source(const char *src, size_t len)
{
    char *out = malloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '/' && i + 1 < len && src[i + 1] == '*') {
            const char *end = strstr(src + i + 2, "*/");
            i = end ? (size_t)(end - src) + 1 : len;
            out[o++] = ' ';
        } else if (src[i] == '/' && i + 1 < len && src[i + 1] == '/') {
            while (i < len && src[i] != '\n') i++;
            if (i < len) out[o++] = '\n';
        } else if (src[i] == '\\' && i + 1 < len && src[i + 1] == '\n') {
            i++;
        } else {
            out[o++] = src[i];
        }
    }
    out[o] = '\0';
    return out;
}

static const char *skip_space(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    return s;
}

static int is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Reads "<type> <name>" of one parameter; 0 where the type is none of the five. */
static int parse_param(const char *p, size_t n, cln_arg_type *type, char *name, size_t cap)
{
    char buf[160];
    if (n >= sizeof buf) return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    size_t e = n;
    while (e && !is_ident(buf[e - 1])) e--;
    size_t b = e;
    while (b && is_ident(buf[b - 1])) b--;
    if (e == b || e - b >= cap) return 0;
    memcpy(name, buf + b, e - b);
    name[e - b] = '\0';
    buf[b] = '\0';
    const int ptr = strchr(buf, '*') != NULL;
    const char *t = skip_space(buf);
    if (strstr(buf, "__global") && ptr) *type = CLN_T_GLOBAL;
    else if (strstr(buf, "__local") && ptr) *type = CLN_T_LOCAL;
    else if (ptr) return 0;
    else if (!strncmp(t, "ulong", 5) && !is_ident(t[5])) *type = CLN_T_ULONG;
    else if (!strncmp(t, "uint", 4) && !is_ident(t[4])) *type = CLN_T_UINT;
    else if (!strncmp(t, "float", 5) && !is_ident(t[5])) *type = CLN_T_FLOAT;
    else return 0;
    return 1;
}

/* Parses "(params)" at s into k; returns 0 on a parameter it cannot read. */
static int parse_params(const char *s, parsed_kernel *k)
{
    s = skip_space(s);
    if (*s != '(') return 0;
    const char *end = strchr(s, ')');
    if (!end) return 0;
    k->nargs = 0;
    for (const char *p = s + 1; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if (k->nargs == CLN_KERNEL_ARGS_MAX ||
            !parse_param(p, (size_t)(stop - p), &k->type[k->nargs], k->arg[k->nargs],
                         sizeof k->arg[0]))
            return 0;
        k->nargs++;
        p = stop + 1;
    }
    return 1;
}

/* Whether the logical line `guard` is "#if !CLN_ONLY || ..." naming CLN_ONLY_<name>. */
static int guard_names(const char *guard, size_t glen, const char *name)
{
    char want[96];
    snprintf(want, sizeof want, "CLN_ONLY_%s", name);
    if (strncmp(guard, "#if !CLN_ONLY ||", 16) != 0) return 0;
    for (const char *p = guard; (p = strstr(p, want)) && p < guard + glen; p++)
        if (!is_ident(p[strlen(want)])) return 1;
    return 0;
}

/* A macro that defines kernels: its name, its parameter's name, and its body. */
typedef struct kernel_macro {
    char name[64], param[32];
    const char *body;
    size_t body_len;
} kernel_macro;

/* Every kernel of the source, macro families expanded. Returns the count, or -1 with
   a failure recorded. */
static int parse_kernels(const char *text, parsed_kernel *out, size_t cap)
{
    kernel_macro macros[8];
    size_t nmacro = 0;
    int n = 0;
    const char *prev = NULL; /* the last non-blank line before this one */
    size_t prev_len = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *s = skip_space(line);
        const char *kw = strstr(line, "__kernel void ");
        if (kw && kw >= line + len) kw = NULL;
        if (!strncmp(s, "#define ", 8) && kw) {
            /* #define NAME(PARAM, ...) ... __kernel void prefix##PARAM(...) ... */
            kernel_macro *m = &macros[nmacro < 8 ? nmacro++ : 7];
            if (sscanf(s + 8, "%63[A-Za-z0-9_](%31[A-Za-z0-9_]", m->name, m->param) != 2) {
                t_fail(__FILE__, __LINE__, "cannot read the kernel macro at \"%.60s\"", s);
                return -1;
            }
            m->body = s;
            m->body_len = len - (size_t)(s - line);
        } else if (kw) {
            if ((size_t)n == cap) return -1;
            parsed_kernel *k = &out[n++];
            memset(k, 0, sizeof *k);
            const char *p = kw + strlen("__kernel void ");
            size_t nl2 = 0;
            while (is_ident(p[nl2]) && nl2 + 1 < sizeof k->name) nl2++;
            memcpy(k->name, p, nl2);
            if (!parse_params(p + nl2, k)) {
                t_fail(__FILE__, __LINE__, "cannot read the parameters of %s", k->name);
                return -1;
            }
            k->guarded = prev && guard_names(prev, prev_len, k->name);
        } else {
            /* An invocation of a kernel macro: NAME(ARG, ...) at the start of a line. */
            for (size_t i = 0; i < nmacro; i++) {
                size_t ml = strlen(macros[i].name);
                if (strncmp(s, macros[i].name, ml) != 0 || s[ml] != '(') continue;
                char arg[32];
                if (sscanf(s + ml + 1, " %31[A-Za-z0-9_]", arg) != 1) return -1;
                char token[40];
                snprintf(token, sizeof token, "##%s", macros[i].param);
                const char *b = macros[i].body, *bend = b + macros[i].body_len;
                for (const char *q = b; (q = strstr(q, "__kernel void ")) && q < bend; q++) {
                    if ((size_t)n == cap) return -1;
                    parsed_kernel *k = &out[n++];
                    memset(k, 0, sizeof *k);
                    const char *p = q + strlen("__kernel void ");
                    const char *tok = strstr(p, token);
                    const char *paren = strchr(p, '(');
                    if (!tok || !paren || tok > paren) {
                        t_fail(__FILE__, __LINE__, "kernel name in macro %s not prefix##%s",
                               macros[i].name, macros[i].param);
                        return -1;
                    }
                    snprintf(k->name, sizeof k->name, "%.*s%s", (int)(tok - p), p, arg);
                    if (!parse_params(paren, k)) {
                        t_fail(__FILE__, __LINE__, "cannot read the parameters of %s", k->name);
                        return -1;
                    }
                    k->guarded = prev && guard_names(prev, prev_len, k->name);
                }
            }
        }
        if (*s && s < line + len) {
            prev = s;
            prev_len = len - (size_t)(s - line);
        }
        line += len + (nl != NULL);
    }
    return n;
}

static const char *type_name(cln_arg_type t)
{
    switch (t) {
    case CLN_T_GLOBAL: return "__global pointer";
    case CLN_T_ULONG: return "ulong";
    case CLN_T_UINT: return "uint";
    case CLN_T_FLOAT: return "float";
    case CLN_T_LOCAL: return "__local pointer";
    }
    return "?";
}

static size_t table_nargs(const cln_kernel_info *e)
{
    size_t n = 0;
    while (n < CLN_KERNEL_ARGS_MAX && e->args[n] != CLN_A_END) n++;
    return n;
}

/* The operations a plan resolves to (never AUTO) and the variants. */
static const cln_op ops[] = {CLN_OP_RMSNORM, CLN_OP_SOFTMAX_THREE_PASS, CLN_OP_SOFTMAX_ONLINE,
                             CLN_OP_STATS, CLN_OP_ADD_RMSNORM};

static void check_choice(void)
{
    int used[CLN_K_COUNT] = {0};
    for (size_t o = 0; o < COUNT_OF(ops); o++) {
        for (int v = 0; v < CLN_VAR_COUNT; v++) {
            for (int half = 0; half <= (v == CLN_VAR_WORDS); half++) {
                /* No two kernels answer one question. */
                for (int s = 1; s <= 3; s++) {
                    int hits = 0;
                    for (int k = 0; k < CLN_K_COUNT; k++) {
                        const cln_kernel_info *e = &cln_kernel_table[k];
                        hits += (int)e->variant == v && e->words_half == half &&
                                e->stage[ops[o]] == s;
                    }
                    CHECK(hits <= 1, "%d kernels run stage %d of %s, %s%s", hits, s,
                          cln_op_name(ops[o]), cln_variant_name((cln_variant)v),
                          half ? " (half)" : "");
                }
                cln_kernel_id k[4];
                for (int s = 1; s <= 3; s++)
                    k[s] = cln_kernel_find(ops[o], (cln_variant)v, half, s);
                k[0] = cln_kernel_find(ops[o], (cln_variant)v, half, 0);
                /* Which operations lack a variant is the plan's rule too (plan.c). */
                const int absent = (ops[o] == CLN_OP_STATS && (v == CLN_VAR_REGISTERS ||
                                                              v == CLN_VAR_WORDS)) ||
                                   (ops[o] == CLN_OP_ADD_RMSNORM && v == CLN_VAR_SPLIT) ||
                                   (v == CLN_VAR_COOP && ops[o] != CLN_OP_SOFTMAX_THREE_PASS &&
                                    ops[o] != CLN_OP_SOFTMAX_ONLINE);
                const int stages = absent ? 0 : v != CLN_VAR_SPLIT ? 1
                                              : ops[o] == CLN_OP_SOFTMAX_THREE_PASS ? 3 : 2;
                for (int s = 0; s <= 3; s++)
                    CHECK((k[s] != CLN_K_COUNT) == (s >= 1 && s <= stages),
                          "%s, %s%s: stage %d is %s, expected %d stages",
                          cln_op_name(ops[o]), cln_variant_name((cln_variant)v),
                          half ? " (half)" : "", s, cln_kernel_name(k[s]), stages);
                for (int s = 1; s <= 3; s++) {
                    if (k[s] == CLN_K_COUNT) continue;
                    used[k[s]] = 1;
                    const cln_kernel_info *e = &cln_kernel_table[k[s]];
                    CHECK((int)e->variant == v && e->words_half == half &&
                              e->stage[ops[o]] == s,
                          "cln_kernel_find gave %s for stage %d of %s", e->name, s,
                          cln_op_name(ops[o]));
                }
            }
        }
    }
    /* An entry point's own kernel, and an attention kernel (the attention plan's), is
       chosen by no operation's stage; every other kernel by some plan. */
    for (int k = 0; k < CLN_K_COUNT; k++) {
        const cln_kernel_info *e = &cln_kernel_table[k];
        int stages = 0;
        for (int o = 0; o < CLN_OP_COUNT; o++) stages += e->stage[o] != 0;
        if (e->entry)
            CHECK(!used[k] && !stages && !e->group_per_row,
                  "%s is an entry point's kernel, yet an operation runs it", e->name);
        else if (e->attention)
            CHECK(!used[k] && !stages, "%s: an attention kernel that a rows plan chooses",
                  e->name);
        else
            CHECK(used[k], "no plan chooses %s", e->name);
    }
    /* Only the last stage of a split plan has group_per_row (ops.c launches it with a
       work-group per row, after the stages that share the plan's groups). */
    for (int k = 0; k < CLN_K_COUNT; k++) {
        const cln_kernel_info *e = &cln_kernel_table[k];
        if (e->group_per_row)
            CHECK(e->variant == CLN_VAR_SPLIT && e->stage[CLN_OP_STATS] == 2,
                  "%s is launched a work-group per row", e->name);
    }
}

/* Every __local in cl/ is a pointer (a kernel's scratch argument or a view of it): a
   kernel-scope __local variable breaks PoCL 5, and PoCL rejects one in a helper
   (docs/DESIGN.md, 'Driver quirks'). After the keyword and the words of its type, a
   '*' must follow, where a variable's name and ';' would. A cast to a __local pointer
   names a 4-byte scalar: the scratch is a float argument, aligned for floats only,
   and a vector access through it faulted on NVIDIA. */
static void check_no_local_variables(const char *text)
{
    size_t found = 0;
    for (const char *s = strstr(text, "__local"); s; s = strstr(s + 7, "__local")) {
        if (s > text && is_ident(s[-1])) continue;
        const char *p = s + 7;
        if (is_ident(*p)) continue; /* a longer name */
        const char *type = NULL;
        size_t type_len = 0;
        for (;;) {
            p = skip_space(p);
            if (!is_ident(*p)) break;
            const char *w = p;
            while (is_ident(*p)) p++;
            if (strncmp(w, "const", 5) || p - w != 5) type = w, type_len = (size_t)(p - w);
        }
        found++;
        const char *line = s;
        while (line > text && line[-1] != '\n') line--;
        const char *eol = strchr(s, '\n');
        int shown = eol ? (int)(eol - line) : (int)strlen(line);
        CHECK(*p == '*', "a __local variable in cl/ (every __local must be a pointer): %.*s",
              shown > 160 ? 160 : shown, line);
        const char *b = s;
        while (b > text && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (b > text && b[-1] == '(' && *p == '*') {
            static const char *const scalars[] = {"float", "int", "uint"};
            int ok = 0;
            for (size_t i = 0; i < COUNT_OF(scalars); i++)
                ok |= type && type_len == strlen(scalars[i]) && !strncmp(type, scalars[i], type_len);
            CHECK(ok, "a cast to a __local pointer of %.*s in cl/ (the scratch is aligned for "
                  "floats only: cast to float, int or uint): %.*s", (int)type_len,
                  type ? type : "", shown > 160 ? 160 : shown, line);
        }
    }
    CHECK(found > 0, "no __local found in the program source");
}

void test_kernel_table(void)
{
    for (int k = 0; k < CLN_K_COUNT; k++) {
        const cln_kernel_info *e = &cln_kernel_table[k];
        CHECK(e->id == (cln_kernel_id)k && e->name && !strncmp(e->name, "clnorm_", 7),
              "table entry %d: id %d, name %s", k, (int)e->id, e->name ? e->name : "(none)");
        CHECK(table_nargs(e) < CLN_KERNEL_ARGS_MAX, "%s: its list has no end", e->name);
        for (int j = 0; j < k; j++)
            CHECK(strcmp(e->name, cln_kernel_table[j].name) != 0, "%s is in the table twice",
                  e->name);
    }
    for (int a = 1; a < CLN_A_COUNT; a++)
        CHECK(cln_arg_descs[a].name && *cln_arg_descs[a].name, "argument kind %d has no name", a);

    char *src = NULL;
    size_t len = 0;
    t_config("CLNORM_KERNEL_DIR", NULL); /* the embedded source */
    if (!CHECK_ST(cln_source_get(&src, &len), CLNORM_SUCCESS)) return;
    char *text = logical_source(src, len);
    free(src);
    parsed_kernel *pk = calloc(MAX_PARSED, sizeof *pk);
    int n = parse_kernels(text, pk, MAX_PARSED);
    check_no_local_variables(text);
    free(text);
    CHECK(n > 0, "no __kernel found in the program source (%d)", n);
    NOTE("%d kernels in cl/, %d in the table", n, CLN_K_COUNT);
    for (int i = 0; i < n; i++) {
        const parsed_kernel *p = &pk[i];
        CHECK(p->guarded, "%s is not right after an \"#if !CLN_ONLY || ... CLN_ONLY_%s\" line",
              p->name, p->name);
        int k = 0;
        while (k < CLN_K_COUNT && strcmp(cln_kernel_table[k].name, p->name)) k++;
        if (!CHECK(k < CLN_K_COUNT, "kernel %s of cl/ is not in the table (src/kernels.c)",
                   p->name))
            continue;
        const cln_kernel_info *e = &cln_kernel_table[k];
        const size_t tn = table_nargs(e);
        if (!CHECK(tn == p->nargs, "%s: the table lists %zu arguments, cl/ declares %zu",
                   p->name, tn, p->nargs))
            continue;
        for (size_t a = 0; a < tn; a++) {
            const cln_arg_desc *d = &cln_arg_descs[e->args[a]];
            CHECK(d->type == p->type[a] && !strcmp(d->name, p->arg[a]),
                  "%s, argument %zu: the table has %s %s, cl/ declares %s %s", p->name, a,
                  type_name(d->type), d->name, type_name(p->type[a]), p->arg[a]);
        }
    }
    for (int k = 0; k < CLN_K_COUNT; k++) {
        int found = 0;
        for (int i = 0; i < n; i++) found |= !strcmp(pk[i].name, cln_kernel_table[k].name);
        CHECK(found, "table entry %s is no kernel of cl/", cln_kernel_table[k].name);
    }
    free(pk);
    check_choice();
}

/* ---- kernel_args: the compiler's view ------------------------------------------------ */
void test_kernel_args(void)
{
    const cln_profile *prof;
    if (!CHECK_ST(cln_profile_get(T.dev, &prof), CLNORM_SUCCESS)) return;
    char *src = NULL;
    size_t len = 0;
    if (!CHECK_ST(cln_source_get(&src, &len), CLNORM_SUCCESS)) return;
    char opts[2048];
    cln_build_options(prof, CLNORM_F32, CLN_PATH_LOCAL, opts, sizeof opts - 32);
    strcat(opts, " -cl-kernel-arg-info");
    cl_int err;
    const char *srcs[1] = {src};
    cl_program prog = clCreateProgramWithSource(T.ctx, 1, srcs, &len, &err);
    free(src);
    if (!CHECK_CL(err)) return;
    err = clBuildProgram(prog, 1, &T.dev, opts, NULL, NULL);
    if (!CHECK(err == CL_SUCCESS, "clBuildProgram(%s): %d", opts, (int)err)) {
        clReleaseProgram(prog);
        return;
    }
    for (int k = 0; k < CLN_K_COUNT; k++) {
        const cln_kernel_info *e = &cln_kernel_table[k];
        cl_kernel kern = clCreateKernel(prog, e->name, &err);
        if (!CHECK(err == CL_SUCCESS, "clCreateKernel(%s): %d", e->name, (int)err)) continue;
        cl_uint nargs = 0;
        CHECK_CL(clGetKernelInfo(kern, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL));
        const size_t tn = table_nargs(e);
        CHECK(nargs == tn, "%s: the table lists %zu arguments, the compiler reports %u",
              e->name, tn, (unsigned)nargs);
        for (cl_uint a = 0; a < nargs && a < tn; a++) {
            const cln_arg_desc *d = &cln_arg_descs[e->args[a]];
            char name[64] = "", tname[64] = "";
            cl_kernel_arg_address_qualifier aq = 0;
            err = clGetKernelArgInfo(kern, a, CL_KERNEL_ARG_NAME, sizeof name, name, NULL);
            if (err == CL_KERNEL_ARG_INFO_NOT_AVAILABLE) {
                NOTE("%s: the driver keeps no argument information; names not compared",
                     T.dev_name);
                clReleaseKernel(kern);
                clReleaseProgram(prog);
                return;
            }
            CHECK_CL(err);
            CHECK_CL(clGetKernelArgInfo(kern, a, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq,
                                        &aq, NULL));
            CHECK_CL(clGetKernelArgInfo(kern, a, CL_KERNEL_ARG_TYPE_NAME, sizeof tname, tname,
                                        NULL));
            const cl_kernel_arg_address_qualifier want_aq =
                d->type == CLN_T_GLOBAL  ? CL_KERNEL_ARG_ADDRESS_GLOBAL
                : d->type == CLN_T_LOCAL ? CL_KERNEL_ARG_ADDRESS_LOCAL
                                         : CL_KERNEL_ARG_ADDRESS_PRIVATE;
            const char *want_t = d->type == CLN_T_ULONG ? "ulong"
                                 : d->type == CLN_T_UINT ? "uint"
                                 : d->type == CLN_T_FLOAT ? "float" : NULL;
            CHECK(!strcmp(name, d->name) && aq == want_aq &&
                      (!want_t || !strcmp(tname, want_t)),
                  "%s, argument %u: the table has %s %s, the compiler reports %s %s "
                  "(address qualifier 0x%x)", e->name, (unsigned)a, type_name(d->type), d->name,
                  tname, name, (unsigned)aq);
        }
        clReleaseKernel(kern);
    }
    clReleaseProgram(prog);
}
