"""The launcher interfaces: :class:`LauncherI` (name, profiler, events and
statistics), :class:`HostLauncherI` (work done in Python between enqueues)
and :class:`OpenClKernelLauncherI` (one OpenCL kernel).

The concrete kernel launchers are in :mod:`pytato.launchers.kernels`, the
copies in :mod:`pytato.launchers.copies`.  See :mod:`pytato.launchers` for
the directives documenting these names.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import pyopencl as cl

from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError
from pytato.launchers.arguments import (
    KernelArg,
    ParameterSpec,
    ParameterType,
    WaitFor,
    WorkSize,
    check_parameter,
    convert_kernel_arg,
    normalize_parameter_type,
    wait_list,
)
from pytato.launchers.statistics import (
    KernelProfiler,
    KernelStatistics,
    LauncherStatistics,
    event_duration,
    has_profiling,
)
from pytato.launchers.tracing import (
    logger,
    profile_kernel,
    should_profile_kernel,
    should_trace_kernel,
    trace_kernel,
)


__all__ = [
    "HostLauncherI",
    "LauncherI",
    "OpenClKernelLauncherI",
]


# {{{ launcher interface

class LauncherI(ABC):
    """Interface of anything that enqueues work and keeps profiling events.

    :arg name: a name for this launcher, used for logging and as key of
        its :attr:`statistics`.
    :arg profiler: a :class:`KernelProfiler` that collects, besides the
        launcher's own :attr:`statistics`, the execution times this
        launcher measures (under its name), or *None*.
    :arg kwds: arguments of the base classes (cooperative ``__init__``).

    .. autoattribute:: name
    .. autoattribute:: profiler
    .. automethod:: __call__
    .. automethod:: global_size_configured
    .. autoattribute:: parameters
    .. autoattribute:: events
    .. autoattribute:: statistics
    .. automethod:: clear_statistics
    """

    def __init__(self, name: str, profiler: KernelProfiler | None = None,
                 **kwds: object) -> None:
        super().__init__(**kwds)
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"launcher name must be a non-empty str, "
                                       f"got {name!r}")
        if profiler is not None and not isinstance(profiler, KernelProfiler):
            raise InvalidArgumentTypeError(
                f"{name}: profiler must be a KernelProfiler, got "
                f"{type(profiler).__name__}")
        self._name = name
        self._profiler = profiler
        self._pending_events: list[cl.Event] = []
        self._kernel_stats = KernelStatistics()

    @property
    def name(self) -> str:
        """The name of this launcher."""
        return self._name

    @property
    def profiler(self) -> KernelProfiler | None:
        """The :class:`KernelProfiler` given to this launcher, or *None*."""
        return self._profiler

    @abstractmethod
    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: Any) -> cl.Event | None:
        """Enqueue the work on *queue* after the events *wait_for*, return
        the event of the work.

        If *queue* has profiling enabled, the enqueued events are kept
        (see :attr:`events`) to compute :attr:`statistics`.
        """

    @abstractmethod
    def global_size_configured(self) -> bool:
        """Return *True* if this launcher can be enqueued without giving a
        global work size (the local work size is always optional).
        """

    @property
    def parameters(self) -> Mapping[str, ParameterSpec]:
        """Mapping from the names of the parameters to give on each call
        (as keyword arguments of :meth:`__call__`) to their types: a
        :class:`numpy.dtype` for scalars, a tuple of classes otherwise.
        """
        return {}

    @property
    def events(self) -> tuple[cl.Event, ...]:
        """The profiling events recorded since they were last consumed by
        :attr:`statistics`.
        """
        return tuple(self._pending_events)

    @property
    def statistics(self) -> LauncherStatistics:
        """Execution time statistics, keyed by kernel name.

        Fetching this consumes the recorded :attr:`events` that finished
        (it does not wait for unfinished ones: call
        :meth:`pyopencl.CommandQueue.finish` first to include everything),
        accumulates their durations, and returns a copy of the accumulated
        statistics.  Kernels without any finished execution are absent.
        Only launches on queues with profiling enabled are counted.
        """
        self._consume_finished_events()
        result = LauncherStatistics()
        if self._kernel_stats.count:
            result.add_statistics(self._name, self._kernel_stats)
        return result

    def clear_statistics(self) -> None:
        """Forget the accumulated statistics and the recorded events."""
        self._pending_events.clear()
        self._kernel_stats = KernelStatistics()

    def _consume_finished_events(self) -> None:
        pending = []
        for evt in self._pending_events:
            status = evt.command_execution_status
            if status == cl.command_execution_status.COMPLETE:
                self._kernel_stats.add(event_duration(evt))
            elif status < 0:
                logger.warning("%s: event failed with status %d, not counted "
                               "in statistics", self._name, status)
            else:
                pending.append(evt)
        self._pending_events = pending

    def _trace(self, global_size: tuple[int, ...] | None,
               local_size: tuple[int, ...] | None) -> None:
        if should_trace_kernel(self._name):
            trace_kernel(f"{self._name}: global_size={global_size} "
                         f"local_size={local_size}")

    def _record_event(self, queue: cl.CommandQueue, evt: cl.Event) -> None:
        if has_profiling(queue):
            self._pending_events.append(evt)
            if self._profiler is not None:
                self._profiler.record(self._name, evt)
        if should_profile_kernel(self._name):
            profile_kernel(None, evt, kernel_msg=self._name)

    def _resolve_queue(self, queue: cl.CommandQueue | None,
                       default: cl.CommandQueue | None) -> cl.CommandQueue:
        queue = queue if queue is not None else default
        if queue is None:
            raise InvalidArgumentError(f"{self._name}: no queue given and no default "
                                       "queue configured")
        return queue

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

# }}}


# {{{ host launchers

class HostLauncherI(LauncherI):
    """Interface of launchers of work done on the host (in Python) in a
    sequence of enqueues, such as a host-side reduction of results or a
    boundary update: subclasses implement :meth:`apply`.

    Calling the launcher waits for *wait_for* and, when a queue is given,
    for the work enqueued on it before (:meth:`pyopencl.CommandQueue.finish`),
    runs :meth:`apply` and records its wall time in the launcher's
    :attr:`~LauncherI.statistics` (on any queue: no device events are
    involved) and in its profiler.

    :arg name: a name for this launcher (for logging and statistics).
    :arg kwds: arguments of :class:`LauncherI` (*profiler*).

    .. automethod:: apply
    .. automethod:: __call__
    .. automethod:: global_size_configured
    """

    def __init__(self, name: str, **kwds: Any) -> None:
        super().__init__(name, **kwds)

    @abstractmethod
    def apply(self, **kwds: object) -> None:
        """Do the host work, with the parameters *kwds* (those of
        :attr:`~LauncherI.parameters`)."""

    def global_size_configured(self) -> bool:
        """Always *True*: host work needs no work size."""
        return True

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: object) -> cl.Event | None:
        """Run :meth:`apply` after *wait_for* and the work enqueued on
        *queue* (if given); return *None* (there is no device event)."""
        expected = self.parameters
        unknown = sorted(n for n in kwds if n not in expected)
        missing = sorted(n for n in expected if n not in kwds)
        if unknown or missing:
            raise InvalidArgumentTypeError(
                f"{self.name}: missing parameters {missing}, "
                f"unexpected parameters {unknown}")
        events = wait_list(wait_for)
        if events:
            cl.wait_for_events(events)
        if queue is not None:
            queue.finish()
        if should_trace_kernel(self.name):
            trace_kernel(f"{self.name}: host work")
        t0 = time.perf_counter()
        self.apply(**kwds)
        seconds = time.perf_counter() - t0
        self._kernel_stats.add(seconds)
        if self._profiler is not None:
            self._profiler.add(self.name, seconds)
        if should_profile_kernel(self.name):
            logger.info("profile %s: %.3f ms (host)", self.name, seconds * 1e3)
        return None

# }}}


# {{{ kernel launcher interface

class OpenClKernelLauncherI(LauncherI):
    """Interface of launchers that enqueue one OpenCL kernel.

    .. automethod:: __call__
    .. automethod:: check_kernel_arg
    """

    @abstractmethod
    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 **kwds: Any) -> cl.Event | None:
        """Enqueue the kernel on *queue* with the given work sizes (or the
        defaults) after the events *wait_for*, return its event.
        """

    @staticmethod
    def check_kernel_arg(arg: object, arg_id: int, arg_name: str,
                         arg_type: ParameterType | None = None) -> KernelArg:
        """Check the kernel argument *arg* prior to setting it.

        :arg arg_id: the index of the argument in the kernel's signature.
        :arg arg_name: the name of the argument, for error messages.
        :arg arg_type: the expected type (see :attr:`LauncherI.parameters`),
            or *None* to only check that *arg* can be a kernel argument.
        :returns: the value to pass to :meth:`pyopencl.Kernel.set_arg`
            (a :class:`pyopencl.array.Array` becomes its buffer, a Python
            scalar checked against a dtype becomes a numpy scalar).
        :raises TypeError: on a type mismatch, naming the argument.
        """
        what = f"parameter {arg_name!r} (kernel argument {arg_id})"
        if arg_type is None:
            return convert_kernel_arg(arg, what)
        return check_parameter(
            arg, normalize_parameter_type(arg_type, arg_name), what)

# }}}

# vim: foldmethod=marker
