/* CLNORM_EMULATE, a testing variable: the limits of a smaller device (an embedded GPU's
   work-group size, local memory and OpenCL C version), applied to a device's profile
   right after probing, so that CI runs the plans such a device would get on the
   drivers it has. The plan then keeps within them like within real limits. Read once
   per device and process, when the device is first profiled. */
#include "emulate.h"
#include "status.h"
#include "types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A positive decimal integer filling [s, end), times unit; 0 when it is none. */
static unsigned long long cln_emulate_number(const char *s, const char *end,
                                             unsigned long long unit)
{
    if (s == end || *s < '0' || *s > '9') return 0;
    char *stop;
    errno = 0;
    unsigned long long v = strtoull(s, &stop, 10);
    if (errno || stop != end || v > (1ull << 40)) return 0;
    return v * unit;
}

/* One item "key=value" in [s, end). */
static int cln_emulate_item(const char *s, const char *end, cln_emulation *e)
{
    const char *eq = memchr(s, '=', (size_t)(end - s));
    if (!eq) return 0;
    const size_t klen = (size_t)(eq - s), vlen = (size_t)(end - eq - 1);
    const char *v = eq + 1;
    if (klen == 2 && !strncmp(s, "wg", 2)) {
        e->max_wg = (size_t)cln_emulate_number(v, end, 1);
        return e->max_wg != 0;
    }
    if (klen == 5 && !strncmp(s, "local", 5)) {
        /* Bytes, or KiB with a k suffix. */
        const int kib = vlen > 1 && (end[-1] == 'k' || end[-1] == 'K');
        e->local_mem = cln_emulate_number(v, kib ? end - 1 : end, kib ? 1024 : 1);
        return e->local_mem != 0;
    }
    if (klen == 4 && !strncmp(s, "fp16", 4) && vlen == 1 && (*v == '0' || *v == '1')) {
        e->fp16 = *v - '0';
        return 1;
    }
    if (klen == 3 && !strncmp(s, "clc", 3) && vlen == 3 && v[1] == '.') {
        static const char *const known[] = {"1.2", "2.0", "3.0"};
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (!strncmp(v, known[i], 3)) {
                e->clc_major = v[0] - '0';
                e->clc_minor = v[2] - '0';
                return 1;
            }
    }
    return 0;
}

clnorm_status cln_emulate_parse(const char *text, cln_emulation *out)
{
    memset(out, 0, sizeof *out);
    out->fp16 = -1;
    if (!text) return CLNORM_SUCCESS;
    for (const char *s = text; *s;) {
        const char *end = strchr(s, ',');
        if (!end) end = s + strlen(s);
        if (!cln_emulate_item(s, end, out))
            return cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_EMULATE="
                            "\"%s\": item \"%.*s\" is none of wg=N, local=N (bytes) or Nk "
                            "(KiB), fp16=0|1, clc=1.2|2.0|3.0", text, (int)(end - s), s);
        s = *end ? end + 1 : end;
    }
    return CLNORM_SUCCESS;
}

void cln_emulate_apply(const cln_emulation *e, cln_profile *p)
{
    if (e->max_wg && e->max_wg < p->max_wg) p->max_wg = e->max_wg;
    if (e->local_mem && e->local_mem < p->local_mem) p->local_mem = e->local_mem;
    /* Sub-group collectives are OpenCL C 2.0 and 3.0 (the probe compiles them with
       -cl-std=CL2.0 or CL3.0 where needed). float16 needs nothing to drop: the kernels
       use only vload_half and vstore_half, which are core OpenCL C 1.2, never a half
       value (cl/dtype.cl), so fp16=0 changes no plan. */
    if (e->clc_major == 1) {
        p->has_subgroups = 0;
        p->subgroup_std = "";
        if (p->best_path == CLN_PATH_SUBGROUP) p->best_path = CLN_PATH_LOCAL;
    }
}

clnorm_status cln_emulate_profile(cln_profile *p)
{
    const char *text = getenv("CLNORM_EMULATE");
    if (!text || !*text) return CLNORM_SUCCESS;
    cln_emulation e;
    clnorm_status st = cln_emulate_parse(text, &e);
    if (st) return st;
    cln_emulate_apply(&e, p);
    return CLNORM_SUCCESS;
}
