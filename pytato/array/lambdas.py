"""Computing nodes: :class:`IndexLambda` and :class:`Einsum`.

.. autoclass:: IndexLambda
.. autoclass:: EinsumAxisDescriptor
.. autoclass:: EinsumElementwiseAxis
.. autoclass:: EinsumReductionAxis
.. autoclass:: Einsum
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from constantdict import constantdict
from pytools.tag import ToTagSetConvertible

from pytato.array.base import (
    Array,
    DerivedShapeMixin,
    ReductionDescriptor,
    ShapeComponent,
    ShapeType,
    array_dataclass,
    is_one,
)
from pytato.diagnostic import (
    EinsumSpecError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from pytato.scalar_expr import Reduce, ScalarExpression, WalkMapper


@array_dataclass
class IndexLambda(Array):
    r"""An array whose element at ``(_0, _1, ...)`` is the scalar expression
    :attr:`expr`.

    .. attribute:: shape
    .. attribute:: dtype
    .. attribute:: expr

        A :mod:`pymbolic` expression in the indices ``_0, _1, ...``, names
        of :attr:`bindings` (subscripted by index expressions, or bare for
        0-d bindings), and reduction indices of
        :class:`~pytato.scalar_expr.Reduce` subexpressions.

    .. attribute:: bindings

        A mapping from names to :class:`Array`\ s.

    .. attribute:: var_to_reduction_descr

        A mapping from reduction index names to
        :class:`~pytato.array.ReductionDescriptor`.

    .. automethod:: with_tagged_reduction
    """

    shape: ShapeType
    dtype: np.dtype[np.generic]
    expr: ScalarExpression
    bindings: Mapping[str, Array]
    var_to_reduction_descr: Mapping[str, ReductionDescriptor] = constantdict()

    _mapper_method: ClassVar[str] = "map_index_lambda"

    def _pt_validate(self) -> None:
        if not isinstance(self.bindings, constantdict):
            object.__setattr__(self, "bindings", constantdict(self.bindings))
        if not isinstance(self.var_to_reduction_descr, constantdict):
            object.__setattr__(self, "var_to_reduction_descr",
                               constantdict(self.var_to_reduction_descr))

    def with_tagged_reduction(self, reduction_variable: str,
                              tags: ToTagSetConvertible) -> IndexLambda:
        """A copy of *self* whose
        :class:`~pytato.array.ReductionDescriptor` of the reduction index
        *reduction_variable* (a bound of a
        :class:`~pytato.scalar_expr.Reduce` in :attr:`expr`) is tagged with
        *tags*.

        :raises ValueError: if :attr:`expr` has no reduction over
            *reduction_variable*.
        """
        if not isinstance(reduction_variable, str):
            raise InvalidArgumentTypeError("'reduction_variable' must be a str, got "
                                           f"{type(reduction_variable).__name__}")
        descr = self.var_to_reduction_descr.get(reduction_variable)
        if descr is None:
            if reduction_variable not in _reduction_variables(self.expr):
                raise InvalidArgumentError(
                    f"'reduction_variable': '{reduction_variable}' is not a "
                    "reduction index of this IndexLambda (its reduction "
                    f"indices are {sorted(_reduction_variables(self.expr))})")
            descr = ReductionDescriptor()
        return dataclasses.replace(
            self, var_to_reduction_descr=constantdict({
                **self.var_to_reduction_descr,
                reduction_variable: descr.tagged(tags)}))


class _ReductionVariableCollector(WalkMapper[[]]):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def map_reduce(self, expr: Reduce, *args: object, **kwargs: object) -> None:
        self.names.update(expr.bounds)
        super().map_reduce(expr, *args, **kwargs)


def _reduction_variables(expr: ScalarExpression) -> frozenset[str]:
    """The names of the reduction indices bound in *expr*."""
    collector = _ReductionVariableCollector()
    collector(expr)
    return frozenset(collector.names)


@dataclass(frozen=True, order=True)
class EinsumAxisDescriptor:
    """How an axis of an einsum operand is indexed."""


@dataclass(frozen=True, order=True)
class EinsumElementwiseAxis(EinsumAxisDescriptor):
    """The operand axis is indexed by output axis :attr:`dim`."""

    dim: int


@dataclass(frozen=True, order=True)
class EinsumReductionAxis(EinsumAxisDescriptor):
    """The operand axis is indexed by the :attr:`dim`-th reduction index."""

    dim: int


@array_dataclass
class Einsum(DerivedShapeMixin, Array):
    r"""An Einstein summation.

    .. attribute:: access_descriptors

        One tuple of :class:`EinsumAxisDescriptor` per operand, one entry
        per operand axis.

    .. attribute:: args

        The operand :class:`Array`\ s.

    .. attribute:: redn_axis_to_redn_descr

        A mapping from :class:`EinsumReductionAxis` to
        :class:`~pytato.array.ReductionDescriptor`.

    .. attribute:: index_to_access_descr

        The subscript letters the user wrote, mapped to descriptors (for
        display; does not take part in equality).

    .. automethod:: with_tagged_reduction
    """

    access_descriptors: tuple[tuple[EinsumAxisDescriptor, ...], ...]
    args: tuple[Array, ...]
    redn_axis_to_redn_descr: Mapping[EinsumReductionAxis, ReductionDescriptor]
    index_to_access_descr: Mapping[str, EinsumAxisDescriptor] | None = field(
        default=None, compare=False)

    _mapper_method: ClassVar[str] = "map_einsum"

    def _pt_validate(self) -> None:
        if not isinstance(self.redn_axis_to_redn_descr, constantdict):
            object.__setattr__(self, "redn_axis_to_redn_descr",
                               constantdict(self.redn_axis_to_redn_descr))
        if self.index_to_access_descr is not None and not isinstance(
                self.index_to_access_descr, constantdict):
            object.__setattr__(self, "index_to_access_descr",
                               constantdict(self.index_to_access_descr))

    def with_tagged_reduction(self, redn_axis: EinsumReductionAxis | str,
                              tags: ToTagSetConvertible) -> Einsum:
        """A copy of *self* whose
        :class:`~pytato.array.ReductionDescriptor` of the reduction axis
        *redn_axis* is tagged with *tags*.

        :arg redn_axis: an :class:`EinsumReductionAxis`, or the subscript
            letter of a summed index.
        :raises ~pytato.diagnostic.EinsumSpecError: if *redn_axis* is a
            letter that is not a summed index of the subscripts.
        :raises ValueError: if *redn_axis* is not a reduction axis.
        """
        if isinstance(redn_axis, str):
            index = redn_axis
            descr = (self.index_to_access_descr or {}).get(index)
            if not isinstance(descr, EinsumReductionAxis):
                summed = sorted(
                    k for k, d in (self.index_to_access_descr or {}).items()
                    if isinstance(d, EinsumReductionAxis))
                raise EinsumSpecError(
                    f"'redn_axis': '{index}' is not a summed index of the "
                    f"einsum (its summed indices are {summed})")
            redn_axis = descr
        if not isinstance(redn_axis, EinsumReductionAxis):
            raise InvalidArgumentTypeError(
                "'redn_axis' must be an EinsumReductionAxis or a "
                f"str, got {type(redn_axis).__name__}")
        if redn_axis not in self.reduction_axes:
            raise InvalidArgumentError(f"'redn_axis': {redn_axis} is not a reduction "
                                       f"axis of the einsum ({self.reduction_axes})")
        old = self.redn_axis_to_redn_descr.get(redn_axis, ReductionDescriptor())
        return dataclasses.replace(
            self, redn_axis_to_redn_descr=constantdict({
                **self.redn_axis_to_redn_descr, redn_axis: old.tagged(tags)}))

    def _axis_length(self, descr: EinsumAxisDescriptor) -> ShapeComponent:
        length: ShapeComponent = 1
        for acc, arg in zip(self.access_descriptors, self.args, strict=True):
            for d, n in zip(acc, arg.shape, strict=True):
                if d == descr and not is_one(n):
                    return n
                if d == descr:
                    length = n
        return length

    def _pt_compute_shape(self) -> ShapeType:
        dims = sorted({d.dim for acc in self.access_descriptors for d in acc
                       if isinstance(d, EinsumElementwiseAxis)})
        return tuple(self._axis_length(EinsumElementwiseAxis(i))
                     for i in range(len(dims)))

    @property
    def reduction_axes(self) -> tuple[EinsumReductionAxis, ...]:
        """The reduction axes, sorted."""
        return tuple(sorted({d for acc in self.access_descriptors for d in acc
                             if isinstance(d, EinsumReductionAxis)}))

    def reduction_axis_length(self, axis: EinsumReductionAxis) -> ShapeComponent:
        """The extent of reduction axis *axis*."""
        return self._axis_length(axis)

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.result_type(*(a.dtype for a in self.args))
