"""float64 references with the contract's special-value rules, inputs and tolerances."""
import numpy as np


def softmax_ref(x):
    x = np.asarray(x, np.float64)
    y = np.zeros_like(x)
    for r in range(x.shape[0]):
        row = x[r]
        if np.isnan(row).any():
            y[r] = np.nan
            continue
        pos = np.isposinf(row)
        if pos.any():
            y[r] = np.where(pos, 1.0 / pos.sum(), 0.0)
            continue
        m = row.max()
        if np.isneginf(m):
            continue  # a row of only -inf gives zeros
        e = np.exp(row - m)
        y[r] = e / e.sum()
    return y


def stats_ref(x):
    x = np.asarray(x, np.float64)
    m = np.empty(x.shape[0])
    l = np.empty(x.shape[0])
    for r in range(x.shape[0]):
        row = x[r]
        if np.isnan(row).any():
            m[r] = l[r] = np.nan
        elif np.isposinf(row).any():
            m[r], l[r] = np.inf, np.isposinf(row).sum()
        elif np.isneginf(row).all():
            m[r], l[r] = -np.inf, 0.0
        else:
            m[r] = row.max()
            l[r] = np.exp(row - m[r]).sum()
    return m, l


def rmsnorm_ref(x, gamma=None, eps=1e-6):
    x = np.asarray(x, np.float64)
    r = 1.0 / np.sqrt((x * x).sum(axis=1, keepdims=True) / x.shape[1] + eps)
    y = x * r
    if gamma is not None:
        y = y * np.asarray(gamma, np.float64)
    return y


def add_h(x, residual):
    """h = x + residual in float32, rounded to the storage dtype."""
    return (x.astype(np.float32) + residual.astype(np.float32)).astype(x.dtype)


def inputs(rng, shape, dtype, scale=4.0):
    """Random values of dtype; the reference reads the same (rounded) values."""
    return (rng.standard_normal(shape) * scale).astype(dtype)


def assert_close(got, ref, dtype, what=""):
    """The contract's accuracy per element: float32 2e-5 relative (or 1e-30
    absolute); float16 1e-3 relative plus storage rounding; bfloat16 8e-3 relative.
    NaN must match NaN, and infinities/zeros of the reference exactly."""
    dtype = np.dtype(dtype)
    got64 = np.asarray(got).astype(np.float64)
    ref = np.asarray(ref, np.float64)
    assert got64.shape == ref.shape, (got64.shape, ref.shape)
    nan_ref = np.isnan(ref)
    assert np.array_equal(np.isnan(got64), nan_ref), f"{what}: NaN positions differ"
    fin = ~nan_ref
    with np.errstate(invalid="ignore"):  # inf - inf, compared for equality below
        err = np.abs(got64[fin] - ref[fin])
    aref = np.abs(ref[fin])
    if dtype == np.float32:
        tol = np.maximum(2e-5 * aref, 1e-30)
    elif dtype == np.float16:
        # Storage rounding: half a float16 spacing is at most 2^-11 relative, and
        # 1e-7 absolute covers the subnormals (as the C suite's tolerance).
        tol = (1e-3 + 2.0 ** -11) * aref + 1e-7
    else:
        tol = 8e-3 * aref + 1e-30
    with np.errstate(invalid="ignore"):
        bad = ~(err <= tol)
    # Infinite references are compared for equality (err is NaN for inf - inf).
    inf = np.isinf(ref[fin])
    bad &= ~(inf & (got64[fin] == ref[fin]))
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(
            f"{what} ({dtype}): {bad.sum()} of {bad.size} elements out of tolerance; "
            f"first got {got64[fin][i]} ref {ref[fin][i]} tol {tol[i]}")


SHAPES = [(1, 1), (1, 7), (3, 1), (2, 2), (7, 13), (5, 127), (17, 257), (3, 1031),
          (2, 4097), (1, 65537)]
SHAPE_IDS = [f"{r}x{c}" for r, c in SHAPES]
