"""Tests of :mod:`pytato.target.loopy.build.cl_math`: transcendental
functions called through ``noinline`` wrappers when asked for, with the
results and types of the inline calls."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.build.cl_math import (
    OUT_OF_LINE_FUNCTIONS,
    OUT_OF_LINE_MATH_ENV,
    out_of_line_math_enabled,
)
from pytato.target.loopy.build.cl_target import PytatoPyOpenCLTarget


def _graph(dtype: np.dtype) -> tuple[dict[str, pt.Array], dict[str, np.ndarray]]:
    x = pt.make_placeholder("x", (37,), dtype)
    xv = np.linspace(-3, 3, 37).astype(dtype)
    xv[3], xv[5], xv[7] = np.nan, np.inf, -np.inf
    xv[9] = -0.0
    exprs = {
        "o_trig": pt.sin(x) * 2 + pt.cos(x) - pt.tan(x) / 3,
        "o_inverse": pt.arcsin(x / 4) + pt.arccos(x / 4) + pt.arctan(x),
        "o_hyperbolic": pt.sinh(x) + pt.cosh(x) + pt.tanh(x),
        "o_exp_log": pt.exp(-x) + pt.log(pt.abs(x) + 1) + pt.log10(pt.abs(x) + 2),
        "o_atan2": pt.arctan2(x, 1.5 - x),
        # several calls of one function in one expression
        "o_repeated": pt.sin(x) + pt.sin(2 * x) + pt.sin(pt.sin(x)),
    }
    return exprs, {"x": xv}


def _numpy(dtype: np.dtype, xv: np.ndarray) -> dict[str, np.ndarray]:
    with np.errstate(all="ignore"):
        x = xv
        return {
            "o_trig": np.sin(x) * 2 + np.cos(x) - np.tan(x) / 3,
            "o_inverse": np.arcsin(x / 4) + np.arccos(x / 4) + np.arctan(x),
            "o_hyperbolic": np.sinh(x) + np.cosh(x) + np.tanh(x),
            "o_exp_log": (np.exp(-x) + np.log(np.abs(x) + 1)
                        + np.log10(np.abs(x) + 2)),
            "o_atan2": np.arctan2(x, dtype.type(1.5) - x),
            "o_repeated": np.sin(x) + np.sin(2 * x) + np.sin(np.sin(x)),
        }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_of_line_equals_inline(queue, monkeypatch, dtype):
    """With ``PYTATO_OUT_OF_LINE_MATH=1``, each function of
    :data:`OUT_OF_LINE_FUNCTIONS` used is defined once as a ``noinline``
    wrapper and called through it; the results equal the inline calls'
    (the same builtins) and numpy's, NaN and infinities included."""
    dtype = np.dtype(dtype)
    exprs, inputs = _graph(dtype)
    expected = _numpy(dtype, inputs["x"])
    results = {}
    for flag in ("0", "1"):
        monkeypatch.setenv(OUT_OF_LINE_MATH_ENV, flag)
        prog = pt.generate_loopy(exprs)
        code = prog.get_code()
        sfx = {"float32": "f32", "float64": "f64"}[dtype.name]
        if flag == "1":
            assert prog.program.target.out_of_line_math
            for name in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                         "cosh", "tanh", "exp", "log",
                         "log10", "atan2"):
                assert "__attribute__((noinline))" in code
                ctype = {"f32": "float", "f64": "double"}[sfx]
                # defined once, called
                assert code.count(f"{ctype} _pt_{name}_{sfx}(") == 1, name
                assert code.count(f"_pt_{name}_{sfx}(") > 1, name
            # the kernel calls the wrappers only
            body = code[code.index("__kernel"):]
            assert "_pt_sin_" + sfx in body
            assert " sin(" not in body
        else:
            assert not prog.program.target.out_of_line_math
            assert "noinline" not in code
        _, out = prog(queue, **inputs)
        results[flag] = out
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for name, ref in expected.items():
        for flag in ("0", "1"):
            assert results[flag][name].dtype == dtype
            np.testing.assert_allclose(results[flag][name], ref, rtol=rtol,
                                       atol=rtol, equal_nan=True,
                                       err_msg=f"{name} (flag {flag})")
        np.testing.assert_array_equal(results["0"][name], results["1"][name])


def test_out_of_line_other_types(queue, monkeypatch):
    """Integer arguments (computed in float32 or float64 as numpy does)
    and complex ones (pytato's own functions) are unaffected in their
    results; complex calls do not go through the real wrappers."""
    monkeypatch.setenv(OUT_OF_LINE_MATH_ENV, "1")
    i = pt.make_placeholder("i", (9,), np.int32)
    z = pt.make_placeholder("z", (9,), np.complex128)
    iv = np.arange(-4, 5, dtype=np.int32)
    zv = (np.linspace(-2, 2, 9) + 1j * np.linspace(1, -1, 9)).astype(
        np.complex128)
    prog = pt.generate_loopy({"si": pt.sin(i), "ez": pt.exp(z) + pt.sin(z)})
    _, out = prog(queue, i=iv, z=zv)
    np.testing.assert_allclose(out["si"], np.sin(iv), rtol=1e-12)
    assert out["si"].dtype == np.sin(iv).dtype
    np.testing.assert_allclose(out["ez"], np.exp(zv) + np.sin(zv), rtol=1e-12)


def test_switch_and_target():
    """The switch is off by default and read from the environment; the
    target's flag is part of its equality and survives pickling."""
    assert set(OUT_OF_LINE_FUNCTIONS) >= {"sin", "exp", "log", "atan2"}
    assert "sqrt" not in OUT_OF_LINE_FUNCTIONS
    a = PytatoPyOpenCLTarget(out_of_line_math=True)
    b = PytatoPyOpenCLTarget()
    assert not b.out_of_line_math
    assert a != b
    c = pickle.loads(pickle.dumps(a))
    assert c == a and c.out_of_line_math


@pytest.mark.parametrize(("value", "expected"), [
    ("", False), ("0", False), ("off", False), ("1", True), ("yes", True)])
def test_switch_values(monkeypatch, value, expected):
    monkeypatch.setenv(OUT_OF_LINE_MATH_ENV, value)
    assert out_of_line_math_enabled() is expected
