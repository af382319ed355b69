/* The helpers the test cases share (util.h), except run_op (run_op.c). */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "clnorm_advanced.h"

#include <ctype.h>
#include <sys/wait.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- random numbers: splitmix64 ---------------------------------------------------- */
rng R;

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

/* ---- environment, time, text ------------------------------------------------------- */
enum { MAX_SAVED_ENV = 64 };
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
    } else if (i == n_saved_env) {
        t_fail(__FILE__, __LINE__, "t_setenv(%s): more than %d variables to restore", name,
               MAX_SAVED_ENV);
        return;
    }
    if (value) setenv(name, value, 1); else unsetenv(name);
}

int t_child_path(char *out, size_t n)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 0;
    self[len] = '\0';
    *strrchr(self, '/') = '\0';
    return snprintf(out, n, "%s/clnorm_cache_child", self) < (int)n;
}

int t_run_child(const char *const *args, const char *err_file, const char *name,
                const char *value)
{
    char child[4200];
    if (!t_child_path(child, sizeof child)) return -1;
    const char *a[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4 && args[i]; i++) a[i] = args[i];
    pid_t pid = fork();
    if (pid == 0) {
        if (err_file && !freopen(err_file, "w", stderr)) _exit(126);
        if (name) setenv(name, value, 1);
        execl(child, child, T.spec ? T.spec : "", a[0], a[1], a[2], a[3], (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

void t_setenv_num(const char *name, size_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", value);
    t_setenv(name, buf);
}

void t_env_restore(void)
{
    for (int i = 0; i < n_saved_env; i++) {
        if (saved_env[i].had) setenv(saved_env[i].name, saved_env[i].old, 1);
        else unsetenv(saved_env[i].name);
        free(saved_env[i].old);
    }
    n_saved_env = 0;
    t_config_restore();
}

double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void t_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

cl_int t_event_status(cl_event e)
{
    cl_int s = -1;
    CHECK_CL(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL));
    return s;
}

int t_verbose(void)
{
    const char *e = getenv("CLNORM_TEST_VERBOSE");
    return e && *e && strcmp(e, "0");
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

/* ---- forced plans -------------------------------------------------------------------- */
/* The first N_FORCED are what plan_set forces and plan_clear clears; the rest are
   overrides that cases set themselves, shown in labels as well. */
static const char *plan_env[] = {"CLNORM_VARIANT", "CLNORM_WORK_GROUP", "CLNORM_ROW_THREADS",
                                 "CLNORM_SPLIT", "CLNORM_PAIR_WORD", "CLNORM_REDUCTION",
                                 "CLNORM_MAX_WORK_GROUP", "CLNORM_MAX_LOCAL_MEM"};
enum { N_FORCED = 5 };

const char *plan_now(void)
{
    static char buf[320];
    buf[0] = '\0';
    for (size_t i = 0; i < COUNT_OF(plan_env); i++) {
        const char *v = getenv(plan_env[i]);
        if (v) {
            size_t n = strlen(buf);
            snprintf(buf + n, sizeof buf - n, "%s%s=%s", n ? " " : "", plan_env[i], v);
        }
    }
    if (!buf[0]) snprintf(buf, sizeof buf, "auto plan");
    return buf;
}

void plan_clear(void)
{
    for (size_t i = 0; i < N_FORCED; i++) t_config(plan_env[i], NULL);
}

void plan_set(const char *variant, size_t wg, size_t team, size_t split)
{
    plan_clear();
    if (variant) t_config("CLNORM_VARIANT", variant);
    if (wg) t_config_num("CLNORM_WORK_GROUP", wg);
    if (team) t_config_num("CLNORM_ROW_THREADS", team);
    if (split) t_config_num("CLNORM_SPLIT", split);
}

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v) p *= 2;
    return p;
}

/* Forced shapes use few work-group sizes (64 and 256): PoCL compiles a kernel anew
   for every local size, which would dominate the time of a cold run. */
/* The register variant in groups of 64 with enough row threads to hold a row of
   cols (up to 2048 columns); longer rows are left to the library's shape. */
void plan_reg(size_t cols)
{
    size_t team = pow2_ceil((cols + 31) / 32);
    if (team > 64) plan_set("reg", 0, 0, 0);
    else plan_set("reg", 64, team, 0);
}

/* The paired register variant likewise (16 elements per work-item covers every op
   and dtype), in words of 2 or 4 elements; views whose row starts or cols are not
   multiples of the word run the plain register form. */
void plan_pair(size_t cols)
{
    static const char *words[] = {"2", "4"};
    size_t team = pow2_ceil((cols + 15) / 16);
    if (team > 64) plan_set("words", 0, 0, 0);
    else plan_set("words", 64, team, 0);
    t_config("CLNORM_PAIR_WORD", PICK(&R, words));
}

int forced_team(void) { return getenv("CLNORM_ROW_THREADS") != NULL; }

/* ---- element types and their bits ---------------------------------------------------- */
size_t dt_size(clnorm_dtype dt) { return dt == CLNORM_F32 ? 4 : 2; }

const char *dt_name(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? "f32" : dt == CLNORM_F16 ? "f16" : dt == CLNORM_BF16 ? "bf16" : "?";
}

static uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00;                   /* NaN */
    if (a >= 0x477FF000u) return sign | 0x7C00;                  /* rounds to inf */
    if (a >= 0x38800000u)                                        /* normal: RNE at bit 13 */
        return sign | (uint16_t)((a + 0xFFFu + ((a >> 13) & 1) - 0x38000000u) >> 13);
    float v;
    memcpy(&v, &a, 4);
    return sign | (uint16_t)nearbyint((double)v * 16777216.0);   /* subnormal, 2^-24 units */
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF, u;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return (h & 0x8000) ? -v : v;
    }
    u = e == 31 ? sign | 0x7F800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void dt_pack(clnorm_dtype dt, const float *src, void *dst, size_t n)
{
    if (dt == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = dt == CLNORM_F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
}

void dt_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n)
{
    if (dt == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) dst[i] = dt == CLNORM_F16 ? f16_to_f32(s[i]) : bf16_to_f32(s[i]);
}

void dt_round(clnorm_dtype dt, const float *src, float *dst, size_t n)
{
    if (dt == CLNORM_F32) {
        if (dst != src) memcpy(dst, src, n * sizeof(float));
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = rnd(dt, src[i]);
}

void dt_fill_bits(clnorm_dtype dt, void *dst, size_t n, uint32_t bits)
{
    if (dt == CLNORM_F32) {
        uint32_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = bits;
    } else {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = (uint16_t)bits;
    }
}

uint32_t pack1(clnorm_dtype dt, float v)
{
    uint32_t b = 0;
    dt_pack(dt, &v, &b, 1);
    return b;
}

float unpack1(clnorm_dtype dt, uint32_t bits)
{
    float v;
    dt_unpack(dt, &bits, &v, 1);
    return v;
}

float rnd(clnorm_dtype dt, float v) { return dt == CLNORM_F32 ? v : unpack1(dt, pack1(dt, v)); }

uint32_t get_el(const unsigned char *img, size_t i, size_t es)
{
    uint32_t v = 0;
    memcpy(&v, img + i * es, es);
    return v;
}

void put_el(unsigned char *img, size_t i, size_t es, uint32_t bits)
{
    memcpy(img + i * es, &bits, es);
}

uint32_t poison_of(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? 0x7FA5A5A5u : dt == CLNORM_F16 ? 0x7D2Au : 0x7FA5u;
}

uint32_t canary_of(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? 0x7F8A11CEu : dt == CLNORM_F16 ? 0x7C3Bu : 0x7F8Bu;
}

/* ---- the accuracy rule ---------------------------------------------------------------- */
double tol_rel(clnorm_dtype dt, size_t cols)
{
    /* API.md gives 2e-5 for rows up to 2^20 elements; past that it says nothing, so
       longer rows get the bound scaled with the length. */
    double grow = cols > (1u << 20) ? (double)cols / (double)(1u << 20) : 1.0;
    if (dt == CLNORM_F16) return (1e-3 + 0x1p-11) * grow;   /* plus storage rounding */
    if (dt == CLNORM_BF16) return 8e-3 * grow;
    return 2e-5 * grow;
}

double tol_abs(clnorm_dtype dt) { return dt == CLNORM_F16 ? 1e-7 : 1e-30; }

int t_close(float got, double want, double rel, double abs)
{
    if (isnan(want)) return isnan(got);
    if (isnan(got)) return 0;
    if (isinf(want)) return (double)got == want;
    if (isinf(got)) return 0;
    double d = fabs((double)got - want);
    return d <= abs || d <= rel * fabs(want);
}

size_t t_compare(const char *file, int line, const char *label, const float *got,
                 const double *want, size_t rows, size_t cols, double rel, double abs)
{
    size_t bad = 0, shown = 0;
    char first[5][200];
    for (size_t i = 0; i < rows * cols; i++) {
        if (t_close(got[i], want[i], rel, abs)) continue;
        if (shown < 5) {
            double e = want[i] != 0 ? fabs(((double)got[i] - want[i]) / want[i]) : fabs((double)got[i]);
            snprintf(first[shown++], sizeof first[0], "[%zu,%zu] got %.9g want %.17g (rel err %.3g)",
                     i / cols, i % cols, got[i], want[i], e);
        }
        bad++;
    }
    if (bad)
        t_fail(file, line, "%s: %zu of %zu values outside rel %.3g / abs %.3g; %s%s%s%s%s%s%s%s%s",
               label, bad, rows * cols, rel, abs, first[0], shown > 1 ? "; " : "",
               shown > 1 ? first[1] : "", shown > 2 ? "; " : "", shown > 2 ? first[2] : "",
               shown > 3 ? "; " : "", shown > 3 ? first[3] : "", shown > 4 ? "; " : "",
               shown > 4 ? first[4] : "");
    return bad;
}

/* ---- float64 references ---------------------------------------------------------------- */
void ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                 double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        /* The definition as written; IEEE gives NaN rows for NaN inputs and
           0 * inf = NaN where it arises, as the contract asks. */
        double rs = 1.0 / sqrt(ss / (double)cols + (double)eps);
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = (double)xr[c] * rs * (gamma ? (double)gamma[c] : 1.0);
    }
}

/* Statistics of one row under API.md's special-value rules. */
static void row_stats(const float *x, size_t cols, double *m, double *l)
{
    double mx = -INFINITY;
    size_t pinf = 0;
    for (size_t c = 0; c < cols; c++) {
        if (isnan(x[c])) { *m = NAN; *l = NAN; return; }
        if (x[c] > mx) mx = x[c];
        if (x[c] == INFINITY) pinf++;
    }
    if (mx == -INFINITY) { *m = -INFINITY; *l = 0; return; }
    if (mx == INFINITY) { *m = INFINITY; *l = (double)pinf; return; }
    double s = 0;
    for (size_t c = 0; c < cols; c++) s += exp((double)x[c] - mx);
    *m = mx;
    *l = s;
}

void ref_softmax(const float *x, size_t rows, size_t cols, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double *yr = y + r * cols, m, l;
        row_stats(xr, cols, &m, &l);
        for (size_t c = 0; c < cols; c++) {
            if (isnan(m)) yr[c] = NAN;
            else if (m == -INFINITY) yr[c] = 0;
            else if (m == INFINITY) yr[c] = xr[c] == INFINITY ? 1.0 / l : 0;
            else yr[c] = exp((double)xr[c] - m) / l;
        }
    }
}

void ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l)
{
    for (size_t r = 0; r < rows; r++) row_stats(x + r * cols, cols, &m[r], &l[r]);
}

/* ---- random rows ------------------------------------------------------------------------ */
void gen_row(rng *r, float *x, size_t cols, int kind)
{
    double off, spr, sign = rng_u64(r) & 1 ? 1 : -1;
    switch (kind >= 0 ? kind : (int)rng_below(r, ROW_KINDS)) {
    case 0: off = 0; spr = 1; break;
    case 1: off = rng_range(r, -1000, 1000); spr = rng_range(r, 0.5, 40); break;
    case 2: off = sign * rng_range(r, 1000, 3000); spr = rng_range(r, 5, 30); break;
    case 3: off = sign * rng_range(r, 1e4, 5e4); spr = 20; break;
    case ROW_FAR_OFFSET: off = sign * rng_range(r, 5e5, 1e6); spr = 100; break;
    case 5: off = 0; spr = 1e-3; break;
    case 6: off = rng_range(r, -10, 10); spr = 1e3; break;
    default: off = rng_range(r, -100, 100); spr = rng_range(r, 0, 1e-2); break; /* near constant */
    }
    for (size_t c = 0; c < cols; c++) x[c] = (float)(off + spr * (2 * rng_unit(r) - 1));
}

void gen_rows(rng *r, float *x, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++) gen_row(r, x + i * cols, cols, -1);
}

void gen_gamma(rng *r, float *g, size_t cols)
{
    for (size_t c = 0; c < cols; c++)
        g[c] = rng_below(r, 10) ? (float)rng_range(r, -2, 2) : 1.0f;
}

/* ---- OpenCL ------------------------------------------------------------------------------- */
cl_mem t_buffer(cl_context ctx, size_t bytes, const void *init)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes ? bytes : 4, (void *)init, &err);
    CHECK_CL(err);
    return err == CL_SUCCESS ? m : NULL;
}

int t_read(cl_command_queue q, cl_mem m, size_t bytes, void *dst)
{
    /* Not a blocking read: Rusticl 22 may return from one early when several threads
       share the queue (see cln_read in src/session.c). */
    cl_event ev = NULL;
    if (!CHECK_CL(clEnqueueReadBuffer(q, m, CL_FALSE, 0, bytes, dst, 0, NULL, &ev))) return 0;
    int ok = CHECK_CL(clWaitForEvents(1, &ev));
    clReleaseEvent(ev);
    return ok;
}

cl_context t_queue_context(cl_command_queue q)
{
    cl_context c = NULL;
    CHECK_CL(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof c, &c, NULL));
    return c;
}

cl_command_queue t_new_queue(cl_context ctx, cl_device_id dev, int out_of_order)
{
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(
        ctx, dev, out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
    return err == CL_SUCCESS ? q : NULL;
}

/* The library's profile, not the driver's query: CLNORM_EMULATE lowers the former,
   and forced sizes must stay within what the library plans for. */
size_t t_device_max_wg(cl_device_id dev)
{
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(dev, 1, &info), CLNORM_SUCCESS)) return 0;
    return info.max_work_group;
}

/* Where the device does not keep float32 denormals (CL_FP_DENORM), an output below
   FLT_MIN may be flushed to zero. */
int device_denormals(void)
{
    cl_device_fp_config fp = 0;
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL));
    return (fp & CL_FP_DENORM) != 0;
}

void t_check_event(const char *label, cl_event ev)
{
    if (!CHECK(ev != NULL, "%s: no event returned", label)) return;
    CHECK_CL(clWaitForEvents(1, &ev));
    const cl_int s = t_event_status(ev);
    CHECK(s == CL_COMPLETE, "%s: event status %d after clWaitForEvents", label, s);
}
