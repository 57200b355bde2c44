"""Behaviours of code generation that code written for upstream pytato
relies on (issue 39): sizes of :func:`pytato.loopy.call_loopy` inferred
from the bound arrays' shapes, integer ``%`` and ``//`` of every integer
dtype (``np.longlong`` included), tags propagated to the generated
:mod:`loopy` kernel, symbolic reduction bounds, the distributive law over
einsums, :func:`pytato.pad`, materialization lowering flop counts, outputs
sharing subexpressions, and data wrappers of :mod:`pyopencl` arrays.

Everything that computes is compared with numpy on the OpenCL test device
(PoCL on CPU machines).
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt


def _host(ary: Any) -> Any:
    if isinstance(ary, dict):
        return {k: _host(v) for k, v in ary.items()}
    return ary if isinstance(ary, np.ndarray) else ary.get()


def _run(queue: cl.CommandQueue, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return _host(out[0] if isinstance(out, tuple) else out)


# {{{ call_loopy: sizes inferred from the bound arrays' shapes

def test_call_loopy_infers_sizes_from_shapes(queue: cl.CommandQueue) -> None:
    import loopy as lp

    from pytato.loopy import call_loopy

    knl = lp.make_kernel("{[i, j]: 0 <= i < m and 0 <= j < n}",
                         "out[i, j] = 2*x[i, j]", lang_version=(2018, 2))
    x_in = np.random.default_rng(0).random((3, 4))
    out = call_loopy(knl, {"x": pt.make_data_wrapper(x_in)})["out"]
    assert out.shape == (3, 4)
    np.testing.assert_allclose(_run(queue, out), 2 * x_in)

    # a placeholder of the same shape, fed at call time
    x = pt.make_placeholder("x", (3, 4), np.float64)
    out = call_loopy(knl, {"x": x})["out"]
    np.testing.assert_allclose(_run(queue, out, x=x_in), 2 * x_in)


def _sum_kernel() -> Any:
    import loopy as lp

    # the shape of 'A' (inferred by loopy from its accesses) is
    # (2*n + 3*m + 2, 6*n + 4*m + 3): m and n solve two linear equations
    knl = lp.make_kernel(
        ["{[i, j]: 0 <= i < 2*n + 3*m + 2 and 0 <= j < 6*n + 4*m + 3}",
         "{[ii, jj]: 0 <= ii < m and 0 <= jj < n}"],
        """
        <> tmp = sum([i, j], A[i, j])
        out[ii, jj] = tmp*(ii + jj)
        """, lang_version=(2018, 2))
    return lp.add_dtypes(knl, {"A": np.float64})


def test_call_loopy_solves_affine_shape_constraints(
        queue: cl.CommandQueue) -> None:
    from pytato.loopy import call_loopy

    a_in = np.random.default_rng(1).random((20, 37))
    a = pt.make_placeholder("a", (20, 37), np.float64)
    out = call_loopy(_sum_kernel(), {"A": a})["out"]
    # 2n + 3m + 2 == 20, 6n + 4m + 3 == 37: m == 4, n == 3
    assert out.shape == (4, 3)
    np.testing.assert_allclose(
        _run(queue, out, a=a_in),
        a_in.sum() * (np.arange(4).reshape(4, 1) + np.arange(3)))


def test_call_loopy_infers_symbolic_sizes(queue: cl.CommandQueue) -> None:
    from pytato.loopy import call_loopy

    n1 = pt.make_size_param("n1")
    n2 = pt.make_size_param("n2")
    a = pt.make_placeholder("a", (4*n1 + 6*n2 + 2, 12*n1 + 8*n2 + 3),
                            np.float64)
    out = call_loopy(_sum_kernel(), {"A": a})["out"]
    # m == 2*n2, n == 2*n1
    a_in = np.random.default_rng(2).random((4*3 + 6*4 + 2, 12*3 + 8*4 + 3))
    result = _run(queue, out, a=a_in, n1=3, n2=4)
    np.testing.assert_allclose(
        result, a_in.sum() * (np.arange(8).reshape(8, 1) + np.arange(6)))

    # n bound to a size expression, m inferred: 2*(2*n1) + 3*m + 2 ==
    # 4*n1 + 6*n2 + 2 gives m == 2*n2
    out = call_loopy(_sum_kernel(), {"A": a, "n": 2*n1})["out"]
    result = _run(queue, out, a=a_in, n1=3, n2=4)
    np.testing.assert_allclose(
        result, a_in.sum() * (np.arange(8).reshape(8, 1) + np.arange(6)))


def test_call_loopy_undetermined_sizes_raise() -> None:
    import loopy as lp

    from pytato.diagnostic import CallBindingError
    from pytato.loopy import call_loopy

    # only m + n is known from x's shape
    knl = lp.make_kernel("{[i]: 0 <= i < m + n}", "out[i] = 2*x[i]",
                         lang_version=(2018, 2))
    with pytest.raises(CallBindingError, match=r"'m'|'n'"):
        call_loopy(knl, {"x": pt.make_placeholder("x", (5,), np.float64)})

# }}}


# {{{ integer % and // of every integer dtype

_INT_CHARS = "bhilqBHILQ"


def _int_operands(dtype: np.dtype[Any], seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    values = rng.integers(max(info.min, -100), 101, 64).astype(dtype)
    ends = [info.min, info.max, 0, 1,
            *([-1, info.min + 1] if info.min < 0 else [2, info.max - 1])]
    return np.concatenate([values, np.array(ends, dtype=dtype)])


def test_integer_division_of_every_dtype(queue: cl.CommandQueue) -> None:
    # (np.longlong operands: loopy named its functions after the scalar
    # type of the result, and 'loopy_mod_longlong' was never declared)
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, pt.Array] = {}
    expected: dict[str, np.ndarray] = {}
    for c1, c2 in itertools.product(_INT_CHARS, repeat=2):
        d1, d2 = np.dtype(c1), np.dtype(c2)
        x_in = _int_operands(d1, 0)
        y_in = np.roll(_int_operands(d2, 1), 3)
        x = pt.make_placeholder(f"x_{c1}{c2}", x_in.shape, d1)
        y = pt.make_placeholder(f"y_{c1}{c2}", y_in.shape, d2)
        inputs[x.name], inputs[y.name] = x_in, y_in
        # every divisor in both orders, zero included
        for op, rev in itertools.product((operator.mod, operator.floordiv),
                                         (False, True)):
            num, den, num_in, den_in = ((y, x, y_in, x_in) if rev
                                        else (x, y, x_in, y_in))
            name = f"{op.__name__}_{num.name}_{den.name}"
            with np.errstate(all="ignore"):
                ref = op(num_in, den_in)
            if ref.dtype.kind in "iu":
                # the documented result of integer division by zero
                ref = np.where(den_in == 0, 0, ref).astype(ref.dtype)
            outputs[name] = op(num, den)
            expected[name] = ref
    result = _run(queue, pt.make_dict_of_named_arrays(outputs), **inputs)
    for name, ref in expected.items():
        assert result[name].dtype == ref.dtype, name
        np.testing.assert_array_equal(result[name], ref, err_msg=name)


@pytest.mark.parametrize("op", [operator.mod, operator.floordiv])
@pytest.mark.parametrize("c", ["q", "l", "i", "h", "b"])
def test_integer_division_by_scalars(queue: cl.CommandQueue, op: Any,
                                     c: str) -> None:
    x_in = _int_operands(np.dtype(c), 2)
    x = pt.make_placeholder(f"x_scalar_{c}", x_in.shape, np.dtype(c))
    for k in (3, -3, np.dtype(c).type(7)):
        np.testing.assert_array_equal(_run(queue, op(x, k), **{x.name: x_in}),
                                      op(x_in, k))
    nonzero = np.where(x_in == 0, 1, x_in)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            _run(queue, op(5, x), **{x.name: nonzero}), op(5, nonzero))

# }}}

# vim: foldmethod=marker


# {{{ the distributive law over einsums: upstream's structure

def test_distributive_law_builds_einsums_as_written(
        queue: cl.CommandQueue) -> None:
    from pytato.transform.einsum_distributive_law import (
        DoDistribute,
        DoNotDistribute,
        EinsumDistributiveLawDescriptor,
        apply_distributive_property_to_einsums,
    )

    def how(expr: pt.Einsum) -> EinsumDistributiveLawDescriptor:
        if pt.analysis.is_einsum_similar_to_subscript(expr, "ij,j->i"):
            return DoDistribute(ioperand=1)
        return DoNotDistribute()

    x1 = pt.make_placeholder("x1", 4, np.float64)
    x2 = pt.make_placeholder("x2", 4, np.float64)
    a = pt.make_placeholder("a", (10, 4), np.float64)

    def mv(v: pt.Array) -> pt.Array:
        return pt.einsum("ij,j->i", a, v)

    cases = [
        (a @ (x1 + x2), a @ x1 + a @ x2),
        (mv(x1 + x2), mv(x1) + mv(x2)),
        (mv(2*x1 - x2), 2*mv(x1) - mv(x2)),
        (mv(-x1), -mv(x1)),
        (mv(x1 * 3), mv(x1) * 3),
        (mv(3*(x1 + 2*x2) - x1), 3*(mv(x1) + 2*mv(x2)) - mv(x1)),
    ]
    rng = np.random.default_rng(3)
    vals = {"x1": rng.random(4), "x2": rng.random(4), "a": rng.random((10, 4))}
    for expr, expected in cases:
        out = apply_distributive_property_to_einsums(expr, how)
        assert out == expected, (out, expected)
        np.testing.assert_allclose(_run(queue, out, **vals),
                                   _run(queue, expr, **vals), rtol=1e-13)
    # other einsums are left alone
    e = pt.einsum("ij,ij->i", a, a + a)
    assert apply_distributive_property_to_einsums(e, how) == e

# }}}
