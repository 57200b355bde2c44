"""The array graph: node classes and constructors.

See :mod:`pytato.array.base`, :mod:`pytato.array.inputs`,
:mod:`pytato.array.lambdas`, :mod:`pytato.array.remapping`,
:mod:`pytato.array.results` and :mod:`pytato.array.constructors`.
"""

from __future__ import annotations

from pytato.array.base import (
    Array,
    Axis,
    ReductionDescriptor,
    ShapeComponent,
    ShapeType,
    get_children,
)
from pytato.array.constructors import (
    make_data_wrapper,
    make_dict_of_named_arrays,
    make_placeholder,
    make_size_param,
)
from pytato.array.inputs import (
    DataInterface,
    DataWrapper,
    InputArgumentBase,
    Placeholder,
    SizeParam,
)
from pytato.array.lambdas import (
    Einsum,
    EinsumAxisDescriptor,
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
    IndexRemappingBase,
    NormalizedSlice,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.results import (
    AbstractResultWithNamedArrays,
    DictOfNamedArrays,
    NamedArray,
)
from pytato.tags import (
    ImplDefault,
    ImplementationStrategy,
    ImplInlined,
    ImplStored,
)


__all__ = [
    "AbstractResultWithNamedArrays", "AdvancedIndexInContiguousAxes",
    "AdvancedIndexInNoncontiguousAxes", "Array", "Axis", "AxisPermutation",
    "BasicIndex", "Concatenate", "DataInterface", "DataWrapper",
    "DictOfNamedArrays", "Einsum", "EinsumAxisDescriptor",
    "EinsumElementwiseAxis", "EinsumReductionAxis", "ImplDefault",
    "ImplInlined", "ImplStored", "ImplementationStrategy", "IndexBase",
    "IndexLambda", "IndexRemappingBase", "InputArgumentBase", "NamedArray",
    "NormalizedSlice", "Placeholder", "ReductionDescriptor", "Reshape", "Roll",
    "ShapeComponent", "ShapeType", "SizeParam", "Stack", "get_children",
    "make_data_wrapper", "make_dict_of_named_arrays", "make_placeholder",
    "make_size_param",
]


# {{{ names of the reference pytato's pytato.array

# isort: split
from typing import TYPE_CHECKING, Any, TypeVar as _TypeVar

import numpy as np

# (_SuppliedAxesAndTagsMixin: private, used by code written for the reference)
from pytato.array.base import (
    Axis as _Axis,
    _SuppliedAxesAndTagsMixin,
    array_dataclass,
)
from pytato.array.constructors import make_index_lambda
from pytato.array.shape import normalize_shape, shape_is_int_only
from pytato.array.sparse import (
    CSRMatmul,
    CSRMatrix,
    SparseMatmul,
    SparseMatrix,
    make_csr_matrix,
    sparse_matmul,
)
from pytato.tags import set_traceback_tag_enabled


#: The axes of an array: one :class:`~pytato.array.Axis` per dimension.
AxesT = tuple[_Axis, ...]

#: An array or a scalar (type variable for functions returning what they
#: were given).
ArrayOrScalarT = _TypeVar("ArrayOrScalarT")


def _np_result_dtype(*arrays_and_dtypes: Any) -> np.dtype[np.generic]:
    """The dtype of numpy's result for operands *arrays_and_dtypes*
    (dtypes, arrays, scalars): :func:`numpy.result_type`, under the name of
    the reference pytato's helper."""
    return np.result_type(*arrays_and_dtypes)

# The functions of the front end that the reference pytato defines in
# pytato.array (arange, zeros, reshape, where, ...) are attached to this
# package by the front end when it is imported (see
# pytato.frontend.array_methods), as it builds on this package; importing
# any pytato module imports pytato, and so the front end, first.
if TYPE_CHECKING:
    from pytato.frontend.creation import arange, eye, full, ones, zeros
    from pytato.frontend.elementwise import (
        equal,
        greater,
        greater_equal,
        less,
        less_equal,
        logical_and,
        logical_not,
        logical_or,
        maximum,
        minimum,
        not_equal,
    )
    from pytato.frontend.linalg import dot, einsum, matmul, vdot
    from pytato.frontend.misc import where
    from pytato.frontend.shape_ops import (
        broadcast_to,
        concatenate,
        expand_dims,
        reshape,
        roll,
        squeeze,
        stack,
        transpose,
    )


__all__ += [
    "ArrayOrScalarT",
    "AxesT",
    "CSRMatmul",
    "CSRMatrix",
    "SparseMatmul",
    "SparseMatrix",
    "array_dataclass",
    "make_csr_matrix",
    "make_index_lambda",
    "normalize_shape",
    "set_traceback_tag_enabled",
    "shape_is_int_only",
    "sparse_matmul",
]

# }}}

# vim: foldmethod=marker
