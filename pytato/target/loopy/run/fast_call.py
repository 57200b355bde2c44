"""The fast path of repeated calls of pytato's :mod:`pyopencl` programs.

A call of a program (or an executable) whose arguments repeat those of an
earlier call that passed the argument checks (see "Repeated calls"
below) runs through the cached plan of
its :mod:`loopy` executor: ``_FastCall`` prebuilds the kernels and their
argument lists from the executor's
:class:`~pytato.target.loopy.run.launcher.KernelPlan` and runs the call as
loopy's invoker would (same results, events and conversions of numpy
arrays) at a fraction of its cost; ``_SizedCall``
(:mod:`pytato.target.loopy.run.sized_calls`) holds what depends on the
values of the size parameters; ``_RepeatedCalls`` keeps the signatures
(``_Signature``) of the last few checked calls of an executor with its
bound arrays and runs the calls that match one. Everything here is private
to the programs of :mod:`pytato.target.loopy.run.programs`; the instrumented
runs (:mod:`pytato.target.loopy.run.instrumented`) use it too.

.. rubric:: Repeated calls

Each call checks its arguments (see :mod:`pytato.target.loopy.run.arguments`)
unless they repeat those of one of the last few calls that passed the
checks on the same context: the same names, the same types (exactly
:class:`numpy.ndarray` or :class:`pyopencl.array.Array`), shapes, dtypes
and strides of the arrays, and the same Python :class:`int`\\ s as size
parameters. Such a call passes the same checks, with the same size
parameters, and runs straight through the cached launch plan of the
program (prebuilt kernels, precomputed sizes); a device array that is not
of the call's queue is looked at once more (of another context, the
checked call refuses it: see
:meth:`~pytato.target.loopy.run.arguments.ArgumentSpec.check_device`).
Any other call is checked, so a wrong argument raises the same error
after as before; calls on queues with profiling enabled, or with kernel
tracing or profiling switched on in the environment, are checked and run
as before as well.
Such calls wait for the events of their input arrays (as loopy's invoker
does), but for those that had completed by the previous call with the
same input events (kept until the next call).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import DeferredAllocator

import pytato.target.loopy.run.queues as _queues
from pytato.diagnostic import UnsupportedByTargetError
from pytato.target.loopy.run.call_locks import executor_lock
from pytato.target.loopy.run.launcher import (
    _PROFILE_KEY,
    _TRACE_KEY,
    env_switches_set,
    get_kernel_plan,
)
from pytato.target.loopy.run.queues import (
    _queue_info,
    default_allocator,
)

# (the names moved to sized_calls are importable from here as before)
from pytato.target.loopy.run.sized_calls import (  # noqa: F401
    _COMPLETE,
    _ENV_DATA,
    _FAST_OPTION_DEFAULTS,
    _PER_CALL_ATTRS,
    STORED_RUN_MIN_KERNELS,
    _Array,
    _compiled,
    _MemoryObjectHolder,
    _ndarray,
    _new_object,
    _NoFastCall,
    _output_template,
    _SizedCall,
)
from pytato.target.loopy.run.statistics import executor_statistics


if TYPE_CHECKING:

    from loopy.target.pyopencl_execution import PyOpenCLExecutor


# {{{ fast calls

class _FastCall:
    """A program run as :mod:`loopy`'s invoker runs it (same results,
    events and conversions of numpy arrays), with prebuilt kernels and
    argument lists: for arguments already checked by
    :class:`~pytato.target.loopy.run.arguments.ArgumentSpec`. Calling it
    returns *None* for calls it does not handle (the caller then calls
    loopy's executor)."""

    def __init__(self, executor: PyOpenCLExecutor) -> None:
        plan = get_kernel_plan(executor)
        if not plan.subkernels or plan.cl_program is None:
            raise _NoFastCall
        opts = plan.options
        for name, default in _FAST_OPTION_DEFAULTS.items():
            if getattr(opts, name, default) != default:
                raise _NoFastCall
        for name in plan.input_arrays + plan.outputs:
            shape, _ = plan._array_info[name]
            if shape is None or not isinstance(shape, tuple):
                raise _NoFastCall
        self.plan = plan
        self.inputs = tuple(plan.input_arrays)
        #: buffer numbers of the inputs (see :class:`_SizedCall`)
        self.input_numbers = {name: i for i, name in enumerate(self.inputs)}
        self.value_names = tuple(plan.value_args)
        self.known = frozenset(
            {*plan.input_arrays, *plan.value_args,
             "allocator", "wait_for", "out_host"})
        self.no_numpy = plan.no_numpy
        self.return_dict = plan.return_dict
        self._sized: dict[tuple[Any, ...], _SizedCall | None] = {}
        self._deferred: Any = None
        self.context = executor.context
        #: the executor's statistics, where calls on queues with profiling
        #: enabled record their events
        self.stats = executor_statistics(executor)
        #: the temporaries kept by a call (see :meth:`_SizedCall.run`):
        #: ``[(sized call, queue info, allocator, buffers)]`` or ``[None]``
        self.held: list[Any] = [None]
        #: the executor's lock (:func:`~pytato.target.loopy.run.call_locks.
        #: executor_lock`), held by :meth:`_SizedCall.run` over the
        #: setting of the kernels' arguments, their enqueues and the use of
        #: :attr:`held`
        self.lock = executor_lock(executor)

    def sized(self, key: tuple[Any, ...]) -> _SizedCall | None:
        """The (cached) :class:`_SizedCall` for the values *key* of the
        size parameters (in the order of :attr:`value_names`), or *None*
        if the fast path does not handle them."""
        try:
            return self._sized[key]
        except KeyError:
            pass
        for v in key:
            if type(v) is not int:
                return None
        try:
            sized: _SizedCall | None = _SizedCall(
                self, dict(zip(self.value_names, key, strict=True)))
        except (_NoFastCall, Exception):
            sized = None
        if len(self._sized) >= 64:
            self._sized.clear()
        self._sized[key] = sized
        return sized

    def allocator(self, allocator: Any) -> Any:
        """*allocator*, or for *None* (fresh buffers, as in loopy) a
        :class:`pyopencl.tools.DeferredAllocator` of the context."""
        if allocator is not None:
            return allocator
        if self._deferred is None:
            self._deferred = DeferredAllocator(self.context)
        return self._deferred

    @staticmethod
    def transfer(queue: cl.CommandQueue, host_inputs: Any, buffers: list[Any],
                 wait: list[cl.Event], allocator: Any) -> None:
        """Copy the numpy arrays of *host_inputs* (``(buffer number,
        array)`` pairs) to the device: their memory goes into *buffers*,
        the events of the copies into *wait*."""
        for number, value in host_inputs:
            dev = cla.to_device(queue, value, allocator=allocator)
            if dev.events:
                wait.extend(dev.events)
            buffers[number] = dev.base_data

    def result(self, queue: cl.CommandQueue, evt: cl.Event,
               outputs: list[cla.Array], out_host: bool | None) -> Any:
        """``(evt, outputs)`` as loopy's invoker returns them (numpy arrays
        if *out_host*; by name if the program returns a dict)."""
        if out_host and not self.no_numpy:
            outputs = [ary.get(queue=queue) for ary in outputs]
        if self.return_dict:
            return evt, dict(zip(self.plan.outputs, outputs, strict=True))
        return evt, tuple(outputs)

    def __call__(self, queue: cl.CommandQueue, kwargs: Mapping[str, Any]
                 ) -> Any:
        """Run the call of arguments *kwargs* and return ``(event,
        outputs)``, or *None* if it is not handled here. On queues with
        profiling enabled, the kernels' events are recorded in the
        executor's statistics."""
        if not kwargs.keys() <= self.known:
            return None
        names = self.value_names
        key = tuple([kwargs[n] for n in names]) if names else ()
        sized = self._sized.get(key)
        if sized is None:
            sized = self.sized(key)
            if sized is None:
                return None
        wait_for = kwargs.get("wait_for")
        wait = list(wait_for) if wait_for is not None else []
        buffers: list[Any] = []
        host_inputs = []
        encountered_numpy = encountered_dev = False
        for name in self.inputs:
            v = kwargs[name]
            if isinstance(v, cla.Array):
                if v.offset or not v.flags.c_contiguous:
                    return None
                encountered_dev = True
                if v.events:
                    wait.extend(v.events)
                buffers.append(v.base_data)
            elif type(v) is np.ndarray and not self.no_numpy:
                if not v.flags.c_contiguous:
                    return None
                host_inputs.append((len(buffers), v))
                buffers.append(None)
                encountered_numpy = True
            else:
                return None
        allocator = self.allocator(kwargs.get("allocator"))
        if host_inputs:
            self.transfer(queue, host_inputs, buffers, wait, allocator)
        info = _queue_info(queue)
        run = sized.run_profiled if info[0] else sized.run
        evt, outputs = run(queue, info, buffers, wait or None, allocator)
        out_host = kwargs.get("out_host")
        if out_host is None and encountered_numpy and not encountered_dev:
            out_host = True
        return self.result(queue, evt, outputs, out_host)


_FAST_CALLS: weakref.WeakKeyDictionary[PyOpenCLExecutor, _FastCall | None] = (
    weakref.WeakKeyDictionary())


def _fast_call(executor: PyOpenCLExecutor) -> _FastCall | None:
    """The (cached) :class:`_FastCall` of *executor*, or *None* if it
    cannot be run that way."""
    try:
        return _FAST_CALLS[executor]
    except KeyError:
        pass
    with executor_lock(executor):
        # (made once, by the first of threads calling at once)
        try:
            return _FAST_CALLS[executor]
        except KeyError:
            pass
        try:
            fast: _FastCall | None = _FastCall(executor)
        except (_NoFastCall, UnsupportedByTargetError):
            fast = None
        _FAST_CALLS[executor] = fast
    return fast

# }}}


# {{{ repeated calls

class _Signature:
    """The arguments of a call that passed the checks of
    :meth:`~pytato.target.loopy.run.arguments.ArgumentSpec.process`, as far as
    their outcome depends on them: the argument names; the type (exactly
    :class:`numpy.ndarray` or :class:`pyopencl.array.Array`), shape, dtype
    and strides of each array; the value of each size parameter (a Python
    :class:`int`). A call whose arguments match passes the same checks with
    the same size parameters.

    .. attribute:: device_arrays
    .. attribute:: host_arrays

        ``(name, shape, dtype, strides, buffer number)`` of the device
        arrays and of the numpy arrays passed.

    .. attribute:: buffers

        A template of the input buffers of a call (see :class:`_SizedCall`):
        those of the bound arrays, *None* for the arrays passed.
    """

    __slots__ = ("bound_arrays", "buffers", "device_arrays", "host_arrays",
                 "ints", "key", "names", "nargs", "others", "out_host", "sized")

    def __init__(self, nargs: int, device_arrays: tuple[Any, ...],
                 host_arrays: tuple[Any, ...],
                 ints: tuple[tuple[str, int], ...], names: tuple[str, ...],
                 buffers: list[Any], bound_arrays: tuple[cla.Array, ...],
                 sized: _SizedCall, out_host: bool) -> None:
        self.nargs = nargs
        self.device_arrays = device_arrays
        self.host_arrays = host_arrays
        self.ints = ints
        self.names = names
        #: whether there are size parameters, other names or numpy arrays
        self.others = bool(ints or names or host_arrays)
        self.buffers = buffers
        self.bound_arrays = bound_arrays
        self.sized = sized
        self.out_host = out_host
        self.key = (frozenset(device_arrays), frozenset(host_arrays),
                    frozenset(ints), frozenset(names))

    def input_buffers(self, kwargs: Mapping[str, Any],
                      events: list[cl.Event], queue: cl.CommandQueue,
                      context: int) -> list[Any] | None:
        """The input buffers of a call with *kwargs* (of
        :attr:`nargs` arguments; *None* where numpy arrays are still to be
        transferred) on *queue* (of the context of address *context*),
        adding the events of the device arrays (passed and bound) to
        *events*; or *None* if *kwargs* do not match, or a device array is
        of another context (the checked call refuses it: an array of the
        call's queue is of its context, others are looked at)."""
        get = kwargs.get
        if self.others:
            for name, value in self.ints:
                v = get(name)
                if type(v) is not int or v != value:
                    return None
            for name in self.names:
                if name not in kwargs:
                    return None
            for name, shape, dtype, strides, _ in self.host_arrays:
                v = get(name)
                if (type(v) is not _ndarray or v.shape != shape
                        or v.strides != strides
                        or (v.dtype is not dtype and v.dtype != dtype)):
                    return None
        buffers = self.buffers.copy()
        for name, shape, dtype, strides, number in self.device_arrays:
            v = get(name)
            if (type(v) is not _Array or v.shape != shape
                    or v.strides != strides or v.offset
                    or (v.dtype is not dtype and v.dtype != dtype)):
                return None
            if v.queue is not queue and not _same_context(v, context):
                return None
            if v.events:
                events += v.events
            buffers[number] = v.base_data
        if self.bound_arrays:
            for ary in self.bound_arrays:
                if ary.events:
                    events += ary.events
        return buffers


def _same_context(ary: cla.Array, context: int) -> bool:
    """Whether the device array *ary* is of the context of address
    *context* (through its queue's cached facts where it has a queue)."""
    queue = ary.queue
    if queue is None:
        return bool(ary.context.int_ptr == context)
    try:
        info = queue._pytato_queue_info
    except AttributeError:
        info = _queue_info(queue)
    return bool(info[2] == context)


def _signature(fast: _FastCall, bound: Mapping[str, Any],
               kwargs: Mapping[str, Any], arrays: Mapping[str, Any],
               values: Mapping[str, int], out_host: bool | None
               ) -> _Signature | None:
    """The :class:`_Signature` of a call of *fast* with the arguments
    *kwargs* that passed the checks (giving *arrays* and *values*) and the
    *bound* arrays, or *None* if the fast path would not run such calls as
    they are.

    :arg out_host: the default *out_host* of such calls; *None* for
        loopy's (numpy arrays out if all input arrays are numpy arrays).
    """
    number = fast.input_numbers
    device_arrays = []
    host_arrays = []
    ints = []
    names = []
    for name, v in kwargs.items():
        if name in arrays:
            t = type(v)
            if t is _Array:
                usable = not v.offset
            else:
                usable = t is _ndarray and not fast.no_numpy
            if (not usable or v is not arrays[name] or name not in number
                    or not v.flags.c_contiguous):
                return None
            entry = (name, v.shape, v.dtype, v.strides, number[name])
            (device_arrays if t is _Array else host_arrays).append(entry)
        elif name in values:
            if type(v) is not int:
                return None
            ints.append((name, v))
        elif name in number:
            return None
        else:
            names.append(name)
    buffers: list[Any] = [None] * len(fast.inputs)
    bound_arrays = []
    for name in fast.inputs:
        if name in arrays:
            continue
        v = bound.get(name)
        if type(v) is not _Array or v.offset or not v.flags.c_contiguous:
            return None
        buffers[number[name]] = v.base_data
        bound_arrays.append(v)
    sized = fast.sized(tuple(values[n] for n in fast.value_names))
    if sized is None:
        return None
    if out_host is None:
        # loopy's rule: numpy arrays out if all input arrays are numpy arrays
        out_host = bool(host_arrays) and not device_arrays and not bound_arrays
    return _Signature(len(kwargs), tuple(device_arrays), tuple(host_arrays),
                      tuple(ints), tuple(names), buffers, tuple(bound_arrays),
                      sized, out_host)


class _RepeatedCalls:
    """The calls of one :mod:`loopy` executor with its bound arrays whose
    arguments repeat those of an earlier call that passed the argument
    checks (the last few :class:`_Signature`\\ s are kept): they run
    through the executor's :class:`_FastCall` plan without checking the
    arguments again, with the results of a call through
    :class:`~pytato.target.loopy.BoundPyOpenCLExecutable` (and
    :class:`~pytato.target.loopy.BoundPyOpenCLProgram`). On queues with
    profiling enabled, the events of the kernels are recorded (see
    :attr:`_SizedCall.run_profiled`). Calls with kernel tracing or
    profiling switched on in the environment, queues of other contexts and
    any other argument go the checked way.

    The events of the input arrays (passed and bound) are waited for as
    loopy's invoker waits for them, but for those found complete: the
    events of a call's inputs are kept until the next call, and if that
    call has the same ones (the same inputs, not used by a command since),
    those of them that have completed meanwhile are not waited for again
    (nor queried again).
    """

    __slots__ = ("bound", "context", "executor", "fast", "last_events",
                 "signatures")

    #: the number of signatures kept
    max_signatures = 4

    def __init__(self, executor: PyOpenCLExecutor, bound: Mapping[str, Any],
                 context: int) -> None:
        self.executor = executor
        self.bound = bound
        self.context = context
        self.fast: _FastCall | None = None
        self.signatures: tuple[_Signature, ...] = ()
        #: ``(events, pending)``: the input events of the last call, and
        #: those of them that were not complete (when it was made); one
        #: tuple, replaced whole, so that a call from another thread reads
        #: the pending events of the events it compared with
        self.last_events: tuple[list[cl.Event], list[cl.Event]] = ([], [])

    def __call__(self, queue: cl.CommandQueue, allocator: Any,
                 wait_for: Sequence[cl.Event | None] | None, out_host: bool | None,
                 kwargs: Mapping[str, Any]) -> Any:
        """Run the call of arguments *kwargs* if they match a signature,
        and return ``(event, outputs)``; else do nothing and return
        *None*. *allocator* is the call's argument (as for
        :meth:`~pytato.target.loopy.BoundPyOpenCLProgram.__call__`: *None*
        for the queue's default pool, *False* for fresh buffers);
        *out_host* *None* for the signature's default."""
        # one function, the checks cheapest first: a call layer costs
        # about 0.1 us
        signatures = self.signatures
        if not signatures:
            return None
        try:
            info = queue._pytato_queue_info
        except AttributeError:
            info = _queue_info(queue)
        if info[2] != self.context:
            return None
        env = _ENV_DATA
        if env is None:  # pragma: no cover
            if env_switches_set():
                return None
        elif _TRACE_KEY in env or _PROFILE_KEY in env:
            return None
        nargs = len(kwargs)
        events: list[cl.Event] = []
        for sig in signatures:
            if sig.nargs == nargs:
                buffers = sig.input_buffers(kwargs, events, queue,
                                            info[2])
                if buffers is not None:
                    break
                events = []
        else:
            return None
        if events:
            last = self.last_events
            if events == last[0]:
                pending = last[1]
                if pending:
                    pending = [e for e in pending
                               if e.command_execution_status != _COMPLETE]
                    self.last_events = (last[0], pending)
            else:
                self.last_events = (events, events)
                pending = events
        else:
            pending = events
        if wait_for is not None:
            wait = [*wait_for, *pending]
        else:
            wait = pending.copy() if sig.host_arrays else pending
        fast: _FastCall = self.fast  # type: ignore[assignment]
        # the allocator, as queues._allocator_for selects it
        if allocator is None:
            if _queues._USE_DEFAULT_POOL:
                try:
                    allocator = queue._pytato_default_memory_pool
                except AttributeError:
                    allocator = default_allocator(queue)
        elif allocator is False:
            allocator = None
        if allocator is None:
            allocator = fast.allocator(None)
        if sig.host_arrays:
            fast.transfer(queue, [(number, kwargs[name])
                                  for name, _, _, _, number in sig.host_arrays],
                          buffers, wait, allocator)
        sized = sig.sized
        evt, outputs = (sized.run_profiled if info[0] else sized.run)(
            queue, info, buffers, wait or None, allocator)
        if out_host is None:
            out_host = sig.out_host
        if out_host or fast.return_dict:
            return fast.result(queue, evt, outputs, out_host)
        return evt, tuple(outputs)

    def learn(self, kwargs: Mapping[str, Any], arrays: Mapping[str, Any],
              values: Mapping[str, int], out_host: bool | None = None
              ) -> None:
        """Keep the signature of a call whose arguments *kwargs* passed the
        checks (giving *arrays* and *values*), if the executor's fast path
        can run its repetitions; *out_host* is their default (*None* for
        loopy's)."""
        fast = _FAST_CALLS.get(self.executor)
        if fast is None:
            return
        sig = _signature(fast, self.bound, kwargs, arrays, values, out_host)
        if sig is not None:
            self.fast = fast
            others = [s for s in self.signatures if s.key != sig.key]
            self.signatures = (sig, *others[:self.max_signatures - 1])

# }}}

# vim: foldmethod=marker
