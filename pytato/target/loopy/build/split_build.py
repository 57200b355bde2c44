"""The sub-units of a split kernel generated once each and built.

The sub-units of :mod:`pytato.target.loopy.build.split` with equal keys
compute the same thing on other arrays, so :mod:`loopy` preprocesses,
linearizes and generates code for one of them (:func:`compile_sub_units`),
and the device kernels are built once. Distinct sub-units can be generated
in worker processes
(:data:`~pytato.target.loopy.build.split.SPLIT_WORKERS_ENV`), started before
the kernel is split: each gets a sub-unit as soon as the split makes it
and the process is free (the costliest waiting first, see
:mod:`~pytato.target.loopy.build.job_processes`), and builds the code it
generated for the device while it generates the next. Results are
kept in the program store (:mod:`pytato.target.loopy.store.program_store`)
under the canonical key, so that programs sharing a kernel share its code.

The host side, which launches the device kernels of the sub-units, is
:mod:`pytato.target.loopy.run.split_executor`.

.. autoclass:: CompiledSubUnit
.. autofunction:: compile_sub_units
.. autodata:: MIN_INSTRUCTIONS_PER_WORKER
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
from dataclasses import dataclass
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

import pymbolic.primitives as prim
import pyopencl as cl
from constantdict import constantdict
from pymbolic.mapper.substitutor import SubstitutionMapper, make_subst_func

from pytato.diagnostic import UnsupportedByTargetError
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build import jit_primer
from pytato.target.loopy.build.binaries import device_build_options
from pytato.target.loopy.build.job_processes import (
    JobProcessError,
    JobProcesses,
    read_frame,
    write_frame,
)
from pytato.target.loopy.build.launch_once import device_index, launch_each_once
from pytato.target.loopy.build.parallel_builds import (
    _program_kernels,
    _usable_cpus,
    count_from_env,
    start_processes,
    stop_processes,
)
from pytato.target.loopy.build.split import (
    SPLIT_ENV,
    SPLIT_WORKERS_ENV,
    SplitNotPossible,
    SubUnit,
    _KernelNeeded,
    unit_weight,
)
from pytato.target.loopy.build.subkernels import (
    linearized_subkernels,
)
from pytato.target.loopy.store import program_store
from pytato.timing import FewerCollections, PhaseTimer


if TYPE_CHECKING:
    from collections.abc import Sequence

    import loopy as lp
else:
    lp = lazy_module("loopy")


__all__ = [
    "CompiledSubUnit",
    "compile_sub_units",
    "discard_prestarted_workers",
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
    :func:`~pytato.target.loopy.build.launch_once.launch_each_once` are
    appended to it (none where they depend on values of the call)."""
    with FewerCollections():
        # (loopy's passes: imported where a sub-unit is generated)
        from pytato.target.loopy.build.preprocessing import (
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
    import pytato.target.loopy.build.preprocessing  # noqa: F401


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
from pytato.target.loopy.build.split_build import _worker_main
_worker_main(start)
"""


def _start_workers(count: int) -> list[subprocess.Popen[bytes]]:
    """*count* worker processes (:data:`_WORKER`), started."""
    return start_processes(_WORKER, count, [json.dumps(sys.path)])


#: Where a worker process finds the parent's device: the numbers of its
#: platform and of the device (see
#: :func:`~pytato.target.loopy.build.launch_once.device_index`), and the build
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
    (:func:`~pytato.target.loopy.build.launch_once.launch_each_once`: PoCL
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
    :class:`~pytato.target.loopy.build.job_processes.JobProcesses`, the
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


#: Instructions to generate per worker process, at least: starting a
#: process and importing loopy and pytato costs about as much as loopy's
#: generation of this many instructions, so smaller programs are
#: generated in the calling process.
MIN_INSTRUCTIONS_PER_WORKER = 200


def _workers(sizes: Sequence[int]) -> int:
    """The number of worker processes for sub-units of *sizes*
    instructions (:data:`~pytato.target.loopy.build.split.SPLIT_WORKERS_ENV`,
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
    (:data:`~pytato.target.loopy.build.split.SPLIT_WORKERS_ENV`) where there
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


#: Kernels of fewer instructions than this are not split on CPUs
#: (:func:`merged_split_groups`): below it, starting the worker processes
#: (about a second each to import loopy and pytato) costs more than
#: :mod:`loopy` (a few milliseconds an instruction) in one process.
MIN_MERGED_SPLIT_INSTRUCTIONS = 1000


def merged_split_groups(devices: Sequence[cl.Device], ninstructions: int
                        ) -> int | None:
    """The number of merged sub-units (the *groups* of
    :func:`~pytato.target.loopy.build.split.split_kernel`) in which a kernel
    of *ninstructions* instructions for *devices* is generated in
    parallel, or None for the single kernel: one per usable CPU where the
    devices are CPUs, there are several usable CPUs and the kernel has at
    least :data:`MIN_MERGED_SPLIT_INSTRUCTIONS` instructions, unless
    :data:`~pytato.target.loopy.build.split.SPLIT_ENV` is set (which chooses
    the path, see :func:`~pytato.target.loopy.build.split.split_enabled`).

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
