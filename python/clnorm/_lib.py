"""Loading libclnorm with ctypes and declaring its functions, once, at import.

Nothing here is public; clnorm/__init__.py builds the API on top of it.
"""
import ctypes
import ctypes.util
import glob
import os
import sys

__all__ = ["lib", "library_path", "Matrix", "Shard", "Error", "ArgumentError",
           "ArgumentTypeError", "check", "raise_status"]

c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_float = ctypes.c_float
c_char_p = ctypes.c_char_p


class Matrix(ctypes.Structure):
    """clnorm_matrix: element (r, c) is at index offset + r*ld + c of mem."""
    _fields_ = [("mem", c_void_p), ("offset", c_size_t), ("ld", c_size_t)]


class Shard(ctypes.Structure):
    """clnorm_shard: one column shard of the same rows on its own queue."""
    _fields_ = [("queue", c_void_p), ("cols", c_size_t), ("x", Matrix), ("y", Matrix)]


def _package_copies():
    """The copies of the library that the wheel installed inside the package."""
    # Every folder of the package: an editable install lists the build's output
    # folder beside the source folder.
    pkg = sys.modules.get(__package__)
    folders = list(getattr(pkg, "__path__", None) or [])
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in folders:
        folders.append(here)
    if sys.platform == "darwin":
        patterns = ["lib*/libclnorm*.dylib", "libclnorm*.dylib"]
    elif sys.platform == "win32":
        patterns = ["bin/clnorm.dll", "clnorm.dll"]
    else:
        patterns = ["lib*/libclnorm.so*", "libclnorm.so*"]
    found = []
    for folder in folders:
        here_found = []
        for p in patterns:
            here_found.extend(glob.glob(os.path.join(folder, p)))
        # The shortest name first: the soname (libclnorm.so.0.1) before the full
        # version (libclnorm.so.0.1.0).
        found.extend(sorted(here_found, key=lambda f: (len(os.path.basename(f)), f)))
    return found


def _load():
    """CLNORM_LIBRARY, else the package's own copy, else the system's libclnorm."""
    env = os.environ.get("CLNORM_LIBRARY")
    if env:
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError(
                f"clnorm: cannot load CLNORM_LIBRARY={env!r}: {e}") from e
    errors = []
    for path in _package_copies():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    name = ctypes.util.find_library("clnorm")
    if name:
        try:
            return ctypes.CDLL(name), name
        except OSError as e:
            errors.append(f"{name}: {e}")
    detail = ("; ".join(errors)) if errors else "no copy inside the package and none " \
        "on the system library path"
    raise ImportError(
        "clnorm: cannot find the clnorm shared library (" + detail + "). Install the "
        "package with `pip install ./python` from the repository, or set "
        "CLNORM_LIBRARY to the path of libclnorm.so.")


lib, library_path = _load()


def _declare(name, restype, argtypes, required=True):
    fn = getattr(lib, name, None)
    if fn is None:
        if required:
            raise ImportError(f"clnorm: {library_path} has no function {name}; "
                              "is it an older libclnorm?")
        return None
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


P = c_void_p  # every OpenCL handle, host pointer and cl_event* alike
WAIT = [c_uint, P, P]  # num_wait, const cl_event *wait_list, cl_event *event

clnorm_version = _declare("clnorm_version", c_char_p, [])
clnorm_status_string = _declare("clnorm_status_string", c_char_p, [c_int])
clnorm_last_error = _declare("clnorm_last_error", c_char_p, [])
clnorm_rmsnorm = _declare("clnorm_rmsnorm", c_int,
                          [P, c_int, c_size_t, c_size_t, Matrix, P, Matrix, c_float] + WAIT)
clnorm_softmax = _declare("clnorm_softmax", c_int,
                          [P, c_int, c_size_t, c_size_t, Matrix, Matrix, c_int] + WAIT)
clnorm_softmax_stats = _declare("clnorm_softmax_stats", c_int,
                                [P, c_int, c_size_t, c_size_t, Matrix, P, P] + WAIT)
clnorm_softmax_apply = _declare("clnorm_softmax_apply", c_int,
                                [P, c_int, c_size_t, c_size_t, Matrix, P, P, Matrix] + WAIT)
clnorm_softmax_sharded = _declare("clnorm_softmax_sharded", c_int,
                                  [c_int, c_size_t, c_size_t, P, P, P])
clnorm_add_rmsnorm = _declare(
    "clnorm_add_rmsnorm", c_int,
    [P, c_int, c_size_t, c_size_t, Matrix, Matrix, c_int, P, Matrix, c_float] + WAIT)
clnorm_stats_merge = _declare(
    "clnorm_stats_merge", None,
    [c_float, c_float, c_float, c_float, ctypes.POINTER(c_float), ctypes.POINTER(c_float)])
clnorm_session_create = _declare("clnorm_session_create", c_int,
                                 [c_char_p, ctypes.POINTER(c_void_p)])
clnorm_session_destroy = _declare("clnorm_session_destroy", None, [P])
clnorm_session_context = _declare("clnorm_session_context", c_void_p, [P])
clnorm_session_queue = _declare("clnorm_session_queue", c_void_p, [P])
clnorm_session_device_name = _declare("clnorm_session_device_name", c_char_p, [P])
clnorm_rmsnorm_host = _declare("clnorm_rmsnorm_host", c_int,
                               [P, c_int, c_size_t, c_size_t, P, P, P, c_float])
clnorm_softmax_host = _declare("clnorm_softmax_host", c_int,
                               [P, c_int, c_size_t, c_size_t, P, P, c_int])
clnorm_softmax_stats_host = _declare("clnorm_softmax_stats_host", c_int,
                                     [P, c_int, c_size_t, c_size_t, P, P, P])
clnorm_softmax_apply_host = _declare("clnorm_softmax_apply_host", c_int,
                                     [P, c_int, c_size_t, c_size_t, P, P, P, P])
clnorm_add_rmsnorm_host = _declare(
    "clnorm_add_rmsnorm_host", c_int,
    [P, c_int, c_size_t, c_size_t, P, P, c_int, P, P, c_float])
clnorm_warmup = _declare("clnorm_warmup", c_int, [P])
clnorm_release_cache = _declare("clnorm_release_cache", None, [P])


STATUS_NAMES = {i: clnorm_status_string(i).decode() for i in range(8)}
INVALID_ARGUMENT = 1


class Error(Exception):
    """Every failure of a clnorm call.

    status: the clnorm_status_string name ("CLNORM_INVALID_ARGUMENT", ...);
    code: its numeric value; message: what was wrong, with the offending values
    (the library's clnorm_last_error, or the Python layer's own check).
    """

    def __init__(self, status, message, code=None):
        self.status = status
        self.message = message
        self.code = code if code is not None else next(
            (k for k, v in STATUS_NAMES.items() if v == status), -1)
        super().__init__(f"{status}: {message}")


class ArgumentError(Error, ValueError):
    """A refused value (shape, stride, eps, ...): a clnorm.Error and a ValueError."""

    def __init__(self, message, status="CLNORM_INVALID_ARGUMENT", code=None):
        super().__init__(status, message, code)


class ArgumentTypeError(Error, TypeError):
    """An argument of the wrong type or dtype: a clnorm.Error and a TypeError."""

    def __init__(self, message):
        super().__init__("CLNORM_INVALID_ARGUMENT", message)


for _cls in (Error, ArgumentError, ArgumentTypeError):
    _cls.__module__ = "clnorm"


def raise_status(st):
    """Raises the Error for a failed call's status, on the thread that made it."""
    msg = clnorm_last_error().decode(errors="replace")
    name = STATUS_NAMES.get(st) or clnorm_status_string(st).decode()
    if st == INVALID_ARGUMENT:
        raise ArgumentError(msg, name, st)
    raise Error(name, msg, st)


def check(st):
    if st:
        raise_status(st)
