"""Launchers of OpenCL work, after the hysop kernel launcher.

This package knows nothing of pytato's graphs or of :mod:`loopy`: it
enqueues :mod:`pyopencl` kernels and copies, and measures them.  The program
objects of :mod:`pytato.target.loopy` build their launchers on it (see
:mod:`pytato.target.loopy.run.launcher`).

The names below are documented in :mod:`pytato.launchers.launchers`.
"""

from __future__ import annotations

from pytato.launchers.launchers import (
    PROFILE_KERNELS_ENV,
    TRACE_KERNELS_ENV,
    HostLauncherI,
    KernelProfiler,
    KernelStatistics,
    LauncherI,
    LauncherStatistics,
    OpenClCopyBuffer,
    OpenClCopyDevice2Device,
    OpenClCopyDevice2Host,
    OpenClCopyHost2Device,
    OpenClIterativeKernelLauncher,
    OpenClKernelLauncher,
    OpenClKernelLauncherI,
    OpenClKernelListLauncher,
    OpenClKernelParameterGenerator,
    OpenClKernelParameterYielder,
    OpenClParametrizedKernelLauncher,
    event_duration,
    has_profiling,
    is_out_of_order,
    launcher_from_kernels,
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
