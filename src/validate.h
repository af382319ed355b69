/* Argument checks of the entry points: every refusal names the offending value
   (validate.c). */
#ifndef CLNORM_VALIDATE_H
#define CLNORM_VALIDATE_H

#include "types.h"

/* INVALID_ARGUMENT, naming the value, unless dtype is a clnorm_dtype. */
CLN_HIDDEN clnorm_status cln_check_dtype(clnorm_dtype dtype);
/* INVALID_ARGUMENT, naming eps, unless eps is finite and not negative. */
CLN_HIDDEN clnorm_status cln_check_eps(float eps);
/* Checks the queue, returns its context and device, and refuses a bad CLNORM_*
   environment value (cln_config_check). */
CLN_HIDDEN clnorm_status cln_check_queue(cl_command_queue q, cl_context *ctx,
                                         cl_device_id *dev);
/* The wait list: num_wait and the list agree, no entry is NULL, and every event is
   valid and of the queue's context ctx (a driver may otherwise take one of another
   context, or fail only at the enqueue). */
CLN_HIDDEN clnorm_status cln_check_waits(cl_context ctx, cl_uint n, const cl_event *list);
/* What every device-buffer operation checks first: the queue (filling ctx and dev),
   the dtype, cols > 0 and the wait list. */
CLN_HIDDEN clnorm_status cln_check_common(cl_command_queue q, clnorm_dtype dtype, size_t cols,
                                          cl_uint num_wait, const cl_event *wait_list,
                                          cl_context *ctx, cl_device_id *dev);
/* Checks view `name` of rows x cols elements of esize bytes against its buffer;
   resolves ld == 0. */
CLN_HIDDEN clnorm_status cln_check_view(const char *name, cl_context ctx,
                                        clnorm_matrix *v, size_t rows, size_t cols,
                                        size_t esize);
/* Checks a plain array of n elements at offset 0 of mem. */
CLN_HIDDEN clnorm_status cln_check_array(const char *name, cl_context ctx, cl_mem mem,
                                         size_t n, size_t esize);
/* Refuses partial overlap of two views (both already checked); 1 in *same when they
   are exactly the same view. */
CLN_HIDDEN clnorm_status cln_check_overlap(const char *a_name, const clnorm_matrix *a,
                                           const char *b_name, const clnorm_matrix *b,
                                           size_t rows, size_t cols, size_t esize,
                                           int *same);

/* Whether two views of rows rows each share a byte: view a covers [a0 + i * ald,
   a0 + i * ald + alen) for i < rows, b likewise; lengths at most their strides. A
   pure function of its numbers, in O(rows) only where the strides differ. */
CLN_HIDDEN int cln_strided_meet(size_t a0, size_t ald, size_t alen, size_t b0, size_t bld,
                                size_t blen, size_t rows);
/* Whether two checked views of rows rows share an element, sub-buffers resolved to
   the buffer they live in. */
CLN_HIDDEN int cln_views_meet(const clnorm_matrix *a, size_t acols, const clnorm_matrix *b,
                              size_t bcols, size_t rows, size_t esize);

/* Refuses two byte ranges [off, off+len) that share memory. */
CLN_HIDDEN clnorm_status cln_check_disjoint(const char *a_name, cl_mem a, size_t a_off,
                                            size_t a_len, const char *b_name, cl_mem b,
                                            size_t b_off, size_t b_len);
/* Bytes from a checked view's first element to its last. */
CLN_HIDDEN size_t cln_view_bytes(const clnorm_matrix *v, size_t rows, size_t cols,
                                 size_t esize);

/* Checks 4-D view `name` of dims (batch, heads, len, head_dim) against its buffer:
   the largest index it reaches must be in bounds. *first: the byte offset of its
   first element; *span: bytes from there to its last (0 for an empty view). */
CLN_HIDDEN clnorm_status cln_check_tensor(const char *name, cl_context ctx,
                                          const clnorm_tensor *t, const size_t dims[4],
                                          size_t esize, size_t *first, size_t *span);
/* Refuses a view (already checked) whose strides give two elements one index, for
   an output. */
CLN_HIDDEN clnorm_status cln_check_tensor_distinct(const char *name, const clnorm_tensor *t,
                                                   const size_t dims[4]);

#endif
