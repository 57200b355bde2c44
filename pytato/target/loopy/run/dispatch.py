"""How a call of a program reaches the device.

A call of a :class:`~pytato.target.loopy.BoundPyOpenCLProgram` or a
:class:`~pytato.target.loopy.BoundPyOpenCLExecutable`, its arguments
checked, runs its :mod:`loopy` executor one of three ways (``_run``):
instrumented, with its kernels enqueued one by one
(:mod:`pytato.target.loopy.run.instrumented`); through the fast path of
prebuilt kernels and argument lists (:mod:`pytato.target.loopy.run.fast_call`);
or through :mod:`loopy`'s invoker (the first call, and the calls the fast
path does not handle). Its arrays go to the device and its results back
to the host with ``_to_device``, ``_without_offset`` and ``_to_host``.
"""

from __future__ import annotations

import logging
import sys
import warnings
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pyopencl.tools import DeferredAllocator

from pytato.diagnostic import UnsupportedByTargetError
from pytato.target.loopy.run.call_locks import executor_lock
from pytato.target.loopy.run.fast_call import _FAST_CALLS, _fast_call
from pytato.target.loopy.run.instrumented import (
    run_instrumented,
    wants_instrumented_run,
)
from pytato.target.loopy.run.launcher import (
    fill_zeros,
    get_kernel_plan,
    supports_instrumented_run,
    zeroed_temporaries,
)
from pytato.timing import PhaseTimer


if TYPE_CHECKING:
    from loopy.target.pyopencl_execution import PyOpenCLExecutor


_logger = logging.getLogger("pytato.target.loopy")

# the executors called once (through loopy's invoker, which generates the
# host code at that call)
_WARMED_EXECUTORS: weakref.WeakSet[PyOpenCLExecutor] = weakref.WeakSet()


def _run(executor: PyOpenCLExecutor, queue: cl.CommandQueue,
         **kwargs: Any) -> Any:
    """Call loopy's *executor*. On its first call (when loopy generates its
    invoker), silence loopy's warnings about size parameters it cannot
    find from array shapes: the argument checks pass all of them.

    On queues with profiling enabled (or with kernel tracing switched on),
    the kernels are enqueued one by one and their events kept (see
    :mod:`pytato.target.loopy.run.instrumented`). Later calls of programs
    with straight-line host code run through a cached plan of prebuilt
    kernels and argument lists (:mod:`pytato.target.loopy.run.fast_call`,
    the same results as loopy's invoker at a fraction of its cost); calls
    it does not handle (e.g. device arrays with offsets, zero-size outputs)
    go to loopy's executor."""
    if (wants_instrumented_run(queue)
            and supports_instrumented_run(executor)):
        return run_instrumented(executor, queue, **kwargs)
    fast = _FAST_CALLS.get(executor, False)
    if fast is False and executor in _WARMED_EXECUTORS:
        fast = _fast_call(executor)
    if fast is not False:
        if fast is not None:
            result = fast(queue, kwargs)
            if result is not None:
                return result
        # loopy's invoker sets the arguments of the executor's kernels
        # (shared by its calls): one thread at a time (see call_locks)
        with executor_lock(executor):
            return _invoke(executor, queue, kwargs)
    with executor_lock(executor):
        # (threads making the first call at once: one generates the
        # invoker and builds the kernels, the others wait for it)
        if executor in _WARMED_EXECUTORS:
            return _invoke(executor, queue, kwargs)
        with warnings.catch_warnings(), PhaseTimer(
                _logger, "first call (loopy preprocessing, code generation, "
                "OpenCL build)"):
            # (loopy's executors, which warn so, need loopy imported; the
            # executor of a program from the store may run without it)
            diagnostic = sys.modules.get("loopy.diagnostic")
            if diagnostic is not None:
                warnings.simplefilter("ignore",
                                      diagnostic.ParameterFinderWarning)
            result = _invoke(executor, queue, kwargs)
        _WARMED_EXECUTORS.add(executor)
    return result


# whether an executor's kernels have global temporaries that must be zeros
# when they start (see _invoke)
_HAS_ZEROED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _has_zeroed_temporaries(executor: Any) -> bool:
    try:
        return _HAS_ZEROED[executor]
    except KeyError:
        pass
    if getattr(executor, "kernel_plan", None) is not None:
        # (a split executor: its calls allocate through its plan)
        result = False
    else:
        try:
            result = bool(get_kernel_plan(executor).zeroed)
        except UnsupportedByTargetError:
            knl = executor.t_unit[executor.entrypoint]
            result = bool(zeroed_temporaries(knl, knl.temporary_variables))
    _HAS_ZEROED[executor] = result
    return result


class _ZeroingAllocator:
    """An allocator whose memory is filled with zeros (on *queue*)."""

    def __init__(self, queue: cl.CommandQueue, base: Any) -> None:
        self.queue = queue
        self.base = base if base is not None else DeferredAllocator(
            queue.context)

    def __call__(self, nbytes: int) -> Any:
        buf = self.base(nbytes)
        if nbytes:
            fill_zeros(self.queue, buf, nbytes)
        return buf


def _invoke(executor: PyOpenCLExecutor, queue: cl.CommandQueue,
            kwargs: dict[str, Any]) -> Any:
    """Call loopy's *executor*, or, for kernels with global temporaries
    that must be zeros when they start (the ticket counters of
    single-launch reductions, see
    :class:`~pytato.target.loopy.schedule.reductions.ZeroedTemporary`),
    which loopy's invoker allocates uninitialized, run them enqueued one by
    one from their plan, which fills those temporaries (or, where the
    kernels have no plan, through loopy's invoker with memory filled with
    zeros)."""
    if not _has_zeroed_temporaries(executor):
        return executor(queue, **kwargs)
    if supports_instrumented_run(executor):
        return run_instrumented(executor, queue, **kwargs)
    return executor(queue, **{**kwargs, "allocator": _ZeroingAllocator(
        queue, kwargs.get("allocator"))})


def _to_device(queue: cl.CommandQueue, value: Any, allocator: Any = None
               ) -> Any:
    if isinstance(value, np.ndarray):
        # the kernels take C-ordered arrays (as numpy inputs are converted)
        if not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        return cla.to_device(queue, value, allocator=allocator)
    return _without_offset(queue, value)


def _without_offset(queue: cl.CommandQueue, value: Any) -> Any:
    """*value*, or, for a C-contiguous device array at an offset into its
    buffer (a view such as ``ary[1:]``, which the kernels' arguments do
    not take), a copy of it at the start of a buffer of its own (inputs
    are only read)."""
    if not getattr(value, "offset", 0):
        return value
    if isinstance(value, cla.Array) and value.flags.c_contiguous:
        return value.copy(queue=queue)
    return value


def _to_host(queue: cl.CommandQueue, out: Any) -> Any:
    def get(x: Any) -> Any:
        return x.get(queue=queue) if hasattr(x, "get") and not isinstance(
            x, np.ndarray) else x
    if isinstance(out, Mapping):
        return {k: get(v) for k, v in out.items()}
    return tuple(get(v) for v in out)

