/* Internal to three files of the test runner: test_fused_common.c defines what
   test_fused.c (add_rmsnorm_values, add_rmsnorm_views) and test_extreme.c
   (rmsnorm_extreme, lowp_special) both use. No other test file nor test.h defines
   these names. */
#ifndef CLNORM_TESTS_FUSED_H
#define CLNORM_TESTS_FUSED_H

#include "test.h"

#define F32 CLNORM_F32
#define F16 CLNORM_F16
#define BF16 CLNORM_BF16

/* ---- elements: one value's bits in a dtype, and the nearest-even check ------------ */
uint32_t pack1(clnorm_dtype dt, float v);
float unpack1(clnorm_dtype dt, uint32_t b);
float rnd(clnorm_dtype dt, float v);              /* v rounded to dt */
uint32_t get_el(const unsigned char *img, size_t i, size_t es);
/* The y poison: a NaN payload no kernel makes, so an unwritten element shows. */
uint32_t poison_of(clnorm_dtype dt);
/* Whether the device keeps float32 denormals (CL_FP_DENORM). */
int device_denormals(void);
/* 1 if got is the nearest-even rounding of want in dt, or want is too near a tie (or
   a flushable denormal, see g_denorm_ok) to say. Counts into g_bits_checked. */
int rne_ok(clnorm_dtype dt, uint32_t got, double want, uint32_t *exp_bits);

/* Each case resets these at its start and reports them at its end. */
extern size_t g_bits_checked, g_bits_bad; /* 16-bit outputs compared bit for bit, wrong */
extern int g_denorm_ok;                   /* device_denormals() of the case's device */
/* Calls answered UNSUPPORTED under a forced number of row threads (llvmpipe's
   loop-trip limit): fair, counted and noted. */
extern size_t g_unsupported;
extern char g_msg[2048];                  /* clnorm_last_error() after fused_run's call */

/* ---- forced plans through the CLNORM_* environment (t_setenv, restored per case) -- */
const char *plan_now(void);                       /* the forced plan, for labels */
void plan_clear(void);
/* variant NULL: auto; wg, team, split 0: the library's. */
void plan_set(const char *variant, size_t wg, size_t team, size_t split);
void plan_reg(size_t cols);                       /* register variant holding cols */
void plan_pair(size_t cols);                      /* paired register variant; draws R */
int forced_team(void);                            /* CLNORM_ROW_THREADS is set */

/* ---- clnorm_add_rmsnorm on canary-guarded buffers ---------------------------------- */
typedef struct fview { int buf; size_t off, ld; } fview; /* ld 0: packed, passed as 0 */

typedef struct fz {
    clnorm_dtype dt;
    size_t rows, cols;
    fview x, r, y;            /* buffers 0..2 */
    int update, exact;        /* exact: buffers end at the last view element */
    const float *xv, *rv;     /* rows x cols values, rounded to dt on the way in */
    const float *g;           /* cols values or NULL */
    float eps;
    const unsigned char *skip; /* rows whose values are not asserted (or NULL) */
    double rel, abs;          /* 0, 0: API.md's rule for the dtype */
} fz;

size_t v_end(const fz *f, const fview *v);        /* one past the view's last element */
void fz_label(const fz *f, char *buf, size_t len);
/* h = round(float32(x + residual)) of the rounded inputs: its bits and values. */
void fused_h(clnorm_dtype dt, size_t n, const float *xv, const float *rv, uint32_t *hb,
             float *h);
/* y (packed bits) against the float64 RMSNorm of rows v; returns the bad count. */
size_t check_rms_y(const char *file, int line, const char *label, clnorm_dtype dt,
                   size_t rows, size_t cols, const float *v, const float *g, float eps,
                   const uint32_t *yb, const unsigned char *skip, double rel, double abs_,
                   int check_poison);
/* Runs and checks the call f describes, expecting want; returns its status. */
clnorm_status fused_run(const fz *f, clnorm_status want);

#endif
