"""The default schedule: mapping the loops of a generated kernel onto
OpenCL work-groups and work-items.

:func:`~pytato.target.loopy.generate_loopy` applies :func:`default_schedule`
to the translation unit it builds (unless called with
``default_schedule=False``, for users who transform the kernel themselves).
It is a pure function from translation unit to translation unit, in the
style of :mod:`loopy`'s transformations, and can also be applied by hand.

Per loop nest of the entrypoint kernel (the instructions sharing a set of
loops: one assignment computing all elements of a stored array, as
:mod:`pytato.target.loopy.lower.graph` emits them, or several fused by
:mod:`pytato.target.loopy.lower.fusion`):

* **Output axes.** When all extents are known integers, the output inames
  are joined into one flat iname (row-major, so consecutive work-items
  touch consecutive elements) which is split by the work-group size:
  inner part ``l.0``, outer part ``g.0``. The output indices derived from
  the flat one (``f // stride % n``) are computed once per work-item into
  private integer variables that all subscripts of the nest read
  (``_pt_..._div16``, ``_pt_..._mod16``), not repeated in each subscript:
  it halves the expressions loopy walks in each of its passes. Loopy
  cannot see the hardware inames in such stores' indices, so its
  write-race warning is silenced for pytato's instructions there
  (:data:`~pytato.target.loopy.schedule.outputs.SILENCED_WRITE_RACES`).
  With symbolic extents the
  outermost iname goes to ``g.0``, the innermost is split with its inner
  part on ``l.0``, and the other loops stay sequential inside each
  work-item (1-D: split onto ``g.0``/``l.0``).
* **Reductions.** An instruction alone in its loop nest holding one
  reduction whose extent is large, and whose outputs are too few to occupy
  the device (or, on a GPU, whose reduction runs along the contiguous axis
  of an operand) reduces in parallel: the reduction iname is split, its
  inner part tagged ``l.0`` (a work-group tree reduction in local memory,
  by :mod:`loopy`), and the output inames go to ``g.0`` alone. A full
  reduction (0-d result), or one with fewer outputs than
  :attr:`~pytato.target.loopy.device.DeviceInfo.few_outputs` (one after the
  other), over a box of constant extents is shared by all groups of the
  device, whatever the number of its axes: on a GPU, its inames are
  flattened into one and reduced in two stages as below; on a CPU, it is
  cut into about :attr:`~pytato.target.loopy.device.DeviceInfo.reduction_parts`
  contiguous parts, each reduced by one work-item with interleaved
  accumulators, then the parts by one work-item
  (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_parts`).
  Otherwise, a full reduction over at least 4 times
  :attr:`~pytato.target.loopy.device.DeviceInfo.compute_units` times
  :attr:`~pytato.target.loopy.device.DeviceInfo.reduction_group_size` elements
  (or a symbolic number) runs in two stages, with
  :attr:`~pytato.target.loopy.device.DeviceInfo.reduction_num_groups` groups of
  :attr:`~pytato.target.loopy.device.DeviceInfo.two_stage_group_size` work-items
  in the first
  (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_two_stage`):
  every
  group reduces a part, then one group reduces the parts. A large reduction
  along a strided axis whose outputs run along the contiguous one (e.g.
  ``sum(x, axis=0)``) is reduced by column, rows side by side: on a GPU
  when the outputs alone would not occupy the device, in one kernel of
  2-D work-groups (consecutive outputs on ``l.0``, rows on ``l.1``,
  tree-reduced in local memory) where the extents are multiples of the
  group's, else in chunks of rows summed per output by a second kernel
  (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_columns`); on a
  CPU by blocks of whole rows, each block adding its rows into a row of
  accumulators as numpy does, then a second kernel reducing the blocks'
  rows (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_row_blocks`,
  about :data:`CPU_ROW_BLOCKS` blocks per compute unit), where the rows
  have a fit divisor and the operation needs no callable, else in chunks
  (runs of :data:`CPU_COLUMN_RUN` rows per chunk); several strided
  reduction axes are flattened into one first. Other reductions are
  loops inside each work-item.
* **Small reductions (GPU).** An einsum-like nest (one instruction, one sum
  over at most 64 terms) with an operand shared by all elements, or with a
  per-element operand read at a stride of the reduction's extent (``A[e,
  i, j]`` of a batched ``eij,ej->ei``), is tiled in local and private
  memory (:mod:`pytato.target.loopy.schedule.tiling`).
* **Kernels.** Loop nests are ordered by dependency level (the longest
  chain of nests reading each other's stored arrays before them) and
  separated by global barriers between levels, so that stored
  intermediate results are complete before their users start. The nests
  of one level whose output axes are mapped onto ``g.0`` and ``l.0`` with
  constant extents share one device kernel and one pair of hardware
  inames, sized for the largest of them; instructions of smaller nests
  are predicated on the flat index being in range. A graph thus becomes
  one device kernel per level, not one per stored array. Other nests
  (symbolic grid sizes, parallel or two-stage reductions, local-memory
  tiling) get a device kernel each.
* **Sequential reductions** (those left inside a work-item) become
  explicit accumulator loops
  (:func:`~pytato.target.loopy.schedule.accumulators.realize_sequential_reductions`);
  on CPUs, those over at least :data:`MIN_LANE_EXTENT` elements (or a
  symbolic number) keep :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes`
  interleaved accumulators (floating-point ones over a constant extent
  that their steps cover exactly,
  :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lane_blocks`
  blocks of them).

Instructions with an iname that carries any other tag (metadata from
axis tags, by which a user transformation may look the iname up) keep
their loops, as do kernels with calls or instructions whose loops are not
exactly their output axes (e.g. sparse products).

.. rubric:: Kernels the user mapped, fully or in part

The schedule maps only the loop nests that the user left unmapped. A loop
nest (the instructions sharing one set of loops) is **the user's** if any
of its inames, loops or reductions,

* carries a :class:`loopy.kernel.data.InameImplementationTag` (``g.0``,
  ``l.0``, ``unr``, ``ilp``, ``for``, ... set by a transformation or
  through axis tags), or
* is one of *user_inames* of :func:`default_schedule`: the programs of
  :func:`~pytato.target.loopy.generate_loopy` pass the inames that the
  user's transformation created (e.g. the two halves of a
  :func:`loopy.split_iname`, tagged or not), so that these belong to the
  user.

The user's nests are left exactly as they are: no iname of theirs is
split, joined or tagged, their reductions are left to :mod:`loopy` (not
turned into accumulator loops), and they do not share a device kernel
with the nests the schedule maps (their work-group sizes are the user's).
Nests of the user that share an iname (e.g. a prefetch and the
instruction it feeds, both inside the user's ``g.0`` loop) count as one
unit for the ordering below, so no global barrier is put between them.
The other nests are scheduled as they would be in a kernel without the
user's, and global barriers separate all of them by dependency level. A
kernel whose nests are all the user's (fully hand-mapped) is returned
unchanged: its global barriers, if it needs some, are the user's too
(e.g. ``loopy.set_options(knl, insert_gbarriers=True)``).

The unit is a whole loop nest, not an iname: a nest of which the user
mapped some loops (say the outer output axis onto ``g.0``) keeps the
other loops sequential, as the user wrote it, instead of being completed
by guesses that could clash with the user's (a second ``g.0``, or
work-group sizes the user's kernel does not expect).

Work-group sizes come from a :class:`~pytato.target.loopy.device.DeviceInfo`:

* GPU: 256 work-items per group on the (coalesced) innermost axis.
* CPU (PoCL): 32 work-items per group. Measured on PoCL with 2 cores
  (``benchmarks/README.md``): 8 was slowest; 32, 64 and 256 were within
  5 % of each other on the elementwise chain (256 best) and the stencil
  (32 best). PoCL vectorizes across the work-items of a group.
* Unknown device (``None``): the CPU schedule with 32 work-items per group,
  which every OpenCL device we know accepts, so that the code runs
  anywhere.

.. autodata:: MIN_LANE_EXTENT
.. autodata:: MIN_PART_ELEMENTS
.. autodata:: CPU_COLUMN_RUN
.. autodata:: CPU_ROW_BLOCKS
.. autodata:: MIN_BLOCK_ROWS
.. autodata:: CPU_ROW_ACCUMULATOR_BYTES
.. autodata:: CPU_TILE_ROWS
.. autofunction:: default_schedule
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
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
from pytato.target.loopy.schedule import outputs
from pytato.target.loopy.schedule.accumulators import realize_sequential_reductions
from pytato.target.loopy.schedule.analysis import (
    _constant_length,
    _has_impl_tag,
    _prod,
    _reduction_inames,
    _ReductionCollector,
    box_extent,
)
from pytato.target.loopy.schedule.barriers import (
    _add_global_barriers,
    _loop_groups,
    _nest_levels,
    _user_units,
)
from pytato.target.loopy.schedule.outputs import (
    MAX_GROUPS_FOR_JOIN,
    _apply_output_plans,
    _OutputPlan,
    _schedule_outputs,
)
from pytato.target.loopy.schedule.reductions import (
    _tag_outputs,
    flatten_reduction_inames,
    row_block_operations,
    split_reduction_columns,
    split_reduction_parts,
    split_reduction_row_blocks,
    split_reduction_row_tiles,
    split_reduction_two_stage,
)
from pytato.target.loopy.schedule.tiling import apply_tilings
from pytato.target.loopy.schedule.tiling_plan import TilingPlan, plan_tiling


if TYPE_CHECKING:
    import pyopencl as cl


__all__ = ["DeviceInfo", "default_schedule"]


def __getattr__(name: str) -> object:
    # documented in this module before the output axes moved to
    # pytato.target.loopy.schedule.outputs: still readable here
    if name == "SILENCED_WRITE_RACES":
        return outputs.SILENCED_WRITE_RACES
    raise AttributeError(
        f"module 'pytato.target.loopy.schedule.default' has no attribute "
        f"{name!r}")


#: The least constant extent of the innermost iname of a sequential
#: reduction for which
#: :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes` accumulators
#: are used (symbolic extents always use them).
MIN_LANE_EXTENT = 64

#: The least number of elements per part of a full reduction on a CPU.
MIN_PART_ELEMENTS = 256

#: Columns (``l.0``) and rows (``l.1``) of the work-groups of a column
#: reduction in one kernel on a GPU (:func:`_column_tree`). On an H100
#: (``sum(x, axis=0)``, 4096 x 4096 doubles, 2026-11-23): 32 x 16 0.052
#: ms, 32 x 32 0.051 ms, 16 x 16 0.052 ms, 32 x 8 0.060 ms, 64 x 8
#: 0.060 ms, against 0.059 ms for two kernels (chunks, then their sum).
COLUMN_TREE_COLUMNS = 32

#: Rows per chunk of a column reduction on a CPU: at least
#: :data:`MIN_LANE_EXTENT`, so that a chunk covering its rows exactly gets
#: interleaved accumulators (PoCL, 2 cores, ``sum(x, axis=0)`` of 4096 x
#: 4096 doubles, separate processes at load 1.5: 10.5 ms with runs of 32
#: rows and one accumulator, 8.7 ms with runs of 16 rows and 4
#: accumulators; numpy 4.7 ms).
CPU_COLUMN_RUN = 64

#: Blocks of rows per compute unit of a column reduction on a CPU
#: (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_row_blocks`):
#: enough blocks for the threads of the device to balance their work
#: (PoCL, 2 cores, ``sum(x, axis=0)`` of 4096 x 4096 doubles, hand-written
#: kernels, best of 10 in 5 interleaved rounds at load 1.3: 2 blocks in
#: all 2.9 ms, 16 3.0 ms, 32 3.3 ms; one block 4.8 ms; numpy 5.2 ms).
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
#: :func:`~pytato.target.loopy.schedule.reductions.split_reduction_row_tiles`):
#: the operands that do not depend on the output (the vector of a matvec)
#: are read once for all of them. Hand-written 4096 x 4096 matvec kernels
#: on PoCL (one thread, interleaved, load 4.5): one row per work-item 4.01
#: ms, 2 rows 3.74-4.52 ms, 4 rows 3.28-3.34 ms; numpy's BLAS on one
#: thread 3.57-3.93 ms.
CPU_TILE_ROWS = 4
COLUMN_TREE_ROWS = 16


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

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Expression:
        for name in expr.inames:
            self.rank.setdefault(self.outer if name == self.col else name,
                                 len(self.rank))
        return super().map_reduction(expr, *args)


class _OrderReductionInames(LoopyIdentityMapperBase):
    """Sorts the inames of every reduction by *rank* (then by name)."""

    def __init__(self, rank: dict[str, int]) -> None:
        super().__init__()
        self.rank = rank

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Expression:
        last = len(self.rank)
        return LoopyReduction(
            expr.operation,
            tuple(sorted(expr.inames,
                         key=lambda n: (self.rank.get(n, last), n))),
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
    (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_row_blocks`):
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
    try:
        dtype = TypeReader(kernel, callables_table)(red.expr)
    except Exception:
        return None
    if isinstance(dtype, (list, tuple)):
        dtype = dtype[0] if len(dtype) == 1 else None
    if not isinstance(dtype, LoopyType):
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
    return split_reduction_row_blocks(
        kernel, insn_id, num_blocks=blocks, dtype=dtype,
        callables_table=callables_table, group_size=info.group_size)


def _reduced_dtype(kernel: lp.LoopKernel, red: LoopyReduction,
                   callables_table: CallablesTable) -> LoopyType | None:
    """The type of the expression reduced by *red* (None where it cannot
    be read off the kernel)."""
    try:
        dtype = TypeReader(kernel, callables_table)(red.expr)
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

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> None:
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
    (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_row_tiles`),
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
    if not isinstance(red.operation, (lp.library.reduction.SumReductionOperation,
                                      lp.library.reduction.ProductReductionOperation)):
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
        # were 5-15 % slower on one thread of PoCL)
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
    strided column was 5 to 9 times slower than numpy). A
    reduction over several strided axes (``sum(x, axis=(0, 1))`` of a 3-D
    array) is first made one over all their rows
    (:func:`~pytato.target.loopy.schedule.reductions.flatten_reduction_inames`)."""
    if len(insns) != 1 or len(coll.reductions) != 1 or not out_inames:
        return None
    red = coll.reductions[0]
    col = red.inames[0]
    if col in coll.contiguous or out_inames[-1] not in coll.contiguous:
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
        if r_len < 64:
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
      without the flattening, the groups would share one axis only (a
      4096 x 4096 sum ran as one work-group on an H100). A single iname
      with outputs is split likewise (one output after the other in each
      group).
    * CPU: the first reduction iname (or, where its extent has no fit
      divisor, all of them flattened) is cut into
      :attr:`~pytato.target.loopy.device.DeviceInfo.reduction_parts`
      contiguous parts (about; a
      divisor of the extent), each reduced by one work-item with
      interleaved accumulators
      (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_parts`)."""
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
            final_group_size=info.final_group_size)
    target = min(info.reduction_parts, total // MIN_PART_ELEMENTS)
    if target < 2:
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


def _schedule_group(kernel: lp.LoopKernel, insns: list[lp.Assignment],
                    out_inames: list[str], info: DeviceInfo,
                    value_args: frozenset[str],
                    allow_join: bool = True,
                    batch: list[_OutputPlan] | None = None,
                    level: int = 0,
                    tilings: list[TilingPlan] | None = None,
                    callables_table: CallablesTable | None = None
                    ) -> lp.LoopKernel:
    """Schedule the loop nest *out_inames* shared by the instructions
    *insns* (one instruction, or several fused by
    :mod:`pytato.target.loopy.lower.fusion`). With *batch* given, a schedule of
    the output axes alone is appended to it (to be applied by
    :func:`_apply_output_plans`) instead of being applied; likewise a
    tiling with *tilings* given (applied by
    :func:`~pytato.target.loopy.schedule.tiling.apply_tilings`)."""
    coll = _ReductionCollector()
    for insn in insns:
        coll(insn.expression)
    all_inames = set(out_inames)
    for red in coll.reductions:
        all_inames.update(red.inames)
    # inames with tags (implementation tags, or metadata that a user may
    # look the iname up by) are left alone
    if any(kernel.iname_tags(i) for i in all_inames):
        return kernel

    if kernel.get_inames_domain(frozenset(all_inames)).is_empty():
        return kernel
    lengths = [_constant_length(kernel, i) for i in out_inames]
    if any(n == 0 for n in lengths):
        return kernel
    n_out: int | None = 1
    for n in lengths:
        n_out = None if (n is None or n_out is None) else n_out * n

    if info.is_gpu and len(insns) == 1 and (
            n_out is None or n_out >= info.min_tiled_outputs):
        tiling = plan_tiling(
            kernel, insns[0].id, info.group_size,
            compute_units=info.compute_units,
            item_local_memory_budget=info.item_local_memory_budget)
        if tiling is not None:
            if tilings is None:
                return apply_tilings(kernel, [tiling])[0]
            tilings.append(tiling)
            return kernel

    columns = _column_reduction(kernel, insns, coll, out_inames, n_out, info,
                                callables_table)
    if columns is not None:
        return columns

    if len(insns) == 1 and len(coll.reductions) == 1 and (
            not out_inames or (n_out is not None
                               and n_out < info.few_outputs)):
        full = _full_reduction(kernel, insns[0], coll.reductions[0], info,
                               n_out or 1)
        if full is not None:
            return full

    red_iname = None
    if len(insns) == 1 and len(coll.reductions) == 1:
        red = coll.reductions[0]
        # the innermost reduction iname if it is large, else the largest
        r_lens = {i: _constant_length(kernel, i) for i in red.inames}
        cands = sorted(red.inames, key=lambda i: (
            r_lens[i] is None, r_lens[i] or 0,
            r_lens[i] is not None
            and r_lens[i] >= 4 * info.reduction_group_size
            and i == red.inames[-1]))
        if cands:
            cand = cands[-1]
            dom = kernel.domains[kernel.get_home_domain_index(cand)]
            params = set(dom.get_var_names(isl.dim_type.param))
            r_len = r_lens[cand]
            affine = params <= value_args
            large = (r_len is None and affine) or (
                r_len is not None and r_len >= 4 * info.reduction_group_size)
            few_outputs = n_out is not None and n_out < info.min_parallel_outputs
            coalesced = info.is_gpu and cand in coll.contiguous and not (
                out_inames and out_inames[-1] in coll.contiguous)
            if large and affine and (few_outputs or coalesced):
                red_iname = cand

    if red_iname is None and not info.is_gpu:
        tiles = _row_tiles(kernel, insns, coll, out_inames, lengths, info,
                           callables_table)
        if tiles is not None:
            return tiles

    if red_iname is None:
        if not out_inames:
            return kernel
        if batch is not None:
            batch.append(_OutputPlan([insn.id for insn in insns],
                                     list(out_inames), lengths,
                                     info.group_size, level))
            return kernel
        return _schedule_outputs(kernel, insns[0].id, out_inames, lengths,
                                 info.group_size, allow_join)

    insn, = insns
    r_len = _constant_length(kernel, red_iname)
    if not out_inames and (
            r_len is None
            or r_len >= 4 * info.compute_units * info.reduction_group_size):
        # a full reduction: all groups reduce a part, one group the parts
        return split_reduction_two_stage(
            kernel, insn.id, num_groups=info.two_stage_groups(r_len),
            group_size=info.two_stage_group_size, iname=red_iname,
            unroll=info.two_stage_unroll,
            final_group_size=info.final_group_size)
    kernel = _reduce_across_items(kernel, insn, red_iname,
                                  info.reduction_group_size,
                                  inner_suffix="par", tag="l.0")
    return _schedule_outputs(kernel, insn.id, out_inames, lengths, None,
                             allow_join)


def default_schedule(t_unit: lp.TranslationUnit,
                     device: cl.Device | DeviceInfo | None = None,
                     *, user_inames: Collection[str] = frozenset()
                     ) -> lp.TranslationUnit:
    """Map the loops of *t_unit*'s entrypoint kernel onto work-groups and
    work-items (see the module documentation).

    :arg device: a :class:`pyopencl.Device` or a
        :class:`~pytato.target.loopy.device.DeviceInfo`; None
        (unknown) schedules for any device (
        :meth:`~pytato.target.loopy.device.DeviceInfo.conservative`).
    :arg user_inames: inames that belong to the user (created by the
        user's transformations): the loop nests using any of them, like
        those using an iname with an implementation tag, are left as they
        are (see "Kernels the user mapped" in the module documentation).
    :returns: a new translation unit (*t_unit* itself if every loop nest is
        the user's); results are unchanged.
    """
    info = DeviceInfo.of(device)
    kernel = t_unit.default_entrypoint
    value_args = frozenset(a.name for a in kernel.args
                           if isinstance(a, lp.ValueArg))
    # kernels with instructions other than plain stores (calls, sparse
    # products with data-dependent loops) keep their sequential loops
    groups = _loop_groups(kernel, frozenset(user_inames))
    if len(t_unit.callables_table) > 1 or groups is None:
        return t_unit
    if groups and all(order is None for _, order in groups):
        # fully mapped by the user
        return t_unit
    red_inames = {insn.id: _reduction_inames(insn)
                  for insns, _ in groups for insn in insns}
    iname_users: dict[str, int] = {}
    for insns, _ in groups:
        names: set[str] = set()
        for insn in insns:
            names.update(insn.within_inames)
            names.update(red_inames[insn.id])
        for name in names:
            iname_users[name] = iname_users.get(name, 0) + 1
    allow_join = len(groups) <= MAX_GROUPS_FOR_JOIN
    # the units ordered by dependency level and separated by global
    # barriers: each nest to schedule, and the user's nests gathered by
    # shared inames (see _user_units)
    nests: list[list[str]] = []
    unit_of_group: dict[int, int] = {}
    for k, (insns, order) in enumerate(groups):
        if order is not None:
            unit_of_group[k] = len(nests)
            nests.append([insn.id for insn in insns])
    ours = len(nests)
    for members in _user_units(groups, red_inames):
        nests.append([insn.id for k in members for insn in groups[k][0]])
    level = _nest_levels(kernel, nests)
    batch: list[_OutputPlan] = []
    tilings: list[TilingPlan] = []
    for k, (insns, out_inames) in enumerate(groups):
        if out_inames is None:
            continue  # the user's
        unit = unit_of_group[k]
        ids = nests[unit]
        # inames shared with other loop nests (e.g. from substitution
        # rules) are left alone
        if any(iname_users.get(i, 0) > 1 for i in out_inames) or any(
                iname_users.get(i, 0) > 1
                for insn in insns for i in red_inames[insn.id]):
            continue
        old = kernel
        kernel = _schedule_group(
            kernel, [kernel.id_to_insn[i] for i in ids],
            out_inames, info, value_args, allow_join, batch, level[unit],
            tilings, t_unit.callables_table)
        if kernel is not old:
            # instructions added for this nest (stages of a reduction) run
            # between the same global barriers as the nest (most nests
            # are only planned here: no scan of the kernel for them)
            ids.extend(sorted(set(kernel.id_to_insn) - set(old.id_to_insn)))
    kernel, loads = apply_tilings(kernel, tilings)
    for ids in nests[:ours]:
        ids.extend(loads.get(ids[0], ()))
    kernel, index_insns = _apply_output_plans(kernel, batch)
    for ids in nests[:ours]:
        ids.extend(index_insns.get(ids[0], ()))
    # reductions left sequential become accumulator loops (linear here,
    # quadratic in loopy's preprocessing); the user's are left to loopy
    realized, added = realize_sequential_reductions(
        t_unit.with_kernel(kernel),
        None if ours == len(nests) else frozenset(
            i for ids in nests[:ours] for i in ids),
        lanes=info.accumulator_lanes, min_lane_extent=MIN_LANE_EXTENT,
        lane_blocks=info.accumulator_lane_blocks)
    kernel = realized.default_entrypoint
    for ids in nests[:ours]:
        ids.extend(a for iid in list(ids) for a in added.get(iid, ()))
    if any(_has_impl_tag(kernel, i) for i in kernel.all_inames()):
        kernel = _add_global_barriers(kernel, nests, level,
                                      alone=frozenset(range(ours, len(nests))))
    return t_unit.with_kernel(kernel)
