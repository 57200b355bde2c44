"""The numpy-like methods and operators of :class:`~pytato.array.Array`,
attached by the front end.

:mod:`pytato.array` defines the node classes and imports nothing from the
front end; the front end, which builds on them, defines here the methods
that call its functions (``a + b``, ``a[i]``, :meth:`~pytato.array.Array.sum`,
:attr:`~pytato.array.Array.T`, ...) and installs them on
:class:`~pytato.array.Array` when :mod:`pytato.frontend` is imported.
Importing any module of pytato imports :mod:`pytato` first, which imports
the front end, so every array has these methods whichever path its class
was imported from.

The front end also attaches the functions that the reference pytato defines
in :mod:`pytato.array` (:func:`pytato.array.zeros`, ...) to that module,
and :meth:`~pytato.array.sparse.SparseMatrix.to_dense` to sparse matrices.

.. autofunction:: install
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt

import pytato.array as _array_pkg
from pytato.array.base import Array, ArrayOrScalar, AxesLike, Operand, ShapeLike
from pytato.array.sparse import SparseMatrix, sparse_matmul
from pytato.frontend import (
    creation,
    elementwise,
    indexing,
    linalg,
    math as pt_math,
    misc,
    reductions,
    shape_ops,
)


# {{{ methods and properties

def _T(self: Array) -> Array:
    """The transpose."""
    return shape_ops.transpose(self)


def _real(self: Array) -> Array:
    """The real part (see :func:`pytato.real`)."""
    return cast("Array", pt_math.real(self))


def _imag(self: Array) -> Array:
    """The imaginary part (see :func:`pytato.imag`)."""
    return cast("Array", pt_math.imag(self))


def conj(self: Array) -> Array:
    """The complex conjugate."""
    return cast("Array", pt_math.conj(self))


def __getitem__(self: Array, idx: object) -> Array:
    return indexing.index(self, idx)


def astype(self: Array, dtype: npt.DTypeLike) -> Array:
    """Element-wise conversion to *dtype*."""
    return cast("Array", pt_math.astype(self, dtype))


def reshape(self: Array, *shape: ShapeLike, order: str = "C") -> Array:
    """Reshape to *shape* (which may contain one -1)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return shape_ops.reshape(self, shape, order=order)


def transpose(self: Array, *axes: AxesLike) -> Array:
    """Permute axes (reverse them if none are given)."""
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return shape_ops.transpose(self, axes or None)


def __abs__(self: Array) -> Array:
    return cast("Array", pt_math.abs(self))


def __neg__(self: Array) -> Array:
    return cast("Array", elementwise.negative(self))


def __invert__(self: Array) -> Array:
    return cast("Array", elementwise.invert(self))


def __matmul__(self: Array, other: Operand) -> Array:
    return linalg.matmul(self, other)


def __rmatmul__(self: Array, other: Operand) -> Array:
    return linalg.matmul(other, self)


def sum(self: Array, axis: AxesLike = None) -> Array:
    return reductions.sum(self, axis)


def max(self: Array, axis: AxesLike = None) -> Array:
    return reductions.amax(self, axis)


def min(self: Array, axis: AxesLike = None) -> Array:
    return reductions.amin(self, axis)


def all(self: Array, axis: int | tuple[int, ...] | None = None) -> Array:
    """Whether all elements over *axis* are nonzero (see
    :func:`pytato.all`)."""
    return reductions.all(self, axis)


def any(self: Array, axis: int | tuple[int, ...] | None = None) -> Array:
    """Whether any element over *axis* is nonzero (see
    :func:`pytato.any`)."""
    return reductions.any(self, axis)

# }}}


# {{{ operators

def _binary(op: str, reflected: bool = False
            ) -> Callable[[Array, Operand], ArrayOrScalar | np.ndarray]:
    fn = getattr(elementwise, op)

    def method(self: Array, other: Operand) -> ArrayOrScalar | np.ndarray:
        if not elementwise.is_operand(other):
            return NotImplemented
        if isinstance(other, np.ndarray) and other.dtype == object:
            # an object array (e.g. an array container of arrays): apply the
            # operation to each of its elements, as numpy does for objects
            result = np.empty(other.shape, dtype=object)
            for idx in np.ndindex(other.shape):
                result[idx] = (fn(other[idx], self) if reflected
                               else fn(self, other[idx]))
            return result
        return fn(other, self) if reflected else fn(self, other)
    method.__name__ = f"__{'r' if reflected else ''}{op}__"
    return method


_ARITHMETIC = (
    ("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
    ("truediv", "true_divide"), ("floordiv", "floor_divide"),
    ("mod", "remainder"), ("pow", "power"),
    ("and", "bitwise_and"), ("or", "bitwise_or"),
    ("xor", "bitwise_xor"), ("lshift", "left_shift"),
    ("rshift", "right_shift"))

_COMPARISONS = (
    ("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
    ("ge", "greater_equal"))

_power = _binary("power")


def __pow__(self: Array, other: Operand) -> ArrayOrScalar | np.ndarray:
    # numpy's ``**`` computes ``b ** 2`` as ``square(b)``: int8 for booleans,
    # and for complex numbers the product z*z (whose signs of zeros differ
    # from power(z, 2)'s)
    if self.dtype.kind in "bfc" and type(other) is int and other == 2:
        return cast("Array", pt_math.square(self))
    # and ``x ** 0.5`` as ``sqrt(x)`` (they differ at -0.0 and infinities)
    if self.dtype.kind in "fc" and type(other) is float and other == 0.5:
        return cast("Array", pt_math.sqrt(self))
    # and ``x ** -1`` as ``reciprocal(x)`` (for complex x they differ at
    # infinities: numpy's power multiplies by 1 first)
    if self.dtype.kind in "fc" and type(other) is int and other == -1:
        return cast("Array", pt_math.reciprocal(self))
    return _power(self, other)

# }}}


def to_dense(self: SparseMatrix) -> Array:
    """The dense :class:`~pytato.Array` of the matrix (the product with
    an identity matrix)."""
    return sparse_matmul(self, creation.eye(self.shape[1], dtype=self.dtype))


#: The functions of the front end that the reference pytato defines in
#: :mod:`pytato.array`.
_REFERENCE_ARRAY_NAMES = {
    creation: ("arange", "eye", "full", "ones", "zeros"),
    shape_ops: ("broadcast_to", "concatenate", "expand_dims", "reshape",
                "roll", "squeeze", "stack", "transpose"),
    linalg: ("dot", "einsum", "matmul", "vdot"),
    elementwise: ("equal", "not_equal", "greater", "greater_equal", "less",
                  "less_equal", "logical_and", "logical_or", "logical_not",
                  "maximum", "minimum"),
    misc: ("where",),
}


def install() -> None:
    """Attach the methods and operators above to
    :class:`~pytato.array.Array` (and
    :meth:`~pytato.array.sparse.SparseMatrix.to_dense` to sparse matrices),
    and the reference pytato's front-end names to :mod:`pytato.array`.
    Called once, when :mod:`pytato.frontend` is imported."""
    for name, value in [
            ("T", property(_T)), ("real", property(_real)),
            ("imag", property(_imag)), ("conj", conj), ("conjugate", conj),
            ("__getitem__", __getitem__), ("astype", astype),
            ("reshape", reshape), ("transpose", transpose),
            ("__abs__", __abs__), ("__neg__", __neg__),
            ("__invert__", __invert__), ("__matmul__", __matmul__),
            ("__rmatmul__", __rmatmul__), ("sum", sum), ("max", max),
            ("min", min), ("all", all), ("any", any), ("__pow__", __pow__)]:
        setattr(Array, name, value)
    for op, fname in _ARITHMETIC:
        if op != "pow":  # (numpy's special cases of ``**``: __pow__ above)
            setattr(Array, f"__{op}__", _binary(fname))
        setattr(Array, f"__r{op}__", _binary(fname, reflected=True))
    for op, fname in _COMPARISONS:
        setattr(Array, f"__{op}__", _binary(fname))

    SparseMatrix.to_dense = to_dense  # type: ignore[method-assign]

    for module, names in _REFERENCE_ARRAY_NAMES.items():
        for name in names:
            setattr(_array_pkg, name, getattr(module, name))


# vim: foldmethod=marker
