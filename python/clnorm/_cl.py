"""The few OpenCL calls the package makes itself, through the loader that libclnorm
is linked against: listing platforms and devices in the order `clnorm devices`
numbers them (the "P:D" specs)."""
import ctypes
import ctypes.util
from collections import namedtuple

__all__ = ["Device", "list_devices"]

_CL_PLATFORM_NAME = 0x0902
_CL_PLATFORM_VENDOR = 0x0903
_CL_DEVICE_TYPE = 0x1000
_CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002
_CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F
_CL_DEVICE_NAME = 0x102B
_CL_DEVICE_VENDOR = 0x102C
_CL_DRIVER_VERSION = 0x102D
_CL_DEVICE_VERSION = 0x102F
_CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
_TYPES = [(1 << 1, "CPU"), (1 << 2, "GPU"), (1 << 3, "ACCELERATOR"), (1 << 4, "CUSTOM")]
# The library lists at most this many platforms and devices per platform.
_MAX_PLATFORMS = 32
_MAX_DEVICES = 64

Device = namedtuple("Device", [
    "spec",            # "P:D": platform and device index, a spec Session() accepts
    "platform",        # platform name
    "platform_vendor",
    "name",            # device name
    "vendor",          # device vendor
    "type",            # "CPU", "GPU", "ACCELERATOR", "CUSTOM" (joined with "|")
    "version",         # CL_DEVICE_VERSION
    "driver_version",
    "compute_units",
    "global_mem_bytes",
])

_cl = None


def _loader():
    """The OpenCL loader: libclnorm has loaded it already, so this finds that copy."""
    global _cl
    if _cl is None:
        last = None
        for name in ("libOpenCL.so.1", ctypes.util.find_library("OpenCL"), "OpenCL.dll",
                     "/System/Library/Frameworks/OpenCL.framework/OpenCL"):
            if not name:
                continue
            try:
                cl = ctypes.CDLL(name)
                break
            except OSError as e:
                last = e
        else:
            raise OSError(f"cannot load the OpenCL loader (libOpenCL.so.1): {last}")
        P = ctypes.c_void_p
        cl.clGetPlatformIDs.argtypes = [ctypes.c_uint, P, ctypes.POINTER(ctypes.c_uint)]
        cl.clGetPlatformIDs.restype = ctypes.c_int
        cl.clGetPlatformInfo.argtypes = [P, ctypes.c_uint, ctypes.c_size_t, P,
                                         ctypes.POINTER(ctypes.c_size_t)]
        cl.clGetPlatformInfo.restype = ctypes.c_int
        cl.clGetDeviceIDs.argtypes = [P, ctypes.c_ulonglong, ctypes.c_uint, P,
                                      ctypes.POINTER(ctypes.c_uint)]
        cl.clGetDeviceIDs.restype = ctypes.c_int
        cl.clGetDeviceInfo.argtypes = [P, ctypes.c_uint, ctypes.c_size_t, P,
                                       ctypes.POINTER(ctypes.c_size_t)]
        cl.clGetDeviceInfo.restype = ctypes.c_int
        _cl = cl
    return _cl


def _string(fn, handle, param):
    buf = ctypes.create_string_buffer(1024)
    if fn(handle, param, len(buf) - 1, buf, None) != 0:
        return ""
    return buf.value.decode(errors="replace").strip()


def _scalar(handle, param, ctype):
    v = ctype(0)
    if _loader().clGetDeviceInfo(handle, param, ctypes.sizeof(v), ctypes.byref(v), None):
        return 0
    return v.value


def list_devices():
    """Every OpenCL device, in the order and with the "P:D" numbers of `clnorm devices`.

    A machine without an OpenCL platform gives an empty list."""
    cl = _loader()
    plats = (ctypes.c_void_p * _MAX_PLATFORMS)()
    n = ctypes.c_uint(0)
    err = cl.clGetPlatformIDs(_MAX_PLATFORMS, plats, ctypes.byref(n))
    # -1001 is CL_PLATFORM_NOT_FOUND_KHR: no ICD installed, so no device.
    if err == -1001 or n.value == 0:
        return []
    if err != 0:
        from ._lib import Error
        raise Error("CLNORM_OPENCL_ERROR", f"clGetPlatformIDs failed with OpenCL error {err}")
    out = []
    for pi in range(min(n.value, _MAX_PLATFORMS)):
        p = plats[pi]
        devs = (ctypes.c_void_p * _MAX_DEVICES)()
        nd = ctypes.c_uint(0)
        # A platform without devices contributes nothing, as in the library.
        if cl.clGetDeviceIDs(p, _CL_DEVICE_TYPE_ALL, _MAX_DEVICES, devs, ctypes.byref(nd)):
            continue
        pname = _string(cl.clGetPlatformInfo, p, _CL_PLATFORM_NAME)
        pvendor = _string(cl.clGetPlatformInfo, p, _CL_PLATFORM_VENDOR)
        for di in range(min(nd.value, _MAX_DEVICES)):
            d = devs[di]
            t = _scalar(d, _CL_DEVICE_TYPE, ctypes.c_ulonglong)
            tname = "|".join(name for bit, name in _TYPES if t & bit) or "DEFAULT"
            out.append(Device(
                spec=f"{pi}:{di}", platform=pname, platform_vendor=pvendor,
                name=_string(cl.clGetDeviceInfo, d, _CL_DEVICE_NAME),
                vendor=_string(cl.clGetDeviceInfo, d, _CL_DEVICE_VENDOR), type=tname,
                version=_string(cl.clGetDeviceInfo, d, _CL_DEVICE_VERSION),
                driver_version=_string(cl.clGetDeviceInfo, d, _CL_DRIVER_VERSION),
                compute_units=_scalar(d, _CL_DEVICE_MAX_COMPUTE_UNITS, ctypes.c_uint),
                global_mem_bytes=_scalar(d, _CL_DEVICE_GLOBAL_MEM_SIZE, ctypes.c_ulonglong)))
    return out
