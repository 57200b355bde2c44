"""The host side of the split path: the executor of a program whose kernel
was cut into sub-units (:mod:`pytato.target.loopy.build.split`), generated
and built once each (:mod:`pytato.target.loopy.build.split_build`).

:class:`SplitExecutor` splits the scheduled kernel, has its distinct
sub-units compiled and built, and runs the program:
:class:`SplitKernelPlan` (a
:class:`~pytato.target.loopy.run.launcher.KernelPlan`) launches the device
kernels of the sub-units in order, each with its own arrays mapped onto
the arguments of the sub-unit that was generated.

.. autoclass:: SplitKernelPlan
.. autoclass:: SplitExecutor
.. autofunction:: make_split_executor
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
import pyopencl.array as cla
from pymbolic.mapper.substitutor import SubstitutionMapper, make_subst_func

from pytato.codegen import PhaseTimer
from pytato.diagnostic import UnsupportedByTargetError
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build import jit_primer
from pytato.target.loopy.build.binaries import build_programs, device_build_options
from pytato.target.loopy.build.parallel_builds import (
    _program_kernels,
    _usable_cpus,
    stop_processes,
)
from pytato.target.loopy.build.split import (
    SplitNotPossible,
    SubUnit,
    _KernelNeeded,
    split_kernel,
)
from pytato.target.loopy.build.split_build import (
    CompiledSubUnit,
    _early_workers,
    _SubUnitJobs,
    compile_sub_units,
)
from pytato.target.loopy.build.split_sizes import hoisted_value
from pytato.target.loopy.loopy_memos import loopy_caching_off
from pytato.target.loopy.run.instrumented import run_instrumented
from pytato.target.loopy.run.kernel_facts import KernelFacts
from pytato.target.loopy.run.launcher import (
    KernelPlan,
    SubkernelInfo,
)
from pytato.target.loopy.store import program_store


if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import loopy as lp
else:
    lp = lazy_module("loopy")


__all__ = [
    "SplitExecutor",
    "SplitKernelPlan",
    "make_split_executor",
]

_logger = logging.getLogger("pytato.target.loopy")


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
        :func:`~pytato.target.loopy.build.split_sizes.hoisted_name`)."""
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
        #: the *groups* of :func:`~pytato.target.loopy.build.split.split_kernel`
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
    """The arguments of :func:`~pytato.target.loopy.build.split.split_kernel`
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
    :func:`~pytato.target.loopy.build.split.split_kernel` (see
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


