/* CLNORM_* settings in the test cases, through the process configuration
   (env_config.h). */
#define _POSIX_C_SOURCE 200809L
#include "env_config.h"
#include "clnorm_advanced.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static clnorm_config saved;
static int have_saved;

/* Copies the field of variable name from src to dst; 0 for a name that is none. */
static int copy_field(clnorm_config *dst, const clnorm_config *src, const char *name)
{
#define HINT(var, field)                                                                \
    if (!strcmp(name, var)) {                                                          \
        dst->hints.field = src->hints.field;                                           \
        return 1;                                                                      \
    }
#define FIELD(var, field)                                                               \
    if (!strcmp(name, var)) {                                                          \
        memcpy(&dst->field, &src->field, sizeof dst->field);                           \
        return 1;                                                                      \
    }
    HINT("CLNORM_WORK_GROUP", work_group)
    HINT("CLNORM_ROW_THREADS", items_per_row)
    HINT("CLNORM_VARIANT", variant)
    HINT("CLNORM_SPLIT", split)
    HINT("CLNORM_REDUCTION", reduction)
    HINT("CLNORM_PAIR_WORD", word)
    HINT("CLNORM_PROGRAMS", programs)
    HINT("CLNORM_MAX_WORK_GROUP", max_work_group)
    HINT("CLNORM_MAX_LOCAL_MEM", max_local_mem)
    HINT("CLNORM_TUNING", tuning)
    FIELD("CLNORM_CACHE_DIR", cache_dir)
    FIELD("CLNORM_KERNEL_DIR", kernel_dir)
    FIELD("CLNORM_BUILD_OPTIONS", build_options)
    FIELD("CLNORM_BUILD_LOG", build_log)
    FIELD("CLNORM_TRACE", trace)
    FIELD("CLNORM_SERIAL", serial)
#undef HINT
#undef FIELD
    return 0;
}

clnorm_status t_config(const char *name, const char *value)
{
    t_setenv(name, value);
    if (!have_saved) {
        clnorm_config_get(&saved);
        have_saved = 1;
    }
    clnorm_config parsed, cfg;
    clnorm_status st = clnorm_config_from_env(&parsed);
    /* A refusal may name another variable a case left set: this one then parsed. */
    char needle[80];
    snprintf(needle, sizeof needle, "%s=", name);
    int refused = st != CLNORM_SUCCESS && strstr(clnorm_last_error(), needle) != NULL;
    clnorm_config_get(&cfg);
    int known = copy_field(&cfg, &parsed, name);
    if (!known && strcmp(name, "HOME") && strcmp(name, "XDG_CACHE_HOME")) {
        fprintf(stderr, "t_config: %s is no setting of clnorm\n", name);
        return CLNORM_INVALID_ARGUMENT;
    }
    if (refused) return st;
    /* A value the reader accepted must install: a case would otherwise run under a
       setting other than the one it names. */
    st = clnorm_config_set(&cfg);
    if (st != CLNORM_SUCCESS)
        t_fail(__FILE__, __LINE__, "t_config(%s, %s): the library refused the parsed value: %s",
               name, value ? value : "(unset)", clnorm_last_error());
    return st;
}

clnorm_status t_config_num(const char *name, size_t value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", value);
    return t_config(name, buf);
}

void t_config_restore(void)
{
    clnorm_set_thread_hints(NULL);
    if (!have_saved) return;
    have_saved = 0;
    if (clnorm_config_set(&saved) != CLNORM_SUCCESS)
        fprintf(stderr, "t_config_restore: %s\n", clnorm_last_error());
}
