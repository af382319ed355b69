/* The configuration of calls. The process configuration is read from the CLNORM_*
   environment once, at the library's first use, and replaced as a whole by
   clnorm_config_set. Each thread keeps a copy of it, refreshed at the start of an
   operation when the process configuration has changed since, so that an operation
   sees one configuration from its start to its end and a call reads no variable and
   takes no lock (docs/DESIGN.md, 'Host cost per call'). Hints of the thread and of
   the call's queue are merged over it field by field. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reading the environment -------------------------------------------------------- */

static int cln_env_size(const char *name, size_t *out, clnorm_status *st)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || s[0] == '-') {
        *st = cln_fail(CLNORM_INVALID_ARGUMENT,
                       "environment variable %s=\"%s\" is not a positive integer", name, s);
        return 0;
    }
    *out = (size_t)v;
    return 1;
}

size_t cln_env_word(void)
{
    const char *s = getenv("CLNORM_PAIR_WORD");
    if (!s || !*s) return 0;
    if (!strcmp(s, "2")) return 2;
    if (!strcmp(s, "4")) return 4;
    return (size_t)-1;
}

int cln_programs_env(void)
{
    const char *s = getenv("CLNORM_PROGRAMS");
    if (!s || !*s || !strcmp(s, "auto")) return 0;
    if (!strcmp(s, "one")) return 1;
    if (!strcmp(s, "all")) return 2;
    return -1;
}

/* The hint variables. A bad size is reported before any other variable (the last bad
   one), then the first bad among the others; the rest are still read. */
static clnorm_status cln_hints_from_env(clnorm_plan_hints *h)
{
    clnorm_status st = CLNORM_SUCCESS;
    size_t v;
    clnorm_plan_hints_init(h);
    if (cln_env_size("CLNORM_MAX_WORK_GROUP", &v, &st)) h->max_work_group = v;
    if (cln_env_size("CLNORM_MAX_LOCAL_MEM", &v, &st)) h->max_local_mem = v;
    if (cln_env_size("CLNORM_WORK_GROUP", &v, &st)) h->work_group = v;
    if (cln_env_size("CLNORM_ROW_THREADS", &v, &st)) h->items_per_row = v;
    if (cln_env_size("CLNORM_SPLIT", &v, &st)) h->split = v;
    const char *r = getenv("CLNORM_REDUCTION");
    if (r && *r && strcmp(r, "auto") != 0) {
        if (!strcmp(r, "local")) h->reduction = CLNORM_REDUCTION_LOCAL;
        else if (!strcmp(r, "subgroup")) h->reduction = CLNORM_REDUCTION_SUBGROUP;
        else if (!st)
            st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_REDUCTION=\"%s\" "
                          "is not auto, subgroup or local", r);
    }
    size_t word = cln_env_word();
    if (word != (size_t)-1) h->word = word;
    else if (!st)
        st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_PAIR_WORD=\"%s\" "
                      "is not 2 or 4", getenv("CLNORM_PAIR_WORD"));
    int programs = cln_programs_env();
    if (programs >= 0) h->programs = programs;
    else if (!st)
        st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_PROGRAMS=\"%s\" "
                      "is not auto, one or all", getenv("CLNORM_PROGRAMS"));
    const char *var = getenv("CLNORM_VARIANT");
    if (var && *var && strcmp(var, "auto") != 0) {
        if (!strcmp(var, "stream")) h->variant = CLNORM_VARIANT_STREAM;
        else if (!strcmp(var, "reg")) h->variant = CLNORM_VARIANT_REGISTERS;
        else if (!strcmp(var, "split")) h->variant = CLNORM_VARIANT_SPLIT;
        /* "pair" is this variant's former name. */
        else if (!strcmp(var, "words") || !strcmp(var, "pair")) h->variant = CLNORM_VARIANT_WORDS;
        else if (!st)
            st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_VARIANT=\"%s\" "
                          "is not auto, stream, reg, words or split", var);
    }
    /* Only "off" turns the tables off; any other value leaves the automatic rule. */
    const char *tuning = getenv("CLNORM_TUNING");
    if (tuning && !strcmp(tuning, "off")) h->tuning = 0;
    return st;
}

/* A switch variable: set, not empty and not "0". */
static int cln_env_flag(const char *name)
{
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

static clnorm_status cln_env_string(const char *name, char *buf, size_t size, clnorm_status st)
{
    const char *s = getenv(name);
    if (!s) return st;
    if (strlen(s) < size) {
        memcpy(buf, s, strlen(s) + 1);
        return st;
    }
    if (st) return st;
    return cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable %s=\"%.40s...\" is longer "
                    "than the %zu characters it may have", name, s, size - 1);
}

clnorm_status clnorm_config_from_env(clnorm_config *c)
{
    if (!c) return cln_fail(CLNORM_INVALID_ARGUMENT, "config is NULL");
    memset(c, 0, sizeof *c);
    clnorm_status st = cln_hints_from_env(&c->hints);
    st = cln_env_string("CLNORM_CACHE_DIR", c->cache_dir, sizeof c->cache_dir, st);
    st = cln_env_string("CLNORM_KERNEL_DIR", c->kernel_dir, sizeof c->kernel_dir, st);
    st = cln_env_string("CLNORM_BUILD_OPTIONS", c->build_options, sizeof c->build_options, st);
    c->build_log = cln_env_flag("CLNORM_BUILD_LOG");
    c->trace = cln_env_flag("CLNORM_TRACE");
    const char *serial = getenv("CLNORM_SERIAL");
    c->serial = !serial || !*serial ? -1 : strcmp(serial, "0") != 0;
    return st;
}

/* ---- Hints ----------------------------------------------------------------------------- */

void clnorm_plan_hints_init(clnorm_plan_hints *h)
{
    if (!h) return;
    memset(h, 0, sizeof *h);
    h->variant = CLNORM_VARIANT_AUTO;
    h->reduction = CLNORM_REDUCTION_AUTO;
    h->programs = CLNORM_PROGRAMS_AUTO;
    h->tuning = -1;
}

static clnorm_status cln_hints_check_named(const clnorm_plan_hints *h, const char *name)
{
    if (h->variant < CLNORM_VARIANT_AUTO || h->variant >= CLNORM_VARIANT_COUNT)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.variant = %d is not a clnorm_variant "
                        "(-1 to %d)", name, h->variant, CLNORM_VARIANT_COUNT - 1);
    if (h->reduction < CLNORM_REDUCTION_AUTO || h->reduction > CLNORM_REDUCTION_NV_SHUFFLE)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.reduction = %d is not a clnorm_reduction "
                        "(-1 to 2)", name, h->reduction);
    if (h->programs < CLNORM_PROGRAMS_AUTO || h->programs > CLNORM_PROGRAMS_ALL)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.programs = %d is not a clnorm_programs "
                        "(0 to 2)", name, h->programs);
    if (h->tuning < -1 || h->tuning > 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.tuning = %d is not -1, 0 or 1", name,
                        h->tuning);
    if (h->word != 0 && h->word != 2 && h->word != 4)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.word = %zu is not 0, 2 or 4", name, h->word);
    if (h->items_per_row && h->work_group && h->work_group % h->items_per_row)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.items_per_row = %zu does not divide "
                        "%s.work_group = %zu", name, h->items_per_row, name, h->work_group);
    return CLNORM_SUCCESS;
}

clnorm_status cln_hints_check(const clnorm_plan_hints *h)
{
    return cln_hints_check_named(h, "hints");
}

/* The public enums' values are the internal ones. */
_Static_assert(CLNORM_REDUCTION_SUBGROUP == (int)CLN_PATH_SUBGROUP &&
                   CLNORM_REDUCTION_NV_SHUFFLE == (int)CLN_PATH_NV,
               "clnorm_reduction and cln_path agree");
_Static_assert(CLNORM_VARIANT_COUNT == CLN_VAR_COUNT && CLNORM_OP_COUNT == CLN_OP_COUNT,
               "clnorm_variant and cln_variant, clnorm_op and cln_op agree");

static void cln_hints_limits(const clnorm_plan_hints *h, cln_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_wg = h->max_work_group;
    l->max_local = h->max_local_mem;
    l->force_wg = h->work_group;
    l->force_team = h->items_per_row;
    l->force_path = h->reduction;
    l->force_variant = h->variant;
    l->force_slices = h->split;
    l->word = h->word;
}

/* Every field of src that is not automatic replaces dst's. */
static void cln_hints_overlay(clnorm_plan_hints *dst, const clnorm_plan_hints *src)
{
    if (src->work_group) dst->work_group = src->work_group;
    if (src->items_per_row) dst->items_per_row = src->items_per_row;
    if (src->variant != CLNORM_VARIANT_AUTO) dst->variant = src->variant;
    if (src->split) dst->split = src->split;
    if (src->reduction != CLNORM_REDUCTION_AUTO) dst->reduction = src->reduction;
    if (src->word) dst->word = src->word;
    if (src->programs != CLNORM_PROGRAMS_AUTO) dst->programs = src->programs;
    if (src->max_work_group) dst->max_work_group = src->max_work_group;
    if (src->max_local_mem) dst->max_local_mem = src->max_local_mem;
    if (src->tuning != -1) dst->tuning = src->tuning;
}

/* ---- The process configuration ---------------------------------------------------- */

static pthread_once_t cln_cfg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t cln_cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static cln_config cln_cfg;       /* under cln_cfg_lock */
static atomic_ulong cln_cfg_gen; /* bumped at every change; 0 before the first use */

/* The thread's copy of the process configuration, its hints and the settings of its
   current (or last) operation. */
static _Thread_local struct {
    unsigned long gen; /* cln_cfg_gen of cfg; 0: never taken */
    cln_config cfg;
    int has_hints;
    clnorm_plan_hints hints;
    cln_settings cur;  /* cur.cfg is NULL until the first refresh */
} cln_tls;

/* The limits, and the cache folder from cache_dir, else $XDG_CACHE_HOME (absolute
   only, the XDG rule), else $HOME; off where none gives one that fits. */
static void cln_config_derive(cln_config *c)
{
    cln_hints_limits(&c->pub.hints, &c->lim);
    const char *dir = c->pub.cache_dir, *base;
    int n;
    c->disk = CLN_DISK_OFF;
    c->folder[0] = '\0';
    if (!strcmp(dir, "off")) return;
    if (*dir) n = snprintf(c->folder, sizeof c->folder, "%s", dir);
    else if ((base = getenv("XDG_CACHE_HOME")) && base[0] == '/')
        n = snprintf(c->folder, sizeof c->folder, "%s/clnorm", base);
    else if ((base = getenv("HOME")) && *base)
        n = snprintf(c->folder, sizeof c->folder, "%s/.cache/clnorm", base);
    else return;
    /* Room for a file name after it. */
    if (n <= 0 || (size_t)n >= sizeof c->folder - 64) {
        c->folder[0] = '\0';
        return;
    }
    while (n > 1 && c->folder[n - 1] == '/') c->folder[--n] = '\0';
    c->disk = CLN_DISK_OK;
}

static void cln_config_init(void)
{
    /* Reading the environment records a bad variable as this thread's last error;
       the call that got here keeps its own. */
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", clnorm_last_error());
    clnorm_status st = clnorm_config_from_env(&cln_cfg.pub);
    if (st) {
        cln_cfg.error = st;
        snprintf(cln_cfg.message, sizeof cln_cfg.message, "%s", clnorm_last_error());
    }
    cln_fail(CLNORM_SUCCESS, "%s", saved);
    cln_config_derive(&cln_cfg);
    atomic_store(&cln_cfg_gen, 1);
}

static void cln_settings_fill(const cln_config *c, const clnorm_plan_hints *queue,
                              const clnorm_plan_hints *thread, cln_settings *s);

/* Copies the process configuration if it changed since the thread's copy; the
   thread's current settings then follow it (without a queue's hints). */
static const cln_config *cln_config_refresh(void)
{
    unsigned long gen = atomic_load_explicit(&cln_cfg_gen, memory_order_acquire);
    if (gen && gen == cln_tls.gen) return &cln_tls.cfg;
    pthread_once(&cln_cfg_once, cln_config_init);
    pthread_mutex_lock(&cln_cfg_lock);
    cln_tls.cfg = cln_cfg;
    cln_tls.gen = atomic_load(&cln_cfg_gen);
    pthread_mutex_unlock(&cln_cfg_lock);
    cln_settings_fill(&cln_tls.cfg, NULL, cln_tls.has_hints ? &cln_tls.hints : NULL,
                      &cln_tls.cur);
    return &cln_tls.cfg;
}

const cln_config *cln_config_take(void) { return cln_config_refresh(); }

const cln_config *cln_config_now(void)
{
    return cln_tls.gen ? &cln_tls.cfg : cln_config_refresh();
}

void clnorm_config_get(clnorm_config *c)
{
    if (c) *c = cln_config_refresh()->pub;
}

static clnorm_status cln_string_fits(const char *field, size_t size, const char *name)
{
    if (memchr(field, '\0', size)) return CLNORM_SUCCESS;
    return cln_fail(CLNORM_INVALID_ARGUMENT, "config.%s has no terminating NUL within its %zu "
                    "bytes", name, size);
}

clnorm_status clnorm_config_set(const clnorm_config *c)
{
    if (!c) return cln_fail(CLNORM_INVALID_ARGUMENT, "config is NULL");
    clnorm_status st;
    if ((st = cln_hints_check_named(&c->hints, "config.hints")) ||
        (st = cln_string_fits(c->cache_dir, sizeof c->cache_dir, "cache_dir")) ||
        (st = cln_string_fits(c->kernel_dir, sizeof c->kernel_dir, "kernel_dir")) ||
        (st = cln_string_fits(c->build_options, sizeof c->build_options, "build_options")))
        return st;
    if (c->build_log != 0 && c->build_log != 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.build_log = %d is not 0 or 1",
                        c->build_log);
    if (c->trace != 0 && c->trace != 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.trace = %d is not 0 or 1", c->trace);
    if (c->serial < -1 || c->serial > 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "config.serial = %d is not -1, 0 or 1",
                        c->serial);
    cln_config next;
    memset(&next, 0, sizeof next);
    next.pub = *c;
    cln_config_derive(&next);
    /* The environment, read first if it has not been, must not overwrite this. */
    pthread_once(&cln_cfg_once, cln_config_init);
    pthread_mutex_lock(&cln_cfg_lock);
    cln_cfg = next;
    if (atomic_fetch_add(&cln_cfg_gen, 1) + 1 == 0) atomic_fetch_add(&cln_cfg_gen, 1);
    pthread_mutex_unlock(&cln_cfg_lock);
    cln_config_refresh();
    return CLNORM_SUCCESS;
}

/* ---- Queue hints ------------------------------------------------------------------------ */

typedef struct cln_queue_entry {
    cl_command_queue queue;
    cl_context ctx; /* the queue's, for clnorm_release_cache */
    clnorm_plan_hints hints;
} cln_queue_entry;

static pthread_mutex_t cln_queue_lock = PTHREAD_MUTEX_INITIALIZER;
static cln_queue_entry *cln_queues;
static size_t cln_queue_n, cln_queue_cap;
/* cln_queue_n, read without the lock so that calls skip the lookup while no queue
   has hints. */
static atomic_size_t cln_queue_count;

static int cln_queue_hints_get(cl_command_queue q, clnorm_plan_hints *out)
{
    if (!q || atomic_load_explicit(&cln_queue_count, memory_order_acquire) == 0) return 0;
    int found = 0;
    pthread_mutex_lock(&cln_queue_lock);
    for (size_t i = 0; i < cln_queue_n && !found; i++)
        if (cln_queues[i].queue == q) {
            *out = cln_queues[i].hints;
            found = 1;
        }
    pthread_mutex_unlock(&cln_queue_lock);
    return found;
}

clnorm_status clnorm_set_queue_hints(cl_command_queue queue, const clnorm_plan_hints *hints)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st && hints) st = cln_hints_check(hints);
    if (st) return st;
    pthread_mutex_lock(&cln_queue_lock);
    size_t i = 0;
    while (i < cln_queue_n && cln_queues[i].queue != queue) i++;
    if (!hints) {
        if (i < cln_queue_n) cln_queues[i] = cln_queues[--cln_queue_n];
    } else {
        if (i == cln_queue_n && cln_queue_n == cln_queue_cap) {
            size_t cap = cln_queue_cap ? 2 * cln_queue_cap : 8;
            cln_queue_entry *e = realloc(cln_queues, cap * sizeof *e);
            if (!e) {
                pthread_mutex_unlock(&cln_queue_lock);
                return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for queue hints");
            }
            cln_queues = e;
            cln_queue_cap = cap;
        }
        if (i == cln_queue_n) cln_queue_n++;
        cln_queues[i].queue = queue;
        cln_queues[i].ctx = ctx;
        cln_queues[i].hints = *hints;
    }
    atomic_store(&cln_queue_count, cln_queue_n);
    pthread_mutex_unlock(&cln_queue_lock);
    return CLNORM_SUCCESS;
}

void cln_queue_hints_forget(cl_context ctx)
{
    pthread_mutex_lock(&cln_queue_lock);
    for (size_t i = 0; i < cln_queue_n;)
        if (!ctx || cln_queues[i].ctx == ctx) cln_queues[i] = cln_queues[--cln_queue_n];
        else i++;
    if (cln_queue_n == 0) {
        free(cln_queues);
        cln_queues = NULL;
        cln_queue_cap = 0;
    }
    atomic_store(&cln_queue_count, cln_queue_n);
    pthread_mutex_unlock(&cln_queue_lock);
}

/* ---- Settings of an operation -------------------------------------------------------- */

static void cln_settings_fill(const cln_config *c, const clnorm_plan_hints *queue,
                              const clnorm_plan_hints *thread, cln_settings *s)
{
    s->cfg = c;
    if (!queue && !thread) {
        s->lim = c->lim;
        s->programs = c->pub.hints.programs;
        s->tuning = c->pub.hints.tuning;
        return;
    }
    clnorm_plan_hints h = c->pub.hints;
    if (queue) cln_hints_overlay(&h, queue);
    if (thread) cln_hints_overlay(&h, thread);
    cln_hints_limits(&h, &s->lim);
    s->programs = h.programs;
    s->tuning = h.tuning;
}

clnorm_status cln_settings_begin(cl_command_queue q, const cln_settings **out)
{
    const cln_config *c = cln_config_refresh();
    clnorm_plan_hints qh;
    const int has_queue = cln_queue_hints_get(q, &qh);
    cln_settings_fill(c, has_queue ? &qh : NULL, cln_tls.has_hints ? &cln_tls.hints : NULL,
                      &cln_tls.cur);
    *out = &cln_tls.cur;
    if (c->error) return cln_fail(c->error, "%s", c->message);
    return CLNORM_SUCCESS;
}

clnorm_status cln_settings_make(const clnorm_plan_hints *hints, cln_settings *out)
{
    const cln_config *c = cln_config_refresh();
    cln_settings_fill(c, NULL, hints ? hints : cln_tls.has_hints ? &cln_tls.hints : NULL, out);
    if (c->error) return cln_fail(c->error, "%s", c->message);
    return CLNORM_SUCCESS;
}

const cln_settings *cln_settings_now(void)
{
    if (!cln_tls.gen) cln_config_refresh();
    return &cln_tls.cur;
}

clnorm_status clnorm_set_thread_hints(const clnorm_plan_hints *hints)
{
    clnorm_status st = hints ? cln_hints_check(hints) : CLNORM_SUCCESS;
    if (st) return st;
    cln_tls.has_hints = hints != NULL;
    if (hints) cln_tls.hints = *hints;
    cln_settings_fill(cln_config_refresh(), NULL, hints, &cln_tls.cur);
    return CLNORM_SUCCESS;
}

clnorm_status cln_limits_from_env(cln_limits *l)
{
    clnorm_plan_hints h;
    clnorm_status st = cln_hints_from_env(&h);
    cln_hints_limits(&h, l);
    return st;
}
