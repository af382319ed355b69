/* The smallest clnorm program: softmax of a 5 x 37 float32 host array on the device
   argv[1] names (default: $CLNORM_DEVICE, else the first GPU), checked against float64.
   Build: cc hello.c -lclnorm -lOpenCL -lm */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum { ROWS = 5, COLS = 37 };

int main(int argc, char **argv)
{
    float x[ROWS][COLS], y[ROWS][COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i / COLS][i % COLS] = (float)(4 * sin(1.7 * i + 0.5));
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) return 77; /* "skipped", for the test suite */
    if (!st) st = clnorm_softmax_host(s, CLNORM_F32, ROWS, COLS, x, y, CLNORM_SOFTMAX_AUTO);
    if (st) fprintf(stderr, "%s: %s\n", clnorm_status_string(st), clnorm_last_error());
    else printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));
    clnorm_session_destroy(s);
    int wrong = st != CLNORM_SUCCESS;
    for (int r = 0; r < ROWS && !st; r++) {
        double m = -INFINITY, l = 0;
        for (int c = 0; c < COLS; c++) m = fmax(m, x[r][c]);
        for (int c = 0; c < COLS; c++) l += exp(x[r][c] - m);
        for (int c = 0; c < COLS; c++) /* within 2e-5 relative; a NaN fails too */
            wrong += !(fabs(y[r][c] - exp(x[r][c] - m) / l) <= 2e-5 * exp(x[r][c] - m) / l);
    }
    printf("%d of %d values differ from the float64 reference\n", wrong, ROWS * COLS);
    return wrong != 0;
}
