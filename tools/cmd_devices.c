/* `clnorm devices`: every platform and device, what clnorm learned about each one
   and the plans it would pick there. */
#include "tool.h"

#include <stdlib.h>
#include <string.h>

static const char devices_usage[] =
    "usage: clnorm devices [--kernels] [--help]\n"
    "\n"
    "Lists every OpenCL platform and its devices in enumeration order. The \"P:D\"\n"
    "before each device is the spec that --device and CLNORM_DEVICE accept. For each\n"
    "device: type, compute units, max work-group size, local memory, sub-group support\n"
    "(cl_khr_subgroups, or NVIDIA warp shuffles with compute capability and warp\n"
    "size) as probed, the reduction path clnorm uses, and the plans (f32) it picks for\n"
    "a few shapes under the current CLNORM_* environment: algorithm (softmax AUTO's\n"
    "choice), variant (stream, reg: row held in registers, split: several work-groups\n"
    "per row), work-group size, work-items per row, rows per work-group, work-groups\n"
    "per row, work-groups, local memory bytes. '*' marks the device that a NULL spec\n"
    "picks (CLNORM_DEVICE, else the first GPU, else the first device).\n"
    "\n"
    "--kernels also builds clnorm's f32 and bf16 programs for each device and lists\n"
    "every kernel's own limits as the driver reports them: the most work-items a\n"
    "work-group may have (plans re-plan below it), private and local memory bytes.\n";

static int show_kernels;

/* Each kernel's limits as the driver reports them for info's device (its fastest
   path), per dtype. */
static void print_kernels(const clnorm_device_info *info)
{
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &info->device, NULL, NULL, &err);
    if (!ctx) {
        printf("      kernels: no context (%s)\n", clnorm_opencl_error_name(err));
        return;
    }
    /* f32 and bf16 on the device's path, and f32 on the local-memory path. */
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_BF16, CLNORM_F32};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        clnorm_reduction path = d < 2 ? info->reduction : CLNORM_REDUCTION_LOCAL;
        if (d == 2 && path == info->reduction) break;
        printf("      kernels, %s, %s path: max work-group, private bytes, local bytes\n",
               clnorm_dtype_name(dts[d]), tool_reduction_name(path));
        if (d == 0 && info->kernel_wg_understated)
            printf("      (this driver's kernel limits understate what runs: clnorm plans up "
                   "to the device's %zu)\n", info->max_work_group);
        for (size_t k = 0; k < clnorm_kernel_count(); k++) {
            clnorm_kernel_limits lim;
            clnorm_status st =
                clnorm_kernel_limits_get(ctx, info->device, dts[d], path, k, &lim);
            if (st) {
                tool_report(clnorm_kernel_name(k), st);
                break;
            }
            printf("        %-32s %6zu %8llu %8llu\n", clnorm_kernel_name(k), lim.work_group,
                   (unsigned long long)lim.private_mem, (unsigned long long)lim.local_mem);
        }
    }
    clnorm_release_cache(ctx);
    clReleaseContext(ctx);
}

/* Shapes that show the plan's range: square, short rows, few long rows. Softmax is
   asked with AUTO, as callers mostly do; the table shows what it resolved to. */
static const struct { clnorm_op op; size_t rows, cols; } plan_shapes[] = {
    {CLNORM_OP_RMSNORM, 4096, 4096},       {CLNORM_OP_SOFTMAX_AUTO, 4096, 128},
    {CLNORM_OP_SOFTMAX_AUTO, 4096, 4096},  {CLNORM_OP_SOFTMAX_AUTO, 8, 262144},
    {CLNORM_OP_SOFTMAX_STATS, 8, 262144},
};

/* The built-in plans under the process configuration (the CLNORM_* environment):
   hints says to leave the device's tuning table aside. */
static void print_plans(const clnorm_device_info *info, const clnorm_plan_hints *hints)
{
    printf("      %-14s %-11s %-14s %-7s %-10s %5s %5s %7s %6s %6s %6s\n", "plan (f32)",
           "rows x cols", "algorithm", "variant", "path", "wg", "team", "rows/wg", "slices",
           "groups", "local");
    char last_why[256] = "";
    for (size_t i = 0; i < sizeof plan_shapes / sizeof plan_shapes[0]; i++) {
        char shape[32], why[256];
        clnorm_plan_info pl;
        clnorm_op op = plan_shapes[i].op;
        const char *name = op == CLNORM_OP_SOFTMAX_AUTO ? "softmax" : tool_op_name(op);
        snprintf(shape, sizeof shape, "%zux%zu", plan_shapes[i].rows, plan_shapes[i].cols);
        clnorm_status st = clnorm_plan_query(info->device, hints, op, CLNORM_F32,
                                             plan_shapes[i].rows, plan_shapes[i].cols, &pl);
        if (st) {
            /* A forced setting fails every shape alike: say why once, without the
               message's opening '<op> <shape> <dtype> on "<device>": '. */
            const char *msg = clnorm_last_error(), *reason;
            char on[160];
            snprintf(on, sizeof on, " on \"%s\": ", info->device_name);
            reason = strstr(msg, on);
            snprintf(why, sizeof why, "%s", reason ? reason + strlen(on) : msg);
            int again = !strcmp(why, last_why);
            printf("      %-14s %-11s %s: %s\n", name, shape, clnorm_status_string(st),
                   again ? "(as above)" : why);
            snprintf(last_why, sizeof last_why, "%s", why);
            continue;
        }
        printf("      %-14s %-11s %-14s %-7s %-10s %5zu %5zu %7zu %6zu %6zu %6zu\n", name,
               shape, op == CLNORM_OP_SOFTMAX_AUTO ? tool_op_name(pl.op) : "-",
               tool_variant_name(pl.variant), tool_reduction_name(pl.reduction), pl.work_group,
               pl.items_per_row, pl.rows_per_group, pl.split, pl.groups, pl.local_bytes);
    }
}

/* basic: the device's queried facts (clnorm_device_get without probes). */
static void print_device(size_t index, const clnorm_device_info *basic, int is_default,
                         const clnorm_plan_hints *hints)
{
    clnorm_device_info info;
    /* The full description compiles probe kernels; if that fails, still show the
       queried facts and say why. */
    clnorm_status st = clnorm_device_get(index, 1, &info);
    if (st) {
        tool_report("probing the device", st);
        info = *basic;
    }
    char type[64];
    printf("  %c %u:%u  %s%s\n", is_default ? '*' : ' ', info.platform_index,
           info.device_index, info.device_name, is_default ? "  (default)" : "");
    printf("      vendor %s, driver %s\n", info.device_vendor, info.driver_version);
    printf("      type %s, %u compute units, max work-group %zu, local memory %llu KiB, "
           "preferred multiple %zu, vector width %u\n",
           tool_type_name(info.type, type, sizeof type), info.compute_units,
           info.max_work_group, (unsigned long long)(info.local_mem / 1024),
           info.preferred_multiple, info.vector_width);
    if (info.subgroups)
        printf("      sub-groups: yes (cl_khr_subgroups)\n");
    else
        printf("      sub-groups: none\n");
    if (info.nv_cc_major)
        printf("      NVIDIA: compute capability %u.%u, warp size %u, warp shuffles %s\n",
               info.nv_cc_major, info.nv_cc_minor, info.warp,
               info.nv_shuffle ? "yes (inline PTX)" : "no");
    if (st) {
        printf("      reduction path: unknown (probing failed)\n");
        return;
    }
    printf("      reduction path: %s\n", tool_reduction_name(info.reduction));
    if (!hints) printf("      plans: none, the CLNORM_* environment is invalid (see above)\n");
    else print_plans(&info, hints);
    if (show_kernels) print_kernels(&info);
}

int cmd_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (tool_is_help(argv[i])) {
            fputs(devices_usage, stdout);
            return TOOL_OK;
        }
        if (!strcmp(argv[i], "--kernels")) {
            show_kernels = 1;
            continue;
        }
        fprintf(stderr, "clnorm devices: unknown argument \"%s\"\n\n%s", argv[i],
                devices_usage);
        return TOOL_USAGE;
    }

    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: no ICD at all */ || (!err && np == 0)) {
        printf("no OpenCL platforms (is an ICD such as pocl-opencl-icd installed?)\n");
        return TOOL_OK;
    }
    if (err) {
        fprintf(stderr, "clnorm devices: clGetPlatformIDs: %s (%d)\n", clnorm_opencl_error_name(err),
                err);
        return TOOL_FAIL;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    size_t nd = 0;
    clnorm_status st = plats ? clnorm_device_count(&nd) : CLNORM_OUT_OF_RESOURCES;
    /* The platform and device of each index, from the queries alone (no probes). */
    clnorm_device_info *devs = st ? NULL : calloc(nd ? nd : 1, sizeof *devs);
    if (!st && !devs) st = CLNORM_OUT_OF_RESOURCES;
    for (size_t i = 0; !st && i < nd; i++) st = clnorm_device_get(i, 0, &devs[i]);
    if (!st && clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) st = CLNORM_OPENCL_ERROR;
    if (st) {
        tool_report("listing devices", st);
        free(plats);
        free(devs);
        return TOOL_FAIL;
    }

    /* The default device: resolved by the library exactly as a NULL spec is. */
    clnorm_device_info def;
    clnorm_status def_st = clnorm_device_find(NULL, 0, &def);
    char def_err[512] = "";
    if (def_st) snprintf(def_err, sizeof def_err, "%s", clnorm_last_error());

    /* The plans shown are the built-in ones under the process configuration, which
       the library read from the environment; an environment it cannot parse is
       reported here. */
    clnorm_config env_cfg;
    clnorm_status env_st = clnorm_config_from_env(&env_cfg);
    if (env_st) tool_report("CLNORM_* environment", env_st);
    clnorm_plan_hints hints;
    clnorm_plan_hints_init(&hints);
    hints.tuning = 0;

    for (cl_uint pi = 0; pi < np; pi++) {
        char name[256] = "", vendor[256] = "", version[256] = "";
        clGetPlatformInfo(plats[pi], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
        printf("platform %u: %s (%s), %s\n", pi, name, vendor, version);
        int shown = 0;
        for (size_t i = 0; i < nd; i++) {
            if (devs[i].platform != plats[pi]) continue;
            int is_def = !def_st && def.device == devs[i].device;
            print_device(i, &devs[i], is_def, env_st ? NULL : &hints);
            shown++;
        }
        if (!shown) {
            /* Say why there is nothing: "no devices" is normal (Mesa Clover without
               hardware), any other error is worth seeing. */
            cl_uint n = 0;
            cl_int e = clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
            if (e == CL_SUCCESS || e == CL_DEVICE_NOT_FOUND) printf("    no devices\n");
            else printf("    no devices (clGetDeviceIDs: %s (%d))\n", clnorm_opencl_error_name(e), e);
        }
    }

    const char *env = getenv("CLNORM_DEVICE");
    if (def_st) printf("default device: none: %s\n", def_err);
    else if (env && *env)
        printf("default device: %u:%u (CLNORM_DEVICE=\"%s\")\n", def.platform_index,
               def.device_index, env);
    else
        printf("default device: %u:%u (first GPU, else first device)\n", def.platform_index,
               def.device_index);
    free(plats);
    free(devs);
    return TOOL_OK;
}
