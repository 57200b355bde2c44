"""Stage 3 of the loopy backend: running.

**In:** a scheduled :class:`loopy.TranslationUnit`, an OpenCL context and
the arguments of a call.

**Out:** the results, as :class:`pyopencl.array.Array` objects, after
building (once per device, through the on-disk program store) and launching
the kernels.

* :mod:`~pytato.target.loopy.run.programs`: the targets and the bound
  program objects that :func:`~pytato.target.loopy.generate_loopy` returns;
* :mod:`~pytato.target.loopy.run.arguments`: checking and converting
  arguments;
* :mod:`~pytato.target.loopy.run.preprocessing` and
  :mod:`~pytato.target.loopy.run.executor`: loopy's preprocessing, code
  generation and the device builds;
* :mod:`~pytato.target.loopy.run.cl_target`: pytato's OpenCL loopy target;
* :mod:`~pytato.target.loopy.run.program_store`: the on-disk store of
  generated programs;
* :mod:`~pytato.target.loopy.run.launch`: the program launcher, the fast
  call path and the instrumented runs.
"""
