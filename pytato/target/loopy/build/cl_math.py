"""Real math functions of the device code called through out-of-line
wrappers.

OpenCL compilers expand every call of a transcendental function of
``double`` (``sin``, ``exp``, ...) inline: range reduction, polynomial,
special cases, a slow path for large arguments. A kernel of many such calls
is a large function, and its compilation time grows with it. For the
kernels of the 1 000-node random DAG of ``benchmarks/bench_codegen.py``,
NVIDIA's compiler spent most of its build time on the inline ``sin``
calls, and most of that was saved by calling through
``__attribute__((noinline)) double _pt_sin_f64(double x) { return sin(x); }``.

:class:`MathFunction` replaces loopy's callables of the functions of
:data:`OUT_OF_LINE_FUNCTIONS`. Its types and results are those of loopy's
callables (the same builtin is called, on the same values); where the
target asks for it (the ``out_of_line_math`` of
:class:`~pytato.target.loopy.build.cl_target.PytatoPyOpenCLTarget`) and the
arguments are ``float`` or ``double``, the call goes through a
wrapper declared ``noinline``: one copy of the function's code per program
and type instead of one per call. Elsewhere the code is loopy's.

This is off by default: it trades speed for compilation time. The calls
cost time on GPUs (an ABI call per element): the element-wise
``sin(x)*2 + x**2 - exp(-x)`` of ``benchmarks/bench_user_path.py`` was
slower per call on NVIDIA GPUs, and the cold 10^4-node random DAG gained
little of its time to the first result (the build's CPU time, spread
over the worker processes of the split path, fell by a fifth). Programs
are built once and run many
times, so the default keeps the speed; ``PYTATO_OUT_OF_LINE_MATH=1``
(:data:`OUT_OF_LINE_MATH_ENV`, read when a program's loopy target is made)
switches the wrappers on, for graphs whose build time matters more.

.. autodata:: OUT_OF_LINE_FUNCTIONS
.. autodata:: OUT_OF_LINE_MATH_ENV
.. autofunction:: out_of_line_math_enabled
.. autoclass:: MathFunction
"""

from __future__ import annotations

from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.target.opencl import OpenCLCallable
from loopy.target.pyopencl import PyOpenCLCallable

# (defined there, without loopy: the program store's keys read the switch)
from pytato.target.loopy.build.target_parameters import (
    OUT_OF_LINE_MATH_ENV,
    out_of_line_math_enabled,
)


__all__ = ["OUT_OF_LINE_FUNCTIONS", "OUT_OF_LINE_MATH_ENV", "MathFunction",
           "out_of_line_math_enabled"]



#: The functions (by their name in :mod:`loopy`) whose real calls go
#: through out-of-line wrappers on targets that ask for it, with their
#: number of arguments. Cheap functions (``sqrt``, ``fabs``, ``floor``,
#: ``fmax``, ...) stay inline, and so do powers (loopy prints ``pow``
#: itself).
OUT_OF_LINE_FUNCTIONS = {
    **dict.fromkeys(
        ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
         "asinh", "acosh", "atanh", "exp", "log", "log10", "erf", "erfc"), 1),
    "atan2": 2,
}

_C_TYPES = {np.dtype(np.float32): ("float", "f32"),
            np.dtype(np.float64): ("double", "f64")}


def _loopy_callable(name: str) -> lp.ScalarCallable:
    """The callable :mod:`loopy`'s PyOpenCL target has for *name*."""
    if name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log"):
        return PyOpenCLCallable(name=name)
    return OpenCLCallable(name=name)


class MathFunction(lp.ScalarCallable):
    """A function of :data:`OUT_OF_LINE_FUNCTIONS`: typed as :mod:`loopy`
    types it; on a target whose ``out_of_line_math`` is true, a call on
    ``float`` or ``double`` arguments is emitted as a call of a ``noinline``
    wrapper of the builtin (see the module documentation)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        typed, clbl_inf_ctx = _loopy_callable(self.name).with_types(
            arg_id_to_dtype, clbl_inf_ctx)
        if (type(typed) is not OpenCLCallable
                or typed.name_in_target is None
                or typed.arg_id_to_dtype is None
                or -1 not in typed.arg_id_to_dtype):
            # not typed yet, or complex (pyopencl's functions): loopy's
            return typed, clbl_inf_ctx
        return (self.copy(name_in_target=typed.name_in_target,
                          arg_id_to_dtype=typed.arg_id_to_dtype),
                clbl_inf_ctx)

    def _wrapper(self, target: Any) -> tuple[str, str] | None:
        """The wrapper's name and C type, or None where the call stays
        the builtin's."""
        if not getattr(target, "out_of_line_math", False):
            return None
        dtypes = self.arg_id_to_dtype
        ctype = _C_TYPES.get(dtypes[-1].numpy_dtype)
        if ctype is None or any(
                dtypes[i].numpy_dtype != dtypes[-1].numpy_dtype
                for i in range(OUT_OF_LINE_FUNCTIONS[self.name])):
            return None
        return f"_pt_{self.name_in_target}_{ctype[1]}", ctype[0]

    def emit_call(self, expression_to_code_mapper: Any, expression: Any,
                  target: Any) -> Any:
        call = super().emit_call(expression_to_code_mapper, expression, target)
        wrapper = self._wrapper(target)
        if wrapper is None:
            return call
        return prim.Variable(wrapper[0])(*call.parameters)

    def generate_preambles(self, target: Any) -> Any:
        wrapper = self._wrapper(target)
        if wrapper is None:
            return
        name, ctype = wrapper
        nargs = OUT_OF_LINE_FUNCTIONS[self.name]
        params = ", ".join(f"{ctype} x{i}" for i in range(nargs))
        args = ", ".join(f"x{i}" for i in range(nargs))
        yield (f"47_pytato_math_{name}",
               f"__attribute__((noinline)) {ctype} {name}({params})\n"
               f"{{ return {self.name_in_target}({args}); }}\n")
