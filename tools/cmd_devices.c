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

/* Each kernel's limits as compiled for p (its fastest path), per dtype. */
static void print_kernels(const cln_device_ref *r, const cln_profile *p)
{
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &r->device, NULL, NULL, &err);
    if (!ctx) {
        printf("      kernels: no context (%s)\n", cln_cl_error_name(err));
        return;
    }
    /* f32 and bf16 on the device's path, and f32 on the local-memory path. */
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_BF16, CLNORM_F32};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        cln_path path = d < 2 ? p->best_path : CLN_PATH_LOCAL;
        if (d == 2 && path == p->best_path) break;
        printf("      kernels, %s, %s path: max work-group, private bytes, local bytes\n",
               cln_dtype_name(dts[d]), cln_path_name(path));
        if (d == 0 && p->kernel_wg_understated)
            printf("      (this driver's kernel limits understate what runs: clnorm plans up "
                   "to the device's %zu)\n", p->max_wg);
        for (int k = 0; k < CLN_K_COUNT; k++) {
            cln_kernel_lease l;
            clnorm_status st =
                cln_kernel_acquire(ctx, r->device, p, dts[d], path, (cln_kernel_id)k,
                                   cln_programs_one(p), &l);
            if (st) {
                tool_report(cln_kernel_name((cln_kernel_id)k), st);
                break;
            }
            size_t wg = 0;
            cl_ulong priv = 0, loc = 0;
            clGetKernelWorkGroupInfo(l.kernel, r->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                                     &wg, NULL);
            clGetKernelWorkGroupInfo(l.kernel, r->device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv,
                                     &priv, NULL);
            clGetKernelWorkGroupInfo(l.kernel, r->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof loc,
                                     &loc, NULL);
            printf("        %-32s %6zu %8llu %8llu\n", cln_kernel_name((cln_kernel_id)k), wg,
                   (unsigned long long)priv, (unsigned long long)loc);
            cln_kernel_return(&l);
        }
    }
    clnorm_release_cache(ctx);
    clReleaseContext(ctx);
}

/* Shapes that show the plan's range: square, short rows, few long rows. Softmax is
   asked with AUTO, as callers mostly do; the table shows what it resolved to. */
static const struct { cln_op op; size_t rows, cols; } plan_shapes[] = {
    {CLN_OP_RMSNORM, 4096, 4096},       {CLN_OP_SOFTMAX_AUTO, 4096, 128},
    {CLN_OP_SOFTMAX_AUTO, 4096, 4096},  {CLN_OP_SOFTMAX_AUTO, 8, 262144},
    {CLN_OP_STATS, 8, 262144},
};

static void print_plans(const cln_profile *p, const cln_limits *lim)
{
    printf("      %-14s %-11s %-14s %-7s %-10s %5s %5s %7s %6s %6s %6s\n", "plan (f32)",
           "rows x cols", "algorithm", "variant", "path", "wg", "team", "rows/wg", "slices",
           "groups", "local");
    char last_why[256] = "";
    for (size_t i = 0; i < sizeof plan_shapes / sizeof plan_shapes[0]; i++) {
        char shape[32], why[256] = "";
        cln_plan pl;
        cln_op op = plan_shapes[i].op;
        const char *name = op == CLN_OP_SOFTMAX_AUTO ? "softmax" : cln_op_name(op);
        snprintf(shape, sizeof shape, "%zux%zu", plan_shapes[i].rows, plan_shapes[i].cols);
        clnorm_status st = cln_plan_make(p, lim, op, CLNORM_F32, plan_shapes[i].rows,
                                         plan_shapes[i].cols, &pl, why, sizeof why);
        if (st) {
            /* A forced setting fails every shape alike: say why once. */
            int again = !strcmp(why, last_why);
            printf("      %-14s %-11s %s: %s\n", name, shape, clnorm_status_string(st),
                   again ? "(as above)" : why);
            snprintf(last_why, sizeof last_why, "%s", why);
            continue;
        }
        printf("      %-14s %-11s %-14s %-7s %-10s %5zu %5zu %7zu %6zu %6zu %6zu\n", name,
               shape, op == CLN_OP_SOFTMAX_AUTO ? cln_op_name(pl.op) : "-",
               cln_variant_name(pl.variant), cln_path_name(pl.path), pl.wg, pl.team,
               pl.rows_per_wg, pl.variant == CLN_VAR_SPLIT ? pl.slices : (size_t)1, pl.groups,
               pl.local_bytes);
    }
}

static void print_device(const cln_device_ref *r, int is_default, const cln_limits *lim,
                         clnorm_status lim_st)
{
    const cln_profile *p = NULL;
    cln_profile basic;
    /* The full profile compiles probe kernels; if that fails, still show the
       queried facts and say why. */
    clnorm_status st = cln_profile_get(r->device, &p);
    if (st) {
        tool_report("probing the device", st);
        if (cln_profile_query(r->device, &basic) != CLNORM_SUCCESS) {
            printf("  %c %u:%u  (device could not be queried)\n", is_default ? '*' : ' ',
                   r->pi, r->di);
            return;
        }
        p = &basic;
    }
    char type[64];
    printf("  %c %u:%u  %s%s\n", is_default ? '*' : ' ', r->pi, r->di, p->device_name,
           is_default ? "  (default)" : "");
    printf("      vendor %s, driver %s\n", p->device_vendor, p->driver_version);
    printf("      type %s, %u compute units, max work-group %zu, local memory %llu KiB, "
           "preferred multiple %zu, vector width %u\n",
           tool_type_name(p->type, type, sizeof type), p->compute_units, p->max_wg,
           (unsigned long long)(p->local_mem / 1024), p->pref_multiple, p->vec);
    if (p->has_subgroups)
        printf("      sub-groups: yes (cl_khr_subgroups%s%s)\n", *p->subgroup_std ? ", " : "",
               p->subgroup_std);
    else
        printf("      sub-groups: none\n");
    if (p->nv)
        printf("      NVIDIA: compute capability %u.%u, warp size %u, warp shuffles %s\n",
               p->nv_cc_major, p->nv_cc_minor, p->warp,
               p->has_nv_shuffle ? "yes (inline PTX)" : "no");
    if (st) {
        printf("      reduction path: unknown (probing failed)\n");
        return;
    }
    printf("      reduction path: %s\n", cln_path_name(p->best_path));
    if (lim_st) printf("      plans: none, the CLNORM_* environment is invalid (see above)\n");
    else print_plans(p, lim);
    if (show_kernels) print_kernels(r, p);
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
        fprintf(stderr, "clnorm devices: clGetPlatformIDs: %s (%d)\n", cln_cl_error_name(err),
                err);
        return TOOL_FAIL;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    size_t nd = 0;
    clnorm_status st = plats ? cln_device_list(NULL, 0, &nd) : CLNORM_OUT_OF_RESOURCES;
    cln_device_ref *refs = st ? NULL : calloc(nd ? nd : 1, sizeof *refs);
    if (!st && !refs) st = CLNORM_OUT_OF_RESOURCES;
    if (!st) st = cln_device_list(refs, nd, &nd);
    if (!st && clGetPlatformIDs(np, plats, NULL) != CL_SUCCESS) st = CLNORM_OPENCL_ERROR;
    if (st) {
        tool_report("listing devices", st);
        free(plats);
        free(refs);
        return TOOL_FAIL;
    }

    /* The default device: resolved by the library exactly as a NULL spec is. */
    cln_device_ref def;
    clnorm_status def_st = cln_device_find(NULL, &def);
    char def_err[512] = "";
    if (def_st) snprintf(def_err, sizeof def_err, "%s", clnorm_last_error());

    cln_limits lim;
    clnorm_status lim_st = cln_limits_from_env(&lim);
    if (lim_st) tool_report("CLNORM_* environment", lim_st);

    for (cl_uint pi = 0; pi < np; pi++) {
        char name[256] = "", vendor[256] = "", version[256] = "";
        clGetPlatformInfo(plats[pi], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
        clGetPlatformInfo(plats[pi], CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
        printf("platform %u: %s (%s), %s\n", pi, name, vendor, version);
        int shown = 0;
        for (size_t i = 0; i < nd; i++) {
            if (refs[i].platform != plats[pi]) continue;
            int is_def = !def_st && def.device == refs[i].device;
            print_device(&refs[i], is_def, &lim, lim_st);
            shown++;
        }
        if (!shown) {
            /* Say why there is nothing: "no devices" is normal (Mesa Clover without
               hardware), any other error is worth seeing. */
            cl_uint n = 0;
            cl_int e = clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
            if (e == CL_SUCCESS || e == CL_DEVICE_NOT_FOUND) printf("    no devices\n");
            else printf("    no devices (clGetDeviceIDs: %s (%d))\n", cln_cl_error_name(e), e);
        }
    }

    const char *env = getenv("CLNORM_DEVICE");
    if (def_st) printf("default device: none: %s\n", def_err);
    else if (env && *env) printf("default device: %u:%u (CLNORM_DEVICE=\"%s\")\n", def.pi, def.di, env);
    else printf("default device: %u:%u (first GPU, else first device)\n", def.pi, def.di);
    free(plats);
    free(refs);
    return TOOL_OK;
}
