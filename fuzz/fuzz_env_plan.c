/* fuzz_env_plan: the environment parser and the plan. The input sets the CLNORM_*
   variables of the plan (CLNORM_REDUCTION, CLNORM_VARIANT, CLNORM_WORK_GROUP,
   CLNORM_ROW_THREADS, CLNORM_SPLIT, CLNORM_MAX_WORK_GROUP, CLNORM_MAX_LOCAL_MEM), picks
   one of the devices present with limits that make it look smaller, an operation and
   a shape, then the cache folder variables and the other CLNORM_* variables, and
   checks:
   - clnorm_config_from_env accepts exactly what it documents, and a refusal is
     CLNORM_INVALID_ARGUMENT with a message naming the variable;
   - clnorm_plan_query under the hints read is pure (the same answer twice), answers
     the same through the thread's hints, and a refusal is UNSUPPORTED or
     INVALID_ARGUMENT with a reason;
   - every plan it gives keeps the invariants the kernels rely on to stay inside
     their views (fz_check_plan);
   - clnorm_cache_dir, after clnorm_config_set with the folder read, never overruns
     its buffer. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const plan_vars[] = {"CLNORM_REDUCTION", "CLNORM_VARIANT",
                                        "CLNORM_WORK_GROUP", "CLNORM_ROW_THREADS",
                                        "CLNORM_SPLIT", "CLNORM_MAX_WORK_GROUP",
                                        "CLNORM_MAX_LOCAL_MEM"};
static const char *const other_vars[] = {"CLNORM_PAIR_WORD", "CLNORM_PROGRAMS",
                                         "CLNORM_TUNING", "CLNORM_SERIAL", "CLNORM_TRACE",
                                         "CLNORM_BUILD_LOG"};

/* The process configuration at start: every hint automatic. */
static clnorm_config base;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    clnorm_config_get(&base);
    clnorm_plan_hints_init(&base.hints);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    for (size_t i = 0; i < sizeof plan_vars / sizeof plan_vars[0]; i++) fz_env(&f, plan_vars[i], 24);
    size_t dev_wg;
    cl_ulong dev_local;
    const clnorm_device_info *d = fz_device(&f, &dev_wg, &dev_local);
    clnorm_op op = (clnorm_op)(fz_u8(&f) % CLNORM_OP_COUNT);
    clnorm_dtype dt = (clnorm_dtype)(fz_u8(&f) % 3);
    size_t rows = fz_size(&f), cols = fz_size(&f);
    fz_shape(&rows, &cols); /* validated before any plan is made */
    int through_thread = fz_u8(&f) & 1;
    fz_env(&f, "CLNORM_CACHE_DIR", 200);
    fz_env(&f, "XDG_CACHE_HOME", 200);
    fz_env(&f, "HOME", 200);
    size_t len = 64 + fz_u8(&f) % 96;
    for (size_t i = 0; i < sizeof other_vars / sizeof other_vars[0]; i++) fz_env(&f, other_vars[i], 24);

    if (getenv("CLNORM_FUZZ_VERBOSE")) {
        fprintf(stderr, "device %s, limits wg %zu local %llu; op %d dtype %d rows %zu cols %zu\n",
                d->device_name, dev_wg, (unsigned long long)dev_local, (int)op, (int)dt, rows,
                cols);
        for (size_t i = 0; i < sizeof plan_vars / sizeof plan_vars[0]; i++)
            fprintf(stderr, "  %s=%s\n", plan_vars[i], getenv(plan_vars[i]) ? getenv(plan_vars[i]) : "(unset)");
        for (size_t i = 0; i < sizeof other_vars / sizeof other_vars[0]; i++)
            fprintf(stderr, "  %s=%s\n", other_vars[i], getenv(other_vars[i]) ? getenv(other_vars[i]) : "(unset)");
    }
    clnorm_config cfg;
    clnorm_status st = clnorm_config_from_env(&cfg);
    if (st != CLNORM_SUCCESS) {
        const char *msg = clnorm_last_error();
        FZ_ASSERT(st == CLNORM_INVALID_ARGUMENT, "config: %s", clnorm_status_string(st));
        FZ_ASSERT(strstr(msg, "CLNORM_") != NULL, "message names no variable: \"%s\"", msg);
    } else {
        clnorm_plan_hints h = cfg.hints;
        if (!h.max_work_group) h.max_work_group = dev_wg;
        if (!h.max_local_mem) h.max_local_mem = dev_local;
        clnorm_plan_info a, b;
        char wa[512], wb[512];
        clnorm_status sa = clnorm_plan_query(d->device, &h, op, dt, rows, cols, &a);
        snprintf(wa, sizeof wa, "%s", sa ? clnorm_last_error() : "");
        clnorm_status sb = clnorm_plan_query(d->device, &h, op, dt, rows, cols, &b);
        snprintf(wb, sizeof wb, "%s", sb ? clnorm_last_error() : "");
        FZ_ASSERT(sa == sb && (sa || !memcmp(&a, &b, sizeof a)) && !strcmp(wa, wb), "not pure");
        if (through_thread) {
            /* The thread's hints are checked as the query's are, and plan alike. */
            clnorm_status sh = clnorm_set_thread_hints(&h);
            if (sh != CLNORM_SUCCESS) {
                FZ_ASSERT(sh == CLNORM_INVALID_ARGUMENT && sa == sh, "thread hints refused (%s) "
                          "where the query gave %s", clnorm_last_error(),
                          clnorm_status_string(sa));
            } else {
                sb = clnorm_plan_query(d->device, NULL, op, dt, rows, cols, &b);
                FZ_ASSERT(sa == sb && (sa || !memcmp(&a, &b, sizeof a)),
                          "the thread's hints plan otherwise: %s", clnorm_status_string(sb));
                clnorm_set_thread_hints(NULL);
            }
        }
        if (sa == CLNORM_SUCCESS) {
            fz_limits lim = {h.max_work_group, h.max_local_mem, h.reduction};
            fz_check_plan(d, &lim, op, rows, cols, &a);
        } else {
            FZ_ASSERT((sa == CLNORM_UNSUPPORTED || sa == CLNORM_INVALID_ARGUMENT) && wa[0],
                      "plan refused with %s, reason \"%s\"", clnorm_status_string(sa), wa);
        }
    }

    /* The cache folder from CLNORM_CACHE_DIR / XDG_CACHE_HOME / HOME, worked out when
       the configuration is set. */
    clnorm_config c2 = base;
    memcpy(c2.cache_dir, cfg.cache_dir, sizeof c2.cache_dir);
    FZ_ASSERT(clnorm_config_set(&c2) == CLNORM_SUCCESS, "config_set: %s", clnorm_last_error());
    char dir[160];
    memset(dir, 0x5a, sizeof dir);
    clnorm_cache_file_status r = clnorm_cache_dir(dir, len);
    FZ_ASSERT(r == CLNORM_CACHE_FILE_OK || r == CLNORM_CACHE_FILE_OFF, "clnorm_cache_dir = %d",
              (int)r);
    FZ_ASSERT(memchr(dir, 0, len) != NULL, "no terminator in %zu", len);
    for (size_t i = len; i < sizeof dir; i++) FZ_ASSERT(dir[i] == 0x5a, "wrote past %zu", len);
    return 0;
}
