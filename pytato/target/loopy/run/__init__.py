"""The run stage of the loopy backend: programs and their calls.

**In:** a scheduled :class:`loopy.TranslationUnit` (or a lowered one, to
schedule for the device of its first call), an OpenCL context and the
arguments of a call.

**Out:** the results, as :class:`pyopencl.array.Array` objects, after
building (once per device, through the build stage
:mod:`pytato.target.loopy.build` and the program store
:mod:`pytato.target.loopy.store`) and launching the kernels.

* :mod:`~pytato.target.loopy.run.programs`: the targets and the bound
  program objects that :func:`~pytato.target.loopy.generate_loopy` returns;
* :mod:`~pytato.target.loopy.run.deferred_schedule`: the schedule of a
  program generated without a device, for the device of its first call
  (the run stage calls the schedule stage there);
* :mod:`~pytato.target.loopy.run.arguments`: checking and converting
  arguments;
* :mod:`~pytato.target.loopy.run.queues`: what is kept per command queue
  (its flags, its default memory pool);
* :mod:`~pytato.target.loopy.run.executors`: which executor runs a
  program: :mod:`~pytato.target.loopy.run.executor`, the :mod:`loopy`
  executor (its code and builds through the build stage), or
  :mod:`~pytato.target.loopy.run.split_executor`, that of a program whose
  kernel is split into sub-units;
* :mod:`~pytato.target.loopy.run.kernel_facts` and
  :mod:`~pytato.target.loopy.run.stored_unit`: what running a kernel
  needs of it, and the translation units of the program store unpickled
  when first needed;
* :mod:`~pytato.target.loopy.run.pickling`: pickling programs without
  their device state;
* :mod:`~pytato.target.loopy.run.dispatch`: how a checked call reaches the
  device, through one of:
* :mod:`~pytato.target.loopy.run.fast_call`: the fast path of repeated
  calls (what depends on the sizes in
  :mod:`~pytato.target.loopy.run.sized_calls`);
* :mod:`~pytato.target.loopy.run.instrumented`: the runs that enqueue the
  kernels one by one, traced and profiled;
* :mod:`~pytato.target.loopy.run.launcher`: the program launcher and the
  kernel plan of an executor (with the locks of
  :mod:`~pytato.target.loopy.run.call_locks`);
* :mod:`~pytato.target.loopy.run.statistics`: the profiling statistics of
  programs, and :mod:`~pytato.target.loopy.run.launched` the launchers and
  statistics that programs and executables share.

Within the stage, imports go one way: ``programs`` builds on the others;
``dispatch`` on ``instrumented``, ``fast_call`` and ``launcher``;
``instrumented`` on ``fast_call``; ``fast_call`` on ``launcher``,
``queues`` and ``statistics``; ``split_executor`` on ``instrumented`` and
``launcher``; ``deferred_schedule`` on ``stored_unit``.

A process whose programs are all in the program store runs them without
importing :mod:`loopy` (see :mod:`pytato.lazy_imports`): the modules on
that path (``programs``, ``deferred_schedule``, ``dispatch``,
``fast_call``, ``instrumented``, ``launcher``, ``split_executor``,
``stored_unit``, and of the build stage ``split_build`` and
``parallel_builds``, ...) import :mod:`loopy` and the modules that need it
(``executor``, the build stage's ``cl_target`` and ``preprocessing``, the
lowering and schedule stages) where they are used.

The modules of this package that moved to the build and store stages
are still its attributes, and importable at their old paths (see
:mod:`pytato.target.loopy._compat`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from pytato.target.loopy._compat import MOVED_MODULES


def __getattr__(name: str) -> ModuleType:
    # the modules that moved to the build and store stages, as attributes
    # of this package as before (through their alias modules)
    if f"{__name__}.{name}" in MOVED_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
