"""``where`` and ``pad`` (:mod:`pytato.frontend.misc`) against numpy."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from frontend_cases import MISC_CASES, run_numpy

import pytato as pt
from pytato.diagnostic import ShapeMismatchError


@pytest.mark.parametrize("case", MISC_CASES, ids=str)
def test_misc_values(case):
    run_numpy(case)


# {{{ where

@pytest.mark.parametrize(("x_dtype", "y"), [
    (np.float32, 2.0), (np.float32, np.float64(2.0)), (np.int8, 300),
    (np.int32, 1.5), (np.bool_, 1), (np.uint8, -1), (np.complex64, 1.0),
    (np.int64, np.float32(1))])
def test_where_dtype_rules(x_dtype, y):
    c = pt.make_placeholder("c", (3,), np.bool_)
    x = pt.make_placeholder("x", (3,), x_dtype)
    try:
        expected = np.where(np.ones(3, bool), np.ones(3, x_dtype), y)
    except (OverflowError, TypeError) as e:
        with pytest.raises(type(e)):
            pt.where(c, x, y)
        return
    assert pt.where(c, x, y).dtype == expected.dtype
    prog = pt.generate_numpy(pt.where(c, x, y))
    with np.errstate(all="ignore"):
        value = prog(c=np.zeros(3, bool), x=np.ones(3, x_dtype))
        np.testing.assert_equal(value, np.where(np.zeros(3, bool),
                                                np.ones(3, x_dtype), y))


def test_where_eager():
    assert pt.where(True, 1, 2.5) == 1.0
    assert type(pt.where(True, 1, 2.5)) is np.float64
    assert pt.where(0, np.int32(1), np.int32(2)) == 2


def test_where_structure():
    c = pt.make_placeholder("c", (3,), np.bool_)
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.where(c, x, 0.0)
    assert isinstance(y.expr, prim.If)
    assert dict(y.bindings) == {"_in0": c, "_in1": x}


def test_where_errors():
    c = pt.make_placeholder("c", (3,), np.bool_)
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(NotImplementedError, match="depends on the data"):
        pt.where(c)
    with pytest.raises(ValueError, match="both or neither"):
        pt.where(c, x)
    with pytest.raises(ValueError, match="both or neither"):
        pt.where(c, y=x)
    with pytest.raises(ShapeMismatchError):
        pt.where(c, x, pt.make_placeholder("y", (4,), np.float64))
    with pytest.raises(TypeError):
        pt.where(c, x, "a")

# }}}


# {{{ pad

def test_pad_no_widths_returns_input():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    assert pt.pad(x, 0) is x
    assert pt.pad(x, ((0, 0), (0, 0)), constant_values=5) is x


def test_pad_structure():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    y = pt.pad(x, ((1, 0), (0, 2)))
    assert y.shape == (3, 5)
    assert isinstance(y.expr, prim.If)
    assert dict(y.bindings) == {"_in0": x}
    n = pt.make_size_param("n")
    z = pt.pad(pt.make_placeholder("z", (n,), np.int32), (1, 2))
    (length,) = z.shape
    from pytato.array.shape import shape_component_to_expr
    from pytato.scalar_expr import evaluate
    assert evaluate(shape_component_to_expr(length), {"n": 4}) == 7


@pytest.mark.parametrize(("pad_width", "exc", "match"), [
    (-1, ValueError, "negative"),
    (((1, 2), (3, -1)), ValueError, "negative"),
    (1.5, TypeError, "integral"),
    ((1, 2, 3), ValueError, "does not fit"),
    ((((1, 2),),), ValueError, "does not fit"),
    ("a", TypeError, "integral"),
])
def test_pad_width_errors(pad_width, exc, match):
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(exc, match=match):
        pt.pad(x, pad_width)


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap", "mean", "empty"])
def test_pad_unsupported_modes(mode):
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(NotImplementedError, match=repr(mode)):
        pt.pad(x, 1, mode=mode)


def test_pad_argument_errors():
    x = pt.make_placeholder("x", (2, 3), np.float64)
    with pytest.raises(ValueError, match="unknown mode"):
        pt.pad(x, 1, mode="nonsense")
    with pytest.raises(NotImplementedError):
        pt.pad(x, 1, mode=lambda *args: None)
    with pytest.raises(ValueError, match="stat_length"):
        pt.pad(x, 1, stat_length=2)
    with pytest.raises(ValueError, match="constant_values"):
        pt.pad(x, 1, constant_values=(1, 2, 3))
    with pytest.raises(TypeError, match="constant_values"):
        pt.pad(x, 1, constant_values="a")
    with pytest.raises(TypeError, match="lazy"):
        pt.pad(x, pt.make_size_param("n"))
    with pytest.raises(TypeError, match="'array'"):
        pt.pad([1, 2], 1)
    with pytest.raises(OverflowError):
        pt.pad(pt.make_placeholder("b", (2,), np.int8), 1, constant_values=300)


def test_pad_scalar_eager():
    np.testing.assert_equal(pt.pad(2.0, 1), np.pad(2.0, 1))

# }}}
