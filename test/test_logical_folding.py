"""Logical operations with constant operands (as arraycontext's
``array_equal`` builds them: ``logical_and(True, ...)``) are folded when
lowered, so that the device compiler has nothing to warn of, and keep
numpy's results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pytato as pt


XV = np.array([0, 1, 2, -3, 0], dtype=np.int64)
BV = np.array([True, False, True, True, False])


@pytest.mark.parametrize(("build", "ref"), [
    (lambda x, b: pt.logical_and(True, x), lambda x, b: np.logical_and(True, x)),
    (lambda x, b: pt.logical_and(False, x), lambda x, b: np.logical_and(False, x)),
    (lambda x, b: pt.logical_or(True, x), lambda x, b: np.logical_or(True, x)),
    (lambda x, b: pt.logical_or(False, x), lambda x, b: np.logical_or(False, x)),
    (lambda x, b: pt.logical_or(False, b), lambda x, b: np.logical_or(False, b)),
    (lambda x, b: pt.logical_and(pt.logical_and(True, b), x),
     lambda x, b: np.logical_and(np.logical_and(True, b), x)),
    (lambda x, b: pt.logical_and(pt.equal(x, 1), True) | b,
     lambda x, b: np.logical_and(x == 1, True) | b),
])
def test_constant_operands_folded(ctx_factory, monkeypatch, build, ref) -> None:
    import pyopencl as cl
    monkeypatch.setenv("PYOPENCL_COMPILER_OUTPUT", "1")
    queue = cl.CommandQueue(ctx_factory())
    x = pt.make_placeholder("x", (5,), np.int64)
    b = pt.make_placeholder("b", (5,), np.bool_)
    y = build(x, b)
    names = {n.name for n in pt.transform.InputGatherer()(y)}
    prog = pt.generate_loopy({"y": y})
    code = prog.get_code(queue.device) if hasattr(prog, "get_code") else ""
    assert "&& 1" not in code and "&& 0" not in code
    assert "|| 1" not in code and "|| 0" not in code
    args = {k: v for k, v in {"x": XV, "b": BV}.items() if k in names}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", cl.CompilerWarning)
        _, out = prog(queue, **args)
    # (NVIDIA's compiler says other things of every kernel)
    assert not [w for w in caught if "constant operand" in str(w.message)]
    expected = ref(XV, BV)
    assert out["y"].dtype == np.bool_
    np.testing.assert_array_equal(out["y"], np.broadcast_to(expected, (5,)))
