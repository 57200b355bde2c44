"""pytato: lazy, numpy-like array computations compiled to loopy/OpenCL.

The public names are re-exported here; see the documentation of each
submodule for details.
"""

from __future__ import annotations

from numpy import dtype

from pytato import cmath, scalar_expr, stringifier, tags, transform
from pytato.array import (
    AbstractResultWithNamedArrays,
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    Array,
    Axis,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    DataWrapper,
    DictOfNamedArrays,
    Einsum,
    IndexBase,
    IndexLambda,
    IndexRemappingBase,
    InputArgumentBase,
    NamedArray,
    Placeholder,
    ReductionDescriptor,
    Reshape,
    Roll,
    SizeParam,
    Stack,
    make_data_wrapper,
    make_dict_of_named_arrays,
    make_placeholder,
    make_size_param,
)
from pytato.diagnostic import PytatoError
from pytato.frontend.elementwise import (
    add,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    divide,
    equal,
    floor_divide,
    greater,
    greater_equal,
    left_shift,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    remainder,
    right_shift,
    subtract,
    true_divide,
)
from pytato.tags import Tag, UniqueTag, set_traceback_tag_enabled
from pytato.transform import (
    Mapper,
)


# {{{ front end (creation, math, reductions, shape ops, indexing, linalg)
# isort: split
from pytato.frontend.creation import (
    arange,
    eye,
    full,
    full_like,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from pytato.frontend.indexing import index
from pytato.frontend.linalg import dot, einsum, matmul, outer, vdot
from pytato.frontend.math import (
    abs,
    arccos,
    arcsin,
    arctan,
    arctan2,
    astype,
    ceil,
    conj,
    conjugate,
    cos,
    cosh,
    exp,
    floor,
    imag,
    isfinite,
    isinf,
    isnan,
    log,
    log10,
    real,
    reciprocal,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
)
from pytato.frontend.misc import where
from pytato.frontend.reductions import all, amax, amin, any, prod, sum
from pytato.frontend.shape_ops import (
    broadcast_to,
    concatenate,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    roll,
    squeeze,
    stack,
    swapaxes,
    transpose,
)
from pytato.pad import pad


# }}}

# {{{ targets
# isort: split
from pytato.target import Target
from pytato.target.loopy import (
    BoundPyOpenCLExecutable,
    BoundPyOpenCLProgram,
    ImplSubstitution,
    LoopyPyOpenCLTarget,
    LoopyTarget,
    generate_loopy,
)
from pytato.target.python import generate_jax, generate_numpy
from pytato.transform.lower_to_index_lambda import to_index_lambda


# }}}

# {{{ transforms, analysis, visualization
# isort: split
from pytato import analysis, function, visualization
from pytato.transform.dead_code import eliminate_dead_code
from pytato.transform.deduplicate import deduplicate
from pytato.transform.einsum_rewrites import (
    apply_distributive_property_to_einsums,
    rewrite_einsums_with_no_broadcasts,
)
from pytato.transform.materialize import materialize_with_mpms
from pytato.transform.precompute import precompute_subexpressions
from pytato.transform.unify_axes import unify_axes_tags
from pytato.visualization import (
    get_dot_graph,
    get_dot_graph_from_partition,
    show_dot_graph,
    show_fancy_placeholder_data_flow,
)


# }}}

# {{{ calls, loopy interop, sparse, distributed
# isort: split
from pytato import loopy, raising, reductions, utils
from pytato.array.sparse import (
    CSRMatmul,
    CSRMatrix,
    SparseMatmul,
    SparseMatrix,
    make_csr_matrix,
    sparse_matmul,
)
from pytato.distributed import (
    DistributedGraphPart,
    DistributedGraphPartition,
    DistributedRecv,
    DistributedSend,
    DistributedSendRefHolder,
    execute_distributed_partition,
    find_distributed_partition,
    generate_code_for_partition,
    make_distributed_recv,
    make_distributed_send,
    make_distributed_send_ref_holder,
    number_distributed_tags,
    staple_distributed_send,
    verify_distributed_partition,
)
from pytato.function import (
    Call,
    FunctionDefinition,
    NamedCallResult,
    trace_call,
)
from pytato.loopy import LoopyCall
from pytato.scalar_functions import call_scalar_function, register_scalar_function
from pytato.transform.calls import inline_calls, tag_all_calls_to_be_inlined


# }}}

# {{{ debugging

# isort: split
import logging as _logging


#: Whether :func:`set_debug_enabled` has switched debugging output on.
DEBUG_ENABLED = False


def set_debug_enabled(flag: bool) -> None:
    """Switch :mod:`pytato`'s debugging output on or off: when on, the
    ``pytato`` loggers (code generation and the program store among them)
    emit their debug messages (the logger's level is set to
    :data:`logging.DEBUG`, and back to unset when switched off).

    :arg flag: whether to switch debugging on.
    """
    global DEBUG_ENABLED
    DEBUG_ENABLED = bool(flag)
    _logging.getLogger("pytato").setLevel(
        _logging.DEBUG if DEBUG_ENABLED else _logging.NOTSET)

# }}}

# {{{ public names

__all__ = [
    "DEBUG_ENABLED",
    "AbstractResultWithNamedArrays",
    "AdvancedIndexInContiguousAxes",
    "AdvancedIndexInNoncontiguousAxes",
    "Array",
    "Axis",
    "AxisPermutation",
    "BasicIndex",
    "BoundPyOpenCLExecutable",
    "BoundPyOpenCLProgram",
    "CSRMatmul",
    "CSRMatrix",
    "Call",
    "Concatenate",
    "DataWrapper",
    "DictOfNamedArrays",
    "DistributedGraphPart",
    "DistributedGraphPartition",
    "DistributedRecv",
    "DistributedSend",
    "DistributedSendRefHolder",
    "Einsum",
    "FunctionDefinition",
    "ImplSubstitution",
    "IndexBase",
    "IndexLambda",
    "IndexRemappingBase",
    "InputArgumentBase",
    "LoopyCall",
    "LoopyPyOpenCLTarget",
    "LoopyTarget",
    "Mapper",
    "NamedArray",
    "NamedCallResult",
    "Placeholder",
    "PytatoError",
    "ReductionDescriptor",
    "Reshape",
    "Roll",
    "SizeParam",
    "SparseMatmul",
    "SparseMatrix",
    "Stack",
    "Tag",
    "Target",
    "UniqueTag",
    "abs",
    "add",
    "all",
    "amax",
    "amin",
    "analysis",
    "any",
    "apply_distributive_property_to_einsums",
    "arange",
    "arccos",
    "arcsin",
    "arctan",
    "arctan2",
    "astype",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "broadcast_to",
    "call_scalar_function",
    "ceil",
    "cmath",
    "concatenate",
    "conj",
    "conjugate",
    "cos",
    "cosh",
    "deduplicate",
    "divide",
    "dot",
    "dtype",
    "einsum",
    "eliminate_dead_code",
    "equal",
    "execute_distributed_partition",
    "exp",
    "expand_dims",
    "eye",
    "find_distributed_partition",
    "floor",
    "floor_divide",
    "full",
    "full_like",
    "function",
    "generate_code_for_partition",
    "generate_jax",
    "generate_loopy",
    "generate_numpy",
    "get_dot_graph",
    "get_dot_graph_from_partition",
    "greater",
    "greater_equal",
    "imag",
    "index",
    "inline_calls",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "loopy",
    "make_csr_matrix",
    "make_data_wrapper",
    "make_dict_of_named_arrays",
    "make_distributed_recv",
    "make_distributed_send",
    "make_distributed_send_ref_holder",
    "make_placeholder",
    "make_size_param",
    "materialize_with_mpms",
    "matmul",
    "maximum",
    "minimum",
    "moveaxis",
    "multiply",
    "negative",
    "not_equal",
    "number_distributed_tags",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "power",
    "precompute_subexpressions",
    "prod",
    "raising",
    "ravel",
    "real",
    "reciprocal",
    "reductions",
    "register_scalar_function",
    "remainder",
    "reshape",
    "rewrite_einsums_with_no_broadcasts",
    "right_shift",
    "roll",
    "scalar_expr",
    "set_debug_enabled",
    "set_traceback_tag_enabled",
    "show_dot_graph",
    "show_fancy_placeholder_data_flow",
    "sign",
    "sin",
    "sinh",
    "sparse_matmul",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "staple_distributed_send",
    "stringifier",
    "subtract",
    "sum",
    "swapaxes",
    "tag_all_calls_to_be_inlined",
    "tags",
    "tan",
    "tanh",
    "to_index_lambda",
    "trace_call",
    "transform",
    "transpose",
    "true_divide",
    "unify_axes_tags",
    "utils",
    "vdot",
    "verify_distributed_partition",
    "visualization",
    "where",
    "zeros",
    "zeros_like",
]

# }}}

# vim: foldmethod=marker
