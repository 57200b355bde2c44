"""Pickling of graphs as flat lists, so that deep graphs do not exhaust
Python's recursion limit.

.. autofunction:: reduce_array
.. autofunction:: reduce_dict_of_named_arrays
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytato.array.base import (
    Array,
    _unflatten,
    flatten_for_pickle,
    topological_order,
    unflatten,
)


def reduce_array(root: Array) -> tuple[Any, ...]:
    """``__reduce__`` of an array: its whole subgraph in topological order,
    each node with the indices of its children."""
    return (_rebuild, (_records([root]),))


def reduce_dict_of_named_arrays(result: Any) -> tuple[Any, ...]:
    """``__reduce__`` of a :class:`~pytato.DictOfNamedArrays`: the graphs of
    all its arrays in one flat list, so that nodes shared between outputs
    stay shared after unpickling."""
    roots = list(result.values())
    records = _records(roots)
    index = {id(n): i for i, n in enumerate(topological_order(roots))}
    return (_rebuild_dict, (records, tuple(result.keys()),
                            tuple(index[id(r)] for r in roots), result.tags))


def _records(roots: list[Array]) -> list[Any]:
    order = topological_order(roots)
    index = {id(n): i for i, n in enumerate(order)}
    records = []
    for node in order:
        if isinstance(node, Array):
            names, skel = flatten_for_pickle(node)
            records.append((type(node), names, skel,
                            tuple(index[id(k)] for k in node._pt_kids),  # type: ignore
                            node.non_equality_tags))
        elif _is_flat_dataclass_node(node):
            # e.g. a distributed send: rebuilt from its fields, its children
            # shared with the rest of the graph
            records.append((type(node), node._pt_skel,  # type: ignore
                            tuple(index[id(k)] for k in node._pt_kids)))  # type: ignore
        else:
            # another non-array node (e.g. a call): its own __reduce__
            records.append(node)
    return records


def _is_flat_dataclass_node(node: Any) -> bool:
    """Whether *node* is a dataclass whose skeleton is its flattened fields
    (so that it can be rebuilt from skeleton and children)."""
    return (dataclasses.is_dataclass(node) and hasattr(node, "_pt_skel")
            and len(node._pt_skel) == len(dataclasses.fields(node)))


def _rebuild(records: list[Any]) -> Array:
    return _build(records)[-1]  # type: ignore[no-any-return]


def _rebuild_dict(records: list[Any], names: tuple[str, ...],
                  root_indices: tuple[int, ...], tags: Any) -> Any:
    from pytato.array.results import DictOfNamedArrays
    built = _build(records)
    return DictOfNamedArrays({name: built[i] for name, i in zip(
        names, root_indices, strict=True)}, tags=tags)


def _build(records: list[Any]) -> list[Any]:
    built: list[Any] = []
    for rec in records:
        if isinstance(rec, tuple) and len(rec) == 5:
            cls, names, skel, kid_idx, net = rec
            built.append(unflatten(cls, names, skel,
                                   tuple(built[i] for i in kid_idx), net))
        elif isinstance(rec, tuple):
            cls, skel, kid_idx = rec
            kids = tuple(built[i] for i in kid_idx)
            built.append(cls(**{f.name: _unflatten(s, kids) for f, s in zip(
                dataclasses.fields(cls), skel, strict=True)}))
        else:
            built.append(rec)
    return built
