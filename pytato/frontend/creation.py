"""Array creation: arrays whose elements are given by their indices alone.

Every function returns an :class:`~pytato.array.IndexLambda` with a
constant expression (in the output indices ``_0, _1, ...``) and no bindings;
shapes may contain symbolic sizes (:class:`~pytato.array.SizeParam`\\ s
and affine expressions of them).

.. autofunction:: zeros
.. autofunction:: ones
.. autofunction:: full
.. autofunction:: zeros_like
.. autofunction:: ones_like
.. autofunction:: full_like
.. autofunction:: eye
.. autofunction:: arange
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression

from pytato.array.base import Array, ShapeComponent, ShapeLike, ShapeType
from pytato.array.constructors import check_dtype
from pytato.array.lambdas import IndexLambda
from pytato.array.shape import normalize_shape
from pytato.diagnostic import (
    DTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedFeatureError,
)
from pytato.frontend._utils import cast_scalar, is_scalar
from pytato.scalar_expr import ScalarExpression, TypeCast, is_integral_scalar


def _check_order(order: object, func: str) -> None:
    if order == "C":
        return
    if order in ("F", "A", "K"):
        raise UnsupportedFeatureError(f"{func}: only order='C' is supported, got "
                                      f"order={order!r}")
    raise InvalidArgumentError(
        f"{func}: 'order' must be one of 'C', 'F', 'A', 'K', got "
        f"{order!r}")


def _constant(shape: ShapeType, value: ScalarExpression,
              dtype: np.dtype[np.generic]) -> IndexLambda:
    return IndexLambda(shape, dtype, value, {})


# {{{ constant arrays

def full(shape: ShapeLike, fill_value: object, dtype: npt.DTypeLike | None = None,
         order: str = "C") -> Array:
    """An array of shape *shape* filled with *fill_value*, like
    :func:`numpy.full`.

    :arg shape: an int or a sequence of ints and symbolic sizes.
    :arg fill_value: a scalar, or a 0-d array (whose value is then read when
        the program runs).
    :arg dtype: the result dtype; by default the dtype numpy gives
        *fill_value* (``int64`` for Python ints, ``float64`` for floats, a
        numpy scalar's own dtype). *fill_value* is converted to it with
        numpy's unsafe casting.
    :arg order: only ``"C"`` is supported.
    """
    _check_order(order, "full")
    shape = normalize_shape(shape)
    if isinstance(fill_value, np.ndarray) and fill_value.ndim == 0:
        fill_value = fill_value[()]
    if isinstance(fill_value, Array):
        if fill_value.ndim != 0:
            raise InvalidArgumentError(
                "full: 'fill_value' must be a scalar or a 0-d "
                f"array, got an array of shape {fill_value.shape}")
        dtype = fill_value.dtype if dtype is None else check_dtype(dtype)
        expr: ScalarExpression = prim.Variable("_in0")
        if dtype != fill_value.dtype:
            expr = TypeCast(dtype, expr)
        return IndexLambda(shape, dtype, expr, {"_in0": fill_value})
    if not is_scalar(fill_value):
        raise InvalidArgumentTypeError(
            "full: 'fill_value' must be a scalar or a 0-d array, "
            f"got {type(fill_value).__name__}")
    if dtype is None:
        dtype = check_dtype(np.asarray(fill_value).dtype, "fill_value.dtype")
    else:
        dtype = check_dtype(dtype)
    return _constant(shape, cast_scalar(fill_value, dtype), dtype)


def zeros(shape: ShapeLike, dtype: npt.DTypeLike = float, order: str = "C") -> Array:
    """An array of zeros, like :func:`numpy.zeros`.

    :arg shape: an int or a sequence of ints and symbolic sizes.
    :arg dtype: the result dtype (``float64`` by default).
    :arg order: only ``"C"`` is supported.
    """
    _check_order(order, "zeros")
    return full(shape, 0, dtype)


def ones(shape: ShapeLike, dtype: npt.DTypeLike = float, order: str = "C") -> Array:
    """An array of ones, like :func:`numpy.ones`.

    :arg shape: an int or a sequence of ints and symbolic sizes.
    :arg dtype: the result dtype (``float64`` by default).
    :arg order: only ``"C"`` is supported.
    """
    _check_order(order, "ones")
    return full(shape, 1, dtype)


def _like(a: object, dtype: Any, shape: Any) -> tuple[Any, np.dtype[np.generic]]:
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):
        a = np.asarray(a)
    return (a.shape if shape is None else shape,
            np.dtype(a.dtype) if dtype is None else dtype)


def full_like(a: object, fill_value: object, dtype: npt.DTypeLike | None = None,
              shape: ShapeLike | None = None) -> Array:
    """An array like *a* (same shape and, by default, dtype) filled with
    *fill_value*, like :func:`numpy.full_like`.

    :arg a: an array, a :class:`numpy.ndarray` or anything with ``shape``
        and ``dtype``.
    :arg dtype: overrides the dtype of *a*.
    :arg shape: overrides the shape of *a*.
    """
    shape, dtype = _like(a, dtype, shape)
    return full(shape, fill_value, dtype)


def zeros_like(a: object, dtype: npt.DTypeLike | None = None,
               shape: ShapeLike | None = None) -> Array:
    """Zeros of the shape and dtype of *a*, like :func:`numpy.zeros_like`.

    :arg dtype: overrides the dtype of *a*.
    :arg shape: overrides the shape of *a*.
    """
    return full_like(a, 0, dtype, shape)


def ones_like(a: object, dtype: npt.DTypeLike | None = None,
              shape: ShapeLike | None = None) -> Array:
    """Ones of the shape and dtype of *a*, like :func:`numpy.ones_like`.

    :arg dtype: overrides the dtype of *a*.
    :arg shape: overrides the shape of *a*.
    """
    return full_like(a, 1, dtype, shape)

# }}}


def eye(N: Any, M: Any = None, k: int = 0,
        dtype: npt.DTypeLike = np.float64, order: str = "C") -> Array:
    """A 2-d array with ones on the *k*-th diagonal and zeros elsewhere, like
    :func:`numpy.eye`.

    :arg N: the number of rows (an int or a symbolic size).
    :arg M: the number of columns (*N* by default).
    :arg k: the diagonal: 0 is the main one, positive values are above it.
    :arg dtype: the result dtype.
    :arg order: only ``"C"`` is supported.
    """
    _check_order(order, "eye")
    if M is None:
        M = N
    shape = normalize_shape((N, M), "(N, M)")
    if not is_integral_scalar(k):
        raise InvalidArgumentTypeError(f"eye: 'k' must be an integer, got {k!r}")
    dtype = check_dtype(dtype)
    row: ArithmeticExpression = prim.Variable("_0")
    if k:
        row = prim.Sum((row, int(k)))
    expr = prim.If(prim.Comparison(prim.Variable("_1"), "==", row),
                   cast_scalar(1, dtype), cast_scalar(0, dtype))
    return _constant(shape, expr, dtype)


# {{{ arange

def _arange_args(args: tuple[object, ...], kwargs: dict[str, object]
                 ) -> tuple[Any, Any, Any]:
    """Return ``(start, stop, step)`` from numpy's calling
    conventions ``arange([start,] stop[, step])``."""
    if len(args) > 3:
        raise InvalidArgumentTypeError(
            f"arange: expected at most 3 positional arguments, got "
            f"{len(args)}")
    unknown = set(kwargs) - {"start", "stop", "step"}
    if unknown:
        raise InvalidArgumentTypeError(
            f"arange: unexpected keyword arguments {sorted(unknown)}")
    given = dict(zip(["start", "stop", "step"], args, strict=False))
    for name, value in kwargs.items():
        if name in given:
            raise InvalidArgumentTypeError(f"arange: got multiple values for '{name}'")
        given[name] = value
    if given.get("stop") is None:
        if not args:
            raise InvalidArgumentTypeError("arange: missing required argument 'stop'")
        # arange(stop) and arange(stop, step=...), as in numpy
        given["stop"] = given.pop("start")
    step = given.get("step")
    return given.get("start", 0), given["stop"], 1 if step is None else step


def arange(*args: object, dtype: npt.DTypeLike | None = None,
           **kwargs: object) -> Array:
    """Evenly spaced values in ``[start, stop)``, like :func:`numpy.arange`:
    ``arange(stop)``, ``arange(start, stop)``, ``arange(start, stop, step)``.

    The length is ``ceil((stop - start)/step)`` (or 0); the elements are
    ``start + i*delta`` computed in *dtype*, with ``delta`` the difference
    of the first two elements, as in numpy. The default *dtype* is numpy's
    (``int64`` for integers, ``float64`` if any argument is a float).

    *stop* may also be a symbolic integer size when *start* is an integer
    and *step* is 1; the length is then ``stop - start``, which must not be
    negative when the program runs.

    Complex dtypes and arguments are supported as in numpy: with a complex
    argument the length is the smaller of the ceilings of the real and
    imaginary parts of ``(stop - start)/step``. A boolean *dtype* allows at
    most 2 elements (``start`` and ``start + step``), as in numpy.
    """
    start, stop, step = _arange_args(args, kwargs)
    if isinstance(stop, Array) or isinstance(start, Array) or isinstance(
            step, Array):
        return _symbolic_arange(start, stop, step, dtype)

    for name, value in [("start", start), ("stop", stop), ("step", step)]:
        if not is_scalar(value):
            raise InvalidArgumentTypeError(f"arange: '{name}' must be a scalar, got "
                                           f"{type(value).__name__}")
    if step == 0:
        raise InvalidArgumentError("arange: 'step' must not be zero")

    if dtype is None:
        dtype = np.result_type(*(np.asarray(v).dtype
                                 for v in (start, stop, step)))
    dtype = check_dtype(dtype)
    complex_args = [name for name, v in [("start", start), ("stop", stop),
                                         ("step", step)]
                    if np.iscomplexobj(v)]
    if complex_args and dtype.kind != "c":
        raise DTypeError(f"arange: complex '{complex_args[0]}' cannot give "
                         f"elements of dtype {dtype}")

    if complex_args:
        quotient = complex((stop - start) / step)
        length = max(0, min(math.ceil(quotient.real),
                            math.ceil(quotient.imag)))
    else:
        length = max(0, math.ceil((stop - start) / step))
    first = cast_scalar(start, dtype)
    with np.errstate(over="ignore"):
        second = cast_scalar(start + step, dtype)

    expr: object
    if dtype.kind == "b":
        if length > 2:
            raise DTypeError(
                f"arange: a boolean result has at most 2 elements (start and "
                f"start + step), but {length} were asked for")
        expr = prim.If(prim.Comparison(prim.Variable("_0"), "==", 0),
                       first, second)
        return _constant((length,), expr, dtype)

    delta = second - first
    expr = TypeCast(dtype, prim.Variable("_0"))
    if delta != 1:
        expr = prim.Product((delta, expr))
    if first != 0:
        expr = prim.Sum((first, expr))
    return _constant((length,), expr, dtype)


def _symbolic_arange(start: object, stop: object, step: object,
                     dtype: npt.DTypeLike | None) -> Array:
    if not (is_integral_scalar(start) and is_integral_scalar(step)
            and step == 1 and isinstance(stop, Array)):
        raise UnsupportedFeatureError(
            "arange: a symbolic argument is only supported as 'stop' with an "
            f"integer 'start' and step=1, got start={start!r}, stop={stop!r}, "
            f"step={step!r}")
    dtype = np.dtype(np.int64) if dtype is None else check_dtype(dtype)
    if dtype.kind == "b":
        raise DTypeError("arange: a boolean result with a symbolic length is "
                         "not supported (it may have at most 2 elements)")
    length: ShapeComponent = stop - start if start else stop
    (length,) = normalize_shape((length,), "stop - start")
    expr: ArithmeticExpression = TypeCast(dtype, prim.Variable("_0"))
    if start:
        expr = prim.Sum((cast_scalar(start, dtype), expr))
    return _constant((length,), expr, dtype)

# }}}


__all__ = ["arange", "eye", "full", "full_like", "ones", "ones_like", "zeros",
           "zeros_like"]
