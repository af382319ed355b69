/* The helpers the test cases share, in one place (util.c, run_op.c): random numbers,
   the environment, element types and their bits, API.md's accuracy rule, float64
   references, random rows, OpenCL conveniences, forced plans, and run_op, which runs
   one operation on canary-guarded buffers and checks it. The add_rmsnorm harness of
   test_fused.c and test_extreme.c is in fused.h. Cases include test.h, which includes
   this header. */
#ifndef CLNORM_TEST_UTIL_H
#define CLNORM_TEST_UTIL_H

#include "clnorm.h"
#include "env_config.h"
#include <stddef.h>
#include <stdint.h>

#define COUNT_OF(arr) (sizeof(arr) / sizeof((arr)[0]))

/* ---- Random numbers: one seed per run, printed; CLNORM_TEST_SEED reproduces ------- */
typedef struct rng { uint64_t s; } rng;
extern rng R;               /* the main thread's generator, reseeded per case */
rng rng_make(uint64_t seed);
uint64_t rng_u64(rng *r);
double rng_unit(rng *r);                      /* [0, 1) */
size_t rng_below(rng *r, size_t n);           /* [0, n) */
double rng_range(rng *r, double lo, double hi);
#define PICK(r, arr) ((arr)[rng_below((r), COUNT_OF(arr))])

/* ---- Environment, time, text ------------------------------------------------------ */
/* setenv that remembers the first previous value; t_env_restore() puts all back, and
   the configuration (t_config_restore; the runner calls it after every case). value
   NULL unsets. CLNORM_* settings go through t_config (env_config.h). */
void t_setenv(const char *name, const char *value);
void t_setenv_num(const char *name, size_t value);
void t_env_restore(void);
/* The helper program's path (cache_child.c, built beside the runner) in out; 0 where
   the runner's own path cannot be read. */
int t_child_path(char *out, size_t n);
/* Runs the helper program on T.spec with up to four args (NULL-terminated), its stderr
   to err_file where that is not NULL, and name=value set in it where name is not NULL.
   Returns its exit status, -1 when it did not start or exit. */
int t_run_child(const char *const *args, const char *err_file, const char *name,
                const char *value);
double t_now(void);                           /* seconds, monotonic */
void t_sleep_ms(long ms);
cl_int t_event_status(cl_event e);            /* its execution status, -1 where unread */
/* Set CLNORM_TEST_VERBOSE=1 to print every checked op with its timings. */
int t_verbose(void);
/* msg names word: short alphabetic words (x, y, ld) must stand alone, the rest is a
   case-insensitive substring. */
int t_mentions(const char *msg, const char *word);

/* ---- Forced plans through the CLNORM_* settings (t_config, restored per case) ------- */
const char *plan_now(void);                   /* the overrides set now, for labels */
void plan_clear(void);
/* variant NULL: auto; wg, team, split 0: the library's. */
void plan_set(const char *variant, size_t wg, size_t team, size_t split);
void plan_reg(size_t cols);                   /* register variant holding cols */
void plan_pair(size_t cols);                  /* paired register variant; draws R */
int forced_team(void);                        /* CLNORM_ROW_THREADS is set */

/* ---- Element types and their bits ------------------------------------------------- */
size_t dt_size(clnorm_dtype dt);
const char *dt_name(clnorm_dtype dt);
/* float32 values to and from the dtype's storage, rounding to nearest even. */
void dt_pack(clnorm_dtype dt, const float *src, void *dst, size_t n);
void dt_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n);
void dt_round(clnorm_dtype dt, const float *src, float *dst, size_t n); /* dst may be src */
void dt_fill_bits(clnorm_dtype dt, void *dst, size_t n, uint32_t bits);
uint32_t pack1(clnorm_dtype dt, float v);     /* one value's bits */
float unpack1(clnorm_dtype dt, uint32_t bits);
float rnd(clnorm_dtype dt, float v);          /* v rounded to dt */
uint32_t get_el(const unsigned char *img, size_t i, size_t es); /* element i's bits */
void put_el(unsigned char *img, size_t i, size_t es, uint32_t bits);
/* Output poison: a NaN payload no kernel makes, so an unwritten element shows. Input
   canary: a NaN, so a kernel reading outside its view turns its row into NaN. */
uint32_t poison_of(clnorm_dtype dt);
uint32_t canary_of(clnorm_dtype dt);

/* ---- API.md's accuracy rule -------------------------------------------------------- */
double tol_rel(clnorm_dtype dt, size_t cols);  /* for rows of cols elements */
double tol_abs(clnorm_dtype dt);
/* 1 if got is within (rel, abs) of want; NaN must be NaN, inf the same inf. */
int t_close(float got, double want, double rel, double abs);
/* Counts the elements outside the rule as one failure, printing the first few. */
size_t t_compare(const char *file, int line, const char *label, const float *got,
                 const double *want, size_t rows, size_t cols, double rel, double abs);
#define COMPARE(label, got, want, rows, cols, rel, abs) \
    t_compare(__FILE__, __LINE__, (label), (got), (want), (rows), (cols), (rel), (abs))

/* ---- float64 references: x is rows x cols packed; outputs packed ------------------ */
void ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                 double *y);
void ref_softmax(const float *x, size_t rows, size_t cols, double *y);
void ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l);

/* ---- Random rows ------------------------------------------------------------------- */
/* Per-row offsets of up to +-1e6 and spreads so that the max subtraction matters;
   magnitudes stay where float32 sums of squares cannot overflow. */
void gen_rows(rng *r, float *x, size_t rows, size_t cols);
/* One row of a given kind (-1: random): near-constant rows are the hardest for float32
   accumulation, far offsets for the max subtraction. */
enum { ROW_FAR_OFFSET = 4, ROW_NEAR_CONSTANT = 7, ROW_KINDS = 8 };
void gen_row(rng *r, float *x, size_t cols, int kind);
void gen_gamma(rng *r, float *g, size_t cols);

/* ---- OpenCL ------------------------------------------------------------------------ */
cl_mem t_buffer(cl_context ctx, size_t bytes, const void *init); /* NULL on failure */
int t_read(cl_command_queue q, cl_mem m, size_t bytes, void *dst);
cl_context t_queue_context(cl_command_queue q);
cl_command_queue t_new_queue(cl_context ctx, cl_device_id dev, int out_of_order);
size_t t_device_max_wg(cl_device_id dev);
int device_denormals(void);  /* the device under test keeps float32 denormals */
/* The event of a successful call: present, waited for, complete. Not released. */
void t_check_event(const char *label, cl_event ev);

/* ---- One operation on device buffers, checked (run_op.c) --------------------------- */
typedef enum top {
    OP_RMSNORM, OP_SOFTMAX_3PASS, OP_SOFTMAX_ONLINE, OP_SOFTMAX_AUTO, OP_STATS, OP_COUNT
} top;
const char *op_name(top op);
clnorm_softmax_algo op_algo(top op);

enum { LAYOUT_SEPARATE = 0, LAYOUT_INPLACE = 1, LAYOUT_SAME_BUFFER = 2 };
#define POISON_NAN 0u  /* y elements poisoned with poison_of() */
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

/* A random packed problem of one op: fills *a (x and gamma malloc'd into xbuf and gbuf). */
void make_problem(rng *r, op_args *a, top op, size_t rows, size_t cols, float **xbuf,
                  float **gbuf);
/* Enqueues the op on buffers laid out as asked (canaries around every view), waits
   for its event, reads everything back and checks that nothing outside y (and
   row_max/row_sum) changed and that every y element was written. On a refused
   request checks that no buffer changed. Values are not checked here. */
clnorm_status run_op(const op_args *a, op_out *o);
/* Compares o with the float64 reference of a; returns the number of bad elements. */
size_t verify_op(const op_args *a, const op_out *o);
/* run_op + verify_op, expecting status want. Returns the status. */
clnorm_status check_op(const op_args *a, clnorm_status want);
/* One host-API call of op on a random problem (in place or not), checked
   (test_host.c). */
void check_host_op(top op, clnorm_dtype dt, size_t rows, size_t cols, int inplace);

#endif
