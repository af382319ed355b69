/* The configuration of calls: the process configuration (read once from the CLNORM_*
   environment, replaced by clnorm_config_set), the hints of threads and queues, and
   their merge into the settings one operation runs with (config.c). */
#ifndef CLNORM_CONFIG_H
#define CLNORM_CONFIG_H

#include "clnorm_advanced.h"
#include "plan.h"
#include "types.h"

/* The process configuration and what follows from it, worked out when it is set so
   that no call parses anything. */
typedef struct cln_config {
    clnorm_config pub;    /* as set, or as read from the environment */
    cln_limits lim;       /* pub.hints as plan limits */
    int disk;             /* CLN_DISK_OK: folder holds the cache folder; CLN_DISK_OFF */
    char folder[4096];    /* CLNORM_CACHE_DIR, else $XDG_CACHE_HOME/clnorm, else
                             $HOME/.cache/clnorm, without a trailing '/' */
    clnorm_status error;  /* a CLNORM_* variable the library could not parse at its
                             first use: every operation fails with it, as message */
    char message[512];
} cln_config;

/* What one operation runs with: the process configuration, and the hints of the
   call's thread, its queue and the configuration merged field by field. */
typedef struct cln_settings {
    const cln_config *cfg;
    cln_limits lim;       /* merged hints as limits (no_words 0) */
    int programs;         /* a clnorm_programs */
    int tuning;           /* 1 use the tuning table, 0 not, -1 automatic */
} cln_settings;

/* Takes the calling thread's settings at the start of an operation on q (NULL: none)
   and keeps them as the thread's current settings (cln_settings_now) until its next
   operation. Returns the process configuration's error, if it has one. */
CLN_HIDDEN clnorm_status cln_settings_begin(cl_command_queue q, const cln_settings **out);
/* Settings under explicit hints (NULL: the thread's) over the process configuration,
   without a queue; for plan queries. Does not touch the thread's current settings. */
CLN_HIDDEN clnorm_status cln_settings_make(const clnorm_plan_hints *hints, cln_settings *out);
/* The thread's current settings, for the layers below the entry points (the program
   cache reads the word and the program grouping from them, the disk cache its
   folder). Outside an operation: those of the thread's last one, or of no queue. */
CLN_HIDDEN const cln_settings *cln_settings_now(void);
CLN_HIDDEN const cln_config *cln_config_now(void);
/* The thread's copy of the process configuration, first refreshed if the process
   configuration has changed: for entry points that run no operation. */
CLN_HIDDEN const cln_config *cln_config_take(void);

/* The process configuration's error (a bad CLNORM_* value), recorded as the thread's
   last error, or CLNORM_SUCCESS: what refuses every call, rows == 0 included. */
CLN_HIDDEN clnorm_status cln_config_check(void);

/* Makes c, already checked, the process configuration (clnorm_config_set). */
CLN_HIDDEN void cln_config_install(const clnorm_config *c);
/* The hints of queue, a queue of ctx, from now on (NULL: none); already checked. */
CLN_HIDDEN clnorm_status cln_queue_hints_set(cl_command_queue queue, cl_context ctx,
                                             const clnorm_plan_hints *hints);
/* Drops the queue hints of ctx's queues (NULL: all); clnorm_release_cache. */
CLN_HIDDEN void cln_queue_hints_forget(cl_context ctx);
/* The calling thread's hints from now on (NULL: none); already checked. */
CLN_HIDDEN void cln_thread_hints_set(const clnorm_plan_hints *hints);

#endif
