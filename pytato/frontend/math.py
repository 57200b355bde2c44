"""Element-wise mathematical functions with numpy's dtype rules.

Each function applies to arrays, :class:`numpy.ndarray`\\ s (wrapped as
data) and scalars; on scalars only it computes eagerly and returns a numpy
scalar, like the numpy function of the same name. Integer and boolean
operands of functions with an inexact result are converted the way numpy
converts them (``sin(int32) -> float64``, ``sin(float32) -> float32``).

In scalar expressions, functions are called through variables named
``pytato.c99.<name>``; only the names :func:`abs`, :func:`sqrt`, :func:`exp`,
:func:`log`, :func:`log10`, :func:`sin`, :func:`cos`, :func:`tan`,
:func:`arcsin`, :func:`arccos`, :func:`arctan`, :func:`arctan2`,
:func:`sinh`, :func:`cosh`, :func:`tanh`, :func:`floor`, :func:`ceil`,
``isnan``, :func:`real`, :func:`imag` and :func:`conj` are used. The other
functions here are written in terms of these and of arithmetic.

.. autofunction:: abs
.. autofunction:: sqrt
.. autofunction:: exp
.. autofunction:: log
.. autofunction:: log10
.. autofunction:: sin
.. autofunction:: cos
.. autofunction:: tan
.. autofunction:: arcsin
.. autofunction:: arccos
.. autofunction:: arctan
.. autofunction:: arctan2
.. autofunction:: sinh
.. autofunction:: cosh
.. autofunction:: tanh
.. autofunction:: floor
.. autofunction:: ceil
.. autofunction:: real
.. autofunction:: imag
.. autofunction:: conj
.. autofunction:: isnan
.. autofunction:: isinf
.. autofunction:: isfinite
.. autofunction:: sign
.. autofunction:: square
.. autofunction:: reciprocal
.. autofunction:: astype
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.array.base import Array, ArrayOrScalar, Operand
from pytato.array.constructors import check_dtype, make_data_wrapper
from pytato.array.lambdas import IndexLambda
from pytato.diagnostic import DTypeError, InvalidArgumentTypeError
from pytato.frontend.creation import full_like, zeros_like
from pytato.frontend.elementwise import elementwise, index_expr_for
from pytato.scalar_expr import Scalar, ScalarExpression, TypeCast, scalar_literal


def c99_call(name: str, *args: Expression) -> prim.Call:
    """The scalar expression calling the function ``pytato.c99.<name>``."""
    return prim.Call(prim.Variable(f"pytato.c99.{name}"), args)


def _as_array_or_scalar(x: Operand) -> ArrayOrScalar:
    if isinstance(x, np.ndarray):
        return make_data_wrapper(x)
    return x


def _dtype_of(x: Operand) -> np.dtype[np.generic]:
    if isinstance(x, Array):
        return x.dtype
    return np.result_type(x)


# {{{ functions of one argument with a direct scalar function

def _unary(name: str, doc: str) -> Callable[[Operand], ArrayOrScalar]:
    ufunc = getattr(np, name)

    def fn(x: Operand) -> ArrayOrScalar:
        return elementwise(ufunc, [x], lambda a: c99_call(name, a),
                           argnames=["x"], what=name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Element-wise :func:`numpy.{name}`: {doc}.\n\n"
                  ":arg x: an array or a scalar.\n")
    return fn


sqrt = _unary("sqrt", "the square root")
exp = _unary("exp", "the exponential")
log = _unary("log", "the natural logarithm")
log10 = _unary("log10", "the base-10 logarithm")
sin = _unary("sin", "the sine")
cos = _unary("cos", "the cosine")
tan = _unary("tan", "the tangent")
arcsin = _unary("arcsin", "the inverse sine")
arccos = _unary("arccos", "the inverse cosine")
arctan = _unary("arctan", "the inverse tangent")
sinh = _unary("sinh", "the hyperbolic sine")
cosh = _unary("cosh", "the hyperbolic cosine")
tanh = _unary("tanh", "the hyperbolic tangent")


def _rounding(name: str, doc: str) -> Callable[[Operand], ArrayOrScalar]:
    ufunc = getattr(np, name)

    def fn(x: Operand) -> ArrayOrScalar:
        x = _as_array_or_scalar(x)
        if isinstance(x, Array) and x.dtype.kind in "iub":
            # numpy keeps the dtype of integers and rounds bools to int8
            result_dtype = np.asarray(ufunc(np.empty((0,), x.dtype))).dtype
            if result_dtype == x.dtype:
                return x
        return elementwise(ufunc, [x], lambda a: c99_call(name, a),
                           argnames=["x"], what=name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Element-wise :func:`numpy.{name}`: {doc}. Integer "
                  "arrays are returned unchanged, as numpy keeps their "
                  "dtype.\n\n:arg x: an array or a scalar.\n")
    return fn


floor = _rounding("floor", "rounding towards minus infinity")
ceil = _rounding("ceil", "rounding towards plus infinity")


def arctan2(y: Operand, x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.arctan2`: the angle of the point
    ``(x, y)``, with numpy's broadcasting and dtype rules.

    :arg y: the y-coordinates (an array or a scalar).
    :arg x: the x-coordinates (an array or a scalar).
    """
    return elementwise(np.arctan2, [y, x],
                       lambda a, b: c99_call("arctan2", a, b),
                       argnames=["y", "x"], what="arctan2")

# }}}


# {{{ absolute value and complex parts

def abs(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.abs`. The absolute value of a complex
    number is real (``abs(complex64) -> float32``); booleans and unsigned
    integers are returned unchanged.

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    if isinstance(x, Array) and x.dtype.kind in "bu":
        return x
    return elementwise(np.abs, [x], lambda a: c99_call("abs", a),
                       argnames=["x"], op_dtype="none", what="abs")


def real(x: Operand) -> ArrayOrScalar:
    """The real part, like :func:`numpy.real`: arrays of real dtype are
    returned unchanged; ``real(complex128) -> float64``.

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    if _dtype_of(x).kind != "c":
        return x if isinstance(x, Array) else np.real(x)
    return elementwise(np.real, [x], lambda a: c99_call("real", a),
                       argnames=["x"], op_dtype="none", what="real")


def imag(x: Operand) -> ArrayOrScalar:
    """The imaginary part, like :func:`numpy.imag`: zeros of the same dtype
    for arrays of real dtype; ``imag(complex128) -> float64``.

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    dtype = _dtype_of(x)
    if dtype.kind != "c":
        if not isinstance(x, Array):
            return np.imag(x)
        return zeros_like(x)
    return elementwise(np.imag, [x], lambda a: c99_call("imag", a),
                       argnames=["x"], op_dtype="none", what="imag")


def conj(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.conjugate`. For real dtypes this is the
    identity (booleans become ``int8``, as in numpy).

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    dtype = _dtype_of(x)
    if dtype.kind in "iuf" and isinstance(x, Array):
        return x
    if dtype.kind == "c":
        def make(a: ArithmeticExpression) -> ScalarExpression:
            return c99_call("conj", a)
    else:
        def make(a: ArithmeticExpression) -> ScalarExpression:
            return a
    return elementwise(np.conjugate, [x], make, argnames=["x"], what="conj")


conjugate = conj

# }}}


# {{{ classification

def _inf_check(e: ArithmeticExpression, dtype: np.dtype[np.generic]
               ) -> ScalarExpression:
    return prim.Comparison(c99_call("abs", e), "==",
                           scalar_literal(np.inf, dtype))


def _classify(name: str, x: Operand,
              real_part: Callable[[ArithmeticExpression, np.dtype[np.generic]],
                                  ScalarExpression],
              combine: Callable[[ScalarExpression, ScalarExpression],
                                ScalarExpression],
              int_value: bool) -> ArrayOrScalar:
    x = _as_array_or_scalar(x)
    ufunc = getattr(np, name)
    dtype = _dtype_of(x)
    if isinstance(x, Array) and dtype.kind in "iub":
        return full_like(x, int_value, dtype=np.bool_)
    if dtype.kind == "c":
        real_dtype = np.empty((0,), dtype).real.dtype

        def make(a: ArithmeticExpression) -> ScalarExpression:
            return combine(real_part(c99_call("real", a), real_dtype),
                           real_part(c99_call("imag", a), real_dtype))
    else:
        def make(a: ArithmeticExpression) -> ScalarExpression:
            return real_part(a, dtype)
    return elementwise(ufunc, [x], make, argnames=["x"], op_dtype="none",
                       what=name)


def isnan(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.isnan` (a boolean array; a complex number
    is NaN if either part is).

    :arg x: an array or a scalar.
    """
    return _classify("isnan", x, lambda e, dt: c99_call("isnan", e),
                     lambda a, b: prim.LogicalOr((a, b)), False)


def isinf(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.isinf` (a boolean array; a complex number
    is infinite if either part is).

    :arg x: an array or a scalar.
    """
    return _classify("isinf", x, _inf_check,
                     lambda a, b: prim.LogicalOr((a, b)), False)


def isfinite(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.isfinite` (a boolean array; a complex
    number is finite if both parts are).

    :arg x: an array or a scalar.
    """
    def finite(e: ArithmeticExpression, dtype: np.dtype[np.generic]
               ) -> ScalarExpression:
        return prim.LogicalNot(prim.LogicalOr((c99_call("isnan", e),
                                               _inf_check(e, dtype))))

    return _classify("isfinite", x, finite,
                     lambda a, b: prim.LogicalAnd((a, b)), True)

# }}}


# {{{ arithmetic shorthands

def sign(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.sign`: -1, 0 or 1 for real numbers (NaN for
    NaN), ``x/abs(x)`` for nonzero complex numbers.

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    dtype = _dtype_of(x)

    def make(a: ArithmeticExpression) -> ScalarExpression:
        zero, one = scalar_literal(0, dtype), scalar_literal(1, dtype)
        if dtype.kind == "c":
            # numpy's z/abs(z), with its values at zeros and infinities
            return c99_call("sign", a)
        rest = zero
        if dtype.kind == "f":
            rest = prim.If(prim.Comparison(a, "==", zero), zero, a)
        if dtype.kind == "u":
            return prim.If(prim.Comparison(a, ">", zero), one, zero)
        return prim.If(prim.Comparison(a, ">", zero), one,
                       prim.If(prim.Comparison(a, "<", zero), -one, rest))

    return elementwise(np.sign, [x], make, argnames=["x"], what="sign")


def square(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.square` (``x*x``; booleans become
    ``int8``, as in numpy).

    :arg x: an array or a scalar.
    """
    return elementwise(np.square, [x], lambda a: prim.Product((a, a)),
                       argnames=["x"], what="square")


def reciprocal(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.reciprocal` (``1/x``) of a floating point
    or complex operand. Integer reciprocals (which numpy truncates) are not
    supported: convert to a floating dtype first.

    :arg x: an array or a scalar.
    """
    x = _as_array_or_scalar(x)
    dtype = _dtype_of(x)
    if isinstance(x, Array) and dtype.kind not in "fc":
        raise DTypeError(f"reciprocal: 'x' must have a floating point or "
                         f"complex dtype, got {dtype}")
    if dtype.kind == "c":
        # numpy's algorithm, whose special values differ from 1/x's
        # (reciprocal(0j) is nan+nanj)
        def make(a: ArithmeticExpression) -> ScalarExpression:
            return c99_call("reciprocal", a)
    else:
        def make(a: ArithmeticExpression) -> ScalarExpression:
            return prim.Quotient(scalar_literal(1, dtype), a)
    return elementwise(np.reciprocal, [x], make,
                       argnames=["x"], what="reciprocal")

# }}}


def astype(a: Operand, dtype: npt.DTypeLike) -> ArrayOrScalar:
    """*a* converted element-wise to *dtype* (like
    :meth:`numpy.ndarray.astype` with unsafe casting). Arrays that already
    have *dtype* are returned unchanged.

    :arg a: an array or a scalar.
    :arg dtype: anything :class:`numpy.dtype` accepts.
    """
    dtype = check_dtype(dtype, "dtype")
    a = _as_array_or_scalar(a)
    if not isinstance(a, Array):
        if not isinstance(a, (builtins.bool, int, float, complex, np.generic)):
            raise InvalidArgumentTypeError(
                f"astype: 'a' must be an array or a scalar, got "
                f"{type(a).__name__}")
        return cast("Scalar", np.asarray(a).astype(dtype)[()])
    if a.dtype == dtype:
        return a
    return IndexLambda(a.shape, dtype,
                       TypeCast(dtype, index_expr_for(a, "_in0", a.ndim)),
                       {"_in0": a})


__all__ = [
    "abs", "arccos", "arcsin", "arctan", "arctan2", "astype", "ceil", "conj",
    "conjugate", "cos", "cosh", "exp", "floor", "imag", "isfinite", "isinf",
    "isnan", "log", "log10", "real", "reciprocal", "sign", "sin", "sinh",
    "sqrt", "square", "tan", "tanh",
]
