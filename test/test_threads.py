"""One program called from several threads at once (issue 41, item 2):
every call's result is checked against numpy, on one queue shared by the
threads and on one queue per thread, the threads starting before the
program's first call (so that the first calls race too), with a tiny
interpreter switch interval so that threads switch between any two
bytecodes."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt


NTHREADS = 4
NCALLS = 150
N = 257


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter can (restored after)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _several_kernels() -> tuple[Any, Callable[..., np.ndarray]]:
    """A program of several kernels with global temporaries (stored
    intermediate results that are not outputs), and its numpy reference."""
    x = pt.make_placeholder("x", (N,), np.float64)
    y = pt.make_placeholder("y", (N,), np.float64)
    stored = pt.tags.ImplStored()
    a = (pt.roll(x, 1) * 2.0 + y).tagged(stored)
    b = (pt.roll(a, 3) - x * y).tagged(stored)
    c = (pt.roll(b, -5) + a).tagged(stored)
    out = c * 0.5 + pt.sum(b) / N

    def ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        a = np.roll(x, 1) * 2.0 + y
        b = np.roll(a, 3) - x * y
        c = np.roll(b, -5) + a
        return c * 0.5 + np.sum(b) / N

    return pt.generate_loopy(out), ref


def _run_threads(body: Callable[[int], None]) -> None:
    """Run *body(thread number)* in :data:`NTHREADS` threads started
    together; re-raise the first exception of any."""
    barrier = threading.Barrier(NTHREADS)
    errors: list[BaseException] = []

    def target(k: int) -> None:
        try:
            barrier.wait()
            body(k)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(k,))
               for k in range(NTHREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _threaded_calls(prog: Any, ref: Callable[..., np.ndarray],
                    queues: list[cl.CommandQueue], device_inputs: bool
                    ) -> None:
    """Call *prog* :data:`NCALLS` times from each of :data:`NTHREADS`
    threads (thread *k* on ``queues[k % len(queues)]``) with inputs of
    its own at each call; check every result against *ref*."""
    wrong: list[tuple[int, int, float]] = []

    def body(k: int) -> None:
        queue = queues[k % len(queues)]
        rng = np.random.default_rng(k)
        pending = []
        for i in range(NCALLS):
            x = rng.random(N)
            y = rng.random(N) + i
            if device_inputs:
                _, out = prog(queue, x=cla.to_device(queue, x),
                              y=cla.to_device(queue, y))
            else:
                _, out = prog(queue, x=x, y=y)
            pending.append((i, out, ref(x, y)))
            if len(pending) > 3:
                # a few calls in flight at once
                j, got, expected = pending.pop(0)
                got = got[0] if isinstance(got, tuple) else got
                got = got.get() if isinstance(got, cla.Array) else got
                if not np.allclose(got, expected, rtol=1e-12, atol=1e-12):
                    wrong.append((k, j, float(np.abs(got - expected).max())))
        for j, got, expected in pending:
            got = got[0] if isinstance(got, tuple) else got
            got = got.get() if isinstance(got, cla.Array) else got
            if not np.allclose(got, expected, rtol=1e-12, atol=1e-12):
                wrong.append((k, j, float(np.abs(got - expected).max())))

    _run_threads(body)
    assert not wrong, (f"{len(wrong)} wrong results of "
                       f"{NTHREADS * NCALLS}: {wrong[:5]}")


@pytest.mark.parametrize("shared_queue", [True, False],
                         ids=["shared-queue", "queue-per-thread"])
@pytest.mark.parametrize("device_inputs", [True, False],
                         ids=["device-inputs", "numpy-inputs"])
def test_program_from_threads(cl_ctx: cl.Context, fast_switching: None,
                              shared_queue: bool, device_inputs: bool
                              ) -> None:
    prog, ref = _several_kernels()
    queues = [cl.CommandQueue(cl_ctx)
              for _ in range(1 if shared_queue else NTHREADS)]
    _threaded_calls(prog, ref, queues, device_inputs)
    for q in queues:
        q.finish()


@pytest.mark.parametrize("shared_queue", [True, False],
                         ids=["shared-queue", "queue-per-thread"])
def test_executable_from_threads(cl_ctx: cl.Context, fast_switching: None,
                                 shared_queue: bool) -> None:
    prog, ref = _several_kernels()
    exe = prog.bind_to_context(cl_ctx)
    queues = [cl.CommandQueue(cl_ctx)
              for _ in range(1 if shared_queue else NTHREADS)]
    _threaded_calls(exe, ref, queues, device_inputs=True)
    for q in queues:
        q.finish()


def test_program_from_threads_profiling(cl_ctx: cl.Context,
                                        fast_switching: None) -> None:
    """On queues with profiling enabled (the kernels' events recorded in
    the program's statistics): right results, and every kernel run
    counted, the statistics being read by another thread meanwhile."""
    prog, ref = _several_kernels()
    props = cl.command_queue_properties.PROFILING_ENABLE
    queues = [cl.CommandQueue(cl_ctx, properties=props)
              for _ in range(NTHREADS)]
    done = threading.Event()

    def read_statistics() -> None:
        while not done.is_set():
            _ = prog.statistics

    reader = threading.Thread(target=read_statistics)
    reader.start()
    try:
        _threaded_calls(prog, ref, queues, device_inputs=True)
    finally:
        done.set()
        reader.join()
    for q in queues:
        q.finish()
    stats = prog.statistics
    nkernels = len(stats)
    assert nkernels >= 2
    assert all(s.count == NTHREADS * NCALLS for s in stats.values()), {
        name: s.count for name, s in stats.items()}


def test_loopy_caching_switch_restored_across_threads() -> None:
    """Two threads turning loopy's (process-wide) caching off with their
    regions interleaved (A in, B in, A out, B out) leave it as it was; with
    loopy.CacheMode, B saved A's 'off' and restored it last: the program
    store stayed off for the rest of the process."""
    import threading

    import loopy as lp

    from pytato.target.loopy.loopy_memos import loopy_caching_off

    before = lp.CACHING_ENABLED
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def a() -> None:
        with loopy_caching_off():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with loopy_caching_off():
            b_in.set()
            a_out.wait(5)
            assert not lp.CACHING_ENABLED

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert lp.CACHING_ENABLED == before
