/* Devices and kernels seen from outside: the enumeration in `clnorm devices` order,
   what clnorm knows of a device (its profile), and the driver's limits of each
   compiled kernel. */
#include "build_options.h"
#include "clnorm_advanced.h"
#include "config.h"
#include "devices.h"
#include "kernels.h"
#include "profile.h"
#include "program_cache.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <stdio.h>
#include <string.h>

/* As many devices as cln_device_find looks through. */
#define CLN_API_MAX_DEVICES 256

clnorm_status clnorm_device_count(size_t *count)
{
    if (!count) return cln_fail(CLNORM_INVALID_ARGUMENT, "count is NULL");
    *count = 0;
    return cln_device_list(NULL, 0, count);
}

static void cln_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src);
}

/* Fills out from the device's profile: probed (cached) or from queries alone. */
static clnorm_status cln_device_fill(const cln_device_ref *r, int probe, clnorm_device_info *out)
{
    cln_profile queried;
    const cln_profile *p = &queried;
    clnorm_status st =
        probe ? cln_profile_get(r->device, &p) : cln_profile_query(r->device, &queried);
    if (st) return st;
    memset(out, 0, sizeof *out);
    out->platform = r->platform;
    out->device = r->device;
    out->platform_index = r->pi;
    out->device_index = r->di;
    cln_copy(out->platform_name, sizeof out->platform_name, p->platform_name);
    cln_copy(out->platform_vendor, sizeof out->platform_vendor, p->platform_vendor);
    cln_copy(out->platform_version, sizeof out->platform_version, p->platform_version);
    cln_copy(out->device_name, sizeof out->device_name, p->device_name);
    cln_copy(out->device_vendor, sizeof out->device_vendor, p->device_vendor);
    cln_copy(out->driver_version, sizeof out->driver_version, p->driver_version);
    out->type = p->type;
    out->compute_units = p->compute_units;
    out->max_work_group = p->max_wg;
    out->local_mem = p->local_mem;
    out->probed = probe != 0;
    out->preferred_multiple = p->pref_multiple;
    out->subgroups = p->has_subgroups;
    out->nv_shuffle = p->has_nv_shuffle;
    out->nv_cc_major = p->nv_cc_major;
    out->nv_cc_minor = p->nv_cc_minor;
    out->warp = p->warp;
    out->pocl_major = p->pocl_major;
    out->vector_width = p->vec;
    out->reduction = (clnorm_reduction)p->best_path;
    out->kernel_wg_understated = p->kernel_wg_understated;
    out->flat_barriers = p->flat_barriers;
    out->loop_limit = p->loop_limit;
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_device_get(size_t index, int probe, clnorm_device_info *out)
{
    cln_device_ref refs[CLN_API_MAX_DEVICES];
    size_t n = 0;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    clnorm_status st = cln_device_list(refs, CLN_API_MAX_DEVICES, &n);
    if (st) return st;
    if (index >= n || index >= CLN_API_MAX_DEVICES)
        return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device index %zu: there are %zu devices",
                        index, n);
    return cln_device_fill(&refs[index], probe, out);
}

clnorm_status clnorm_device_find(const char *spec, int probe, clnorm_device_info *out)
{
    cln_device_ref r;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    clnorm_status st = cln_device_find(spec, &r);
    return st ? st : cln_device_fill(&r, probe, out);
}

clnorm_status clnorm_device_describe(cl_device_id device, int probe, clnorm_device_info *out)
{
    cln_device_ref refs[CLN_API_MAX_DEVICES];
    size_t n = 0;
    cl_int err;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    if (!device) return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device is NULL");
    cln_device_ref r = {NULL, device, (unsigned)-1, (unsigned)-1};
    if ((err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof r.platform, &r.platform,
                               NULL)) != CL_SUCCESS)
        return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device %p is not a valid device: %s",
                        (void *)device, cln_cl_error_name(err));
    /* Its "P:D" where the enumeration lists it (a sub-device is not listed). */
    if (cln_device_list(refs, CLN_API_MAX_DEVICES, &n) == CLNORM_SUCCESS)
        for (size_t i = 0; i < n && i < CLN_API_MAX_DEVICES; i++)
            if (refs[i].device == device) r = refs[i];
    return cln_device_fill(&r, probe, out);
}

size_t clnorm_kernel_count(void) { return CLN_K_COUNT; }

const char *clnorm_kernel_name(size_t index)
{
    return index < CLN_K_COUNT ? cln_kernel_name((cln_kernel_id)index) : NULL;
}

clnorm_status clnorm_kernel_limits_get(cl_context context, cl_device_id device,
                                       clnorm_dtype dtype, clnorm_reduction reduction,
                                       size_t index, clnorm_kernel_limits *out)
{
    const cln_profile *p;
    const cln_settings *set;
    cl_uint refs = 0;
    cl_int err;
    clnorm_status st;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    if (!context) return cln_fail(CLNORM_INVALID_ARGUMENT, "context is NULL");
    if ((err = clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof refs, &refs,
                                NULL)) != CL_SUCCESS)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "context %p is not a valid context: %s",
                        (void *)context, cln_cl_error_name(err));
    if (!device) return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device is NULL");
    if ((st = cln_check_dtype(dtype))) return st;
    if (reduction < CLNORM_REDUCTION_AUTO || reduction > CLNORM_REDUCTION_NV_SHUFFLE)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "reduction = %d is not a clnorm_reduction "
                        "(-1 to 2)", (int)reduction);
    if (index >= CLN_K_COUNT)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "kernel index %zu: there are %d kernels",
                        index, (int)CLN_K_COUNT);
    /* The programs are built as a call's would be: with the thread's settings. */
    if ((st = cln_settings_begin(NULL, &set)) || (st = cln_profile_get(device, &p))) return st;
    cln_path path = reduction == CLNORM_REDUCTION_AUTO ? p->best_path : (cln_path)reduction;
    if ((path == CLN_PATH_SUBGROUP && !p->has_subgroups) ||
        (path == CLN_PATH_NV && !p->has_nv_shuffle))
        return cln_fail(CLNORM_UNSUPPORTED, "device \"%s\" has no %s reduction path",
                        p->device_name, reduction == CLNORM_REDUCTION_NV_SHUFFLE
                                            ? "nv_shuffle" : "subgroup");
    cln_kernel_lease lease = {0};
    st = cln_kernel_acquire(context, device, p, dtype, path, (cln_kernel_id)index,
                            cln_programs_one(p), &lease);
    if (st) return st;
    size_t wg = 0;
    cl_ulong priv = 0, local = 0;
    if ((err = clGetKernelWorkGroupInfo(lease.kernel, device, CL_KERNEL_WORK_GROUP_SIZE,
                                        sizeof wg, &wg, NULL)) != CL_SUCCESS ||
        (err = clGetKernelWorkGroupInfo(lease.kernel, device, CL_KERNEL_PRIVATE_MEM_SIZE,
                                        sizeof priv, &priv, NULL)) != CL_SUCCESS ||
        (err = clGetKernelWorkGroupInfo(lease.kernel, device, CL_KERNEL_LOCAL_MEM_SIZE,
                                        sizeof local, &local, NULL)) != CL_SUCCESS)
        st = cln_cl_fail(err, "clGetKernelWorkGroupInfo(%s)",
                         cln_kernel_name((cln_kernel_id)index));
    cln_kernel_return(&lease);
    if (st) return st;
    out->work_group = wg;
    out->private_mem = priv;
    out->local_mem = local;
    return CLNORM_SUCCESS;
}
