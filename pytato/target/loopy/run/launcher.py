"""Kernel launchers for pytato's :mod:`pyopencl` programs.

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
:mod:`pytato.launchers` for the launcher interface (events, statistics,
tracing).

Outputs and global temporaries are allocated once, when the launcher is
created: each call overwrites them.  Inputs given as :mod:`numpy` arrays
are transferred once (see :attr:`ProgramLauncher.inputs`); to change an
input between calls, update its device array in place (e.g. with
:meth:`pyopencl.array.Array.set`), or name it in *per_call* to give a new
device array on each call.

The launcher works on its queue's order: on an in-order queue (the
default) each call runs after the commands enqueued before it, such as
:meth:`~pytato.launchers.OpenClKernelListLauncher.push_copy_device_to_device`
copies or ``x.set(...)``; it does not wait for the events of
:class:`pyopencl.array.Array` objects (pass *wait_for* for those).  Without
profiling, tracing or per-call inputs a call only enqueues the kernels
(about the cost of raw :func:`pyopencl.enqueue_nd_range_kernel` calls, see
``benchmarks/README.md``).

Launchers made on a queue with profiling enabled keep their events
(``print(launch.statistics)``), and record them in the
:class:`~pytato.launchers.KernelProfiler` given to
:func:`make_program_launcher`, if any.  Programs whose host code loops over
kernels, or whose loopy target packs arguments, cannot be launched (see
:func:`supports_instrumented_run`).

The :class:`KernelPlan` of an executor, what its host code does as data,
is shared with the fast calls (:mod:`pytato.target.loopy.run.fast_call`)
and the instrumented runs (:mod:`pytato.target.loopy.run.instrumented`).
All of them fill the global temporaries that must start as zeros (the
ticket counters of single-launch reductions, :attr:`KernelPlan.zeroed`)
when they allocate them.

.. autoclass:: ProgramLauncher
.. autoclass:: SubkernelInfo
.. autofunction:: linearized_subkernels
.. autoclass:: KernelPlan
.. autofunction:: get_kernel_plan
.. autofunction:: make_program_launcher
.. autofunction:: env_switches_set
.. autofunction:: supports_instrumented_run
.. autofunction:: zeroed_temporaries
.. autofunction:: fill_zeros
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Collection, Mapping, Sequence
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
from pytato.launchers import (
    PROFILE_KERNELS_ENV,
    TRACE_KERNELS_ENV,
    KernelProfiler,
    OpenClKernelLauncher,
    OpenClKernelListLauncher,
    OpenClParametrizedKernelLauncher,
    has_profiling,
    is_out_of_order,
)
from pytato.launchers.tracing import OFF_WORDS
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build.subkernels import (
    SubkernelInfo,
    _eval_shape,
    linearized_subkernels,
)


if TYPE_CHECKING:
    import loopy as lp
    import loopy.schedule as _schedule
    from loopy.target.pyopencl_execution import PyOpenCLExecutor

    from pytato.target.loopy.run.arguments import ArgumentSpec
else:
    lp = lazy_module("loopy")
    _schedule = lazy_module("loopy.schedule")


__all__ = [
    "KernelPlan",
    "ProgramLauncher",
    "SubkernelInfo",
    "env_switches_set",
    "fill_zeros",
    "get_kernel_plan",
    "linearized_subkernels",
    "make_program_launcher",
    "supports_instrumented_run",
    "zeroed_temporaries",
]


# {{{ kernel plan

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
    .. attribute:: options

        The kernel's :class:`loopy.Options`.

    .. attribute:: zeroed

        The names of the global temporaries that must be zeros when the
        kernels start (tagged
        :class:`~pytato.target.loopy.schedule.reductions.ZeroedTemporary`):
        whoever allocates them fills them with zeros
        (:meth:`allocate_temporaries` does); the kernels leave them zero.

    .. automethod:: new_kernel
    .. automethod:: allocate_outputs
    .. automethod:: allocate_temporaries
    .. automethod:: typed_values
    """

    def __init__(self, executor: PyOpenCLExecutor, arg_to_dtype: Any = None) -> None:
        t_unit = executor.get_typed_and_scheduled_translation_unit(arg_to_dtype)
        knl = t_unit[executor.entrypoint]
        subkernels = linearized_subkernels(knl, t_unit.callables_table)
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
            strides = None
            if arg.is_output:
                # (loopy's, imported where a kernel is at hand)
                from loopy.kernel.array import get_strides
                strides = tuple(get_strides(arg))
            self._add_array_argument(arg.name, arg.shape,
                                     np.dtype(arg.dtype.numpy_dtype), strides)
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
        self.zeroed = zeroed_temporaries(knl, self._temporaries)
        self.return_dict = bool(knl.options.return_dict)
        self.no_numpy = bool(knl.options.no_numpy)
        self.options = knl.options

        kernels = executor.translation_unit_info(arg_to_dtype).cl_kernels
        #: the program of each kernel, by name (the device code may be
        #: built as several programs, see
        #: :func:`pytato.target.loopy.build.parallel_builds.build_kernels`)
        self.cl_programs: dict[str, cl.Program] = {
            sk.name: getattr(kernels, sk.name).program
            for sk in self.subkernels}
        self.cl_program: cl.Program | None = (
            self.cl_programs[self.subkernels[0].name] if self.subkernels
            else None)

    def _add_array_argument(self, name: str, shape: Any,
                            dtype: np.dtype[Any],
                            strides: tuple[Any, ...] | None) -> None:
        """Record the array argument *name*: its *shape* and *dtype*, and,
        for an output, its *strides* in elements (None: an input)."""
        self._array_info[name] = (shape, dtype)
        if strides is not None:
            self.outputs.append(name)
            self._strides[name] = strides
        else:
            self.input_arrays.append(name)

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
        """New device arrays for the global temporaries, by name (those of
        :attr:`zeroed` filled with zeros before any later command of
        *queue*)."""
        result = {name: cla.empty(queue, _eval_shape(shape, values), dtype,
                                  allocator=allocator)
                  for name, (shape, dtype) in self._temporaries.items()}
        for name in self.zeroed:
            fill_zeros(queue, result[name].base_data, result[name].nbytes)
        return result


def zeroed_temporaries(knl: lp.LoopKernel, names: Collection[str]
                       ) -> frozenset[str]:
    """The temporaries among *names* of *knl* tagged
    :class:`~pytato.target.loopy.schedule.reductions.ZeroedTemporary`."""
    # (the schedule stage imports loopy: here, where a kernel is at hand)
    from pytato.target.loopy.schedule.reductions import ZeroedTemporary
    return frozenset(
        name for name in names
        if any(isinstance(tag, ZeroedTemporary)
               for tag in knl.temporary_variables[name].tags))


_ZERO = np.zeros(1, dtype=np.uint8)


def fill_zeros(queue: cl.CommandQueue, buf: Any, nbytes: int) -> cl.Event:
    """Fill the first *nbytes* of the memory *buf* with zeros, before any
    command enqueued after on *queue* (on an out-of-order queue, the fill
    is waited for)."""
    evt = cl.enqueue_fill_buffer(queue, buf, _ZERO, 0, nbytes)
    if is_out_of_order(queue):
        evt.wait()
    return evt


_PLANS: weakref.WeakKeyDictionary[PyOpenCLExecutor, KernelPlan | None] = (
    weakref.WeakKeyDictionary())


def get_kernel_plan(executor: PyOpenCLExecutor) -> KernelPlan:
    """The (cached) :class:`KernelPlan` of a :mod:`loopy` pyopencl
    executor (``t_unit.executor(context)``), or the plan of an executor
    that has one of its own (a ``kernel_plan`` method, as
    :class:`~pytato.target.loopy.run.split_executor.SplitExecutor`)."""
    own_plan = getattr(executor, "kernel_plan", None)
    if own_plan is not None:
        return own_plan()  # type: ignore[no-any-return]
    try:
        plan = _PLANS[executor]
    except KeyError:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", lp.diagnostic.ParameterFinderWarning)
                plan = KernelPlan(executor, executor.arg_to_dtype({}))
        except UnsupportedByTargetError:
            _PLANS[executor] = None
            raise
        _PLANS[executor] = plan
    if plan is None:
        # raise the error again
        return KernelPlan(executor, executor.arg_to_dtype({}))
    return plan


def supports_instrumented_run(executor: PyOpenCLExecutor) -> bool:
    """Whether
    :func:`~pytato.target.loopy.run.instrumented.run_instrumented` can run
    *executor* (programs whose host code has loops or packed arguments
    cannot be)."""
    try:
        get_kernel_plan(executor)
    except UnsupportedByTargetError:
        return False
    return True

# }}}


# {{{ environment switches

_ENV_NAMES = (TRACE_KERNELS_ENV, PROFILE_KERNELS_ENV)
_OFF_WORDS = OFF_WORDS
_TRACE_KEY, _PROFILE_KEY = (os.environ.encodekey(n)  # type: ignore[attr-defined]
                            for n in _ENV_NAMES)


def env_switches_set() -> bool:
    """Whether :data:`~pytato.launchers.TRACE_KERNELS_ENV` or
    :data:`~pytato.launchers.PROFILE_KERNELS_ENV` is set (to
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
    """A :class:`~pytato.launchers.OpenClKernelListLauncher` of
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
        :meth:`~pytato.launchers.OpenClKernelListLauncher.push_kernels`
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
                 wait_for: Sequence[cl.Event | None] | None = None,
                 **kwds: Any) -> cl.Event | None:
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


def make_program_launcher(executor: PyOpenCLExecutor, queue: cl.CommandQueue,
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
    :arg profiler: a :class:`~pytato.launchers.KernelProfiler`
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
    arg_spec.check_device(queue, arrays, values)
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

# vim: foldmethod=marker
