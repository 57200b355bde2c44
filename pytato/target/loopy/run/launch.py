"""Kernel launchers and profiling for pytato's :mod:`pyopencl` programs.

A :class:`ProgramLauncher` enqueues the OpenCL kernels of a program
(:class:`~pytato.target.loopy.BoundPyOpenCLProgram` or
:class:`~pytato.target.loopy.BoundPyOpenCLExecutable`) with all their
arguments set once, so that a time-step loop does no argument processing
per call::

    x_dev = cl.array.to_device(queue, x0)
    launch = prog.launcher(queue, x=x_dev)
    for step in range(nsteps):
        x_dev.set(next_x(step))        # in place: the kernels see it
        evt = launch()
        use(launch.outputs["y"])

Obtain one with :meth:`~pytato.target.loopy.BoundPyOpenCLProgram.launcher`
or :meth:`~pytato.target.loopy.BoundPyOpenCLExecutable.launcher`; see
:mod:`pytato.launchers.launchers` for the launcher interface (events,
statistics, tracing).

Outputs and global temporaries are allocated once, when the launcher is
created: each call overwrites them.  Inputs given as :mod:`numpy` arrays
are transferred once (see :attr:`ProgramLauncher.inputs`); to change an
input between calls, update its device array in place (e.g. with
:meth:`pyopencl.array.Array.set`), or name it in *per_call* to give a new
device array on each call.

The launcher works on its queue's order: on an in-order queue (the
default) each call runs after the commands enqueued before it, such as
:meth:`~pytato.launchers.launchers.OpenClKernelListLauncher.push_copy_device_to_device`
copies or ``x.set(...)``; it does not wait for the events of
:class:`pyopencl.array.Array` objects (pass *wait_for* for those).  Without
profiling, tracing or per-call inputs a call only enqueues the kernels
(about the cost of raw :func:`pyopencl.enqueue_nd_range_kernel` calls, see
``benchmarks/README.md``).

Programs also keep per-kernel profiling statistics: when a program or an
executable runs on a queue with profiling enabled, it keeps the events of
its kernels and exposes ``statistics``
(:class:`~pytato.launchers.launchers.LauncherStatistics`: ``print`` it for
a per-kernel table)::

    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    exe = prog.bind_to_context(ctx)
    for step in range(nsteps):
        exe(queue, x=x_dev)
    queue.finish()
    print(exe.statistics)      # name, count, total (ms), mean/min/max (us)

Calls on such a queue take the same fast path as calls on other queues
(prebuilt kernels and argument lists, see "Repeated calls" in
:mod:`pytato.target.loopy.run.programs`): the events of a call's kernels are
kept as one batch (:class:`EventStatistics`, a
:class:`~pytato.launchers.launchers.KernelProfiler`) and their profiling
counters are only read when ``statistics`` is fetched (or, in long loops,
when many events wait), so that measuring costs about as much per call as
not measuring (``benchmarks/bench_launch.py``). When
:data:`~pytato.launchers.launchers.TRACE_KERNELS_ENV` or
:data:`~pytato.launchers.launchers.PROFILE_KERNELS_ENV` is set, programs
enqueue their kernels one by one (instead of through :mod:`loopy`'s
invoker) to trace and profile them as the switches say.

Launchers made on a queue with profiling enabled keep their events too
(``print(launch.statistics)``), and record them in the
:class:`~pytato.launchers.launchers.KernelProfiler` given to
:func:`make_program_launcher`, if any.  Programs whose host code loops over
kernels, or whose loopy target packs arguments, run through :mod:`loopy`'s
invoker and keep no statistics (see :func:`supports_instrumented_run`); they
cannot be launched.

.. autoclass:: ProgramLauncher
.. autoclass:: SubkernelInfo
.. autoclass:: KernelPlan
.. autoclass:: EventStatistics
.. autofunction:: get_kernel_plan
.. autofunction:: make_program_launcher
.. autofunction:: wants_instrumented_run
.. autofunction:: env_switches_set
.. autofunction:: supports_instrumented_run
.. autofunction:: run_instrumented
.. autofunction:: executor_statistics
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pymbolic import evaluate

from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingArgumentError,
    UnknownArgumentError,
    UnsupportedByTargetError,
)
from pytato.launchers.launchers import (
    PROFILE_KERNELS_ENV,
    TRACE_KERNELS_ENV,
    KernelProfiler,
    OpenClKernelLauncher,
    OpenClKernelListLauncher,
    OpenClParametrizedKernelLauncher,
    WaitFor,
    has_profiling,
    is_out_of_order,
    profile_kernel,
    should_profile_kernel,
    should_trace_kernel,
    trace_kernel,
)
from pytato.target.loopy.run import programs as _programs


if TYPE_CHECKING:
    from pytato.target.loopy.run.arguments import ArgumentSpec


__all__ = [
    "EventStatistics",
    "KernelPlan",
    "ProgramLauncher",
    "SubkernelInfo",
    "env_switches_set",
    "executor_statistics",
    "get_kernel_plan",
    "make_program_launcher",
    "run_instrumented",
    "supports_instrumented_run",
    "wants_instrumented_run",
]


# {{{ kernel plan

@dataclass(frozen=True)
class SubkernelInfo:
    """One OpenCL kernel of a :mod:`loopy` program, as its host code
    enqueues it.

    .. attribute:: name

        The kernel's function name.

    .. attribute:: arg_names

        The names of the kernel's arguments, in order (kernel arguments,
        then global temporaries).

    .. attribute:: group_count
    .. attribute:: local_size

        Expressions (in the program's value arguments) of the number of
        work groups and of the work group size, per axis.
    """

    name: str
    arg_names: tuple[str, ...]
    group_count: tuple[Any, ...]
    local_size: tuple[Any, ...]

    def work_sizes(self, values: Mapping[str, int]
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Return ``(global_size, local_size)`` in work items, for the
        value arguments *values*."""
        groups = tuple(int(evaluate(g, values)) for g in self.group_count) or (1,)
        local = tuple(int(evaluate(s, values)) for s in self.local_size) or (1,)
        ndim = max(len(groups), len(local))
        groups += (1,) * (ndim - len(groups))
        local += (1,) * (ndim - len(local))
        return (tuple(g * s for g, s in zip(groups, local, strict=True)),
                local)


def _eval_shape(shape: Any, values: Mapping[str, int]) -> tuple[int, ...]:
    if shape is None:
        return ()
    return tuple(int(evaluate(c, values)) for c in shape)


class KernelPlan:
    """What the host code of a :mod:`loopy` executor does, as data: the
    OpenCL kernels to enqueue in order (:class:`SubkernelInfo`), the
    outputs and global temporaries to allocate, and the compiled
    :class:`pyopencl.Program`\\ s (shared with the executor: nothing is
    compiled twice).

    .. attribute:: subkernels
    .. attribute:: value_args

        Mapping from value argument names to their :class:`numpy.dtype`.

    .. attribute:: input_arrays
    .. attribute:: outputs

        Names of the output arrays, in the order of the kernel's arguments.

    .. attribute:: return_dict
    .. attribute:: no_numpy

    .. automethod:: new_kernel
    .. automethod:: allocate_outputs
    .. automethod:: allocate_temporaries
    .. automethod:: typed_values
    """

    def __init__(self, executor: Any, arg_to_dtype: Any = None) -> None:
        import loopy as lp
        from loopy.kernel.array import get_strides
        from loopy.schedule import (
            CallKernel,
            EnterLoop,
            LeaveLoop,
            get_insn_ids_for_block_at,
        )
        from loopy.schedule.tools import get_subkernel_arg_info

        t_unit = executor.get_typed_and_scheduled_translation_unit(arg_to_dtype)
        knl = t_unit[executor.entrypoint]
        sched = knl.linearization
        assert sched is not None

        subkernels = []
        depth = 0
        for idx, item in enumerate(sched):
            if isinstance(item, EnterLoop):
                depth += 1
            elif isinstance(item, LeaveLoop):
                depth -= 1
            elif isinstance(item, CallKernel):
                if not get_insn_ids_for_block_at(sched, idx):
                    # a kernel without instructions (the program's outputs
                    # have no elements): nothing to launch
                    continue
                if depth:
                    raise UnsupportedByTargetError(
                        f"kernel {item.kernel_name!r} is enqueued inside a host "
                        "loop; launchers support straight-line host code only")
                info = get_subkernel_arg_info(knl, item.kernel_name)
                if info.passed_inames:
                    raise UnsupportedByTargetError(
                        f"kernel {item.kernel_name!r} takes loop indices "
                        f"{list(info.passed_inames)} from the host")
                gsize, lsize = knl.get_grid_sizes_for_insn_ids_as_exprs(
                    get_insn_ids_for_block_at(sched, idx), t_unit.callables_table)
                subkernels.append(SubkernelInfo(
                    item.kernel_name, tuple(info.passed_names),
                    tuple(gsize), tuple(lsize)))
        if getattr(knl.target, "limit_arg_size_nbytes", None) is not None:
            raise UnsupportedByTargetError(
                "launchers do not support loopy targets that pack overflowing "
                "kernel arguments (limit_arg_size_nbytes)")

        self.subkernels: tuple[SubkernelInfo, ...] = tuple(subkernels)
        self.value_args: dict[str, np.dtype[Any]] = {}
        self.input_arrays: list[str] = []
        self.outputs: list[str] = []
        self._strides: dict[str, tuple[Any, ...]] = {}
        self._array_info: dict[str, tuple[Any, np.dtype[Any]]] = {}
        for arg in knl.args:
            if isinstance(arg, lp.ValueArg):
                if arg.dtype.is_composite():
                    raise UnsupportedByTargetError(
                        f"value argument {arg.name!r} has a composite type")
                self.value_args[arg.name] = np.dtype(arg.dtype.numpy_dtype)
                continue
            if not isinstance(arg, lp.ArrayArg) or arg._separation_info:
                raise UnsupportedByTargetError(
                    f"argument {arg.name!r} ({type(arg).__name__}) is not "
                    "supported by launchers")
            self._array_info[arg.name] = (arg.shape,
                                          np.dtype(arg.dtype.numpy_dtype))
            if arg.is_output:
                self.outputs.append(arg.name)
                self._strides[arg.name] = tuple(get_strides(arg))
            else:
                self.input_arrays.append(arg.name)
        passed = {n for sk in self.subkernels for n in sk.arg_names}
        self._temporaries: dict[str, tuple[Any, np.dtype[Any]]] = {}
        for name, tv in knl.temporary_variables.items():
            if name not in passed:
                continue
            if tv.base_storage is not None:
                raise UnsupportedByTargetError(
                    f"global temporary {name!r} shares storage "
                    f"({tv.base_storage!r}); not supported by launchers")
            self._temporaries[name] = (tv.shape, np.dtype(tv.dtype.numpy_dtype))
        self.return_dict = bool(knl.options.return_dict)
        self.no_numpy = bool(knl.options.no_numpy)

        kernels = executor.translation_unit_info(arg_to_dtype).cl_kernels
        #: the program of each kernel, by name (the device code may be
        #: built as several programs, see
        #: :func:`pytato.target.loopy.run.executor.build_kernels`)
        self.cl_programs: dict[str, cl.Program] = {
            sk.name: getattr(kernels, sk.name).program
            for sk in self.subkernels}
        self.cl_program: cl.Program | None = (
            self.cl_programs[self.subkernels[0].name] if self.subkernels
            else None)

    def new_kernel(self, name: str) -> cl.Kernel:
        """A new instance of the kernel *name* (with arguments of its own)."""
        return cl.Kernel(self.cl_programs[name], name)

    def typed_values(self, values: Mapping[str, Any]) -> dict[str, np.generic]:
        """The value arguments as numpy scalars of the kernel's types."""
        return {name: dtype.type(values[name])
                for name, dtype in self.value_args.items()}

    def allocate_outputs(self, queue: cl.CommandQueue, values: Mapping[str, int],
                         allocator: Any = None) -> dict[str, cla.Array]:
        """New device arrays for the outputs, by name."""
        result = {}
        for name in self.outputs:
            shape, dtype = self._array_info[name]
            ishape = _eval_shape(shape, values)
            strides = tuple(int(evaluate(s, values)) * dtype.itemsize
                            for s in self._strides[name])
            result[name] = cla.Array(queue, ishape, dtype, strides=strides or None,
                                     allocator=allocator)
        return result

    def allocate_temporaries(self, queue: cl.CommandQueue,
                             values: Mapping[str, int],
                             allocator: Any = None) -> dict[str, cla.Array]:
        """New device arrays for the global temporaries, by name."""
        return {name: cla.empty(queue, _eval_shape(shape, values), dtype,
                                allocator=allocator)
                for name, (shape, dtype) in self._temporaries.items()}


_PLANS: weakref.WeakKeyDictionary[Any, KernelPlan | None] = (
    weakref.WeakKeyDictionary())


def get_kernel_plan(executor: Any) -> KernelPlan:
    """The (cached) :class:`KernelPlan` of a :mod:`loopy` pyopencl
    executor (``t_unit.executor(context)``)."""
    own_plan = getattr(executor, "kernel_plan", None)
    if own_plan is not None:  # an executor with a plan of its own
        return own_plan()  # type: ignore[no-any-return]
    try:
        plan = _PLANS[executor]
    except KeyError:
        import warnings

        from loopy.diagnostic import ParameterFinderWarning
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ParameterFinderWarning)
                plan = KernelPlan(executor, executor.arg_to_dtype({}))
        except UnsupportedByTargetError:
            _PLANS[executor] = None
            raise
        _PLANS[executor] = plan
    if plan is None:
        # raise the error again
        return KernelPlan(executor, executor.arg_to_dtype({}))
    return plan


def supports_instrumented_run(executor: Any) -> bool:
    """Whether :func:`run_instrumented` can run *executor* (programs whose
    host code has loops or packed arguments cannot be)."""
    try:
        get_kernel_plan(executor)
    except UnsupportedByTargetError:
        return False
    return True

# }}}


# {{{ environment switches

_ENV_NAMES = (TRACE_KERNELS_ENV, PROFILE_KERNELS_ENV)
# the values that select no kernel (as in pytato.launchers.launchers)
_OFF_WORDS = frozenset({"", "0", "false", "no", "off", "none"})
_TRACE_KEY, _PROFILE_KEY = (os.environ.encodekey(n)  # type: ignore[attr-defined]
                            for n in _ENV_NAMES)


def env_switches_set() -> bool:
    """Whether :data:`~pytato.launchers.launchers.TRACE_KERNELS_ENV` or
    :data:`~pytato.launchers.launchers.PROFILE_KERNELS_ENV` is set (to
    anything): a cheap check for the per-call fast paths, which leave the
    exact selection to the launchers."""
    try:
        # dict lookups: os.environ.get costs microseconds per call
        data = os.environ._data  # type: ignore[attr-defined]
    except AttributeError:
        data = None
    if type(data) is dict:
        return _TRACE_KEY in data or _PROFILE_KEY in data
    return any(name in os.environ for name in _ENV_NAMES)

# }}}


# {{{ argument helpers

def _kernel_arg(value: Any) -> Any:
    if isinstance(value, cla.Array):
        return value.base_data
    return value


def _device_input(queue: cl.CommandQueue, name: str, value: Any,
                  allocator: Any = None) -> cla.Array:
    if isinstance(value, cla.Array):
        if value.context != queue.context:
            raise InvalidArgumentError(f"argument '{name}': the device array is not in "
                                       "the queue's context")
        if not value.flags.c_contiguous:
            raise ArgumentShapeError(
                f"argument '{name}': expected a C-contiguous device array, "
                f"got strides {value.strides}")
        if value.offset:
            raise ArgumentShapeError(
                f"argument '{name}': device array with a nonzero offset "
                f"({value.offset} bytes) cannot be a kernel argument")
        return value
    if isinstance(value, np.ndarray):
        return cla.to_device(queue, np.ascontiguousarray(value),
                             allocator=allocator)
    raise InvalidArgumentTypeError(
        f"argument '{name}': expected a numpy or pyopencl array, "
        f"got {type(value).__name__}")


def _kernel_args(sk: SubkernelInfo, memory: Mapping[str, Any],
                 values: Mapping[str, np.generic]) -> list[Any]:
    return [values[n] if n in values else _kernel_arg(memory[n])
            for n in sk.arg_names]

# }}}


# {{{ program launcher

_enqueue = cl.enqueue_nd_range_kernel

class ProgramLauncher(OpenClKernelListLauncher):
    """A :class:`~pytato.launchers.launchers.OpenClKernelListLauncher` of
    the kernels of a program, with their arguments set once.  Calling it
    enqueues the kernels and returns the event of the last one; the results
    are then in :attr:`outputs`.  Create it with
    :func:`make_program_launcher` (or the programs' ``launcher`` method).

    .. attribute:: inputs

        Mapping from input names to the device arrays the kernels read
        (:class:`pyopencl.array.Array`; the arrays passed, or the device
        copies of numpy arrays).  Update them in place to change inputs.

    .. attribute:: outputs

        Mapping from output names to :class:`pyopencl.array.Array`\\ s
        overwritten by each call.

    .. attribute:: temporaries

        Mapping from global temporary names to their device arrays.

    .. attribute:: size_params

        Mapping from value (size parameter) names to their values.

    .. attribute:: per_call

        The names of the inputs given on each call (as keyword arguments,
        device arrays of the same shape and dtype as those given when the
        launcher was made).

    .. automethod:: __call__
    .. automethod:: result
    """

    def __init__(self, name: str, queue: cl.CommandQueue, plan: KernelPlan,
                 inputs: Mapping[str, cla.Array],
                 outputs: Mapping[str, cla.Array],
                 temporaries: Mapping[str, cla.Array],
                 size_params: Mapping[str, int],
                 per_call: Collection[str] = (),
                 profiler: KernelProfiler | None = None) -> None:
        super().__init__(name, profiler=profiler, default_queue=queue)
        self.inputs: dict[str, cla.Array] = dict(inputs)
        self.outputs: dict[str, cla.Array] = dict(outputs)
        self.temporaries: dict[str, cla.Array] = dict(temporaries)
        self.size_params: dict[str, int] = dict(size_params)
        self.per_call: frozenset[str] = frozenset(per_call)
        self._return_dict = plan.return_dict
        self._expected = {n: (self.inputs[n].shape, self.inputs[n].dtype)
                          for n in self.per_call}
        # enqueues without tracing or per-call inputs on the default
        # (in-order) queue skip the per-launcher bookkeeping (on a queue with
        # profiling enabled, they keep the events as the launchers do)
        self._fast_ok = not (is_out_of_order(queue) or self.per_call)
        self._profiling = has_profiling(queue)
        self._fast: tuple[tuple[cl.Kernel, tuple[int, ...],
                                tuple[int, ...] | None], ...] | None = ()
        self._fast_launchers: tuple[Any, ...] = ()

    def push_kernels(self, *kernel_launchers: Any) -> Self:
        """Append launchers, as
        :meth:`~pytato.launchers.launchers.OpenClKernelListLauncher.push_kernels`
        does."""
        super().push_kernels(*kernel_launchers)
        fast = []
        for launcher in self.launchers:
            if type(launcher) is not OpenClKernelLauncher:
                self._fast = None
                return self
            fast.append((launcher.kernel, launcher.default_global_work_size,
                         launcher.default_local_work_size))
        self._fast = tuple(fast)
        self._fast_launchers = self.launchers
        return self

    def _check_per_call(self, kwds: Mapping[str, Any]) -> None:
        missing = sorted(self.per_call - set(kwds))
        if missing:
            raise MissingArgumentError(
                f"{self.name}: missing per-call input"
                f"{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}")
        for name, value in kwds.items():
            expected = self._expected.get(name)
            if expected is None:
                raise UnknownArgumentError(
                    f"{self.name}: '{name}' is not a per-call input "
                    f"(per-call inputs: {sorted(self.per_call)})")
            if not isinstance(value, cla.Array):
                raise InvalidArgumentTypeError(
                    f"{self.name}: per-call input '{name}' must be "
                    "a pyopencl.array.Array, got "
                    f"{type(value).__name__}")
            shape, dtype = expected
            if value.shape != shape:
                raise ArgumentShapeError(
                    f"{self.name}: argument '{name}': expected shape {shape}, "
                    f"got {value.shape}")
            if value.dtype != dtype:
                raise ArgumentDTypeError(
                    f"{self.name}: argument '{name}': expected dtype {dtype}, "
                    f"got {value.dtype}")
            if not value.flags.c_contiguous or value.offset:
                raise ArgumentShapeError(
                    f"{self.name}: argument '{name}': expected a C-contiguous "
                    "device array without offset")

    def __call__(self, queue: cl.CommandQueue | None = None,
                 wait_for: WaitFor = None, **kwds: Any) -> cl.Event | None:
        """Enqueue the kernels on *queue* (default: the queue the launcher
        was made for) after *wait_for*; return the last kernel's event.

        :arg kwds: the per-call inputs (see :attr:`per_call`).
        :raises pytato.diagnostic.ArgumentShapeError: (and the other errors
            of the program's call-time checks) for wrong per-call inputs;
            nothing is enqueued then.
        """
        if not self.per_call:
            if kwds:
                raise UnknownArgumentError(
                    f"{self.name}: unexpected arguments {sorted(kwds)}; this "
                    "launcher takes no per-call inputs")
            fast = self._fast
            if (fast and self._fast_ok and (queue is None
                                            or queue is self._default_queue)
                    and not env_switches_set()):
                queue = self._default_queue
                wait_list = ([e for e in wait_for if e is not None] or None
                             if wait_for else None)
                evt = None
                if self._profiling:
                    for (kernel, gsize, lsize), launcher in zip(
                            fast, self._fast_launchers, strict=True):
                        evt = _enqueue(queue, kernel, gsize, lsize, None,
                                       wait_list, False, True)
                        wait_list = None
                        launcher._pending_events.append(evt)
                        if launcher._profiler is not None:
                            launcher._profiler.record(launcher._name, evt)
                    return evt
                for kernel, gsize, lsize in fast:
                    evt = _enqueue(queue, kernel, gsize, lsize, None, wait_list,
                                   False, True)
                    wait_list = None
                return evt
            return super().__call__(queue, wait_for)
        self._check_per_call(kwds)
        self.inputs.update(kwds)
        params = self.parameters
        return super().__call__(queue, wait_for,
                                **{n: v for n, v in kwds.items() if n in params})

    def result(self) -> Any:
        """The outputs, arranged as the program returns them: a dict by
        name, or a tuple in the kernel's argument order."""
        if self._return_dict:
            return dict(self.outputs)
        return tuple(self.outputs.values())


def make_program_launcher(executor: Any, queue: cl.CommandQueue,
                          arg_spec: ArgumentSpec, bound: Mapping[str, Any],
                          inputs: Mapping[str, Any], *,
                          per_call: Collection[str] = (),
                          name: str | None = None,
                          allocator: Any = None,
                          profiler: KernelProfiler | None = None
                          ) -> ProgramLauncher:
    """Make a :class:`ProgramLauncher` for the :mod:`loopy` executor
    *executor*.

    :arg arg_spec: the program's argument checks: *inputs* raise the same
        errors as in a call of the program.
    :arg bound: the bound arguments, on the device.
    :arg inputs: the inputs: device arrays are used as they are, numpy
        arrays (and scalars) are transferred once.
    :arg per_call: names of inputs given anew on each call; *inputs* gives
        their first values, which fix their shapes and dtypes.
    :arg profiler: a :class:`~pytato.launchers.launchers.KernelProfiler`
        in which the launchers of the kernels record their execution times
        (on queues with profiling enabled), or *None*.
    """
    per_call = frozenset(per_call)
    for pname in sorted(per_call):
        if pname in bound:
            raise BoundArgumentError(
                f"argument '{pname}' is bound to the program and cannot be "
                "given per call")
        if pname not in arg_spec.arrays:
            raise UnknownArgumentError(
                f"per-call input '{pname}' is not an array input of the "
                f"program (inputs: {sorted(set(arg_spec.arrays) - set(bound))})")
    arrays, values = arg_spec.process(inputs, bound)
    plan = get_kernel_plan(executor)
    if plan.cl_program is None:
        raise UnsupportedByTargetError("the program has no kernels to launch")
    device_inputs = {k: _device_input(queue, k, v, allocator)
                     for k, v in arrays.items()}
    outputs = plan.allocate_outputs(queue, values, allocator)
    temporaries = plan.allocate_temporaries(queue, values, allocator)
    memory = {**bound, **device_inputs, **outputs, **temporaries}
    typed = plan.typed_values(values)

    result = ProgramLauncher(name or executor.entrypoint, queue, plan,
                             device_inputs, outputs, temporaries, values,
                             per_call, profiler=profiler)
    for sk in plan.subkernels:
        sizes = sk.work_sizes(values)
        kernel = plan.new_kernel(sk.name)
        fixed = []
        pmap = {}
        for i, arg_name in enumerate(sk.arg_names):
            if arg_name in per_call:
                pmap[arg_name] = (i, (cl.Buffer, cla.Array))
            elif arg_name in typed:
                fixed.append((i, typed[arg_name]))
            else:
                fixed.append((i, _kernel_arg(memory[arg_name])))
        if pmap:
            launcher: OpenClKernelLauncher = OpenClParametrizedKernelLauncher(
                pmap, fixed, name=sk.name, kernel=kernel,
                default_global_work_size=sizes[0],
                default_local_work_size=sizes[1], default_queue=queue)
            for pname, (idx, _) in pmap.items():
                kernel.set_arg(idx, _kernel_arg(device_inputs[pname]))
        else:
            launcher = OpenClKernelLauncher(
                sk.name, kernel, fixed, default_global_work_size=sizes[0],
                default_local_work_size=sizes[1], default_queue=queue)
        result.push_kernels(launcher)
    return result

# }}}


# {{{ fast calls

_QUEUE_INFO_ATTR = "_pytato_queue_info"


def _queue_info(queue: cl.CommandQueue) -> tuple[bool, bool, int]:
    """``(profiling, out_of_order, context)`` of *queue*: its flags and the
    address of its context (``int_ptr``), cached on the queue object (they
    cannot change; reading them costs OpenCL calls)."""
    try:
        return getattr(queue, _QUEUE_INFO_ATTR)  # type: ignore[no-any-return]
    except AttributeError:
        pass
    from pytato.target.loopy.run.programs import _check_queue
    _check_queue(queue)
    info = (has_profiling(queue), is_out_of_order(queue),
            queue.context.int_ptr)
    try:
        setattr(queue, _QUEUE_INFO_ATTR, info)
    except (AttributeError, TypeError):
        pass
    return info


# loopy options whose effect on the invoker the fast path reproduces (or
# that only affect the device code, which the fast path shares with loopy)
_FAST_OPTION_DEFAULTS = {
    "cl_exec_manage_array_events": True,
    "write_wrapper": False,
    "write_code": False,
    "edit_code": False,
    "skip_arg_checks": False,
}

_Array = cla.Array
_ndarray = np.ndarray
_new_object = object.__new__
_MemoryObjectHolder = cl.MemoryObjectHolder
_COMPLETE = cl.command_execution_status.COMPLETE
# the attribute of a queue holding its default pool (``programs._POOL_ATTR``),
# which RepeatedCalls.__call__ reads directly
_POOL_ATTR = "_pytato_default_memory_pool"
# os.environ's dict (see env_switches_set), None where it has none
_ENV_DATA = getattr(os.environ, "_data", None)
if type(_ENV_DATA) is not dict:  # pragma: no cover
    _ENV_DATA = None
# the attributes of a pyopencl.array.Array that differ between the outputs
# of calls (see _output_template)
_PER_CALL_ATTRS = ("queue", "allocator", "base_data", "events")


def _output_template(shape: tuple[int, ...], dtype: np.dtype[Any],
                     strides: tuple[int, ...], size: int,
                     context: cl.Context) -> dict[str, Any] | None:
    """The instance attributes (``__dict__``) of an output
    :class:`pyopencl.array.Array` of a call, as the constructor sets them,
    but for those of :data:`_PER_CALL_ATTRS` (left *None*): a copy of it,
    with those set, makes the same array as the constructor for a fraction
    of its cost. *None* if this version of :mod:`pyopencl` does not keep
    them as plain attributes."""
    marker = object()
    try:
        ary = _Array(None, shape, dtype, allocator=None, data=marker,
                     strides=strides, _fast=True, _size=size,
                     _context=context, _queue=None)
        attrs = dict(vars(ary))
    except Exception:  # pragma: no cover
        return None
    if (attrs.get("base_data") is not marker or attrs.get("events") != []
            or not set(_PER_CALL_ATTRS) <= attrs.keys()
            or any(isinstance(getattr(_Array, name, None), property)
                   for name in attrs)):
        return None  # pragma: no cover
    for name in _PER_CALL_ATTRS:
        attrs[name] = None
    return attrs


class _SizedCall:
    """The parts of a :class:`_FastCall` that depend on the values of the
    size parameters: kernels with their value arguments set, work sizes,
    output and temporary sizes.

    The buffers of a call are numbered: the inputs (in the order of
    ``plan.input_arrays``), then the outputs, then the temporaries; each
    kernel lists ``(argument index, buffer number)`` of its memory
    arguments (all of them, and those not of temporaries).

    On in-order queues, the global temporaries allocated from the queue's
    default pool are kept for the next call (see ``run``).
    """

    __slots__ = ("context", "held", "kernels", "names",
                 "ninputs", "out_nbytes", "outputs", "run", "run_profiled",
                 "stats",
                 "templates", "temporaries")

    def __init__(self, fast: _FastCall, values: Mapping[str, int]) -> None:
        plan = fast.plan
        self.context = fast.context
        self.held = fast.held
        self.stats = fast.stats
        self.names = tuple(sk.name for sk in plan.subkernels)
        typed = plan.typed_values(values)
        number = {name: i for i, name in enumerate(
            [*plan.input_arrays, *plan.outputs, *plan._temporaries])}
        first_temporary = len(plan.input_arrays) + len(plan.outputs)
        kernels = []
        for sk in plan.subkernels:
            knl = plan.new_kernel(sk.name)
            mem_slots = []
            for i, name in enumerate(sk.arg_names):
                if name in typed:
                    knl.set_arg(i, typed[name])
                else:
                    mem_slots.append((i, number[name]))
            gsize, lsize = sk.work_sizes(values)
            kernels.append((knl, tuple(mem_slots),
                            tuple((i, j) for i, j in mem_slots
                                  if j < first_temporary),
                            gsize, lsize))
        self.kernels = tuple(kernels)
        outputs = []
        for name in plan.outputs:
            shape, dtype = plan._array_info[name]
            ishape = _eval_shape(shape, values)
            ustrides = tuple(int(evaluate(s, values))
                             for s in plan._strides[name])
            if (len(ustrides) != len(ishape) or any(n <= 0 for n in ishape)
                    or any(s < 0 for s in ustrides)):
                raise _NoFastCall
            size = 1 + sum(s * (n - 1) for s, n in zip(ustrides, ishape,
                                                        strict=True))
            outputs.append((ishape, dtype,
                            tuple(s * dtype.itemsize for s in ustrides),
                            size, size * dtype.itemsize))
        self.outputs = tuple(outputs)
        self.out_nbytes = tuple(out[4] for out in outputs)
        templates = tuple(_output_template(*out[:4], self.context)
                          for out in outputs)
        self.templates = (None if any(t is None for t in templates)
                          else templates)
        temporaries = []
        for shape, dtype in plan._temporaries.values():
            nbytes = int(np.prod(_eval_shape(shape, values), dtype=np.int64)
                         ) * dtype.itemsize
            if nbytes <= 0:
                raise _NoFastCall
            temporaries.append(nbytes)
        self.temporaries = tuple(temporaries)
        self.ninputs = len(plan.input_arrays)
        self.run = self._compile_run(self.ninputs)
        self.run_profiled = self._first_run_profiled

    #: ``run(queue, info, buffers, wait_for, allocator)``: allocate the
    #: outputs and temporaries from *allocator*, enqueue the kernels (the
    #: first after *wait_for*; each after the previous one on an
    #: out-of-order queue) and return the last event and the outputs (a
    #: tuple). *info* is :func:`_queue_info` of *queue* (its identity
    #: stands for the queue); *buffers* the memory of the inputs, by
    #: number. (A function made by :meth:`_compile_run`.)
    #:
    #: The temporaries of a call on an in-order queue, when *allocator* is
    #: the queue's default pool, are kept (in the one slot ``held`` that
    #: the sized calls of an executor share) and used again by the next
    #: call with the same sizes, queue and allocator: that call runs after
    #: the kernels of this one, and its kernels already have them as
    #: arguments, so that only the arguments of inputs and outputs are set
    #: again. Any other call replaces them (then returned to their pool:
    #: later commands of their queue run after the kernels that use them)
    #: or drops them and uses temporaries of its own, released to their
    #: allocator once the kernels are enqueued.
    run: Any

    #: :attr:`run` for queues with profiling enabled: the same, and the
    #: events of the kernels are recorded (one batch per call) in the
    #: executor's statistics (:func:`executor_statistics`). (Compiled on
    #: its first call.)
    run_profiled: Any

    def _first_run_profiled(self, *args: Any) -> Any:
        self.run_profiled = self._compile_run(self.ninputs, profiled=True)
        return self.run_profiled(*args)

    def output(self, k: int, buf: Any, evt: cl.Event, queue: cl.CommandQueue,
               allocator: Any) -> cla.Array:
        """The output array *k* on the memory *buf*, written by *evt*
        (constructed: :meth:`run` copies :attr:`templates` instead where
        it can)."""
        shape, dtype, strides, size, _ = self.outputs[k]
        ary = _Array(None, shape, dtype, strides=strides, data=buf,
                     allocator=allocator, _fast=True, _size=size,
                     _context=self.context, _queue=queue)
        ary.events.append(evt)
        return ary

    def _compile_run(self, ninputs: int, profiled: bool = False) -> Any:
        """:meth:`run` for these kernels and sizes, as a Python function
        with the kernels unrolled (as :mod:`loopy` generates its invoker):
        a loop over them, their arguments and the outputs costs about
        1 us more per call. If *profiled*, the events of the kernels are
        kept and recorded together (see :attr:`run_profiled`)."""
        noutputs = len(self.outputs)
        first_temporary = ninputs + noutputs
        names: dict[str, Any] = {
            "enqueue": _enqueue, "new": _new_object, "Array": _Array,
            "Holder": _MemoryObjectHolder, "POOL": _POOL_ATTR,
            "held": self.held, "token": object(), "output": self.output,
            "templates": self.templates, "NAMES": self.names,
            "batches": self.stats._batches, "counts": self.stats._counts,
            "overflow": self.stats._overflow}

        def buffer(j: int) -> str:
            if j < ninputs:
                return f"buffers[{j}]"
            if j < first_temporary:
                return f"o{j - ninputs}"
            return f"temporaries[{j - first_temporary}]"

        def launches(indent: str, slots: int) -> list[str]:
            code = []
            for n, kernel in enumerate(self.kernels):
                names[f"K{n}"], names[f"G{n}"], names[f"L{n}"] = (
                    kernel[0], kernel[3], kernel[4])
                names[f"S{n}"] = kernel[0].set_arg
                code += [f"{indent}S{n}({i}, {buffer(j)})"
                         for i, j in kernel[slots]]
                if profiled:
                    wait = ("wait_for" if n == 0
                            else f"[e{n - 1}] if chain else None")
                    code.append(f"{indent}e{n} = enqueue(queue, K{n}, G{n}, "
                                f"L{n}, None, {wait}, False, True)")
                else:
                    wait = ("wait_for" if n == 0
                            else "[evt] if chain else None")
                    code.append(f"{indent}evt = enqueue(queue, K{n}, G{n}, "
                                f"L{n}, None, {wait}, False, True)")
            return code

        code = ["def run(queue, info, buffers, wait_for, allocator):"]
        code += [f"    o{k} = allocator({nbytes})"
                 for k, nbytes in enumerate(self.out_nbytes)]
        if len(self.kernels) > 1:
            code.append("    chain = info[1]")
        if self.temporaries:
            code += [
                "    kept = held[0]",
                "    if (kept is not None and kept[0] is token",
                "            and kept[1] is info and kept[2] is allocator):",
                *launches("        ", 2),
                "    else:",
                "        temporaries = [{}]".format(", ".join(
                    f"allocator({nbytes})" for nbytes in self.temporaries)),
                "        keep = (not info[1] and allocator is not None",
                "                and allocator is getattr(queue, POOL, None))",
                "        held[0] = ((token, info, allocator, temporaries)",
                "                   if keep else None)",
                *launches("        ", 1),
                "        if not keep:",
                "            for buf in temporaries:",
                "                buf.release()"]
        else:
            code += launches("    ", 1)
        if profiled:
            nkernels = len(self.kernels)
            # KernelProfiler.record_batch, inlined
            code += [f"    evt = e{nkernels - 1}",
                     "    batches.append((NAMES, ({})))".format(
                         "".join(f"e{n}, " for n in range(nkernels))),
                     f"    counts[0] += {nkernels}",
                     "    if counts[0] > counts[1]:",
                     "        overflow()"]
        for k in range(noutputs):
            code.append(f"    a{k} = output({k}, o{k}, evt, queue, allocator)"
                        if self.templates is None else
                        f"    if isinstance(o{k}, Holder):\n"
                        f"        attrs = templates[{k}].copy()\n"
                        f"        attrs['queue'] = queue\n"
                        f"        attrs['allocator'] = allocator\n"
                        f"        attrs['base_data'] = o{k}\n"
                        f"        attrs['events'] = [evt]\n"
                        f"        a{k} = new(Array)\n"
                        f"        a{k}.__dict__ = attrs\n"
                        f"    else:\n"
                        f"        a{k} = output({k}, o{k}, evt, queue, allocator)")
        code.append("    return evt, ({})".format(
            "".join(f"a{k}, " for k in range(noutputs))))
        exec(compile("\n".join(code), "<pytato fast call>", "exec"), names)
        return names["run"]


class _NoFastCall(Exception):
    pass


class _FastCall:
    """A program run as :mod:`loopy`'s invoker runs it (same results,
    events and conversions of numpy arrays), with prebuilt kernels and
    argument lists: for arguments already checked by
    :class:`~pytato.target.loopy.run.arguments.ArgumentSpec`. Calling it
    returns *None* for calls it does not handle (the caller then calls
    loopy's executor)."""

    def __init__(self, executor: Any) -> None:
        plan = get_kernel_plan(executor)
        if not plan.subkernels or plan.cl_program is None:
            raise _NoFastCall
        knl = executor.t_unit[executor.entrypoint]
        opts = knl.options
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
            from pyopencl.tools import DeferredAllocator
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


_FAST_CALLS: weakref.WeakKeyDictionary[Any, _FastCall | None] = (
    weakref.WeakKeyDictionary())


def _fast_call(executor: Any) -> _FastCall | None:
    """The (cached) :class:`_FastCall` of *executor*, or *None* if it
    cannot be run that way."""
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
                      events: list[cl.Event]) -> list[Any] | None:
        """The input buffers of a call with *kwargs* (of
        :attr:`nargs` arguments; *None* where numpy arrays are still to be
        transferred), adding the events of the device arrays (passed and
        bound) to *events*; or *None* if *kwargs* do not match."""
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
            if v.events:
                events += v.events
            buffers[number] = v.base_data
        if self.bound_arrays:
            for ary in self.bound_arrays:
                if ary.events:
                    events += ary.events
        return buffers


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

    __slots__ = ("bound", "context", "events", "executor", "fast", "pending",
                 "signatures")

    #: the number of signatures kept
    max_signatures = 4

    def __init__(self, executor: Any, bound: Mapping[str, Any],
                 context: int) -> None:
        self.executor = executor
        self.bound = bound
        self.context = context
        self.fast: _FastCall | None = None
        self.signatures: tuple[_Signature, ...] = ()
        #: the input events of the last call, and those of them that were
        #: not complete (when it was made)
        self.events: list[cl.Event] = []
        self.pending: list[cl.Event] = []

    def __call__(self, queue: cl.CommandQueue, allocator: Any,
                 wait_for: WaitFor, out_host: bool | None,
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
                buffers = sig.input_buffers(kwargs, events)
                if buffers is not None:
                    break
                events = []
        else:
            return None
        if events:
            if events == self.events:
                pending = self.pending
                if pending:
                    pending = self.pending = [
                        e for e in pending
                        if e.command_execution_status != _COMPLETE]
            else:
                self.events = self.pending = pending = events
        else:
            pending = events
        if wait_for is not None:
            wait = [*wait_for, *pending]
        else:
            wait = pending.copy() if sig.host_arrays else pending
        fast: _FastCall = self.fast  # type: ignore[assignment]
        # the allocator, as programs._allocator_for selects it
        if allocator is None:
            if _programs._USE_DEFAULT_POOL:
                try:
                    allocator = queue._pytato_default_memory_pool
                except AttributeError:
                    allocator = _programs.default_allocator(queue)
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


# {{{ statistics of programs

class EventStatistics(KernelProfiler):
    """The profiling events of a program's kernels, recorded by kernel name
    and turned into
    :class:`~pytato.launchers.launchers.LauncherStatistics` on demand: a
    :class:`~pytato.launchers.launchers.KernelProfiler` (finished events
    are consumed, as by launchers). The calls of a program on a queue with
    profiling enabled record the events of their kernels, one batch per
    call, and their profiling counters are only read when the statistics
    are asked for.
    """

    def __init__(self, name: str = "program") -> None:
        super().__init__(name)


_PROFILES: weakref.WeakKeyDictionary[Any, EventStatistics] = (
    weakref.WeakKeyDictionary())


def executor_statistics(executor: Any) -> EventStatistics:
    """The :class:`EventStatistics` of the :mod:`loopy` executor
    *executor* (created empty on first use)."""
    stats = _PROFILES.get(executor)
    if stats is None:
        stats = _PROFILES[executor] = EventStatistics()
    return stats


def wants_instrumented_run(queue: cl.CommandQueue) -> bool:
    """Whether programs run on *queue* should go through
    :func:`run_instrumented` (which keeps their events): if *queue* has
    profiling enabled, or if kernel tracing or profiling is switched on in
    the environment."""
    return _queue_info(queue)[0] or (env_switches_set() and any(
        os.environ.get(n, "").strip().lower() not in _OFF_WORDS
        for n in _ENV_NAMES))


def run_instrumented(executor: Any, queue: cl.CommandQueue,
                     allocator: Any = None, wait_for: WaitFor = None,
                     out_host: bool | None = None, **kwargs: Any) -> Any:
    """Run *executor* like calling it (same arguments, same result
    ``(event, outputs)``), recording each kernel's event in
    :func:`executor_statistics` (when *queue* has profiling enabled).
    Arguments are expected checked (all inputs and value arguments given).
    Programs that :func:`supports_instrumented_run` rejects raise
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
    memory: dict[str, Any] = {}
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
    for sk in plan.subkernels:
        kernel = kernels[sk.name]
        for i, arg in enumerate(_kernel_args(sk, memory, typed)):
            kernel.set_arg(i, arg)
        gsize, lsize = sk.work_sizes(values)
        if should_trace_kernel(sk.name):
            trace_kernel(f"{sk.name}: global_size={gsize} local_size={lsize}")
        evt = cl.enqueue_nd_range_kernel(queue, kernel, gsize, lsize,
                                         wait_for=wait_list,
                                         allow_empty_ndrange=True)
        wait_list = [evt]
        if profiling:
            stats.record(sk.name, evt)
        if should_profile_kernel(sk.name):
            profile_kernel(kernel, evt, kernel_msg=sk.name)
    if evt is None:
        evt = cl.enqueue_marker(queue, wait_for=wait_list)

    if not plan.no_numpy:
        if out_host is None and encountered_numpy and not encountered_dev:
            out_host = True
        if out_host:
            outputs = {k: v.get(queue=queue) for k, v in outputs.items()}
    if plan.return_dict:
        return evt, outputs
    return evt, tuple(outputs.values())


_KERNELS: weakref.WeakKeyDictionary[Any, dict[str, cl.Kernel]] = (
    weakref.WeakKeyDictionary())


def _instrumented_kernels(executor: Any, plan: KernelPlan) -> dict[str, cl.Kernel]:
    kernels = _KERNELS.get(executor)
    if kernels is None:
        kernels = _KERNELS[executor] = {sk.name: plan.new_kernel(sk.name)
                                        for sk in plan.subkernels}
    return kernels

# }}}

# vim: foldmethod=marker
