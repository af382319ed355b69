/* fuzz_validate: argument validation of every public operation, on a real device
   (PoCL by default; CLNORM_FUZZ_DEVICE=spec picks another). The input chooses the
   operation, dtype (valid or not), rows and cols (small, boundary or raw 64-bit),
   buffers of up to 4 KiB (separate, the same, sub-buffers, NULL, from another
   context), offsets and leading dimensions, gamma, eps bits, the algorithm, the
   wait list, the queue, a shape forced through the thread's plan hints, and the
   host-array forms with NULL pointers and overflowing sizes. Each call is checked against an
   independent model of API.md's rules:
   - a request with no problem succeeds (or, under a forced shape, may be refused
     as UNSUPPORTED or INVALID_ARGUMENT);
   - a request with problems returns one of their statuses: INVALID_ARGUMENT for a
     NULL, cols == 0, ld < cols, a bad enum, a bad eps, a bad wait list, a buffer of
     another context, a partial overlap; OUT_OF_BOUNDS for a view past its buffer;
   - a refused request changes no byte of any buffer; an accepted one changes only
     bytes of its outputs' views (every buffer is read back and compared), and a
     host call writes nothing outside its arrays. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXB 4096
static clnorm_session *sess;
static cl_context ctx, ctx2;
static cl_command_queue q;
static cl_mem other;          /* a buffer of another context */
static cl_event done_event;   /* a completed user event for wait lists */
static size_t align_bytes = 128;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* No disk cache, no tuning table: every input starts from the same state. */
    clnorm_config c;
    clnorm_config_get(&c);
    snprintf(c.cache_dir, sizeof c.cache_dir, "off");
    c.hints.tuning = 0;
    if (clnorm_config_set(&c) != CLNORM_SUCCESS) {
        fprintf(stderr, "fuzz_validate: configuration refused: %s\n", clnorm_last_error());
        abort();
    }
    const char *spec = getenv("CLNORM_FUZZ_DEVICE");
    if (clnorm_session_create(spec && *spec ? spec : "pocl", &sess) != CLNORM_SUCCESS) {
        fprintf(stderr, "fuzz_validate: no device: %s\n", clnorm_last_error());
        abort();
    }
    ctx = clnorm_session_context(sess);
    q = clnorm_session_queue(sess);
    cl_device_id dev;
    cl_int err;
    clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    cl_uint bits = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL) ==
            CL_SUCCESS && bits >= 8)
        align_bytes = bits / 8;
    ctx2 = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    other = clCreateBuffer(ctx2, CL_MEM_READ_WRITE, 1024, NULL, &err);
    done_event = clCreateUserEvent(ctx, &err);
    clSetUserEventStatus(done_event, CL_COMPLETE);
    return 0;
}

/* ---- buffers ------------------------------------------------------------------------ */
enum { B_A, B_B, B_C, B_G, B_M, B_S, NBUF };
typedef struct buf { cl_mem mem; size_t size; unsigned char init[MAXB]; } buf;
static buf bufs[NBUF];
static cl_mem sub;            /* a sub-buffer of A */
static size_t sub_off, sub_size;

/* What a cl_mem argument is: which buffer (or none), its offset in it, its size. */
typedef struct memref { cl_mem mem; int base; size_t off, size; int foreign; } memref;

static memref ref_of(int choice)
{
    memref r = {NULL, -1, 0, 0, 0};
    switch (choice) {
    case 0: case 1: case 2: case 3: case 4: case 5:
        r.mem = bufs[choice].mem; r.base = choice; r.size = bufs[choice].size; break;
    case 6: if (sub) { r.mem = sub; r.base = B_A; r.off = sub_off; r.size = sub_size; } break;
    case 7: r.mem = other; r.size = 1024; r.foreign = 1; break;
    default: break; /* NULL */
    }
    return r;
}

/* ---- the model ---------------------------------------------------------------------- */
#define BIT(s) (1u << (s))
typedef struct view { memref m; size_t off, ld, rld; int ok; } view; /* rld: resolved ld */

/* Checks a view as API.md says; *ok when it is usable for overlap reasoning. */
static unsigned check_view(view *v, size_t rows, size_t cols, size_t es)
{
    v->ok = 0;
    if (!v->m.mem || v->m.foreign) return BIT(CLNORM_INVALID_ARGUMENT);
    size_t ld = v->ld ? v->ld : cols;
    if (ld < cols || cols == 0) return BIT(CLNORM_INVALID_ARGUMENT);
    if (rows == 0) return 0;
    size_t end, bytes;
    if (__builtin_mul_overflow(rows - 1, ld, &end) || __builtin_add_overflow(end, cols, &end) ||
        __builtin_add_overflow(end, v->off, &end) || __builtin_mul_overflow(end, es, &bytes) ||
        bytes > v->m.size)
        return BIT(CLNORM_OUT_OF_BOUNDS);
    v->rld = ld;
    v->ok = 1;
    return 0;
}

/* Marks (mark != 0) or tests the bytes of a checked view in its base buffer. */
static int view_bytes(const view *v, size_t rows, size_t cols, size_t es, unsigned char *map,
                      int mark)
{
    int hit = 0;
    for (size_t r = 0; r < rows; r++) {
        size_t b0 = v->m.off + (v->off + r * v->rld) * es;
        for (size_t i = 0; i < cols * es; i++) {
            if (mark) map[b0 + i] = 1;
            else hit |= map[b0 + i];
        }
    }
    return hit;
}

static int views_share(const view *a, const view *b, size_t rows, size_t cols, size_t es)
{
    static unsigned char map[MAXB];
    if (a->m.base != b->m.base || a->m.base < 0 || rows == 0) return 0;
    memset(map, 0, sizeof map);
    view_bytes(a, rows, cols, es, map, 1);
    return view_bytes(b, rows, cols, es, map, 0);
}

static int views_same(const view *a, const view *b, size_t es)
{
    return a->m.base == b->m.base && a->m.off + a->off * es == b->m.off + b->off * es &&
           a->rld == b->rld;
}

/* A plain array of n elements of es bytes at offset 0 of m. */
static unsigned check_array(const memref *m, size_t n, size_t es)
{
    size_t bytes;
    if (!m->mem || m->foreign) return BIT(CLNORM_INVALID_ARGUMENT);
    if (__builtin_mul_overflow(n, es, &bytes) || bytes > m->size) return BIT(CLNORM_OUT_OF_BOUNDS);
    return 0;
}

static int ranges_share(const memref *a, size_t alen, const memref *b, size_t boff, size_t blen)
{
    if (a->base != b->base || a->base < 0 || !alen || !blen) return 0;
    size_t a0 = a->off, b0 = b->off + boff;
    return !(a0 + alen <= b0 || b0 + blen <= a0);
}

static size_t view_span(const view *v, size_t rows, size_t cols, size_t es)
{
    return rows ? ((rows - 1) * v->rld + cols) * es : 0;
}

/* ---- running one device call ---------------------------------------------------------- */
static void make_buffers(fz *f)
{
    cl_int err;
    for (int i = 0; i < NBUF; i++) {
        uint16_t s = fz_u16(f);
        bufs[i].size = 4 + s % (MAXB - 3);
        for (size_t k = 0; k < bufs[i].size; k++)
            bufs[i].init[k] = (unsigned char)(0xA5 ^ (k * 31 + (size_t)i * 7));
        bufs[i].mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bufs[i].size,
                                     bufs[i].init, &err);
        FZ_ASSERT(err == CL_SUCCESS, "clCreateBuffer %d", err);
    }
    sub = NULL;
    size_t slots = bufs[B_A].size / align_bytes;
    if (slots > 1) {
        sub_off = align_bytes * (fz_u8(f) % slots);
        sub_size = bufs[B_A].size - sub_off;
        if (sub_size > 4) sub_size -= fz_u8(f) % (sub_size - 3);
        cl_buffer_region reg = {sub_off, sub_size};
        sub = clCreateSubBuffer(bufs[B_A].mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                &reg, &err);
        if (err != CL_SUCCESS) sub = NULL;
    }
}

static void free_buffers(void)
{
    if (sub) clReleaseMemObject(sub);
    sub = NULL;
    for (int i = 0; i < NBUF; i++) clReleaseMemObject(bufs[i].mem);
}

/* Every byte of every buffer is unchanged, except those marked in allowed[base]. */
static void check_buffers(unsigned char allowed[NBUF][MAXB], const char *what)
{
    static unsigned char now[MAXB];
    clFinish(q);
    for (int i = 0; i < NBUF; i++) {
        FZ_ASSERT(clEnqueueReadBuffer(q, bufs[i].mem, CL_TRUE, 0, bufs[i].size, now, 0, NULL,
                                      NULL) == CL_SUCCESS, "read back");
        for (size_t k = 0; k < bufs[i].size; k++)
            FZ_ASSERT(now[k] == bufs[i].init[k] || (allowed && allowed[i][k]),
                      "%s: buffer %d byte %zu of %zu changed outside any output view", what, i,
                      k, bufs[i].size);
    }
}

/* The shape forced for this input's call (the thread's hints; automatic when
   none). */
static clnorm_plan_hints forced_hints;

/* Forces a shape from the input through the thread's hints; 1 when one is forced. */
static int hints_forced(fz *f)
{
    static const int variants[] = {CLNORM_VARIANT_STREAM, CLNORM_VARIANT_REGISTERS,
                                   CLNORM_VARIANT_SPLIT};
    uint8_t k = fz_u8(f);
    clnorm_plan_hints_init(&forced_hints);
    /* A few sizes only: PoCL compiles each kernel once per work-group size. */
    static const unsigned wgs[] = {1, 2, 3, 4, 6, 8, 12, 16, 32, 64}, teams[] = {1, 2, 3, 4, 8, 16};
    if (k & 1) forced_hints.work_group = wgs[fz_u8(f) % 10];
    if (k & 2) forced_hints.items_per_row = teams[fz_u8(f) % 6];
    if (k & 4) forced_hints.variant = variants[fz_u8(f) % 3];
    if (k & 8) forced_hints.split = 1u + fz_u8(f) % 8;
    if (!(k & 15)) return 0;
    clnorm_status st = clnorm_set_thread_hints(&forced_hints);
    if (st == CLNORM_SUCCESS) return 1;
    /* Work-items per row that do not divide the work-group: refused when set. */
    FZ_ASSERT(st == CLNORM_INVALID_ARGUMENT && forced_hints.work_group &&
                  forced_hints.items_per_row &&
                  forced_hints.work_group % forced_hints.items_per_row &&
                  strstr(clnorm_last_error(), "items_per_row"),
              "hints wg %zu, %zu per row refused: %s", forced_hints.work_group,
              forced_hints.items_per_row, clnorm_last_error());
    clnorm_plan_hints_init(&forced_hints);
    return 0;
}

static void device_call(fz *f, int fn)
{
    int forced = hints_forced(f);
    uint8_t draw = fz_u8(f);
    int dt = draw < 240 ? draw % 3 : (int)draw - 245;
    size_t rows = fz_size(f), cols = fz_size(f);
    make_buffers(f);
    view x, y, res;
    memset(&x, 0, sizeof x);
    x.m = ref_of(fz_u8(f) % 9);
    x.off = fz_size(f);
    x.ld = fz_size(f);
    uint8_t ych = fz_u8(f);
    y = x;
    y.m = ref_of(ych % 9);
    y.off = fz_size(f);
    y.ld = fz_size(f);
    if (ych >= 192) y = x; /* exactly in place */
    res = x;
    res.m = ref_of(fz_u8(f) % 9);
    res.off = fz_size(f);
    res.ld = fz_size(f);
    memref gamma = ref_of(fz_u8(f) % 10);
    memref rmax = ref_of(fz_u8(f) % 9), rsum = ref_of(fz_u8(f) % 9);
    uint32_t eb = fz_u32(f);
    float eps;
    memcpy(&eps, &eb, 4);
    if (!(fz_u8(f) & 3)) eps = 1e-6f;
    uint8_t ab = fz_u8(f);
    int algo = ab >= 250 ? (int)ab - 260 : (int)(ab % 4);
    int update = fz_u8(f) & 1;
    uint8_t w = fz_u8(f) % 5;
    cl_uint nw = w == 1 || w == 3 || w == 4 ? 1 : 0;
    const cl_event null_ev = NULL;
    const cl_event *wl = w == 2 || w == 3 ? &done_event : w == 4 ? &null_ev : NULL;
    cl_command_queue qq = fz_u8(f) % 32 == 0 ? NULL : q;
    int want_event = fz_u8(f) & 1;

    /* The model. */
    unsigned prob = 0;
    size_t es = dt == CLNORM_F32 ? 4 : 2;
    if (!qq) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    if (dt < 0 || dt > 2) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    if (cols == 0) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    if ((nw && !wl) || (!nw && wl) || (nw && !wl[0])) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    int rms = fn == 0 || fn == 1;
    if (rms && (!(eps >= 0.0f) || isinf(eps))) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    if (fn == 2 && (algo < 0 || algo > 2)) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    prob |= check_view(&x, rows, cols, es);
    /* Only a shared byte is an overlap, at any leading dimensions: views whose spans
       interleave without one must be accepted. */
    if (fn != 3) {
        prob |= check_view(&y, rows, cols, es);
        if (x.ok && y.ok && !views_same(&x, &y, es)) {
            if (views_share(&x, &y, rows, cols, es)) prob |= BIT(CLNORM_INVALID_ARGUMENT);
        }
    }
    if (fn == 1) {
        prob |= check_view(&res, rows, cols, es);
        const view *pair[2] = {&x, &y};
        for (int i = 0; i < 2; i++) {
            if (!res.ok || !pair[i]->ok) continue;
            if (views_share(&res, pair[i], rows, cols, es)) prob |= BIT(CLNORM_INVALID_ARGUMENT);
        }
    }
    if (rms && gamma.mem) {
        unsigned g = check_array(&gamma, cols, es);
        prob |= g;
        if (!g && y.ok && ranges_share(&gamma, cols * es, &y.m, y.off * es, view_span(&y, rows, cols, es)))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
        if (!g && fn == 1 && update && res.ok &&
            ranges_share(&gamma, cols * es, &res.m, res.off * es, view_span(&res, rows, cols, es)))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
    }
    if (fn == 3) {
        unsigned a = check_array(&rmax, rows, 4), b = check_array(&rsum, rows, 4);
        prob |= a | b;
        if (!a && !b && ranges_share(&rmax, rows * 4, &rsum, 0, rows * 4))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
        if (!a && x.ok && ranges_share(&rmax, rows * 4, &x.m, x.off * es, view_span(&x, rows, cols, es)))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
        if (!b && x.ok && ranges_share(&rsum, rows * 4, &x.m, x.off * es, view_span(&x, rows, cols, es)))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
    }

    /* The call. Views are passed as given (ld 0 stays 0). */
    clnorm_matrix vx = {x.m.mem, x.off, x.ld}, vy = {y.m.mem, y.off, y.ld};
    clnorm_matrix vr = {res.m.mem, res.off, res.ld};
    cl_event ev = NULL;
    clnorm_status st;
    switch (fn) {
    case 0: st = clnorm_rmsnorm(qq, (clnorm_dtype)dt, rows, cols, vx, gamma.mem, vy, eps, nw, wl,
                                want_event ? &ev : NULL); break;
    case 1: st = clnorm_add_rmsnorm(qq, (clnorm_dtype)dt, rows, cols, vx, vr, update, gamma.mem,
                                    vy, eps, nw, wl, want_event ? &ev : NULL); break;
    case 2: st = clnorm_softmax(qq, (clnorm_dtype)dt, rows, cols, vx, vy,
                                (clnorm_softmax_algo)algo, nw, wl, want_event ? &ev : NULL); break;
    default: st = clnorm_softmax_stats(qq, (clnorm_dtype)dt, rows, cols, vx, rmax.mem, rsum.mem,
                                       nw, wl, want_event ? &ev : NULL); break;
    }
    char what[512];
    snprintf(what, sizeof what, "op %d dtype %d rows %zu cols %zu x(%d+%zu, off %zu, ld %zu) "
             "y(%d+%zu, off %zu, ld %zu): %s, model %#x: %s", fn, dt, rows, cols, x.m.base,
             x.m.off, x.off, x.ld, y.m.base, y.m.off, y.off, y.ld, clnorm_status_string(st),
             prob, clnorm_last_error());
    const char *msg = clnorm_last_error();
    if (getenv("CLNORM_FUZZ_VERBOSE"))
        fprintf(stderr, "%s; hints: variant %d, work_group %zu, items_per_row %zu, split %zu\n",
                what, forced_hints.variant, forced_hints.work_group,
                forced_hints.items_per_row, forced_hints.split);
    if (prob) {
        FZ_ASSERT(st != CLNORM_SUCCESS && (prob & BIT(st)), "refusal expected: %s", what);
    } else if (forced) {
        FZ_ASSERT(st == CLNORM_SUCCESS || st == CLNORM_UNSUPPORTED ||
                      st == CLNORM_INVALID_ARGUMENT, "%s", what);
    } else {
        FZ_ASSERT(st == CLNORM_SUCCESS || (st == CLNORM_UNSUPPORTED && dt != CLNORM_F32),
                  "a valid request refused: %s", what);
    }
    if (st != CLNORM_SUCCESS) {
        FZ_ASSERT(msg && *msg, "refusal without a message");
        FZ_ASSERT(!ev, "a refused call handed out an event");
        check_buffers(NULL, what);
    } else {
        if (want_event) {
            FZ_ASSERT(ev != NULL, "no event: %s", what);
            FZ_ASSERT(clWaitForEvents(1, &ev) == CL_SUCCESS, "event failed: %s", what);
            clReleaseEvent(ev);
        }
        static unsigned char allowed[NBUF][MAXB];
        memset(allowed, 0, sizeof allowed);
        if (rows && fn != 3) view_bytes(&y, rows, cols, es, allowed[y.m.base], 1);
        if (rows && fn == 1 && update) view_bytes(&res, rows, cols, es, allowed[res.m.base], 1);
        if (rows && fn == 3) {
            memset(allowed[rmax.base] + rmax.off, 1, rows * 4);
            memset(allowed[rsum.base] + rsum.off, 1, rows * 4);
        }
        check_buffers(allowed, what);
    }
    free_buffers();
}

/* ---- host-array calls ----------------------------------------------------------------- */
static void host_call(fz *f, int fn)
{
    uint8_t draw = fz_u8(f);
    int dt = draw < 240 ? draw % 3 : (int)draw - 245;
    size_t rows = fz_size(f), cols = fz_size(f);
    uint8_t nulls = fz_u8(f);
    int algo = (int)(fz_u8(f) % 4);
    uint32_t eb = fz_u32(f);
    float eps;
    memcpy(&eps, &eb, 4);
    if (!(fz_u8(f) & 3)) eps = 1e-6f;
    clnorm_session *s = nulls == 0xff ? NULL : sess;
    size_t es = dt == CLNORM_F32 ? 4 : 2, bytes = 0;
    int overflow = __builtin_mul_overflow(rows, cols, &bytes) ||
                   __builtin_mul_overflow(bytes, es, &bytes);
    unsigned prob = 0;
    if (!s || dt < 0 || dt > 2 || cols == 0 || overflow) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    if (!overflow && bytes > 65536 && rows && !prob) return; /* too big to hand over */
    /* gamma holds a whole row whenever one fits what is handed over (a single row of
       exactly 64 KiB included); otherwise the call is refused or returns early. */
    size_t row_bytes = 0;
    size_t cap = prob ? 64 : bytes,
           gcap = !__builtin_mul_overflow(cols, es, &row_bytes) && row_bytes <= 65536 ? row_bytes : 64;
    /* Arrays with 64 guard bytes after each. */
    unsigned char *x = malloc(cap + 64), *y = malloc(cap + 64), *r = malloc(cap + 64),
                  *g = malloc(gcap + 64);
    float *m = malloc(rows < 16384 ? rows * 4 + 64 : 64), *l = malloc(rows < 16384 ? rows * 4 + 64 : 64);
    for (size_t i = 0; i < cap + 64; i++) x[i] = y[i] = r[i] = (unsigned char)(i * 13);
    for (size_t i = 0; i < (rows < 16384 ? rows : 0); i++) m[i] = 0.0f, l[i] = 1.0f;
    for (size_t i = 0; i < cap / es; i++) { /* plain finite values */
        float v = (float)(i % 7) - 3.0f;
        if (dt == CLNORM_F32) memcpy(x + 4 * i, &v, 4);
        else if (dt == 1) { uint16_t h = 0x3c00; memcpy(x + 2 * i, &h, 2); }
        else { uint16_t h = 0x3f80; memcpy(x + 2 * i, &h, 2); }
        memcpy(r + es * i, x + es * i, es);
    }
    memset(g, 0, gcap + 64);
    const void *px = (nulls & 1) ? NULL : x;
    void *py = (nulls & 2) ? NULL : y, *pr = (nulls & 4) ? NULL : r;
    const void *pg = (nulls & 8) ? NULL : g;
    float *pm = (nulls & 16) ? NULL : m, *pl = (nulls & 32) ? NULL : l;
    /* With rows == 0 the host forms are no-ops: the model accepts a bad eps or algo
       there either refused or not. */
    unsigned maybe = 0, bad_enum = ((fn == 4 || fn == 7) && (!(eps >= 0.0f) || isinf(eps))) ||
                                   (fn == 5 && (algo < 0 || algo > 2));
    if (rows && !prob) {
        if (!px || (fn != 6 && !py) || (fn == 7 && !pr) || ((fn == 6 || fn == 8) && (!pm || !pl)))
            prob |= BIT(CLNORM_INVALID_ARGUMENT);
        if (bad_enum) prob |= BIT(CLNORM_INVALID_ARGUMENT);
    }
    if (!rows && bad_enum) maybe |= BIT(CLNORM_INVALID_ARGUMENT);
    if (rows && rows >= 16384 && (fn == 6 || fn == 8) && !prob) goto out; /* stats too big here */
    clnorm_status st;
    switch (fn) {
    case 4: st = clnorm_rmsnorm_host(s, (clnorm_dtype)dt, rows, cols, px, pg, py, eps); break;
    case 5: st = clnorm_softmax_host(s, (clnorm_dtype)dt, rows, cols, px, py,
                                     (clnorm_softmax_algo)algo); break;
    case 6: st = clnorm_softmax_stats_host(s, (clnorm_dtype)dt, rows, cols, px, pm, pl); break;
    case 8: st = clnorm_softmax_apply_host(s, (clnorm_dtype)dt, rows, cols, px, pm, pl, py); break;
    default: st = clnorm_add_rmsnorm_host(s, (clnorm_dtype)dt, rows, cols, px, pr, nulls & 64, pg,
                                          py, eps); break;
    }
    if (prob) FZ_ASSERT(st != CLNORM_SUCCESS && (prob & BIT(st)), "host op %d dtype %d %zux%zu: "
                        "%s, model %#x", fn, dt, rows, cols, clnorm_status_string(st), prob);
    else FZ_ASSERT(st == CLNORM_SUCCESS || (st == CLNORM_UNSUPPORTED && dt != CLNORM_F32) ||
                       (maybe & BIT(st)),
                   "host op %d dtype %d %zux%zu: %s: %s", fn, dt, rows, cols,
                   clnorm_status_string(st), clnorm_last_error());
    for (size_t i = cap; i < cap + 64; i++)
        FZ_ASSERT(y[i] == (unsigned char)(i * 13) && r[i] == (unsigned char)(i * 13),
                  "host op %d wrote past its array", fn);
out:
    free(x); free(y); free(r); free(g); free(m); free(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size};
    int fn = fz_u8(&f) % 9;
    if (fn < 4) device_call(&f, fn);
    else host_call(&f, fn);
    clnorm_set_thread_hints(NULL);
    clnorm_plan_hints_init(&forced_hints);
    return 0;
}
