"""The plan of the tiling of a small reduction
(:mod:`pytato.target.loopy.schedule.tiling`, which explains the tiling):
which operands of an einsum-like loop nest are staged in local or private
memory, the blocks of elements per work-group and the elements per
work-item (:class:`TilingPlan`, made by :func:`plan_tiling`). Nothing here
changes a kernel; :func:`~pytato.target.loopy.schedule.tiling.apply_tilings`
writes the plans.

.. autofunction:: plan_tiling
.. autoclass:: TilingPlan
.. autodata:: MAX_REDUCTION_EXTENT
.. autodata:: LOCAL_MEMORY_BUDGET
.. autodata:: PRIVATE_MEMORY_BUDGET
.. autodata:: DEFAULT_BLOCKS
.. autodata:: MIN_GROUPS_PER_UNIT
.. autodata:: MAX_ELEMENTS_PER_ITEM
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.library.reduction import SumReductionOperation
from loopy.symbolic import (
    Reduction as LoopyReduction,
    WalkMapper,
    aff_from_expr,
    pw_aff_to_expr,
)
from loopy.types import LoopyType
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.target.loopy.device import ITEM_LOCAL_MEMORY_BUDGET
from pytato.target.loopy.schedule.analysis import _own_domain, _prod
from pytato.tuning import record_defaults


__all__ = [
    "DEFAULT_BLOCKS",
    "LOCAL_MEMORY_BUDGET",
    "MAX_ELEMENTS_PER_ITEM",
    "MAX_REDUCTION_EXTENT",
    "MIN_GROUPS_PER_UNIT",
    "PRIVATE_MEMORY_BUDGET",
    "TilingPlan",
    "plan_tiling",
]

#: Largest extent of the reduction iname for which operands are staged.
MAX_REDUCTION_EXTENT = 64

#: Bytes of local memory that the staged operands of one work-group may
#: take: half of the 32 KiB that OpenCL guarantees, so that several groups
#: fit on a compute unit.
LOCAL_MEMORY_BUDGET = 16 * 1024

#: Bytes of private memory (registers) that the rows of shared operands
#: kept by one work-item may take: 64 doubles.
PRIVATE_MEMORY_BUDGET = 512

#: Blocks of elements that a work-group computes one after the other when
#: rows of a shared operand are kept in private memory: more blocks
#: amortize the copy of the shared operands and the group's start, and
#: 16 was faster than fewer on NVIDIA GPUs at every size that
#: ``benchmarks/bench_tiling.py`` times.
DEFAULT_BLOCKS = 16

#: The default number of blocks per group is lowered so that there are at
#: least this many work-groups per compute unit.
MIN_GROUPS_PER_UNIT = 4

#: Most elements of a block that one work-item computes (register blocking
#: over elements, see :attr:`TilingPlan.elements_per_item`).
MAX_ELEMENTS_PER_ITEM = 24


# {{{ analysis

class _Reductions(WalkMapper):
    """Collects the reductions of an expression, nested ones included."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[LoopyReduction] = []

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        self.found.append(expr)
        self.rec(expr.expr, *args)


class _Accesses(WalkMapper):
    """Collects the subscripts of an expression, outermost first."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[prim.Subscript] = []

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> None:
        self.found.append(expr)
        self.rec(expr.index, *args)


@dataclass(frozen=True)
class _Staged:
    """An access *expr* (``array[v_1, ..., v_p]``, the *inames* ``v_k``)
    to copy into a local array of shape *shape* (unpadded) and *dtype*:
    *blocked* (its first axis: the elements of a block) or shared; a shared
    access that is a *row* (its inames: inner ones and the reduction iname)
    is copied into a private array of shape ``(reduction extent,)``
    instead."""

    expr: prim.Subscript
    inames: tuple[str, ...]
    blocked: bool
    dtype: LoopyType
    shape: tuple[int, ...]
    row: bool = False

    @property
    def padded_shape(self) -> tuple[int, ...]:
        if len(self.shape) >= 2 and self.shape[-1] % 2 == 0:
            return (*self.shape[:-1], self.shape[-1] + 1)
        return self.shape

    @property
    def size(self) -> int:
        return _prod(self.shape)

    @property
    def nbytes(self) -> int:
        return _prod(self.padded_shape) * self.dtype.numpy_dtype.itemsize


@dataclass(frozen=True)
class TilingPlan:
    """How :func:`~pytato.target.loopy.schedule.tiling.apply_tilings` tiles
    the loop nest of one instruction (made by :func:`plan_tiling`).

    .. attribute:: insn_id
    .. attribute:: batch

        The batch output inames (their flat index: the elements, ``l.1``
        within a group).

    .. attribute:: inner

        The inner output inames (joined onto ``l.0``).

    .. attribute:: lengths

        The extents of the output and reduction inames (ints; the first
        batch extent may be an expression in the kernel's parameters).

    .. attribute:: n_batch

        The number of elements (flat over the batch axes).

    .. attribute:: elements_per_group

        The number of elements of a block (``Eb``).

    .. attribute:: staged

        The accesses copied into local arrays (rows: private arrays).

    .. attribute:: blocks

        The number of blocks of elements that a work-group computes one
        after the other (``K``; 1: no loop over blocks).

    .. attribute:: reduction

        The reduction iname.

    .. attribute:: elements_per_item

        The number of elements of a block that each work-item computes
        (``M``): a block holds ``M Eb`` elements, work-item ``l.1 = t``
        computing elements ``t, t + Eb, ..., t + (M - 1) Eb`` of it.
    """

    insn_id: str
    batch: tuple[str, ...]
    inner: tuple[str, ...]
    lengths: dict[str, ArithmeticExpression]
    n_batch: ArithmeticExpression
    elements_per_group: int
    staged: tuple[_Staged, ...]
    blocks: int = 1
    reduction: str = ""
    elements_per_item: int = 1

    @property
    def block_elements(self) -> int:
        """The number of elements of a block (``M Eb``)."""
        return self.elements_per_group * self.elements_per_item

    @property
    def has_rows(self) -> bool:
        """Whether some shared operand is kept in private memory."""
        return any(s.row for s in self.staged)


def _plain_inames(index: Expression | tuple[Expression, ...]
                  ) -> list[str] | None:
    idx = index if isinstance(index, tuple) else (index,)
    if not all(isinstance(i, prim.Variable) for i in idx):
        return None
    return [i.name for i in idx]


def _global_dtype(kernel: lp.LoopKernel, name: str) -> LoopyType | None:
    """The dtype of the global array *name*, or None if it is not one."""
    var = kernel.arg_dict.get(name)
    if var is None:
        var = kernel.temporary_variables.get(name)
    if not isinstance(var, (lp.ArrayArg, lp.TemporaryVariable)):
        return None
    if var.address_space != lp.AddressSpace.GLOBAL:
        return None
    dtype = var.dtype
    return None if dtype is None or dtype is lp.auto else dtype


def _fits_array(kernel: lp.LoopKernel, name: str, names: list[str],
                lengths: dict[str, ArithmeticExpression]) -> bool:
    """Whether the box of *names* (extents *lengths*) lies inside the shape
    of the array *name*: only then may it be copied whole. (An access in a
    branch of a conditional, e.g. of a concatenation, may be in bounds only
    where its branch is taken.)"""
    var = kernel.arg_dict.get(name) or kernel.temporary_variables.get(name)
    shape = getattr(var, "shape", None)
    if not isinstance(shape, tuple) or len(shape) != len(names):
        return False
    for dim, v in zip(shape, names, strict=True):
        n = lengths[v]
        if isinstance(n, int) and isinstance(dim, (int, np.integer)):
            if n > dim:
                return False
        elif n != dim:
            return False
    return True


def _box_lengths(kernel: lp.LoopKernel, inames: list[str]
                 ) -> list[ArithmeticExpression] | None:
    """The extents of *inames* (ints; the first may be an expression in the
    kernel's parameters) if their domain is the box ``0 <= v < extent``
    over exactly them, else None."""

    dom = _own_domain(kernel, inames)
    if dom is None:
        return None
    params = set(dom.get_var_names(isl.dim_type.param))
    if params & kernel.all_inames():
        return None
    var_dict = dom.get_var_dict()
    as_set = isl.Set.from_basic_set(dom)
    box = isl.BasicSet.universe(dom.get_space())
    lengths: list[ArithmeticExpression] = []
    for k, iname in enumerate(inames):
        idx = var_dict[iname][1]
        lo, hi = as_set.dim_min(idx), as_set.dim_max(idx)
        if lo.n_piece() != 1 or hi.n_piece() != 1:
            return None
        if pw_aff_to_expr(lo) != 0:
            return None
        length = pw_aff_to_expr(hi + 1)
        if not isinstance(length, int):
            if k > 0:
                return None
        lengths.append(length)
        space = box.get_space()
        box = box.add_constraint(isl.Constraint.ineq_from_names(
            space, {iname: 1}))
        box = box.add_constraint(isl.Constraint.inequality_from_aff(
            aff_from_expr(space, length - 1 - prim.Variable(iname))))
    return lengths if box.is_equal(dom) else None


def plan_tiling(kernel: lp.LoopKernel, insn_id: str, group_size: int,
                local_memory_budget: int = LOCAL_MEMORY_BUDGET, *,
                private_rows: bool = True, blocks: int | None = None,
                compute_units: int | None = None,
                stage_per_element: bool = True,
                elements_per_item: int | None = None,
                item_local_memory_budget: int = ITEM_LOCAL_MEMORY_BUDGET
                ) -> TilingPlan | None:
    """How to tile the loop nest of instruction *insn_id* (see the module
    documentation) with work-groups of at most *group_size* work-items;
    None if the nest does not qualify.

    :arg private_rows: keep rows of shared operands in private memory
        (register blocking); False stages all shared operands in local
        memory.
    :arg blocks: the number of blocks of elements per work-group; None
        chooses: :data:`DEFAULT_BLOCKS` when rows are kept in private
        memory, else 1, at most as many as leave
        :data:`MIN_GROUPS_PER_UNIT` groups per compute unit (with
        *compute_units* and a constant number of elements given).
    :arg elements_per_item: the number of elements of a block computed by
        each work-item (``M``); None chooses: with rows kept in private
        memory and operands staged per block, as many as the blocks' local
        arrays fit in *item_local_memory_budget* bytes (at most
        :data:`MAX_ELEMENTS_PER_ITEM`, and leaving
        :data:`MIN_GROUPS_PER_UNIT` groups per compute unit), with one
        block per group, when *blocks* is not given; else 1.
    """
    insn = kernel.id_to_insn[insn_id]
    if not isinstance(insn, lp.Assignment):
        return None
    lhs = insn.assignee
    if not (isinstance(lhs, prim.Subscript)
            and isinstance(lhs.aggregate, prim.Variable)):
        return None
    out = _plain_inames(lhs.index)
    if (not out or len(set(out)) != len(out)
            or set(out) != set(insn.within_inames)):
        return None
    reds = _Reductions()
    reds(insn.expression)
    if len(reds.found) != 1:
        return None
    red, = reds.found
    if (len(red.inames) != 1
            or not isinstance(red.operation, SumReductionOperation)):
        return None
    r, = red.inames
    r_len = _box_lengths(kernel, [r])
    if r_len is None or not isinstance(r_len[0], int) \
            or not 1 <= r_len[0] <= MAX_REDUCTION_EXTENT:
        return None
    out_lengths = _box_lengths(kernel, out)
    if out_lengths is None or 0 in out_lengths:
        return None
    lengths = dict(zip(out, out_lengths, strict=True))
    lengths[r] = r_len[0]

    # inner axes: the longest constant suffix fitting in a group
    split = len(out)
    while (split > 0 and isinstance(out_lengths[split - 1], int)
           and _prod(out_lengths[split - 1:]) <= group_size):
        split -= 1
    batch, inner = out[:split], out[split:]
    n_batch: ArithmeticExpression = _prod(out_lengths[1:split])
    if split:
        n_batch = out_lengths[0] * n_batch if n_batch > 1 else out_lengths[0]

    accesses = _Accesses()
    accesses(red.expr)
    staged: list[_Staged] = []
    private_bytes = 0
    for expr in accesses.found:
        names = _plain_inames(expr.index)
        if (names is None or r not in names or not set(names) <= set(lengths)
                or any(s.expr == expr for s in staged)):
            continue
        dtype = _global_dtype(kernel, expr.aggregate.name)
        if not _fits_array(kernel, expr.aggregate.name, names, lengths):
            continue
        blocked = bool(set(names) & set(batch))
        if dtype is None:
            continue
        if blocked and set(out) <= set(names) and not (
                stage_per_element and names[-1] == r
                and names[:len(batch)] == list(batch)):
            # read by one work-item each, not at a stride of the
            # reduction's extent (or not contiguous per block): no gain
            continue
        private = lengths[r] * dtype.numpy_dtype.itemsize
        if (private_rows and batch and not blocked
                and set(names) & set(inner) and set(names) <= {*inner, r}
                and private_bytes + private <= PRIVATE_MEMORY_BUDGET):
            private_bytes += private
            staged.append(_Staged(expr, tuple(names), False, dtype,
                                  (lengths[r],), row=True))
            continue
        shape = tuple(lengths[v] for v in names if v not in batch)
        staged.append(_Staged(expr, tuple(names), blocked, dtype,
                              ((1,) if blocked else ()) + shape))

    def per_element(s: _Staged) -> bool:
        return s.blocked and set(out) <= set(s.inames)

    def elements(staged: list[_Staged]) -> int | None:
        """Elements of a block, None if one does not fit."""
        eb = max(1, group_size // _prod(out_lengths[split:])) if batch else 1
        if isinstance(n_batch, int):
            eb = min(eb, n_batch)
        local = [s for s in staged if not s.row]
        shared_bytes = sum(s.nbytes for s in local if not s.blocked)
        row_bytes = sum(s.nbytes for s in local if s.blocked)
        if shared_bytes + row_bytes > local_memory_budget:
            return None
        if row_bytes:
            eb = min(eb, (local_memory_budget - shared_bytes) // row_bytes)
        return eb

    eb = elements(staged)
    if eb is None and any(per_element(s) for s in staged):
        staged = [s for s in staged if not per_element(s)]
        eb = elements(staged)
    if eb is None or not staged or (
            all(s.blocked for s in staged)
            and not any(per_element(s) for s in staged)):
        return None

    per_item = 1
    if batch and elements_per_item is not None:
        per_item = max(1, elements_per_item)
    elif batch and private_bytes and blocks is None:
        per_item = _elements_per_item(staged, eb, n_batch,
                                      item_local_memory_budget,
                                      compute_units)
        if per_item > 1:
            # on NVIDIA GPUs, one block of many elements per group beat
            # several blocks (see the module documentation)
            blocks = 1
    block = eb * per_item
    if not batch:
        blocks = 1
    elif blocks is None:
        blocks = DEFAULT_BLOCKS if private_bytes else 1
        if isinstance(n_batch, int) and compute_units:
            n_blocks = -(-n_batch // block)
            blocks = min(blocks, n_blocks // (MIN_GROUPS_PER_UNIT
                                              * compute_units))
    if isinstance(n_batch, int):
        blocks = min(blocks, -(-n_batch // block))
    blocks = max(1, blocks)
    return TilingPlan(
        insn_id, tuple(batch), tuple(inner), lengths, n_batch, eb,
        tuple(replace(s, shape=(block, *s.shape[1:])) if s.blocked else s
              for s in staged),
        blocks=blocks, reduction=r, elements_per_item=per_item)


def _elements_per_item(staged: list[_Staged], eb: int,
                       n_batch: ArithmeticExpression,
                       budget: int, compute_units: int | None) -> int:
    """How many elements of a block each work-item computes (see
    :func:`plan_tiling`): as many as the local arrays of a block of ``M
    Eb`` elements fit in *budget* bytes."""
    local = [s for s in staged if not s.row]
    per_element = sum(s.nbytes for s in local if s.blocked)
    shared = sum(s.nbytes for s in local if not s.blocked)
    if not per_element or eb < 1:
        return 1
    m = min(MAX_ELEMENTS_PER_ITEM, (budget - shared) // (eb * per_element))
    if isinstance(n_batch, int):
        m = min(m, -(-n_batch // eb))
        if compute_units:
            m = min(m, n_batch // (eb * MIN_GROUPS_PER_UNIT * compute_units))
    return max(1, m)

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
