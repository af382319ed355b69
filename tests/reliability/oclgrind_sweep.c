/* oclgrind_sweep: runs every kernel variant clnorm builds for the device it runs on,
   on small awkward shapes, and checks each result against float64 and each buffer
   outside its view against canaries. Meant to run under
     oclgrind --data-races --uninitialized --check-api ./oclgrind_sweep
   (.ci/reliability), where Oclgrind reports races, uninitialised reads, out-of-bounds
   accesses and barrier divergence; it runs on any device (--device SPEC) too.

   The sweep walks: build configurations (the kernel program as compiled for GPUs,
   for CPUs with 4-, 8- and 16-wide vectors, and as Oclgrind itself gets it) x
   dtypes x shape configurations (forced variants, work-group sizes, work-items per
   row, split slices) x operations. Every case's plan is the one the library reports
   for the call (clnorm_last_plan), and the sweep fails unless every kernel of the
   program ran for
   every dtype and build configuration, with the awkward cases each kernel family
   has: several rows per work-group with a partial last group, a column tail, a team
   that is not a power of two, one work-item per row, a partial last slice, and
   RMSNorm rows that need rescaling (3e30, 1e-30) beside rows that do not.

     oclgrind_sweep [--device SPEC] [--quick] [--verbose] [--part rows|entries]
   --part runs the row operations' configurations alone, or the entry points with plans
   of their own alone (attention, statistics given); each checks the coverage of its
   own kernels.
   exit 0: all cases passed and the coverage is complete; 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "clnorm_advanced.h"
#include "rel.h"
#include "sweep_attention.h"
#include "sweep_given.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what is swept ------------------------------------------------------------- */
/* The extra build options (the configuration's build_options, CLNORM_BUILD_OPTIONS)
   come after the library's own options, so -U/-D replace them. word: the words
   variant's elements per word for the build (0: the device's choice); it sets both
   the kernels' CLN_WORD and the plan's alignment rule, so it is not a -D here. Oclgrind
   prefers scalars, so its native build is that of a CPU whose work-items are SIMD
   lanes (CLN_SIMD_LANES); the others undefine it, so that the CPU attention's vector
   form is swept too. Oclgrind keeps denormals, so two builds take the bfloat16 write
   of devices without them (CLN_BF16_TINY) as well. */
typedef struct sw_build { const char *name, *options; unsigned vec; size_t word; } sw_build;
static const sw_build builds[] = {
    {"native", "", 0, 0},                                         /* as this device gets it */
    {"gpu", "-UCLN_VEC -DCLN_VEC=1 -UCLN_BLOCKED -DCLN_BLOCKED=0 -UCLN_SIMD_LANES -DCLN_FULL_F32_TEAM=1", 1, 0}, /* round-robin */
    /* GPU vector loops: aligned chunks after a peeled head, scalar on mixed phases. */
    {"gpu-vec4", "-UCLN_VEC -DCLN_VEC=4 -UCLN_BLOCKED -DCLN_BLOCKED=0 -UCLN_SIMD_LANES -DCLN_BF16_TINY=1", 4, 0},
    {"gpu-vec8", "-UCLN_VEC -DCLN_VEC=8 -UCLN_BLOCKED -DCLN_BLOCKED=0 -UCLN_SIMD_LANES", 8, 0},
    {"cpu-vec4", "-UCLN_VEC -DCLN_VEC=4 -UCLN_BLOCKED -DCLN_BLOCKED=1 -UCLN_SIMD_LANES", 4, 0},
    {"cpu-vec8", "-UCLN_VEC -DCLN_VEC=8 -UCLN_BLOCKED -DCLN_BLOCKED=1 -UCLN_SIMD_LANES -DCLN_BF16_TINY=1", 8, 0},
    {"cpu-vec16", "-UCLN_VEC -DCLN_VEC=16 -UCLN_BLOCKED -DCLN_BLOCKED=1 -UCLN_SIMD_LANES", 16, 0},
    /* As GPUs run: vector loops and words of 4 elements. */
    {"gpu-word4", "-UCLN_VEC -DCLN_VEC=4 -UCLN_BLOCKED -DCLN_BLOCKED=0 -UCLN_SIMD_LANES -DCLN_FULL_F32_TEAM=1", 4, 4},
};
#define NBUILDS (sizeof builds / sizeof builds[0])

typedef struct sw_config {
    const char *name;
    const char *variant, *wg, *team, *split; /* as CLNORM_VARIANT, _WORK_GROUP,
                                                _ROW_THREADS and _SPLIT take them; NULL:
                                                the library's */
    size_t rows, cols;
    int even; /* views whose rows all start at multiples of the paired word, so the
                 paired forms run */
} sw_config;
static const sw_config configs[] = {
    /* The library's own choice: on a CPU-typed device 2 rows of 4 work-items per group. */
    {"auto", NULL, NULL, NULL, NULL, 11, 37, 0},
    /* Several rows per group, the last group partial, a non-power-of-two group. */
    {"stream wg12 team4", "stream", "12", "4", NULL, 7, 37, 0},
    {"stream wg6 team3", "stream", "6", "3", NULL, 5, 29, 0},
    {"stream wg1", "stream", "1", "1", NULL, 3, 13, 0},
    {"stream wg64 team64", "stream", "64", "64", NULL, 2, 37, 0},
    {"stream wg32 team8", "stream", "32", "8", NULL, 9, 203, 0},
    {"stream wg16 team8 cols1", "stream", "16", "8", NULL, 3, 1, 0},
    {"auto 1x1", NULL, NULL, NULL, NULL, 1, 1, 0},
    /* Rows in registers (16 elements per work-item for RMSNorm, 32 for softmax):
       lanes past the row's end, one work-item per row, every register used. */
    {"reg wg8 team4", "reg", "8", "4", NULL, 5, 61, 0},
    {"reg wg4 team1", "reg", "4", "1", NULL, 3, 13, 0},
    {"reg wg6 team3", "reg", "6", "3", NULL, 5, 47, 0},
    {"reg wg8 team4 long", "reg", "8", "4", NULL, 3, 125, 0},
    {"reg auto", "reg", NULL, NULL, NULL, 9, 37, 0},
    /* Split rows: three slices, the last one short (or shorter than a group). */
    {"split wg8 S3", "split", "8", NULL, "3", 2, 100, 0},
    {"split wg6 S3", "split", "6", NULL, "3", 3, 50, 0},
    {"split wg16 S3", "split", "16", NULL, "3", 2, 37, 0},
    {"split wg8 S3 short", "split", "8", NULL, "3", 2, 5, 0},
    /* Split rows in one launch: one slice per row (at most 32 elements per work-item),
       so that no group waits for another where groups run one after another (Oclgrind);
       the sweep declares its device's groups as running side by side
       (CLNORM_TEST_FAULTS=coop) so that the plan takes it. */
    {"coop wg8 S1", "coop", "8", NULL, "1", 3, 203, 0},
    {"coop wg6 S1", "coop", "6", NULL, "1", 3, 151, 0},
    /* ... and slices past the registers, held in local memory in two batches (76 to 80
       elements a work-item, by the build's vector). */
    {"coop wg8 S1 held", "coop", "8", NULL, "1", 2, 600, 0},
    /* Rows in registers as words of two elements: the half-slot RMSNorm kernels where
       they hold the row, the full ones where only those do (122 columns in float32,
       250 in 16 bits, with 4 work-items per row; float32 streams the latter). */
    {"words wg8 team4", "words", "8", "4", NULL, 5, 62, 1},
    {"words wg6 team3", "words", "6", "3", NULL, 5, 46, 1},
    {"words wg4 team1", "words", "4", "1", NULL, 3, 12, 1},
    {"words wg8 team4 full", "words", "8", "4", NULL, 3, 122, 1},
    {"words wg6 team3 full", "words", "6", "3", NULL, 3, 94, 1},
    {"words wg4 team1 full", "words", "4", "1", NULL, 3, 30, 1},
    {"words wg4 team1 full16", "words", "4", "1", NULL, 3, 62, 1},
    {"words wg8 team4 full16", "words", "8", "4", NULL, 3, 250, 1},
    {"words wg6 team3 full16", "words", "6", "3", NULL, 3, 190, 1},
    /* The same in words of 4 (the gpu-word4 build): columns a multiple of 4, and of
       no team of 3 for the tail. */
    {"words wg8 team4 w4", "words", "8", "4", NULL, 5, 60, 1},
    {"words wg6 team3 w4", "words", "6", "3", NULL, 5, 44, 1},
    {"words wg8 team4 full w4", "words", "8", "4", NULL, 3, 120, 1},
    {"words wg6 team3 full w4", "words", "6", "3", NULL, 3, 92, 1},
    {"words wg4 team1 full w4", "words", "4", "1", NULL, 3, 28, 1},
    {"words wg4 team1 full16 w4", "words", "4", "1", NULL, 3, 60, 1},
    {"words wg8 team4 full16 w4", "words", "8", "4", NULL, 3, 248, 1},
    {"words wg6 team3 full16 w4", "words", "6", "3", NULL, 3, 188, 1},
    /* Rows that fill every slot of a team of 4 (16 or 32 floats, 32 or 64 16-bit
       elements a work-item): the softmax kernels' unguarded branch in the first group
       of the GPU builds (float32 too: -DCLN_FULL_F32_TEAM=1), the guarded one in the
       second, which holds one row of two. */
    {"words wg8 team4 filled64", "words", "8", "4", NULL, 3, 64, 1},
    {"words wg8 team4 filled128", "words", "8", "4", NULL, 3, 128, 1},
    {"words wg8 team4 filled256", "words", "8", "4", NULL, 3, 256, 1},
};
#define NCONFIGS (sizeof configs / sizeof configs[0])

enum { SW_RMS, SW_ADD_RMS, SW_ADD_RMS_UPD, SW_SM3, SW_SMO, SW_SMAUTO, SW_STATS, SW_NOPS };
static const char *const sw_op_names[SW_NOPS] = {
    "rmsnorm", "add_rmsnorm", "add_rmsnorm(update)", "softmax-3pass", "softmax-online",
    "softmax-auto", "softmax-stats"};
static const clnorm_op sw_plan_op[SW_NOPS] = {
    CLNORM_OP_RMSNORM, CLNORM_OP_ADD_RMSNORM, CLNORM_OP_ADD_RMSNORM,
    CLNORM_OP_SOFTMAX_THREE_PASS, CLNORM_OP_SOFTMAX_ONLINE, CLNORM_OP_SOFTMAX_AUTO,
    CLNORM_OP_SOFTMAX_STATS};

/* --part: every case (0), the row operations' configurations alone, or the entry
   points with plans of their own alone (attention, statistics given). */
enum { SW_PART_ALL = 0, SW_PART_ROWS = 1, SW_PART_ENTRIES = 2 };
static int part = SW_PART_ALL;

/* ---- coverage --------------------------------------------------------------------- */
enum {
    COV_RAN = 1,          /* the kernel ran */
    COV_MULTIROW = 2,     /* several rows per group, the last group partial */
    COV_TAIL = 4,         /* the row does not divide evenly over the team */
    COV_NPOT = 8,         /* a team that is not a power of two */
    COV_TEAM1 = 16,       /* one work-item per row */
    COV_SLICE = 32,       /* split: the last slice is partial */
    COV_RESCALE = 64,     /* RMSNorm: rescaled rows beside plain rows */
    /* What the kernel is, as seen in the plans that used it. */
    KIND_ROW = 256,       /* a stage of a plan with teams of rows */
    KIND_SPLIT = 512,     /* a stage of a split plan */
    KIND_RMS = 1024       /* a stage of an RMSNorm plan (f32 and bf16 can rescale) */
};
/* Kernels by their index in the library's list (clnorm_kernel_name). */
#define SW_MAX_KERNELS 64
static unsigned coverage[NBUILDS][3][SW_MAX_KERNELS];

typedef struct sw_ctx {
    cl_context ctx;
    cl_command_queue q;
    cl_device_id dev;
    clnorm_device_info info;
    size_t word;      /* the words variant's elements per word in this build */
    int verbose;
    unsigned long cases, launches, failures, elements;
} sw_ctx;

#define FAIL(c, ...)                                                                  \
    do {                                                                              \
        (c)->failures++;                                                              \
        printf("FAIL: " __VA_ARGS__);                                                 \
        printf("\n");                                                                 \
    } while (0)

static size_t parse_size(const char *v) { return v ? (size_t)strtoull(v, NULL, 10) : 0; }

static int parse_variant(const char *v)
{
    static const char *const names[CLNORM_VARIANT_COUNT] = {"stream", "reg", "split", "words",
                                                            "coop"};
    for (int i = 0; v && i < CLNORM_VARIANT_COUNT; i++)
        if (!strcmp(v, names[i])) return i;
    return CLNORM_VARIANT_AUTO;
}

/* The process configuration of one build and shape configuration: built-in plans on
   the local path, no disk cache, the build's options and word, the shape forced. */
static int configure(sw_ctx *c, const sw_build *b, const sw_config *cfg)
{
    clnorm_config conf;
    clnorm_config_get(&conf);
    clnorm_plan_hints_init(&conf.hints);
    conf.hints.tuning = 0;
    conf.hints.reduction = CLNORM_REDUCTION_LOCAL;
    conf.hints.word = b->word;
    conf.hints.variant = parse_variant(cfg->variant);
    conf.hints.work_group = parse_size(cfg->wg);
    conf.hints.items_per_row = parse_size(cfg->team);
    conf.hints.split = parse_size(cfg->split);
    snprintf(conf.cache_dir, sizeof conf.cache_dir, "off");
    snprintf(conf.build_options, sizeof conf.build_options, "%s", b->options);
    if (clnorm_config_set(&conf) != CLNORM_SUCCESS) {
        FAIL(c, "[%s %s] configuration refused: %s", b->name, cfg->name, clnorm_last_error());
        return 0;
    }
    return 1;
}

/* Elements per word of the words variant under the configuration now (no shape
   forced), as a forced words plan of whole words has it. */
static size_t words_word(sw_ctx *c)
{
    clnorm_plan_hints h;
    clnorm_plan_info pl;
    clnorm_plan_hints_init(&h);
    h.variant = CLNORM_VARIANT_WORDS;
    if (clnorm_plan_query(c->dev, &h, CLNORM_OP_SOFTMAX_THREE_PASS, CLNORM_F32, 1, 4, &pl) ||
        pl.variant != CLNORM_VARIANT_WORDS)
        return 2;
    return pl.word;
}

/* The index of a kernel in the library's list; SW_MAX_KERNELS if it is not there. */
static size_t kernel_index(const char *name)
{
    size_t n = clnorm_kernel_count();
    for (size_t i = 0; i < n && i < SW_MAX_KERNELS; i++)
        if (!strcmp(clnorm_kernel_name(i), name)) return i;
    return SW_MAX_KERNELS;
}

/* ---- buffers with canaries -------------------------------------------------------- */
/* A host image of a device buffer: every element starts as a canary value; the view
   (offset, ld, rows x cols) is filled by the caller. */
typedef struct sw_buf {
    clnorm_dtype dt;
    size_t n;          /* elements */
    unsigned char *img;
    cl_mem mem;
} sw_buf;

static const uint32_t CANARY32 = 0x7fa5a5a5u;  /* a signalling NaN no kernel writes */
static const uint16_t CANARY16 = 0x7d5au;       /* a signalling NaN in f16 and bf16 */

static void buf_init(sw_buf *b, clnorm_dtype dt, size_t n)
{
    b->dt = dt;
    b->n = n;
    b->img = malloc(n * rel_esize(dt));
    b->mem = NULL;
    for (size_t i = 0; i < n; i++) {
        if (dt == CLNORM_F32) memcpy(b->img + 4 * i, &CANARY32, 4);
        else memcpy(b->img + 2 * i, &CANARY16, 2);
    }
}

static void buf_set(sw_buf *b, size_t i, float v)
{
    rel_pack(b->dt, &v, b->img + i * rel_esize(b->dt), 1);
}

static int buf_upload(sw_ctx *c, sw_buf *b)
{
    cl_int err;
    b->mem = clCreateBuffer(c->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            b->n * rel_esize(b->dt), b->img, &err);
    return err == CL_SUCCESS;
}

/* Reads the buffer back into out (malloc'd). */
static unsigned char *buf_read(sw_ctx *c, const sw_buf *b)
{
    size_t bytes = b->n * rel_esize(b->dt);
    unsigned char *out = malloc(bytes);
    if (clEnqueueReadBuffer(c->q, b->mem, CL_TRUE, 0, bytes, out, 0, NULL, NULL) != CL_SUCCESS) {
        free(out);
        return NULL;
    }
    return out;
}

static void buf_free(sw_buf *b)
{
    if (b->mem) clReleaseMemObject(b->mem);
    free(b->img);
    b->mem = NULL;
    b->img = NULL;
}

/* 1 if element i lies in the view. */
static int in_view(size_t i, size_t off, size_t ld, size_t rows, size_t cols)
{
    if (i < off) return 0;
    size_t d = i - off, r = d / ld, c = d % ld;
    return r < rows && c < cols;
}

/* ---- inputs ------------------------------------------------------------------------ */
static void gen_rms_row(uint64_t *s, float *x, size_t cols, int kind, clnorm_dtype dt)
{
    for (size_t c = 0; c < cols; c++) {
        double v = rel_unit(s) * 4.0 - 2.0;
        if (kind == 1) v *= dt == CLNORM_F16 ? 3e4 : 3e30;  /* sum of squares overflows */
        if (kind == 2) v *= dt == CLNORM_F16 ? 1e-3 : 1e-30; /* ... or underflows */
        x[c] = (float)v;
    }
    if (kind == 3) x[cols / 2] = NAN;
}

static void gen_softmax_row(uint64_t *s, float *x, size_t cols, int kind)
{
    double off = kind == 4 ? 1e6 : rel_unit(s) * 20.0 - 10.0;
    for (size_t c = 0; c < cols; c++) x[c] = (float)(off + rel_unit(s) * 8.0 - 4.0);
    switch (kind) {
    case 1: x[cols - 1] = NAN; break;                               /* NaN row */
    case 2: for (size_t c = 0; c < cols; c++) x[c] = -INFINITY; break; /* empty row */
    case 3: x[0] = INFINITY; x[cols / 2] = INFINITY; break;         /* +inf shares */
    case 5: x[cols / 3] = -INFINITY; x[cols - 1] = -INFINITY; break;
    default: break;
    }
}

/* ---- one case ---------------------------------------------------------------------- */
/* Records what the kernels of the call that just ran met: its plan, as the library
   reports it. */
static void record(sw_ctx *c, size_t b, clnorm_dtype dt, int op, size_t rows, size_t cols,
                   int rescale_mix, const char *label)
{
    clnorm_plan_info pl;
    if (!clnorm_last_plan(&pl)) {
        FAIL(c, "%s: no plan recorded for a call that ran", label);
        return;
    }
    const int split = pl.variant == CLNORM_VARIANT_SPLIT || pl.variant == CLNORM_VARIANT_COOP;
    size_t vec = builds[b].vec ? builds[b].vec : (c->info.vector_width ? c->info.vector_width : 1);
    for (int j = 0; j < 3; j++) {
        if (!pl.kernels[j]) continue;
        size_t k = kernel_index(pl.kernels[j]);
        if (k == SW_MAX_KERNELS) {
            FAIL(c, "%s: kernel %s is not in the library's list", label, pl.kernels[j]);
            continue;
        }
        unsigned f = COV_RAN;
        if (!split) {
            if (pl.rows_per_group > 1 && rows % pl.rows_per_group) f |= COV_MULTIROW;
            if (cols % pl.items_per_row || (vec > 1 && cols % vec)) f |= COV_TAIL;
            if (pl.items_per_row & (pl.items_per_row - 1)) f |= COV_NPOT;
            if (pl.items_per_row == 1) f |= COV_TEAM1;
        } else {
            if (cols % pl.split_cols) f |= COV_SLICE;
            if (pl.work_group & (pl.work_group - 1)) f |= COV_NPOT;
            f |= COV_TAIL;
        }
        if (rescale_mix) f |= COV_RESCALE;
        f |= split ? KIND_SPLIT : KIND_ROW;
        if (sw_plan_op[op] == CLNORM_OP_RMSNORM || sw_plan_op[op] == CLNORM_OP_ADD_RMSNORM)
            f |= KIND_RMS;
        coverage[b][dt][k] |= f;
        c->launches++;
    }
    if (c->verbose) {
        char d[256];
        clnorm_plan_describe(&pl, d, sizeof d);
        printf("  ok %s: %s\n", label, d);
    }
}

static void check_values(sw_ctx *c, const char *label, const char *what, clnorm_dtype dt,
                         const unsigned char *got, size_t off, size_t ld, size_t rows,
                         size_t cols, const double *want, int *printed)
{
    double rel, abs;
    rel_tolerance(dt, &rel, &abs);
    for (size_t r = 0; r < rows; r++)
        for (size_t cc = 0; cc < cols; cc++) {
            float g = rel_get(dt, got, off + r * ld + cc);
            double w = want[r * cols + cc];
            c->elements++;
            /* The reference is rounded to the storage type like the kernel's output. */
            double wr = isfinite(w) ? (double)rel_round(dt, (float)w) : w;
            if (!rel_close(g, w, rel, abs) && !rel_close(g, wr, rel, abs)) {
                if ((*printed)++ < 4)
                    FAIL(c, "%s: %s[%zu][%zu] = %.9g, expected %.9g", label, what, r, cc,
                         (double)g, w);
                else c->failures++;
            }
        }
}

/* Every element outside the view (off, ld, rows x cols) still holds its initial value. */
static void check_outside(sw_ctx *c, const char *label, const char *what, const sw_buf *b,
                          const unsigned char *got, size_t off, size_t ld, size_t rows,
                          size_t cols)
{
    size_t es = rel_esize(b->dt), bad = 0, first = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (rows && in_view(i, off, ld, rows, cols)) continue;
        if (memcmp(got + i * es, b->img + i * es, es) != 0 && bad++ == 0) first = i;
    }
    if (bad)
        FAIL(c, "%s: %zu element(s) of %s outside its view changed, first at %zu (view "
             "offset %zu ld %zu %zux%zu)", label, bad, what, first, off, ld, rows, cols);
}

static void run_case(sw_ctx *c, size_t b, clnorm_dtype dt, const sw_config *cfg, int op,
                     unsigned long idx)
{
    size_t rows = cfg->rows, cols = cfg->cols;
    const int stats = op == SW_STATS, rms = op <= SW_ADD_RMS_UPD, add = op == SW_ADD_RMS ||
                                                                         op == SW_ADD_RMS_UPD;
    const int inplace = !stats && (idx % 3 == 1);
    const int with_gamma = rms && idx % 2 == 0;
    const float eps = rms && idx % 4 >= 2 ? 0.0f : 1e-6f;
    size_t xoff = 1 + idx % 3, xld_arg = idx % 2 ? 0 : cols + 3, xld = xld_arg ? xld_arg : cols;
    size_t yoff = inplace ? xoff : 2 + idx % 2, yld_arg = inplace ? xld_arg : (idx % 4 ? cols + 2 : 0);
    size_t roff = 3, rld = cols + 1;
    const size_t w = c->word;
    if (cfg->even) { /* offsets and padding still, but multiples of the word */
        xoff = w * (idx % 2), xld_arg = idx % 2 ? 0 : cols + 2 * w, xld = xld_arg ? xld_arg : cols;
        yoff = inplace ? xoff : w, yld_arg = inplace ? xld_arg : (idx % 4 ? cols + w : 0);
        roff = w, rld = cols + w;
    }
    size_t yld = yld_arg ? yld_arg : cols;
    char label[256];
    snprintf(label, sizeof label, "[%s %s %s] %s %zux%zu%s%s eps %g", builds[b].name,
             rel_dtype_name(dt), cfg->name, sw_op_names[op], rows, cols,
             inplace ? " in place" : "", with_gamma ? " gamma" : "", (double)eps);
    c->cases++;

    uint64_t seed = 0x5eed0000ull + idx * 7919u;
    float *x = malloc(rows * cols * sizeof *x), *res = malloc(rows * cols * sizeof *res);
    float *g = malloc(cols * sizeof *g);
    double *want = malloc(rows * cols * sizeof *want), *wm = malloc(rows * sizeof *wm),
           *wl = malloc(rows * sizeof *wl);
    int rescale_kinds = 0;
    for (size_t r = 0; r < rows; r++) {
        if (rms) {
            int kind = (int)(r % 4);
            if (add && kind == 3) kind = 0; /* the NaN row: covered by rmsnorm */
            gen_rms_row(&seed, x + r * cols, cols, kind, dt);
            if (kind == 1 || (kind == 2 && eps == 0.0f)) rescale_kinds |= 1;
            if (kind == 0) rescale_kinds |= 2;
        } else {
            gen_softmax_row(&seed, x + r * cols, cols, (int)(r % 6));
        }
        for (size_t cc = 0; cc < cols; cc++)
            res[r * cols + cc] = (float)(rel_unit(&seed) * 2.0 - 1.0);
    }
    for (size_t cc = 0; cc < cols; cc++) g[cc] = (float)(0.5 + rel_unit(&seed));
    /* What the device sees: the inputs rounded to the storage type. */
    for (size_t i = 0; i < rows * cols; i++) {
        x[i] = rel_round(dt, x[i]);
        res[i] = rel_round(dt, res[i]);
    }
    for (size_t cc = 0; cc < cols; cc++) g[cc] = rel_round(dt, g[cc]);

    /* Buffers: views with offsets and padding, canaries everywhere else. */
    sw_buf bx, by, br, bg, bm, bs;
    memset(&by, 0, sizeof by);
    memset(&br, 0, sizeof br);
    memset(&bg, 0, sizeof bg);
    memset(&bm, 0, sizeof bm);
    memset(&bs, 0, sizeof bs);
    buf_init(&bx, dt, xoff + (rows - 1) * xld + cols + 5);
    for (size_t r = 0; r < rows; r++)
        for (size_t cc = 0; cc < cols; cc++) buf_set(&bx, xoff + r * xld + cc, x[r * cols + cc]);
    int ok = buf_upload(c, &bx);
    if (!inplace && !stats) {
        buf_init(&by, dt, yoff + (rows - 1) * yld + cols + 4);
        ok = ok && buf_upload(c, &by);
    }
    if (add) {
        buf_init(&br, dt, roff + (rows - 1) * rld + cols + 2);
        for (size_t r = 0; r < rows; r++)
            for (size_t cc = 0; cc < cols; cc++)
                buf_set(&br, roff + r * rld + cc, res[r * cols + cc]);
        ok = ok && buf_upload(c, &br);
    }
    if (with_gamma) {
        buf_init(&bg, dt, cols + 3);
        for (size_t cc = 0; cc < cols; cc++) buf_set(&bg, cc, g[cc]);
        ok = ok && buf_upload(c, &bg);
    }
    if (stats) {
        buf_init(&bm, CLNORM_F32, rows + 3);
        buf_init(&bs, CLNORM_F32, rows + 3);
        ok = ok && buf_upload(c, &bm) && buf_upload(c, &bs);
    }
    if (!ok) {
        FAIL(c, "%s: clCreateBuffer failed", label);
        goto done;
    }

    clnorm_matrix vx = {bx.mem, xoff, xld_arg};
    clnorm_matrix vy = inplace ? vx : (clnorm_matrix){by.mem, yoff, yld_arg};
    clnorm_matrix vr = {br.mem, roff, rld};
    cl_event ev = NULL;
    clnorm_status st;
    switch (op) {
    case SW_RMS:
        st = clnorm_rmsnorm(c->q, dt, rows, cols, vx, bg.mem, vy, eps, 0, NULL, &ev);
        break;
    case SW_ADD_RMS:
    case SW_ADD_RMS_UPD:
        st = clnorm_add_rmsnorm(c->q, dt, rows, cols, vx, vr, op == SW_ADD_RMS_UPD, bg.mem, vy,
                                eps, 0, NULL, &ev);
        break;
    case SW_STATS:
        st = clnorm_softmax_stats(c->q, dt, rows, cols, vx, bm.mem, bs.mem, 0, NULL, &ev);
        break;
    default:
        st = clnorm_softmax(c->q, dt, rows, cols, vx, vy,
                            op == SW_SM3 ? CLNORM_SOFTMAX_THREE_PASS
                            : op == SW_SMO ? CLNORM_SOFTMAX_ONLINE : CLNORM_SOFTMAX_AUTO,
                            0, NULL, &ev);
        break;
    }
    if (st != CLNORM_SUCCESS) {
        FAIL(c, "%s: %s: %s", label, clnorm_status_string(st), clnorm_last_error());
        goto done;
    }
    if (!ev || clWaitForEvents(1, &ev) != CL_SUCCESS) {
        FAIL(c, "%s: the event did not complete", label);
        if (ev) clReleaseEvent(ev);
        goto done;
    }
    clReleaseEvent(ev);

    /* The reference, from what the device saw. */
    int printed = 0;
    float *h = x;
    if (add) {
        h = malloc(rows * cols * sizeof *h);
        for (size_t i = 0; i < rows * cols; i++) h[i] = rel_round(dt, x[i] + res[i]);
    }
    if (rms) rel_ref_rmsnorm(h, rows, cols, with_gamma ? g : NULL, eps, want);
    else if (stats) rel_ref_stats(x, rows, cols, wm, wl);
    else rel_ref_softmax(x, rows, cols, want);

    unsigned char *gx = buf_read(c, &bx);
    if (!gx) { FAIL(c, "%s: reading x back failed", label); goto done_h; }
    if (inplace) {
        check_values(c, label, "y", dt, gx, xoff, xld, rows, cols, want, &printed);
        check_outside(c, label, "y (= x)", &bx, gx, xoff, xld, rows, cols);
    } else {
        check_outside(c, label, "x", &bx, gx, 0, 1, 0, 0); /* x: nothing may change */
    }
    free(gx);
    if (by.mem) {
        unsigned char *gy = buf_read(c, &by);
        if (gy) {
            check_values(c, label, "y", dt, gy, yoff, yld, rows, cols, want, &printed);
            check_outside(c, label, "y", &by, gy, yoff, yld, rows, cols);
        }
        free(gy);
    }
    if (br.mem) {
        unsigned char *gr = buf_read(c, &br);
        if (gr && op == SW_ADD_RMS_UPD) {
            double *hw = malloc(rows * cols * sizeof *hw);
            for (size_t i = 0; i < rows * cols; i++) hw[i] = h[i];
            check_values(c, label, "residual", dt, gr, roff, rld, rows, cols, hw, &printed);
            check_outside(c, label, "residual", &br, gr, roff, rld, rows, cols);
            free(hw);
        } else if (gr) {
            check_outside(c, label, "residual", &br, gr, 0, 1, 0, 0);
        }
        free(gr);
    }
    if (bg.mem) {
        unsigned char *gg = buf_read(c, &bg);
        if (gg) check_outside(c, label, "gamma", &bg, gg, 0, 1, 0, 0);
        free(gg);
    }
    if (stats) {
        unsigned char *gm = buf_read(c, &bm), *gs = buf_read(c, &bs);
        if (gm && gs) {
            check_values(c, label, "row_max", CLNORM_F32, gm, 0, 1, rows, 1, wm, &printed);
            check_values(c, label, "row_sum", CLNORM_F32, gs, 0, 1, rows, 1, wl, &printed);
            check_outside(c, label, "row_max", &bm, gm, 0, 1, rows, 1);
            check_outside(c, label, "row_sum", &bs, gs, 0, 1, rows, 1);
        }
        free(gm);
        free(gs);
    }
    record(c, b, dt, op, rows, cols, rms && rescale_kinds == 3 && dt != CLNORM_F16, label);
done_h:
    if (h != x) free(h);
done:
    buf_free(&bx);
    if (by.img) buf_free(&by);
    if (br.img) buf_free(&br);
    if (bg.img) buf_free(&bg);
    if (bm.img) buf_free(&bm);
    if (bs.img) buf_free(&bs);
    free(x);
    free(res);
    free(g);
    free(want);
    free(wm);
    free(wl);
}

/* ---- coverage report ---------------------------------------------------------------- */
/* What each kernel must have met, for every dtype of every build, by what it is. A
   kernel no case ran is a gap too: a new kernel needs a configuration here. */
static unsigned wanted(unsigned have, clnorm_dtype dt)
{
    unsigned w = COV_RAN | COV_TAIL | COV_NPOT;
    if (have & KIND_ROW) w |= COV_MULTIROW | COV_TEAM1;
    if (have & KIND_SPLIT) w |= COV_SLICE;
    if ((have & KIND_RMS) && dt != CLNORM_F16) w |= COV_RESCALE;
    return w;
}

/* The kernels of the entry points with plans of their own (attention, statistics
   given), which --part entries runs and --part rows leaves out. */
static int entry_kernel(const char *name)
{
    static const char *const entries[] = {"clnorm_attention", "clnorm_attention_reduce",
                                          "clnorm_attention_merge", "clnorm_attention_cpu",
                                          "clnorm_softmax_apply", "clnorm_stats_merge_rows"};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (!strcmp(name, entries[i])) return 1;
    return 0;
}

static unsigned long report_coverage(size_t nbuilds)
{
    static const char *const flag_names[] = {"ran", "multirow+partial", "tail", "npot-team",
                                             "team1", "partial-slice", "rescale"};
    unsigned long missing = 0, total = 0;
    for (size_t b = 0; b < nbuilds; b++)
        for (int dt = 0; dt < 3; dt++)
            for (size_t k = 0; k < clnorm_kernel_count() && k < SW_MAX_KERNELS; k++) {
                unsigned have = coverage[b][dt][k], w = wanted(have, (clnorm_dtype)dt);
                const int entry = entry_kernel(clnorm_kernel_name(k));
                if ((part == SW_PART_ROWS && entry) || (part == SW_PART_ENTRIES && !entry))
                    continue;
                total++;
                if ((w & have) == w) continue;
                missing++;
                printf("FAIL: coverage: %s %s %s lacks:", builds[b].name,
                       rel_dtype_name((clnorm_dtype)dt), clnorm_kernel_name(k));
                for (int f = 0; f < 7; f++)
                    if ((w & ~have) & (1u << f)) printf(" %s", flag_names[f]);
                printf("\n");
            }
    printf("coverage: %lu of %lu kernel variants (kernel x dtype x build) with every "
           "awkward case\n", total - missing, total);
    return missing;
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    int quick = 0;
    sw_ctx c;
    memset(&c, 0, sizeof c);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--verbose")) c.verbose = 1;
        else if (!strcmp(argv[i], "--part") && i + 1 < argc && !strcmp(argv[i + 1], "rows"))
            part = SW_PART_ROWS, i++;
        else if (!strcmp(argv[i], "--part") && i + 1 < argc && !strcmp(argv[i + 1], "entries"))
            part = SW_PART_ENTRIES, i++;
        else {
            fprintf(stderr, "usage: %s [--device SPEC] [--quick] [--verbose] "
                    "[--part rows|entries]\n", argv[0]);
            return 2;
        }
    }
    /* The coop configurations keep one slice per row, which is safe where groups run
       one after another; the fault lets the plan take the coop form here. */
    setenv("CLNORM_TEST_FAULTS", "coop", 1);
    /* Built-in plans only, nothing from a disk cache: the same run everywhere
       (configure sets that for each configuration). */
    if (!configure(&c, &builds[0], &configs[0])) return 1;
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st) {
        printf("FAIL: no device: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        return 1;
    }
    c.ctx = clnorm_session_context(s);
    c.q = clnorm_session_queue(s);
    clGetCommandQueueInfo(c.q, CL_QUEUE_DEVICE, sizeof c.dev, &c.dev, NULL);
    if (clnorm_device_describe(c.dev, 1, &c.info)) {
        printf("FAIL: profile: %s\n", clnorm_last_error());
        return 1;
    }
    if (clnorm_kernel_count() > SW_MAX_KERNELS) {
        printf("FAIL: %zu kernels, more than the %d this sweep keeps\n", clnorm_kernel_count(),
               SW_MAX_KERNELS);
        return 1;
    }
    printf("oclgrind_sweep on \"%s\" (%s): vec %u, max work-group %zu, local memory %llu\n",
           clnorm_session_device_name(s), c.info.platform_version, c.info.vector_width,
           c.info.max_work_group, (unsigned long long)c.info.local_mem);
    fflush(stdout);
    double t0 = rel_now();
    size_t nbuilds = quick ? 1 : NBUILDS;
    unsigned long idx = 0;
    for (size_t b = 0; b < nbuilds; b++) {
        double tb = rel_now();
        if (!configure(&c, &builds[b], &configs[0])) continue;
        c.word = words_word(&c);
        unsigned long f0 = c.failures, c0 = c.cases;
        for (int dt = CLNORM_F32; dt <= CLNORM_BF16; dt++)
            for (size_t k = 0; part != SW_PART_ENTRIES && k < NCONFIGS; k++) {
                const sw_config *cfg = &configs[k];
                if (!configure(&c, &builds[b], cfg)) continue;
                for (int op = 0; op < SW_NOPS; op++)
                    run_case(&c, b, (clnorm_dtype)dt, cfg, op, idx++);
            }
        /* The attention kernels: a partial last tile (tail), the scalar column path
           with a head of 5 (not a power of two), split-K and the merge. */
        for (int dt = CLNORM_F32; part != SW_PART_ROWS && dt <= CLNORM_BF16; dt++) {
            if (!configure(&c, &builds[b], &configs[0])) continue;
            unsigned ran = sw_attention(c.ctx, c.q, (clnorm_dtype)dt, c.verbose, &c.failures,
                                        &c.cases);
            static const char *const names[] = {"clnorm_attention", "clnorm_attention_reduce",
                                                "clnorm_attention_merge",
                                                "clnorm_attention_cpu"};
            for (int i = 0; i < 4; i++) {
                size_t k = kernel_index(names[i]);
                if (k < SW_MAX_KERNELS && (ran & (1u << i)))
                    coverage[b][dt][k] |= COV_RAN | COV_TAIL | COV_NPOT;
            }
            /* The kernels with statistics given, by the entry points of sharded rows. */
            ran = sw_given(c.ctx, c.q, (clnorm_dtype)dt, c.verbose, &c.failures, &c.cases);
            static const char *const given[] = {"clnorm_softmax_apply",
                                                "clnorm_stats_merge_rows"};
            for (int i = 0; i < 2; i++) {
                size_t k = kernel_index(given[i]);
                /* merge_rows is float32 whatever the dtype: one run covers all three. */
                const unsigned bit = i ? (unsigned)SWG_MERGE_ROWS : (unsigned)SWG_APPLY;
                if (k < SW_MAX_KERNELS && (ran & bit || (i && coverage[b][0][k])))
                    coverage[b][dt][k] |= COV_RAN | COV_TAIL | COV_NPOT;
            }
        }
        printf("build %-9s %4lu cases, %lu failures, %.1f s\n", builds[b].name, c.cases - c0,
               c.failures - f0, rel_now() - tb);
        fflush(stdout);
    }
    unsigned long missing = report_coverage(nbuilds);
    printf("oclgrind_sweep: %lu cases, %lu kernel launches, %lu elements checked, %lu "
           "failures, %lu coverage gaps, %.1f s\n", c.cases, c.launches, c.elements,
           c.failures, missing, rel_now() - t0);
    clnorm_session_destroy(s);
    clnorm_release_cache(NULL);
    return c.failures || missing ? 1 : 0;
}
