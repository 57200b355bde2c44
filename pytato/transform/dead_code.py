"""Dead code elimination: drop what the outputs do not need.

A graph only reaches what its outputs reference, so unreachable nodes are
never a problem; dead code hides *inside* nodes that reference more than
they use:

* :class:`~pytato.array.IndexLambda` bindings whose names do not occur in
  the expression (e.g. left over after a simplification rewrote the
  expression), and reduction descriptors of reduction indices that no
  longer occur;
* :class:`~pytato.array.Einsum` reduction descriptors of axes no operand
  uses.

Removing a dead binding also drops the whole subgraph only it referenced.
Node types with nothing to remove are rebuilt generically (their children
mapped), so the pass works on any node type. Distributed sends are side
effects, never dead: a :class:`~pytato.distributed.DistributedSendRefHolder`
keeps its send. A node type that comes to carry removable references (a
call binding arguments its function ignores, say) gets its own
``map_<node>`` method in :class:`DeadCodeEliminator`.

.. autoclass:: DeadCodeEliminator
.. autofunction:: eliminate_dead_code
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytato.array.lambdas import Einsum, IndexLambda
from pytato.scalar_expr import Reduce, WalkMapper, get_dependencies
from pytato.transform._identity_cache import IdentityCachedCopyMapper


if TYPE_CHECKING:
    from pytato.array.base import Array
    from pytato.scalar_expr import ScalarExpression
    from pytato.transform.base import ArrayOrNamesOrDictTc


__all__ = ["DeadCodeEliminator", "eliminate_dead_code"]


class _ReductionIndexCollector(WalkMapper[[]]):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def map_reduce(self, expr: Reduce, *args: object, **kwargs: object) -> None:
        self.names.update(expr.bounds)
        super().map_reduce(expr, *args, **kwargs)

    def map_foreign(self, expr: object, *args: object, **kwargs: object
                    ) -> None:
        pass

    def map_constant(self, expr: object, *args: object, **kwargs: object
                     ) -> None:
        pass


def _reduction_indices(expr: ScalarExpression) -> set[str]:
    collector = _ReductionIndexCollector()
    collector(expr)
    return collector.names


class DeadCodeEliminator(IdentityCachedCopyMapper):
    """Copies a graph, dropping references that the computation does not
    use (see the module documentation)."""

    def map_index_lambda(self, expr: IndexLambda) -> IndexLambda:
        used = get_dependencies(expr.expr)
        bindings = {name: self.rec(b) for name, b in expr.bindings.items()
                    if name in used}
        redn_descrs = expr.var_to_reduction_descr
        if redn_descrs:
            present = _reduction_indices(expr.expr)
            if not set(redn_descrs) <= present:
                redn_descrs = {k: v for k, v in redn_descrs.items()
                               if k in present}
        shape = tuple(self.rec(c) if not isinstance(c, int) else c
                      for c in expr.shape)
        if (len(bindings) == len(expr.bindings)
                and redn_descrs is expr.var_to_reduction_descr
                and all(bindings[k] is v for k, v in expr.bindings.items())
                and all(a is b for a, b in zip(shape, expr.shape, strict=True))):
            return expr
        return expr.copy(bindings=bindings, var_to_reduction_descr=redn_descrs,
                         shape=shape)

    def map_einsum(self, expr: Einsum) -> Array:
        new = self.map_array(expr)
        present = set(expr.reduction_axes)
        if set(expr.redn_axis_to_redn_descr) <= present:
            return new
        return new.copy(redn_axis_to_redn_descr={
            k: v for k, v in expr.redn_axis_to_redn_descr.items()
            if k in present})


def eliminate_dead_code(expr: ArrayOrNamesOrDictTc) -> ArrayOrNamesOrDictTc:
    """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or a
    :class:`dict` of arrays) without the references its outputs do not need
    (see :mod:`pytato.transform.dead_code`). A graph without dead code is
    returned unchanged (the same object). Linear in the size of the graph.
    """
    mapper = DeadCodeEliminator()
    if isinstance(expr, dict):
        return {k: mapper(v)
                for k, v in expr.items()}
    return mapper(expr)
