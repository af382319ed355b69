/* The CLNORM_* environment, read into a clnorm_config: once by the library, at its
   first use, as its process configuration (config.c), and by clnorm_config_from_env
   for any caller. Nothing else in the library reads a CLNORM_* variable, but the
   testing variable CLNORM_EMULATE, which emulate.c reads when it first profiles a
   device (it lowers the profile, not the configuration). */
#include "clnorm_advanced.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* CLNORM_PAIR_WORD: 0 when unset, 2 or 4, or (size_t)-1 when invalid. */
static size_t cln_env_word(void)
{
    const char *s = getenv("CLNORM_PAIR_WORD");
    if (!s || !*s) return 0;
    if (!strcmp(s, "2")) return 2;
    if (!strcmp(s, "4")) return 4;
    return (size_t)-1;
}

/* CLNORM_PROGRAMS: 0 unset or "auto", 1 "one", 2 "all", -1 neither. */
static int cln_env_programs(void)
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
    int programs = cln_env_programs();
    if (programs >= 0) h->programs = programs;
    else if (!st)
        st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_PROGRAMS=\"%s\" "
                      "is not auto, one or all", getenv("CLNORM_PROGRAMS"));
    const char *var = getenv("CLNORM_VARIANT");
    if (var && *var && strcmp(var, "auto") != 0) {
        if (!strcmp(var, "stream")) h->variant = CLNORM_VARIANT_STREAM;
        else if (!strcmp(var, "reg")) h->variant = CLNORM_VARIANT_REGISTERS;
        else if (!strcmp(var, "split")) h->variant = CLNORM_VARIANT_SPLIT;
        else if (!strcmp(var, "coop")) h->variant = CLNORM_VARIANT_COOP;
        /* "pair" is this variant's former name. */
        else if (!strcmp(var, "words") || !strcmp(var, "pair")) h->variant = CLNORM_VARIANT_WORDS;
        else if (!st)
            st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_VARIANT=\"%s\" "
                          "is not auto, stream, reg, words or split", var);
    }
    /* Only "off" turns the tables off; any other value leaves the automatic rule. */
    const char *tuning = getenv("CLNORM_TUNING");
    if (tuning && !strcmp(tuning, "off")) h->tuning = 0;
    /* Refused here, as clnorm_config_set would refuse it, rather than at every call. */
    if (!st && h->items_per_row && h->work_group && h->work_group % h->items_per_row)
        st = cln_fail(CLNORM_INVALID_ARGUMENT, "environment variable CLNORM_ROW_THREADS=%zu "
                      "does not divide CLNORM_WORK_GROUP=%zu", h->items_per_row, h->work_group);
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
