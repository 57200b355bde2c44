"""Reductions along axes: :func:`sum`, :func:`prod`, :func:`amax`,
:func:`amin`, :func:`any`, :func:`all`.

A reduction builds one :class:`~pytato.array.IndexLambda` whose expression
is a :class:`~pytato.scalar_expr.Reduce` over reduction indices named
``_r0, _r1, ...`` (one per reduced axis, in axis order), each described by
a :class:`~pytato.array.ReductionDescriptor` in
:attr:`~pytato.array.IndexLambda.var_to_reduction_descr`. Symbolic axis
lengths appear in the reduction bounds as 0-d bindings.

Result dtypes are numpy's: sums and products of small integers and
booleans are computed in the platform integer (``int64``), :func:`amax` and
:func:`amin` keep the dtype, :func:`any` and :func:`all` give booleans.

Positional arguments follow pytato's convention ``(a, axis, initial,
axis_to_reduction_descr)``; ``keepdims`` (and ``dtype`` for :func:`sum` and
:func:`prod`) are keyword-only. (In numpy the third positional argument of
:func:`numpy.sum` is ``dtype``.) For :func:`amax` and :func:`amin`, an
*initial* value is applied by an element-wise maximum (minimum) on top of
the reduction.

.. autofunction:: sum
.. autofunction:: prod
.. autofunction:: amax
.. autofunction:: amin
.. autofunction:: any
.. autofunction:: all
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pymbolic.primitives as prim

from pytato.array.base import (
    Array,
    ArrayOrScalar,
    AxesLike,
    ReductionDescriptor,
    ShapeComponent,
)
from pytato.array.constructors import check_dtype, make_data_wrapper
from pytato.array.lambdas import IndexLambda
from pytato.array.shape import format_shape, normalize_axes, normalize_axis
from pytato.diagnostic import (
    AxisError,
    DTypeError,
    EmptyReductionError,
    InvalidArgumentTypeError,
)
from pytato.frontend import elementwise
from pytato.frontend._utils import BindingCollector, cast_scalar, is_scalar
from pytato.scalar_expr import (
    AllReductionOperation,
    AnyReductionOperation,
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    Reduce,
    ReductionOperation,
    Scalar,
    ScalarExpression,
    SumReductionOperation,
    TypeCast,
    is_integral_scalar,
    scalar_literal,
)
from pytato.tags import ReductionWithoutIdentity


class _NoValue:
    """The default of *initial*: no initial value."""

    def __repr__(self) -> str:
        return "<no value>"


_NO_VALUE = _NoValue()


def _normalize_reduction_axes(axis: AxesLike, ndim: int) -> tuple[int, ...]:
    if not (axis is None or is_integral_scalar(axis)
            or isinstance(axis, (tuple, list))):
        raise InvalidArgumentTypeError("'axis' must be None, an integer or a tuple of "
                                       f"integers, got {axis!r}")
    return normalize_axes(axis, ndim)


def _normalize_descrs(descrs: Mapping[int, ReductionDescriptor] | None,
                      axes: tuple[int, ...], ndim: int
                      ) -> dict[int, ReductionDescriptor]:
    if descrs is None:
        return {}
    result = {}
    for key, descr in descrs.items():
        ax = normalize_axis(key, ndim, "axis_to_reduction_descr")
        if ax not in axes:
            raise AxisError(f"'axis_to_reduction_descr' has an entry for axis "
                            f"{key}, which is not reduced (reduced axes: "
                            f"{axes})")
        if not isinstance(descr, ReductionDescriptor):
            raise InvalidArgumentTypeError("'axis_to_reduction_descr' values must be "
                                           f"ReductionDescriptors, got {descr!r}")
        result[ax] = descr
    return result


def _reduce(func: str, a: Array, axis: AxesLike, keepdims: bool,
            axis_to_reduction_descr: Mapping[int, ReductionDescriptor] | None,
            op: ReductionOperation, dtype: np.dtype[np.generic],
            combine_initial: Callable[[ScalarExpression, ScalarExpression],
                                      ScalarExpression] | None,
            initial: object,
            ) -> Array:
    """Build the reduction of *a* with *op* in *dtype* over *axis*, combining
    the result with *initial* (if given) by *combine_initial*."""
    ndim = a.ndim
    axes = _normalize_reduction_axes(axis, ndim)
    descrs = _normalize_descrs(axis_to_reduction_descr, axes, ndim)

    binder = BindingCollector()
    in_name = binder.bind(a)
    idx: list[prim.Variable] = []
    bounds: dict[str, tuple[ScalarExpression, ScalarExpression]] = {}
    var_to_descr: dict[str, ReductionDescriptor] = {}
    out_shape: list[ShapeComponent] = []
    for i, n in enumerate(a.shape):
        if i in axes:
            iname = f"_r{len(bounds)}"
            bounds[iname] = (0, binder.shape_expr(n))
            var_to_descr[iname] = descrs.get(i, ReductionDescriptor())
            idx.append(prim.Variable(iname))
            if keepdims:
                out_shape.append(1)
        else:
            idx.append(prim.Variable(f"_{len(out_shape)}"))
            out_shape.append(n)

    inner: ScalarExpression = (
        prim.Subscript(prim.Variable(in_name), tuple(idx)) if ndim
        else prim.Variable(in_name))
    if isinstance(op, (AnyReductionOperation, AllReductionOperation)):
        if a.dtype.kind != "b":
            inner = prim.Comparison(inner, "!=", scalar_literal(0, a.dtype))
    elif a.dtype != dtype:
        inner = TypeCast(dtype, inner)
    expr = Reduce(inner, op, bounds) if bounds else inner
    if initial is not _NO_VALUE and combine_initial is not None:
        expr = combine_initial(cast_scalar(initial, dtype), expr)
    return IndexLambda(tuple(out_shape), dtype, expr, binder.bindings,
                       var_to_reduction_descr=var_to_descr)


def _prepare(a: object, func: str) -> Array | None:
    if isinstance(a, Array):
        return a
    if isinstance(a, np.ndarray):
        return make_data_wrapper(a)
    if is_scalar(a):
        return None
    raise InvalidArgumentTypeError(f"{func}: 'a' must be an array or a scalar, got "
                                   f"{type(a).__name__}")


def _check_initial(initial: object, func: str) -> None:
    if initial is not _NO_VALUE and not is_scalar(initial):
        raise InvalidArgumentTypeError(f"{func}: 'initial' must be a scalar, got "
                                       f"{type(initial).__name__}")


def _eager_kwargs(axis: AxesLike, keepdims: bool, initial: object,
                  **kwargs: object) -> dict[str, Any]:
    result = {"axis": axis, "keepdims": keepdims, **kwargs}
    if initial is not _NO_VALUE:
        result["initial"] = initial
    return result


# {{{ sum, prod

def _arith_reduction(func: str, np_func: Callable[..., Any],
                     op: ReductionOperation,
                     combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def reduction(a: object, axis: AxesLike = None, initial: object = _NO_VALUE,
                  axis_to_reduction_descr: Mapping[int, ReductionDescriptor]
                  | None = None, *,
                  keepdims: bool = False, dtype: npt.DTypeLike | None = None
                  ) -> ArrayOrScalar:
        _check_initial(initial, func)
        ary = _prepare(a, func)
        if ary is None:
            return np_func(a, **_eager_kwargs(axis, keepdims, initial,
                                              dtype=dtype))
        if dtype is not None:
            dtype = check_dtype(dtype)
        try:
            result_dtype = np_func(np.empty((0,), ary.dtype), dtype=dtype).dtype
        except TypeError as e:
            raise DTypeError(f"{func}: cannot reduce an array of dtype "
                             f"{ary.dtype} in dtype {dtype}: {e}") from None
        return _reduce(func, ary, axis, keepdims, axis_to_reduction_descr, op,
                       check_dtype(result_dtype), combine, initial)

    reduction.__name__ = reduction.__qualname__ = func
    return reduction


sum = _arith_reduction(
    "sum", np.sum, SumReductionOperation(),
    lambda init, e: prim.Sum((init, e)))
sum.__doc__ = """The sum of the elements of *a* over *axis*, like
:func:`numpy.sum`.

:arg a: an array (numpy arrays are wrapped as data; on scalars the result is
    computed eagerly).
:arg axis: None (all axes), an int or a tuple of ints; negative values count
    from the end.
:arg dtype: the dtype to sum in (and of the result); numpy's default:
    booleans and integers narrower than ``int64`` sum in ``int64``
    (``uint64`` for unsigned).
:arg initial: a scalar added to the sum.
:arg axis_to_reduction_descr: maps reduced axes to the
    :class:`~pytato.array.ReductionDescriptor` of their reduction index.
:arg keepdims: keep reduced axes, with length 1.
"""

prod = _arith_reduction(
    "prod", np.prod, ProductReductionOperation(),
    lambda init, e: prim.Product((init, e)))
prod.__doc__ = """The product of the elements of *a* over *axis*, like
:func:`numpy.prod`. The arguments are those of :func:`sum`; *initial*
multiplies the product.
"""

# }}}


# {{{ amax, amin

def _without_identity(
        func: str, ary: Array, axes: tuple[int, ...],
        axis_to_reduction_descr: Mapping[int, ReductionDescriptor] | None
        ) -> Mapping[int, ReductionDescriptor] | None:
    """*axis_to_reduction_descr* with the descriptors of the reduced axes
    of symbolic length in *ary* tagged
    :class:`~pytato.tags.ReductionWithoutIdentity` (the program checks
    their lengths at its calls)."""
    symbolic = [ax for ax in axes if not is_integral_scalar(ary.shape[ax])]
    if not symbolic:
        return axis_to_reduction_descr
    descrs = _normalize_descrs(axis_to_reduction_descr, axes, ary.ndim)
    tag = ReductionWithoutIdentity(func)
    return {**descrs, **{
        ax: descrs.get(ax, ReductionDescriptor()).tagged(tag)
        for ax in symbolic}}


def _extremum_reduction(func: str, np_func: Callable[..., Scalar],
                        op: ReductionOperation, np_name: str, *,
                        keyword_only: bool = False) -> Callable[..., Any]:
    def reduction(a: object, axis: AxesLike = None, initial: object = _NO_VALUE,
                  axis_to_reduction_descr: Mapping[int, ReductionDescriptor]
                  | None = None, *,
                  keepdims: bool = False) -> ArrayOrScalar:
        return _extremum(a, axis, initial, axis_to_reduction_descr, keepdims)

    def reduction_kw(a: object, axis: AxesLike = None, *, initial: object = _NO_VALUE,
                     axis_to_reduction_descr: Mapping[int, ReductionDescriptor]
                     | None = None,
                     keepdims: bool = False) -> ArrayOrScalar:
        return _extremum(a, axis, initial, axis_to_reduction_descr, keepdims)

    def _extremum(a: object, axis: AxesLike, initial: object,
                  axis_to_reduction_descr: Mapping[int, ReductionDescriptor]
                  | None, keepdims: bool) -> ArrayOrScalar:
        _check_initial(initial, func)
        ary = _prepare(a, func)
        if ary is None:
            return np_func(a, **_eager_kwargs(axis, keepdims, initial))
        if ary.dtype.kind == "c":
            raise DTypeError(f"{func} of complex arrays (dtype {ary.dtype}) is "
                             "not supported")
        axes = _normalize_reduction_axes(axis, ary.ndim)
        if initial is _NO_VALUE:
            for ax in axes:
                n = ary.shape[ax]
                if is_integral_scalar(n) and n == 0:
                    raise EmptyReductionError(
                        f"{func}: cannot reduce over axis {ax} of length 0 "
                        f"(array of shape {format_shape(ary.shape)}) without "
                        "an 'initial' value: the "
                        f"{np_name} has no identity")
        if initial is _NO_VALUE:
            # symbolic lengths: checked when the program is called
            axis_to_reduction_descr = _without_identity(
                func, ary, axes, axis_to_reduction_descr)
        red_op = op
        if ary.dtype.kind == "b":
            # the maximum (minimum) of booleans is their 'or' ('and')
            red_op = (AnyReductionOperation()
                      if isinstance(op, MaxReductionOperation)
                      else AllReductionOperation())
        result = _reduce(func, ary, axes, keepdims, axis_to_reduction_descr,
                         red_op, ary.dtype, None, _NO_VALUE)
        if initial is _NO_VALUE:
            return result
        return getattr(elementwise, np_name)(
            result, cast_scalar(initial, ary.dtype))

    # as upstream: amax takes 'initial' and the descriptors by keyword only,
    # amin also positionally
    result = reduction_kw if keyword_only else reduction
    result.__name__ = result.__qualname__ = func
    return result


amax = _extremum_reduction("amax", np.max, MaxReductionOperation(), "maximum",
                           keyword_only=True)
amax.__doc__ = """The maximum of the elements of *a* over *axis*, like
:func:`numpy.amax` (NaNs propagate).

:arg a: an array (numpy arrays are wrapped as data; on scalars the result is
    computed eagerly).
:arg axis: None (all axes), an int or a tuple of ints.
:arg initial: a scalar taking part in the maximum. Without it, reducing an
    axis of length 0 raises :class:`~pytato.diagnostic.EmptyReductionError`
    (as numpy raises :class:`ValueError`): here for a constant length, at
    the call of the program for a symbolic length that is 0 there (the
    descriptor of such an axis is tagged
    :class:`~pytato.tags.ReductionWithoutIdentity`; see
    :mod:`pytato.target.loopy.lower.empty_reductions`).
:arg axis_to_reduction_descr: maps reduced axes to the
    :class:`~pytato.array.ReductionDescriptor` of their reduction index.
:arg keepdims: keep reduced axes, with length 1.
"""

amin = _extremum_reduction("amin", np.min, MinReductionOperation(), "minimum")
amin.__doc__ = """The minimum of the elements of *a* over *axis*, like
:func:`numpy.amin`. The arguments are those of :func:`amax`.
"""

# }}}


# {{{ any, all

def _logical_reduction(func: str, np_func: Callable[..., Scalar],
                       op: ReductionOperation, np_combine: Callable[..., Scalar],
                       combine: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def reduction(a: object, axis: AxesLike = None,
                  axis_to_reduction_descr: Mapping[int, ReductionDescriptor]
                  | None = None, *, initial: object = _NO_VALUE,
                  keepdims: bool = False) -> ArrayOrScalar:
        _check_initial(initial, func)
        ary = _prepare(a, func)
        if ary is None:
            result = np_func(a, axis=axis, keepdims=keepdims)
            if initial is not _NO_VALUE:
                result = np_combine(initial, result)
            return result
        return _reduce(func, ary, axis, keepdims, axis_to_reduction_descr, op,
                       np.dtype(np.bool_), combine, initial)

    reduction.__name__ = reduction.__qualname__ = func
    return reduction


any = _logical_reduction(
    "any", np.any, AnyReductionOperation(), np.logical_or,
    lambda init, e: prim.LogicalOr((init, e)))
any.__doc__ = """Whether any element of *a* over *axis* is nonzero, like
:func:`numpy.any`; a boolean array.

:arg a: an array (numpy arrays are wrapped as data; on scalars the result is
    computed eagerly).
:arg axis: None (all axes), an int or a tuple of ints.
:arg initial: a value or-ed into the result (numpy's :func:`numpy.any` has
    no such argument; it is accepted for symmetry with the other
    reductions).
:arg axis_to_reduction_descr: maps reduced axes to the
    :class:`~pytato.array.ReductionDescriptor` of their reduction index.
:arg keepdims: keep reduced axes, with length 1.
"""

all = _logical_reduction(
    "all", np.all, AllReductionOperation(), np.logical_and,
    lambda init, e: prim.LogicalAnd((init, e)))
all.__doc__ = """Whether all elements of *a* over *axis* are nonzero, like
:func:`numpy.all`; a boolean array. The arguments are those of :func:`any`;
*initial* is and-ed into the result.
"""

# }}}


__all__ = ["all", "amax", "amin", "any", "prod", "sum"]
