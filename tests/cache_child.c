/* Helper of disk_cache_processes: one process start against the cache folder in
   CLNORM_CACHE_DIR. Runs one softmax on a session of SPEC ("" = default), checks it,
   and with "warm" also that the program came from the disk cache where the device
   stores binaries; "prewarm" runs with a disk cache folder of its own, to fill only
   the driver's own caches. Exit 0 good, 1 a failed call or a wrong value, 3 not warm. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *spec = argc > 1 && *argv[1] ? argv[1] : NULL;
    int warm = argc > 2 && !strcmp(argv[2], "warm");
    /* prewarm: a folder of its own, so that the driver builds the very programs the
       others will (on PoCL, a program per kernel where the disk cache is on). */
    if (argc > 2 && !strcmp(argv[2], "prewarm")) {
        const char *dir = getenv("CLNORM_CACHE_DIR");
        static char own[4200];
        snprintf(own, sizeof own, "%s/prewarm", dir && *dir ? dir : "/tmp");
        setenv("CLNORM_CACHE_DIR", own, 1);
    }
    enum { ROWS = 8, COLS = 1000 };
    static float x[ROWS * COLS], m[ROWS], l[ROWS];
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(spec, &s);
    for (int i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 7919) % 1000) / 100.0f;
    if (!st) st = clnorm_softmax_stats_host(s, CLNORM_F32, ROWS, COLS, x, m, l);
    if (st) {
        fprintf(stderr, "cache_child: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        clnorm_session_destroy(s);
        return 1;
    }
    for (int r = 0; r < ROWS; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < COLS; c++) mx = fmax(mx, x[r * COLS + c]);
        for (int c = 0; c < COLS; c++) sum += exp(x[r * COLS + c] - mx);
        if (m[r] != (float)mx || fabs(l[r] - sum) > 1e-4 * sum) {
            fprintf(stderr, "cache_child: row %d: (%g, %g), expected (%g, %g)\n", r, m[r], l[r],
                    mx, sum);
            clnorm_session_destroy(s);
            return 1;
        }
    }
    cl_device_id dev;
    const cln_profile *p = NULL;
    clGetCommandQueueInfo(clnorm_session_queue(s), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    cln_profile_get(dev, &p);
    cln_disk_stats ds;
    cln_disk_stats_get(&ds);
    clnorm_session_destroy(s);
    if (warm && p && cln_stores_programs(p) && (ds.hits != 1 || ds.misses || ds.rejected)) {
        fprintf(stderr, "cache_child: warm start: %lu hits, %lu misses, %lu rejected\n", ds.hits,
                ds.misses, ds.rejected);
        return 3;
    }
    return 0;
}
