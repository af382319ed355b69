/* The configuration of calls. The process configuration is read from the CLNORM_*
   environment once, at the library's first use (env.c), and replaced as a whole by
   clnorm_config_set. Each thread keeps a copy of it, refreshed at the start of an
   operation when the process configuration has changed since, so that an operation
   sees one configuration from its start to its end and a call reads no variable and
   takes no lock (docs/DESIGN.md, 'Host cost per call'). Hints of the thread and of
   the call's queue are merged over it field by field. */
#include "config.h"
#include "clnorm_advanced.h"
#include "disk_cache.h"
#include "hints.h"
#include "status.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void cln_config_install(const clnorm_config *c)
{
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


clnorm_status cln_queue_hints_set(cl_command_queue queue, cl_context ctx,
                                  const clnorm_plan_hints *hints)
{
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

clnorm_status cln_config_check(void)
{
    const cln_config *c = cln_config_refresh();
    return c->error ? cln_fail(c->error, "%s", c->message) : CLNORM_SUCCESS;
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


void cln_thread_hints_set(const clnorm_plan_hints *hints)
{
    cln_tls.has_hints = hints != NULL;
    if (hints) cln_tls.hints = *hints;
    cln_settings_fill(cln_config_refresh(), NULL, hints, &cln_tls.cur);
}
