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
