"""Which nodes of a graph live in memory.

.. autofunction:: collect_materialized_nodes
"""

from __future__ import annotations

from typing import Any

from pytato.analysis._outputs import output_roots
from pytato.array.base import Array, topological_order
from pytato.array.inputs import InputArgumentBase
from pytato.tags import ImplStored


__all__ = ["collect_materialized_nodes"]


def collect_materialized_nodes(outputs: Any) -> frozenset[Array]:
    """The array nodes of the graph of *outputs* that are held in memory:
    the outputs, the inputs (placeholders, size parameters, data wrappers)
    and the nodes tagged :class:`~pytato.tags.ImplStored`."""
    roots = output_roots(outputs)
    result: set[Array] = set()
    for r in roots:
        if isinstance(r, Array):
            result.add(r)
        else:
            result.update(v for v in r._pt_kids  # type: ignore[attr-defined]
                          if isinstance(v, Array))
    for n in topological_order(roots):
        if isinstance(n, InputArgumentBase) or (
                isinstance(n, Array) and any(isinstance(t, ImplStored)
                                             for t in n.tags)):
            result.add(n)
    return frozenset(result)
