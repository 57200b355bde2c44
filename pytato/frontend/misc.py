"""Selection and padding: :func:`where` and :func:`pad`.

.. autofunction:: where
.. autofunction:: pad
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression

from pytato.array.base import Array, ArrayOrScalar, ShapeComponent
from pytato.array.constructors import make_data_wrapper
from pytato.array.lambdas import IndexLambda
from pytato.diagnostic import (
    DTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NonIntegralArgumentError,
    ScalarOverflowError,
    UnsupportedFeatureError,
)
from pytato.frontend._utils import BindingCollector, cast_scalar, is_scalar
from pytato.frontend.elementwise import elementwise
from pytato.scalar_expr import (
    ScalarExpression,
    TypeCast,
    is_integral_scalar,
    scalar_literal,
)


# {{{ where

def where(condition: Any, x: Any = None, y: Any = None) -> ArrayOrScalar:
    """Elements of *x* where *condition* holds and of *y* elsewhere, like
    :func:`numpy.where` with three arguments: the three operands broadcast
    together and the result has numpy's common dtype of *x* and *y* (Python
    scalars are weakly typed: ``where(c, float32_array, 2.0)`` is
    ``float32``). On scalars only, the result is computed eagerly.

    :arg condition: an array or a scalar; nonzero values count as true.
    :arg x: the values where *condition* holds.
    :arg y: the values where it does not.

    The one-argument form ``where(condition)`` (the indices of nonzero
    elements) has a shape that depends on data and raises
    :class:`NotImplementedError`.
    """
    if x is None and y is None:
        raise UnsupportedFeatureError(
            "where(condition) with one argument (the indices of nonzero "
            "elements) is not supported: its shape depends on the data. Pass "
            "'x' and 'y' to select elements")
    if x is None or y is None:
        raise InvalidArgumentError(
            "where: either both or neither of 'x' and 'y' must be "
            "given")

    def proxy(v: object) -> Any:
        if isinstance(v, (Array, np.ndarray)):
            return np.empty((0,), v.dtype)
        return v

    if not any(isinstance(v, (Array, np.ndarray)) for v in (condition, x, y)):
        return np.where(condition, x, y)[()]
    try:
        out_dtype = np.where(proxy(condition), proxy(x), proxy(y)).dtype
    except OverflowError as e:
        raise ScalarOverflowError(
            f"where: a Python integer operand of 'x' ({x!r}) or 'y' ({y!r}) "
            f"does not fit any integer dtype numpy can hold: {e}") from None
    except (TypeError, ValueError) as e:
        raise DTypeError(f"where: cannot select between 'x' and 'y': {e}"
                         ) from None

    operands = []
    for v in (x, y):
        if is_scalar(v):
            v = cast_scalar(v, out_dtype, wrap=True)
        operands.append(v)

    def operand_dtype(v: object) -> np.dtype[np.generic]:
        return v.dtype if isinstance(v, (Array, np.ndarray)) else out_dtype

    cond_dtype = (condition.dtype if isinstance(condition, (Array, np.ndarray))
                  else np.result_type(condition))
    x_dtype, y_dtype = (operand_dtype(v) for v in operands)

    def make(c: ScalarExpression, a: ScalarExpression, b: ScalarExpression
             ) -> ScalarExpression:
        if cond_dtype.kind != "b":
            c = prim.Comparison(c, "!=", scalar_literal(0, cond_dtype))
        if x_dtype != out_dtype:
            a = TypeCast(out_dtype, a)
        if y_dtype != out_dtype:
            b = TypeCast(out_dtype, b)
        return prim.If(c, a, b)

    return elementwise(None, [condition, *operands], make,
                       argnames=["condition", "x", "y"], op_dtype="none",
                       out_dtype=out_dtype, what="where")

# }}}


# {{{ pad

_NUMPY_PAD_MODES = frozenset({
    "edge", "empty", "linear_ramp", "maximum", "mean", "median", "minimum",
    "reflect", "symmetric", "wrap"})


def _as_pairs(value: object, ndim: int, argname: str, integral: bool
              ) -> list[tuple[Any, Any]]:
    """Broadcast *value* to ``ndim`` (before, after) pairs, as numpy does for
    ``pad_width`` and ``constant_values``."""
    if isinstance(value, Array):
        raise InvalidArgumentTypeError(
            f"pad: '{argname}' must be given by (Python or numpy) "
            "scalars, not by a lazy array")
    arr = np.asarray(value)
    if integral and arr.dtype.kind not in "iu":
        raise NonIntegralArgumentError(
            f"pad: '{argname}' must be of integral type, got "
            f"{value!r}")
    if not integral and arr.dtype.kind not in "biufc":
        raise InvalidArgumentTypeError(
            f"pad: '{argname}' must be numbers, got {value!r}")
    try:
        pairs = np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise InvalidArgumentError(
            f"pad: '{argname}' of shape {arr.shape} does not fit "
            f"an array of {ndim} dimensions (give a scalar, a "
            "(before, after) pair, or one pair per axis)") from None
    if integral and (pairs < 0).any():
        raise InvalidArgumentError(
            f"pad: '{argname}' must not be negative, got {value!r}")
    return [(pairs[i, 0].item(), pairs[i, 1].item()) for i in range(ndim)]


def _extent_expr(binder: BindingCollector, before: int, n: ShapeComponent
                 ) -> ArithmeticExpression:
    """``before + n`` as an expression (the end of the original data)."""
    n_expr = binder.shape_expr(n)
    if isinstance(n_expr, int):
        return before + n_expr
    return prim.Sum((before, n_expr)) if before else n_expr


def pad(array: Any, pad_width: Any, mode: Any = "constant",
        **kwargs: Any) -> Any:
    """*array* padded with constant values, like :func:`numpy.pad` with
    ``mode="constant"``.

    :arg array: an array (a :class:`numpy.ndarray` is wrapped as data).
    :arg pad_width: numbers of elements added before and after each axis:
        an int (all axes, both sides), a ``(before, after)`` pair (all axes)
        or one pair per axis, as in numpy.
    :arg mode: only ``"constant"`` is supported; numpy's other modes raise
        :class:`NotImplementedError`.
    :arg constant_values: the padding values (default 0), in the forms of
        *pad_width*; converted to the dtype of *array*. Where padded regions
        of several axes meet, the value for the last of these axes wins, as
        in numpy.
    """
    if mode != "constant":
        if callable(mode) or mode in _NUMPY_PAD_MODES:
            raise UnsupportedFeatureError(f"pad: mode {mode!r} is not supported, "
                                          "only mode='constant' is")
        raise InvalidArgumentError(f"pad: unknown mode {mode!r}")
    unknown = set(kwargs) - {"constant_values"}
    if unknown:
        raise InvalidArgumentError(f"pad: unsupported keyword arguments for mode "
                                   f"'constant': {sorted(unknown)}")
    constant_values = kwargs.get("constant_values", 0)

    if isinstance(array, np.ndarray):
        array = make_data_wrapper(array)
    elif not isinstance(array, Array):
        if is_scalar(array):
            return np.pad(array, pad_width, mode, **kwargs)
        raise InvalidArgumentTypeError(f"pad: 'array' must be an array, got "
                                       f"{type(array).__name__}")

    ndim = array.ndim
    widths = [(int(b), int(a)) for b, a in
              _as_pairs(pad_width, ndim, "pad_width", integral=True)]
    values = [(cast_scalar(b, array.dtype), cast_scalar(a, array.dtype))
              for b, a in _as_pairs(constant_values, ndim, "constant_values",
                                    integral=False)]
    if all(b == 0 and a == 0 for b, a in widths):
        return array

    empty = any(is_integral_scalar(n) and n == 0 for n in array.shape)
    binder = BindingCollector()
    name = "" if empty else binder.bind(array)
    idx = []
    # per axis: the conditions of the 'before' and 'after' regions
    below: list[prim.Comparison | None] = []
    above: list[prim.Comparison | None] = []
    out_shape: list[ShapeComponent] = []
    for i, ((before, after), n) in enumerate(zip(widths, array.shape,
                                                 strict=True)):
        var = prim.Variable(f"_{i}")
        idx.append(prim.Sum((var, -before)) if before else var)
        below.append(prim.Comparison(var, "<", before) if before else None)
        above.append(prim.Comparison(var, ">=", _extent_expr(binder, before, n))
                     if after else None)
        out_shape.append(n + (before + after) if before + after else n)

    if empty:
        # no element of the array is ever read: the result is all padding
        read: ScalarExpression = values[0][0]
    else:
        read = (prim.Subscript(prim.Variable(name), tuple(idx)) if ndim
                else prim.Variable(name))
    if len({v for pair in values for v in pair}) == 1:
        outside = [c for c in below + above if c is not None]
        cond = outside[0] if len(outside) == 1 else prim.LogicalOr(tuple(outside))
        expr: ScalarExpression = prim.If(cond, values[0][0], read)
    else:
        expr = read
        for i in range(ndim):
            # later axes wrap earlier ones: where regions meet, the last wins
            cond_above, cond_below = above[i], below[i]
            if cond_above is not None:
                expr = prim.If(cond_above, values[i][1], expr)
            if cond_below is not None:
                expr = prim.If(cond_below, values[i][0], expr)
    return IndexLambda(tuple(out_shape), array.dtype, expr, binder.bindings)

# }}}


__all__ = ["pad", "where"]
