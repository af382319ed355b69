/* The smallest clnorm program: softmax and RMSNorm of a 5 x 37 float32 host array
   through a session, checked against a float64 reference computed on the host.
   Build: cc hello.c -lclnorm -lOpenCL -lm    Run: ./a.out [device spec] */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum { ROWS = 5, COLS = 37 };

int main(int argc, char **argv)
{
    float x[ROWS][COLS], p[ROWS][COLS], n[ROWS][COLS];
    for (int i = 0; i < ROWS * COLS; i++) /* deterministic, never 0 */
        x[i / COLS][i % COLS] = (float)(4 * sin(1.7 * i + 0.5));

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) {
        printf("skipped: %s\n", clnorm_last_error());
        return 77;
    }
    if (st == CLNORM_SUCCESS)
        st = clnorm_softmax_host(s, CLNORM_F32, ROWS, COLS, x, p, CLNORM_SOFTMAX_AUTO);
    if (st == CLNORM_SUCCESS)
        st = clnorm_rmsnorm_host(s, CLNORM_F32, ROWS, COLS, x, NULL, n, 1e-6f);
    if (st == CLNORM_SUCCESS)
        printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));
    else
        fprintf(stderr, "%s: %s\n", clnorm_status_string(st), clnorm_last_error());
    clnorm_session_destroy(s);
    if (st != CLNORM_SUCCESS) return 1;

    int bad = 0; /* values further than 2e-5 (relative) from a float64 reference, or NaN */
    for (int r = 0; r < ROWS; r++) {
        double m = -INFINITY, sum = 0, sq = 0;
        for (int c = 0; c < COLS; c++) m = fmax(m, x[r][c]);
        for (int c = 0; c < COLS; c++) sum += exp(x[r][c] - m), sq += (double)x[r][c] * x[r][c];
        for (int c = 0; c < COLS; c++) {
            double pr = exp(x[r][c] - m) / sum, nr = x[r][c] / sqrt(sq / COLS + 1e-6f);
            bad += !(fabs(p[r][c] - pr) <= 2e-5 * pr && fabs(n[r][c] - nr) <= 2e-5 * fabs(nr));
        }
    }
    printf("softmax and rmsnorm of %dx%d: %d of %d values differ from the float64 reference\n",
           ROWS, COLS, bad, ROWS * COLS);
    return bad ? 1 : 0;
}
