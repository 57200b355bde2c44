"""Loop fusion: computing several stored arrays in one loop nest.

:func:`~pytato.target.loopy.lower.graph.build_translation_unit` emits one
instruction per stored array (outputs, shared subexpressions, ...), each
over loops of its own. :func:`fuse_loop_nests` then lets instructions share
their loops where that cannot change results, and keeps values that never
leave a loop nest in registers:

* **Fusible instructions** are the plain stores of the code generator
  (``a[i, j] = expr``) without reductions or substitution rules, over at
  least one axis. Their loops may carry tags (those of their arrays'
  axes): stores share loops only where these carry the same tags axis by
  axis (as all stores do after :func:`pytato.unify_axes_tags`), so that no
  loop loses the tags a transformation may look it up by.
* **Levels.** An instruction reading another one *elementwise* (every read
  is at exactly its own output indices, and its shape is that of the other
  one or, with constant extents, a box of it at the origin: the same rank,
  each extent at most the other's, as after slicing ``x[:-1]`` or a roll
  and a slice that cancel) may run in the same iteration as the
  instruction it reads. Any other read
  (shifted, transposed, gathered, inside a reduction) needs the whole array
  first. The level of an instruction is the largest number of
  non-elementwise reads along a chain of dependencies leading to it
  (reads of or by non-fusible instructions, and reads between stores
  whose loops carry different tags, count as non-elementwise).
* **Loop nests.** Fusible instructions of one level and one shape share
  their loops (the loops of the first of them). An instruction of a smaller
  shape joins the nest of the instructions it reads elementwise (if they
  are in one nest: else its level rises), guarded by predicates on the
  nest's loop indices (``i < n``). A nest holds at most
  :data:`MAX_NEST_SIZE` instructions; the next ones start a nest of the
  next level. Every dependency between
  two different nests goes from a lower level to a higher one, so the nests
  can run one after the other: fusion never needs a value before it is
  computed.
* **Private temporaries.** A temporary array written in a nest and read
  only elementwise in that same nest becomes a scalar in private memory
  (a register): it never reaches global memory. A stored array that is also
  read outside its nest (or is an output) is computed into a private scalar
  that its readers in the nest use, and copied to global memory once.

The pass runs in time linear in the size of the kernel and leaves kernels
with calls or other instruction kinds alone. The assignments of reduction
bounds to private temporaries
(:mod:`~pytato.target.loopy.lower.reduction_bounds`) stay in the loops of
their reduction (never fused); the arrays they read are read globally.

.. autodata:: MAX_NEST_SIZE
.. autofunction:: fuse_loop_nests
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import (
    Reduction as LoopyReduction,
    UncachedIdentityMapper as _LoopyIdentityMapper,
)
from pymbolic.typing import Expression

from pytato.target.loopy.loopy_walk import UncachedLoopyWalkMapper
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from pytato.target.loopy.lower.graph import CodeGenState


__all__ = ["MAX_NEST_SIZE", "fuse_loop_nests"]


MAX_NEST_SIZE = 128
"""The most stores fused into one loop nest: a longer run of stores that
could share loops (e.g. a chain of thousands of elementwise steps) is cut
into nests of this many, one device kernel each, as OpenCL compilers take
time superlinear in the size of a kernel."""


@dataclass
class _Store:
    """One plain store instruction, as :meth:`CodeGenState.store` made it."""

    insn_id: str
    name: str
    inames: tuple[str, ...]
    shape: tuple[Expression, ...]
    domain_index: int | None


class _AccessCollector(UncachedLoopyWalkMapper):
    """Collects, per array name of interest, the index tuples it is read at
    (``None`` for a read without subscript), and whether the expression has
    reductions or calls to substitution rules."""

    def __init__(self, names: Mapping[str, object], rules: frozenset[str]) -> None:
        super().__init__()
        self.names = names
        self.rules = rules
        self.accesses: dict[str, set[object]] = {}
        self.opaque = False

    def map_subscript(self, expr: prim.Subscript, *args: object) -> None:
        agg = expr.aggregate
        if isinstance(agg, prim.Variable) and agg.name in self.names:
            idx = expr.index if isinstance(expr.index, tuple) else (expr.index,)
            self.accesses.setdefault(agg.name, set()).add(
                tuple(_fold_constants(i) for i in idx))
            self.rec(expr.index)
            return
        super().map_subscript(expr)

    def map_variable(self, expr: prim.Variable, *args: object) -> None:
        if expr.name in self.names:
            self.accesses.setdefault(expr.name, set()).add(None)

    def map_call(self, expr: prim.Call, *args: object) -> None:
        fn = expr.function
        if isinstance(fn, prim.Variable) and fn.name in self.rules:
            self.opaque = True
        super().map_call(expr)

    def map_reduction(self, expr: LoopyReduction, *args: object) -> None:
        self.opaque = True
        self.rec(expr.expr)



def _fold_constants(index: Expression) -> Expression:
    """*index* with the integer terms of a sum added up (``1 + i + 19 +
    -20`` is ``i``, as slices of rolls index), so that reads at an
    array's own indices are recognized."""
    if not isinstance(index, prim.Sum):
        return index
    const = 0
    terms = []
    stack = list(reversed(index.children))
    while stack:
        c = stack.pop()
        if isinstance(c, prim.Sum):
            stack.extend(reversed(c.children))
        elif type(c) is int:
            const += c
        else:
            terms.append(c)
    if const:
        terms.append(const)
    if len(terms) == 1:
        return terms[0]
    return prim.Sum(tuple(terms)) if terms else 0


class _Rewriter(_LoopyIdentityMapper):
    """Renames loop variables and redirects array reads: reads of arrays in
    *to_scalar* at any index become reads of the named scalar."""

    def __init__(self, renames: Mapping[str, str],
                 to_scalar: Mapping[str, str]) -> None:
        super().__init__()
        self.renames = renames
        self.to_scalar = to_scalar

    def map_variable(self, expr: prim.Variable, *args: object) -> Any:
        new = self.renames.get(expr.name)
        return prim.Variable(new) if new is not None else expr

    def map_subscript(self, expr: prim.Subscript, *args: object) -> Any:
        agg = expr.aggregate
        if isinstance(agg, prim.Variable) and agg.name in self.to_scalar:
            return prim.Variable(self.to_scalar[agg.name])
        return prim.Subscript(self.rec(agg), self.rec(expr.index))

    def map_call(self, expr: prim.Call, *args: object) -> Any:
        return prim.Call(expr.function,
                         tuple(self.rec(p) for p in expr.parameters))


#: a loop nest: (level, shape, the tags of its loops axis by axis)
_NestKey = tuple[int, tuple[Expression, ...], tuple[frozenset[object], ...]]


def _within(small: tuple[Expression, ...], big: tuple[Expression, ...]
            ) -> bool:
    """Whether an array of shape *small* indexes a sub-box (at the origin)
    of one of shape *big*: the same rank, each extent equal or a smaller
    integer."""
    if len(small) != len(big):
        return False
    return all(a == b or (type(a) is int and type(b) is int and a <= b)
               for a, b in zip(small, big, strict=True))


def fuse_loop_nests(state: CodeGenState, stores: Sequence[_Store]) -> None:
    """Fuse the loop nests of the instructions of *state* (see the module
    documentation), in place: instructions, domains and temporaries of
    *state* are rewritten. *stores* describes the plain store instructions
    (in the order they were emitted, children first)."""
    all_insns = state.instructions
    if not all(isinstance(i, lp.Assignment) for i in all_insns):
        return
    # assignments of reduction bounds stay in the (unfused) loops of their
    # reduction; a store depending on one depends on what it reads
    aux = {i.id: i for i in all_insns if i.id in state.bound_insn_ids}
    insns = [i for i in all_insns if i.id not in aux]
    if len(stores) != len(insns):
        return
    by_id = {s.insn_id: s for s in stores}
    if set(by_id) != {i.id for i in insns}:
        return

    def store_deps(insn: lp.InstructionBase) -> frozenset[str]:
        deps: set[str] = set()
        stack = list(insn.depends_on)
        while stack:
            d = stack.pop()
            if d in aux:
                stack.extend(aux[d].depends_on)
            else:
                deps.add(d)
        return frozenset(deps)
    writer_of = {s.name: s for s in stores}
    rules = frozenset(state.substitutions)
    rule_reads: set[str] = set()
    for rule in state.substitutions.values():
        coll = _AccessCollector(writer_of, rules)
        coll(rule.expression)
        rule_reads.update(coll.accesses)

    # {{{ fusible instructions, elementwise reads, levels

    fusible: dict[str, bool] = {}
    accesses: dict[str, dict[str, set[object]]] = {}
    for insn in insns:
        s = by_id[insn.id]
        coll = _AccessCollector(writer_of, rules)
        coll(insn.expression)
        accesses[insn.id] = coll.accesses
        fusible[insn.id] = bool(s.inames) and not coll.opaque

    def loop_tags(store: _Store) -> tuple[frozenset[object], ...]:
        # the tags of the store's loops, axis by axis (from its axes' tags)
        return tuple(state.iname_tags.get(i, frozenset()) for i in store.inames)

    def elementwise(reader: _Store, writer: _Store) -> bool:
        if not (fusible[reader.insn_id] and fusible[writer.insn_id]):
            return False
        if loop_tags(reader) != loop_tags(writer):
            # one of them would lose the tags of its loops
            return False
        if not _within(reader.shape, writer.shape) \
                or writer.name in rule_reads:
            return False
        own = tuple(prim.Variable(i) for i in reader.inames)
        return accesses[reader.insn_id].get(writer.name, set()) <= {own}

    # levels and nests, children first: a store joins the nest of the
    # stores it reads elementwise at its level (one nest at most, else its
    # level rises), by default the nest of its level and shape
    level: dict[str, int] = {}
    nest_key: dict[str, _NestKey] = {}
    nest_size: dict[_NestKey, int] = {}
    for insn in insns:
        s = by_id[insn.id]
        lev = 0
        ew_deps = []
        for dep in sorted(store_deps(insn)):
            w = by_id.get(dep)
            if w is None:
                continue
            if elementwise(s, w):
                ew_deps.append(dep)
                lev = max(lev, level[dep])
            else:
                lev = max(lev, level[dep] + 1)
        keys = {nest_key[d] for d in ew_deps if level[d] == lev}
        if len(keys) > 1 or any(nest_size[k] >= MAX_NEST_SIZE for k in keys):
            lev += 1
            keys = set()
        level[insn.id] = lev
        if fusible[insn.id]:
            key = keys.pop() if keys else (lev, s.shape, loop_tags(s))
            while nest_size.get(key, 0) >= MAX_NEST_SIZE:
                lev += 1
                level[insn.id] = lev
                key = (lev, s.shape, loop_tags(s))
            nest_key[insn.id] = key
            nest_size[key] = nest_size.get(key, 0) + 1

    # }}}

    # {{{ loop nests

    nests: dict[_NestKey, list[_Store]] = {}
    for s in stores:
        if fusible[s.insn_id]:
            nests.setdefault(nest_key[s.insn_id], []).append(s)
    nest_of: dict[str, int] = {}
    renames: dict[str, dict[str, str]] = {}
    guards: dict[str, frozenset[Any]] = {}
    drop_domains: set[int] = set()
    k: int | None
    for k, (key, members) in enumerate(nests.items()):
        lead = members[0]
        assert lead.shape == key[1]
        for s in members:
            nest_of[s.insn_id] = k
            if s is lead:
                continue
            renames[s.insn_id] = dict(zip(s.inames, lead.inames, strict=True))
            # a smaller store runs in the lead's loops where in its bounds
            guards[s.insn_id] = frozenset(
                prim.Comparison(prim.Variable(i), "<", n)
                for i, n, m in zip(lead.inames, s.shape, lead.shape,
                                   strict=True)
                if n != m)
            if s.domain_index is not None:
                drop_domains.add(s.domain_index)

    # }}}

    # {{{ private scalars

    readers: dict[str, list[str]] = {}
    for insn in insns:
        for name in accesses[insn.id]:
            readers.setdefault(name, []).append(insn.id)
    for insn in aux.values():
        coll = _AccessCollector(writer_of, rules)
        coll(insn.expression)
        for name in coll.accesses:
            readers.setdefault(name, []).append(insn.id)
    output_like = {name for name, d in state.kernel_data.items()
                   if not isinstance(d, lp.TemporaryVariable)}
    # name -> scalar read by the writer's nest mates
    scalar_of: dict[str, str] = {}
    # names whose global copy is written by an extra instruction
    copied: dict[str, str] = {}
    for s in stores:
        if not fusible[s.insn_id]:
            continue
        k = nest_of[s.insn_id]
        local_readers = []
        has_other = s.name in output_like or s.name in rule_reads
        for rid in readers.get(s.name, ()):
            if nest_of.get(rid) == k and elementwise(by_id[rid], s):
                local_readers.append(rid)
            else:
                has_other = True
        if not local_readers and has_other:
            continue
        scalar = state.names(f"{s.name}_prv") if has_other else s.name
        scalar_of[s.name] = scalar
        data = state.kernel_data.get(s.name)
        dtype = data.dtype if data is not None else None
        state.kernel_data[scalar] = lp.TemporaryVariable(
            scalar, dtype, shape=(), address_space=lp.AddressSpace.PRIVATE)
        if has_other:
            copied[s.name] = state.names(f"_pt_copy_{s.name}", try_bare=True)

    # }}}

    # {{{ rewrite

    new_insns: list[lp.InstructionBase] = []
    for insn in all_insns:
        if insn.id in aux:
            new_insns.append(insn.copy(depends_on=frozenset(
                copied.get(by_id[d].name, d) if d in by_id else d
                for d in insn.depends_on)))
            continue
        s = by_id[insn.id]
        ren = renames.get(insn.id, {})
        k = nest_of.get(insn.id)
        # reads of nest mates' scalars; other readers keep the global array
        to_scalar = {name: scalar_of[name] for name in accesses[insn.id]
                     if name in scalar_of
                     and nest_of.get(writer_of[name].insn_id) == k
                     and k is not None
                     and elementwise(s, writer_of[name])}
        mapper = _Rewriter(ren, to_scalar)
        expr = mapper(insn.expression)
        deps = frozenset(
            copied[by_id[d].name] if (d in by_id and by_id[d].name in copied
                                      and by_id[d].name not in to_scalar)
            else d for d in insn.depends_on)
        within = frozenset(ren.get(i, i) for i in insn.within_inames)
        if s.name in scalar_of:
            lhs: Expression = prim.Variable(scalar_of[s.name])
        else:
            lhs = mapper(insn.assignee)
        guard = guards.get(insn.id, frozenset())
        new_insns.append(insn.copy(assignee=lhs, expression=expr,
                                   depends_on=deps, within_inames=within,
                                   predicates=insn.predicates | guard))
        if s.name in copied:
            inames = tuple(ren.get(i, i) for i in s.inames)
            idx = tuple(prim.Variable(i) for i in inames)
            new_insns.append(lp.Assignment(
                prim.Variable(s.name)[idx], prim.Variable(scalar_of[s.name]),
                id=copied[s.name], within_inames=within,
                depends_on=frozenset({insn.id}), predicates=guard))
    state.instructions[:] = new_insns
    if drop_domains:
        state.domains[:] = [d for i, d in enumerate(state.domains)
                            if i not in drop_domains]

    # }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
