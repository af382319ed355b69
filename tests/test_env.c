/* environment: the per-operation environment snapshot (src/env.c) answers as getenv would:
   exact names only (no prefix matches), HOME and XDG_CACHE_HOME beside the CLNORM_
   variables, nested begin/end, changes seen by the next operation, and getenv's
   answer when more variables match than the snapshot keeps. */
#include "test.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static const char *show(const char *s) { return s ? s : "(null)"; }

#define EXPECT_ENV(name, want)                                                          \
    CHECK(same(cln_getenv(name), (want)), "cln_getenv(\"%s\") = \"%s\", expected \"%s\"", \
          (name), show(cln_getenv(name)), show(want))

void test_environment(void)
{
    t_setenv("CLNORM_TEST_AB", "long");
    t_setenv("CLNORM_TEST_A", NULL);
    t_setenv("XDG_CACHE_HOME", "/tmp/xdg-test");
    const char *home = getenv("HOME");

    cln_env_begin();
    EXPECT_ENV("CLNORM_TEST_AB", "long");
    EXPECT_ENV("CLNORM_TEST_A", NULL); /* a prefix of a set name is not set */
    EXPECT_ENV("CLNORM_TEST", NULL);
    EXPECT_ENV("XDG_CACHE_HOME", "/tmp/xdg-test");
    EXPECT_ENV("HOME", home);
    cln_env_begin(); /* nested: the outer snapshot holds */
    EXPECT_ENV("CLNORM_TEST_AB", "long");
    cln_env_end();
    EXPECT_ENV("CLNORM_TEST_AB", "long");
    cln_env_end();

    /* The next operation sees a change. */
    t_setenv("CLNORM_TEST_A", "short");
    cln_env_begin();
    EXPECT_ENV("CLNORM_TEST_A", "short");
    EXPECT_ENV("CLNORM_TEST_AB", "long");
    cln_env_end();
    cln_env_end(); /* one end too many is harmless */
    EXPECT_ENV("CLNORM_TEST_A", "short");

    /* More CLNORM_ variables than the snapshot keeps: every lookup still answers. */
    char name[40], value[40];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "CLNORM_TEST_MANY_%02d", i);
        snprintf(value, sizeof value, "v%d", i);
        t_setenv(name, value);
    }
    cln_env_begin();
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "CLNORM_TEST_MANY_%02d", i);
        snprintf(value, sizeof value, "v%d", i);
        EXPECT_ENV(name, value);
    }
    EXPECT_ENV("CLNORM_TEST_A", "short");
    cln_env_end();
    t_env_restore();
    EXPECT_ENV("CLNORM_TEST_A", NULL);
}

/* The tools pin PoCL's worker threads only where the user left POCL_AFFINITY unset and
   the process may run on every CPU that PoCL would pin a worker to. */
void test_pocl_pin(void)
{
    static const struct {
        const char *env;
        size_t cpus, prefix;
        int want;
    } cases[] = {
        {NULL, 2, 2, 1},   {"", 16, 16, 1},  /* unset or empty: pin */
        {"0", 2, 2, 0},    {"1", 2, 2, 0},   /* the user's choice stands */
        {NULL, 1, 1, 0},                     /* one CPU: nothing to spread */
        {NULL, 0, 0, 0},                     /* the count is unknown */
        {NULL, 16, 4, 0},  {NULL, 2, 0, 0},  /* taskset -c 4-15, or CPU 0 not ours */
        {NULL, 2, 3, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = cln_pocl_pin_wanted(cases[i].env, cases[i].cpus, cases[i].prefix);
        CHECK(got == cases[i].want, "POCL_AFFINITY=%s, %zu CPUs, CPUs 0..%zu allowed: pin %d, "
              "want %d", cases[i].env ? cases[i].env : "(unset)", cases[i].cpus,
              cases[i].prefix, got, cases[i].want);
    }
}
