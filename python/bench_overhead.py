#!/usr/bin/env python3
"""The cost of one clnorm call from Python on device (pyopencl) arrays, over the
same call from C, in microseconds per call.

Each form enqueues N softmax calls of a tiny shape (1x8 float32 by default) on a
session's in-order queue, asking for an event each time as the Python API does, and
times the enqueueing only. Every call waits for one user event that opens after the
round (--open: no such gate), so no kernel runs while calls are timed: on a CPU
device the kernels would otherwise share the cores with the calling thread. The
queue is drained between rounds, untimed. Medians over the rounds are reported,
since the machine may be shared.

  c        a C loop (compiled here with cc against include/clnorm.h and the
           library the package loaded): clnorm_softmax + clReleaseEvent
  ctypes   the C function called through ctypes with every argument prepared
  python   clnorm.softmax(x): a new output array per call
  out=     clnorm.softmax(x, out=y) into one output array
  pool     clnorm.softmax(x) with x on a pyopencl MemoryPool: new outputs from the pool

Usage: python bench_overhead.py [--device SPEC] [--calls N] [--rounds R]
       [--shape RxC] [--open]  (CLNORM_LIBRARY selects the library, as for the package)
"""
import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import clnorm
from clnorm import _lib

C_LOOP = r"""
#include <clnorm.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    const char *spec = argv[1][0] ? argv[1] : NULL;
    int calls = atoi(argv[2]), rounds = atoi(argv[3]), gated = atoi(argv[6]);
    size_t rows = (size_t)atol(argv[4]), cols = (size_t)atol(argv[5]);
    clnorm_session *s;
    if (clnorm_session_create(spec, &s)) {
        fprintf(stderr, "%s\n", clnorm_last_error());
        return 1;
    }
    cl_command_queue q = clnorm_session_queue(s);
    cl_int err;
    cl_mem x = clCreateBuffer(clnorm_session_context(s), CL_MEM_READ_WRITE,
                              rows * cols * 4, NULL, &err);
    cl_mem y = clCreateBuffer(clnorm_session_context(s), CL_MEM_READ_WRITE,
                              rows * cols * 4, NULL, &err);
    clnorm_matrix mx = {x, 0, 0}, my = {y, 0, 0};
    for (int r = 0; r < rounds; r++) {
        clFinish(q);
        cl_event gate = gated ? clCreateUserEvent(clnorm_session_context(s), &err) : NULL;
        double t0 = now_us();
        for (int i = 0; i < calls; i++) {
            cl_event ev;
            if (clnorm_softmax(q, CLNORM_F32, rows, cols, mx, my, CLNORM_SOFTMAX_AUTO,
                               gated ? 1 : 0, gated ? &gate : NULL, &ev)) {
                fprintf(stderr, "%s\n", clnorm_last_error());
                return 1;
            }
            clReleaseEvent(ev);
        }
        double t = (now_us() - t0) / calls;
        if (gate) {
            clSetUserEventStatus(gate, CL_COMPLETE);
            clReleaseEvent(gate);
        }
        printf("%.4f\n", t);
        fflush(stdout);
    }
    clFinish(q);
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clnorm_session_destroy(s);
    return 0;
}
"""


def time_round(fn, queue, calls, gated):
    """Microseconds per call of fn(calls, gate), behind a closed gate if gated."""
    import pyopencl as cl
    queue.finish()
    gate = cl.UserEvent(queue.context) if gated else None
    t0 = time.perf_counter()
    try:
        fn(calls, gate)
        t = (time.perf_counter() - t0) * 1e6 / calls
    finally:
        if gate is not None:
            gate.set_status(cl.command_execution_status.COMPLETE)
    queue.finish()
    return t


def c_loop(spec, calls, rounds, rows, cols, gated):
    """Per-call times of the C loop, or None where it cannot be built here."""
    here = os.path.dirname(os.path.abspath(__file__))
    include = os.path.join(here, "..", "include")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc or not os.path.exists(os.path.join(include, "clnorm.h")):
        return None, "no C compiler or no include/clnorm.h beside this script"
    lib = os.path.realpath(clnorm.library_path)
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "loop.c")
        exe = os.path.join(tmp, "loop")
        with open(src, "w") as f:
            f.write(C_LOOP)
        # Linked by path, with the library's folder on the run path, so the C loop
        # runs exactly the library the package loaded.
        cmd = [cc, "-O2", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-I", include, src,
               lib, f"-Wl,-rpath,{os.path.dirname(lib)}", "-lOpenCL", "-o", exe]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            return None, "cc failed: " + r.stderr.strip()[-500:]
        r = subprocess.run([exe, spec or "", str(calls), str(rounds), str(rows), str(cols),
                            str(int(gated))], capture_output=True, text=True)
        if r.returncode:
            return None, "the C loop failed: " + r.stderr.strip()[-500:]
        return [float(v) for v in r.stdout.split()], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=os.environ.get("CLNORM_DEVICE"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--shape", default="1x8")
    ap.add_argument("--open", action="store_true",
                    help="no gate: kernels run while the calls are timed")
    a = ap.parse_args()
    rows, cols = (int(v) for v in a.shape.split("x"))
    import pyopencl as cl
    import pyopencl.array as cla

    s = clnorm.Session(a.device)
    q = s.queue
    x = cla.to_device(q, np.random.rand(rows, cols).astype(np.float32))
    y = cla.empty(q, (rows, cols), np.float32)
    clnorm.softmax(x, out=y).finish()  # builds the programs
    y.events.clear()

    # ctypes with every argument prepared: the floor of any Python binding.
    fn = _lib.clnorm_softmax
    release = ctypes.CDLL("libOpenCL.so.1").clReleaseEvent
    release.argtypes = [ctypes.c_void_p]
    qp = q.int_ptr
    mx = _lib.Matrix(x.base_data.int_ptr, 0, cols)
    my = _lib.Matrix(y.base_data.int_ptr, 0, cols)
    ev = ctypes.c_void_p()
    evp = ctypes.byref(ev)

    def run_ctypes(n, gate):
        nw, wl = (1, (ctypes.c_void_p * 1)(gate.int_ptr)) if gate else (0, None)
        for _ in range(n):
            fn(qp, 0, rows, cols, mx, my, 0, nw, wl, evp)
            release(ev)

    def run_python(n, gate):
        sm = clnorm.softmax
        wf = [gate] if gate else None
        for _ in range(n):
            sm(x, wait_for=wf)

    # A memory pool makes the new output's buffer cheap; pyopencl's Array remains.
    pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(q))
    xp = cla.to_device(q, x.get(), allocator=pool)

    def run_pool(n, gate):
        sm = clnorm.softmax
        wf = [gate] if gate else None
        for _ in range(n):
            sm(xp, wait_for=wf)

    def run_out(n, gate):
        # The output's event list is emptied each call: pyopencl otherwise waits on
        # old events once an array holds a dozen, which would time kernels, not calls
        # (and, behind the gate, never return).
        sm = clnorm.softmax
        evs = y.events
        wf = [gate] if gate else None
        for _ in range(n):
            sm(x, out=y, wait_for=wf)
            evs.clear()

    forms = {"ctypes": run_ctypes, "python": run_python, "out=": run_out,
             "pool": run_pool}
    res = {k: [] for k in forms}
    # The C loop runs before and after the Python forms, whose rounds alternate, so a
    # change of load on a shared machine touches every form alike.
    half = max(1, a.rounds // 2)
    gated = not a.open
    c1, why = c_loop(a.device, a.calls, half, rows, cols, gated)
    for _ in range(a.rounds):
        for k, fn_ in forms.items():
            res[k].append(time_round(fn_, q, a.calls, gated))
    c2, _ = c_loop(a.device, a.calls, a.rounds - half, rows, cols, gated)
    if c1 and c2:
        res = {"c": c1 + c2, **res}
    base_name = "c" if "c" in res else "ctypes"
    base = statistics.median(res[base_name])
    mode = "open queue" if a.open else "gated"
    print(f"device: {s.device_name}; shape {rows}x{cols} float32; {a.calls} calls x "
          f"{a.rounds} rounds, {mode}; numpy {np.__version__}, pyopencl "
          f"{cl.VERSION_TEXT}, python {sys.version.split()[0]}")
    if why:
        print(f"(no C loop: {why}; the baseline is ctypes)")
    print(f"{'form':8} {'median us/call':>15} {'min':>8} {'max':>8} {'over ' + base_name:>10}"
          f" {'ratio':>7}")
    for k, v in res.items():
        med = statistics.median(v)
        print(f"{k:8} {med:15.2f} {min(v):8.2f} {max(v):8.2f} {med - base:10.2f} "
              f"{med / base:7.2f}")
    s.close()


if __name__ == "__main__":
    main()
