"""Reductions (:mod:`pytato.frontend.reductions`) against numpy."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from frontend_cases import (
    ALL_DTYPES,
    REDUCTION_CASES,
    REDUCTION_FUNCS,
    run_numpy,
)

import pytato as pt
from pytato.array import ReductionDescriptor
from pytato.diagnostic import AxisError, DTypeError, EmptyReductionError, PytatoError
from pytato.scalar_expr import (
    AllReductionOperation,
    AnyReductionOperation,
    MaxReductionOperation,
    Reduce,
    SumReductionOperation,
    TypeCast,
)
from pytato.tags import Tag


class _Tagged(Tag):
    pass


@pytest.mark.parametrize("case", REDUCTION_CASES, ids=str)
def test_reduction_values(case):
    run_numpy(case)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("name", "np_func"), REDUCTION_FUNCS,
                         ids=[n for n, _ in REDUCTION_FUNCS])
def test_reduction_dtype_rules(name, np_func, dtype):
    x = pt.make_placeholder("x", (2, 3), dtype)
    expected = np_func(np.ones((2, 3), dtype), axis=0)
    if name in ("amax", "amin") and np.dtype(dtype).kind == "c":
        with pytest.raises(DTypeError, match="complex"):
            getattr(pt, name)(x, axis=0)
        return
    result = getattr(pt, name)(x, axis=0)
    assert result.dtype == expected.dtype
    assert result.shape == expected.shape


@pytest.mark.parametrize(("dtype", "sum_dtype"), [
    (np.int8, np.int16), (np.int32, np.float32), (np.float64, np.float32),
    (np.bool_, np.bool_), (np.float32, np.complex64)])
def test_sum_dtype_argument(dtype, sum_dtype):
    x = pt.make_placeholder("x", (4,), dtype)
    assert pt.sum(x, dtype=sum_dtype).dtype == np.sum(
        np.ones(4, dtype), dtype=sum_dtype).dtype


def test_reduction_structure():
    x = pt.make_placeholder("x", (2, 3, 4), np.int32)
    descr = ReductionDescriptor(tags=frozenset({_Tagged()}))
    y = pt.sum(x, axis=(0, -1), axis_to_reduction_descr={-1: descr})
    assert isinstance(y, pt.IndexLambda)
    assert y.shape == (3,)
    assert y.dtype == np.int64
    assert isinstance(y.expr, Reduce)
    assert y.expr.op == SumReductionOperation()
    assert dict(y.expr.bounds) == {"_r0": (0, 2), "_r1": (0, 4)}
    assert y.expr.inner_expr == TypeCast(
        np.dtype(np.int64),
        prim.Variable("_in0")[prim.Variable("_r0"), prim.Variable("_0"),
                              prim.Variable("_r1")])
    assert dict(y.var_to_reduction_descr) == {"_r0": ReductionDescriptor(),
                                              "_r1": descr}
    assert dict(y.bindings) == {"_in0": x}


def test_reduction_symbolic_bounds():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    y = pt.amax(x, axis=0)
    assert isinstance(y.expr, Reduce)
    assert y.expr.op == MaxReductionOperation()
    (lo, hi), = y.expr.bounds.values()
    assert lo == 0
    assert isinstance(hi, prim.Variable)
    assert y.bindings[hi.name] is n
    z = pt.sum(x, keepdims=True)
    assert z.shape == (1, 1)


def test_no_reduced_axes():
    x = pt.make_placeholder("x", (2, 3), np.int32)
    y = pt.sum(x, axis=())
    assert y.shape == (2, 3)
    assert y.dtype == np.int64
    assert not isinstance(y.expr, Reduce)
    assert dict(y.var_to_reduction_descr) == {}


@pytest.mark.parametrize("func", [pt.sum, pt.prod, pt.amax, pt.amin, pt.any,
                                  pt.all])
def test_eager_scalars(func):
    np_func = {"amax": np.max, "amin": np.min}.get(func.__name__,
                                                   getattr(np, func.__name__))
    for value in (3, 2.5, np.float32(-1.5), True):
        result = func(value)
        assert not isinstance(result, pt.Array)
        np.testing.assert_equal(result, np_func(value))
        assert np.asarray(result).dtype == np.asarray(np_func(value)).dtype


def test_numpy_array_input():
    a = np.arange(6.0).reshape(2, 3)
    y = pt.sum(a, axis=1)
    assert isinstance(y, pt.Array)
    np.testing.assert_allclose(pt.generate_numpy(y)(), a.sum(axis=1))


@pytest.mark.parametrize("axis", [2, -3, (0, 0), (1, -1), (0, 5), (0, 1.0)])
def test_bad_axis(axis):
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(AxisError, match="axis") as info:
        pt.sum(x, axis=axis)
    assert isinstance(info.value, (ValueError, IndexError, PytatoError))


@pytest.mark.parametrize("axis", [1.0, "a", {0}])
def test_axis_of_wrong_type(axis):
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(TypeError, match="'axis'"):
        pt.amin(x, axis=axis)


def test_axis_on_0d():
    x = pt.make_placeholder("x", (), np.float64)
    assert pt.sum(x).shape == ()
    with pytest.raises(AxisError):
        pt.amax(x, axis=0)


@pytest.mark.parametrize(("func", "shape", "axis"), [
    (pt.amax, (3, 0), 1), (pt.amin, (0, 3), None), (pt.amax, (0,), 0),
    (pt.amin, (2, 0, 3), (0, 1))])
def test_empty_extremum_without_initial(func, shape, axis):
    x = pt.make_placeholder("x", shape, np.float64)
    with pytest.raises(EmptyReductionError, match="length 0") as info:
        func(x, axis=axis)
    assert isinstance(info.value, ValueError)
    # with an initial value it is fine, as in numpy
    assert func(x, axis=axis, initial=0.0).dtype == np.float64


def test_extremum_of_empty_output_is_fine():
    x = pt.make_placeholder("x", (0, 3), np.float64)
    assert pt.amax(x, axis=1).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("deferred", [True, False])
def test_empty_symbolic_extremum_raises_at_the_call(queue, dtype, deferred):
    # (issue 41, item 8: with n = 0 at the call the result was -inf, or
    # -2**31 for int32; numpy raises ValueError)
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (m, n), dtype)
    device = None if deferred else queue.device
    rng = np.random.default_rng(7)
    cases = [
        (lambda a: pt.amax(a, axis=1), lambda a: np.max(a, axis=1)),
        (lambda a: pt.amin(a), np.min),
        (lambda a: pt.amax(a[:, 1:], axis=(0, 1)),
         lambda a: np.max(a[:, 1:], axis=(0, 1))),
    ]
    for build, ref in cases:
        prog = pt.generate_loopy(build(x), cl_device=device)
        for shape in [(3, 4), (3, 0), (0, 4), (0, 0), (3, 1), (3, 4)]:
            a = (rng.integers(-50, 50, shape) if dtype != np.bool_
                 else rng.integers(0, 2, shape)).astype(dtype)
            try:
                expected = ref(a)
            except ValueError:
                with pytest.raises(EmptyReductionError,
                                   match="without an 'initial'") as info:
                    prog(queue, x=a)
                assert isinstance(info.value, ValueError)
                continue
            _, (out,) = prog(queue, x=a)
            np.testing.assert_array_equal(out, expected)
    # with 'initial', an empty axis gives it, as in numpy
    init = dtype(1)
    prog = pt.generate_loopy(pt.amin(x, axis=1, initial=init),
                             cl_device=device)
    a = np.zeros((3, 0), dtype)
    _, (out,) = prog(queue, x=a)
    np.testing.assert_array_equal(out, np.min(a, axis=1, initial=init))


def test_descriptor_errors():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(AxisError, match="not reduced"):
        pt.sum(x, axis=0, axis_to_reduction_descr={1: ReductionDescriptor()})
    with pytest.raises(AxisError):
        pt.sum(x, axis_to_reduction_descr={2: ReductionDescriptor()})
    with pytest.raises(TypeError, match="ReductionDescriptor"):
        pt.sum(x, axis_to_reduction_descr={0: "descr"})


def test_argument_errors():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(TypeError, match="'initial'"):
        pt.sum(x, initial=x)
    with pytest.raises(TypeError, match="'a'"):
        pt.sum("abc")
    with pytest.raises(DTypeError):
        pt.sum(x, dtype=object)


def test_boolean_extrema_are_logical():
    b = pt.make_placeholder("b", (3,), np.bool_)
    assert pt.amax(b).expr.op == AnyReductionOperation()
    assert pt.amin(b).expr.op == AllReductionOperation()
    assert pt.amax(b).dtype == np.bool_


def test_positional_initial():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    a = np.arange(6.0).reshape(2, 3)
    y = pt.sum(x, 0, 5.0)
    np.testing.assert_allclose(pt.generate_numpy(y)(x=a), a.sum(0) + 5)
    with pytest.raises(TypeError):
        pt.sum(x, 0, 5.0, None, False)
