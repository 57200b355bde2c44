"""Lowering of the scalar expressions of
:class:`~pytato.array.IndexLambda` nodes to :mod:`loopy` expressions.

:class:`ScalarToLoopyMapper` lowers the expression of a node for given
output indices, with numpy's semantics where C's or OpenCL's differ:
integer division and remainder defined for every divisor
(:func:`_guard_integer_division`), integer powers with negative exponents,
complex division, powers, comparisons and functions OpenCL lacks,
arithmetic on integers narrower than ``int`` wrapped as numpy wraps it, and
max/min reductions propagating NaNs (:class:`NumpyMaxReductionOperation`,
:class:`NumpyMinReductionOperation`). Bindings are read through their
:class:`~pytato.target.loopy.lower.graph.ImplementedResult`; reductions get
fresh inames in the :class:`~pytato.target.loopy.lower.graph.CodeGenState`.

.. autoclass:: ExpressionContext
.. autoclass:: ScalarToLoopyMapper
.. autoclass:: BranchFreeAnyReductionOperation
.. autoclass:: BranchFreeAllReductionOperation
.. autoclass:: NumpyMaxReductionOperation
.. autoclass:: NumpyMinReductionOperation
.. autofunction:: lower_foreign_call
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.library.reduction import (
    ReductionOperation as LoopyReductionOperation,
    parse_reduction_op,
)
from loopy.symbolic import (
    Reduction as LoopyReduction,
    TypeCast as LoopyTypeCast,
    get_reduction_inames,
)
from pymbolic.typing import Expression

from pytato.diagnostic import CannotBeLoweredToLoopyError
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    AllReductionOperation,
    AnyReductionOperation,
    IdentityMapper,
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    Reduce,
    ReductionOperation,
    SumReductionOperation,
    TypeCast,
)
from pytato.scalar_functions import get_scalar_function
from pytato.tags import ReductionWithoutIdentity
from pytato.target.loopy.lower.empty_reductions import record_length_to_check
from pytato.target.loopy.lower.index_arith import (
    simplify_floor_div,
    simplify_remainder,
)

# (the names moved to numpy_arith are importable from here as before)
from pytato.target.loopy.lower.numpy_arith import (  # noqa: F401
    _COMPARE,
    _COMPLEX_FUNCTIONS,
    _call,
    _complex_parts,
    _complex_power,
    _complex_quotient,
    _constant_int,
    _constant_truth,
    _float_name,
    _guard_integer_division,
    _integer_power,
    _is_complex,
    _is_inexact,
    _opaque_divisor,
    _opaque_negation,
)
from pytato.target.loopy.lower.reduction_bounds import (
    BoundAssignment,
    is_parametric_bound,
    lower_reduction_bound,
)


if TYPE_CHECKING:
    from loopy.target import TargetBase
    from loopy.translation_unit import CallablesTable
    from loopy.types import LoopyType

    from pytato.array.base import Array
    from pytato.array.lambdas import IndexLambda
    from pytato.target.loopy.lower.graph import CodeGenState, ImplementedResult


__all__ = [
    "BranchFreeAllReductionOperation", "BranchFreeAnyReductionOperation",
    "ExpressionContext", "NumpyMaxReductionOperation",
    "NumpyMinReductionOperation", "ScalarToLoopyMapper", "lower_foreign_call",
]

ScalarDType: TypeAlias = "np.dtype[Any] | int | float | complex"
"""What ``_ScalarDTypeMapper`` infers: a numpy dtype, or a Python
scalar itself (a weak type in numpy's promotion)."""


@dataclass
class ExpressionContext:
    """Per-instruction information gathered while lowering an expression:
    the ids of the instructions it depends on, and the assignments of the
    bounds of its reductions that are not parametric (to be emitted in the
    loops of the instruction, see
    :mod:`pytato.target.loopy.lower.reduction_bounds`)."""

    depends_on: set[str] = field(default_factory=set)
    bound_assignments: list[BoundAssignment] = field(default_factory=list)


# {{{ scalar expressions

_C_FUNCTION_NAMES = {
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "power": "pow", "absolute": "abs",
}

_REDUCTION_OPS: dict[type[ReductionOperation], str] = {
    SumReductionOperation: "sum",
    ProductReductionOperation: "product",
    MaxReductionOperation: "max",
    MinReductionOperation: "min",
    AllReductionOperation: "all",
    AnyReductionOperation: "any",
}


class _NumpyExtremumMixin:
    """numpy semantics for loopy's max/min reductions: NaNs propagate (where
    OpenCL's ``fmax``/``fmin`` drop them), and integer types narrower than
    32 bits and unsigned types have a neutral element."""

    _cmp: str
    _is_max: bool

    def neutral_element(self, *dtypes: LoopyType,
                        callables_table: CallablesTable, target: TargetBase
                        ) -> tuple[Expression, CallablesTable]:
        dtype, = dtypes
        nd = dtype.numpy_dtype
        if nd.kind in "iu" and nd.itemsize < 4:
            info = np.iinfo(nd)
            return int(info.min if self._is_max else info.max), callables_table
        if nd.kind == "u":
            # loopy's UINT_MAX and ULONG_MAX are names its type inference
            # does not know: the bound as a constant of the dtype instead
            return (nd.type(0 if self._is_max else np.iinfo(nd).max),
                    callables_table)
        return super().neutral_element(  # type: ignore[misc]
            *dtypes, callables_table=callables_table, target=target)

    def __call__(self, dtypes: Sequence[LoopyType], operand1: Expression,
                 operand2: Expression, callables_table: CallablesTable,
                 target: TargetBase) -> tuple[Expression, CallablesTable]:
        dtype, = dtypes
        if dtype.numpy_dtype.kind == "f":
            return prim.If(prim.LogicalOr((
                prim.Comparison(operand1, self._cmp, operand2),
                prim.Comparison(operand1, "!=", operand1))),
                operand1, operand2), callables_table
        return super().__call__(  # type: ignore[misc]
            dtypes, operand1, operand2, callables_table, target)


class NumpyMaxReductionOperation(_NumpyExtremumMixin,
                                 lp.library.reduction.MaxReductionOperation):
    """A loopy max reduction with :func:`numpy.max`'s semantics."""

    _cmp = ">"
    _is_max = True


class NumpyMinReductionOperation(_NumpyExtremumMixin,
                                 lp.library.reduction.MinReductionOperation):
    """A loopy min reduction with :func:`numpy.min`'s semantics."""

    _cmp = "<"
    _is_max = False


def _truth_value(expr: Expression) -> Expression:
    """*expr* as 0 or 1: itself where it is a comparison or a logical
    operation, else ``expr != 0``."""
    if isinstance(expr, (prim.Comparison, prim.LogicalAnd, prim.LogicalOr,
                         prim.LogicalNot)):
        return expr
    return prim.Comparison(expr, "!=", 0)


class _BranchFreeLogicMixin:
    """any/all reductions whose update is a bitwise operation on truth
    values (0 or 1) instead of C's ``||``/``&&``, which evaluate their
    second operand only if the first does not decide: an update that
    branches on the accumulator keeps the compiler from loading a
    work-item's next elements before the previous one is combined (on
    NVIDIA GPUs, ``any`` then read more slowly than ``sum``). Same
    results, NaN included (nonzero, true for both)."""

    _bitwise: type[prim.BitwiseOr] | type[prim.BitwiseAnd]

    def __call__(self, dtypes: Sequence[LoopyType], operand1: Expression,
                 operand2: Expression, callables_table: CallablesTable,
                 target: TargetBase) -> tuple[Expression, CallablesTable]:
        return self._bitwise((_truth_value(operand1),
                              _truth_value(operand2))), callables_table


class BranchFreeAnyReductionOperation(
        _BranchFreeLogicMixin, lp.library.reduction.AnyReductionOperation):
    """loopy's any reduction, updated by a bitwise or of truth values."""

    _bitwise = prim.BitwiseOr


class BranchFreeAllReductionOperation(
        _BranchFreeLogicMixin, lp.library.reduction.AllReductionOperation):
    """loopy's all reduction, updated by a bitwise and of truth values."""

    _bitwise = prim.BitwiseAnd


def _loopy_reduction_op(op: ReductionOperation, dtype: ScalarDType
                        ) -> LoopyReductionOperation:
    is_bool = isinstance(dtype, np.dtype) and dtype.kind == "b"
    if isinstance(op, MaxReductionOperation):
        return BranchFreeAnyReductionOperation() if is_bool \
            else NumpyMaxReductionOperation()
    if isinstance(op, MinReductionOperation):
        return BranchFreeAllReductionOperation() if is_bool \
            else NumpyMinReductionOperation()
    if isinstance(op, AnyReductionOperation):
        return BranchFreeAnyReductionOperation()
    if isinstance(op, AllReductionOperation):
        return BranchFreeAllReductionOperation()
    for cls, name in _REDUCTION_OPS.items():
        if isinstance(op, cls):
            return parse_reduction_op(name)
    raise CannotBeLoweredToLoopyError(
        f"reduction operation {type(op).__name__} has no loopy equivalent")


class _ScalarDTypeMapper:
    """The numpy dtype of a scalar expression of an
    :class:`~pytato.array.IndexLambda` (Python scalars stay weak)."""

    def __init__(self, bindings: Mapping[str, Array]) -> None:
        self.bindings = bindings
        self._cache: dict[int, ScalarDType] = {}

    def __call__(self, expr: Expression) -> ScalarDType:
        key = id(expr)
        try:
            return self._cache[key]
        except KeyError:
            result = self._cache[key] = self._infer(expr)
            return result

    def _infer(self, expr: Expression) -> ScalarDType:
        if isinstance(expr, (bool, np.bool_)):
            return np.dtype(np.bool_)
        if isinstance(expr, (int, float, complex)):
            return expr
        if isinstance(expr, np.generic):
            return expr.dtype
        if isinstance(expr, prim.Variable):
            b = self.bindings.get(expr.name)
            return b.dtype if b is not None else np.dtype(np.int64)
        if isinstance(expr, prim.Subscript):
            return self(expr.aggregate)
        if isinstance(expr, TypeCast):
            return np.dtype(expr.dtype)
        if isinstance(expr, (prim.Comparison, prim.LogicalAnd, prim.LogicalOr,
                             prim.LogicalNot)):
            return np.dtype(np.bool_)
        if isinstance(expr, prim.If):
            return np.result_type(self(expr.then), self(expr.else_))
        if isinstance(expr, Reduce):
            return self(expr.inner_expr)
        if isinstance(expr, prim.Call):
            name = getattr(expr.function, "name", "").rsplit(".", 1)[-1]
            if name in ("isnan", "isinf", "isfinite", "signbit"):
                return np.dtype(np.bool_)
            dt = np.result_type(*(self(p) for p in expr.parameters))
            if name in ("abs", "fabs", "real", "imag"):
                return np.empty(0, dt).real.dtype
            return dt
        if isinstance(expr, prim.Quotient):
            return np.result_type(self(expr.numerator), self(expr.denominator),
                                  1.0)
        children = getattr(expr, "children", None)
        if children is None:
            children = [getattr(expr, a) for a in ("numerator", "denominator",
                                                   "base", "exponent",
                                                   "shiftee", "shift")
                        if hasattr(expr, a)]
        return np.result_type(*(self(c) for c in children))


#: ``int64`` (``uint32``: ``max(long, uint)`` of a maximum over ``a - b``
#: is ambiguous in OpenCL C); narrower types are promoted to ``int`` by C
_WIDE_UNSIGNED = frozenset({np.dtype(np.uint32), np.dtype(np.uint64)})


class ScalarToLoopyMapper(IdentityMapper):
    """Lowers the scalar expression of an :class:`~pytato.array.IndexLambda`
    to a loopy expression: output indices are replaced by *index_map*,
    bindings by their :class:`ImplementedResult`, reductions become loopy
    reductions over fresh inames, ``pytato.c99.*`` calls become calls to
    the target's math functions."""

    def __init__(self, state: CodeGenState, node: IndexLambda,
                 bindings: Mapping[str, ImplementedResult],
                 index_map: Mapping[str, Expression], ctx: ExpressionContext
                 ) -> None:
        self.state = state
        self.node = node
        self.bindings = bindings
        self.index_map = index_map
        self.ctx = ctx
        self._dtypes: _ScalarDTypeMapper | None = None

    def _dtype(self, expr: Expression) -> ScalarDType:
        if self._dtypes is None:
            self._dtypes = _ScalarDTypeMapper(self.node.bindings)
        return self._dtypes(expr)

    def _operand(self, expr: Expression) -> Expression:
        """*expr* lowered as the operand of an operation that does not
        commute with integer wrap-around (division, comparison, casts,
        ...). C computes on integers narrower than ``int`` in ``int``;
        an explicit conversion restores numpy's wrapped value. (Not a bare
        cast: loopy drops a cast to the type it infers for its operand, and
        it infers ``char`` arithmetic as ``char``. The cast inside the
        conversion gives its argument the narrow type in loopy's
        inference, whatever the constants of *expr*.)"""
        result = self.rec(expr)
        if isinstance(expr, SCALAR_CLASSES):
            return result
        if isinstance(expr, (prim.Variable, prim.Subscript)):
            var = expr.aggregate if isinstance(expr, prim.Subscript) else expr
            binding = self.bindings.get(getattr(var, "name", None))
            if binding is None or not binding.is_inlined:
                return result
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind in "iu" \
                and dtype.itemsize < 4:
            return _call("_pt_narrow_int", LoopyTypeCast(dtype, result))
        return result

    def _unknown(self, what: str) -> CannotBeLoweredToLoopyError:
        return CannotBeLoweredToLoopyError(
            f"IndexLambda: {what} in scalar expression {self.node.expr}")

    def map_variable(self, expr: prim.Variable) -> Expression:
        name = expr.name
        if name in self.index_map:
            return self.index_map[name]
        if name in self.bindings:
            return self.bindings[name].to_loopy_expression((), self.ctx)
        if name in self.state.size_param_names:
            return expr
        raise self._unknown(f"unknown variable '{name}'")

    def map_subscript(self, expr: prim.Subscript) -> Expression:
        agg = expr.aggregate
        if not isinstance(agg, prim.Variable) or agg.name not in self.bindings:
            raise self._unknown(f"subscript of unknown array '{agg}'")
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        return self.bindings[agg.name].to_loopy_expression(
            tuple(self.rec(i) for i in index), self.ctx)

    def map_call(self, expr: prim.Call) -> Expression:
        fn = expr.function
        if isinstance(fn, prim.Variable) and fn.name.startswith("pytato.foreign."):
            return lower_foreign_call(
                fn.name, tuple(self._operand(p) for p in expr.parameters))
        if not (isinstance(fn, prim.Variable)
                and fn.name.startswith("pytato.c99.")):
            raise self._unknown(f"call to unknown function '{fn}'")
        name = fn.name[len("pytato.c99."):]
        args = tuple(self._operand(p) for p in expr.parameters)
        if name in _COMPLEX_FUNCTIONS and len(args) == 1 \
                and _is_complex(self._dtype(expr.parameters[0])):
            return _call(f"_pt_c{name}", *args)
        if name in ("abs", "absolute") and len(args) == 1:
            dtype = self._dtype(expr.parameters[0])
            if isinstance(dtype, np.dtype) and dtype.kind == "i":
                # OpenCL's abs of a signed integer is unsigned (abs(-2) >= -4
                # was false); numpy's keeps the type and wraps the most
                # negative value to itself: a conditional negation, through
                # the unsigned type for 32- and 64-bit values (C computes
                # chars and shorts in int, where it cannot overflow), since
                # a signed overflow lets the compiler assume the result is
                # not negative. An operand holding a reduction is not
                # repeated (loopy would realize it twice): converted back
                # from the unsigned abs instead.
                x, = args
                if get_reduction_inames(x):
                    return LoopyTypeCast(dtype, prim.Call(
                        prim.Variable("abs"), args))
                neg: Expression = prim.Product((-1, x))
                if dtype.itemsize >= 4:
                    unsigned = np.dtype(f"u{dtype.itemsize}")
                    # ~x + 1: a literal -1 prints as -1.0 in a float context
                    neg = LoopyTypeCast(dtype, prim.Sum((
                        prim.BitwiseNot(LoopyTypeCast(unsigned, x)),
                        unsigned.type(1))))
                return prim.If(prim.Comparison(x, "<", 0), neg, x)
        return prim.Call(prim.Variable(_C_FUNCTION_NAMES.get(name, name)), args)

    def _truth(self, expr: Expression) -> Expression:
        """*expr* lowered as an operand of a logical operation: complex
        values (which OpenCL cannot negate or combine logically) become
        whether they are nonzero."""
        if _is_complex(self._dtype(expr)):
            re, im = _complex_parts(self._operand(expr))
            return prim.LogicalOr((prim.Comparison(re, "!=", 0),
                                   prim.Comparison(im, "!=", 0)))
        return self.rec(expr)

    def map_sum(self, expr: prim.Sum) -> Expression:
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind == "b":
            # numpy's sum of booleans is their logical or (C's would store
            # True + True as 2 in a bool array)
            return prim.LogicalOr(tuple(self._truth(c) for c in expr.children))
        if dtype in _WIDE_UNSIGNED:
            return prim.Sum(self._unsigned_children(expr, dtype))
        return super().map_sum(expr)

    def map_product(self, expr: prim.Product) -> Expression:
        dtype = self._dtype(expr)
        if dtype in _WIDE_UNSIGNED:
            return prim.Product(self._unsigned_children(expr, dtype))
        return super().map_product(expr)

    def _unsigned_children(self, expr: prim.Sum | prim.Product,
                           dtype: np.dtype[Any]) -> tuple[Expression, ...]:
        """The lowered children of a sum or product of the unsigned *dtype*
        (one of :data:`_WIDE_UNSIGNED`), Python integers among them (the
        ``-1`` of a negation or subtraction) as constants of *dtype*,
        wrapped modulo its range as numpy does. loopy types a Python
        integer as a signed integer, and a signed with an unsigned 64-bit
        integer as ``float64`` (a reduction of ``-x`` accumulated in
        ``double``, losing every value above 2**53), with an unsigned
        32-bit one as ``int64``."""
        modulus = 2**(8 * dtype.itemsize)
        return tuple(
            dtype.type(child % modulus) if type(child) is int
            else self.rec(child)
            for child in expr.children)

    def map_logical_not(self, expr: prim.LogicalNot) -> Expression:
        return prim.LogicalNot(self._truth(expr.child))

    def map_logical_and(self, expr: prim.LogicalAnd) -> Expression:
        return self._logical(expr, is_and=True)

    def map_logical_or(self, expr: prim.LogicalOr) -> Expression:
        return self._logical(expr, is_and=False)

    def _logical(self, expr: prim.LogicalAnd | prim.LogicalOr, *, is_and: bool
                 ) -> Expression:
        """A logical and (or) with its constant operands folded: a constant
        that decides the result gives the result, the others are dropped
        (``np.logical_and(True, x)`` as arraycontext's ``array_equal``
        builds it: compilers warn of ``&&`` with a constant operand)."""
        rest: list[tuple[Expression, Any]] = []
        for child in expr.children:
            lowered = self._truth(child)
            if isinstance(lowered, (bool, int, float, np.bool_, np.integer,
                                    np.floating)):
                if bool(lowered) != is_and:
                    return int(not is_and)
                continue
            rest.append((lowered, self._dtype(child)))
        if not rest:
            return int(is_and)
        if len(rest) == 1:
            (lowered, dtype), = rest
            if (isinstance(dtype, np.dtype) and dtype.kind == "b") \
                    or isinstance(lowered, (prim.Comparison, prim.LogicalAnd,
                                            prim.LogicalOr, prim.LogicalNot)):
                return lowered
            return prim.Comparison(lowered, "!=", 0)
        kids = tuple(lowered for lowered, _ in rest)
        return prim.LogicalAnd(kids) if is_and else prim.LogicalOr(kids)

    def map_comparison(self, expr: prim.Comparison) -> Expression:
        left, right = self._operand(expr.left), self._operand(expr.right)
        if expr.operator in ("==", "!=") and (
                _is_complex(self._dtype(expr.left))
                or _is_complex(self._dtype(expr.right))):
            (lr, li), (rr, ri) = _complex_parts(left), _complex_parts(right)
            parts = (prim.Comparison(lr, expr.operator, rr),
                     prim.Comparison(li, expr.operator, ri))
            return (prim.LogicalAnd(parts) if expr.operator == "=="
                    else prim.LogicalOr(parts))
        if _is_complex(self._dtype(expr.left)) or _is_complex(
                self._dtype(expr.right)):
            # numpy 2's lexicographic order: real parts first (when neither
            # imaginary part is NaN), then imaginary parts
            (lr, li), (rr, ri) = _complex_parts(left), _complex_parts(right)
            strict = expr.operator[0]
            return prim.LogicalOr((
                prim.LogicalAnd((prim.Comparison(lr, strict, rr),
                                 prim.Comparison(li, "==", li),
                                 prim.Comparison(ri, "==", ri))),
                prim.LogicalAnd((prim.Comparison(lr, "==", rr),
                                 prim.Comparison(li, expr.operator, ri)))))
        if left == right and not _is_inexact(self._dtype(expr.left)) \
                and not _is_inexact(self._dtype(expr.right)):
            # an integer compared with itself (``maximum(x, x)``): its
            # value, without the self-comparison that compilers warn of
            # (floating-point ones stay: NaN is not equal to itself)
            return int(expr.operator in ("==", "<=", ">="))
        return prim.Comparison(left, expr.operator, right)

    def map_type_cast(self, expr: TypeCast) -> Expression:
        inner = self._operand(expr.inner_expr)
        dtype = np.dtype(expr.dtype)
        if dtype.kind == "b":
            if _is_complex(self._dtype(expr.inner_expr)):
                re, im = _complex_parts(inner)
                return prim.LogicalOr((prim.Comparison(re, "!=", 0),
                                       prim.Comparison(im, "!=", 0)))
            return prim.Comparison(inner, "!=", 0)
        source = self._dtype(expr.inner_expr)
        if dtype.kind != "c" and _is_complex(source):
            # numpy's astype of complex to real types drops the imaginary
            # part (C has no conversion of OpenCL's complex structs)
            inner = _complex_parts(inner)[0]
        if dtype.kind in "iu" and _is_inexact(source):
            # OpenCL leaves conversions of NaN, infinities and values out
            # of range undefined: the target's function gives numpy's
            # x86-64 results
            return _call(f"_pt_float_to_{dtype.name}", inner)
        return LoopyTypeCast(dtype, inner)

    def map_constant(self, expr: Expression) -> Expression:
        if isinstance(expr, (bool, np.bool_)):
            return int(expr)
        return expr

    def _signed(self, expr: Expression) -> bool:
        dtype = self._dtype(expr)
        return not (isinstance(dtype, np.dtype) and dtype.kind == "u")

    def _zero(self, expr: Expression) -> Expression:
        dtype = self._dtype(expr)
        return dtype.type(0) if isinstance(dtype, np.dtype) else 0

    def map_floor_div(self, expr: prim.FloorDiv) -> Expression:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        dtype = self._dtype(expr)
        if _is_inexact(dtype):
            if _is_complex(dtype):
                return prim.Call(prim.Variable("floor"),
                                 (prim.Quotient(num, den),))
            return _call(f"_pt_floordiv_{_float_name(dtype)}", num, den)
        simple = simplify_floor_div(num, den, self.state.index_ranges)
        if simple is not None:
            return simple
        if get_reduction_inames(num) or get_reduction_inames(den):
            # the guard repeats its operands: loopy would realize a
            # reduction in each copy (and fail to type them)
            return _call("_pt_int_floordiv", num, den)
        return _guard_integer_division(
            den, prim.FloorDiv(num, _opaque_divisor(den)),
            prim.Product((-1, num)), signed=self._signed(expr),
            zero=self._zero(expr))

    def map_remainder(self, expr: prim.Remainder) -> Expression:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        dtype = self._dtype(expr)
        if _is_inexact(dtype):
            if _is_complex(dtype):
                quot = prim.Call(prim.Variable("floor"),
                                 (prim.Quotient(num, den),))
                return prim.Sum((num, prim.Product((-1, den, quot))))
            # numpy's: the sign of the divisor, from fmod (exact)
            return _call(f"_pt_remainder_{_float_name(dtype)}", num, den)
        simple = simplify_remainder(num, den, self.state.index_ranges)
        if simple is not None:
            return simple
        if get_reduction_inames(num) or get_reduction_inames(den):
            return _call("_pt_int_remainder", num, den)
        return _guard_integer_division(
            den, prim.Remainder(num, _opaque_divisor(den)), self._zero(expr),
            signed=self._signed(expr), zero=self._zero(expr))

    def map_quotient(self, expr: prim.Quotient) -> Expression:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind == "c":
            # (by constants too: numpy divides ``z / 2`` as ``z * (1/2)``
            # by its algorithm, not part by part)
            return _complex_quotient(num, den, dtype)
        return prim.Quotient(num, den)

    def map_power(self, expr: prim.Power) -> Expression:
        exponent = expr.exponent
        if (isinstance(exponent, (complex, np.complexfloating))
                and exponent.imag == 0 and exponent.real == int(exponent.real)
                and abs(exponent.real) < 2**31):
            # an integral exponent converted to the complex result dtype:
            # kept as an integer (multiplied out, exact)
            exponent = int(exponent.real)
        base = self._operand(expr.base)
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind == "c":
            return _complex_power(base, self._operand(exponent), dtype)
        if isinstance(dtype, np.dtype) and dtype.kind in "iu":
            return _integer_power(base, self._operand(exponent),
                                  self._dtype(expr.exponent))
        return prim.Power(base, self._operand(exponent))

    def map_right_shift(self, expr: prim.RightShift) -> Expression:
        return self._shift(expr, prim.RightShift, "shr")

    def map_left_shift(self, expr: prim.LeftShift) -> Expression:
        return self._shift(expr, prim.LeftShift, "shl")

    def _shift(self, expr: prim.LeftShift | prim.RightShift,
               cls: type[prim.LeftShift | prim.RightShift], op: str
               ) -> Expression:
        """A shift by a constant count within the width of the result's
        dtype as C's; any other through the target's function of numpy's
        result for every count (OpenCL takes the count modulo the width:
        ``1 << 33`` in ``int32`` gave 2, numpy gives 0)."""
        shiftee, shift = self._operand(expr.shiftee), self._operand(expr.shift)
        dtype = self._dtype(expr)
        count = expr.shift
        if not (isinstance(dtype, np.dtype) and dtype.kind in "iu") or (
                isinstance(count, (int, np.integer))
                and not isinstance(count, (bool, np.bool_))
                and 0 <= int(count) < 8 * dtype.itemsize):
            return cls(shiftee, shift)
        return _call(f"_pt_int_{op}", shiftee, shift)

    def map_if(self, expr: prim.If) -> Expression:
        cond = self._truth(expr.condition)
        known = _constant_truth(cond)
        if known is not None \
                and self._dtype(expr.then) == self._dtype(expr.else_):
            # (a condition on constant indices, e.g. of a concatenation
            # along an axis of length 1: the branch taken, without a
            # self-comparison that compilers warn of)
            return self._operand(expr.then if known else expr.else_)
        then, else_ = self._operand(expr.then), self._operand(expr.else_)
        if then == else_ \
                and self._dtype(expr.then) == self._dtype(expr.else_):
            # (``maximum(x, x)``: both branches the same)
            return then
        return prim.If(cond, then, else_)

    def _reduction_bound(self, iname: str, which: str,
                         bound: Expression) -> Expression:
        bound_ctx = ExpressionContext()
        lowered = ScalarToLoopyMapper(self.state, self.node, self.bindings,
                                      self.index_map, bound_ctx).rec(bound)
        return lower_reduction_bound(self.state, self.ctx, bound_ctx, iname,
                                     which, lowered, self._dtype(bound))

    def map_reduce(self, expr: Reduce) -> Expression:
        state = self.state
        index_map = dict(self.index_map)
        inames = []
        for name, (lo, hi) in expr.bounds.items():
            iname = state.names("_pt_" + _REDUCTION_OPS.get(
                type(expr.op), "redn") + "_r")
            # bounds not affine in size parameters (depending on output
            # indices or data) are computed into private temporaries
            lower, upper = (self._reduction_bound(iname, which, b)
                            for which, b in (("lbound", lo), ("ubound", hi)))
            index: Expression = prim.Variable(iname)
            if is_parametric_bound(state, lower) \
                    and is_parametric_bound(state, upper):
                state.add_domain([iname], [lower], [upper])
            else:
                # counted from 0, offset by the lower bound: the iname's
                # bounds stay affine when a schedule splits it (a split of
                # ``lb <= r`` has a piecewise lower bound, which loopy's
                # code generation fails to simplify)
                state.add_domain([iname], [0], [_difference(upper, lower)])
                if lower != 0:
                    index = prim.Sum((index, lower))
            descr = self.node.var_to_reduction_descr.get(name)
            if descr is not None:
                state.tag_iname(iname, frozenset(
                    t for t in descr.tags
                    if not isinstance(t, ReductionWithoutIdentity)))
                record_length_to_check(state, descr, lower, upper)
            index_map[name] = index
            inames.append(iname)
        inner = ScalarToLoopyMapper(state, self.node, self.bindings, index_map,
                                    self.ctx)._operand(expr.inner_expr)
        dtype = self._dtype(expr.inner_expr)
        if isinstance(expr.op, (MaxReductionOperation, MinReductionOperation)) \
                and isinstance(dtype, np.dtype) and dtype.kind in "biu" \
                and dtype.itemsize < 4 and not isinstance(
                    inner, (prim.Variable, prim.Subscript)) \
                and not (isinstance(inner, prim.Call)
                         and inner.function == prim.Variable("_pt_narrow_int")):
            # C computes on chars and shorts in int: OpenCL's min/max of
            # (char, int) is ambiguous; loopy drops a cast to the type it
            # infers, an explicit conversion stays (:meth:`_operand` made
            # one for integers, not for bools)
            inner = _call("_pt_narrow_int", inner)
        if isinstance(expr.op, (MaxReductionOperation, MinReductionOperation)) \
                and dtype == np.dtype(np.int32):
            inner = _opaque_negation(inner)
        op = _loopy_reduction_op(expr.op, dtype)
        result = LoopyReduction(op, tuple(inames),
                                inner, allow_simultaneous=False)
        state.reduction_dtypes[result] = (
            dtype if isinstance(dtype, np.dtype) else np.result_type(dtype))
        return result

# }}}


def _difference(upper: Expression, lower: Expression) -> Expression:
    """``upper - lower`` (loopy expressions)."""
    if lower == 0:
        return upper
    return prim.Sum((upper, prim.Product((-1, lower))))


def lower_foreign_call(name: str, args: tuple[Expression, ...]) -> prim.Call:
    """The loopy call of the foreign scalar function *name* (with
    :data:`~pytato.scalar_functions.FOREIGN_PREFIX`) on *args*."""
    fn = get_scalar_function(name)
    if fn.loopy_callable is None:
        raise CannotBeLoweredToLoopyError(
            f"scalar function '{fn.name}' has no loopy callable (it was "
            "registered with Python implementations only)")
    return prim.Call(prim.Variable(fn.loopy_identifier), args)
