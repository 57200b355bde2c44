"""The JAX target: generated Python code calls :mod:`jax.numpy`.

.. autoclass:: JAXPythonTarget
.. autoclass:: BoundJAXPythonProgram
.. autofunction:: generate_jax
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytato.array.base import Array
from pytato.array.results import DictOfNamedArrays
from pytato.target.python.calls import nodes_with_function_bodies
from pytato.target.python.codegen import ArgumentSpec
from pytato.target.python.numpy_like import (
    BoundPythonProgram,
    NumpyLikePythonTarget,
    generate_python_program,
    normalize_outputs,
)
from pytato.target.python.scalar_codegen import dtype_code


class JAXPythonTarget(NumpyLikePythonTarget):
    """A :class:`~pytato.target.python.PythonTarget` generating code for
    :mod:`jax.numpy`. Bound data is moved to JAX arrays once, when the
    program is generated; outputs are JAX arrays."""

    array_module_name = "_pt_jnp"
    numpy_like_module_name = "jax.numpy"

    def preamble(self, jit: bool = False) -> str:
        lines = ["import jax.numpy as _pt_jnp"]
        if jit:
            lines = ["from functools import partial as _pt_partial", "",
                     "import jax as _pt_jax", *lines]
        return "\n".join(lines)

    def decorators(self, specs: Mapping[str, ArgumentSpec], jit: bool
                   ) -> list[str]:
        if not jit:
            return []
        # sizes determine shapes: they must be static under jax.jit
        static = tuple(s.var_name for s in specs.values()
                       if s.kind == "size_param")
        return [f"_pt_partial(_pt_jax.jit, static_argnames={static!r})"]

    def output_code(self, var: str, dtype: np.dtype[np.generic]) -> str:
        return f"_pt_jnp.asarray({var}, dtype={dtype_code('_pt_jnp', dtype)})"

    def convert_bound_argument(self, data: object) -> Any:
        # jax is an optional dependency
        import jax.numpy as jnp
        if hasattr(data, "get") and hasattr(data, "queue"):  # pyopencl arrays
            data = data.get()
        return jnp.asarray(data)

    def convert_call_argument(self, value: object) -> Any:
        if hasattr(value, "get") and hasattr(value, "queue"):
            return value.get()
        return value


@dataclass(frozen=True, repr=False, eq=False)
class BoundJAXPythonProgram(BoundPythonProgram):
    """A :class:`~pytato.target.python.BoundPythonProgram` running
    :mod:`jax` code; called with the inputs as keyword arguments, it
    returns a JAX array or a dict of them."""


JAXPythonTarget.bound_program_class = BoundJAXPythonProgram


def _needs_x64(outputs: DictOfNamedArrays) -> bool:
    for node in nodes_with_function_bodies([outputs]):
        if not isinstance(node, Array):
            continue
        dt = node.dtype
        if (dt.kind in "iuf" and dt.itemsize == 8) or (
                dt.kind == "c" and dt.itemsize == 16):
            return True
    return False


def generate_jax(expr: Array | Mapping[str, Array] | DictOfNamedArrays, *,
                 target: JAXPythonTarget | None = None,
                 jit: bool = False,
                 function_name: str = "_pt_kernel",
                 show_code: bool = False,
                 colorize_show_code: bool | None = None
                 ) -> BoundJAXPythonProgram:
    """Return a :class:`BoundJAXPythonProgram` for the array expressions in
    *expr*.

    64-bit computation is switched on in :mod:`jax`
    (``jax_enable_x64``) when the graph holds 64-bit dtypes.

    :arg jit: if *True*, the generated function is decorated with
        :func:`jax.jit` (size parameters are static arguments). The
        functions generated for calls are not jitted on their own: they
        are simply called, and traced as part of the entrypoint.
    :arg function_name: name of the entrypoint function in the generated
        code.
    :arg show_code: if *True*, the generated code is printed to
        :data:`sys.stdout`.
    :arg colorize_show_code: whether to colour the printed code with
        :mod:`pygments` (only when :data:`sys.stdout` is a terminal and
        pygments is installed; *None* means yes).
    """
    # jax is an optional dependency
    import jax

    if target is None:
        target = JAXPythonTarget()
    outputs, _ = normalize_outputs(expr)
    if _needs_x64(outputs):
        jax.config.update("jax_enable_x64", True)
    prog = generate_python_program(
        expr, target, function_name=function_name, show_code=show_code,
        colorize_show_code=colorize_show_code is not False, jit=jit)
    assert isinstance(prog, BoundJAXPythonProgram)
    return prog
