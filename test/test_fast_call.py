"""The fast call path of pytato's OpenCL programs and executables
(``pytato.target.loopy.launch._FastCall``) gives what loopy's executor
gives: same result types and structure, same values, events, errors."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import ArgumentDTypeError, ArgumentShapeError
from pytato.target.loopy import launch


def _programs() -> dict[str, tuple[object, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    x = pt.make_placeholder("x", (100,), np.float64)
    y = pt.make_placeholder("y", (100,), np.float64)
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n, 3), np.float64)
    t = (x * y + 1).tagged(pt.tags.ImplStored())
    xv = rng.random(100)
    yv = rng.random(100)
    zv = rng.random((7, 3))
    return {
        "one": (2 * x + 1, {"x": xv}),
        "several": ({"a": 2 * t - x, "b": pt.sum(t * t)}, {"x": xv, "y": yv}),
        "temporary": (pt.roll(t, 1) * 3, {"x": xv, "y": yv}),
        "symbolic": ((z * 2).sum(axis=1), {"z": zv}),
    }


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)  # type: ignore[arg-type]
        for k in a:
            _same(a[k], b[k])  # type: ignore[index]
    elif isinstance(a, tuple):
        assert len(a) == len(b)  # type: ignore[arg-type]
        for u, v in zip(a, b, strict=True):  # type: ignore[call-overload]
            _same(u, v)
    elif isinstance(a, cla.Array):
        assert a.shape == b.shape and a.dtype == b.dtype  # type: ignore[attr-defined]
        assert a.strides == b.strides  # type: ignore[attr-defined]
        np.testing.assert_allclose(a.get(), b.get())  # type: ignore[attr-defined]
    else:
        assert isinstance(a, np.ndarray)
        assert a.shape == b.shape and a.dtype == b.dtype  # type: ignore[attr-defined]
        np.testing.assert_allclose(a, b)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["one", "several", "temporary", "symbolic"])
@pytest.mark.parametrize("host", [False, True])
@pytest.mark.parametrize("bound", [False, True])
def test_fast_call_matches_loopy(cl_ctx, name, host, bound):
    queue = cl.CommandQueue(cl_ctx)
    result, inputs = _programs()[name]
    prog = pt.generate_loopy(result)
    args = dict(inputs) if host else {k: cla.to_device(queue, v)
                                      for k, v in inputs.items()}
    if bound:
        runner = prog.bind_to_context(cl_ctx)
        executor = runner.program
    else:
        runner = prog
        executor = prog._executor(cl_ctx)
    runner(queue, **args)        # first call: loopy (warms up)
    evt, got = runner(queue, **args)
    fast = launch._FAST_CALLS.get(executor)
    assert fast is not None, "the fast path is not used"
    assert any(v is not None for v in fast._sized.values())
    assert isinstance(evt, cl.Event)
    evt.wait()
    # loopy's executor, as the programs call it
    arrays, values = runner._arg_spec.process(args, runner.bound_arguments)
    kwargs = dict(arrays, **values)
    if bound:
        ref_evt, ref = executor(queue, **kwargs)
    else:
        ref_evt, ref = executor(queue, out_host=host, **kwargs)
    ref_evt.wait()
    _same(got, ref)


def test_fast_call_wait_for(cl_ctx):
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (50,), np.float32)
    exe = pt.generate_loopy(x + 1).bind_to_context(cl_ctx)
    xd = cla.to_device(queue, np.arange(50, dtype=np.float32))
    exe(queue, x=xd)
    gate = cl.UserEvent(cl_ctx)
    evt, (out,) = exe(queue, x=xd, wait_for=[gate])
    assert evt.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_allclose(out.get(), np.arange(50) + 1)


def test_fast_call_errors_and_fallbacks(cl_ctx):
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (50,), np.float32)
    exe = pt.generate_loopy(x * 2).bind_to_context(cl_ctx)
    xd = cla.to_device(queue, np.arange(50, dtype=np.float32))
    for _ in range(3):
        exe(queue, x=xd)
    with pytest.raises(ArgumentShapeError, match="'x'"):
        exe(queue, x=cla.zeros(queue, 49, np.float32))
    with pytest.raises(ArgumentDTypeError, match="'x'"):
        exe(queue, x=cla.zeros(queue, 50, np.float64))
    # a device array with an offset: loopy's executor decides
    big = cla.to_device(queue, np.arange(51, dtype=np.float32))
    with pytest.raises(ValueError):
        exe(queue, x=big[1:])
    # numpy in, numpy out; non-contiguous numpy input
    _, (out,) = exe(queue, x=np.arange(100, dtype=np.float32)[::2])
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.arange(100)[::2] * 2)
    _, (out,) = exe(queue, x=xd)
    np.testing.assert_allclose(out.get(), np.arange(50) * 2)
