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
  (:data:`SILENCED_WRITE_RACES`). With symbolic extents the
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
  :attr:`DeviceInfo.few_outputs` (one after the other), over a box of
  constant extents is shared by all groups of the device, whatever the
  number of its axes: on a GPU, its inames are flattened into one and
  reduced in two stages as below; on a CPU, it is cut into about
  :attr:`DeviceInfo.reduction_parts` contiguous parts, each reduced by one
  work-item with interleaved accumulators, then the parts by one
  work-item (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_parts`).
  Otherwise, a full reduction over at least 4 times
  :attr:`DeviceInfo.compute_units` times
  :attr:`DeviceInfo.reduction_group_size` elements (or a symbolic number)
  runs in two stages, with :attr:`DeviceInfo.reduction_num_groups` groups
  of :attr:`DeviceInfo.two_stage_group_size` work-items in the first
  (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_two_stage`): every
  group reduces a part, then one group reduces the parts. A large reduction
  along a strided axis whose outputs run along the contiguous one (e.g.
  ``sum(x, axis=0)``) is reduced by column, rows side by side: on a GPU
  when the outputs alone would not occupy the device, in one kernel of
  2-D work-groups (consecutive outputs on ``l.0``, rows on ``l.1``,
  tree-reduced in local memory) where the extents are multiples of the
  group's, else in chunks of rows summed per output by a second kernel
  (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_columns`); on a
  CPU always in chunks (runs of :data:`CPU_COLUMN_RUN` rows per chunk);
  several strided
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
  symbolic number) keep :attr:`DeviceInfo.accumulator_lanes`
  interleaved accumulators.

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

Work-group sizes come from a :class:`DeviceInfo`:

* GPU: 256 work-items per group on the (coalesced) innermost axis.
* CPU (PoCL): 32 work-items per group. Measured on PoCL with 2 cores
  (``benchmarks/README.md``): 8 was slowest; 32, 64 and 256 were within
  5 % of each other on the elementwise chain (256 best) and the stencil
  (32 best). PoCL vectorizes across the work-items of a group.
* Unknown device (``None``): the CPU schedule with 32 work-items per group,
  which every OpenCL device we know accepts, so that the code runs
  anywhere.

.. autoclass:: DeviceInfo
.. autodata:: SILENCED_WRITE_RACES
.. autodata:: MIN_LANE_EXTENT
.. autodata:: MIN_PART_ELEMENTS
.. autodata:: CPU_COLUMN_RUN
.. autofunction:: default_schedule
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import InameImplementationTag
from loopy.symbolic import (
    Reduction as LoopyReduction,
    UncachedIdentityMapper as LoopyIdentityMapperBase,
)

from pytato.target.loopy.loopy_walk import UncachedLoopyWalkMapper
from pytato.target.loopy.schedule.tiling import (
    ITEM_LOCAL_MEMORY_BUDGET,
    ITEM_LOCAL_MEMORY_RESERVE,
    TilingPlan,
    apply_tilings,
    plan_tiling,
)


if TYPE_CHECKING:
    import pyopencl as cl


__all__ = ["DeviceInfo", "default_schedule"]


@dataclass(frozen=True)
class DeviceInfo:
    """What the schedule needs to know about a device.

    .. attribute:: kind

        ``"gpu"`` or ``"cpu"`` (anything that is not a GPU is scheduled like
        a CPU).

    .. attribute:: compute_units
    .. attribute:: max_work_group_size
    .. attribute:: name
    .. attribute:: preferred_group_size

        Overrides the default work-group size (see :attr:`group_size`).

    .. attribute:: min_tiled_outputs

        Loop nests with fewer outputs than this (default 4096: a few
        work-groups' worth) are not tiled on GPUs: what staging saves there
        is negligible, and each tiled nest brings hardware inames of its
        own, which made :mod:`loopy`'s code generation superlinear in their
        number (the 10^4-node random DAG of
        ``benchmarks/bench_codegen.py``, whose 16 x 16 reductions were all
        tiled, took 152 s of code generation with the GPU schedule on the
        H100 machine).

    .. attribute:: local_mem_size

        Bytes of local memory per work-group (default: the 32 KiB that
        OpenCL guarantees).

    .. automethod:: from_cl_device
    .. automethod:: of
    .. automethod:: conservative
    .. attribute:: group_size
    .. attribute:: reduction_group_size
    .. attribute:: two_stage_group_size
    .. attribute:: reduction_num_groups
    .. automethod:: two_stage_groups
    .. attribute:: two_stage_unroll
    .. attribute:: final_group_size
    .. attribute:: min_parallel_outputs
    .. attribute:: item_local_memory_budget
    .. attribute:: accumulator_lanes
    .. attribute:: parts_group_size
    .. attribute:: reduction_parts
    .. attribute:: few_outputs
    """

    kind: str
    compute_units: int
    max_work_group_size: int
    name: str = ""
    preferred_group_size: int | None = None
    min_tiled_outputs: int = 4096
    local_mem_size: int = 32 * 1024

    @classmethod
    def from_cl_device(cls, device: cl.Device) -> DeviceInfo:
        """The description of a :class:`pyopencl.Device`."""
        import pyopencl as cl
        kind = "gpu" if device.type & cl.device_type.GPU else "cpu"
        return cls(kind=kind, compute_units=int(device.max_compute_units),
                   max_work_group_size=int(device.max_work_group_size),
                   name=str(device.name),
                   local_mem_size=int(device.local_mem_size))

    @classmethod
    def of(cls, device: cl.Device | DeviceInfo | None) -> DeviceInfo:
        """The description of *device*: a :class:`pyopencl.Device`, a
        :class:`DeviceInfo` (itself), or None (:meth:`conservative`)."""
        if device is None:
            return cls.conservative()
        if isinstance(device, DeviceInfo):
            return device
        return cls.from_cl_device(device)

    @classmethod
    def conservative(cls) -> DeviceInfo:
        """The description used when the device is unknown: a CPU-like
        device with small work-groups, whose code runs on any device."""
        return cls(kind="cpu", compute_units=4, max_work_group_size=64,
                   name="unknown")

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"

    @property
    def item_local_memory_budget(self) -> int:
        """Bytes of local memory for the blocks of tiled nests whose
        work-items compute several elements
        (:attr:`pytato.target.loopy.schedule.tiling.TilingPlan.elements_per_item`):
        :attr:`local_mem_size` less
        :data:`~pytato.target.loopy.schedule.tiling.ITEM_LOCAL_MEMORY_RESERVE`, at
        most :data:`~pytato.target.loopy.schedule.tiling.ITEM_LOCAL_MEMORY_BUDGET`
        (46 KiB of an H100's 48 KiB)."""
        return min(ITEM_LOCAL_MEMORY_BUDGET,
                   self.local_mem_size - ITEM_LOCAL_MEMORY_RESERVE)

    @property
    def group_size(self) -> int:
        """Work-items per group for element-wise (output-parallel) loops."""
        size = self.preferred_group_size or (256 if self.is_gpu else 32)
        return max(1, min(size, self.max_work_group_size))

    @property
    def accumulator_lanes(self) -> int:
        """The number of interleaved accumulators of a long reduction left
        inside a work-item (see
        :mod:`pytato.target.loopy.schedule.accumulators`): 4 on a CPU, where
        compilers vectorize across work-items and a single accumulator's
        updates wait for each other (PoCL, 2 cores: the 4096 x 4096 matvec
        2.3x, the row sums 1.8x faster), 1 on a GPU, whose many work-items
        hide the wait."""
        return 1 if self.is_gpu else 4

    @property
    def reduction_group_size(self) -> int:
        """Work-items per group for a parallel (tree) reduction."""
        size = self.preferred_group_size or (256 if self.is_gpu else 32)
        return max(1, min(size, self.max_work_group_size))

    @property
    def two_stage_group_size(self) -> int:
        """Work-items per group of a two-stage (full) reduction: 1024 on
        a GPU, else :attr:`reduction_group_size` (at most the device's
        maximum)."""
        size = self.preferred_group_size or (
            1024 if self.is_gpu else self.reduction_group_size)
        return max(1, min(size, self.max_work_group_size))

    @property
    def reduction_num_groups(self) -> int:
        """Work-groups of the first stage of a two-stage (full)
        reduction: 2 per compute unit on a GPU, 4 on a CPU (see
        :meth:`two_stage_groups`). On an H100 (the sum of 2**24 doubles,
        2026-11-23), 2 groups of 1024 per unit (one full wave: 2048
        work-items per unit) took 0.054 ms; 2, 4 or 8 groups of 256, 512
        or 1024 per unit took 0.055 to 0.062 ms."""
        return (2 if self.is_gpu else 4) * self.compute_units

    def two_stage_groups(self, extent: int | None) -> int:
        """The number of work-groups of the first stage of a two-stage
        reduction over *extent* elements (None: unknown). On a GPU, the
        number between 1 and 4 groups per compute unit closest to
        :attr:`reduction_num_groups` for which the groups' work-items
        take the same whole number of elements each, if there is one: then
        no element needs a bounds check, and the steps of each work-item
        are unrolled (on an H100, the first stage over 2**24 doubles went
        from 0.052 to 0.050 ms with 256 groups of 1024, 4 steps
        unrolled)."""
        default = self.reduction_num_groups
        if not self.is_gpu or extent is None:
            return default
        per_group = self.two_stage_group_size
        candidates = [g for g in range(self.compute_units,
                                       4 * self.compute_units + 1)
                      if extent % (g * per_group) == 0]
        if not candidates:
            return default
        return min(candidates, key=lambda g: (abs(g - default), g))

    @property
    def two_stage_unroll(self) -> int:
        """Unrolled steps of the work-items of the first stage of a
        two-stage reduction: 4 on a GPU, 1 on a CPU."""
        return 4 if self.is_gpu else 1

    @property
    def final_group_size(self) -> int:
        """Work-items of the group of the second stage of a two-stage
        reduction: at most 256 (fewer levels of its tree than with 1024 on a
        GPU, for a few hundred partial results)."""
        return min(self.two_stage_group_size, 256)

    @property
    def parts_group_size(self) -> int:
        """Work-items per group of the first stage of a full reduction on a
        CPU (:attr:`reduction_parts`): 8. Each work-item streams its own
        contiguous part, so a group reads as many streams at once as it has
        work-items, where CPU OpenCL compilers run them side by side; a few
        streams per core are what caches and prefetchers follow well. On
        PoCL (2 cores, the sum of 2**24 doubles in parts), 4, 8, 16 and 32
        work-items took 3.6 to 4.1 ms under load, within noise of each
        other (the earlier two-stage tree kernel, each work-item reading a
        strided sequence: 10.5 ms with 32 work-items, 2.5 ms with 8)."""
        return max(1, min(8, self.max_work_group_size))

    @property
    def reduction_parts(self) -> int:
        """The number of contiguous parts, each reduced by one
        work-item, of a large full reduction on a CPU: 16 groups of
        :attr:`parts_group_size` per compute unit (enough groups to
        balance the threads of the device; 64 to 1024 parts in all were
        within noise on PoCL, 2 cores)."""
        return 16 * self.compute_units * self.parts_group_size

    @property
    def few_outputs(self) -> int:
        """Reductions with fewer outputs than this (and at least
        :data:`MIN_PART_ELEMENTS` elements per part) are shared among all
        groups like full reductions: the compute units on a GPU (with
        fewer, one group per output leaves units idle), 4 per compute unit
        on a CPU (:attr:`min_parallel_outputs`)."""
        return self.compute_units if self.is_gpu \
            else self.min_parallel_outputs

    @property
    def min_parallel_outputs(self) -> int:
        """Below this many outputs, a large reduction is computed in
        parallel rather than with one work-item per output."""
        if self.is_gpu:
            return 32 * self.compute_units * self.group_size
        return 4 * self.compute_units


# {{{ helpers

def _has_impl_tag(kernel: lp.LoopKernel, iname: str) -> bool:
    return any(isinstance(t, InameImplementationTag)
               for t in kernel.iname_tags(iname))


def _constant_length(kernel: lp.LoopKernel, iname: str) -> int | None:
    try:
        return int(kernel.get_constant_iname_length(iname))
    except Exception:
        return None


class _ContiguousIndexCollector(UncachedLoopyWalkMapper):
    """Collects the variables of the last index of array accesses into
    *out* (descending into reductions)."""

    def __init__(self, out: set[str]) -> None:
        super().__init__()
        self.out = out

    def map_subscript(self, e: prim.Subscript) -> None:
        from pymbolic.mapper.dependency import DependencyMapper

        idx = e.index if isinstance(e.index, tuple) else (e.index,)
        if idx:
            deps = DependencyMapper(composite_leaves=False)(idx[-1])
            self.out.update(d.name for d in deps
                            if isinstance(d, prim.Variable))
        self.rec(e.index)

    def map_reduction(self, e: LoopyReduction) -> None:
        self.rec(e.expr)


class _ReductionCollector(UncachedLoopyWalkMapper):
    """Collects the outermost reductions of expressions (each distinct one
    once, in the order they are first met), and the inames appearing in
    the last index of array accesses inside them (contiguous access)."""

    def __init__(self) -> None:
        super().__init__()
        self.reductions: list[LoopyReduction] = []
        self.contiguous: set[str] = set()
        self._seen: set[LoopyReduction] = set()

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        if expr in self._seen:
            return
        self._seen.add(expr)
        self.reductions.append(expr)
        # nested reductions stay sequential: do not collect them
        _ContiguousIndexCollector(self.contiguous)(expr.expr)


class _ReductionFinder(UncachedLoopyWalkMapper):
    """Finds whether an expression holds a reduction (stops walking once
    it has found one)."""

    found = False

    def visit(self, expr: Any, *args: Any) -> bool:
        return not self.found

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        self.found = True


def _reduction_inames(insn: Any) -> frozenset[str]:
    """``insn.reduction_inames()``, without :mod:`loopy`'s analysis of
    the dependencies of *insn* (which comes with it) where the expression
    holds no reduction: a walk, visiting all nodes that analysis visits,
    finds out first."""
    finder = _ReductionFinder()
    try:
        finder(insn.expression)
    except Exception:
        return frozenset(insn.reduction_inames())
    return frozenset(insn.reduction_inames()) if finder.found else frozenset()


def _output_inames(insn: Any) -> list[str] | None:
    """The inames indexing the assignee of *insn*, in order, if the
    instruction is a plain store over exactly those inames."""
    if not isinstance(insn, lp.Assignment):
        return None
    lhs = insn.assignee
    if isinstance(lhs, prim.Variable):
        idx: tuple[Any, ...] = ()
    elif isinstance(lhs, prim.Subscript):
        idx = lhs.index if isinstance(lhs.index, tuple) else (lhs.index,)
    else:
        return None
    names = []
    for i in idx:
        if not isinstance(i, prim.Variable):
            return None
        names.append(i.name)
    if len(set(names)) != len(names) or set(names) != set(insn.within_inames):
        return None
    return names

# }}}


# {{{ per-instruction schedule

#: Kernels with more loop nests than this do not join output inames:
#: :func:`loopy.join_inames` rewrites the whole kernel at each call, which
#: made scheduling quadratic in the number of loop nests (tens of seconds
#: for a 1000-node graph).
MAX_GROUPS_FOR_JOIN = 32


def _schedule_outputs(kernel: lp.LoopKernel, insn_id: str,
                      inames: list[str], lengths: list[int | None],
                      group_size: int | None,
                      allow_join: bool = True) -> lp.LoopKernel:
    """Map output inames onto ``g.0``/``l.0`` (and ``g.1``); with
    *group_size* None, only onto ``g.0``."""
    if not inames:
        return kernel
    if all(n is not None for n in lengths) and (allow_join or len(inames) == 1):
        if len(inames) > 1:
            flat = kernel.get_var_name_generator()(f"{inames[-1]}_flat")
            kernel = lp.join_inames(kernel, inames, new_iname=flat)
        else:
            flat = inames[0]
        if group_size is None:
            return lp.tag_inames(kernel, {flat: "g.0"})
        return lp.split_iname(kernel, flat, group_size,
                              outer_tag="g.0", inner_tag="l.0")
    inner = inames[-1]
    if group_size is not None and lengths[-1] is not None:
        # a small innermost axis needs no larger work-groups than itself
        group_size = max(1, min(group_size, lengths[-1]))
    if len(inames) == 1:
        if group_size is None:
            return lp.tag_inames(kernel, {inner: "g.0"})
        return lp.split_iname(kernel, inner, group_size,
                              outer_tag="g.0", inner_tag="l.0")
    # symbolic, several axes: outermost axis to g.0, innermost split with
    # its inner part to l.0 (only g.0 and l.0 are used anywhere, so that
    # instructions sharing a device kernel agree on the hardware axes)
    kernel = lp.tag_inames(kernel, {inames[0]: "g.0"})
    if group_size is not None:
        kernel = lp.split_iname(kernel, inner, group_size, inner_tag="l.0")
    return kernel


@dataclass
class _OutputPlan:
    """The output axes *inames* (extents *lengths*, None where symbolic) of
    the loop nest of instructions *insn_ids*, to map onto work-groups of
    *group_size* work-items."""

    insn_ids: list[str]
    inames: list[str]
    lengths: list[int | None]
    group_size: int
    #: the nest's dependency level: plans of one level with constant
    #: extents share their hardware inames (one device kernel)
    level: int = 0


def _split_in_domain(dom: Any, iname: str, outer: str, inner: str,
                     size: int) -> Any:
    """*dom* with *iname* replaced by ``size*outer + inner``,
    ``0 <= inner < size``."""
    import islpy as isl
    set_t = isl.dim_type.set
    n = dom.dim(set_t)
    dom = dom.add_dims(set_t, 2)
    dom = dom.set_dim_name(set_t, n, outer).set_dim_name(set_t, n + 1, inner)
    space = dom.get_space()
    dom = dom.add_constraint(isl.Constraint.eq_from_names(
        space, {iname: 1, outer: -size, inner: -1}))
    dom = dom.add_constraint(isl.Constraint.ineq_from_names(
        space, {inner: 1}))
    dom = dom.add_constraint(isl.Constraint.ineq_from_names(
        space, {1: size - 1, inner: -1}))
    idx = dom.get_var_dict()[iname][1]
    return dom.project_out(set_t, idx, 1)


#: The write-race warnings that :func:`default_schedule` silences in
#: kernels where stores index through :class:`_IndexVariables` (loopy sees
#: no hardware iname in their index): those of pytato's instructions,
#: whose ids all start with ``_pt_``. Instructions added later under other
#: ids keep loopy's check.
SILENCED_WRITE_RACES = "write_race(_pt_*)"


class _IndexVariables:
    """The private integer temporaries holding the indices derived from the
    flat index *flat* of one pair of hardware inames *within*: ``flat //
    stride`` and ``flat // stride % n``, each computed once per work-item
    by an instruction of its own.

    Every subscript of a flat loop nest then reads a variable instead of
    repeating ``(s*f_outer + f_inner) // stride % n``: loopy's passes and
    its C code generation walk every node of every expression (and prove
    the signs of ``//`` and ``%`` operands with isl at each), so those
    repeated index expressions were about half of loopy's work on graphs of
    many small arrays."""

    def __init__(self, base: str, flat: Any, within: frozenset[str],
                 vng: Any, ids: Any, dtype: Any) -> None:
        self.base = base
        self.flat = flat
        self.within = within
        self.vng = vng
        self.ids = ids
        self.dtype = dtype
        self.insns: list[lp.Assignment] = []
        self.temporaries: dict[str, lp.TemporaryVariable] = {}
        self._vars: dict[tuple[int, int | None], prim.Variable] = {}
        self._insn_of: dict[str, str] = {}

    def _quotient(self, k: int) -> Any:
        return self.flat if k == 1 else prim.FloorDiv(self.flat, k)

    def _new(self, key: Any, name: str, expr: Any) -> prim.Variable:
        var = prim.Variable(self.vng(name))
        insn_id = self.ids(f"_pt_index_{var.name}")
        self.temporaries[var.name] = lp.TemporaryVariable(
            var.name, self.dtype, shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        self.insns.append(lp.Assignment(
            var, expr, id=insn_id, within_inames=self.within,
            depends_on=frozenset()))
        self._vars[key] = var
        self._insn_of[var.name] = insn_id
        return var

    def get(self, stride: int, mod: int | None) -> prim.Variable:
        """The variable holding ``flat // stride % mod`` (no ``% mod``
        for None)."""
        var = self._vars.get((stride, mod))
        if var is not None:
            return var
        expr = self._quotient(stride)
        name = self.base + ("" if stride == 1 else f"_div{stride}")
        if mod is not None:
            expr = prim.Remainder(expr, mod)
            name += f"_mod{mod}"
        elif stride == 1:
            name += "_idx"
        return self._new((stride, mod), name, expr)

    def contiguous(self, stride: int, mod: int) -> prim.Variable:
        """The variable holding ``flat // stride % mod`` written as
        ``flat // stride - mod*(flat // (stride*mod))``, for the last
        (contiguous) index of subscripts: the row-major address
        ``mod*(flat // (stride*mod)) + this`` then folds back to ``flat //
        stride`` in the device compiler. PoCL vectorizes across work-items
        only where it sees consecutive addresses: the stencil of
        ``bench_kernels.py`` was 7 to 14 % slower with ``%`` there, while
        the shared-matrix DG einsum was twice as slow with this form as a
        row index (``D[i, j]``), so each form is used where it helps."""
        key = (stride, mod, "contiguous")
        var = self._vars.get(key)
        if var is not None:
            return var
        expr = prim.Sum((self._quotient(stride), prim.Product(
            (-mod, self._quotient(stride * mod)))))
        name = self.base + ("" if stride == 1 else f"_div{stride}") \
            + f"_mod{mod}_c"
        return self._new(key, name, expr)

    def ids_of(self, variables: Any) -> frozenset[str]:
        """The ids of the instructions computing *variables*."""
        return frozenset(self._insn_of[v.name] for v in variables)


class _Substitute(LoopyIdentityMapperBase):
    """Replaces variables by name: :class:`loopy.symbolic.SubstitutionMapper`
    with a :func:`~pymbolic.mapper.substitutor.make_subst_func` of
    *values*, without its cache (hashing every subexpression for the cache
    cost more than it saved: the expressions of a nest share few
    subexpressions)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        super().__init__()
        self.values = values

    def map_variable(self, expr: prim.Variable, *args: Any) -> Any:
        value = self.values.get(expr.name)
        return expr if value is None else value


class _LastIndex(LoopyIdentityMapperBase):
    """Replaces variables by others (*twins*) in the last index of each
    subscript only."""

    def __init__(self, twins: dict[str, prim.Variable]) -> None:
        super().__init__()
        self.subst = _Substitute(twins)

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Any:
        index = tuple(self.rec(i) for i in expr.index_tuple)
        if index:
            index = (*index[:-1], self.subst(index[-1]))
        return prim.Subscript(self.rec(expr.aggregate), index)


class _NestRewrite(LoopyIdentityMapperBase):
    """The rewrite of the expressions of one loop nest: inames replaced by
    *subst*, then, in the last index of subscripts, index variables by
    their *twins* (:meth:`_IndexVariables.contiguous`). Made once per nest
    and shared by its instructions.

    One pass over each expression, with the result of the two: substituting
    (:class:`_Substitute`), then applying :class:`_LastIndex` to the result
    (which also turns the index of each subscript into a tuple)."""

    def __init__(self, subst: dict[str, Any],
                 twins: dict[str, prim.Variable] | None = None) -> None:
        super().__init__()
        self.subst = subst
        self.last = _LastIndex(twins) if twins else None

    def map_variable(self, expr: prim.Variable, *args: Any) -> Any:
        value = self.subst.get(expr.name)
        if value is None:
            return expr
        return value if self.last is None else self.last(value)

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Any:
        if self.last is None:
            return super().map_subscript(expr)
        index = tuple(self.rec(i) for i in expr.index_tuple)
        if index:
            index = (*index[:-1], self.last.subst(index[-1]))
        return prim.Subscript(self.rec(expr.aggregate), index)


def _apply_output_plans(kernel: lp.LoopKernel, plans: list[_OutputPlan]
                        ) -> tuple[lp.LoopKernel, dict[str, list[str]]]:
    """Apply the schedules of the output axes of many loop nests in one
    rewrite of the kernel (what :func:`_schedule_outputs` does with one
    :mod:`loopy` transformation per nest, each rewriting the whole kernel,
    which is quadratic in the number of nests).

    Constant extents: the output inames are replaced by a flat index
    ``f = group_size*f_outer + f_inner`` (row-major, ``f_outer`` on ``g.0``,
    ``f_inner`` on ``l.0``). All such nests of one dependency level share
    one pair ``f_outer, f_inner``, sized for the largest of them; the
    instructions of smaller nests are predicated on ``f < size``. (One pair
    of hardware inames per device kernel instead of one per nest: loopy's
    code generation walks every hardware iname of a kernel for each of
    them.) Symbolic extents: the innermost iname is split likewise (one
    axis), or the outermost goes to ``g.0`` and the innermost is split with
    its inner part on ``l.0`` (several axes)."""
    import islpy as isl
    from loopy.kernel.data import GroupInameTag, Iname, LocalInameTag

    if not plans:
        return kernel, {}
    vng = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    domains: list[Any] = list(kernel.domains)
    inames = dict(kernel.inames)
    rewrite_of_insn: dict[str, _NestRewrite] = {}
    within_of_insn: dict[str, frozenset[str]] = {}
    pred_of_insn: dict[str, Any] = {}
    deps_of_insn: dict[str, frozenset[str]] = {}
    index_insns: list[lp.Assignment] = []
    temporaries: dict[str, lp.TemporaryVariable] = {}
    added: dict[str, list[str]] = {}
    all_subst: dict[Any, Any] = {}
    unbatched = []
    own: list[tuple[_OutputPlan, int]] = []
    for plan in plans:
        home = {kernel.get_home_domain_index(i) for i in plan.inames}
        dom_idx = next(iter(home))
        if len(home) != 1 or (set(domains[dom_idx].get_var_names(
                isl.dim_type.set)) != set(plan.inames)):
            # not a domain of its own: loopy's transformations
            unbatched.append(plan)
        else:
            own.append((plan, dom_idx))

    # constant extents: one flat pair of inames per level
    by_level: dict[int, list[tuple[_OutputPlan, int]]] = {}
    for plan, dom_idx in own:
        if all(n is not None for n in plan.lengths):
            by_level.setdefault(plan.level, []).append((plan, dom_idx))
    dropped: set[int] = set()
    for members in by_level.values():
        totals = [_prod(plan.lengths) for plan, _ in members]
        total = max(totals)
        size = max(1, min(members[0][0].group_size, total))
        lead = members[0][0]
        base = lead.inames[-1] + ("_flat" if len(lead.inames) > 1 else "")
        outer, inner = vng(f"{base}_outer"), vng(f"{base}_inner")
        domains[members[0][1]] = isl.BasicSet(
            f"{{ [{outer}, {inner}] : 0 <= {inner} < {size} and "
            f"0 <= {size}*{outer} + {inner} < {total} }}")
        dropped.update(idx for _, idx in members[1:])
        inames[outer] = Iname(outer, frozenset([GroupInameTag(0)]))
        inames[inner] = Iname(inner, frozenset([LocalInameTag(0)]))
        flat = prim.Sum((prim.Product((size, prim.Variable(outer))),
                         prim.Variable(inner)))
        index_vars = _IndexVariables(base, flat, frozenset({outer, inner}),
                                     vng, ids, kernel.index_dtype)
        for (plan, _), n_plan in zip(members, totals, strict=True):
            subst: dict[str, Any] = {}
            exprs: dict[str, Any] = {}
            twins: dict[str, prim.Variable] = {}
            stride = n_plan
            for k, (iname, n) in enumerate(zip(plan.inames, plan.lengths,
                                               strict=True)):
                assert n is not None
                stride //= n
                e: Any = flat if stride == 1 else prim.FloorDiv(flat, stride)
                if k > 0:
                    e = prim.Remainder(e, n)
                exprs[iname] = e
                subst[iname] = (0 if n == 1 else
                                index_vars.get(stride, n if k > 0 else None))
                if k > 0 and n > 1:
                    twin = index_vars.contiguous(stride, n)
                    twins[subst[iname].name] = twin
            pred = (prim.Comparison(flat, "<", n_plan) if n_plan < total
                    else None)
            _record(kernel, plan, subst, set(plan.inames), {outer, inner},
                    inames, rewrite_of_insn, within_of_insn, all_subst,
                    exprs=exprs, twins=twins)
            used = index_vars.ids_of(
                [*(v for v in subst.values() if isinstance(v, prim.Variable)),
                 *twins.values()])
            for iid in plan.insn_ids:
                deps_of_insn[iid] = used
                if pred is not None:
                    pred_of_insn[iid] = pred
        index_insns.extend(index_vars.insns)
        temporaries.update(index_vars.temporaries)
        if index_vars.insns:
            added[members[0][0].insn_ids[0]] = [
                i.id for i in index_vars.insns]

    # symbolic extents: a split of the innermost axis per nest
    for plan, dom_idx in own:
        if all(n is not None for n in plan.lengths):
            continue
        last = plan.inames[-1]
        size = plan.group_size
        if plan.lengths[-1] is not None:
            size = max(1, min(size, plan.lengths[-1]))
        outer, inner = vng(f"{last}_outer"), vng(f"{last}_inner")
        domains[dom_idx] = _split_in_domain(domains[dom_idx], last, outer,
                                            inner, size)
        if len(plan.inames) == 1:
            inames[outer] = Iname(outer, frozenset([GroupInameTag(0)]))
        else:
            inames[outer] = Iname(outer, frozenset())
            first = plan.inames[0]
            inames[first] = inames[first].tagged(GroupInameTag(0))
        inames[inner] = Iname(inner, frozenset([LocalInameTag(0)]))
        subst = {last: prim.Sum((prim.Product((size, prim.Variable(outer))),
                                 prim.Variable(inner)))}
        _record(kernel, plan, subst, {last}, {outer, inner}, inames,
                rewrite_of_insn, within_of_insn, all_subst)

    if rewrite_of_insn:
        domains = [d for i, d in enumerate(domains) if i not in dropped]
        kernel = _rewrite_inames(kernel, domains, inames, rewrite_of_insn,
                                 within_of_insn, pred_of_insn, all_subst,
                                 deps_of_insn)
        if index_insns:
            # loopy's write-race check looks for the hardware inames in
            # the stored index; it now reads index variables (a bijection
            # of the flat index, so no two work-items store one element)
            kernel = kernel.copy(
                instructions=[*index_insns, *kernel.instructions],
                temporary_variables={**kernel.temporary_variables,
                                     **temporaries},
                silenced_warnings=kernel.silenced_warnings
                | {SILENCED_WRITE_RACES})
    for plan in unbatched:
        kernel = _schedule_outputs(kernel, plan.insn_ids[0], plan.inames,
                                   plan.lengths, plan.group_size)
    return kernel, added


def _record(kernel: lp.LoopKernel, plan: _OutputPlan, subst: dict[str, Any],
            removed: set[str], added: set[str], inames: dict[str, Any],
            rewrite_of_insn: dict[str, _NestRewrite],
            within_of_insn: dict[str, frozenset[str]],
            all_subst: dict[Any, Any],
            exprs: dict[str, Any] | None = None,
            twins: dict[str, prim.Variable] | None = None) -> None:
    """Note the rewrite of the nest of *plan*: inames *removed* replaced
    (in expressions, by *subst*, with *twins* in last indices, see
    :class:`_NestRewrite`; in loops, by *added*). *exprs*: the values of
    the removed inames in terms of the added ones, where *subst* replaces
    them by variables holding those values."""
    for name in removed:
        inames.pop(name, None)
    rewrite = _NestRewrite(subst, twins)
    for iid in plan.insn_ids:
        rewrite_of_insn[iid] = rewrite
        within_of_insn[iid] = frozenset(
            (kernel.id_to_insn[iid].within_inames - removed) | added)
    all_subst.update({prim.Variable(k): v
                      for k, v in (exprs or subst).items()})


def _rewrite_inames(kernel: lp.LoopKernel, domains: list[Any],
                    inames: dict[str, Any],
                    rewrite_of_insn: dict[str, _NestRewrite],
                    within_of_insn: dict[str, frozenset[str]],
                    pred_of_insn: dict[str, Any],
                    all_subst: dict[Any, Any],
                    deps_of_insn: dict[str, frozenset[str]]
                    ) -> lp.LoopKernel:
    new_insns = []
    for insn in kernel.instructions:
        mapper = rewrite_of_insn.get(insn.id)
        if mapper is None:
            new_insns.append(insn)
            continue
        pred = pred_of_insn.get(insn.id)
        predicates = frozenset(mapper(p) for p in insn.predicates)
        new_insns.append(insn.copy(
            assignee=mapper(insn.assignee),
            expression=mapper(insn.expression),
            within_inames=within_of_insn[insn.id],
            depends_on=insn.depends_on | deps_of_insn.get(insn.id, frozenset()),
            predicates=predicates | {pred} if pred is not None
            else predicates))
    return kernel.copy(
        domains=domains, instructions=new_insns, inames=inames,
        applied_iname_rewrites=(*kernel.applied_iname_rewrites, all_subst))


def _prod(values: list[int | None]) -> int:
    result = 1
    for v in values:
        assert v is not None
        result *= v
    return result


#: Columns (``l.0``) and rows (``l.1``) of the work-groups of a column
#: reduction in one kernel on a GPU (:func:`_column_tree`). On an H100
#: (``sum(x, axis=0)``, 4096 x 4096 doubles, 2026-11-23): 32 x 16 0.052
#: ms, 32 x 32 0.051 ms, 16 x 16 0.052 ms, 32 x 8 0.060 ms, 64 x 8
#: 0.060 ms, against 0.059 ms for two kernels (chunks, then their sum).
#: The least constant extent of the innermost iname of a sequential
#: reduction for which :attr:`DeviceInfo.accumulator_lanes` accumulators
#: are used (symbolic extents always use them).
MIN_LANE_EXTENT = 64

#: The least number of elements per part of a full reduction on a CPU.
MIN_PART_ELEMENTS = 256

COLUMN_TREE_COLUMNS = 32

#: Rows per chunk of a column reduction on a CPU: at least
#: :data:`MIN_LANE_EXTENT`, so that a chunk covering its rows exactly gets
#: interleaved accumulators (PoCL, 2 cores, ``sum(x, axis=0)`` of 4096 x
#: 4096 doubles, separate processes at load 1.5: 10.5 ms with runs of 32
#: rows and one accumulator, 8.7 ms with runs of 16 rows and 4
#: accumulators; numpy 4.7 ms).
CPU_COLUMN_RUN = 64
COLUMN_TREE_ROWS = 16


def _column_tree(kernel: lp.LoopKernel, insn: Any, col: str,
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
    from pytato.target.loopy.schedule.reductions import _tag_outputs

    # the output inames (constant extents) joined, split onto g.0/l.0
    kernel = _tag_outputs(kernel, out_inames, cols, second_axis="g.1")
    vng = kernel.get_var_name_generator()
    inner = vng(f"{col}_rows")
    outer = vng(f"{col}_seq")
    kernel = lp.split_iname(kernel, col, rows, inner_iname=inner,
                            outer_iname=outer, inner_tag="l.1")
    kernel = lp.split_reduction_outward(kernel, inner)
    kernel = _restore_reduction_order(kernel, insn, col, outer)
    # all rows of a group write the same (reduced) value
    return kernel.copy(silenced_warnings=frozenset(
        kernel.silenced_warnings | {f"write_race({insn.id})"}))


class _ReductionInameRanks(LoopyIdentityMapperBase):
    """Collects the position of each reduction iname of an expression, in
    order of appearance, into :attr:`rank` (with *col* counted as
    *outer*)."""

    def __init__(self, col: str, outer: str) -> None:
        super().__init__()
        self.col, self.outer = col, outer
        self.rank: dict[str, int] = {}

    def map_reduction(self, expr: Any, *args: Any) -> Any:
        for name in expr.inames:
            self.rank.setdefault(self.outer if name == self.col else name,
                                 len(self.rank))
        return super().map_reduction(expr, *args)


class _OrderReductionInames(LoopyIdentityMapperBase):
    """Sorts the inames of every reduction by *rank* (then by name)."""

    def __init__(self, rank: dict[str, int]) -> None:
        super().__init__()
        self.rank = rank

    def map_reduction(self, expr: Any, *args: Any) -> Any:
        last = len(self.rank)
        return LoopyReduction(
            expr.operation,
            tuple(sorted(expr.inames,
                         key=lambda n: (self.rank.get(n, last), n))),
            self.rec(expr.expr, *args), expr.allow_simultaneous)


def _restore_reduction_order(kernel: lp.LoopKernel, insn: Any, col: str,
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


def _column_reduction(kernel: lp.LoopKernel, insns: list[Any],
                      coll: _ReductionCollector, out_inames: list[str],
                      n_out: int | None, info: DeviceInfo
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
    unit; a second kernel reduces the chunks). On a CPU always in two,
    with runs of :data:`CPU_COLUMN_RUN` rows per chunk (a work-item walking
    a whole strided column was 5 to 9 times slower than numpy). A
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
        from pytato.target.loopy.schedule.reductions import flatten_reduction_inames
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
        chunks = -(-r_len // CPU_COLUMN_RUN)
    from pytato.target.loopy.schedule.reductions import split_reduction_columns
    return split_reduction_columns(kernel, insn.id, num_chunks=chunks,
                                   group_size=info.group_size, iname=col)


def _num_parts(n: int, target: int, group_size: int) -> int | None:
    """The number of parts of :func:`_full_reduction` for an extent *n*: a
    divisor of *n* between ``target/4`` (at least 2) and ``2*target``, a
    multiple of *group_size* if there is one, closest to *target* (by
    ratio); None if there is none. (At most ``min(2*target, sqrt(n))``
    steps.)"""
    import math
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


def _full_reduction(kernel: lp.LoopKernel, insn: Any, red: LoopyReduction,
                    info: DeviceInfo, n_out: int = 1
                    ) -> lp.LoopKernel | None:
    """The reduction *red* of *insn* over a box of constant extents, with
    no outputs (a full reduction) or *n_out* outputs, fewer than
    :attr:`DeviceInfo.few_outputs`, computed by all groups of the device;
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
      :attr:`DeviceInfo.reduction_parts` contiguous parts (about; a
      divisor of the extent), each reduced by one work-item with
      interleaved accumulators
      (:func:`~pytato.target.loopy.schedule.reductions.split_reduction_parts`)."""
    from pytato.target.loopy.schedule.reductions import (
        box_extent,
        flatten_reduction_inames,
        split_reduction_parts,
        split_reduction_two_stage,
    )
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


def _schedule_group(kernel: lp.LoopKernel, insns: list[Any],
                    out_inames: list[str], info: DeviceInfo,
                    value_args: frozenset[str],
                    allow_join: bool = True,
                    batch: list[_OutputPlan] | None = None,
                    level: int = 0,
                    tilings: list[TilingPlan] | None = None
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

    columns = _column_reduction(kernel, insns, coll, out_inames, n_out, info)
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
            params = set(dom.get_var_names(_isl_dim_param()))
            r_len = r_lens[cand]
            affine = params <= value_args
            large = (r_len is None and affine) or (
                r_len is not None and r_len >= 4 * info.reduction_group_size)
            few_outputs = n_out is not None and n_out < info.min_parallel_outputs
            coalesced = info.is_gpu and cand in coll.contiguous and not (
                out_inames and out_inames[-1] in coll.contiguous)
            if large and affine and (few_outputs or coalesced):
                red_iname = cand

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
        from pytato.target.loopy.schedule.reductions import split_reduction_two_stage
        return split_reduction_two_stage(
            kernel, insn.id, num_groups=info.two_stage_groups(r_len),
            group_size=info.two_stage_group_size, iname=red_iname,
            unroll=info.two_stage_unroll,
            final_group_size=info.final_group_size)
    gsize = info.reduction_group_size
    vng = kernel.get_var_name_generator()
    inner = vng(f"{red_iname}_par")
    outer = vng(f"{red_iname}_seq")
    kernel = lp.split_iname(kernel, red_iname, gsize, inner_iname=inner,
                            outer_iname=outer, inner_tag="l.0")
    kernel = lp.split_reduction_outward(kernel, inner)
    kernel = _restore_reduction_order(kernel, insn, red_iname, outer)
    # all work-items of the group write the same (reduced) value
    kernel = kernel.copy(silenced_warnings=frozenset(
        kernel.silenced_warnings | {f"write_race({insn.id})"}))
    return _schedule_outputs(kernel, insn.id, out_inames, lengths, None,
                             allow_join)


def _loop_groups(kernel: lp.LoopKernel,
                 user_inames: frozenset[str] = frozenset()
                 ) -> list[tuple[list[Any], list[str] | None]] | None:
    """The instructions of *kernel* grouped by loop nest (their set of
    inames), in instruction order, each with its output inames in order,
    or None in place of them for the user's nests (see "Kernels the user
    mapped" in the module documentation: an iname of *user_inames* or one
    with an implementation tag among the loops or reductions); None if
    some instruction is not an assignment or no instruction of a group
    that is not the user's stores over exactly the group's inames."""
    groups: dict[Any, list[Any]] = {}
    for insn in kernel.instructions:
        if not isinstance(insn, lp.Assignment):
            return None
        # instructions outside loops are never fused
        key = frozenset(insn.within_inames) or insn.id
        groups.setdefault(key, []).append(insn)
    impl_tagged = frozenset(i for i in kernel.inames if _has_impl_tag(kernel, i))
    mapped = user_inames | impl_tagged
    result: list[tuple[list[Any], list[str] | None]] = []
    for insns in groups.values():
        if mapped and any(
                not mapped.isdisjoint(insn.within_inames)
                or not mapped.isdisjoint(_reduction_inames(insn))
                for insn in insns):
            result.append((insns, None))
            continue
        order = None
        for insn in insns:
            names = _output_inames(insn)
            if names is not None and set(names) == set(insn.within_inames):
                order = names
                break
        if order is None:
            return None
        result.append((insns, order))
    return result


def _isl_dim_param() -> Any:
    import islpy as isl
    return isl.dim_type.param

# }}}


def _add_global_barriers(kernel: lp.LoopKernel, groups: list[list[str]],
                         level: dict[int, int],
                         alone: frozenset[int] = frozenset()) -> lp.LoopKernel:
    """Order the loop nests *groups* (lists of instruction ids) by their
    dependency *level* and separate them with global barriers, so that
    every nest sees the arrays it reads complete.

    Nests of one dependency level (none reads another) share a device
    kernel (loopy sizes its grid for the largest of them and guards the
    others), so that a graph becomes as many device kernels as it has
    levels, not one per nest. A nest that is not mapped onto both ``g.0``
    and ``l.0`` in all its instructions, or that holds a global barrier of
    its own (two-stage reductions), gets a level of its own, as do the
    nests of *alone* (indices into *groups*: the user's)."""
    from loopy.kernel.data import GroupInameTag, LocalInameTag

    if len(groups) < 2:
        return kernel
    by_id = kernel.id_to_insn

    hw_cache: dict[str, tuple[bool, bool, bool]] = {}

    def hw_axes(iname: str) -> tuple[bool, bool, bool]:
        """(on g.0, on l.0, fit for sharing: of constant length and on no
        other hardware axis)"""
        r = hw_cache.get(iname)
        if r is None:
            tags = kernel.iname_tags(iname)
            g = any(isinstance(t, GroupInameTag) and t.axis == 0 for t in tags)
            loc = any(isinstance(t, LocalInameTag) and t.axis == 0
                      for t in tags)
            other = any(isinstance(t, (GroupInameTag, LocalInameTag))
                        and t.axis != 0 for t in tags)
            r = (g, loc, not other and (
                not (g or loc) or _constant_length(kernel, iname) is not None))
            hw_cache[iname] = r
        return r

    def shareable(ids: list[str]) -> bool:
        # symbolic grid sizes stay alone: loopy cannot size a grid for the
        # largest of several symbolic (or symbolic and constant) extents;
        # so do nests on other axes (l.1 of local-memory tiling, or of the
        # rows of a column reduction, where l.1 is a reduction iname: the
        # other nests would not use it, which loopy rejects)
        for iid in ids:
            insn = by_id[iid]
            if isinstance(insn, lp.BarrierInstruction):
                return False
            axes = [hw_axes(i) for i in insn.within_inames]
            if not (any(a[0] for a in axes) and any(a[1] for a in axes)
                    and all(a[2] for a in axes)):
                return False
            if any(not hw_axes(i)[2] for i in _reduction_inames(insn)):
                return False
        return True

    # the nests of one level that can share a device kernel do, the others
    # (after them) get one each
    share = [k not in alone and shareable(ids) for k, ids in enumerate(groups)]
    order = sorted(range(len(groups)), key=lambda k: (level[k], not share[k]))
    chunks: list[list[int]] = []
    prev: int | None = None
    for k in order:
        key = level[k] if share[k] else None
        if key is not None and key == prev:
            chunks[-1].append(k)
        else:
            chunks.append([k])
        prev = key
    if len(chunks) < 2:
        return kernel
    vng = kernel.get_instruction_id_generator()
    new_insns = dict(by_id)
    barriers = []
    for before, after in itertools.pairwise(chunks):
        bid = vng("_pt_gbarrier")
        barriers.append(lp.BarrierInstruction(
            id=bid, synchronization_kind="global", mem_kind="global",
            depends_on=frozenset(i for k in before for i in groups[k]),
            within_inames=frozenset()))
        for k in after:
            for iid in groups[k]:
                a = new_insns[iid]
                new_insns[iid] = a.copy(depends_on=a.depends_on | {bid})
    return kernel.copy(instructions=[*new_insns.values(), *barriers])


def _nest_levels(kernel: lp.LoopKernel, groups: list[list[str]]
                 ) -> dict[int, int]:
    """The dependency level of each loop nest of *groups* (lists of
    instruction ids, by index): the longest chain of nests, each reading a
    result of the one before, that ends in it (0 for nests that read no
    other nest's results)."""
    group_of = {iid: k for k, ids in enumerate(groups) for iid in ids}
    by_id = kernel.id_to_insn
    deps: list[set[int]] = [set() for _ in groups]
    for k, ids in enumerate(groups):
        for iid in ids:
            for dep in by_id[iid].depends_on:
                g = group_of.get(dep)
                if g is not None and g != k:
                    deps[k].add(g)
    # depth-first, without recursion (graphs may be deep)
    level: dict[int, int] = {}
    entered: set[int] = set()
    for start in range(len(groups)):
        stack: list[tuple[int, bool]] = [(start, False)]
        while stack:
            k, expanded = stack.pop()
            if k in level:
                continue
            if expanded:
                level[k] = 1 + max((level[d] for d in deps[k]), default=-1)
                continue
            if k in entered:
                raise lp.LoopyError(
                    "default_schedule: loop nests depend on each other "
                    f"cyclically (through {groups[k]})")
            entered.add(k)
            stack.append((k, True))
            stack.extend((d, False) for d in deps[k] if d not in level)
    return level


def _user_units(groups: list[tuple[list[Any], list[str] | None]],
                red_inames: Mapping[str, frozenset[str]]) -> list[list[int]]:
    """The user's loop nests of *groups* (those without output inames)
    gathered into units: nests sharing an iname (loop or reduction) are
    one unit (indices into *groups*, in order)."""
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    owner: dict[str, int] = {}
    for k, (insns, order) in enumerate(groups):
        if order is not None:
            continue
        parent[k] = k
        for insn in insns:
            for name in (*insn.within_inames, *red_inames[insn.id]):
                other = owner.setdefault(name, k)
                a, b = find(other), find(k)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    units: dict[int, list[int]] = {}
    for k in parent:
        units.setdefault(find(k), []).append(k)
    return list(units.values())


def default_schedule(t_unit: lp.TranslationUnit,
                     device: cl.Device | DeviceInfo | None = None,
                     *, user_inames: Collection[str] = frozenset()
                     ) -> lp.TranslationUnit:
    """Map the loops of *t_unit*'s entrypoint kernel onto work-groups and
    work-items (see the module documentation).

    :arg device: a :class:`pyopencl.Device` or a :class:`DeviceInfo`; None
        (unknown) schedules for any device (:meth:`DeviceInfo.conservative`).
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
            tilings)
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
    from pytato.target.loopy.schedule.accumulators import realize_sequential_reductions
    realized, added = realize_sequential_reductions(
        t_unit.with_kernel(kernel),
        None if ours == len(nests) else frozenset(
            i for ids in nests[:ours] for i in ids),
        lanes=info.accumulator_lanes, min_lane_extent=MIN_LANE_EXTENT)
    kernel = realized.default_entrypoint
    for ids in nests[:ours]:
        ids.extend(a for iid in list(ids) for a in added.get(iid, ()))
    if any(_has_impl_tag(kernel, i) for i in kernel.all_inames()):
        kernel = _add_global_barriers(kernel, nests, level,
                                      alone=frozenset(range(ours, len(nests))))
    return t_unit.with_kernel(kernel)
