"""Instrumented runs of pytato's :mod:`pyopencl` programs: their kernels
enqueued one by one, traced and profiled.

When :data:`~pytato.launchers.launchers.TRACE_KERNELS_ENV` or
:data:`~pytato.launchers.launchers.PROFILE_KERNELS_ENV` is set, programs
enqueue their kernels one by one (instead of through :mod:`loopy`'s
invoker) to trace and profile them as the switches say; on queues with
profiling enabled they keep the events of their kernels
(:mod:`pytato.target.loopy.run.statistics`), through the fast path of
repeated calls (:mod:`pytato.target.loopy.run.fast_call`) where they can.
Programs whose host code loops over kernels, or whose loopy target packs
arguments, run through :mod:`loopy`'s invoker and keep no statistics (see
:func:`~pytato.target.loopy.run.launcher.supports_instrumented_run`).

.. autofunction:: wants_instrumented_run
.. autofunction:: run_instrumented
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from pytato.launchers import (
    has_profiling,
    profile_kernel,
    should_profile_kernel,
    should_trace_kernel,
    trace_kernel,
)
from pytato.target.loopy.run.call_locks import executor_lock
from pytato.target.loopy.run.fast_call import _fast_call
from pytato.target.loopy.run.launcher import (
    _ENV_NAMES,
    _OFF_WORDS,
    KernelPlan,
    _device_input,
    _kernel_args,
    env_switches_set,
    get_kernel_plan,
)
from pytato.target.loopy.run.queues import _queue_info
from pytato.target.loopy.run.statistics import executor_statistics


if TYPE_CHECKING:
    from loopy.target.pyopencl_execution import PyOpenCLExecutor

    from pytato.target.loopy.run.split_executor import SplitExecutor


__all__ = ["run_instrumented", "wants_instrumented_run"]


# {{{ instrumented runs


def wants_instrumented_run(queue: cl.CommandQueue) -> bool:
    """Whether programs run on *queue* should go through
    :func:`run_instrumented` (which keeps their events): if *queue* has
    profiling enabled, or if kernel tracing or profiling is switched on in
    the environment."""
    return _queue_info(queue)[0] or (env_switches_set() and any(
        os.environ.get(n, "").strip().lower() not in _OFF_WORDS
        for n in _ENV_NAMES))


def run_instrumented(executor: PyOpenCLExecutor | SplitExecutor,
                     queue: cl.CommandQueue,
                     allocator: object = None,
                     wait_for: Sequence[cl.Event | None] | None = None,
                     out_host: bool | None = None, **kwargs: Any) -> object:
    """Run *executor* like calling it (same arguments, same result
    ``(event, outputs)``), recording each kernel's event in
    :func:`~pytato.target.loopy.run.statistics.executor_statistics` (when
    *queue* has profiling enabled).
    Arguments are expected checked (all inputs and value arguments given).
    Programs that
    :func:`~pytato.target.loopy.run.launcher.supports_instrumented_run`
    rejects raise
    :class:`~pytato.diagnostic.UnsupportedByTargetError`.

    Without the environment switches of
    :mod:`pytato.launchers.launchers`, the call runs through the fast
    path of repeated calls (prebuilt kernels and argument lists, the
    events of a call recorded as one batch), which costs about as much as a
    call on a queue without profiling. With them (or for arguments that
    the fast path does not handle), the kernels are enqueued one by one,
    traced and profiled as the switches say.
    """
    if not env_switches_set():
        fast = _fast_call(executor)
        if fast is not None:
            result = fast(queue, {"allocator": allocator,
                                  "wait_for": wait_for,
                                  "out_host": out_host, **kwargs})
            if result is not None:
                return result
    plan = get_kernel_plan(executor)
    values = {k: kwargs[k] for k in plan.value_args}
    typed = plan.typed_values(values)
    encountered_numpy = encountered_dev = False
    memory: dict[str, cla.Array] = {}
    for name in plan.input_arrays:
        value = kwargs[name]
        if isinstance(value, np.ndarray):
            encountered_numpy = True
        else:
            encountered_dev = True
        memory[name] = _device_input(queue, name, value, allocator)
    outputs = plan.allocate_outputs(queue, values, allocator)
    memory.update(outputs)
    memory.update(plan.allocate_temporaries(queue, values, allocator))

    kernels = _instrumented_kernels(executor, plan)
    stats = executor_statistics(executor)
    profiling = has_profiling(queue)
    wait_list = [e for e in (wait_for or ()) if e is not None] or None
    evt = None
    batch = []
    # the kernels are shared by the executor's instrumented calls: their
    # arguments are set and they are enqueued by one thread at a time
    # (see call_locks)
    with executor_lock(executor):
        for sk in plan.subkernels:
            kernel = kernels[sk.name]
            for i, arg in enumerate(_kernel_args(sk, memory, typed)):
                kernel.set_arg(i, arg)
            gsize, lsize = sk.work_sizes(values)
            if should_trace_kernel(sk.name):
                trace_kernel(
                    f"{sk.name}: global_size={gsize} local_size={lsize}")
            evt = cl.enqueue_nd_range_kernel(queue, kernel, gsize, lsize,
                                             wait_for=wait_list,
                                             allow_empty_ndrange=True)
            wait_list = [evt]
            batch.append((sk.name, evt))
            if should_profile_kernel(sk.name):
                profile_kernel(kernel, evt, kernel_msg=sk.name)
    if profiling:
        for name, kernel_evt in batch:
            stats.record(name, kernel_evt)
    if evt is None:
        evt = cl.enqueue_marker(queue, wait_for=wait_list)

    returned: Mapping[str, cla.Array | np.ndarray] = outputs
    if not plan.no_numpy:
        if out_host is None and encountered_numpy and not encountered_dev:
            out_host = True
        if out_host:
            returned = {k: v.get(queue=queue) for k, v in outputs.items()}
    if plan.return_dict:
        return evt, returned
    return evt, tuple(returned.values())


_KERNELS: weakref.WeakKeyDictionary[
    PyOpenCLExecutor | SplitExecutor, dict[str, cl.Kernel]] = (
    weakref.WeakKeyDictionary())


def _instrumented_kernels(executor: PyOpenCLExecutor | SplitExecutor, plan: KernelPlan
                          ) -> dict[str, cl.Kernel]:
    kernels = _KERNELS.get(executor)
    if kernels is None:
        # (threads at once: one dict wins, all use it)
        kernels = _KERNELS.setdefault(
            executor, {sk.name: plan.new_kernel(sk.name)
                       for sk in plan.subkernels})
    return kernels

# }}}

# vim: foldmethod=marker
