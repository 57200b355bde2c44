"""Computing nodes: :class:`IndexLambda` and :class:`Einsum`.

.. autoclass:: IndexLambda
.. autoclass:: EinsumAxisDescriptor
.. autoclass:: EinsumElementwiseAxis
.. autoclass:: EinsumReductionAxis
.. autoclass:: Einsum
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from constantdict import constantdict

from pytato.array.base import (
    Array,
    DerivedShapeMixin,
    ReductionDescriptor,
    ShapeComponent,
    ShapeType,
    array_dataclass,
)
from pytato.array.shape import is_one
from pytato.scalar_expr import ScalarExpression


@array_dataclass
class IndexLambda(Array):
    r"""An array whose element at ``(_0, _1, ...)`` is the scalar expression
    :attr:`expr`.

    .. attribute:: expr

        A :mod:`pymbolic` expression in the indices ``_0, _1, ...``, names
        of :attr:`bindings` (subscripted by index expressions, or bare for
        0-d bindings), and reduction indices of
        :class:`~pytato.scalar_expr.Reduce` subexpressions.

    .. attribute:: shape
    .. attribute:: dtype
    .. attribute:: bindings

        A mapping from names to :class:`Array`\ s.

    .. attribute:: var_to_reduction_descr

        A mapping from reduction index names to
        :class:`~pytato.array.ReductionDescriptor`.
    """

    expr: ScalarExpression
    shape: ShapeType
    dtype: np.dtype[Any]
    bindings: Mapping[str, Array]
    var_to_reduction_descr: Mapping[str, ReductionDescriptor] = constantdict()

    _mapper_method: ClassVar[str] = "map_index_lambda"

    def _pt_validate(self) -> None:
        if not isinstance(self.bindings, constantdict):
            object.__setattr__(self, "bindings", constantdict(self.bindings))
        if not isinstance(self.var_to_reduction_descr, constantdict):
            object.__setattr__(self, "var_to_reduction_descr",
                               constantdict(self.var_to_reduction_descr))


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
    def dtype(self) -> np.dtype[Any]:
        return np.result_type(*(a.dtype for a in self.args))
