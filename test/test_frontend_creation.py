"""Array creation (:mod:`pytato.frontend.creation`) against numpy."""

from __future__ import annotations

import warnings

import numpy as np
import pymbolic.primitives as prim
import pytest
from frontend_cases import CREATION_CASES, run_numpy

import pytato as pt
from pytato.diagnostic import DTypeError, NonAffineShapeError


@pytest.mark.parametrize("case", CREATION_CASES, ids=str)
def test_creation_values(case):
    run_numpy(case)


@pytest.mark.parametrize("make", [
    lambda n: pt.zeros((n, 3)), lambda n: pt.ones(n, np.int32),
    lambda n: pt.full((2, n), 1.5), lambda n: pt.eye(n),
    lambda n: pt.arange(n)])
def test_constant_lambdas_without_bindings(make):
    n = pt.make_size_param("n")
    y = make(n)
    assert isinstance(y, pt.IndexLambda)
    assert dict(y.bindings) == {}
    assert any(c is n for c in y.shape)
    assert pt.transform.InputGatherer()(y) == frozenset({n})


def test_constant_expressions():
    z = pt.zeros((2, 3), np.int32)
    assert z.expr == np.int32(0)
    assert type(z.expr) is np.int32
    e = pt.eye(3, k=-1)
    assert isinstance(e.expr, prim.If)
    assert pt.zeros((2, 3)) == pt.zeros((2, 3))
    assert pt.zeros((2, 3)) != pt.ones((2, 3))


@pytest.mark.parametrize(("fill", "dtype"), [
    (1, None), (1.0, None), (True, None), (1j, None), (np.int8(3), None),
    (np.float32(2), None), (2**40, None), (2.7, np.int16), (np.int64(-1), np.uint8),
    (1 + 1j, np.float32), (np.nan, np.float32)])
def test_full_dtype_and_value_like_numpy(fill, dtype):
    y = pt.full((2,), fill, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np.full((2,), fill, dtype)
    assert y.dtype == expected.dtype
    assert type(y.expr) is expected.dtype.type
    np.testing.assert_equal(y.expr, expected[0])


def test_full_overflow_like_numpy():
    with pytest.raises(OverflowError):
        np.full(2, 300, dtype=np.int8)
    with pytest.raises(OverflowError):
        pt.full(2, 300, dtype=np.int8)


@pytest.mark.parametrize("args", [
    (5,), (2, 7), (1, 10, 3), (10, 1, -2), (0, 1, 0.1), (0.1, 0.35, 0.05),
    (5, 2), (0, 1e6, 0.5), (np.uint64(3),), (np.int8(1), 5), (-1.5, 2.25),
    (3, -3, -1)])
def test_arange_length_and_dtype(args):
    y = pt.arange(*args)
    expected = np.arange(*args)
    assert y.shape == expected.shape
    assert y.dtype == expected.dtype


def test_like_functions_take_shape_and_dtype():
    x = pt.make_placeholder("x", (2, 3), np.float32)
    assert pt.zeros_like(x).shape == (2, 3)
    assert pt.zeros_like(x).dtype == np.float32
    assert pt.ones_like(x, dtype=int).dtype == np.int64
    assert pt.full_like(x, 2, shape=(4,)).shape == (4,)
    assert pt.full_like(3.0, 1).dtype == np.float64
    assert pt.full_like(3.0, 1).shape == ()


def test_order_errors():
    with pytest.raises(NotImplementedError, match="order='C'"):
        pt.zeros(3, order="F")
    with pytest.raises(ValueError, match="'order'"):
        pt.ones(3, order="Q")
    with pytest.raises(NotImplementedError):
        pt.eye(3, order="F")


def test_shape_errors():
    with pytest.raises(ValueError, match="negative"):
        pt.zeros((2, -1))
    with pytest.raises(TypeError):
        pt.ones((2.5,))
    with pytest.raises(NonAffineShapeError):
        n = pt.make_size_param("n")
        pt.zeros((n * n,))


def test_full_errors():
    with pytest.raises(TypeError, match="fill_value"):
        pt.full(2, [1, 2])
    with pytest.raises(ValueError, match="fill_value"):
        pt.full(2, pt.make_placeholder("v", (2,), np.float64))
    with pytest.raises(DTypeError, match="'dtype'"):
        pt.full(2, 1, dtype="U3")


def test_eye_errors():
    with pytest.raises(TypeError, match="'k'"):
        pt.eye(3, k=1.5)
    with pytest.raises(ValueError):
        pt.eye(-1)


@pytest.mark.parametrize(("args", "kwargs", "exc", "match"), [
    ((0, 5, 0), {}, ValueError, "'step'"),
    # (complex aranges are supported: test_upstream_behaviours.py)
    ((0, 1j), {"dtype": np.float64}, DTypeError, "complex 'stop'"),
    ((3,), {"dtype": bool}, DTypeError, "bool"),
    ((1, 2, 3, 4), {}, TypeError, "at most 3"),
    ((), {}, TypeError, "'stop'"),
    ((3,), {"start": 4}, TypeError, "multiple values"),
    ((), {"start": 4}, TypeError, "'stop'"),
    ((3,), {"num": 4}, TypeError, "unexpected"),
    (("a",), {}, TypeError, "'stop'"),
])
def test_arange_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pt.arange(*args, **kwargs)


def test_symbolic_arange_restrictions():
    n = pt.make_size_param("n")
    assert pt.arange(n).shape == (n,)
    assert pt.arange(0, n, 1).shape == (n,)
    for args in [(0, n, 2), (n, 5), (0.5, n)]:
        with pytest.raises(NotImplementedError, match="symbolic"):
            pt.arange(*args)
