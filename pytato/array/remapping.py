"""Index-remapping nodes: each output element is one element of an input.

.. autoclass:: IndexRemappingBase
.. autoclass:: Stack
.. autoclass:: Concatenate
.. autoclass:: Roll
.. autoclass:: AxisPermutation
.. autoclass:: Reshape
.. autoclass:: NormalizedSlice
.. autoclass:: IndexBase
.. autoclass:: BasicIndex
.. autoclass:: AdvancedIndexInContiguousAxes
.. autoclass:: AdvancedIndexInNoncontiguousAxes
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import numpy as np
from pymbolic.mapper.distributor import DistributeMapper

from pytato.array.base import (
    Array,
    DerivedShapeMixin,
    ShapeComponent,
    ShapeType,
    array_dataclass,
)
from pytato.array.shape import broadcast_shapes, shape_component_to_expr
from pytato.diagnostic import UnsupportedFeatureError
from pytato.scalar_expr import is_integral_scalar


@array_dataclass
class IndexRemappingBase(DerivedShapeMixin, Array):
    """A node whose elements are elements of :attr:`array`."""

    array: Array

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return self.array.dtype


@array_dataclass
class Stack(DerivedShapeMixin, Array):
    r"""Join :attr:`arrays` (of equal shape) along a new axis :attr:`axis`."""

    arrays: tuple[Array, ...]
    axis: int

    _mapper_method: ClassVar[str] = "map_stack"

    def _pt_compute_shape(self) -> ShapeType:
        s = self.arrays[0].shape
        return (*s[:self.axis], len(self.arrays), *s[self.axis:])

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.result_type(*(a.dtype for a in self.arrays))


@array_dataclass
class Concatenate(DerivedShapeMixin, Array):
    r"""Join :attr:`arrays` along the existing axis :attr:`axis`."""

    arrays: tuple[Array, ...]
    axis: int

    _mapper_method: ClassVar[str] = "map_concatenate"

    def _pt_compute_shape(self) -> ShapeType:
        s = self.arrays[0].shape
        total: Any = 0
        for a in self.arrays:
            total = total + a.shape[self.axis]
        return (*s[:self.axis], total, *s[self.axis + 1:])

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.result_type(*(a.dtype for a in self.arrays))


@array_dataclass
class Roll(IndexRemappingBase):
    """:func:`numpy.roll` of :attr:`array` by :attr:`shift` along
    :attr:`axis`."""

    array: Array
    shift: int
    axis: int

    _mapper_method: ClassVar[str] = "map_roll"

    def _pt_compute_shape(self) -> ShapeType:
        return self.array.shape


@array_dataclass
class AxisPermutation(IndexRemappingBase):
    """Output axis ``i`` is axis ``axis_permutation[i]`` of :attr:`array`."""

    array: Array
    axis_permutation: tuple[int, ...]

    _mapper_method: ClassVar[str] = "map_axis_permutation"

    def _pt_compute_shape(self) -> ShapeType:
        return tuple(self.array.shape[i] for i in self.axis_permutation)


@array_dataclass
class Reshape(IndexRemappingBase):
    """:attr:`array` reshaped to :attr:`newshape` in :attr:`order` ("C" or
    "F")."""

    array: Array
    newshape: ShapeType
    order: str = "C"

    _mapper_method: ClassVar[str] = "map_reshape"

    def _pt_compute_shape(self) -> ShapeType:
        return self.newshape


def _constant_if_known(c: ShapeComponent) -> ShapeComponent:
    """*c* as an int if its expression simplifies to a constant."""

    expr = DistributeMapper()(shape_component_to_expr(c))
    return int(expr) if is_integral_scalar(expr) else c


@dataclass(frozen=True)
class NormalizedSlice:
    """A slice with non-negative :attr:`start`, :attr:`stop` (clamped to the
    axis) and a nonzero :attr:`step`; for negative steps, :attr:`stop` may be
    -1 (meaning "through index 0")."""

    start: ShapeComponent
    stop: ShapeComponent
    step: int

    _pt_flatten: ClassVar[bool] = True

    @property
    def length(self) -> ShapeComponent:
        """The number of indices the slice selects."""
        start, stop, step = self.start, self.stop, self.step
        if is_integral_scalar(start) and is_integral_scalar(stop):
            if step > 0:
                return max(0, -(-(stop - start) // step))
            return max(0, -(-(start - stop) // (-step)))
        if step == 1:
            if is_integral_scalar(start) and start == 0:
                return stop
            return _constant_if_known(stop - start)
        if step == -1:
            return _constant_if_known(start - stop)
        raise UnsupportedFeatureError("slices with steps other than +-1 over "
                                      "symbolic extents")


IndexExpr: TypeAlias = "int | NormalizedSlice | Array"


@array_dataclass
class IndexBase(IndexRemappingBase):
    """:attr:`array` indexed by :attr:`indices`, one per axis of
    :attr:`array`: an int, a :class:`NormalizedSlice` or an integer
    :class:`Array`."""

    array: Array
    indices: tuple[IndexExpr, ...]


@array_dataclass
class BasicIndex(IndexBase):
    """Indexing by ints and slices only."""

    array: Array
    indices: tuple[IndexExpr, ...]

    _mapper_method: ClassVar[str] = "map_basic_index"

    def _pt_compute_shape(self) -> ShapeType:
        return tuple(i.length for i in self.indices
                     if isinstance(i, NormalizedSlice))


def _array_index_shape(indices: tuple[object, ...]) -> ShapeType:
    return broadcast_shapes(*(i.shape for i in indices if isinstance(i, Array)))


@array_dataclass
class AdvancedIndexInContiguousAxes(IndexBase):
    """Integer-array indices on adjacent axes: the broadcast index shape
    takes the place of those axes."""

    array: Array
    indices: tuple[IndexExpr, ...]

    _mapper_method: ClassVar[str] = "map_contiguous_advanced_index"

    def _pt_compute_shape(self) -> ShapeType:
        adv = [i for i, idx in enumerate(self.indices)
               if not isinstance(idx, NormalizedSlice)]
        first, last = adv[0], adv[-1]
        # (the indices before the first and after the last array index
        # are slices)
        pre = tuple(i.length for i in self.indices[:first]
                    if isinstance(i, NormalizedSlice))
        post = tuple(i.length for i in self.indices[last + 1:]
                     if isinstance(i, NormalizedSlice))
        return (*pre, *_array_index_shape(self.indices), *post)


@array_dataclass
class AdvancedIndexInNoncontiguousAxes(IndexBase):
    """Integer-array indices on non-adjacent axes: the broadcast index shape
    comes first, then the sliced axes."""

    array: Array
    indices: tuple[IndexExpr, ...]

    _mapper_method: ClassVar[str] = "map_non_contiguous_advanced_index"

    def _pt_compute_shape(self) -> ShapeType:
        return (*_array_index_shape(self.indices),
                *(i.length for i in self.indices
                  if isinstance(i, NormalizedSlice)))
