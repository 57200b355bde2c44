"""Constructors of input nodes and result containers.

.. autofunction:: make_placeholder
.. autofunction:: make_size_param
.. autofunction:: make_data_wrapper
.. autofunction:: make_dict_of_named_arrays
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from pytools.tag import Tag

from pytato.array.base import Array, Axis, check_unique_tags, normalize_tags
from pytato.array.inputs import DataWrapper, Placeholder, SizeParam
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import normalize_shape
from pytato.diagnostic import DTypeError, InvalidArgumentError, InvalidArgumentTypeError


SUPPORTED_DTYPE_KINDS = "biufc"


def check_dtype(dtype: Any, argname: str = "dtype") -> np.dtype[Any]:
    """Normalize *dtype*; raise :class:`~pytato.diagnostic.DTypeError`
    (naming *argname*) for dtypes arrays cannot hold."""
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise DTypeError(f"'{argname}': {dtype!r} is not a dtype") from e
    if dt.kind not in SUPPORTED_DTYPE_KINDS or dt.itemsize > 16 or (
            dt.kind == "f" and dt.itemsize > 8) or (
            dt.kind == "c" and dt.itemsize > 16):
        raise DTypeError(f"'{argname}': dtype {dt} is not supported (use bool, "
                         "integer, float32/64 or complex64/128)")
    return dt


def check_identifier(name: Any, argname: str = "name") -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgumentError(f"'{argname}' must be a valid Python identifier, "
                                   f"got {name!r}")
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
        axes = tuple(axes)
        if len(axes) != ndim or not all(isinstance(a, Axis) for a in axes):
            raise InvalidArgumentError(f"{what}: 'axes' must be {ndim} Axis objects, "
                                       f"got {axes!r}")
    return tags, axes


def _creation_tags(tags: frozenset[Tag]) -> tuple[frozenset[Tag], frozenset[Tag]]:
    from pytato.tags import CreatedAt, traceback_tag_enabled
    if traceback_tag_enabled():
        return tags, frozenset({CreatedAt.capture()})
    return tags, frozenset()


def make_placeholder(name: str, shape: Any, dtype: Any = np.float64,
                     tags: Tag | Iterable[Tag] = frozenset(),
                     axes: Iterable[Axis] | None = None) -> Placeholder:
    """A named input of shape *shape* and dtype *dtype*, supplied when the
    program runs."""
    name = check_identifier(name)
    shape = normalize_shape(shape)
    dtype = check_dtype(dtype)
    tags, axes = _tags_and_axes(tags, axes, len(shape), f"placeholder '{name}'")
    tags, net = _creation_tags(tags)
    return Placeholder(name, shape, dtype, axes=axes, tags=tags,
                       non_equality_tags=net)


def make_size_param(name: str, tags: Tag | Iterable[Tag] = frozenset()
                    ) -> SizeParam:
    """A named integer input that may appear in shapes."""
    name = check_identifier(name)
    tags, _ = _tags_and_axes(tags, None, 0, f"size parameter '{name}'")
    return SizeParam(name, axes=(), tags=tags)


def make_data_wrapper(data: Any, *, name: str | None = None,
                      shape: Any = None,
                      tags: Tag | Iterable[Tag] = frozenset(),
                      axes: Iterable[Axis] | None = None) -> DataWrapper:
    """Wrap concrete *data* (a :class:`numpy.ndarray`, a
    :class:`pyopencl.array.Array`, or anything with ``shape`` and
    ``dtype``). *data* must not be modified afterwards."""
    if not (hasattr(data, "shape") and hasattr(data, "dtype")):
        raise InvalidArgumentTypeError(
            "'data' must have 'shape' and 'dtype' attributes, got "
            f"{type(data).__name__}")
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


def make_dict_of_named_arrays(data: Mapping[str, Array],
                              *, tags: Tag | Iterable[Tag] = frozenset()
                              ) -> DictOfNamedArrays:
    """A :class:`~pytato.DictOfNamedArrays` of *data*."""
    for k, v in data.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise InvalidArgumentError(f"output name {k!r} is not a valid identifier")
        if not isinstance(v, Array):
            raise InvalidArgumentTypeError(
                f"output '{k}' is not an array: {type(v).__name__}")
    return DictOfNamedArrays(dict(data), tags=check_unique_tags(
        normalize_tags(tags, "make_dict_of_named_arrays(), argument 'tags'"),
        "DictOfNamedArrays"))
