/* `clnorm`: the command-line face of the library. This file holds the dispatch
   table, the top-level help and the small helpers every subcommand shares. */
#include "tool.h"
#include "pin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"devices", cmd_devices, "list platforms and devices, and what clnorm picks on each"},
    {"run", cmd_run, "run every operation on random data: check it and time it"},
    {"bench", cmd_bench, "benchmark a sweep of shapes against copy bandwidth"},
    {"tune", cmd_tune, "time candidate plans and store the fastest for the device"},
    {"cache", cmd_cache, "list, verify or clear the on-disk program cache"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clnorm <command> [options]\n"
            "       clnorm help [<command>]   clnorm --version\n"
            "\n"
            "clnorm %s: row-wise RMSNorm (with a fused residual add), softmax, its statistics\n"
            "and decode attention on OpenCL.\n"
            "\n"
            "commands:\n",
            clnorm_version());
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "Every command takes --help. Environment: CLNORM_DEVICE (default device spec),\n"
            "CLNORM_REDUCTION (auto|subgroup|local), CLNORM_KERNEL_DIR, CLNORM_CACHE_DIR.\n");
}

/* 1 when this process set POCL_AFFINITY=1 itself (pin.c). */
static int pocl_pinned;

const char *tool_pocl_note(cl_command_queue q)
{
    cl_device_id dev = NULL;
    clnorm_device_info info;
    if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != CL_SUCCESS ||
        clnorm_device_describe(dev, 1, &info) != CLNORM_SUCCESS || info.pocl_major == 0)
        return NULL;
    static char note[160];
    const char *v = getenv("POCL_AFFINITY");
    if (pocl_pinned)
        snprintf(note, sizeof note, "PoCL worker threads pinned to CPUs (POCL_AFFINITY=1, set by "
                 "clnorm; POCL_AFFINITY=0 leaves them to the scheduler)");
    else if (v && *v)
        snprintf(note, sizeof note, "PoCL worker threads: POCL_AFFINITY=%.40s, as set", v);
    else
        snprintf(note, sizeof note, "PoCL worker threads not pinned (this process may not run "
                 "on every CPU)");
    return note;
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    /* Line-buffered even into a pipe, so results and stderr messages keep order. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Before the first OpenCL call loads PoCL and reads POCL_AFFINITY. */
    pocl_pinned = tool_pin_pocl_workers();
    if (argc < 2) {
        usage(stderr);
        return TOOL_USAGE;
    }
    const char *name = argv[1];
    if (tool_is_help(name) || (!strcmp(name, "help") && argc == 2)) {
        usage(stdout);
        return TOOL_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("clnorm %s\n", clnorm_version());
        return TOOL_OK;
    }
    if (!strcmp(name, "help")) {
        /* `clnorm help run` is `clnorm run --help`. */
        const command *c = find_command(argv[2]);
        if (!c) {
            fprintf(stderr, "clnorm: no command \"%s\"\n\n", argv[2]);
            usage(stderr);
            return TOOL_USAGE;
        }
        char help[] = "--help";
        char *sub[] = {argv[2], help, NULL};
        return c->fn(2, sub);
    }
    const command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "clnorm: unknown command \"%s\"\n\n", name);
        usage(stderr);
        return TOOL_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
}

/* ---- helpers shared by the subcommands ---------------------------------------- */

int tool_is_help(const char *arg)
{
    return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int tool_opt(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != '\0') return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "clnorm: option %s needs a value\n", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

int tool_parse_size(const char *opt, const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0 || s[0] == '-' || v > (size_t)-1) {
        fprintf(stderr, "clnorm: %s \"%s\" is not a positive integer\n", opt, s);
        return 0;
    }
    *out = (size_t)v;
    return 1;
}

int tool_parse_dtype(const char *s, clnorm_dtype *out)
{
    if (!strcmp(s, "f32")) *out = CLNORM_F32;
    else if (!strcmp(s, "f16")) *out = CLNORM_F16;
    else if (!strcmp(s, "bf16")) *out = CLNORM_BF16;
    else {
        fprintf(stderr, "clnorm: --dtype \"%s\" is not f32, f16 or bf16\n", s);
        return 0;
    }
    return 1;
}

void tool_report(const char *what, clnorm_status st)
{
    const char *msg = clnorm_last_error();
    fprintf(stderr, "clnorm: %s: %s%s%s\n", what, clnorm_status_string(st), *msg ? ": " : "",
            msg);
}

const char *tool_type_name(cl_device_type t, char *buf, size_t len)
{
    static const struct { cl_device_type bit; const char *name; } types[] = {
        {CL_DEVICE_TYPE_CPU, "CPU"}, {CL_DEVICE_TYPE_GPU, "GPU"},
        {CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR"}, {CL_DEVICE_TYPE_CUSTOM, "CUSTOM"},
        {CL_DEVICE_TYPE_DEFAULT, "DEFAULT"},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if ((t & types[i].bit) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "|" : "",
                                     types[i].name);
    if (!buf[0]) snprintf(buf, len, "0x%llx", (unsigned long long)t);
    return buf;
}

double tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int tool_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tool_median(double *v, size_t n)
{
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, tool_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

const char *tool_op_name(clnorm_op op)
{
    switch (op) {
    case CLNORM_OP_RMSNORM: return "rmsnorm";
    case CLNORM_OP_SOFTMAX_THREE_PASS: return "softmax-3pass";
    case CLNORM_OP_SOFTMAX_ONLINE: return "softmax-online";
    case CLNORM_OP_SOFTMAX_STATS: return "softmax-stats";
    case CLNORM_OP_ADD_RMSNORM: return "add-rmsnorm";
    case CLNORM_OP_SOFTMAX_AUTO: return "softmax-auto";
    }
    return "?";
}

const char *tool_variant_name(clnorm_variant v)
{
    switch (v) {
    case CLNORM_VARIANT_AUTO: break;
    case CLNORM_VARIANT_STREAM: return "stream";
    case CLNORM_VARIANT_REGISTERS: return "reg";
    case CLNORM_VARIANT_SPLIT: return "split";
    case CLNORM_VARIANT_WORDS: return "words";
    case CLNORM_VARIANT_COOP: return "coop";
    }
    return "?";
}

const char *tool_reduction_name(clnorm_reduction r)
{
    switch (r) {
    case CLNORM_REDUCTION_AUTO: break;
    case CLNORM_REDUCTION_LOCAL: return "local";
    case CLNORM_REDUCTION_SUBGROUP: return "subgroup";
    case CLNORM_REDUCTION_NV_SHUFFLE: return "nv-shuffle";
    }
    return "?";
}

void tool_plan_describe(const clnorm_plan_info *pl, char *buf, size_t len)
{
    const char *k = pl->kernels[0];
    size_t n = k ? strlen(k) : 0;
    /* The words kernels with half the slots per work-item end in "_half". */
    int half = n > 5 && !strcmp(k + n - 5, "_half");
    if (pl->variant == CLNORM_VARIANT_SPLIT)
        snprintf(buf, len, "split/%s wg %zu, %zu slices of %zu",
                 tool_reduction_name(pl->reduction), pl->work_group, pl->split, pl->split_cols);
    else
        snprintf(buf, len, "%s%s/%s wg %zu, %zu rows/wg, %zu groups",
                 tool_variant_name(pl->variant), half ? "-half" : "",
                 tool_reduction_name(pl->reduction), pl->work_group, pl->rows_per_group,
                 pl->groups);
}
