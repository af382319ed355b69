/* The probes of the fast paths. A fast path is trusted only when a small kernel that
   reduces the way cl/reduce.cl does (sum and maximum over a work-group in two levels,
   the online-softmax (m, l) merge, the result reaching every work-item) builds, runs
   and gives, on every work-item, exactly what the host computes from the same
   inputs. Work-groups that are not a multiple of the sub-group size are among those
   run, since forced work-group sizes launch such groups on the sub-group path. */
#include "probe.h"
#include "config.h"
#include "faults.h"
#include "types.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The (m, l) merge of cl/reduce.cl and clnorm_stats_merge, and the paths' two-level
   reductions, as the kernels write them. */
#define CLN_PROBE_MERGE                                                                  \
    "float w(float x, float m) { if (x == m) return m == -INFINITY ? 0.0f : 1.0f;\n"      \
    "  return exp(x - m); }\n"                                                           \
    "void merge(float *m, float *l, float mb, float lb) {\n"                             \
    "  float mm = fmax(*m, mb); *l = *l * w(*m, mm) + lb * w(mb, mm); *m = mm; }\n"

static const char cln_probe_subgroup[] =
    "#pragma OPENCL EXTENSION cl_khr_subgroups : enable\n" CLN_PROBE_MERGE
    "#define RED(NAME, SGOP, OP, IDENT) float NAME(float v, __local float *s) {\\\n"
    "  v = SGOP(v); uint nsg = get_num_sub_groups(), sgs = get_sub_group_size();\\\n"
    "  if (nsg == 1) return v;\\\n"
    "  if (get_sub_group_local_id() == 0) s[get_sub_group_id()] = v;\\\n"
    "  barrier(CLK_LOCAL_MEM_FENCE); float t = IDENT;\\\n"
    "  for (uint i = get_sub_group_local_id(); i < nsg; i += sgs) t = OP(t, s[i]);\\\n"
    "  t = SGOP(t); barrier(CLK_LOCAL_MEM_FENCE); return t; }\n"
    "#define ADD(a, b) ((a) + (b))\n"
    "RED(red_sum, sub_group_reduce_add, ADD, 0.0f)\n"
    "RED(red_max, sub_group_reduce_max, fmax, -INFINITY)\n"
    "void sg_pair(float *m, float *l) { float mm = sub_group_reduce_max(*m);\n"
    "  float x = *l == 0.0f ? 0.0f : *l * w(*m, mm); *l = sub_group_reduce_add(x); *m = mm; }\n"
    "void pair(float *m, float *l, __local float *sm, __local float *sl) {\n"
    "  sg_pair(m, l); uint nsg = get_num_sub_groups(), sgs = get_sub_group_size();\n"
    "  if (nsg == 1) return;\n"
    "  if (get_sub_group_local_id() == 0) { sm[get_sub_group_id()] = *m;\n"
    "    sl[get_sub_group_id()] = *l; }\n"
    "  barrier(CLK_LOCAL_MEM_FENCE); float mm = -INFINITY, ll = 0.0f;\n"
    "  for (uint i = get_sub_group_local_id(); i < nsg; i += sgs) merge(&mm, &ll, sm[i], sl[i]);\n"
    "  sg_pair(&mm, &ll); *m = mm; *l = ll; barrier(CLK_LOCAL_MEM_FENCE); }\n"
    "__kernel void probe(__global const float *in, __global float *out, uint n,\n"
    "                    __local float *s) {\n"
    "  uint g = get_global_id(0);\n"
    "  float v = in[g], pm = in[n + g], pl = in[2 * n + g];\n"
    "  float sum = red_sum(v, s), mx = red_max(v, s);\n"
    "  pair(&pm, &pl, s, s + get_local_size(0));\n"
    "  out[6 * g] = sum; out[6 * g + 1] = mx; out[6 * g + 2] = pm; out[6 * g + 3] = pl;\n"
    "  out[6 * g + 4] = sub_group_broadcast(v, 0u);\n"
    "  out[6 * g + 5] = (float)get_sub_group_local_id(); }\n";

static const char cln_probe_nv[] =
    CLN_PROBE_MERGE
    "float shfl(float v, uint mask) { float r;\n"
    "#ifdef CLN_NV_SYNC\n"
    "  asm volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\""
    " : \"=f\"(r) : \"f\"(v), \"r\"(mask));\n"
    "#else\n"
    "  asm volatile(\"shfl.bfly.b32 %0, %1, %2, 0x1f;\" : \"=f\"(r) : \"f\"(v), \"r\"(mask));\n"
    "#endif\n"
    "  return r; }\n"
    "float wsum(float v, uint width) { for (uint k = width >> 1; k > 0; k >>= 1)"
    " v += shfl(v, k); return v; }\n"
    "float wmax(float v, uint width) { for (uint k = width >> 1; k > 0; k >>= 1)"
    " v = fmax(v, shfl(v, k)); return v; }\n"
    "void wpair(float *m, float *l, uint width) { for (uint k = width >> 1; k > 0; k >>= 1) {\n"
    "  float mb = shfl(*m, k), lb = shfl(*l, k); merge(m, l, mb, lb); } }\n"
    "__kernel void probe(__global const float *in, __global float *out, uint n,\n"
    "                    __local float *s) {\n"
    "  uint g = get_global_id(0), lid = get_local_id(0), wl = lid & 31u;\n"
    "  uint nw = get_local_size(0) >> 5;\n"
    "  float v = in[g], pm = in[n + g], pl = in[2 * n + g];\n"
    "  float s8 = wsum(v, 8u), m8 = wmax(v, 8u);\n"
    "  float t = wsum(v, 32u), u = wmax(v, 32u);\n"
    "  wpair(&pm, &pl, 32u);\n"
    "  if (wl == 0) { s[lid >> 5] = t; s[32 + (lid >> 5)] = u; s[64 + (lid >> 5)] = pm;\n"
    "    s[96 + (lid >> 5)] = pl; }\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  t = wsum(wl < nw ? s[wl] : 0.0f, 32u); u = wmax(wl < nw ? s[32 + wl] : -INFINITY, 32u);\n"
    "  pm = wl < nw ? s[64 + wl] : -INFINITY; pl = wl < nw ? s[96 + wl] : 0.0f;\n"
    "  wpair(&pm, &pl, 32u);\n"
    "  out[6 * g] = t; out[6 * g + 1] = u; out[6 * g + 2] = pm; out[6 * g + 3] = pl;\n"
    "  out[6 * g + 4] = s8; out[6 * g + 5] = m8; }\n";

static const char cln_probe_plain[] =
    "__kernel void probe(__global float *p) { p[get_global_id(0)] += 1.0f; }\n";

/* The inputs of item i of a launch of n items in groups of wg: small integers, so
   that sums are exact in any order; every second group's (m, l) parts are all empty,
   and some parts of the others too, so that the merge of two empty parts runs. */
static void cln_probe_inputs(float *in, size_t n, size_t wg)
{
    for (size_t i = 0; i < n; i++) {
        const int empty = (i / wg) % 2 == 1 || i % 5 == 3;
        in[i] = (float)((int)((i * 7 + 3) % 17) - 8);
        in[n + i] = empty ? -INFINITY : (float)((int)((i * 11) % 23) - 20);
        in[2 * n + i] = empty ? 0.0f : (float)(1 + i % 3);
    }
}

/* What item i should hold; 0 where it does, else a description in why. */
static int cln_probe_check(const float *in, const float *out, size_t n, size_t wg, size_t i,
                           int nv, char *why, size_t why_len)
{
    const size_t g0 = i - i % wg;
    double sum = 0, mx = -INFINITY, m = -INFINITY, l = 0;
    for (size_t j = g0; j < g0 + wg; j++) {
        sum += in[j];
        mx = fmax(mx, in[j]);
        m = fmax(m, in[n + j]);
    }
    for (size_t j = g0; j < g0 + wg; j++)
        if (in[2 * n + j] != 0) l += in[2 * n + j] * exp(in[n + j] - m);
    if (cln_faults() & CLN_FAULT_PROBE_WRONG) sum += 1;
    const float *o = out + 6 * i;
    const char *what = NULL;
    double want = 0, got = 0;
    if (o[0] != (float)sum) what = "sum", want = sum, got = o[0];
    else if (o[1] != (float)mx) what = "maximum", want = mx, got = o[1];
    else if (o[2] != (float)m) what = "merged m", want = m, got = o[2];
    else if (!(fabs(o[3] - l) <= 1e-5 * l)) what = "merged l", want = l, got = o[3];
    if (!what && nv) {
        /* Aligned groups of 8 lanes inside a warp. */
        const size_t e0 = i - i % 8;
        double s8 = 0, m8 = -INFINITY;
        for (size_t j = e0; j < e0 + 8; j++) s8 += in[j], m8 = fmax(m8, in[j]);
        if (o[4] != (float)s8) what = "sum of 8 lanes", want = s8, got = o[4];
        else if (o[5] != (float)m8) what = "maximum of 8 lanes", want = m8, got = o[5];
    } else if (!what) {
        /* The broadcast of the sub-group's first item, found by its local id. */
        const size_t sl = o[5] >= 0 && o[5] < (float)wg ? (size_t)o[5] : wg;
        if (sl > i - g0) what = "sub-group local id", want = 0, got = o[5];
        else if (o[4] != in[i - sl]) what = "broadcast", want = in[i - sl], got = o[4];
    }
    if (!what) return 0;
    snprintf(why, why_len, "work-group of %zu, item %zu: %s %.9g, expected %.9g", wg, i % wg,
             what, got, want);
    return 1;
}

/* Runs the probe kernel k on groups of wg items and checks every item; 1 when all
   matched, else the first difference in why. */
static int cln_probe_launch(cl_context ctx, cl_command_queue q, cl_kernel k, size_t wg,
                            int nv, char *why, size_t why_len)
{
    const size_t n = 2 * wg;
    float *in = malloc(3 * n * sizeof *in), *out = calloc(6 * n, sizeof *out);
    cl_mem din = NULL, dout = NULL;
    cl_int err = CL_OUT_OF_HOST_MEMORY;
    int ok = 0;
    if (!in || !out) goto done;
    cln_probe_inputs(in, n, wg);
    din = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 3 * n * sizeof *in, in,
                         &err);
    if (err == CL_SUCCESS)
        dout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, 6 * n * sizeof *out, NULL, &err);
    const cl_uint un = (cl_uint)n;
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 0, sizeof din, &din);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 1, sizeof dout, &dout);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 2, sizeof un, &un);
    if (err == CL_SUCCESS) err = clSetKernelArg(k, 3, (nv ? 128 : 2 * wg) * sizeof(float), NULL);
    if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, &wg, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(q, dout, CL_TRUE, 0, 6 * n * sizeof *out, out, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        snprintf(why, why_len, "work-group of %zu: OpenCL error %d", wg, (int)err);
        goto done;
    }
    ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        if (cln_probe_check(in, out, n, wg, i, nv, why, why_len)) ok = 0;
done:
    if (din) clReleaseMemObject(din);
    if (dout) clReleaseMemObject(dout);
    free(in);
    free(out);
    return ok;
}

/* Builds src with opts on dev and, with run, runs it on the probe's work-group sizes.
   1: built (and every check matched); 0: did not build; -1: built, but a check failed
   or the run did, with the reason in why. pref: the kernel's preferred multiple. */
static int cln_probe_try(cl_device_id dev, const char *src, const char *opts, int run, int nv,
                         size_t *pref, char *why, size_t why_len)
{
    cl_int err;
    int r = 0;
    cl_command_queue q = NULL;
    cl_kernel k = NULL;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS) return 0;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS || clBuildProgram(prog, 1, &dev, opts, NULL, NULL) != CL_SUCCESS ||
        !(k = clCreateKernel(prog, "probe", &err)))
        goto done;
    r = 1;
    size_t m = 0, kwg = 0;
    if (pref && clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                         sizeof m, &m, NULL) == CL_SUCCESS && m)
        *pref = m;
    if (!run) goto done;
    r = -1;
    snprintf(why, why_len, "no work-group size to run");
    if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, NULL) !=
            CL_SUCCESS ||
        !(q = clCreateCommandQueue(ctx, dev, 0, &err)))
        goto done;
    const size_t cap = kwg < 256 ? kwg : 256;
    /* Sub-groups: a full group, one of a prime size (a partial last sub-group) and a
       tiny one. Warps: groups of whole warps, as the kernels use them. */
    const size_t sizes[3] = {nv ? cap & ~(size_t)31 : cap, nv ? 64 : 67, nv ? 32 : 5};
    int ran = 0;
    for (int i = 0; i < 3; i++) {
        if (!sizes[i] || sizes[i] > cap || (i && sizes[i] == sizes[0])) continue;
        if (!cln_probe_launch(ctx, q, k, sizes[i], nv, why, why_len)) goto done;
        ran = 1;
    }
    if (ran) r = 1;
done:
    if (q) clReleaseCommandQueue(q);
    if (k) clReleaseKernel(k);
    if (prog) clReleaseProgram(prog);
    clReleaseContext(ctx);
    return r;
}

/* CLNORM_TRACE=1 tells why a path the device lists is not used. */
static void cln_probe_refused(const cln_profile *p, const char *path, const char *why)
{
    if (cln_config_now()->pub.trace)
        fprintf(stderr, "clnorm: the %s probe on \"%s\" failed (%s): the path is not used\n",
                path, p->device_name, why);
}

static atomic_ulong cln_n_probed;

unsigned long cln_probe_count(void) { return atomic_load(&cln_n_probed); }

void cln_probe_device(cl_device_id dev, cln_profile *p)
{
    atomic_fetch_add(&cln_n_probed, 1);
    char why[256] = "";
    const unsigned faults = cln_faults();
    const int run = !(faults & CLN_FAULT_TRUST_PROBES);
    cln_probe_try(dev, cln_probe_plain, "", 0, 0, &p->pref_multiple, why, sizeof why);
    if (faults & CLN_FAULT_SUBGROUPS) p->has_subgroups = 1;
    if (!run) {
        /* trust-probes: every candidate path as if its probe had passed. */
        p->has_nv_shuffle = p->nv && p->warp == 32;
        return;
    }
    if (p->has_subgroups) {
        /* OpenCL C 2.0+ compilers may expose the built-ins only under -cl-std. A build
           that computes a wrong answer ends the search: another standard would not
           make the same driver right. */
        static const char *const stds[] = {"", "-cl-std=CL3.0", "-cl-std=CL2.0"};
        int r = 0;
        for (int i = 0; i < 3 && r == 0; i++) {
            r = cln_probe_try(dev, cln_probe_subgroup, stds[i], 1, 0, NULL, why, sizeof why);
            if (r == 1) p->subgroup_std = stds[i];
        }
        if (r != 1) {
            p->has_subgroups = 0;
            cln_probe_refused(p, "subgroup", r ? why : "its kernel did not build");
        }
    }
    if (p->nv && p->warp == 32) {
        const char *opt = p->nv_cc_major >= 7 ? "-DCLN_NV_SYNC" : "";
        int r = cln_probe_try(dev, cln_probe_nv, opt, 1, 1, NULL, why, sizeof why);
        p->has_nv_shuffle = r == 1;
        if (r != 1) cln_probe_refused(p, "nv_shuffle", r ? why : "its kernel did not build");
    }
}
