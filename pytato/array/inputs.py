"""Input nodes: :class:`Placeholder`, :class:`SizeParam`, :class:`DataWrapper`.

.. autoclass:: InputArgumentBase
.. autoclass:: Placeholder
.. autoclass:: SizeParam
.. autoclass:: DataWrapper
.. autoclass:: DataInterface
"""

from __future__ import annotations

from typing import ClassVar, Protocol

import numpy as np

from pytato.array.base import Array, DerivedShapeMixin, ShapeType, array_dataclass


class DataInterface(Protocol):
    """What concrete data wrapped by :class:`DataWrapper` must provide."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype[np.generic]: ...


class InputArgumentBase(Array):
    """Base class of graph inputs."""


@array_dataclass
class Placeholder(InputArgumentBase):
    """A named input whose data is supplied when the program runs.

    .. attribute:: shape
    .. attribute:: dtype
    .. attribute:: name
    """

    shape: ShapeType
    dtype: np.dtype[np.generic]
    name: str

    _mapper_method: ClassVar[str] = "map_placeholder"
    _is_named_input: ClassVar[bool] = True


@array_dataclass
class SizeParam(DerivedShapeMixin, InputArgumentBase):
    """A named 0-d integer input usable in shapes.

    .. attribute:: name
    """

    name: str

    _mapper_method: ClassVar[str] = "map_size_param"
    _is_named_input: ClassVar[bool] = True

    def _pt_compute_shape(self) -> ShapeType:
        return ()

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.dtype(np.int64)


@array_dataclass
class DataWrapper(InputArgumentBase):
    """Concrete data (a :class:`numpy.ndarray`, a
    :class:`pyopencl.array.Array`, ...) bound into the graph. Equality of
    data is by identity: the data must not be modified after wrapping.

    .. attribute:: data
    .. attribute:: shape
    .. attribute:: name

        An optional name to use for the data in generated code.
    """

    data: DataInterface
    shape: ShapeType
    name: str | None = None

    _mapper_method: ClassVar[str] = "map_data_wrapper"
    _identity_fields: ClassVar[frozenset[str]] = frozenset({"data"})

    @property
    def _is_named_input(self) -> bool:  # type: ignore[override]
        return self.name is not None

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.dtype(self.data.dtype)
