"""Tests of the JAX target (:func:`pytato.generate_jax`): results match
numpy with and without :func:`jax.jit`."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.array import IndexLambda
from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    MissingArgumentError,
    UnknownArgumentError,
)
from pytato.scalar_expr import MaxReductionOperation, Reduce


jax = pytest.importorskip("jax")

from pytato.target.python import (  # noqa: E402
    BoundJAXPythonProgram,
    JAXPythonTarget,
)


rng = np.random.default_rng(seed=3)
V = prim.Variable


def _graphs():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    y = pt.make_placeholder("y", (3,), np.float32)
    i = pt.make_placeholder("i", (2,), np.int64)
    a = rng.random((4, 3))
    b = rng.random(3).astype(np.float32)
    idx = np.array([3, 0])
    inputs = {"x": a, "y": b, "i": idx}
    dw = rng.random(3)
    graphs = {
        "arith": (2 * x + y / 3 - x ** 2, 2 * a + b / 3 - a ** 2),
        "math": (pt.sin(x) * pt.exp(y), np.sin(a) * np.exp(b)),
        "sum": (pt.sum(x, axis=0), a.sum(axis=0)),
        "amax": (pt.amax(x), a.max()),
        "matmul": (x @ x.T, a @ a.T),
        "pad": (pt.pad(x, ((1, 0), (0, 2))), np.pad(a, ((1, 0), (0, 2)))),
        "where": (pt.where(x > 0.5, x, 0.0), np.where(a > 0.5, a, 0.0)),
        "index": (x[::-1, 1:], a[::-1, 1:]),
        "last": (x[-1], a[-1]),
        "adv": (x[i], a[idx]),
        "concat": (pt.concatenate([x, x[:1]]), np.concatenate([a, a[:1]])),
        "stack": (pt.stack([y, y]), np.stack([b, b])),
        "roll": (pt.roll(x, 1, axis=0), np.roll(a, 1, axis=0)),
        "reshape": (x.reshape(-1), a.reshape(-1)),
        "transpose": (x.T, a.T),
        "bound": (x * pt.make_data_wrapper(dw), a * dw),
        "int": ((i * 3) // 2, (idx * 3) // 2),
        "bool": (pt.logical_and(x > 0.2, x < 0.8), (a > 0.2) & (a < 0.8)),
        "n": (n, np.array(4)),
        "max_empty_ok": (IndexLambda(
            (3,), np.dtype(np.float64),
            Reduce(V("_in0")[V("_r0"), V("_0")], MaxReductionOperation(),
                   {"_r0": (0, V("_in1"))}),
            {"_in0": x, "_in1": n}), a.max(axis=0)),
    }
    return graphs, inputs


@pytest.mark.parametrize("jit", [False, True])
def test_jax_matches_numpy(jit):
    graphs, inputs = _graphs()
    prog = pt.generate_jax({k: g for k, (g, _) in graphs.items()}, jit=jit)
    assert isinstance(prog, BoundJAXPythonProgram)
    assert isinstance(prog.target, JAXPythonTarget)
    res = prog(**inputs)
    np_prog = pt.generate_numpy({k: g for k, (g, _) in graphs.items()})
    np_res = np_prog(**inputs)
    for k, (g, ref) in graphs.items():
        assert res[k].dtype == g.dtype, k
        assert res[k].shape == np.shape(ref), k
        np.testing.assert_allclose(np.asarray(res[k]), ref, rtol=1e-6,
                                   err_msg=k)
        np.testing.assert_allclose(np.asarray(res[k]), np_res[k], rtol=1e-6,
                                   err_msg=k)


@pytest.mark.parametrize("jit", [False, True])
def test_jax_single_output_and_reuse(jit):
    x = pt.make_placeholder("x", (5,), np.float32)
    prog = pt.generate_jax(pt.sum(x * x), jit=jit)
    for _ in range(2):
        a = rng.random(5).astype(np.float32)
        res = prog(x=a)
        assert res.shape == () and res.dtype == np.float32
        np.testing.assert_allclose(np.asarray(res), (a * a).sum(), rtol=1e-5)


def test_jax_call_time_errors():
    x = pt.make_placeholder("x", (2,), np.float64)
    dw = pt.make_data_wrapper(np.ones(2), name="w")
    prog = pt.generate_jax(x + dw)
    np.testing.assert_allclose(np.asarray(prog(x=np.ones(2))), 2.0)
    with pytest.raises(BoundArgumentError, match="'w'"):
        prog(x=np.ones(2), w=np.ones(2))
    with pytest.raises(UnknownArgumentError, match="'z'"):
        prog(x=np.ones(2), z=1)
    with pytest.raises(MissingArgumentError, match="'x'"):
        prog()
    with pytest.raises(ArgumentShapeError, match="'x'"):
        prog(x=np.ones(3))
    with pytest.raises(ArgumentDTypeError, match="'x'"):
        prog(x=np.ones(2, np.float32))


def test_jax_show_code(capsys):
    x = pt.make_placeholder("x", (2,), np.float64)
    prog = pt.generate_jax(2 * x, jit=True, function_name="f", show_code=True,
                           colorize_show_code=True)
    out = capsys.readouterr().out
    assert "import jax.numpy as _pt_jnp" in out
    assert "jax.jit" in out and "def f(x):" in out
    assert out.strip() == str(prog).strip()
    # jax arrays are accepted as inputs too
    import jax.numpy as jnp
    np.testing.assert_allclose(np.asarray(prog(x=jnp.ones(2))), 2.0)
