/* Tuning tables: the plans `clnorm tune` measured fastest on one device, kept in
   the cache folder beside the program binaries (same file format, key and checks)
   and applied by forcing them into cln_limits, so the plan function stays pure.
   The payload is text, one entry a line:
     op dtype cols rows algo variant path wg team slices best_us builtin_us */
#define _POSIX_C_SOURCE 200809L
#include "tuning.h"
#include "disk_cache.h"
#include "hash.h"
#include "plan.h"
#include "source.h"
#include "types.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct cln_tune_table {
    const cln_profile *prof;
    char dir[4096]; /* the cache folder it was read from */
    cln_tune_entry *e;
    size_t n;
    struct cln_tune_table *next;
} cln_tune_table;

static pthread_mutex_t cln_tune_lock = PTHREAD_MUTEX_INITIALIZER;
static cln_tune_table *cln_tables;

int cln_tuning_file(const cln_profile *p, char *path, size_t len, char *key, size_t klen)
{
    char dir[4096], name[64];
    int r = cln_disk_dir(dir, sizeof dir, 0);
    if (r) return r;
    cln_disk_name(p, "tuning", NULL, name, sizeof name);
    snprintf(path, len, "%s/%s", dir, name);
    if (!key) return CLN_DISK_OK;
    /* Keyed by the kernel source too: a changed kernel makes the table stale. */
    char *src;
    size_t n;
    if (cln_source_get(&src, &n)) return CLN_DISK_BAD;
    cln_disk_key(p, "tuning", "", cln_hash64(src, n, 0), n, key, klen);
    free(src);
    return CLN_DISK_OK;
}

void cln_tuning_line(const cln_tune_entry *e, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s %zu %zu %s %s %s %zu %zu %zu %.1f %.1f", cln_op_name(e->op),
             cln_dtype_name(e->dtype), e->cols, e->rows, cln_op_name(e->algo),
             cln_variant_name(e->variant), cln_path_name(e->path), e->wg, e->team, e->slices,
             e->best_us, e->builtin_us);
}

/* Name to enum value through the name functions; -1 when unknown. */
static int cln_find_op(const char *s)
{
    for (int i = 0; i < CLN_OP_COUNT; i++)
        if (!strcmp(s, cln_op_name((cln_op)i))) return i;
    return -1;
}

static int cln_parse_line(const char *line, cln_tune_entry *e)
{
    char op[32], dt[8], algo[32], var[16], path[16];
    int used = 0;
    if (sscanf(line, "%31s %7s %zu %zu %31s %15s %15s %zu %zu %zu %lf %lf%n", op, dt, &e->cols,
               &e->rows, algo, var, path, &e->wg, &e->team, &e->slices, &e->best_us,
               &e->builtin_us, &used) != 12 || line[used] != '\0')
        return -1;
    int o = cln_find_op(op), a = cln_find_op(algo), v = -1, pa = -1, d = -1;
    for (int i = 0; i < CLN_VAR_COUNT; i++)
        if (!strcmp(var, cln_variant_name((cln_variant)i))) v = i;
    for (int i = CLNORM_F32; i <= CLNORM_BF16; i++)
        if (!strcmp(dt, cln_dtype_name((clnorm_dtype)i))) d = i;
    for (int i = 0; i < CLN_PATH_COUNT; i++)
        if (!strcmp(path, cln_path_name((cln_path)i))) pa = i;
    /* The algorithm must be the op itself, or a softmax form for softmax-auto: a
       foreign one would launch another operation's kernel. */
    int algo_ok = a == o || (o == CLN_OP_SOFTMAX_AUTO &&
                             (a == CLN_OP_SOFTMAX_THREE_PASS || a == CLN_OP_SOFTMAX_ONLINE));
    if (!algo_ok || o < 0 || a < 0 || v < 0 || pa < 0 || d < 0 || !e->cols || !e->rows || !e->wg ||
        !e->team || (v == CLN_VAR_SPLIT && !e->slices))
        return -1;
    e->op = (cln_op)o;
    e->algo = (cln_op)a;
    e->variant = (cln_variant)v;
    e->path = (cln_path)pa;
    e->dtype = (clnorm_dtype)d;
    return 0;
}

int cln_tuning_read(const cln_profile *p, cln_tune_entry **out, size_t *count)
{
    char path[4200], key[2048];
    unsigned char *data;
    size_t len;
    /* The key needs the whole source: look for the file first. */
    int r = cln_tuning_file(p, path, sizeof path, NULL, 0);
    if (!r && access(path, F_OK) != 0) r = CLN_DISK_ABSENT;
    if (!r) r = cln_tuning_file(p, path, sizeof path, key, sizeof key);
    if (!r) r = cln_disk_read(path, key, &data, &len);
    if (r) return r;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += data[i] == '\n';
    cln_tune_entry *e = calloc(lines, sizeof *e);
    char *text = realloc(data, len + 1);
    if (!e || !text) {
        free(e);
        free(text ? text : (char *)data);
        return CLN_DISK_BAD;
    }
    text[len] = '\0';
    size_t n = 0;
    for (char *s = text, *nl; *s; s = nl + 1) {
        nl = strchr(s, '\n');
        if (!nl) nl = s + strlen(s) - 1; /* the last line needs no newline */
        else *nl = '\0';
        if (*s && *s != '#' && cln_parse_line(s, &e[n++]) != 0) {
            /* The checksum held, yet a line is wrong: written by something else. */
            free(e);
            free(text);
            return CLN_DISK_BAD;
        }
    }
    free(text);
    *out = e;
    *count = n;
    return CLN_DISK_OK;
}

int cln_tuning_write(const cln_profile *p, const cln_tune_entry *e, size_t n)
{
    char dir[4096], name[64], key[2048], path[4200];
    int r = cln_disk_dir(dir, sizeof dir, 1);
    if (r || (r = cln_tuning_file(p, path, sizeof path, key, sizeof key))) return r;
    cln_disk_name(p, "tuning", NULL, name, sizeof name);
    size_t cap = 128 + n * 256, len;
    char *text = malloc(cap);
    if (!text) return CLN_DISK_BAD;
    len = (size_t)snprintf(text, cap, "# op dtype cols rows algo variant path wg team slices "
                                      "best_us builtin_us\n");
    for (size_t i = 0; i < n; i++) {
        cln_tuning_line(&e[i], text + len, cap - len - 1);
        len += strlen(text + len);
        text[len++] = '\n';
    }
    r = cln_disk_write(dir, name, key, text, len);
    free(text);
    cln_tuning_reset(); /* the next call reads the new table */
    return r;
}

void cln_tuning_reset(void)
{
    pthread_mutex_lock(&cln_tune_lock);
    while (cln_tables) {
        cln_tune_table *t = cln_tables;
        cln_tables = t->next;
        free(t->e);
        free(t);
    }
    pthread_mutex_unlock(&cln_tune_lock);
}

/* The entry for (op, dtype) whose columns are nearest to cols on a log scale, within
   a factor of 4, measured on not many more rows than asked (few rows of long
   columns want other plans than many). */
static int cln_tuning_find(const cln_tune_table *t, cln_op op, clnorm_dtype dtype,
                           size_t rows, size_t cols, cln_tune_entry *out)
{
    double best = 4.0;
    int found = 0;
    for (size_t i = 0; i < t->n; i++) {
        const cln_tune_entry *e = &t->e[i];
        if (e->op != op || e->dtype != dtype || rows * 8 < e->rows) continue;
        double ratio = e->cols > cols ? (double)e->cols / (double)cols
                                      : (double)cols / (double)e->cols;
        if (ratio <= best) {
            best = ratio;
            *out = *e;
            found = 1;
        }
    }
    return found;
}

int cln_tuning_apply(const cln_profile *p, cln_op *op, clnorm_dtype dtype, size_t rows,
                     size_t cols, cln_limits *lim)
{
    /* A forced shape takes precedence over the whole entry. */
    if (lim->force_wg || lim->force_team || lim->force_variant >= 0 || lim->force_slices)
        return 0;
    /* Every call comes here: only the folder is worked out each time. */
    char dir[4096];
    if (cln_disk_dir(dir, sizeof dir, 0)) return 0;
    cln_tune_entry e = {0};
    int found = 0;
    pthread_mutex_lock(&cln_tune_lock);
    cln_tune_table *t = cln_tables;
    while (t && (t->prof != p || strcmp(t->dir, dir))) t = t->next;
    if (!t && (t = calloc(1, sizeof *t)) != NULL) {
        /* Read once per device and folder; a missing or bad file is an empty table. */
        t->prof = p;
        snprintf(t->dir, sizeof t->dir, "%s", dir);
        if (cln_tuning_read(p, &t->e, &t->n)) t->e = NULL, t->n = 0;
        t->next = cln_tables;
        cln_tables = t;
    }
    if (t) found = cln_tuning_find(t, *op, dtype, rows, cols, &e);
    pthread_mutex_unlock(&cln_tune_lock);
    if (!found) return 0;

    cln_limits tl = *lim;
    tl.force_wg = e.wg;
    tl.force_variant = (int)e.variant;
    if (tl.force_path < 0 && e.path == CLN_PATH_LOCAL) tl.force_path = CLN_PATH_LOCAL;
    if (e.variant == CLN_VAR_SPLIT) tl.force_slices = e.slices;
    else tl.force_team = e.team;
    /* Used only when it plans to exactly what was measured on this device (the same
       path, so the same program and its work-group limit); else the built-in plan. */
    cln_plan pl;
    char why[256];
    if (cln_plan_make(p, &tl, e.algo, dtype, rows, cols, &pl, why, sizeof why) != CLNORM_SUCCESS ||
        pl.variant != e.variant || pl.wg != e.wg || pl.path != e.path ||
        (e.variant != CLN_VAR_SPLIT && pl.team != e.team))
        return 0;
    *lim = tl;
    *op = e.algo;
    return 1;
}
