"""Calls (:func:`pytato.trace_call`) on the NumPy and JAX targets: each
function definition becomes one generated Python function, called at each
call site; results are compared with numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pytato as pt
from pytato.function import Call


TARGETS = ["numpy", "jax", "jax-jit"]


def _generate(target, result, **kwargs):
    if target == "numpy":
        return pt.generate_numpy(result, **kwargs)
    pytest.importorskip("jax")
    return pt.generate_jax(result, jit=(target == "jax-jit"), **kwargs)


def _run(target, result, **inputs):
    res = _generate(target, result)(**inputs)
    if isinstance(res, dict):
        return {k: np.asarray(v) for k, v in res.items()}
    return np.asarray(res)


def _defs(source, ident):
    return re.findall(rf"^def _pt_fn_{ident}\b", source, flags=re.MULTILINE)


def _scale(u):
    return 2 * pt.sin(u) + 1


def _scale_np(u):
    return 2 * np.sin(u) + 1


def _split(u, v):
    return {"s": _scale_traced(u) + v, "d": u - v}


def _scale_traced(u):
    return pt.trace_call(_scale, u)


def _pair(u):
    return u * u, u.sum()


@pytest.mark.parametrize("target", TARGETS)
def test_single_array_function(target):
    x = pt.make_placeholder("x", (6,), np.float64)
    y = pt.trace_call(_scale, x)
    xv = np.random.default_rng(0).random(6)
    np.testing.assert_allclose(_run(target, 3 * y, x=xv), 3 * _scale_np(xv),
                               rtol=1e-12)
    src = _generate(target, 3 * y).program
    assert len(_defs(src, "_scale")) == 1
    # called, not inlined: the entrypoint has no sin of its own
    entry = src[src.index("def _pt_kernel"):]
    assert "_pt_fn__scale(" in entry and "sin" not in entry


@pytest.mark.parametrize("target", TARGETS)
def test_tuple_and_dict_results_and_nesting(target):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    y = pt.make_placeholder("y", (n,), np.float64)
    r1 = pt.trace_call(_split, x, y)
    r2 = pt.trace_call(_split, r1["s"], x)
    sq, total = pt.trace_call(_pair, r2["d"])
    result = {"o": r2["s"] * r1["d"], "sq": sq, "total": total}

    rng = np.random.default_rng(1)
    xv, yv = rng.random(5), rng.random(5)
    s1, d1 = _scale_np(xv) + yv, xv - yv
    s2, d2 = _scale_np(s1) + xv, s1 - xv
    res = _run(target, result, x=xv, y=yv, n=5)
    np.testing.assert_allclose(res["o"], s2 * d1, rtol=1e-12)
    np.testing.assert_allclose(res["sq"], d2 * d2, rtol=1e-12)
    np.testing.assert_allclose(res["total"], d2.sum(), rtol=1e-12)

    src = _generate(target, result).program
    # one definition each, the nested callee before its caller
    assert [len(_defs(src, i)) for i in ("_scale", "_split", "_pair")] == [1] * 3
    assert src.index("def _pt_fn__scale") < src.index("def _pt_fn__split")
    split_body = src[src.index("def _pt_fn__split"):
                     src.index("def _pt_fn__pair")]
    assert "_pt_fn__scale(" in split_body
    assert "return {'s': " in split_body
    assert re.search(r"return \(\w+, \w+\)", src)


@pytest.mark.parametrize("target", TARGETS)
def test_many_call_sites(target):
    x = pt.make_placeholder("x", (4,), np.float64)
    u = x
    for _ in range(6):
        u = pt.trace_call(_scale, u) * 0.5
    xv = np.random.default_rng(2).random(4)
    ref = xv
    for _ in range(6):
        ref = _scale_np(ref) * 0.5
    np.testing.assert_allclose(_run(target, u, x=xv), ref, rtol=1e-12)
    src = _generate(target, u).program
    assert len(_defs(src, "_scale")) == 1
    assert src.count("_pt_fn__scale(") == 6 + 1  # call sites + def


@pytest.mark.parametrize("target", TARGETS)
def test_symbolic_size_bindings(target):
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (n,), np.float64)

    def f(u):
        return u * 2

    fn = pt.trace_call(f, x)._container.function
    y = pt.make_placeholder("y", (2 * m,), np.float64)
    z = pt.make_placeholder("z", (m,), np.float64)
    r1 = Call(fn, {"_pt_arg_0": y, "n": 2 * m})["_"]
    r2 = Call(fn, {"_pt_arg_0": z, "n": m})["_"]
    result = {"a": r1[:m] + r2, "b": r1}
    yv, zv = np.arange(6.0), np.arange(3.0) + 10
    res = _run(target, result, y=yv, z=zv, m=3)
    np.testing.assert_allclose(res["a"], 2 * yv[:3] + 2 * zv)
    np.testing.assert_allclose(res["b"], 2 * yv)
    src = _generate(target, result).program
    assert len(_defs(src, "f")) == 1
    # size parameters are passed as Python integer expressions
    assert "n=(2 * m))" in src and "n=m)" in src


@pytest.mark.parametrize("target", TARGETS)
def test_captured_data_and_size_used_as_value(target):
    n = pt.make_size_param("n")
    data = np.arange(4.0)
    dw = pt.make_data_wrapper(data)
    x = pt.make_placeholder("x", (n,), np.float64)

    def f(u):
        return u * n + dw.sum()

    y = pt.trace_call(f, x)
    xv = np.random.default_rng(3).random(4)
    np.testing.assert_allclose(_run(target, y, x=xv, n=4),
                               xv * 4 + data.sum(), rtol=1e-12)


@pytest.mark.parametrize("target", TARGETS)
def test_csr_product_in_function(target):
    rng = np.random.default_rng(4)
    dense = np.where(rng.random((5, 5)) < 0.5, rng.random((5, 5)), 0)
    rows, cols = np.nonzero(dense)
    starts = np.searchsorted(rows, np.arange(6)).astype(np.int32)
    a = pt.make_csr_matrix((5, 5), dense[rows, cols], cols.astype(np.int32),
                           starts)

    def step(u):
        return u + 0.1 * (a @ u)

    x = pt.make_placeholder("x", (5,), np.float64)
    y = pt.trace_call(step, pt.trace_call(step, x))
    xv = rng.random(5)
    ref = xv + 0.1 * dense @ xv
    ref = ref + 0.1 * dense @ ref
    np.testing.assert_allclose(_run(target, y, x=xv), ref, rtol=1e-12)
    src = _generate(target, y).program
    assert len(_defs(src, "step")) == 1
    step_body = src[src.index("def _pt_fn_step"):src.index("def _pt_kernel")]
    assert "csr_matmul(" in step_body


def _np_cube(x):
    return np.asarray(x) ** 3


def _jax_cube(x):
    return x ** 3


@pytest.mark.parametrize("target", TARGETS)
def test_foreign_function_in_function(target):
    pt.register_scalar_function("pycalls_cube", None, numpy_impl=_np_cube,
                                jax_impl=_jax_cube)
    x = pt.make_placeholder("x", (5,), np.float64)

    def f(u):
        return pt.call_scalar_function("pycalls_cube", u) + 1

    y = pt.trace_call(f, pt.trace_call(f, x))
    xv = np.random.default_rng(5).random(5)
    np.testing.assert_allclose(_run(target, y, x=xv), (xv**3 + 1)**3 + 1,
                               rtol=1e-12)
    assert len(_defs(_generate(target, y).program, "f")) == 1


@pytest.mark.parametrize("target", TARGETS)
def test_named_results_and_show_code(target, capsys):
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.trace_call(_scale, x).tagged(pt.tags.Named("scaled"))
    prog = _generate(target, {"y": y + 1}, show_code=True)
    out = capsys.readouterr().out
    assert "def _pt_fn__scale(" in out
    assert "scaled = _pt_call0" in out
    if target == "jax-jit":
        # only the entrypoint is jitted; functions are simply called
        assert out.count("_pt_jax.jit") == 1
        assert out.index("_pt_jax.jit") > out.index("def _pt_fn__scale")
    xv = np.arange(3.0)
    np.testing.assert_allclose(np.asarray(prog(x=xv)["y"]), _scale_np(xv) + 1)


def test_different_functions_with_one_identifier():
    x = pt.make_placeholder("x", (3,), np.float64)
    a = pt.trace_call(lambda u: u + 1, x, identifier="g")
    b = pt.trace_call(lambda u: u * 3, x, identifier="g")
    prog = pt.generate_numpy(a + b)
    assert len(_defs(prog.program, "g")) == 1
    assert len(_defs(prog.program, "g_1")) == 1
    np.testing.assert_allclose(prog(x=np.arange(3.0)),
                               np.arange(3.0) * 4 + 1)


def test_jax_x64_from_function_body():
    pytest.importorskip("jax")
    x = pt.make_placeholder("x", (3,), np.float32)

    def f(u):
        return u.astype(np.float64) * 2

    y = pt.trace_call(f, x)
    res = pt.generate_jax(y.astype(np.float32) + 0)(x=np.ones(3, np.float32))
    np.testing.assert_allclose(np.asarray(res), 2.0)
