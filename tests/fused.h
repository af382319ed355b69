/* The add_rmsnorm harness (fused.c) that test_fused.c (add_rmsnorm_values,
   add_rmsnorm_views) and test_extreme.c (rmsnorm_extreme, lowp_special) share. The
   helpers every case uses are in util.h. */
#ifndef CLNORM_TESTS_FUSED_H
#define CLNORM_TESTS_FUSED_H

#include "test.h"

#define F32 CLNORM_F32
#define F16 CLNORM_F16
#define BF16 CLNORM_BF16

/* ---- the nearest-even check of 16-bit outputs --------------------------------------- */
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
