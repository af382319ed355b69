/* What a test case is and what it may use: the registry of cases, the device under
   test, and the assertions (runner.c). The helpers the cases share are declared in
   util.h, included here. */
#ifndef CLNORM_TEST_H
#define CLNORM_TEST_H

#include "clnorm.h"
#include "util.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- The registry ------------------------------------------------------------------
   One line per case: TEST_CASE(<name>, device) or TEST_CASE(<name>, unit). The case is
   the function void test_<name>(void), in a tests/test_*.c file. The runner builds its
   table from this list, and tests/CMakeLists.txt reads these lines to register the
   CTest tests: a device case runs once per device label as <name>@<label>, a unit
   case once, labelled unit. Keep each entry on a line of its own, as written here. */
#define TEST_CASES(TEST_CASE)                               \
    TEST_CASE(values_rmsnorm, device)                       \
    TEST_CASE(values_softmax_3pass, device)                 \
    TEST_CASE(values_softmax_online, device)                \
    TEST_CASE(values_softmax_auto, device)                  \
    TEST_CASE(values_stats, device)                         \
    TEST_CASE(values_lowp, device)                          \
    TEST_CASE(programs_one, device)                         \
    TEST_CASE(views, device)                                \
    TEST_CASE(events, device)                               \
    TEST_CASE(bad_input, device)                            \
    TEST_CASE(special_values, device)                       \
    TEST_CASE(reduction_paths, device)                      \
    TEST_CASE(work_group_sizes, device)                     \
    TEST_CASE(threads, device)                              \
    TEST_CASE(host_api, device)                             \
    TEST_CASE(warmup_release, device)                       \
    TEST_CASE(warmup_builds, device)                        \
    TEST_CASE(disk_cache_roundtrip, device)                 \
    TEST_CASE(disk_cache_damaged, device)                   \
    TEST_CASE(disk_cache_unusable, device)                  \
    TEST_CASE(disk_cache_processes, device)                 \
    TEST_CASE(disk_cache_invalidate, device)                \
    TEST_CASE(tuning_file, device)                          \
    TEST_CASE(add_rmsnorm_values, device)                   \
    TEST_CASE(add_rmsnorm_views, device)                    \
    TEST_CASE(rmsnorm_extreme, device)                      \
    TEST_CASE(lowp_special, device)                         \
    TEST_CASE(softmax_bf16_tiny, device)                    \
    TEST_CASE(variants, device)                             \
    TEST_CASE(split_scratch, device)                        \
    TEST_CASE(kernel_args, device)                          \
    TEST_CASE(config_api, device)                           \
    TEST_CASE(env_refused, device)                          \
    TEST_CASE(plan_query, device)                           \
    TEST_CASE(near_flt_max, device)                         \
    TEST_CASE(softmax_check, device)                        \
    TEST_CASE(sharded_values, device)                       \
    TEST_CASE(sharded_special, device)                      \
    TEST_CASE(sharded_bad_input, device)                    \
    TEST_CASE(sharded_devices, device)                      \
    TEST_CASE(sharded_threads, device)                      \
    TEST_CASE(softmax_apply, device)                        \
    TEST_CASE(stats_merge_rows, device)                     \
    TEST_CASE(given_events, device)                         \
    TEST_CASE(coop_softmax, device)                         \
    TEST_CASE(coop_threads, device)                         \
    TEST_CASE(coop_repeat, device)                          \
    TEST_CASE(coop_queues, device)                          \
    TEST_CASE(coop_sync_words, device)                      \
    TEST_CASE(attention_values, device)                     \
    TEST_CASE(attention_views, device)                      \
    TEST_CASE(attention_long, device)                       \
    TEST_CASE(attention_split, device)                      \
    TEST_CASE(attention_special, device)                    \
    TEST_CASE(attention_merge, device)                      \
    TEST_CASE(attention_bad_input, device)                  \
    TEST_CASE(attention_events, device)                     \
    TEST_CASE(release_race, device)                         \
    TEST_CASE(fast_path_fallback, device)                   \
    TEST_CASE(probe_checks, device)                         \
    TEST_CASE(fast_path_fallback_entries, device)           \
    TEST_CASE(emulated_limits, device)                      \
    TEST_CASE(merge, unit)                                  \
    TEST_CASE(status_strings, unit)                         \
    TEST_CASE(views_meet, unit)                             \
    TEST_CASE(version, unit)                                \
    TEST_CASE(plan, unit)                                   \
    TEST_CASE(build_options, unit)                          \
    TEST_CASE(pocl_pin, unit)                               \
    TEST_CASE(kernel_table, unit)                           \
    TEST_CASE(plan_apply, unit)                             \
    TEST_CASE(attention_plan, unit)                         \
    TEST_CASE(plan_embedded, unit)                          \
    TEST_CASE(emulate, unit)                                \
    TEST_CASE(kernel_source_c12, unit)

#define TEST_DECLARE_(name, kind) void test_##name(void);
TEST_CASES(TEST_DECLARE_)
#undef TEST_DECLARE_

/* ---- The device under test (set by the runner for device cases) ------------------ */
typedef struct test_env {
    const char *spec;       /* --device SPEC, or NULL for the library's default */
    clnorm_session *s;
    cl_context ctx;
    cl_command_queue q;     /* the session's in-order queue */
    cl_device_id dev;
    const char *dev_name;   /* "" for unit cases */
} test_env;
extern test_env T;

/* ---- Assertions: print file:line, the values and the device; count failures ------- */
void t_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void t_fail_check(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void t_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int t_failures(void);
int t_check_status(const char *file, int line, const char *expr, clnorm_status got,
                   clnorm_status want);
int t_check_cl(const char *file, int line, const char *expr, cl_int err);

/* CHECK(cond, fmt, ...): fmt says what was expected, with the values. */
#define CHECK(cond, ...) \
    ((cond) ? 1 : (t_fail_check(__FILE__, __LINE__, #cond, __VA_ARGS__), 0))
#define CHECK_ST(call, want) t_check_status(__FILE__, __LINE__, #call, (call), (want))
/* For the tests' own OpenCL calls: an error here is a test failure too. */
#define CHECK_CL(call) t_check_cl(__FILE__, __LINE__, #call, (call))
#define NOTE(...) t_note(__VA_ARGS__)

#endif
