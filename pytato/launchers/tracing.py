"""Tracing and synchronous profiling of launches, switched on by environment
variables (:data:`TRACE_KERNELS_ENV`, :data:`PROFILE_KERNELS_ENV`).

The selection is read each time a launcher enqueues work, so it may change
at run time; messages go to the logger ``pytato.launchers``.  See
:mod:`pytato.launchers` for the variables' syntax and the directives
documenting these names.

.. autodata:: OFF_WORDS
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache

import pyopencl as cl

from pytato.diagnostic import InvalidArgumentError
from pytato.launchers.statistics import (
    KernelProfiler,
    event_duration,
    has_profiling,
)


__all__ = [
    "PROFILE_KERNELS_ENV",
    "TRACE_KERNELS_ENV",
    "profile_kernel",
    "should_profile_kernel",
    "should_trace_kernel",
    "trace_kernel",
]

#: The logger of all the launchers' modules (named after the package, so
#: that its name does not depend on which module logs).
logger = logging.getLogger("pytato.launchers")

#: Name of the environment variable that turns on enqueue tracing.
TRACE_KERNELS_ENV = "PYTATO_TRACE_KERNELS"

#: Name of the environment variable that turns on synchronous profiling logs.
PROFILE_KERNELS_ENV = "PYTATO_PROFILE_KERNELS"


# {{{ environment switches

_ALL_WORDS = frozenset({"1", "all", "true", "yes", "on"})
#: The values of the environment variables that select no launcher.
OFF_WORDS = frozenset({"", "0", "false", "no", "off", "none"})


@lru_cache(maxsize=16)
def _parse_selection(value: str) -> bool | frozenset[str]:
    """Parse an environment selection: *True* (all), *False* (none) or names."""
    stripped = value.strip()
    if stripped.lower() in _ALL_WORDS:
        return True
    if stripped.lower() in OFF_WORDS:
        return False
    names = frozenset(n.strip() for n in stripped.split(",") if n.strip())
    if "all" in names:
        return True
    return names


def _selected(env_var: str, kernel_name: str) -> bool:
    selection = _parse_selection(os.environ.get(env_var, ""))
    if isinstance(selection, bool):
        return selection
    return kernel_name in selection


def should_trace_kernel(kernel_name: str) -> bool:
    """Return *True* if enqueues of the launcher *kernel_name* should be
    logged, according to :data:`TRACE_KERNELS_ENV`.
    """
    return _selected(TRACE_KERNELS_ENV, kernel_name)


def should_profile_kernel(kernel_name: str) -> bool:
    """Return *True* if the launcher *kernel_name* should be timed and logged
    synchronously, according to :data:`PROFILE_KERNELS_ENV`.
    """
    return _selected(PROFILE_KERNELS_ENV, kernel_name)


def trace_kernel(kernel_msg: str) -> None:
    """Log *kernel_msg* (a description of an enqueue) at level ``INFO``."""
    logger.info("enqueue %s", kernel_msg)


def _kernel_name(kernel: cl.Kernel | str | None,
                 kernel_msg: str | None) -> str:
    if kernel_msg is not None:
        return kernel_msg
    if kernel is None:
        raise InvalidArgumentError("profile_kernel: give a kernel or a kernel_msg")
    if isinstance(kernel, str):
        return kernel
    return str(kernel.function_name)


def profile_kernel(kernel: cl.Kernel | str | None, evt: cl.Event,
                   kernel_msg: str | None = None,
                   fprofiler: KernelProfiler | None = None) -> float | None:
    """Wait for *evt*, the event of an execution of *kernel*, then log its
    execution time and record it in *fprofiler*.

    :arg kernel: the :class:`pyopencl.Kernel` that *evt* executed (its
        function name names the execution), a name, or *None* if
        *kernel_msg* is given.
    :arg kernel_msg: the name under which the execution is logged and
        recorded (default: the kernel's function name).
    :arg fprofiler: a :class:`KernelProfiler` that collects the execution
        time under *kernel_msg*, or *None*.
    :returns: the time between the event's profiling ``START`` and ``END``
        counters in seconds, or *None* if the event's queue does not have
        profiling enabled (a ``DEBUG`` message is logged then, and nothing
        is recorded).
    """
    name = _kernel_name(kernel, kernel_msg)
    evt.wait()
    if not has_profiling(evt.command_queue):
        logger.debug("profile %s: queue has no profiling enabled, no timing",
                     name)
        return None
    seconds = event_duration(evt)
    logger.info("profile %s: %.3f ms", name, seconds * 1e3)
    if fprofiler is not None:
        fprofiler.add(name, seconds)
    return seconds

# }}}

# vim: foldmethod=marker
