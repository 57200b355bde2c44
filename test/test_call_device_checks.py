"""Typed errors, naming the argument, for calls that OpenCL would refuse
with vague errors (issue 41, item 12): outputs larger than the device
allocates, non-contiguous device arrays, device arrays of another context.
Good calls around them are checked against numpy on the OpenCL device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import (
    ArgumentContextError,
    ArgumentLayoutError,
    DeviceAllocationError,
)


def test_output_too_large_for_the_device(queue: Any) -> None:
    limit = queue.device.max_mem_alloc_size
    elements = 2**45
    assert 8 * elements > limit
    with pytest.raises(DeviceAllocationError,
                       match=rf"'_pt_out' of shape \({elements},\)") as info:
        pt.generate_loopy(pt.zeros((elements,)))(queue)
    assert str(limit) in str(info.value)
    assert isinstance(info.value, MemoryError)
    # symbolic sizes: checked for the sizes of the call
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    prog = pt.generate_loopy({"y": 2 * x, "big": pt.zeros((n, 2**21))})
    a = np.arange(3.0)
    _, out = prog(queue, x=a)
    np.testing.assert_array_equal(out["y"], 2 * a)
    assert out["big"].shape == (3, 2**21) and not out["big"].any()
    del out
    with pytest.raises(DeviceAllocationError, match="'big' of shape"):
        prog(queue, x=np.arange(float(2**20)))


def test_non_contiguous_device_array_refused(queue: Any) -> None:
    x = pt.make_placeholder("x", (4,), np.float64)
    prog = pt.generate_loopy(2 * x + 1)
    host = np.arange(8.0)
    with pytest.raises(ArgumentLayoutError, match="'x'") as info:
        prog(queue, x=cla.to_device(queue, host)[::2])
    assert isinstance(info.value, ValueError)
    # numpy views are copied
    _, (out,) = prog(queue, x=host[::2])
    np.testing.assert_array_equal(out, 2 * host[::2] + 1)
    # and contiguous device arrays run
    _, (out,) = prog(queue, x=cla.to_device(queue, host[::2].copy()))
    np.testing.assert_array_equal(out.get(), 2 * host[::2] + 1)
    y = pt.make_placeholder("y", (3, 2), np.float64)
    with pytest.raises(ArgumentLayoutError, match="'y'"):
        pt.generate_loopy(y.T * 2)(
            queue, y=cla.to_device(queue, np.ones((2, 3))).T)


def test_device_array_of_another_context_refused(queue: Any) -> None:
    x = pt.make_placeholder("x", (5,), np.float64)
    prog = pt.generate_loopy(3 * x)
    other_queue = cl.CommandQueue(cl.Context(queue.context.devices))
    host = np.arange(5.0)
    foreign = cla.to_device(other_queue, host)
    with pytest.raises(ArgumentContextError, match="'x'"):
        prog(queue, x=foreign)
    # after calls of the same signature (the repeated calls' fast path)
    mine = cla.to_device(queue, host)
    for _ in range(3):
        _, (out,) = prog(queue, x=mine)
        np.testing.assert_array_equal(out.get(), 3 * host)
    with pytest.raises(ArgumentContextError, match="'x'"):
        prog(queue, x=foreign)
    # an array of another queue of the same context is fine
    same_context = cla.to_device(cl.CommandQueue(queue.context), host)
    _, (out,) = prog(queue, x=same_context)
    np.testing.assert_array_equal(out.get(), 3 * host)
    # the queue of the other context runs it
    _, (out,) = prog(other_queue, x=foreign)
    np.testing.assert_array_equal(out.get(), 3 * host)
    exe = prog.bind_to_context(queue.context)
    _, (out,) = exe(queue, x=mine)
    with pytest.raises(ArgumentContextError, match="'x'"):
        exe(queue, x=foreign)


def test_launcher_refuses_as_the_call(queue: Any) -> None:
    x = pt.make_placeholder("x", (5,), np.float64)
    prog = pt.generate_loopy(3 * x)
    other_queue = cl.CommandQueue(cl.Context(queue.context.devices))
    host = np.arange(5.0)
    with pytest.raises(ArgumentContextError, match="'x'"):
        prog.launcher(queue, x=cla.to_device(other_queue, host))
    with pytest.raises(ArgumentLayoutError, match="'x'"):
        prog.launcher(queue, x=cla.to_device(queue, np.arange(10.0))[::2])
    launch = prog.launcher(queue, x=cla.to_device(queue, host))
    launch()
    np.testing.assert_array_equal(
        next(iter(launch.outputs.values())).get(), 3 * host)
    n = pt.make_size_param("n")
    big = pt.generate_loopy(pt.zeros((n, 2**21)))
    with pytest.raises(DeviceAllocationError, match="of shape"):
        big.launcher(queue, n=2**20)
