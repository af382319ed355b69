"""pyopencl arrays: runs on their queue, views at offsets, events and wait lists."""
import threading

import numpy as np
import pytest

import clnorm
from _ref import add_h, assert_close, inputs, rmsnorm_ref, softmax_ref, stats_ref

POISON = -77.0  # exact in every dtype

SHAPES = [(1, 1), (3, 7), (17, 257), (2, 4097), (1, 65537)]
IDS = [f"{r}x{c}" for r, c in SHAPES]


def dev(cl, queue, a):
    return cl.array.to_device(queue, np.ascontiguousarray(a))


def view_in(cl, queue, x, pad_rows=(2, 3), pad_cols=(5, 4)):
    """x inside a larger buffer (offset != 0, row stride > cols), and that buffer."""
    rows, cols = x.shape
    big = np.full((rows + sum(pad_rows), cols + sum(pad_cols)), POISON, x.dtype)
    big[pad_rows[0]:pad_rows[0] + rows, pad_cols[0]:pad_cols[0] + cols] = x
    dbig = dev(cl, queue, big)
    sl = (slice(pad_rows[0], pad_rows[0] + rows), slice(pad_cols[0], pad_cols[0] + cols))
    return dbig[sl], dbig, big, sl


def read(dbig, sl):
    """A view's values (pyopencl's get() takes contiguous arrays only)."""
    return dbig.get()[sl]


def outside_untouched(dbig, big, sl):
    got = dbig.get()
    mask = np.ones(big.shape, bool)
    mask[sl] = False
    return np.array_equal(got[mask].view(np.uint8), big[mask].view(np.uint8))


@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
def test_values(cl, queue, shape, dtype):
    rng = np.random.default_rng(20)
    x = inputs(rng, shape, dtype)
    g = inputs(rng, shape[1], dtype, 1.0)
    r = inputs(rng, shape, dtype)
    dx = dev(cl, queue, x)
    y = clnorm.softmax(dx)
    assert isinstance(y, cl.array.Array) and y.dtype == dtype and y.shape == shape
    assert y.events, "the result carries no event"
    assert_close(y.get(), softmax_ref(x), dtype, "softmax")
    assert_close(clnorm.softmax(dx, algo="online").get(), softmax_ref(x), dtype, "online")
    assert_close(clnorm.rmsnorm(dx, dev(cl, queue, g)).get(), rmsnorm_ref(x, g), dtype,
                 "rmsnorm")
    dr = dev(cl, queue, r)
    yy = clnorm.add_rmsnorm(dx, dr, g, eps=1e-5)  # a numpy gamma is uploaded
    h = add_h(x, r)
    assert_close(yy.get(), rmsnorm_ref(h, g, 1e-5), dtype, "add_rmsnorm")
    assert np.array_equal(dr.get().view(np.uint8), h.view(np.uint8))
    m, l = clnorm.softmax_stats(dx)
    assert m.dtype == np.float32 and m.shape == (shape[0],)
    rm, rl = stats_ref(x)
    assert np.array_equal(m.get(), rm.astype(np.float32))
    assert_close(l.get(), rl, np.float32, "row_sum")


def test_views_at_offset(cl, queue, dtype):
    rng = np.random.default_rng(21)
    x = inputs(rng, (6, 45), dtype)
    v, dbig, big, sl = view_in(cl, queue, x)
    assert v.offset > 0 and v.strides[0] > v.shape[1] * v.dtype.itemsize
    assert_close(clnorm.softmax(v).get(), softmax_ref(x), dtype, "softmax view")
    assert_close(clnorm.rmsnorm(v).get(), rmsnorm_ref(x), dtype, "rmsnorm view")
    m, l = clnorm.softmax_stats(v)
    assert_close(l.get(), stats_ref(x)[1], np.float32, "stats view")
    # In place on the view: the rest of the buffer keeps its values.
    assert clnorm.softmax(v, out=v) is v
    assert_close(read(dbig, sl), softmax_ref(x), dtype, "in place view")
    assert outside_untouched(dbig, big, sl)


def test_out_view_poisoned(cl, queue, dtype):
    rng = np.random.default_rng(22)
    x = inputs(rng, (5, 33), dtype)
    g = inputs(rng, 33, dtype, 1.0)
    dx = dev(cl, queue, x)
    o, dbig, big, sl = view_in(cl, queue, np.full(x.shape, np.nan, dtype))
    assert clnorm.rmsnorm(dx, dev(cl, queue, g), out=o) is o
    assert_close(read(dbig, sl), rmsnorm_ref(x, g), dtype, "rmsnorm into a view")
    assert outside_untouched(dbig, big, sl)


def test_add_rmsnorm_views(cl, queue, dtype):
    rng = np.random.default_rng(23)
    x = inputs(rng, (4, 29), dtype)
    r = inputs(rng, (4, 29), dtype)
    vx, dbx, bx, slx = view_in(cl, queue, x, (1, 1), (3, 2))
    vr, dbr, br, slr = view_in(cl, queue, r, (2, 0), (0, 7))
    y = clnorm.add_rmsnorm(vx, vr, out=vx)
    h = add_h(x, r)
    assert y is vx
    assert_close(read(dbx, slx), rmsnorm_ref(h), dtype, "in-place add_rmsnorm view")
    assert np.array_equal(read(dbr, slr).view(np.uint8), h.view(np.uint8))
    assert outside_untouched(dbx, bx, slx)
    assert outside_untouched(dbr, br, slr)
    # update_residual=False leaves residual alone.
    keep = read(dbr, slr)
    clnorm.add_rmsnorm(vx, vr, update_residual=False)
    assert np.array_equal(read(dbr, slr).view(np.uint8), keep.view(np.uint8))


def test_gamma_view_is_read_from_its_offset(cl, queue):
    rng = np.random.default_rng(24)
    x = inputs(rng, (3, 10), np.float32)
    gbig = inputs(rng, 30, np.float32, 1.0)
    dg = dev(cl, queue, gbig)[7:17]
    assert dg.offset > 0
    assert_close(clnorm.rmsnorm(dev(cl, queue, x), dg).get(), rmsnorm_ref(x, gbig[7:17]),
                 np.float32, "gamma at an offset")


def test_vectors_refused_cleanly(cl, queue):
    """A strided pyopencl gamma or statistics vector, or one of another context, is a
    clnorm.ArgumentError naming it, never an error of pyopencl's."""
    rng = np.random.default_rng(27)
    x = inputs(rng, (3, 10), np.float32)
    dx = dev(cl, queue, x)
    strided = dev(cl, queue, inputs(rng, 20, np.float32, 1.0))[::2]
    with pytest.raises(clnorm.ArgumentError, match="gamma is strided"):
        clnorm.rmsnorm(dx, strided)
    with pytest.raises(clnorm.ArgumentError, match="row_max is strided"):
        clnorm.softmax_apply(dx, dev(cl, queue, np.zeros(6, np.float32))[::2],
                             dev(cl, queue, np.ones(3, np.float32)))
    other = cl.CommandQueue(cl.Context(devices=[queue.device]))
    far = dev(cl, other, inputs(rng, 12, np.float32, 1.0))[2:12]
    assert far.offset > 0
    with pytest.raises(clnorm.ArgumentError, match="gamma belongs to another context"):
        clnorm.rmsnorm(dx, far)
    m = dev(cl, queue, np.full(6, np.nan, np.float32))[::2]
    l = dev(cl, queue, np.full(3, np.nan, np.float32))
    # No rows: nothing to write, but the statistics are checked as with rows.
    d0 = cl.array.empty(queue, (0, 4), np.float32)
    with pytest.raises(clnorm.ArgumentTypeError, match="row_max.dtype is float64"):
        clnorm.softmax_apply(d0, np.zeros(0), np.zeros(0, np.float32))
    with pytest.raises(clnorm.ArgumentError, match="row_sum has shape"):
        clnorm.softmax_apply(d0, np.zeros(0, np.float32), dev(cl, queue, np.ones(2, np.float32)))
    with pytest.raises(clnorm.ArgumentError, match=r"out\[0\] is strided"):
        clnorm.softmax_stats(dx, out=(m, l))
    assert np.isnan(l.get()).all(), "a refused softmax_stats wrote its output"


def test_stats_out(cl, queue):
    x = inputs(np.random.default_rng(25), (9, 50), np.float32)
    m = dev(cl, queue, np.full(9, np.nan, np.float32))
    l = dev(cl, queue, np.full(9, np.nan, np.float32))
    mm, ll = clnorm.softmax_stats(dev(cl, queue, x), out=(m, l))
    assert mm is m and ll is l
    rm, rl = stats_ref(x)
    assert np.array_equal(m.get(), rm.astype(np.float32))
    assert_close(l.get(), rl, np.float32, "stats out=")


def test_wait_for_and_array_events(cl, queue):
    """The call waits for wait_for (a list, or one event) and for the events already
    on its arrays."""
    ctx = queue.context
    x = inputs(np.random.default_rng(26), (4, 64), np.float32)
    dx = dev(cl, queue, x)
    dx.finish()
    for how in ("wait_for", "one event", "x.events"):
        gate = cl.UserEvent(ctx)
        try:
            if how == "wait_for":
                y = clnorm.softmax(dx, wait_for=[gate])
            elif how == "one event":
                y = clnorm.softmax(dx, wait_for=gate)
            else:
                dx.add_event(gate)
                y = clnorm.softmax(dx)
            ev = y.events[-1]
            queue.flush()
            import time
            time.sleep(0.2)
            assert ev.command_execution_status != cl.command_execution_status.COMPLETE, \
                f"ran before its {how} completed"
        finally:
            gate.set_status(cl.command_execution_status.COMPLETE)
        y.finish()
        assert ev.command_execution_status == cl.command_execution_status.COMPLETE
        assert_close(y.get(), softmax_ref(x), np.float32, how)
        dx.events.clear()


def test_event_ownership(cl, queue):
    """Each result's event is a fresh reference the Python object owns: dropping
    them and finishing many calls neither leaks an error nor double-frees."""
    x = dev(cl, queue, np.ones((2, 8), np.float32))
    for _ in range(200):
        y = clnorm.softmax(x)
        e = y.events[-1]
        assert e.reference_count >= 1
        del y, e
    queue.finish()


def test_own_pyopencl_context(cl, session):
    """A context and queue pyopencl made itself (not the session's)."""
    device = session.queue.device
    ctx = cl.Context([device])
    q = cl.CommandQueue(ctx)
    x = inputs(np.random.default_rng(27), (7, 100), np.float32)
    dx = cl.array.to_device(q, x)
    y = clnorm.softmax(dx)
    assert y.queue is q or y.queue == q
    assert_close(y.get(), softmax_ref(x), np.float32, "own context")
    assert_close(clnorm.rmsnorm(dx).get(), rmsnorm_ref(x), np.float32, "own context")
    q.finish()


def test_session_methods_take_device_arrays(cl, queue, own_session):
    x = inputs(np.random.default_rng(28), (3, 40), np.float32)
    y = own_session.softmax(dev(cl, queue, x))  # runs on the array's queue
    assert isinstance(y, cl.array.Array)
    assert_close(y.get(), softmax_ref(x), np.float32, "session method")


def test_empty_rows_device(cl, queue):
    x = cl.array.empty(queue, (0, 5), np.float32)
    assert clnorm.softmax(x).shape == (0, 5)
    m, l = clnorm.softmax_stats(x)
    assert m.shape == (0,)


def test_threads_on_one_queue_and_own_queues(cl, queue):
    ctx = queue.context
    rng = np.random.default_rng(29)
    xs = [inputs(rng, (5, 77 + i), np.float32) for i in range(6)]
    errors = []

    def work(i):
        try:
            q = queue if i % 2 == 0 else cl.CommandQueue(ctx)
            dx = cl.array.to_device(q, xs[i])
            for _ in range(10):
                y = clnorm.softmax(dx)
                assert_close(y.get(), softmax_ref(xs[i]), np.float32, f"thread {i}")
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


@pytest.mark.parametrize("cols,cuts", [(2, (1,)), (1000, (1, 333, 999)), (65537, (32768,))],
                         ids=["2-of-1", "1000-uneven", "65537-halves"])
def test_sharded_softmax_through_apply(cl, queue, cols, cuts, dtype):
    """Device shards: statistics on the device, merged on the host, each shard
    written by softmax_apply into a view of a poisoned output (statistics given as
    numpy arrays for some shards, device arrays for the others): the whole rows'
    softmax, nothing outside the views written."""
    rng = np.random.default_rng(29)
    x = inputs(rng, (5, cols), dtype)
    if cols >= 8:
        x[0, :] = -np.inf
        x[1, 3] = np.nan
        x[2, 0] = x[2, cols - 1] = np.inf
    bounds = [0, *cuts, cols]
    shards = [dev(cl, queue, x[:, a:b]) for a, b in zip(bounds, bounds[1:])]
    m = np.full(5, -np.inf, np.float32)
    l = np.zeros(5, np.float32)
    for d in shards:
        pm, pl = clnorm.softmax_stats(d)
        m, l = clnorm.stats_merge(m, l, pm.get(), pl.get())
    dm, dl = dev(cl, queue, m), dev(cl, queue, l)
    out, dbig, big, sl = view_in(cl, queue, np.full(x.shape, POISON, dtype))
    for i, ((a, b), d) in enumerate(zip(zip(bounds, bounds[1:]), shards)):
        y = out[:, a:b]
        r = clnorm.softmax_apply(d, m, l, out=y) if i % 2 else \
            clnorm.softmax_apply(d, dm, dl, out=y)
        assert r is y and r.events
    queue.finish()
    assert_close(read(dbig, sl), softmax_ref(x), dtype, f"device shards at {cuts}")
    assert outside_untouched(dbig, big, sl)


def test_softmax_apply_device_statistics_views(cl, queue):
    """Statistics read from views at an offset (copied for the call), in place, with
    wait_for; refusals name the argument."""
    x = inputs(np.random.default_rng(30), (4, 77), np.float32)
    rm, rl = stats_ref(x)
    big = np.full((2, 6), np.nan, np.float32)
    big[0, 2:] = rm
    big[1, 2:] = rl
    dbig = dev(cl, queue, big)
    dx = dev(cl, queue, x)
    gate = cl.UserEvent(queue.context)
    y = clnorm.softmax_apply(dx, dbig[0, 2:], dbig[1, 2:], out=dx, wait_for=[gate])
    gate.set_status(cl.command_execution_status.COMPLETE)
    assert y is dx
    assert_close(y.get(), softmax_ref(x), np.float32, "statistics at an offset")
    with pytest.raises(clnorm.ArgumentError, match=r"row_sum has shape \(3,\)"):
        clnorm.softmax_apply(dx, dbig[0, 2:], dbig[1, 3:])
    with pytest.raises(clnorm.ArgumentTypeError, match="row_max is a tuple"):
        clnorm.softmax_apply(dx, (1, 2), dbig[1, 2:])
    e = cl.array.empty(queue, (0, 5), np.float32)
    assert clnorm.softmax_apply(e, np.zeros(0, np.float32), np.zeros(0, np.float32)).shape \
        == (0, 5)


def test_softmax_sharded_across_contexts(cl, queue, session, dtype):
    """Device shards on the session's queue and on a context of pyopencl's own, with
    an output view in a poisoned buffer: clnorm_softmax_sharded over mixed contexts."""
    rng = np.random.default_rng(31)
    x = inputs(rng, (5, 2049), dtype)
    x[0, :] = -np.inf
    x[1, 7] = np.nan
    x[2, 0] = x[2, 2048] = np.inf
    ctx2 = cl.Context([session.queue.device])
    q2 = cl.CommandQueue(ctx2)
    bounds = [0, 1, 1024, 2049]
    queues = [queue, q2, queue]
    shards = [cl.array.to_device(qq, np.ascontiguousarray(x[:, a:b]))
              for qq, (a, b) in zip(queues, zip(bounds, bounds[1:]))]
    view, dbig, big, sl = view_in(cl, q2, np.full((5, 1023), POISON, dtype))
    ys, (m, l) = clnorm.softmax_sharded(shards, out=[None, view, None], stats=True)
    assert ys[1] is view
    want = softmax_ref(x)
    assert_close(ys[0].get(), want[:, :1], dtype, "shard 0")
    assert_close(read(dbig, sl), want[:, 1:1024], dtype, "shard 1, another context")
    assert_close(ys[2].get(), want[:, 1024:], dtype, "shard 2")
    assert outside_untouched(dbig, big, sl)
    assert np.isneginf(m[0]) and l[0] == 0 and np.isnan(m[1]) and m[2] == np.inf and l[2] == 2
    with pytest.raises(clnorm.ArgumentTypeError, match="mix numpy and pyopencl"):
        clnorm.softmax_sharded([shards[0], x[:, 1:]])
    with pytest.raises(clnorm.ArgumentTypeError, match="sessions applies to numpy"):
        clnorm.softmax_sharded(shards, sessions=[session] * 3)
    q2.finish()
