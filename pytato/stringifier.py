"""Readable text forms of arrays.

:func:`array_repr` is a one-node summary (used by ``repr``; it never walks
the graph). :func:`graph_to_str` prints a whole graph, each distinct node
once, children before their users.

.. autofunction:: array_repr
.. autofunction:: graph_to_str
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytato.array.base import Array, GraphNode, _ChildRef, topological_order


def _fmt_value(value: Any, names: dict[int, str] | None) -> str:
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


def graph_to_str(result: Any) -> str:
    """Print the graph of *result* (an array, a dict of arrays or a
    :class:`~pytato.DictOfNamedArrays`), one line per distinct node."""
    from pytato.array.results import DictOfNamedArrays
    if isinstance(result, dict):
        result = DictOfNamedArrays(result)
    order = topological_order([result])
    names: dict[int, str] = {}
    lines = []
    for i, node in enumerate(order):
        name = f"v{i}"
        names[id(node)] = name
        if isinstance(node, Array):
            lines.append(f"{name} = {type(node).__name__}("
                         f"{', '.join(_node_fields(node, names))})")
        elif isinstance(node, DictOfNamedArrays):
            lines.append(f"{name} = DictOfNamedArrays({{"
                         + ", ".join(f"{k!r}: {names[id(v)]}"
                                     for k, v in node.items()) + "})")
        else:
            lines.append(f"{name} = {type(node).__name__}(...)")
    return "\n".join(lines)
