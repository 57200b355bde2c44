"""Counting nodes, tags, depths and call sites of a graph.

All functions take *outputs*: an array, a
:class:`~pytato.DictOfNamedArrays`, a mapping of names to arrays or an
iterable of arrays. Only array nodes are counted (not the
:class:`~pytato.DictOfNamedArrays` holding the outputs). Nodes in shapes
(size parameters and their arithmetic) are part of the graph and counted.

*Duplicates* are distinct objects that compare equal (the same expression
built twice). With ``count_duplicates=False`` each equality class counts
once; with ``count_duplicates=True`` each distinct object counts. A node
object reachable along several paths always counts once.

.. autofunction:: get_num_nodes
.. autofunction:: get_node_type_counts
.. autofunction:: get_node_multiplicities
.. autofunction:: get_num_tags_of_type
.. autofunction:: get_max_node_depth
.. autofunction:: get_num_call_sites
.. autoclass:: CallSiteCounter
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from pytato.analysis._outputs import output_roots
from pytato.array.base import Array, GraphNode, topological_order
from pytato.transform.deduplicate import structural_class_ids
from pytato.transform.mappers import Mapper


if TYPE_CHECKING:
    from pytato.analysis._outputs import Outputs
    from pytato.array.results import DictOfNamedArrays
    from pytato.function import Call, FunctionDefinition
    from pytato.transform.mappers import ArrayOrNames


__all__ = [
    "CallSiteCounter", "get_max_node_depth", "get_node_multiplicities",
    "get_node_type_counts", "get_num_call_sites", "get_num_nodes",
    "get_num_tags_of_type",
]


def _nodes(outputs: Outputs, count_duplicates: bool) -> list[Array]:
    """The array nodes of the graph of *outputs*, one per distinct object,
    or one per equality class (the first in topological order)."""
    order = topological_order(output_roots(outputs))
    if count_duplicates:
        return [n for n in order if isinstance(n, Array)]
    cls_of = structural_class_ids(order)
    seen: set[int] = set()
    result = []
    for n in order:
        c = cls_of[id(n)]
        if c in seen:
            continue
        seen.add(c)
        if isinstance(n, Array):
            result.append(n)
    return result


def get_num_nodes(outputs: Outputs, count_duplicates: bool = False) -> int:
    """The number of array nodes in the graph of *outputs*."""
    return len(_nodes(outputs, count_duplicates))


def get_node_type_counts(outputs: Outputs, count_duplicates: bool = False
                         ) -> dict[type, int]:
    """A mapping from node type to the number of nodes of that type."""
    counts: dict[type, int] = {}
    for n in _nodes(outputs, count_duplicates):
        counts[type(n)] = counts.get(type(n), 0) + 1
    return counts


def get_node_multiplicities(outputs: Outputs) -> dict[Array, int]:
    """A mapping from each distinct node (up to equality) to the number of
    distinct objects equal to it in the graph of *outputs*. A graph without
    duplicates has all multiplicities 1."""
    order = topological_order(output_roots(outputs))
    cls_of = structural_class_ids(order)
    rep: dict[int, Array] = {}
    mult: dict[int, int] = {}
    for n in order:
        if not isinstance(n, Array):
            continue
        c = cls_of[id(n)]
        rep.setdefault(c, n)
        mult[c] = mult.get(c, 0) + 1
    return {rep[c]: m for c, m in mult.items()}


def get_num_tags_of_type(outputs: Outputs,
                         tag_types: type | Iterable[type],
                         count_duplicates: bool = False) -> int:
    """The number of array tags (not axis tags) that are instances of
    *tag_types*, summed over the nodes of the graph of *outputs*."""
    types = (tag_types,) if isinstance(tag_types, type) else tuple(tag_types)
    return sum(1 for n in _nodes(outputs, count_duplicates)
               for t in n.tags if isinstance(t, types))


def get_max_node_depth(outputs: Outputs) -> int:
    """The number of nodes on the longest path from an output down to an
    input (a lone placeholder has depth 1; an empty result has depth 0)."""
    height: dict[int, int] = {}
    best = 0
    for n in topological_order(output_roots(outputs)):
        h = max((height[id(k)] for k in n._pt_kids),
                default=0)
        if isinstance(n, Array):
            h += 1
        height[id(n)] = h
        best = max(best, h)
    return best


class CallSiteCounter(Mapper[int, None, []]):
    """Counts call sites: the nodes dispatched to ``map_call``, plus those
    inside the bodies of the called functions (each body counted once per
    call site). Node types without calls count 0, so the counter works on
    any graph; call nodes only need to provide ``map_call`` dispatch and a
    ``function`` attribute whose ``returns`` maps names to arrays."""

    def __init__(self) -> None:
        self._body_counts: dict[int, int] = {}
        self._keep: list[FunctionDefinition] = []

    def count(self, roots: Iterable[GraphNode]) -> int:
        """The number of call sites in the graphs of *roots*."""
        total = 0
        for n in topological_order(roots):
            # (the nodes of graphs: arrays and results with named arrays)
            total += self.rec(cast("ArrayOrNames", n))
        return total

    def map_array(self, expr: Array) -> int:
        return 0

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> int:
        return 0

    def map_call(self, expr: Call) -> int:
        fn = expr.function
        if id(fn) not in self._body_counts:
            self._keep.append(fn)
            self._body_counts[id(fn)] = self.count(
                list(getattr(fn, "returns", {}).values()))
        return 1 + self._body_counts[id(fn)]

    def __getattr__(self, name: str) -> Callable[[Array], int]:
        # node types added later (e.g. distributed sends) count no call sites
        if name.startswith("map_"):
            return self.map_array
        raise AttributeError(name)


def get_num_call_sites(outputs: Outputs) -> int:
    """The number of call sites in the graph of *outputs*, counting calls
    inside called functions' bodies (0 for graphs without calls)."""
    return CallSiteCounter().count(output_roots(outputs))
