"""Calling user :mod:`loopy` kernels from array graphs.

:func:`call_loopy` binds the arguments of a loopy kernel (the entrypoint
of a :class:`loopy.TranslationUnit`) to arrays and scalars of the graph
and returns a :class:`LoopyCall`: a mapping from the kernel's output
argument names to :class:`LoopyCallResult` arrays. The shapes of the
results are the kernel's argument shapes with the bound values of its
value arguments (sizes) substituted. Unbound value arguments that the
shapes of bound array arguments depend on (affinely, e.g. ``(m, n)`` or
``(2*n + 3*m + 2, 6*n + 4*m + 3)``) are solved from the bound arrays'
shapes (:func:`extend_bindings_with_shape_inference`), as integers or, for
arrays of symbolic shapes, size expressions. The loopy target merges the
kernel (and its callees,
renamed) into the generated translation unit and calls it (see
:mod:`pytato.target.loopy.lower.calls`); the Python targets cannot run it.

An argument that is both an input and an output of the kernel is bound to
its initial value; its result is a new array (the binding is not
modified).

.. autoclass:: LoopyCall
.. autoclass:: LoopyCallResult
.. autofunction:: call_loopy

Inferring the sizes a kernel depends on from the shapes bound to it:

.. autoexception:: ShapeInferenceFailure
.. autofunction:: extend_bindings_with_shape_inference
.. autofunction:: solve_constraints
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pymbolic
from constantdict import constantdict
from pymbolic.mapper.dependency import DependencyMapper
from pymbolic.typing import Expression
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    ShapeType,
    array_dataclass,
    check_unique_tags,
    normalize_tags,
)
from pytato.array.constructors import make_data_wrapper
from pytato.array.nonarray import DataclassGraphNode
from pytato.array.results import AbstractResultWithNamedArrays, NamedArray
from pytato.array.shape import are_shapes_equal, format_shape, shape_component_to_expr
from pytato.diagnostic import (
    CallBindingError,
    DTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidKeyError,
    NonAffineShapeError,
    ShapeMismatchError,
)
from pytato.function import _is_size_expression
from pytato.lazy_imports import lazy_module
from pytato.scalar_expr import evaluate, is_quasi_affine, substitute
from pytato.utils import _size_params_of


if TYPE_CHECKING:
    import islpy as isl
    import loopy as lp
    import pymbolic.primitives as prim
    from pymbolic.typing import Expression
else:
    # (imported at first use: see pytato.lazy_imports)
    isl = lazy_module("islpy")
    lp = lazy_module("loopy")


__all__ = [
    "LoopyCall", "LoopyCallResult", "ShapeInferenceFailure", "call_loopy",
    "extend_bindings_with_shape_inference", "solve_constraints",
]


def _dependency_names(expr: Expression) -> set[str]:
    """The names of the variables of the shape expression *expr* (loopy's
    shapes depend on variables only)."""
    return {cast("prim.Variable", v).name for v in DependencyMapper()(expr)}


def _kernel_shape(shape: Any, values: Mapping[str, Any], what: str) -> ShapeType:
    """A kernel argument's shape (:mod:`pymbolic` expressions in value
    argument names) with *values* (ints and 0-d integer arrays)
    substituted."""

    result = []
    for c in shape:
        if isinstance(c, (int, np.integer)):
            result.append(int(c))
            continue
        deps = _dependency_names(c)
        missing = deps - set(values)
        if missing:
            raise CallBindingError(
                f"{what}: its shape {shape} depends on "
                f"{', '.join(sorted(missing))}, which is not bound")
        for name in deps:
            v = values[name]
            if not isinstance(v, (int, np.integer)) and not _is_size(v):
                raise NonAffineShapeError(
                    f"{what}: its shape depends on '{name}', which is bound to "
                    "a value that is not an integer size expression")
        value = pymbolic.evaluate(c, dict(values))
        result.append(int(value) if isinstance(value, (int, np.integer))
                      else value)
    return tuple(result)


def _is_size(v: object) -> bool:
    return _is_size_expression(v)


# {{{ nodes

@dataclass(frozen=True, eq=False, repr=False)
class LoopyCall(DataclassGraphNode, AbstractResultWithNamedArrays):
    r"""A call of the loopy kernel :attr:`entrypoint` of
    :attr:`translation_unit`: a mapping from the names of its output
    arguments to :class:`LoopyCallResult`\ s. Build it with
    :func:`call_loopy`.

    .. attribute:: translation_unit

        The :class:`loopy.TranslationUnit` (with the dtypes of all
        arguments known).

    .. attribute:: bindings

        A mapping from each input argument name to an
        :class:`~pytato.Array` or a number.

    .. attribute:: entrypoint
    .. attribute:: tags
    .. autoattribute:: inout_names
    """

    translation_unit: lp.TranslationUnit
    bindings: Mapping[str, Any]
    entrypoint: str
    tags: frozenset[Tag] = frozenset()

    _mapper_method: ClassVar[str] = "map_loopy_call"

    def _pt_validate(self) -> None:
        object.__setattr__(self, "bindings", constantdict(
            {k: self.bindings[k] for k in sorted(self.bindings)}))
        object.__setattr__(self, "tags", check_unique_tags(
            normalize_tags(self.tags), "LoopyCall"))
        knl = self.translation_unit[self.entrypoint]
        if any(a.dtype is None for a in knl.args):
            # built directly (not by call_loopy): infer the missing dtypes
            # from the bindings, as call_loopy does
            object.__setattr__(self, "translation_unit", _with_inferred_dtypes(
                self.translation_unit, self.entrypoint, self.bindings, {}))

    def _pt_finish(self) -> None:
        knl = self.translation_unit[self.entrypoint]
        what = f"loopy kernel '{self.entrypoint}'"
        values = {k: v for k, v in self.bindings.items()
                  if isinstance(v, (int, np.integer))
                  or (isinstance(v, Array) and v.shape == ()
                      and v.dtype.kind in "iu")}
        shapes: dict[str, ShapeType] = {}
        dtypes: dict[str, np.dtype[np.generic]] = {}
        for arg in knl.args:
            if not arg.is_output:
                continue
            if arg.dtype is None:
                raise DTypeError(f"{what}: the dtype of output '{arg.name}' "
                                 "cannot be inferred from the bindings")
            dtypes[arg.name] = np.dtype(arg.dtype.numpy_dtype)
            shapes[arg.name] = _kernel_shape(arg.shape, values,
                                             f"{what}, output '{arg.name}'")
        object.__setattr__(self, "_pt_result_shapes", shapes)
        object.__setattr__(self, "_pt_result_dtypes", dtypes)
        object.__setattr__(self, "_pt_inout", frozenset(
            a.name for a in knl.args if a.is_input and a.is_output))
        object.__setattr__(self, "_pt_results", {
            name: LoopyCallResult(self, name) for name in shapes})

    if TYPE_CHECKING:
        # (set at construction)
        @property
        def _pt_result_shapes(self) -> Mapping[str, ShapeType]: ...

        @property
        def _pt_result_dtypes(self) -> Mapping[str, np.dtype[np.generic]]: ...

        @property
        def _pt_inout(self) -> frozenset[str]: ...

        @property
        def _pt_results(self) -> Mapping[str, LoopyCallResult]: ...

    @property
    def inout_names(self) -> frozenset[str]:
        """The arguments that are both inputs and outputs of the kernel."""
        return self._pt_inout

    def _get_result_shape(self, name: str) -> ShapeType:
        return self._pt_result_shapes[name]

    def _get_result_dtype(self, name: str) -> np.dtype[np.generic]:
        return self._pt_result_dtypes[name]

    def __getitem__(self, name: str) -> LoopyCallResult:
        try:
            return self._pt_results[name]
        except KeyError:
            raise InvalidKeyError(f"loopy kernel '{self.entrypoint}' has no output "
                                  f"'{name}'") from None

    def __iter__(self) -> Any:
        return iter(self._pt_results)

    def __len__(self) -> int:
        return len(self._pt_results)

    def __contains__(self, name: object) -> bool:
        return name in self._pt_results

    def __repr__(self) -> str:
        return (f"LoopyCall(entrypoint={self.entrypoint!r}, "
                f"bindings={sorted(self.bindings)})")


@array_dataclass
class LoopyCallResult(NamedArray):
    """The output :attr:`name` of the :class:`LoopyCall` :attr:`_container`."""

    _mapper_method: ClassVar[str] = "map_loopy_call_result"

# }}}


def call_loopy(translation_unit: lp.TranslationUnit | lp.LoopKernel,
               bindings: Mapping[str, Any],
               entrypoint: str | None = None) -> LoopyCall:
    """Call the loopy kernel *entrypoint* of *translation_unit* (a
    :class:`loopy.TranslationUnit`, or a :class:`loopy.LoopKernel`) with
    *bindings*, a mapping from its input argument names to arrays (numpy
    arrays are wrapped as data) or, for value arguments, numbers or 0-d
    arrays. Index the result by output argument name.

    :arg entrypoint: the kernel to call; may be omitted if the translation
        unit has one entrypoint.
    :raises pytato.diagnostic.CallBindingError: for bindings of unknown or
        output-only arguments, missing bindings, or values bound to array
        arguments (and vice versa).
    :raises pytato.diagnostic.ShapeMismatchError: if a bound array's shape
        differs from the argument's.
    :raises pytato.diagnostic.DTypeError: if a bound array's dtype differs
        from the argument's, or the dtype of an output cannot be inferred.
    """
    if isinstance(translation_unit, lp.LoopKernel):
        translation_unit = lp.make_program(translation_unit).with_entrypoints(
            translation_unit.name)
    if not isinstance(translation_unit, lp.TranslationUnit):
        raise InvalidArgumentTypeError("call_loopy: 'translation_unit' must be a "
                                       "loopy.TranslationUnit, got "
                                       f"{type(translation_unit).__name__}")
    t_unit = translation_unit
    if entrypoint is None:
        if len(t_unit.entrypoints) != 1:
            raise InvalidArgumentError(
                          "call_loopy: the translation unit has entrypoints "
                          f"{sorted(t_unit.entrypoints)}; choose one with 'entrypoint'")
        entrypoint, = t_unit.entrypoints
    elif entrypoint not in t_unit.callables_table or not isinstance(
            t_unit.callables_table[entrypoint], lp.CallableKernel):
        raise InvalidArgumentError(f"call_loopy: the translation unit has no kernel "
                                   f"'{entrypoint}'")
    knl = t_unit[entrypoint]
    what = f"loopy kernel '{entrypoint}'"
    args = {a.name: a for a in knl.args}

    bindings = dict(bindings)
    for name, b in bindings.items():
        arg = args.get(name)
        if arg is None:
            raise CallBindingError(
                f"{what} has no argument '{name}' (arguments: "
                f"{', '.join(args)})")
        if not arg.is_input:
            raise CallBindingError(
                f"{what}: argument '{name}' is an output only and cannot be "
                "bound")
        if isinstance(arg, lp.ValueArg):
            if isinstance(b, Array):
                if b.shape != ():
                    raise ShapeMismatchError(
                        f"{what}: value argument '{name}' must be bound to a "
                        f"scalar or a 0-d array, got shape {format_shape(b.shape)}")
            elif not isinstance(b, (int, float, complex, np.number)) \
                    or isinstance(b, bool):
                raise CallBindingError(
                    f"{what}: value argument '{name}' must be bound to a number "
                    f"or a 0-d array, got {type(b).__name__}")
        else:
            if isinstance(b, np.ndarray):
                b = bindings[name] = make_data_wrapper(b)
            if not isinstance(b, Array):
                raise CallBindingError(
                    f"{what}: array argument '{name}' must be bound to an array, "
                    f"got {type(b).__name__}")
            if arg.shape is not None and len(arg.shape) != b.ndim:
                raise ShapeMismatchError(
                    f"{what}: argument '{name}' has {len(arg.shape)} "
                    f"dimension(s), but is bound to an array of shape "
                    f"{format_shape(b.shape)}")

    # infer the sizes the argument shapes depend on from the shapes of the
    # bound arrays (e.g. 'm', 'n' of an argument of shape (m, n), or of
    # shape (2*n + 3*m + 2, 6*n + 4*m + 3))
    bindings = dict(extend_bindings_with_shape_inference(knl, bindings))

    missing = [n for n, a in args.items() if a.is_input and n not in bindings]
    if missing:
        raise CallBindingError(f"{what}: missing binding(s) for argument(s) "
                               f"{', '.join(missing)}")

    values = {k: v for k, v in bindings.items()
              if isinstance(args[k], lp.ValueArg)
              and (isinstance(v, (int, np.integer))
                   or (isinstance(v, Array) and v.dtype.kind in "iu"))}
    new_dtypes: dict[str, Any] = {}
    for name, arg in args.items():
        b = bindings.get(name)
        if b is None:
            continue
        dtype = b.dtype if isinstance(b, Array) else np.asarray(b).dtype
        if isinstance(arg, lp.ValueArg):
            if arg.dtype is None:
                new_dtypes[name] = dtype
            continue
        if arg.dtype is None:
            new_dtypes[name] = dtype
        elif np.dtype(arg.dtype.numpy_dtype) != dtype:
            raise DTypeError(f"{what}: argument '{name}' has dtype "
                             f"{arg.dtype.numpy_dtype}, but is bound to an array "
                             f"of dtype {dtype}")
        if arg.shape is not None:
            expected = _kernel_shape(arg.shape, values,
                                     f"{what}, argument '{name}'")
            if not are_shapes_equal(expected, b.shape):
                raise ShapeMismatchError(
                    f"{what}: argument '{name}' has shape "
                    f"{format_shape(expected)}, but is bound to an array of "
                    f"shape {format_shape(b.shape)}")

    t_unit = _with_inferred_dtypes(t_unit, entrypoint, bindings, new_dtypes)
    return LoopyCall(t_unit, bindings, entrypoint)


def _with_inferred_dtypes(t_unit: lp.TranslationUnit, entrypoint: str,
                          bindings: Mapping[str, object],
                          new_dtypes: Mapping[str, Any]) -> lp.TranslationUnit:
    """*t_unit* with the dtypes of the arguments of its kernel
    *entrypoint* known: those in *new_dtypes*, those of the other bound
    arguments of unknown dtype taken from their bindings, and the rest
    (outputs) inferred by :mod:`loopy`."""
    knl = t_unit[entrypoint]
    new_dtypes = dict(new_dtypes)
    for arg in knl.args:
        b = bindings.get(arg.name)
        if arg.dtype is None and b is not None and arg.name not in new_dtypes:
            new_dtypes[arg.name] = (b.dtype if isinstance(b, Array)
                                    else np.asarray(b).dtype)
    if not new_dtypes and all(a.dtype is not None for a in knl.args):
        return t_unit
    t_unit = t_unit.with_kernel(lp.add_dtypes(knl, new_dtypes))
    try:
        return lp.infer_unknown_types(t_unit, expect_completion=True)
    except Exception as e:
        raise DTypeError(f"loopy kernel '{entrypoint}': cannot infer the "
                         f"dtypes of its arguments: {e}") from e


# {{{ shape inference

class ShapeInferenceFailure(CallBindingError, RuntimeError):
    """The sizes that a loopy kernel's argument shapes depend on cannot be
    inferred from the shapes of the arrays bound to it (raised by
    :func:`solve_constraints` and
    :func:`extend_bindings_with_shape_inference`)."""


def solve_constraints(variables: Sequence[str], parameters: Sequence[str],
                      constraints: Sequence[tuple[Any, Any]],
                      ) -> Mapping[str, Any]:
    """Solve the equations ``lhs == rhs`` of *constraints* (affine integer
    expressions in *variables* and *parameters*) for *variables*.

    :returns: each variable mapped to its value, an affine expression in
        *parameters* (an :class:`int` if it is constant).
    :raises ShapeInferenceFailure: if a constraint is not affine, the
        constraints contradict each other, or they do not determine a
        variable uniquely.
    """

    variables = list(variables)
    space = isl.Space.create_from_names(isl.DEFAULT_CONTEXT, set=variables,
                                        params=list(parameters))
    bset = isl.BasicSet.universe(space)
    for lhs, rhs in constraints:
        for side in (lhs, rhs):
            if not is_quasi_affine(side):
                raise ShapeInferenceFailure(
                    f"solve_constraints: {side} (in {lhs} == {rhs}) is not an "
                    "affine expression")
        try:
            aff = lp.symbolic.aff_from_expr(space, lhs - rhs)
        except Exception as e:
            raise ShapeInferenceFailure(
                f"solve_constraints: cannot express {lhs} == {rhs} in the "
                f"variables {variables} and parameters {list(parameters)}: {e}"
            ) from e
        bset = bset.add_constraint(isl.Constraint.equality_from_aff(aff))
    if bset.is_empty():
        raise ShapeInferenceFailure(
            f"solve_constraints: the constraints {list(constraints)} have no "
            "solution")
    result: dict[str, Any] = {}
    sol_set = isl.Set.from_basic_set(bset)
    for i, var in enumerate(variables):
        lo: isl.PwAff | None
        hi: isl.PwAff | None
        try:
            lo = sol_set.dim_min(i)
            hi = sol_set.dim_max(i)
        except isl.Error:
            # unbounded
            lo = hi = None
        if lo is None or hi is None or not (
                lo.is_equal(hi) and lo.n_piece() == 1):
            raise ShapeInferenceFailure(
                f"solve_constraints: the constraints {list(constraints)} do "
                f"not determine '{var}'")
        value = lp.symbolic.pw_aff_to_expr(lo)
        result[var] = int(value) if isinstance(value, (int, np.integer)) \
            else value
    return result


def extend_bindings_with_shape_inference(
        knl: lp.LoopKernel | lp.TranslationUnit, bindings: Mapping[str, object]
        ) -> constantdict[str, Any]:
    """*bindings* (of the arguments of the loopy kernel *knl*, or of the
    entrypoint of a translation unit) extended by
    the integer value arguments of *knl* that the shapes of its array
    arguments depend on and that are not bound: their values are solved
    from the shapes of the arrays bound to those arguments. They are
    integers, or size expressions (0-d integer arrays) when the bound
    arrays have symbolic shapes.

    :raises ShapeInferenceFailure: if the shapes do not determine them.
    """


    if hasattr(knl, "default_entrypoint"):
        # a translation unit
        knl = knl.default_entrypoint
    value_arg_names = {arg.name for arg in knl.args
                       if not hasattr(arg, "shape") or arg.shape is None
                       or arg.shape == ()}
    unknowns: set[str] = set()
    constraints: list[tuple[object, object]] = []
    size_params: dict[str, object] = {}
    for arg in knl.args:
        shape = getattr(arg, "shape", None)
        if not shape or arg.name not in bindings:
            continue
        ary = bindings[arg.name]
        if not isinstance(ary, Array):
            continue
        if len(shape) != ary.ndim:
            raise ShapeInferenceFailure(
                f"loopy kernel '{knl.name}': argument '{arg.name}' has "
                f"{len(shape)} axes, the array bound to it {ary.ndim}")
        for k_dim, a_dim in zip(shape, ary.shape, strict=True):
            deps = _dependency_names(k_dim) \
                if not isinstance(k_dim, (int, np.integer)) else set()
            new = {d for d in deps
                   if d in value_arg_names and d not in bindings}
            if not new:
                continue
            unknowns |= new
            if isinstance(a_dim, Array):
                size_params.update(_size_params_of(a_dim))
            constraints.append((k_dim, shape_component_to_expr(a_dim)))
    if not unknowns:
        return constantdict(bindings)
    # the bound value arguments the constraints depend on are known:
    # integers, or size expressions (whose size parameters become parameters
    # of the constraints)
    known: dict[str, object] = {}
    for name in value_arg_names:
        value = bindings.get(name)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            known[name] = int(value)
        elif isinstance(value, Array) and _is_size(value):
            size_params.update(_size_params_of(value))
            known[name] = shape_component_to_expr(value)
    constraints = [(_subst_known(lhs, known), rhs) for lhs, rhs in constraints]
    solution = solve_constraints(sorted(unknowns), sorted(size_params),
                                 constraints)
    new_bindings = dict(bindings)
    for name, value in solution.items():
        new_bindings[name] = (value if isinstance(value, int)
                              else evaluate(value, size_params))
    return constantdict(new_bindings)


def _subst_known(expr: Any, known: Mapping[str, Any]) -> Any:
    return substitute(expr, dict(known))

# }}}

# vim: foldmethod=marker
