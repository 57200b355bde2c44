"""Loopy targets and the programs they bind.

.. autoclass:: LoopyTarget
.. autoclass:: LoopyPyOpenCLTarget
.. autoclass:: BoundPyOpenCLProgram
.. autoclass:: BoundPyOpenCLExecutable

.. rubric:: Memory of outputs and temporaries

Called without an *allocator*, programs, executables and launchers allocate
their outputs, global temporaries and transferred inputs from a
:class:`pyopencl.tools.MemoryPool` kept per command queue
(:func:`~pytato.target.loopy.run.queues.default_allocator`;
:func:`~pytato.target.loopy.run.queues.set_default_memory_pool` switches
the pools off; both can be imported from here too): see "Memory of outputs
and temporaries" in :mod:`pytato.target.loopy.run.queues`.

How a program generated without a device is scheduled for the device
of its first call, how repeated calls skip the argument checks and how
programs are called from several threads is told in
:mod:`~pytato.target.loopy.run.deferred_schedule`,
:mod:`~pytato.target.loopy.run.fast_call` and
:mod:`~pytato.target.loopy.run.call_locks`.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl

from pytato.lazy_imports import lazy_module
from pytato.target import BoundProgram, Target
from pytato.target.loopy.build.target_parameters import (
    loopy_target_key,
    loopy_target_parameters,
    out_of_line_math_enabled,
)
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.run.arguments import ArgumentSpec
from pytato.target.loopy.run.deferred_schedule import (
    _device_info,
    _schedule_for,
    _transform_lowered,
)
from pytato.target.loopy.run.dispatch import (
    _run,
    _to_device,
    _to_host,
    _without_offset,
)
from pytato.target.loopy.run.executors import (
    _make_executor,
)
from pytato.target.loopy.run.fast_call import (
    _RepeatedCalls,
)
from pytato.target.loopy.run.launched import (
    _all_on_host,
    _LaunchedAndProfiled,
)
from pytato.target.loopy.run.pickling import (
    executable_not_picklable,
    picklable_bound_arguments,
    rebuild_program,
)
from pytato.target.loopy.run.queues import (
    _allocator_for,
    _check_queue,
    _queue_info,
    default_allocator,
    set_default_memory_pool,
)
from pytato.target.loopy.run.split_executor import (
    SplitExecutor,
)
from pytato.target.loopy.run.stored_unit import (
    LazyUnitField,
    StoredUnit,
)


if TYPE_CHECKING:
    import loopy as lp
    from loopy.target.pyopencl_execution import PyOpenCLExecutor
else:
    lp = lazy_module("loopy")


__all__ = [
    "BoundPyOpenCLExecutable", "BoundPyOpenCLProgram", "LoopyPyOpenCLTarget",
    "LoopyTarget", "default_allocator", "set_default_memory_pool",
]




class LoopyTarget(Target):
    """A :mod:`loopy` code generation target.

    .. automethod:: get_loopy_target
    .. automethod:: bind_program
    """

    def get_loopy_target(self) -> lp.TargetBase:
        """Return the corresponding :mod:`loopy` target."""
        raise NotImplementedError

    def bind_program(self, program: lp.TranslationUnit,
                     bound_arguments: Mapping[str, Any]) -> BoundProgram:
        """Create a :class:`pytato.target.BoundProgram` for this target.

        :arg program: the :mod:`loopy` program.
        :arg bound_arguments: a mapping from argument names to data.
        """
        raise NotImplementedError


class LoopyPyOpenCLTarget(LoopyTarget):
    """A :mod:`pyopencl` code generation target.

    .. attribute:: device

        The :class:`pyopencl.Device` the code is meant for, or *None*. (It
        is recorded, but not passed to :class:`loopy.PyOpenCLTarget`, which
        deprecates device-specific targets.)
    """

    def __init__(self, device: cl.Device | None = None) -> None:
        self.device = device

    def _loopy_target_parameters(self) -> dict[str, Any]:
        # a pyopencl device, or a schedule's DeviceInfo
        gpu = (bool(self.device.type & cl.device_type.GPU)
               if isinstance(self.device, cl.Device)
               else bool(getattr(self.device, "is_gpu", False)))
        return loopy_target_parameters(gpu, out_of_line_math_enabled())

    def get_loopy_target(self) -> lp.PyOpenCLTarget:
        """A :class:`~pytato.target.loopy.build.cl_target.PytatoPyOpenCLTarget`:
        :class:`loopy.PyOpenCLTarget` whose kernels of many arguments
        declare their pointers without ``restrict`` (faster to compile;
        with a higher limit for a GPU :attr:`device`)."""
        # (loopy's target class: imported where a unit is generated)
        from pytato.target.loopy.build.cl_target import PytatoPyOpenCLTarget
        return PytatoPyOpenCLTarget(**self._loopy_target_parameters())

    def loopy_target_key(self) -> tuple[Any, ...]:
        """What the program store's keys name :meth:`get_loopy_target` by
        (see :func:`~pytato.target.loopy.build.target_parameters.loopy_target_key`;
        computed without :mod:`loopy`)."""
        return loopy_target_key(self._loopy_target_parameters())

    def bind_program(self, program: lp.TranslationUnit,
                     bound_arguments: Mapping[str, Any]) -> BoundPyOpenCLProgram:
        return BoundPyOpenCLProgram(program=program,
                                    bound_arguments=bound_arguments,
                                    target=self)

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self)
                and self.device == other.device)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.device))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(device={self.device!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # (a pyopencl device does not pickle: its description does, see
        # pytato.target.loopy.run.pickling)
        device = self.device
        if isinstance(device, cl.Device):
            device = DeviceInfo.of(device)
        return (type(self), (device,))


def _loopy_target_for(target: Target, info: DeviceInfo
                      ) -> LoopyPyOpenCLTarget | None:
    """*target* for the device *info*, whose
    :meth:`~LoopyPyOpenCLTarget.get_loopy_target` is the unit's target
    there (None for targets other than :class:`LoopyPyOpenCLTarget`: the
    unit keeps its own)."""
    if not isinstance(target, LoopyPyOpenCLTarget):
        return None
    device_target = copy.copy(target)
    device_target.device = info
    return device_target



@dataclass(frozen=True, repr=False)
class BoundPyOpenCLProgram(_LaunchedAndProfiled, BoundProgram):
    """A :mod:`loopy` translation unit with bound data, executed with
    :mod:`pyopencl`.

    .. attribute:: program

        The :class:`loopy.TranslationUnit`: scheduled for the device given
        to :func:`~pytato.generate_loopy`, or, for programs generated
        without a device (:attr:`schedule_per_device`), the lowered,
        unscheduled unit (with the iname names documented there), on which
        the user's :mod:`loopy` transformations work.

    .. attribute:: schedule_per_device

        Whether :attr:`program` is scheduled for each device at the first
        call there (see "Scheduling for the device that runs the program"
        in :mod:`pytato.target.loopy.run.deferred_schedule`).

    .. automethod:: __call__
    .. automethod:: copy
    .. automethod:: with_transformed_program
    .. automethod:: program_for
    .. automethod:: bind_to_context
    .. automethod:: launcher
    .. autoattribute:: statistics
    .. automethod:: clear_statistics
    .. automethod:: get_code
    .. automethod:: show_code
    .. autoattribute:: kernel
    .. autoattribute:: all_bound_args_on_host
    """

    program: lp.TranslationUnit
    bound_arguments: Mapping[str, Any]
    target: Target
    _processed_bound_args_cache: dict[cl.Context, Mapping[str, Any]] = field(
        default_factory=dict, compare=False, repr=False)
    #: The key of :attr:`program` in the persistent program store
    #: (:mod:`pytato.target.loopy.store.program_store`), under which the first
    #: call finds or saves the compiled program; None for programs not
    #: generated by :func:`~pytato.generate_loopy` as they are (e.g.
    #: transformed ones).
    store_key: str | None = field(default=None, compare=False, repr=False)
    _executor_cache: dict[cl.Context, PyOpenCLExecutor] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    # fast_call._RepeatedCalls by context address (each holds its executor,
    # hence its context: the address is not reused while it is kept)
    _repeated_calls: dict[int, _RepeatedCalls] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    # the one of _repeated_calls used last
    _recent_repeated_calls: _RepeatedCalls | None = field(
        default=None, compare=False, repr=False, init=False)
    schedule_per_device: bool = field(default=False, repr=False)
    #: the inames of the entrypoint as generated (before the user's
    #: transformations; the others are the user's)
    generated_inames: frozenset[str] | None = field(
        default=None, compare=False, repr=False)
    # deferred schedules: the scheduled unit (perhaps still pickled, see
    # stored_unit) and its store key by device description; the device
    # description of each context (None where its devices differ: an
    # executor per device); the executors of such contexts by (context,
    # description); the description of the device of the last call
    _schedules: dict[DeviceInfo,
                     tuple[lp.TranslationUnit | StoredUnit, str | None]] = \
        field(default_factory=dict, compare=False, repr=False, init=False)
    _context_info: dict[cl.Context, DeviceInfo | None] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    _info_by_context_address: dict[int, DeviceInfo | None] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    _device_executors: dict[tuple[cl.Context, DeviceInfo],
                             PyOpenCLExecutor] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    _last_info: DeviceInfo | None = field(
        default=None, compare=False, repr=False, init=False)
    # held while the caches above are filled (the first call on a context
    # or device schedules the program and builds its executor: threads
    # making it at once wait for the first)
    _cache_lock: threading.RLock = field(
        default_factory=threading.RLock, compare=False, repr=False,
        init=False)

    def __post_init__(self) -> None:
        if self.schedule_per_device and self.generated_inames is None:
            raw = _PROGRAM.raw(self)
            object.__setattr__(self, "generated_inames", (
                raw.facts.generated_inames if type(raw) is StoredUnit
                else frozenset(self.program.default_entrypoint.all_inames())))

    @property
    def kernel(self) -> lp.LoopKernel:
        """The entrypoint kernel of :attr:`program`."""
        return self.program.default_entrypoint

    @property
    def all_bound_args_on_host(self) -> bool:
        """Whether all bound arguments are host (:mod:`numpy`) arrays."""
        return _all_on_host(self.bound_arguments)

    def copy(self, *, program: lp.TranslationUnit | None = None,
             bound_arguments: Mapping[str, Any] | None = None,
             target: Target | None = None) -> BoundPyOpenCLProgram:
        """A copy of *self* with the given fields replaced (caches are not
        shared). A program whose schedule is deferred stays so: a new
        *program* is scheduled for each device at its first call there
        (mapping only the loops that the new unit leaves unmapped)."""
        raw = _PROGRAM.raw(self)
        same_program = program is None or program is raw
        return type(self)(
            program=raw if program is None else program,
            bound_arguments=(self.bound_arguments if bound_arguments is None
                             else bound_arguments),
            target=self.target if target is None else target,
            store_key=self.store_key if same_program else None,
            schedule_per_device=self.schedule_per_device,
            generated_inames=self.generated_inames)

    def with_transformed_program(
            self, f: Callable[[lp.TranslationUnit], lp.TranslationUnit]
            ) -> BoundPyOpenCLProgram:
        """A copy of *self* with the translation unit :attr:`program`
        transformed by *f*. For a program generated without a device, *f*
        transforms the lowered unit, and the default schedule then maps,
        for each device the copy runs on, only the loop nests that *f* left
        unmapped (see "Kernels the user mapped" in
        :mod:`pytato.target.loopy.schedule.default`): e.g.
        ``prog.with_transformed_program(lambda t: lp.split_iname(t,
        "_pt_out_dim0", 128, outer_tag="g.0", inner_tag="l.0"))``.
        The lowered unit that *f* gets has the inames of each instruction
        in one domain, as in upstream's kernels (loopy's prefetching and
        precomputation need that)."""
        if self.schedule_per_device:
            return self.copy(program=_transform_lowered(f, self.program))
        return self.copy(program=f(self.program))

    def _scheduled(self, info: DeviceInfo, *, to_run: bool = False
                   ) -> tuple[lp.TranslationUnit | StoredUnit, str | None]:
        """The unit scheduled for the device *info* (perhaps still
        pickled: a :class:`~pytato.target.loopy.run.stored_unit.StoredUnit`),
        and its store key (:attr:`program` itself for programs scheduled
        when generated); *to_run*: for an executor (see ``_schedule_for``)."""
        if not self.schedule_per_device:
            return _PROGRAM.raw(self), self.store_key
        entry = self._schedules.get(info)
        if entry is not None:
            return entry
        with self._cache_lock:
            entry = self._schedules.get(info)
            if entry is not None:
                return entry
            entry = self._schedules[info] = _schedule_for(
                _PROGRAM.raw(self), _loopy_target_for(self.target, info), info,
                self.generated_inames, self.store_key, to_run=to_run)
        return entry

    def _shown_info(self, device: cl.Device | None) -> DeviceInfo:
        """The device description of :meth:`get_code` for *device*."""
        if device is not None:
            return _device_info(device)
        if self._last_info is not None:
            return self._last_info
        return DeviceInfo.of(getattr(self.target, "device", None))

    def program_for(self, device: cl.Device | None = None
                    ) -> lp.TranslationUnit:
        """The translation unit that runs on *device* (a
        :class:`pyopencl.Device`): for a program generated without a
        device, :attr:`program` scheduled for *device* (by default for the
        device of the last call, else for the target's device, else with
        :meth:`~pytato.target.loopy.device.DeviceInfo.conservative`); for
        others :attr:`program`, which runs on every device."""
        if not self.schedule_per_device:
            return self.program
        info = self._shown_info(device)
        t_unit, key = self._scheduled(info)
        if type(t_unit) is StoredUnit:
            t_unit = self._schedules[info] = (t_unit.load(), key)
            return t_unit[0]
        return t_unit

    @cached_property
    def _arg_spec(self) -> ArgumentSpec:
        raw = _PROGRAM.raw(self)
        if type(raw) is StoredUnit:
            return raw.facts.arg_spec
        return ArgumentSpec.from_kernel(self.program.default_entrypoint)

    @cached_property
    def _no_numpy(self) -> bool:
        raw = _PROGRAM.raw(self)
        if type(raw) is StoredUnit:
            return raw.facts.no_numpy
        return bool(self.program.default_entrypoint.options.no_numpy)

    def _bound_on(self, queue: cl.CommandQueue) -> Mapping[str, Any]:
        ctx = queue.context
        result = self._processed_bound_args_cache.get(ctx)
        if result is None:
            with self._cache_lock:
                result = self._processed_bound_args_cache.get(ctx)
                if result is None:
                    result = {k: _to_device(queue, v)
                              for k, v in self.bound_arguments.items()}
                    self._processed_bound_args_cache[ctx] = result
        return result

    def _executor_on(self, queue: cl.CommandQueue) -> PyOpenCLExecutor:
        """The executor of the program for *queue*."""
        context = queue.context
        exe = self._executor_cache.get(context)
        if exe is None:
            return self._executor(context, queue)
        if self.schedule_per_device:
            object.__setattr__(self, "_last_info", self._context_info[context])
        return exe

    def _executor(self, context: cl.Context,
                  queue: cl.CommandQueue | None = None) -> PyOpenCLExecutor:
        """The executor of the program on *context*; for a deferred
        schedule in a context of devices of different kinds, the one for
        the device of *queue* (by default the context's first)."""
        exe = self._executor_cache.get(context)
        if exe is not None:
            return exe
        with self._cache_lock:
            return self._new_executor(context, queue)

    def _new_executor(self, context: cl.Context,
                      queue: cl.CommandQueue | None) -> PyOpenCLExecutor:
        """:meth:`_executor`, under the lock of the caches."""
        exe = self._executor_cache.get(context)
        if exe is not None:
            return exe
        if not self.schedule_per_device:
            exe = _make_executor(_PROGRAM.raw(self), context,
                                 store_key=self.store_key)
            self._executor_cache[context] = exe
            return exe
        missing = object()
        info: Any = self._context_info.get(context, missing)
        if info is missing:
            infos = {_device_info(d) for d in context.devices}
            info = infos.pop() if len(infos) == 1 else None
            self._context_info[context] = info
            self._info_by_context_address[context.int_ptr] = info
        if info is not None:
            t_unit, key = self._scheduled(info, to_run=True)
            exe = _make_executor(t_unit, context, store_key=key)
            self._executor_cache[context] = exe
        else:
            info = _device_info(context.devices[0] if queue is None
                                else queue.device)
            exe = self._device_executors.get((context, info))
            if exe is None:
                t_unit, key = self._scheduled(info, to_run=True)
                exe = self._device_executors[context, info] = _make_executor(
                    t_unit, context, store_key=key)
        object.__setattr__(self, "_last_info", info)
        return exe

    def __call__(self, queue: cl.CommandQueue, allocator: Any = None,
                 wait_for: Sequence[cl.Event | None] | None = None,
                 out_host: bool | None = None, **kwargs: Any) -> Any:
        """Run the program on *queue* with the inputs in *kwargs*.

        :arg allocator: allocates the outputs, global temporaries and
            inputs transferred from the host: by default (*None*) the memory
            pool of *queue* (see :func:`default_allocator`); *False* for
            fresh :class:`pyopencl.Buffer`\\ s; else a callable of a size in
            bytes (e.g. a :class:`pyopencl.tools.MemoryPool`).
        :arg out_host: whether to return :mod:`numpy` arrays. By default,
            outputs are numpy arrays if any array input is one (if no array
            is passed: if any bound data is one), else
            :class:`pyopencl.array.Array`\\ s.
        :returns: ``(event, result)``: *result* is a tuple of the outputs
            (the one array of an array result), or a dict by output name
            (when the program's options set ``return_dict``).

        Calls that repeat the arguments of an earlier call skip their
        checks (see "Repeated calls" in
        :mod:`pytato.target.loopy.run.fast_call`).
        """
        repeated = self._recent_repeated_calls
        if repeated is not None:
            result = repeated(queue, allocator, wait_for, out_host, kwargs)
            if result is not None:
                return result
            if len(self._repeated_calls) > 1:
                # a queue of another context?
                other = self._repeated_calls.get(_queue_info(queue)[2])
                if other is not None and other is not repeated:
                    result = other(queue, allocator, wait_for, out_host,
                                   kwargs)
                    if result is not None:
                        object.__setattr__(
                            self, "_recent_repeated_calls", other)
                        if self.schedule_per_device:
                            object.__setattr__(
                                self, "_last_info",
                                self._info_by_context_address.get(
                                    other.context))
                        return result
        _check_queue(queue)
        arrays, values = self._arg_spec.process(kwargs, self.bound_arguments)
        self._arg_spec.check_device(queue, arrays, values)
        default_out_host = self._default_out_host(arrays)
        if out_host is None:
            out_host = default_out_host
        context = queue.context
        executor = self._executor_on(queue)
        bound = self._bound_on(queue)
        allocator = _allocator_for(queue, allocator)
        if self._no_numpy:
            arrays = {k: _to_device(queue, v, allocator)
                      for k, v in arrays.items()}
            evt, out = _run(executor, queue, allocator=allocator,
                            wait_for=wait_for, **arrays, **bound, **values)
            if out_host:
                out = _to_host(queue, out)
            return evt, out
        result = _run(executor, queue, allocator=allocator, wait_for=wait_for,
                      out_host=out_host, **{
                          k: _without_offset(queue, v)
                          for k, v in arrays.items()}, **bound, **values)
        if not self.schedule_per_device \
                or self._context_info.get(context) is not None:
            # (not in contexts of devices of different kinds: the repeated
            # calls are told apart by context only)
            with self._cache_lock:
                self._repeated_calls_on(context, executor, bound).learn(
                    kwargs, arrays, values, default_out_host)
        return result

    def _default_out_host(self, arrays: Mapping[str, Any]) -> bool:
        """Whether a call with the (checked) array arguments *arrays*
        returns numpy arrays by default (see :meth:`__call__`)."""
        if arrays:
            return any(isinstance(v, np.ndarray) for v in arrays.values())
        # (host scalars are bound for data passed by value)
        return (not self.bound_arguments or any(
            isinstance(v, (np.ndarray, np.generic))
            for v in self.bound_arguments.values()))

    def _repeated_calls_on(self, context: cl.Context,
                           executor: PyOpenCLExecutor,
                           bound: Mapping[str, Any]) -> _RepeatedCalls:
        """The ``fast_call._RepeatedCalls`` of the program on *context*
        (created on first use)."""
        key = context.int_ptr
        repeated = self._repeated_calls.get(key)
        if repeated is None:
            repeated = self._repeated_calls[key] = (
                _RepeatedCalls(executor, bound, key))
        object.__setattr__(self, "_recent_repeated_calls", repeated)
        return repeated

    def _launched_executor(self, queue: cl.CommandQueue) -> PyOpenCLExecutor:
        return self._executor_on(queue)

    def _launched_bound(self, queue: cl.CommandQueue) -> Mapping[str, Any]:
        return self._bound_on(queue)

    def _executors(self) -> list[PyOpenCLExecutor]:
        return [*self._executor_cache.values(),
                *self._device_executors.values()]

    def bind_to_context(self, context: cl.Context,
                        allocator: Callable[[int], Any] | None = None
                        ) -> BoundPyOpenCLExecutable:
        """An executable bound to *context*, holding loopy's executor and
        the bound data on the device. A program generated without a device
        is scheduled for the first device of *context* (its kernels run on
        every device of the context); the executable keeps the lowered unit
        for :meth:`BoundPyOpenCLExecutable.with_transformed_translation_unit`.
        """
        queue = cl.CommandQueue(context)
        bound = {k: _to_device(queue, v, allocator)
                 for k, v in self.bound_arguments.items()}
        queue.finish()
        if not self.schedule_per_device:
            return BoundPyOpenCLExecutable(
                program=_make_executor(_PROGRAM.raw(self), context,
                                       store_key=self.store_key),
                bound_arguments=bound,
                target=self.target, cl_context=context)
        info = _device_info(context.devices[0])
        t_unit, key = self._scheduled(info, to_run=True)
        return BoundPyOpenCLExecutable(
            program=_make_executor(t_unit, context, store_key=key),
            bound_arguments=bound, target=self.target, cl_context=context,
            lowered_program=_PROGRAM.raw(self),
            generated_inames=self.generated_inames, device_info=info)

    def get_code(self, device: cl.Device | None = None) -> str:
        """The generated OpenCL source (what :func:`loopy.generate_code_v2`
        gives; from the program store where the program was compiled
        before) of :meth:`program_for` *device*: for a program generated
        without a device, the code for *device* (a
        :class:`pyopencl.Device`), by default for the device the program
        last ran on, else for the target's device, else for the
        conservative schedule
        (:meth:`~pytato.target.loopy.device.DeviceInfo.conservative`).
        Programs scheduled when generated have one code for all devices."""
        # (imports loopy: see pytato.lazy_imports)
        from pytato.target.loopy.run.executor import device_code
        if not self.schedule_per_device:
            return device_code(_PROGRAM.raw(self), self.store_key)
        return device_code(*self._scheduled(self._shown_info(device)))

    def show_code(self, device: cl.Device | None = None) -> str:
        """Print the generated OpenCL source of :meth:`get_code` for
        *device* (and return it)."""
        code = self.get_code(device)
        print(code)
        return code

    def __str__(self) -> str:
        return self.get_code()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the program without its device state (see
        :mod:`pytato.target.loopy.run.pickling`): the unpickled program
        schedules and builds again at its first call."""
        return (rebuild_program, (type(self), {
            "program": _PROGRAM.raw(self),
            "bound_arguments": picklable_bound_arguments(
                self.bound_arguments),
            "target": self.target,
            "store_key": self.store_key,
            "schedule_per_device": self.schedule_per_device,
            "generated_inames": self.generated_inames}))


# (a program from the store holds its lowered unit pickled until it is read)
_PROGRAM = LazyUnitField("program")
BoundPyOpenCLProgram.program = _PROGRAM  # type: ignore[assignment]


@dataclass(frozen=True, repr=False)
class BoundPyOpenCLExecutable(_LaunchedAndProfiled, BoundProgram):
    """A program bound to a :class:`pyopencl.Context`: it holds loopy's
    executor (:attr:`program`) and the bound data already on the device, so
    calls do no cache lookups. Create it with
    :meth:`BoundPyOpenCLProgram.bind_to_context`.

    .. attribute:: lowered_program

        For executables of programs generated without a device: the
        lowered (unscheduled) :class:`loopy.TranslationUnit`, transformed
        by :meth:`with_transformed_translation_unit` (else None).

    .. attribute:: device_info

        The :class:`~pytato.target.loopy.device.DeviceInfo` that
        :attr:`lowered_program` is scheduled for (the context's first
        device), or None.

    .. automethod:: __call__
    .. automethod:: launcher
    .. autoattribute:: statistics
    .. automethod:: clear_statistics
    .. automethod:: with_transformed_translation_unit
    .. autoattribute:: kernel
    .. autoattribute:: all_bound_args_on_host
    """

    program: PyOpenCLExecutor
    bound_arguments: Mapping[str, Any]
    target: Target
    cl_context: cl.Context
    lowered_program: lp.TranslationUnit | None = field(
        default=None, compare=False, repr=False)
    generated_inames: frozenset[str] | None = field(
        default=None, compare=False, repr=False)
    device_info: DeviceInfo | None = field(
        default=None, compare=False, repr=False)

    @property
    def kernel(self) -> lp.LoopKernel:
        """The entrypoint kernel of the executor's translation unit."""
        return self.program.t_unit.default_entrypoint


    @property
    def all_bound_args_on_host(self) -> bool:
        """Whether all bound arguments are host (:mod:`numpy`) arrays
        (false when there are device arrays: an executable holds its bound
        data on the device)."""
        return _all_on_host(self.bound_arguments)

    def __post_init__(self) -> None:
        if isinstance(self.program, SplitExecutor):
            # (the facts of its kernel: the executor of a unit from the
            # store may have no more)
            facts = self.program.facts
            arg_spec, no_numpy = facts.arg_spec, facts.options.no_numpy
        else:
            knl = self.kernel
            arg_spec = ArgumentSpec.from_kernel(knl)
            no_numpy = bool(knl.options.no_numpy)
        object.__setattr__(self, "_arg_spec", arg_spec)
        object.__setattr__(self, "_no_numpy", no_numpy)
        repeated = _RepeatedCalls(
            self.program, self.bound_arguments, self.cl_context.int_ptr)
        object.__setattr__(self, "_repeated", repeated)
        # the bound method: calling the object costs a lookup more
        object.__setattr__(self, "_repeated_call", repeated.__call__)

    def __call__(self, queue: cl.CommandQueue, allocator: Any = None,
                 wait_for: Sequence[cl.Event | None] | None = None,
                 **kwargs: Any) -> Any:
        """Run the program on *queue* (of :attr:`cl_context`); returns
        ``(event, result)`` as :meth:`BoundPyOpenCLProgram.__call__`
        (*allocator* as there: by default the memory pool of *queue*).

        Calls that repeat the arguments of an earlier call skip their
        checks (see "Repeated calls" in
        :mod:`pytato.target.loopy.run.fast_call`)."""
        result = self._repeated_call(  # type: ignore[attr-defined]
            queue, allocator, wait_for, None, kwargs)
        if result is not None:
            return result
        _check_queue(queue)
        if queue.context != self.cl_context:
            raise ValueError("the queue's context is not the one the "
                             "executable is bound to")
        arrays, values = self._arg_spec.process(  # type: ignore[attr-defined]
            kwargs, self.bound_arguments)
        self._arg_spec.check_device(  # type: ignore[attr-defined]
            queue, arrays, values)
        allocator = _allocator_for(queue, allocator)
        # views at offsets are copied; with no_numpy (whose executor takes
        # no numpy arrays), numpy arrays go to the device
        convert = (_to_device if self._no_numpy  # type: ignore[attr-defined]
                   else lambda q, v, _: _without_offset(q, v))
        result = _run(self.program, queue, allocator=allocator,
                      wait_for=wait_for, **{
                          k: convert(queue, v, allocator)
                          for k, v in arrays.items()},
                      **self.bound_arguments, **values)
        self._repeated.learn(kwargs, arrays, values)  # type: ignore[attr-defined]
        return result

    def _launched_executor(self, queue: cl.CommandQueue) -> PyOpenCLExecutor:
        if queue.context != self.cl_context:
            raise ValueError("the queue's context is not the one the "
                             "executable is bound to")
        return self.program

    def _launched_bound(self, queue: cl.CommandQueue) -> Mapping[str, Any]:
        return self.bound_arguments

    def _executors(self) -> list[PyOpenCLExecutor]:
        return [self.program]

    def __reduce__(self) -> Any:
        """Refused: an executable is bound to a context (see
        :mod:`pytato.target.loopy.run.pickling`)."""
        return executable_not_picklable(self)

    def with_transformed_translation_unit(
            self, f: Callable[[lp.TranslationUnit], lp.TranslationUnit]
            ) -> BoundPyOpenCLExecutable:
        """A copy of *self* running the translation unit transformed by
        *f*. For executables of programs generated without a device, *f*
        transforms the lowered unit (:attr:`lowered_program`, with the
        iname names documented in :func:`~pytato.generate_loopy`), and the
        default schedule for :attr:`device_info` then maps only the loop
        nests that *f* left unmapped (see "Kernels the user mapped" in
        :mod:`pytato.target.loopy.schedule.default`); otherwise *f* transforms the
        scheduled unit, which runs as *f* returns it."""
        if self.lowered_program is None or self.device_info is None:
            t_unit = f(self.program.t_unit)
            return dataclasses.replace(
                self, program=_make_executor(t_unit, self.cl_context))
        lowered = _transform_lowered(f, self.lowered_program)
        t_unit, _ = _schedule_for(lowered,
                                  _loopy_target_for(self.target, self.device_info),
                                  self.device_info,
                                  self.generated_inames, None, to_run=True)
        return dataclasses.replace(
            self, program=_make_executor(t_unit, self.cl_context),
            lowered_program=lowered)


BoundPyOpenCLExecutable.lowered_program = LazyUnitField(  # type: ignore[assignment]
    "lowered_program")
