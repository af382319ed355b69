/* fuzz_device_spec: device specs, as clnorm_device_find, clnorm_session_create and
   CLNORM_DEVICE take them ("P:D", "cpu", "gpu", or a substring of the platform and
   device names). For every input: the status is SUCCESS, DEVICE_NOT_FOUND or
   INVALID_ARGUMENT (a spec over 200 characters), a failure has a message, a success
   gives a device that really matches (the spec's P:D, type, or a case-insensitive
   substring of "<platform name> <platform vendor> <device name> <device vendor>"),
   and the CLNORM_DEVICE path agrees with the argument path. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int matches(const char *spec, const clnorm_device_info *r)
{
    char want[256], hay[1100], pn[256] = "", pv[256] = "", dn[256] = "", dv[256] = "";
    /* "P:D": digits, a colon, digits, nothing else, each at most 1000000. */
    const char *c = spec;
    unsigned long p = 0, d = 0;
    int np = 0, nd = 0;
    for (; isdigit((unsigned char)*c); c++, np++) p = p < 10000000 ? p * 10 + (unsigned)(*c - '0') : p;
    if (np && *c == ':') {
        for (c++; isdigit((unsigned char)*c); c++, nd++) d = d < 10000000 ? d * 10 + (unsigned)(*c - '0') : d;
        if (nd && !*c && p <= 1000000 && d <= 1000000)
            return r->platform_index == p && r->device_index == d;
    }
    snprintf(want, sizeof want, "%s", spec);
    for (char *w = want; *w; w++) *w = (char)tolower((unsigned char)*w);
    cl_device_type t = 0;
    clGetDeviceInfo(r->device, CL_DEVICE_TYPE, sizeof t, &t, NULL);
    if (!strcmp(want, "cpu")) return (t & CL_DEVICE_TYPE_CPU) != 0;
    if (!strcmp(want, "gpu")) return (t & CL_DEVICE_TYPE_GPU) != 0;
    clGetPlatformInfo(r->platform, CL_PLATFORM_NAME, sizeof pn - 1, pn, NULL);
    clGetPlatformInfo(r->platform, CL_PLATFORM_VENDOR, sizeof pv - 1, pv, NULL);
    clGetDeviceInfo(r->device, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
    clGetDeviceInfo(r->device, CL_DEVICE_VENDOR, sizeof dv - 1, dv, NULL);
    snprintf(hay, sizeof hay, "%s %s %s %s", pn, pv, dn, dv);
    for (char *h = hay; *h; h++) *h = (char)tolower((unsigned char)*h);
    return *want && strstr(hay, want) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 300) return 0;
    char spec[301];
    memcpy(spec, data, size);
    spec[size] = '\0';
    clnorm_device_info ref, ref2;
    clnorm_status st = clnorm_device_find(spec, 0, &ref);
    FZ_ASSERT(st == CLNORM_SUCCESS || st == CLNORM_DEVICE_NOT_FOUND ||
                  (st == CLNORM_INVALID_ARGUMENT && strlen(spec) > 200),
              "spec \"%s\": %s", spec, clnorm_status_string(st));
    if (st) FZ_ASSERT(*clnorm_last_error(), "no message");
    else FZ_ASSERT(ref.device && matches(spec, &ref), "spec \"%s\" gave a device that does "
                   "not match it", spec);

    /* The same through CLNORM_DEVICE (an empty value means the default device). */
    fz_setenv("CLNORM_DEVICE", spec);
    clnorm_status st2 = clnorm_device_find(NULL, 0, &ref2);
    fz_setenv("CLNORM_DEVICE", NULL);
    if (*spec) {
        FZ_ASSERT(st2 == st, "CLNORM_DEVICE=\"%s\": %s, argument: %s", spec,
                  clnorm_status_string(st2), clnorm_status_string(st));
        if (!st) FZ_ASSERT(ref2.device == ref.device, "CLNORM_DEVICE picked another device");
    }

    /* The public entry: a session on what was found, one time in eight. */
    if (!st && (size & 7) == 0) {
        clnorm_session *s = NULL;
        clnorm_status ss = clnorm_session_create(spec, &s);
        FZ_ASSERT(ss == CLNORM_SUCCESS && s, "session on \"%s\": %s", spec, clnorm_last_error());
        clnorm_session_destroy(s);
        clnorm_release_cache(NULL);
    }
    return 0;
}
