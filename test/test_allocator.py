"""Tests of the default allocator of pytato's OpenCL programs: a
:class:`pyopencl.tools.MemoryPool` per command queue
(:func:`pytato.target.loopy.run.programs.default_allocator`)."""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as cl_tools
import pytest

import pytato as pt
from pytato.target.loopy.run.programs import (
    default_allocator,
    set_default_memory_pool,
)


N = 1000
PROFILING = cl.command_queue_properties.PROFILING_ENABLE
OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


def _graph() -> dict[str, pt.Array]:
    x = pt.make_placeholder("x", (N,), np.float64)
    y = pt.make_placeholder("y", (N,), np.float64)
    t = x * y + 1.0
    return {"a": 2 * t - x, "b": pt.sum(t * t)}


def _reference(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    t = x * y + 1.0
    return {"a": 2 * t - x, "b": np.sum(t * t)}


@pytest.fixture(scope="module")
def prog() -> Any:
    return pt.generate_loopy(_graph())


def _inputs(queue: cl.CommandQueue, seed: int) -> dict[str, cla.Array]:
    rng = np.random.default_rng(seed)
    return {k: cla.to_device(queue, rng.random(N)) for k in ("x", "y")}


def _check(out: dict[str, Any], inputs: dict[str, cla.Array]) -> None:
    ref = _reference(inputs["x"].get(), inputs["y"].get())
    for name, value in ref.items():
        got = out[name].get() if hasattr(out[name], "get") else out[name]
        np.testing.assert_allclose(got, value, rtol=1e-12)


def _pooled(out: dict[str, Any]) -> bool:
    return all(isinstance(v.base_data, cl_tools.PooledBuffer)
               for v in out.values())


def _plain(out: dict[str, Any]) -> bool:
    return all(not isinstance(v.base_data, cl_tools.PooledBuffer)
               for v in out.values())


def _callers(prog: Any, queue: cl.CommandQueue) -> dict[str, Any]:
    """Ways to run *prog* on *queue*: each maps (inputs, kwargs) to the
    outputs (a dict of device arrays)."""
    exe = prog.bind_to_context(queue.context)

    def launch(inputs: dict[str, Any], **kwargs: Any) -> Any:
        lnch = prog.launcher(queue, **inputs, **kwargs)
        lnch()
        return lnch.result()

    return {
        "program": lambda i, **kw: prog(queue, **i, **kw)[1],
        "executable": lambda i, **kw: exe(queue, **i, **kw)[1],
        "launcher": launch,
    }


@pytest.mark.parametrize("caller", ["program", "executable", "launcher"])
@pytest.mark.parametrize("profiling", [False, True])
def test_default_is_pool_of_queue(cl_ctx, prog, caller, profiling):
    queue = cl.CommandQueue(cl_ctx, properties=PROFILING if profiling else 0)
    run = _callers(prog, queue)[caller]
    inputs = _inputs(queue, 0)
    out = run(inputs)
    assert _pooled(out)
    pool = default_allocator(queue)
    assert isinstance(pool, cl_tools.MemoryPool)
    assert default_allocator(queue) is pool
    assert pool.active_blocks >= len(out)
    _check(out, inputs)


@pytest.mark.parametrize("caller", ["program", "executable", "launcher"])
def test_outputs_of_two_calls_stay_valid(queue, prog, caller):
    run = _callers(prog, queue)[caller]
    in1, in2 = _inputs(queue, 1), _inputs(queue, 2)
    out1 = run(in1)
    out2 = run(in2)
    # a third call, and dropped outputs, must not reuse the kept ones
    for seed in range(3, 6):
        run(_inputs(queue, seed))
        gc.collect()
    queue.finish()
    _check(out1, in1)
    _check(out2, in2)
    assert out1["a"].base_data.int_ptr != out2["a"].base_data.int_ptr


def test_dropped_outputs_are_reused(queue, prog):
    inputs = _inputs(queue, 0)
    _, out = prog(queue, **inputs)
    pool = default_allocator(queue)
    del out
    gc.collect()
    held = pool.held_blocks
    assert held > 0
    managed = pool.managed_bytes
    for _ in range(5):
        _, out = prog(queue, **inputs)
        del out
    assert pool.managed_bytes == managed
    _, out = prog(queue, **inputs)
    _check(out, inputs)


def test_host_inputs_and_outputs(queue, prog):
    rng = np.random.default_rng(7)
    x, y = rng.random(N), rng.random(N)
    _, out = prog(queue, x=x, y=y)
    assert isinstance(out["a"], np.ndarray)
    ref = _reference(x, y)
    np.testing.assert_allclose(out["a"], ref["a"], rtol=1e-12)
    # the transferred inputs and outputs went back to the pool
    gc.collect()
    assert default_allocator(queue).held_blocks > 0


@pytest.mark.parametrize("caller", ["program", "executable", "launcher"])
def test_allocator_false_gives_fresh_buffers(queue, prog, caller):
    run = _callers(prog, queue)[caller]
    inputs = _inputs(queue, 0)
    out = run(inputs, allocator=False)
    assert _plain(out)
    _check(out, inputs)


@pytest.mark.parametrize("caller", ["program", "executable", "launcher"])
def test_explicit_allocator_is_used(queue, prog, caller):
    run = _callers(prog, queue)[caller]
    pool = cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))
    inputs = _inputs(queue, 0)
    out = run(inputs, allocator=pool)
    assert pool.active_blocks >= len(out)
    _check(out, inputs)

    sizes = []

    def alloc(size: int) -> cl.Buffer:
        sizes.append(size)
        return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size)

    out = run(inputs, allocator=alloc)
    assert len(sizes) >= len(out)
    assert _plain(out)
    _check(out, inputs)


def test_set_default_memory_pool(queue, prog):
    inputs = _inputs(queue, 0)
    previous = set_default_memory_pool(False)
    try:
        assert previous is True
        _, out = prog(queue, **inputs)
        assert _plain(out)
        # explicit pools still work while the default is off
        _, out = prog(queue, allocator=default_allocator(queue), **inputs)
        assert _pooled(out)
    finally:
        set_default_memory_pool(previous)
    _, out = prog(queue, **inputs)
    assert _pooled(out)
    _check(out, inputs)


def test_pools_are_per_queue(cl_ctx, prog):
    q1 = cl.CommandQueue(cl_ctx)
    q2 = cl.CommandQueue(cl_ctx)
    _, out1 = prog(q1, **_inputs(q1, 0))
    _, out2 = prog(q2, **_inputs(q2, 0))
    assert default_allocator(q1) is not default_allocator(q2)
    del out1, out2
    q1.finish()
    q2.finish()


def test_out_of_order_queue_gets_no_pool(cl_ctx, prog):
    try:
        queue = cl.CommandQueue(cl_ctx, properties=OUT_OF_ORDER)
    except cl.Error:
        pytest.skip("out-of-order queues not supported")
    assert default_allocator(queue) is None
    inputs = _inputs(queue, 0)
    queue.finish()
    _, out = prog(queue, **inputs)
    assert _plain(out)
    queue.finish()
    _check(out, inputs)


def test_pool_goes_away_with_queue(cl_ctx, prog):
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs(queue, 0)
    _, out = prog(queue, **inputs)
    _check(out, inputs)
    pool = default_allocator(queue)
    queue.finish()
    del inputs, out
    gc.collect()
    refs = sys.getrefcount(pool)
    del queue
    gc.collect()
    # only the queue object held the pool
    assert sys.getrefcount(pool) == refs - 1


def test_default_pool_from_threads_on_one_queue(cl_ctx):
    """The default pool of one queue, used by several threads at once (new
    buffers and reused ones, with blocking transfers on the queue
    meanwhile): every buffer holds what its thread wrote. (The pool's
    allocator enqueues nothing: NVIDIA's driver crashed when pyopencl's
    ImmediateAllocator migrated a new buffer on a queue on which another
    thread was in a blocking transfer.)"""
    import threading

    queue = cl.CommandQueue(cl_ctx)
    pool = default_allocator(queue)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            rng = np.random.default_rng(k)
            for i in range(60):
                x = rng.random(100 + 37 * (i % 5))
                dev = cla.to_device(queue, x, allocator=pool)
                np.testing.assert_array_equal(dev.get(), x)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert pool.held_blocks >= 1
