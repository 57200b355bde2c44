"""The :mod:`loopy` executor behind programs and executables.

:class:`PhasedExecutor` is :mod:`loopy`'s
:class:`~loopy.target.pyopencl_execution.PyOpenCLExecutor` with two
changes:

* **One lookup per result.** :mod:`loopy` keeps the preprocessed and
  linearized translation unit, the generated code and the host code in
  on-disk caches (:class:`pytools.persistent_dict.WriteOncePersistentDict`):
  each lookup hashes the whole translation unit, loads the result and
  compares the stored key with the translation unit. For the 10 000-node
  random DAG of ``benchmarks/bench_codegen.py`` (about 4 000
  instructions) one such lookup cost about a second, and the first call of
  a program made several for the same result (the phase logging below, the
  executor's own call, the launch plan of later calls). Here the
  translation unit typed and linearized for given argument types is
  memoized on the executor, so each result is looked up once per executor.
* **No intermediate caches, no no-op pass.** The translation unit is
  preprocessed and linearized by
  :func:`pytato.target.loopy.preprocessing.preprocess_and_linearize`:
  :mod:`loopy`'s steps without their own on-disk caches (the result is
  stored in the executor's cache above) and without the inlining pass
  that has nothing to inline in a unit of one kernel; code is generated
  by :func:`pytato.target.loopy.preprocessing.generate_code`, without the
  renaming pass that changes nothing in a unit of one kernel.
* **Phase logging.** The first call logs, at ``INFO`` on
  ``pytato.target.loopy``, how long :mod:`loopy`'s preprocessing and
  linearization, its code generation, the OpenCL build and the host code
  took (each lookup or computation, whichever happened).

.. autoclass:: PhasedExecutor
.. autofunction:: make_executor
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from loopy.target.pyopencl_execution import (
    PyOpenCLExecutor,
    _KernelInfo,
    _Kernels,
)
from pytools import memoize_method

from pytato.codegen import PhaseTimer


if TYPE_CHECKING:
    import loopy as lp
    import pyopencl as cl


__all__ = ["PhasedExecutor", "make_executor"]

_logger = logging.getLogger("pytato.target.loopy")


class PhasedExecutor(PyOpenCLExecutor):
    """:mod:`loopy`'s executor for a translation unit on a
    :class:`pyopencl.Context`, with each result of :mod:`loopy`'s caches
    looked up once and each phase of the first call logged (see the module
    documentation)."""

    def get_typed_and_scheduled_translation_unit_uncached(
            self, arg_to_dtype: Any) -> lp.TranslationUnit:
        if arg_to_dtype:
            # argument types given at call time: loopy's type inference
            return super().get_typed_and_scheduled_translation_unit_uncached(
                arg_to_dtype)
        from pytato.target.loopy.preprocessing import preprocess_and_linearize
        return preprocess_and_linearize(self.t_unit)

    @memoize_method
    def get_typed_and_scheduled_translation_unit(
            self, arg_to_dtype: Any) -> lp.TranslationUnit:
        with PhaseTimer(_logger, "loopy preprocessing and linearization"):
            return super().get_typed_and_scheduled_translation_unit(
                arg_to_dtype)

    @memoize_method
    def translation_unit_info(self, arg_to_dtype: Any = None) -> Any:
        import pyopencl as cl

        from pytato.target.loopy.preprocessing import generate_code

        t_unit = self.get_typed_and_scheduled_translation_unit(arg_to_dtype)
        options = t_unit[self.entrypoint].options
        if options.write_code or options.edit_code:
            # loopy's debugging aids: loopy's own path
            return PyOpenCLExecutor.translation_unit_info.__wrapped__(
                self, arg_to_dtype)
        with PhaseTimer(_logger, "loopy code generation"):
            codegen_result = generate_code(t_unit)
            code = codegen_result.device_code()
        with PhaseTimer(_logger, "OpenCL build"):
            program = cl.Program(self.context, code).build(
                options=options.build_options)
        kernels = _Kernels()
        for name in program.kernel_names.split(";"):
            if name:
                setattr(kernels, name, getattr(program, name))
        with PhaseTimer(_logger, "loopy host code"):
            invoker = self.get_invoker(t_unit, self.entrypoint,
                                       codegen_result)
        return _KernelInfo(cl_kernels=kernels, invoker=invoker)


def make_executor(t_unit: lp.TranslationUnit, context: cl.Context) -> Any:
    """The executor of *t_unit* on *context*: a :class:`PhasedExecutor` for
    translation units of a :class:`loopy.PyOpenCLTarget` with one
    entrypoint, else ``t_unit.executor(context)``."""
    import loopy as lp
    if isinstance(t_unit.target, lp.PyOpenCLTarget) \
            and len(t_unit.entrypoints) == 1:
        (entrypoint,) = t_unit.entrypoints
        return PhasedExecutor(context, t_unit, entrypoint)
    return t_unit.executor(context)
