"""numpy arrays on the default session: values against float64, special values, views."""
import numpy as np
import pytest

import clnorm
from _ref import (SHAPE_IDS, SHAPES, add_h, assert_close, inputs, rmsnorm_ref,
                  softmax_ref, stats_ref)

POISON = -77.0  # exact in every dtype


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("algo", ["auto", "three_pass", "online"])
def test_softmax_values(shape, algo, dtype):
    rng = np.random.default_rng(1)
    x = inputs(rng, shape, dtype)
    y = clnorm.softmax(x, algo=algo)
    assert y.dtype == dtype and y.shape == shape
    assert_close(y, softmax_ref(x), dtype, f"softmax {algo} {shape}")


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_rmsnorm_values(shape, dtype):
    rng = np.random.default_rng(2)
    x = inputs(rng, shape, dtype)
    g = inputs(rng, shape[1], dtype, 1.0)
    assert_close(clnorm.rmsnorm(x), rmsnorm_ref(x), dtype, "rmsnorm")
    assert_close(clnorm.rmsnorm(x, g, eps=0.5), rmsnorm_ref(x, g, 0.5), dtype,
                 "rmsnorm gamma")


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_add_rmsnorm_values(shape, dtype):
    rng = np.random.default_rng(3)
    x = inputs(rng, shape, dtype)
    r = inputs(rng, shape, dtype)
    g = inputs(rng, shape[1], dtype, 1.0)
    h = add_h(x, r)
    r0 = r.copy()
    y = clnorm.add_rmsnorm(x, r, g, eps=1e-5)
    assert_close(y, rmsnorm_ref(h, g, 1e-5), dtype, "add_rmsnorm")
    assert np.array_equal(r.view(np.uint8), h.view(np.uint8)), "residual is not x + residual"
    r_keep = r0.copy()
    y2 = clnorm.add_rmsnorm(x, r0, update_residual=False)
    assert_close(y2, rmsnorm_ref(h), dtype, "add_rmsnorm without update")
    assert np.array_equal(r0.view(np.uint8), r_keep.view(np.uint8))


def test_add_rmsnorm_out_is_residual_when_not_updated(dtype):
    # residual only read: out may be residual itself (written with y).
    rng = np.random.default_rng(13)
    x, r = inputs(rng, (3, 17), dtype), inputs(rng, (3, 17), dtype)
    x0, r0 = x.copy(), r.copy()
    assert clnorm.add_rmsnorm(x, r, update_residual=False, out=r) is r
    assert_close(r, rmsnorm_ref(add_h(x0, r0)), dtype, "add_rmsnorm out=residual")
    assert np.array_equal(x.view(np.uint8), x0.view(np.uint8))


def test_add_rmsnorm_keeps_residual():
    x = np.ones((2, 3), np.float32)
    r = np.full((2, 3), 2.0, np.float32)
    clnorm.add_rmsnorm(x, r, update_residual=False)
    assert (r == 2.0).all()


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_softmax_stats_values(shape, dtype):
    rng = np.random.default_rng(4)
    x = inputs(rng, shape, dtype)
    m, l = clnorm.softmax_stats(x)
    assert m.dtype == np.float32 and l.dtype == np.float32 and m.shape == (shape[0],)
    rm, rl = stats_ref(x)
    assert np.array_equal(m, rm.astype(np.float32)), "row_max is not the exact maximum"
    assert_close(l, rl, np.float32, "row_sum")


def test_long_row_float32():
    """The contract's accuracy holds for rows up to 2^20 elements."""
    rng = np.random.default_rng(5)
    x = inputs(rng, (1, 1 << 20), np.float32)
    assert_close(clnorm.softmax(x), softmax_ref(x), np.float32, "softmax 2^20")
    assert_close(clnorm.rmsnorm(x), rmsnorm_ref(x), np.float32, "rmsnorm 2^20")


def test_empty_rows(dtype):
    x = np.zeros((0, 5), dtype)
    assert clnorm.softmax(x).shape == (0, 5)
    assert clnorm.rmsnorm(x).shape == (0, 5)
    m, l = clnorm.softmax_stats(x)
    assert m.shape == (0,) and l.shape == (0,)


def special_rows(dtype, cols=37):
    x = np.linspace(-3, 3, 6 * cols).reshape(6, cols).astype(dtype)
    x[0, 5] = np.nan                    # NaN row
    x[1, :] = -np.inf                   # all -inf
    x[2, [3, 20]] = np.inf              # two +inf entries share the mass
    x[2, 7] = -np.inf
    x[3, 11] = -np.inf                  # a -inf among finite values gives 0
    x[4, :] = 0                         # constant row
    return x


@pytest.mark.parametrize("algo", ["auto", "three_pass", "online"])
def test_softmax_special_values(algo, dtype):
    x = special_rows(dtype)
    y = clnorm.softmax(x, algo=algo).astype(np.float64)
    assert np.isnan(y[0]).all()
    assert (y[1] == 0).all()
    expect = np.zeros(x.shape[1])
    expect[[3, 20]] = 0.5
    assert np.array_equal(y[2], expect)
    assert y[3, 11] == 0
    assert_close(y, softmax_ref(x), dtype, "special rows")


def test_softmax_stats_special_values(dtype):
    x = special_rows(dtype)
    m, l = clnorm.softmax_stats(x)
    assert np.isnan(m[0]) and np.isnan(l[0])
    assert m[1] == -np.inf and l[1] == 0
    assert m[2] == np.inf and l[2] == 2
    rm, rl = stats_ref(x)
    assert_close(l, rl, np.float32, "special stats")


def test_rmsnorm_special_values(dtype):
    x = special_rows(dtype)
    y = clnorm.rmsnorm(x).astype(np.float64)
    assert np.isnan(y[0]).all(), "a NaN row must give a NaN row"
    assert (y[4] == 0).all()
    assert_close(y[5:], rmsnorm_ref(x[5:]), dtype, "finite row")


# ---- views ---------------------------------------------------------------------------

def test_strided_input(dtype):
    rng = np.random.default_rng(6)
    big = inputs(rng, (9, 40), dtype)
    x = big[1:8, 3:30]                       # rows 40 elements apart
    assert not x.flags.c_contiguous
    assert_close(clnorm.softmax(x), softmax_ref(x), dtype, "strided softmax")
    assert_close(clnorm.rmsnorm(x), rmsnorm_ref(x), dtype, "strided rmsnorm")
    m, l = clnorm.softmax_stats(x)
    assert_close(l, stats_ref(x)[1], np.float32, "strided stats")


def test_strided_out_leaves_padding(dtype):
    rng = np.random.default_rng(7)
    x = inputs(rng, (5, 21), dtype)
    big = np.full((7, 30), POISON, dtype)
    out = big[1:6, 4:25]
    r = clnorm.softmax(x, out=out)
    assert r is out
    assert_close(out, softmax_ref(x), dtype, "softmax into a view")
    mask = np.ones(big.shape, bool)
    mask[1:6, 4:25] = False
    assert (big[mask].astype(np.float64) == POISON).all(), "elements outside out changed"


def test_packed_out_is_used(dtype):
    rng = np.random.default_rng(8)
    x = inputs(rng, (4, 33), dtype)
    out = np.full(x.shape, np.nan, dtype)
    assert clnorm.rmsnorm(x, out=out) is out
    assert_close(out, rmsnorm_ref(x), dtype, "rmsnorm out=")


@pytest.mark.parametrize("strided", [False, True])
def test_in_place(strided, dtype):
    rng = np.random.default_rng(9)
    big = inputs(rng, (6, 50), dtype)
    x = big[:, 5:45] if strided else big
    x0 = x.copy()
    assert clnorm.softmax(x, out=x) is x
    assert_close(x, softmax_ref(x0), dtype, "in-place softmax")
    if strided:
        assert np.array_equal(big[:, :5].view(np.uint8), big[:, :5].copy().view(np.uint8))
    x[...] = x0
    clnorm.rmsnorm(x, out=x)
    assert_close(x, rmsnorm_ref(x0), dtype, "in-place rmsnorm")


def test_add_rmsnorm_strided_residual_and_in_place(dtype):
    rng = np.random.default_rng(10)
    bigx = inputs(rng, (5, 40), dtype)
    bigr = inputs(rng, (5, 50), dtype)
    x, r = bigx[:, 2:35], bigr[:, 10:43]
    x0, r0 = x.copy(), r.copy()
    rpad = bigr[:, :10].copy()
    y = clnorm.add_rmsnorm(x, r, out=x)
    h = add_h(x0, r0)
    assert y is x
    assert_close(x, rmsnorm_ref(h), dtype, "in-place add_rmsnorm")
    assert np.array_equal(r.view(np.uint8), h.view(np.uint8))
    assert np.array_equal(bigr[:, :10].view(np.uint8), rpad.view(np.uint8))


@pytest.mark.parametrize("layout", ["transposed", "fortran", "column_step", "reversed"])
def test_any_layout(layout, dtype):
    # Every 2-D numpy layout is packed for the library; out= in such a layout is filled
    # from a packed result, and in place works through it too.
    rng = np.random.default_rng(12)
    base = inputs(rng, (14, 22), dtype)
    x = {"transposed": base[:9, :13].T, "fortran": np.asfortranarray(base[:9, :13]),
         "column_step": base[:9, ::2], "reversed": base[8::-1, ::-1]}[layout]
    assert not x.flags.c_contiguous
    x0 = x.copy()
    assert_close(clnorm.softmax(x), softmax_ref(x0), dtype, f"{layout} softmax")
    assert_close(clnorm.rmsnorm(x), rmsnorm_ref(x0), dtype, f"{layout} rmsnorm")
    assert_close(clnorm.softmax_stats(x)[1], stats_ref(x0)[1], np.float32, f"{layout} stats")
    r = x0.T.copy().T                                  # another non-packed array
    y = clnorm.add_rmsnorm(x, r)
    h = add_h(x0, x0)
    assert_close(y, rmsnorm_ref(h), dtype, f"{layout} add_rmsnorm")
    assert np.array_equal(np.ascontiguousarray(r).view(np.uint8), h.view(np.uint8)), \
        "residual not updated"
    out = np.full(x.shape[::-1], POISON, dtype).T
    assert clnorm.softmax(x, out=out) is out
    assert_close(out, softmax_ref(x0), dtype, f"{layout} softmax into a transposed out")
    assert clnorm.softmax(x, out=x) is x
    assert_close(x, softmax_ref(x0), dtype, f"{layout} softmax in place")


def test_single_row_any_stride():
    # One row: the row stride does not matter (numpy may report anything).
    big = np.arange(40, dtype=np.float32).reshape(4, 10)
    x = big[2:3, 1:6]
    assert_close(clnorm.softmax(x), softmax_ref(x), np.float32, "one row")


def test_sessions_agree(own_session, session):
    rng = np.random.default_rng(11)
    x = inputs(rng, (8, 100), np.float32)
    a = own_session.softmax(x)
    b = session.softmax(x)
    assert np.array_equal(a, b)
    assert_close(own_session.rmsnorm(x), rmsnorm_ref(x), np.float32, "own session")
    r = x.copy()
    assert_close(own_session.add_rmsnorm(x, r), rmsnorm_ref(add_h(x, x)), np.float32,
                 "own session add")
    m, l = own_session.softmax_stats(x)
    assert np.array_equal(m, x.max(axis=1))


def test_session_lifecycle():
    with clnorm.Session(clnorm.default_session().spec) as s:
        assert s.device_name == clnorm.default_session().device_name
        assert s.context_ptr and s.queue_ptr
        s.warmup()
        assert "Session" in repr(s)
    with pytest.raises(clnorm.Error) as e:
        s.softmax(np.ones((1, 2), np.float32))
    assert "closed" in str(e.value)
    s.close()  # idempotent


def test_session_from_device():
    devs = clnorm.devices()
    assert devs, "no devices listed, but a session exists"
    name = clnorm.default_session().device_name
    match = [d for d in devs if d.name == name]
    assert match, f"{name!r} not among {[d.name for d in devs]}"
    with clnorm.Session(match[0]) as s:
        assert s.device_name == name
        assert s.spec == match[0].spec


def test_stats_merge_scalars():
    inf, nan = float("inf"), float("nan")
    m, l = clnorm.stats_merge(1.0, 2.0, 3.0, 4.0)
    assert m == 3.0 and l == pytest.approx(2 * np.exp(-2.0) + 4, rel=1e-6)
    assert clnorm.stats_merge(-inf, 0.0, 2.0, 5.0) == (2.0, 5.0)
    assert clnorm.stats_merge(-inf, 0.0, -inf, 0.0) == (-inf, 0.0)
    assert clnorm.stats_merge(inf, 1.0, inf, 2.0) == (inf, 3.0)
    m, l = clnorm.stats_merge(nan, 1.0, 0.0, 1.0)
    assert np.isnan(m) and np.isnan(l)


def test_stats_merge_vectorised_matches_library():
    inf, nan = np.inf, np.nan
    vals = [-inf, -3.0, 0.0, 2.5, inf, nan]
    sums = [0.0, 1.0, 3.0, nan]
    grid = np.array([(a, la, b, lb) for a in vals for la in sums for b in vals
                     for lb in sums], np.float32).T
    m, l = clnorm.stats_merge(*grid)
    for i in range(grid.shape[1]):
        em, el = clnorm.stats_merge(*(float(v) for v in grid[:, i]))
        for got, want in ((m[i], em), (l[i], el)):
            assert (np.isnan(got) and np.isnan(want)) or got == pytest.approx(
                want, rel=1e-6), (grid[:, i], (m[i], l[i]), (em, el))


def test_sharded_softmax_through_stats_merge():
    """Column shards' statistics merged give the whole rows' softmax."""
    rng = np.random.default_rng(12)
    x = inputs(rng, (6, 300), np.float32)
    ma, la = clnorm.softmax_stats(x[:, :120])
    mb, lb = clnorm.softmax_stats(x[:, 120:])
    m, l = clnorm.stats_merge(ma, la, mb, lb)
    rm, rl = stats_ref(x)
    assert np.array_equal(m, rm.astype(np.float32))
    assert_close(l, rl, np.float32, "merged sums")


def test_devices_listing():
    for d in clnorm.devices():
        p, q = d.spec.split(":")
        assert p.isdigit() and q.isdigit() and d.name and d.type


def test_module_command(capsys):
    from clnorm.__main__ import main
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "default device: " + clnorm.default_session().device_name in out
    assert main(["version"]) == 0
    assert clnorm.__version__ in capsys.readouterr().out


def test_bfloat16_is_covered():
    """A run without ml_dtypes tests no bfloat16: say so as a skip."""
    from conftest import BF16
    if BF16 is None:
        pytest.skip("ml_dtypes is not installed: bfloat16 is not tested")


def _shard_rows(rng, dtype, rows, cols):
    """Random rows with, where the shape allows, the sharded cases' special rows: one of
    only -inf, a NaN in one shard, +inf entries far apart (in two shards), and a left
    half of -inf (a shard all -inf)."""
    x = inputs(rng, (rows, cols), dtype)
    if cols >= 8:
        x[0, :] = -np.inf
        x[1, 3] = np.nan
        x[2, 1] = np.inf
        x[2, cols - 2] = np.inf
        x[3, :cols // 2] = -np.inf
    return x


@pytest.mark.parametrize("cols,cuts", [(1, ()), (2, (1,)), (300, (1, 120, 299)),
                                       (4097, (7, 4000)), (65537, (32768,))],
                         ids=["1", "2-of-1", "300-uneven", "4097-uneven", "65537-halves"])
def test_sharded_softmax_through_apply(cols, cuts, dtype):
    """Column shards: each shard's statistics, merged, then each shard written with
    softmax_apply into a column slice of one output: the whole rows' softmax."""
    rng = np.random.default_rng(13)
    x = _shard_rows(rng, dtype, 6, cols)
    bounds = [0, *cuts, cols]
    m = np.full(6, -np.inf, np.float32)
    l = np.zeros(6, np.float32)
    for a, b in zip(bounds, bounds[1:]):
        pm, pl = clnorm.softmax_stats(x[:, a:b])
        m, l = clnorm.stats_merge(m, l, pm, pl)
    y = np.full((6, cols + 2), POISON, dtype)
    for a, b in zip(bounds, bounds[1:]):
        out = y[:, a:b]
        assert clnorm.softmax_apply(x[:, a:b], m, l, out=out) is out
    assert_close(y[:, :cols], softmax_ref(x), dtype, f"sharded at {cuts}")
    assert (y[:, cols:] == POISON).all(), "softmax_apply wrote past its shard"


def test_softmax_apply_special_statistics(session):
    """Given statistics as the contract says: (-inf, 0) gives zeros, a NaN statistic
    NaN, +inf as the maximum 1/l at the +inf entries; in place, on a session."""
    x = np.array([[1, 2, 3], [1, 2, 3], [1, 2, 3], [np.inf, 0, np.inf], [0, 1, 2]],
                 np.float32)
    m = np.array([-np.inf, np.nan, 3, np.inf, 2], np.float32)
    l = np.array([0, 1, np.nan, 2, 4], np.float32)
    want = np.zeros((5, 3))
    want[1] = want[2] = np.nan
    want[3] = [0.5, 0, 0.5]
    want[4] = np.exp(np.array([0.0, 1, 2]) - 2) / 4
    y = session.softmax_apply(x, m, l, out=x)
    assert y is x
    assert_close(y, want, np.float32, "special statistics")


def test_softmax_apply_refusals():
    x = np.ones((3, 5), np.float32)
    m, l = np.zeros(3, np.float32), np.ones(3, np.float32)
    with pytest.raises(clnorm.ArgumentTypeError, match="row_max.dtype is float64"):
        clnorm.softmax_apply(x, m.astype(np.float64), l)
    with pytest.raises(clnorm.ArgumentError, match=r"row_sum has shape \(2,\)"):
        clnorm.softmax_apply(x, m, l[:2])
    with pytest.raises(clnorm.ArgumentTypeError, match="row_max is a list"):
        clnorm.softmax_apply(x, [0.0, 0.0, 0.0], l)
    with pytest.raises(clnorm.ArgumentTypeError, match="wait_for"):
        clnorm.softmax_apply(x, m, l, wait_for=[object()])
    y = clnorm.softmax_apply(x, m, l)
    assert_close(y, np.full((3, 5), np.e), np.float32, "exp(1 - 0) / 1")
    assert clnorm.softmax_apply(np.ones((0, 4), np.float32), np.zeros(0, np.float32),
                                np.zeros(0, np.float32)).shape == (0, 4)


@pytest.fixture(scope="module")
def second_session(session):
    """A session on another device where there is one (PoCL beside Rusticl or
    NVIDIA), else a second session on the same device."""
    others = [d for d in clnorm.devices() if d.spec != session.spec]
    s = clnorm.Session(others[0] if others else session.spec)
    yield s
    s.close()


def test_softmax_sharded_over_two_sessions(session, second_session, dtype):
    """Shards alternating between two sessions (two devices where the machine has
    them), special rows, a 1-column shard, the statistics returned."""
    rng = np.random.default_rng(14)
    x = _shard_rows(rng, dtype, 7, 3001)
    bounds = [0, 1, 1000, 2999, 3001]
    shards = [x[:, a:b] for a, b in zip(bounds, bounds[1:])]
    outs = [np.full(s.shape, POISON, dtype) for s in shards]
    ys, (m, l) = clnorm.softmax_sharded(
        shards, out=outs, sessions=[session, second_session] * 2, stats=True)
    assert all(y is o for y, o in zip(ys, outs))
    assert_close(np.concatenate(ys, axis=1), softmax_ref(x), dtype, "sharded over sessions")
    rm, rl = stats_ref(x)
    assert_close(m, rm, np.float32, "row_max")
    assert_close(l, rl, np.float32, "row_sum")
    # In place, on the default session.
    z = x.copy()
    parts = [z[:, :5], z[:, 5:]]
    assert clnorm.softmax_sharded(parts, out=parts)[1] is parts[1]
    assert_close(z, softmax_ref(x), dtype, "sharded in place")


def test_softmax_sharded_refusals_write_nothing(session):
    x = np.ones((3, 10), np.float32)
    outs = [np.full((3, 4), POISON, np.float32), np.full((3, 6), POISON, np.float32)]
    with pytest.raises(clnorm.ArgumentError, match=r"shards\[1\] holds 2 rows"):
        clnorm.softmax_sharded([x[:, :4], x[:2, 4:]], out=outs)
    with pytest.raises(clnorm.ArgumentError, match=r"shards\[1\] holds 3 rows of float16"):
        clnorm.softmax_sharded([x[:, :4], x[:, 4:].astype(np.float16)], out=outs)
    with pytest.raises(clnorm.ArgumentError, match=r"out\[1\]"):
        clnorm.softmax_sharded([x[:, :4], x[:, 4:]], out=[outs[0], outs[0]])
    # An output sharing memory with another shard: shard 0 would be written before
    # shard 1 is read (swapped outputs), or one output would take both shards.
    y = np.full((3, 10), POISON, np.float32)
    a, b = y[:, :5], y[:, 5:]
    with pytest.raises(clnorm.ArgumentError, match=r"out\[0\] shares memory with shards\[1\]"):
        clnorm.softmax_sharded([a, b], out=[b, a])
    assert (y == POISON).all(), "a refused request wrote a shard"
    with pytest.raises(clnorm.ArgumentError, match="empty"):
        clnorm.softmax_sharded([])
    with pytest.raises(clnorm.ArgumentError, match="sessions has 1 entries for 2 shards"):
        clnorm.softmax_sharded([x[:, :4], x[:, 4:]], sessions=[session])
    with pytest.raises(clnorm.ArgumentTypeError, match="list of arrays"):
        clnorm.softmax_sharded(x)
    assert all((o == POISON).all() for o in outs), "a refused request wrote a shard"
