/* fuzz_env_plan: the environment parsers and the plan function. The input sets the
   CLNORM_* shape variables (CLNORM_REDUCTION, CLNORM_VARIANT, CLNORM_WORK_GROUP,
   CLNORM_ROW_THREADS, CLNORM_SPLIT, CLNORM_MAX_WORK_GROUP, CLNORM_MAX_LOCAL_MEM) and
   the cache folder variables, makes up a device profile, an operation and a shape,
   then checks:
   - cln_limits_from_env accepts exactly what it documents, and a refusal is
     CLNORM_INVALID_ARGUMENT with a message naming the variable;
   - cln_plan_make is pure (the same answer twice) and a refusal is UNSUPPORTED or
     INVALID_ARGUMENT with a reason;
   - every plan it accepts keeps the invariants the kernels rely on to stay inside
     their views (fz_check_plan);
   - cln_disk_dir never overruns its buffer. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vars[] = {"CLNORM_REDUCTION", "CLNORM_VARIANT", "CLNORM_WORK_GROUP",
                                   "CLNORM_ROW_THREADS", "CLNORM_SPLIT",
                                   "CLNORM_MAX_WORK_GROUP", "CLNORM_MAX_LOCAL_MEM"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) fz_env(&f, vars[i], 24);
    cln_profile p;
    fz_profile(&f, &p);
    cln_op op = (cln_op)(fz_u8(&f) % CLN_OP_COUNT);
    clnorm_dtype dt = (clnorm_dtype)(fz_u8(&f) % 3);
    size_t rows = fz_size(&f), cols = fz_size(&f);
    fz_shape(&rows, &cols); /* validated before any plan is made */
    int no_pairs = fz_u8(&f) & 1; /* views with odd row starts (set by ops.c) */

    if (getenv("CLNORM_FUZZ_VERBOSE")) {
        fprintf(stderr, "profile: type %#llx cus %u max_wg %zu local %llu pref %zu vec %u path %d "
                "loop_limit %u pocl %d; op %d dtype %d rows %zu cols %zu\n",
                (unsigned long long)p.type, p.compute_units, p.max_wg,
                (unsigned long long)p.local_mem, p.pref_multiple, p.vec, (int)p.best_path,
                p.loop_limit, p.pocl_major, (int)op, (int)dt, rows, cols);
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            fprintf(stderr, "  %s=%s\n", vars[i], getenv(vars[i]) ? getenv(vars[i]) : "(unset)");
    }
    cln_limits lim;
    clnorm_status st = cln_limits_from_env(&lim);
    if (st != CLNORM_SUCCESS) {
        const char *msg = clnorm_last_error();
        FZ_ASSERT(st == CLNORM_INVALID_ARGUMENT, "limits: %s", clnorm_status_string(st));
        FZ_ASSERT(strstr(msg, "CLNORM_") != NULL, "message names no variable: \"%s\"", msg);
    } else {
        cln_plan a, b;
        char wa[512] = "", wb[512] = "";
        lim.no_pairs = no_pairs;
        clnorm_status sa = cln_plan_make(&p, &lim, op, dt, rows, cols, &a, wa, sizeof wa);
        clnorm_status sb = cln_plan_make(&p, &lim, op, dt, rows, cols, &b, wb, sizeof wb);
        FZ_ASSERT(sa == sb && !memcmp(&a, &b, sizeof a) && !strcmp(wa, wb), "not pure");
        if (sa == CLNORM_SUCCESS) fz_check_plan(&p, &lim, op, dt, rows, cols, &a);
        else
            FZ_ASSERT((sa == CLNORM_UNSUPPORTED || sa == CLNORM_INVALID_ARGUMENT) && wa[0],
                      "plan refused with %s, reason \"%s\"", clnorm_status_string(sa), wa);
    }

    /* The cache folder from CLNORM_CACHE_DIR / XDG_CACHE_HOME / HOME (no creation). */
    fz_env(&f, "CLNORM_CACHE_DIR", 200);
    fz_env(&f, "XDG_CACHE_HOME", 200);
    fz_env(&f, "HOME", 200);
    char dir[160];
    memset(dir, 0x5a, sizeof dir);
    size_t len = 64 + fz_u8(&f) % 96;
    int r = cln_disk_dir(dir, len, 0);
    FZ_ASSERT(r == CLN_DISK_OK || r == CLN_DISK_OFF, "cln_disk_dir(create 0) = %d", r);
    if (r == CLN_DISK_OK) FZ_ASSERT(memchr(dir, 0, len) != NULL, "no terminator in %zu", len);
    for (size_t i = len; i < sizeof dir; i++) FZ_ASSERT(dir[i] == 0x5a, "wrote past %zu", len);
    return 0;
}
