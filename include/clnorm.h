/*
 * clnorm: row-wise RMSNorm, softmax and online-softmax statistics as OpenCL kernels
 * that run on any OpenCL 1.2+ device.
 *
 * The contract of this header is ../shared/API.md; everything it lists is here with
 * exactly its names, types and values. Additions are marked "extension".
 *
 * Ownership: no function takes ownership of a caller's cl_mem, cl_command_queue or
 * cl_event. The kernel cache retains the cl_context of every queue it has served
 * until clnorm_release_cache() (or clnorm_session_destroy() for a session's own).
 */
#ifndef CLNORM_H
#define CLNORM_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define CLNORM_API
#else
#  define CLNORM_API __attribute__((visibility("default")))
#endif

#define CLNORM_VERSION_MAJOR 0
#define CLNORM_VERSION_MINOR 1
#define CLNORM_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library actually linked; static storage. */
CLNORM_API const char *clnorm_version(void);

/* Status of every fallible call. The values never change. */
typedef enum clnorm_status {
    CLNORM_SUCCESS          = 0,
    CLNORM_INVALID_ARGUMENT = 1, /* NULL where required, cols == 0, ld < cols, bad enum,
                                    eps < 0 or not finite, partial overlap of x and y   */
    CLNORM_OUT_OF_BOUNDS    = 2, /* a view reaches past the end of its cl_mem          */
    CLNORM_DEVICE_NOT_FOUND = 3, /* no OpenCL device matches the spec                  */
    CLNORM_UNSUPPORTED      = 4, /* the device cannot run this request                 */
    CLNORM_BUILD_FAILED     = 5, /* kernel compilation failed; log in clnorm_last_error */
    CLNORM_OUT_OF_RESOURCES = 6, /* host or device allocation failed                   */
    CLNORM_OPENCL_ERROR     = 7  /* any other OpenCL failure; name in clnorm_last_error */
} clnorm_status;

/* "CLNORM_SUCCESS", ...; "CLNORM_UNKNOWN_STATUS" for a value not listed. Never NULL. */
CLNORM_API const char *clnorm_status_string(clnorm_status s);

/* Message about this thread's most recent failed call: what was wrong, with the
   offending values and the OpenCL error name or build log where there is one.
   "" when no call on this thread has failed yet. Never NULL. The pointer stays valid
   until the next clnorm call on this thread. */
CLNORM_API const char *clnorm_last_error(void);

typedef enum clnorm_dtype { CLNORM_F32 = 0, CLNORM_F16 = 1, CLNORM_BF16 = 2 } clnorm_dtype;

typedef enum clnorm_softmax_algo {
    CLNORM_SOFTMAX_AUTO       = 0, /* the library picks per device and shape          */
    CLNORM_SOFTMAX_THREE_PASS = 1, /* stable: max pass, sum-of-exp pass, write pass   */
    CLNORM_SOFTMAX_ONLINE     = 2  /* one statistics pass with rescaling, then write  */
} clnorm_softmax_algo;

/* Row-major view into a buffer: element (r, c) is at index offset + r*ld + c.
   ld == 0 means packed rows (ld = cols). */
typedef struct clnorm_matrix { cl_mem mem; size_t offset; size_t ld; } clnorm_matrix;

/* ---- Device-buffer functions --------------------------------------------------
   Enqueued on `queue` (in-order or out-of-order), asynchronous. Borrow every handle
   for the duration of the call only. `event` may be NULL; otherwise it receives one
   new event (the caller releases it) that completes when the whole operation has.
   Ask for one only where it is needed: some drivers charge for it on every call
   (NVIDIA's 580 driver: 11.7 us per enqueue with an event, 4.2 us without).
   `rows == 0` is a no-op (a marker event where one is asked for). Elements between
   `cols` and `ld` in `y` are never written. `y` may be exactly `x` (same buffer,
   offset and ld); any other overlap of x and y is CLNORM_INVALID_ARGUMENT. Two
   views of one buffer with the same ld may interleave (rows side by side); views
   with different lds whose byte ranges cross are refused even when they share no
   element, since proving that costs more than the call.
   A request refused by validation enqueues nothing and touches no buffer. */

/* y = x * (mean(x^2) + eps)^(-1/2) * gamma, per row.
   gamma: cols elements of dtype at offset 0, or NULL for no scale (gamma = 1). */
CLNORM_API clnorm_status clnorm_rmsnorm(cl_command_queue queue, clnorm_dtype dtype,
                                        size_t rows, size_t cols,
                                        clnorm_matrix x, cl_mem gamma, clnorm_matrix y,
                                        float eps, cl_uint num_wait,
                                        const cl_event *wait_list, cl_event *event);

/* y = exp(x - max) / sum(exp(x - max)), per row, with the algorithm asked for. */
CLNORM_API clnorm_status clnorm_softmax(cl_command_queue queue, clnorm_dtype dtype,
                                        size_t rows, size_t cols,
                                        clnorm_matrix x, clnorm_matrix y,
                                        clnorm_softmax_algo algo, cl_uint num_wait,
                                        const cl_event *wait_list, cl_event *event);

/* Online-softmax statistics of each row, as float32 at offset 0 of row_max and
   row_sum (rows floats each):
   row_max[r] = max_j x[r][j],  row_sum[r] = sum_j exp(x[r][j] - row_max[r]). */
CLNORM_API clnorm_status clnorm_softmax_stats(cl_command_queue queue, clnorm_dtype dtype,
                                              size_t rows, size_t cols, clnorm_matrix x,
                                              cl_mem row_max, cl_mem row_sum,
                                              cl_uint num_wait, const cl_event *wait_list,
                                              cl_event *event);

/* Extension: fused residual add + RMSNorm, per row:
     h = x + residual, computed in float32 and rounded to dtype;
     residual = h, in the storage dtype, when update_residual is nonzero;
     y = h * (sum(h^2) / cols + eps)^(-1/2) * gamma.
   The rounded h is what gets normalised: y is then exactly clnorm_rmsnorm of the
   residual stream the next layer reads (as Liger does); FlashInfer normalises the
   float32 sum instead, which differs by one storage rounding in f16/bf16 and not at
   all in f32. When the row fits in registers (up to 32 elements per work-item, e.g.
   32768 columns with 1024 work-items) x and residual are read once and h and y
   written once; longer rows read them again. y may be exactly x; residual must not
   overlap x or y. gamma as for clnorm_rmsnorm. Other rules as for the device-buffer
   functions above. */
CLNORM_API clnorm_status clnorm_add_rmsnorm(cl_command_queue queue, clnorm_dtype dtype,
                                            size_t rows, size_t cols, clnorm_matrix x,
                                            clnorm_matrix residual, int update_residual,
                                            cl_mem gamma, clnorm_matrix y, float eps,
                                            cl_uint num_wait, const cl_event *wait_list,
                                            cl_event *event);

/* (m, l) of the union of two parts: m = max(ma, mb), l = e^(ma-m) la + e^(mb-m) lb.
   (-INFINITY, 0) is the identity; a NaN in either input gives (NaN, NaN).
   m and l must not be NULL. Pure host function. */
CLNORM_API void clnorm_stats_merge(float ma, float la, float mb, float lb,
                                   float *m, float *l);

/* ---- Sessions and host arrays ---------------------------------------------------
   A session owns one context and one in-order queue on one device.
   spec: NULL means the CLNORM_DEVICE environment variable, and where that is unset
   the first GPU, else the first device. A spec is "P:D" (platform and device index,
   as `clnorm devices` lists them), "cpu" / "gpu" for the first device of that type,
   or else a case-insensitive substring of "<platform name> <platform vendor>
   <device name> <device vendor>"; the first device in `clnorm devices` order that
   matches is taken. *out receives the session (NULL on failure). */
typedef struct clnorm_session clnorm_session;
CLNORM_API clnorm_status clnorm_session_create(const char *spec, clnorm_session **out);
/* Releases the queue, the context and the cached kernels of that context. NULL is a
   no-op. */
CLNORM_API void clnorm_session_destroy(clnorm_session *s);
/* Borrowed handles, valid until clnorm_session_destroy (retain them to keep them). */
CLNORM_API cl_context       clnorm_session_context(const clnorm_session *s);
CLNORM_API cl_command_queue clnorm_session_queue(const clnorm_session *s);
CLNORM_API const char      *clnorm_session_device_name(const clnorm_session *s);

/* Host arrays: packed row-major memory of the dtype, borrowed for the call; the call
   blocks until the result is in y. y may equal x (in place). */
CLNORM_API clnorm_status clnorm_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype,
                                             size_t rows, size_t cols, const void *x,
                                             const void *gamma, void *y, float eps);
CLNORM_API clnorm_status clnorm_softmax_host(clnorm_session *s, clnorm_dtype dtype,
                                             size_t rows, size_t cols, const void *x,
                                             void *y, clnorm_softmax_algo algo);
CLNORM_API clnorm_status clnorm_softmax_stats_host(clnorm_session *s, clnorm_dtype dtype,
                                                   size_t rows, size_t cols,
                                                   const void *x, float *row_max,
                                                   float *row_sum);

/* Extension: the fused add of clnorm_add_rmsnorm on host arrays; residual is
   updated in place when update_residual is nonzero. */
CLNORM_API clnorm_status clnorm_add_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype,
                                                 size_t rows, size_t cols, const void *x,
                                                 void *residual, int update_residual,
                                                 const void *gamma, void *y, float eps);

/* ---- Kernel cache --------------------------------------------------------------- */
/* Build now every program this queue's device will need, instead of at first use. */
CLNORM_API clnorm_status clnorm_warmup(cl_command_queue queue);
/* Drop cached programs and kernels of one context (NULL: of all contexts), and the
   cache's reference to that context. Must not race with calls using that context. */
CLNORM_API void clnorm_release_cache(cl_context context);

#ifdef __cplusplus
}
#endif
#endif /* CLNORM_H */
