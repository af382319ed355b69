"""Shared fixtures. The device is CLNORM_DEVICE's (the default session's); where it is
absent the whole run exits with 77, which CTest counts as skipped.

numpy and pytest are required (a missing one fails the run). pyopencl and ml_dtypes
are optional: their tests skip where the package is missing, unless
CLNORM_REQUIRE_PYOPENCL=1 (or CLNORM_REQUIRE_ML_DTYPES=1) makes that a failure, as
CTest does."""
import os

import numpy as np
import pytest

import clnorm

REQUIRE_PYOPENCL = os.environ.get("CLNORM_REQUIRE_PYOPENCL") == "1"
REQUIRE_ML_DTYPES = os.environ.get("CLNORM_REQUIRE_ML_DTYPES") == "1"


def pytest_sessionstart(session):
    try:
        clnorm.default_session()
    except clnorm.Error as e:
        if e.status == "CLNORM_DEVICE_NOT_FOUND":
            pytest.exit(f"device not present, every test skipped: {e}", returncode=77)
        raise


def pytest_report_header(config):
    try:
        s = clnorm.default_session()
        dev = s.device_name
    except clnorm.Error as e:
        dev = f"none ({e.status})"
    return [f"clnorm {clnorm.__version__} from {clnorm.library_path}",
            f"device: {dev} (CLNORM_DEVICE={os.environ.get('CLNORM_DEVICE')!r})"]


def _bfloat16():
    try:
        import ml_dtypes
    except ImportError:
        if REQUIRE_ML_DTYPES:
            raise
        return None
    return np.dtype(ml_dtypes.bfloat16)


BF16 = _bfloat16()
DTYPES = [np.dtype(np.float32), np.dtype(np.float16)] + ([BF16] if BF16 is not None else [])
DTYPE_IDS = [str(d) for d in DTYPES]


@pytest.fixture(params=DTYPES, ids=DTYPE_IDS)
def dtype(request):
    return request.param


@pytest.fixture(scope="session")
def session():
    return clnorm.default_session()


@pytest.fixture(scope="session")
def own_session():
    s = clnorm.Session(os.environ.get("CLNORM_DEVICE") or None)
    yield s
    s.close()


@pytest.fixture(scope="session")
def cl():
    """pyopencl, or a skip (a failure under CLNORM_REQUIRE_PYOPENCL=1)."""
    try:
        import pyopencl
        import pyopencl.array  # noqa: F401
    except ImportError as e:
        if REQUIRE_PYOPENCL:
            pytest.fail(f"pyopencl is required (CLNORM_REQUIRE_PYOPENCL=1): {e}")
        pytest.skip(f"pyopencl is not installed: {e}")
    return pyopencl


@pytest.fixture(scope="session")
def queue(cl, session):
    """The default session's queue, as pyopencl sees it."""
    return session.queue

