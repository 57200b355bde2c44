"""Constructors of input nodes and result containers.

.. autofunction:: make_placeholder
.. autofunction:: make_size_param
.. autofunction:: make_data_wrapper
.. autofunction:: make_dict_of_named_arrays
.. autofunction:: make_index_lambda
.. autofunction:: as_array
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    Axis,
    ReductionDescriptor,
    ShapeLike,
    check_unique_tags,
    normalize_tags,
)
from pytato.array.inputs import DataWrapper, Placeholder, SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import normalize_shape
from pytato.diagnostic import (
    DTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NameClashError,
)
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    ScalarExpression,
    get_reduction_induction_variables,
    parse,
)
from pytato.tags import CreatedAt, traceback_tag_enabled


if TYPE_CHECKING:
    from pytato.array.lambdas import IndexLambda


SUPPORTED_DTYPE_KINDS = "biufc"


def check_dtype(dtype: npt.DTypeLike | None, argname: str = "dtype"
                ) -> np.dtype[np.generic]:
    """Normalize *dtype*; raise :class:`~pytato.diagnostic.DTypeError`
    (naming *argname*) for dtypes arrays cannot hold."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"'{argname}': {dtype!r} is not a dtype") from e
    if dt.kind == "f" and dt.itemsize < 4:
        raise DTypeError(f"'{argname}': dtype {dt} is not supported: OpenCL "
                         "devices need an extension for half precision; "
                         "use float32")
    if dt.kind not in SUPPORTED_DTYPE_KINDS or dt.itemsize > 16 or (
            dt.kind == "f" and dt.itemsize > 8) or (
            dt.kind == "c" and dt.itemsize > 16):
        raise DTypeError(f"'{argname}': dtype {dt} is not supported (use bool, "
                         "integer, float32/64 or complex64/128)")
    return dt


#: Names that generated code cannot use for an input: the keywords of
#: Python (the NumPy target, the invoker of loopy programs) and of OpenCL C
#: (keywords, qualifiers and built-in scalar and vector types).
RESERVED_NAMES = frozenset(
    set(keyword.kwlist)
    | {"auto", "break", "case", "char", "const", "continue", "default", "do",
       "double", "else", "enum", "extern", "float", "for", "goto", "if",
       "inline", "int", "long", "register", "restrict", "return", "short",
       "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
       "unsigned", "void", "volatile", "while", "bool", "half", "uchar",
       "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t",
       "uintptr_t", "__global", "global", "__local", "local", "__constant",
       "constant", "__private", "private", "__kernel", "kernel",
       "read_only", "write_only", "read_write", "__read_only",
       "__write_only", "__read_write", "_Bool", "_Complex", "_Imaginary",
       "image2d_t", "image3d_t", "sampler_t", "event_t", "true", "false",
       "NULL"}
    | {f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint",
                            "long", "ulong", "float", "double", "half")
       for n in (2, 3, 4, 8, 16)})


def check_identifier(name: object, argname: str = "name") -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgumentError(
            f"'{argname}' must be a valid Python identifier, got {name!r}")
    if name in RESERVED_NAMES:
        raise NameClashError(
            f"'{argname}': {name!r} is a keyword or type name of Python or "
            "OpenCL C, which generated code cannot use as an argument name; "
            "choose another name")
    if name.startswith("_pt"):
        raise InvalidArgumentError(
            f"'{argname}': names starting with '_pt' are reserved, "
            f"got {name!r}")
    return name


def _tags_and_axes(tags: Any, axes: Any, ndim: int, what: str
                   ) -> tuple[frozenset[Tag], tuple[Axis, ...]]:
    tags = check_unique_tags(normalize_tags(tags, f"{what}, argument 'tags'"), what)
    if axes is None:
        axes = tuple(Axis() for _ in range(ndim))
    else:
        # (the axis objects of other taggable arrays, e.g. arraycontext's
        # frozen arrays, whose axes a client passes on: their tags)
        axes = tuple(a if isinstance(a, Axis)
                     else Axis(frozenset(a.tags)) if isinstance(
                         getattr(a, "tags", None), frozenset)
                     else a
                     for a in axes)
        if len(axes) != ndim or not all(isinstance(a, Axis) for a in axes):
            raise InvalidArgumentError(f"{what}: 'axes' must be {ndim} Axis objects, "
                                       f"got {axes!r}")
    return tags, axes


def _creation_tags(tags: frozenset[Tag]) -> tuple[frozenset[Tag], frozenset[Tag]]:
    if traceback_tag_enabled():
        return tags, frozenset({CreatedAt.capture()})
    return tags, frozenset()


def make_placeholder(name: str, shape: ShapeLike, dtype: npt.DTypeLike = np.float64,
                     tags: Tag | Iterable[Tag] = frozenset(),
                     axes: Iterable[Axis] | None = None) -> Placeholder:
    """A named input of shape *shape* and dtype *dtype*, supplied when the
    program runs."""
    name = check_identifier(name)
    shape = normalize_shape(shape)
    dtype = check_dtype(dtype)
    tags, axes = _tags_and_axes(tags, axes, len(shape), f"placeholder '{name}'")
    tags, net = _creation_tags(tags)
    return Placeholder(shape, dtype, name, axes=axes, tags=tags,
                       non_equality_tags=net)


def make_size_param(name: str, tags: Tag | Iterable[Tag] = frozenset()
                    ) -> SizeParam:
    """A named integer input that may appear in shapes."""
    name = check_identifier(name)
    tags, _ = _tags_and_axes(tags, None, 0, f"size parameter '{name}'")
    return SizeParam(name, axes=(), tags=tags)


def make_data_wrapper(data: object, *, name: str | None = None,
                      shape: ShapeLike | None = None,
                      tags: Tag | Iterable[Tag] = frozenset(),
                      axes: Iterable[Axis] | None = None) -> DataWrapper:
    """Wrap concrete *data* (a :class:`numpy.ndarray`, a
    :class:`pyopencl.array.Array`, or anything with ``shape`` and
    ``dtype``). *data* must not be modified afterwards."""
    if not (hasattr(data, "shape") and hasattr(data, "dtype")):
        raise InvalidArgumentTypeError(
            "'data' must have 'shape' and 'dtype' attributes, got "
            f"{type(data).__name__}")
    if isinstance(data, np.generic):
        # a numpy scalar is not an array the generated code can be passed
        data = np.asarray(data)
    if name is not None:
        name = check_identifier(name)
    check_dtype(data.dtype, "data.dtype")
    if shape is None:
        shape = normalize_shape(tuple(int(s) for s in data.shape))
    else:
        shape = normalize_shape(shape)
        if len(shape) != len(data.shape):
            raise InvalidArgumentError(f"'shape' {shape} has a different number of "
                                       f"dimensions than the data's {data.shape}")
    tags, axes = _tags_and_axes(tags, axes, len(shape), "data wrapper")
    tags, net = _creation_tags(tags)
    return DataWrapper(data, shape, name, axes=axes, tags=tags,
                       non_equality_tags=net)


def as_array(x: object, argname: str) -> Array:
    """Return *x* if it is an :class:`~pytato.array.Array`; wrap numpy arrays
    and scalars as :class:`~pytato.array.DataWrapper`\\ s; raise
    :class:`TypeError` naming *argname* for anything else."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, *SCALAR_CLASSES)):
        data = np.asarray(x)
        check_dtype(data.dtype, argname)
        return make_data_wrapper(data)
    raise InvalidArgumentTypeError(
        f"'{argname}' must be an array, got {type(x).__name__}")


def make_dict_of_named_arrays(data: Mapping[str, Array],
                              *, tags: Tag | Iterable[Tag] = frozenset()
                              ) -> DictOfNamedArrays:
    """A :class:`~pytato.DictOfNamedArrays` of *data*."""
    for k, v in data.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise InvalidArgumentError(f"output name {k!r} is not a valid identifier")
        if k in RESERVED_NAMES:
            raise NameClashError(
                f"output name {k!r} is a keyword or type name of Python or "
                "OpenCL C, which generated code cannot use; choose another "
                "name")
        if not isinstance(v, Array):
            raise InvalidArgumentTypeError(
                f"output '{k}' is not an array: {type(v).__name__}")
    return DictOfNamedArrays(dict(data), tags=check_unique_tags(
        normalize_tags(tags, "make_dict_of_named_arrays(), argument 'tags'"),
        "DictOfNamedArrays"))


def make_index_lambda(
        expression: ScalarExpression | str,
        bindings: Mapping[str, Array],
        shape: ShapeLike,
        dtype: npt.DTypeLike,
        var_to_reduction_descr: Mapping[str, ReductionDescriptor] | None = None,
        ) -> IndexLambda:
    """An :class:`~pytato.array.IndexLambda` computing *expression* (a
    scalar expression, or a string parsed into one) over the indices
    ``_0, _1, ...`` of an array of *shape* and *dtype*, reading the arrays
    of *bindings* by name.

    :arg var_to_reduction_descr: the
        :class:`~pytato.array.ReductionDescriptor` of each reduction
        variable of *expression* (by default, an untagged one each).
    :raises TypeError: if a binding is not an array or *bindings* is not a
        mapping.
    """

    if isinstance(expression, str):
        expression = parse(expression)
    if not isinstance(bindings, Mapping):
        raise InvalidArgumentTypeError(
            "make_index_lambda: 'bindings' must be a mapping from "
            f"names to arrays, got {type(bindings).__name__}")
    for name, ary in bindings.items():
        if not isinstance(ary, Array):
            raise InvalidArgumentTypeError(
                f"make_index_lambda: binding {name!r} is not an "
                f"array: {ary!r}")
    descrs = {name: ReductionDescriptor()
              for name in get_reduction_induction_variables(expression)}
    descrs.update(var_to_reduction_descr or {})
    return IndexLambda(expr=expression, shape=normalize_shape(shape),
                       dtype=check_dtype(dtype), bindings=dict(bindings),
                       var_to_reduction_descr=descrs)
