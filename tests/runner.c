/* The clnorm test runner: the table of cases from the registry in test.h, a session
   per device case, assertions that count failures, and one random seed per run.

     clnorm_tests --list                    every case and its kind
     clnorm_tests NAME [--device SPEC]      exit 0 pass, 1 fail, 77 skipped
     clnorm_tests all  [--device SPEC]      every case in turn, then a summary */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tcase { const char *name; void (*fn)(void); int needs_device; } tcase;
/* A kind other than device or unit does not compile. */
enum { KIND_unit = 0, KIND_device = 1 };
#define TEST_ENTRY_(name, kind) {#name, test_##name, KIND_##kind},
static const tcase cases[] = { TEST_CASES(TEST_ENTRY_) };
#undef TEST_ENTRY_
#define NCASES COUNT_OF(cases)

test_env T;
static atomic_int g_failures;
static uint64_t g_seed;
enum { MAX_PRINTED = 200 };   /* a broken kernel must not flood the log */

/* ---- assertions ------------------------------------------------------------------ */
static void vreport(const char *file, int line, const char *cond, const char *fmt,
                    va_list ap)
{
    int n = atomic_fetch_add(&g_failures, 1);
    if (n >= MAX_PRINTED) {
        if (n == MAX_PRINTED) printf("... further failures not printed\n");
        return;
    }
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* One printf per failure, so that lines of threads do not interleave. */
    printf("%s:%d: FAIL [%s]: %s%s%s%s\n", file, line,
           T.dev_name && *T.dev_name ? T.dev_name : "no device", cond ? "CHECK(" : "",
           cond ? cond : "", cond ? ") " : "", msg);
    fflush(stdout);
}

void t_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(file, line, NULL, fmt, ap);
    va_end(ap);
}

void t_fail_check(const char *file, int line, const char *cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(file, line, cond, fmt, ap);
    va_end(ap);
}

void t_note(const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("  note: %s\n", msg);
    fflush(stdout);
}

int t_failures(void) { return atomic_load(&g_failures); }

int t_check_status(const char *file, int line, const char *expr, clnorm_status got,
                   clnorm_status want)
{
    if (got == want) return 1;
    char err[2048];   /* copied first: any clnorm call may replace it */
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    t_fail(file, line, "%s returned %s, expected %s; last error: \"%s\"", expr,
           clnorm_status_string(got), clnorm_status_string(want), err);
    return 0;
}

int t_check_cl(const char *file, int line, const char *expr, cl_int err)
{
    if (err == CL_SUCCESS) return 1;
    t_fail(file, line, "%s returned OpenCL error %d", expr, (int)err);
    return 0;
}

/* ---- running cases ----------------------------------------------------------------- */
static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static const tcase *find_case(const char *name)
{
    for (size_t i = 0; i < NCASES; i++)
        if (!strcmp(cases[i].name, name)) return &cases[i];
    return NULL;
}

/* Opens the session of spec; 0 ok, 77 no such device, 1 error. */
static int open_device(const char *spec)
{
    memset(&T, 0, sizeof T);
    T.spec = spec;
    T.dev_name = "";
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) {
        printf("SKIP: no device matches %s\n", spec ? spec : "(default)");
        return 77;
    }
    if (st != CLNORM_SUCCESS || !s) {
        printf("FAIL: clnorm_session_create(\"%s\") returned %s: %s\n", spec ? spec : "NULL",
               clnorm_status_string(st), clnorm_last_error());
        return 1;
    }
    T.s = s;
    T.ctx = clnorm_session_context(s);
    T.q = clnorm_session_queue(s);
    T.dev_name = clnorm_session_device_name(s);
    if (!T.ctx || !T.q || !T.dev_name) {
        printf("FAIL: session accessors returned NULL\n");
        return 1;
    }
    if (clGetCommandQueueInfo(T.q, CL_QUEUE_DEVICE, sizeof T.dev, &T.dev, NULL) != CL_SUCCESS) {
        printf("FAIL: clGetCommandQueueInfo(CL_QUEUE_DEVICE) on the session queue\n");
        return 1;
    }
    return 0;
}

static void close_device(void)
{
    clnorm_session_destroy(T.s);
    memset(&T, 0, sizeof T);
    T.dev_name = "";
}

/* Runs one case; returns 0 pass, 1 fail, 77 skipped. */
static int run_case(const tcase *c, const char *spec)
{
    if (c->needs_device) {
        int rc = open_device(spec);
        if (rc) {
            printf("== %s: %s\n", c->name, rc == 77 ? "skipped" : "FAILED, no session");
            return rc;
        }
        printf("== %s on device \"%s\" (spec %s)\n", c->name, T.dev_name,
               spec ? spec : "default");
    } else {
        memset(&T, 0, sizeof T);
        T.dev_name = "";
        printf("== %s (no device)\n", c->name);
    }
    R = rng_make(g_seed ^ hash_name(c->name));
    int before = t_failures();
    double t0 = t_now();
    c->fn();
    t_env_restore();
    int failed = t_failures() - before;
    printf("== %s: %s, %d failed assertion%s, %.2f s%s%s\n", c->name,
           failed ? "FAILED" : "passed", failed, failed == 1 ? "" : "s", t_now() - t0,
           c->needs_device ? " on " : "", c->needs_device ? T.dev_name : "");
    if (failed)
        printf("== to run it again: CLNORM_TEST_SEED=%llu clnorm_tests %s%s%s\n",
               (unsigned long long)g_seed, c->name, c->needs_device && spec ? " --device " : "",
               c->needs_device && spec ? spec : "");
    if (c->needs_device) close_device();
    return failed ? 1 : 0;
}

static int usage(void)
{
    printf("usage: clnorm_tests --list\n"
           "       clnorm_tests NAME|all [--device SPEC]\n"
           "exit status: 0 passed, 1 failed, 77 skipped (no such device), 2 usage\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *name = NULL, *spec = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) {
            for (size_t k = 0; k < NCASES; k++)
                printf("%s\t%s\n", cases[k].name, cases[k].needs_device ? "device" : "unit");
            return 0;
        } else if (!strcmp(argv[i], "--device")) {
            if (++i >= argc) return usage();
            spec = argv[i];
        } else if (!name && argv[i][0] != '-') {
            name = argv[i];
        } else {
            return usage();
        }
    }
    if (!name) return usage();

    const char *env_seed = getenv("CLNORM_TEST_SEED");
    g_seed = env_seed && *env_seed ? strtoull(env_seed, NULL, 0)
                                   : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    printf("seed %llu (set CLNORM_TEST_SEED=%llu to reproduce)\n",
           (unsigned long long)g_seed, (unsigned long long)g_seed);

    if (strcmp(name, "all")) {
        const tcase *c = find_case(name);
        if (!c) {
            printf("no case named %s (see --list)\n", name);
            return 2;
        }
        return run_case(c, spec);
    }
    /* Every case in turn, then one line per outcome naming the cases. */
    int rcs[NCASES], counts[3] = {0, 0, 0};
    for (size_t k = 0; k < NCASES; k++) {
        rcs[k] = run_case(&cases[k], spec);
        counts[rcs[k] == 77 ? 2 : rcs[k] ? 1 : 0]++;
    }
    static const char *outcome[3] = {"passed", "FAILED", "skipped"};
    printf("== all: %zu cases, %d passed, %d failed, %d skipped\n", NCASES, counts[0],
           counts[1], counts[2]);
    for (int o = 1; o < 3; o++) {
        if (!counts[o]) continue;
        printf("== %s:", outcome[o]);
        for (size_t k = 0; k < NCASES; k++)
            if ((rcs[k] == 77 ? 2 : rcs[k] ? 1 : 0) == o) printf(" %s", cases[k].name);
        printf("\n");
    }
    return counts[1] ? 1 : 0;
}
