"""Tiling of small reductions (einsum-like loop nests) in local and
private memory.

A loop nest computing ``out[e, i] = sum_j D[i, j]*u[e, j]`` (e.g.
``einsum("ij,ej->ei", D, u)``, a DG-like operator: a small matrix applied
to the values of many elements) scheduled one output per work-item reads
``D`` at as many rows per ``j`` as there are work-items in a warp, and
``u[e, :]`` once per output of the element. :func:`tile_small_reduction`
stages such operands in faster memory, per work-group:

* **Blocking.** The output axes are cut into *inner* axes, the longest
  suffix of constant extents whose product ``N`` fits in a work-group, and
  *batch* axes, the others (constant extents, except the first, which may be
  symbolic). A work-group computes all outputs of ``K`` consecutive blocks
  of ``Eb`` consecutive batch elements (flat index over the batch axes),
  one block after the other in a sequential loop: a ``N x Eb``
  work-group, ``l.0`` over the inner axes (row-major, joined), ``l.1``
  over the elements of a block, ``g.0`` over the groups. The outputs of a
  block are one contiguous range of the (row-major) result, so that stores
  stay coalesced. ``Eb`` is the largest number of elements that fits in
  *group_size* work-items (and in the local memory budget).
* **Several elements per work-item.** With rows kept in private memory
  (below), a block holds ``M Eb`` elements and each work-item computes
  ``M`` of them (``t, t + Eb, ...``, in an unrolled loop), reusing its row
  of ``D`` ``M`` times per block; the loads of a block are unrolled too,
  so that each work-item has ``M`` loads in flight before the barrier.
  ``M`` is as large as the block's local arrays fit in the device's local
  memory less
  :data:`~pytato.target.loopy.device.ITEM_LOCAL_MEMORY_RESERVE` (at most
  :data:`~pytato.target.loopy.schedule.tiling_plan.MAX_ELEMENTS_PER_ITEM`), with one
  block per group. On NVIDIA GPUs (``einsum("ij,ej->ei")`` of many
  elements, hand-written kernels of this structure), many elements per
  work-item in one block were faster than one element per work-item in
  many blocks, and than several blocks of many elements each. Where the
  last block is cut at the end of the batch, only the stores are
  guarded: each work-item's sums go to a private array first
  (unguarded, one straight-line block), which was faster than guarding
  the sums. The largest ``M`` that fits was the fastest, hence the
  budget of all the local memory but a reserve
  (``benchmarks/bench_kernels.py`` and ``benchmarks/bench_tiling.py``
  time these variants).
* **Staged operands.** An array access in the reduction that depends on the
  reduction iname, and whose indices are plain inames, is staged when it
  is re-read by several work-items of a group or by several blocks:

  - *rows* (register blocking): an access depending on no batch axis but
    on inner axes (and the reduction iname) only, like ``D[i, j]``, when
    there are batch axes. Each work-item copies its row ``D[i, :]`` once
    into a private array (of the reduction's extent, at most
    :data:`~pytato.target.loopy.schedule.tiling_plan.PRIVATE_MEMORY_BUDGET` bytes
    for all rows) and keeps it for all
    ``K`` blocks. The copy and the reduction run in unrolled loops
    (``unr``), so that the row is only indexed by constants: registers.
    The reduction, its iname tagged, is realized by :mod:`loopy`
    (:mod:`pytato.target.loopy.schedule.accumulators` leaves tagged reductions alone).
  - *shared* operands depending on no batch axis that are not rows (the
    vector of ``ij,j->i``, or any shared operand of a nest without batch
    axes): the whole of it is copied into a local array by every group,
    once.
  - *blocked* operands depending on batch axes but not on all output
    axes (``u[e, j]``, shared by the ``N`` work-items of element ``e``):
    the block's ``Eb`` elements of it are copied into a local array, once
    per block.

  - *per-element* operands depending on all output axes, indexed by the
    batch axes first and the reduction iname last (``A[e, i, j]`` of a
    batched ``eij,ej->ei``): each value is read by one work-item only, but
    at a stride of the reduction's extent between neighbouring
    work-items. The block (contiguous in memory) is copied into a local
    array with coalesced loads, once per block, when it fits the local
    memory budget next to the other staged operands (else it stays in
    global memory). On NVIDIA GPUs (the batched ``eij,ej->ei`` of
    ``benchmarks/bench_kernels.py``) this brought the kernel close to the
    copy bandwidth, from well below it with one output per work-item;
    a few or many elements per group were as fast, several blocks
    per group were slower.

  Other accesses depending on all output axes are read by one work-item
  each along the contiguous axis (already coalesced) and stay in global
  memory.
* **Loads.** The work-items of the group copy each local block through
  their flat index (consecutive work-items read consecutive elements of the
  block, in the index order of the access: coalesced for row-major arrays),
  several elements each if the block is larger than the group, guarded
  where the block or the batch ends. The last axis of local arrays of two
  or more axes is padded to an odd length (e.g. 21 for 20), so that reading
  a column (fixed ``j``, work-items along the rows) hits distinct banks.
* **Barriers.** With one block per group, loopy inserts the local barrier
  between the loads and the computation. With several, the block loop
  holds two explicit ones: after the block's loads, and after its
  computation (before the next block overwrites the local arrays). The
  loop has ``K`` iterations in every group, so that all work-items reach
  the barriers; blocks past the end of the batch (in the last group) are
  guarded by predicates, as are elements past it.

Why blocks and rows: with ``D`` in local memory and one block per group,
all of ``D`` was copied by every group of only a few elements, and every
term of ``ij,ej->ei`` read two doubles from local memory (``D_local[i,
j]`` at ``N`` distinct addresses per warp, ``u_local[e, j]`` broadcast).
On NVIDIA GPUs (``benchmarks/bench_tiling.py``), most of the gain is from
the blocks, which amortize the copy of ``D`` and the group's start, a
little from the rows, which halve the local memory reads.
``K`` (:data:`~pytato.target.loopy.schedule.tiling_plan.DEFAULT_BLOCKS`) is lowered
for small batches so that at least
:data:`~pytato.target.loopy.schedule.tiling_plan.MIN_GROUPS_PER_UNIT` groups per
compute unit remain (when the default schedule gives the number of
compute units). Without batch axes all outputs are computed by one group
and nothing is reused across blocks: shared operands stay in local
memory.

Tiling applies to an instruction alone in its loop nest, storing over
exactly its output inames (at least one), whose expression holds one sum
reduction over one iname of constant extent at most
:data:`~pytato.target.loopy.schedule.tiling_plan.MAX_REDUCTION_EXTENT`, with at
least one shared (a row or not) or
per-element operand, when the local arrays fit in
:data:`~pytato.target.loopy.schedule.tiling_plan.LOCAL_MEMORY_BUDGET` bytes.
Anything else (symbolic inner extents, domains that are not boxes starting
at 0, reductions with other operations or several inames) is left to the
caller.

The default schedule (:mod:`pytato.target.loopy.schedule.default`) applies it on
GPUs only. On PoCL (CPU), the tiled ``ij,ej->ei`` of
``benchmarks/bench_kernels.py`` (``D`` in local memory, one block per
group) was slower than one output per work-item, whatever the size of
the groups: there, the rows of
``D`` are cache hits, and the work-group barrier splits PoCL's work-item
loops. ``benchmarks/bench_tiling.py`` times the variants (flat, local,
private rows with several ``K``) against each other.

Deciding and rewriting are separate
(:func:`~pytato.target.loopy.schedule.tiling_plan.plan_tiling`, and
:func:`apply_tilings` here), so that the default schedule rewrites the kernel
once for all tiled nests (each rewrite copies the kernel, which made
tiling nest by nest quadratic in the number of nests).
:func:`tile_small_reduction` does both for one instruction.

.. autofunction:: tile_small_reduction
.. autofunction:: apply_tilings
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import GroupInameTag, Iname, LocalInameTag, UnrollTag
from loopy.symbolic import (
    IdentityMapper as LoopyIdentityMapper,
    SubstitutionMapper,
    aff_from_expr,
)
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import ArithmeticExpression, Expression

import pytato.target.loopy.device as device
from pytato.target.loopy.schedule import tiling_plan
from pytato.target.loopy.schedule.analysis import _prod
from pytato.target.loopy.schedule.tiling_plan import (
    LOCAL_MEMORY_BUDGET,
    MAX_ELEMENTS_PER_ITEM,
    TilingPlan,
    _global_dtype,
    _Staged,
    plan_tiling,
)


__all__ = [
    "apply_tilings",
    "tile_small_reduction",
]

#: The constants this module documented before the planning moved to
#: :mod:`~pytato.target.loopy.schedule.tiling_plan` (and the budgets of the
#: device to :mod:`pytato.target.loopy.device`): still readable here.
_MOVED_CONSTANTS = {
    "MAX_REDUCTION_EXTENT": tiling_plan,
    "PRIVATE_MEMORY_BUDGET": tiling_plan,
    "DEFAULT_BLOCKS": tiling_plan,
    "MIN_GROUPS_PER_UNIT": tiling_plan,
    "ITEM_LOCAL_MEMORY_BUDGET": device,
    "ITEM_LOCAL_MEMORY_RESERVE": device,
}


def __getattr__(name: str) -> object:
    module = _MOVED_CONSTANTS.get(name)
    if module is None:
        raise AttributeError(
            f"module 'pytato.target.loopy.schedule.tiling' has no attribute "
            f"{name!r}")
    return getattr(module, name)


# {{{ rewriting

def _unflatten(flat: ArithmeticExpression, extents: list[int]
               ) -> list[ArithmeticExpression]:
    """The row-major multi-index of *flat* in a box of *extents* (the first
    extent is not used: *flat* is not reduced modulo the box size)."""
    result: list[ArithmeticExpression] = []
    for k, n in enumerate(extents):
        stride = _prod(extents[k + 1:])
        e: ArithmeticExpression = flat if stride == 1 else prim.FloorDiv(flat, stride)
        if k > 0:
            e = 0 if n == 1 else prim.Remainder(e, n)
        result.append(e)
    return result


class _ReplaceAccesses(LoopyIdentityMapper):
    def __init__(self, replacements: dict[prim.Subscript, Expression]
                 ) -> None:
        super().__init__()
        self.replacements = replacements

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Expression:
        new = self.replacements.get(expr)
        if new is not None:
            return new
        return super().map_subscript(expr, *args)


def _box_domain(names: list[str], extents: list[int],
                params: list[str] | None = None) -> isl.BasicSet:
    """``{ [names] : 0 <= name < extent }`` (with *params*)."""
    space = isl.Space.create_from_names(isl.DEFAULT_CONTEXT, set=names,
                                        params=params or [])
    dom = isl.BasicSet.universe(space)
    for name, n in zip(names, extents, strict=True):
        dom = dom.add_constraint(isl.Constraint.ineq_from_names(
            space, {name: 1}))
        dom = dom.add_constraint(isl.Constraint.ineq_from_names(
            space, {1: n - 1, name: -1}))
    return dom


@dataclass(frozen=True)
class _Grid:
    """The work-groups of a plan: group iname *group* (``g.0``), local
    axes ``l.0`` over the *n_inner* inner outputs and ``l.1`` over the *eb*
    elements of a block (axes of extent 1 are left out), and the
    sequential iname *block* over the *blocks* blocks of a group (None if
    one block)."""

    group: str
    n_inner: int
    eb: int
    blocks: int = 1
    block: str | None = None
    #: elements of a block per work-item (``M``): a block holds ``M eb``
    per_item: int = 1

    @property
    def block_elements(self) -> int:
        return self.eb * self.per_item

    @property
    def extents(self) -> list[int]:
        return [n for n in (self.n_inner, self.eb) if n > 1]

    @property
    def size(self) -> int:
        return self.n_inner * self.eb

    def local_inames(self, vng: Callable[[str], str], prefix: str
                     ) -> list[str]:
        """New inames for the local axes."""
        return [vng(f"{prefix}_{suffix}")
                for suffix, n in (("inner", self.n_inner), ("elem", self.eb))
                if n > 1]

    def tagged(self, names: list[str]) -> dict[str, Iname]:
        """The local inames *names*, tagged with their local axes."""
        return {n: Iname(n, frozenset([LocalInameTag(k)]))
                for k, n in enumerate(names)}

    def inner_and_elem(self, names: list[str]
                       ) -> tuple[ArithmeticExpression, ArithmeticExpression]:
        """The inner output and the element in the block of the work-item
        with local inames *names*."""
        it = iter(prim.Variable(n) for n in names)
        return (next(it) if self.n_inner > 1 else 0,
                next(it) if self.eb > 1 else 0)

    @property
    def outer_inames(self) -> list[str]:
        """The group iname, and the block iname if any."""
        return [self.group] + ([self.block] if self.block else [])

    def block_index(self) -> ArithmeticExpression:
        """The (global) index of the current block."""
        g = prim.Variable(self.group)
        if self.block is None:
            return g
        return prim.flattened_sum((g * self.blocks, prim.Variable(self.block)))

    def block_start(self) -> ArithmeticExpression:
        """The first (flat) element of the current block."""
        return (self.block_index() * self.block_elements
                if self.block_elements > 1 else self.block_index())

    def linear_id(self, names: list[str]) -> ArithmeticExpression:
        """The flat index of the work-item with local inames *names*."""
        terms: list[ArithmeticExpression] = []
        stride = 1
        for name, n in zip(names, self.extents, strict=True):
            terms.append(prim.Variable(name) * stride if stride > 1
                         else prim.Variable(name))
            stride *= n
        return prim.flattened_sum(terms) if terms else 0


def _batch_index(plan: TilingPlan, flat: ArithmeticExpression
                 ) -> dict[str, ArithmeticExpression]:
    """The values of the batch inames at the flat batch index *flat*."""
    if not plan.batch:
        return {}
    # the first extent, maybe symbolic, is not used
    extents = [1] + [plan.lengths[v] for v in plan.batch[1:]]
    return dict(zip(plan.batch, _unflatten(flat, extents), strict=True))


def _cut(plan: TilingPlan, grid: _Grid) -> bool:
    """Whether the blocks of the last group may end past the end of the
    batch (the first block of a group starts before it)."""
    per_group = grid.block_elements * grid.blocks
    return per_group > 1 and not (isinstance(plan.n_batch, int)
                                  and plan.n_batch % per_group == 0)


@dataclass
class _Rewrite:
    """What :func:`apply_tilings` changes in the kernel, for all plans."""

    domains: list[isl.BasicSet]
    new_domains: list[isl.BasicSet]
    insns: dict[str, lp.InstructionBase]
    added: list[lp.InstructionBase]
    inames: dict[str, Iname]
    temporaries: dict[str, lp.TemporaryVariable]
    silenced: set[str]
    vng: Callable[[str], str]
    ids: Callable[[str], str]


def _load(rw: _Rewrite, plan: TilingPlan, grid: _Grid, s: _Staged,
          name: str) -> lp.Assignment:
    """The instruction (and its domain and inames, added to *rw*) copying
    the block of *s* into the local array *name*: the work-items of the
    group take consecutive elements of the (unpadded, row-major) block, in
    ``ceil(size/group size)`` steps; blocked operands once per block,
    shared ones once per group."""
    local = grid.local_inames(rw.vng, name)
    rw.inames.update(grid.tagged(local))
    q = grid.linear_id(local)
    steps = -(-s.size // grid.size)
    if steps > 1:
        step = rw.vng(f"{name}_step")
        # several elements per work-item: the loads of a block unrolled,
        # all in flight before the barrier
        rw.inames[step] = Iname(step, frozenset(
            [UnrollTag()] if s.blocked and grid.per_item > 1
            and steps <= MAX_ELEMENTS_PER_ITEM else []))
        q = prim.flattened_sum((q, prim.Variable(step) * grid.size))
        rw.new_domains.append(_box_domain([*local, step],
                                          [*grid.extents, steps]))
        local.append(step)
    else:
        rw.new_domains.append(_box_domain(local, grid.extents))
    coords = _unflatten(q, list(s.shape))
    predicates = []
    if steps * grid.size != s.size:
        predicates.append(prim.Comparison(q, "<", s.size))
    unbatched = [v for v in s.inames if v not in plan.batch]
    index = dict(zip(unbatched, coords[1:] if s.blocked else coords,
                     strict=True))
    outer = grid.outer_inames if s.blocked else [grid.group]
    if s.blocked:
        index.update(_batch_index(plan, prim.flattened_sum(
            (grid.block_start(), coords[0]))))
        if _cut(plan, grid):
            # the block is cut at the end of the batch
            row = s.size // grid.block_elements
            predicates.append(prim.Comparison(
                prim.flattened_sum(
                    (grid.block_index() * (grid.block_elements * row), q)),
                "<", plan.n_batch * row))
    insn = rw.insns[plan.insn_id]
    return lp.Assignment(
        prim.Variable(name)[tuple(coords)],
        s.expr.aggregate[tuple(index[v] for v in s.inames)],
        id=rw.ids(f"{plan.insn_id}_load_{s.expr.aggregate.name}"),
        within_inames=frozenset([*outer, *local]),
        depends_on=insn.depends_on,
        predicates=frozenset(predicates))


def _load_row(rw: _Rewrite, plan: TilingPlan, grid: _Grid, s: _Staged,
              name: str, local: list[str],
              inner: dict[str, ArithmeticExpression]
              ) -> lp.Assignment:
    """The instruction (and its domain and iname, added to *rw*) copying the
    row of *s* of the work-item (local inames *local*, inner outputs
    *inner*) into the private array *name*, in an unrolled loop."""
    j = rw.vng(f"{name}_j")
    rw.inames[j] = Iname(j, frozenset([UnrollTag()]))
    rw.new_domains.append(_box_domain([j], [plan.lengths[plan.reduction]]))
    index = {**inner, plan.reduction: prim.Variable(j)}
    return lp.Assignment(
        prim.Variable(name)[prim.Variable(j)],
        s.expr.aggregate[tuple(index[v] for v in s.inames)],
        id=rw.ids(f"{plan.insn_id}_load_{s.expr.aggregate.name}"),
        within_inames=frozenset([grid.group, *local, j]),
        depends_on=rw.insns[plan.insn_id].depends_on)


def _tile(kernel: lp.LoopKernel, rw: _Rewrite, plan: TilingPlan) -> list[str]:
    """Record the rewrite of *plan* in *rw*; the ids of the instructions
    it adds."""

    insn = rw.insns[plan.insn_id]
    base = insn.assignee.aggregate.name
    grid = _Grid(rw.vng(f"{base}_group"),
                 _prod(plan.lengths[v] for v in plan.inner),
                 plan.elements_per_group, plan.blocks,
                 rw.vng(f"{base}_block") if plan.blocks > 1 else None,
                 plan.elements_per_item)
    local = grid.local_inames(rw.vng, base)
    rw.inames[grid.group] = Iname(grid.group, frozenset([GroupInameTag(0)]))
    if grid.block is not None:
        rw.inames[grid.block] = Iname(grid.block, frozenset())
    rw.inames.update(grid.tagged(local))
    for name in (*plan.batch, *plan.inner):
        del rw.inames[name]
    if plan.has_rows:
        # the rows are read at constant indices only: registers
        rw.inames[plan.reduction] = Iname(
            plan.reduction, rw.inames[plan.reduction].tags | {UnrollTag()})

    # the groups and their blocks: {[g, b] : 0 <= b < K, 0 <= g,
    # K Eb g < n}; work-items: a box of their own. The block loop has a
    # constant trip count (uniform over the group, as its barriers need;
    # loopy also fails to simplify a bound min(K - 1, ...)): the last
    # group's blocks past the end of the batch are guarded by predicates
    out_dom = kernel.get_home_domain_index([*plan.batch, *plan.inner][0])
    space = isl.Space.create_from_names(
        isl.DEFAULT_CONTEXT, set=grid.outer_inames,
        params=kernel.domains[out_dom].get_var_names(isl.dim_type.param))
    dom = isl.BasicSet.universe(space)
    dom = dom.add_constraint(isl.Constraint.ineq_from_names(
        space, {grid.group: 1}))
    if grid.block is not None:
        dom = dom.add_constraint(isl.Constraint.ineq_from_names(
            space, {grid.block: 1}))
        dom = dom.add_constraint(isl.Constraint.ineq_from_names(
            space, {1: grid.blocks - 1, grid.block: -1}))
    dom = dom.add_constraint(isl.Constraint.inequality_from_aff(
        aff_from_expr(space, plan.n_batch - 1 - prim.Variable(grid.group)
                      * (grid.blocks * grid.block_elements))))
    rw.domains[out_dom] = dom
    rw.new_domains.append(_box_domain(local, grid.extents))

    inner, elem = grid.inner_and_elem(local)
    item: list[str] = []
    if grid.per_item > 1:
        # the work-item's elements of the block, in an unrolled loop
        item = [rw.vng(f"{base}_item")]
        rw.inames[item[0]] = Iname(item[0], frozenset([UnrollTag()]))
        rw.new_domains.append(_box_domain(item, [grid.per_item]))
        elem = prim.flattened_sum((elem, grid.eb * prim.Variable(item[0])))
    first = prim.flattened_sum((grid.block_start(), elem))
    subst = _batch_index(plan, first)
    inner_subst = dict(zip(plan.inner, _unflatten(
        inner, [plan.lengths[v] for v in plan.inner]), strict=True))
    subst.update(inner_subst)

    loads = []
    once = []
    replacements: dict[prim.Subscript, Expression] = {}
    for s in plan.staged:
        if s.row:
            name = rw.vng(f"{s.expr.aggregate.name}_row")
            rw.temporaries[name] = lp.TemporaryVariable(
                name, dtype=s.dtype, shape=s.shape,
                address_space=lp.AddressSpace.PRIVATE)
            replacements[s.expr] = prim.Variable(name)[
                prim.Variable(plan.reduction)]
            once.append(_load_row(rw, plan, grid, s, name, local,
                                  inner_subst))
            continue
        name = rw.vng(f"{s.expr.aggregate.name}_local")
        rw.temporaries[name] = lp.TemporaryVariable(
            name, dtype=s.dtype, shape=s.padded_shape,
            address_space=lp.AddressSpace.LOCAL)
        index = [prim.Variable(v) for v in s.inames if v not in plan.batch]
        if s.blocked:
            index.insert(0, elem)
        replacements[s.expr] = prim.Variable(name)[tuple(index)]
        (loads if s.blocked else once).append(
            _load(rw, plan, grid, s, name))

    depends = {load.id for load in (*loads, *once)}
    barriers = []
    if grid.block is not None and loads:
        # the blocks of a group share the local arrays: one barrier after
        # the loads of a block, one before the next block's loads
        barriers = [lp.BarrierInstruction(
            id=rw.ids(f"{plan.insn_id}_{when}"), synchronization_kind="local",
            mem_kind="local", within_inames=frozenset(grid.outer_inames),
            depends_on=frozenset(deps))
            for when, deps in (("loaded", depends), ("used", [plan.insn_id]))]
        depends.add(barriers[0].id)

    predicates = set(insn.predicates)
    if _cut(plan, grid):
        predicates.add(prim.Comparison(first, "<", plan.n_batch))
    mapper = SubstitutionMapper(make_subst_func(subst))
    within = frozenset([*grid.outer_inames, *local, *item])
    expression = mapper(_ReplaceAccesses(replacements)(insn.expression))
    dtype = _global_dtype(kernel, base)
    computed = []
    if item and _cut(plan, grid) and dtype is not None:
        # only the stores past the end of the batch are guarded, not the
        # sums (which read local values that were not loaded, harmlessly):
        # the sums of a work-item's elements stay one straight-line block
        # that the compiler can interleave
        result = rw.vng(f"{base}_result")
        rw.temporaries[result] = lp.TemporaryVariable(
            result, dtype=dtype, shape=(grid.per_item,),
            address_space=lp.AddressSpace.PRIVATE)
        value = prim.Variable(result)[prim.Variable(item[0])]
        computed = [lp.Assignment(
            value, expression, id=rw.ids(f"{plan.insn_id}_sum"),
            within_inames=within, depends_on=insn.depends_on | depends,
            predicates=frozenset(insn.predicates))]
        expression = value
        depends = depends | {computed[0].id}
    rw.insns[plan.insn_id] = insn.copy(
        assignee=mapper(insn.assignee), expression=expression,
        within_inames=within, depends_on=insn.depends_on | depends,
        predicates=frozenset(predicates))
    added = [*once, *loads, *computed, *barriers]
    rw.added.extend(added)
    if not plan.batch:
        # a single group, which the stores do not mention
        rw.silenced.add(f"write_race({plan.insn_id})")
    return [a.id for a in added]


def apply_tilings(kernel: lp.LoopKernel, plans: list[TilingPlan]
                  ) -> tuple[lp.LoopKernel, dict[str, list[str]]]:
    """The kernel with the loop nests of *plans* (from
    :func:`~pytato.target.loopy.schedule.tiling_plan.plan_tiling`
    on this kernel, or on one differing only in other loop nests) tiled,
    in one rewrite; and the ids of the instructions added for each tiled
    instruction (the loads into local and private memory, the barriers of
    the block loop).

    The tiled instructions' output inames are replaced by new ones
    (``g.0``, ``l.0``, ``l.1``, and a sequential block iname with several
    blocks per group); results are unchanged.
    """
    if not plans:
        return kernel, {}
    rw = _Rewrite(
        domains=list(kernel.domains), new_domains=[],
        insns={p.insn_id: kernel.id_to_insn[p.insn_id] for p in plans},
        added=[], inames=dict(kernel.inames),
        temporaries=dict(kernel.temporary_variables),
        silenced=set(kernel.silenced_warnings),
        vng=kernel.get_var_name_generator(),
        ids=kernel.get_instruction_id_generator())
    added = {plan.insn_id: _tile(kernel, rw, plan) for plan in plans}
    kernel = kernel.copy(
        domains=[*rw.domains, *rw.new_domains],
        instructions=[*(rw.insns.get(i.id, i) for i in kernel.instructions),
                      *rw.added],
        inames=rw.inames, temporary_variables=rw.temporaries,
        silenced_warnings=frozenset(rw.silenced))
    return kernel, added


def tile_small_reduction(kernel: lp.LoopKernel, insn_id: str,
                         group_size: int,
                         local_memory_budget: int = LOCAL_MEMORY_BUDGET, *,
                         private_rows: bool = True,
                         blocks: int | None = None,
                         compute_units: int | None = None,
                         elements_per_item: int | None = None
                         ) -> lp.LoopKernel | None:
    """The kernel with the loop nest of instruction *insn_id* tiled (see
    the module documentation and
    :func:`~pytato.target.loopy.schedule.tiling_plan.plan_tiling` for the arguments),
    with work-groups of at most *group_size* work-items; None if the nest
    does not qualify."""
    plan = plan_tiling(kernel, insn_id, group_size, local_memory_budget,
                       private_rows=private_rows, blocks=blocks,
                       compute_units=compute_units,
                       elements_per_item=elements_per_item)
    if plan is None:
        return None
    return apply_tilings(kernel, [plan])[0]
