/* variants: every kernel form (stream, reg, words, split) forced on every operation and
   dtype, on rows that fit it, packed and on views whose rows start at odd elements.
   The plan the library makes is asserted too, so that each form really runs: the
   paired one wherever the row length and every row start are even, the plain register
   one where they are not. Values against float64 references of the rounded inputs;
   canaries around every view (run_op). Last, CLNORM_TRACE=1 must print the plan that
   ran. */
#define _POSIX_C_SOURCE 200809L /* fileno, dup */
#include "test.h"
#include "clnorm_advanced.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v) p *= 2;
    return p;
}

/* CLNORM_VARIANT's name of each variant. */
static const char *variant_env(clnorm_variant v)
{
    static const char *const names[CLNORM_VARIANT_COUNT] = {"stream", "reg", "split", "words",
                                                            "coop"};
    return (unsigned)v < CLNORM_VARIANT_COUNT ? names[v] : "?";
}

/* The variant the library should run for a forced one, with words of word elements
   (views whose rows do not all start at whole words run the plain register form). */
static clnorm_variant expected(clnorm_variant forced, top op, size_t cols, int odd_rows,
                               size_t word)
{
    if (forced == CLNORM_VARIANT_WORDS && (cols % word || odd_rows))
        forced = CLNORM_VARIANT_REGISTERS;
    if ((forced == CLNORM_VARIANT_REGISTERS || forced == CLNORM_VARIANT_WORDS) && op == OP_STATS)
        return CLNORM_VARIANT_STREAM;
    return forced;
}

/* Elements per word of the words variant under the configuration now: the plan of a
   forced words call of whole words says it. */
static size_t words_word(void)
{
    clnorm_plan_hints h;
    clnorm_plan_info pl;
    clnorm_plan_hints_init(&h);
    h.variant = CLNORM_VARIANT_WORDS;
    if (!CHECK_ST(clnorm_plan_query(T.dev, &h, CLNORM_OP_SOFTMAX_THREE_PASS, CLNORM_F32, 1, 4,
                                    &pl), CLNORM_SUCCESS) ||
        !CHECK(pl.variant == CLNORM_VARIANT_WORDS, "a forced words plan is %s",
               clnorm_variant_name(pl.variant)))
        return 2;
    return pl.word;
}

/* Runs call a against its reference and gives the plan that ran in *pl. Returns 0
   where there is none, which is asserted. */
static int run_and_plan(op_args *a, clnorm_plan_info *pl, char *label, size_t label_len)
{
    op_label(a, label, label_len);
    return check_op(a, CLNORM_SUCCESS) == CLNORM_SUCCESS &&
           CHECK(clnorm_last_plan(pl), "%s: no plan recorded", label);
}

/* Whether the plan's first kernel is the one named. */
static int first_kernel(const clnorm_plan_info *pl, const char *name)
{
    return pl->kernels[0] && !strcmp(pl->kernels[0], name);
}

void test_variants(void)
{
    /* The last form is the paired one again with a team that holds the row only in all
       its slots: the full paired kernels, where the first pass takes the half ones
       for 16-bit softmax and for RMSNorm. */
    static const clnorm_variant forms[] = {CLNORM_VARIANT_STREAM, CLNORM_VARIANT_REGISTERS,
                                           CLNORM_VARIANT_WORDS, CLNORM_VARIANT_SPLIT,
                                           CLNORM_VARIANT_WORDS};
    /* Up to 1024 columns: one work-group size (64), since PoCL compiles every
       kernel anew for each size it meets. */
    static const size_t cols_list[] = {2, 34, 1000, 1001};
    static const clnorm_dtype dts[] = {CLNORM_F32, CLNORM_F16, CLNORM_BF16};
    clnorm_device_info info;
    if (!CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS)) return;
    size_t dmax = t_device_max_wg(T.dev);
    size_t calls = 0, planned[CLNORM_VARIANT_COUNT] = {0}, half16 = 0, full16 = 0;
    for (size_t f = 0; f < COUNT_OF(forms); f++)
        for (size_t c = 0; c < COUNT_OF(cols_list); c++)
            for (size_t d = 0; d < COUNT_OF(dts); d++)
                for (int op = 0; op < OP_COUNT; op++) {
                    size_t cols = cols_list[c], rows = cols > 1000 ? 3 : 5;
                    /* 16 elements per work-item fit every register form; groups of
                       at least 64 hold several short rows. */
                    size_t team = pow2_ceil((cols + 15) / 16), wg = team < 64 ? 64 : team;
                    const int full = f == COUNT_OF(forms) - 1;
                    if (full && (dts[d] == CLNORM_F32 || cols % 2 || cols < 1000)) continue;
                    if (full) team = pow2_ceil((cols + 63) / 64);
                    if (wg > dmax) continue;
                    t_env_restore();
                    t_config("CLNORM_VARIANT", variant_env(forms[f]));
                    if (forms[f] == CLNORM_VARIANT_SPLIT) {
                        t_config_num("CLNORM_SPLIT", 3);
                    } else {
                        t_config_num("CLNORM_WORK_GROUP", wg);
                        t_config_num("CLNORM_ROW_THREADS", team);
                    }
                    op_args a;
                    float *x, *g;
                    make_problem(&R, &a, (top)op, rows, cols, &x, &g);
                    a.dt = dts[d];
                    /* Packed (half the calls); x at an odd offset; y with an odd ld. */
                    int layout = full ? 0 : (int)((c + d + (size_t)op) % 4) % 3;
                    if (layout == 1) a.xoff = 1;
                    if (layout == 2) a.yld = cols + 1, a.yoff = 2;
                    int odd_rows = layout != 0;

                    clnorm_plan_info pl;
                    char label[400];
                    if (run_and_plan(&a, &pl, label, sizeof label)) {
                        clnorm_variant want = expected(forms[f], (top)op, cols, odd_rows,
                                                       words_word());
                        /* A split stays a split only for the ops that have one. */
                        if (forms[f] == CLNORM_VARIANT_SPLIT && pl.variant == CLNORM_VARIANT_STREAM)
                            want = pl.variant;
                        CHECK(pl.variant == want, "%s, CLNORM_VARIANT=%s: the plan is %s, expected %s",
                              label, variant_env(forms[f]), clnorm_variant_name(pl.variant),
                              clnorm_variant_name(want));
                        if ((unsigned)pl.variant < CLNORM_VARIANT_COUNT) planned[pl.variant]++;
                        if (a.dt != CLNORM_F32) {
                            half16 += first_kernel(&pl, "clnorm_softmax_words_half");
                            full16 += first_kernel(&pl, "clnorm_softmax_words");
                        }
                    }
                    calls++;
                    free(x);
                    free(g);
                }
    t_env_restore();
    NOTE("%zu calls checked; planned stream %zu, reg %zu, words %zu, split %zu", calls,
         planned[CLNORM_VARIANT_STREAM], planned[CLNORM_VARIANT_REGISTERS],
         planned[CLNORM_VARIANT_WORDS], planned[CLNORM_VARIANT_SPLIT]);
    CHECK(planned[CLNORM_VARIANT_WORDS] > 0 && planned[CLNORM_VARIANT_REGISTERS] > 0 &&
              planned[CLNORM_VARIANT_SPLIT] > 0,
          "some kernel form never ran");
    CHECK(half16 > 0 && full16 > 0, "16-bit softmax ran the half paired kernel %zu times and "
          "the full one %zu times", half16, full16);

    /* Words of 4 elements (CLNORM_PAIR_WORD=4): the paired kernels where cols and
       every row start are multiples of 4, the plain register ones where not. */
    static const size_t cols4[] = {4, 1000, 1002};
    size_t paired4 = 0;
    for (size_t c = 0; c < COUNT_OF(cols4); c++)
        for (size_t d = 0; d < COUNT_OF(dts); d++)
            for (int op = 0; op < OP_COUNT; op++)
                for (int shifted = 0; shifted < 2; shifted++) {
                    size_t cols = cols4[c], rows = 5;
                    size_t team = pow2_ceil((cols + 15) / 16), wg = team < 64 ? 64 : team;
                    if (wg > dmax || op == OP_STATS) continue;
                    t_env_restore();
                    t_config("CLNORM_PAIR_WORD", "4");
                    t_config("CLNORM_VARIANT", "words");
                    t_config_num("CLNORM_WORK_GROUP", wg);
                    t_config_num("CLNORM_ROW_THREADS", team);
                    op_args a;
                    float *x, *g;
                    make_problem(&R, &a, (top)op, rows, cols, &x, &g);
                    a.dt = dts[d];
                    if (shifted) a.xoff = 2; /* even, not a multiple of 4 */
                    clnorm_plan_info pl;
                    char label[400];
                    clnorm_variant want = cols % 4 || shifted ? CLNORM_VARIANT_REGISTERS
                                                              : CLNORM_VARIANT_WORDS;
                    if (run_and_plan(&a, &pl, label, sizeof label)) {
                        CHECK(pl.variant == want && (want != CLNORM_VARIANT_WORDS || pl.word == 4),
                              "%s, CLNORM_PAIR_WORD=4: the plan is %s in words of %zu, "
                              "expected %s", label, clnorm_variant_name(pl.variant), pl.word,
                              clnorm_variant_name(want));
                        paired4 += pl.variant == CLNORM_VARIANT_WORDS;
                    }
                    calls++;
                    free(x);
                    free(g);
                }
    t_env_restore();
    CHECK(paired4 > 0, "no paired kernel ran in words of 4");

    /* Rows that fill every slot of the team (cols == team * elements per work-item):
       on GPUs the paired softmax kernels then take their unguarded branch in the
       first group (float32 in teams of 512 or more); the second group holds one row
       of several, so it takes the guarded one. Both kernel sizes, every dtype, words
       of 2 and 4. CPU builds have no such branch (the Oclgrind sweep runs the GPU
       builds' on the CPU), and compiling these kernels for PoCL would double this
       case's time. */
    const int gpu = !(info.type & CL_DEVICE_TYPE_CPU);
    size_t filled[2] = {0, 0};
    for (size_t d = 0; gpu && d < COUNT_OF(dts); d++)
        for (int op = OP_SOFTMAX_3PASS; op <= OP_SOFTMAX_ONLINE; op++)
            for (size_t per = 8; per <= 64; per *= 2)
                for (int w4 = 0; w4 < 2; w4++) {
                    /* float32 takes the unguarded branch in teams of 512 or more. */
                    const size_t team = dts[d] == CLNORM_F32 ? 512 : 16, cols = team * per;
                    const size_t wg = team < 64 ? 64 : 2 * team;
                    if (wg > dmax) continue;
                    t_env_restore();
                    t_config("CLNORM_VARIANT", "words");
                    if (w4) t_config("CLNORM_PAIR_WORD", "4");
                    t_config_num("CLNORM_WORK_GROUP", wg);
                    t_config_num("CLNORM_ROW_THREADS", team);
                    op_args a;
                    float *x, *g;
                    make_problem(&R, &a, (top)op, wg / team + 1, cols, &x, &g);
                    a.dt = dts[d];
                    clnorm_plan_info pl;
                    char label[400];
                    if (run_and_plan(&a, &pl, label, sizeof label) &&
                        pl.variant == CLNORM_VARIANT_WORDS && pl.elems_per_item * team == cols)
                        filled[first_kernel(&pl, "clnorm_softmax_words_half")]++;
                    calls++;
                    free(x);
                    free(g);
                }
    t_env_restore();
    CHECK(!gpu || (filled[0] > 0 && filled[1] > 0), "rows filling every slot ran the full "
          "paired kernel %zu times and the half one %zu times", filled[0], filled[1]);

    /* CLNORM_TRACE=1 prints the plan that ran, one line per operation, on stderr. */
    FILE *tmp = tmpfile();
    int saved = dup(2);
    if (!CHECK(tmp && saved >= 0, "a temporary file for stderr")) return;
    fflush(stderr);
    dup2(fileno(tmp), 2);
    t_config("CLNORM_VARIANT", "split");
    t_config("CLNORM_TRACE", "1");
    op_args a;
    float *x, *g;
    make_problem(&R, &a, OP_SOFTMAX_ONLINE, 3, 1000, &x, &g);
    check_op(&a, CLNORM_SUCCESS);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    t_env_restore();
    char text[4096] = "";
    rewind(tmp);
    size_t got = fread(text, 1, sizeof text - 1, tmp);
    text[got] = '\0';
    fclose(tmp);
    free(x);
    free(g);
    /* The line names the plan's variant, work-group size and slices. */
    clnorm_plan_info ran;
    char want[200] = "";
    if (clnorm_last_plan(&ran))
        snprintf(want, sizeof want, "wg %zu, %zu slices", ran.work_group, ran.split);
    CHECK(strstr(text, "clnorm: softmax-online 3x1000 f32") && strstr(text, "split/") && *want &&
              strstr(text, want),
          "CLNORM_TRACE=1 printed \"%.300s\", expected the line of softmax-online 3x1000 f32 "
          "with the split plan \"%s\"", text, want);
}
