"""Shape manipulation: reshaping, broadcasting, permuting, joining, rolling.

Each function validates its arguments (errors name the argument and the
shapes involved) and builds one node of :mod:`pytato.array.remapping`, or
an :class:`~pytato.array.IndexLambda` for :func:`broadcast_to`. Operations
that would not change anything return their input.

Sizes may be symbolic (see :mod:`pytato.array.shape`): :func:`reshape`
compares and divides sizes as polynomials in the size parameters, so e.g.
an ``(n, 6)`` array reshapes to ``(-1, 3)`` giving ``(2*n, 3)``.

.. autofunction:: reshape
.. autofunction:: ravel
.. autofunction:: broadcast_to
.. autofunction:: expand_dims
.. autofunction:: squeeze
.. autofunction:: transpose
.. autofunction:: moveaxis
.. autofunction:: swapaxes
.. autofunction:: stack
.. autofunction:: concatenate
.. autofunction:: roll
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pytato.array.base import Array, AxesLike, ShapeLike
from pytato.array.lambdas import IndexLambda
from pytato.array.remapping import AxisPermutation, Concatenate, Reshape, Roll, Stack
from pytato.array.shape import (
    are_shape_components_equal,
    are_shapes_equal,
    format_shape,
    is_one,
    normalize_axes,
    normalize_axis,
    normalize_shape,
    shape_component_to_expr,
)
from pytato.diagnostic import (
    AxisError,
    CannotBroadcastError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    ReshapeError,
    ShapeMismatchError,
)
from pytato.frontend._coerce import as_array
from pytato.frontend._size_algebra import (
    NotPolynomialError,
    poly_divide,
    poly_to_component,
    shape_poly,
    size_params_of,
)
from pytato.frontend.elementwise import index_expr_for
from pytato.scalar_expr import is_integral_scalar
from pytato.tags import ExpandedDimsReshape


if TYPE_CHECKING:
    from pytato.array.base import ShapeComponent, ShapeType


# {{{ reshape

def _cancel_common(a: Sequence[ShapeComponent], b: Sequence[ShapeComponent]
                   ) -> tuple[list[ShapeComponent], list[ShapeComponent]]:
    """Drop pairs of equal symbolic components from *a* and *b*."""
    rest_a = list(a)
    rest_b: list[ShapeComponent] = []
    for c in b:
        if isinstance(c, Array):
            for i, d in enumerate(rest_a):
                if isinstance(d, Array) and are_shape_components_equal(c, d):
                    del rest_a[i]
                    break
            else:
                rest_b.append(c)
        else:
            rest_b.append(c)
    return rest_a, rest_b


def _reshape_error(old: ShapeType, new: Sequence[Any], why: str = "") -> ReshapeError:
    return ReshapeError(f"cannot reshape array of shape {format_shape(old)} into "
                        f"'newshape' {format_shape(tuple(new))}{why}")


def _infer_unknown(old: ShapeType, known: list[ShapeComponent],
                   newshape: Sequence[object]) -> ShapeComponent:
    rest_old, rest_known = _cancel_common(old, known)
    symbolic = any(isinstance(c, Array) for c in (*old, *known))
    why = (": the size of the -1 axis cannot be inferred symbolically; give "
           "it explicitly" if symbolic else "")
    try:
        num, den = shape_poly(rest_old), shape_poly(rest_known)
    except NotPolynomialError:
        raise _reshape_error(old, newshape, why) from None
    quotient = poly_divide(num, den) if den else None
    if quotient is None:
        raise _reshape_error(old, newshape, why)
    return poly_to_component(quotient, size_params_of((*old, *known)),
                             candidates=(*old, *known))


def _check_same_size(old: ShapeType, new: ShapeType) -> None:
    if all(type(c) is int for c in old) and all(type(c) is int for c in new):
        # fast path: concrete sizes
        if math.prod(old) != math.prod(new):
            raise _reshape_error(old, new, "")
        return
    rest_old, rest_new = _cancel_common(old, new)
    try:
        equal = shape_poly(rest_old) == shape_poly(rest_new)
    except NotPolynomialError:
        equal = False
    if not equal:
        symbolic = any(isinstance(c, Array) for c in (*old, *new))
        raise _reshape_error(old, new, ": the sizes are not provably equal"
                             if symbolic else "")


def reshape(array: object, newshape: object, order: str = "C") -> Array:
    """Return *array* with shape *newshape* (like :func:`numpy.reshape`).

    :arg newshape: an int or a sequence of ints and symbolic sizes; one
        entry may be -1, meaning "whatever makes the sizes agree".
    :arg order: ``"C"`` (row-major) or ``"F"`` (column-major) element order.
    :raises ReshapeError: if the sizes differ (or, for symbolic sizes, cannot
        be shown equal or the -1 cannot be inferred).
    """
    array = as_array(array, "array")
    if order not in ("C", "F"):
        raise InvalidArgumentError(f"'order' must be 'C' or 'F', got {order!r}")
    if is_integral_scalar(newshape) or isinstance(newshape, Array):
        newshape = (newshape,)
    if isinstance(newshape, np.ndarray):
        newshape = newshape.tolist() if newshape.ndim else [newshape.item()]
    if not isinstance(newshape, Sequence):
        raise InvalidArgumentTypeError(f"'newshape' must be an int or a sequence, got "
                                       f"{type(newshape).__name__}")
    newshape = tuple(newshape)
    unknown = [i for i, c in enumerate(newshape)
               if is_integral_scalar(c) and int(c) == -1]
    if len(unknown) > 1:
        raise ReshapeError(f"'newshape' {newshape} may contain at most one -1")
    for i, c in enumerate(newshape):
        if is_integral_scalar(c) and int(c) < -1:
            raise ReshapeError(f"'newshape'[{i}] is negative: {c}")
    shape = list(normalize_shape(
        tuple(1 if i in unknown else c for i, c in enumerate(newshape)),
        "newshape"))
    if unknown:
        [iunk] = unknown
        shape[iunk] = _infer_unknown(array.shape, shape[:iunk] + shape[iunk + 1:],
                                     newshape)
    else:
        _check_same_size(array.shape, tuple(shape))
    new = tuple(shape)
    if are_shapes_equal(new, array.shape):
        return array
    return Reshape(array, new, order)


def ravel(a: object, order: str = "C") -> Array:
    """*a* flattened to one dimension (like :func:`numpy.ravel`)."""
    return reshape(a, (-1,), order=order)

# }}}


# {{{ broadcasting, adding and removing unit axes

def broadcast_to(array: object, shape: ShapeLike) -> Array:
    """*array* broadcast to *shape* (like :func:`numpy.broadcast_to`).

    :raises ShapeMismatchError: if *array* cannot be broadcast to *shape*.
    """

    array = as_array(array, "array")
    shape = normalize_shape(shape)
    offset = len(shape) - array.ndim
    ok = offset >= 0 and all(
        is_one(n) or are_shape_components_equal(n, shape[i + offset])
        for i, n in enumerate(array.shape))
    if not ok:
        raise CannotBroadcastError(
            f"cannot broadcast 'array' of shape {format_shape(array.shape)} to "
            f"'shape' {format_shape(shape)}")
    if offset == 0 and are_shapes_equal(array.shape, shape):
        return array
    return IndexLambda(shape, array.dtype,
                       index_expr_for(array, "_in0", len(shape), shape),
                       {"_in0": array})


def expand_dims(array: object, axis: int | Sequence[int]) -> Array:
    """Insert unit axes at the positions *axis* (an int or a sequence of
    ints) of the result (like :func:`numpy.expand_dims`). The result is a
    :class:`~pytato.array.Reshape` tagged with
    :class:`~pytato.tags.ExpandedDimsReshape`."""

    array = as_array(array, "array")
    axes = ((axis,) if is_integral_scalar(axis)
            else tuple(cast("Sequence[int]", axis)))
    if not axes:
        return array
    out_ndim = array.ndim + len(axes)
    new_dims = normalize_axes(axes, out_ndim, "axis")
    old = iter(array.shape)
    newshape = tuple(1 if i in new_dims else next(old) for i in range(out_ndim))
    return Reshape(array, newshape, "C",
                   tags=frozenset({ExpandedDimsReshape(new_dims)}))


def squeeze(array: object, axis: AxesLike = None) -> Array:
    """Remove unit axes: those in *axis*, or all of (known) length 1 if
    *axis* is None (like :func:`numpy.squeeze`).

    :raises AxisError: if an axis in *axis* does not have length 1.
    """
    array = as_array(array, "array")
    if axis is None:
        axes = tuple(i for i, n in enumerate(array.shape) if is_one(n))
    else:
        axes = normalize_axes(axis, array.ndim, "axis")
        for ax in axes:
            if not is_one(array.shape[ax]):
                raise AxisError(
                    f"'axis': cannot squeeze axis {ax} of length "
                    f"{shape_component_to_expr(array.shape[ax])} (array shape "
                    f"{format_shape(array.shape)}): only axes of length 1 can "
                    "be removed")
    if not axes:
        return array
    newshape = tuple(n for i, n in enumerate(array.shape) if i not in axes)
    return Reshape(array, newshape, "C")

# }}}


# {{{ axis permutations

def transpose(a: object, axes: Any = None) -> Array:
    """Permute the axes of *a* (like :func:`numpy.transpose`): output axis
    ``i`` is axis ``axes[i]`` of *a*; *axes* defaults to reversing them.

    :raises AxisError: if *axes* is not a permutation of ``range(a.ndim)``.
    """
    a = as_array(a, "a")
    if axes is None:
        perm = tuple(range(a.ndim))[::-1]
    else:
        if is_integral_scalar(axes):
            axes = (axes,)
        axes = tuple(axes)
        if len(axes) != a.ndim:
            raise AxisError(f"'axes' {axes} must be a permutation of "
                            f"range({a.ndim}) for an array of dimension {a.ndim}")
        perm = tuple(normalize_axis(ax, a.ndim, "axes") for ax in axes)
        if len(set(perm)) != len(perm):
            raise AxisError(f"'axes' {axes} repeats an axis")
    if perm == tuple(range(a.ndim)):
        return a
    return AxisPermutation(a, perm)


def _axis_tuple(x: int | Sequence[int], ndim: int, argname: str
                ) -> tuple[int, ...]:
    axes = (x,) if is_integral_scalar(x) else tuple(cast("Sequence[int]", x))
    result = tuple(normalize_axis(ax, ndim, argname) for ax in axes)
    if len(set(result)) != len(result):
        raise AxisError(f"'{argname}' {x!r} repeats an axis")
    return result


def moveaxis(a: object, source: Any, destination: Any) -> Array:
    """Move axes *source* of *a* to positions *destination* (like
    :func:`numpy.moveaxis`)."""
    a = as_array(a, "a")
    src = _axis_tuple(source, a.ndim, "source")
    dst = _axis_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise AxisError(f"'source' {source!r} and 'destination' "
                        f"{destination!r} must have the same number of axes")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return transpose(a, order)


def swapaxes(a: object, axis1: object, axis2: object) -> Array:
    """Exchange axes *axis1* and *axis2* of *a* (like
    :func:`numpy.swapaxes`)."""
    a = as_array(a, "a")
    i = normalize_axis(axis1, a.ndim, "axis1")
    j = normalize_axis(axis2, a.ndim, "axis2")
    perm = list(range(a.ndim))
    perm[i], perm[j] = j, i
    return transpose(a, perm)

# }}}


# {{{ joining

def _as_arrays(arrays: object, what: str) -> tuple[Array, ...]:
    if isinstance(arrays, Array) or not isinstance(arrays, Sequence):
        raise InvalidArgumentTypeError(
            f"{what}: 'arrays' must be a sequence of arrays, got "
            f"{type(arrays).__name__}")
    result = tuple(as_array(x, f"arrays[{i}]") for i, x in enumerate(arrays))
    if not result:
        raise InvalidArgumentError(f"{what}: 'arrays' must contain at least one array")
    return result


def stack(arrays: Sequence[object], axis: int = 0) -> Array:
    """Join *arrays* (all of one shape) along a new axis *axis* (like
    :func:`numpy.stack`). The result dtype is numpy's common dtype.

    :raises ShapeMismatchError: naming the first array whose shape differs
        from that of ``arrays[0]``.
    """
    arys = _as_arrays(arrays, "stack")
    shape0 = arys[0].shape
    for i, a in enumerate(arys[1:], 1):
        if not are_shapes_equal(a.shape, shape0):
            raise ShapeMismatchError(
                f"stack: all arrays must have the same shape, but 'arrays[{i}]' "
                f"has shape {format_shape(a.shape)} and 'arrays[0]' has shape "
                f"{format_shape(shape0)}")
    axis = normalize_axis(axis, len(shape0) + 1, "axis")
    return Stack(arys, axis)


def concatenate(arrays: Sequence[object], axis: int | None = 0) -> Array:
    """Join *arrays* along their existing axis *axis* (like
    :func:`numpy.concatenate`; *axis* None joins the flattened arrays). The
    result dtype is numpy's common dtype.

    :raises ShapeMismatchError: naming the first array whose dimension or
        shape (off *axis*) differs from that of ``arrays[0]``.
    """
    arys = _as_arrays(arrays, "concatenate")
    if axis is None:
        arys = tuple(ravel(a) for a in arys)
        axis = 0
    shape0 = arys[0].shape
    for i, a in enumerate(arys):
        if a.ndim == 0:
            raise ShapeMismatchError(
                f"concatenate: 'arrays[{i}]' is 0-dimensional; 0-d arrays "
                "cannot be concatenated")
    axis = normalize_axis(axis, len(shape0), "axis")
    for i, a in enumerate(arys[1:], 1):
        if a.ndim != len(shape0):
            raise ShapeMismatchError(
                f"concatenate: 'arrays[{i}]' has {a.ndim} dimensions (shape "
                f"{format_shape(a.shape)}) but 'arrays[0]' has {len(shape0)} "
                f"(shape {format_shape(shape0)})")
        for j, (n, n0) in enumerate(zip(a.shape, shape0, strict=True)):
            if j != axis and not are_shape_components_equal(n, n0):
                raise ShapeMismatchError(
                    f"concatenate along axis {axis}: axis {j} of 'arrays[{i}]' "
                    f"(shape {format_shape(a.shape)}) differs from that of "
                    f"'arrays[0]' (shape {format_shape(shape0)})")
    if len(arys) == 1:
        return arys[0]
    return Concatenate(arys, axis)

# }}}


# {{{ roll

def _int_tuple(x: object, argname: str) -> tuple[int, ...]:
    if is_integral_scalar(x):
        return (int(x),)
    if isinstance(x, Sequence) and all(is_integral_scalar(v) for v in x):
        return tuple(int(v) for v in x)
    raise InvalidArgumentTypeError(f"'{argname}' must be an integer or a sequence of "
                                   f"integers, got {x!r}")


def roll(a: object, shift: object, axis: AxesLike = None) -> Array:
    """Shift the elements of *a* cyclically by *shift* along *axis* (like
    :func:`numpy.roll`). With *axis* None, the flattened array is rolled and
    the original shape restored. *shift* and *axis* may be sequences (of
    one length, or one of them an int), rolling along each axis in turn.
    """
    a = as_array(a, "a")
    if axis is None:
        if not is_integral_scalar(shift):
            raise InvalidArgumentTypeError(
                f"'shift' must be an integer when 'axis' is None, "
                f"got {shift!r}")
        size = a.size
        if a.ndim == 0 or shift == 0 or (
                is_integral_scalar(size) and (size == 0 or shift % size == 0)):
            return a
        if a.ndim == 1:
            return roll(a, shift, 0)
        return reshape(roll(ravel(a), shift, 0), a.shape)
    if not (is_integral_scalar(shift) and is_integral_scalar(axis)):
        shifts = _int_tuple(shift, "shift")
        axes = _int_tuple(axis, "axis")
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        if len(axes) == 1:
            axes = axes * len(shifts)
        if len(shifts) != len(axes):
            raise InvalidArgumentError(
                f"'shift' {shift!r} and 'axis' {axis!r} must have "
                "the same length")
        for s, ax in zip(shifts, axes, strict=True):
            a = roll(a, s, ax)
        return a
    ax = normalize_axis(axis, a.ndim, "axis")
    shift = int(shift)
    n = a.shape[ax]
    if is_integral_scalar(n):
        if n == 0:
            return a
        shift %= int(n)
    if shift == 0:
        return a
    return Roll(a, shift, ax)

# }}}
