/* fuzz_tuning: the tuning-file reader (src/tuning.c) and what it feeds. The input is
   a device profile, a query and the text of a tuning table; the text is stored as a
   whole, checksummed file under the right key (so the reader gets past the file
   checks to the line parser), then
   - cln_tuning_read either refuses the table or returns entries that are all in
     range, and that survive a write and a second read unchanged;
   - cln_tuning_apply, when it applies an entry, leaves limits under which
     cln_plan_make succeeds with a plan that keeps the kernels' invariants. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

static void remove_tmpdir(void) { rmdir(tmpdir); } /* empty: every file is unlinked */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/clnorm-fuzz-tune-XXXXXX");
    if (!mkdtemp(tmpdir)) abort();
    atexit(remove_tmpdir);
    setenv("CLNORM_CACHE_DIR", tmpdir, 1);
    static const char *const clear[] = {"CLNORM_TUNING", "CLNORM_VARIANT", "CLNORM_WORK_GROUP",
                                        "CLNORM_ROW_THREADS", "CLNORM_SPLIT",
                                        "CLNORM_REDUCTION", "CLNORM_MAX_WORK_GROUP",
                                        "CLNORM_MAX_LOCAL_MEM", "CLNORM_KERNEL_DIR"};
    for (size_t i = 0; i < sizeof clear / sizeof clear[0]; i++) unsetenv(clear[i]);
    return 0;
}

static void check_entry(const cln_tune_entry *e)
{
    FZ_ASSERT((unsigned)e->op < CLN_OP_COUNT && (unsigned)e->algo < CLN_OP_COUNT &&
                  (unsigned)e->variant <= CLN_VAR_SPLIT && (unsigned)e->path < CLN_PATH_COUNT &&
                  (unsigned)e->dtype <= CLNORM_BF16,
              "entry out of range");
    FZ_ASSERT(e->cols && e->rows && e->wg && e->team, "zero in an entry");
    FZ_ASSERT(e->variant != CLN_VAR_SPLIT || e->slices, "split entry without slices");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    cln_profile p;
    fz_profile(&f, &p);
    cln_op op = (cln_op)(fz_u8(&f) % CLN_OP_COUNT);
    clnorm_dtype dt = (clnorm_dtype)(fz_u8(&f) % 3);
    size_t rows = fz_size(&f), cols = fz_size(&f);
    fz_shape(&rows, &cols);

    /* The table text, stored under the device's key. */
    char path[4200], key[2048], dir[4096], name[64];
    FZ_ASSERT(cln_tuning_file(&p, path, sizeof path, key, sizeof key) == CLN_DISK_OK,
              "no tuning file path");
    FZ_ASSERT(cln_disk_dir(dir, sizeof dir, 1) == CLN_DISK_OK, "no cache folder");
    cln_disk_name(&p, "tuning", NULL, name, sizeof name);
    const char *text = f.n ? (const char *)f.p : "\n";
    size_t tlen = f.n ? f.n : 1;
    FZ_ASSERT(cln_disk_write(dir, name, key, text, tlen) == CLN_DISK_OK, "write failed");

    cln_tuning_reset();
    cln_tune_entry *e = NULL;
    size_t n = 0;
    int r = cln_tuning_read(&p, &e, &n);
    FZ_ASSERT(r == CLN_DISK_OK || r == CLN_DISK_BAD, "read gave %d", r);
    if (r == CLN_DISK_OK) {
        for (size_t i = 0; i < n; i++) check_entry(&e[i]);
        /* Round trip: what is written reads back the same (times are printed to 0.1). */
        if (n && n < 512) {
            FZ_ASSERT(cln_tuning_write(&p, e, n) == CLN_DISK_OK, "rewrite failed");
            cln_tune_entry *e2 = NULL;
            size_t n2 = 0;
            FZ_ASSERT(cln_tuning_read(&p, &e2, &n2) == CLN_DISK_OK && n2 == n, "reread failed");
            for (size_t i = 0; i < n; i++) {
                char a[512], b[512];
                cln_tuning_line(&e[i], a, sizeof a);
                cln_tuning_line(&e2[i], b, sizeof b);
                FZ_ASSERT(!strcmp(a, b), "entry %zu: \"%s\" read back as \"%s\"", i, a, b);
            }
            free(e2);
        }
        free(e);
    }

    /* The table as cln_prepare uses it. */
    cln_tuning_reset();
    cln_limits lim;
    FZ_ASSERT(cln_limits_from_env(&lim) == CLNORM_SUCCESS, "limits");
    if (fz_u8(&f) & 1) lim.force_path = CLN_PATH_LOCAL;
    cln_op aop = op;
    if (cln_tuning_apply(&p, &aop, dt, rows, cols, &lim)) {
        cln_plan pl;
        char why[512] = "";
        clnorm_status st = cln_plan_make(&p, &lim, aop, dt, rows, cols, &pl, why, sizeof why);
        FZ_ASSERT(st == CLNORM_SUCCESS, "an applied entry does not plan: %s", why);
        /* CLNORM_FUZZ_SKIP_KNOWN=1 skips an entry whose algorithm is another
           operation instead of failing on it, so that a long run goes on past that
           kind of finding. */
        if (getenv("CLNORM_FUZZ_SKIP_KNOWN") && aop != op && op != CLN_OP_SOFTMAX_AUTO) {
            cln_tuning_reset();
            unlink(path);
            return 0;
        }
        FZ_ASSERT(op != CLN_OP_SOFTMAX_AUTO ? aop == op
                                            : aop == CLN_OP_SOFTMAX_THREE_PASS ||
                                                  aop == CLN_OP_SOFTMAX_ONLINE ||
                                                  aop == CLN_OP_SOFTMAX_AUTO,
                  "apply turned op %d into %d", (int)op, (int)aop);
        fz_check_plan(&p, &lim, aop, dt, rows, cols, &pl);
    }
    cln_tuning_reset();
    unlink(path);
    return 0;
}
