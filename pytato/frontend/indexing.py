"""Indexing (``array[idx]``) with numpy's semantics.

:func:`index` accepts what numpy accepts, except boolean masks:

* integers (negative ones count from the end), checked against constant
  axis lengths (:class:`~pytato.diagnostic.IndexOutOfBoundsError`);
* slices, normalized to :class:`~pytato.array.NormalizedSlice` with numpy's
  clamping. On axes of symbolic length (and for symbolic bounds, i.e. 0-d
  integer arrays), only steps of 1 and -1 are supported, and bounds are
  assumed to lie within the axis (they cannot be clamped), except integer
  bounds known to lie outside it (beyond a constant length, or outside
  the range of ``int64``), clipped as numpy does. Steps longer than a
  concrete axis are clipped to its length (the same elements);
* ``None`` (new unit axes) and one ``Ellipsis``;
* integer arrays: :class:`~pytato.array.Array`\\ s of integer dtype, numpy
  integer arrays and (nested) lists of ints. Index arrays broadcast against
  each other; their broadcast shape replaces the indexed axes if those are
  adjacent (:class:`~pytato.array.AdvancedIndexInContiguousAxes`), else it
  comes first (:class:`~pytato.array.AdvancedIndexInNoncontiguousAxes`).
  As in numpy, integers count as array indices for that placement when an
  index array is present. Constant index data is checked against constant
  axis lengths and negative entries are wrapped. Entries of lazy index
  arrays in ``[-length, 0)`` count from the end as in numpy; entries still
  out of range are clamped to the nearest end of the axis (as in JAX), so
  that no code reads outside an array (see :ref:`numerical-semantics`; the
  NumPy target does the same). An axis of length 0 cannot be indexed by a
  lazy index array of known non-zero size
  (:class:`~pytato.diagnostic.IndexOutOfBoundsError`).

Only ints and slices give a :class:`~pytato.array.BasicIndex`; an index
made of full slices only returns the array itself. ``None`` axes are added
by :func:`~pytato.frontend.shape_ops.expand_dims`.

.. autofunction:: index
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pytato.array.base import Array
from pytato.array.constructors import make_data_wrapper
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    BasicIndex,
    NormalizedSlice,
)
from pytato.array.shape import (
    are_shape_components_equal,
    broadcast_shapes,
    format_shape,
    shape_component_to_expr,
)
from pytato.diagnostic import (
    IndexDTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    InvalidIndexError,
    ShapeMismatchError,
    UnsupportedFeatureError,
)
from pytato.frontend._coerce import as_array
from pytato.frontend.shape_ops import expand_dims
from pytato.scalar_expr import is_integral_scalar


if TYPE_CHECKING:
    from pytato.array.base import ShapeComponent
    from pytato.array.remapping import IndexExpr


_BOOL_MASK_MSG = ("boolean mask indices are not supported: the shape of the "
                  "result would depend on the mask's values; use "
                  "pytato.where instead")


class _Ellipsis:
    pass


class _NewAxis:
    pass


# {{{ classifying index entries

def _index_data(x: object, k: int) -> int | Array | np.ndarray:
    """Classify a non-scalar, non-slice index entry: returns an int, an
    :class:`Array` or a :class:`numpy.ndarray` of integers."""
    if isinstance(x, Array):
        if x.dtype.kind == "b":
            raise UnsupportedFeatureError(f"index {k}: {_BOOL_MASK_MSG}")
        if x.dtype.kind not in "iu":
            name = getattr(x, "name", None)
            what = (f"the {type(x).__name__.lower()} '{name}'"
                    if isinstance(name, str) else f"a lazy {type(x).__name__}")
            raise IndexDTypeError(
                f"index {k}: arrays used as indices must be of integer dtype, "
                f"got {what} of dtype {x.dtype}")
        return x
    try:
        data = np.asarray(x)
    except (TypeError, ValueError):
        data = np.empty(0, dtype=object)
    if data.dtype.kind == "O":
        raise InvalidIndexError(f"index {k}: a nested sequence used as an index must "
                                "hold only integers (use pytato.stack to combine "
                                f"lazy index arrays), got {x!r}")
    if data.dtype.kind == "b":
        raise UnsupportedFeatureError(f"index {k}: {_BOOL_MASK_MSG}")
    if data.size == 0 and data.dtype.kind == "f":
        data = data.astype(np.intp)
    if data.dtype.kind not in "iu":
        raise IndexDTypeError(
            f"index {k}: arrays used as indices must be of integer dtype, got "
            f"a {type(x).__name__} of dtype {data.dtype}: {x!r}")
    if data.ndim == 0:
        return int(data)
    return data


def _classify(x: object, k: int) -> Any:
    if x is None:
        return _NewAxis
    if x is Ellipsis:
        return _Ellipsis
    if isinstance(x, (bool, np.bool_)):
        raise UnsupportedFeatureError(f"index {k}: {_BOOL_MASK_MSG}")
    if is_integral_scalar(x):
        return int(x)
    if isinstance(x, slice):
        return x
    if isinstance(x, (Array, np.ndarray, list, tuple)):
        return _index_data(x, k)
    raise InvalidIndexError(f"index {k}: only integers, slices, Ellipsis, None and "
                            f"integer arrays are valid indices, got {x!r}")

# }}}


# {{{ normalizing entries against their axis

def _len_str(n: ShapeComponent) -> str:
    return str(shape_component_to_expr(n))


def _normalize_int(i: int, n: ShapeComponent, axis: int) -> int | Array:
    if is_integral_scalar(n):
        if not -n <= i < n:
            raise IndexOutOfBoundsError(
                f"index {i} is out of bounds for axis {axis} with size {n}")
        return i % int(n)
    if i >= 0:
        return i
    return n + i


# no axis is longer than this (lengths are int64): a slice bound beyond it
# lies outside any axis, also of symbolic length
_MAX_LENGTH = 2**63 - 1


def _slice_bound(b: object, n: ShapeComponent, axis: int, what: str,
                 step: int = 1) -> Any:
    """A bound of a slice of step *step* on an axis of length *n*, negative
    values counted from the end. Integer bounds outside the axis are
    clipped to its ends as numpy does (``n`` or ``-1`` past the end, ``0``
    or ``-1`` before the start), where *n* is known or the bound lies
    outside any axis (so no constant too large for the generated code
    stays); other bounds of symbolic axes are assumed to lie within them."""
    if isinstance(b, Array):
        if b.shape != () or b.dtype.kind not in "iu":
            raise InvalidIndexError(f"axis {axis}: slice {what} must be an integer or "
                                    f"a 0-d integer array, got shape {b.shape}, "
                                    f"dtype {b.dtype}")
        return b
    if not is_integral_scalar(b):
        raise InvalidIndexError(f"axis {axis}: slice {what} must be an integer or "
                                f"None, got {b!r}")
    b = int(b)
    past_end = n if step > 0 else n - 1
    before_start = 0 if step > 0 else -1
    if is_integral_scalar(n):
        length = int(n)
        if b >= length:
            return past_end
        if b < -length:
            return before_start
    elif b >= _MAX_LENGTH:
        return past_end
    elif b < -_MAX_LENGTH:
        return before_start
    return b if b >= 0 else n + b


def _beyond(b: object, n: ShapeComponent) -> int:
    """1 for an integer bound *b* at or past the end of every axis of
    length *n* (known, else any length), -1 for one before its start, 0
    otherwise (also for array bounds)."""
    if not is_integral_scalar(b) or isinstance(b, (bool, np.bool_)):
        return 0
    limit = int(n) if is_integral_scalar(n) else _MAX_LENGTH
    if int(b) >= limit:
        return 1
    if int(b) < -limit:
        return -1
    return 0


def _normalize_slice(s: slice, n: ShapeComponent, axis: int) -> NormalizedSlice:
    step = 1 if s.step is None else s.step
    if not is_integral_scalar(step):
        raise InvalidIndexError(f"axis {axis}: slice step must be an integer or None, "
                                f"got {step!r}")
    step = int(step)
    if step == 0:
        raise InvalidArgumentError(f"axis {axis}: slice step cannot be zero")
    if is_integral_scalar(n) and not isinstance(s.start, Array) and not (
            isinstance(s.stop, Array)):
        for b, what in [(s.start, "start"), (s.stop, "stop")]:
            if b is not None:
                _slice_bound(b, int(n), axis, what)
        start: ShapeComponent
        stop: ShapeComponent
        start, stop, step = slice(s.start, s.stop, step).indices(int(n))
        # a step longer than the axis takes (at most) its first element, as
        # a step of the axis' length does: clipped, so that no constant too
        # large for the generated code stays
        step = max(-max(int(n), 1), min(step, max(int(n), 1)))
        if not len(range(start, stop, step)):
            return NormalizedSlice(0, 0, step)
        return NormalizedSlice(start, stop, step)
    if step not in (1, -1):
        raise UnsupportedFeatureError(
            f"axis {axis} (length {_len_str(n)}): slices with steps other than "
            f"1 and -1 are not supported with symbolic lengths or bounds, got "
            f"step {step}")
    # an integer bound beyond the axis on the side that leaves nothing
    # between the bounds (a start past the end, a stop before the start):
    # empty, whatever the other bound
    if _beyond(s.start, n) == step or _beyond(s.stop, n) == -step:
        return NormalizedSlice(0, 0, step)
    if step == 1:
        start = 0 if s.start is None else _slice_bound(s.start, n, axis, "start")
        stop = n if s.stop is None else _slice_bound(s.stop, n, axis, "stop")
    else:
        start = (n - 1 if s.start is None
                 else _slice_bound(s.start, n, axis, "start", step))
        stop = -1 if s.stop is None else _slice_bound(s.stop, n, axis, "stop",
                                                      step)
    return NormalizedSlice(start, stop, step)


def _constant_index_array(data: np.ndarray[Any, Any], n: ShapeComponent,
                          axis: int) -> Array:

    if data.size:
        if is_integral_scalar(n):
            bad = data[(data >= n) | (data < -n)]
            if bad.size:
                raise IndexOutOfBoundsError(
                    f"index {bad.flat[0]} is out of bounds for axis {axis} "
                    f"with size {n}")
            if (data < 0).any():
                data = np.where(data < 0, data + n, data)
        elif (data < 0).any():
            raise UnsupportedFeatureError(
                f"axis {axis}: negative entries in index arrays are not "
                f"supported on axes of symbolic length {_len_str(n)}")
    return make_data_wrapper(data)


def _normalize(entry: int | slice | np.ndarray | Array, n: ShapeComponent,
               axis: int) -> IndexExpr:
    if isinstance(entry, int):
        return _normalize_int(entry, n, axis)
    if isinstance(entry, slice):
        return _normalize_slice(entry, n, axis)
    if isinstance(entry, np.ndarray):
        return _constant_index_array(entry, n, axis)
    return entry

# }}}


def _is_full_slice(e: object, n: ShapeComponent) -> bool:
    return (isinstance(e, NormalizedSlice) and e.step == 1
            and is_integral_scalar(e.start) and e.start == 0
            and are_shape_components_equal(e.stop, n))


def _known_size(shape: Iterable[ShapeComponent]) -> int | None:
    size = 1
    for n in shape:
        if not is_integral_scalar(n):
            return None
        size *= int(n)
    return size


def _advanced_index(array: Array, norm: list[Any]) -> Array:
    new_axes = [k for k, e in enumerate(norm) if e is _NewAxis]
    if new_axes:
        # a new axis acts as a slice of a unit axis, also for deciding
        # whether the array indices are adjacent
        array = expand_dims(array, new_axes)
        norm = [NormalizedSlice(0, 1, 1) if e is _NewAxis else e for e in norm]
    adv = [k for k, e in enumerate(norm) if isinstance(e, Array)]
    try:
        broadcast_shapes(*(norm[k].shape for k in adv),
                         argnames=[f"index {k}" for k in adv])
    except ShapeMismatchError:
        shapes = ", ".join(f"index {k}: {format_shape(norm[k].shape)}"
                           for k in adv)
        raise ShapeMismatchError(f"indexing arrays could not be broadcast "
                                 f"together ({shapes})") from None
    adv_size = _known_size(broadcast_shapes(*(norm[k].shape for k in adv)))
    if adv_size:
        for k in adv:
            if is_integral_scalar(array.shape[k]) and array.shape[k] == 0:
                raise IndexOutOfBoundsError(
                    f"index {k}: axis {k} has size 0, no index array entry "
                    "can be in bounds")
    nonslice = [k for k, e in enumerate(norm)
                if not isinstance(e, NormalizedSlice)]
    if nonslice == list(range(nonslice[0], nonslice[-1] + 1)):
        return AdvancedIndexInContiguousAxes(array, tuple(norm))
    return AdvancedIndexInNoncontiguousAxes(array, tuple(norm))


def index(array: object, idx: object) -> Array:
    """``array[idx]`` with numpy's semantics (see the module documentation).

    :raises IndexOutOfBoundsError: for a constant index outside its axis.
    :raises IndexError: for too many indices, several ellipses, or entries
        that are not valid indices.
    :raises NotImplementedError: for boolean masks, and for steps other than
        +-1 on symbolic axes.
    """
    array = as_array(array, "array")
    if not isinstance(idx, tuple):
        idx = (idx,)
    entries = [_classify(x, k) for k, x in enumerate(idx)]
    n_ellipsis = sum(1 for e in entries if e is _Ellipsis)
    if n_ellipsis > 1:
        raise InvalidIndexError("an index can only have a single ellipsis ('...')")
    n_consumed = sum(1 for e in entries if e is not _Ellipsis and e is not _NewAxis)
    if n_consumed > array.ndim:
        raise InvalidIndexError(f"too many indices for array: array is "
                                f"{array.ndim}-dimensional, but {n_consumed} were "
                                "indexed")
    fill = [slice(None)] * (array.ndim - n_consumed)
    if n_ellipsis:
        k = next(i for i, e in enumerate(entries) if e is _Ellipsis)
        entries = entries[:k] + fill + entries[k + 1:]
    else:
        entries = entries + fill

    norm: list[Any] = []
    axis = 0
    for e in entries:
        if e is _NewAxis:
            norm.append(e)
        else:
            norm.append(_normalize(e, array.shape[axis], axis))
            axis += 1

    if any(isinstance(e, Array) for e in norm):
        return _advanced_index(array, norm)

    consumed = [e for e in norm if e is not _NewAxis]
    if all(_is_full_slice(e, n) for e, n in zip(consumed, array.shape,
                                                strict=True)):
        result = array
    else:
        result = BasicIndex(array, tuple(consumed))
    new_axes = []
    out_axis = 0
    for e in norm:
        if e is _NewAxis:
            new_axes.append(out_axis)
            out_axis += 1
        elif isinstance(e, NormalizedSlice):
            out_axis += 1
    return expand_dims(result, new_axes) if new_axes else result
