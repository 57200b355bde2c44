"""Materialization policy: which nodes are stored, which are inlined.

Code generators fuse every node that is not *materialized* (stored in
memory) into the expressions of its users. This module holds the one place
where that decision is made:

* :func:`get_stored_nodes` decides on a graph of
  :class:`~pytato.array.IndexLambda`\\ s and inputs (the graph targets see
  after :func:`pytato.codegen.preprocess`); it is the default policy of
  :func:`pytato.generate_loopy`;
* :func:`materialize_with_mpms` applies the *MPMS* variant of the policy to
  any graph by tagging the chosen nodes :class:`~pytato.tags.ImplStored`.

*MPMS* ("multiple predecessors, multiple successors"): walking the graph
children first, each node gets the set of its *materialized predecessors*
(the materialized nodes it reads, directly or through non-materialized
nodes; inputs are materialized). A node with more than one user and more
than one materialized predecessor is materialized. In addition these are
always stored:

* reductions read *broadcast* by a user (along a loop variable the access
  does not depend on, e.g. ``x - sum(x)`` or the inner product of
  ``A @ (B @ v)``), which inlining would recompute per element;
* computed arrays read by a non-affine gather (indexed by the values of
  another array), which inlining would recompute at arbitrary points;
* nodes that keep generated expressions small: one in every
  :data:`MAX_INLINE_DEPTH` nodes of a chain of inlined nodes, and the
  children of a node whose index expressions would grow by more than
  :data:`MAX_INDEX_GROWTH`.

The default policy of :func:`get_stored_nodes` (``store_shared=True``)
replaces the MPMS condition by a cost: a computed node read at more than
one place is stored, whatever the number of its materialized
predecessors, unless computing it again at each read is cheap (at most
:data:`MAX_SHARED_RECOMPUTE` operations per element in all, no function
calls, no reductions: ``a + 0.5*b`` read twice is computed twice). Every
stored node is an instruction of the generated kernel, and the code
generator's passes take time per instruction (issue 20: :mod:`loopy`'s
passes walk every instruction; the time per instruction is in the "Code
generation" section of ``benchmarks/README.md``), while recomputing a few
operations where the operands are loaded anyway costs memory-bound kernels
nothing. Storing is cheap where it does not
leave a loop: the loopy code generator fuses the loop nests of stored
arrays of one shape that read each other elementwise
(:mod:`pytato.target.loopy.lower.fusion`) and keeps a stored value read only
there in a register, so an elementwise chain with shared subexpressions
becomes one kernel with no global temporaries. Only values read shifted,
transposed, gathered or inside reductions go through global memory.

Size expressions (0-d integer expressions of size parameters) are never
stored; nodes tagged :class:`~pytato.tags.ImplInlined` (or
:class:`~pytato.tags.ImplSubstitution`) only for the last reason;
nodes tagged :class:`~pytato.tags.ImplStored` always.

.. autodata:: MAX_INLINE_DEPTH
.. autodata:: MAX_INDEX_GROWTH
.. autodata:: MAX_SHARED_RECOMPUTE
.. autodata:: MAX_INLINE_COST
.. autodata:: CALL_COST
.. autofunction:: get_stored_nodes
.. autofunction:: materialize_with_mpms
.. autoclass:: MPMSMaterializer
.. autoclass:: MPMSMaterializerAccumulator
.. autoclass:: MPMSMaterializerCache
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import pymbolic.primitives as prim

from pytato.array.base import (
    Array,
    flatten_for_pickle,
    topological_order,
    unflatten,
)
from pytato.array.inputs import InputArgumentBase, SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import is_one
from pytato.diagnostic import UnsupportedFeatureError
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    Reduce,
    WalkMapper,
    get_dependencies,
    is_integral_scalar,
)
from pytato.tags import ImplInlined, ImplStored, ImplSubstitution
from pytato.transform.lower_to_index_lambda import _LOWERABLE, to_index_lambda
from pytato.transform.mappers import (
    ArrayOrNames,
    CachedMapper,
    CopyMapper,
    TransformMapperCache,
)
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from pytato.function import FunctionDefinition
    from pytato.scalar_expr import ScalarExpression


__all__ = [
    "CALL_COST",
    "MAX_INDEX_GROWTH",
    "MAX_INLINE_COST",
    "MAX_INLINE_DEPTH",
    "MAX_SHARED_RECOMPUTE",
    "MPMSMaterializer",
    "MPMSMaterializerAccumulator",
    "MPMSMaterializerCache",
    "get_stored_nodes",
    "materialize_with_mpms",
]

MAX_INLINE_DEPTH = 32
"""Chains of inlined nodes longer than this are cut by storing a node, which
bounds the size of generated expressions and the recursion depth of
lowering them."""

MAX_SHARED_RECOMPUTE = 8
"""A computed node read at more than one place is inlined (computed again
at each read) rather than stored where that costs at most this many
operations per element in all: its cost (the operations of its expression
and of the nodes inlined into it) times its reads beyond the first. Nodes
with reductions are always stored when shared."""

MAX_INLINE_COST = 64
"""A node whose expression, with the nodes inlined into it, costs more
than this (in the operations of :data:`MAX_SHARED_RECOMPUTE`) is stored:
this bounds the size of each generated expression, and with it the time
device compilers take on one statement (the sum of the unused nodes of
the 10 000-node random DAG had become one statement of 90 ``sin`` calls,
slow to compile: ``benchmarks/README.md``, "Code generation"), and it
leaves the parts of such a sum to the loop nests of their own operands."""

CALL_COST = 16
"""The cost of a function call (``sin``, ``exp``, a non-integer power, ...)
in :data:`MAX_SHARED_RECOMPUTE`'s count of operations: a shared node calling
a function is stored."""

MAX_INDEX_GROWTH = 16
"""An inlined node read at indices in which one variable occurs ``k`` times
(``(16*i + j) // 16, (16*i + j) % 16`` after a reshape: ``k = 2``)
multiplies the size of its own index expressions by ``k`` in its reader;
where the product along a chain of inlined nodes would exceed this, the
children are stored instead."""


# {{{ reading one index lambda

def _is_index_name(name: str) -> bool:
    return name[:1] == "_" and name[1:].isdigit()


class _UseCounter(WalkMapper[[frozenset[str]]]):
    """Counts the references to bindings and output indices, and finds the
    bindings read *expansively* (at an access whose indices do not involve
    every loop variable in scope there: the lambda's non-unit output indices
    and the indices of enclosing reductions) and those read by a
    *gather* (at indices depending on the values of bindings)."""

    def __init__(self, expr: IndexLambda) -> None:
        self.names = expr.bindings
        self.counts: Counter[str] = Counter()
        self.expansive: set[str] = set()
        self.gathered: set[str] = set()
        # per binding: the largest number of times one variable occurs in
        # the indices of one access (how much inlining the binding can
        # multiply the size of its own index expressions)
        self.index_factor: dict[str, int] = {}
        self.has_reduction = False
        self.ops = 0
        self.out_indices = frozenset(
            f"_{i}" for i, n in enumerate(expr.shape) if not is_one(n))

    def _access(self, name: str, indices: ScalarExpression,
                scope: frozenset[str]) -> None:
        self.counts[name] += 1
        if indices:
            f = _index_factor(indices)
            if f > self.index_factor.get(name, 1):
                self.index_factor[name] = f
        if name in self.expansive and name in self.gathered:
            return
        used = _index_dependencies(indices) if indices else frozenset()
        if not scope <= used:
            self.expansive.add(name)
        if any(u in self.names for u in used):
            self.gathered.add(name)

    def map_variable(self, expr: prim.Variable, scope: frozenset[str]) -> None:
        name = expr.name
        if name in self.names:
            self._access(name, (), scope)
        elif _is_index_name(name):
            self.counts[name] += 1

    def map_subscript(self, expr: prim.Subscript, scope: frozenset[str]
                      ) -> None:
        agg = expr.aggregate
        if isinstance(agg, prim.Variable) and agg.name in self.names:
            self._access(agg.name, expr.index, scope)
        index = expr.index
        if isinstance(index, tuple):
            # what rec(index) does, without its dispatch per index
            for i in index:
                if type(i) is prim.Variable:
                    self.map_variable(i, scope)
                else:
                    self.rec(i, scope)
        else:
            self.rec(index, scope)

    def visit(self, expr: object, scope: frozenset[str]) -> bool:
        # the operations of the lambda's expression, for the cost of
        # recomputing it (variables and subscripts have methods of their
        # own and are not visited here)
        if isinstance(expr, (prim.Sum, prim.Product)):
            self.ops += len(expr.children) - 1
        elif isinstance(expr, prim.Call) or (
                isinstance(expr, prim.Power)
                and not is_integral_scalar(expr.exponent)):
            self.ops += CALL_COST
        elif isinstance(expr, prim.ExpressionNode):
            self.ops += 1
        return True

    def map_reduce(self, expr: Reduce, scope: frozenset[str]) -> None:
        self.has_reduction = True
        inner = scope | frozenset(expr.bounds)
        self.rec(expr.inner_expr, inner)
        for lo, hi in expr.bounds.values():
            self.rec(lo, scope)
            self.rec(hi, scope)


class _OccurrenceCounter(WalkMapper[[]]):
    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def map_variable(self, expr: prim.Variable) -> None:
        self.counts[expr.name] += 1


def _index_factor(indices: ScalarExpression) -> int:
    """The largest number of occurrences of one variable in *indices*."""
    if not isinstance(indices, tuple):
        indices = (indices,)
    counter = _OccurrenceCounter()
    for i in indices:
        if type(i) is prim.Variable:
            counter.counts[i.name] += 1
        elif not isinstance(i, SCALAR_CLASSES):
            counter(i)
    return max(counter.counts.values(), default=1)


def _index_dependencies(indices: ScalarExpression) -> frozenset[str]:
    """``get_dependencies(indices)``, with the names of plain variable
    indices taken directly."""
    if not isinstance(indices, tuple):
        return get_dependencies(indices)
    names: set[str] = set()
    for i in indices:
        if type(i) is prim.Variable:
            names.add(i.name)
        elif not isinstance(i, SCALAR_CLASSES):
            names.update(get_dependencies(i))
    return frozenset(names)


def _use_counts(expr: IndexLambda) -> _UseCounter:
    counter = _UseCounter(expr)
    if not isinstance(expr.expr, SCALAR_CLASSES):
        counter(expr.expr, counter.out_indices)
    return counter


def _is_size_expression(expr: Array) -> bool:
    """Whether *expr* is a 0-d integer expression of size parameters (a
    shape component), which is always inlined."""
    if expr.shape != () or expr.dtype.kind not in "iu":
        return False
    return all(isinstance(inp, SizeParam)
               for inp in expr._pt_inputs.values())

# }}}


# {{{ the policy

def get_stored_nodes(outputs: DictOfNamedArrays, *,
                     store_shared: bool = True) -> set[Array]:
    """The nodes of the graph of *outputs* (index lambdas and inputs, as
    after :func:`pytato.codegen.preprocess`) to compute into memory rather
    than inline into their users: the outputs, and the nodes chosen by the
    policy of the module documentation.

    :arg store_shared: if True (the default of the code generators), store
        every computed node read at more than one place; if False, apply
        the MPMS condition (more than one user and more than one
        materialized predecessor).

    Runs in time linear in the size of the graph.
    """
    order = [n for n in topological_order([outputs])
             if isinstance(n, IndexLambda)]
    info = {node: _use_counts(node) for node in order}
    uses: Counter[Array] = Counter()
    nusers: Counter[Array] = Counter()
    expansive: set[Array] = set()
    gathered: set[Array] = set()
    for node in order:
        node_info = info[node]
        for ary in set(node.bindings.values()):
            nusers[ary] += 1
        for name, ary in node.bindings.items():
            uses[ary] += node_info.counts.get(name, 0)
            if name in node_info.expansive:
                expansive.add(ary)
            if name in node_info.gathered:
                gathered.add(ary)

    stored: set[Array] = set(outputs._data.values())
    depth: dict[Array, int] = {}
    growth: dict[Array, int] = {}
    reduces: dict[Array, bool] = {}
    cost: dict[Array, int] = {}
    # materialized predecessors (by id of the stored node) of inlined nodes
    mat_preds: dict[Array, frozenset[int]] = {}

    def is_inlined(ary: Array) -> bool:
        return ary in depth and ary not in stored

    def preds_of(ary: Array) -> frozenset[int]:
        if isinstance(ary, IndexLambda) and is_inlined(ary):
            return mat_preds[ary]
        if isinstance(ary, IndexLambda) or isinstance(ary, InputArgumentBase):
            return frozenset({id(ary)})
        return frozenset()

    for node in order:
        node_info = info[node]
        may_store = not (node.tags_of_type(ImplInlined)
                         or node.tags_of_type(ImplSubstitution)
                         or _is_size_expression(node))
        preds: frozenset[int] = frozenset()
        if not store_shared:
            # (only the MPMS condition reads materialized predecessors)
            for b in set(node.bindings.values()):
                if not _is_size_expression(b):
                    preds = preds | preds_of(b)
        inlined_kids = [(name, b) for name, b in node.bindings.items()
                        if is_inlined(b)]
        kids = [b for _, b in inlined_kids]
        reduces[node] = node_info.has_reduction or any(reduces[k] for k in kids)
        node_cost = node_info.ops + sum(
            cost[k] * node_info.counts.get(name, 0) for name, k in inlined_kids)
        if node.tags_of_type(ImplStored):
            stored.add(node)
        elif may_store:
            if store_shared:
                if uses[node] > 1 and (
                        reduces[node]
                        or node_cost * (uses[node] - 1) > MAX_SHARED_RECOMPUTE):
                    stored.add(node)
            elif nusers[node] > 1 and len(preds) > 1:
                stored.add(node)
            if node in gathered:
                stored.add(node)
        if reduces[node] and node in expansive and may_store:
            stored.add(node)
        factors = node_info.index_factor
        kid_growth = {k: growth[k] * factors.get(name, 1)
                      for name, k in inlined_kids}
        g = max(max(factors.values(), default=1),
                max(kid_growth.values(), default=1))
        if g > MAX_INDEX_GROWTH:
            for k, kg in kid_growth.items():
                if kg > 1 and not _is_size_expression(k):
                    stored.add(k)
            kids = [k for k in kids if k not in stored]
            g = max(max(factors.values(), default=1),
                    max((kg for k, kg in kid_growth.items() if k not in stored),
                        default=1))
        d = 1 + max((depth[k] for k in kids), default=0)
        if d > MAX_INLINE_DEPTH and not _is_size_expression(node):
            stored.add(node)
        if len(kids) < len(inlined_kids):
            # children stored for index growth: the node reads them now
            node_cost = node_info.ops + sum(
                cost[k] * node_info.counts.get(name, 0)
                for name, k in inlined_kids if k not in stored)
        if node_cost > MAX_INLINE_COST and may_store:
            stored.add(node)
        if node in stored or node.tags_of_type(ImplSubstitution):
            d, g, node_cost = 0, 1, 0
            reduces[node] = False
        depth[node] = d
        growth[node] = g
        cost[node] = node_cost
        mat_preds[node] = preds
    return stored

# }}}


# {{{ as a transform

class _Lowerer(CopyMapper):
    def map_array(self, expr: Array) -> Array:
        new = super().map_array(expr)
        if getattr(type(new), "_mapper_method", None) in _LOWERABLE:
            return to_index_lambda(new)
        return new


class _Tagger(CopyMapper):
    def __init__(self, to_tag: set[Array]) -> None:
        super().__init__()
        self.to_tag = to_tag

    def map_array(self, expr: Array) -> Array:
        new = super().map_array(expr)
        if expr in self.to_tag:
            return new.tagged(ImplStored())
        return new


def materialize_with_mpms(expr: Array | DictOfNamedArrays
                          ) -> Array | DictOfNamedArrays:
    """Tag :class:`~pytato.tags.ImplStored` the nodes of *expr* that the
    MPMS policy (see the module documentation) materializes: nodes with more
    than one user and more than one materialized predecessor, reductions
    read broadcast, arrays read by non-affine gathers, and nodes cutting
    over-long inlined chains. Outputs and inputs are not tagged (they are
    in memory anyway).

    The decisions are those of :func:`get_stored_nodes` with
    ``store_shared=False`` on the graph with its index-remapping nodes and
    einsums lowered to index lambdas (the graph code generators see).
    """
    outputs = (DictOfNamedArrays({"_pt_out": expr}) if isinstance(expr, Array)
               else expr)
    lowerer = _Lowerer()
    lowered = lowerer(outputs)
    stored = get_stored_nodes(lowered, store_shared=False)
    output_arrays = set(outputs._data.values())
    to_tag = set()
    for node in topological_order([outputs]):
        if (not isinstance(node, Array) or isinstance(node, InputArgumentBase)
                or node in output_arrays or node.tags_of_type(ImplStored)):
            continue
        image = lowerer.rec(node)
        if image in stored:
            to_tag.add(node)
    if not to_tag:
        return expr
    result = _Tagger(to_tag)(outputs)
    if isinstance(expr, Array):
        return result._data["_pt_out"]
    return result

# }}}


# {{{ upstream's MPMS mapper

@dataclass(frozen=True, eq=True)
class MPMSMaterializerAccumulator:
    """What :class:`MPMSMaterializer` returns for a node: the node (tagged
    :class:`~pytato.tags.ImplStored` if materialized) and its materialized
    predecessors (the node itself if it is materialized).

    .. attribute:: materialized_predecessors
    .. attribute:: expr
    """

    materialized_predecessors: frozenset[Array]
    expr: ArrayOrNames


class MPMSMaterializerCache(TransformMapperCache[ArrayOrNames, []]):
    """The cache of a :class:`MPMSMaterializer` (upstream's name)."""


class MPMSMaterializer(CachedMapper[MPMSMaterializerAccumulator, None, []]):
    """Upstream's one-pass form of the MPMS rule: a node is materialized
    (tagged :class:`~pytato.tags.ImplStored`) if it has more than one
    successor and more than one materialized predecessor, or if it is in
    *already_materialized_nodes*. Inputs count as materialized.
    :func:`materialize_with_mpms` applies the fuller policy of
    :func:`get_stored_nodes`.

    :arg successors: the users of each node (see
        :func:`pytato.analysis.get_list_of_users`).
    """

    def __init__(self, successors: Mapping[Array, list[ArrayOrNames]],
                 already_materialized_nodes: frozenset[Array],
                 _cache: MPMSMaterializerCache | None = None) -> None:
        super().__init__(_cache=_cache)  # type: ignore[arg-type]
        self.successors = successors
        self.already_materialized_nodes = already_materialized_nodes

    def clone_for_callee(self, function: FunctionDefinition) -> MPMSMaterializer:
        raise UnsupportedFeatureError(
            "MPMSMaterializer does not map the bodies of called functions")

    def map_array(self, expr: Array) -> MPMSMaterializerAccumulator:
        kids = expr._pt_kids
        accs = [self.rec(k) for k in kids]
        new_kids = tuple(a.expr for a in accs)
        new: Array = expr
        if any(a is not b for a, b in zip(kids, new_kids, strict=True)):
            names, skel = flatten_for_pickle(expr)
            new = unflatten(type(expr), names, skel, new_kids,
                            expr.non_equality_tags)
        if isinstance(expr, InputArgumentBase):
            return MPMSMaterializerAccumulator(frozenset([new]), new)
        preds: frozenset[Array] = frozenset().union(
            *(a.materialized_predecessors for a in accs))
        if (expr in self.already_materialized_nodes
                or new.tags_of_type(ImplStored)
                or (len(self.successors.get(expr, ())) > 1 and len(preds) > 1)):
            new = new.tagged(ImplStored())
            return MPMSMaterializerAccumulator(frozenset([new]), new)
        return MPMSMaterializerAccumulator(preds, new)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays
                                 ) -> MPMSMaterializerAccumulator:
        # (the arrays of the dictionary map to arrays)
        new = {k: cast("Array", self.rec(v).expr)
               for k, v in expr._data.items()}
        result = (expr if all(new[k] is v for k, v in expr._data.items())
                  else DictOfNamedArrays(new, tags=expr.tags))
        return MPMSMaterializerAccumulator(frozenset(), result)

    # an entry of a DictOfNamedArrays: mapped with its container
    map_named_array = map_array

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
