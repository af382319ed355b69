/* Shared declarations of the clnorm test runner: the case registry, the device under
   test, assertions, and the helpers every case uses (runner.c, test_util.c). */
#ifndef CLNORM_TEST_H
#define CLNORM_TEST_H

#include "clnorm.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- The registry ----------------------------------------------------------------
   X(name, needs_device). tests/CMakeLists.txt keeps the same names in
   CLNORM_DEVICE_CASES / CLNORM_UNIT_CASES; the registry_matches test compares them. */
#define TEST_CASES(X)                                                                  \
    X(values_rmsnorm, 1)                                                               \
    X(values_softmax_3pass, 1)                                                         \
    X(values_softmax_online, 1)                                                        \
    X(values_softmax_auto, 1)                                                          \
    X(values_stats, 1)                                                                 \
    X(values_lowp, 1)                                                                  \
    X(programs_one, 1)                                                                 \
    X(views, 1)                                                                        \
    X(events, 1)                                                                       \
    X(bad_input, 1)                                                                    \
    X(special_values, 1)                                                               \
    X(reduction_paths, 1)                                                              \
    X(work_group_sizes, 1)                                                             \
    X(threads, 1)                                                                      \
    X(host_api, 1)                                                                     \
    X(warmup_release, 1)                                                               \
    X(disk_cache_roundtrip, 1)                                                         \
    X(disk_cache_damaged, 1)                                                           \
    X(disk_cache_unusable, 1)                                                          \
    X(disk_cache_processes, 1)                                                         \
    X(disk_cache_invalidate, 1)                                                        \
    X(tuning_file, 1)                                                                  \
    X(add_rmsnorm_values, 1)                                                           \
    X(add_rmsnorm_views, 1)                                                            \
    X(rmsnorm_extreme, 1)                                                              \
    X(lowp_special, 1)                                                                 \
    X(variants, 1)                                                                     \
    X(split_scratch, 1)                                                                \
    X(merge, 0)                                                                        \
    X(environment, 0)                                                                  \
    X(status_strings, 0)                                                               \
    X(version, 0)                                                                      \
    X(plan, 0)                                                                         \
    X(build_options, 0)                                                                \
    X(pocl_pin, 0)

#define TEST_DECLARE_(name, dev) void test_##name(void);
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

/* ---- Random numbers: one seed per run, printed; CLNORM_TEST_SEED reproduces ------- */
typedef struct rng { uint64_t s; } rng;
extern rng R;               /* the main thread's generator, reseeded per case */
uint64_t t_seed(void);
rng rng_make(uint64_t seed);
uint64_t rng_u64(rng *r);
double rng_unit(rng *r);                      /* [0, 1) */
size_t rng_below(rng *r, size_t n);           /* [0, n) */
double rng_range(rng *r, double lo, double hi);
#define PICK(r, arr) ((arr)[rng_below((r), sizeof(arr) / sizeof((arr)[0]))])
#define COUNT_OF(arr) (sizeof(arr) / sizeof((arr)[0]))

/* ---- Environment ------------------------------------------------------------------ */
/* setenv that remembers the first previous value; t_env_restore() puts all back. */
void t_setenv(const char *name, const char *value);
void t_env_restore(void);
double t_now(void);                           /* seconds, monotonic */
/* msg names word: short alphabetic words (x, y, ld) must stand alone, the rest is a
   case-insensitive substring. */
int t_mentions(const char *msg, const char *word);

/* ---- Element types --------------------------------------------------------------- */
size_t dt_size(clnorm_dtype dt);
const char *dt_name(clnorm_dtype dt);
void dt_pack(clnorm_dtype dt, const float *src, void *dst, size_t n);
void dt_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n);
void dt_fill_bits(clnorm_dtype dt, void *dst, size_t n, uint32_t bits);
/* API.md's accuracy rule for rows of `cols` elements. */
double tol_rel(clnorm_dtype dt, size_t cols);
double tol_abs(clnorm_dtype dt);
/* Set CLNORM_TEST_VERBOSE=1 to print every checked op with its timings. */
int t_verbose(void);

/* ---- Operations under test ------------------------------------------------------- */
typedef enum top {
    OP_RMSNORM, OP_SOFTMAX_3PASS, OP_SOFTMAX_ONLINE, OP_SOFTMAX_AUTO, OP_STATS, OP_COUNT
} top;
const char *op_name(top op);
clnorm_softmax_algo op_algo(top op);

/* float64 references. x is rows x cols packed; outputs packed. */
void ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                 double *y);
void ref_softmax(const float *x, size_t rows, size_t cols, double *y);
void ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l);

/* 1 if got is within (rel, abs) of want; NaN must be NaN, inf the same inf. */
int t_close(float got, double want, double rel, double abs);
/* Counts the elements outside the rule as one failure, printing the first few. */
size_t t_compare(const char *file, int line, const char *label, const float *got,
                 const double *want, size_t rows, size_t cols, double rel, double abs);
#define COMPARE(label, got, want, rows, cols, rel, abs) \
    t_compare(__FILE__, __LINE__, (label), (got), (want), (rows), (cols), (rel), (abs))

/* Random rows: per-row offsets of up to +-1e6 and spreads so that the max subtraction
   matters; magnitudes stay where float32 sums of squares cannot overflow. */
void gen_rows(rng *r, float *x, size_t rows, size_t cols);
/* One row of a given kind (-1: random): near-constant rows are the hardest for float32
   accumulation, far offsets for the max subtraction. */
enum { ROW_FAR_OFFSET = 4, ROW_NEAR_CONSTANT = 7, ROW_KINDS = 8 };
void gen_row(rng *r, float *x, size_t cols, int kind);
void gen_gamma(rng *r, float *g, size_t cols);

/* ---- One operation on device buffers, checked ------------------------------------ */
enum { LAYOUT_SEPARATE = 0, LAYOUT_INPLACE = 1, LAYOUT_SAME_BUFFER = 2 };
#define POISON_NAN 0u  /* y elements poisoned with a NaN no kernel produces */
#define POISON_CD  1u  /* y poisoned with 0xCD bytes */

typedef struct op_args {
    top op;
    clnorm_dtype dt;
    size_t rows, cols;
    size_t xoff, xld, yoff, yld;  /* ld 0 = packed, passed to the library as 0 */
    int layout;                   /* LAYOUT_*; SAME_BUFFER: caller keeps views apart */
    int exact;                    /* buffers end exactly at the last view element */
    const float *x;               /* rows x cols packed values */
    const float *gamma;           /* cols values, or NULL */
    float eps;
    unsigned poison;              /* POISON_* */
    cl_command_queue q;           /* NULL: T.q */
} op_args;

typedef struct op_out { float *y, *m, *l; } op_out;  /* packed; op_out_free */
void op_out_free(op_out *o);
void op_label(const op_args *a, char *buf, size_t len);

/* Enqueues the op on buffers laid out as asked (canaries around every view), waits
   for its event, reads everything back and checks that nothing outside y (and
   row_max/row_sum) changed and that every y element was written. On a refused
   request checks that no buffer changed. Values are not checked here. */
clnorm_status run_op(const op_args *a, op_out *o);
/* Compares o with the float64 reference of a; returns the number of bad elements. */
size_t verify_op(const op_args *a, const op_out *o);
/* run_op + verify_op, expecting status want (for F16/BF16 a want of SUCCESS also
   accepts UNSUPPORTED). Returns the status. */
clnorm_status check_op(const op_args *a, clnorm_status want);
/* One host-API call of op on a random problem (in place or not), checked. */
void check_host_op(top op, clnorm_dtype dt, size_t rows, size_t cols, int inplace);
/* A random packed problem of one op: fills *a (x and gamma malloc'd into xbuf and gbuf). */
void make_problem(rng *r, op_args *a, top op, size_t rows, size_t cols, float **xbuf,
                  float **gbuf);

/* ---- OpenCL helpers --------------------------------------------------------------- */
cl_mem t_buffer(cl_context ctx, size_t bytes, const void *init); /* NULL on failure */
int t_read(cl_command_queue q, cl_mem m, size_t bytes, void *dst);
cl_context t_queue_context(cl_command_queue q);
cl_command_queue t_new_queue(cl_context ctx, cl_device_id dev, int out_of_order);
size_t t_device_max_wg(cl_device_id dev);

#endif
