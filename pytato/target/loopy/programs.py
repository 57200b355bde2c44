"""Loopy targets and the programs they bind.

.. autoclass:: LoopyTarget
.. autoclass:: LoopyPyOpenCLTarget
.. autoclass:: BoundPyOpenCLProgram
.. autoclass:: BoundPyOpenCLExecutable

.. rubric:: Memory of outputs and temporaries

Called without an *allocator*, programs, executables and launchers allocate
their outputs, global temporaries and transferred inputs from a
:class:`pyopencl.tools.MemoryPool` kept per command queue (see
:func:`default_allocator`): a time-stepper calling the same program again
and again then reuses the memory of arrays it has dropped instead of
creating new :class:`pyopencl.Buffer`\\ s on every call. Arrays returned to
the user keep their memory until they are garbage collected; only then is
it handed to later calls.

The pool is per queue, not per context: its memory is reused only by later
commands of the same in-order queue, which run after the kernels that used
it. (A pool shared by the queues of a context could hand memory that a
kernel on one queue still writes to a kernel on another; pyopencl's
:class:`~pyopencl.tools.ImmediateAllocator` is also bound to one queue.)
Out-of-order queues get no pool. As with any pool, an array used on another
queue must be synchronized with before it is dropped.

To opt out, pass ``allocator=False`` to a call (fresh buffers, as
``allocator=None`` gave before pools were the default), or switch the pools
off for all calls with :func:`set_default_memory_pool`. Any other
*allocator* (a callable of a size in bytes, as for :mod:`pyopencl.array`)
is used as given.

Outputs are new arrays on every call. Global temporaries allocated from
the default pool of an in-order queue are kept by the program (by its
executor on the context) after the call, and used again by its next call
on the same queue with the same size parameters: on an in-order queue
that call runs after the kernels of this one. They go back to the pool
when a call on another queue, with other sizes or with another allocator
takes their place, or with the executor. With any other allocator, and
on out-of-order queues, each call allocates its temporaries and releases
them once its kernels are enqueued. (A program, or an executable, must
not be called from several threads at once: the calls share the prebuilt
kernels of the program and their arguments.)

.. autofunction:: default_allocator
.. autofunction:: set_default_memory_pool

.. rubric:: Repeated calls

Each call checks its arguments (see :mod:`pytato.target.loopy.arguments`)
unless they repeat those of one of the last few calls that passed the
checks on the same context: the same names, the same types (exactly
:class:`numpy.ndarray` or :class:`pyopencl.array.Array`), shapes, dtypes
and strides of the arrays, and the same Python :class:`int`\\ s as size
parameters. Such a call passes the same checks, with the same size
parameters, and runs straight through the cached launch plan of the
program (prebuilt kernels, precomputed sizes). Any other call is checked,
so a wrong argument raises the same error after as before; calls on
queues with profiling enabled, or with kernel tracing or profiling
switched on in the environment, are checked and run as before as well.
Such calls wait for the events of their input arrays (as loopy's invoker
does), but for those that had completed by the previous call with the
same input events (kept until the next call).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from pytato.target import BoundProgram, Target
from pytato.target.loopy.arguments import ArgumentSpec


if TYPE_CHECKING:
    import loopy as lp
    import pyopencl as cl


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

    def get_loopy_target(self) -> lp.PyOpenCLTarget:
        """A :class:`~pytato.target.loopy.cl_target.PytatoPyOpenCLTarget`:
        :class:`loopy.PyOpenCLTarget` whose kernels of many arguments
        declare their pointers without ``restrict`` (faster to compile;
        with a higher limit for a GPU :attr:`device`)."""
        import pyopencl as cl

        from pytato.target.loopy.cl_target import (
            GPU_MAX_RESTRICT_ARGUMENTS,
            MAX_RESTRICT_ARGUMENTS,
            PytatoPyOpenCLTarget,
        )
        # a pyopencl device, or a schedule's DeviceInfo
        gpu = (bool(self.device.type & cl.device_type.GPU)
               if isinstance(self.device, cl.Device)
               else bool(getattr(self.device, "is_gpu", False)))
        return PytatoPyOpenCLTarget(max_restrict_arguments=(
            GPU_MAX_RESTRICT_ARGUMENTS if gpu else MAX_RESTRICT_ARGUMENTS))

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


_logger = logging.getLogger("pytato.target.loopy")


# {{{ default allocator: a memory pool per queue

# the pool lives in an attribute of the queue object (command queues cannot
# be weakly referenced; the pool's allocator holds the OpenCL queue, not the
# Python object, so the pool goes away with the queue object)
_POOL_ATTR = "_pytato_default_memory_pool"
_USE_DEFAULT_POOL = True


def set_default_memory_pool(enabled: bool) -> bool:
    """Switch the default memory pools (see :func:`default_allocator`) on or
    off for all later calls that pass no *allocator*; with *enabled* false,
    such calls allocate fresh :class:`pyopencl.Buffer`\\ s. Returns the
    previous setting. Pools already created are kept (with their memory)
    until their queues are garbage collected; call
    ``default_allocator(queue).free_held()`` to release their unused
    memory earlier."""
    global _USE_DEFAULT_POOL
    previous = _USE_DEFAULT_POOL
    _USE_DEFAULT_POOL = bool(enabled)
    return previous


def default_allocator(queue: cl.CommandQueue) -> Any:
    """The :class:`pyopencl.tools.MemoryPool` that programs use on *queue*
    when called without an *allocator* (created on first use, over a
    :class:`pyopencl.tools.ImmediateAllocator` of *queue*, and kept as long
    as the *queue* object), or *None* for out-of-order queues (and queue
    objects that cannot hold it). Its ``held_blocks``, ``active_blocks``
    and ``free_held()`` inspect and release the pooled memory. Ignores
    :func:`set_default_memory_pool`."""
    try:
        return getattr(queue, _POOL_ATTR)
    except AttributeError:
        pass
    import pyopencl as cl
    try:
        setattr(queue, _POOL_ATTR, None)
    except (AttributeError, TypeError):
        return None
    pool = None
    if not (queue.properties
            & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE):
        from pyopencl.tools import ImmediateAllocator, MemoryPool
        pool = MemoryPool(ImmediateAllocator(queue))
    setattr(queue, _POOL_ATTR, pool)
    return pool


def _check_queue(queue: Any) -> None:
    """Raise :class:`~pytato.diagnostic.InvalidArgumentTypeError` naming the
    argument ``queue`` unless it is (or, duck-typed, looks like: has a
    ``context``) a :class:`pyopencl.CommandQueue` (a common slip: passing
    the context)."""
    import pyopencl as cl
    if not isinstance(queue, cl.CommandQueue) and (
            isinstance(queue, cl.Context) or not hasattr(queue, "context")):
        from pytato.diagnostic import InvalidArgumentTypeError
        hint = (" (a pyopencl.Context was given: create a queue with "
                "pyopencl.CommandQueue(context))"
                if isinstance(queue, cl.Context) else "")
        raise InvalidArgumentTypeError(
            "argument 'queue': expected a pyopencl.CommandQueue, got "
            f"{type(queue).__name__}{hint}")


def _allocator_for(queue: cl.CommandQueue, allocator: Any) -> Any:
    """The allocator a call with *allocator* uses: *None* selects the
    default pool, *False* fresh buffers (loopy's *None*)."""
    if allocator is None:
        if not _USE_DEFAULT_POOL:
            return None
        try:
            return getattr(queue, _POOL_ATTR)
        except AttributeError:
            return default_allocator(queue)
    if allocator is False:
        return None
    return allocator

# }}}


_WARMED_EXECUTORS: weakref.WeakSet[Any] = weakref.WeakSet()
_LAUNCH_MODULE: list[Any] = []


def _launch_module() -> Any:
    """:mod:`pytato.target.loopy.launch` (imported on first use: an import
    statement costs about a microsecond per call)."""
    if not _LAUNCH_MODULE:
        from pytato.target.loopy import launch
        _LAUNCH_MODULE.append(launch)
    return _LAUNCH_MODULE[0]


def _make_executor(t_unit: lp.TranslationUnit, context: cl.Context,
                   store_key: str | None = None) -> Any:
    """See :func:`pytato.target.loopy.executor.make_executor` (imported
    on first use: it imports :mod:`loopy`)."""
    from pytato.target.loopy.executor import make_executor as make
    return make(t_unit, context, store_key=store_key)


def _run(executor: Any, queue: cl.CommandQueue, **kwargs: Any) -> Any:
    """Call loopy's *executor*. On its first call (when loopy generates its
    invoker), silence loopy's warnings about size parameters it cannot
    find from array shapes: the argument checks pass all of them.

    On queues with profiling enabled (or with kernel tracing switched on),
    the kernels are enqueued one by one and their events kept (see
    :mod:`pytato.target.loopy.launch`). Later calls of programs with
    straight-line host code run through a cached plan of prebuilt kernels
    and argument lists (``launch._FastCall``, the same results as loopy's
    invoker at a fraction of its cost); calls it does not handle (e.g.
    device arrays with offsets, zero-size outputs) go to loopy's
    executor."""
    launch = _launch_module()
    if (launch.wants_instrumented_run(queue)
            and launch.supports_instrumented_run(executor)):
        return launch.run_instrumented(executor, queue, **kwargs)
    fast = launch._FAST_CALLS.get(executor, False)
    if fast is False and executor in _WARMED_EXECUTORS:
        fast = launch._fast_call(executor)
    if fast is not False:
        if fast is not None:
            result = fast(queue, kwargs)
            if result is not None:
                return result
        return executor(queue, **kwargs)
    from loopy.diagnostic import ParameterFinderWarning

    from pytato.codegen import PhaseTimer
    with warnings.catch_warnings(), PhaseTimer(
            _logger, "first call (loopy preprocessing, code generation, "
            "OpenCL build)"):
        warnings.simplefilter("ignore", ParameterFinderWarning)
        result = executor(queue, **kwargs)
    _WARMED_EXECUTORS.add(executor)
    return result


def _to_device(queue: cl.CommandQueue, value: Any, allocator: Any = None) -> Any:
    if isinstance(value, np.ndarray):
        import pyopencl.array as cl_array
        return cl_array.to_device(queue, value, allocator=allocator)
    return value


def _to_host(queue: cl.CommandQueue, out: Any) -> Any:
    def get(x: Any) -> Any:
        return x.get(queue=queue) if hasattr(x, "get") and not isinstance(
            x, np.ndarray) else x
    if isinstance(out, Mapping):
        return {k: get(v) for k, v in out.items()}
    return tuple(get(v) for v in out)


@dataclass(frozen=True, repr=False)
class BoundPyOpenCLProgram(BoundProgram):
    """A :mod:`loopy` translation unit with bound data, executed with
    :mod:`pyopencl`.

    .. attribute:: program

        The :class:`loopy.TranslationUnit`.

    .. automethod:: __call__
    .. automethod:: copy
    .. automethod:: with_transformed_program
    .. automethod:: bind_to_context
    .. automethod:: launcher
    .. autoattribute:: statistics
    .. automethod:: clear_statistics
    .. automethod:: show_code
    """

    program: lp.TranslationUnit
    bound_arguments: Mapping[str, Any]
    target: Target
    #: The key of :attr:`program` in the persistent program store
    #: (:mod:`pytato.target.loopy.program_store`), under which the first
    #: call finds or saves the compiled program; None for programs not
    #: generated by :func:`~pytato.generate_loopy` as they are (e.g.
    #: transformed ones).
    store_key: str | None = field(default=None, compare=False, repr=False)
    _processed_bound_args_cache: dict[cl.Context, Mapping[str, Any]] = field(
        default_factory=dict, compare=False, repr=False)
    _executor_cache: dict[cl.Context, Any] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    # launch._RepeatedCalls by context address (each holds its executor,
    # hence its context: the address is not reused while it is kept)
    _repeated_calls: dict[int, Any] = field(
        default_factory=dict, compare=False, repr=False, init=False)
    # the one of _repeated_calls used last
    _recent_repeated_calls: Any = field(
        default=None, compare=False, repr=False, init=False)

    def copy(self, *, program: lp.TranslationUnit | None = None,
             bound_arguments: Mapping[str, Any] | None = None,
             target: Target | None = None) -> BoundPyOpenCLProgram:
        """A copy of *self* with the given fields replaced (caches are not
        shared)."""
        same_program = program is None or program is self.program
        return type(self)(
            program=self.program if program is None else program,
            bound_arguments=(self.bound_arguments if bound_arguments is None
                             else bound_arguments),
            target=self.target if target is None else target,
            store_key=self.store_key if same_program else None)

    def with_transformed_program(
            self, f: Callable[[lp.TranslationUnit], lp.TranslationUnit]
            ) -> BoundPyOpenCLProgram:
        """A copy of *self* with the translation unit transformed by *f*."""
        return self.copy(program=f(self.program))

    @cached_property
    def _arg_spec(self) -> ArgumentSpec:
        return ArgumentSpec.from_kernel(self.program.default_entrypoint)

    @cached_property
    def _no_numpy(self) -> bool:
        return bool(self.program.default_entrypoint.options.no_numpy)

    def _bound_on(self, queue: cl.CommandQueue) -> Mapping[str, Any]:
        ctx = queue.context
        result = self._processed_bound_args_cache.get(ctx)
        if result is None:
            result = {k: _to_device(queue, v)
                      for k, v in self.bound_arguments.items()}
            self._processed_bound_args_cache[ctx] = result
        return result

    def _executor(self, context: cl.Context) -> Any:
        exe = self._executor_cache.get(context)
        if exe is None:
            exe = _make_executor(self.program, context, self.store_key)
            self._executor_cache[context] = exe
        return exe

    def __call__(self, queue: cl.CommandQueue, allocator: Any = None,
                 wait_for: Any = None, out_host: bool | None = None,
                 **kwargs: Any) -> Any:
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
        checks (see "Repeated calls" above).
        """
        repeated = self._recent_repeated_calls
        if repeated is not None:
            result = repeated(queue, allocator, wait_for, out_host, kwargs)
            if result is not None:
                return result
            if len(self._repeated_calls) > 1:
                # a queue of another context?
                other = self._repeated_calls.get(
                    _launch_module()._queue_info(queue)[2])
                if other is not None and other is not repeated:
                    result = other(queue, allocator, wait_for, out_host,
                                   kwargs)
                    if result is not None:
                        object.__setattr__(
                            self, "_recent_repeated_calls", other)
                        return result
        _check_queue(queue)
        arrays, values = self._arg_spec.process(kwargs, self.bound_arguments)
        default_out_host = self._default_out_host(arrays)
        if out_host is None:
            out_host = default_out_host
        context = queue.context
        executor = self._executor(context)
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
                      out_host=out_host, **arrays, **bound, **values)
        self._repeated_calls_on(context, executor, bound).learn(
            kwargs, arrays, values, default_out_host)
        return result

    def _default_out_host(self, arrays: Mapping[str, Any]) -> bool:
        """Whether a call with the (checked) array arguments *arrays*
        returns numpy arrays by default (see :meth:`__call__`)."""
        if arrays:
            return any(isinstance(v, np.ndarray) for v in arrays.values())
        return (not self.bound_arguments or any(
            isinstance(v, np.ndarray) for v in self.bound_arguments.values()))

    def _repeated_calls_on(self, context: cl.Context, executor: Any,
                           bound: Mapping[str, Any]) -> Any:
        """The ``launch._RepeatedCalls`` of the program on *context*
        (created on first use)."""
        key = context.int_ptr
        repeated = self._repeated_calls.get(key)
        if repeated is None:
            repeated = self._repeated_calls[key] = (
                _launch_module()._RepeatedCalls(executor, bound, key))
        object.__setattr__(self, "_recent_repeated_calls", repeated)
        return repeated

    def launcher(self, queue: cl.CommandQueue, *, per_call: Any = (),
                 name: str | None = None, allocator: Any = None,
                 **inputs: Any) -> Any:
        """A :class:`~pytato.target.loopy.launch.ProgramLauncher` of the
        program's kernels on *queue*, with all arguments set once (see
        :func:`pytato.target.loopy.launch.make_program_launcher`).
        *allocator* is as for :meth:`__call__`."""
        from pytato.target.loopy.launch import make_program_launcher
        return make_program_launcher(
            self._executor(queue.context), queue, self._arg_spec,
            self._bound_on(queue), inputs, per_call=per_call, name=name,
            allocator=_allocator_for(queue, allocator))

    @property
    def statistics(self) -> Any:
        """Per-kernel execution time statistics of the calls on queues with
        profiling enabled (a
        :class:`~pytato.target.loopy.launcher.LauncherStatistics`; finished
        events are consumed)."""
        from pytato.target.loopy.launch import executor_statistics
        from pytato.target.loopy.launcher import LauncherStatistics
        result = LauncherStatistics()
        for executor in list(self._executor_cache.values()):
            result += executor_statistics(executor).statistics
        return result

    def clear_statistics(self) -> None:
        """Forget the profiling statistics and events."""
        from pytato.target.loopy.launch import executor_statistics
        for executor in list(self._executor_cache.values()):
            executor_statistics(executor).clear()

    def bind_to_context(self, context: cl.Context,
                        allocator: Callable[[int], Any] | None = None
                        ) -> BoundPyOpenCLExecutable:
        """An executable bound to *context*, holding loopy's executor and
        the bound data on the device."""
        import pyopencl as cl
        queue = cl.CommandQueue(context)
        bound = {k: _to_device(queue, v, allocator)
                 for k, v in self.bound_arguments.items()}
        queue.finish()
        return BoundPyOpenCLExecutable(
            program=_make_executor(self.program, context, self.store_key),
            bound_arguments=bound,
            target=self.target, cl_context=context)

    def get_code(self) -> str:
        """The generated OpenCL source (what :func:`loopy.generate_code_v2`
        gives; from the program store where the program was compiled
        before)."""
        from pytato.target.loopy.executor import device_code
        return device_code(self.program, self.store_key)

    def show_code(self) -> str:
        """Print the generated OpenCL source (and return it)."""
        code = self.get_code()
        print(code)
        return code

    def __str__(self) -> str:
        return self.get_code()


@dataclass(frozen=True, repr=False)
class BoundPyOpenCLExecutable(BoundProgram):
    """A program bound to a :class:`pyopencl.Context`: it holds loopy's
    executor (:attr:`program`) and the bound data already on the device, so
    calls do no cache lookups. Create it with
    :meth:`BoundPyOpenCLProgram.bind_to_context`.

    .. automethod:: __call__
    .. automethod:: launcher
    .. autoattribute:: statistics
    .. automethod:: clear_statistics
    .. automethod:: with_transformed_translation_unit
    """

    program: Any
    bound_arguments: Mapping[str, Any]
    target: Target
    cl_context: cl.Context

    def __post_init__(self) -> None:
        object.__setattr__(self, "_arg_spec", ArgumentSpec.from_kernel(
            self.program.t_unit.default_entrypoint))
        repeated = _launch_module()._RepeatedCalls(
            self.program, self.bound_arguments, self.cl_context.int_ptr)
        object.__setattr__(self, "_repeated", repeated)
        # the bound method: calling the object costs a lookup more
        object.__setattr__(self, "_repeated_call", repeated.__call__)

    def __call__(self, queue: cl.CommandQueue, allocator: Any = None,
                 wait_for: Any = None, **kwargs: Any) -> Any:
        """Run the program on *queue* (of :attr:`cl_context`); returns
        ``(event, result)`` as :meth:`BoundPyOpenCLProgram.__call__`
        (*allocator* as there: by default the memory pool of *queue*).

        Calls that repeat the arguments of an earlier call skip their
        checks (see "Repeated calls" in
        :mod:`pytato.target.loopy.programs`)."""
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
        result = _run(self.program, queue,
                      allocator=_allocator_for(queue, allocator),
                      wait_for=wait_for, **arrays, **self.bound_arguments,
                      **values)
        self._repeated.learn(kwargs, arrays, values)  # type: ignore[attr-defined]
        return result

    def launcher(self, queue: cl.CommandQueue, *, per_call: Any = (),
                 name: str | None = None, allocator: Any = None,
                 **inputs: Any) -> Any:
        """A :class:`~pytato.target.loopy.launch.ProgramLauncher` of the
        kernels on *queue* (of :attr:`cl_context`), with all arguments set
        once (see :func:`pytato.target.loopy.launch.make_program_launcher`;
        *allocator* as for :meth:`BoundPyOpenCLProgram.__call__`).
        """
        if queue.context != self.cl_context:
            raise ValueError("the queue's context is not the one the "
                             "executable is bound to")
        from pytato.target.loopy.launch import make_program_launcher
        return make_program_launcher(
            self.program, queue,
            self._arg_spec,  # type: ignore[attr-defined]
            self.bound_arguments, inputs, per_call=per_call, name=name,
            allocator=_allocator_for(queue, allocator))

    @property
    def statistics(self) -> Any:
        """Per-kernel execution time statistics of the calls on queues with
        profiling enabled (a
        :class:`~pytato.target.loopy.launcher.LauncherStatistics`; finished
        events are consumed)."""
        from pytato.target.loopy.launch import executor_statistics
        return executor_statistics(self.program).statistics

    def clear_statistics(self) -> None:
        """Forget the profiling statistics and events."""
        from pytato.target.loopy.launch import executor_statistics
        executor_statistics(self.program).clear()

    def with_transformed_translation_unit(
            self, f: Callable[[lp.TranslationUnit], lp.TranslationUnit]
            ) -> BoundPyOpenCLExecutable:
        """A copy of *self* running the translation unit transformed by
        *f*."""
        t_unit = f(self.program.t_unit)
        return dataclasses.replace(
            self, program=_make_executor(t_unit, self.cl_context))
