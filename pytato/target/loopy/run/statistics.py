"""Per-kernel profiling statistics of pytato's :mod:`pyopencl` programs.

When a program or an executable runs on a queue with profiling enabled, it
keeps the events of its kernels and exposes ``statistics``
(:class:`~pytato.launchers.LauncherStatistics`: ``print`` it for
a per-kernel table)::

    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    exe = prog.bind_to_context(ctx)
    for step in range(nsteps):
        exe(queue, x=x_dev)
    queue.finish()
    print(exe.statistics)      # name, count, total (ms), mean/min/max (us)

Calls on such a queue take the same fast path as calls on other queues
(prebuilt kernels and argument lists, see "Repeated calls" in
:mod:`pytato.target.loopy.run.fast_call`): the events of a call's kernels are
kept as one batch (:class:`EventStatistics`, a
:class:`~pytato.launchers.KernelProfiler`) and their profiling
counters are only read when ``statistics`` is fetched (or, in long loops,
when many events wait), so that measuring costs about as much per call as
not measuring (``benchmarks/bench_launch.py``). The statistics are kept
per :mod:`loopy` executor (:func:`executor_statistics`).

.. autoclass:: EventStatistics
.. autofunction:: executor_statistics
.. autofunction:: executors_statistics
.. autofunction:: clear_executors_statistics
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pytato.launchers import KernelProfiler, LauncherStatistics


if TYPE_CHECKING:
    from loopy.target.pyopencl_execution import PyOpenCLExecutor


__all__ = [
    "EventStatistics",
    "clear_executors_statistics",
    "executor_statistics",
    "executors_statistics",
]


class EventStatistics(KernelProfiler):
    """The profiling events of a program's kernels, recorded by kernel name
    and turned into
    :class:`~pytato.launchers.LauncherStatistics` on demand: a
    :class:`~pytato.launchers.KernelProfiler` (finished events
    are consumed, as by launchers). The calls of a program on a queue with
    profiling enabled record the events of their kernels, one batch per
    call, and their profiling counters are only read when the statistics
    are asked for.
    """

    def __init__(self, name: str = "program") -> None:
        super().__init__(name)


_PROFILES: weakref.WeakKeyDictionary[PyOpenCLExecutor, EventStatistics] = (
    weakref.WeakKeyDictionary())


def executor_statistics(executor: PyOpenCLExecutor) -> EventStatistics:
    """The :class:`EventStatistics` of the :mod:`loopy` executor
    *executor* (created empty on first use)."""
    stats = _PROFILES.get(executor)
    if stats is None:
        # (threads at once: one wins, all record into it)
        stats = _PROFILES.setdefault(executor, EventStatistics())
    return stats


def executors_statistics(executors: Iterable[PyOpenCLExecutor]
                         ) -> LauncherStatistics:
    """The statistics of the kernels of *executors* (the executors of a
    program on its contexts and devices), summed by kernel name (finished
    events are consumed): what the programs' ``statistics`` give."""
    result = LauncherStatistics()
    for executor in executors:
        result += executor_statistics(executor).statistics
    return result


def clear_executors_statistics(executors: Iterable[PyOpenCLExecutor]) -> None:
    """Forget the profiling statistics and events of *executors*."""
    for executor in executors:
        executor_statistics(executor).clear()
