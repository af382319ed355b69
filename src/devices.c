/* Device enumeration in `clnorm devices` order and the device specs of API.md
   ("P:D", "cpu", "gpu" or words of the platform's and device's names). */
#include "devices.h"
#include "status.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLN_MAX_PLATFORMS 32
#define CLN_MAX_DEVICES 64

clnorm_status cln_device_list(cln_device_ref *out, size_t cap, size_t *n)
{
    cl_platform_id plats[CLN_MAX_PLATFORMS];
    cl_uint np = 0;
    *n = 0;
    cl_int err = clGetPlatformIDs(CLN_MAX_PLATFORMS, plats, &np);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: no ICD installed */ || np == 0)
        return CLNORM_SUCCESS;
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clGetPlatformIDs");
    if (np > CLN_MAX_PLATFORMS) np = CLN_MAX_PLATFORMS;
    for (cl_uint pi = 0; pi < np; pi++) {
        cl_device_id devs[CLN_MAX_DEVICES];
        cl_uint nd = 0;
        /* A platform without devices (Mesa Clover with nothing to drive) is not an
           error: it just contributes nothing. */
        if (clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, CLN_MAX_DEVICES, devs, &nd) !=
            CL_SUCCESS)
            continue;
        if (nd > CLN_MAX_DEVICES) nd = CLN_MAX_DEVICES;
        for (cl_uint di = 0; di < nd; di++) {
            if (*n < cap) {
                out[*n].platform = plats[pi];
                out[*n].device = devs[di];
                out[*n].pi = pi;
                out[*n].di = di;
            }
            (*n)++;
        }
    }
    return CLNORM_SUCCESS;
}

static void cln_lower(char *s)
{
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

/* "<platform name> <platform vendor> <device name> <device vendor>", lower case. */
static void cln_device_haystack(const cln_device_ref *r, char *buf, size_t len)
{
    char pn[256] = "", pv[256] = "", dn[256] = "", dv[256] = "";
    clGetPlatformInfo(r->platform, CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
    clGetPlatformInfo(r->platform, CL_PLATFORM_VENDOR, sizeof pv - 1, pv, NULL);
    clGetDeviceInfo(r->device, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
    clGetDeviceInfo(r->device, CL_DEVICE_VENDOR, sizeof dv - 1, dv, NULL);
    snprintf(buf, len, "%s %s %s %s", pn, pv, dn, dv);
    cln_lower(buf);
}

static int cln_parse_pd(const char *s, unsigned *p, unsigned *d)
{
    char *end;
    if (!isdigit((unsigned char)s[0])) return 0;
    unsigned long a = strtoul(s, &end, 10);
    if (*end != ':' || !isdigit((unsigned char)end[1])) return 0;
    unsigned long b = strtoul(end + 1, &end, 10);
    if (*end != '\0' || a > 1000000 || b > 1000000) return 0;
    *p = (unsigned)a;
    *d = (unsigned)b;
    return 1;
}

clnorm_status cln_device_find(const char *spec, cln_device_ref *out)
{
    cln_device_ref refs[CLN_MAX_DEVICES * 4];
    size_t n = 0;
    const char *from = "spec";
    if (!spec) {
        spec = getenv("CLNORM_DEVICE");
        from = "CLNORM_DEVICE";
        if (spec && !*spec) spec = NULL;
    }
    clnorm_status st = cln_device_list(refs, sizeof refs / sizeof refs[0], &n);
    if (st) return st;
    if (n > sizeof refs / sizeof refs[0]) n = sizeof refs / sizeof refs[0];
    if (n == 0)
        return cln_fail(CLNORM_DEVICE_NOT_FOUND,
                        "no OpenCL device found: no platform lists a device (is an ICD "
                        "such as pocl-opencl-icd installed?)");
    if (!spec) {
        for (size_t i = 0; i < n; i++) {
            cl_device_type t = 0;
            clGetDeviceInfo(refs[i].device, CL_DEVICE_TYPE, sizeof t, &t, NULL);
            if (t & CL_DEVICE_TYPE_GPU) { *out = refs[i]; return CLNORM_SUCCESS; }
        }
        *out = refs[0];
        return CLNORM_SUCCESS;
    }
    if (strlen(spec) > 200)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "device %s is longer than 200 characters",
                        from);
    unsigned p, d;
    if (cln_parse_pd(spec, &p, &d)) {
        for (size_t i = 0; i < n; i++)
            if (refs[i].pi == p && refs[i].di == d) { *out = refs[i]; return CLNORM_SUCCESS; }
        return cln_fail(CLNORM_DEVICE_NOT_FOUND,
                        "device %s \"%s\": there is no device %u on platform %u "
                        "(see `clnorm devices`)", from, spec, d, p);
    }
    char want[256];
    snprintf(want, sizeof want, "%s", spec);
    cln_lower(want);
    cl_device_type type = 0;
    if (!strcmp(want, "cpu")) type = CL_DEVICE_TYPE_CPU;
    if (!strcmp(want, "gpu")) type = CL_DEVICE_TYPE_GPU;
    for (size_t i = 0; i < n; i++) {
        if (type) {
            cl_device_type t = 0;
            clGetDeviceInfo(refs[i].device, CL_DEVICE_TYPE, sizeof t, &t, NULL);
            if (t & type) { *out = refs[i]; return CLNORM_SUCCESS; }
            continue;
        }
        char hay[1100];
        cln_device_haystack(&refs[i], hay, sizeof hay);
        if (*want && strstr(hay, want)) { *out = refs[i]; return CLNORM_SUCCESS; }
    }
    return cln_fail(CLNORM_DEVICE_NOT_FOUND,
                    "no OpenCL device matches %s \"%s\" (%zu devices; see `clnorm "
                    "devices`)", from, spec, n);
}
