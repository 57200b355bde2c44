"""Stage 3 of the loopy backend: running.

**In:** a scheduled :class:`loopy.TranslationUnit`, an OpenCL context and
the arguments of a call.

**Out:** the results, as :class:`pyopencl.array.Array` objects, after
building (once per device, through the on-disk program store) and launching
the kernels.

* :mod:`~pytato.target.loopy.run.programs`: the targets and the bound
  program objects that :func:`~pytato.target.loopy.generate_loopy` returns;
* :mod:`~pytato.target.loopy.run.deferred_schedule`: the schedule of a
  program generated without a device, for the device of its first call;
* :mod:`~pytato.target.loopy.run.arguments`: checking and converting
  arguments;
* :mod:`~pytato.target.loopy.run.queues`: what is kept per command queue
  (its flags, its default memory pool);
* :mod:`~pytato.target.loopy.build.preprocessing` and
  :mod:`~pytato.target.loopy.run.executor`: loopy's preprocessing, code
  generation and the device builds, and
  :mod:`~pytato.target.loopy.build.parallel_builds` the builds of several
  programs at once and the worker processes;
* :mod:`~pytato.target.loopy.build.target_parameters`: what the loopy
  target of a program is made from;
* :mod:`~pytato.target.loopy.build.cl_target`: pytato's OpenCL loopy target;
* :mod:`~pytato.target.loopy.store.program_store`: the on-disk store of
  generated programs, and :mod:`~pytato.target.loopy.store.program_cache`
  the in-memory cache;
* :mod:`~pytato.target.loopy.run.dispatch`: how a checked call reaches the
  device, through one of:
* :mod:`~pytato.target.loopy.run.fast_call`: the fast path of repeated
  calls;
* :mod:`~pytato.target.loopy.run.instrumented`: the runs that enqueue the
  kernels one by one, traced and profiled;
* :mod:`~pytato.target.loopy.run.launcher`: the program launcher and the
  kernel plan of an executor;
* :mod:`~pytato.target.loopy.run.statistics`: the profiling statistics of
  programs.

Within the stage, imports go one way: ``programs`` builds on the others;
``dispatch`` on ``instrumented``, ``fast_call`` and ``launcher``;
``instrumented`` on ``fast_call``; ``fast_call`` on ``launcher``,
``queues`` and ``statistics``; ``deferred_schedule`` on ``program_store``.

A process whose programs are all in the program store runs them without
importing :mod:`loopy` (see :mod:`pytato.lazy_imports`): the modules on
that path (``programs``, ``deferred_schedule``, ``dispatch``,
``fast_call``, ``instrumented``, ``launcher``, ``split_build``,
``parallel_builds``, ``program_store``, ``stored_unit``, ...) import
:mod:`loopy` and the modules that need it (``cl_target``, ``executor``,
``preprocessing``, the lowering and schedule stages) where they are
used.
"""
