"""Scalar expressions: the element-wise language of
:class:`~pytato.array.IndexLambda`.

Scalar expressions are :mod:`pymbolic` expressions. Inside an
:class:`~pytato.array.IndexLambda`, the variables ``_0, _1, ...`` are the
indices of the output element, ``_r0, _r1, ...`` (or any names declared by a
:class:`Reduce`) are reduction indices, and other variables name the
lambda's bindings. Scalar functions are called through variables named
``pytato.c99.<name>`` (e.g. ``pytato.c99.sin``).

.. autodata:: ScalarExpression
.. autodata:: IDX_LAMBDA_AXIS_INDEX
.. autoclass:: ExpressionBase
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
.. autoclass:: StringifyMapper
.. autoclass:: FlattenMapper
.. autoclass:: TermCollector
.. autoclass:: DistributeMapper
.. autoclass:: InductionVariableCollector
.. autofunction:: parse
.. autofunction:: substitute
.. autofunction:: get_dependencies
.. autofunction:: evaluate
.. autofunction:: is_integral_scalar
.. autofunction:: negated
.. autofunction:: is_integral_scalar_expression
.. autofunction:: is_quasi_affine
.. autofunction:: distribute
.. autofunction:: get_reduction_induction_variables
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Set
from typing import (
    Any,
    ParamSpec,
    SupportsInt,
    TypeAlias,
    TypeGuard,
    TypeVar,
    cast,
)

import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict
from pymbolic.mapper import (
    CombineMapper as _PCombineMapper,
    IdentityMapper as _PIdentityMapper,
    WalkMapper as _PWalkMapper,
)
from pymbolic.mapper.collector import TermCollector as _PTermCollector
from pymbolic.mapper.dependency import DependencyMapper as _PDependencyMapper
from pymbolic.mapper.distributor import DistributeMapper as _PDistributeMapper
from pymbolic.mapper.evaluator import EvaluationMapper as _PEvaluationMapper
from pymbolic.mapper.flattener import FlattenMapper as _PFlattenMapper
from pymbolic.mapper.stringifier import (
    PREC_NONE as _PREC_NONE,
    StringifyMapper as _PStringifyMapper,
)
from pymbolic.mapper.substitutor import SubstitutionMapper as _PSubstitutionMapper
from pymbolic.parser import Parser as _Parser
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.diagnostic import DTypeError, UnsupportedFeatureError


ScalarExpression: TypeAlias = Expression
"""A pymbolic expression or a Python/numpy scalar
(:data:`pymbolic.typing.Expression`)."""

# (numpy's numbers are its integers and inexact numbers, the kinds
# pymbolic's expressions name)
SCALAR_CLASSES = (int, float, complex, bool, np.integer, np.inexact, np.bool_)

#: A Python or numpy scalar (an instance of one of :data:`SCALAR_CLASSES`).
Scalar: TypeAlias = "int | float | complex | np.integer | np.inexact | np.bool_"

IDX_LAMBDA_AXIS_INDEX = re.compile(r"^(_(0|([1-9][0-9]*)))$")
"""Matches the names of the variables of an
:class:`~pytato.array.IndexLambda` that are the indices of its output
(``_0``, ``_1``, ..., without leading zeros), as in the reference
pytato."""

P = ParamSpec("P")
ResultT = TypeVar("ResultT")
_Dependencies: TypeAlias = "Set[prim.AlgebraicLeaf | prim.CommonSubexpression]"


# {{{ reduction operations

class ReductionOperation:
    """A binary associative operation with a neutral element.

    .. automethod:: neutral_element
    .. automethod:: apply_numpy
    """

    #: Name used in generated code and reprs.
    name: str = ""

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        raise NotImplementedError

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
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

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        return dtype.type(0)

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.sum(ary, axis=axis)


class ProductReductionOperation(ReductionOperation):
    """Multiplication."""

    name = "product"

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        return dtype.type(1)

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.prod(ary, axis=axis)


class MaxReductionOperation(ReductionOperation):
    """Maximum."""

    name = "max"

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        if dtype.kind == "f":
            return dtype.type(-np.inf)
        if dtype.kind in "iu":
            return integer_dtype_info(dtype).min
        if dtype.kind == "b":
            return np.False_
        raise DTypeError(f"max reduction not supported for dtype {dtype}")

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.max(ary, axis=axis)


class MinReductionOperation(ReductionOperation):
    """Minimum."""

    name = "min"

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        if dtype.kind == "f":
            return dtype.type(np.inf)
        if dtype.kind in "iu":
            return integer_dtype_info(dtype).max
        if dtype.kind == "b":
            return np.True_
        raise DTypeError(f"min reduction not supported for dtype {dtype}")

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.min(ary, axis=axis)


class AllReductionOperation(ReductionOperation):
    """Logical and."""

    name = "all"

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        return np.True_

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.all(ary, axis=axis)


class AnyReductionOperation(ReductionOperation):
    """Logical or."""

    name = "any"

    def neutral_element(self, dtype: np.dtype[np.generic]) -> np.generic | int:
        return np.False_

    def apply_numpy(self, ary: np.ndarray, axis: tuple[int, ...]
                    ) -> np.ndarray | np.generic:
        return np.any(ary, axis=axis)

# }}}


# {{{ primitives

class ExpressionBase(prim.ExpressionNode):
    """Base class of the scalar expression nodes that :mod:`pytato` adds to
    :mod:`pymbolic`'s (:class:`Reduce`, :class:`TypeCast`)."""


@prim.expr_dataclass()
class Reduce(ExpressionBase):
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
class TypeCast(ExpressionBase):
    """Conversion of :attr:`inner_expr` to :attr:`dtype`."""

    dtype: np.dtype[np.generic]
    inner_expr: ScalarExpression


# }}}


# {{{ mappers

class IdentityMapper(_PIdentityMapper[P]):
    """Rebuilds expressions, with support for :class:`Reduce` and
    :class:`TypeCast`."""

    def map_reduce(self, expr: Reduce, *args: P.args, **kwargs: P.kwargs
                   ) -> ScalarExpression:
        return Reduce(
            self.rec(expr.inner_expr, *args, **kwargs), expr.op,
            {name: (self.rec(lo, *args, **kwargs), self.rec(hi, *args, **kwargs))
             for name, (lo, hi) in expr.bounds.items()})

    def map_type_cast(self, expr: TypeCast, *args: P.args, **kwargs: P.kwargs
                      ) -> ScalarExpression:
        return TypeCast(expr.dtype, self.rec(expr.inner_expr, *args, **kwargs))


class WalkMapper(_PWalkMapper[P]):
    """Visits every subexpression, including inside :class:`Reduce`."""

    def map_reduce(self, expr: Reduce, *args: P.args, **kwargs: P.kwargs) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.inner_expr, *args, **kwargs)
        for lo, hi in expr.bounds.values():
            self.rec(lo, *args, **kwargs)
            self.rec(hi, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_type_cast(self, expr: TypeCast, *args: P.args, **kwargs: P.kwargs) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec(expr.inner_expr, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)


class CombineMapper(_PCombineMapper[ResultT, P]):
    """Combines results over children, including inside :class:`Reduce`."""

    def map_reduce(self, expr: Reduce, *args: P.args, **kwargs: P.kwargs) -> ResultT:
        return self.combine([
            self.rec(expr.inner_expr, *args, **kwargs),
            *(self.rec(b, *args, **kwargs)
              for bds in expr.bounds.values() for b in bds)])

    def map_type_cast(self, expr: TypeCast, *args: P.args, **kwargs: P.kwargs
                      ) -> ResultT:
        return self.rec(expr.inner_expr, *args, **kwargs)


class DependencyMapper(_PDependencyMapper[P]):
    """Collects the variables an expression depends on (reduction indices
    bound by a :class:`Reduce` are excluded).

    :arg include_idx_lambda_indices: whether to include the index variables
        of index lambdas (``_0``, ``_1``, ..., ``_r0``, ...).

    The other arguments are those of
    :class:`pymbolic.mapper.dependency.DependencyMapper`.
    """

    def __init__(self, *, include_idx_lambda_indices: bool = True,
                 include_subscripts: bool = True,
                 include_lookups: bool = True,
                 include_calls: bool | str = True,
                 include_cses: bool = False,
                 composite_leaves: bool | None = None) -> None:
        super().__init__(include_subscripts=include_subscripts,
                         include_lookups=include_lookups,
                         include_calls=include_calls,  # type: ignore[arg-type]
                         include_cses=include_cses,
                         composite_leaves=composite_leaves)
        self.include_idx_lambda_indices = include_idx_lambda_indices

    def map_variable(self, expr: prim.Variable, *args: P.args, **kwargs: P.kwargs
                     ) -> _Dependencies:
        if not self.include_idx_lambda_indices and _is_index_name(expr.name):
            return frozenset()
        return super().map_variable(expr, *args, **kwargs)

    def map_reduce(self, expr: Reduce, *args: P.args, **kwargs: P.kwargs
                   ) -> _Dependencies:
        inner = self.rec(expr.inner_expr, *args, **kwargs)
        bound = frozenset(prim.Variable(n) for n in expr.bounds)
        return self.combine([
            inner - bound,
            *(self.rec(b, *args, **kwargs)
              for bds in expr.bounds.values() for b in bds)])

    def map_type_cast(self, expr: TypeCast, *args: P.args, **kwargs: P.kwargs
                      ) -> _Dependencies:
        return self.rec(expr.inner_expr, *args, **kwargs)


class SubstitutionMapper(IdentityMapper[[]], _PSubstitutionMapper):
    """Replaces variables by the result of a substitution function."""


class EvaluationMapper(_PEvaluationMapper[ResultT]):
    """Evaluates an expression with numpy semantics in a context mapping
    names to values. Functions named ``pytato.c99.<name>`` evaluate to the
    numpy function of that name."""

    # evaluation results are numpy values (or functions) of any type
    def map_variable(self, expr: prim.Variable) -> Any:
        if expr.name.startswith("pytato.c99."):
            return _numpy_function(expr.name[len("pytato.c99."):])
        return super().map_variable(expr)

    def map_reduce(self, expr: Reduce) -> Any:
        names = list(expr.bounds)
        # (the bounds evaluate to integers)
        ranges = [range(int(cast("SupportsInt", self.rec(lo))),
                        int(cast("SupportsInt", self.rec(hi))))
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


class StringifyMapper(_PStringifyMapper[P]):
    """Prints expressions, including :class:`Reduce` (as
    ``sum(_r0 in [0, n), ...)``-like text) and :class:`TypeCast` (as
    ``cast(dtype, ...)``)."""

    def map_reduce(self, expr: Reduce, enclosing_prec: int, *args: P.args,
                   **kwargs: P.kwargs) -> str:
        bounds = ", ".join(
            f"{name} in [{self.rec(lo, _PREC_NONE, *args, **kwargs)}, "
            f"{self.rec(hi, _PREC_NONE, *args, **kwargs)})"
            for name, (lo, hi) in expr.bounds.items())
        inner = self.rec(expr.inner_expr, _PREC_NONE, *args, **kwargs)
        return f"{expr.op.name}({bounds}, {inner})"

    def map_type_cast(self, expr: TypeCast, enclosing_prec: int, *args: P.args,
                      **kwargs: P.kwargs) -> str:
        inner = self.rec(expr.inner_expr, _PREC_NONE, *args, **kwargs)
        return f"cast({expr.dtype}, {inner})"


class FlattenMapper(_PFlattenMapper, IdentityMapper[[]]):
    """Flattens nested sums and products
    (:class:`pymbolic.mapper.flattener.FlattenMapper`), also inside
    :class:`Reduce` and :class:`TypeCast`."""


class TermCollector(_PTermCollector, IdentityMapper[[]]):
    """Collects the terms of sums by their dependence on *parameters*
    (:class:`pymbolic.mapper.collector.TermCollector`), also inside
    :class:`Reduce` and :class:`TypeCast`."""

    def __init__(self, parameters: Set[prim.AlgebraicLeaf] | None = None
                 ) -> None:
        super().__init__(parameters)


class DistributeMapper(_PDistributeMapper, IdentityMapper[[]]):
    """Multiplies out products of sums
    (:class:`pymbolic.mapper.distributor.DistributeMapper`), also inside
    :class:`Reduce` and :class:`TypeCast`."""

    def __init__(
            self,
            collector: Callable[[ScalarExpression], ScalarExpression] | None = None,
            const_folder: Callable[[ScalarExpression], ScalarExpression] | None
            = None) -> None:
        super().__init__(collector=collector, const_folder=const_folder)


class InductionVariableCollector(CombineMapper[frozenset[str], []]):
    """Collects the names of the reduction (induction) variables bound by
    the :class:`Reduce` nodes of an expression."""

    def combine(self, values: Iterable[frozenset[str]]) -> frozenset[str]:
        result: frozenset[str] = frozenset()
        for v in values:
            result = result | v
        return result

    def map_reduce(self, expr: Reduce) -> frozenset[str]:
        return frozenset(expr.bounds) | super().map_reduce(expr)

    def map_constant(self, expr: object) -> frozenset[str]:
        return frozenset()

    def map_algebraic_leaf(self, expr: prim.ExpressionNode) -> frozenset[str]:
        return frozenset()

    map_variable = map_algebraic_leaf
    map_nan = map_algebraic_leaf


def _apply_binary(op: ReductionOperation, a: Any, b: Any) -> Any:
    # a and b: evaluated values (numpy scalars or arrays of any dtype)
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
    raise UnsupportedFeatureError(type(op).__name__)


_NUMPY_NAME_MAP = {"abs": "abs", "atan2": "arctan2", "asin": "arcsin",
                   "acos": "arccos", "atan": "arctan", "pow": "power",
                   "fabs": "abs", "isnan": "isnan"}


def _numpy_function(name: str) -> Callable[..., object]:
    return getattr(np, _NUMPY_NAME_MAP.get(name, name))

# }}}


# {{{ functions

def parse(s: str) -> ScalarExpression:
    """Parse *s* into a scalar expression."""
    return _Parser()(s)


def distribute_arithmetic(expr: ArithmeticExpression) -> ArithmeticExpression:
    """*expr* with products distributed over sums, by pymbolic's
    :class:`~pymbolic.mapper.distributor.DistributeMapper` (typed here as
    the arithmetic expression it returns for one: pymbolic's mappers are
    typed to return any expression)."""
    return cast("ArithmeticExpression", _PDistributeMapper()(expr))


def substitute(expression: ScalarExpression,
               variable_assignments: Mapping[str, ScalarExpression] | None
               ) -> ScalarExpression:
    """Substitute the variables named in *variable_assignments* by the
    corresponding values."""
    if not variable_assignments:
        return expression

    def subst(v: prim.AlgebraicLeaf) -> ScalarExpression | None:
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
    names = frozenset(d.name for d in deps)  # type: ignore[union-attr]
    if not include_idx_lambda_indices:
        names = frozenset(n for n in names if not _is_index_name(n))
    return names


def _is_index_name(name: str) -> bool:
    return name.startswith("_") and name[1:].isdigit()


def evaluate(expression: ScalarExpression,
             context: Mapping[str, object] | None = None) -> Any:
    """Evaluate *expression* with the values in *context*."""
    if isinstance(expression, SCALAR_CLASSES):
        return expression
    return EvaluationMapper(dict(context or {}))(expression)


def scalar_literal(x: complex | np.generic, dtype: np.dtype[np.generic]
                   ) -> ArithmeticExpression:
    """*x* as a numpy scalar of *dtype*, a constant of scalar expressions
    (numpy's types make any scalar a :class:`numpy.generic`, which pymbolic's
    do not count among constants)."""
    return cast("ArithmeticExpression", dtype.type(x))


def integer_dtype_info(dtype: np.dtype[np.generic]) -> np.iinfo[np.integer]:
    """:class:`numpy.iinfo` of *dtype*, an integer dtype (which numpy's types
    cannot tell from its :attr:`~numpy.dtype.kind`)."""
    return np.iinfo(cast("np.dtype[np.integer]", dtype))


def is_integral_scalar(x: object) -> TypeGuard[int | np.integer]:
    """Whether *x* is a Python or numpy integer (not a bool)."""
    if type(x) is int:
        return True
    return (isinstance(x, (int, np.integer))
            and not isinstance(x, (bool, np.bool_)))


def negated(x: ArithmeticExpression) -> ArithmeticExpression:
    """``-x`` as a scalar expression: a constant is negated in place (keeping
    its type) where that is exact, anything else becomes ``(-1)*x``.

    Integer offsets and other constants are not left as ``(-1)*c``: loopy
    memoizes the types (and C code) of subexpressions by equality, and
    ``(-1)*1``, ``(-1)*1.0`` and ``(-1)*(1+0j)`` are equal in Python, so a
    kernel holding an integer index offset and a float constant of the same
    value got one type for both (an index typed as a float is refused by
    loopy's checks). A leaf constant keeps its own type there: that memo
    keys on the type of the expression itself.

    Kept as ``(-1)*c``: unsigned integers (their negation wraps, then takes
    part in C's integer promotions with another operand), the most negative
    integer of a type, and float or complex constants with a zero part (a
    ``-0.0`` literal prints as ``0.0`` where loopy has seen an equal ``0.0``
    first, which changes the sign of a zero result).
    """
    if isinstance(x, (bool, np.bool_)):
        return prim.Product((-1, x))
    if isinstance(x, int):
        return -x
    if isinstance(x, np.signedinteger):
        if x != np.iinfo(x.dtype).min:
            return -x
    elif isinstance(x, (float, np.floating)):
        if x != 0:
            return -x
    elif isinstance(x, (complex, np.complexfloating)):
        if x.real != 0 and x.imag != 0:
            return -x
    return prim.Product((-1, x))


_INTEGRAL_NODES = (prim.Variable, prim.Sum, prim.Product, prim.FloorDiv,
                   prim.Remainder, prim.Min, prim.Max)


def is_integral_scalar_expression(expr: object
                                  ) -> TypeGuard[ArithmeticExpression]:
    """Whether *expr* is an integer or an integer-valued expression: one
    built from integers and variables (taken as integers, like size
    parameters and indices) by sums, products, floor divisions,
    remainders, minima and maxima."""
    stack: list[object] = [expr]
    while stack:
        e = stack.pop()
        if is_integral_scalar(e) or isinstance(e, prim.Variable):
            continue
        if isinstance(e, (prim.Sum, prim.Product, prim.Min, prim.Max)):
            stack.extend(e.children)
        elif isinstance(e, (prim.FloorDiv, prim.Remainder)):
            stack.extend((e.numerator, e.denominator))
        else:
            return False
    return True


def is_quasi_affine(expr: ScalarExpression) -> bool:
    """Whether *expr* is quasi-affine in its variables: built from integers
    and variables by sums, products in which at most one factor is not a
    constant, and floor divisions and remainders by integer constants (the
    expressions :mod:`islpy` can represent)."""
    stack: list[object] = [expr]
    while stack:
        e = stack.pop()
        if is_integral_scalar(e) or isinstance(e, prim.Variable):
            continue
        if isinstance(e, prim.Sum):
            stack.extend(e.children)
        elif isinstance(e, prim.Product):
            nonconst = [c for c in e.children if not is_integral_scalar(c)]
            if len(nonconst) > 1:
                return False
            stack.extend(nonconst)
        elif isinstance(e, (prim.FloorDiv, prim.Remainder)):
            if not is_integral_scalar(e.denominator):
                return False
            stack.append(e.numerator)
        else:
            return False
    return True


def distribute(expr: ScalarExpression,
               parameters: frozenset[prim.AlgebraicLeaf] = frozenset(),
               commutative: bool = True) -> ScalarExpression:
    """*expr* with products of sums multiplied out, collecting the terms
    by their dependence on *parameters* (as :func:`pymbolic.distribute`);
    *commutative* says whether multiplication may be reordered."""
    if commutative:
        return DistributeMapper(TermCollector(parameters))(expr)
    return DistributeMapper(lambda x: x)(expr)


def get_reduction_induction_variables(expr: ScalarExpression) -> Set[str]:
    """The names of the reduction variables bound in *expr* (by its
    :class:`Reduce` nodes)."""
    if isinstance(expr, SCALAR_CLASSES):
        return frozenset()
    return InductionVariableCollector()(expr)

# }}}

