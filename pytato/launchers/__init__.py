"""Launchers of OpenCL work, after the hysop kernel launcher: kernel
launchers, copies and their profiling statistics.

This package knows nothing of pytato's graphs or of :mod:`loopy`: it
enqueues :mod:`pyopencl` kernels and copies, and measures them.  The program
objects of :mod:`pytato.target.loopy` build their launchers on it (see
:mod:`pytato.target.loopy.run.launcher`).  Its modules, each with one job:
:mod:`~pytato.launchers.base` (the interfaces),
:mod:`~pytato.launchers.kernels` (kernel and list launchers),
:mod:`~pytato.launchers.copies`, :mod:`~pytato.launchers.statistics`,
:mod:`~pytato.launchers.tracing` and :mod:`~pytato.launchers.arguments`
(checks and conversions); import the names below from
:mod:`pytato.launchers`.

A *launcher* is a callable object that enqueues work (one or several OpenCL
kernels, or buffer copies) on a :class:`pyopencl.CommandQueue` and returns the
:class:`pyopencl.Event` of that work.  Launchers remember the events they
enqueued on queues with profiling enabled
(``queue.properties & cl.command_queue_properties.PROFILING_ENABLE``) and turn
them into per-kernel timing statistics on demand (see
:attr:`LauncherI.statistics`).

Each launcher may also be given a *profiler* (a :class:`KernelProfiler`):
one profiler shared by the launchers of a time step, or by a
:class:`OpenClKernelListLauncher` (which hands it to the launchers pushed
into it), collects all they measure, by launcher name: the durations of
their kernels and copies on queues with profiling enabled (read from the
events when asked for), and the wall time of the host work of
:class:`HostLauncherI` launchers::

    profiler = KernelProfiler("step")
    step = OpenClKernelListLauncher("step", profiler, default_queue=queue)
    step += OpenClKernelLauncher("advect", advect_knl, args,
                                 default_global_work_size=n)
    step += MyHostBoundaryUpdate("boundaries")   # a HostLauncherI
    for _ in range(nsteps):
        step()
    queue.finish()
    print(profiler)      # name, count, total (ms), mean/min/max (us)

Launchers
---------

.. autoclass:: LauncherI
.. autoclass:: HostLauncherI
.. autoclass:: OpenClKernelLauncherI
.. autoclass:: OpenClKernelLauncher
.. autoclass:: OpenClParametrizedKernelLauncher
.. autoclass:: OpenClIterativeKernelLauncher
.. autoclass:: OpenClKernelParameterGenerator
.. autoclass:: OpenClKernelParameterYielder
.. autoclass:: OpenClCopyBuffer
.. autoclass:: OpenClCopyHost2Device
.. autoclass:: OpenClCopyDevice2Host
.. autoclass:: OpenClCopyDevice2Device
.. autoclass:: OpenClKernelListLauncher
.. autofunction:: launcher_from_kernels

Statistics
----------

.. autoclass:: KernelProfiler
.. autoclass:: KernelStatistics
.. autoclass:: LauncherStatistics
.. autofunction:: event_duration
.. autofunction:: has_profiling
.. autofunction:: is_out_of_order

Tracing and profiling through environment variables
---------------------------------------------------

Two environment variables, read each time a launcher enqueues work (so they
may be changed at run time), help debugging.  Both take either a switch
(``1``, ``all``, ``true``, ``yes`` or ``on`` select every launcher; ``0``,
``false``, ``no``, ``off`` or an empty value select none) or a comma-separated
list of launcher names (e.g. ``add_one,copy_d2h_x``).

``PYTATO_TRACE_KERNELS``
    Log each enqueue of a selected launcher, with its name, global and local
    sizes, through :mod:`logging` (logger ``pytato.launchers``,
    level ``INFO``).

``PYTATO_PROFILE_KERNELS``
    After each enqueue of a selected launcher, wait for its event and log
    the execution time read from the event's profiling information (same
    logger, level ``INFO``).  This makes the launch synchronous.  It needs a
    queue created with profiling enabled; on other queues a ``DEBUG``
    message says that no timing is available.

.. autodata:: TRACE_KERNELS_ENV
.. autodata:: PROFILE_KERNELS_ENV
.. autofunction:: should_trace_kernel
.. autofunction:: trace_kernel
.. autofunction:: should_profile_kernel
.. autofunction:: profile_kernel
"""

from __future__ import annotations

from pytato.launchers.arguments import (
    ParameterType as ParameterType,
    WaitFor as WaitFor,
    WorkSize as WorkSize,
)
from pytato.launchers.base import HostLauncherI, LauncherI, OpenClKernelLauncherI
from pytato.launchers.copies import (
    OpenClCopyBuffer,
    OpenClCopyDevice2Device,
    OpenClCopyDevice2Host,
    OpenClCopyHost2Device,
)
from pytato.launchers.kernels import (
    OpenClIterativeKernelLauncher,
    OpenClKernelLauncher,
    OpenClKernelListLauncher,
    OpenClKernelParameterGenerator,
    OpenClKernelParameterYielder,
    OpenClParametrizedKernelLauncher,
    launcher_from_kernels,
)
from pytato.launchers.statistics import (
    KernelProfiler,
    KernelStatistics,
    LauncherStatistics,
    event_duration,
    has_profiling,
    is_out_of_order,
)
from pytato.launchers.tracing import (
    PROFILE_KERNELS_ENV,
    TRACE_KERNELS_ENV,
    profile_kernel,
    should_profile_kernel,
    should_trace_kernel,
    trace_kernel,
)


__all__ = [
    "PROFILE_KERNELS_ENV",
    "TRACE_KERNELS_ENV",
    "HostLauncherI",
    "KernelProfiler",
    "KernelStatistics",
    "LauncherI",
    "LauncherStatistics",
    "OpenClCopyBuffer",
    "OpenClCopyDevice2Device",
    "OpenClCopyDevice2Host",
    "OpenClCopyHost2Device",
    "OpenClIterativeKernelLauncher",
    "OpenClKernelLauncher",
    "OpenClKernelLauncherI",
    "OpenClKernelListLauncher",
    "OpenClKernelParameterGenerator",
    "OpenClKernelParameterYielder",
    "OpenClParametrizedKernelLauncher",
    "event_duration",
    "has_profiling",
    "is_out_of_order",
    "launcher_from_kernels",
    "profile_kernel",
    "should_profile_kernel",
    "should_trace_kernel",
    "trace_kernel",
]
