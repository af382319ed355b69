/* Shared declarations of the `clnorm` command-line tool. */
#ifndef CLNORM_TOOL_H
#define CLNORM_TOOL_H

#include "clnorm_advanced.h"

#include <stdint.h>
#include <stdio.h>

/* Exit codes: 0 all good, 1 a wrong result or an error, 2 bad usage. */
enum { TOOL_OK = 0, TOOL_FAIL = 1, TOOL_USAGE = 2 };

/* Subcommands: argv[0] is the subcommand's own name. */
int cmd_devices(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_cache(int argc, char **argv);
/* `clnorm bench --op attention` (bench_attention.c): cmd_bench passes its arguments on. */
int cmd_bench_attention(int argc, char **argv);

/* host_dtype.c: float <-> storage conversions, round to nearest even. */
uint16_t tool_f32_to_f16(float f);
float tool_f16_to_f32(uint16_t h);
uint16_t tool_f32_to_bf16(float f);
float tool_bf16_to_f32(uint16_t b);
void tool_store(clnorm_dtype d, const float *src, void *dst, size_t n);
void tool_load(clnorm_dtype d, const void *src, float *dst, size_t n);

/* 1 for "--help" or "-h". */
int tool_is_help(const char *arg);
/* Matches "--name VALUE" or "--name=VALUE" at argv[*i], advancing *i past a separate
   value. Returns 1 on a match, 0 when argv[*i] is another option, -1 (after a message)
   when the value is missing. */
int tool_opt(int argc, char **argv, int *i, const char *name, const char **val);
/* Parses a positive integer option value; prints a message and returns 0 if bad. */
int tool_parse_size(const char *opt, const char *s, size_t *out);
/* "f32", "f16" or "bf16"; prints a message and returns 0 if bad. */
int tool_parse_dtype(const char *s, clnorm_dtype *out);
/* Prints "clnorm: <what>: <STATUS>: <last error>" to stderr. Call it right after the
   failed library call: the last-error text belongs to the latest call. */
void tool_report(const char *what, clnorm_status st);
/* Seconds on the monotonic clock. */
double tool_now(void);
/* Median of v[0..n) (sorts v in place); 0 for n == 0. */
double tool_median(double *v, size_t n);
/* On a PoCL device, one line saying whether PoCL's worker threads are pinned (static
   storage); NULL on other devices. */
const char *tool_pocl_note(cl_command_queue q);
/* bench_util.c: seconds from the end of marker to the end of done, on the device's
   clock (0 where the driver reports no profiling times). */
double tool_event_seconds(cl_event marker, cl_event done);
/* The device's clEnqueueCopyBuffer bandwidth at `bytes`, read plus written, median of
   reps after a warm-up; 0 where the buffers cannot be made. Where kernel_gbps is not
   NULL, also that of a one-line copy kernel (a float4 a work-item) over the same
   buffers, into it (0 where it did not run). */
double tool_copy_gbps(cl_context ctx, cl_command_queue q, size_t bytes, int reps,
                      double *kernel_gbps);
/* "CPU", "GPU", "GPU|DEFAULT", ... */
const char *tool_type_name(cl_device_type t, char *buf, size_t len);

/* The short names the tool's tables print: "rmsnorm", "softmax-3pass",
   "softmax-online", "softmax-stats", "add-rmsnorm", "softmax-auto"; "stream", "reg",
   "split", "words"; "local", "subgroup", "nv-shuffle". "?" for other values. */
const char *tool_op_name(clnorm_op op);
const char *tool_variant_name(clnorm_variant v);
const char *tool_reduction_name(clnorm_reduction r);
/* A plan in one line, as `clnorm bench` prints it: "stream/local wg 256, 8 rows/wg,
   512 groups", "words-half/subgroup ...", "split/local wg 256, 4 slices of 1024". */
void tool_plan_describe(const clnorm_plan_info *pl, char *buf, size_t len);

#endif
