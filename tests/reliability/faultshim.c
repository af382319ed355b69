/* clnorm_faultshim: an LD_PRELOAD layer over the OpenCL entry points clnorm calls. It
   forwards every call to the real one (dlsym(RTLD_NEXT)), counts the calls and the
   live references of each object type the caller holds (creates and retains minus
   releases), and makes the Nth call of one chosen function fail with a chosen error,
   without calling the real function.

   Arming: from the program through the functions below (found with dlsym, so a
   program runs unchanged without the shim), or for any program with
     CLNORM_FAULT=<function>:<n>[:<error code>]     e.g. clBuildProgram:1:-11
   n < 0 fails every call from then on. */
#define _GNU_SOURCE
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_API __attribute__((visibility("default")))

/* Object types whose references are counted. */
enum { SHIM_CONTEXT, SHIM_QUEUE, SHIM_PROGRAM, SHIM_KERNEL, SHIM_MEM, SHIM_EVENT, SHIM_NTYPES };

/* Functions that can be made to fail. */
#define SHIM_FAILABLE(X)                                                              \
    X(clCreateContext) X(clCreateCommandQueue) X(clCreateProgramWithSource)           \
    X(clBuildProgram) X(clCreateKernel) X(clCreateBuffer) X(clSetKernelArg)           \
    X(clGetKernelWorkGroupInfo) X(clEnqueueNDRangeKernel) X(clEnqueueReadBuffer)      \
    X(clEnqueueMarkerWithWaitList)
#define SHIM_ENUM_(f) SHIM_F_##f,
enum { SHIM_FAILABLE(SHIM_ENUM_) SHIM_NFUNCS };
#define SHIM_NAME_(f) #f,
static const char *const shim_names[SHIM_NFUNCS] = {SHIM_FAILABLE(SHIM_NAME_)};

static atomic_long shim_calls[SHIM_NFUNCS];
static atomic_long shim_live[SHIM_NTYPES];
static atomic_long shim_fired;
static pthread_mutex_t shim_lock = PTHREAD_MUTEX_INITIALIZER;
static int shim_armed_fn = -1;  /* function to fail, -1: none */
static long shim_nth;           /* which call (1-based) since arming; < 0: every call */
static long shim_seen;          /* calls of the armed function since arming */
static cl_int shim_err;

static int shim_index(const char *fn)
{
    for (int i = 0; i < SHIM_NFUNCS; i++)
        if (!strcmp(fn, shim_names[i])) return i;
    return -1;
}

/* ---- control (for programs; dlsym(RTLD_DEFAULT, ...)) -------------------------------- */
SHIM_API int clnorm_fault_arm(const char *fn, long nth, cl_int err);
SHIM_API long clnorm_fault_calls(const char *fn);
SHIM_API void clnorm_fault_reset_calls(void);
SHIM_API void clnorm_fault_live(long out[6]);
SHIM_API long clnorm_fault_fired(void);
SHIM_API const char *clnorm_fault_function(int i);

/* Fails call nth (1-based, counted from now) of fn with err; fn NULL disarms. Returns
   0, or -1 for a function the shim does not know. */
SHIM_API int clnorm_fault_arm(const char *fn, long nth, cl_int err)
{
    int i = fn ? shim_index(fn) : -1;
    if (fn && i < 0) return -1;
    pthread_mutex_lock(&shim_lock);
    shim_armed_fn = i;
    shim_nth = nth;
    shim_seen = 0;
    shim_err = err;
    pthread_mutex_unlock(&shim_lock);
    return 0;
}

SHIM_API long clnorm_fault_calls(const char *fn)
{
    int i = shim_index(fn);
    return i < 0 ? -1 : atomic_load(&shim_calls[i]);
}

SHIM_API void clnorm_fault_reset_calls(void)
{
    for (int i = 0; i < SHIM_NFUNCS; i++) atomic_store(&shim_calls[i], 0);
}

/* Live references of each type (context, queue, program, kernel, mem, event). */
SHIM_API void clnorm_fault_live(long out[6])
{
    for (int i = 0; i < SHIM_NTYPES; i++) out[i] = atomic_load(&shim_live[i]);
}

SHIM_API long clnorm_fault_fired(void) { return atomic_load(&shim_fired); }

SHIM_API const char *clnorm_fault_function(int i)
{
    return i >= 0 && i < SHIM_NFUNCS ? shim_names[i] : NULL;
}

__attribute__((constructor)) static void shim_from_env(void)
{
    const char *e = getenv("CLNORM_FAULT");
    if (!e || !*e) return;
    char fn[64];
    long nth = 1;
    int err = CL_OUT_OF_RESOURCES;
    const char *c = strchr(e, ':');
    size_t n = c ? (size_t)(c - e) : strlen(e);
    if (n >= sizeof fn) return;
    memcpy(fn, e, n);
    fn[n] = '\0';
    if (c) sscanf(c + 1, "%ld:%d", &nth, &err);
    if (clnorm_fault_arm(fn, nth, err) != 0)
        fprintf(stderr, "clnorm_faultshim: CLNORM_FAULT names unknown function \"%s\"\n", fn);
}

/* 1 (and the error in *err) when this call of function i is the one to fail. */
static int shim_should_fail(int i, cl_int *err)
{
    atomic_fetch_add(&shim_calls[i], 1);
    int fail = 0;
    pthread_mutex_lock(&shim_lock);
    if (shim_armed_fn == i) {
        shim_seen++;
        if (shim_nth < 0 || shim_seen == shim_nth) {
            fail = 1;
            *err = shim_err;
        }
    }
    pthread_mutex_unlock(&shim_lock);
    if (fail) atomic_fetch_add(&shim_fired, 1);
    return fail;
}

static void *shim_real(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "clnorm_faultshim: no next definition of %s\n", name);
        abort();
    }
    return p;
}

#define REAL(name)                                                                    \
    static __typeof__(&name) real_;                                                   \
    if (!real_) real_ = (__typeof__(&name))shim_real(#name)

#define LIVE(t, d) atomic_fetch_add(&shim_live[t], (d))

/* ---- creation: may fail ------------------------------------------------------------ */
SHIM_API cl_context clCreateContext(const cl_context_properties *props, cl_uint n,
                                    const cl_device_id *devs,
                                    void(CL_CALLBACK *notify)(const char *, const void *,
                                                              size_t, void *),
                                    void *user, cl_int *errcode_ret)
{
    REAL(clCreateContext);
    cl_int e;
    if (shim_should_fail(SHIM_F_clCreateContext, &e)) {
        if (errcode_ret) *errcode_ret = e;
        return NULL;
    }
    cl_context r = real_(props, n, devs, notify, user, errcode_ret);
    if (r) LIVE(SHIM_CONTEXT, 1);
    return r;
}

SHIM_API cl_command_queue clCreateCommandQueue(cl_context ctx, cl_device_id dev,
                                               cl_command_queue_properties props,
                                               cl_int *errcode_ret)
{
    REAL(clCreateCommandQueue);
    cl_int e;
    if (shim_should_fail(SHIM_F_clCreateCommandQueue, &e)) {
        if (errcode_ret) *errcode_ret = e;
        return NULL;
    }
    cl_command_queue r = real_(ctx, dev, props, errcode_ret);
    if (r) LIVE(SHIM_QUEUE, 1);
    return r;
}

SHIM_API cl_program clCreateProgramWithSource(cl_context ctx, cl_uint count,
                                              const char **strings, const size_t *lengths,
                                              cl_int *errcode_ret)
{
    REAL(clCreateProgramWithSource);
    cl_int e;
    if (shim_should_fail(SHIM_F_clCreateProgramWithSource, &e)) {
        if (errcode_ret) *errcode_ret = e;
        return NULL;
    }
    cl_program r = real_(ctx, count, strings, lengths, errcode_ret);
    if (r) LIVE(SHIM_PROGRAM, 1);
    return r;
}

SHIM_API cl_program clCreateProgramWithBinary(cl_context ctx, cl_uint n,
                                              const cl_device_id *devs, const size_t *lengths,
                                              const unsigned char **bins, cl_int *status,
                                              cl_int *errcode_ret)
{
    REAL(clCreateProgramWithBinary);
    cl_program r = real_(ctx, n, devs, lengths, bins, status, errcode_ret);
    if (r) LIVE(SHIM_PROGRAM, 1);
    return r;
}

SHIM_API cl_int clBuildProgram(cl_program prog, cl_uint n, const cl_device_id *devs,
                               const char *options,
                               void(CL_CALLBACK *notify)(cl_program, void *), void *user)
{
    REAL(clBuildProgram);
    cl_int e;
    if (shim_should_fail(SHIM_F_clBuildProgram, &e)) return e;
    return real_(prog, n, devs, options, notify, user);
}

SHIM_API cl_kernel clCreateKernel(cl_program prog, const char *name, cl_int *errcode_ret)
{
    REAL(clCreateKernel);
    cl_int e;
    if (shim_should_fail(SHIM_F_clCreateKernel, &e)) {
        if (errcode_ret) *errcode_ret = e;
        return NULL;
    }
    cl_kernel r = real_(prog, name, errcode_ret);
    if (r) LIVE(SHIM_KERNEL, 1);
    return r;
}

SHIM_API cl_mem clCreateBuffer(cl_context ctx, cl_mem_flags flags, size_t size, void *host,
                               cl_int *errcode_ret)
{
    REAL(clCreateBuffer);
    cl_int e;
    if (shim_should_fail(SHIM_F_clCreateBuffer, &e)) {
        if (errcode_ret) *errcode_ret = e;
        return NULL;
    }
    cl_mem r = real_(ctx, flags, size, host, errcode_ret);
    if (r) LIVE(SHIM_MEM, 1);
    return r;
}

SHIM_API cl_mem clCreateSubBuffer(cl_mem buf, cl_mem_flags flags, cl_buffer_create_type type,
                                  const void *info, cl_int *errcode_ret)
{
    REAL(clCreateSubBuffer);
    cl_mem r = real_(buf, flags, type, info, errcode_ret);
    if (r) LIVE(SHIM_MEM, 1);
    return r;
}

/* ---- calls that may fail ------------------------------------------------------------ */
SHIM_API cl_int clSetKernelArg(cl_kernel k, cl_uint idx, size_t size, const void *value)
{
    REAL(clSetKernelArg);
    cl_int e;
    if (shim_should_fail(SHIM_F_clSetKernelArg, &e)) return e;
    return real_(k, idx, size, value);
}

SHIM_API cl_int clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id dev,
                                         cl_kernel_work_group_info name, size_t size,
                                         void *value, size_t *size_ret)
{
    REAL(clGetKernelWorkGroupInfo);
    cl_int e;
    if (shim_should_fail(SHIM_F_clGetKernelWorkGroupInfo, &e)) return e;
    return real_(k, dev, name, size, value, size_ret);
}

SHIM_API cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim,
                                       const size_t *offset, const size_t *global,
                                       const size_t *local, cl_uint nwait,
                                       const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueNDRangeKernel);
    cl_int e;
    if (shim_should_fail(SHIM_F_clEnqueueNDRangeKernel, &e)) return e;
    cl_int r = real_(q, k, dim, offset, global, local, nwait, wait, event);
    if (r == CL_SUCCESS && event) LIVE(SHIM_EVENT, 1);
    return r;
}

SHIM_API cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                    size_t off, size_t size, void *ptr, cl_uint nwait,
                                    const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueReadBuffer);
    cl_int e;
    if (shim_should_fail(SHIM_F_clEnqueueReadBuffer, &e)) return e;
    cl_int r = real_(q, m, blocking, off, size, ptr, nwait, wait, event);
    if (r == CL_SUCCESS && event) LIVE(SHIM_EVENT, 1);
    return r;
}

SHIM_API cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nwait,
                                            const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueMarkerWithWaitList);
    cl_int e;
    if (shim_should_fail(SHIM_F_clEnqueueMarkerWithWaitList, &e)) return e;
    cl_int r = real_(q, nwait, wait, event);
    if (r == CL_SUCCESS && event) LIVE(SHIM_EVENT, 1);
    return r;
}

SHIM_API cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                     size_t off, size_t size, const void *ptr, cl_uint nwait,
                                     const cl_event *wait, cl_event *event)
{
    REAL(clEnqueueWriteBuffer);
    cl_int r = real_(q, m, blocking, off, size, ptr, nwait, wait, event);
    if (r == CL_SUCCESS && event) LIVE(SHIM_EVENT, 1);
    return r;
}

/* ---- references ---------------------------------------------------------------------- */
#define SHIM_REFCOUNT(type, T, retain, release)                                       \
    SHIM_API cl_int retain(T o)                                                       \
    {                                                                                 \
        REAL(retain);                                                                 \
        cl_int r = real_(o);                                                          \
        if (r == CL_SUCCESS) LIVE(type, 1);                                           \
        return r;                                                                     \
    }                                                                                 \
    SHIM_API cl_int release(T o)                                                      \
    {                                                                                 \
        REAL(release);                                                                \
        cl_int r = real_(o);                                                          \
        if (r == CL_SUCCESS) LIVE(type, -1);                                          \
        return r;                                                                     \
    }
SHIM_REFCOUNT(SHIM_CONTEXT, cl_context, clRetainContext, clReleaseContext)
SHIM_REFCOUNT(SHIM_QUEUE, cl_command_queue, clRetainCommandQueue, clReleaseCommandQueue)
SHIM_REFCOUNT(SHIM_PROGRAM, cl_program, clRetainProgram, clReleaseProgram)
SHIM_REFCOUNT(SHIM_KERNEL, cl_kernel, clRetainKernel, clReleaseKernel)
SHIM_REFCOUNT(SHIM_MEM, cl_mem, clRetainMemObject, clReleaseMemObject)
SHIM_REFCOUNT(SHIM_EVENT, cl_event, clRetainEvent, clReleaseEvent)
