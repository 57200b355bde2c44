"""The sub-units of a split kernel generated once each, built and launched.

The sub-units of :mod:`pytato.target.loopy.run.split` with equal keys
compute the same thing on other arrays, so :mod:`loopy` preprocesses,
linearizes and generates code for one of them (:func:`compile_sub_units`),
and the device kernels are built once. Distinct sub-units can be generated
in worker processes
(:data:`~pytato.target.loopy.run.split.SPLIT_WORKERS_ENV`), started before
the kernel is split: each gets a sub-unit as soon as the split makes it
and the process is free (the costliest waiting first, see
:mod:`~pytato.target.loopy.run.job_processes`), and builds the code it
generated for the device while it generates the next. Results are
kept in the program store (:mod:`pytato.target.loopy.run.program_store`)
under the canonical key, so that programs sharing a kernel share its code.

The host side (:class:`SplitKernelPlan`, a
:class:`~pytato.target.loopy.run.launcher.KernelPlan`) launches the device
kernels of the sub-units in order, each with its own arrays mapped onto
the arguments of the sub-unit that was generated.

.. autoclass:: CompiledSubUnit
.. autofunction:: compile_sub_units
.. autodata:: MIN_INSTRUCTIONS_PER_WORKER
.. autoclass:: SplitKernelPlan
.. autoclass:: SplitExecutor
.. autofunction:: make_split_executor
.. autodata:: MIN_MERGED_SPLIT_INSTRUCTIONS
.. autofunction:: merged_split_groups
.. autofunction:: prestart_merged_workers
.. autofunction:: discard_prestarted_workers
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
import pyopencl.array as cla
from constantdict import constantdict
from pymbolic.mapper.substitutor import SubstitutionMapper, make_subst_func

from pytato.codegen import FewerCollections, PhaseTimer
from pytato.diagnostic import UnsupportedByTargetError
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.loopy_memos import loopy_caching_off
from pytato.target.loopy.run import jit_primer, program_store
from pytato.target.loopy.run.binaries import build_programs, device_build_options
from pytato.target.loopy.run.instrumented import run_instrumented
from pytato.target.loopy.run.job_processes import (
    JobProcessError,
    JobProcesses,
    read_frame,
    write_frame,
)
from pytato.target.loopy.run.kernel_facts import KernelFacts
from pytato.target.loopy.run.launch_once import device_index, launch_each_once
from pytato.target.loopy.run.launcher import (
    KernelPlan,
    SubkernelInfo,
    linearized_subkernels,
)
from pytato.target.loopy.run.parallel_builds import (
    _program_kernels,
    _usable_cpus,
    count_from_env,
    start_processes,
    stop_processes,
)
from pytato.target.loopy.run.split import (
    SPLIT_ENV,
    SPLIT_WORKERS_ENV,
    SplitNotPossible,
    SubUnit,
    _KernelNeeded,
    split_kernel,
    unit_weight,
)
from pytato.target.loopy.run.split_sizes import hoisted_value


if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import loopy as lp
else:
    lp = lazy_module("loopy")


__all__ = [
    "CompiledSubUnit",
    "SplitExecutor",
    "SplitKernelPlan",
    "compile_sub_units",
    "discard_prestarted_workers",
    "make_split_executor",
    "merged_split_groups",
    "prestart_merged_workers",
]

_logger = logging.getLogger("pytato.target.loopy")

# {{{ code generation of the distinct sub-units

@dataclass(frozen=True)
class CompiledSubUnit:
    """What the host needs of a generated sub-unit, in canonical names
    (``n0``, ``n1``, ... by canonical position; see :class:`SubUnit`).

    .. attribute:: code

        Its OpenCL code.

    .. attribute:: launches

        Its device kernels in order: ``(name, argument names, group count,
        work group size)``, names and expressions canonical.
    """

    code: str
    launches: tuple[tuple[str, tuple[str, ...], tuple[Any, ...],
                          tuple[Any, ...]], ...]


def _compile_one(t_unit: lp.TranslationUnit,
                 names: Sequence[str],
                 specs: list[jit_primer.LaunchSpec] | None = None
                 ) -> CompiledSubUnit:
    """Preprocess, linearize and generate *t_unit* (one kernel), and
    describe its launches in canonical names (*names* by position). With
    a list *specs*, the launch specifications of its device kernels for
    :func:`~pytato.target.loopy.run.launch_once.launch_each_once` are
    appended to it (none where they depend on values of the call)."""
    with FewerCollections():
        # (loopy's passes: imported where a sub-unit is generated)
        from pytato.target.loopy.run.preprocessing import (
            generate_code,
            preprocess_and_linearize,
        )
        lin = preprocess_and_linearize(t_unit)
        code = generate_code(lin, cache=False).device_code()
    if specs is not None:
        specs.extend(jit_primer.launch_specs(lin) or ())
    knl = lin.default_entrypoint
    canon = {n: f"n{k}" for k, n in enumerate(names)}
    subst = SubstitutionMapper(make_subst_func(
        {n: prim.Variable(c) for n, c in canon.items()}))
    try:
        subkernels = linearized_subkernels(knl, lin.callables_table)
    except UnsupportedByTargetError as e:
        raise SplitNotPossible(str(e)) from e
    launches = []
    for sub in subkernels:
        passed = []
        for n in sub.arg_names:
            if n not in canon:
                raise SplitNotPossible(f"argument {n!r} of a device kernel "
                                       "has no canonical name")
            passed.append(canon[n])
        launches.append((sub.name, tuple(passed),
                         tuple(subst(g) for g in sub.group_count),
                         tuple(subst(s) for s in sub.local_size)))
    if isinstance(lin.target, lp.PyOpenCLTarget) \
            and getattr(lin.target, "limit_arg_size_nbytes", None) is not None:
        raise SplitNotPossible("limit_arg_size_nbytes")
    return CompiledSubUnit(code, tuple(launches))


def _import_code_generation() -> None:
    """Import :mod:`loopy` and pytato's modules that run it on a sub-unit
    (in a worker process, before its jobs arrive: ``import pytato``
    leaves loopy unimported, see :mod:`pytato.lazy_imports`)."""
    # (loopy's passes: imported where sub-units are generated)
    import pytato.target.loopy.run.preprocessing  # noqa: F401


# a worker process: its argument is the parent's sys.path (JSON); it runs
# _worker_main, which imports pytato's code generation and loopy first (so
# that workers started early, see _early_workers, import while the parent
# splits the kernel), then speaks the frames of JobProcesses: a header
# (device address or None, prime), then a job a frame (translation unit,
# canonical names), each answered with its CompiledSubUnit
_WORKER = """
import json, sys, time
start = time.perf_counter()
sys.path[:0] = json.loads(sys.argv[1])
from pytato.target.loopy.run.split_build import _worker_main
_worker_main(start)
"""


def _start_workers(count: int) -> list[subprocess.Popen[bytes]]:
    """*count* worker processes (:data:`_WORKER`), started."""
    return start_processes(_WORKER, count, [json.dumps(sys.path)])


#: Where a worker process finds the parent's device: the numbers of its
#: platform and of the device (see
#: :func:`~pytato.target.loopy.run.launch_once.device_index`), and the build
#: options.
_DeviceAddress = tuple[int, int, "Sequence[str] | str | None"]


def _device_address(device: cl.Device, options: Sequence[str] | str | None
                    ) -> _DeviceAddress:
    return (*device_index(device), options)


class _WorkerBuilds:
    """The builds of a worker process, in a thread of their own, in the
    order given, while the process generates the next sub-units: each
    code built for the device at the address (pyopencl keeps the binaries
    on disk, where the parent's build of the same source finds them), then
    each kernel of its launch specifications launched once
    (:func:`~pytato.target.loopy.run.launch_once.launch_each_once`: PoCL
    keeps the kernels compiled for their launch on disk too). Failures are
    left to the parent's build and launches, which report them."""

    def __init__(self, address: _DeviceAddress) -> None:
        self.address = address
        self._todo: SimpleQueue[
            tuple[str, Sequence[jit_primer.LaunchSpec]] | None] = \
            SimpleQueue()
        self.busy = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="pytato-worker-builds")
        self._thread.start()

    def add(self, code: str, specs: Sequence[jit_primer.LaunchSpec]) -> None:
        self._todo.put((code, specs))

    def finish(self) -> None:
        """Wait until all is built."""
        self._todo.put(None)
        self._thread.join()

    def _run(self) -> None:
        platform, device, options = self.address
        context = None
        while (item := self._todo.get()) is not None:
            start = time.perf_counter()
            code, specs = item
            try:
                if context is None:
                    context = cl.Context(
                        [cl.get_platforms()[platform].get_devices()[device]])
                kernels = _program_kernels(
                    cl.Program(context, code).build(options=options))
                if specs:
                    launch_each_once(context, kernels, specs)
            except cl.Error as e:  # the parent builds (and reports) anyway
                _logger.debug("build in a worker process failed: %s", e)
            self.busy += time.perf_counter() - start


def _worker_main(start: float) -> None:
    """The loop of a worker process (:data:`_WORKER`, started at *start*)."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _import_code_generation()
    imported = time.perf_counter()
    header = read_frame(stdin)
    assert header is not None
    address, prime = pickle.loads(header)
    builds = None if address is None else _WorkerBuilds(address)
    first = None
    jobs = 0
    loopy = 0.0
    while (frame := read_frame(stdin)) is not None:
        t = time.perf_counter()
        if first is None:
            first = t
        t_unit, names = program_store._loads(frame)
        specs: list[jit_primer.LaunchSpec] | None = \
            [] if prime and builds is not None else None
        comp = _compile_one(t_unit, names, specs)
        write_frame(stdout, pickle.dumps(comp,
                                         protocol=pickle.HIGHEST_PROTOCOL))
        if builds is not None:
            builds.add(comp.code, specs or ())
        jobs += 1
        loopy += time.perf_counter() - t
    answered = time.perf_counter()
    if builds is not None:
        builds.finish()
    end = time.perf_counter()
    # (logged by the parent at the DEBUG level)
    sys.stderr.write(
        f"{jobs} jobs; import {imported - start:.2f} s, first job after "
        f"{(first or answered) - imported:.2f} s, loopy {loopy:.2f} s, "
        f"builds {0 if builds is None else builds.busy:.2f} s, "
        f"{end - answered:.2f} s of them after the last answer")


def _job_input(t_unit: lp.TranslationUnit, unit: SubUnit) -> bytes:
    """What a worker process gets to generate *unit* (see
    :func:`_worker_main`): its kernel's translation unit, and its canonical
    names."""
    return program_store._dumps((_unit_t_unit(t_unit, unit),
                                 unit.canonical_names))


class _SubUnitJobs:
    """The distinct sub-units of a kernel generated by :mod:`loopy` as they
    come (:meth:`add`): taken from the program store where they are there,
    else generated in the worker processes *workers* (a
    :class:`~pytato.target.loopy.run.job_processes.JobProcesses`, the
    costliest first), or, with no workers, in this process when the result
    is asked for (:meth:`result`). *device*, *prime*: see
    :func:`compile_sub_units`."""

    def __init__(self, t_unit: lp.TranslationUnit,
                 device: cl.Device | None,
                 workers: Sequence[subprocess.Popen[bytes]] = (),
                 prime: bool = False) -> None:
        self.t_unit = t_unit
        self.device = device
        self.use_store = program_store.store_enabled()
        self.done: dict[str, CompiledSubUnit] = {}
        self.todo: dict[str, SubUnit] = {}
        self.processes: JobProcesses | None = None
        self.start(workers, prime)

    def start(self, workers: Sequence[subprocess.Popen[bytes]],
              prime: bool = False) -> None:
        """Hand the sub-units added so far, and those to come, to the
        worker processes *workers* (none: this process generates them)."""
        if not workers:
            return
        assert self.processes is None
        device = self.device
        address = None if device is None else _device_address(
            device, device_build_options(
                [device],
                self.t_unit.default_entrypoint.options.build_options))
        self.processes = JobProcesses(
            workers, pickle.dumps((address, prime)), "code generation",
            error_chars=3000)
        for unit in self.todo.values():
            self._submit(unit)

    def _submit(self, unit: SubUnit) -> None:
        assert self.processes is not None
        self.processes.submit(unit.key, unit_weight(unit.instructions) + 1,
                              lambda: _job_input(self.t_unit, unit))

    def add(self, unit: SubUnit) -> None:
        """Have *unit* generated, unless one of its key is."""
        key = unit.key
        if key in self.done or key in self.todo:
            return
        if self.use_store:
            try:
                stored = program_store.load(_sub_key(unit), "sub-unit")
            except program_store.NotPersistentError:
                self.use_store = False
                stored = None
            if stored is not None:
                self.done[key] = stored
                STATS["store_hits"] += 1
                return
        if unit.kernel is None:
            raise _KernelNeeded(key)
        self.todo[key] = unit
        if self.processes is not None:
            self._submit(unit)

    def close(self) -> None:
        """Say that no more sub-units come (the worker processes finish
        theirs, and exit)."""
        if self.processes is not None:
            self.processes.close()

    def cancel(self) -> None:
        """Stop the worker processes."""
        if self.processes is not None:
            self.processes.cancel()

    def result(self) -> dict[str, CompiledSubUnit]:
        """The :class:`CompiledSubUnit` of each key added (waiting for the
        worker processes; generating in this process what they did not, if
        they failed)."""
        if self.processes is not None:
            try:
                answers = self.processes.results()
            except JobProcessError as e:
                # (a process that died: here, where an error of the code
                # generation is raised as it is)
                _logger.warning("code generation in worker processes "
                                "failed, generating in this process: %s", e)
                answers = {}
            self.processes = None
        else:
            answers = {}
        for key, unit in self.todo.items():
            answer = answers.get(key)
            comp = (pickle.loads(answer) if answer is not None
                    else _compile_one(_unit_t_unit(self.t_unit, unit),
                                      unit.canonical_names))
            self.done[key] = comp
            STATS["generated"] += 1
            if self.use_store:
                program_store.save(_sub_key(unit), "sub-unit", comp)
        self.todo.clear()
        return self.done


def _unit_t_unit(t_unit: lp.TranslationUnit, unit: SubUnit
                 ) -> lp.TranslationUnit:
    assert unit.kernel is not None
    name = unit.kernel.name
    # with the unit's kernel, the resolved functions that are not kernels
    # (math functions resolved in the bodies of traced functions inlined by
    # the default schedule, pytato.target.loopy.schedule.callees); loopy
    # drops those the kernel does not call
    return t_unit.copy(
        callables_table=constantdict({
            **{n: c for n, c in t_unit.callables_table.items()
               if not isinstance(c, lp.CallableKernel)},
            name: lp.CallableKernel(unit.kernel)}),
        entrypoints=frozenset({name}))


#: Instructions to generate per worker process, at least: a process
#: costs about a second to start and import loopy and pytato, and loopy
#: takes about 5 ms an instruction, so smaller programs are generated in
#: the calling process.
MIN_INSTRUCTIONS_PER_WORKER = 200


def _workers(sizes: Sequence[int]) -> int:
    """The number of worker processes for sub-units of *sizes*
    instructions (:data:`~pytato.target.loopy.run.split.SPLIT_WORKERS_ENV`,
    else one per :data:`MIN_INSTRUCTIONS_PER_WORKER` instructions, at most
    one per usable CPU)."""
    from_env = count_from_env(SPLIT_WORKERS_ENV, len(sizes))
    if from_env is not None:
        return from_env
    return max(1, min(len(sizes), _usable_cpus(),
                      sum(sizes) // MIN_INSTRUCTIONS_PER_WORKER))


def _early_workers(knl: lp.LoopKernel) -> list[subprocess.Popen[bytes]]:
    """Worker processes started before *knl* is split, so that they import
    pytato while it is (as many as :func:`_workers` would give if all of
    its instructions were to be generated; none below two)."""
    n = _workers([1] * len(knl.instructions)) if len(knl.instructions) \
        else 0
    workers = _take_prestarted(n if n >= 2 else 0)
    if n >= 2 and len(workers) < n:
        workers += _start_workers(n - len(workers))
    return workers


def _sub_key(unit: SubUnit) -> str:
    return hashlib.sha256(repr((
        "pytato-sub-unit", program_store.STORE_VERSION,
        program_store._source_digest(), program_store._dependency_versions(),
        unit.key)).encode()).hexdigest()


#: counts of the work done, for tests: sub-units generated by loopy
STATS = {"generated": 0, "store_hits": 0}


def compile_sub_units(t_unit: lp.TranslationUnit,
                      units: Sequence[SubUnit],
                      device: cl.Device | None = None,
                      workers: Sequence[subprocess.Popen[bytes]] = (),
                      prime: bool = False
                      ) -> dict[str, CompiledSubUnit]:
    """The :class:`CompiledSubUnit` of each distinct key of *units*
    (sub-units of the kernel of *t_unit*), from the program store where it
    is there, else generated by :mod:`loopy`, in worker processes
    (:data:`~pytato.target.loopy.run.split.SPLIT_WORKERS_ENV`) where there
    are several to generate, each process taking the costliest sub-unit
    left when it is done with one. With a *device*, the workers also build
    the code they generate for it (with the kernel's build options, while
    they generate the next), so that the caller's builds find the
    binaries in pyopencl's on-disk cache. *workers* are worker processes
    started earlier (:func:`_start_workers`), used first; they are stopped
    when done or not needed. If *prime*, the workers also launch each
    device kernel once after building it (see :func:`_worker_main`)."""
    try:
        # (store lookups first: the number of processes is that of the
        # sub-units left)
        jobs = _SubUnitJobs(t_unit, device)
        for unit in units:
            jobs.add(unit)
        todo = list(jobs.todo.values())
        nworkers = _workers([len(u.instructions) for u in todo])
        procs: list[subprocess.Popen[bytes]] = []
        if nworkers > 1:
            procs = list(workers[:nworkers])
            stop_processes(workers[nworkers:])
            if len(procs) < nworkers:
                try:
                    procs += _start_workers(nworkers - len(procs))
                except OSError as e:
                    _logger.warning("worker processes not started, "
                                    "generating in this process: %s", e)
        else:
            stop_processes(workers)
        with PhaseTimer(_logger, f"loopy on {len(todo)} distinct sub-units "
                        f"({len(units)} in all, {max(len(procs), 1)} "
                        "processes)"):
            jobs.start(procs, prime)
            return jobs.result()
    finally:
        stop_processes(workers)


# {{{ host side

class SplitKernelPlan(KernelPlan):
    """The :class:`~pytato.target.loopy.run.launcher.KernelPlan` of a split
    program: the device kernels of its sub-units in order, with the
    program's arrays and value arguments in place of the canonical ones of
    the generated sub-units."""

    def __init__(self, executor: SplitExecutor) -> None:
        facts = executor.facts
        compiled = executor.compiled()
        subkernels = []
        constants: dict[str, int] = {}
        for unit in executor.units:
            comp = compiled[unit.key]
            names = {f"n{k}": n for k, n in enumerate(unit.canonical_names)}
            # hoisted constants: their values in the work sizes, value
            # arguments of the device kernels (see typed_values)
            values = {n: hoisted_value(n) for n in names.values()}
            subst = SubstitutionMapper(make_subst_func(
                {c: prim.Variable(n) if values[n] is None else values[n]
                 for c, n in names.items()}))
            for name, passed, gsize, lsize in comp.launches:
                arg_names = tuple(names[c] for c in passed)
                constants.update((n, values[n]) for n in arg_names
                                 if values[n] is not None)
                subkernels.append(SubkernelInfo(
                    name, arg_names,
                    tuple(subst(g) for g in gsize),
                    tuple(subst(s) for s in lsize)))
        self.subkernels = tuple(subkernels)
        index_dtype = facts.index_dtype
        #: the hoisted constants passed to the device kernels, typed
        self._constants = {n: index_dtype.type(v)
                           for n, v in sorted(constants.items())}
        self.value_args = {}
        self.input_arrays = []
        self.outputs = []
        self._strides = {}
        self._array_info = {}
        for arg in facts.args:
            if arg.kind == "value" and arg.dtype is not None:
                self.value_args[arg.name] = arg.dtype
                continue
            if arg.kind != "array" or arg.dtype is None:
                raise UnsupportedByTargetError(
                    f"argument {arg.name!r} is not supported by the split path")
            # (KernelFacts keep the strides of outputs only)
            self._add_array_argument(arg.name, arg.shape, arg.dtype,
                                     arg.strides if arg.is_output else None)
        passed = {n for sk in self.subkernels for n in sk.arg_names}
        dtypes = executor.temporary_dtypes()
        self._temporaries = {
            name: (tv.shape, dtypes[name])
            for name, tv in facts.temporaries.items() if name in passed}
        self.zeroed = frozenset(name for name in self._temporaries
                                if facts.temporaries[name].zeroed)
        self.return_dict = facts.options.return_dict
        self.no_numpy = facts.options.no_numpy
        self.options = facts.options
        kernels = executor.cl_kernels()
        self.cl_programs = {sk.name: kernels[sk.name].program
                            for sk in self.subkernels}
        self.cl_program = (self.cl_programs[self.subkernels[0].name]
                           if self.subkernels else None)

    def typed_values(self, values: Mapping[str, Any]) -> dict[str, np.generic]:
        """The value arguments as numpy scalars of the kernel's types, and
        the constants hoisted out of the sub-units (see
        :func:`~pytato.target.loopy.run.split_sizes.hoisted_name`)."""
        return {**super().typed_values(values), **self._constants}


class SplitExecutor:
    """An executor of a program whose kernel is split into sub-units (see
    the module documentation), with the interface that
    :mod:`pytato.target.loopy.run.instrumented` and
    :mod:`pytato.target.loopy.run.programs` use of :mod:`loopy`'s
    executors: call it as one (``executor(queue, **kwargs)``); its
    :class:`SplitKernelPlan` is :meth:`kernel_plan`.

    :arg facts: the :class:`~pytato.target.loopy.run.kernel_facts.KernelFacts`
        of the kernel (its arguments, temporaries and options: all that
        running it needs).
    :arg units: the sub-units of the kernel (:func:`split_kernel`).
    :arg full_unit: gives the translation unit, read where it is needed (a
        sub-unit missing from the store, or the attribute :attr:`t_unit`):
        a program from the program store runs from *facts* and the
        compiled sub-units there, without :mod:`loopy`.

    .. attribute:: t_unit

        The translation unit.

    .. attribute:: facts
    """

    def __init__(self, context: cl.Context, facts: KernelFacts,
                 units: Sequence[SubUnit],
                 full_unit: Callable[[], lp.TranslationUnit],
                 store_key: str | None = None,
                 groups: int | None = None,
                 jobs: _SubUnitJobs | None = None,
                 ) -> None:
        self.context = context
        self.facts = facts
        self._unit: lp.TranslationUnit | None = None
        self._full_unit = full_unit
        self.entrypoint = facts.name
        self.units = tuple(units)
        self.store_key = store_key
        #: the *groups* of :func:`~pytato.target.loopy.run.split.split_kernel`
        self.groups = groups
        # the code generation of the sub-units started while the kernel
        # was split (see make_split_executor); its worker processes are
        # stopped if the executor goes unused
        self._jobs = jobs
        self._stop_jobs = None if jobs is None else weakref.finalize(
            self, jobs.cancel)
        self._compiled: dict[str, CompiledSubUnit] | None = None
        self._kernels: dict[str, cl.Kernel] | None = None
        self._plan: SplitKernelPlan | None = None
        self._dtypes: dict[str, np.dtype[Any]] | None = None

    @property
    def t_unit(self) -> lp.TranslationUnit:
        if self._unit is None:
            self._unit = self._full_unit()
        return self._unit

    def arg_to_dtype(self, kwargs: Mapping[str, Any]) -> None:
        """As :mod:`loopy`'s executors (argument types are the kernel's)."""
        return None

    def compiled(self) -> dict[str, CompiledSubUnit]:
        """The generated sub-units by key (:func:`compile_sub_units`)."""
        if self._compiled is None and self._jobs is not None:
            assert self._stop_jobs is not None
            self._stop_jobs.detach()
            jobs, self._jobs = self._jobs, None
            self._compiled = jobs.result()
        if self._compiled is None:
            try:
                # (a unit not loaded yet is not needed: sub-units of the
                # store have no kernels, and one missing there raises)
                self._compiled = compile_sub_units(self._unit, self.units,
                                                   self._build_device(),
                                                   prime=self._prime())
            except _KernelNeeded:
                # sub-units from the store, not all of them there: split
                with PhaseTimer(_logger, "kernel split into sub-units"):
                    self.units = tuple(split_kernel(
                        self.t_unit[self.entrypoint], _open_dtypes(
                            self.t_unit, self.entrypoint),
                        **_merging(self.groups)))
                self._compiled = compile_sub_units(self.t_unit, self.units,
                                                   self._build_device(),
                                                   prime=self._prime())
        return self._compiled

    def _prime(self) -> bool:
        return _primes(self.groups, self._build_device())

    def _build_device(self) -> cl.Device | None:
        return _build_device(self.context)

    def temporary_dtypes(self) -> dict[str, np.dtype[Any]]:
        """The types of the kernel's temporaries (inferred where the
        kernel leaves them open)."""
        if self._dtypes is None:
            knl = self.t_unit[self.entrypoint]
            if any(tv.dtype is None
                   for tv in knl.temporary_variables.values()):
                with loopy_caching_off():
                    knl = lp.infer_unknown_types(
                        self.t_unit, expect_completion=False)[self.entrypoint]
            self._dtypes = {
                n: np.dtype(tv.dtype.numpy_dtype)
                for n, tv in knl.temporary_variables.items()
                if tv.dtype is not None}
        return self._dtypes

    def cl_kernels(self) -> dict[str, cl.Kernel]:
        """The device kernels of the distinct sub-units, by name (the code
        of each built as a program of its own, several at once)."""
        if self._kernels is None:
            codes = [c.code for c in self.compiled().values()]
            options = device_build_options(
                self.context.devices, list(self.facts.options.build_options))
            # one program per distinct sub-unit (its source is the same in
            # every program that has it: the driver's cache, and the
            # binaries in the program store, find it), built in threads
            with PhaseTimer(_logger, f"OpenCL build ({len(codes)} programs)"):
                programs = build_programs(self.context, codes, options,
                                          threads=_usable_cpus())
            kernels: dict[str, cl.Kernel] = {}
            for program in programs:
                kernels.update(_program_kernels(program))
            self._kernels = kernels
        return self._kernels

    def kernel_plan(self) -> SplitKernelPlan:
        """The :class:`SplitKernelPlan` (built on first use)."""
        if self._plan is None:
            self._plan = SplitKernelPlan(self)
            if self.store_key is not None and program_store.store_enabled():
                program_store.save(self.store_key, "split-units", (
                    [(u.key, u.canonical_names) for u in self.units],
                    self.temporary_dtypes()))
        return self._plan

    def __call__(self, queue: cl.CommandQueue, *, allocator: Any = None,
                 wait_for: Any = None, out_host: bool | None = None,
                 **kwargs: Any) -> Any:
        plan = self.kernel_plan()
        for name in plan.input_arrays:
            value = kwargs.get(name)
            if isinstance(value, cla.Array) and (
                    value.offset or not value.flags.c_contiguous):
                # a plain copy for the kernel argument
                kwargs[name] = cla.to_device(queue, value.get(queue=queue),
                                             allocator=allocator)
        return run_instrumented(self, queue, allocator=allocator,
                                       wait_for=wait_for, out_host=out_host,
                                       **kwargs)

# }}}


def _build_device(context: cl.Context) -> cl.Device | None:
    """The device that worker processes build the code for (the
    context's, if it has one)."""
    devices = context.devices
    return devices[0] if len(devices) == 1 else None


def _primes(groups: int | None, device: cl.Device | None) -> bool:
    """Whether the worker processes launch each device kernel once
    (merged sub-units, see :func:`merged_split_groups`)."""
    return (groups is not None and device is not None
            and jit_primer.enabled(device))


def _merging(groups: int | None) -> dict[str, Any]:
    """The arguments of :func:`~pytato.target.loopy.run.split.split_kernel`
    for *groups* merged sub-units (:func:`merged_split_groups`), None for
    a sub-unit a phase: merged sub-units keep their sizes (hoisted sizes
    are value arguments, whose kernels the worker processes could not
    launch ahead of the call, see :data:`_WORKER`)."""
    if groups is None:
        return {}
    return {"groups": groups, "hoist": False}


def _open_dtypes(t_unit: lp.TranslationUnit, entrypoint: str
                 ) -> dict[str, Any] | None:
    """The inferred types of the temporaries of *t_unit* whose type it
    leaves open (None if there are none)."""
    knl = t_unit[entrypoint]
    if all(tv.dtype is not None for tv in knl.temporary_variables.values()):
        return None
    with PhaseTimer(_logger, "type inference before the split"), \
            loopy_caching_off():
        typed = lp.infer_unknown_types(t_unit, expect_completion=False)
    return {n: tv.dtype for n, tv
            in typed[entrypoint].temporary_variables.items()
            if tv.dtype is not None}


def make_split_executor(facts: KernelFacts, context: cl.Context,
                        full_unit: Callable[[], lp.TranslationUnit],
                        store_key: str | None = None,
                        groups: int | None = None) -> SplitExecutor | None:
    """A :class:`SplitExecutor` of the unit whose entrypoint has the
    :class:`~pytato.target.loopy.run.kernel_facts.KernelFacts` *facts* if it
    can be split (a single, scheduled, unpreprocessed kernel with global
    barriers), else None. *full_unit* gives the unit (as for
    :class:`SplitExecutor`). *groups*: as in
    :func:`~pytato.target.loopy.run.split.split_kernel` (see
    :func:`merged_split_groups`).
    With the program's *store_key*, its sub-units (keys and names) are
    taken from the program store if an earlier process saved them (their
    kernels then are not built, nor the unit read: their code is in the
    store too)."""
    if not facts.single_kernel or facts.preprocessed:
        return None
    if facts.packs_arguments:
        # arguments packed by loopy's host code: not in the split's plan
        return None
    if facts.options.write_code or facts.options.edit_code:
        return None
    if store_key is not None and program_store.store_enabled():
        stored = program_store.load(store_key, "split-units")
        if stored is not None:
            keys, dtypes = stored
            executor = SplitExecutor(
                context, facts,
                [SubUnit(None, key, tuple(names), ()) for key, names in keys],
                full_unit, store_key=store_key, groups=groups)
            executor._dtypes = dtypes
            _logger.info("program store hit for the %d sub-units", len(keys))
            return executor
    t_unit = full_unit()
    knl = t_unit[facts.name]
    # workers import pytato while the kernel is split, and generate the
    # sub-units as the split makes them
    workers = _early_workers(knl)
    jobs = None
    try:
        if workers:
            device = _build_device(context)
            jobs = _SubUnitJobs(t_unit, device, workers,
                                _primes(groups, device))
        with PhaseTimer(_logger, "kernel split into sub-units"):
            units = split_kernel(knl, _open_dtypes(t_unit, facts.name),
                                 on_unit=None if jobs is None else jobs.add,
                                 **_merging(groups))
    except SplitNotPossible as e:
        if jobs is not None:
            jobs.cancel()
        stop_processes(workers)
        _logger.info("kernel not split: %s", e)
        return None
    except BaseException:
        if jobs is not None:
            jobs.cancel()
        stop_processes(workers)
        raise
    if jobs is not None:
        jobs.close()
    _logger.info("kernel split into %d sub-units, %d distinct", len(units),
                 len({u.key for u in units}))
    executor = SplitExecutor(context, facts, units, lambda: t_unit,
                             store_key=store_key, groups=groups, jobs=jobs)
    executor._unit = t_unit
    return executor


#: Kernels of fewer instructions than this are not split on CPUs
#: (:func:`merged_split_groups`): below it, starting the worker processes
#: (about a second each to import loopy and pytato) costs more than
#: :mod:`loopy` (a few milliseconds an instruction) in one process.
MIN_MERGED_SPLIT_INSTRUCTIONS = 1000


def merged_split_groups(devices: Sequence[cl.Device], ninstructions: int
                        ) -> int | None:
    """The number of merged sub-units (the *groups* of
    :func:`~pytato.target.loopy.run.split.split_kernel`) in which a kernel
    of *ninstructions* instructions for *devices* is generated in
    parallel, or None for the single kernel: one per usable CPU where the
    devices are CPUs, there are several usable CPUs and the kernel has at
    least :data:`MIN_MERGED_SPLIT_INSTRUCTIONS` instructions, unless
    :data:`~pytato.target.loopy.run.split.SPLIT_ENV` is set (which chooses
    the path, see :func:`~pytato.target.loopy.run.split.split_enabled`).

    On a CPU the device kernels stay as many and as large as the
    schedule made them (a sub-unit a phase would give the device's
    compiler one program a kernel): :mod:`loopy` generates the merged
    sub-units in worker processes, which then build them and launch each
    device kernel once (:data:`_WORKER`), so that PoCL's compilation of
    each kernel at its first launch is done there too, in parallel."""
    return _merged_groups(bool(devices) and all(
        d.type & cl.device_type.CPU for d in devices), ninstructions)


def _merged_groups(cpu: bool, ninstructions: int) -> int | None:
    """:func:`merged_split_groups` for devices that are CPUs (*cpu*) and a
    kernel of *ninstructions* instructions."""
    if os.environ.get(SPLIT_ENV, "").strip() or not cpu:
        return None
    cpus = count_from_env(SPLIT_WORKERS_ENV, _usable_cpus())
    if cpus is None:
        cpus = _usable_cpus()
    if cpus < 2 or ninstructions < MIN_MERGED_SPLIT_INSTRUCTIONS:
        return None
    return cpus


# worker processes started ahead (prestart_merged_workers), not yet used
_PRESTARTED: list[subprocess.Popen[bytes]] = []
_PRESTARTED_LOCK = threading.Lock()


def prestart_merged_workers(cpu: bool, ninstructions: int) -> None:
    """Start a worker process of merged sub-units
    (:func:`merged_split_groups`) for a kernel of about *ninstructions*
    instructions on CPU devices (*cpu*), if it will be one, while the
    calling process still schedules it: it imports pytato on a core the
    calling process leaves idle, instead of while the kernel is split
    (one process: with more, on two cores, the calling process would
    wait for them). The next split takes it (:func:`_early_workers`, which
    starts the others); one not taken is stopped when a program does not
    take the merged path (:func:`discard_prestarted_workers`), or at exit.
    Does nothing if such a process waits already."""
    groups = _merged_groups(cpu, ninstructions)
    if groups is None:
        return
    with _PRESTARTED_LOCK:
        _PRESTARTED[:] = [p for p in _PRESTARTED if p.poll() is None]
        if _PRESTARTED:
            return
        try:
            _PRESTARTED.extend(_start_workers(1))
        except OSError as e:
            _logger.info("worker processes not started ahead: %s", e)


def _take_prestarted(count: int) -> list[subprocess.Popen[bytes]]:
    """Up to *count* of the processes started ahead, running (the others
    are stopped)."""
    with _PRESTARTED_LOCK:
        alive = [p for p in _PRESTARTED if p.poll() is None]
        _PRESTARTED.clear()
    stop_processes(alive[count:])
    return alive[:count]


def discard_prestarted_workers() -> None:
    """Stop the worker processes that :func:`prestart_merged_workers`
    started and no split took (for a program that did not take the merged
    path after all)."""
    stop_processes(_take_prestarted(0))


atexit.register(discard_prestarted_workers)

# vim: foldmethod=marker
