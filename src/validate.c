/* Argument validation: every refusal names the offending value. Nothing here
   enqueues work or touches a buffer's contents. */
#include "validate.h"
#include "config.h"
#include "status.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

clnorm_status cln_check_dtype(clnorm_dtype dtype)
{
    if (dtype != CLNORM_F32 && dtype != CLNORM_F16 && dtype != CLNORM_BF16)
        return cln_fail(CLNORM_INVALID_ARGUMENT,
                        "dtype = %d is not CLNORM_F32 (0), CLNORM_F16 (1) or CLNORM_BF16 (2)",
                        (int)dtype);
    return CLNORM_SUCCESS;
}

clnorm_status cln_check_eps(float eps)
{
    if (!(eps >= 0.0f) || isinf(eps))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "eps = %g is negative or not finite", (double)eps);
    return CLNORM_SUCCESS;
}

clnorm_status cln_check_queue(cl_command_queue q, cl_context *ctx, cl_device_id *dev)
{
    if (!q) return cln_fail(CLNORM_INVALID_ARGUMENT, "queue is NULL");
    cl_int err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof *ctx, ctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof *dev, dev, NULL);
    if (err != CL_SUCCESS)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "queue %p is not a valid command queue: %s",
                        (void *)q, cln_cl_error_name(err));
    /* Every device-buffer entry point starts here, so a bad CLNORM_* value refuses each
       of them, on no rows as on any. */
    return cln_config_check();
}

/* Validation common to every operation; fills ctx and dev. */
clnorm_status cln_check_common(cl_command_queue q, clnorm_dtype dtype, size_t cols,
                               cl_uint num_wait, const cl_event *wait_list, cl_context *ctx,
                               cl_device_id *dev)
{
    clnorm_status st = cln_check_queue(q, ctx, dev);
    if (!st) st = cln_check_dtype(dtype);
    if (!st && cols == 0) st = cln_fail(CLNORM_INVALID_ARGUMENT, "cols is 0");
    if (!st) st = cln_check_waits(*ctx, num_wait, wait_list);
    return st;
}

clnorm_status cln_check_waits(cl_context ctx, cl_uint n, const cl_event *list)
{
    if (n > 0 && !list)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "num_wait is %u but wait_list is NULL", n);
    if (n == 0 && list)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "wait_list is not NULL but num_wait is 0");
    for (cl_uint i = 0; i < n; i++) {
        if (!list[i]) return cln_fail(CLNORM_INVALID_ARGUMENT, "wait_list[%u] is NULL", i);
        cl_context ectx = NULL;
        cl_int err = clGetEventInfo(list[i], CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
        if (err != CL_SUCCESS)
            return cln_fail(CLNORM_INVALID_ARGUMENT, "wait_list[%u] (%p) is not a valid "
                            "cl_event: %s", i, (void *)list[i], cln_cl_error_name(err));
        if (ectx != ctx)
            return cln_fail(CLNORM_INVALID_ARGUMENT, "wait_list[%u] (%p) belongs to another "
                            "context than the queue's", i, (void *)list[i]);
    }
    return CLNORM_SUCCESS;
}

/* Size and context of a buffer, or a refusal naming it. */
static clnorm_status cln_mem_info(const char *name, cl_context ctx, cl_mem mem, size_t *size)
{
    if (!mem) return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL", name);
    cl_mem_object_type type = 0;
    cl_context mctx = NULL;
    cl_int err = clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof type, &type, NULL);
    if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof *size, size, NULL);
    if (err == CL_SUCCESS) err = clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof mctx, &mctx, NULL);
    if (err != CL_SUCCESS)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s (%p) is not a valid cl_mem: %s", name,
                        (void *)mem, cln_cl_error_name(err));
    if (type != CL_MEM_OBJECT_BUFFER)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is not a buffer (cl_mem_object_type 0x%x)",
                        name, (unsigned)type);
    if (mctx != ctx)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s belongs to another context than the queue",
                        name);
    return CLNORM_SUCCESS;
}

/* Elements a view spans, offset + (rows-1)*ld + cols, or 0 on size_t overflow. */
static size_t cln_view_end(size_t offset, size_t rows, size_t cols, size_t ld)
{
    size_t span;
    if (rows == 0) return offset;
    if (__builtin_mul_overflow(rows - 1, ld, &span)) return 0;
    if (__builtin_add_overflow(span, cols, &span)) return 0;
    if (__builtin_add_overflow(span, offset, &span)) return 0;
    return span;
}

clnorm_status cln_check_view(const char *name, cl_context ctx, clnorm_matrix *v, size_t rows,
                             size_t cols, size_t esize)
{
    char mname[64];
    snprintf(mname, sizeof mname, "%s.mem", name);
    size_t size = 0;
    clnorm_status st = cln_mem_info(mname, ctx, v->mem, &size);
    if (st) return st;
    if (v->ld == 0) v->ld = cols;
    if (v->ld < cols)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.ld = %zu is less than cols = %zu", name,
                        v->ld, cols);
    if (rows == 0) return CLNORM_SUCCESS;
    size_t end = cln_view_end(v->offset, rows, cols, v->ld), bytes;
    if (end == 0 || __builtin_mul_overflow(end, esize, &bytes))
        return cln_fail(CLNORM_OUT_OF_BOUNDS,
                        "%s: offset %zu + (rows %zu - 1) * ld %zu + cols %zu overflows size_t",
                        name, v->offset, rows, v->ld, cols);
    if (bytes > size)
        return cln_fail(CLNORM_OUT_OF_BOUNDS,
                        "%s: the view reaches element %zu (offset %zu + (rows %zu - 1) * ld %zu "
                        "+ cols %zu) but %s holds %zu elements of %zu bytes",
                        name, end, v->offset, rows, v->ld, cols, mname, size / esize, esize);
    return CLNORM_SUCCESS;
}

clnorm_status cln_check_array(const char *name, cl_context ctx, cl_mem mem, size_t n,
                              size_t esize)
{
    size_t size = 0, bytes;
    clnorm_status st = cln_mem_info(name, ctx, mem, &size);
    if (st) return st;
    if (__builtin_mul_overflow(n, esize, &bytes) || bytes > size)
        return cln_fail(CLNORM_OUT_OF_BOUNDS, "%s holds %zu bytes but needs %zu elements of %zu "
                        "bytes", name, size, n, esize);
    return CLNORM_SUCCESS;
}

/* The buffer a cl_mem lives in and its byte offset there, so that two sub-buffers
   of one buffer are compared as what they are. */
static void cln_mem_base(cl_mem m, cl_mem *base, size_t *off)
{
    cl_mem parent = NULL;
    size_t o = 0;
    *base = m;
    *off = 0;
    if (clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL) ==
            CL_SUCCESS && parent &&
        clGetMemObjectInfo(m, CL_MEM_OFFSET, sizeof o, &o, NULL) == CL_SUCCESS) {
        *base = parent;
        *off = o;
    }
}

/* The first row of a view (start s, stride ld, length len, rows rows) that ends
   past byte p, or rows where none does. */
static size_t cln_first_row_past(size_t s, size_t ld, size_t len, size_t rows, size_t p)
{
    if (s + len > p) return 0;
    /* Row j ends past p where s + j * ld + len > p, j > (p - s - len) / ld. */
    const size_t j = (p - s - len) / ld + 1;
    return j < rows ? j : rows;
}

int cln_strided_meet(size_t a0, size_t ald, size_t alen, size_t b0, size_t bld, size_t blen,
                     size_t rows)
{
    if (rows == 0 || alen == 0 || blen == 0) return 0;
    if (ald == 0) ald = alen;
    if (bld == 0) bld = blen;
    const size_t a1 = a0 + (rows - 1) * ald + alen, b1 = b0 + (rows - 1) * bld + blen;
    if (a1 <= b0 || b1 <= a0) return 0;
    if (ald == bld) {
        /* One stride: the rows keep one distance apart modulo it. */
        const size_t d = (a0 > b0 ? a0 - b0 : b0 - a0) % ald;
        const size_t first = a0 > b0 ? blen : alen, second = a0 > b0 ? alen : blen;
        /* Each of the later view's rows starts d past one of the earlier's rows, and
           meets it or the next (which exists wherever the spans cross). */
        return d < first || d + second > ald;
    }
    /* Row i of a against the one row of b that could meet it: the first ending past
       its start (b's rows are in order and do not overlap one another). */
    for (size_t i = 0; i < rows; i++) {
        const size_t s = a0 + i * ald;
        if (s >= b1) break;
        const size_t j = cln_first_row_past(b0, bld, blen, rows, s);
        if (j < rows && b0 + j * bld < s + alen) return 1;
    }
    return 0;
}

/* A checked view's buffer (a sub-buffer resolved to its parent) and, in *first, the
   byte there of its first element; both views were checked, so nothing overflows. */
static cl_mem cln_view_base(const clnorm_matrix *v, size_t esize, size_t *first)
{
    cl_mem base;
    size_t off;
    cln_mem_base(v->mem, &base, &off);
    *first = off + v->offset * esize;
    return base;
}

int cln_views_meet(const clnorm_matrix *a, size_t acols, const clnorm_matrix *b, size_t bcols,
                   size_t rows, size_t esize)
{
    size_t a0, b0;
    if (cln_view_base(a, esize, &a0) != cln_view_base(b, esize, &b0)) return 0;
    return cln_strided_meet(a0, a->ld * esize, acols * esize, b0, b->ld * esize,
                            bcols * esize, rows);
}

clnorm_status cln_check_overlap(const char *a_name, const clnorm_matrix *a, const char *b_name,
                                const clnorm_matrix *b, size_t rows, size_t cols, size_t esize,
                                int *same)
{
    size_t a0, b0;
    *same = 0;
    if (rows == 0) return CLNORM_SUCCESS;
    if (cln_view_base(a, esize, &a0) != cln_view_base(b, esize, &b0)) return CLNORM_SUCCESS;
    if (a0 == b0 && a->ld == b->ld) { *same = 1; return CLNORM_SUCCESS; }
    /* Rows may interleave without sharing an element, at one stride or two. */
    if (!cln_strided_meet(a0, a->ld * esize, cols * esize, b0, b->ld * esize, cols * esize,
                          rows))
        return CLNORM_SUCCESS;
    return cln_fail(CLNORM_INVALID_ARGUMENT,
                    "%s (offset %zu, ld %zu) and %s (offset %zu, ld %zu) overlap partially in "
                    "one buffer; only the exact same view (in place) is allowed",
                    a_name, a->offset, a->ld, b_name, b->offset, b->ld);
}

clnorm_status cln_check_disjoint(const char *a_name, cl_mem a, size_t a_off, size_t a_len,
                                 const char *b_name, cl_mem b, size_t b_off, size_t b_len)
{
    cl_mem abase, bbase;
    size_t ao, bo;
    cln_mem_base(a, &abase, &ao);
    cln_mem_base(b, &bbase, &bo);
    if (abase != bbase || a_len == 0 || b_len == 0) return CLNORM_SUCCESS;
    size_t a0 = ao + a_off, b0 = bo + b_off;
    if (a0 + a_len <= b0 || b0 + b_len <= a0) return CLNORM_SUCCESS;
    return cln_fail(CLNORM_INVALID_ARGUMENT,
                    "%s (bytes %zu..%zu) and %s (bytes %zu..%zu) overlap in one buffer", a_name,
                    a0, a0 + a_len, b_name, b0, b0 + b_len);
}

size_t cln_view_bytes(const clnorm_matrix *v, size_t rows, size_t cols, size_t esize)
{
    return rows ? ((rows - 1) * v->ld + cols) * esize : 0;
}

clnorm_status cln_check_tensor(const char *name, cl_context ctx, const clnorm_tensor *t,
                               const size_t dims[4], size_t esize, size_t *first,
                               size_t *span)
{
    char mname[64];
    snprintf(mname, sizeof mname, "%s.mem", name);
    size_t size = 0;
    clnorm_status st = cln_mem_info(mname, ctx, t->mem, &size);
    if (st) return st;
    *first = t->offset * esize;
    *span = 0;
    if (!dims[0] || !dims[1] || !dims[2] || !dims[3]) return CLNORM_SUCCESS;
    /* The largest index reached: offset + sum over the dims of (n - 1) * stride. */
    const size_t strides[3] = {t->stride_batch, t->stride_head, t->stride_len};
    size_t end = t->offset, term, bytes;
    int over = __builtin_add_overflow(end, dims[3] - 1, &end);
    for (int i = 0; i < 3; i++)
        over |= __builtin_mul_overflow(dims[i] - 1, strides[i], &term) ||
                __builtin_add_overflow(end, term, &end);
    if (over || __builtin_add_overflow(end, 1, &end) || __builtin_mul_overflow(end, esize, &bytes))
        return cln_fail(CLNORM_OUT_OF_BOUNDS, "%s: offset %zu with strides (%zu, %zu, %zu) over "
                        "%zu x %zu x %zu x %zu overflows size_t", name, t->offset, strides[0],
                        strides[1], strides[2], dims[0], dims[1], dims[2], dims[3]);
    if (bytes > size)
        return cln_fail(CLNORM_OUT_OF_BOUNDS,
                        "%s: the view reaches element %zu (offset %zu, strides batch %zu, head "
                        "%zu, len %zu over %zu x %zu x %zu x %zu) but %s holds %zu elements of "
                        "%zu bytes", name, end - 1, t->offset, strides[0], strides[1],
                        strides[2], dims[0], dims[1], dims[2], dims[3], mname, size / esize,
                        esize);
    *span = bytes - *first;
    return CLNORM_SUCCESS;
}

clnorm_status cln_check_tensor_distinct(const char *name, const clnorm_tensor *t,
                                        const size_t dims[4])
{
    /* The dims of more than one element, innermost first: each stride must pass
       everything the dims inside it reach, so that no two elements share an index. */
    size_t n[3], s[3], k = 0;
    const size_t strides[3] = {t->stride_batch, t->stride_head, t->stride_len};
    static const char *const names[3] = {"stride_batch", "stride_head", "stride_len"};
    size_t which[3];
    for (int i = 0; i < 3; i++)
        if (dims[i] > 1) {
            n[k] = dims[i];
            s[k] = strides[i];
            which[k++] = (size_t)i;
        }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && s[j] < s[j - 1]; j--) {
            size_t tn = n[j], ts = s[j], tw = which[j];
            n[j] = n[j - 1], s[j] = s[j - 1], which[j] = which[j - 1];
            n[j - 1] = tn, s[j - 1] = ts, which[j - 1] = tw;
        }
    size_t reach = dims[3]; /* elements past the first that the inner dims span, plus one */
    for (size_t i = 0; i < k; i++) {
        if (s[i] < reach)
            return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.%s = %zu makes elements of the view "
                            "share memory (the dims inside it span %zu elements)", name,
                            names[which[i]], s[i], reach);
        reach = (n[i] - 1) * s[i] + reach; /* the view was checked: no overflow */
    }
    return CLNORM_SUCCESS;
}
