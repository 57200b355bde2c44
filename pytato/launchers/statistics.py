"""Execution time statistics of launchers, read from profiling events.

:class:`KernelStatistics` summarizes the durations of one kernel (or copy),
:class:`LauncherStatistics` maps launcher names to those, and a
:class:`KernelProfiler` collects what the launchers given it measure.  The
small queue and event helpers read OpenCL's profiling information.
See :mod:`pytato.launchers` for the directives documenting these names.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Self, cast

import pyopencl as cl

from pytato.diagnostic import InvalidArgumentError


__all__ = [
    "KernelProfiler",
    "KernelStatistics",
    "LauncherStatistics",
    "event_duration",
    "has_profiling",
    "is_out_of_order",
]

# the package's one logger (see "Tracing" in pytato.launchers)
logger = logging.getLogger("pytato.launchers")


# {{{ queues and events

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
    # (pyopencl types profiling counters as objects: they are integers)
    end = cast("int", evt.get_profiling_info(_END))
    start = cast("int", evt.get_profiling_info(_START))
    return (end - start) * 1e-9


_START = cl.profiling_info.START
_END = cl.profiling_info.END
_COMPLETE = cl.command_execution_status.COMPLETE

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
    measurements by name. Several threads may record and read at once
    (records are appended without a lock; reading takes the recorded
    batches out under one).

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
        # held while the statistics are read or changed (not by the
        # appends of records: see _consume)
        self._lock = threading.Lock()

    def add(self, name: str, seconds: float) -> None:
        """Record one execution of *name* that took *seconds*."""
        with self._lock:
            self._stats.add(name, seconds)

    def __setitem__(self, name: str, seconds: float) -> None:
        self.add(name, seconds)

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
        with self._lock:
            self._consume_locked()

    def _consume_locked(self) -> None:
        # the batches recorded so far are taken out of the list, and those
        # not finished put back at its start: batches that other threads
        # record meanwhile (appended, without the lock) stay after them
        batches = self._batches
        taken = batches[:len(batches)]
        del batches[:len(taken)]
        stats = self._stats
        pending = []
        npending = 0
        for names, events in taken:
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
        batches[:0] = pending
        self._counts[0] = npending + sum(len(events)
                                         for _, events in batches[len(pending):])

    @property
    def statistics(self) -> LauncherStatistics:
        """The statistics by name of all finished recorded executions (a
        copy; events that did not finish yet stay recorded)."""
        with self._lock:
            self._consume_locked()
            return LauncherStatistics(self._stats)

    def summary(self) -> str:
        """The table of :attr:`statistics`, headed by the profiler's name."""
        return f"{self.name}:\n{self.statistics}"

    def clear(self) -> None:
        """Forget the statistics and the recorded events."""
        with self._lock:
            self._batches.clear()
            self._counts[:] = [0, self.max_pending]
            self._stats = LauncherStatistics()

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"KernelProfiler({self.name!r})"

# }}}

# vim: foldmethod=marker
