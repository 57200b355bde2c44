"""Readable text forms of arrays.

:func:`array_repr` is a one-node summary (used by ``repr``; it never walks
the graph). :func:`graph_to_str` prints a whole graph, each distinct node
once, children before their users.

:func:`array_repr` is attached to :class:`~pytato.array.Array` as its
``__repr__`` when this module is imported (as :mod:`pytato` does): the
array package does not import the printer that builds on it.

.. autofunction:: array_repr
.. autofunction:: graph_to_str
.. autoclass:: Reprifier
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytools.tag import Tag

from pytato.array.base import Array, GraphNode, _ChildRef, topological_order
from pytato.array.results import DictOfNamedArrays, named_arrays_of
from pytato.diagnostic import InvalidArgumentError
from pytato.visualization.labels import describe_array, format_tags, node_operation


def _fmt_value(value: object, names: dict[int, str] | None) -> str:
    if isinstance(value, GraphNode):
        if names is not None and id(value) in names:
            return names[id(value)]
        return f"<{type(value).__name__}>"
    if isinstance(value, tuple):
        inner = ", ".join(_fmt_value(v, names) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if hasattr(value, "items") and not isinstance(value, type):
        return "{" + ", ".join(f"{k!r}: {_fmt_value(v, names)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, frozenset):
        return "{" + ", ".join(sorted(repr(v) for v in value)) + "}"
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(
            value, Array):
        return f"<data {type(value).__name__} shape={value.shape}>"
    return repr(value) if not isinstance(value, _ChildRef) else "?"


def _node_fields(ary: Array, names: dict[int, str] | None) -> list[str]:
    parts = []
    for f in dataclasses.fields(ary):
        if f.name in ("non_equality_tags",):
            continue
        value = getattr(ary, f.name)
        if f.name == "axes" and all(not a.tags for a in value):
            continue
        if f.name == "tags" and not value:
            continue
        parts.append(f"{f.name.lstrip('_')}={_fmt_value(value, names)}")
    if "shape" not in {f.name for f in dataclasses.fields(ary)}:
        parts.append(f"shape={_fmt_value(ary.shape, names)}")
    if "dtype" not in {f.name for f in dataclasses.fields(ary)}:
        parts.append(f"dtype={ary.dtype}")
    return parts


def array_repr(ary: Array) -> str:
    """A one-line summary of *ary* (children shown by type only)."""
    return f"{type(ary).__name__}({', '.join(_node_fields(ary, None))})"


def graph_to_str(result: Any, verbose: bool = False) -> str:
    """Print the graph of *result* (an array, a dict of arrays or a
    :class:`~pytato.DictOfNamedArrays`), one line per distinct node object,
    children first, each shared node once. A line reads
    ``v3 = IndexLambda (4, 3) float64: v1[_0, _1] + v2[_0, _1]``: the node's
    type, shape and dtype, then what it computes from the nodes named
    before it (see :func:`pytato.visualization.labels.node_operation`),
    then its tags and axis tags, if any.

    :arg verbose: print every field of each node instead of the operation.
    """
    if isinstance(result, dict):
        result = DictOfNamedArrays(result)
    order = topological_order([result])
    names: dict[int, str] = {}
    lines = []
    for i, node in enumerate(order):
        name = f"v{i}"
        names[id(node)] = name
        kid_names = [names[id(k)] for k in node._pt_kids]
        if isinstance(node, DictOfNamedArrays):
            lines.append(f"{name} = {{"
                         + ", ".join(f"{k!r}: {names[id(v)]}"
                                     for k, v in node._data.items()) + "}")
        elif verbose and isinstance(node, Array):
            lines.append(f"{name} = {type(node).__name__}("
                         f"{', '.join(_node_fields(node, names))})")
        else:
            line = f"{name} = {type(node).__name__}"
            if isinstance(node, Array):
                line += f" {describe_array(node)}"
            line += f": {node_operation(node, kid_names)}"
            tags: frozenset[Tag] = getattr(node, "tags", frozenset())
            if tags:
                line += f"  tags={{{format_tags(tags)}}}"
            axes = getattr(node, "axes", ())
            if any(ax.tags for ax in axes):
                line += "  axes=[" + ", ".join(
                    f"{{{format_tags(ax.tags)}}}" for ax in axes) + "]"
            lines.append(line)
    return "\n".join(lines)


class Reprifier:
    """Reprs of arrays that show their children down to a depth: at depth
    *truncation_depth* below the node printed, children are shown as
    *truncation_string*. Nodes shared in the graph are printed at each use
    (the output grows with the number of paths, bounded by the depth).

    .. automethod:: __call__
    """

    def __init__(self, truncation_depth: int = 3,
                 truncation_string: str = "(...)") -> None:
        if truncation_depth < 0:
            raise InvalidArgumentError("Reprifier: 'truncation_depth' must be "
                                       f"non-negative, got {truncation_depth}")
        self.truncation_depth = truncation_depth
        self.truncation_string = truncation_string

    def __call__(self, expr: Any, depth: int = 0) -> str:
        """The repr of *expr* (an array, another graph node, or a value
        holding nodes, such as a tuple or a mapping), with nodes deeper than
        the truncation depth elided."""
        if isinstance(expr, GraphNode):
            if depth > self.truncation_depth:
                return self.truncation_string
            if not dataclasses.is_dataclass(expr):
                return repr(expr)
            parts = []
            for f in dataclasses.fields(expr):
                if f.name == "non_equality_tags" or not f.repr:
                    continue
                value = getattr(expr, f.name)
                if f.name in ("axes", "tags") and not any(
                        getattr(a, "tags", a) for a in (
                            value if f.name == "axes" else [value])):
                    continue
                parts.append(f"{f.name.lstrip('_')}={self(value, depth + 1)}")
            return f"{type(expr).__name__}({', '.join(parts)})"
        if isinstance(expr, tuple):
            inner = ", ".join(self(v, depth) for v in expr)
            return f"({inner},)" if len(expr) == 1 else f"({inner})"
        if hasattr(expr, "items") and not isinstance(expr, type):
            items = named_arrays_of(expr).items()
            return "{" + ", ".join(f"{k!r}: {self(v, depth)}"
                                   for k, v in items) + "}"
        return _fmt_value(expr, None)


# the repr of arrays (see the module documentation)
Array.__repr__ = array_repr  # type: ignore[method-assign,assignment]
