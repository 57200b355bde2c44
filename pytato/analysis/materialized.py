"""Which nodes of a graph live in memory.

.. autofunction:: collect_materialized_nodes
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytato.analysis._outputs import output_roots
from pytato.array.base import Array, topological_order
from pytato.array.inputs import InputArgumentBase
from pytato.function import FunctionDefinition
from pytato.tags import ImplStored


if TYPE_CHECKING:
    from pytato.analysis._outputs import Outputs
    from pytato.function import FunctionDefinition


__all__ = ["collect_materialized_nodes"]


def collect_materialized_nodes(expr: Outputs | FunctionDefinition,
                               include_outputs: bool = True
                               ) -> frozenset[Array]:
    """The array nodes of the graph of *expr* that are held in memory: the
    inputs (placeholders, size parameters, data wrappers), the nodes tagged
    :class:`~pytato.tags.ImplStored` and, if *include_outputs*, the outputs.

    :arg expr: an array, a :class:`~pytato.DictOfNamedArrays` (or another
        graph node), a mapping of names to arrays, an iterable of arrays, or
        a :class:`~pytato.function.FunctionDefinition` (whose returns are
        the outputs).
    :arg include_outputs: whether the outputs count as materialized even
        when they are neither inputs nor tagged
        :class:`~pytato.tags.ImplStored`.
    """
    if isinstance(expr, FunctionDefinition):
        expr = dict(expr.returns)
    roots = output_roots(expr)
    result: set[Array] = set()
    if include_outputs:
        for r in roots:
            if isinstance(r, Array):
                result.add(r)
            else:
                result.update(v for v in r._pt_kids
                              if isinstance(v, Array))
    for n in topological_order(roots):
        if isinstance(n, InputArgumentBase) or (
                isinstance(n, Array) and any(isinstance(t, ImplStored)
                                             for t in n.tags)):
            result.add(n)
    return frozenset(result)
