/* pocl_pin: when the clnorm command pins PoCL's worker threads (tools/pin.c). */
#include "test.h"
#include "../tools/pin.h"

#include <stddef.h>

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
        int got = tool_pocl_pin_wanted(cases[i].env, cases[i].cpus, cases[i].prefix);
        CHECK(got == cases[i].want, "POCL_AFFINITY=%s, %zu CPUs, CPUs 0..%zu allowed: pin %d, "
              "want %d", cases[i].env ? cases[i].env : "(unset)", cases[i].cpus,
              cases[i].prefix, got, cases[i].want);
    }
}
