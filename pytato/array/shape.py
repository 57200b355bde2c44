"""Shapes: normalization, symbolic components, broadcasting.

A shape component is an :class:`int` or a 0-d integer
:class:`~pytato.array.Array` that is an affine expression in
:class:`~pytato.array.SizeParam`\\ s.

.. autofunction:: normalize_axis
.. autofunction:: normalize_shape
.. autofunction:: shape_component_to_expr
.. autofunction:: shape_product
.. autofunction:: broadcast_shapes
.. autofunction:: are_shape_components_equal
.. autofunction:: shape_is_int_only
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression

# is_one, normalize_axis(es) and shape_product are defined in
# pytato.array.base (the node classes need them) and re-exported here
from pytato.array.base import (  # noqa: F401 (re-exported)
    Array,
    ShapeLike,
    is_one,
    normalize_axes,
    normalize_axis,
    shape_product,
)
from pytato.array.inputs import SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.diagnostic import (
    CannotBroadcastError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NonAffineShapeError,
)
from pytato.scalar_expr import (
    distribute_arithmetic,
    evaluate,
    is_integral_scalar,
    substitute,
)


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression

    from pytato.array.base import ShapeComponent, ShapeType


def shape_component_to_expr(c: ShapeComponent) -> ArithmeticExpression:
    """A :mod:`pymbolic` expression of *c* in size parameter names."""
    if is_integral_scalar(c):
        return int(c)
    if isinstance(c, SizeParam):
        return prim.Variable(c.name)
    if isinstance(c, IndexLambda) and c.shape == ():
        # (an affine expression of the sizes of its bindings)
        return cast("ArithmeticExpression", substitute(c.expr, {
            name: shape_component_to_expr(b) for name, b in c.bindings.items()}))
    raise NonAffineShapeError(
        f"shape component {c!r} is not an affine expression in size parameters")


def _check_affine(expr: object, what: str) -> None:
    if is_integral_scalar(expr) or isinstance(expr, prim.Variable):
        return
    if isinstance(expr, prim.Sum):
        for ch in expr.children:
            _check_affine(ch, what)
        return
    if isinstance(expr, prim.Product):
        nonconst = [ch for ch in expr.children if not is_integral_scalar(ch)]
        if len(nonconst) > 1:
            raise NonAffineShapeError(f"{what}: {expr} is not affine in size "
                                      "parameters")
        for ch in nonconst:
            _check_affine(ch, what)
        return
    if isinstance(expr, (prim.FloorDiv, prim.Remainder)) and is_integral_scalar(
            expr.denominator):
        _check_affine(expr.numerator, what)
        return
    raise NonAffineShapeError(f"{what}: {expr} is not an affine expression in "
                              "size parameters")


def normalize_shape(shape: ShapeLike, argname: str = "shape") -> ShapeType:
    """Check and normalize a user-supplied shape (an int, or a sequence of
    ints and affine integer 0-d arrays)."""

    if is_integral_scalar(shape) or isinstance(shape, Array):
        shape = (shape,)
    if not isinstance(shape, Sequence) and not isinstance(shape, np.ndarray):
        raise InvalidArgumentTypeError(f"'{argname}' must be a sequence, got {shape!r}")
    result: list[ShapeComponent] = []
    for i, c in enumerate(shape):
        if is_integral_scalar(c):
            if c < 0:
                raise InvalidArgumentError(f"'{argname}'[{i}] is negative: {c}")
            result.append(int(c))
        elif isinstance(c, Array):
            if c.shape != () or c.dtype.kind not in "iu":
                raise NonAffineShapeError(
                    f"'{argname}'[{i}] must be a 0-d integer array, got "
                    f"shape={c.shape}, dtype={c.dtype}")
            _check_affine(shape_component_to_expr(c), f"'{argname}'[{i}]")
            result.append(c)
        else:
            raise InvalidArgumentTypeError(f"'{argname}'[{i}] must be an int or a size "
                                           f"expression, got {c!r}")
    return tuple(result)


def are_shape_components_equal(a: ShapeComponent, b: ShapeComponent) -> bool:
    """Whether two shape components are (provably) equal."""
    if is_integral_scalar(a) and is_integral_scalar(b):
        return int(a) == int(b)
    if is_integral_scalar(a) or is_integral_scalar(b):
        return False
    if a == b:
        return True
    ea = distribute_arithmetic(shape_component_to_expr(a))
    eb = distribute_arithmetic(shape_component_to_expr(b))
    diff = distribute_arithmetic(ea - eb)
    return bool(diff == 0)


def are_shapes_equal(a: ShapeType, b: ShapeType) -> bool:
    """Whether two shapes are (provably) equal."""
    return len(a) == len(b) and all(
        are_shape_components_equal(x, y) for x, y in zip(a, b, strict=True))


def broadcast_shapes(*shapes: ShapeType, argnames: Sequence[str] | None = None
                     ) -> ShapeType:
    """The numpy broadcast of *shapes*; raises
    :class:`~pytato.diagnostic.ShapeMismatchError` naming the shapes."""
    if shapes:
        # fast path: equal shapes of Python ints broadcast to themselves
        first = shapes[0]
        if type(first) is tuple and all(type(c) is int for c in first) and all(
                s is first or (type(s) is tuple and s == first)
                for s in shapes[1:]):
            return first
    ndim = max((len(s) for s in shapes), default=0)
    result: list[ShapeComponent] = []
    for i in range(ndim):
        comp: ShapeComponent = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            c = s[j]
            if is_one(c):
                continue
            if is_one(comp):
                comp = c
            elif not are_shape_components_equal(comp, c):
                names = (f" of {', '.join(argnames)}" if argnames else "")
                raise CannotBroadcastError(
                    f"operands could not be broadcast together: shapes{names} "
                    f"are {', '.join(str(_fmt_shape(s)) for s in shapes)}")
        result.append(comp)
    return tuple(result)


def _fmt_shape(shape: ShapeType) -> str:
    return "(" + ", ".join(str(shape_component_to_expr(c)) for c in shape) + (
        ",)" if len(shape) == 1 else ")")


def format_shape(shape: ShapeType) -> str:
    """A readable rendering of *shape* (symbolic components by expression)."""
    try:
        return _fmt_shape(shape)
    except NonAffineShapeError:
        return repr(shape)


def get_shape_after_broadcasting(arrays: Sequence[Array | Any]) -> ShapeType:
    """Broadcast shape of arrays and scalars."""
    return broadcast_shapes(*(a.shape for a in arrays if isinstance(a, Array)))


def concrete_shape(shape: ShapeType, context: dict[str, int]) -> tuple[int, ...]:
    """Evaluate a shape with the size parameter values in *context*."""
    return tuple(int(evaluate(shape_component_to_expr(c), context))
                 for c in shape)


def shape_is_int_only(shape: tuple[object, ...], /) -> tuple[int, ...]:
    """*shape* as a tuple of :class:`int`.

    :raises TypeError: if a component is symbolic (a size expression),
        naming it.
    """
    result = []
    for i, c in enumerate(shape):
        if not is_integral_scalar(c):
            raise InvalidArgumentTypeError(
                f"shape {shape!r}: component {i} ({c!r}) is not "
                "an integer")
        result.append(int(c))
    return tuple(result)
