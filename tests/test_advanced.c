/* The advanced API's configuration and plans (include/clnorm_advanced.h).
   config_api: clnorm_config_from_env reads each CLNORM_* variable and refuses a bad
   value naming it; clnorm_config_set and _get round trip, refuse bad fields and leave
   the configuration as it was; a later setenv changes nothing; the precedence thread
   hints > queue hints > process configuration > the library, as plan queries and the
   plans of real calls show it; clnorm_release_cache drops the queue hints of its
   context only; the tuning hint against a tuning table written through the API.
   env_refused: in a process started with a bad CLNORM_* value, every entry point that
   reads the settings refuses, naming the variable, on 0 rows as on 2, and writes
   nothing (the helper program's bad-env mode).
   plan_query: a query answers the plan a real call runs (clnorm_last_plan) for several
   operations, shapes and dtypes, with and without hints, per thread; refusals. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"
#include "clnorm_advanced.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const cfg_vars[] = {
    "CLNORM_WORK_GROUP",  "CLNORM_ROW_THREADS",    "CLNORM_VARIANT",       "CLNORM_SPLIT",
    "CLNORM_REDUCTION",   "CLNORM_PAIR_WORD",      "CLNORM_PROGRAMS",      "CLNORM_MAX_WORK_GROUP",
    "CLNORM_MAX_LOCAL_MEM", "CLNORM_TUNING",       "CLNORM_CACHE_DIR",     "CLNORM_KERNEL_DIR",
    "CLNORM_BUILD_OPTIONS", "CLNORM_BUILD_LOG",    "CLNORM_TRACE",         "CLNORM_SERIAL"};

static void clear_vars(void)
{
    for (size_t i = 0; i < COUNT_OF(cfg_vars); i++) t_setenv(cfg_vars[i], NULL);
}

/* clnorm_config_from_env with only name=value set. */
static clnorm_status env_config(const char *name, const char *value, clnorm_config *c)
{
    clear_vars();
    t_setenv(name, value);
    memset(c, 0x5A, sizeof *c);
    return clnorm_config_from_env(c);
}

static int hints_equal(const clnorm_plan_hints *a, const clnorm_plan_hints *b)
{
    return a->work_group == b->work_group && a->items_per_row == b->items_per_row &&
           a->variant == b->variant && a->split == b->split && a->reduction == b->reduction &&
           a->word == b->word && a->programs == b->programs &&
           a->max_work_group == b->max_work_group && a->max_local_mem == b->max_local_mem &&
           a->tuning == b->tuning;
}

static int config_equal(const clnorm_config *a, const clnorm_config *b)
{
    return hints_equal(&a->hints, &b->hints) && !strcmp(a->cache_dir, b->cache_dir) &&
           !strcmp(a->kernel_dir, b->kernel_dir) && !strcmp(a->build_options, b->build_options) &&
           a->build_log == b->build_log && a->trace == b->trace && a->serial == b->serial;
}

/* ---- clnorm_config_from_env ------------------------------------------------------------ */

#define ENV_IS(name, value, cond)                                                          \
    do {                                                                                   \
        if (CHECK_ST(env_config((name), (value), &c), CLNORM_SUCCESS))                     \
            CHECK((cond), "%s=\"%s\" read wrong", (name), (value));                        \
    } while (0)

static void check_from_env(void)
{
    clnorm_config c;
    clnorm_plan_hints auto_hints;
    clnorm_plan_hints_init(&auto_hints);
    clear_vars();
    memset(&c, 0x5A, sizeof c);
    if (CHECK_ST(clnorm_config_from_env(&c), CLNORM_SUCCESS))
        CHECK(hints_equal(&c.hints, &auto_hints) && !c.cache_dir[0] && !c.kernel_dir[0] &&
                  !c.build_options[0] && !c.build_log && !c.trace && c.serial == -1,
              "no variable set: not every field automatic (work_group %zu variant %d tuning %d "
              "serial %d)", c.hints.work_group, c.hints.variant, c.hints.tuning, c.serial);
    CHECK(auto_hints.variant == CLNORM_VARIANT_AUTO &&
              auto_hints.reduction == CLNORM_REDUCTION_AUTO &&
              auto_hints.tuning == -1 && !auto_hints.work_group && !auto_hints.word,
          "clnorm_plan_hints_init: variant %d reduction %d tuning %d", auto_hints.variant,
          auto_hints.reduction, auto_hints.tuning);

    ENV_IS("CLNORM_WORK_GROUP", "64", c.hints.work_group == 64);
    ENV_IS("CLNORM_ROW_THREADS", "8", c.hints.items_per_row == 8);
    ENV_IS("CLNORM_SPLIT", "3", c.hints.split == 3);
    ENV_IS("CLNORM_MAX_WORK_GROUP", "128", c.hints.max_work_group == 128);
    ENV_IS("CLNORM_MAX_LOCAL_MEM", "16384", c.hints.max_local_mem == 16384);
    ENV_IS("CLNORM_VARIANT", "stream", c.hints.variant == CLNORM_VARIANT_STREAM);
    ENV_IS("CLNORM_VARIANT", "reg", c.hints.variant == CLNORM_VARIANT_REGISTERS);
    ENV_IS("CLNORM_VARIANT", "split", c.hints.variant == CLNORM_VARIANT_SPLIT);
    ENV_IS("CLNORM_VARIANT", "words", c.hints.variant == CLNORM_VARIANT_WORDS);
    ENV_IS("CLNORM_VARIANT", "pair", c.hints.variant == CLNORM_VARIANT_WORDS);
    ENV_IS("CLNORM_VARIANT", "auto", c.hints.variant == CLNORM_VARIANT_AUTO);
    ENV_IS("CLNORM_REDUCTION", "local", c.hints.reduction == CLNORM_REDUCTION_LOCAL);
    ENV_IS("CLNORM_REDUCTION", "subgroup", c.hints.reduction == CLNORM_REDUCTION_SUBGROUP);
    ENV_IS("CLNORM_REDUCTION", "auto", c.hints.reduction == CLNORM_REDUCTION_AUTO);
    ENV_IS("CLNORM_PAIR_WORD", "2", c.hints.word == 2);
    ENV_IS("CLNORM_PAIR_WORD", "4", c.hints.word == 4);
    ENV_IS("CLNORM_PROGRAMS", "one", c.hints.programs == CLNORM_PROGRAMS_ONE);
    ENV_IS("CLNORM_PROGRAMS", "all", c.hints.programs == CLNORM_PROGRAMS_ALL);
    ENV_IS("CLNORM_PROGRAMS", "auto", c.hints.programs == CLNORM_PROGRAMS_AUTO);
    ENV_IS("CLNORM_TUNING", "off", c.hints.tuning == 0);
    ENV_IS("CLNORM_TUNING", "on", c.hints.tuning == -1); /* only "off" turns it off */
    ENV_IS("CLNORM_CACHE_DIR", "/tmp/clnorm-x", !strcmp(c.cache_dir, "/tmp/clnorm-x"));
    ENV_IS("CLNORM_CACHE_DIR", "off", !strcmp(c.cache_dir, "off"));
    ENV_IS("CLNORM_KERNEL_DIR", "/src/cl", !strcmp(c.kernel_dir, "/src/cl"));
    ENV_IS("CLNORM_BUILD_OPTIONS", "-DX=1", !strcmp(c.build_options, "-DX=1"));
    ENV_IS("CLNORM_BUILD_LOG", "1", c.build_log == 1);
    ENV_IS("CLNORM_BUILD_LOG", "0", c.build_log == 0);
    ENV_IS("CLNORM_TRACE", "yes", c.trace == 1);
    ENV_IS("CLNORM_TRACE", "0", c.trace == 0);
    ENV_IS("CLNORM_SERIAL", "1", c.serial == 1);
    ENV_IS("CLNORM_SERIAL", "0", c.serial == 0);
    ENV_IS("CLNORM_SERIAL", "", c.serial == -1);

    /* Refused, naming the variable and the value; the other variables still read. */
    static const struct { const char *name, *value; } bad[] = {
        {"CLNORM_WORK_GROUP", "abc"},   {"CLNORM_WORK_GROUP", "0"},
        {"CLNORM_ROW_THREADS", "-4"},   {"CLNORM_SPLIT", "12x"},
        {"CLNORM_MAX_WORK_GROUP", "99999999999999999999999"},
        {"CLNORM_MAX_LOCAL_MEM", "1k"}, {"CLNORM_REDUCTION", "fast"},
        {"CLNORM_VARIANT", "wide"},     {"CLNORM_PAIR_WORD", "3"},
        {"CLNORM_PROGRAMS", "some"},
    };
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        const int other_is_split = strcmp(bad[i].name, "CLNORM_SPLIT") != 0;
        clear_vars();
        t_setenv(other_is_split ? "CLNORM_SPLIT" : "CLNORM_WORK_GROUP", "48");
        t_setenv(bad[i].name, bad[i].value);
        CHECK_ST(clnorm_config_from_env(&c), CLNORM_INVALID_ARGUMENT);
        char want[128];
        snprintf(want, sizeof want, "%s=\"%s\"", bad[i].name, bad[i].value);
        CHECK(strstr(clnorm_last_error(), want) != NULL, "%s: the message \"%s\" lacks %s",
              bad[i].name, clnorm_last_error(), want);
        CHECK((other_is_split ? c.hints.split : c.hints.work_group) == 48,
              "%s=\"%s\": the other variable was not read", bad[i].name, bad[i].value);
    }
    /* Two valid sizes that cannot go together are refused as clnorm_config_set would. */
    clear_vars();
    t_setenv("CLNORM_WORK_GROUP", "39");
    t_setenv("CLNORM_ROW_THREADS", "4");
    CHECK_ST(clnorm_config_from_env(&c), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "CLNORM_ROW_THREADS=4") &&
              strstr(clnorm_last_error(), "CLNORM_WORK_GROUP=39"),
          "the message \"%s\" names neither variable", clnorm_last_error());
    char longer[700];
    memset(longer, 'o', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    CHECK_ST(env_config("CLNORM_BUILD_OPTIONS", longer, &c), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "CLNORM_BUILD_OPTIONS") != NULL, "message \"%s\"",
          clnorm_last_error());
    CHECK_ST(clnorm_config_from_env(NULL), CLNORM_INVALID_ARGUMENT);
    clear_vars();
}

/* ---- clnorm_config_set and _get ---------------------------------------------------------- */

#define SET_REFUSED(field_text, mutate)                                                    \
    do {                                                                                   \
        clnorm_config bad_ = good;                                                         \
        mutate;                                                                            \
        CHECK_ST(clnorm_config_set(&bad_), CLNORM_INVALID_ARGUMENT);                       \
        CHECK(strstr(clnorm_last_error(), (field_text)) != NULL,                          \
              "clnorm_config_set: the message \"%s\" lacks \"%s\"", clnorm_last_error(),  \
              (field_text));                                                               \
        clnorm_config now_;                                                                \
        clnorm_config_get(&now_);                                                          \
        CHECK(config_equal(&now_, &good), "a refused clnorm_config_set (%s) changed the "  \
              "configuration", (field_text));                                              \
    } while (0)

static void check_set_get(void)
{
    clnorm_config good, got;
    clear_vars();
    t_setenv("CLNORM_WORK_GROUP", "32");
    t_setenv("CLNORM_ROW_THREADS", "4");
    t_setenv("CLNORM_VARIANT", "stream");
    t_setenv("CLNORM_CACHE_DIR", "off");
    t_setenv("CLNORM_BUILD_OPTIONS", "-DCLN_TEST_OPTION=1");
    if (!CHECK_ST(clnorm_config_from_env(&good), CLNORM_SUCCESS)) return;
    clear_vars();
    if (!CHECK_ST(clnorm_config_set(&good), CLNORM_SUCCESS)) return;
    clnorm_config_get(&got);
    CHECK(config_equal(&good, &got), "clnorm_config_get after _set: work_group %zu (set %zu), "
          "options \"%s\" (set \"%s\")", got.hints.work_group, good.hints.work_group,
          got.build_options, good.build_options);
    /* The environment was read once: a change now changes nothing. */
    t_setenv("CLNORM_WORK_GROUP", "16");
    clnorm_config_get(&got);
    CHECK(got.hints.work_group == 32, "after setenv CLNORM_WORK_GROUP=16 the configuration "
          "holds work_group %zu, expected 32", got.hints.work_group);
    t_setenv("CLNORM_WORK_GROUP", NULL);

    SET_REFUSED("variant = 9", bad_.hints.variant = 9);
    SET_REFUSED("reduction = 5", bad_.hints.reduction = 5);
    SET_REFUSED("word = 3", bad_.hints.word = 3);
    SET_REFUSED("programs = 7", bad_.hints.programs = 7);
    SET_REFUSED("tuning = 2", bad_.hints.tuning = 2);
    SET_REFUSED("items_per_row = 3", (bad_.hints.items_per_row = 3, bad_.hints.work_group = 64));
    SET_REFUSED("cache_dir", memset(bad_.cache_dir, 'x', sizeof bad_.cache_dir));
    SET_REFUSED("build_options", memset(bad_.build_options, 'x', sizeof bad_.build_options));
    SET_REFUSED("trace = 2", bad_.trace = 2);
    SET_REFUSED("serial = 4", bad_.serial = 4);
    CHECK_ST(clnorm_config_set(NULL), CLNORM_INVALID_ARGUMENT);

    /* Hints are refused alike, per thread and per queue. */
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.variant = 11;
    CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "variant = 11") != NULL, "message \"%s\"",
          clnorm_last_error());
    CHECK_ST(clnorm_set_queue_hints(T.q, &h), CLNORM_INVALID_ARGUMENT);
    clnorm_plan_hints_init(&h);
    h.work_group = 64;
    h.items_per_row = 48;
    CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "items_per_row = 48") != NULL, "message \"%s\"",
          clnorm_last_error());
    CHECK_ST(clnorm_set_queue_hints(NULL, NULL), CLNORM_INVALID_ARGUMENT);
}

/* ---- Precedence ----------------------------------------------------------------------- */

enum { P_ROWS = 64, P_COLS = 1024 };

typedef struct call_bufs { cl_mem x, y; } call_bufs;

/* One RMSNorm of P_ROWS x P_COLS on q; the work-group size it ran with, or 0. */
static size_t call_wg(const call_bufs *b, cl_command_queue q, int *tuned)
{
    clnorm_matrix x = {b->x, 0, 0}, y = {b->y, 0, 0};
    clnorm_plan_info ran;
    if (!CHECK_ST(clnorm_rmsnorm(q, CLNORM_F32, P_ROWS, P_COLS, x, NULL, y, 1e-5f, 0, NULL, NULL),
                  CLNORM_SUCCESS) ||
        !CHECK_CL(clFinish(q)) || !CHECK(clnorm_last_plan(&ran), "no last plan after a call"))
        return 0;
    if (tuned) *tuned = ran.tuned;
    return ran.work_group;
}

static size_t query_wg(const clnorm_plan_hints *h, size_t *team, int *tuned)
{
    clnorm_plan_info p;
    if (!CHECK_ST(clnorm_plan_query(T.dev, h, CLNORM_OP_RMSNORM, CLNORM_F32, P_ROWS, P_COLS, &p),
                  CLNORM_SUCCESS))
        return 0;
    if (team) *team = p.items_per_row;
    if (tuned) *tuned = p.tuned;
    return p.work_group;
}

/* Work-group sizes the library would not pick by itself, so that seeing one proves
   the hint that asked for it. */
static void pick_sizes(size_t auto_wg, size_t out[4])
{
    static const size_t cand[] = {8, 16, 32, 64, 128};
    size_t n = 0;
    for (size_t i = 0; i < COUNT_OF(cand) && n < 4; i++)
        if (cand[i] != auto_wg) out[n++] = cand[i];
}

static void check_precedence(const clnorm_config *base)
{
    call_bufs b = {t_buffer(T.ctx, (size_t)P_ROWS * P_COLS * 4, NULL),
                   t_buffer(T.ctx, (size_t)P_ROWS * P_COLS * 4, NULL)};
    cl_int err;
    cl_context other = clCreateContext(NULL, 1, &T.dev, NULL, NULL, &err);
    cl_command_queue q2 = t_new_queue(T.ctx, T.dev, 0);
    if (!b.x || !b.y || !CHECK_CL(err) || !CHECK(q2 != NULL, "no second queue")) goto done;

    clnorm_config cfg = *base;
    CHECK_ST(clnorm_config_set(&cfg), CLNORM_SUCCESS);
    size_t auto_team = 0, w[4];
    const size_t auto_wg = query_wg(NULL, &auto_team, NULL);
    pick_sizes(auto_wg, w);
    const size_t wc = w[0], wq = w[1], wt = w[2], we = w[3];
    NOTE("automatic work-group %zu; configuration %zu, queue %zu, thread %zu, explicit %zu",
         auto_wg, wc, wq, wt, we);

    /* The process configuration over the library. */
    cfg.hints.work_group = wc;
    CHECK_ST(clnorm_config_set(&cfg), CLNORM_SUCCESS);
    size_t got = query_wg(NULL, NULL, NULL);
    CHECK(got == wc, "configuration work_group %zu: the query plans %zu", wc, got);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wc, "configuration work_group %zu: the call ran %zu", wc, got);

    /* The thread's hints over it, field by field; explicit hints over the thread's. */
    clnorm_plan_hints th, qh, eh;
    clnorm_plan_hints_init(&th);
    th.work_group = wt;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    got = query_wg(NULL, NULL, NULL);
    CHECK(got == wt, "thread work_group %zu over configuration %zu: the query plans %zu", wt, wc,
          got);
    clnorm_plan_hints_init(&eh);
    eh.work_group = we;
    got = query_wg(&eh, NULL, NULL);
    CHECK(got == we, "explicit work_group %zu: the query plans %zu", we, got);
    const size_t team = auto_team == 2 ? 4 : 2;
    clnorm_plan_hints_init(&th);
    th.items_per_row = team;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    size_t got_team = 0;
    got = query_wg(NULL, &got_team, NULL);
    CHECK(got == wc && got_team == team, "thread items_per_row %zu over configuration "
          "work_group %zu: the query plans work-group %zu, %zu per row", team, wc, got, got_team);

    /* Real calls: thread > queue > configuration, queue hints on their queue only. */
    clnorm_plan_hints_init(&th);
    th.work_group = wt;
    clnorm_plan_hints_init(&qh);
    qh.work_group = wq;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    CHECK_ST(clnorm_set_queue_hints(T.q, &qh), CLNORM_SUCCESS);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wt, "thread %zu, queue %zu: the call ran %zu", wt, wq, got);
    CHECK_ST(clnorm_set_thread_hints(NULL), CLNORM_SUCCESS);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wq, "queue %zu over configuration %zu: the call ran %zu", wq, wc, got);
    got = call_wg(&b, q2, NULL);
    CHECK(got == wc, "another queue of the context: the call ran %zu, expected the "
          "configuration's %zu", got, wc);
    got = query_wg(NULL, NULL, NULL);
    CHECK(got == wc, "queue hints changed a query (no queue): %zu", got);
    CHECK_ST(clnorm_set_queue_hints(T.q, NULL), CLNORM_SUCCESS);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wc, "queue hints removed: the call ran %zu, expected %zu", got, wc);

    /* clnorm_release_cache drops the queue hints of its context, and of all with NULL. */
    CHECK_ST(clnorm_set_queue_hints(T.q, &qh), CLNORM_SUCCESS);
    clnorm_release_cache(other);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wq, "clnorm_release_cache(another context) dropped the queue's hints: %zu", got);
    clnorm_release_cache(T.ctx);
    got = call_wg(&b, T.q, NULL);
    CHECK(got == wc, "clnorm_release_cache(the queue's context) kept its hints: %zu", got);
    CHECK_ST(clnorm_set_queue_hints(q2, &qh), CLNORM_SUCCESS);
    clnorm_release_cache(NULL);
    got = call_wg(&b, q2, NULL);
    CHECK(got == wc, "clnorm_release_cache(NULL) kept a queue's hints: %zu", got);
done:
    clnorm_set_thread_hints(NULL);
    if (q2) clnorm_set_queue_hints(q2, NULL);
    clnorm_set_queue_hints(T.q, NULL);
    if (q2) clReleaseCommandQueue(q2);
    if (other) {
        clnorm_release_cache(other);
        clReleaseContext(other);
    }
    if (b.x) clReleaseMemObject(b.x);
    if (b.y) clReleaseMemObject(b.y);
}

/* ---- The tuning hint ------------------------------------------------------------------- */

static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void check_tuning_hint(const clnorm_config *base)
{
    char dir[] = "/tmp/clnorm-advanced-XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) return;
    call_bufs b = {t_buffer(T.ctx, (size_t)P_ROWS * P_COLS * 4, NULL),
                   t_buffer(T.ctx, (size_t)P_ROWS * P_COLS * 4, NULL)};
    clnorm_config cfg = *base;
    snprintf(cfg.cache_dir, sizeof cfg.cache_dir, "%s", dir);
    if (!b.x || !b.y || !CHECK_ST(clnorm_config_set(&cfg), CLNORM_SUCCESS)) goto done;
    char folder[4096];
    CHECK(clnorm_cache_dir(folder, sizeof folder) == CLNORM_CACHE_FILE_OK &&
              !strcmp(folder, dir),
          "clnorm_cache_dir gives \"%s\", expected \"%s\"", folder, dir);

    clnorm_plan_info builtin;
    if (!CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, P_ROWS, P_COLS,
                                    &builtin),
                  CLNORM_SUCCESS))
        goto done;
    CHECK(!builtin.tuned, "tuned without a tuning table");
    size_t w[4];
    pick_sizes(builtin.work_group, w);
    const size_t wtune = w[0], wforced = w[1], team = 4;
    clnorm_tuning_entry e = {.op = CLNORM_OP_RMSNORM, .dtype = CLNORM_F32, .cols = P_COLS,
                             .rows = P_ROWS, .algorithm = CLNORM_OP_RMSNORM,
                             .variant = CLNORM_VARIANT_STREAM, .reduction = builtin.reduction,
                             .work_group = wtune, .items_per_row = team, .split = 0,
                             .best_us = 1.5, .builtin_us = 2.5};
    if (!CHECK_ST(clnorm_tuning_write(T.dev, &e, 1), CLNORM_SUCCESS)) goto done;
    clnorm_tuning_entry *read = NULL;
    size_t n = 0;
    char path[4200];
    CHECK(clnorm_tuning_read(T.dev, &read, &n, path, sizeof path) == CLNORM_CACHE_FILE_OK &&
              n == 1 && read && read[0].work_group == wtune && read[0].items_per_row == team &&
              read[0].variant == CLNORM_VARIANT_STREAM && read[0].cols == P_COLS,
          "the tuning table read back: %zu entries from \"%s\"", n, path);
    CHECK(!strncmp(path, dir, strlen(dir)), "tuning table \"%s\" not in \"%s\"", path, dir);
    free(read);
    e.variant = (clnorm_variant)9;
    CHECK_ST(clnorm_tuning_write(T.dev, &e, 1), CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "entries[0].variant") != NULL, "message \"%s\"",
          clnorm_last_error());

    size_t got_team = 0;
    int tuned = 0;
    size_t got = query_wg(NULL, &got_team, &tuned);
    CHECK(tuned && got == wtune && got_team == team, "with the table: the query plans "
          "work-group %zu, %zu per row, tuned %d; the table says %zu, %zu", got, got_team, tuned,
          wtune, team);
    got = call_wg(&b, T.q, &tuned);
    CHECK(tuned && got == wtune, "with the table: the call ran work-group %zu, tuned %d", got,
          tuned);

    /* Automatic: a forced size wins over the table; 1: the table wins; 0: no table. */
    clnorm_plan_hints th;
    clnorm_plan_hints_init(&th);
    th.work_group = wforced;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    got = query_wg(NULL, NULL, &tuned);
    CHECK(!tuned && got == wforced, "forced work_group %zu, tuning automatic: plans %zu, tuned "
          "%d", wforced, got, tuned);
    th.tuning = 1;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    got = query_wg(NULL, NULL, &tuned);
    CHECK(tuned && got == wtune, "forced work_group %zu, tuning 1: plans %zu, tuned %d", wforced,
          got, tuned);
    clnorm_plan_hints_init(&th);
    th.tuning = 0;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    got = query_wg(NULL, NULL, &tuned);
    CHECK(!tuned && got == builtin.work_group, "tuning 0: plans %zu, tuned %d; built-in %zu", got,
          tuned, builtin.work_group);
    got = call_wg(&b, T.q, &tuned);
    CHECK(!tuned && got == builtin.work_group, "tuning 0: the call ran %zu, tuned %d", got,
          tuned);
done:
    clnorm_set_thread_hints(NULL);
    clnorm_config_set(base);
    if (b.x) clReleaseMemObject(b.x);
    if (b.y) clReleaseMemObject(b.y);
    remove_folder(dir);
}

/* ---- Replacing the configuration while other threads plan ---------------------------- */

typedef struct flip_state {
    clnorm_config a, b;
    int rounds;
} flip_state;

static void *flip_config(void *arg)
{
    flip_state *f = arg;
    for (int i = 0; i < f->rounds; i++) clnorm_config_set(i % 2 ? &f->b : &f->a);
    return NULL;
}

/* Each query and each clnorm_config_get sees one configuration whole, never a mix. */
static void check_concurrent_set(const clnorm_config *base)
{
    flip_state f = {*base, *base, 400};
    f.a.hints.work_group = 16;
    f.a.hints.split = 3;
    f.b.hints.work_group = 32;
    f.b.hints.split = 5;
    clnorm_config_set(base);
    const size_t auto_wg = query_wg(NULL, NULL, NULL);
    pthread_t tid;
    if (!CHECK(pthread_create(&tid, NULL, flip_config, &f) == 0, "pthread_create")) return;
    int mixed = 0, bad_plan = 0;
    for (int i = 0; i < 400; i++) {
        clnorm_config c;
        clnorm_config_get(&c);
        mixed += !((c.hints.work_group == 16 && c.hints.split == 3) ||
                   (c.hints.work_group == 32 && c.hints.split == 5) ||
                   (c.hints.work_group == base->hints.work_group &&
                    c.hints.split == base->hints.split));
        size_t wg = query_wg(NULL, NULL, NULL);
        bad_plan += wg != 16 && wg != 32 && wg != auto_wg;
    }
    pthread_join(tid, NULL);
    CHECK(!mixed && !bad_plan, "while another thread replaced the configuration: %d mixed "
          "configurations read, %d plans of neither", mixed, bad_plan);
    clnorm_config_set(base);
}

void test_config_api(void)
{
    clnorm_config saved;
    clnorm_config_get(&saved); /* the process configuration, read at first use */
    check_from_env();
    check_set_get();
    clnorm_config_set(&saved);
    /* Programs of one kernel each: the calls below build only what they run. */
    clnorm_config base = saved;
    clnorm_plan_hints_init(&base.hints);
    base.hints.programs = CLNORM_PROGRAMS_ONE;
    check_precedence(&base);
    check_tuning_hint(&base);
    check_concurrent_set(&base);
    clnorm_set_thread_hints(NULL);
    CHECK_ST(clnorm_config_set(&saved), CLNORM_SUCCESS);
}

/* ---- plan_query -------------------------------------------------------------------------- */

static int same_kernel(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static int plans_equal(const clnorm_plan_info *a, const clnorm_plan_info *b)
{
    return a->op == b->op && a->variant == b->variant && a->reduction == b->reduction &&
           a->work_group == b->work_group && a->items_per_row == b->items_per_row &&
           a->rows_per_group == b->rows_per_group && a->groups == b->groups &&
           a->split == b->split && a->split_cols == b->split_cols &&
           a->local_bytes == b->local_bytes && a->word == b->word &&
           a->elems_per_item == b->elems_per_item && a->tuned == b->tuned &&
           same_kernel(a->kernels[0], b->kernels[0]) && same_kernel(a->kernels[1], b->kernels[1]) &&
           same_kernel(a->kernels[2], b->kernels[2]);
}

typedef struct shape { clnorm_op op; clnorm_dtype dt; size_t rows, cols; } shape;

/* Runs op on dense zeroed views; 1 when it ran. */
static int run_shape(const shape *s)
{
    const size_t bytes = s->rows * s->cols * dt_size(s->dt);
    cl_mem x = t_buffer(T.ctx, bytes, NULL), y = t_buffer(T.ctx, bytes, NULL),
           r = t_buffer(T.ctx, bytes, NULL), m = t_buffer(T.ctx, s->rows * 4, NULL),
           l = t_buffer(T.ctx, s->rows * 4, NULL);
    int ok = 0;
    if (x && y && r && m && l) {
        clnorm_matrix xv = {x, 0, 0}, yv = {y, 0, 0}, rv = {r, 0, 0};
        clnorm_status st;
        switch (s->op) {
        case CLNORM_OP_RMSNORM:
            st = clnorm_rmsnorm(T.q, s->dt, s->rows, s->cols, xv, NULL, yv, 1e-5f, 0, NULL, NULL);
            break;
        case CLNORM_OP_ADD_RMSNORM:
            st = clnorm_add_rmsnorm(T.q, s->dt, s->rows, s->cols, xv, rv, 1, NULL, yv, 1e-5f, 0,
                                    NULL, NULL);
            break;
        case CLNORM_OP_SOFTMAX_STATS:
            st = clnorm_softmax_stats(T.q, s->dt, s->rows, s->cols, xv, m, l, 0, NULL, NULL);
            break;
        default:
            st = clnorm_softmax(T.q, s->dt, s->rows, s->cols, xv, yv,
                                s->op == CLNORM_OP_SOFTMAX_THREE_PASS ? CLNORM_SOFTMAX_THREE_PASS
                                : s->op == CLNORM_OP_SOFTMAX_ONLINE ? CLNORM_SOFTMAX_ONLINE
                                                                    : CLNORM_SOFTMAX_AUTO,
                                0, NULL, NULL);
        }
        ok = CHECK_ST(st, CLNORM_SUCCESS) && CHECK_CL(clFinish(T.q));
    }
    cl_mem all[] = {x, y, r, m, l};
    for (size_t i = 0; i < COUNT_OF(all); i++)
        if (all[i]) clReleaseMemObject(all[i]);
    return ok;
}

static void check_query_matches_call(const shape *s, const char *hints_label)
{
    char label[160];
    snprintf(label, sizeof label, "%s %s %zux%zu (%s)", clnorm_op_name(s->op),
             clnorm_dtype_name(s->dt), s->rows, s->cols, hints_label);
    clnorm_plan_info q, ran;
    if (!CHECK_ST(clnorm_plan_query(T.dev, NULL, s->op, s->dt, s->rows, s->cols, &q),
                  CLNORM_SUCCESS) ||
        !run_shape(s) || !CHECK(clnorm_last_plan(&ran), "%s: no last plan", label))
        return;
    char dq[160], dr[160];
    clnorm_plan_describe(&q, dq, sizeof dq);
    clnorm_plan_describe(&ran, dr, sizeof dr);
    CHECK(plans_equal(&q, &ran), "%s: the query plans \"%s\" (%s %s %s), the call ran \"%s\" "
          "(%s %s %s)", label, dq, q.kernels[0], q.kernels[1] ? q.kernels[1] : "-",
          clnorm_op_name(q.op), dr, ran.kernels[0], ran.kernels[1] ? ran.kernels[1] : "-",
          clnorm_op_name(ran.op));
    CHECK(q.op != CLNORM_OP_SOFTMAX_AUTO && q.kernels[0] && strstr(dq, "wg ") &&
              strstr(dq, clnorm_variant_name(q.variant)),
          "%s: op %d, kernel %s, description \"%s\"", label, (int)q.op,
          q.kernels[0] ? q.kernels[0] : "NULL", dq);
    const int split = q.variant == CLNORM_VARIANT_SPLIT, words = q.variant == CLNORM_VARIANT_WORDS;
    const int coop = q.variant == CLNORM_VARIANT_COOP;
    const int regs = words || q.variant == CLNORM_VARIANT_REGISTERS;
    /* Split plans take two or three kernels, coop plans one; both cut rows in slices of
       whole work-group strides. */
    CHECK(q.rows_per_group * q.items_per_row == q.work_group &&
              (split || coop ? q.split >= 1 && q.split_cols % q.work_group == 0 &&
                                   (q.kernels[1] == NULL) == coop
                             : q.split == 1 && !q.split_cols) &&
              (words ? q.word == 2 || q.word == 4 : q.word == 1) && (regs == !!q.elems_per_item) &&
              q.local_bytes >= q.work_group * sizeof(float),
          "%s: an inconsistent plan \"%s\": %zu rows/group x %zu per row, split %zu of %zu "
          "columns, word %zu, %zu per item, %zu local bytes", label, dq, q.rows_per_group,
          q.items_per_row, q.split, q.split_cols, q.word, q.elems_per_item, q.local_bytes);
}

typedef struct thread_view { int had_last; size_t wg; clnorm_status st; } thread_view;

static void *other_thread(void *arg)
{
    thread_view *v = arg;
    clnorm_plan_info p;
    v->had_last = clnorm_last_plan(&p);
    v->st = clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, P_ROWS, P_COLS, &p);
    v->wg = p.work_group;
    return NULL;
}

void test_plan_query(void)
{
    clnorm_config saved, cfg;
    clnorm_config_get(&saved);
    cfg = saved;
    clnorm_plan_hints_init(&cfg.hints);
    cfg.hints.programs = CLNORM_PROGRAMS_ONE;
    if (!CHECK_ST(clnorm_config_set(&cfg), CLNORM_SUCCESS)) return;
    static const shape shapes[] = {
        {CLNORM_OP_RMSNORM, CLNORM_F32, 64, 1024},
        {CLNORM_OP_SOFTMAX_AUTO, CLNORM_F32, 256, 128},
        {CLNORM_OP_SOFTMAX_THREE_PASS, CLNORM_F32, 4, 70000},
        {CLNORM_OP_SOFTMAX_STATS, CLNORM_F32, 3, 100000},
        {CLNORM_OP_ADD_RMSNORM, CLNORM_F16, 32, 1000},
        {CLNORM_OP_SOFTMAX_ONLINE, CLNORM_BF16, 100, 3000},
        {CLNORM_OP_RMSNORM, CLNORM_BF16, 7, 4096},
        {CLNORM_OP_SOFTMAX_AUTO, CLNORM_F16, 1000, 64},
        {CLNORM_OP_RMSNORM, CLNORM_F32, 1, 200000}, /* split where there are few rows */
    };
    for (size_t i = 0; i < COUNT_OF(shapes); i++) check_query_matches_call(&shapes[i], "no hints");

    /* Thread hints: the query and the call follow them alike, and no other thread. */
    clnorm_plan_info plain;
    CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, P_ROWS, P_COLS, &plain),
             CLNORM_SUCCESS);
    clnorm_plan_hints th;
    clnorm_plan_hints_init(&th);
    th.variant = CLNORM_VARIANT_STREAM;
    th.work_group = plain.work_group == 32 ? 64 : 32;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    for (size_t i = 0; i < 3; i++)
        check_query_matches_call(&shapes[i], "thread hints: stream, work-group 32 or 64");
    clnorm_plan_hints_init(&th);
    th.variant = CLNORM_VARIANT_WORDS; /* with a team that holds the row */
    th.work_group = th.items_per_row = 8;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    const shape worded = {CLNORM_OP_RMSNORM, CLNORM_F32, 64, 128};
    check_query_matches_call(&worded, "thread hints: words, work-group 8, 8 per row");
    clnorm_plan_hints_init(&th);
    th.variant = CLNORM_VARIANT_STREAM;
    th.work_group = plain.work_group == 32 ? 64 : 32;
    CHECK_ST(clnorm_set_thread_hints(&th), CLNORM_SUCCESS);
    thread_view v = {1, 0, CLNORM_SUCCESS};
    pthread_t tid;
    if (CHECK(pthread_create(&tid, NULL, other_thread, &v) == 0, "pthread_create")) {
        pthread_join(tid, NULL);
        CHECK(!v.had_last, "a new thread has a last plan");
        CHECK(v.st == CLNORM_SUCCESS && v.wg == plain.work_group, "another thread's query "
              "plans work-group %zu (%s), expected the unhinted %zu", v.wg,
              clnorm_status_string(v.st), plain.work_group);
    }
    clnorm_set_thread_hints(NULL);

    /* rows 0 plans as rows 1. */
    clnorm_plan_info a, b;
    if (CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_SOFTMAX_AUTO, CLNORM_F32, 0, 5000, &a),
                 CLNORM_SUCCESS) &&
        CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_SOFTMAX_AUTO, CLNORM_F32, 1, 5000, &b),
                 CLNORM_SUCCESS))
        CHECK(plans_equal(&a, &b), "rows 0 and rows 1 plan differently");

    /* Refusals. */
    clnorm_plan_info p;
    CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 0, &p),
             CLNORM_INVALID_ARGUMENT);
    CHECK_ST(clnorm_plan_query(T.dev, NULL, (clnorm_op)9, CLNORM_F32, 4, 64, &p),
             CLNORM_INVALID_ARGUMENT);
    CHECK(strstr(clnorm_last_error(), "op = 9") != NULL, "message \"%s\"", clnorm_last_error());
    CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, (clnorm_dtype)7, 4, 64, &p),
             CLNORM_INVALID_ARGUMENT);
    CHECK_ST(clnorm_plan_query(NULL, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, &p),
             CLNORM_DEVICE_NOT_FOUND);
    CHECK_ST(clnorm_plan_query(T.dev, NULL, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, NULL),
             CLNORM_INVALID_ARGUMENT);
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.reduction = 3;
    CHECK_ST(clnorm_plan_query(T.dev, &h, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, &p),
             CLNORM_INVALID_ARGUMENT);
    clnorm_plan_hints_init(&h);
    h.work_group = (size_t)1 << 20; /* beyond every device */
    CHECK_ST(clnorm_plan_query(T.dev, &h, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, &p),
             CLNORM_INVALID_ARGUMENT);
    clnorm_device_info info;
    if (CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS)) {
        clnorm_plan_hints_init(&h);
        h.reduction = CLNORM_REDUCTION_NV_SHUFFLE;
        CHECK_ST(clnorm_plan_query(T.dev, &h, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, &p),
                 info.nv_shuffle ? CLNORM_SUCCESS : CLNORM_UNSUPPORTED);
        h.reduction = CLNORM_REDUCTION_SUBGROUP;
        CHECK_ST(clnorm_plan_query(T.dev, &h, CLNORM_OP_RMSNORM, CLNORM_F32, 4, 64, &p),
                 info.reduction != CLNORM_REDUCTION_LOCAL ? CLNORM_SUCCESS : CLNORM_UNSUPPORTED);
    }
    CHECK_ST(clnorm_config_set(&saved), CLNORM_SUCCESS);
}

/* ---- env_refused ---------------------------------------------------------------------- */
void test_env_refused(void)
{
    static const char *const bad[][2] = {{"CLNORM_VARIANT", "bogus"},
                                         {"CLNORM_REDUCTION", "fast"},
                                         {"CLNORM_WORK_GROUP", "-3"}};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        const char *const args[] = {"bad-env", bad[i][0], NULL};
        const int rc = t_run_child(args, NULL, bad[i][0], bad[i][1]);
        CHECK(rc == 0, "%s=%s: the helper's bad-env mode exited with %d (its stderr names "
              "the calls let through)", bad[i][0], bad[i][1], rc);
    }
}
