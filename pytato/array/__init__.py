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
from typing import Any as _Any, TypeVar as _TypeVar

from pytato.array.base import Axis as _Axis, array_dataclass
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

#: The functions of the front end that the reference pytato defines in
#: :mod:`pytato.array` (imported from :mod:`pytato.frontend` on first use,
#: as the front end imports this package).
_FRONTEND_NAMES = {
    "arange": "creation", "eye": "creation", "full": "creation",
    "ones": "creation", "zeros": "creation",
    "broadcast_to": "shape_ops", "concatenate": "shape_ops",
    "expand_dims": "shape_ops", "reshape": "shape_ops", "roll": "shape_ops",
    "squeeze": "shape_ops", "stack": "shape_ops", "transpose": "shape_ops",
    "dot": "linalg", "einsum": "linalg", "matmul": "linalg", "vdot": "linalg",
    "equal": "elementwise", "not_equal": "elementwise",
    "greater": "elementwise", "greater_equal": "elementwise",
    "less": "elementwise", "less_equal": "elementwise",
    "logical_and": "elementwise", "logical_or": "elementwise",
    "logical_not": "elementwise", "maximum": "elementwise",
    "minimum": "elementwise",
    "where": "misc",
}


def __getattr__(name: str) -> _Any:
    module = _FRONTEND_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'pytato.array' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"pytato.frontend.{module}"), name)
    globals()[name] = value
    return value


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
