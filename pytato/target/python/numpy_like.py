"""Python targets whose generated code calls a numpy-like array module.

.. autoclass:: PythonTarget
.. autoclass:: NumpyLikePythonTarget
.. autoclass:: NumpyTarget
.. autoclass:: BoundPythonProgram
.. autofunction:: generate_numpy
.. autofunction:: first_true
"""

from __future__ import annotations

import dataclasses
import linecache
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from pytato.array.base import Array
from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import (
    BoundArgumentError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingArgumentError,
    UnknownArgumentError,
    UnsupportedFeatureError,
)
from pytato.target import BoundProgram, Target
from pytato.target.python.arguments import process_arguments
from pytato.target.python.codegen import ArgumentSpec, generate_python_code
from pytato.target.python.scalar_codegen import dtype_code


T = TypeVar("T")


class PythonTarget(Target):
    """A target that generates code for a python program, typically by
    invoking some :mod:`numpy`-like module for the array operations.

    Subclasses say how the module is imported and named, how outputs and
    bound data are represented, and how the generated function is compiled
    and called.

    .. attribute:: array_module_name

        The name of the array module in generated code.

    .. automethod:: preamble
    .. automethod:: decorators
    .. automethod:: output_code
    .. automethod:: convert_bound_argument
    .. automethod:: convert_call_argument
    .. automethod:: compile
    .. automethod:: run
    .. automethod:: bind_program
    """

    array_module_name: str = "_pt_np"
    #: The :class:`BoundPythonProgram` subclass :meth:`bind_program` creates.
    bound_program_class: type[BoundPythonProgram]

    def preamble(self, jit: bool = False) -> str:
        """The import statements preceding the generated function."""
        raise NotImplementedError

    def decorators(self, specs: Mapping[str, ArgumentSpec], jit: bool
                   ) -> list[str]:
        """Decorators (without ``@``) of the generated function, e.g. for
        just-in-time compilation if *jit*."""
        if jit:
            raise InvalidArgumentError(f"{type(self).__name__} does not support jit")
        return []

    def output_code(self, var: str, dtype: np.dtype[np.generic]) -> str:
        """Code turning the value in *var* into an output of *dtype*."""
        raise NotImplementedError

    def convert_bound_argument(self, data: object) -> object:
        """The value passed for the data of a
        :class:`~pytato.array.DataWrapper`."""
        return data

    def convert_call_argument(self, value: object) -> object:
        """The value passed for an array argument given at call time."""
        return value

    def compile(self, source: str, entrypoint: str,
                specs: Mapping[str, ArgumentSpec] | None
                ) -> Callable[..., object]:
        """Execute *source* and return its function *entrypoint*."""
        filename = f"<pytato generated code of {entrypoint} {id(source):x}>"
        # so that tracebacks show the generated lines
        linecache.cache[filename] = (len(source), None,
                                     source.splitlines(keepends=True), filename)
        namespace: dict[str, Any] = {}
        exec(compile(source, filename, "exec"), namespace)
        return namespace[entrypoint]

    def run(self, function: Callable[..., object], args: Mapping[str, object]) -> Any:
        """Call the compiled *function* with *args* (by parameter name)."""
        return function(**args)

    def bind_program(self, program: object, bound_arguments: Mapping[str, object],
                     expected_arguments: frozenset[str] | None = None,
                     entrypoint: str = "_pt_kernel", *,
                     arg_specs: Mapping[str, ArgumentSpec] | None = None
                     ) -> BoundPythonProgram:
        """Create a :class:`BoundPythonProgram` for *program*.

        :arg program: the Python source of the program.
        :arg bound_arguments: the data bound to arguments, by name.
        :arg expected_arguments: the names of all arguments of the
            entrypoint, bound ones included (by default, those of
            *arg_specs*, else those of *bound_arguments*).
        :arg entrypoint: the name of the function in *program* to call.
        :arg arg_specs: the specifications of the arguments, to check and
            infer them at call time (None: arguments are passed unchecked).
        """
        if expected_arguments is None:
            expected_arguments = frozenset(arg_specs or bound_arguments)
        return self.bound_program_class(
            program, bound_arguments, self, expected_arguments, entrypoint,
            arg_specs=arg_specs)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@dataclass(frozen=True, repr=False, eq=False)
class BoundPythonProgram(BoundProgram):
    """A wrapper for executing python programs with bound arguments.

    .. attribute:: program

        The generated Python source.

    .. attribute:: expected_arguments

        The names of all arguments of the entrypoint (bound ones included).

    .. attribute:: entrypoint

        The name of the generated function.

    .. attribute:: arg_specs

        A mapping from argument names to
        :class:`~pytato.target.python.codegen.ArgumentSpec`, used to check
        and infer arguments at call time (None: arguments are passed on
        unchecked).

    .. automethod:: __call__
    .. automethod:: copy
    .. automethod:: with_transformed_program
    .. automethod:: show_code
    """

    expected_arguments: frozenset[str]
    entrypoint: str
    arg_specs: Mapping[str, ArgumentSpec] | None = field(default=None,
                                                          compare=False)

    def __post_init__(self) -> None:
        assert isinstance(self.target, PythonTarget)
        object.__setattr__(self, "_fn", self.target.compile(
            self.program, self.entrypoint, self.arg_specs))

    def copy(self, **kwargs: Any) -> BoundPythonProgram:
        """Return a copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)

    def with_transformed_program(self, f: Callable[[str], str]
                                 ) -> BoundPythonProgram:
        """Return a copy of *self* whose source is ``f(self.program)``."""
        return self.copy(program=f(self.program))

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """Run the program on the inputs in *kwargs*; return the array (for
        an array result) or a dict of arrays.

        :raises ~pytato.diagnostic.UnknownArgumentError: if inputs are passed
            positionally (*args*): they are taken by name only.
        :raises ~pytato.diagnostic.BoundArgumentError: (a :class:`ValueError`)
            if an argument bound to the program is passed.
        """
        if args:
            raise UnknownArgumentError(
                f"{type(self).__name__} takes its inputs by name only, got "
                f"{len(args)} positional argument(s)")
        target = self.target
        assert isinstance(target, PythonTarget)
        if self.arg_specs is None:
            for name in kwargs:
                if name in self.bound_arguments:
                    raise BoundArgumentError(f"argument '{name}' is bound")
                if name not in self.expected_arguments:
                    raise UnknownArgumentError(f"unknown argument '{name}'")
            arguments = {**self.bound_arguments, **kwargs}
            missing = self.expected_arguments - set(arguments)
            if missing:
                raise MissingArgumentError(
                    f"missing argument(s): {', '.join(sorted(missing))}")
        else:
            arguments = process_arguments(self.arg_specs, self.bound_arguments,
                                          kwargs, target.convert_call_argument)
        return target.run(self._fn, arguments)  # type: ignore[attr-defined]

    def show_code(self, colorize: bool = False) -> None:
        """Print the generated source to :data:`sys.stdout` (with syntax
        colour through :mod:`pygments` if *colorize* and it is installed)."""
        print_code(self.program, colorize)

    def __str__(self) -> str:
        return str(self.program)


def print_code(source: str, colorize: bool) -> None:
    """Print *source*, coloured if *colorize*, :mod:`pygments` is available
    and :data:`sys.stdout` is a terminal."""
    if colorize and sys.stdout.isatty():
        try:
            # pygments is an optional dependency
            from pygments import highlight
            from pygments.formatters import TerminalTrueColorFormatter
            from pygments.lexers import PythonLexer
        except ImportError:
            pass
        else:
            print(highlight(source, PythonLexer(), TerminalTrueColorFormatter()))
            return
    print(source)


class NumpyLikePythonTarget(PythonTarget):
    """A :class:`PythonTarget` whose generated code calls a module with
    :mod:`numpy`'s interface (:class:`NumpyTarget`, and
    :class:`~pytato.target.python.JAXPythonTarget` for :mod:`jax.numpy`).

    .. autoattribute:: numpy_like_module_name
    .. autoattribute:: numpy_like_module_name_shorthand
    """

    @property
    def numpy_like_module_name(self) -> str:
        """The name the array module is imported by (``"numpy"``,
        ``"jax.numpy"``); subclasses set it."""
        raise UnsupportedFeatureError(
            f"{type(self).__name__} does not name its array module")

    @property
    def numpy_like_module_name_shorthand(self) -> str:
        """The name the module is bound to in generated code (the
        :attr:`~PythonTarget.array_module_name`)."""
        return self.array_module_name


class NumpyTarget(NumpyLikePythonTarget):
    """A :class:`PythonTarget` generating :mod:`numpy` code. Inputs that
    are :class:`pyopencl.array.Array`\\ s are copied to the host."""

    array_module_name = "_pt_np"
    numpy_like_module_name = "numpy"

    def preamble(self, jit: bool = False) -> str:
        return "import numpy as _pt_np"

    def output_code(self, var: str, dtype: np.dtype[np.generic]) -> str:
        return f"_pt_np.array({var}, dtype={dtype_code('_pt_np', dtype)})"

    def convert_bound_argument(self, data: object) -> object:
        return _to_numpy(data)

    def convert_call_argument(self, value: object) -> object:
        return _to_numpy(value)

    def run(self, function: Callable[..., object], args: Mapping[str, object]) -> Any:
        # as in generated OpenCL code, invalid operations (e.g. in branches
        # that np.where discards) give inf/nan without warnings
        with np.errstate(all="ignore"):
            return function(**args)


def _to_numpy(data: object) -> Any:
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "get") and hasattr(data, "queue"):  # pyopencl arrays
        return data.get()
    return np.asarray(data)


NumpyTarget.bound_program_class = BoundPythonProgram


def normalize_outputs(result: object) -> tuple[DictOfNamedArrays, str | None]:
    """*result* (an array, a :class:`~pytato.DictOfNamedArrays` or a dict of
    arrays) as a :class:`~pytato.DictOfNamedArrays`, and the name of the
    single output if *result* is an array."""
    if isinstance(result, Array):
        return DictOfNamedArrays({"_pt_out": result}), "_pt_out"
    if isinstance(result, DictOfNamedArrays):
        return result, None
    if isinstance(result, Mapping):
        for k, v in result.items():
            if not isinstance(v, Array):
                raise InvalidArgumentTypeError(f"output '{k}' is not an array: "
                                               f"{type(v).__name__}")
        return DictOfNamedArrays(dict(result)), None
    raise InvalidArgumentTypeError(
        "'result' must be an Array, a DictOfNamedArrays or a dict "
        f"of arrays, got {type(result).__name__}")


def generate_python_program(result: object, target: PythonTarget, *,
                            function_name: str = "_pt_kernel",
                            show_code: bool = False,
                            colorize_show_code: bool = False,
                            jit: bool = False) -> BoundPythonProgram:
    """Generate a :class:`BoundPythonProgram` computing *result* on
    *target*."""
    outputs, single = normalize_outputs(result)
    code = generate_python_code(outputs, target, function_name=function_name,
                                single_output=single, jit=jit)
    if show_code:
        print_code(code.source, colorize_show_code)
    return target.bind_program(
        code.source, code.bound_arguments,
        expected_arguments=frozenset(code.arg_specs),
        entrypoint=function_name, arg_specs=code.arg_specs)


def generate_numpy(result: Array | DictOfNamedArrays | Mapping[str, Array], *,
                   function_name: str = "_pt_kernel",
                   show_code: bool = False) -> BoundPythonProgram:
    """Generate a :mod:`numpy` program computing *result*.

    :arg result: an array, a :class:`~pytato.DictOfNamedArrays` or a dict
        of arrays.
    :arg function_name: the name of the generated function.
    :arg show_code: whether to print the generated code.
    :returns: a :class:`BoundPythonProgram`; call it with the inputs as
        keyword arguments to get a :class:`numpy.ndarray` (for an array
        result) or a dict of them.
    """
    return generate_python_program(result, NumpyTarget(),
                                   function_name=function_name,
                                   show_code=show_code)


def first_true(iterable: Iterable[T], default: T,
               pred: Callable[[T], bool] | None = None) -> T:
    """The first element of *iterable* for which *pred* is true (that is
    true itself if *pred* is *None*), else *default*."""
    for item in iterable:
        if (pred(item) if pred is not None else item):
            return item
    return default
