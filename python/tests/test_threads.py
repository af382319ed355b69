"""Several threads at once: on the default session, on sessions of their own, and
creating the default session together."""
import os
import threading

import numpy as np

import clnorm
from _ref import add_h, assert_close, inputs, rmsnorm_ref, softmax_ref, stats_ref

THREADS = 8
ROUNDS = 10


def run_threads(target, n=THREADS):
    errors = []
    start = threading.Barrier(n)

    def body(i):
        try:
            start.wait()
            target(i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    ts = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, f"{len(errors)} threads failed; first: {errors[0]!r}"


def one_thread_work(s, i):
    rng = np.random.default_rng(100 + i)
    dts = [np.float32, np.float16]
    for k in range(ROUNDS):
        dt = np.dtype(dts[(i + k) % 2])
        x = inputs(rng, (3 + i, 50 + 17 * k), dt)
        f = clnorm if s is None else s
        assert_close(f.softmax(x), softmax_ref(x), dt, f"thread {i} softmax")
        assert_close(f.rmsnorm(x), rmsnorm_ref(x), dt, f"thread {i} rmsnorm")
        r = inputs(rng, x.shape, dt)
        h = add_h(x, r)
        assert_close(f.add_rmsnorm(x, r), rmsnorm_ref(h), dt, f"thread {i} add")
        m, l = f.softmax_stats(x)
        assert_close(l, stats_ref(x)[1], np.float32, f"thread {i} stats")


def test_default_session_from_threads():
    run_threads(lambda i: one_thread_work(None, i))


def test_own_sessions_from_threads():
    spec = os.environ.get("CLNORM_DEVICE") or None

    def work(i):
        with clnorm.Session(spec) as s:
            one_thread_work(s, i)

    run_threads(work, 4)


def test_shared_own_session_from_threads(own_session):
    run_threads(lambda i: one_thread_work(own_session, i))


def test_default_session_created_once(monkeypatch):
    """Threads racing to the first use create one default session between them."""
    made = []
    real = clnorm.Session

    class Counting(real):
        def __init__(self, *a, **k):
            made.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(clnorm, "Session", Counting)
    monkeypatch.setattr(clnorm, "_default", None)
    seen = []
    run_threads(lambda i: seen.append(clnorm.default_session()))
    assert len(made) == 1, f"{len(made)} default sessions were created"
    assert all(s is seen[0] for s in seen)
    seen[0].close()
