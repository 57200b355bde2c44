"""How each kind of reduction is laid out on a device.

The default schedule (:mod:`pytato.target.loopy.schedule.default`) asks
these functions for the layout of a reduction it maps: a column reduction
in one kernel of 2-D work-groups on a GPU (:data:`COLUMN_TREE_COLUMNS` x
:data:`COLUMN_TREE_ROWS`), by blocks of whole rows or in chunks of rows on
a CPU, rows side by side in a work-item on a CPU, a full reduction in
contiguous parts on a CPU or in two stages. Each returns the transformed
kernel, or None where its layout does not apply (the schedule then keeps
looking). The constants below tune them; they enter the program store's
key.

.. autodata:: MIN_LANE_EXTENT
.. autodata:: MIN_PART_ELEMENTS
.. autodata:: COLUMN_TREE_COLUMNS
.. autodata:: COLUMN_TREE_ROWS
.. autodata:: CPU_COLUMN_RUN
.. autodata:: CPU_MIN_SPLIT_ELEMENTS
.. autodata:: CPU_ROW_BLOCKS
.. autodata:: MIN_BLOCK_ROWS
.. autodata:: CPU_ROW_ACCUMULATOR_BYTES
.. autodata:: CPU_TILE_ROWS
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import loopy as lp
import pymbolic.primitives as prim
from loopy.library.reduction import (
    ProductReductionOperation,
    SumReductionOperation,
)
from loopy.symbolic import (
    Reduction as LoopyReduction,
    UncachedIdentityMapper as LoopyIdentityMapperBase,
    WalkMapper as LoopyWalkMapper,
    get_dependencies,
)
from loopy.translation_unit import CallablesTable
from loopy.type_inference import TypeReader
from loopy.types import LoopyType
from pymbolic.typing import Expression

from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.schedule.analysis import (
    _constant_length,
    _own_domain,
    _prod,
    _ReductionCollector,
    box_extent,
)
from pytato.target.loopy.schedule.cpu_reductions import (
    row_block_operations,
    split_reduction_parts,
    split_reduction_row_blocks,
    split_reduction_row_tiles,
)
from pytato.target.loopy.schedule.reductions import (
    _tag_outputs,
    flatten_reduction_inames,
    split_reduction_columns,
    split_reduction_two_stage,
)
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    pass



__all__ = [
    "COLUMN_TREE_COLUMNS",
    "COLUMN_TREE_ROWS",
    "CPU_COLUMN_RUN",
    "CPU_MIN_SPLIT_ELEMENTS",
    "CPU_ROW_ACCUMULATOR_BYTES",
    "CPU_ROW_BLOCKS",
    "CPU_TILE_ROWS",
    "MIN_BLOCK_ROWS",
    "MIN_LANE_EXTENT",
    "MIN_PART_ELEMENTS",
]


#: The least constant extent of the innermost iname of a sequential
#: reduction for which
#: :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes` accumulators
#: are used (symbolic extents always use them).
MIN_LANE_EXTENT = 64

#: The least number of elements per part of a full reduction on a CPU.
MIN_PART_ELEMENTS = 256

#: The fewest elements (outputs times reduction extent) of a reduction
#: that a CPU splits across kernels (parts of a full reduction, blocks of
#: rows or chunks of a column reduction, each then reduced by a second
#: kernel): a smaller one stays in the loops of its work-items, in one
#: kernel (that it may share with other loop nests of its level). A
#: reduction of 64 x 64 doubles takes a few microseconds in one work-item,
#: about what the second kernel's launch costs on PoCL; the random DAGs of
#: ``benchmarks/peers_dags.py`` (64 x 64) ran 35 kernels for 100 steps
#: with the splits.
CPU_MIN_SPLIT_ELEMENTS = 2**15

#: Columns (``l.0``) and rows (``l.1``) of the work-groups of a column
#: reduction in one kernel on a GPU (:func:`_column_tree`). On NVIDIA
#: GPUs (``sum(x, axis=0)`` of a large square matrix), groups of 16 or
#: more rows were faster than two kernels (chunks, then their sum), and
#: groups of 8 rows no faster.
COLUMN_TREE_COLUMNS = 32
COLUMN_TREE_ROWS = 16

#: Rows per chunk of a column reduction on a CPU: at least
#: :data:`MIN_LANE_EXTENT`, so that a chunk covering its rows exactly gets
#: interleaved accumulators (on PoCL, for ``sum(x, axis=0)`` of a large
#: square matrix, short runs with one accumulator were slower than runs
#: with interleaved accumulators).
CPU_COLUMN_RUN = 64

#: Blocks of rows per compute unit of a column reduction on a CPU
#: (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_row_blocks`):
#: enough blocks for the threads of the device to balance their work
#: (on PoCL, for ``sum(x, axis=0)`` of a large square matrix, one block
#: was much slower than a few per core, and many blocks a little slower).
CPU_ROW_BLOCKS = 8

#: The least number of rows of a block of
#: :data:`CPU_ROW_BLOCKS`: each block writes and reads back a row of
#: partial results, which should stay small next to its rows.
MIN_BLOCK_ROWS = 16

#: The most bytes of the row of accumulators of a block of rows
#: (:data:`CPU_ROW_BLOCKS`): such a row is read and written for each row
#: of the block and should stay in a core's cache (256 KiB, the smallest
#: per-core L2 of x86-64 CPUs of the last decade); wider reductions keep
#: the chunks of columns.
CPU_ROW_ACCUMULATOR_BYTES = 256 * 1024

#: Outputs reduced side by side by each work-item of a reduction along the
#: contiguous axis on a CPU (row sums, a matvec:
#: :func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_row_tiles`):
#: the operands that do not depend on the output (the vector of a matvec)
#: are read once for all of them. In hand-written matvec kernels on PoCL,
#: 4 rows per work-item were faster than 1 or 2, and as fast as numpy's
#: BLAS on one thread.
CPU_TILE_ROWS = 4


def _column_tree(kernel: lp.LoopKernel, insn: lp.Assignment, col: str,
                 out_inames: list[str], n_out: int, r_len: int,
                 info: DeviceInfo) -> lp.LoopKernel | None:
    """The column reduction of *insn* in one kernel (GPU): work-groups of
    :data:`COLUMN_TREE_COLUMNS` consecutive outputs (``l.0``, the
    output inames joined, row-major) times :data:`COLUMN_TREE_ROWS` rows
    (``l.1``); each work-item reduces every ``COLUMN_TREE_ROWS``-th row of
    its column, then the rows of the group are reduced in local memory (a
    tree, by :mod:`loopy`). None where the outputs or the rows are not a
    multiple of the group's extents (the work-items of a group must all
    reach the tree's barriers)."""
    cols = COLUMN_TREE_COLUMNS
    rows = max(1, min(COLUMN_TREE_ROWS, info.max_work_group_size // cols))
    if n_out % cols or r_len % rows or rows == 1:
        return None
    # the output inames (constant extents) joined, split onto g.0/l.0
    kernel = _tag_outputs(kernel, out_inames, cols, second_axis="g.1")
    # the rows of a group: l.1
    return _reduce_across_items(kernel, insn, col, rows, inner_suffix="rows",
                                tag="l.1")


class _ReductionInameRanks(LoopyIdentityMapperBase):
    """Collects the position of each reduction iname of an expression, in
    order of appearance, into :attr:`rank` (with *col* counted as
    *outer*)."""

    def __init__(self, col: str, outer: str) -> None:
        super().__init__()
        self.col, self.outer = col, outer
        self.rank: dict[str, int] = {}

    def map_reduction(self, expr: LoopyReduction, *args: object) -> Expression:
        for name in expr.inames:
            self.rank.setdefault(self.outer if name == self.col else name,
                                 len(self.rank))
        return super().map_reduction(expr, *args)


class _OrderReductionInames(LoopyIdentityMapperBase):
    """Sorts the inames of every reduction by *rank* (then by name)."""

    def __init__(self, rank: dict[str, int]) -> None:
        super().__init__()
        self.rank = rank

    def map_reduction(self, expr: LoopyReduction, *args: object) -> Expression:
        last = len(self.rank)
        inames: tuple[str, ...] = tuple(sorted(
            expr.inames, key=lambda n: (self.rank.get(n, last), n)))
        return LoopyReduction(
            expr.operation, inames,
            self.rec(expr.expr, *args), expr.allow_simultaneous)


def _restore_reduction_order(kernel: lp.LoopKernel, insn: lp.Assignment,
                             col: str,
                             outer: str) -> lp.LoopKernel:
    """*kernel* with the inames of the reductions of *insn* (after
    :func:`loopy.split_reduction_outward`) in the order they had in the
    original *insn* (*col* split, its place taken by *outer*). (loopy
    leaves the inames it does not move in the order of a :class:`set`,
    which differs between processes: the generated code must not.)"""
    ranks = _ReductionInameRanks(col, outer)
    ranks(insn.expression)
    new = kernel.id_to_insn[insn.id]
    new = new.copy(expression=_OrderReductionInames(ranks.rank)(
        new.expression))
    return kernel.copy(instructions=[
        new if i.id == insn.id else i for i in kernel.instructions])


def _reduce_across_items(kernel: lp.LoopKernel, insn: lp.Assignment,
                         iname: str, size: int, *, inner_suffix: str,
                         tag: str) -> lp.LoopKernel:
    """*kernel* with the reduction iname *iname* of *insn* split by *size*:
    the inner part (``{iname}_{inner_suffix}``, on the hardware axis *tag*)
    reduced across the work-items of a group (a tree in local memory, by
    :mod:`loopy`), the outer part (``{iname}_seq``) sequential in each.
    All work-items of the group write the same (reduced) value."""
    vng = kernel.get_var_name_generator()
    inner = vng(f"{iname}_{inner_suffix}")
    outer = vng(f"{iname}_seq")
    kernel = lp.split_iname(kernel, iname, size, inner_iname=inner,
                            outer_iname=outer, inner_tag=tag)
    kernel = lp.split_reduction_outward(kernel, inner)
    kernel = _restore_reduction_order(kernel, insn, iname, outer)
    return kernel.copy(silenced_warnings=frozenset(
        kernel.silenced_warnings | {f"write_race({insn.id})"}))


def _row_blocks(kernel: lp.LoopKernel, insn_id: str, r_len: int,
                n_out: int, info: DeviceInfo,
                callables_table: CallablesTable | None
                ) -> lp.LoopKernel | None:
    """The column reduction of the instruction *insn_id* (one reduction
    iname of constant extent *r_len*, *n_out* outputs) by blocks of whole
    rows on a CPU
    (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_row_blocks`):
    about :data:`CPU_ROW_BLOCKS` blocks per compute unit (a divisor of
    *r_len*, of at least :data:`MIN_BLOCK_ROWS` rows each: fewer blocks on
    CPUs of many units), where the row of
    accumulators takes at most :data:`CPU_ROW_ACCUMULATOR_BYTES`; else None
    (the chunks of columns)."""
    if callables_table is None:
        return None
    coll = _ReductionCollector()
    coll(kernel.id_to_insn[insn_id].expression)
    if len(coll.reductions) != 1 or len(coll.reductions[0].inames) != 1:
        return None
    red = coll.reductions[0]
    dtype = _reduced_dtype(kernel, red, callables_table)
    if dtype is None:
        return None
    ops = row_block_operations(red.operation, dtype, callables_table,
                               kernel.target)
    if ops is None:
        return None
    numpy_dtype = getattr(ops[0], "numpy_dtype", None)
    if numpy_dtype is None \
            or n_out * numpy_dtype.itemsize > CPU_ROW_ACCUMULATOR_BYTES:
        return None
    blocks = _num_parts(r_len, min(CPU_ROW_BLOCKS * info.compute_units,
                                   r_len // MIN_BLOCK_ROWS), 1)
    if blocks is None or r_len // blocks < MIN_BLOCK_ROWS:
        return None
    if box_extent(kernel, red.inames[0]) != r_len:
        # (the split needs the iname in a box domain of its own, which a
        # domain joined with others, e.g. by a user's transformation, is
        # not: the chunks of columns then)
        return None
    return split_reduction_row_blocks(
        kernel, insn_id, num_blocks=blocks, dtype=dtype,
        callables_table=callables_table, group_size=info.group_size)


def _reduced_dtype(kernel: lp.LoopKernel, red: LoopyReduction,
                   callables_table: CallablesTable) -> LoopyType | None:
    """The type of the expression reduced by *red* (None where it cannot
    be read off the kernel)."""
    try:
        dtype: object = TypeReader(kernel, callables_table)(red.expr)
    except Exception:
        return None
    if isinstance(dtype, (list, tuple)):
        dtype = dtype[0] if len(dtype) == 1 else None
    return dtype if isinstance(dtype, LoopyType) else None


class _SharedOperand(LoopyWalkMapper):
    """Finds whether an expression reads an array at an index that depends
    on the iname *red* but not on the iname *out*."""

    def __init__(self, out: str, red: str) -> None:
        super().__init__()
        self.out, self.red = out, red
        self.found = False

    def map_subscript(self, expr: prim.Subscript, *args: object) -> None:
        deps = get_dependencies(expr.index)
        if self.red in deps and self.out not in deps:
            self.found = True
        super().map_subscript(expr, *args)


def _has_shared_operand(expr: Expression, out: str, red: str) -> bool:
    """Whether *expr* reads an operand shared by all outputs along the
    reduction (the vector of a matvec)."""
    finder = _SharedOperand(out, red)
    finder(expr)
    return finder.found


def _row_tiles(kernel: lp.LoopKernel, insns: list[lp.Assignment],
               coll: _ReductionCollector, out_inames: list[str],
               lengths: list[int | None], info: DeviceInfo,
               callables_table: CallablesTable | None
               ) -> lp.LoopKernel | None:
    """On a CPU, the reduction of *insns* along the contiguous axis with
    one output axis and an operand shared by all outputs (a matvec) with
    :data:`CPU_TILE_ROWS` outputs reduced side by side in each work-item
    (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_row_tiles`),
    where the extents are constant multiples of them and of
    :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes`, the
    reduction is long (:data:`MIN_LANE_EXTENT`), and is a floating-point
    sum or product; else None."""
    if callables_table is None or len(insns) != 1 \
            or len(coll.reductions) != 1 or len(out_inames) != 1:
        return None
    red = coll.reductions[0]
    if len(red.inames) != 1 or red.inames[0] not in coll.contiguous \
            or out_inames[0] in coll.contiguous:
        return None
    if not isinstance(red.operation, (SumReductionOperation,
                                      ProductReductionOperation)):
        return None
    lanes = info.accumulator_lanes
    n_out = lengths[0]
    n_red = box_extent(kernel, red.inames[0])
    if n_out is None or n_red is None or n_red < MIN_LANE_EXTENT \
            or n_out % CPU_TILE_ROWS or n_red % lanes or lanes < 2 \
            or box_extent(kernel, out_inames[0]) is None:
        return None
    if not _has_shared_operand(red.expr, out_inames[0], red.inames[0]):
        # (row sums: each output reads its own row only; 4 rows at once
        # were slower on one thread of PoCL)
        return None
    dtype = _reduced_dtype(kernel, red, callables_table)
    if dtype is None or getattr(dtype, "numpy_dtype", None) is None \
            or dtype.numpy_dtype.kind != "f":
        return None
    if row_block_operations(red.operation, dtype, callables_table,
                            kernel.target) is None:
        return None
    try:
        return split_reduction_row_tiles(
            kernel, insns[0].id, rows=CPU_TILE_ROWS, lanes=lanes,
            group_size=info.group_size, dtype=dtype,
            callables_table=callables_table)
    except ValueError:
        # (shared inames)
        return None


def _column_reduction(kernel: lp.LoopKernel, insns: list[lp.Assignment],
                      coll: _ReductionCollector, out_inames: list[str],
                      n_out: int | None, info: DeviceInfo,
                      callables_table: CallablesTable | None = None
                      ) -> lp.LoopKernel | None:
    """The kernel with the reduction of *insns* computed by column (rows
    reduced side by side) if it reduces along a strided axis (e.g.
    ``sum(x, axis=0)``) while the outputs run along the contiguous one,
    and is large enough; else None.

    On a GPU this is used when the outputs alone would not occupy the
    device: in one kernel (:func:`_column_tree`) where the extents allow,
    else in two
    (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_columns`: each
    chunk of the reduction axis is reduced by its own work-items,
    consecutive work-items handling consecutive outputs, with enough
    chunks to give about eight groups' worth of work-items per compute
    unit; a second kernel reduces the chunks). On a CPU in two, by
    blocks of whole rows (:func:`_row_blocks`) where it can, else with runs
    of :data:`CPU_COLUMN_RUN` rows per chunk (a work-item walking a whole
    strided column was much slower than numpy). A
    reduction over several strided axes (``sum(x, axis=(0, 1))`` of a 3-D
    array) is first made one over all their rows
    (:func:`~pytato.target.loopy.schedule.reductions.flatten_reduction_inames`)."""
    if len(insns) != 1 or len(coll.reductions) != 1 or not out_inames:
        return None
    red = coll.reductions[0]
    col = red.inames[0]
    if col in coll.contiguous or out_inames[-1] not in coll.contiguous:
        return None
    if any(_own_domain(kernel, [i]) is None for i in red.inames):
        # (the splits need each reduction iname in a domain of its own,
        # which a domain joined with others, e.g. by a user's
        # transformation, is not)
        return None
    if n_out is None:
        return None
    insn = insns[0]
    if len(red.inames) > 1 and not set(red.inames) & coll.contiguous:
        # several strided axes (e.g. sum(x, axis=(0, 1)) of a 3-D array):
        # one axis over all their rows
        flattened = flatten_reduction_inames(kernel, insn.id)
        if flattened is not None:
            kernel, col = flattened
            insn = kernel.id_to_insn[insn.id]
    r_len = _constant_length(kernel, col)
    if r_len is None:
        return None
    if info.is_gpu:
        if r_len < 4 * info.reduction_group_size \
                or n_out >= info.min_parallel_outputs:
            return None
        tree = _column_tree(kernel, insn, col, out_inames, n_out, r_len,
                            info)
        if tree is not None:
            return tree
        wanted = -(-8 * info.compute_units * info.group_size // n_out)
        chunks = max(1, min(-(-r_len // 32), wanted))
    else:
        if r_len < 64 or n_out * r_len < CPU_MIN_SPLIT_ELEMENTS:
            return None
        blocks = _row_blocks(kernel, insn.id, r_len, n_out, info,
                             callables_table)
        if blocks is not None:
            return blocks
        chunks = -(-r_len // CPU_COLUMN_RUN)
    return split_reduction_columns(kernel, insn.id, num_chunks=chunks,
                                   group_size=info.group_size, iname=col)


def _num_parts(n: int, target: int, group_size: int) -> int | None:
    """The number of parts of :func:`_full_reduction` for an extent *n*: a
    divisor of *n* between ``target/4`` (at least 2) and ``2*target``, a
    multiple of *group_size* if there is one, closest to *target* (by
    ratio); None if there is none. (At most ``min(2*target, sqrt(n))``
    steps.)"""
    lo, hi = max(2, -(-target // 4)), 2 * target
    root = math.isqrt(n)
    if hi - lo < root:
        divisors = [d for d in range(lo, hi + 1) if n % d == 0]
    else:
        divisors = [d for k in range(1, root + 1) if n % k == 0
                    for d in {k, n // k} if lo <= d <= hi]
    if not divisors:
        return None
    return min(divisors, key=lambda d: (d % group_size != 0,
                                        abs(math.log(d / target)), d))


def _full_reduction(kernel: lp.LoopKernel, insn: lp.Assignment,
                    red: LoopyReduction,
                    info: DeviceInfo, n_out: int = 1
                    ) -> lp.LoopKernel | None:
    """The reduction *red* of *insn* over a box of constant extents, with
    no outputs (a full reduction) or *n_out* outputs, fewer than
    :attr:`~pytato.target.loopy.device.DeviceInfo.few_outputs`
    , computed by all groups of the device;
    or None (the generic path decides).

    * GPU: several reduction inames are flattened into one
      (:func:`~pytato.target.loopy.schedule.reductions.flatten_reduction_inames`),
      reduced in two stages over all compute units
      (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_two_stage`);
      without the flattening, the groups would share one axis only (the
      full sum of a matrix ran as one work-group on NVIDIA GPUs). A single
      iname with outputs is split likewise (one output after the other in
      each group).
    * CPU: the first reduction iname (or, where its extent has no fit
      divisor, all of them flattened) is cut into
      :attr:`~pytato.target.loopy.device.DeviceInfo.reduction_parts`
      contiguous parts (about; a
      divisor of the extent), each reduced by one work-item with
      interleaved accumulators
      (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_parts`)."""
    extents = [box_extent(kernel, i) for i in red.inames]
    if any(n is None for n in extents):
        return None
    total = _prod(list(extents))
    if info.is_gpu:
        if total < 4 * info.compute_units * info.reduction_group_size or (
                len(red.inames) < 2 and n_out == 1):
            # (one iname, no outputs: the generic two-stage path)
            return None
        if len(red.inames) > 1:
            flattened = flatten_reduction_inames(kernel, insn.id)
            if flattened is None:
                return None
            kernel, flat = flattened
        else:
            flat = red.inames[0]
        return split_reduction_two_stage(
            kernel, insn.id, num_groups=info.two_stage_groups(total),
            group_size=info.two_stage_group_size, iname=flat,
            unroll=info.two_stage_unroll,
            final_group_size=info.final_group_size,
            single_launch=info.single_launch_reductions)
    target = min(info.reduction_parts, total // MIN_PART_ELEMENTS)
    if target < 2 or n_out * total < CPU_MIN_SPLIT_ELEMENTS:
        return None
    iname = red.inames[0]
    assert extents[0] is not None
    parts = _num_parts(extents[0], target, info.parts_group_size)
    if parts is None and len(red.inames) > 1:
        flattened = flatten_reduction_inames(kernel, insn.id)
        if flattened is None:
            return None
        kernel, iname = flattened
        parts = _num_parts(total, target, info.parts_group_size)
    if parts is None:
        return None
    return split_reduction_parts(kernel, insn.id, num_parts=parts,
                                 group_size=info.parts_group_size,
                                 iname=iname)


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
