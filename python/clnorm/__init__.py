"""clnorm: row-wise RMSNorm, softmax and online-softmax statistics on any OpenCL device.

Each operation takes a 2-D array of rows and works on every row:

    softmax(x)        y = exp(x - max) / sum(exp(x - max)) per row
    rmsnorm(x)        y = x * (mean(x^2) + eps)^(-1/2) * gamma per row
    add_rmsnorm(x, r) h = x + r; r <- h; y = rmsnorm(h)
    softmax_stats(x)  (row_max, row_sum): max and sum(exp(x - max)) per row

Arrays are either numpy arrays (float32, float16, and bfloat16 where ml_dtypes is
installed), which run on a session's device and return numpy arrays, or
pyopencl.array.Array objects, which run on the array's own queue without any copy
and return pyopencl arrays with the operation's event attached. Every failure
raises clnorm.Error. The full guide is docs/python.md in the repository.
"""
import itertools
import math
import sys
import threading
from ctypes import byref, c_float, c_void_p

import numpy as np

from . import _lib as _L
from ._cl import Device
from ._cl import list_devices as _list_devices
from ._lib import ArgumentError, ArgumentTypeError, Error, Matrix, library_path

__all__ = [
    "softmax", "rmsnorm", "add_rmsnorm", "softmax_stats", "stats_merge", "softmax_apply",
    "softmax_sharded", "devices",
    "Session", "Device", "Error", "ArgumentError", "ArgumentTypeError",
    "default_session", "library_path", "library_version", "__version__",
]


def library_version():
    """The loaded libclnorm's version, "MAJOR.MINOR.PATCH" (clnorm_version())."""
    return _L.clnorm_version().decode()


__version__ = library_version()

# numpy dtype -> clnorm_dtype.
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1}
try:
    import ml_dtypes as _ml_dtypes
    _DTYPES[np.dtype(_ml_dtypes.bfloat16)] = 2
except ImportError:  # bfloat16 needs ml_dtypes; float32 and float16 work without it
    _ml_dtypes = None

_ALGOS = {"auto": 0, "three_pass": 1, "three-pass": 1, "3pass": 1, "online": 2,
          "AUTO": 0, "THREE_PASS": 1, "ONLINE": 2}
_F32 = np.dtype(np.float32)
_F32_MAX = float(np.finfo(np.float32).max)


# ---- argument checks ---------------------------------------------------------------

def _dtype_code(a, name):
    code = _DTYPES.get(a.dtype)
    if code is None:
        have = ", bfloat16" if _ml_dtypes is not None else \
            " (bfloat16 needs the ml_dtypes package, which is not installed)"
        raise ArgumentTypeError(
            f"{name}.dtype is {a.dtype}; clnorm takes float32, float16{have}")
    return code


def _shape2(a, name):
    if a.ndim != 2:
        raise ArgumentError(
            f"{name} has {a.ndim} dimensions (shape {tuple(a.shape)}); clnorm takes "
            "2-D arrays of rows (rows, cols)")
    rows, cols = a.shape
    if cols == 0:
        raise ArgumentError(f"{name} has shape {tuple(a.shape)}: cols is 0")
    return rows, cols


def _row_stride(a, name, rows, cols):
    """Leading dimension in elements of a row-major view; refuses other layouts."""
    if rows == 0:
        return cols
    it = a.dtype.itemsize
    s0, s1 = a.strides
    if cols > 1 and s1 != it:
        raise ArgumentError(
            f"{name}.strides = {tuple(a.strides)}: the column stride must be the item "
            f"size ({it} bytes); pass a row-major array (numpy.ascontiguousarray)")
    if rows <= 1:
        return cols
    if s0 < cols * it or s0 % it:
        raise ArgumentError(
            f"{name}.strides = {tuple(a.strides)}: the row stride must be a multiple of "
            f"the item size ({it} bytes) and at least cols * itemsize = {cols * it}")
    return s0 // it


def _same_as_x(a, name, x, xname="x"):
    if a.dtype != x.dtype:
        raise ArgumentTypeError(
            f"{name}.dtype is {a.dtype} but {xname}.dtype is {x.dtype}; they must match")
    if tuple(a.shape) != tuple(x.shape):
        raise ArgumentError(
            f"{name} has shape {tuple(a.shape)} but {xname} has shape {tuple(x.shape)}; "
            "they must match")


def _flag(v, name):
    """A yes/no argument: a bool, or an integer (nonzero is yes)."""
    if isinstance(v, (bool, int, np.bool_, np.integer)):
        return bool(v)
    raise ArgumentTypeError(f"{name} = {v!r} is not a bool")


def _eps(eps):
    if isinstance(eps, (str, bytes)):
        raise ArgumentTypeError(f"eps = {eps!r} is not a number")
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"eps = {eps!r} is not a number") from None
    if not (math.isfinite(e) and 0.0 <= e <= _F32_MAX):
        raise ArgumentError(f"eps = {eps!r}: must be finite, >= 0 and fit a float32")
    return e


def _algo(algo):
    a = _ALGOS.get(algo.lower() if isinstance(algo, str) else None)
    if a is None:
        if isinstance(algo, int) and not isinstance(algo, bool) and algo in (0, 1, 2):
            return algo
        raise ArgumentError(
            f"algo = {algo!r}: must be \"auto\", \"three_pass\" or \"online\"")
    return a


def _gamma_np(gamma, x, cols):
    if gamma is None:
        return None
    if not isinstance(gamma, np.ndarray):
        raise ArgumentTypeError(
            f"gamma is a {type(gamma).__name__}; with numpy x it must be a numpy array")
    if gamma.dtype != x.dtype:
        raise ArgumentTypeError(
            f"gamma.dtype is {gamma.dtype} but x.dtype is {x.dtype}; they must match "
            "(gamma.astype(x.dtype))")
    if gamma.shape != (cols,):
        raise ArgumentError(
            f"gamma has shape {gamma.shape}; it must be (cols,) = ({cols},)")
    return np.ascontiguousarray(gamma)


# ---- numpy arrays: the session's host-array functions -----------------------------
# The host functions take packed rows, so any other layout (a column slice of a wider
# array, a transposed or Fortran-order array, negative strides) is packed into a
# temporary first and such an out= is filled from one. The host functions copy to and
# from the device anyway, so packing adds one host copy to that and keeps one code
# path; see docs/python.md, "Views".

def _np_array(a, name, what="clnorm takes numpy.ndarray or pyopencl.array.Array"):
    if not isinstance(a, np.ndarray):
        raise ArgumentTypeError(f"{name} is a {type(a).__name__}; {what}")
    if isinstance(a, np.ma.MaskedArray):
        raise ArgumentTypeError(
            f"{name} is a numpy.ma.MaskedArray, whose mask clnorm would ignore; pass "
            f"{name}.filled(value) or {name}.data")


def _packed(a):
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _np_in(x, name):
    _np_array(x, name)
    rows, cols = _shape2(x, name)
    code = _dtype_code(x, name)
    return rows, cols, code, _packed(x)


def _np_out(out, x, name="out"):
    """(the array to return, the packed array the library writes)."""
    if out is None:
        y = np.empty(x.shape, x.dtype)
        return y, y
    _np_array(out, name, "with numpy x it must be a numpy array")
    _same_as_x(out, name, x)
    if not out.flags.writeable:
        raise ArgumentError(f"{name} is read-only")
    return out, (out if out.flags.c_contiguous else np.empty(x.shape, x.dtype))


def _np_writeback(y, yp):
    if yp is not y:
        y[...] = yp


def _np_softmax(s, x, algo, out):
    rows, cols, code, xp = _np_in(x, "x")
    a = _algo(algo)
    y, yp = _np_out(out, x)
    _L.check(_L.clnorm_softmax_host(s._ptr(), code, rows, cols, xp.ctypes.data,
                                    yp.ctypes.data, a))
    _np_writeback(y, yp)
    return y


def _np_rmsnorm(s, x, gamma, eps, out):
    rows, cols, code, xp = _np_in(x, "x")
    g = _gamma_np(gamma, x, cols)
    e = _eps(eps)
    y, yp = _np_out(out, x)
    _L.check(_L.clnorm_rmsnorm_host(s._ptr(), code, rows, cols, xp.ctypes.data,
                                    None if g is None else g.ctypes.data, yp.ctypes.data,
                                    e))
    _np_writeback(y, yp)
    return y


def _np_add_rmsnorm(s, x, residual, gamma, eps, update_residual, out):
    rows, cols, code, xp = _np_in(x, "x")
    _np_array(residual, "residual", "with numpy x it must be a numpy array")
    _same_as_x(residual, "residual", x)
    upd = _flag(update_residual, "update_residual")
    if upd and not residual.flags.writeable:
        raise ArgumentError("residual is read-only but update_residual is True")
    g = _gamma_np(gamma, x, cols)
    e = _eps(eps)
    if upd and out is not None and isinstance(out, np.ndarray) and \
            np.shares_memory(out, residual):
        raise ArgumentError("out overlaps residual, which update_residual also writes")
    y, yp = _np_out(out, x)
    rp = _packed(residual)
    if not upd and np.shares_memory(rp, yp):
        # Only read then: a copy keeps it apart from the output, which the library
        # requires of the arrays it is given.
        rp = rp.copy()
    _L.check(_L.clnorm_add_rmsnorm_host(s._ptr(), code, rows, cols, xp.ctypes.data,
                                        rp.ctypes.data, int(upd),
                                        None if g is None else g.ctypes.data,
                                        yp.ctypes.data, e))
    _np_writeback(y, yp)
    if upd and rp is not residual:
        residual[...] = rp
    return y


def _np_softmax_stats(s, x):
    rows, cols, code, xp = _np_in(x, "x")
    m = np.empty(rows, _F32)
    l = np.empty(rows, _F32)
    _L.check(_L.clnorm_softmax_stats_host(s._ptr(), code, rows, cols, xp.ctypes.data,
                                          m.ctypes.data, l.ctypes.data))
    return m, l


def _np_stats_in(v, name, rows):
    """A statistics vector for numpy x: float32 of shape (rows,), packed."""
    if not isinstance(v, np.ndarray):
        raise ArgumentTypeError(
            f"{name} is a {type(v).__name__}; with numpy x it must be a numpy array")
    if v.dtype != _F32:
        raise ArgumentTypeError(
            f"{name}.dtype is {v.dtype}; statistics are float32 ({name}.astype(numpy.float32))")
    if v.shape != (rows,):
        raise ArgumentError(f"{name} has shape {v.shape}; it must be (rows,) = ({rows},)")
    return np.ascontiguousarray(v)


def _np_softmax_apply(s, x, row_max, row_sum, out):
    rows, cols, code, xp = _np_in(x, "x")
    m = _np_stats_in(row_max, "row_max", rows)
    l = _np_stats_in(row_sum, "row_sum", rows)
    y, yp = _np_out(out, x)
    _L.check(_L.clnorm_softmax_apply_host(s._ptr(), code, rows, cols, xp.ctypes.data,
                                          m.ctypes.data, l.ctypes.data, yp.ctypes.data))
    _np_writeback(y, yp)
    return y


# ---- pyopencl arrays: the device-buffer functions on the array's queue -------------
# This path is what device code calls in a loop, so it keeps its per-call work small:
# pyopencl's classes are looked up once, and the common case (a 2-D row-major view
# with no events) takes no extra function calls; see docs/python.md, "Overhead".

_cl_array = None  # the pyopencl.array module, once the caller has imported it
_cl_event = None  # pyopencl.Event


def _is_cl(a):
    global _cl_array, _cl_event
    m = _cl_array
    if m is None:
        m = sys.modules.get("pyopencl.array")
        if m is None:
            return False
        _cl_event = sys.modules["pyopencl"].Event
        _cl_array = m
    return isinstance(a, m.Array)


def _cl_view(a, name):
    """(clnorm_matrix, rows, cols, dtype code) of a 2-D pyopencl array view."""
    shape = a.shape
    if len(shape) != 2:
        _shape2(a, name)
    rows, cols = shape
    dt = a.dtype
    code = _DTYPES.get(dt)
    if code is None:
        _dtype_code(a, name)
    if cols == 0:
        _shape2(a, name)
    if rows == 0:
        return Matrix(None, 0, cols), rows, cols, code
    it = dt.itemsize
    s0, s1 = a.strides
    if rows > 1 and (s1 == it or cols == 1) and s0 >= cols * it and not s0 % it:
        ld = s0 // it
    else:
        ld = _row_stride(a, name, rows, cols)
    off = a.offset
    if off % it:
        raise ArgumentError(
            f"{name}.offset = {off} bytes is not a multiple of the item size ({it})")
    try:
        mem = a.base_data.int_ptr
    except AttributeError:
        raise ArgumentTypeError(
            f"{name} is not backed by a cl_mem buffer (base_data is "
            f"{type(a.base_data).__name__}); SVM arrays are not supported") from None
    return Matrix(mem, off // it, ld), rows, cols, code


def _cl_queue(x):
    q = x.queue
    if q is None:
        raise ArgumentError("x.queue is None; give the array a queue (x.with_queue(q))")
    return q


def _cl_out(out, x, q, cols):
    """(y, its clnorm_matrix): out checked against x, or a new packed array."""
    if out is None:
        y = _cl_array.empty(q, x.shape, x.dtype, allocator=x.allocator)
        mem = y.base_data.int_ptr if x.shape[0] else None
        return y, Matrix(mem, 0, cols)
    if not _is_cl(out):
        raise ArgumentTypeError(
            f"out is a {type(out).__name__}; with a pyopencl x it must be a "
            "pyopencl.array.Array")
    if out.dtype != x.dtype or out.shape != x.shape:
        _same_as_x(out, "out", x)
    return out, _cl_view(out, "out")[0]


def _cl_vector_check(v, name, n, dtype, q, np_in, kinds):
    """Checks a 1-D argument for pyopencl x as _cl_vector takes it; returns np_in(v)
    for a numpy v, else None."""
    if isinstance(v, np.ndarray):
        return np_in(v)
    if not _is_cl(v):
        raise ArgumentTypeError(f"{name} is a {type(v).__name__}; it must be {kinds}")
    if v.dtype != dtype:
        raise ArgumentTypeError(f"{name}.dtype is {v.dtype}; it must be {dtype}")
    if tuple(v.shape) != (n,):
        raise ArgumentError(f"{name} has shape {tuple(v.shape)}; it must be ({n},)")
    if v.context != q.context:
        raise ArgumentError(f"{name} belongs to another context than x's queue")
    if n > 1 and v.strides[0] != v.dtype.itemsize:
        raise ArgumentError(
            f"{name} is strided ({v.strides[0]} bytes between elements); a pyopencl "
            f"{name} must be contiguous")
    return None


def _cl_vector(v, name, n, dtype, q, x, np_in, kinds):
    """(cl_mem of a 1-D argument: n elements of dtype at offset 0 as the library reads
    it, the array holding it) for pyopencl x. A numpy v, checked by np_in, is uploaded
    for the call (n elements); a contiguous pyopencl view elsewhere than offset 0 is
    copied on the device, and a strided one refused (pyopencl copies contiguous arrays
    only). kinds: what the refusal of another type lists."""
    packed = _cl_vector_check(v, name, n, dtype, q, np_in, kinds)
    if packed is not None:
        d = _cl_array.to_device(q, packed, allocator=x.allocator)
    else:
        d = v
        if v.offset != 0:
            d = v.copy(queue=q)
    mem = getattr(d.base_data, "int_ptr", None)
    if mem is None:
        raise ArgumentTypeError(f"{name} is not backed by a cl_mem buffer")
    return mem, d


def _cl_gamma(gamma, x, q, cols):
    """(cl_mem of gamma, the array holding it), or (None, None) for no scale."""
    if gamma is None:
        return None, None
    return _cl_vector(gamma, "gamma", cols, x.dtype, q, x,
                      lambda g: _gamma_np(g, x, cols),
                      "None, a numpy array or a pyopencl.array.Array")


def _wait_list(waits, wait_for):
    """(count, cl_event array) of a list of pyopencl events plus wait_for (a list of
    events, or one)."""
    if wait_for is not None and hasattr(wait_for, "int_ptr"):
        wait_for = [wait_for]
    if wait_for is not None:
        wait_for = _as_list(wait_for, "wait_for", "a list of pyopencl.Event")
        waits = waits + wait_for
    n = len(waits)
    if not n:
        return 0, None
    try:
        return n, (c_void_p * n)(*[e.int_ptr for e in waits])
    except AttributeError:
        raise ArgumentTypeError(
            "wait_for must be a list of pyopencl.Event; got "
            f"{[type(e).__name__ for e in wait_for]}") from None


def _as_list(v, name, what):
    """The items of v, an iterable other than a str or an array."""
    if isinstance(v, (str, bytes, np.ndarray)) or _is_cl(v):
        raise ArgumentTypeError(f"{name} is a {type(v).__name__}; it must be {what}")
    try:
        return list(v)
    except TypeError:
        raise ArgumentTypeError(f"{name} is a {type(v).__name__}; it must be {what}") \
            from None


def _softmax_algo(algo):
    a = _ALGOS.get(algo) if algo.__class__ is str else None
    return _algo(algo) if a is None else a


def _cl_softmax(x, algo, out, wait_for):
    mx, rows, cols, code = _cl_view(x, "x")
    q = _cl_queue(x)
    a = _softmax_algo(algo)
    y, my = _cl_out(out, x, q, cols)
    if not rows:
        return y
    waits = x.events
    if y is not x and y.events:
        waits = waits + y.events
    n, wl = _wait_list(waits, wait_for) if waits or wait_for else (0, None)
    ev = c_void_p()
    st = _L.clnorm_softmax(q.int_ptr, code, rows, cols, mx, my, a, n, wl, byref(ev))
    if st:
        _L.raise_status(st)
    # The library hands over a new event reference: the pyopencl Event takes it.
    y.add_event(_cl_event.from_int_ptr(ev.value, retain=False))
    return y


def _cl_rmsnorm(x, gamma, eps, out, wait_for):
    mx, rows, cols, code = _cl_view(x, "x")
    q = _cl_queue(x)
    e = _eps(eps)
    y, my = _cl_out(out, x, q, cols)
    g, dg = _cl_gamma(gamma, x, q, cols)
    if not rows:
        return y
    waits = x.events
    if dg is not None and dg.events:
        waits = waits + dg.events
    if y is not x and y.events:
        waits = waits + y.events
    n, wl = _wait_list(waits, wait_for) if waits or wait_for else (0, None)
    ev = c_void_p()
    st = _L.clnorm_rmsnorm(q.int_ptr, code, rows, cols, mx, g, my, e, n, wl, byref(ev))
    if st:
        _L.raise_status(st)
    y.add_event(_cl_event.from_int_ptr(ev.value, retain=False))
    return y


def _cl_add_rmsnorm(x, residual, gamma, eps, update_residual, out, wait_for):
    mx, rows, cols, code = _cl_view(x, "x")
    q = _cl_queue(x)
    if not _is_cl(residual):
        raise ArgumentTypeError(
            f"residual is a {type(residual).__name__}; with a pyopencl x it must be a "
            "pyopencl.array.Array")
    _same_as_x(residual, "residual", x)
    mr = _cl_view(residual, "residual")[0]
    e = _eps(eps)
    y, my = _cl_out(out, x, q, cols)
    g, dg = _cl_gamma(gamma, x, q, cols)
    if not rows:
        return y
    waits = x.events + residual.events
    if dg is not None:
        waits = waits + dg.events
    if y is not x:
        waits = waits + y.events
    n, wl = _wait_list(waits, wait_for) if waits or wait_for else (0, None)
    ev = c_void_p()
    upd = 1 if _flag(update_residual, "update_residual") else 0
    st = _L.clnorm_add_rmsnorm(q.int_ptr, code, rows, cols, mx, mr, upd, g, my, e,
                               n, wl, byref(ev))
    if st:
        _L.raise_status(st)
    done = _cl_event.from_int_ptr(ev.value, retain=False)
    y.add_event(done)
    if upd:
        residual.add_event(done)
    return y


def _cl_softmax_stats(x, out, wait_for):
    mx, rows, cols, code = _cl_view(x, "x")
    q = _cl_queue(x)
    if out is None:
        m = _cl_array.empty(q, (rows,), _F32, allocator=x.allocator)
        l = _cl_array.empty(q, (rows,), _F32, allocator=x.allocator)
    else:
        try:
            m, l = out
        except (TypeError, ValueError):
            raise ArgumentTypeError("out must be a pair (row_max, row_sum)") from None
        for name, a in (("out[0]", m), ("out[1]", l)):
            if not _is_cl(a):
                raise ArgumentTypeError(
                    f"{name} is a {type(a).__name__}; it must be a pyopencl.array.Array")
            _cl_vector_check(a, name, rows, _F32, q, None, "a pyopencl.array.Array")
            if a.offset != 0:
                raise ArgumentError(f"{name} is at offset {a.offset}; the library writes "
                                    "rows floats at offset 0 of its buffer")
    if not rows:
        return m, l
    n, wl = _wait_list(x.events + m.events + l.events, wait_for)
    ev = c_void_p()
    st = _L.clnorm_softmax_stats(q.int_ptr, code, rows, cols, mx, m.base_data.int_ptr,
                                 l.base_data.int_ptr, n, wl, byref(ev))
    if st:
        _L.raise_status(st)
    done = _cl_event.from_int_ptr(ev.value, retain=False)
    m.add_event(done)
    l.add_event(done)
    return m, l


def _cl_stats_in(v, name, rows, q, x):
    """(cl_mem of a statistics vector, the array holding it) for pyopencl x."""
    return _cl_vector(v, name, rows, _F32, q, x, lambda a: _np_stats_in(a, name, rows),
                      "a numpy array or a pyopencl.array.Array")


def _cl_softmax_apply(x, row_max, row_sum, out, wait_for):
    mx, rows, cols, code = _cl_view(x, "x")
    q = _cl_queue(x)
    y, my = _cl_out(out, x, q, cols)
    if not rows:
        # Nothing to write, but the statistics are checked as with rows.
        for name, v in (("row_max", row_max), ("row_sum", row_sum)):
            _cl_vector_check(v, name, 0, _F32, q, lambda a: _np_stats_in(a, name, 0),
                             "a numpy array or a pyopencl.array.Array")
        return y
    m, dm = _cl_stats_in(row_max, "row_max", rows, q, x)
    l, dl = _cl_stats_in(row_sum, "row_sum", rows, q, x)
    waits = x.events + dm.events + dl.events
    if y is not x:
        waits = waits + y.events
    n, wl = _wait_list(waits, wait_for)
    ev = c_void_p()
    st = _L.clnorm_softmax_apply(q.int_ptr, code, rows, cols, mx, m, l, my, n, wl,
                                 byref(ev))
    if st:
        _L.raise_status(st)
    y.add_event(_cl_event.from_int_ptr(ev.value, retain=False))
    return y


def _no_wait_for(wait_for):
    if wait_for:
        raise ArgumentTypeError("wait_for applies to pyopencl arrays only; x is numpy")


# ---- sessions ----------------------------------------------------------------------

class Session:
    """One OpenCL context and one in-order queue on one device (clnorm_session).

    spec: None means the CLNORM_DEVICE environment variable, and where that is unset
    the first GPU, else the first device. Otherwise "P:D" (platform and device index
    as clnorm.devices() and `python -m clnorm devices` list them), "cpu" or "gpu", or
    a case-insensitive substring of "<platform name> <platform vendor> <device name>
    <device vendor>" such as "pocl", "nvidia" or "llvmpipe"; a clnorm.Device is taken
    as its spec. Raises clnorm.Error (CLNORM_DEVICE_NOT_FOUND, ...) on failure.

    The methods are the module's functions on this session's device. numpy arrays
    run here; pyopencl arrays run on their own queue whichever session is used. A
    session may be used from many threads at once. close() (or leaving a `with`
    block) releases it; it must not race with calls still using the session.
    """

    def __init__(self, spec=None):
        if isinstance(spec, Device):
            spec = spec.spec
        if spec is not None and not isinstance(spec, str):
            raise ArgumentTypeError(
                f"spec is a {type(spec).__name__}; it must be None, a str or a "
                "clnorm.Device")
        raw = None
        if spec is not None:
            # The library reads a C string: a NUL would cut the spec short silently.
            if "\0" in spec:
                raise ArgumentError(f"spec = {spec!r} contains a NUL character")
            try:
                raw = spec.encode()
            except UnicodeEncodeError:
                raise ArgumentError(f"spec = {spec!r} is not valid UTF-8 text") from None
        h = c_void_p()
        _L.check(_L.clnorm_session_create(raw, byref(h)))
        self._h = h.value
        self.spec = spec
        #: The device's CL_DEVICE_NAME.
        self.device_name = _L.clnorm_session_device_name(self._h).decode(errors="replace")
        self._pyopencl = None

    def _ptr(self):
        h = self._h
        if h is None:
            raise Error("CLNORM_INVALID_ARGUMENT", "the session is closed")
        return h

    def close(self):
        """Finishes the queue and releases the session. Idempotent."""
        h, self._h = getattr(self, "_h", None), None
        if h is not None and _L is not None and _L.clnorm_session_destroy is not None:
            _L.clnorm_session_destroy(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._h is None else repr(self.device_name)
        return f"clnorm.Session({self.spec!r}: {state})"

    @property
    def context_ptr(self):
        """The session's cl_context as an int (borrowed: valid until close())."""
        return _L.clnorm_session_context(self._ptr())

    @property
    def queue_ptr(self):
        """The session's cl_command_queue as an int (borrowed: valid until close())."""
        return _L.clnorm_session_queue(self._ptr())

    def _wrappers(self):
        if self._pyopencl is None:
            import pyopencl as cl
            # retain=True: the wrappers hold their own references, so they outlive
            # close() safely.
            ctx = cl.Context.from_int_ptr(self.context_ptr, retain=True)
            q = cl.CommandQueue.from_int_ptr(self.queue_ptr, retain=True)
            self._pyopencl = (ctx, q)
        return self._pyopencl

    @property
    def context(self):
        """The session's context as a pyopencl.Context (needs pyopencl)."""
        return self._wrappers()[0]

    @property
    def queue(self):
        """The session's in-order queue as a pyopencl.CommandQueue (needs pyopencl):
        arrays made on it (pyopencl.array.to_device(s.queue, a)) run on this device."""
        return self._wrappers()[1]

    def warmup(self):
        """Builds every program this device needs now instead of at first use."""
        _L.check(_L.clnorm_warmup(self.queue_ptr))

    def softmax(self, x, algo="auto", *, out=None, wait_for=None):
        """clnorm.softmax on this session's device; see its documentation."""
        if _is_cl(x):
            return _cl_softmax(x, algo, out, wait_for)
        _no_wait_for(wait_for)
        return _np_softmax(self, x, algo, out)

    def rmsnorm(self, x, gamma=None, eps=1e-6, *, out=None, wait_for=None):
        """clnorm.rmsnorm on this session's device; see its documentation."""
        if _is_cl(x):
            return _cl_rmsnorm(x, gamma, eps, out, wait_for)
        _no_wait_for(wait_for)
        return _np_rmsnorm(self, x, gamma, eps, out)

    def add_rmsnorm(self, x, residual, gamma=None, eps=1e-6, update_residual=True, *,
                    out=None, wait_for=None):
        """clnorm.add_rmsnorm on this session's device; see its documentation."""
        if _is_cl(x):
            return _cl_add_rmsnorm(x, residual, gamma, eps, update_residual, out, wait_for)
        _no_wait_for(wait_for)
        return _np_add_rmsnorm(self, x, residual, gamma, eps, update_residual, out)

    def softmax_stats(self, x, *, out=None, wait_for=None):
        """clnorm.softmax_stats on this session's device; see its documentation."""
        if _is_cl(x):
            return _cl_softmax_stats(x, out, wait_for)
        _no_wait_for(wait_for)
        if out is not None:
            raise ArgumentTypeError("out applies to pyopencl arrays only in softmax_stats")
        return _np_softmax_stats(self, x)

    def softmax_apply(self, x, row_max, row_sum, *, out=None, wait_for=None):
        """clnorm.softmax_apply on this session's device; see its documentation."""
        if _is_cl(x):
            return _cl_softmax_apply(x, row_max, row_sum, out, wait_for)
        _no_wait_for(wait_for)
        return _np_softmax_apply(self, x, row_max, row_sum, out)


_default = None
_default_lock = threading.Lock()


def default_session():
    """The session that the module's functions use for numpy arrays: created on first
    use with spec None (so CLNORM_DEVICE chooses the device) and kept; creation is
    thread-safe and happens once."""
    global _default
    s = _default
    if s is None:
        with _default_lock:
            if _default is None:
                _default = Session()
            s = _default
    return s


# ---- the module's functions ---------------------------------------------------------

def softmax(x, algo="auto", *, out=None, wait_for=None):
    """Softmax of each row: y[r, j] = exp(x[r, j] - m) / l with m = max_j x[r, j] and
    l = sum_j exp(x[r, j] - m).

    x: 2-D (rows, cols), cols >= 1, float32, float16 or bfloat16; a numpy array
    (row-major, rows may be strided: a column slice of a wider array) or a
    pyopencl.array.Array (any offset and row stride; column stride = item size).
    algo: "auto" (the library picks per device and shape), "three_pass" (max,
    sum-of-exp, write) or "online" (one statistics pass with rescaling, then write).
    out: optional array of x's kind, shape and dtype to write; may be x itself (in
    place). Elements are accumulated in float32.
    wait_for: pyopencl events to wait for (pyopencl arrays only), besides the events
    already attached to x and out.

    Special values: a NaN anywhere in a row makes the whole row NaN; a row of only
    -inf gives zeros; a row with k >= 1 entries of +inf and no NaN gives 1/k at those
    entries and 0 elsewhere; other -inf entries give 0.

    Returns y (out if given): a numpy array, or for pyopencl input a pyopencl array
    whose events include the operation's (the call does not wait for it).
    Raises clnorm.Error; refused arguments raise clnorm.ArgumentError (a ValueError)
    or clnorm.ArgumentTypeError (a TypeError), both clnorm.Error.
    """
    if _is_cl(x):
        return _cl_softmax(x, algo, out, wait_for)
    _no_wait_for(wait_for)
    return _np_softmax(default_session(), x, algo, out)


def rmsnorm(x, gamma=None, eps=1e-6, *, out=None, wait_for=None):
    """RMSNorm of each row: y[r, j] = x[r, j] * (sum_j x[r, j]^2 / cols + eps)^(-1/2)
    * gamma[j]. No mean is subtracted; sums are accumulated in float32 or wider.

    x: as for softmax. gamma: None (no scale) or a 1-D array of cols elements of x's
    dtype (numpy, or pyopencl for pyopencl x; a numpy gamma with pyopencl x is
    uploaded for the call). eps: finite, >= 0. out, wait_for: as for softmax.

    Special values: a NaN in a row makes the whole row NaN; otherwise the result is
    what IEEE arithmetic on the definition gives.
    """
    if _is_cl(x):
        return _cl_rmsnorm(x, gamma, eps, out, wait_for)
    _no_wait_for(wait_for)
    return _np_rmsnorm(default_session(), x, gamma, eps, out)


def add_rmsnorm(x, residual, gamma=None, eps=1e-6, update_residual=True, *, out=None,
                wait_for=None):
    """Fused residual add and RMSNorm, per row: h = x + residual (computed in float32
    and rounded to the dtype); residual <- h in place when update_residual; y =
    rmsnorm(h, gamma, eps). The rounded h is what gets normalised, so y equals
    rmsnorm of the updated residual.

    residual: same kind, shape and dtype as x; written in place when update_residual
    (then it must be writable and must not overlap out). gamma, eps, out, wait_for:
    as for rmsnorm; out may be x. Returns y.
    """
    if _is_cl(x):
        return _cl_add_rmsnorm(x, residual, gamma, eps, update_residual, out, wait_for)
    _no_wait_for(wait_for)
    return _np_add_rmsnorm(default_session(), x, residual, gamma, eps, update_residual,
                           out)


def softmax_stats(x, *, out=None, wait_for=None):
    """Online-softmax statistics of each row, as float32: (row_max, row_sum) with
    row_max[r] = max_j x[r, j] and row_sum[r] = sum_j exp(x[r, j] - row_max[r]).

    x: as for softmax. Returns two 1-D float32 arrays of rows elements (numpy, or
    pyopencl for pyopencl x). out (pyopencl only): a pair of float32 pyopencl arrays
    of shape (rows,) at offset 0 to write instead. A NaN row gives (NaN, NaN); a row
    of only -inf gives (-inf, 0); k entries of +inf give (+inf, k). Merge the
    statistics of column shards with clnorm.stats_merge.
    """
    if _is_cl(x):
        return _cl_softmax_stats(x, out, wait_for)
    _no_wait_for(wait_for)
    if out is not None:
        raise ArgumentTypeError("out applies to pyopencl arrays only in softmax_stats")
    return _np_softmax_stats(default_session(), x)


def softmax_apply(x, row_max, row_sum, *, out=None, wait_for=None):
    """Softmax of rows with their statistics given: y[r, j] = exp(x[r, j] -
    row_max[r]) / row_sum[r]. With the whole rows' statistics (each column shard's
    softmax_stats merged with stats_merge), a column shard gets what softmax of the
    whole rows writes there: the last step of a softmax sharded across devices or
    processes.

    x, out, wait_for: as for softmax. row_max, row_sum: 1-D float32 arrays of rows
    elements; numpy, or for pyopencl x pyopencl arrays (or numpy ones, uploaded for
    the call). Given statistics, special values follow the contract: (-inf, 0) gives
    zeros; a NaN statistic gives NaN; row_max = +inf gives 1/row_sum at the +inf
    entries and 0 elsewhere. Returns y.
    """
    if _is_cl(x):
        return _cl_softmax_apply(x, row_max, row_sum, out, wait_for)
    _no_wait_for(wait_for)
    return _np_softmax_apply(default_session(), x, row_max, row_sum, out)


def _shard_rows_check(i, rows, dt, rows0, dt0):
    if i and (rows != rows0 or dt != dt0):
        raise ArgumentError(
            f"shards[{i}] holds {rows} rows of {dt} but shards[0] {rows0} rows of {dt0}: "
            "every shard must hold the same rows in the same dtype")


def _np_softmax_sharded(shards, outs, sessions):
    n = len(shards)
    if sessions is None:
        sessions = [default_session()] * n
    else:
        sessions = _as_list(sessions, "sessions", "a list of clnorm.Session, one per shard")
        if len(sessions) != n:
            raise ArgumentError(f"sessions has {len(sessions)} entries for {n} shards")
        for i, se in enumerate(sessions):
            if not isinstance(se, Session):
                raise ArgumentTypeError(
                    f"sessions[{i}] is a {type(se).__name__}; it must be a clnorm.Session")
    # Every argument is checked before any device work, so a refused request writes
    # no shard: the shards are packed and their outputs prepared first.
    xs, ys, yps = [], [], []
    for i, (x, o) in enumerate(zip(shards, outs)):
        rows, _, _, xp = _np_in(x, f"shards[{i}]")
        _shard_rows_check(i, rows, x.dtype, len(xs[0]) if xs else rows, shards[0].dtype)
        y, yp = _np_out(o, x, f"out[{i}]")
        xs.append(xp), ys.append(y), yps.append(yp)
    # Shard i is written after shard j's statistics but before its write, as in the
    # library's clnorm_softmax_sharded: no output may share memory with another
    # shard's input or output.
    for i, j in itertools.permutations(range(n), 2):
        for what, other in (("shards", shards[j]), ("out", ys[j])):
            if np.shares_memory(ys[i], other):
                raise ArgumentError(
                    f"out[{i}] shares memory with {what}[{j}]: no shard's output may share "
                    "an element with another shard's input or output")
    rows = len(xs[0])
    m, l = np.full(rows, -np.inf, _F32), np.zeros(rows, _F32)
    for se, xp in zip(sessions, xs):
        m, l = stats_merge(m, l, *_np_softmax_stats(se, xp))
    for se, xp, y, yp in zip(sessions, xs, ys, yps):
        _np_writeback(y, _np_softmax_apply(se, xp, m, l, yp))
    return ys, (m, l)


def _cl_softmax_sharded(shards, outs):
    n = len(shards)
    arr = (_L.Shard * n)()
    ys, waits = [], []
    rows0 = code0 = None
    for i, (x, o) in enumerate(zip(shards, outs)):
        mx, rows, cols, code = _cl_view(x, f"shards[{i}]")
        if i == 0:
            rows0, code0 = rows, code
        _shard_rows_check(i, rows, x.dtype, rows0, shards[0].dtype)
        q = _cl_queue(x)
        y, my = _cl_out(o, x, q, cols)
        arr[i].queue, arr[i].cols, arr[i].x, arr[i].y = q.int_ptr, cols, mx, my
        ys.append(y)
        waits += x.events if y is x else x.events + y.events
    m, l = np.empty(rows0, _F32), np.empty(rows0, _F32)
    if not rows0:
        return ys, (m, l)
    # The library's call takes no wait lists: what is pending on the arrays ends first
    # (one event at a time: the shards' events may belong to different contexts).
    for e in waits:
        e.wait()
    _L.check(_L.clnorm_softmax_sharded(code0, rows0, n, arr, m.ctypes.data, l.ctypes.data))
    return ys, (m, l)


def softmax_sharded(shards, *, out=None, sessions=None, stats=False):
    """Softmax over the columns of the shards concatenated in order: rows held as
    column shards, on one device or several (clnorm_softmax_sharded). Each shard's
    statistics are taken on its device, merged on the host, and every shard is then
    written with the whole rows' statistics, so each gets what softmax of the whole
    rows writes there.

    shards: a list of 2-D arrays holding the same rows in the same dtype, as for
    softmax; all pyopencl arrays (each on its own queue: any mix of queues, devices
    and platforms) or all numpy arrays. sessions (numpy only): the clnorm.Session of
    each shard (default: the default session for all). out: None, or a list of one
    array per shard as softmax's out (a shard itself for in place). A refused request
    writes no shard. The call blocks until every shard is written (pyopencl arrays'
    pending events end first).

    Returns the list of outputs; with stats=True, (outputs, (row_max, row_sum)), the
    whole rows' statistics as numpy float32 arrays (for a loss, log(row_sum) + row_max
    - x[target]).
    """
    shards = _as_list(shards, "shards", "a list of arrays, one per column shard")
    n = len(shards)
    if n == 0:
        raise ArgumentError("shards is empty: there must be at least one column shard")
    outs = [None] * n if out is None else _as_list(out, "out", "a list of arrays, one "
                                                   "per shard")
    if len(outs) != n:
        raise ArgumentError(f"out has {len(outs)} arrays for {n} shards")
    kinds = {bool(_is_cl(a)) for a in shards}
    if len(kinds) > 1:
        raise ArgumentTypeError(
            "shards mix numpy and pyopencl arrays; they must be all of one kind")
    if kinds == {True}:
        if sessions is not None:
            raise ArgumentTypeError("sessions applies to numpy shards only; pyopencl "
                                    "shards run on their own queues")
        ys, st = _cl_softmax_sharded(shards, outs)
    else:
        ys, st = _np_softmax_sharded(shards, outs, sessions)
    return (ys, st) if stats else ys


def _merge_weight(mp, m):
    # As the library's merge: a part at the union's maximum weighs 1 (0 where that
    # maximum is -inf), so -inf - -inf and inf - inf are never taken.
    with np.errstate(invalid="ignore", over="ignore"):
        w = np.exp(mp - m)
    return np.where(mp == m, np.where(np.isneginf(m), np.float32(0), np.float32(1)), w)


def stats_merge(ma, la, mb, lb):
    """(m, l) of the union of two parts' softmax statistics: m = max(ma, mb),
    l = e^(ma - m) la + e^(mb - m) lb. (-inf, 0) is the identity; a NaN in any input
    gives (NaN, NaN).

    Python numbers give a pair of floats (computed by the library's
    clnorm_stats_merge). numpy arrays (or a mix, broadcast together) give a pair of
    float32 arrays, computed elementwise by numpy with the same rules.
    """
    names = ("ma", "la", "mb", "lb")
    if all(isinstance(v, (int, float, np.floating, np.integer)) for v in (ma, la, mb, lb)):
        vals = []
        for name, v in zip(names, (ma, la, mb, lb)):
            try:
                vals.append(float(v))
            except OverflowError:
                raise ArgumentError(f"{name} = {v!r} does not fit a float") from None
        m, l = c_float(), c_float()
        _L.clnorm_stats_merge(*vals, byref(m), byref(l))
        return m.value, l.value
    arrs = []
    for name, v in zip(names, (ma, la, mb, lb)):
        try:
            arrs.append(np.asarray(v, _F32))
        except (TypeError, ValueError, OverflowError):
            raise ArgumentTypeError(f"{name} = {v!r} is not a number or an array of "
                                    "numbers") from None
    try:
        ma, la, mb, lb = np.broadcast_arrays(*arrs)
    except ValueError:
        raise ArgumentError("ma, la, mb and lb have shapes "
                            f"{tuple(tuple(a.shape) for a in arrs)}, which do not "
                            "broadcast together") from None
    m = np.maximum(ma, mb)
    with np.errstate(invalid="ignore", over="ignore"):
        wa = np.where(la == 0, np.float32(0), la * _merge_weight(ma, m))
        wb = np.where(lb == 0, np.float32(0), lb * _merge_weight(mb, m))
        l = (wa + wb).astype(_F32)
    nan = np.isnan(ma) | np.isnan(la) | np.isnan(mb) | np.isnan(lb)
    m = np.where(nan, np.float32(np.nan), m).astype(_F32)
    l = np.where(nan, np.float32(np.nan), l).astype(_F32)
    return m, l


def devices():
    """Every OpenCL device, as clnorm.Device tuples (spec "P:D", platform, name,
    vendor, type, version, ...) in the order `clnorm devices` numbers them. A spec
    (or the Device itself) can be given to clnorm.Session."""
    return _list_devices()
