"""Lower array nodes to equivalent :class:`~pytato.array.IndexLambda`\\ s.

:func:`to_index_lambda` rewrites one node (an :class:`~pytato.array.Einsum`,
:class:`~pytato.array.Stack`, :class:`~pytato.array.Concatenate`,
:class:`~pytato.array.Roll`, :class:`~pytato.array.AxisPermutation`,
:class:`~pytato.array.Reshape` or any index node) as an
:class:`~pytato.array.IndexLambda` whose bindings are the node's children.
The result has the node's shape, dtype, axes and tags. Symbolic extents that
the element expression needs (reduction bounds, offsets, strides) are bound
like other operands: a binding named ``_inK`` holding the 0-d size
expression, referenced as ``Variable("_inK")``.

Joins (stack, concatenate) select their operand with a balanced tree of
conditionals, so expressions stay logarithmically deep in the number of
operands.

.. autofunction:: to_index_lambda
.. autofunction:: lower_to_index_lambdas
.. autoclass:: ToIndexLambdaMapper
.. autoclass:: ToIndexLambdaMixin
.. autoclass:: MapAsIndexLambdaMixin
.. autoexception:: NotLowerableToIndexLambdaError
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Generic, ParamSpec, TypeVar

import numpy as np
import pymbolic.primitives as prim

from pytato.array.base import Array, ShapeComponent
from pytato.array.lambdas import (
    Einsum,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
    IndexLambda,
)
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    IndexBase,
    NormalizedSlice,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.shape import (
    are_shape_components_equal,
    broadcast_shapes,
    is_one,
)
from pytato.diagnostic import CannotBeLoweredToIndexLambda
from pytato.scalar_expr import (
    AnyReductionOperation,
    Reduce,
    SumReductionOperation,
    TypeCast,
    integer_dtype_info,
    is_integral_scalar,
    negated,
    scalar_literal,
)
from pytato.transform.mappers import (
    ArrayOrNamesTc,
    CopyMapper,
    Mapper,
    UnsupportedNodeError,
)


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression

    from pytato.array.base import ReductionDescriptor
    from pytato.scalar_expr import ScalarExpression


__all__ = [
    "MapAsIndexLambdaMixin",
    "NotLowerableToIndexLambdaError",
    "ToIndexLambdaMapper",
    "ToIndexLambdaMixin",
    "lower_to_index_lambdas",
    "to_index_lambda",
]

ResultT = TypeVar("ResultT")
P = ParamSpec("P")


def _idx(i: int) -> prim.Variable:
    return prim.Variable(f"_{i}")


class _Bindings:
    """Collects the bindings of the lambda being built, one name per
    distinct array."""

    def __init__(self) -> None:
        self.bindings: dict[str, Array] = {}
        self._name_of: dict[Array, str] = {}

    def bind(self, ary: Array) -> str:
        name = self._name_of.get(ary)
        if name is None:
            name = f"_in{len(self.bindings)}"
            self._name_of[ary] = name
            self.bindings[name] = ary
        return name

    def read(self, ary: Array, indices: Sequence[ArithmeticExpression | None],
             dtype: np.dtype[np.generic] | None = None) -> ArithmeticExpression:
        """The expression reading *ary* at *indices*, cast to *dtype*."""
        var = prim.Variable(self.bind(ary))
        expr: ArithmeticExpression = (var[tuple(indices)]  # type: ignore[arg-type]
                                  if indices else var)
        if dtype is not None and ary.dtype != dtype:
            expr = TypeCast(dtype, expr)
        return expr

    def size(self, c: ShapeComponent) -> ArithmeticExpression:
        """A shape component as an expression (ints stay ints)."""
        if is_integral_scalar(c):
            return int(c)
        return prim.Variable(self.bind(c))  # type: ignore[arg-type]


def _sum(terms: Sequence[ArithmeticExpression]) -> ArithmeticExpression:
    terms = [t for t in terms if not (is_integral_scalar(t) and t == 0)]
    if not terms:
        return 0
    if len(terms) == 1:
        return terms[0]
    return prim.Sum(tuple(terms))


def _product(factors: Sequence[ArithmeticExpression]) -> ArithmeticExpression:
    factors = [f for f in factors if not (is_integral_scalar(f) and f == 1)]
    if not factors:
        return 1
    if len(factors) == 1:
        return factors[0]
    return prim.Product(tuple(factors))


def _select(selector: ArithmeticExpression,
            bounds: Sequence[ArithmeticExpression],
            choices: Sequence[ArithmeticExpression]) -> ArithmeticExpression:
    """``choices[k]`` for ``bounds[k] <= selector < bounds[k+1]``, as a
    balanced tree of conditionals (``bounds[0]`` is not checked)."""
    def tree(lo: int, hi: int) -> ArithmeticExpression:
        if hi - lo == 1:
            return choices[lo]
        mid = (lo + hi) // 2
        return prim.If(prim.Comparison(selector, "<", bounds[mid]),
                       tree(lo, mid), tree(mid, hi))
    return tree(0, len(choices))


def _clamped_index(index: ArithmeticExpression, length: ArithmeticExpression,
                   dtype: np.dtype[np.generic]) -> ArithmeticExpression:
    """An entry *index* (of integer *dtype*) of a runtime index array as a
    position in ``[0, length)``: negative entries count from the end once
    (as in numpy), then what is still out of range is clamped to the
    nearest end, as JAX does, so that generated code never reads outside
    the indexed array (see :ref:`numerical-semantics`).

    The arithmetic is signed and at least as wide as ``int``: entries of
    types narrower than ``int`` are converted first (else ``index +
    length`` would wrap around in the narrow type), and ``uint64`` entries
    are compared unsigned and converted to ``int64`` once known to be
    below *length* (mixing ``uint64`` with a signed type gives a
    floating-point index)."""
    last = _sum([length, -1])
    value = index
    if dtype.kind == "u" and dtype.itemsize == 8:
        value = TypeCast(np.dtype(np.int64), index)
    elif dtype.itemsize < 4:
        value = TypeCast(
            np.dtype(np.int32) if is_integral_scalar(length)
            and int(length) < 2**31
            else np.dtype(np.int64), index)
    # (the conditions compare the entry itself: C compares integers of
    # different types by their values, and loopy's simplification of
    # indices cannot read conditions holding conversions)
    # no comparison that the type's range decides (compilers warn of them)
    info = integer_dtype_info(dtype)
    known = int(length) if is_integral_scalar(length) else None
    # (an entry always in range is used as it is: loopy's simplification of
    # indices cannot read a conversion there either)
    upper: ArithmeticExpression = (
        index if known is not None and info.max < known
        else prim.If(prim.Comparison(index, ">=", length), last, value))
    if dtype.kind == "u":
        return upper
    lower: ArithmeticExpression = _sum([value, length])
    if known is None or info.min < -known:
        neg = prim.Product((-1, length)) if known is None else -known
        lower = prim.If(prim.Comparison(index, "<", neg), 0, lower)
    return prim.If(prim.Comparison(index, "<", 0), lower, upper)


class NotLowerableToIndexLambdaError(CannotBeLoweredToIndexLambda,
                                     UnsupportedNodeError):
    """Raised by :func:`to_index_lambda` (and :class:`ToIndexLambdaMapper`)
    for a node without an element-wise definition (an input, the result of
    a call, ...): the reference's
    :class:`~pytato.diagnostic.CannotBeLoweredToIndexLambda`, and an
    :class:`~pytato.transform.UnsupportedArrayError` (a :class:`ValueError`
    and a :class:`NotImplementedError`) as other mappers raise."""


class _ToIndexLambda(Mapper[IndexLambda, None, []]):
    def handle_unsupported_array(self, expr: object, *args: object,
                                 **kwargs: object) -> IndexLambda:
        if not hasattr(expr, "_mapper_method"):
            return super().handle_unsupported_array(
                expr, *args, **kwargs)
        raise NotLowerableToIndexLambdaError(
            f"a {type(expr).__name__} cannot be lowered to an IndexLambda (it "
            "has no element-wise definition)")

    def _finish(self, expr: Array, scalar_expr: ScalarExpression, b: _Bindings,
                var_to_reduction_descr: Mapping[str, ReductionDescriptor]
                | None = None) -> IndexLambda:
        return IndexLambda(
            expr.shape, expr.dtype, scalar_expr, b.bindings,
            var_to_reduction_descr or {},
            axes=expr.axes, tags=expr.tags,
            non_equality_tags=expr.non_equality_tags)

    def map_index_lambda(self, expr: IndexLambda) -> IndexLambda:
        return expr

    # {{{ einsum

    def map_einsum(self, expr: Einsum) -> IndexLambda:
        b = _Bindings()
        redn_axes = expr.reduction_axes
        redn_name = {ax: f"_r{i}" for i, ax in enumerate(redn_axes)}
        factors = []
        for acc, arg in zip(expr.access_descriptors, expr.args, strict=True):
            indices: list[ArithmeticExpression] = []
            for descr, n in zip(acc, arg.shape, strict=True):
                if isinstance(descr, EinsumElementwiseAxis):
                    full = expr.shape[descr.dim]
                    var: ArithmeticExpression = _idx(descr.dim)
                else:
                    assert isinstance(descr, EinsumReductionAxis)
                    full = expr.reduction_axis_length(descr)
                    var = prim.Variable(redn_name[descr])
                indices.append(0 if is_one(n) and not is_one(full) else var)
            factors.append(b.read(arg, indices, expr.dtype))
        # numpy's boolean einsum: a logical or of logical ands
        boolean = expr.dtype.kind == "b"
        if len(factors) == 1:
            inner = factors[0]
        else:
            inner = prim.LogicalAnd(tuple(factors)) if boolean \
                else _product(factors)
        if not redn_axes:
            if len(factors) > 1 and expr.dtype.kind in "fc":
                # numpy's einsum of several operands adds each product to
                # a zero, also without a sum: a product -0.0 is +0.0
                inner = prim.Sum((scalar_literal(0, expr.dtype), inner))
            return self._finish(expr, inner, b)
        bounds = {redn_name[ax]: (0, b.size(expr.reduction_axis_length(ax)))
                  for ax in redn_axes}
        descrs = {redn_name[ax]: expr.redn_axis_to_redn_descr[ax]
                  for ax in redn_axes if ax in expr.redn_axis_to_redn_descr}
        op = AnyReductionOperation() if boolean else SumReductionOperation()
        return self._finish(expr, Reduce(inner, op, bounds), b, descrs)

    # }}}

    # {{{ joins

    def map_stack(self, expr: Stack) -> IndexLambda:
        b = _Bindings()
        ax = expr.axis
        indices = [_idx(i) for i in range(expr.ndim) if i != ax]
        choices = [b.read(a, indices, expr.dtype) for a in expr.arrays]
        return self._finish(
            expr, _select(_idx(ax), list(range(len(choices))), choices), b)

    def map_concatenate(self, expr: Concatenate) -> IndexLambda:
        b = _Bindings()
        ax = expr.axis
        offsets: list[ArithmeticExpression] = []
        choices = []
        running: list[ArithmeticExpression] = []
        for a in expr.arrays:
            offset = _sum(running)
            offsets.append(offset)
            indices: list[ArithmeticExpression] = [
                _idx(i) for i in range(expr.ndim)]
            indices[ax] = _sum([_idx(ax),
                                negated(offset)])
            choices.append(b.read(a, indices, expr.dtype))
            running.append(b.size(a.shape[ax]))
        return self._finish(expr, _select(_idx(ax), offsets, choices), b)

    # }}}

    # {{{ pure remappings

    def map_roll(self, expr: Roll) -> IndexLambda:
        b = _Bindings()
        ax = expr.axis
        n = expr.shape[ax]
        i = _idx(ax)
        if is_integral_scalar(n):
            n = int(n)
            shift = expr.shift % n if n else 0
            rolled: ArithmeticExpression = (
                prim.Remainder(i + (n - shift), n) if shift else i)
        else:
            rolled = prim.Remainder(prim.Sum((i, -expr.shift)), b.size(n))
        indices: list[ArithmeticExpression] = [
            _idx(k) for k in range(expr.ndim)]
        indices[ax] = rolled
        return self._finish(expr, b.read(expr.array, indices), b)

    def map_axis_permutation(self, expr: AxisPermutation) -> IndexLambda:
        b = _Bindings()
        indices: list[ArithmeticExpression | None] = [None] * expr.ndim
        for out_axis, in_axis in enumerate(expr.axis_permutation):
            indices[in_axis] = _idx(out_axis)
        return self._finish(expr, b.read(expr.array, indices), b)

    def map_reshape(self, expr: Reshape) -> IndexLambda:
        b = _Bindings()
        in_shape = expr.array.shape
        out_shape = expr.shape
        indices: list[ArithmeticExpression] = [0] * len(in_shape)
        in_axes = [i for i, n in enumerate(in_shape) if not is_one(n)]
        out_axes = [i for i, n in enumerate(out_shape) if not is_one(n)]
        if expr.order.upper() == "F":
            in_axes.reverse()
            out_axes.reverse()
        for grp_in, grp_out in _reshape_groups(in_shape, in_axes,
                                               out_shape, out_axes):
            _reshape_group(b, in_shape, grp_in, out_shape, grp_out, indices)
        return self._finish(expr, b.read(expr.array, indices), b)

    # }}}

    # {{{ indexing

    def _slice_index(self, b: _Bindings, s: NormalizedSlice, out_axis: int
                     ) -> ArithmeticExpression:
        start = b.size(s.start)
        if s.step == 1:
            return _sum([start, _idx(out_axis)])
        return _sum([start, prim.Product((s.step, _idx(out_axis)))])

    def _int_index(self, b: _Bindings, i: int, length: ShapeComponent
                   ) -> ArithmeticExpression:
        i = int(i)
        if i >= 0:
            return i
        return _sum([b.size(length), i])

    def _array_index(self, b: _Bindings, ary: Array, length: ShapeComponent,
                     first_out_axis: int, adv_shape: Sequence[ShapeComponent]
                     ) -> ArithmeticExpression:
        offset = first_out_axis + len(adv_shape) - ary.ndim
        indices = [0 if is_one(n) and not is_one(adv_shape[k + len(adv_shape)
                                                            - ary.ndim])
                   else _idx(offset + k)
                   for k, n in enumerate(ary.shape)]
        value = b.read(ary, indices)
        return _clamped_index(value, b.size(length), ary.dtype)

    def map_basic_index(self, expr: BasicIndex) -> IndexLambda:
        b = _Bindings()
        indices = []
        out_axis = 0
        for ind, n in zip(expr.indices, expr.array.shape, strict=True):
            if isinstance(ind, NormalizedSlice):
                indices.append(self._slice_index(b, ind, out_axis))
                out_axis += 1
            else:
                indices.append(self._int_index(b, ind, n))  # type: ignore[arg-type]
        return self._finish(expr, b.read(expr.array, indices), b)

    def _advanced(self, expr: IndexBase, adv_first_axis: int,
                  slice_out_axes: Sequence[int]) -> IndexLambda:
        b = _Bindings()
        adv_shape = broadcast_shapes(*(i.shape for i in expr.indices
                                       if isinstance(i, Array)))
        indices = []
        islice = 0
        # axes indexed by arrays whose length may be 0 at run time: no
        # position is valid there, the (empty) array is not read
        maybe_empty = []
        for ind, n in zip(expr.indices, expr.array.shape, strict=True):
            if isinstance(ind, NormalizedSlice):
                indices.append(self._slice_index(b, ind, slice_out_axes[islice]))
                islice += 1
            elif isinstance(ind, Array):
                indices.append(self._array_index(b, ind, n, adv_first_axis,
                                                 adv_shape))
                if not is_integral_scalar(n):
                    maybe_empty.append(prim.Comparison(b.size(n), ">", 0))
            else:
                indices.append(self._int_index(b, ind, n))
        value = b.read(expr.array, indices)
        if maybe_empty:
            cond = (maybe_empty[0] if len(maybe_empty) == 1
                    else prim.LogicalAnd(tuple(maybe_empty)))
            value = prim.If(cond, value, scalar_literal(0, expr.dtype))
        return self._finish(expr, value, b)

    def map_contiguous_advanced_index(self, expr: AdvancedIndexInContiguousAxes
                                      ) -> IndexLambda:
        non_slice = [k for k, i in enumerate(expr.indices)
                     if not isinstance(i, NormalizedSlice)]
        first, last = non_slice[0], non_slice[-1]
        nadv = len(broadcast_shapes(*(i.shape for i in expr.indices
                                      if isinstance(i, Array))))
        slice_out_axes = [k if k < first else k - (last - first + 1) + nadv
                          for k, i in enumerate(expr.indices)
                          if isinstance(i, NormalizedSlice)]
        return self._advanced(expr, first, slice_out_axes)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes) -> IndexLambda:
        nadv = len(broadcast_shapes(*(i.shape for i in expr.indices
                                      if isinstance(i, Array))))
        nslices = sum(isinstance(i, NormalizedSlice) for i in expr.indices)
        return self._advanced(expr, 0, list(range(nadv, nadv + nslices)))

    # }}}


def _reshape_groups(in_shape: Sequence[ShapeComponent], in_axes: list[int],
                    out_shape: Sequence[ShapeComponent], out_axes: list[int]
                    ) -> list[tuple[list[int], list[int]]]:
    """Split the non-unit axes (in iteration order, slowest first) into
    consecutive groups of equal element count, so that matching axes map
    one-to-one and only mismatched runs need linearized index arithmetic."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(in_axes) and j < len(out_axes):
        a, c = in_shape[in_axes[i]], out_shape[out_axes[j]]
        if are_shape_components_equal(a, c):
            groups.append(([in_axes[i]], [out_axes[j]]))
            i += 1
            j += 1
            continue
        if not (is_integral_scalar(a) and is_integral_scalar(c)) or a == 0 \
                or c == 0:
            break
        gi, gj = [in_axes[i]], [out_axes[j]]
        pa, pc = int(a), int(c)
        i += 1
        j += 1
        while pa != pc:
            if pa < pc and i < len(in_axes) and is_integral_scalar(
                    in_shape[in_axes[i]]):
                pa *= int(in_shape[in_axes[i]])  # type: ignore[arg-type]
                gi.append(in_axes[i])
                i += 1
            elif pc < pa and j < len(out_axes) and is_integral_scalar(
                    out_shape[out_axes[j]]):
                pc *= int(out_shape[out_axes[j]])  # type: ignore[arg-type]
                gj.append(out_axes[j])
                j += 1
            else:
                break
        if pa != pc:
            i -= len(gi)
            j -= len(gj)
            break
        groups.append((gi, gj))
    if i < len(in_axes) or j < len(out_axes):
        groups.append((in_axes[i:], out_axes[j:]))
    return groups


def _reshape_group(b: _Bindings, in_shape: Sequence[ShapeComponent],
                   grp_in: list[int], out_shape: Sequence[ShapeComponent],
                   grp_out: list[int], indices: list[ArithmeticExpression]) -> None:
    """Set ``indices`` of the input axes *grp_in* from the output axes
    *grp_out* (both slowest first) through their linearized position."""
    if not grp_in:
        return
    if len(grp_in) == 1 and len(grp_out) == 1:
        indices[grp_in[0]] = _idx(grp_out[0])
        return
    terms = []
    for k, ax in enumerate(grp_out):
        stride = _product([b.size(out_shape[a]) for a in grp_out[k + 1:]])
        terms.append(_product([_idx(ax), stride]))
    lin = _sum(terms)
    for k, ax in enumerate(grp_in):
        stride = _product([b.size(in_shape[a]) for a in grp_in[k + 1:]])
        e = lin if is_integral_scalar(stride) and stride == 1 \
            else prim.FloorDiv(lin, stride)
        if k > 0:
            e = prim.Remainder(e, b.size(in_shape[ax]))
        indices[ax] = e


class ToIndexLambdaMixin(_ToIndexLambda):
    """The ``map_<node>`` methods of :class:`ToIndexLambdaMapper`: each
    returns an :class:`~pytato.array.IndexLambda` computing the node from
    its children (upstream's name)."""


class ToIndexLambdaMapper(ToIndexLambdaMixin):
    """Maps a node to an equivalent :class:`~pytato.array.IndexLambda`
    (see :func:`to_index_lambda`)."""


class MapAsIndexLambdaMixin(ABC, Generic[ResultT, P]):
    """A mixin for mappers that handle every array node with an
    element-wise definition as the :class:`~pytato.array.IndexLambda`
    computing it: the ``map_<node>`` methods lower the node with
    :func:`to_index_lambda` and call :meth:`map_index_lambda`."""

    @abstractmethod
    def map_index_lambda(self, expr: IndexLambda, *args: P.args,
                         **kwargs: P.kwargs) -> ResultT:
        """Map an :class:`~pytato.array.IndexLambda`."""

    def _as_index_lambda(self, expr: Array, *args: P.args,
                         **kwargs: P.kwargs) -> ResultT:
        return self.map_index_lambda(to_index_lambda(expr), *args, **kwargs)

    map_einsum = _as_index_lambda
    map_stack = _as_index_lambda
    map_concatenate = _as_index_lambda
    map_roll = _as_index_lambda
    map_axis_permutation = _as_index_lambda
    map_reshape = _as_index_lambda
    map_basic_index = _as_index_lambda
    map_contiguous_advanced_index = _as_index_lambda
    map_non_contiguous_advanced_index = _as_index_lambda


_LOWERER = ToIndexLambdaMapper()


def to_index_lambda(expr: Array) -> IndexLambda:
    """Return an :class:`~pytato.array.IndexLambda` computing the same array
    as *expr* from *expr*'s children (a shallow rewrite: the children are
    not lowered). An :class:`~pytato.array.IndexLambda` is returned as is.

    :raises NotLowerableToIndexLambdaError: (a
        :class:`~pytato.diagnostic.CannotBeLoweredToIndexLambda`, a
        :class:`NotImplementedError`) for nodes without an element-wise
        definition (inputs, results of calls, ...).
    """
    return _LOWERER(expr)


_LOWERABLE = frozenset({
    "map_einsum", "map_stack", "map_concatenate", "map_roll",
    "map_axis_permutation", "map_reshape", "map_basic_index",
    "map_contiguous_advanced_index", "map_non_contiguous_advanced_index"})


class _LowerAll(CopyMapper):
    def map_array(self, expr: Array) -> Array:
        new = super().map_array(expr)
        if getattr(type(new), "_mapper_method", None) in _LOWERABLE:
            return to_index_lambda(new)
        return new


def lower_to_index_lambdas(expr: ArrayOrNamesTc) -> ArrayOrNamesTc:
    """Return a copy of the graph *expr* (an array or a
    :class:`~pytato.DictOfNamedArrays`) in which every node that
    :func:`to_index_lambda` can rewrite is rewritten."""
    return _LowerAll()(expr)
