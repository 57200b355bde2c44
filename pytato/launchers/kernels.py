"""Launchers of OpenCL kernels: one kernel with fixed arguments
(:class:`OpenClKernelLauncher`), with arguments given on each call
(:class:`OpenClParametrizedKernelLauncher`) or drawn from generators
(:class:`OpenClIterativeKernelLauncher`), and ordered lists of launchers
(:class:`OpenClKernelListLauncher`, :func:`launcher_from_kernels`).

See :mod:`pytato.launchers` for the directives documenting these names.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Self, cast

import numpy as np
import pyopencl as cl

from pytato.diagnostic import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidIndexError,
)
from pytato.launchers.arguments import (
    DeviceMemory,
    ParameterSpec,
    ParameterType,
    WaitFor,
    WorkSize,
    as_work_size,
    check_parameter,
    normalize_parameter_type,
    wait_list,
)
from pytato.launchers.base import LauncherI, OpenClKernelLauncherI
from pytato.launchers.copies import (
    OpenClCopyBuffer,
    OpenClCopyDevice2Device,
    OpenClCopyDevice2Host,
    OpenClCopyHost2Device,
)
from pytato.launchers.statistics import (
    KernelProfiler,
    LauncherStatistics,
    is_out_of_order,
)


__all__ = [
    "OpenClIterativeKernelLauncher",
    "OpenClKernelLauncher",
    "OpenClKernelListLauncher",
    "OpenClKernelParameterGenerator",
    "OpenClKernelParameterYielder",
    "OpenClParametrizedKernelLauncher",
    "launcher_from_kernels",
]


# {{{ kernel launchers

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


def _normalize_args_list(args_list: Sequence[object] | None
                         ) -> tuple[tuple[int, object], ...]:
    if not args_list:
        return ()
    items = tuple(args_list)
    indexed = all(isinstance(item, tuple) and len(item) == 2
                  and isinstance(item[0], int | np.integer)
                  for item in items)
    if indexed:
        pairs = cast("tuple[tuple[int | np.integer, object], ...]", items)
        return tuple((int(idx), value) for idx, value in pairs)
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
                 args_list: Sequence[object] | None = None,
                 default_global_work_size: WorkSize | None = None,
                 default_local_work_size: WorkSize | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 **kwds: Any) -> None:
        super().__init__(name, **kwds)
        self._kernel = _as_kernel(kernel, name)
        self._num_args = int(self._kernel.num_args)
        self._default_queue = default_queue
        self._default_gws = as_work_size(default_global_work_size,
                                          f"{name}: default_global_work_size")
        self._default_lws = as_work_size(default_local_work_size,
                                          f"{name}: default_local_work_size")

        args: list[tuple[int, object]] = []
        seen: set[int] = set()
        for idx, value in _normalize_args_list(args_list):
            self._check_arg_index(idx, seen)
            arg = self.check_kernel_arg(value, idx, f"{name}[{idx}]")
            # (pyopencl's KernelArg omits the LocalMemory and MemoryObjectHolder
            # that set_arg takes)
            self._kernel.set_arg(idx, arg)  # type: ignore[arg-type]
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
    def args_list(self) -> tuple[tuple[int, object], ...]:
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
        gws = (as_work_size(global_work_size, f"{self.name}: global_work_size")
               if global_work_size is not None else self._default_gws)
        if gws is None:
            raise InvalidArgumentError(f"{self.name}: no global work size given and no "
                                       "default configured")
        lws = (as_work_size(local_work_size, f"{self.name}: local_work_size")
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

    def _reject_parameters(self, kwds: Mapping[str, object]) -> None:
        if kwds:
            raise InvalidArgumentTypeError(f"{self.name}: unexpected parameters "
                                           f"{sorted(kwds)}; this launcher takes none")

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 **kwds: Any) -> cl.Event | None:
        """Enqueue the kernel on *queue* (default: :attr:`default_queue`)
        with the given work sizes (default: the configured ones) after the
        events *wait_for*, return its event.
        """
        self._reject_parameters(kwds)
        queue, gws, lws = self._resolve(queue, global_work_size,
                                        local_work_size)
        return self._enqueue(queue, gws, lws, wait_list(wait_for))


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
                 args_list: Sequence[object] | None, *,
                 name: str, kernel: cl.Kernel | cl.Program,
                 default_global_work_size: WorkSize | None = None,
                 default_local_work_size: WorkSize | None = None,
                 default_queue: cl.CommandQueue | None = None,
                 **kwds: object) -> None:
        super().__init__(name, kernel, args_list,
                         default_global_work_size=default_global_work_size,
                         default_local_work_size=default_local_work_size,
                         default_queue=default_queue, **kwds)
        seen = set(self._fixed_indices)
        pmap: dict[str, tuple[int, ParameterSpec]] = {}
        for pname, (idx, ptype) in parameters_map.items():
            self._check_arg_index(int(idx), seen)
            pmap[pname] = (int(idx), normalize_parameter_type(ptype, pname))
        self._parameters_map = pmap

    @property
    def parameters_map(self) -> Mapping[str, tuple[int, ParameterSpec]]:
        """Mapping from parameter names to ``(arg_index, parameter_type)``
        (types normalized to a :class:`numpy.dtype` or a tuple of classes).
        """
        return dict(self._parameters_map)

    @property
    def parameters(self) -> Mapping[str, ParameterSpec]:
        """See :attr:`LauncherI.parameters`."""
        return {name: ptype for name, (_, ptype) in self._parameters_map.items()}

    def _set_parameters(self, values: Mapping[str, object]) -> None:
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
            converted.append((idx, check_parameter(
                values[pname], ptype,
                f"{self.name}: parameter {pname!r} (kernel argument {idx})")))
        for idx, arg in converted:
            # (pyopencl's KernelArg omits the LocalMemory and MemoryObjectHolder
            # that set_arg takes)
            self._kernel.set_arg(idx, arg)  # type: ignore[arg-type]

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None,
                 global_work_size: WorkSize | None = None,
                 local_work_size: WorkSize | None = None,
                 **kwds: Any) -> cl.Event | None:
        """Set the parameters given as keyword arguments *kwds* (all of
        :attr:`parameters` are required), then enqueue the kernel like
        :meth:`OpenClKernelLauncher.__call__`.

        :raises TypeError: if a parameter is missing, unknown, or of the
            wrong type; nothing is enqueued then.
        """
        self._set_parameters(kwds)
        queue, gws, lws = self._resolve(queue, global_work_size,
                                        local_work_size)
        return self._enqueue(queue, gws, lws, wait_list(wait_for))


class OpenClKernelParameterGenerator(ABC):
    """Abstract source of the values of an iterated kernel parameter (see
    :class:`OpenClIterativeKernelLauncher`).

    .. automethod:: new_generator
    """

    @abstractmethod
    def new_generator(self) -> Iterator[object]:
        """Return a fresh iterator over the parameter values for one call."""


class OpenClKernelParameterYielder(OpenClKernelParameterGenerator):
    """Parameter values produced by an external iterable factory.

    :arg fn: a callable without arguments returning an iterable (an
        iterator, a generator, a :class:`range`...) of the parameter values,
        e.g. ``lambda: range(10)``.  It is called once per launch.
    """

    def __init__(self, fn: Callable[[], Iterable[object]]) -> None:
        if not callable(fn):
            raise InvalidArgumentTypeError(
                f"expected a callable, got {type(fn).__name__}")
        self._fn = fn

    def new_generator(self) -> Iterator[object]:
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
                 args_list: Sequence[object] | None,
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
    def parameters(self) -> Mapping[str, ParameterSpec]:
        """The parameters to give on call: those of the
        :attr:`parameters_map` that are not iterated.
        """
        return {name: ptype for name, (_, ptype) in self._parameters_map.items()
                if name not in self._iterated}

    def iter_parameters(self) -> Iterator[tuple[object, ...]]:
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
        after = wait_list(wait_for)
        iterated = [(name, *self._parameters_map[name])
                    for name in self._iterated]

        events: list[cl.Event] = []
        last_evt = None
        for values in self.iter_parameters():
            for (pname, idx, ptype), value in zip(iterated, values, strict=True):
                self._kernel.set_arg(idx, check_parameter(  # type: ignore[arg-type]
                    value, ptype,
                    f"{self.name}: iterated parameter {pname!r} "
                    f"(kernel argument {idx})"))
            last_evt = self._enqueue(
                queue, gws, lws,
                after if out_of_order or last_evt is None else None)
            if out_of_order:
                events.append(last_evt)

        if out_of_order:
            if not enqueue_barrier:
                return None
            return cl.enqueue_barrier(queue, wait_for=events or after)
        if last_evt is None:
            return cl.enqueue_marker(queue, wait_for=after)
        return last_evt


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
        self._parameters: dict[str, ParameterSpec] = {}

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

    def push_copy_host_device(self, varname: str,
                              src: np.ndarray | DeviceMemory,
                              dst: np.ndarray | DeviceMemory,
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
                                 dst: DeviceMemory,
                                 dst_device_offset: int | None = None
                                 ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyHost2Device`; return *self*."""
        return self.push_kernels(OpenClCopyHost2Device(
            varname, src, dst, dst_device_offset=dst_device_offset))

    def push_copy_device_to_host(self, varname: str, src: DeviceMemory,
                                 dst: np.ndarray,
                                 src_device_offset: int | None = None
                                 ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyDevice2Host`; return *self*."""
        return self.push_kernels(OpenClCopyDevice2Host(
            varname, src, dst, src_device_offset=src_device_offset))

    def push_copy_device_to_device(self, varname: str, src: DeviceMemory,
                                   dst: DeviceMemory,
                                   src_device_offset: int | None = None,
                                   dst_device_offset: int | None = None,
                                   byte_count: int | None = None
                                   ) -> OpenClKernelListLauncher:
        """Append a :class:`OpenClCopyDevice2Device`; return *self*."""
        return self.push_kernels(OpenClCopyDevice2Device(
            varname, src, dst, src_device_offset=src_device_offset,
            dst_device_offset=dst_device_offset, byte_count=byte_count))

    @property
    def parameters(self) -> Mapping[str, ParameterSpec]:
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
                 wait_for: WaitFor = None, **kwds: object) -> cl.Event | None:
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
            check_parameter(kwds[pname], ptype,
                             f"{self.name}: parameter {pname!r}")

        after = wait_list(wait_for)
        if not self._launchers:
            return cl.enqueue_marker(queue, wait_for=after)
        out_of_order = is_out_of_order(queue)
        evt = None
        for i, launcher in enumerate(self._launchers):
            params = {n: kwds[n] for n in launcher.parameters}
            evt = launcher(queue=queue,
                           wait_for=after if i == 0 or out_of_order else None,
                           **params)
            if out_of_order and evt is not None:
                after = [evt]
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
            kernel, gsize = entry
            lsize = None
        elif len(entry) == 3:
            kernel, gsize, lsize = entry
        else:
            raise InvalidArgumentError(f"{name}: expected (kernel, global_size[, "
                                       f"local_size]) tuples, got {entry!r}")
        result.push_kernels(OpenClKernelLauncher(
            kernel.function_name, kernel, None,
            default_global_work_size=gsize, default_local_work_size=lsize,
            default_queue=queue))
    return result


# vim: foldmethod=marker
