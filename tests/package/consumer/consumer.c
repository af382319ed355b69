/* An outside program that finds clnorm through its installed CMake package or
   pkg-config file: softmax of a few rows on the device named by argv[1] (or the
   default device), checked against a double-precision reference. Exits 0 when the
   result is right, 77 when the device is absent, 1 otherwise. */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROWS 3
#define COLS 7

int main(int argc, char **argv)
{
    float x[ROWS * COLS], y[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37 % 11) - 5) * 0.75f;

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) return 77;
    if (st == CLNORM_SUCCESS)
        st = clnorm_softmax_host(s, CLNORM_F32, ROWS, COLS, x, y, CLNORM_SOFTMAX_AUTO);
    if (st != CLNORM_SUCCESS) {
        fprintf(stderr, "%s: %s\n", clnorm_status_string(st), clnorm_last_error());
        clnorm_session_destroy(s);
        return 1;
    }
    int bad = 0;
    for (int r = 0; r < ROWS; r++) {
        double m = -INFINITY, l = 0;
        for (int c = 0; c < COLS; c++) m = fmax(m, x[r * COLS + c]);
        for (int c = 0; c < COLS; c++) l += exp(x[r * COLS + c] - m);
        for (int c = 0; c < COLS; c++) {
            double want = exp(x[r * COLS + c] - m) / l, got = y[r * COLS + c];
            if (fabs(got - want) > 2e-5 * fabs(want) + 1e-30) {
                fprintf(stderr, "y[%d][%d] = %.9g, want %.9g\n", r, c, got, want);
                bad = 1;
            }
        }
    }
    printf("clnorm %s (header %d.%d.%d) on %s: %s\n", clnorm_version(), CLNORM_VERSION_MAJOR,
           CLNORM_VERSION_MINOR, CLNORM_VERSION_PATCH, clnorm_session_device_name(s),
           bad ? "WRONG" : "ok");
    clnorm_session_destroy(s);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", CLNORM_VERSION_MAJOR, CLNORM_VERSION_MINOR,
             CLNORM_VERSION_PATCH);
    if (strcmp(want, clnorm_version()) != 0) {
        fprintf(stderr, "library %s does not match header %s\n", clnorm_version(), want);
        bad = 1;
    }
    return bad;
}
