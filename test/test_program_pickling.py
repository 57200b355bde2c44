"""Programs pickle without their device state, before and after their
first call (issue 41, item 13): the unpickled program schedules and builds
again at its first call. Results are checked against numpy on the OpenCL
device."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import UnsupportedOperationError


def _graph() -> tuple[Any, Any]:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    c = pt.make_data_wrapper(np.array([1.0, -2.0, 0.5]))
    return {"y": pt.sin(x) * c + 1, "s": pt.sum(x * x, axis=1)}, c


def _expected(a: np.ndarray) -> dict[str, np.ndarray]:
    return {"y": np.sin(a) * np.array([1.0, -2.0, 0.5]) + 1,
            "s": np.sum(a * a, axis=1)}


def _check(queue: Any, prog: Any, a: np.ndarray) -> None:
    _, out = prog(queue, x=a)
    for name, value in _expected(a).items():
        np.testing.assert_allclose(out[name], value, rtol=1e-13)


@pytest.mark.parametrize("scheduled_when_generated", [False, True])
def test_program_pickles_before_and_after_its_first_call(
        queue: Any, scheduled_when_generated: bool) -> None:
    outputs, _ = _graph()
    prog = pt.generate_loopy(
        outputs,
        cl_device=queue.device if scheduled_when_generated else None)
    a = np.random.default_rng(3).standard_normal((5, 3))

    before = pickle.loads(pickle.dumps(prog))
    _check(queue, prog, a)
    _check(queue, prog, a)  # (the repeated calls' fast path set up)
    after = pickle.loads(pickle.dumps(prog))
    for copy in [before, after]:
        assert copy is not prog
        assert copy.store_key == prog.store_key
        assert copy.schedule_per_device == prog.schedule_per_device
        _check(queue, copy, a)
        # device arrays, another size, then pickled again after its calls
        b = np.random.default_rng(4).standard_normal((7, 3))
        _, out = copy(queue, x=cla.to_device(queue, b))
        np.testing.assert_allclose(out["s"].get(), _expected(b)["s"])
        _check(queue, pickle.loads(pickle.dumps(copy)), b)


def test_executable_and_device_data_refused_with_clear_error(
        queue: Any) -> None:
    outputs, _ = _graph()
    prog = pt.generate_loopy(outputs)
    exe = prog.bind_to_context(queue.context)
    with pytest.raises(UnsupportedOperationError,
                       match="BoundPyOpenCLExecutable"):
        pickle.dumps(exe)
    x = pt.make_placeholder("x", (3,), np.float64)
    d = pt.make_data_wrapper(cla.to_device(queue, np.arange(3.0)), name="d")
    prog = pt.generate_loopy(x + d)
    with pytest.raises(UnsupportedOperationError, match="'d'"):
        pickle.dumps(prog)


def test_checked_program_pickles(queue: Any) -> None:
    x = pt.make_placeholder("x", (4,), np.float64)
    i = pt.make_placeholder("i", (3,), np.int64)
    prog = pt.generate_loopy(2 * x[i], check_indices=True)
    a, idx = np.arange(4.0), np.array([3, 0, 1])
    prog(queue, x=a, i=idx)
    copy = pickle.loads(pickle.dumps(prog))
    _, (out,) = copy(queue, x=a, i=idx)
    np.testing.assert_allclose(out, 2 * a[idx])
