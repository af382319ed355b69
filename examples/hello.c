/* The smallest clnorm program: softmax and RMSNorm of a 5 x 37 float32 host array
   through a session, checked against a float64 reference computed on the host.
   Build: cc hello.c -lclnorm -lOpenCL -lm    Run: ./a.out [device spec] */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum { ROWS = 5, COLS = 37 };

/* The larger of two errors, where a NaN counts as the largest (fmax would drop it). */
static double worse(double a, double b) { return isnan(a) || a > b ? a : b; }

int main(int argc, char **argv)
{
    float x[ROWS][COLS], p[ROWS][COLS], n[ROWS][COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i / COLS][i % COLS] = (float)(4 * sin(1.7 * i + 0.5));

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) { printf("skipped: %s\n", clnorm_last_error()); return 77; }
    if (st == CLNORM_SUCCESS) st = clnorm_softmax_host(s, CLNORM_F32, ROWS, COLS, x, p, CLNORM_SOFTMAX_AUTO);
    if (st == CLNORM_SUCCESS) st = clnorm_rmsnorm_host(s, CLNORM_F32, ROWS, COLS, x, NULL, n, 1e-6f);
    if (st == CLNORM_SUCCESS) printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));
    else fprintf(stderr, "%s: %s\n", clnorm_status_string(st), clnorm_last_error());
    clnorm_session_destroy(s);
    if (st != CLNORM_SUCCESS) return 1;

    /* The largest error relative to a float64 reference. */
    double worst = 0;
    for (int r = 0; r < ROWS; r++) {
        double m = -INFINITY, sum = 0, sq = 0;
        for (int c = 0; c < COLS; c++) m = fmax(m, x[r][c]);
        for (int c = 0; c < COLS; c++) sum += exp(x[r][c] - m), sq += (double)x[r][c] * x[r][c];
        for (int c = 0; c < COLS; c++) {
            double pr = exp(x[r][c] - m) / sum, nr = x[r][c] / sqrt(sq / COLS + 1e-6f);
            worst = worse(worse(fabs(p[r][c] - pr) / pr, fabs(n[r][c] - nr) / fabs(nr)), worst);
        }
    }
    printf("softmax and rmsnorm of %dx%d: relative error %.2g (limit 2e-5)\n", ROWS, COLS, worst);
    if (worst <= 2e-5) return 0;
    fprintf(stderr, "FAILED: the results differ from the reference\n");
    return 1;
}
