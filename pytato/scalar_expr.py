"""Scalar expressions: the element-wise language of
:class:`~pytato.array.IndexLambda`.

Scalar expressions are :mod:`pymbolic` expressions. Inside an
:class:`~pytato.array.IndexLambda`, the variables ``_0, _1, ...`` are the
indices of the output element, ``_r0, _r1, ...`` (or any names declared by a
:class:`Reduce`) are reduction indices, and other variables name the
lambda's bindings. Scalar functions are called through variables named
``pytato.c99.<name>`` (e.g. ``pytato.c99.sin``).

.. autodata:: ScalarExpression
.. autoclass:: Reduce
.. autoclass:: TypeCast
.. autoclass:: ReductionOperation
.. autoclass:: SumReductionOperation
.. autoclass:: ProductReductionOperation
.. autoclass:: MaxReductionOperation
.. autoclass:: MinReductionOperation
.. autoclass:: AllReductionOperation
.. autoclass:: AnyReductionOperation
.. autoclass:: IdentityMapper
.. autoclass:: WalkMapper
.. autoclass:: CombineMapper
.. autoclass:: DependencyMapper
.. autoclass:: SubstitutionMapper
.. autoclass:: EvaluationMapper
.. autofunction:: parse
.. autofunction:: substitute
.. autofunction:: get_dependencies
.. autofunction:: evaluate
.. autofunction:: is_integral_scalar
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict
from pymbolic.mapper import (
    CombineMapper as _PCombineMapper,
    IdentityMapper as _PIdentityMapper,
    WalkMapper as _PWalkMapper,
)
from pymbolic.mapper.dependency import DependencyMapper as _PDependencyMapper
from pymbolic.mapper.evaluator import EvaluationMapper as _PEvaluationMapper
from pymbolic.mapper.substitutor import SubstitutionMapper as _PSubstitutionMapper
from pymbolic.parser import Parser as _Parser


ScalarExpression: TypeAlias = Any
"""A pymbolic expression or a Python/numpy scalar."""

SCALAR_CLASSES = (int, float, complex, bool, np.number, np.bool_)


# {{{ reduction operations

class ReductionOperation:
    """A binary associative operation with a neutral element.

    .. automethod:: neutral_element
    .. automethod:: apply_numpy
    """

    #: Name used in generated code and reprs.
    name: str = ""

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        raise NotImplementedError

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class SumReductionOperation(ReductionOperation):
    """Addition."""

    name = "sum"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        return dtype.type(0)

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.sum(ary, axis=axis)


class ProductReductionOperation(ReductionOperation):
    """Multiplication."""

    name = "product"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        return dtype.type(1)

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.prod(ary, axis=axis)


class MaxReductionOperation(ReductionOperation):
    """Maximum."""

    name = "max"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        if dtype.kind == "f":
            return dtype.type(-np.inf)
        if dtype.kind in "iu":
            return np.iinfo(dtype).min
        if dtype.kind == "b":
            return np.False_
        raise TypeError(f"max reduction not supported for dtype {dtype}")

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.max(ary, axis=axis)


class MinReductionOperation(ReductionOperation):
    """Minimum."""

    name = "min"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        if dtype.kind == "f":
            return dtype.type(np.inf)
        if dtype.kind in "iu":
            return np.iinfo(dtype).max
        if dtype.kind == "b":
            return np.True_
        raise TypeError(f"min reduction not supported for dtype {dtype}")

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.min(ary, axis=axis)


class AllReductionOperation(ReductionOperation):
    """Logical and."""

    name = "all"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        return np.True_

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.all(ary, axis=axis)


class AnyReductionOperation(ReductionOperation):
    """Logical or."""

    name = "any"

    def neutral_element(self, dtype: np.dtype[Any]) -> Any:
        return np.False_

    def apply_numpy(self, ary: Any, axis: tuple[int, ...]) -> Any:
        return np.any(ary, axis=axis)

# }}}


# {{{ primitives

@prim.expr_dataclass()
class Reduce(prim.ExpressionNode):
    """A reduction of :attr:`inner_expr` with :attr:`op` over the
    half-open ranges :attr:`bounds` (a mapping from reduction index names to
    ``(lower, upper)`` pairs of expressions)."""

    inner_expr: ScalarExpression
    op: ReductionOperation
    bounds: Mapping[str, tuple[ScalarExpression, ScalarExpression]]


    def __post_init__(self) -> None:
        if not isinstance(self.bounds, constantdict):
            object.__setattr__(self, "bounds", constantdict(self.bounds))


@prim.expr_dataclass()
class TypeCast(prim.ExpressionNode):
    """Conversion of :attr:`inner_expr` to :attr:`dtype`."""

    dtype: np.dtype[Any]
    inner_expr: ScalarExpression


# }}}


# {{{ mappers

class IdentityMapper(_PIdentityMapper):
    """Rebuilds expressions, with support for :class:`Reduce` and
    :class:`TypeCast`."""

    def map_reduce(self, expr: Reduce, *args: Any, **kwargs: Any) -> Any:
        return Reduce(
            self.rec(expr.inner_expr, *args, **kwargs), expr.op,
            {name: (self.rec(lo, *args, **kwargs), self.rec(hi, *args, **kwargs))
             for name, (lo, hi) in expr.bounds.items()})

    def map_type_cast(self, expr: TypeCast, *args: Any, **kwargs: Any) -> Any:
        return TypeCast(expr.dtype, self.rec(expr.inner_expr, *args, **kwargs))


class WalkMapper(_PWalkMapper):
    """Visits every subexpression, including inside :class:`Reduce`."""

    def map_reduce(self, expr: Reduce, *args: Any, **kwargs: Any) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.inner_expr, *args, **kwargs)
        for lo, hi in expr.bounds.values():
            self.rec(lo, *args, **kwargs)
            self.rec(hi, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_type_cast(self, expr: TypeCast, *args: Any, **kwargs: Any) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.inner_expr, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)


class CombineMapper(_PCombineMapper):
    """Combines results over children, including inside :class:`Reduce`."""

    def map_reduce(self, expr: Reduce, *args: Any, **kwargs: Any) -> Any:
        return self.combine([
            self.rec(expr.inner_expr, *args, **kwargs),
            *(self.rec(b, *args, **kwargs)
              for bds in expr.bounds.values() for b in bds)])

    def map_type_cast(self, expr: TypeCast, *args: Any, **kwargs: Any) -> Any:
        return self.rec(expr.inner_expr, *args, **kwargs)


class DependencyMapper(_PDependencyMapper):
    """Collects the variables an expression depends on (reduction indices
    bound by a :class:`Reduce` are excluded)."""

    def map_reduce(self, expr: Reduce, *args: Any, **kwargs: Any) -> Any:
        inner = self.rec(expr.inner_expr, *args, **kwargs)
        bound = frozenset(prim.Variable(n) for n in expr.bounds)
        return self.combine([
            inner - bound,
            *(self.rec(b, *args, **kwargs)
              for bds in expr.bounds.values() for b in bds)])

    def map_type_cast(self, expr: TypeCast, *args: Any, **kwargs: Any) -> Any:
        return self.rec(expr.inner_expr, *args, **kwargs)


class SubstitutionMapper(IdentityMapper, _PSubstitutionMapper):
    """Replaces variables by the result of a substitution function."""


class EvaluationMapper(_PEvaluationMapper):
    """Evaluates an expression with numpy semantics in a context mapping
    names to values. Functions named ``pytato.c99.<name>`` evaluate to the
    numpy function of that name."""

    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name.startswith("pytato.c99."):
            return _numpy_function(expr.name[len("pytato.c99."):])
        return super().map_variable(expr)

    def map_reduce(self, expr: Reduce) -> Any:
        import itertools
        names = list(expr.bounds)
        ranges = [range(int(self.rec(lo)), int(self.rec(hi)))
                  for lo, hi in expr.bounds.values()]
        acc = None
        for vals in itertools.product(*ranges):
            sub = EvaluationMapper({**self.context, **dict(zip(names, vals,
                                                             strict=True))})
            val = sub(expr.inner_expr)
            acc = val if acc is None else _apply_binary(expr.op, acc, val)
        if acc is None:
            return expr.op.neutral_element(np.dtype(np.float64))
        return acc

    def map_type_cast(self, expr: TypeCast) -> Any:
        return np.asarray(self.rec(expr.inner_expr)).astype(expr.dtype)[()]


def _apply_binary(op: ReductionOperation, a: Any, b: Any) -> Any:
    if isinstance(op, SumReductionOperation):
        return a + b
    if isinstance(op, ProductReductionOperation):
        return a * b
    if isinstance(op, MaxReductionOperation):
        return np.maximum(a, b)
    if isinstance(op, MinReductionOperation):
        return np.minimum(a, b)
    if isinstance(op, AllReductionOperation):
        return np.logical_and(a, b)
    if isinstance(op, AnyReductionOperation):
        return np.logical_or(a, b)
    raise NotImplementedError(type(op).__name__)


_NUMPY_NAME_MAP = {"abs": "abs", "atan2": "arctan2", "asin": "arcsin",
                   "acos": "arccos", "atan": "arctan", "pow": "power",
                   "fabs": "abs", "isnan": "isnan"}


def _numpy_function(name: str) -> Callable[..., Any]:
    return getattr(np, _NUMPY_NAME_MAP.get(name, name))

# }}}


# {{{ functions

def parse(s: str) -> ScalarExpression:
    """Parse *s* into a scalar expression."""
    return _Parser()(s)


def substitute(expression: ScalarExpression,
               variable_assignments: Mapping[str, Any] | None) -> ScalarExpression:
    """Substitute the variables named in *variable_assignments* by the
    corresponding values."""
    if not variable_assignments:
        return expression

    def subst(v: Any) -> Any:
        if isinstance(v, prim.Variable):
            return variable_assignments.get(v.name)
        return None

    return SubstitutionMapper(subst)(expression)


def get_dependencies(expression: ScalarExpression,
                     include_idx_lambda_indices: bool = True) -> frozenset[str]:
    """Names of the variables *expression* depends on."""
    if isinstance(expression, SCALAR_CLASSES):
        return frozenset()
    deps = DependencyMapper(include_subscripts=False, include_lookups=False,
                            include_calls="descend_args")(expression)
    names = frozenset(d.name for d in deps)
    if not include_idx_lambda_indices:
        names = frozenset(n for n in names if not _is_index_name(n))
    return names


def _is_index_name(name: str) -> bool:
    return name.startswith("_") and name[1:].isdigit()


def evaluate(expression: ScalarExpression,
             context: Mapping[str, Any] | None = None) -> Any:
    """Evaluate *expression* with the values in *context*."""
    if isinstance(expression, SCALAR_CLASSES):
        return expression
    return EvaluationMapper(dict(context or {}))(expression)


def is_integral_scalar(x: Any) -> bool:
    """Whether *x* is a Python or numpy integer (not a bool)."""
    return (isinstance(x, (int, np.integer))
            and not isinstance(x, (bool, np.bool_)))

# }}}

