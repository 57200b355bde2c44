"""Deduplication: structurally equal subgraphs become one object.

Two nodes are structurally equal when they have the same type, the same
non-array fields and pairwise equal children (see
:class:`~pytato.equality.EqualityComparer`). Graphs built by user code often
hold several distinct but equal objects (the same expression written twice);
code generators then compute them twice. :func:`deduplicate` returns a graph
in which each equality class is one object.

The pass is hash-consing in topological order: once a node's children are
replaced by their class representatives, two nodes are equal exactly when
their types and skeletons are equal and their children are *identical*.
So no deep comparison is ever needed, and the pass is linear in the number
of nodes and edges.

.. autofunction:: deduplicate
.. autoclass:: Deduplicator
.. autofunction:: deduplicate_data_wrappers
.. autoclass:: DataWrapperDeduplicator
.. autofunction:: structural_class_ids
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any, cast

from pytato.array.base import (
    Array,
    ChildNode,
    GraphNode,
    _unflatten,
    flatten_for_pickle,
    topological_order,
    unflatten,
)
from pytato.array.inputs import DataWrapper
from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import UnsupportedFeatureError
from pytato.function import FunctionDefinition
from pytato.transform.mappers import (
    ArrayOrNames,
    ArrayOrNamesOrFunctionDefTc,
    CopyMapper,
    TransformMapperCache,
)


__all__ = [
    "DataWrapperDeduplicator", "Deduplicator", "deduplicate",
    "deduplicate_data_wrappers", "structural_class_ids",
]


def _structure_key(node: GraphNode, kid_keys: tuple[Hashable, ...]) -> Hashable:
    return (type(node), node._pt_skel, kid_keys)


def structural_class_ids(order: Sequence[GraphNode]) -> dict[int, int]:
    """Number the structural equality classes of the nodes in *order* (which
    must list children before their users, as
    :func:`~pytato.array.base.topological_order` does).

    :returns: a mapping from ``id(node)`` to a class number; two nodes have
        the same number exactly when they compare equal. Class numbers are
        assigned in order of first appearance, starting at 0.
    """
    cls_of: dict[int, int] = {}
    key_to_cls: dict[Hashable, int] = {}
    for node in order:
        key = _structure_key(node, tuple(
            cls_of[id(k)] for k in node._pt_kids))
        cls = key_to_cls.get(key)
        if cls is None:
            cls = len(key_to_cls)
            key_to_cls[key] = cls
        cls_of[id(node)] = cls
    return cls_of


def _rebuild(node: GraphNode, new_kids: tuple[ChildNode, ...]) -> GraphNode:
    """*node* with its children replaced by *new_kids* (same order)."""
    if isinstance(node, Array):
        names, skel = flatten_for_pickle(node)
        return unflatten(type(node), names, skel, new_kids,
                         node.non_equality_tags)
    if isinstance(node, DictOfNamedArrays):
        # (the children of a dictionary of named arrays are its arrays)
        arrays = cast("tuple[Array, ...]", new_kids)
        return DictOfNamedArrays(dict(zip(node.keys(), arrays, strict=True)),
                                 tags=node.tags)
    rebuild = getattr(node, "_pt_with_new_kids", None)
    if rebuild is None and dataclasses.is_dataclass(node):
        # a non-array node (e.g. a distributed send) whose skeleton is its
        # fields, flattened
        fields = dataclasses.fields(node)
        skel = node._pt_skel
        if len(skel) == len(fields):
            return type(node)(**{
                f.name: _unflatten(s, new_kids)
                for f, s in zip(fields, skel, strict=True)})
    if rebuild is None:
        raise UnsupportedFeatureError(
            f"cannot rebuild a node of type {type(node).__name__}: it needs a "
            "'_pt_with_new_kids(kids)' method")
    return rebuild(new_kids)


class Deduplicator(CopyMapper):
    """Replaces structurally equal nodes by one representative (the first in
    topological order). Nodes whose children are already representatives are
    kept as they are, so a graph without duplicates is returned unchanged
    (the very same object).

    One instance may be applied to several graphs: representatives are
    shared between calls, so their results share equal subgraphs too.
    (A :class:`~pytato.transform.CopyMapper` as upstream's, for the bodies
    of called functions; graphs are deduplicated in one linear pass that
    does not go through ``map_*`` methods.)

    .. automethod:: __call__
    """

    def __init__(
            self,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        super().__init__(_cache=_cache, _function_cache=_function_cache)
        self._key_to_rep: dict[Hashable, GraphNode] = {}
        self._rep_of: dict[int, GraphNode] = {}
        # keeps the nodes whose ids are keys of _rep_of alive
        self._seen: list[GraphNode] = []

    def __call__(self, expr: Any) -> Any:
        """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or
        another graph node) with its duplicates merged."""
        if isinstance(expr, dict):
            return {k: self(v) for k, v in expr.items()}
        if isinstance(expr, FunctionDefinition):
            return self.rec_function_definition(expr)
        rep_of = self._rep_of
        key_to_rep = self._key_to_rep
        for node in topological_order([expr]):
            if id(node) in rep_of:
                continue
            kids = node._pt_kids
            # (the representative of a child is a child)
            new_kids = tuple(cast("ChildNode", rep_of[id(k)]) for k in kids)
            key = _structure_key(node, tuple(id(k) for k in new_kids))
            rep = key_to_rep.get(key)
            if rep is None:
                if all(a is b for a, b in zip(kids, new_kids, strict=True)):
                    rep = node
                else:
                    rep = _rebuild(node, new_kids)
                key_to_rep[key] = rep
            rep_of[id(node)] = rep
            self._seen.append(node)
        return rep_of[id(expr)]

    def rec(self, expr: object) -> Any:
        return self(expr)

    def clone_for_callee(self, function: FunctionDefinition) -> Deduplicator:
        return type(self)(_function_cache=self._function_cache)


def deduplicate(expr: ArrayOrNamesOrFunctionDefTc
                ) -> ArrayOrNamesOrFunctionDefTc:
    """Return *expr* with every class of structurally equal nodes replaced
    by one object. Results are unchanged; the pass is linear in the size of
    the graph. *expr* may be an array, a :class:`~pytato.DictOfNamedArrays`
    or a :class:`dict` of arrays (whose values then share representatives).
    """
    return Deduplicator()(expr)


def _data_key(data: object) -> Hashable:
    """Identifies the memory of an array's data: ``(pointer, offset)`` of a
    :mod:`pyopencl` array's buffer or a numpy array's data, else the data
    object itself (by identity). Arrays without elements have no memory
    (:mod:`pyopencl` gives them no buffer): all are the same."""
    if getattr(data, "size", None) == 0:
        return ("empty",)
    base = getattr(data, "base_data", None)
    if base is not None:
        ptr = getattr(base, "int_ptr", None)
        if ptr is None:
            ptr = id(base)
        return ("cl", ptr, getattr(data, "offset", 0),
                tuple(getattr(data, "strides", ())))
    iface = getattr(data, "__array_interface__", None)
    if isinstance(iface, dict) and "data" in iface:
        return ("host", iface["data"][0], tuple(getattr(data, "strides", ())))
    return ("id", id(data))


class DataWrapperDeduplicator(CopyMapper):
    """Replaces :class:`~pytato.array.DataWrapper` nodes wrapping the same
    memory (the same :mod:`pyopencl` buffer and offset, or the same host
    array data), with equal shape, dtype, axes and tags, by the first of
    them. Their names may differ: the first one's is kept. Data without
    elements (a 0 in the shape; :mod:`pyopencl` arrays of such shapes have
    no buffer) is the same for equal shapes, dtypes, axes and tags."""

    def __init__(
            self,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        super().__init__(_cache=_cache, _function_cache=_function_cache)
        self.data_wrapper_cache: dict[Hashable, DataWrapper] = {}
        self.data_wrappers_encountered = 0

    def clone_for_callee(self, function: FunctionDefinition
                         ) -> DataWrapperDeduplicator:
        return type(self)(_function_cache=self._function_cache)

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        self.data_wrappers_encountered += 1
        key = (_data_key(expr.data), expr.shape, expr.dtype, expr.axes,
               expr.tags)
        return self.data_wrapper_cache.setdefault(key, expr)


def deduplicate_data_wrappers(array_or_names: ArrayOrNamesOrFunctionDefTc
                              ) -> ArrayOrNamesOrFunctionDefTc:
    """Return *array_or_names* with the :class:`~pytato.array.DataWrapper`
    nodes that wrap the same memory merged into one (see
    :class:`DataWrapperDeduplicator`), so that the data is passed to
    generated code once."""
    return DataWrapperDeduplicator()(array_or_names)
