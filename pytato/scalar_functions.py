"""Foreign scalar functions: user-provided element-wise functions.

A user registers a :class:`loopy.ScalarCallable` (see loopy's function
interface) under a name, and applies it element-wise with
:func:`call_scalar_function`. The callable's
:meth:`~loopy.ScalarCallable.with_types` is the dtype rule: it is asked,
when the graph is built, for the result dtype of the argument dtypes (an
exception or no result dtype means the dtypes are unsupported), and, when
the kernel is generated, for the name of the specialized function in the
target; its :meth:`~loopy.ScalarCallable.generate_preambles` provides the
implementation (e.g. OpenCL C source).

The Python targets cannot run loopy callables: they call the Python
implementations given as *numpy_impl* (for :func:`pytato.generate_numpy`)
or *jax_impl* (for :func:`pytato.generate_jax`), and raise
:class:`~pytato.diagnostic.UnsupportedByTargetError` when there is none.

In scalar expressions, the function is called as
``pytato.foreign.<name>`` (see :mod:`pytato.scalar_expr`).

Example (loopy wants the callable's fields hashable: a
:class:`constantdict.constantdict` of the argument dtypes)::

    from constantdict import constantdict

    class Sinc(lp.ScalarCallable):
        def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
            dt = arg_id_to_dtype.get(0)
            if dt is None:
                return self, clbl_inf_ctx
            if dt.numpy_dtype != np.float64:
                raise LoopyError("sinc: only float64")
            return (self.copy(name_in_target="my_sinc",
                              arg_id_to_dtype=constantdict({0: dt, -1: dt})),
                    clbl_inf_ctx)

        def generate_preambles(self, target):
            yield ("50_my_sinc", "inline double my_sinc(double x) "
                   "{ return x == 0 ? 1 : sin(x) / x; }")

    pt.register_scalar_function("sinc", Sinc("sinc"), numpy_impl=np.sinc)
    y = pt.call_scalar_function("sinc", x)

.. autoclass:: ScalarFunction
.. autofunction:: register_scalar_function
.. autofunction:: get_scalar_function
.. autofunction:: call_scalar_function
.. autofunction:: python_implementation_code
.. autodata:: FOREIGN_PREFIX
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim

from pytato.array.base import Array
from pytato.diagnostic import (
    DTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidKeyError,
    UnsupportedByTargetError,
)
from pytato.frontend._coerce import as_array
from pytato.frontend.elementwise import elementwise
from pytato.lazy_imports import lazy_module


if TYPE_CHECKING:
    import loopy as lp
else:
    lp = lazy_module("loopy")


__all__ = [
    "FOREIGN_PREFIX", "ScalarFunction", "call_scalar_function",
    "get_scalar_function", "python_implementation_code",
    "register_scalar_function",
]

FOREIGN_PREFIX = "pytato.foreign."
"""Prefix of the names of foreign functions in scalar expressions."""


@dataclass(frozen=True)
class ScalarFunction:
    """A registered foreign scalar function.

    .. attribute:: name
    .. attribute:: loopy_callable

        A :class:`loopy.ScalarCallable` (or *None*: no loopy lowering).

    .. attribute:: numpy_impl

        A callable applied element-wise to :mod:`numpy` arrays, or *None*.

    .. attribute:: jax_impl

        A callable applied element-wise to :mod:`jax` arrays, or *None*.

    .. automethod:: result_dtype
    """

    name: str
    loopy_callable: lp.ScalarCallable | None
    numpy_impl: Callable[..., Any] | None = None
    jax_impl: Callable[..., Any] | None = None

    @property
    def loopy_identifier(self) -> str:
        """The function's name in generated loopy kernels."""
        return f"_pt_foreign_{self.name}"

    def result_dtype(self, arg_dtypes: list[np.dtype[np.generic]],
                     argnames: list[str]) -> np.dtype[np.generic]:
        """The result dtype for arguments of *arg_dtypes*, by the dtype rule
        of the loopy callable (or of *numpy_impl* without one).

        :raises pytato.diagnostic.DTypeError: naming the function and the
            argument dtypes if they are unsupported.
        """
        def fail(why: str) -> DTypeError:
            args = ", ".join(f"{n}: {dt}" for n, dt in zip(argnames, arg_dtypes,
                                                         strict=True))
            return DTypeError(f"scalar function '{self.name}' does not support "
                              f"arguments of dtypes ({args}): {why}")

        if self.loopy_callable is None:
            assert self.numpy_impl is not None
            try:
                out = self.numpy_impl(*(np.ones((1,), dt) for dt in arg_dtypes))
            except Exception as e:
                raise fail(f"{type(e).__name__}: {e}") from e
            return np.asarray(out).dtype

        try:
            # (loopy's type asks for a callables context, which the
            # callables of scalar functions do not use)
            new, _ = self.loopy_callable.with_types(
                {i: lp.types.NumpyType(dt) for i, dt in enumerate(arg_dtypes)},
                None)  # type: ignore[arg-type]
        except Exception as e:
            raise fail(f"{type(e).__name__}: {e}") from e
        res = (new.arg_id_to_dtype or {}).get(-1)
        if res is None:
            raise fail("its with_types gave no result dtype")
        return np.dtype(res.numpy_dtype)


_REGISTRY: dict[str, ScalarFunction] = {}


def register_scalar_function(name: str, loopy_callable: lp.ScalarCallable | None, *,
                             numpy_impl: Callable[..., object] | None = None,
                             jax_impl: Callable[..., object] | None = None
                             ) -> ScalarFunction:
    """Register a foreign scalar function under *name* (replacing an earlier
    registration of that name).

    :arg loopy_callable: a :class:`loopy.ScalarCallable` implementing the
        function in loopy kernels (or *None* if only Python implementations
        are given).
    :arg numpy_impl: an element-wise implementation on :mod:`numpy` arrays
        (broadcasting like a ufunc), used by the NumPy target and to
        compute calls on scalars eagerly.
    :arg jax_impl: an element-wise implementation on :mod:`jax` arrays.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgumentError(f"'name' must be an identifier, got {name!r}")
    if loopy_callable is not None:
        if not isinstance(loopy_callable, lp.ScalarCallable):
            raise InvalidArgumentTypeError(
                "'loopy_callable' must be a loopy.ScalarCallable, "
                f"got {type(loopy_callable).__name__}")
    elif numpy_impl is None:
        raise InvalidArgumentError(f"scalar function '{name}': give a loopy callable "
                                   "or a numpy implementation")
    fn = ScalarFunction(name, loopy_callable, numpy_impl, jax_impl)
    _REGISTRY[name] = fn
    return fn


def get_scalar_function(name: str) -> ScalarFunction:
    """The function registered under *name* (given without or with
    :data:`FOREIGN_PREFIX`)."""
    if name.startswith(FOREIGN_PREFIX):
        name = name[len(FOREIGN_PREFIX):]
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InvalidKeyError(f"no scalar function is registered as '{name}' "
                              "(see pytato.register_scalar_function)") from None


def call_scalar_function(name: str, *args: object) -> Any:
    """Apply the registered scalar function *name* element-wise to *args*
    (arrays and scalars, broadcast as numpy does). The result dtype is the
    one the function's dtype rule gives for the arguments' dtypes. With
    only scalar arguments, the result is computed eagerly by the numpy
    implementation if there is one.

    :raises pytato.diagnostic.DTypeError: if the function does not support
        the arguments' dtypes.
    """

    fn = get_scalar_function(name)
    argnames = [f"x{i + 1}" for i in range(len(args))]
    if not any(isinstance(a, Array) for a in args):
        if fn.numpy_impl is not None:
            return fn.numpy_impl(*args)
        args = tuple(as_array(a, n) for a, n in zip(args, argnames, strict=True))
    dtypes = [a.dtype if isinstance(a, Array) else np.asarray(a).dtype
              for a in args]
    out_dtype = fn.result_dtype(dtypes, argnames)
    var = prim.Variable(FOREIGN_PREFIX + fn.name)
    return elementwise(None, args, lambda *exprs: prim.Call(var, exprs),
                       argnames=argnames, op_dtype="none", out_dtype=out_dtype,
                       what=f"scalar function '{fn.name}'")


def python_implementation_code(name: str, array_module_name: str) -> str:
    """Python code evaluating to the implementation of the foreign function
    *name* for the Python target whose array module is named
    *array_module_name* in generated code.

    :raises pytato.diagnostic.UnsupportedByTargetError: if no implementation
        for that target was registered.
    """
    fn = get_scalar_function(name)
    kind = "jax" if "jnp" in array_module_name else "numpy"
    impl = fn.jax_impl if kind == "jax" else fn.numpy_impl
    if impl is None:
        raise UnsupportedByTargetError(
            f"scalar function '{fn.name}' has no {kind} implementation: the "
            f"{'JAX' if kind == 'jax' else 'NumPy'} target cannot run its "
            f"loopy callable (register it with {kind}_impl=...)")
    return (f"__import__('pytato.scalar_functions', fromlist=['_']).get_"
            f"scalar_function({fn.name!r}).{kind}_impl")
