"""Pickling of graphs as flat lists, so that deep graphs do not exhaust
Python's recursion limit."""

from __future__ import annotations

from typing import Any

from pytato.array.base import Array, flatten_for_pickle, topological_order, unflatten


def reduce_array(root: Array) -> tuple[Any, ...]:
    """``__reduce__`` of an array: its whole subgraph in topological order,
    each node with the indices of its children."""
    order = topological_order([root])
    index = {id(n): i for i, n in enumerate(order)}
    records = []
    for node in order:
        if isinstance(node, Array):
            names, skel = flatten_for_pickle(node)
            records.append((type(node), names, skel,
                            tuple(index[id(k)] for k in node._pt_kids),  # type: ignore
                            node.non_equality_tags))
        else:
            # a non-array result (e.g. a call); pickled by its own __reduce__
            records.append(node)
    return (_rebuild, (records,))


def _rebuild(records: list[Any]) -> Array:
    built: list[Any] = []
    for rec in records:
        if isinstance(rec, tuple):
            cls, names, skel, kid_idx, net = rec
            built.append(unflatten(cls, names, skel,
                                   tuple(built[i] for i in kid_idx), net))
        else:
            built.append(rec)
    return built[-1]  # type: ignore[no-any-return]
