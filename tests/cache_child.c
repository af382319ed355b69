/* Helper of disk_cache_processes: one process start against the cache folder in
   CLNORM_CACHE_DIR. Runs one softmax on a session of SPEC ("" = default), checks it,
   and with "warm" (which the case passes only where the device stores binaries) also
   that the program came from the disk cache; "prewarm" runs with a disk cache folder
   of its own, to fill only the driver's own caches. Exit 0 good, 1 a failed call or a
   wrong value, 3 not warm. */
#define _POSIX_C_SOURCE 200809L
#include "clnorm_advanced.h"

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
        clnorm_config cfg;
        clnorm_config_get(&cfg);
        char own[sizeof cfg.cache_dir];
        snprintf(own, sizeof own, "%.1000s/prewarm", *cfg.cache_dir ? cfg.cache_dir : "/tmp");
        snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", own);
        if (clnorm_config_set(&cfg) != CLNORM_SUCCESS) {
            fprintf(stderr, "cache_child: %s\n", clnorm_last_error());
            return 1;
        }
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
    clnorm_cache_stats cs;
    clnorm_cache_stats_get(&cs);
    clnorm_session_destroy(s);
    if (warm && (cs.disk_hits != 1 || cs.disk_misses || cs.disk_rejected)) {
        fprintf(stderr, "cache_child: warm start: %lu hits, %lu misses, %lu rejected\n",
                cs.disk_hits, cs.disk_misses, cs.disk_rejected);
        return 3;
    }
    return 0;
}
