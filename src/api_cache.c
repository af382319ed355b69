/* The caches seen from outside: the process-wide counters, the tuning tables of
   devices, the cache folder and what each of its files holds, and the release of
   what the library keeps for a context. */
#define _POSIX_C_SOURCE 200809L /* lstat */
#include "clnorm_advanced.h"
#include "config.h"
#include "devices.h"
#include "disk_cache.h"
#include "hash.h"
#include "profile.h"
#include "program_build.h"
#include "program_cache.h"
#include "scratch.h"
#include "serial.h"
#include "source.h"
#include "status.h"
#include "tuning.h"
#include "types.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void clnorm_release_cache(cl_context context)
{
    cln_config_take(); /* programs stored below go to the folder in force */
    cln_queue_hints_forget(context);
    cln_serial_forget(context);
    cln_scratch_drop(context);
    cln_program_cache_drop(context);
    if (!context) cln_source_forget();
}

void clnorm_cache_stats_get(clnorm_cache_stats *out)
{
    if (!out) return;
    cln_disk_stats s;
    cln_disk_stats_get(&s);
    out->builds = cln_program_builds();
    out->disk_hits = s.hits;
    out->disk_misses = s.misses;
    out->disk_rejected = s.rejected;
    out->disk_refused = s.refused;
    out->disk_stores = s.stores;
    out->disk_store_failures = s.store_failures;
}

/* ---- Tuning tables ------------------------------------------------------------------- */

clnorm_cache_file_status clnorm_tuning_read(cl_device_id device, clnorm_tuning_entry **entries,
                                            size_t *count, char *path, size_t path_len)
{
    char file[4200], key[2048];
    const cln_profile *p;
    if (entries) *entries = NULL;
    if (count) *count = 0;
    if (path && path_len) path[0] = '\0';
    if (!entries || !count) {
        cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL", !entries ? "entries" : "count");
        return CLNORM_CACHE_FILE_ABSENT;
    }
    cln_config_take();
    if (!device || cln_profile_get(device, &p) != CLNORM_SUCCESS) {
        cln_fail(CLNORM_DEVICE_NOT_FOUND, "device %p is not a valid device", (void *)device);
        return CLNORM_CACHE_FILE_ABSENT;
    }
    if (cln_tuning_file(p, file, sizeof file, NULL, 0) != CLN_DISK_OK)
        return CLNORM_CACHE_FILE_OFF;
    if (path && path_len) snprintf(path, path_len, "%s", file);
    cln_tune_entry *e = NULL;
    size_t n = 0;
    int r = cln_tuning_read(p, &e, &n);
    if (r == CLN_DISK_ABSENT) return CLNORM_CACHE_FILE_ABSENT;
    if (r == CLN_DISK_OFF) return CLNORM_CACHE_FILE_OFF;
    if (r != CLN_DISK_OK) {
        /* Whole but keyed for another library, source or driver: stale; else damaged. */
        char *found = NULL;
        size_t len;
        int stale = cln_disk_inspect(file, &found, &len) == CLN_DISK_OK &&
                    cln_tuning_file(p, file, sizeof file, key, sizeof key) == CLN_DISK_OK &&
                    strcmp(found, key) != 0;
        free(found);
        return stale ? CLNORM_CACHE_FILE_STALE : CLNORM_CACHE_FILE_DAMAGED;
    }
    clnorm_tuning_entry *out = n ? calloc(n, sizeof *out) : NULL;
    if (n && !out) {
        free(e);
        cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for %zu tuning entries", n);
        return CLNORM_CACHE_FILE_ABSENT;
    }
    for (size_t i = 0; i < n; i++) {
        out[i].op = (clnorm_op)e[i].op;
        out[i].dtype = e[i].dtype;
        out[i].cols = e[i].cols;
        out[i].rows = e[i].rows;
        out[i].algorithm = (clnorm_op)e[i].algo;
        out[i].variant = (clnorm_variant)e[i].variant;
        out[i].reduction = (clnorm_reduction)e[i].path;
        out[i].work_group = e[i].wg;
        out[i].items_per_row = e[i].team;
        out[i].split = e[i].slices;
        out[i].best_us = e[i].best_us;
        out[i].builtin_us = e[i].builtin_us;
    }
    free(e);
    *entries = out;
    *count = n;
    return CLNORM_CACHE_FILE_OK;
}

/* What the file's reader accepts (tuning.c), so that a written table reads back. */
static clnorm_status cln_tuning_entry_check(const clnorm_tuning_entry *e, size_t i)
{
    const char *bad = NULL;
    long long v = 0;
    if ((unsigned)e->op >= CLNORM_OP_COUNT) bad = "op", v = e->op;
    else if (e->dtype != CLNORM_F32 && e->dtype != CLNORM_F16 && e->dtype != CLNORM_BF16)
        bad = "dtype", v = e->dtype;
    else if (!(e->algorithm == e->op ||
               (e->op == CLNORM_OP_SOFTMAX_AUTO && (e->algorithm == CLNORM_OP_SOFTMAX_THREE_PASS ||
                                                    e->algorithm == CLNORM_OP_SOFTMAX_ONLINE))))
        bad = "algorithm", v = e->algorithm;
    else if ((unsigned)e->variant >= CLNORM_VARIANT_COUNT) bad = "variant", v = e->variant;
    else if ((unsigned)e->reduction > CLNORM_REDUCTION_NV_SHUFFLE)
        bad = "reduction", v = e->reduction;
    else if (!e->cols) bad = "cols";
    else if (!e->rows) bad = "rows";
    else if (!e->work_group) bad = "work_group";
    else if (!e->items_per_row) bad = "items_per_row";
    else if (e->variant == CLNORM_VARIANT_SPLIT && !e->split) bad = "split";
    if (bad)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "entries[%zu].%s = %lld is out of range", i,
                        bad, v);
    if (!isfinite(e->best_us) || e->best_us < 0 || !isfinite(e->builtin_us) || e->builtin_us < 0)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "entries[%zu]: best_us = %g and builtin_us = %g "
                        "must be finite and not negative", i, e->best_us, e->builtin_us);
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_tuning_write(cl_device_id device, const clnorm_tuning_entry *entries,
                                  size_t count)
{
    const cln_profile *p;
    clnorm_status st;
    if (count && !entries)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "entries is NULL but count is %zu", count);
    for (size_t i = 0; i < count; i++)
        if ((st = cln_tuning_entry_check(&entries[i], i))) return st;
    if (!device) return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device is NULL");
    if (cln_config_take()->disk != CLN_DISK_OK)
        return cln_fail(CLNORM_UNSUPPORTED, "the disk cache is off (CLNORM_CACHE_DIR=off, or no "
                        "HOME): there is no folder for a tuning table");
    if ((st = cln_profile_get(device, &p))) return st;
    cln_tune_entry *e = calloc(count ? count : 1, sizeof *e);
    if (!e) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for %zu entries", count);
    for (size_t i = 0; i < count; i++) {
        e[i].op = (cln_op)entries[i].op;
        e[i].dtype = entries[i].dtype;
        e[i].cols = entries[i].cols;
        e[i].rows = entries[i].rows;
        e[i].algo = (cln_op)entries[i].algorithm;
        e[i].variant = (cln_variant)entries[i].variant;
        e[i].path = (cln_path)entries[i].reduction;
        e[i].wg = entries[i].work_group;
        e[i].team = entries[i].items_per_row;
        e[i].slices = entries[i].variant == CLNORM_VARIANT_SPLIT ? entries[i].split : 0;
        e[i].best_us = entries[i].best_us;
        e[i].builtin_us = entries[i].builtin_us;
    }
    int r = cln_tuning_write(p, e, count);
    free(e);
    if (r == CLN_DISK_OK) return CLNORM_SUCCESS;
    char file[4200] = "";
    cln_tuning_file(p, file, sizeof file, NULL, 0);
    return cln_fail(CLNORM_OUT_OF_RESOURCES, "cannot write the tuning table \"%s\"", file);
}

/* ---- The cache folder ------------------------------------------------------------------ */

clnorm_cache_file_status clnorm_cache_dir(char *buf, size_t len)
{
    const cln_config *c = cln_config_take();
    if (!buf || !len) return c->disk == CLN_DISK_OK ? CLNORM_CACHE_FILE_OK : CLNORM_CACHE_FILE_OFF;
    buf[0] = '\0';
    if (c->disk != CLN_DISK_OK || strlen(c->folder) >= len) return CLNORM_CACHE_FILE_OFF;
    memcpy(buf, c->folder, strlen(c->folder) + 1);
    return CLNORM_CACHE_FILE_OK;
}

/* The value of the line "name value" of a key text, into buf ("" when absent). */
static void cln_key_field(const char *key, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    buf[0] = '\0';
    for (const char *l = key; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') {
            const char *e = strchr(l, '\n');
            size_t m = e ? (size_t)(e - l - n - 1) : strlen(l + n + 1);
            snprintf(buf, len, "%.*s", (int)m, l + n + 1);
            return;
        }
}

/* The devices present, by query, listed once per process. */
enum { CLN_INSPECT_DEVICES = 32 };
static cln_profile cln_present[CLN_INSPECT_DEVICES];
static size_t cln_n_present;
static pthread_once_t cln_present_once = PTHREAD_ONCE_INIT;

static void cln_list_present(void)
{
    cln_device_ref refs[CLN_INSPECT_DEVICES];
    size_t total = 0;
    if (cln_device_list(refs, CLN_INSPECT_DEVICES, &total) != CLNORM_SUCCESS) return;
    for (size_t i = 0; i < total && i < CLN_INSPECT_DEVICES; i++)
        if (cln_profile_query(refs[i].device, &cln_present[cln_n_present]) == CLNORM_SUCCESS)
            cln_n_present++;
}

/* Why this process would not use a file of this key, or "". Build options are not
   compared: they follow from probes, and a file of options nobody asks for is only
   never loaded. */
static const char *cln_stale_reason(const char *key, int check_devices)
{
    char v[512], w[512], src[64];
    cln_key_field(key, "library", v, sizeof v);
    if (strcmp(v, clnorm_version())) return "another library";
    cln_key_field(key, "format", v, sizeof v);
    if (atoi(v) != CLN_DISK_FORMAT) return "another format";
    /* The probes' answers depend on no kernel source. */
    if (strncmp(key, "clnorm probe\n", 13) != 0) {
        char *text;
        size_t len;
        if (cln_source_get(&text, &len) != CLNORM_SUCCESS) return "";
        snprintf(src, sizeof src, "%016llx %zu", (unsigned long long)cln_hash64(text, len, 0), len);
        free(text);
        cln_key_field(key, "source", v, sizeof v);
        if (strcmp(v, src)) return "another kernel source";
    }
    if (!check_devices) return "";
    pthread_once(&cln_present_once, cln_list_present);
    cln_key_field(key, "device", v, sizeof v);
    cln_key_field(key, "platform", w, sizeof w);
    int device = 0;
    for (size_t i = 0; i < cln_n_present; i++) {
        const cln_profile *d = &cln_present[i];
        if (strcmp(d->device_name, v) || strcmp(d->platform_name, w)) continue;
        device = 1;
        char drv[512], pv[512];
        cln_key_field(key, "driver", drv, sizeof drv);
        cln_key_field(key, "platform-version", pv, sizeof pv);
        if (!strcmp(d->driver_version, drv) && !strcmp(d->platform_version, pv)) return "";
    }
    return device ? "another driver" : "no such device here";
}

static int cln_ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), m = strlen(end);
    return n > m && !strcmp(s + n - m, end);
}

clnorm_cache_file_status clnorm_cache_inspect(const char *name, int check_devices,
                                              clnorm_cache_file *out)
{
    if (!out) return CLNORM_CACHE_FILE_ABSENT;
    memset(out, 0, sizeof *out);
    out->stale_reason = "";
    if (!name || strchr(name, '/')) return CLNORM_CACHE_FILE_ABSENT;
    const char *kind = !strncmp(name, ".tmp-", 5) ? "temporary"
                       : !cln_ends_with(name, ".bin") ? NULL
                       : !strncmp(name, "prog-", 5) ? "program"
                       : !strncmp(name, "tune-", 5) ? "tuning"
                       : !strncmp(name, "probe-", 6) ? "probe" : NULL;
    if (!kind) return CLNORM_CACHE_FILE_ABSENT;
    const cln_config *c = cln_config_take();
    if (c->disk != CLN_DISK_OK) return CLNORM_CACHE_FILE_OFF;
    char path[4400];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", c->folder, name);
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return CLNORM_CACHE_FILE_ABSENT;
    snprintf(out->kind, sizeof out->kind, "%s", kind);
    /* A temporary file is a store under way, or one a killed process left. */
    if (!strcmp(kind, "temporary")) return CLNORM_CACHE_FILE_DAMAGED;
    char *key = NULL;
    size_t payload = 0;
    int r = cln_disk_inspect(path, &key, &payload);
    if (r == CLN_DISK_ABSENT) return CLNORM_CACHE_FILE_ABSENT;
    if (r != CLN_DISK_OK) return CLNORM_CACHE_FILE_DAMAGED;
    cln_key_field(key, "device", out->device, sizeof out->device);
    cln_key_field(key, "platform", out->platform, sizeof out->platform);
    cln_key_field(key, "driver", out->driver, sizeof out->driver);
    if (!strcmp(kind, "program"))
        cln_key_field(key, "options", out->options, sizeof out->options);
    out->payload_bytes = payload;
    out->stale_reason = cln_stale_reason(key, check_devices);
    free(key);
    return *out->stale_reason ? CLNORM_CACHE_FILE_STALE : CLNORM_CACHE_FILE_OK;
}
