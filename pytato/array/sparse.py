"""Sparse matrices and their products with dense arrays.

A :class:`CSRMatrix` stores a matrix in compressed sparse row form: row
``i`` holds the values ``elem_values[row_starts[i]:row_starts[i+1]]`` in
the columns ``elem_col_indices[row_starts[i]:row_starts[i+1]]`` (repeated
columns add up). Sparse matrices are graph nodes but not arrays: they have
no element-wise arithmetic; :func:`sparse_matmul` (or ``A @ x``) multiplies
one with a dense vector or matrix, giving a dense :class:`CSRMatmul`.

Assumptions on the index arrays:

* ``0 <= elem_col_indices[k] < ncols`` for all ``k``;
* ``0 <= row_starts[0]``, ``row_starts`` is non-decreasing and
  ``row_starts[nrows] <= nnz``.

:func:`make_csr_matrix` checks them when the index arrays are concrete
numpy data (data wrappers). Index data known only at run time is checked
by generated OpenCL code, which never reads outside an array: the rows of
the product that a violation affects are NaN (the smallest integer for
integer results, *True* for booleans). Tag the matrix with
:class:`CheckIndexBounds` to have the NumPy target check them too (it then
raises :class:`~pytato.diagnostic.IndexOutOfBoundsError`).

.. autoclass:: SparseMatrix
.. autoclass:: CSRMatrix
.. autoclass:: SparseMatmul
.. autoclass:: CSRMatmul
.. autoclass:: CheckIndexBounds
.. autofunction:: make_csr_matrix
.. autofunction:: sparse_matmul
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from pytools.tag import Tag, ToTagSetConvertible, UniqueTag

from pytato.array.base import (
    Array,
    Axis,
    DerivedShapeMixin,
    ReductionDescriptor,
    ShapeComponent,
    ShapeLike,
    ShapeType,
    _TaggableMixin,
    array_dataclass,
    check_unique_tags,
    normalize_tags,
)
from pytato.array.constructors import as_array
from pytato.array.inputs import DataWrapper
from pytato.array.nonarray import DataclassGraphNode
from pytato.array.shape import (
    are_shape_components_equal,
    format_shape,
    normalize_shape,
)
from pytato.diagnostic import (
    DTypeError,
    IndexOutOfBoundsError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    ShapeMismatchError,
    UnsupportedFeatureError,
    UnsupportedOperationError,
)


__all__ = [
    "CSRMatmul", "CSRMatrix", "CheckIndexBounds", "SparseMatmul",
    "SparseMatrix", "make_csr_matrix", "sparse_matmul",
]


@dataclass(frozen=True)
class CheckIndexBounds(UniqueTag):
    """Tags a :class:`SparseMatrix` whose index arrays generated code
    should check (see the module documentation)."""


@dataclass(frozen=True, eq=False, repr=False)
class SparseMatrix(DataclassGraphNode, _TaggableMixin):
    """Abstract base class of sparse matrices: 2-d, with :attr:`shape`,
    :attr:`dtype`, :attr:`axes` and :attr:`tags`, and no arithmetic other
    than products with dense arrays (``A @ x``). Its fields, which
    subclasses extend, are upstream's: ``(shape, dtype, *, axes, tags,
    non_equality_tags)``.

    .. automethod:: to_dense
    """

    shape: ShapeType
    dtype: np.dtype[np.generic]
    _: KW_ONLY
    axes: tuple[Axis, ...] = (Axis(), Axis())
    tags: frozenset[Tag] = frozenset()
    non_equality_tags: frozenset[Tag] = frozenset()

    @property
    def ndim(self) -> int:
        return 2

    def __matmul__(self, other: object) -> Array:
        return sparse_matmul(self, other)

    def __rmatmul__(self, other: object) -> Array:
        raise UnsupportedOperationError(
            "dense @ sparse is not supported; compute (A.T @ x.T).T with a "
            "sparse matrix of the transpose instead")

    def __array_ufunc__(self, *args: object, **kwargs: object) -> Any:
        # numpy must not try to treat a sparse matrix as an object array
        return NotImplemented

    if TYPE_CHECKING:
        # attached by the front end (pytato.frontend.array_methods), as it
        # needs :func:`pytato.eye`
        def to_dense(self) -> Array:
            """The dense :class:`~pytato.Array` of the matrix (the product
            with an identity matrix)."""


def _as_index_vector(x: object, argname: str) -> Array:
    x = as_array(x, argname)
    if x.ndim != 1:
        raise ShapeMismatchError(f"'{argname}' must be 1-d, got shape "
                                 f"{format_shape(x.shape)}")
    return x


@dataclass(frozen=True, eq=False, repr=False)
class CSRMatrix(SparseMatrix):
    """A sparse matrix in compressed sparse row form (see the module
    documentation).

    .. attribute:: shape
    .. attribute:: dtype

        The dtype of the matrix: that of :attr:`elem_values`.

    .. attribute:: elem_values
    .. attribute:: elem_col_indices
    .. attribute:: row_starts
    .. attribute:: axes
    .. attribute:: tags
    .. attribute:: non_equality_tags
    """

    elem_values: Array
    elem_col_indices: Array
    row_starts: Array

    _mapper_method: ClassVar[str] = "map_csr_matrix"

    def _pt_validate(self) -> None:
        dtype = np.dtype(self.dtype)
        if dtype != self.elem_values.dtype:
            raise DTypeError(
                f"CSRMatrix: 'dtype' is {dtype}, but 'elem_values' has dtype "
                f"{self.elem_values.dtype}")
        object.__setattr__(self, "dtype", dtype)

    @property
    def nnz(self) -> ShapeComponent:
        """The number of stored elements (an int or a symbolic size)."""
        return self.elem_values.shape[0]

    def __repr__(self) -> str:
        return (f"CSRMatrix(shape={format_shape(self.shape)}, "
                f"dtype={self.dtype}, nnz={self.nnz})")


class SparseMatmul(Array):
    """Abstract base class of products of a sparse matrix with a dense
    array.

    .. attribute:: matrix
    .. attribute:: array
    """

    matrix: SparseMatrix
    array: Array


#: The names the kernel of a CSR product uses
#: (:mod:`pytato.target.loopy.lower.sparse`): not available as
#: :attr:`CSRMatmul.reduction_var`.
_CSR_KERNEL_NAMES = frozenset({
    "i", "c", "lo", "hi", "row_ok", "nrows", "ncols", "nnz", "nvec",
    "row_starts", "values", "col_indices", "x", "y"})


@array_dataclass
class CSRMatmul(DerivedShapeMixin, SparseMatmul):
    """The dense product of the :class:`CSRMatrix` :attr:`matrix` with the
    1-d or 2-d :class:`~pytato.Array` :attr:`array`.

    .. attribute:: reduction_var

        The name of the index of the reduction over a row's stored
        elements (the reduction iname in generated code); an identifier.

    .. attribute:: reduction_descr

        The :class:`~pytato.array.ReductionDescriptor` of that reduction:
        its tags are attached to the reduction iname in generated
        :mod:`loopy` code, as for the reductions of
        :class:`~pytato.array.IndexLambda`.
    """

    matrix: CSRMatrix
    array: Array
    reduction_var: str = "_r0"
    reduction_descr: ReductionDescriptor = field(
        default_factory=ReductionDescriptor, kw_only=True)

    _mapper_method: ClassVar[str] = "map_csr_matmul"

    def _pt_validate(self) -> None:
        if not (isinstance(self.reduction_var, str)
                and self.reduction_var.isidentifier()):
            raise InvalidArgumentError("CSRMatmul: 'reduction_var' must be an "
                                       f"identifier, got {self.reduction_var!r}")
        if self.reduction_var in _CSR_KERNEL_NAMES:
            raise InvalidArgumentError(
                f"CSRMatmul: 'reduction_var' {self.reduction_var!r} is a name "
                "used by the product's kernel; choose another")
        if not isinstance(self.reduction_descr, ReductionDescriptor):
            raise InvalidArgumentTypeError("CSRMatmul: 'reduction_descr' must be a "
                                           "ReductionDescriptor, got "
                                           f"{type(self.reduction_descr).__name__}")

    def _pt_compute_shape(self) -> ShapeType:
        return (self.matrix.shape[0], *self.array.shape[1:])

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return np.result_type(self.matrix.dtype, self.array.dtype)


def _check_concrete_indices(shape: ShapeType, nnz: object, cols: Array,
                            row_starts: Array) -> None:
    """Check index data that is concrete (numpy data in data wrappers)."""
    if isinstance(cols, DataWrapper) and isinstance(cols.data, np.ndarray):
        c = cols.data
        ncols = shape[1]
        if c.size and (c.min() < 0 or (isinstance(ncols, int)
                                       and c.max() >= ncols)):
            bad = int(c.min()) if c.min() < 0 else int(c.max())
            raise IndexOutOfBoundsError(
                f"make_csr_matrix: 'elem_col_indices' holds column {bad}, out "
                f"of bounds for a matrix of shape {format_shape(shape)}")
    if isinstance(row_starts, DataWrapper) and isinstance(row_starts.data,
                                                          np.ndarray):
        r = row_starts.data
        if r.size and r[0] < 0:
            raise IndexOutOfBoundsError(
                f"make_csr_matrix: 'row_starts' starts at {int(r[0])} < 0")
        if r.size > 1 and np.any(np.diff(r) < 0):
            i = int(np.argmax(np.diff(r) < 0))
            raise IndexOutOfBoundsError(
                "make_csr_matrix: 'row_starts' must be non-decreasing, but "
                f"row_starts[{i}] = {int(r[i])} > row_starts[{i + 1}] = "
                f"{int(r[i + 1])}")
        if r.size and isinstance(nnz, int) and r[-1] > nnz:
            raise IndexOutOfBoundsError(
                f"make_csr_matrix: 'row_starts' ends at {int(r[-1])}, beyond "
                f"the {nnz} stored elements")


def make_csr_matrix(shape: ShapeLike, elem_values: object, elem_col_indices: object,
                    row_starts: object, tags: Tag | Iterable[Tag] = frozenset(),
                    axes: Iterable[Axis | ToTagSetConvertible] | None = None
                    ) -> CSRMatrix:
    """A :class:`CSRMatrix` of *shape* (see the module documentation).

    :arg elem_values: the 1-d array of the stored values (numpy arrays are
        wrapped as data).
    :arg elem_col_indices: the 1-d integer array of their columns.
    :arg row_starts: the 1-d integer array (of length ``shape[0] + 1``) of
        the index in *elem_values* where each row starts.
    :arg tags: tags of the matrix.
    :arg axes: the two axes of the matrix: :class:`~pytato.array.Axis`
        objects, or tag sets (each a tag, an iterable of tags, or None) from
        which axes are made.
    :raises pytato.diagnostic.ShapeMismatchError: for inconsistent lengths.
    :raises pytato.diagnostic.IndexOutOfBoundsError: for concrete index
        data violating the assumptions.
    """
    shape = normalize_shape(shape)
    if len(shape) != 2:
        raise ShapeMismatchError(f"make_csr_matrix: 'shape' must be 2-d, got "
                                 f"{format_shape(shape)}")
    values = _as_index_vector(elem_values, "elem_values")
    cols = _as_index_vector(elem_col_indices, "elem_col_indices")
    starts = _as_index_vector(row_starts, "row_starts")
    for name, ary in [("elem_col_indices", cols), ("row_starts", starts)]:
        if ary.dtype.kind not in "iu":
            raise DTypeError(f"make_csr_matrix: '{name}' must have an integer "
                             f"dtype, got {ary.dtype}")
    if values.dtype.kind not in "biufc":
        raise DTypeError(f"make_csr_matrix: 'elem_values' has unsupported dtype "
                         f"{values.dtype}")
    if not are_shape_components_equal(cols.shape[0], values.shape[0]):
        raise ShapeMismatchError(
            f"make_csr_matrix: 'elem_col_indices' has shape "
            f"{format_shape(cols.shape)}, but 'elem_values' has shape "
            f"{format_shape(values.shape)}")
    if not are_shape_components_equal(starts.shape[0], shape[0] + 1):
        raise ShapeMismatchError(
            f"make_csr_matrix: 'row_starts' must have shape ({shape[0] + 1},) "
            f"for a matrix of shape {format_shape(shape)}, got "
            f"{format_shape(starts.shape)}")
    _check_concrete_indices(shape, values.shape[0], cols, starts)
    tags = check_unique_tags(normalize_tags(tags), "CSRMatrix")
    return CSRMatrix(shape, values.dtype, values, cols, starts,
                     axes=_csr_axes(axes), tags=tags)


def _csr_axes(axes: Iterable[Axis | ToTagSetConvertible] | None
              ) -> tuple[Axis, ...]:
    """Normalize the *axes* argument of :func:`make_csr_matrix`: two
    :class:`~pytato.array.Axis` objects or two tag sets (a tag, an iterable
    of tags, or None each)."""
    if axes is None:
        return (Axis(), Axis())
    try:
        entries = tuple(axes)
    except TypeError:
        raise InvalidArgumentTypeError(
            "make_csr_matrix: 'axes' must be a sequence of 2 Axis objects or "
            f"tag sets, got {axes!r}") from None
    if len(entries) != 2:
        raise InvalidArgumentError(
            "make_csr_matrix: 'axes' must have 2 entries (one per matrix "
            f"axis), got {len(entries)}")
    result = []
    for i, entry in enumerate(entries):
        if isinstance(entry, Axis):
            result.append(entry)
            continue
        try:
            axis_tags = normalize_tags(entry)
        except TypeError:
            raise InvalidArgumentTypeError(
                f"make_csr_matrix: 'axes[{i}]' must be an Axis, a tag or an "
                f"iterable of tags, got {entry!r}") from None
        result.append(Axis(check_unique_tags(axis_tags, f"axis {i}")))
    return tuple(result)


def sparse_matmul(x1: SparseMatrix, x2: object) -> Array:
    """The dense product ``x1 @ x2`` of the sparse matrix *x1* with the 1-d
    or 2-d array *x2* (numpy arrays are wrapped as data).

    :raises pytato.diagnostic.ShapeMismatchError: if the inner dimensions
        differ or *x2* is not 1-d or 2-d.
    """
    if not isinstance(x1, SparseMatrix):
        raise InvalidArgumentTypeError(
            f"sparse_matmul: 'x1' must be a sparse matrix, got "
            f"{type(x1).__name__}")
    x2 = as_array(x2, "x2")
    if x2.ndim not in (1, 2):
        raise ShapeMismatchError(f"sparse_matmul: 'x2' must be 1-d or 2-d, got "
                                 f"shape {format_shape(x2.shape)}")
    if not are_shape_components_equal(x1.shape[1], x2.shape[0]):
        raise ShapeMismatchError(
            f"sparse_matmul: shapes {format_shape(x1.shape)} ('x1') and "
            f"{format_shape(x2.shape)} ('x2') are not aligned")
    if not isinstance(x1, CSRMatrix):
        raise UnsupportedFeatureError(f"sparse_matmul of {type(x1).__name__}")
    return CSRMatmul(x1, x2)
