"""Normalizing the *outputs* argument of analysis passes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from pytato.array.base import Array, GraphNode
from pytato.array.results import named_arrays_of
from pytato.diagnostic import InvalidArgumentTypeError


Outputs: TypeAlias = "GraphNode | Mapping[str, Array] | Iterable[Array]"
"""The *outputs* of an analysis: an array, a
:class:`~pytato.DictOfNamedArrays` (or another graph node), a mapping of
names to arrays, or an iterable of arrays (checked at run time)."""


def output_roots(outputs: Outputs) -> list[GraphNode]:
    """The graph roots of *outputs*: an array, a
    :class:`~pytato.DictOfNamedArrays` (or another graph node), a mapping of
    names to arrays, or an iterable of those."""
    if isinstance(outputs, GraphNode):
        return [outputs]
    if isinstance(outputs, Mapping):
        values: Iterable[object] = outputs.values()
    elif isinstance(outputs, Iterable) and not isinstance(outputs, str):
        values = outputs
    else:
        raise InvalidArgumentTypeError(
            "'outputs' must be an array, a DictOfNamedArrays, a "
            f"mapping or an iterable of arrays, got "
            f"{type(outputs).__name__}")
    roots: list[GraphNode] = []
    for v in values:
        if not isinstance(v, GraphNode):
            raise InvalidArgumentTypeError(
                f"'outputs' holds a {type(v).__name__}, not an "
                "array")
        roots.append(v)
    return roots


def output_arrays(outputs: Outputs) -> dict[str, Array]:
    """The named output arrays of *outputs* (a single array is named
    ``"_pt_out"``)."""
    if isinstance(outputs, Array):
        return {"_pt_out": outputs}
    if isinstance(outputs, Mapping):
        return dict(named_arrays_of(outputs))
    if isinstance(outputs, Iterable) and not isinstance(outputs, str):
        return {f"_pt_out_{i}": v for i, v in enumerate(outputs)}
    raise InvalidArgumentTypeError(
        "'outputs' must be an array, a DictOfNamedArrays or a "
        f"mapping of arrays, got {type(outputs).__name__}")
