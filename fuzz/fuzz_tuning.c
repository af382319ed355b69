/* fuzz_tuning: the tuning-table reader and what it feeds. The input picks a device
   present (with limits, as fz_device), a query and the text of a tuning table; the
   text is stored as a whole, checksummed file under the device's key (so the reader
   gets past the file checks to the line parser), then
   - clnorm_tuning_read either finds the table damaged or returns entries that are
     all in range; clnorm_tuning_write takes them back exactly when their times are
     finite and not negative, and what it writes reads back unchanged (times to the
     0.1 us the file keeps);
   - clnorm_plan_query under the table plans whatever it plans without it (a table
     never makes a shape fail), and every plan keeps the kernels' invariants. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64], tune_path[4300];
static char dev_key[2048];
static size_t dev_key_len;
static const clnorm_tuning_entry placeholder = {
    CLNORM_OP_RMSNORM, CLNORM_F32, 1024, 1024, CLNORM_OP_RMSNORM, CLNORM_VARIANT_STREAM,
    CLNORM_REDUCTION_LOCAL, 64, 64, 0, 1, 2};

static void remove_tmpdir(void)
{
    unlink(tune_path);
    rmdir(tmpdir);
}

static void put(uint8_t *d, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) d[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/clnorm-fuzz-tune-XXXXXX");
    if (!mkdtemp(tmpdir)) abort();
    atexit(remove_tmpdir);
    clnorm_config c;
    clnorm_config_get(&c);
    clnorm_plan_hints_init(&c.hints);
    snprintf(c.cache_dir, sizeof c.cache_dir, "%s", tmpdir);
    FZ_ASSERT(clnorm_config_set(&c) == CLNORM_SUCCESS, "config: %s", clnorm_last_error());
    size_t n = 0;
    FZ_ASSERT(clnorm_device_count(&n) == CLNORM_SUCCESS && n > 0, "no device");
    return 0;
}

/* The device's tuning file and key, learned from a table the library writes (once
   per device; the key changes with nothing the fuzzer does). */
static void learn_key(const clnorm_device_info *d)
{
    static cl_device_id known;
    if (known == d->device) return;
    FZ_ASSERT(clnorm_tuning_write(d->device, &placeholder, 1) == CLNORM_SUCCESS,
              "tuning write: %s", clnorm_last_error());
    clnorm_tuning_entry *got = NULL;
    size_t n = 0;
    FZ_ASSERT(clnorm_tuning_read(d->device, &got, &n, tune_path, sizeof tune_path) ==
                  CLNORM_CACHE_FILE_OK && n == 1, "tuning table does not read back");
    free(got);
    uint8_t head[32];
    FILE *fp = fopen(tune_path, "rb");
    FZ_ASSERT(fp && fread(head, 1, 32, fp) == 32, "cannot read %s", tune_path);
    dev_key_len = (size_t)head[12] | (size_t)head[13] << 8 | (size_t)head[14] << 16 |
                  (size_t)head[15] << 24;
    FZ_ASSERT(dev_key_len < sizeof dev_key && fread(dev_key, 1, dev_key_len, fp) == dev_key_len,
              "key of %zu bytes", dev_key_len);
    fclose(fp);
    known = d->device;
}

static void check_entry(const clnorm_tuning_entry *e)
{
    FZ_ASSERT((unsigned)e->op < CLNORM_OP_COUNT && (unsigned)e->algorithm < CLNORM_OP_COUNT &&
                  (unsigned)e->variant < CLNORM_VARIANT_COUNT &&
                  (unsigned)e->reduction <= CLNORM_REDUCTION_NV_SHUFFLE &&
                  (unsigned)e->dtype <= CLNORM_BF16,
              "entry out of range");
    FZ_ASSERT(e->algorithm == e->op ||
                  (e->op == CLNORM_OP_SOFTMAX_AUTO &&
                   (e->algorithm == CLNORM_OP_SOFTMAX_THREE_PASS ||
                    e->algorithm == CLNORM_OP_SOFTMAX_ONLINE)),
              "entry of op %d runs algorithm %d", (int)e->op, (int)e->algorithm);
    FZ_ASSERT(e->cols && e->rows && e->work_group && e->items_per_row, "zero in an entry");
    FZ_ASSERT(e->variant != CLNORM_VARIANT_SPLIT || e->split, "split entry without slices");
}

static int same_time(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= 0.05 + 1e-9 * fabs(a);
}

static void check_same(const clnorm_tuning_entry *a, const clnorm_tuning_entry *b, size_t i,
                       int exact)
{
    FZ_ASSERT(a->op == b->op && a->dtype == b->dtype && a->cols == b->cols &&
                  a->rows == b->rows && a->algorithm == b->algorithm &&
                  a->variant == b->variant && a->reduction == b->reduction &&
                  a->work_group == b->work_group && a->items_per_row == b->items_per_row &&
                  (a->variant != CLNORM_VARIANT_SPLIT || a->split == b->split),
              "entry %zu changed in a write and a read", i);
    FZ_ASSERT(exact ? a->best_us == b->best_us && a->builtin_us == b->builtin_us
                    : same_time(a->best_us, b->best_us) && same_time(a->builtin_us, b->builtin_us),
              "entry %zu: times %.17g %.17g read back as %.17g %.17g", i, a->best_us,
              a->builtin_us, b->best_us, b->builtin_us);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    fz_limits lim;
    const clnorm_device_info *d = fz_device(&f, &lim.max_wg, &lim.max_local);
    clnorm_op op = (clnorm_op)(fz_u8(&f) % CLNORM_OP_COUNT);
    clnorm_dtype dt = (clnorm_dtype)(fz_u8(&f) % 3);
    size_t rows = fz_size(&f), cols = fz_size(&f);
    fz_shape(&rows, &cols);
    learn_key(d);

    /* The table text, stored under the device's key. Writing a table first makes
       the library forget the tables it has read, so the plans below read this one. */
    const uint8_t *text = f.n ? f.p : (const uint8_t *)"\n";
    size_t tlen = f.n ? f.n : 1;
    lim.reduction = text[0] & 1 ? CLNORM_REDUCTION_LOCAL : CLNORM_REDUCTION_AUTO;
    FZ_ASSERT(clnorm_tuning_write(d->device, &placeholder, 1) == CLNORM_SUCCESS,
              "tuning write: %s", clnorm_last_error());
    size_t n = 32 + dev_key_len + tlen;
    uint8_t *img = malloc(n);
    memcpy(img, "CLNORM\x1a\n", 8);
    put(img + 8, 1, 4);
    put(img + 12, dev_key_len, 4);
    put(img + 16, tlen, 8);
    memcpy(img + 32, dev_key, dev_key_len);
    memcpy(img + 32 + dev_key_len, text, tlen);
    put(img + 24, fz_file_sum(img, dev_key_len, tlen), 8);
    FILE *fp = fopen(tune_path, "wb");
    FZ_ASSERT(fp && fwrite(img, 1, n, fp) == n && fclose(fp) == 0, "cannot write the table");
    free(img);

    clnorm_tuning_entry *e = NULL;
    size_t ne = 0;
    clnorm_cache_file_status r = clnorm_tuning_read(d->device, &e, &ne, NULL, 0);
    FZ_ASSERT(r == CLNORM_CACHE_FILE_OK || r == CLNORM_CACHE_FILE_DAMAGED, "read gave %d",
              (int)r);
    if (r == CLNORM_CACHE_FILE_OK)
        for (size_t i = 0; i < ne; i++) check_entry(&e[i]);

    /* The table as the operations use it: a tuned plan where an entry fits. */
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.max_work_group = lim.max_wg;
    h.max_local_mem = lim.max_local;
    h.reduction = lim.reduction;
    h.tuning = 0;
    clnorm_plan_info plain, tuned;
    clnorm_status s0 = clnorm_plan_query(d->device, &h, op, dt, rows, cols, &plain);
    h.tuning = 1;
    clnorm_status s1 = clnorm_plan_query(d->device, &h, op, dt, rows, cols, &tuned);
    FZ_ASSERT(s0 == s1, "with the table: %s, without: %s", clnorm_status_string(s1),
              clnorm_status_string(s0));
    if (s1 == CLNORM_SUCCESS) {
        fz_check_plan(d, &lim, op, rows, cols, &tuned);
        FZ_ASSERT(tuned.tuned || !memcmp(&plain, &tuned, sizeof plain),
                  "an untuned plan differs from the built-in one");
    }

    /* Round trip: what is written reads back the same (times are kept to 0.1 us). */
    if (r == CLNORM_CACHE_FILE_OK && ne && ne < 512) {
        int writable = 1;
        for (size_t i = 0; i < ne; i++)
            writable &= isfinite(e[i].best_us) && e[i].best_us >= 0 &&
                        isfinite(e[i].builtin_us) && e[i].builtin_us >= 0;
        clnorm_status ws = clnorm_tuning_write(d->device, e, ne);
        FZ_ASSERT(writable ? ws == CLNORM_SUCCESS : ws == CLNORM_INVALID_ARGUMENT,
                  "write of what was read: %s: %s", clnorm_status_string(ws),
                  clnorm_last_error());
        if (writable) {
            clnorm_tuning_entry *e2 = NULL, *e3 = NULL;
            size_t n2 = 0, n3 = 0;
            FZ_ASSERT(clnorm_tuning_read(d->device, &e2, &n2, NULL, 0) == CLNORM_CACHE_FILE_OK &&
                          n2 == ne, "reread failed");
            for (size_t i = 0; i < ne; i++) check_same(&e[i], &e2[i], i, 0);
            /* Once rounded, a table is a fixed point. */
            FZ_ASSERT(clnorm_tuning_write(d->device, e2, n2) == CLNORM_SUCCESS &&
                          clnorm_tuning_read(d->device, &e3, &n3, NULL, 0) ==
                              CLNORM_CACHE_FILE_OK && n3 == n2, "second round trip failed");
            for (size_t i = 0; i < n2; i++) check_same(&e2[i], &e3[i], i, 1);
            free(e2);
            free(e3);
        }
    }
    free(e);
    return 0;
}
