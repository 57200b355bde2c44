"""Kernel launchers for :mod:`pyopencl` kernels, with profiling statistics.

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
    sizes, through :mod:`logging` (logger ``pytato.launchers.launchers``,
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

import itertools
import logging
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, Self, TypeAlias

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from pytato.diagnostic import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidIndexError,
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

logger = logging.getLogger(__name__)

#: Name of the environment variable that turns on enqueue tracing.
TRACE_KERNELS_ENV = "PYTATO_TRACE_KERNELS"

#: Name of the environment variable that turns on synchronous profiling logs.
PROFILE_KERNELS_ENV = "PYTATO_PROFILE_KERNELS"

#: A work size: one :class:`int` per dimension (a bare :class:`int` means 1D).
WorkSize: TypeAlias = int | Sequence[int]

#: The type of a per-call kernel parameter: a :class:`numpy.dtype` (or anything
#: :class:`numpy.dtype` accepts, such as ``np.float32``) for scalar
#: arguments, or a class (or tuple of classes) such as :class:`pyopencl.Buffer`
#: or :class:`pyopencl.array.Array` for memory arguments.
ParameterType: TypeAlias = "np.dtype[Any] | type | tuple[type, ...] | str"

#: The wait list accepted by launchers: events (``None`` entries are ignored).
WaitFor: TypeAlias = "Sequence[cl.Event | None] | None"


# {{{ environment switches

_ALL_WORDS = frozenset({"1", "all", "true", "yes", "on"})
_NONE_WORDS = frozenset({"", "0", "false", "no", "off", "none"})


@lru_cache(maxsize=16)
def _parse_selection(value: str) -> bool | frozenset[str]:
    """Parse an environment selection: *True* (all), *False* (none) or names."""
    stripped = value.strip()
    if stripped.lower() in _ALL_WORDS:
        return True
    if stripped.lower() in _NONE_WORDS:
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


# {{{ small helpers

def has_profiling(queue: cl.CommandQueue) -> bool:
    """Return *True* if *queue* was created with profiling enabled."""
    return bool(queue.properties & cl.command_queue_properties.PROFILING_ENABLE)


def is_out_of_order(queue: cl.CommandQueue) -> bool:
    """Return *True* if *queue* executes commands out of order."""
    return bool(queue.properties
                & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)


def event_duration(evt: cl.Event) -> float:
    """Return the execution time of the finished event *evt* in seconds,
    read from its profiling ``START`` and ``END`` counters.
    """
    return (evt.get_profiling_info(_END)
            - evt.get_profiling_info(_START)) * 1e-9


_START = cl.profiling_info.START
_END = cl.profiling_info.END
_COMPLETE = cl.command_execution_status.COMPLETE


def _wait_list(wait_for: WaitFor) -> list[cl.Event] | None:
    if not wait_for:
        return None
    events = [evt for evt in wait_for if evt is not None]
    return events or None


def _as_work_size(size: WorkSize | None, what: str) -> tuple[int, ...] | None:
    if size is None:
        return None
    if isinstance(size, int | np.integer):
        result: tuple[int, ...] = (int(size),)
    else:
        try:
            result = tuple(int(s) for s in size)
        except TypeError:
            raise InvalidArgumentTypeError(
                               f"{what} must be an int or a sequence of ints, "
                               f"got {type(size).__name__}") from None
    if not result or any(s < 0 for s in result):
        raise InvalidArgumentError(f"{what} must be non-empty and non-negative, "
                                   f"got {result}")
    return result


def _type_names(types: type | tuple[type, ...]) -> str:
    if isinstance(types, tuple):
        return " or ".join(t.__name__ for t in types)
    return types.__name__


def _convert_kernel_arg(arg: Any, what: str) -> Any:
    """Return the value to hand to :meth:`pyopencl.Kernel.set_arg` for *arg*.

    :arg what: a description of the argument for error messages.
    """
    if arg is None or isinstance(arg, np.generic | cl.LocalMemory
                                 | cl.MemoryObjectHolder):
        return arg
    if isinstance(arg, cla.Array):
        if arg.offset != 0:
            raise InvalidArgumentError(
                f"{what}: pyopencl.array.Array has a nonzero offset "
                f"({arg.offset} bytes), which a kernel argument cannot carry; "
                "pass a buffer of its own or an offset argument")
        return arg.base_data
    if isinstance(arg, np.ndarray) and arg.ndim == 0:
        return arg[()]
    if isinstance(arg, bool | int | float | complex):
        raise InvalidArgumentTypeError(
            f"{what}: got a Python {type(arg).__name__} ({arg!r}); pass a "
            "numpy scalar of the kernel argument's type instead, e.g. "
            "np.int32(...) or np.float64(...)")
    raise InvalidArgumentTypeError(
        f"{what}: unsupported kernel argument type {type(arg).__name__}; "
        "expected a numpy scalar, a pyopencl Buffer or Array, a "
        "pyopencl.LocalMemory or None")


def _normalize_parameter_type(
        spec: ParameterType, name: str) -> np.dtype[Any] | tuple[type, ...]:
    if isinstance(spec, np.dtype):
        return spec
    if isinstance(spec, str) or (isinstance(spec, type)
                                 and issubclass(spec, np.generic)):
        return np.dtype(spec)
    if isinstance(spec, type):
        return (spec,)
    if (isinstance(spec, tuple) and spec
            and all(isinstance(t, type) for t in spec)):
        return spec
    raise InvalidArgumentTypeError(
        f"parameter {name!r}: invalid parameter type {spec!r}; "
        "expected a numpy dtype or a class (or tuple of classes)")


def _convert_scalar(value: Any, dtype: np.dtype[Any], what: str) -> np.generic:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        if value.dtype != dtype:
            raise InvalidArgumentTypeError(f"{what} expects a {dtype} scalar, got a "
                                           f"{value.dtype} scalar ({value!r})")
        return value
    if isinstance(value, bool):
        ok = dtype.kind == "b"
    elif isinstance(value, int):
        ok = dtype.kind in "fc"
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            ok = info.min <= value <= info.max
    elif isinstance(value, float):
        ok = dtype.kind in "fc"
    elif isinstance(value, complex):
        ok = dtype.kind == "c"
    else:
        raise InvalidArgumentTypeError(f"{what} expects a {dtype} scalar, got "
                                       f"{type(value).__name__}")
    if not ok:
        raise InvalidArgumentTypeError(
            f"{what} expects a {dtype} scalar, got the Python "
            f"{type(value).__name__} {value!r}, which does not fit")
    return dtype.type(value)


def _check_parameter(value: Any, spec: np.dtype[Any] | tuple[type, ...],
                     what: str) -> Any:
    """Check *value* against a normalized parameter type, return the value to
    hand to :meth:`pyopencl.Kernel.set_arg`.
    """
    if isinstance(spec, np.dtype):
        return _convert_scalar(value, spec, what)
    accepts_array = (isinstance(value, cla.Array)
                     and not any(issubclass(cla.Array, t) for t in spec)
                     and any(issubclass(cl.Buffer, t) for t in spec))
    if not accepts_array and not isinstance(value, spec):
        raise InvalidArgumentTypeError(f"{what} expects {_type_names(spec)}, got "
                                       f"{type(value).__name__}")
    return _convert_kernel_arg(value, what)


def _device_region(mem: Any, offset: int | None,
                   what: str) -> tuple[cl.MemoryObjectHolder, int, int]:
    """Return ``(buffer, byte offset, bytes available)`` of device *mem*."""
    offset = 0 if offset is None else int(offset)
    if offset < 0:
        raise InvalidArgumentError(f"{what}: negative device offset {offset}")
    if isinstance(mem, cla.Array):
        if not mem.flags.forc:
            raise InvalidArgumentError(f"{what}: pyopencl array is not contiguous")
        if mem.base_data is None:
            raise InvalidArgumentError(f"{what}: pyopencl array has no data")
        base, base_offset, nbytes = mem.base_data, mem.offset, mem.nbytes
    elif isinstance(mem, cl.Buffer):
        base, base_offset, nbytes = mem, 0, mem.size
    else:
        raise InvalidArgumentTypeError(
            f"{what}: expected a pyopencl Buffer or Array, got "
            f"{type(mem).__name__}")
    if offset > nbytes:
        raise InvalidArgumentError(f"{what}: device offset {offset} is past the end "
                                   f"of the memory ({nbytes} bytes)")
    return base, base_offset + offset, nbytes - offset


def _host_region(ary: Any, byte_count: int | None, writeable: bool,
                 what: str) -> np.ndarray:
    if not isinstance(ary, np.ndarray):
        raise InvalidArgumentTypeError(f"{what}: expected a numpy array, got "
                                       f"{type(ary).__name__}")
    if not (ary.flags.c_contiguous or ary.flags.f_contiguous):
        raise InvalidArgumentError(f"{what}: host array is not contiguous")
    if writeable and not ary.flags.writeable:
        raise InvalidArgumentError(f"{what}: host array is not writeable")
    if byte_count is None or byte_count == ary.nbytes:
        return ary
    if not 0 <= byte_count <= ary.nbytes:
        raise InvalidArgumentError(f"{what}: byte_count {byte_count} is outside the "
                                   f"host array's {ary.nbytes} bytes")
    order = "C" if ary.flags.c_contiguous else "F"
    return ary.reshape(-1, order=order).view(np.uint8)[:byte_count]


def _is_device_memory(obj: Any) -> bool:
    return isinstance(obj, cl.Buffer | cla.Array)

# }}}


# {{{ statistics

class KernelStatistics:
    """Execution time statistics of one kernel (or copy), in seconds.

    .. attribute:: count

        Number of recorded executions.

    .. attribute:: total

        Sum of the recorded execution times.

    .. attribute:: min
    .. attribute:: max
    .. attribute:: mean

        Smallest, largest and average execution time; NaN while
        :attr:`count` is zero.

    .. automethod:: add
    .. automethod:: from_durations
    .. automethod:: copy

    ``a += b`` merges the statistics *b* into *a*; ``a + b`` returns the
    merged statistics.
    """

    __slots__ = ("_count", "_max", "_min", "_total")

    def __init__(self) -> None:
        self._count = 0
        self._total = 0.0
        self._min = math.inf
        self._max = -math.inf

    @classmethod
    def from_durations(cls, durations: Iterable[float]) -> KernelStatistics:
        """Return the statistics of the execution times *durations*
        (in seconds).
        """
        result = cls()
        for duration in durations:
            result.add(duration)
        return result

    def add(self, duration: float) -> None:
        """Record one execution that took *duration* seconds."""
        duration = float(duration)
        self._count += 1
        self._total += duration
        self._min = min(self._min, duration)
        self._max = max(self._max, duration)

    def copy(self) -> KernelStatistics:
        """Return an independent copy of these statistics."""
        result = KernelStatistics()
        result += self
        return result

    @property
    def count(self) -> int:
        """Number of recorded executions."""
        return self._count

    @property
    def total(self) -> float:
        """Total execution time in seconds."""
        return self._total

    @property
    def min(self) -> float:
        """Shortest execution time in seconds (NaN if :attr:`count` is 0)."""
        return self._min if self._count else math.nan

    @property
    def max(self) -> float:
        """Longest execution time in seconds (NaN if :attr:`count` is 0)."""
        return self._max if self._count else math.nan

    @property
    def mean(self) -> float:
        """Mean execution time in seconds (NaN if :attr:`count` is 0)."""
        return self._total / self._count if self._count else math.nan

    def __iadd__(self, other: KernelStatistics) -> Self:
        if not isinstance(other, KernelStatistics):
            return NotImplemented
        self._count += other._count
        self._total += other._total
        self._min = min(self._min, other._min)
        self._max = max(self._max, other._max)
        return self

    def __add__(self, other: KernelStatistics) -> KernelStatistics:
        if not isinstance(other, KernelStatistics):
            return NotImplemented
        result = self.copy()
        result += other
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KernelStatistics):
            return NotImplemented
        return (self._count, self._total, self._min, self._max) == (
            other._count, other._total, other._min, other._max)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"KernelStatistics(count={self.count}, total={self.total!r}, "
                f"min={self.min!r}, max={self.max!r})")

    def __str__(self) -> str:
        if not self._count:
            return "count=0"
        return (f"count={self.count} total={self.total * 1e3:.3f}ms "
                f"mean={self.mean * 1e6:.3f}us min={self.min * 1e6:.3f}us "
                f"max={self.max * 1e6:.3f}us")


class LauncherStatistics(Mapping[str, KernelStatistics]):
    """A read-only mapping from kernel (launcher) names to their
    :class:`KernelStatistics`, as returned by :attr:`LauncherI.statistics`.

    ``str(stats)`` gives a table with one row per kernel (name, count, total
    time in ms, mean, min and max time in us), sorted by decreasing total
    time, and a row summing all kernels.

    .. automethod:: add
    .. automethod:: add_statistics
    .. autoattribute:: total

    ``a += b`` merges *b* (a :class:`LauncherStatistics` or a mapping from
    names to :class:`KernelStatistics`) into *a*, kernel by kernel.
    """

    def __init__(self,
                 statistics: Mapping[str, KernelStatistics] | None = None
                 ) -> None:
        self._stats: dict[str, KernelStatistics] = {}
        if statistics is not None:
            self += statistics

    def add(self, name: str, duration: float) -> None:
        """Record one execution of *name* that took *duration* seconds."""
        self._stats.setdefault(name, KernelStatistics()).add(duration)

    def add_statistics(self, name: str, stats: KernelStatistics) -> None:
        """Merge *stats* into the statistics of *name*."""
        self._stats.setdefault(name, KernelStatistics()).__iadd__(stats)

    @property
    def total(self) -> KernelStatistics:
        """The statistics of all kernels merged together."""
        result = KernelStatistics()
        for stats in self._stats.values():
            result += stats
        return result

    def __getitem__(self, name: str) -> KernelStatistics:
        return self._stats[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stats)

    def __len__(self) -> int:
        return len(self._stats)

    def __iadd__(self, other: Mapping[str, KernelStatistics]) -> Self:
        if not isinstance(other, Mapping):
            return NotImplemented
        for name, stats in other.items():
            self.add_statistics(name, stats)
        return self

    def __add__(self, other: Mapping[str, KernelStatistics]
                ) -> LauncherStatistics:
        if not isinstance(other, Mapping):
            return NotImplemented
        result = LauncherStatistics(self)
        result += other
        return result

    def __repr__(self) -> str:
        return f"LauncherStatistics({self._stats!r})"

    def __str__(self) -> str:
        if not self._stats:
            return "(no kernel statistics)"
        rows = sorted(self._stats.items(), key=lambda kv: (-kv[1].total, kv[0]))
        rows.append(("(total)", self.total))
        width = max(len("name"), *(len(name) for name, _ in rows))
        header = (f"{'name':<{width}} {'count':>7} {'total (ms)':>12} "
                  f"{'mean (us)':>12} {'min (us)':>12} {'max (us)':>12}")
        lines = [header, "-" * len(header)]
        for i, (name, stats) in enumerate(rows):
            if i == len(rows) - 1:
                lines.append("-" * len(header))
            lines.append(
                f"{name:<{width}} {stats.count:>7d} {stats.total * 1e3:>12.3f} "
                f"{stats.mean * 1e6:>12.3f} {stats.min * 1e6:>12.3f} "
                f"{stats.max * 1e6:>12.3f}")
        return "\n".join(lines)

class KernelProfiler:
    """Collects what launchers and programs measure: the execution times of
    the kernels and copies they enqueue on queues with profiling enabled,
    and the wall times of the work of host launchers.

    Events are only kept when they are recorded (a list append per call);
    their profiling counters are read when the statistics are asked for
    (:attr:`statistics`, :meth:`summary`) or when more than
    :attr:`max_pending` events wait, so that recording adds next to nothing
    to the enqueues.  One profiler may be shared by several launchers (give
    it as their *profiler*), programs and launcher lists: it merges their
    measurements by name.

    ``profiler[name] = seconds`` records one execution of *name* that took
    *seconds* (as :meth:`add`); ``print(profiler)`` prints the per-name
    table of :class:`LauncherStatistics`.

    :arg name: a name for this profiler.

    .. attribute:: name
    .. autoattribute:: max_pending
    .. automethod:: add
    .. automethod:: record
    .. automethod:: record_batch
    .. autoattribute:: events
    .. autoattribute:: statistics
    .. automethod:: summary
    .. automethod:: clear
    """

    #: Number of waiting events above which a record reads the counters of
    #: those that finished (bounding the memory of long loops).
    max_pending = 1 << 15

    def __init__(self, name: str = "profiler") -> None:
        self.name = name
        # (the fast calls of programs record into these objects directly:
        # they are changed in place, never replaced)
        self._batches: list[tuple[Sequence[str], Sequence[cl.Event]]] = []
        #: [number of events in _batches, number that triggers a reading]
        self._counts = [0, self.max_pending]
        self._stats = LauncherStatistics()

    def add(self, name: str, seconds: float) -> None:
        """Record one execution of *name* that took *seconds*."""
        self._stats.add(name, seconds)

    def __setitem__(self, name: str, seconds: float) -> None:
        self._stats.add(name, seconds)

    def record(self, name: str, evt: cl.Event) -> None:
        """Keep *evt*, the event of an execution of *name* (on a queue with
        profiling enabled), to read its duration later."""
        self.record_batch((name,), (evt,))

    def record_batch(self, names: Sequence[str],
                     events: Sequence[cl.Event]) -> None:
        """Keep *events*, the events of executions of *names* (pairwise),
        enqueued in this order such that each one completes no later than
        the last (on one in-order queue, or chained by their wait lists).

        :raises ValueError: if *names* and *events* differ in length.
        """
        if len(names) != len(events):
            raise InvalidArgumentError(f"{self.name}: {len(names)} names for "
                                       f"{len(events)} events")
        self._batches.append((names, events))
        counts = self._counts
        counts[0] += len(events)
        if counts[0] > counts[1]:
            self._overflow()

    def _overflow(self) -> None:
        self._consume()
        # finished events were read: wait for as many again before the next
        # reading (no quadratic rereading of running ones)
        self._counts[1] = max(self.max_pending, 2 * self._counts[0])

    @property
    def events(self) -> tuple[tuple[str, cl.Event], ...]:
        """The ``(name, event)`` pairs recorded and not yet read."""
        return tuple(pair for names, events in self._batches
                     for pair in zip(names, events, strict=True))

    def _consume(self) -> None:
        stats = self._stats
        pending = []
        npending = 0
        for names, events in self._batches:
            status = events[-1].command_execution_status if events else 0
            if status == _COMPLETE:
                try:
                    durations = [event_duration(evt) for evt in events]
                except cl.Error:  # one failed: read them one by one
                    pass
                else:
                    for name, duration in zip(names, durations, strict=True):
                        stats.add(name, duration)
                    continue
            rest_names = []
            rest = []
            for name, evt in zip(names, events, strict=True):
                status = evt.command_execution_status
                if status == _COMPLETE:
                    stats.add(name, event_duration(evt))
                elif status < 0:
                    logger.warning("%s: event failed with status %d, not "
                                   "counted in statistics", name, status)
                else:
                    rest_names.append(name)
                    rest.append(evt)
            if rest:
                pending.append((tuple(rest_names), tuple(rest)))
                npending += len(rest)
        self._batches[:] = pending
        self._counts[0] = npending

    @property
    def statistics(self) -> LauncherStatistics:
        """The statistics by name of all finished recorded executions (a
        copy; events that did not finish yet stay recorded)."""
        self._consume()
        return LauncherStatistics(self._stats)

    def summary(self) -> str:
        """The table of :attr:`statistics`, headed by the profiler's name."""
        return f"{self.name}:\n{self.statistics}"

    def clear(self) -> None:
        """Forget the statistics and the recorded events."""
        self._batches.clear()
        self._counts[:] = [0, self.max_pending]
        self._stats = LauncherStatistics()

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"KernelProfiler({self.name!r})"

# }}}


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
                 **kwds: Any) -> None:
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
    def parameters(self) -> Mapping[str, np.dtype[Any] | tuple[type, ...]]:
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
    def apply(self, **kwds: Any) -> None:
        """Do the host work, with the parameters *kwds* (those of
        :attr:`~LauncherI.parameters`)."""

    def global_size_configured(self) -> bool:
        """Always *True*: host work needs no work size."""
        return True

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: Any) -> cl.Event | None:
        """Run :meth:`apply` after *wait_for* and the work enqueued on
        *queue* (if given); return *None* (there is no device event)."""
        import time

        expected = self.parameters
        unknown = sorted(n for n in kwds if n not in expected)
        missing = sorted(n for n in expected if n not in kwds)
        if unknown or missing:
            raise InvalidArgumentTypeError(
                f"{self.name}: missing parameters {missing}, "
                f"unexpected parameters {unknown}")
        events = _wait_list(wait_for)
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


# {{{ kernel launchers

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
    def check_kernel_arg(arg: Any, arg_id: int, arg_name: str,
                         arg_type: ParameterType | None = None) -> Any:
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
            return _convert_kernel_arg(arg, what)
        return _check_parameter(
            arg, _normalize_parameter_type(arg_type, arg_name), what)


def _as_kernel(kernel: cl.Kernel | cl.Program, name: str) -> cl.Kernel:
    if isinstance(kernel, cl.Kernel):
        return kernel
    if isinstance(kernel, cl.Program):
        kernels = kernel.all_kernels()
        if len(kernels) == 1:
            return kernels[0]
        names = sorted(k.function_name for k in kernels)
        if name in names:
            return cl.Kernel(kernel, name)
        raise InvalidArgumentError(
            f"{name}: the program has kernels {names}; pass a "
            "pyopencl.Kernel or name the launcher like the kernel")
    raise InvalidArgumentTypeError(
        f"{name}: expected a pyopencl Kernel or Program, got "
        f"{type(kernel).__name__}")


def _normalize_args_list(args_list: Sequence[Any] | None
                         ) -> tuple[tuple[int, Any], ...]:
    if not args_list:
        return ()
    items = tuple(args_list)
    indexed = all(isinstance(item, tuple) and len(item) == 2
                  and isinstance(item[0], int | np.integer)
                  for item in items)
    if indexed:
        return tuple((int(idx), value) for idx, value in items)
    return tuple(enumerate(items))


class OpenClKernelLauncher(OpenClKernelLauncherI):
    """Launch one OpenCL kernel whose arguments are all fixed.

    :arg name: a name for this launcher (for logging and statistics).
    :arg kernel: the :class:`pyopencl.Kernel` to launch; its arguments are
        set once here, so give each launcher a kernel instance of its own.
        A :class:`pyopencl.Program` is also accepted: a new kernel instance
        is created from its only kernel, or from the kernel called *name*.
    :arg args_list: the arguments of the kernel, either all of them in order
        (a sequence of values) or some of them as ``(arg_index, arg_value)``
        pairs.  *None* leaves the kernel's arguments as they are (they must
        have been set by the caller).  Values are numpy scalars,
        :class:`pyopencl.Buffer`, :class:`pyopencl.array.Array` (without
        offset), :class:`pyopencl.LocalMemory` or *None*.
    :arg default_global_work_size: the global work size used when none is
        given on call.
    :arg default_local_work_size: the local work size used when none is
        given on call (*None*: chosen by the implementation).
    :arg default_queue: the queue used when none is given on call.
    :arg kwds: arguments of :class:`LauncherI` (*profiler*).

    .. autoattribute:: kernel
    .. autoattribute:: args_list
    .. autoattribute:: default_queue
    .. autoattribute:: default_global_work_size
    .. autoattribute:: default_local_work_size
    .. automethod:: queue_configured
    .. automethod:: as_list_launcher
    .. automethod:: __call__
    """

    def __init__(self, name: str, kernel: cl.Kernel | cl.Program,
                 args_list: Sequence[Any] | None = None,
                 default_global_work_size: WorkSize | None = None,
                 default_local_work_size: WorkSize | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 **kwds: Any) -> None:
        super().__init__(name, **kwds)
        self._kernel = _as_kernel(kernel, name)
        self._num_args = int(self._kernel.num_args)
        self._default_queue = default_queue
        self._default_gws = _as_work_size(default_global_work_size,
                                          f"{name}: default_global_work_size")
        self._default_lws = _as_work_size(default_local_work_size,
                                          f"{name}: default_local_work_size")

        args: list[tuple[int, Any]] = []
        seen: set[int] = set()
        for idx, value in _normalize_args_list(args_list):
            self._check_arg_index(idx, seen)
            arg = self.check_kernel_arg(value, idx, f"{name}[{idx}]")
            self._kernel.set_arg(idx, arg)
            args.append((idx, value))
        self._args_list = tuple(args)
        self._fixed_indices = frozenset(seen)

    def _check_arg_index(self, idx: int, seen: set[int]) -> None:
        if not 0 <= idx < self._num_args:
            raise InvalidIndexError(f"{self.name}: argument index {idx} out of range "
                                    f"for kernel {self._kernel.function_name!r} "
                                    f"with {self._num_args} arguments")
        if idx in seen:
            raise InvalidArgumentError(
                f"{self.name}: kernel argument {idx} given twice")
        seen.add(idx)

    @property
    def kernel(self) -> cl.Kernel:
        """The kernel launched."""
        return self._kernel

    @property
    def args_list(self) -> tuple[tuple[int, Any], ...]:
        """The fixed arguments, as ``(arg_index, arg_value)`` pairs."""
        return self._args_list

    @property
    def default_queue(self) -> cl.CommandQueue | None:
        """The queue used when none is given on call."""
        return self._default_queue

    @property
    def default_global_work_size(self) -> tuple[int, ...] | None:
        """The global work size used when none is given on call."""
        return self._default_gws

    @property
    def default_local_work_size(self) -> tuple[int, ...] | None:
        """The local work size used when none is given on call."""
        return self._default_lws

    def queue_configured(self) -> bool:
        """Return *True* if this launcher has a default queue."""
        return self._default_queue is not None

    def global_size_configured(self) -> bool:
        """Return *True* if this launcher has a default global work size."""
        return self._default_gws is not None

    def as_list_launcher(self, name: str | None = None
                         ) -> OpenClKernelListLauncher:
        """Return a :class:`OpenClKernelListLauncher` (named *name*, or like
        this launcher) that contains only this launcher.
        """
        result = OpenClKernelListLauncher(name or self.name,
                                          profiler=self._profiler,
                                          default_queue=self._default_queue)
        result.push_kernels(self)
        return result

    def _resolve(self, queue: cl.CommandQueue | None,
                 global_work_size: WorkSize | None,
                 local_work_size: WorkSize | None
                 ) -> tuple[cl.CommandQueue, tuple[int, ...],
                            tuple[int, ...] | None]:
        queue = self._resolve_queue(queue, self._default_queue)
        gws = (_as_work_size(global_work_size, f"{self.name}: global_work_size")
               if global_work_size is not None else self._default_gws)
        if gws is None:
            raise InvalidArgumentError(f"{self.name}: no global work size given and no "
                                       "default configured")
        lws = (_as_work_size(local_work_size, f"{self.name}: local_work_size")
               if local_work_size is not None else self._default_lws)
        if lws is not None and len(lws) != len(gws):
            raise InvalidArgumentError(f"{self.name}: local work size {lws} and global "
                                       f"work size {gws} differ in dimension")
        return queue, gws, lws

    def _enqueue(self, queue: cl.CommandQueue, gws: tuple[int, ...],
                 lws: tuple[int, ...] | None,
                 wait_for: list[cl.Event] | None) -> cl.Event:
        self._trace(gws, lws)
        evt = cl.enqueue_nd_range_kernel(queue, self._kernel, gws, lws,
                                         wait_for=wait_for,
                                         allow_empty_ndrange=True)
        self._record_event(queue, evt)
        return evt

    def _reject_parameters(self, kwds: Mapping[str, Any]) -> None:
        if kwds:
            raise InvalidArgumentTypeError(f"{self.name}: unexpected parameters "
                                           f"{sorted(kwds)}; this launcher takes none")

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 **kwds: Any) -> cl.Event:
        """Enqueue the kernel on *queue* (default: :attr:`default_queue`)
        with the given work sizes (default: the configured ones) after the
        events *wait_for*, return its event.
        """
        self._reject_parameters(kwds)
        queue, gws, lws = self._resolve(queue, global_work_size,
                                        local_work_size)
        return self._enqueue(queue, gws, lws, _wait_list(wait_for))


class OpenClParametrizedKernelLauncher(OpenClKernelLauncher):
    """Launch one OpenCL kernel some of whose arguments are given by name on
    each call, with their types checked.

    :arg parameters_map: mapping from parameter names to
        ``(arg_index, parameter_type)``; *parameter_type* is a numpy dtype
        (for scalars: numpy scalars of exactly that dtype are accepted, and
        Python scalars that fit it) or a class or tuple of classes (for
        memory, e.g. :class:`pyopencl.Buffer`, which also accepts a
        :class:`pyopencl.array.Array` without offset).
    :arg args_list: the fixed arguments, as ``(arg_index, arg_value)`` pairs
        (see :class:`OpenClKernelLauncher`).

    The remaining keyword arguments are those of
    :class:`OpenClKernelLauncher`.

    .. autoattribute:: parameters_map
    .. automethod:: __call__
    """

    def __init__(self,
                 parameters_map: Mapping[str, tuple[int, ParameterType]],
                 args_list: Sequence[Any] | None, *,
                 name: str, kernel: cl.Kernel | cl.Program,
                 default_global_work_size: WorkSize | None = None,
                 default_local_work_size: WorkSize | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 **kwds: Any) -> None:
        super().__init__(name, kernel, args_list,
                         default_global_work_size=default_global_work_size,
                         default_local_work_size=default_local_work_size,
                         default_queue=default_queue, **kwds)
        seen = set(self._fixed_indices)
        pmap: dict[str, tuple[int, np.dtype[Any] | tuple[type, ...]]] = {}
        for pname, (idx, ptype) in parameters_map.items():
            self._check_arg_index(int(idx), seen)
            pmap[pname] = (int(idx), _normalize_parameter_type(ptype, pname))
        self._parameters_map = pmap

    @property
    def parameters_map(self) -> Mapping[str, tuple[int, np.dtype[Any]
                                                   | tuple[type, ...]]]:
        """Mapping from parameter names to ``(arg_index, parameter_type)``
        (types normalized to a :class:`numpy.dtype` or a tuple of classes).
        """
        return dict(self._parameters_map)

    @property
    def parameters(self) -> Mapping[str, np.dtype[Any] | tuple[type, ...]]:
        """See :attr:`LauncherI.parameters`."""
        return {name: ptype for name, (_, ptype) in self._parameters_map.items()}

    def _set_parameters(self, values: Mapping[str, Any]) -> None:
        expected = self.parameters
        missing = [n for n in expected if n not in values]
        if missing:
            raise InvalidArgumentTypeError(f"{self.name}: missing parameters {missing}")
        unknown = sorted(n for n in values if n not in expected)
        if unknown:
            raise InvalidArgumentTypeError(
                f"{self.name}: unexpected parameters {unknown}; "
                f"expected {sorted(expected)}")
        converted = []
        for pname in expected:
            idx, ptype = self._parameters_map[pname]
            converted.append((idx, _check_parameter(
                values[pname], ptype,
                f"{self.name}: parameter {pname!r} (kernel argument {idx})")))
        for idx, arg in converted:
            self._kernel.set_arg(idx, arg)

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 **kwds: Any) -> cl.Event:
        """Set the parameters given as keyword arguments *kwds* (all of
        :attr:`parameters` are required), then enqueue the kernel like
        :meth:`OpenClKernelLauncher.__call__`.

        :raises TypeError: if a parameter is missing, unknown, or of the
            wrong type; nothing is enqueued then.
        """
        self._set_parameters(kwds)
        queue, gws, lws = self._resolve(queue, global_work_size,
                                        local_work_size)
        return self._enqueue(queue, gws, lws, _wait_list(wait_for))


class OpenClKernelParameterGenerator(ABC):
    """Abstract source of the values of an iterated kernel parameter (see
    :class:`OpenClIterativeKernelLauncher`).

    .. automethod:: new_generator
    """

    @abstractmethod
    def new_generator(self) -> Iterator[Any]:
        """Return a fresh iterator over the parameter values for one call."""


class OpenClKernelParameterYielder(OpenClKernelParameterGenerator):
    """Parameter values produced by an external iterable factory.

    :arg fn: a callable without arguments returning an iterable (an
        iterator, a generator, a :class:`range`...) of the parameter values,
        e.g. ``lambda: range(10)``.  It is called once per launch.
    """

    def __init__(self, fn: Callable[[], Iterable[Any]]) -> None:
        if not callable(fn):
            raise InvalidArgumentTypeError(
                f"expected a callable, got {type(fn).__name__}")
        self._fn = fn

    def new_generator(self) -> Iterator[Any]:
        """Return a fresh iterator over the values yielded by *fn*."""
        return iter(self._fn())


class OpenClIterativeKernelLauncher(OpenClParametrizedKernelLauncher):
    """Launch one OpenCL kernel repeatedly, with some parameters drawn from
    iterators on each call.

    Parameters are split into those given on call (as with
    :class:`OpenClParametrizedKernelLauncher`) and *iterated* ones: one
    call enqueues the kernel once per element of the Cartesian product of
    the iterated parameters' values (in the order of *iterated_parameters*,
    the last one varying fastest), which acts like a
    :class:`OpenClKernelListLauncher` without building all the kernels.

    :arg parameters_map: as for :class:`OpenClParametrizedKernelLauncher`;
        it includes the iterated parameters.
    :arg args_list: the fixed arguments, as ``(arg_index, arg_value)`` pairs.
    :arg iterated_parameters: mapping from iterated parameter names to
        :class:`OpenClKernelParameterGenerator`.

    The remaining keyword arguments are those of
    :class:`OpenClKernelLauncher`.

    .. automethod:: iter_parameters
    .. automethod:: __call__
    """

    def __init__(self,
                 parameters_map: Mapping[str, tuple[int, ParameterType]],
                 args_list: Sequence[Any] | None,
                 iterated_parameters: Mapping[str,
                                              OpenClKernelParameterGenerator],
                 **kwds: Any) -> None:
        super().__init__(parameters_map, args_list, **kwds)
        for pname, gen in iterated_parameters.items():
            if pname not in self._parameters_map:
                raise InvalidArgumentError(f"{self.name}: iterated parameter {pname!r} "
                                           "is not in parameters_map")
            if not isinstance(gen, OpenClKernelParameterGenerator):
                raise InvalidArgumentTypeError(
                    f"{self.name}: iterated parameter {pname!r} needs an "
                    "OpenClKernelParameterGenerator, got "
                    f"{type(gen).__name__}")
        self._iterated = dict(iterated_parameters)

    @property
    def iterated_parameters(self) -> Mapping[str,
                                             OpenClKernelParameterGenerator]:
        """Mapping from iterated parameter names to their generators."""
        return dict(self._iterated)

    @property
    def parameters(self) -> Mapping[str, np.dtype[Any] | tuple[type, ...]]:
        """The parameters to give on call: those of the
        :attr:`parameters_map` that are not iterated.
        """
        return {name: ptype for name, (_, ptype) in self._parameters_map.items()
                if name not in self._iterated}

    def iter_parameters(self) -> Iterator[tuple[Any, ...]]:
        """Return an iterator over the tuples of iterated parameter values
        (in the order of :attr:`iterated_parameters`) for one call.
        """
        return itertools.product(
            *(gen.new_generator() for gen in self._iterated.values()))

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 enqueue_barrier: bool = True,
                 **kwds: Any) -> cl.Event | None:
        """Set the non-iterated parameters *kwds*, then enqueue the kernel
        once per tuple of :meth:`iter_parameters`, each launch waiting for
        *wait_for*.

        On an in-order queue, the event of the last launch is returned (a
        marker event if there was no launch).  On an out-of-order queue the
        launches may run concurrently; a barrier waiting for all of them is
        enqueued and its event returned, unless *enqueue_barrier* is
        *False*, in which case *None* is returned.
        """
        self._set_parameters(kwds)
        queue, gws, lws = self._resolve(queue, global_work_size,
                                        local_work_size)
        out_of_order = is_out_of_order(queue)
        wait_list = _wait_list(wait_for)
        iterated = [(name, *self._parameters_map[name])
                    for name in self._iterated]

        events: list[cl.Event] = []
        last_evt = None
        for values in self.iter_parameters():
            for (pname, idx, ptype), value in zip(iterated, values, strict=True):
                self._kernel.set_arg(idx, _check_parameter(
                    value, ptype,
                    f"{self.name}: iterated parameter {pname!r} "
                    f"(kernel argument {idx})"))
            last_evt = self._enqueue(
                queue, gws, lws,
                wait_list if out_of_order or last_evt is None else None)
            if out_of_order:
                events.append(last_evt)

        if out_of_order:
            if not enqueue_barrier:
                return None
            return cl.enqueue_barrier(queue, wait_for=events or wait_list)
        if last_evt is None:
            return cl.enqueue_marker(queue, wait_for=wait_list)
        return last_evt

# }}}


# {{{ copies

class OpenClCopyBuffer(LauncherI):
    """Copy memory host to device, device to host or device to device with
    :func:`pyopencl.enqueue_copy` (non-blocking: wait for the returned event
    before using the destination on the host).

    The direction follows the types of *src* and *dst*: a
    :class:`numpy.ndarray` is host memory, a :class:`pyopencl.Buffer` or
    contiguous :class:`pyopencl.array.Array` device memory.

    :arg varname: name of the copied variable; the launcher is named
        ``copy_h2d_<varname>``, ``copy_d2h_<varname>`` or
        ``copy_d2d_<varname>`` unless *name* is given.
    :arg src_device_offset: byte offset into a device *src* (added to the
        offset of a :class:`pyopencl.array.Array`).
    :arg dst_device_offset: byte offset into a device *dst*.
    :arg byte_count: number of bytes to copy; by default the size of the
        host memory, or for device to device copies the size of *src* from
        its offset.
    :arg default_queue: the queue used when none is given on call.
    :arg profiler: see :class:`LauncherI`.

    .. autoattribute:: direction
    .. automethod:: __call__
    """

    def __init__(self, varname: str, src: Any, dst: Any,
                 src_device_offset: int | None = None,
                 dst_device_offset: int | None = None,
                 byte_count: int | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 name: str | None = None,
                 profiler: KernelProfiler | None = None) -> None:
        src_dev, dst_dev = _is_device_memory(src), _is_device_memory(dst)
        if src_dev and dst_dev:
            direction = "d2d"
        elif dst_dev:
            direction = "h2d"
        elif src_dev:
            direction = "d2h"
        else:
            raise InvalidArgumentTypeError(f"copy of {varname!r}: neither source "
                                           f"({type(src).__name__}) nor destination "
                                           f"({type(dst).__name__}) is device memory")
        super().__init__(name or f"copy_{direction}_{varname}",
                         profiler=profiler)
        self._direction = direction
        self._varname = varname
        self._default_queue = default_queue
        what = self.name
        if byte_count is not None and byte_count < 0:
            raise InvalidArgumentError(f"{what}: negative byte_count {byte_count}")

        kwargs: dict[str, Any] = {}
        if direction == "h2d":
            if src_device_offset is not None:
                raise InvalidArgumentError(f"{what}: src_device_offset given for host "
                                           "source")
            host = _host_region(src, byte_count, False, f"{what} (source)")
            buf, offset, avail = _device_region(dst, dst_device_offset,
                                                f"{what} (destination)")
            if host.nbytes > avail:
                raise InvalidArgumentError(
                    f"{what}: {host.nbytes} bytes do not fit the "
                    f"{avail} bytes of the destination")
            self._dst, self._src = buf, host
            kwargs.update(dst_offset=offset, is_blocking=False)
            nbytes = host.nbytes
        elif direction == "d2h":
            if dst_device_offset is not None:
                raise InvalidArgumentError(f"{what}: dst_device_offset given for host "
                                           "destination")
            host = _host_region(dst, byte_count, True, f"{what} (destination)")
            buf, offset, avail = _device_region(src, src_device_offset,
                                                f"{what} (source)")
            if host.nbytes > avail:
                raise InvalidArgumentError(
                    f"{what}: {host.nbytes} bytes requested from "
                    f"a source of {avail} bytes")
            self._dst, self._src = host, buf
            kwargs.update(src_offset=offset, is_blocking=False)
            nbytes = host.nbytes
        else:
            src_buf, src_offset, src_avail = _device_region(
                src, src_device_offset, f"{what} (source)")
            dst_buf, dst_offset, dst_avail = _device_region(
                dst, dst_device_offset, f"{what} (destination)")
            nbytes = src_avail if byte_count is None else byte_count
            if nbytes > src_avail or nbytes > dst_avail:
                raise InvalidArgumentError(f"{what}: {nbytes} bytes exceed the source "
                                           f"({src_avail} bytes) or destination "
                                           f"({dst_avail} bytes)")
            self._dst, self._src = dst_buf, src_buf
            kwargs.update(src_offset=src_offset, dst_offset=dst_offset,
                          byte_count=nbytes)
        self._nbytes = nbytes
        self._copy_kwargs = kwargs
        # keep the user's objects alive as long as the launcher
        self._keep_alive = (src, dst)

    @property
    def direction(self) -> str:
        """``"h2d"``, ``"d2h"`` or ``"d2d"``."""
        return self._direction

    @property
    def varname(self) -> str:
        """The name of the copied variable."""
        return self._varname

    @property
    def nbytes(self) -> int:
        """The number of bytes copied."""
        return self._nbytes

    def global_size_configured(self) -> bool:
        """Always *True*: copies need no work size."""
        return True

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: Any) -> cl.Event:
        """Enqueue the copy on *queue* after *wait_for*, return its event."""
        if kwds:
            raise InvalidArgumentTypeError(
                f"{self.name}: unexpected parameters {sorted(kwds)}")
        queue = self._resolve_queue(queue, self._default_queue)
        self._trace(None, None)
        if self._nbytes == 0:
            evt = cl.enqueue_marker(queue, wait_for=_wait_list(wait_for))
        else:
            evt = cl.enqueue_copy(queue, self._dst, self._src,
                                  wait_for=_wait_list(wait_for),
                                  **self._copy_kwargs)
        self._record_event(queue, evt)
        return evt

    def _trace(self, global_size: tuple[int, ...] | None,
               local_size: tuple[int, ...] | None) -> None:
        if should_trace_kernel(self.name):
            trace_kernel(f"{self.name}: {self._direction} copy of "
                         f"{self._nbytes} bytes")


class OpenClCopyHost2Device(OpenClCopyBuffer):
    """Copy the host array *src* to the device memory *dst* (see
    :class:`OpenClCopyBuffer`).
    """

    def __init__(self, varname: str, src: np.ndarray, dst: Any,
                 dst_device_offset: int | None = None,
                 byte_count: int | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 name: str | None = None,
                 profiler: KernelProfiler | None = None) -> None:
        if not isinstance(src, np.ndarray) or not _is_device_memory(dst):
            raise InvalidArgumentTypeError(
                f"copy of {varname!r}: host to device copy needs "
                "a numpy array source and a pyopencl Buffer or "
                f"Array destination, got {type(src).__name__} "
                f"and {type(dst).__name__}")
        super().__init__(varname, src, dst, dst_device_offset=dst_device_offset,
                         byte_count=byte_count, default_queue=default_queue,
                         name=name, profiler=profiler)


class OpenClCopyDevice2Host(OpenClCopyBuffer):
    """Copy the device memory *src* to the host array *dst* (see
    :class:`OpenClCopyBuffer`).
    """

    def __init__(self, varname: str, src: Any, dst: np.ndarray,
                 src_device_offset: int | None = None,
                 byte_count: int | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 name: str | None = None,
                 profiler: KernelProfiler | None = None) -> None:
        if not _is_device_memory(src) or not isinstance(dst, np.ndarray):
            raise InvalidArgumentTypeError(
                f"copy of {varname!r}: device to host copy needs "
                "a pyopencl Buffer or Array source and a numpy "
                f"array destination, got {type(src).__name__} "
                f"and {type(dst).__name__}")
        super().__init__(varname, src, dst, src_device_offset=src_device_offset,
                         byte_count=byte_count, default_queue=default_queue,
                         name=name, profiler=profiler)


class OpenClCopyDevice2Device(OpenClCopyBuffer):
    """Copy the device memory *src* to the device memory *dst* (see
    :class:`OpenClCopyBuffer`).
    """

    def __init__(self, varname: str, src: Any, dst: Any,
                 src_device_offset: int | None = None,
                 dst_device_offset: int | None = None,
                 byte_count: int | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 name: str | None = None,
                 profiler: KernelProfiler | None = None) -> None:
        if not (_is_device_memory(src) and _is_device_memory(dst)):
            raise InvalidArgumentTypeError(
                f"copy of {varname!r}: device to device copy "
                "needs pyopencl Buffers or Arrays, got "
                f"{type(src).__name__} and {type(dst).__name__}")
        super().__init__(varname, src, dst, src_device_offset=src_device_offset,
                         dst_device_offset=dst_device_offset,
                         byte_count=byte_count, default_queue=default_queue,
                         name=name, profiler=profiler)

# }}}


# {{{ list launcher

class OpenClKernelListLauncher(LauncherI):
    """An ordered list of launchers (kernels and copies) enqueued one after
    the other on one queue.

    The launchers' own default queues are not used: all run on the queue
    given on call (or *default_queue*), so kernel launchers need a
    configured global work size.  On an out-of-order queue, each launcher
    waits for the event of the previous one.

    ``launcher += other`` appends *other*: a launcher, another list (whose
    launchers are appended), an iterable of those, or *None* (ignored).

    :arg name: a name for this list (for logging).
    :arg profiler: a :class:`KernelProfiler`, given to the launchers pushed
        into the list that have none (they record their measurements in
        it), or *None*.
    :arg default_queue: the queue used when none is given on call.

    .. autoattribute:: launchers
    .. automethod:: push_kernels
    .. automethod:: push_copy_host_device
    .. automethod:: push_copy_host_to_device
    .. automethod:: push_copy_device_to_host
    .. automethod:: push_copy_device_to_device
    .. automethod:: __call__
    """

    def __init__(self, name: str, profiler: KernelProfiler | None = None,
                 default_queue: cl.CommandQueue | None = None) -> None:
        super().__init__(name, profiler=profiler)
        self._default_queue = default_queue
        self._launchers: list[LauncherI] = []
        self._parameters: dict[str, np.dtype[Any] | tuple[type, ...]] = {}

    @property
    def launchers(self) -> tuple[LauncherI, ...]:
        """The launchers, in enqueue order."""
        return tuple(self._launchers)

    @property
    def default_queue(self) -> cl.CommandQueue | None:
        """The queue used when none is given on call."""
        return self._default_queue

    def __len__(self) -> int:
        return len(self._launchers)

    def __iter__(self) -> Iterator[LauncherI]:
        return iter(self._launchers)

    def _push(self, launcher: LauncherI) -> None:
        if not isinstance(launcher, LauncherI):
            raise InvalidArgumentTypeError(
                f"{self.name}: cannot push a "
                f"{type(launcher).__name__}; expected a launcher")
        if not launcher.global_size_configured():
            raise InvalidArgumentError(
                f"{self.name}: launcher {launcher.name!r} has no "
                "default global work size")
        for pname, ptype in launcher.parameters.items():
            known = self._parameters.get(pname)
            if known is not None and known != ptype:
                raise InvalidArgumentError(f"{self.name}: parameter {pname!r} of "
                                           f"{launcher.name!r} has type {ptype}, "
                                           f"but {known} elsewhere in the list")
        self._parameters.update(launcher.parameters)
        if launcher._profiler is None and self._profiler is not None:
            launcher._profiler = self._profiler
        self._launchers.append(launcher)

    def push_kernels(self, *kernel_launchers: LauncherI | None
                     ) -> OpenClKernelListLauncher:
        """Append launchers (lists are flattened, *None* is ignored);
        return *self*.
        """
        for launcher in kernel_launchers:
            if launcher is None:
                continue
            if isinstance(launcher, OpenClKernelListLauncher):
                for sub in launcher.launchers:
                    self._push(sub)
            else:
                self._push(launcher)
        return self

    def __iadd__(self, other: LauncherI | Iterable[LauncherI | None] | None
                 ) -> Self:
        if other is None or isinstance(other, LauncherI):
            self.push_kernels(other)
            return self
        if isinstance(other, Iterable):
            self.push_kernels(*other)
            return self
        return NotImplemented

    def push_copy_host_device(self, varname: str, src: Any, dst: Any,
                              src_device_offset: int | None = None,
                              dst_device_offset: int | None = None,
                              byte_count: int | None = None
                              ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyBuffer` (direction from the types of
        *src* and *dst*); return *self*.
        """
        return self.push_kernels(OpenClCopyBuffer(
            varname, src, dst, src_device_offset=src_device_offset,
            dst_device_offset=dst_device_offset, byte_count=byte_count))

    def push_copy_host_to_device(self, varname: str, src: np.ndarray,
                                 dst: Any, dst_device_offset: int | None = None
                                 ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyHost2Device`; return *self*."""
        return self.push_kernels(OpenClCopyHost2Device(
            varname, src, dst, dst_device_offset=dst_device_offset))

    def push_copy_device_to_host(self, varname: str, src: Any,
                                 dst: np.ndarray,
                                 src_device_offset: int | None = None
                                 ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyDevice2Host`; return *self*."""
        return self.push_kernels(OpenClCopyDevice2Host(
            varname, src, dst, src_device_offset=src_device_offset))

    def push_copy_device_to_device(self, varname: str, src: Any, dst: Any,
                                   src_device_offset: int | None = None,
                                   dst_device_offset: int | None = None,
                                   byte_count: int | None = None
                                   ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyDevice2Device`; return *self*."""
        return self.push_kernels(OpenClCopyDevice2Device(
            varname, src, dst, src_device_offset=src_device_offset,
            dst_device_offset=dst_device_offset, byte_count=byte_count))

    @property
    def parameters(self) -> Mapping[str, np.dtype[Any] | tuple[type, ...]]:
        """The parameters of all the launchers of the list, by name (a
        parameter shared by several launchers is given once on call).
        """
        return dict(self._parameters)

    def global_size_configured(self) -> bool:
        """Always *True*: only launchers with a global size are accepted."""
        return all(launcher.global_size_configured()
                   for launcher in self._launchers)

    def _unique_launchers(self) -> list[LauncherI]:
        seen: set[int] = set()
        result = []
        for launcher in self._launchers:
            if id(launcher) not in seen:
                seen.add(id(launcher))
                result.append(launcher)
        return result

    @property
    def events(self) -> tuple[cl.Event, ...]:
        """The pending profiling events of all launchers of the list."""
        return tuple(evt for launcher in self._unique_launchers()
                     for evt in launcher.events)

    @property
    def statistics(self) -> LauncherStatistics:
        """The statistics of all launchers of the list, merged by name
        (see :attr:`LauncherI.statistics`).
        """
        result = LauncherStatistics()
        for launcher in self._unique_launchers():
            result += launcher.statistics
        return result

    def clear_statistics(self) -> None:
        """Clear the statistics of all launchers of the list."""
        for launcher in self._unique_launchers():
            launcher.clear_statistics()

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: Any) -> cl.Event | None:
        """Enqueue all launchers in order on *queue* (default:
        :attr:`default_queue`); the first waits for *wait_for*.  Each
        launcher receives the parameters among *kwds* it takes.

        :returns: the event of the last launcher, or of a marker waiting for
            *wait_for* if the list is empty.
        :raises TypeError: if parameters are missing, unknown or of the
            wrong type; nothing is enqueued then.
        """
        queue = self._resolve_queue(queue, self._default_queue)
        missing = [n for n in self._parameters if n not in kwds]
        unknown = sorted(n for n in kwds if n not in self._parameters)
        if missing or unknown:
            raise InvalidArgumentTypeError(
                f"{self.name}: missing parameters {missing}, "
                f"unexpected parameters {unknown}")
        for pname, ptype in self._parameters.items():
            _check_parameter(kwds[pname], ptype,
                             f"{self.name}: parameter {pname!r}")

        wait_list = _wait_list(wait_for)
        if not self._launchers:
            return cl.enqueue_marker(queue, wait_for=wait_list)
        out_of_order = is_out_of_order(queue)
        evt = None
        for i, launcher in enumerate(self._launchers):
            params = {n: kwds[n] for n in launcher.parameters}
            evt = launcher(queue=queue,
                           wait_for=wait_list if i == 0 or out_of_order else None,
                           **params)
            if out_of_order and evt is not None:
                wait_list = [evt]
        return evt


def launcher_from_kernels(
        name: str,
        kernels: Iterable[tuple[cl.Kernel, WorkSize]
                          | tuple[cl.Kernel, WorkSize, WorkSize | None]],
        queue: cl.CommandQueue | None) -> OpenClKernelListLauncher:
    """Return a :class:`OpenClKernelListLauncher` named *name* that enqueues
    *kernels* in order on *queue* (its default queue).

    :arg kernels: ``(kernel, global_size, local_size)`` tuples (*local_size*
        may be *None* or left out); the kernels' arguments must already be
        set, they are not changed.  Each launcher is named after its
        kernel's function name.
    """
    result = OpenClKernelListLauncher(name, default_queue=queue)
    for entry in kernels:
        if len(entry) == 2:
            kernel, gsize = entry  # type: ignore[misc]
            lsize = None
        elif len(entry) == 3:
            kernel, gsize, lsize = entry  # type: ignore[misc]
        else:
            raise InvalidArgumentError(f"{name}: expected (kernel, global_size[, "
                                       f"local_size]) tuples, got {entry!r}")
        result.push_kernels(OpenClKernelLauncher(
            kernel.function_name, kernel, None,
            default_global_work_size=gsize, default_local_work_size=lsize,
            default_queue=queue))
    return result

# }}}

# vim: foldmethod=marker
