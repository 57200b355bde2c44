"""The description of a device that the loopy backend schedules for.

:class:`DeviceInfo` holds what :mod:`pytato.target.loopy.schedule` needs to
know about a device (its kind, compute units, work-group and local memory
sizes) and derives the sizes of work-groups, reductions and accumulators
from it. It is made from a :class:`pyopencl.Device`
(:meth:`DeviceInfo.from_cl_device`) or written by hand (to schedule for a
device that is not at hand). Shared by the stages: it imports none of them.

.. autoclass:: DeviceInfo
.. autodata:: ITEM_LOCAL_MEMORY_BUDGET
.. autodata:: ITEM_LOCAL_MEMORY_RESERVE
.. autodata:: VECTOR_CALLS_ENV
.. autofunction:: vector_calls_enabled
.. autodata:: SINGLE_LAUNCH_ENV
.. autofunction:: single_launch_enabled
.. autofunction:: single_launch_verified
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyopencl as cl

from pytato.tuning import record_defaults


__all__ = [
    "ITEM_LOCAL_MEMORY_BUDGET",
    "ITEM_LOCAL_MEMORY_RESERVE",
    "SINGLE_LAUNCH_ENV",
    "VECTOR_CALLS_ENV",
    "DeviceInfo",
    "single_launch_enabled",
    "single_launch_verified",
    "vector_calls_enabled",
]


#: Bytes of local memory that a block may take when each work-item
#: computes several of its elements
#: (:attr:`~pytato.target.loopy.schedule.tiling_plan.TilingPlan.elements_per_item`;
#: the default schedule passes the device's local memory less
#: :data:`ITEM_LOCAL_MEMORY_RESERVE`, at most this).
ITEM_LOCAL_MEMORY_BUDGET = 46 * 1024

#: Bytes of a device's local memory that the budget of blocks
#: (:data:`ITEM_LOCAL_MEMORY_BUDGET`) leaves to other local arrays.
ITEM_LOCAL_MEMORY_RESERVE = 2 * 1024

#: Environment variable switching the vector code of elementwise nests
#: with math functions on CPU devices
#: (:mod:`pytato.target.loopy.schedule.vector_calls`) off: ``0`` (any
#: other value, or unset: on). Read when the description of a device is
#: made (:meth:`DeviceInfo.from_cl_device`, once per device in a process).
VECTOR_CALLS_ENV = "PYTATO_VECTOR_CALLS"


def vector_calls_enabled() -> bool:
    """Whether :data:`VECTOR_CALLS_ENV` leaves the vector code of
    :mod:`pytato.target.loopy.schedule.vector_calls` on."""
    return os.environ.get(VECTOR_CALLS_ENV, "").strip() != "0"


#: Environment variable switching single-launch reductions on GPUs
#: (:attr:`DeviceInfo.single_launch_reductions`) off: ``0`` (any other
#: value, or unset: on). Read when the description of a device is made
#: (:meth:`DeviceInfo.from_cl_device`).
SINGLE_LAUNCH_ENV = "PYTATO_SINGLE_LAUNCH_REDUCTIONS"


def single_launch_enabled() -> bool:
    """Whether :data:`SINGLE_LAUNCH_ENV` leaves single-launch reductions
    on."""
    return os.environ.get(SINGLE_LAUNCH_ENV, "").strip() != "0"


def single_launch_verified(device: cl.Device) -> bool:
    """Whether single-launch reductions were verified on GPUs like *device*:
    NVIDIA's (the test suite's reductions on an H100). Their last group
    reads the other groups' partial results within the kernel, which relies
    on how the device's caches keep global memory coherent between compute
    units; on other GPUs reductions keep their two kernels."""
    return "nvidia" in (f"{device.vendor} {device.platform.name}").lower()


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
        number (as for the 10^4-node random DAG of
        ``benchmarks/bench_codegen.py``, whose 16 x 16 reductions were all
        tiled with the GPU schedule).

    .. attribute:: local_mem_size

        Bytes of local memory per work-group (default: the 32 KiB that
        OpenCL guarantees).

    .. attribute:: single_launch

        Whether two-stage reductions may run as one kernel on this device
        (default True; :meth:`from_cl_device` sets it for NVIDIA's GPUs,
        :func:`single_launch_verified`, unless :data:`SINGLE_LAUNCH_ENV`
        is ``0``); see :attr:`single_launch_reductions`.

    .. attribute:: vector_calls

        Whether elementwise loop nests calling math functions are computed
        in OpenCL vector code, several elements per work-item
        (:mod:`pytato.target.loopy.schedule.vector_calls`). Default False;
        :meth:`from_cl_device` turns it on for GPUs and for CPU devices
        with double precision (``cl_khr_fp64``: on CPUs some functions of
        ``float`` vectors are computed in ``double``) unless
        :data:`VECTOR_CALLS_ENV` is ``0``.

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
    .. attribute:: single_launch_reductions
    .. attribute:: min_parallel_outputs
    .. attribute:: item_local_memory_budget
    .. attribute:: accumulator_lanes
    .. attribute:: accumulator_lane_blocks
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
    vector_calls: bool = False
    single_launch: bool = True

    @classmethod
    def from_cl_device(cls, device: cl.Device) -> DeviceInfo:
        """The description of a :class:`pyopencl.Device`."""
        kind = "gpu" if device.type & cl.device_type.GPU else "cpu"
        return cls(kind=kind, compute_units=int(device.max_compute_units),
                   max_work_group_size=int(device.max_work_group_size),
                   name=str(device.name),
                   local_mem_size=int(device.local_mem_size),
                   vector_calls=(vector_calls_enabled() and (
                       kind == "gpu" or "cl_khr_fp64" in device.extensions)),
                   single_launch=(single_launch_enabled()
                                  and single_launch_verified(device)))

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
        (:attr:`pytato.target.loopy.schedule.tiling_plan.TilingPlan.elements_per_item`):
        :attr:`local_mem_size` less
        :data:`ITEM_LOCAL_MEMORY_RESERVE`, at most
        :data:`ITEM_LOCAL_MEMORY_BUDGET` (nearly all of the local memory
        that NVIDIA's GPUs give a work-group)."""
        return min(ITEM_LOCAL_MEMORY_BUDGET,
                   self.local_mem_size - ITEM_LOCAL_MEMORY_RESERVE)

    def _clamped(self, size: int) -> int:
        """*size* work-items, at most the device's maximum (at least 1)."""
        return max(1, min(size, self.max_work_group_size))

    @property
    def group_size(self) -> int:
        """Work-items per group for element-wise (output-parallel) loops."""
        return self._clamped(
            self.preferred_group_size or (256 if self.is_gpu else 32))

    @property
    def accumulator_lanes(self) -> int:
        """The number of interleaved accumulators of a long reduction left
        inside a work-item (see
        :mod:`pytato.target.loopy.schedule.accumulators`): 4 on a CPU, where
        compilers vectorize across work-items and a single accumulator's
        updates wait for each other (interleaved accumulators made PoCL's
        matvec and row sums faster), 1 on a GPU, whose many work-items
        hide the wait."""
        return 1 if self.is_gpu else 4

    @property
    def accumulator_lane_blocks(self) -> int:
        """The number of blocks of :attr:`accumulator_lanes` accumulators
        that a long floating-point reduction inside a work-item keeps when
        its steps cover its extent exactly (see
        :mod:`pytato.target.loopy.schedule.accumulators`): 4 on a CPU, 1 on
        a GPU. Each block is a loop over its lanes, which a CPU compiler
        turns into one vector register, and the blocks are unrolled: so
        several vector updates are in flight, where one block's updates
        each wait for the previous one (on PoCL, for the matvec, several
        blocks beat one block of 4 lanes and one loop of 16 lanes, whose
        accumulators stayed in memory)."""
        return 1 if self.is_gpu else 4

    @property
    def reduction_group_size(self) -> int:
        """Work-items per group for a parallel (tree) reduction: as many as
        for element-wise loops (:attr:`group_size`)."""
        return self.group_size

    @property
    def two_stage_group_size(self) -> int:
        """Work-items per group of a two-stage (full) reduction: 1024 on
        a GPU, else :attr:`reduction_group_size` (at most the device's
        maximum)."""
        return self._clamped(self.preferred_group_size or (
            1024 if self.is_gpu else self.reduction_group_size))

    @property
    def reduction_num_groups(self) -> int:
        """Work-groups of the first stage of a two-stage (full)
        reduction: 2 per compute unit on a GPU, 4 on a CPU (see
        :meth:`two_stage_groups`). On NVIDIA GPUs, 2 groups of 1024 per
        unit (one full wave of work-items per unit) were the fastest of
        the sizes and counts tried for the sum of a long vector."""
        return (2 if self.is_gpu else 4) * self.compute_units

    def two_stage_groups(self, extent: int | None) -> int:
        """The number of work-groups of the first stage of a two-stage
        reduction over *extent* elements (None: unknown). On a GPU, the
        number between 1 and 4 groups per compute unit closest to
        :attr:`reduction_num_groups` for which the groups' work-items
        take the same whole number of elements each, if there is one: then
        no element needs a bounds check, and the steps of each work-item
        are unrolled, which made the first stage a little faster on NVIDIA
        GPUs."""
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
    def single_launch_reductions(self) -> bool:
        """Whether two-stage reductions run as one kernel, the last group
        to finish stage 1 computing stage 2 (``single_launch`` of
        :func:`~pytato.target.loopy.schedule.reductions.split_reduction_two_stage`):
        on GPUs, where the second kernel's launch is a visible part of the
        time of a long sum, unless :attr:`single_launch` is off."""
        return self.is_gpu and self.single_launch

    @property
    def parts_group_size(self) -> int:
        """Work-items per group of the first stage of a full reduction on a
        CPU (:attr:`reduction_parts`): 8. Each work-item streams its own
        contiguous part, so a group reads as many streams at once as it has
        work-items, where CPU OpenCL compilers run them side by side; a few
        streams per core are what caches and prefetchers follow well. On
        PoCL, 4 to 32 work-items were within noise of each other for the
        sum of a long vector in parts (for the earlier two-stage tree
        kernel, each work-item reading a strided sequence, 8 work-items
        were much faster than 32)."""
        return self._clamped(8)

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
        :data:`~pytato.target.loopy.schedule.reduction_plans.MIN_PART_ELEMENTS`
        elements per part) are shared among all
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


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
