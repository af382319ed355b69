/*
 * clnorm: row-wise RMSNorm, softmax and online-softmax statistics as OpenCL kernels
 * that run on any OpenCL 1.2+ device.
 *
 * The contract of this header is docs/API.md: names, types, values and meanings, the
 * statuses, events, threads, special values and accuracy. Each function's block below
 * says what it borrows, what it returns and what it refuses.
 *
 * Rules shared by every function:
 * - Ownership: no function takes ownership of a caller's cl_mem, cl_command_queue or
 *   cl_event; each is borrowed for the duration of the call. The kernel cache retains
 *   the cl_context of every queue it has served, and the library a few in-order
 *   queues (scratch buffers bound to them; the last one-launch softmax's queue),
 *   until clnorm_release_cache() of their context (or clnorm_session_destroy() for
 *   a session's own).
 * - Failure: a refused request enqueues nothing, touches no buffer and creates no
 *   event; clnorm_last_error() then says what was wrong. Where OpenCL fails part-way
 *   through an operation, the call returns the error and the outputs are unspecified.
 * - Threads: every function may be called from any number of threads at once, except
 *   that clnorm_session_destroy() must not race with calls that use its session.
 *   clnorm_release_cache() may run at any time: calls in flight finish on what they
 *   hold.
 * - Sizes, offsets and leading dimensions are counted in elements of the dtype.
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

/* Export attribute of every function; not for use in programs. */
#if defined(_WIN32)
#  define CLNORM_API
#else
#  define CLNORM_API __attribute__((visibility("default")))
#endif

/* The version: its one source. CMake reads these three lines for the project, the
   shared library, the CMake package and clnorm.pc (docs/API.md, "Versioning"). */
#define CLNORM_VERSION_MAJOR 0
#define CLNORM_VERSION_MINOR 1
#define CLNORM_VERSION_PATCH 0

/*! clnorm_version() :
 *  @return "MAJOR.MINOR.PATCH" of the library actually linked, which may differ from
 *          the CLNORM_VERSION_* macros this header was compiled with. Static storage;
 *          never NULL. */
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

/*! clnorm_status_string() :
 *  @return the status's name, "CLNORM_SUCCESS", ...; "CLNORM_UNKNOWN_STATUS" for a
 *          value not listed. Static storage; never NULL. */
CLNORM_API const char *clnorm_status_string(clnorm_status s);

/*! clnorm_last_error() :
 *  @return a message about this thread's most recent failed call: what was wrong,
 *          with the offending values, and the OpenCL error name or build log where
 *          there is one. "" when no call on this thread has failed yet; a successful
 *          call leaves it unchanged. Never NULL. Thread-local: the pointer stays
 *          valid until the next clnorm call on this thread. */
CLNORM_API const char *clnorm_last_error(void);

/* Storage type of the elements: IEEE binary32, IEEE binary16, bfloat16. Arithmetic
   and statistics are float32 or wider whatever the storage. */
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
   Enqueued on `queue` (in-order or out-of-order), asynchronous: the call returns once
   the work is enqueued. They borrow every handle for the duration of the call only.
   `event` may be NULL; otherwise it receives one new event (the caller releases it)
   that completes when the whole operation has, however many kernels it took. Ask for
   one only where it is needed: some drivers charge for it on every call. The wait
   list works as in OpenCL. `rows == 0` is a no-op (a marker event where one is asked
   for), after the same argument and environment checks as with rows; no plan is
   made, so a forced size or path the device cannot run is refused only with rows.

   Views: elements between `cols` and `ld` in `y` are never written. `y` may be
   exactly `x` (same buffer, offset and ld); any other overlap of x and y is
   CLNORM_INVALID_ARGUMENT. Two views of one buffer may interleave (rows side by
   side, at one ld or two) as long as they share no element. Sub-buffers of one
   buffer are compared as the bytes of their parent.

   Refusals common to all of them:
     CLNORM_INVALID_ARGUMENT  queue NULL or not a queue; a view's mem NULL, not a
                              buffer, or of another context than the queue; dtype
                              or algo outside its enum; cols == 0; ld < cols; a
                              forbidden overlap; num_wait > 0 with wait_list NULL,
                              wait_list with num_wait == 0, or an entry NULL, not
                              an event or of another context; a bad CLNORM_*
                              environment value
     CLNORM_OUT_OF_BOUNDS     a view or array reaches past the end of its cl_mem
     CLNORM_UNSUPPORTED       the device cannot run the request (CLNORM_REDUCTION=
                              subgroup without sub-groups, too little local memory)
   and, at the first call on a device, the statuses of a build (CLNORM_BUILD_FAILED,
   CLNORM_OUT_OF_RESOURCES, CLNORM_OPENCL_ERROR). */

/*! clnorm_rmsnorm() :
 *  y = x * (sum(x^2) / cols + eps)^(-1/2) * gamma, per row; no mean is subtracted.
 *  Borrows: x and y (views of dtype), gamma (cols elements of dtype at offset 0, or
 *           NULL for no scale: gamma = 1), for the call; the kernels read and write
 *           them once the wait list allows.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for eps negative, NaN or infinite, or gamma
 *           overlapping y; CLNORM_OUT_OF_BOUNDS for a gamma of fewer than cols
 *           elements; and the common refusals above. */
CLNORM_API clnorm_status clnorm_rmsnorm(cl_command_queue queue, clnorm_dtype dtype,
                                        size_t rows, size_t cols,
                                        clnorm_matrix x, cl_mem gamma, clnorm_matrix y,
                                        float eps, cl_uint num_wait,
                                        const cl_event *wait_list, cl_event *event);

/*! clnorm_softmax() :
 *  y = exp(x - max) / sum(exp(x - max)), per row, with the algorithm asked for.
 *  Borrows: x and y (views of dtype) for the call.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for an algo outside clnorm_softmax_algo, and the
 *           common refusals above. */
CLNORM_API clnorm_status clnorm_softmax(cl_command_queue queue, clnorm_dtype dtype,
                                        size_t rows, size_t cols,
                                        clnorm_matrix x, clnorm_matrix y,
                                        clnorm_softmax_algo algo, cl_uint num_wait,
                                        const cl_event *wait_list, cl_event *event);

/*! clnorm_softmax_stats() :
 *  Online-softmax statistics of each row, as float32 whatever the dtype:
 *  row_max[r] = max_j x[r][j],  row_sum[r] = sum_j exp(x[r][j] - row_max[r]).
 *  Borrows: x (view of dtype); row_max and row_sum (rows floats each at offset 0),
 *           for the call.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for row_max or row_sum NULL, or any two of
 *           row_max, row_sum and x overlapping; CLNORM_OUT_OF_BOUNDS for row_max or
 *           row_sum of fewer than rows floats; and the common refusals above. */
CLNORM_API clnorm_status clnorm_softmax_stats(cl_command_queue queue, clnorm_dtype dtype,
                                              size_t rows, size_t cols, clnorm_matrix x,
                                              cl_mem row_max, cl_mem row_sum,
                                              cl_uint num_wait, const cl_event *wait_list,
                                              cl_event *event);

/*! clnorm_add_rmsnorm() :
 *  Fused residual add and RMSNorm, per row:
 *    h = x + residual, computed in float32 and rounded to dtype;
 *    residual = h, in the storage dtype, when update_residual is nonzero;
 *    y = h * (sum(h^2) / cols + eps)^(-1/2) * gamma.
 *  The rounded h is what gets normalised, so y is exactly clnorm_rmsnorm of the
 *  residual stream the next layer reads. Rows that fit in registers read x and
 *  residual once; longer rows read them again.
 *  Borrows: x, residual and y (views of dtype), gamma as for clnorm_rmsnorm, for the
 *           call. y may be exactly x; residual is written only when update_residual
 *           is nonzero.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for residual sharing any element with x or y
 *           (even exactly), gamma overlapping y, or gamma overlapping residual when
 *           update_residual is nonzero; eps and gamma as for clnorm_rmsnorm; and the
 *           common refusals above. */
CLNORM_API clnorm_status clnorm_add_rmsnorm(cl_command_queue queue, clnorm_dtype dtype,
                                            size_t rows, size_t cols, clnorm_matrix x,
                                            clnorm_matrix residual, int update_residual,
                                            cl_mem gamma, clnorm_matrix y, float eps,
                                            cl_uint num_wait, const cl_event *wait_list,
                                            cl_event *event);

/*! clnorm_stats_merge() :
 *  (m, l) of the union of two parts: m = max(ma, mb), l = e^(ma-m) la + e^(mb-m) lb.
 *  (-INFINITY, 0) is the identity, and a part whose maximum is -INFINITY is empty
 *  whatever its sum; a NaN in either input gives (NaN, NaN); two parts whose maximum
 *  is +INFINITY add their sums (the counts of their +inf entries).
 *  Borrows: m and l, written before return; they must not be NULL (where either is,
 *           nothing is written).
 *  Pure host function: no device, no state, never fails. */
CLNORM_API void clnorm_stats_merge(float ma, float la, float mb, float lb,
                                   float *m, float *l);

/* ---- Rows sharded by columns -----------------------------------------------------
   A row too long for one device, or a vocabulary split across devices, is held as
   column shards. Each shard's statistics come from clnorm_softmax_stats; merged, they
   give the whole row's (m, l); each shard is then written with those statistics. */

/*! clnorm_softmax_apply() :
 *  y = exp(x - row_max[r]) / row_sum[r] per row, with the statistics given.
 *  Special values as for clnorm_softmax given those statistics: (-inf, 0) gives
 *  zeros; a NaN statistic gives NaN; row_max = +inf gives 1/row_sum at the +inf
 *  entries and 0 elsewhere.
 *  Borrows: x and y (views of dtype; y may be exactly x), row_max and row_sum
 *           (float32 arrays of rows elements at offset 0), for the call.
 *  Returns: CLNORM_SUCCESS once enqueued; *event completes with the whole write.
 *  Refuses: CLNORM_INVALID_ARGUMENT for row_max or row_sum NULL or sharing a byte
 *           with y; CLNORM_OUT_OF_BOUNDS for statistics buffers smaller than rows
 *           floats; and the common refusals above. */
CLNORM_API clnorm_status clnorm_softmax_apply(cl_command_queue queue, clnorm_dtype dtype,
                                              size_t rows, size_t cols, clnorm_matrix x,
                                              cl_mem row_max, cl_mem row_sum,
                                              clnorm_matrix y, cl_uint num_wait,
                                              const cl_event *wait_list, cl_event *event);

/*! clnorm_stats_merge_rows() :
 *  On the device, per row: (a_max[r], a_sum[r]) <- clnorm_stats_merge of itself and
 *  (b_max[r], b_sum[r]).
 *  Borrows: four float32 arrays of rows elements at offset 0; a_max and a_sum are
 *           updated in place. b_max and b_sum may each be the very buffer a_max or
 *           a_sum (row r then reads what it is about to overwrite, not another row's
 *           result), so b may be exactly a.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for a NULL buffer, a_max sharing bytes with
 *           a_sum, or a b buffer sharing bytes with an a buffer without being that
 *           very buffer (a sub-buffer over it, say); CLNORM_OUT_OF_BOUNDS for
 *           a buffer smaller than rows floats; the queue, wait-list and environment
 *           refusals common to the device-buffer functions. */
CLNORM_API clnorm_status clnorm_stats_merge_rows(cl_command_queue queue, size_t rows,
                                                 cl_mem a_max, cl_mem a_sum,
                                                 cl_mem b_max, cl_mem b_sum,
                                                 cl_uint num_wait,
                                                 const cl_event *wait_list,
                                                 cl_event *event);

/* One column shard of the same rows: `cols` columns of x and y on `queue`. */
typedef struct clnorm_shard {
    cl_command_queue queue; size_t cols; clnorm_matrix x; clnorm_matrix y;
} clnorm_shard;

/*! clnorm_softmax_sharded() :
 *  Softmax over the columns of n shards concatenated in order, the shards on any mix
 *  of queues, devices and platforms: statistics on each device, merged on the host,
 *  then every shard written. Blocks until every shard is written.
 *  Borrows: shards (n of them) and their queues and buffers, for the call;
 *           row_max and row_sum: NULL, or host arrays of rows floats that receive the
 *           whole rows' statistics.
 *  Returns: CLNORM_SUCCESS once every shard is written.
 *  Refuses: CLNORM_INVALID_ARGUMENT for n == 0, shards NULL, a shard's queue NULL
 *           or cols 0, a shard's x and y overlapping other than exactly, or one
 *           shard's y sharing elements with another shard's x or y; each shard's
 *           views as clnorm_softmax checks them (CLNORM_OUT_OF_BOUNDS past their
 *           buffer); and the common refusals above. Every shard is checked, and
 *           every shard's write planned, before anything is enqueued: a refused
 *           request writes no shard. */
CLNORM_API clnorm_status clnorm_softmax_sharded(clnorm_dtype dtype, size_t rows, size_t n,
                                                const clnorm_shard *shards,
                                                float *row_max, float *row_sum);

/* ---- Attention ------------------------------------------------------------------
   Online softmax's purpose: the weighted sum of values without storing the scores. */

/* A 4-D view [batch][heads][len][dim]: element (b, h, t, d) is at index
   offset + b*stride_batch + h*stride_head + t*stride_len + d, in elements of the
   dtype (the dim stride is 1). Both [b][h][t][d] and [b][t][h][d] layouts of a KV
   cache are views of this kind. */
typedef struct clnorm_tensor {
    cl_mem mem; size_t offset; size_t stride_batch, stride_head, stride_len;
} clnorm_tensor;

typedef struct clnorm_attention_desc {
    size_t batch;
    size_t q_heads, kv_heads;  /* q_heads a multiple of kv_heads: query head h reads
                                  key/value head h / (q_heads / kv_heads)            */
    size_t q_len, kv_len;      /* queries per head; keys per head (the buffers' size) */
    size_t head_dim;           /* 1 .. 256 */
    float  scale;              /* score = scale * dot(q, k); 0 means 1/sqrt(head_dim) */
    int    causal;             /* nonzero: query t sees key j only where
                                  j <= t + (keys_b - q_len), keys_b the keys of its
                                  batch entry (the queries are the last q_len tokens) */
    cl_mem kv_lens;            /* NULL (every entry has kv_len keys) or `batch` int32
                                  at offset 0: keys_b of each entry, 0 .. kv_len      */
} clnorm_attention_desc;

/*! clnorm_attention() :
 *  out[b][h][t] = sum_j p_j v[b][h/g][j], p = softmax over the keys query t sees of
 *  scale * dot(q[b][h][t], k[b][h/g][j]), with g = q_heads / kv_heads. A query that
 *  sees no key gets zeros and lse = -inf; a NaN score makes that query's output and
 *  lse NaN; +inf scores share the weight as in softmax.
 *  Borrows: desc, for the call; q, k, v and out, 4-D views of dtype (q and out of
 *           batch x q_heads x q_len x head_dim, k and v of batch x kv_heads x kv_len
 *           x head_dim); lse: NULL, or float32 at offset 0 with batch*q_heads*q_len
 *           elements, element (b*q_heads + h)*q_len + t receiving m + log(l) of that
 *           query's scores.
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for; no query
 *           (batch, q_heads or q_len 0) enqueues nothing but the event.
 *  Refuses: CLNORM_INVALID_ARGUMENT for a NULL desc or buffer, q_heads or kv_heads
 *           0, q_heads not a multiple of kv_heads, head_dim outside 1..256, a scale
 *           that is not finite, q_heads, q_len, kv_len or q_heads x q_len past
 *           2^31 - 1, out's strides letting two elements meet, or out, lse or
 *           kv_lens sharing memory with a buffer the call reads or writes;
 *           CLNORM_OUT_OF_BOUNDS for a view past its buffer, or lse or kv_lens
 *           smaller than their elements; and the queue, dtype, wait-list and
 *           environment refusals common to the device-buffer functions. */
CLNORM_API clnorm_status clnorm_attention(cl_command_queue queue, clnorm_dtype dtype,
                                          const clnorm_attention_desc *desc,
                                          clnorm_tensor q, clnorm_tensor k,
                                          clnorm_tensor v, clnorm_tensor out, cl_mem lse,
                                          cl_uint num_wait, const cl_event *wait_list,
                                          cl_event *event);

/*! clnorm_attention_merge() :
 *  Attention over the union of two key sets from the results over each: per row
 *  (rows query rows of head_dim elements), lse = log(e^lse_a + e^lse_b) and
 *  out = e^(lse_a - lse) out_a + e^(lse_b - lse) out_b; both -inf gives zeros and
 *  -inf.
 *  Borrows: out_a, out_b, out (views of dtype; out may be exactly out_a); lse_a,
 *           lse_b, lse (float32 arrays of rows at offset 0; lse may be lse_a).
 *  Returns: CLNORM_SUCCESS once enqueued, and the event where asked for.
 *  Refuses: CLNORM_INVALID_ARGUMENT for head_dim 0 or past 2^31 - 1, a NULL
 *           array, out overlapping out_a (other than exactly) or out_b, lse
 *           sharing bytes with lse_a (other than being it), lse_b or any view, out
 *           sharing bytes with lse_a or lse_b; CLNORM_OUT_OF_BOUNDS for an array of
 *           fewer than rows floats; and the common refusals above, head_dim in the
 *           place of cols. */
CLNORM_API clnorm_status clnorm_attention_merge(cl_command_queue queue, clnorm_dtype dtype,
                                                size_t rows, size_t head_dim,
                                                clnorm_matrix out_a, cl_mem lse_a,
                                                clnorm_matrix out_b, cl_mem lse_b,
                                                clnorm_matrix out, cl_mem lse,
                                                cl_uint num_wait, const cl_event *wait_list,
                                                cl_event *event);

/* ---- Sessions and host arrays ---------------------------------------------------
   A session owns one context and one in-order queue on one device. Several threads
   may use one session at once; none may use it while it is destroyed. */

/*! clnorm_session_create() :
 *  Opens a context and an in-order queue (with profiling enabled) on the device that
 *  spec names. spec: NULL means the CLNORM_DEVICE environment variable, and where
 *  that is unset or empty the first GPU, else the first device. A spec is "P:D"
 *  (platform and device index, as `clnorm devices` lists them), "cpu" / "gpu" for
 *  the first device of that type, or else a case-insensitive substring of
 *  "<platform name> <platform vendor> <device name> <device vendor>"; the first
 *  device in `clnorm devices` order that matches is taken.
 *  Borrows: spec, for the call only.
 *  Returns: CLNORM_SUCCESS with the session in *out, to be freed with
 *           clnorm_session_destroy(); *out is NULL on failure.
 *  Refuses: CLNORM_INVALID_ARGUMENT for out NULL or a spec longer than 200
 *           characters; CLNORM_DEVICE_NOT_FOUND when no device matches, a "P:D"
 *           spec names no device, or no platform lists a device; OpenCL failures
 *           creating the context or queue as CLNORM_OUT_OF_RESOURCES or
 *           CLNORM_OPENCL_ERROR. */
typedef struct clnorm_session clnorm_session;
CLNORM_API clnorm_status clnorm_session_create(const char *spec, clnorm_session **out);

/*! clnorm_session_destroy() :
 *  Waits for the session's queue to finish, then releases the queue, the cached
 *  kernels of its context and the context. Buffers the caller made in that context
 *  stay the caller's. NULL is a no-op. Must not race with calls that use s, its
 *  queue or its context. */
CLNORM_API void clnorm_session_destroy(clnorm_session *s);

/*! clnorm_session_context(), clnorm_session_queue(), clnorm_session_device_name() :
 *  @return borrowed handles of the session, valid until clnorm_session_destroy()
 *          (retain the context or queue to keep it longer). The queue may carry the
 *          caller's own commands and the device-buffer functions. Given NULL they
 *          return NULL, NULL and "". */
CLNORM_API cl_context       clnorm_session_context(const clnorm_session *s);
CLNORM_API cl_command_queue clnorm_session_queue(const clnorm_session *s);
CLNORM_API const char      *clnorm_session_device_name(const clnorm_session *s);

/* Host arrays: packed row-major host memory of the dtype (rows * cols elements for
   x, y and residual; cols for gamma, or NULL for no scale; rows floats for row_max
   and row_sum). Each call borrows its arrays for the call only, copies them into
   device buffers of the session's context, runs the device-buffer function on the
   session's queue and blocks until the result is in the output arrays. y may equal
   x (in place). rows == 0 returns CLNORM_SUCCESS without reading or writing any
   array, after the same argument and environment checks as with rows.
   Refusals common to them: CLNORM_INVALID_ARGUMENT for s NULL, a dtype outside its
   enum, cols == 0, rows * cols overflowing size_t, or an array NULL where rows > 0
   (gamma may be NULL), or two arrays that both receive results sharing memory
   (residual and y, row_max and row_sum); CLNORM_OUT_OF_RESOURCES when a buffer
   cannot be made (an array past the device's largest allocation included); and the
   refusals and failures of the device-buffer function. */

/*! clnorm_rmsnorm_host() : clnorm_rmsnorm on host arrays.
 *  Refuses, beyond the common refusals: eps as clnorm_rmsnorm does. */
CLNORM_API clnorm_status clnorm_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype,
                                             size_t rows, size_t cols, const void *x,
                                             const void *gamma, void *y, float eps);
/*! clnorm_softmax_host() : clnorm_softmax on host arrays.
 *  Refuses, beyond the common refusals: algo as clnorm_softmax does. */
CLNORM_API clnorm_status clnorm_softmax_host(clnorm_session *s, clnorm_dtype dtype,
                                             size_t rows, size_t cols, const void *x,
                                             void *y, clnorm_softmax_algo algo);
/*! clnorm_softmax_stats_host() : clnorm_softmax_stats on host arrays; row_max and
 *  row_sum receive rows floats each. */
CLNORM_API clnorm_status clnorm_softmax_stats_host(clnorm_session *s, clnorm_dtype dtype,
                                                   size_t rows, size_t cols,
                                                   const void *x, float *row_max,
                                                   float *row_sum);

/*! clnorm_softmax_apply_host() : clnorm_softmax_apply on host arrays: x and y of
 *  rows * cols elements, row_max and row_sum of rows floats (read only), for a
 *  column shard written with the whole rows' statistics. */
CLNORM_API clnorm_status clnorm_softmax_apply_host(clnorm_session *s, clnorm_dtype dtype,
                                                   size_t rows, size_t cols,
                                                   const void *x, const float *row_max,
                                                   const float *row_sum, void *y);

/*! clnorm_add_rmsnorm_host() : the fused add of clnorm_add_rmsnorm on host arrays.
 *  residual is read, and updated in place with h when update_residual is nonzero;
 *  it must not share memory with y. Refuses, beyond the common refusals: eps as
 *  clnorm_rmsnorm does. */
CLNORM_API clnorm_status clnorm_add_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype,
                                                 size_t rows, size_t cols, const void *x,
                                                 void *residual, int update_residual,
                                                 const void *gamma, void *y, float eps);

/* ---- Kernel cache --------------------------------------------------------------- */

/*! clnorm_warmup() :
 *  Build now every program this queue's device will need, instead of at first use.
 *  Borrows: queue, for the call; the cache retains its context afterwards.
 *  Returns: CLNORM_SUCCESS once the programs are built.
 *  Refuses: CLNORM_INVALID_ARGUMENT for a NULL or invalid queue or a bad CLNORM_*
 *           environment value; the statuses of a build (CLNORM_BUILD_FAILED with the
 *           log in clnorm_last_error, CLNORM_OUT_OF_RESOURCES, CLNORM_OPENCL_ERROR). */
CLNORM_API clnorm_status clnorm_warmup(cl_command_queue queue);

/*! clnorm_release_cache() :
 *  Drop cached programs and kernels of one context (NULL: of all contexts), the
 *  pooled scratch buffers, and the cache's reference to that context. Programs
 *  whose first run has completed and that wait for the disk cache are stored
 *  first. May be called from any thread at any time, also while other threads run
 *  operations on that context: calls in flight finish on the programs, kernels and
 *  buffers they hold, which are freed when the last of them is done; later calls
 *  build or load what they need again. */
CLNORM_API void clnorm_release_cache(cl_context context);

#ifdef __cplusplus
}
#endif
#endif /* CLNORM_H */
