"""Refused arguments: each raises clnorm.Error (also a ValueError or TypeError) with a
message that names the offending value."""
import numpy as np
import pytest

import clnorm

F32 = np.float32


def x32(rows=3, cols=5):
    return np.ones((rows, cols), F32)


def refused(kind, *words):
    """Context manager: raises clnorm.Error of the given Python kind, naming words."""
    class _Check:
        def __enter__(self):
            self.cm = pytest.raises(kind)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.cm.__exit__(*exc)
            e = self.info.value
            assert isinstance(e, clnorm.Error), type(e)
            assert e.status == "CLNORM_INVALID_ARGUMENT", e.status
            for w in words:
                assert w in str(e), f"{w!r} not in {str(e)!r}"
                assert w in e.message
            return handled
    return _Check()


@pytest.mark.parametrize("fn", ["softmax", "rmsnorm", "softmax_stats"])
def test_shapes_and_layouts(fn):
    f = getattr(clnorm, fn)
    with refused(ValueError, "3 dimensions", "(2, 3, 4)"):
        f(np.ones((2, 3, 4), F32))
    with refused(ValueError, "1 dimensions", "(5,)"):
        f(np.ones(5, F32))
    with refused(ValueError, "cols is 0", "(3, 0)"):
        f(np.ones((3, 0), F32))
    with refused(TypeError, "numpy.ma.MaskedArray"):
        f(np.ma.masked_array(np.ones((2, 3), F32), mask=[[0, 1, 0], [0, 0, 0]]))


@pytest.mark.parametrize("dt", [np.float64, np.int32, np.complex64, ">f4"])
def test_dtypes(dt):
    x = np.ones((2, 3), dt)
    with refused(TypeError, f"x.dtype is {np.dtype(dt)}"):
        clnorm.softmax(x)


def test_not_an_array():
    with refused(TypeError, "x is a list"):
        clnorm.softmax([[1.0, 2.0]])
    with refused(TypeError, "x is a NoneType"):
        clnorm.rmsnorm(None)


@pytest.mark.parametrize("eps", [float("nan"), float("inf"), -1e-6, 1e39])
def test_eps(eps):
    with refused(ValueError, f"eps = {eps!r}"):
        clnorm.rmsnorm(x32(), eps=eps)
    with refused(ValueError, f"eps = {eps!r}"):
        clnorm.add_rmsnorm(x32(), x32(), eps=eps)


def test_eps_type():
    with refused(TypeError, "eps = 'small'"):
        clnorm.rmsnorm(x32(), eps="small")
    # A string that reads as a number is still not one.
    with refused(TypeError, "eps = '0.5'"):
        clnorm.rmsnorm(x32(), eps="0.5")


def test_gamma():
    with refused(ValueError, "gamma has shape (4,)", "(5,)"):
        clnorm.rmsnorm(x32(), np.ones(4, F32))
    with refused(ValueError, "gamma has shape (1, 5)"):
        clnorm.rmsnorm(x32(), np.ones((1, 5), F32))
    with refused(TypeError, "gamma.dtype is float64"):
        clnorm.rmsnorm(x32(), np.ones(5))
    with refused(TypeError, "gamma is a list"):
        clnorm.rmsnorm(x32(), [1.0] * 5)


def test_residual():
    with refused(ValueError, "residual has shape (3, 4)", "x has shape (3, 5)"):
        clnorm.add_rmsnorm(x32(), np.ones((3, 4), F32))
    with refused(TypeError, "residual.dtype is float16"):
        clnorm.add_rmsnorm(x32(), np.ones((3, 5), np.float16))
    r = x32()
    r.flags.writeable = False
    with refused(ValueError, "residual is read-only"):
        clnorm.add_rmsnorm(x32(), r)
    clnorm.add_rmsnorm(x32(), r, update_residual=False)  # read-only is fine then
    r = x32()
    with refused(ValueError, "out overlaps residual"):
        clnorm.add_rmsnorm(x32(), r, out=r)
    with refused(TypeError, "update_residual = array"):
        clnorm.add_rmsnorm(x32(), x32(), update_residual=np.array([1, 0]))


def test_out():
    with refused(ValueError, "out has shape (3, 4)"):
        clnorm.softmax(x32(), out=np.empty((3, 4), F32))
    with refused(TypeError, "out.dtype is float16"):
        clnorm.softmax(x32(), out=np.empty((3, 5), np.float16))
    o = np.empty((3, 5), F32)
    o.flags.writeable = False
    with refused(ValueError, "out is read-only"):
        clnorm.softmax(x32(), out=o)
    with refused(TypeError, "numpy.ma.MaskedArray"):
        clnorm.softmax(x32(), out=np.ma.masked_array(np.empty((3, 5), F32)))


def test_algo():
    with refused(ValueError, "algo = 'fast'"):
        clnorm.softmax(x32(), algo="fast")
    with refused(ValueError, "algo = 7"):
        clnorm.softmax(x32(), algo=7)


def test_wait_for_with_numpy():
    with refused(TypeError, "wait_for"):
        clnorm.softmax(x32(), wait_for=[object()])


def test_device_not_found():
    with pytest.raises(clnorm.Error) as e:
        clnorm.Session("no-such-device-xyz")
    assert e.value.status == "CLNORM_DEVICE_NOT_FOUND"
    assert e.value.code == 3
    assert "no-such-device-xyz" in e.value.message
    with pytest.raises(clnorm.Error) as e:
        clnorm.Session("99:0")
    assert e.value.status == "CLNORM_DEVICE_NOT_FOUND" and "99:0" in str(e.value)


def test_session_spec_type():
    with refused(TypeError, "spec is a int"):
        clnorm.Session(3)
    # The library reads a C string: a NUL or text that is not UTF-8 is refused here,
    # never cut short or left to the encoder.
    with refused(ValueError, "NUL"):
        clnorm.Session("po\0cl")
    with refused(ValueError, "UTF-8"):
        clnorm.Session("\udcff")


def test_list_arguments():
    with refused(TypeError, "shards is a NoneType"):
        clnorm.softmax_sharded(None)
    with refused(TypeError, "out is a int"):
        clnorm.softmax_sharded([x32()], out=5)
    with refused(TypeError, "sessions is a int"):
        clnorm.softmax_sharded([x32()], sessions=5)
    with refused(TypeError, "shards is a ndarray"):
        clnorm.softmax_sharded(x32())


def test_stats_merge_arguments():
    with refused(TypeError, "ma = 'a'"):
        clnorm.stats_merge("a", 1, 1, 1)
    with refused(ValueError, "la = 1000"):
        clnorm.stats_merge(1, 10 ** 400, 1, 1)
    with refused(ValueError, "do not broadcast"):
        clnorm.stats_merge(np.zeros(3, F32), np.ones(2, F32), 0, 1)


def test_error_is_one_class():
    assert issubclass(clnorm.ArgumentError, clnorm.Error)
    assert issubclass(clnorm.ArgumentError, ValueError)
    assert issubclass(clnorm.ArgumentTypeError, TypeError)
    e = clnorm.Error("CLNORM_OPENCL_ERROR", "boom")
    assert e.code == 7 and e.status == "CLNORM_OPENCL_ERROR" and "boom" in str(e)


# ---- pyopencl arrays: the library's own validation -----------------------------------

def test_device_refusals(cl, queue):
    import pyopencl.array as cla
    x = cla.to_device(queue, np.ones((4, 8), F32))
    # A partial overlap of x and y is the library's refusal, with its message.
    big = cla.to_device(queue, np.ones((4, 16), F32))
    with pytest.raises(clnorm.Error) as e:
        clnorm.softmax(big[:, 0:8], out=big[:, 1:9])
    assert e.value.status == "CLNORM_INVALID_ARGUMENT" and isinstance(e.value, ValueError)
    assert e.value.message, "the library's message is missing"
    with refused(TypeError, "out is a ndarray"):
        clnorm.softmax(x, out=np.empty((4, 8), F32))
    with refused(TypeError, "gamma.dtype is float16"):
        clnorm.rmsnorm(x, cla.to_device(queue, np.ones(8, np.float16)))
    with refused(ValueError, "gamma has shape (7,)"):
        clnorm.rmsnorm(x, cla.to_device(queue, np.ones(7, F32)))
    with refused(TypeError, "residual is a ndarray"):
        clnorm.add_rmsnorm(x, np.ones((4, 8), F32))
    with refused(ValueError, "x.strides"):
        clnorm.softmax(big[:, ::2])
    with refused(ValueError, "x.queue is None"):
        clnorm.softmax(x.with_queue(None))
    with refused(TypeError, "wait_for must be a list of pyopencl.Event"):
        clnorm.softmax(x, wait_for=[3])
    with refused(TypeError, "wait_for is a int"):
        clnorm.softmax(x, wait_for=5)
    with refused(ValueError, "out[0]"):
        clnorm.softmax_stats(x, out=(cla.empty(queue, 3, F32), cla.empty(queue, 4, F32)))
    queue.finish()
