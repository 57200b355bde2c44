"""Copies between host and device memory as launchers:
:class:`OpenClCopyBuffer` (direction from the types of its memories) and
:class:`OpenClCopyHost2Device`, :class:`OpenClCopyDevice2Host`,
:class:`OpenClCopyDevice2Device` (one direction each, checked).

All directions share one checking of the memories, offsets and byte count
(``_plan_copy``).  See :mod:`pytato.launchers` for the directives
documenting these names.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple, TypedDict, Unpack

import numpy as np
import pyopencl as cl

from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError
from pytato.launchers.arguments import (
    DeviceMemory,
    WaitFor,
    device_region,
    host_region,
    is_device_memory,
    wait_list,
)
from pytato.launchers.base import LauncherI
from pytato.launchers.statistics import KernelProfiler
from pytato.launchers.tracing import should_trace_kernel, trace_kernel


__all__ = [
    "OpenClCopyBuffer",
    "OpenClCopyDevice2Device",
    "OpenClCopyDevice2Host",
    "OpenClCopyHost2Device",
]


# {{{ directions and regions

#: direction -> (whether the source and the destination are device memory,
#: the direction in words, what a copy of that direction needs)
_DIRECTIONS: dict[str, tuple[bool, bool, str, str]] = {
    "h2d": (False, True, "host to device",
            "a numpy array source and a pyopencl Buffer or Array destination"),
    "d2h": (True, False, "device to host",
            "a pyopencl Buffer or Array source and a numpy array destination"),
    "d2d": (True, True, "device to device", "pyopencl Buffers or Arrays"),
}


def _copy_direction(varname: str, src: object, dst: object) -> str:
    """The direction of a copy from *src* to *dst*, from their types."""
    src_dev, dst_dev = is_device_memory(src), is_device_memory(dst)
    for direction, (src_is_dev, dst_is_dev, _, _) in _DIRECTIONS.items():
        if (src_dev, dst_dev) == (src_is_dev, dst_is_dev):
            return direction
    raise InvalidArgumentTypeError(f"copy of {varname!r}: neither source "
                                   f"({type(src).__name__}) nor destination "
                                   f"({type(dst).__name__}) is device memory")


def _check_direction(direction: str, varname: str, src: object,
                     dst: object) -> None:
    """Raise unless *src* and *dst* are the memories of a copy in
    *direction* (a numpy array for host memory)."""
    src_is_dev, dst_is_dev, words, needs = _DIRECTIONS[direction]

    def fits(obj: object, device: bool) -> bool:
        return is_device_memory(obj) if device else isinstance(obj, np.ndarray)

    if not (fits(src, src_is_dev) and fits(dst, dst_is_dev)):
        raise InvalidArgumentTypeError(
            f"copy of {varname!r}: {words} copy needs {needs}, got "
            f"{type(src).__name__} and {type(dst).__name__}")


class _CopyPlan(NamedTuple):
    """What :func:`pyopencl.enqueue_copy` is given: destination, source,
    keyword arguments; and the number of bytes copied."""
    dst: np.ndarray | cl.MemoryObjectHolder | cl.SVMPointer
    src: np.ndarray | cl.MemoryObjectHolder | cl.SVMPointer
    kwargs: dict[str, int | bool]
    nbytes: int


def _plan_host_copy(what: str, direction: str, src: object, dst: object,
                    src_device_offset: int | None,
                    dst_device_offset: int | None,
                    byte_count: int | None) -> _CopyPlan:
    """Check a host to device or device to host copy (the host memory sets
    the size); see :class:`OpenClCopyBuffer` for the arguments."""
    to_device = direction == "h2d"
    if to_device:
        host, host_end, device, device_end = src, "source", dst, "destination"
        device_offset, host_offset = dst_device_offset, src_device_offset
    else:
        host, host_end, device, device_end = dst, "destination", src, "source"
        device_offset, host_offset = src_device_offset, dst_device_offset
    if host_offset is not None:
        raise InvalidArgumentError(f"{what}: {'src' if to_device else 'dst'}"
                                   f"_device_offset given for host {host_end}")
    host_mem = host_region(host, byte_count, not to_device,
                           f"{what} ({host_end})")
    buf, offset, avail = device_region(device, device_offset,
                                       f"{what} ({device_end})")
    nbytes = host_mem.nbytes
    if nbytes > avail:
        problem = (f"{nbytes} bytes do not fit the {avail} bytes of the "
                   "destination" if to_device else
                   f"{nbytes} bytes requested from a source of {avail} bytes")
        raise InvalidArgumentError(f"{what}: {problem}")
    if to_device:
        return _CopyPlan(buf, host_mem, {"dst_offset": offset,
                                         "is_blocking": False}, nbytes)
    return _CopyPlan(host_mem, buf, {"src_offset": offset,
                                     "is_blocking": False}, nbytes)


def _plan_copy(what: str, direction: str, src: object, dst: object,
               src_device_offset: int | None, dst_device_offset: int | None,
               byte_count: int | None) -> _CopyPlan:
    """Check a copy in *direction*; see :class:`OpenClCopyBuffer` for the
    arguments."""
    if byte_count is not None and byte_count < 0:
        raise InvalidArgumentError(f"{what}: negative byte_count {byte_count}")
    if direction != "d2d":
        return _plan_host_copy(what, direction, src, dst, src_device_offset,
                               dst_device_offset, byte_count)
    src_buf, src_offset, src_avail = device_region(
        src, src_device_offset, f"{what} (source)")
    dst_buf, dst_offset, dst_avail = device_region(
        dst, dst_device_offset, f"{what} (destination)")
    nbytes = src_avail if byte_count is None else byte_count
    if nbytes > src_avail or nbytes > dst_avail:
        raise InvalidArgumentError(f"{what}: {nbytes} bytes exceed the source "
                                   f"({src_avail} bytes) or destination "
                                   f"({dst_avail} bytes)")
    return _CopyPlan(dst_buf, src_buf, {"src_offset": src_offset,
                                        "dst_offset": dst_offset,
                                        "byte_count": nbytes}, nbytes)

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

    #: the direction that a subclass copies in (checked), or *None*
    _required_direction: ClassVar[str | None] = None

    def __init__(self, varname: str, src: np.ndarray | DeviceMemory,
                 dst: np.ndarray | DeviceMemory,
                 src_device_offset: int | None = None,
                 dst_device_offset: int | None = None,
                 byte_count: int | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 name: str | None = None,
                 profiler: KernelProfiler | None = None) -> None:
        if self._required_direction is not None:
            _check_direction(self._required_direction, varname, src, dst)
        direction = _copy_direction(varname, src, dst)
        super().__init__(name or f"copy_{direction}_{varname}",
                         profiler=profiler)
        self._direction = direction
        self._varname = varname
        self._default_queue = default_queue
        plan = _plan_copy(self.name, direction, src, dst, src_device_offset,
                          dst_device_offset, byte_count)
        self._dst, self._src = plan.dst, plan.src
        self._nbytes = plan.nbytes
        self._copy_kwargs = plan.kwargs
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
                 wait_for: WaitFor = None, **kwds: object) -> cl.Event:
        """Enqueue the copy on *queue* after *wait_for*, return its event."""
        if kwds:
            raise InvalidArgumentTypeError(
                f"{self.name}: unexpected parameters {sorted(kwds)}")
        queue = self._resolve_queue(queue, self._default_queue)
        self._trace(None, None)
        if self._nbytes == 0:
            evt = cl.enqueue_marker(queue, wait_for=wait_list(wait_for))
        else:
            # (pyopencl's overloads of enqueue_copy type each kind of copy
            # apart; the kind of this one is chosen at construction)
            evt = cl.enqueue_copy(queue, self._dst, self._src,  # type: ignore[arg-type]
                                  wait_for=wait_list(wait_for),
                                  **self._copy_kwargs)  # type: ignore[arg-type]
        self._record_event(queue, evt)
        return evt

    def _trace(self, global_size: tuple[int, ...] | None,
               local_size: tuple[int, ...] | None) -> None:
        if should_trace_kernel(self.name):
            trace_kernel(f"{self.name}: {self._direction} copy of "
                         f"{self._nbytes} bytes")


class _CopyOptions(TypedDict, total=False):
    """The keyword arguments of :class:`OpenClCopyBuffer` common to all
    directions."""
    default_queue: cl.CommandQueue | None
    name: str | None
    profiler: KernelProfiler | None


class OpenClCopyHost2Device(OpenClCopyBuffer):
    """Copy the host array *src* to the device memory *dst* (see
    :class:`OpenClCopyBuffer`; *default_queue*, *name* and *profiler* are
    keyword arguments).
    """

    _required_direction = "h2d"

    def __init__(self, varname: str, src: np.ndarray, dst: DeviceMemory,
                 dst_device_offset: int | None = None,
                 byte_count: int | None = None,
                 **kwds: Unpack[_CopyOptions]) -> None:
        super().__init__(varname, src, dst, None, dst_device_offset,
                         byte_count, **kwds)


class OpenClCopyDevice2Host(OpenClCopyBuffer):
    """Copy the device memory *src* to the host array *dst* (see
    :class:`OpenClCopyBuffer`; *default_queue*, *name* and *profiler* are
    keyword arguments).
    """

    _required_direction = "d2h"

    def __init__(self, varname: str, src: DeviceMemory, dst: np.ndarray,
                 src_device_offset: int | None = None,
                 byte_count: int | None = None,
                 **kwds: Unpack[_CopyOptions]) -> None:
        super().__init__(varname, src, dst, src_device_offset, None,
                         byte_count, **kwds)


class OpenClCopyDevice2Device(OpenClCopyBuffer):
    """Copy the device memory *src* to the device memory *dst* (see
    :class:`OpenClCopyBuffer`, whose arguments it takes).
    """

    _required_direction = "d2d"

# }}}

# vim: foldmethod=marker
