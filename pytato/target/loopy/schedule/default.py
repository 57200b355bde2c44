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
  (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_parts`).
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
  rows (:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_row_blocks`,
  about
  :data:`~pytato.target.loopy.schedule.reduction_plans.CPU_ROW_BLOCKS`
  blocks per compute unit), where the rows have a fit divisor and the
  operation needs no callable, else in chunks
  (runs of
  :data:`~pytato.target.loopy.schedule.reduction_plans.CPU_COLUMN_RUN`
  rows per chunk); several strided
  reduction axes are flattened into one first. Other reductions are
  loops inside each work-item.
* **Math functions.** On a device whose
  :attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` is on (GPUs
  and CPU devices with double precision, unless
  ``PYTATO_VECTOR_CALLS=0``), an elementwise nest of ``float32`` or
  ``float64`` arrays accessed at their own indices that calls
  transcendental functions (``sin``, ``exp``, ``pow``, ...) is computed in
  OpenCL vector code, 8 consecutive elements per work-item on CPUs, 4 on
  GPUs (``vload8``, ``sin(double8)``, ``vstore8``, and a scalar tail for
  the last partial chunk): PoCL calls its scalar math functions once per
  element, which its compiler does not vectorize, where the vector
  functions are much faster; NVIDIA's compiler does not load an
  element before the math of the previous one, which a vector load per
  work-item does (:mod:`pytato.target.loopy.schedule.vector_calls`). Such
  a nest is one :class:`loopy.CInstruction` over ``ceil(n / W)``
  work-items.
* **Small contractions (CPU).** On a CPU device whose
  :attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` is on, an
  einsum-like nest applying a small operand shared by all elements
  (``ij,ej->ei``, ``ij,ejk->eik``, ``ifj,fej->ei``, ...) is computed in
  OpenCL vector code, vectors over each element's outputs, several
  elements per work-item, the shared operand copied once in the order of
  the vectors' lanes
  (:mod:`pytato.target.loopy.schedule.small_contractions`); such sums
  inside larger expressions, with per-element factors computed inline,
  first get nests of their own
  (:mod:`pytato.target.loopy.schedule.contraction_split`).
* **Small reductions (GPU).** An einsum-like nest (one instruction, one sum
  over at most 64 terms) with an operand shared by all elements, or with a
  per-element operand read at a stride of the reduction's extent (``A[e,
  i, j]`` of a batched ``eij,ej->ei``), is tiled in local and private
  memory (:mod:`pytato.target.loopy.schedule.tiling`). One whose sum has
  several reduction inames (``ifj,fej->ei``) or a per-element factor that
  is no plain array access (the inlined flux of a DG lift), which the
  tiling would compute once per output, or one that the tiling does not
  take, is computed one work-item per element, the outputs of an element
  in private accumulators
  (:mod:`pytato.target.loopy.schedule.gpu_contractions`).
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
  tiling, small contractions) get a device kernel each.
* **Sequential reductions** (those left inside a work-item) become
  explicit accumulator loops
  (:func:`~pytato.target.loopy.schedule.accumulators.realize_sequential_reductions`);
  on CPUs, those over at least
  :data:`~pytato.target.loopy.schedule.reduction_plans.MIN_LANE_EXTENT`
  elements (or a
  symbolic number) keep :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes`
  interleaved accumulators (floating-point ones over a constant extent
  that their steps cover exactly,
  :attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lane_blocks`
  blocks of them).
* **Data-dependent bounds.** A reduction whose bounds depend on the
  output indices or on data (computed into private temporaries, see
  :mod:`pytato.target.loopy.lower.reduction_bounds`) stays sequential in
  each work-item (loopy cannot map a loop of data-dependent extent onto
  work-items); its output axes are mapped as any others, and the
  assignments of its bounds are part of its loop nest (in its device
  kernel, even outside loops).

Tags that are not implementation tags (the tags of arrays' axes and of
reduction descriptors, which :func:`~pytato.target.loopy.generate_loopy`
propagates to the inames as metadata, e.g. arraycontext's element and DOF
axis tags after ``unify_axes_tags``) change nothing: a graph whose axes
carry such tags gets the schedule of the untagged graph. Kernels with
calls, or with instructions whose loops are not exactly their output axes
(e.g. sparse products), keep their loops. Every loop nest that could run
in parallel but is left serial is reported, with the reason, in one
warning per scheduled program
(:mod:`~pytato.target.loopy.schedule.serial_report`).

.. rubric:: Kernels the user mapped, fully or in part

The schedule maps only the loop nests that the user left unmapped. A loop
nest (the instructions sharing one set of loops) is **the user's** if any
of its inames, loops or reductions,

* carries a :class:`loopy.kernel.data.InameImplementationTag` (``g.0``,
  ``l.0``, ``unr``, ``ilp``, ``vec``, ``for``, ... set by a transformation
  or through axis tags that are such tags); other tags of an iname
  (:class:`pytools.tag.Tag` metadata: the client's axis tags, name
  hints, ...) do not make a nest the user's, or
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
* CPU (PoCL): 32 work-items per group. On PoCL (the elementwise chain
  and the stencil of ``benchmarks/bench_kernels.py``), 8 was slowest;
  32, 64 and 256 were close to each other, none best on both. PoCL
  vectorizes across the work-items of a group.
* Unknown device (``None``): the CPU schedule with 32 work-items per group,
  which every OpenCL device we know accepts, so that the code runs
  anywhere.

The layouts of reductions and their tuning constants are in
:mod:`pytato.target.loopy.schedule.reduction_plans`.

.. autofunction:: default_schedule
"""

from __future__ import annotations

from collections.abc import Collection
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import islpy as isl
import loopy as lp
from loopy.kernel.data import ConcurrentTag
from loopy.translation_unit import CallablesTable

from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.schedule import gpu_contractions, outputs
from pytato.target.loopy.schedule.accumulators import realize_sequential_reductions
from pytato.target.loopy.schedule.analysis import (
    _constant_length,
    _has_impl_tag,
    _reduction_inames,
    _ReductionCollector,
)
from pytato.target.loopy.schedule.barriers import (
    _add_global_barriers,
    _loop_groups,
    _nest_levels,
    _user_units,
)
from pytato.target.loopy.schedule.callees import inline_callee_kernels
from pytato.target.loopy.schedule.contraction_split import (
    split_small_contractions,
)
from pytato.target.loopy.schedule.gpu_contraction_code import (
    apply_gpu_contractions,
)
from pytato.target.loopy.schedule.gpu_contractions import (
    GpuContraction,
    plan_gpu_contraction,
)
from pytato.target.loopy.schedule.outputs import (
    MAX_GROUPS_FOR_JOIN,
    _apply_output_plans,
    _OutputPlan,
    _schedule_outputs,
)
from pytato.target.loopy.schedule.reduction_plans import (
    MIN_LANE_EXTENT,
    _column_reduction,
    _full_reduction,
    _reduce_across_items,
    _row_tiles,
)
from pytato.target.loopy.schedule.reductions import (
    split_reduction_two_stage,
)
from pytato.target.loopy.schedule.serial_report import (
    _could_run_in_parallel,
    _runs_in_parallel,
    _users_reason,
    report_serial_nests,
    serial_nest_reasons,
)
from pytato.target.loopy.schedule.small_contractions import (
    SmallContraction,
    drop_reduction_inames,
    plan_small_contraction,
)
from pytato.target.loopy.schedule.tiling import apply_tilings
from pytato.target.loopy.schedule.tiling_plan import TilingPlan, plan_tiling
from pytato.target.loopy.schedule.vector_calls import (
    VectorNest,
    apply_vector_nests,
    plan_vector_nest,
)
from pytato.tuning import record_defaults


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



def _schedule_group(kernel: lp.LoopKernel, insns: list[lp.Assignment],
                    out_inames: list[str], info: DeviceInfo,
                    value_args: frozenset[str],
                    allow_join: bool = True,
                    batch: list[_OutputPlan] | None = None,
                    level: int = 0,
                    tilings: list[TilingPlan] | None = None,
                    callables_table: CallablesTable | None = None,
                    contractions: list[GpuContraction] | None = None
                    ) -> lp.LoopKernel:
    """Schedule the loop nest *out_inames* shared by the instructions
    *insns* (one instruction, or several fused by
    :mod:`pytato.target.loopy.lower.fusion`). With *batch* given, a schedule of
    the output axes alone is appended to it (to be applied by
    :func:`_apply_output_plans`) instead of being applied; likewise a
    tiling with *tilings* given (applied by
    :func:`~pytato.target.loopy.schedule.tiling.apply_tilings`), and a small
    contraction on a GPU with *contractions* given (applied by
    :func:`~pytato.target.loopy.schedule.gpu_contraction_code.apply_gpu_contractions`)."""
    coll = _ReductionCollector()
    for insn in insns:
        coll(insn.expression)
    all_inames = set(out_inames)
    for red in coll.reductions:
        all_inames.update(red.inames)
    # inames the user mapped (implementation tags) are left alone; other
    # tags (metadata propagated from axis tags) do not count
    if any(_has_impl_tag(kernel, i) for i in all_inames):
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
        contraction = plan_gpu_contraction(kernel, insns[0], out_inames, info,
                                           callables_table)
        tiling = None
        if contraction is None or not (contraction.over_tiling
                                       or gpu_contractions.REPLACE_TILING):
            tiling = plan_tiling(
                kernel, insns[0].id, info.group_size,
                compute_units=info.compute_units,
                item_local_memory_budget=info.item_local_memory_budget)
        if tiling is not None:
            if tilings is None:
                return apply_tilings(kernel, [tiling])[0]
            tilings.append(tiling)
            return kernel
        if contraction is not None:
            if contractions is None:
                return apply_gpu_contractions(kernel, [contraction])[0]
            contractions.append(contraction)
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
            and (r_lens[i] or 0) >= 4 * info.reduction_group_size
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
            final_group_size=info.final_group_size,
            single_launch=info.single_launch_reductions)
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
    # the bodies of called functions are scheduled with the caller
    t_unit, not_inlined = inline_callee_kernels(t_unit)
    kernel = t_unit.default_entrypoint
    if not info.is_gpu and info.vector_calls:
        # sums of small contractions inside larger expressions get nests
        # of their own (see small_contractions)
        kernel = split_small_contractions(kernel, user_inames)
    value_args = frozenset(a.name for a in kernel.args
                           if isinstance(a, lp.ValueArg))
    # kernels with instructions other than plain stores (calls, sparse
    # products with data-dependent loops) keep their sequential loops
    user_inames = frozenset(user_inames)
    groups = _loop_groups(kernel, user_inames)
    if not_inlined is not None or groups is None:
        report_serial_nests(kernel.name, serial_nest_reasons(
            kernel, not_inlined, user_inames))
        return t_unit
    # the loop nests left serial, with the reason (see serial_report)
    serial: list[tuple[list[str], str]] = []
    for insns, order in groups:
        if order is None and _could_run_in_parallel(kernel, insns) \
                and not _runs_in_parallel(kernel, [i.id for i in insns]):
            serial.append(([i.id for i in insns],
                           _users_reason(kernel, insns, user_inames)))
    if groups and all(order is None for _, order in groups):
        # fully mapped by the user
        report_serial_nests(kernel.name, serial)
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
    contractions: list[GpuContraction] = []
    contraction_units: set[int] = set()
    vector_nests: list[tuple[int, VectorNest]] = []
    for k, (insns, out_inames) in enumerate(groups):
        if out_inames is None:
            continue  # the user's
        unit = unit_of_group[k]
        ids = nests[unit]
        # inames shared with other loop nests (e.g. from substitution
        # rules) are left alone
        shared = sorted(
            {i for i in out_inames if iname_users.get(i, 0) > 1}
            | {i for insn in insns for i in red_inames[insn.id]
               if iname_users.get(i, 0) > 1})
        if shared:
            if _could_run_in_parallel(kernel, insns):
                serial.append((list(ids), f"the loops {shared} are shared "
                               "with other loop nests"))
            continue
        vector = plan_vector_nest(
            kernel, [kernel.id_to_insn[i] for i in ids], out_inames, info)
        if vector is None:
            vector = plan_small_contraction(
                kernel, [kernel.id_to_insn[i] for i in ids], out_inames,
                info)
        if vector is not None:
            vector_nests.append((unit, vector))
            continue
        old = kernel
        planned = len(contractions)
        try:
            kernel = _schedule_group(
                kernel, [kernel.id_to_insn[i] for i in ids],
                out_inames, info, value_args, allow_join, batch, level[unit],
                tilings, t_unit.callables_table, contractions)
        except ValueError as e:
            # a precondition of a layout that its plan did not check (e.g.
            # a domain that a user's transformation changed): the nest
            # keeps its loops, and the warning says why
            serial.append((list(ids), f"its layout failed: {e}"))
            continue
        if len(contractions) > planned:
            contraction_units.add(unit)
        if kernel is not old:
            # instructions added for this nest (stages of a reduction) run
            # between the same global barriers as the nest (most nests
            # are only planned here: no scan of the kernel for them)
            ids.extend(sorted(set(kernel.id_to_insn) - set(old.id_to_insn)))
    kernel, loads = apply_tilings(kernel, tilings)
    kernel, computed = apply_gpu_contractions(kernel, contractions)
    for ids in nests[:ours]:
        ids.extend([*loads.get(ids[0], ()), *computed.get(ids[0], ())])
    kernel, index_insns = _apply_output_plans(kernel, batch)
    for ids in nests[:ours]:
        ids.extend(index_insns.get(ids[0], ()))
    kernel, vector_ids = apply_vector_nests(
        kernel, [plan for _, plan in vector_nests])
    kernel = drop_reduction_inames(kernel, [plan for _, plan in vector_nests])
    for unit, plan in vector_nests:
        nests[unit] = [vector_ids[plan.insn_ids[0]]]
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
        # small contractions get device kernels of their own: in a kernel
        # shared with other nests (of other work-group sizes), their code
        # would sit in a branch of the others' work-items
        alone = frozenset(unit for unit, plan in vector_nests
                          if isinstance(plan, SmallContraction))
        kernel = _add_global_barriers(
            kernel, nests, level,
            alone=frozenset(range(ours, len(nests))) | alone
            | contraction_units)
    report_serial_nests(kernel.name, serial)
    return t_unit.with_kernel(_single_writer_races_silenced(kernel))


def _single_writer_races_silenced(kernel: lp.LoopKernel) -> lp.LoopKernel:
    """*kernel* with loopy's write-race warning silenced for the stores
    whose hardware-mapped inames missing from their left-hand side all
    have the constant extent 1 (an output of one element, whose index is
    the constant 0): one work-item runs them (loopy guards each
    instruction by the bounds of its inames), so there is no race, but
    loopy's check, which does not look at extents, would warn."""
    silenced = set()
    for insn in kernel.instructions:
        if not isinstance(insn, lp.Assignment):
            continue
        parallel = {i for i in insn.within_inames
                    if kernel.iname_tags_of_type(i, ConcurrentTag)}
        if not parallel:
            continue
        name = f"write_race({insn.id})"
        if any(fnmatchcase(name, p) for p in kernel.silenced_warnings):
            continue
        indexed = set().union(*insn.assignee_subscript_deps())
        racing = parallel - indexed
        if racing and all(_constant_length(kernel, i) == 1 for i in racing):
            silenced.add(name)
    if not silenced:
        return kernel
    return kernel.copy(silenced_warnings=kernel.silenced_warnings | silenced)


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
