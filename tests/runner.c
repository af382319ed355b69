/* The clnorm test runner: one registry of cases, a session per device case,
   assertions that count failures, and the seeded random generator.

     clnorm_tests --list
     clnorm_tests NAME [--device SPEC]      exit 0 pass, 1 fail, 77 skipped
     clnorm_tests all  [--device SPEC]
     clnorm_tests --check-registry DEVICE_CASES UNIT_CASES   (comma-separated) */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ctype.h>

typedef struct tcase { const char *name; void (*fn)(void); int needs_device; } tcase;
#define TEST_ENTRY_(name, dev) {#name, test_##name, dev},
static const tcase cases[] = { TEST_CASES(TEST_ENTRY_) };
#undef TEST_ENTRY_
#define NCASES (sizeof(cases) / sizeof(cases[0]))

test_env T;
rng R;
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

/* ---- random numbers: splitmix64 ---------------------------------------------------- */
rng rng_make(uint64_t seed) { rng r = {seed ^ 0x9E3779B97F4A7C15ull}; return r; }

uint64_t rng_u64(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double rng_unit(rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }
size_t rng_below(rng *r, size_t n) { return n ? (size_t)(rng_u64(r) % n) : 0; }
double rng_range(rng *r, double lo, double hi) { return lo + (hi - lo) * rng_unit(r); }
uint64_t t_seed(void) { return g_seed; }

/* ---- environment ------------------------------------------------------------------- */
enum { MAX_SAVED_ENV = 16 };
static struct { char name[64]; char *old; int had; } saved_env[MAX_SAVED_ENV];
static int n_saved_env;

void t_setenv(const char *name, const char *value)
{
    int i;
    for (i = 0; i < n_saved_env && strcmp(saved_env[i].name, name); i++) {}
    if (i == n_saved_env && n_saved_env < MAX_SAVED_ENV) {
        const char *old = getenv(name);
        snprintf(saved_env[i].name, sizeof saved_env[i].name, "%s", name);
        saved_env[i].had = old != NULL;
        saved_env[i].old = old ? strdup(old) : NULL;
        n_saved_env++;
    }
    if (value) setenv(name, value, 1); else unsetenv(name);
}

void t_env_restore(void)
{
    for (int i = 0; i < n_saved_env; i++) {
        if (saved_env[i].had) setenv(saved_env[i].name, saved_env[i].old, 1);
        else unsetenv(saved_env[i].name);
        free(saved_env[i].old);
    }
    n_saved_env = 0;
}

double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int t_mentions(const char *msg, const char *word)
{
    size_t wl = strlen(word), ml = strlen(msg);
    int bounded = wl <= 2 && isalpha((unsigned char)word[0]);
    for (size_t i = 0; i + wl <= ml; i++) {
        size_t k = 0;
        while (k < wl && tolower((unsigned char)msg[i + k]) == tolower((unsigned char)word[k])) k++;
        if (k < wl) continue;
        if (!bounded) return 1;
        int before = i > 0 && (isalnum((unsigned char)msg[i - 1]) || msg[i - 1] == '_');
        int after = isalnum((unsigned char)msg[i + wl]) || msg[i + wl] == '_';
        if (!before && !after) return 1;
    }
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
        if (rc) return rc;
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
    if (c->needs_device) close_device();
    return failed ? 1 : 0;
}

/* Is name in the comma-separated list csv? */
static int in_csv(const char *csv, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = csv; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int check_list_side(const char *csv, int needs_device)
{
    int bad = 0;
    char *copy = strdup(csv);
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        const tcase *c = find_case(tok);
        if (!c || c->needs_device != needs_device) {
            printf("FAIL: CMake lists %s as a %s case, the registry %s\n", tok,
                   needs_device ? "device" : "unit",
                   !c ? "does not have it" : "has it of the other kind");
            bad = 1;
        }
    }
    free(copy);
    return bad;
}

static int check_registry(const char *dev_csv, const char *unit_csv)
{
    int bad = check_list_side(dev_csv, 1) | check_list_side(unit_csv, 0);
    for (size_t i = 0; i < NCASES; i++) {
        const char *csv = cases[i].needs_device ? dev_csv : unit_csv;
        if (!in_csv(csv, cases[i].name)) {
            printf("FAIL: registry case %s is missing from CLNORM_%s_CASES in "
                   "tests/CMakeLists.txt\n", cases[i].name,
                   cases[i].needs_device ? "DEVICE" : "UNIT");
            bad = 1;
        }
    }
    printf("%s: %zu cases in the registry\n", bad ? "FAILED" : "passed", NCASES);
    return bad;
}

static int usage(void)
{
    printf("usage: clnorm_tests --list | NAME|all [--device SPEC] | "
           "--check-registry DEVICE_CSV UNIT_CSV\n");
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
        } else if (!strcmp(argv[i], "--check-registry")) {
            if (i + 2 >= argc) return usage();
            return check_registry(argv[i + 1], argv[i + 2]);
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
    int failed = 0, ran = 0, skipped = 0;
    for (size_t k = 0; k < NCASES; k++) {
        int rc = run_case(&cases[k], spec);
        if (rc == 77) { skipped++; continue; }
        ran++;
        if (rc) failed++;
    }
    printf("all: %d run, %d failed, %d skipped\n", ran, failed, skipped);
    return failed ? 1 : 0;
}
