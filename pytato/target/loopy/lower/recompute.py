"""Producers into consumers: recomputing cheap stored arrays where they are
read at other indices.

A stored array ``w[i, j] = e(i, j)`` read by another store at indices other
than its own (``w[j, i]`` of a transpose, ``w[(i + 1) % n, j]`` of a roll,
``w[n - 1 - i, j]`` of a reversal, ...) makes its reader wait until all of
``w`` is written: a global barrier, so one device kernel more per such
read along a chain (see "Levels" in
:mod:`~pytato.target.loopy.lower.fusion`). Where ``e`` is cheap, the reader
computes the elements it needs itself: ``w[f(k)]`` becomes ``e(f(k))``,
``e`` with ``w``'s loop indices replaced by the read's indices, exactly as
the code generator inlines an array that is not stored. The reader then
depends on what ``w`` reads (complete before ``w`` is), not on ``w``, and
may run in the kernel of ``w`` or an earlier one.

:func:`recompute_producers` does this before loop fusion, in the order
the stores were emitted (children first), so that a chain of permutations
and arithmetic collapses into one expression over the arrays stored
before it:

* **Cheap producers** are plain stores (over at least one axis, no
  reduction, no substitution rule, no function call but ``max`` and
  ``min``: calls such as ``sin`` cost more to recompute, and math at an
  array's own indices is what
  :mod:`~pytato.target.loopy.schedule.vector_calls` vectorizes) of at
  most :data:`MAX_RECOMPUTE_NODES` expression nodes and
  :data:`MAX_RECOMPUTE_READS` array reads, that read only stored arrays
  (no private temporaries, no assignment of a reduction's bounds) and
  that no substitution rule reads.
* **Readers** are plain stores without reductions (a reduction reading a
  recomputed operand would repeat its work for every term that reads the
  same element, as in a matrix product, and loses the layouts the
  schedule finds for einsum-like reductions). A read at the reader's own
  indices, of an array of its shape and loop tags, stays a read: loop
  fusion keeps such values in registers. The reader's new expression has
  at most :data:`MAX_EXPR_NODES` nodes, else it keeps its reads.
* **Dead stores.** A temporary that no instruction, rule or output reads
  any more is no longer computed (its instruction, temporary and loop
  domain are dropped), and so on for the arrays only it read.

Values are those of the stored arrays: the expression of a store is the
value written (the code generator's stores assign the expression of the
array, of its dtype, as its inlined uses do).

.. autodata:: RECOMPUTE_PRODUCERS
.. autodata:: MAX_RECOMPUTE_NODES
.. autodata:: MAX_RECOMPUTE_READS
.. autodata:: MAX_EXPR_NODES
.. autofunction:: recompute_producers
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import (
    SubstitutionMapper as _LoopySubstitutionMapper,
    UncachedIdentityMapper as _LoopyIdentityMapper,
)
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import Expression

from pytato.target.loopy.loopy_walk import CHILDREN
from pytato.target.loopy.lower.fusion import (
    _AccessCollector,
    _fold_constants,
    _Store,
    _within,
)
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from pytato.target.loopy.lower.graph import CodeGenState


__all__ = ["MAX_EXPR_NODES", "MAX_RECOMPUTE_NODES", "MAX_RECOMPUTE_READS",
           "RECOMPUTE_PRODUCERS", "recompute_producers"]


RECOMPUTE_PRODUCERS = False
"""Whether :func:`recompute_producers` runs (called by
:func:`~pytato.target.loopy.lower.graph.build_translation_unit`). Off for
now: it drops stores that users may look up in the kernel (named or
tagged temporaries), grows recomputed chains past the bound of
:data:`pytato.transform.materialize.MAX_SHARED_RECOMPUTE`, and changes
the kernels that some tests' fixtures count; on the random DAGs of
``benchmarks/peers_dags.py`` it saves one kernel in about 30 (their
stores mostly call ``sin``, ``cos`` or ``exp``, which it leaves)."""

MAX_RECOMPUTE_NODES = 96
"""The most expression nodes of a store that its readers recompute (a
node: a sum, a product, a read, an index, a constant, ...)."""

MAX_RECOMPUTE_READS = 4
"""The most array reads of a store that its readers recompute: each is a
read per element of each reader instead of one (of the stored array), so
that stores of many operands stay stored."""

MAX_EXPR_NODES = 384
"""The most expression nodes of a reader after recomputing its producers
in it (a bound on the work added per element, and on the growth of
expressions along chains)."""


_NUMBERS = (int, float, complex)

#: Functions as cheap as arithmetic (``max`` keeps divisors of index
#: arithmetic opaque to loopy, see
#: :mod:`~pytato.target.loopy.lower.index_arith`).
_CHEAP_FUNCTIONS = frozenset({"max", "min"})


def _count_nodes(expr: Expression) -> tuple[int, bool, int] | None:
    """The number of nodes of *expr*, whether it calls a function and its
    number of array reads; None if it holds a reduction or a node of a
    type not in :data:`~pytato.target.loopy.loopy_walk.CHILDREN`."""
    count = 0
    reads = 0
    calls = False
    stack: list[Any] = [expr]
    while stack:
        e = stack.pop()
        count += 1
        t = type(e)
        reads += t is prim.Subscript
        if t is prim.Call:
            fn = e.function
            calls = calls or not (isinstance(fn, prim.Variable)
                                  and fn.name in _CHEAP_FUNCTIONS)
        children = CHILDREN.get(t)
        if children is not None:
            stack.extend(children(e))
        elif not isinstance(e, _NUMBERS) and not hasattr(e, "dtype"):
            return None
    return count, calls, reads


@dataclass(frozen=True)
class _Recipe:
    """How to compute an element of a stored array: its loop indices, the
    expression over them and the instructions it depends on."""

    store: _Store
    expression: Expression
    depends_on: frozenset[str]


class _Recompute(_LoopyIdentityMapper):
    """Replaces the reads of arrays with recipes by the recipes'
    expressions at the read indices, except the reads of arrays of *fuse*
    at the indices *own* (those stay reads)."""

    def __init__(self, recipes: Mapping[str, _Recipe], fuse: frozenset[str],
                 own: tuple[Expression, ...]) -> None:
        super().__init__()
        self.recipes = recipes
        self.fuse = fuse
        self.own = own
        self.used: set[str] = set()
        self.kept: set[str] = set()

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Any:
        agg = expr.aggregate
        if not (isinstance(agg, prim.Variable) and agg.name in self.recipes):
            return super().map_subscript(expr)
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        index = tuple(self.rec(i) for i in index)
        recipe = self.recipes[agg.name]
        if len(index) != len(recipe.store.inames) or (
                agg.name in self.fuse
                and tuple(_fold_constants(i) for i in index) == self.own):
            self.kept.add(agg.name)
            return prim.Subscript(agg, index)
        self.used.add(agg.name)
        subst = make_subst_func(dict(zip(
            recipe.store.inames, index, strict=True)))
        return _LoopySubstitutionMapper(subst)(recipe.expression)

    def map_call(self, expr: prim.Call, *args: Any) -> Any:
        return prim.Call(expr.function,
                         tuple(self.rec(p) for p in expr.parameters))


def _names_read(names: Mapping[str, Any], rules: frozenset[str],
                expr: Expression) -> tuple[dict[str, set[Any]], bool]:
    """The arrays of *names* that *expr* reads (with their indices), and
    whether it holds a reduction or a call of a substitution rule."""
    coll = _AccessCollector(names, rules)
    coll(expr)
    return coll.accesses, coll.opaque


def recompute_producers(state: CodeGenState) -> None:
    """Recompute cheap stored arrays in their readers and drop the stores
    no longer read (see the module documentation), in place: the
    instructions, stores, temporaries and domains of *state* are
    rewritten."""
    if not RECOMPUTE_PRODUCERS:
        return
    insns = state.instructions
    if not all(isinstance(i, lp.Assignment) for i in insns):
        return
    stores = state.stores
    by_id = {s.insn_id: s for s in stores}
    if len(by_id) != len(stores):
        return
    writer_of = {s.name: s for s in stores}
    rules = frozenset(state.substitutions)
    rule_reads: set[str] = set()
    for rule in state.substitutions.values():
        rule_reads.update(_names_read(writer_of, rules, rule.expression)[0])
    private = {name for name, d in state.kernel_data.items()
               if isinstance(d, lp.TemporaryVariable)
               and d.address_space == lp.AddressSpace.PRIVATE}

    def loop_tags(s: _Store) -> tuple[frozenset[Any], ...]:
        return tuple(state.iname_tags.get(i, frozenset()) for i in s.inames)

    recipes: dict[str, _Recipe] = {}
    new_insns: list[lp.InstructionBase] = []
    changed = False
    for insn in insns:
        s = by_id.get(insn.id)
        if s is None:
            new_insns.append(insn)
            continue
        accesses, opaque = _names_read(writer_of, rules, insn.expression)
        expr = insn.expression
        deps = frozenset(insn.depends_on)
        if not opaque and not recipes.keys().isdisjoint(accesses):
            # reads at the own indices of an array of the reader's shape
            # and loop tags stay reads (fusion keeps them in registers)
            fuse = frozenset(
                name for name in accesses
                if name in recipes and s.inames
                and _within(s.shape, recipes[name].store.shape)
                and loop_tags(s) == loop_tags(recipes[name].store))
            mapper = _Recompute(recipes, fuse,
                                tuple(prim.Variable(i) for i in s.inames))
            new_expr = mapper(expr)
            counted = _count_nodes(new_expr) if mapper.used else None
            if counted is not None and counted[0] <= MAX_EXPR_NODES:
                # (a recomputed array may be read by another recipe: its
                # writer is dropped first, then the recipes' dependencies
                # added)
                new_deps = set(deps) - {
                    recipes[name].store.insn_id
                    for name in mapper.used - mapper.kept}
                for name in mapper.used:
                    new_deps |= recipes[name].depends_on
                expr, deps = new_expr, frozenset(new_deps)
                insn = insn.copy(expression=expr, depends_on=deps)
                changed = True
        new_insns.append(insn)
        # is it a cheap producer?
        if not s.inames or opaque or s.name in rule_reads \
                or not deps <= by_id.keys():
            continue
        counted = _count_nodes(expr)
        if counted is None or counted[1] or counted[0] > MAX_RECOMPUTE_NODES \
                or counted[2] > MAX_RECOMPUTE_READS:
            continue
        if not private.isdisjoint(
                _names_read(state.kernel_data, rules, expr)[0]):
            continue
        recipes[s.name] = _Recipe(s, expr, deps)
    if not changed:
        return
    state.instructions[:] = new_insns
    _drop_dead_stores(state)


def _drop_dead_stores(state: CodeGenState) -> None:
    """Drop the stores of temporaries that nothing reads (their
    instructions, temporaries and domains), until none is left."""
    stores = state.stores
    writer_of = {s.name: s for s in stores}
    rules = frozenset(state.substitutions)
    kept_names = {name for name, d in state.kernel_data.items()
                  if not isinstance(d, lp.TemporaryVariable)}
    for rule in state.substitutions.values():
        kept_names.update(_names_read(writer_of, rules, rule.expression)[0])
    readers: dict[str, set[str]] = {}
    reads_of: dict[str, set[str]] = {}
    for insn in state.instructions:
        names = set(_names_read(writer_of, rules, insn.expression)[0])
        reads_of[insn.id] = names
        for name in names:
            readers.setdefault(name, set()).add(insn.id)
    dead: set[str] = set()
    work = [s for s in stores if s.name not in kept_names
            and not readers.get(s.name)]
    while work:
        s = work.pop()
        if s.insn_id in dead:
            continue
        dead.add(s.insn_id)
        for name in reads_of.get(s.insn_id, ()):
            users = readers.get(name)
            if users is None:
                continue
            users.discard(s.insn_id)
            w = writer_of.get(name)
            if not users and w is not None and name not in kept_names:
                work.append(w)
    if not dead:
        return
    dead_names = {by.name for by in stores if by.insn_id in dead}
    dropped_domains = {s.domain_index for s in stores
                       if s.insn_id in dead and s.domain_index is not None}
    shift: dict[int, int] = {}
    k = 0
    for i in range(len(state.domains)):
        if i in dropped_domains:
            continue
        shift[i] = k
        k += 1
    state.instructions[:] = [i for i in state.instructions
                             if i.id not in dead]
    for i, insn in enumerate(state.instructions):
        if insn.depends_on & dead:
            # (a dead store is read by no one: only stale dependencies)
            state.instructions[i] = insn.copy(
                depends_on=insn.depends_on - dead)
    state.domains[:] = [d for i, d in enumerate(state.domains)
                        if i not in dropped_domains]
    state.stores[:] = [
        replace(s, domain_index=None if s.domain_index is None
                else shift[s.domain_index])
        for s in stores if s.insn_id not in dead]
    for name in dead_names:
        del state.kernel_data[name]


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
