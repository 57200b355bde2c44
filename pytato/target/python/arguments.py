"""Call-time checking of the arguments of generated Python programs.

:func:`process_arguments` validates the keyword arguments a user passes
against the :class:`~pytato.target.python.codegen.ArgumentSpec`\\ s of a
program, infers size parameters from the shapes of the arrays passed (or
bound), and checks every shape against the size parameters.

.. autofunction:: process_arguments
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    MissingArgumentError,
    UnknownArgumentError,
)
from pytato.scalar_expr import evaluate, get_dependencies, is_integral_scalar
from pytato.target.python.codegen import ArgumentSpec


_PY_SCALAR_KINDS = {bool: "b", int: "i", float: "f", complex: "c"}
_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _fmt_shape(shape: tuple[object, ...]) -> str:
    return "(" + ", ".join(str(c) for c in shape) + (
        ",)" if len(shape) == 1 else ")")


def _size_param_value(name: str, value: object) -> int:
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if not is_integral_scalar(value):
        raise ArgumentDTypeError(
            f"size parameter '{name}' must be an integer, got "
            f"{type(value).__name__} {value!r}")
    value = int(value)
    if value < 0:
        raise ArgumentShapeError(
            f"size parameter '{name}' must be non-negative, got {value}")
    return value


def _array_value(spec: ArgumentSpec, value: object,
                 convert: Callable[[object], object]) -> object:
    if type(value) in _PY_SCALAR_KINDS:
        kind = _PY_SCALAR_KINDS[type(value)]
        if spec.shape != ():
            raise ArgumentShapeError(
                f"argument '{spec.name}': expected an array of shape "
                f"{_fmt_shape(spec.shape)}, got a {type(value).__name__} scalar")
        if _KIND_ORDER[kind] > _KIND_ORDER[spec.dtype.kind]:
            raise ArgumentDTypeError(
                f"argument '{spec.name}': a {type(value).__name__} cannot be "
                f"passed for dtype {spec.dtype}")
        try:
            return np.asarray(value, dtype=spec.dtype)
        except OverflowError as e:
            raise ArgumentDTypeError(
                f"argument '{spec.name}': {value!r} does not fit dtype "
                f"{spec.dtype}") from e
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise ArgumentDTypeError(
            f"argument '{spec.name}': expected an array of dtype {spec.dtype}, "
            f"got {type(value).__name__}")
    if np.dtype(value.dtype) != spec.dtype:
        raise ArgumentDTypeError(
            f"argument '{spec.name}': expected dtype {spec.dtype}, got "
            f"{np.dtype(value.dtype)}")
    if len(value.shape) != len(spec.shape):
        raise ArgumentShapeError(
            f"argument '{spec.name}': expected shape {_fmt_shape(spec.shape)} "
            f"({len(spec.shape)} dimensions), got {tuple(value.shape)}")
    return convert(value)


def _infer_size_params(specs: Mapping[str, ArgumentSpec],
                       shapes: Mapping[str, tuple[int, ...]],
                       sizes: dict[str, int]) -> None:
    """Solve shape components affine in one unknown size parameter."""
    progress = True
    while progress:
        progress = False
        for name, shape in shapes.items():
            for expr, actual in zip(specs[name].shape, shape, strict=True):
                if is_integral_scalar(expr):
                    continue
                unknown = get_dependencies(expr) - set(sizes)
                if len(unknown) != 1:
                    continue
                (p,) = unknown
                if isinstance(expr, prim.Variable):
                    sizes[p] = int(actual)
                    progress = True
                    continue
                try:
                    b = evaluate(expr, {**sizes, p: 0})
                    a = evaluate(expr, {**sizes, p: 1}) - b
                    a2 = evaluate(expr, {**sizes, p: 2}) - b
                except Exception:
                    continue
                if a == 0 or a2 != 2 * a or (actual - b) % a:
                    continue
                value = (actual - b) // a
                if value >= 0:
                    sizes[p] = int(value)
                    progress = True


def process_arguments(specs: Mapping[str, ArgumentSpec],
                      bound_arguments: Mapping[str, object],
                      kwargs: Mapping[str, object],
                      convert: Callable[[object], object] = lambda x: x,
                      ) -> dict[str, Any]:
    """Check *kwargs* against *specs* and return the values of all
    arguments (bound ones included) by parameter name (``var_name``).

    :arg convert: applied to every array argument (e.g. to move it to the
        target's array type).
    :raises UnknownArgumentError: for a name that is no input.
    :raises BoundArgumentError: for the name of bound data.
    :raises MissingArgumentError: for inputs not passed (size parameters
        that cannot be inferred from shapes included).
    :raises ArgumentDTypeError: for a dtype other than the input's.
    :raises ArgumentShapeError: for a shape other than the input's, or size
        parameters inconsistent with the shapes.
    """
    for name in kwargs:
        if name in bound_arguments:
            raise BoundArgumentError(
                f"argument '{name}' is bound to the program's data and cannot "
                "be passed again")
        if name not in specs or specs[name].kind == "data":
            expected = sorted(n for n, s in specs.items() if s.kind != "data")
            raise UnknownArgumentError(
                f"unknown argument '{name}' (the program takes "
                f"{', '.join(expected) if expected else 'no arguments'})")

    missing = [n for n, s in specs.items()
               if s.kind == "placeholder" and n not in kwargs]
    if missing:
        raise MissingArgumentError(
            f"missing argument(s): {', '.join(repr(n) for n in missing)}")

    sizes: dict[str, int] = {}
    values: dict[str, Any] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    for name, spec in specs.items():
        if spec.kind == "size_param":
            if name in kwargs:
                sizes[name] = _size_param_value(name, kwargs[name])
        elif spec.kind == "placeholder":
            values[name] = _array_value(spec, kwargs[name], convert)
            shapes[name] = tuple(int(s) for s in values[name].shape)
        else:
            values[name] = bound_arguments[name]
            shapes[name] = tuple(int(s) for s in values[name].shape)

    explicit = frozenset(sizes)
    _infer_size_params(specs, shapes, sizes)
    missing = [n for n, s in specs.items()
               if s.kind == "size_param" and n not in sizes]
    if missing:
        raise MissingArgumentError(
            "missing size parameter(s) that cannot be inferred from the "
            f"argument shapes: {', '.join(repr(n) for n in missing)}")

    for name, shape in shapes.items():
        spec = specs[name]
        expected_shape = tuple(int(evaluate(e, sizes)) for e in spec.shape)
        if expected_shape != shape:
            params = sorted({p for e in spec.shape
                             for p in get_dependencies(e)})
            detail = ""
            if params:
                detail = " with " + ", ".join(
                    f"{p}={sizes[p]}" + (" (passed)" if p in explicit else
                                         " (inferred)") for p in params)
            raise ArgumentShapeError(
                f"argument '{name}': expected shape {_fmt_shape(spec.shape)}"
                f" = {expected_shape}{detail}, got {shape}")

    result = {}
    for name, spec in specs.items():
        result[spec.var_name] = sizes[name] if spec.kind == "size_param" \
            else values[name]
    return result
