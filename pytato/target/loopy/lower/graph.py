"""Lowering of (preprocessed) array graphs to a :mod:`loopy` translation unit.

The graph reaching :func:`build_translation_unit` has been through
:func:`pytato.codegen.preprocess`: it only holds
:class:`~pytato.array.IndexLambda`, :class:`~pytato.array.Placeholder` and
:class:`~pytato.array.SizeParam` nodes. Any other node type raises
:class:`~pytato.diagnostic.CannotBeLoweredToLoopyError`.

:class:`CodeGenMapper` visits each node once, children first, and returns an
:class:`ImplementedResult` per node, which knows how to produce the loopy
expression of an element of the array at given indices:

* inputs are kernel arguments (:class:`StoredResult`); size parameters are
  value arguments (:class:`SizeParamResult`);
* nodes chosen by :func:`get_stored_nodes` (outputs, :class:`ImplStored`
  nodes, shared subexpressions) are computed by one instruction into an
  output argument or a global temporary (:class:`StoredResult`);
* nodes tagged :class:`~pytato.target.loopy.ImplSubstitution` become
  substitution rules (:class:`SubstitutionResult`);
* all other nodes are inlined into their users (:class:`InlinedResult`):
  their scalar expression is lowered again at each use with the user's index
  expressions substituted.

Domains, instructions, arguments and temporaries are collected in a
:class:`CodeGenState` and the kernel is created once at the end.

.. autodata:: MAX_INLINE_DEPTH
.. autodata:: MAX_INDEX_GROWTH
.. autofunction:: get_stored_nodes
.. autoclass:: ImplementedResult
.. autoclass:: StoredResult
.. autoclass:: SizeParamResult
.. autoclass:: BoolValueArgResult
.. autoclass:: InlinedResult
.. autoclass:: SubstitutionResult
.. autoclass:: CodeGenState
.. autoclass:: CodeGenMapper
.. autofunction:: build_translation_unit
.. autofunction:: has_no_elements
.. autoclass:: UncachedLoopyWalkMapper
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import (
    Reduction as LoopyReduction,
    TypeCast as LoopyTypeCast,
    WalkMapper as _LoopyWalkMapper,
)
from pymbolic.mapper import Mapper as _PymbolicMapper
from pytools.tag import Tag

from pytato.array.base import Array
from pytato.array.inputs import Placeholder, SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import shape_component_to_expr
from pytato.codegen import NameGenerator, canonical_topological_order
from pytato.diagnostic import (
    CannotBeLoweredToLoopyError,
    NameClashError,
    ShapeMismatchError,
)
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
from pytato.tags import ForceValueArgTag, Named, PrefixNamed
from pytato.target.loopy.lower.index_arith import (
    is_integer_constant,
    simplify_floor_div,
    simplify_remainder,
)
from pytato.transform.mappers import CachedMapper


__all__ = [
    "MAX_INDEX_GROWTH", "MAX_INLINE_DEPTH", "BoolValueArgResult",
    "CodeGenMapper", "CodeGenState", "ImplementedResult", "InlinedResult",
    "SizeParamResult", "StoredResult", "SubstitutionResult",
    "UncachedLoopyWalkMapper", "build_translation_unit", "get_stored_nodes",
    "has_no_elements",
]

# {{{ what to store

# the materialization policy lives in pytato.transform.materialize
from pytato.transform.materialize import (
    MAX_INDEX_GROWTH,
    MAX_INLINE_DEPTH,
    get_stored_nodes,
)


# }}}


# {{{ implemented results

@dataclass
class ExpressionContext:
    """Per-instruction information gathered while lowering an expression:
    the ids of the instructions it depends on."""

    depends_on: set[str] = field(default_factory=set)


class ImplementedResult:
    """How the elements of a lowered array are obtained.

    .. automethod:: to_loopy_expression
    """

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        """The loopy expression of the element at *indices* (loopy
        expressions, one per axis); records dependencies in *ctx*."""
        raise NotImplementedError


@dataclass(frozen=True)
class StoredResult(ImplementedResult):
    """An array in memory: a kernel argument or a temporary written by
    instruction *insn_id* (None for inputs)."""

    name: str
    ndim: int
    insn_id: str | None = None

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        if self.insn_id is not None:
            ctx.depends_on.add(self.insn_id)
        var = prim.Variable(self.name)
        return var[tuple(indices)] if self.ndim else var


@dataclass(frozen=True)
class SizeParamResult(ImplementedResult):
    """A kernel value argument: a size parameter, or a 0-d placeholder
    tagged :class:`~pytato.tags.ForceValueArgTag`."""

    name: str

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        return prim.Variable(self.name)


@dataclass(frozen=True)
class BoolValueArgResult(ImplementedResult):
    """A 0-d boolean placeholder tagged
    :class:`~pytato.tags.ForceValueArgTag`: an ``int8`` kernel value
    argument (OpenCL has no boolean kernel arguments), read as whether it
    is nonzero."""

    name: str

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        return prim.Comparison(prim.Variable(self.name), "!=", 0)


@dataclass(frozen=True)
class SubstitutionResult(ImplementedResult):
    """A substitution rule *name* taking the indices as arguments."""

    name: str
    depends_on: frozenset[str]

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        ctx.depends_on.update(self.depends_on)
        return prim.Call(prim.Variable(self.name), tuple(indices))


@dataclass(frozen=True)
class InlinedResult(ImplementedResult):
    """An :class:`~pytato.array.IndexLambda` whose expression is lowered at
    each use."""

    expr: IndexLambda
    bindings: Mapping[str, ImplementedResult]
    state: CodeGenState

    def to_loopy_expression(self, indices: Sequence[Any],
                            ctx: ExpressionContext) -> Any:
        index_map = {f"_{i}": idx for i, idx in enumerate(indices)}
        return ScalarToLoopyMapper(self.state, self.expr, self.bindings,
                                   index_map, ctx)(self.expr.expr)

# }}}


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
    32 bits have a neutral element."""

    _cmp: str
    _is_max: bool

    def neutral_element(self, *dtypes: Any, callables_table: Any,
                        target: Any) -> Any:
        dtype, = dtypes
        nd = dtype.numpy_dtype
        if nd.kind in "iu" and nd.itemsize < 4:
            info = np.iinfo(nd)
            return int(info.min if self._is_max else info.max), callables_table
        return super().neutral_element(  # type: ignore[misc]
            *dtypes, callables_table=callables_table, target=target)

    def __call__(self, dtypes: Any, operand1: Any, operand2: Any,
                 callables_table: Any, target: Any) -> Any:
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


def _loopy_reduction_op(op: ReductionOperation, dtype: Any) -> Any:
    from loopy.library.reduction import parse_reduction_op
    is_bool = isinstance(dtype, np.dtype) and dtype.kind == "b"
    if isinstance(op, MaxReductionOperation):
        return parse_reduction_op("any") if is_bool \
            else NumpyMaxReductionOperation()
    if isinstance(op, MinReductionOperation):
        return parse_reduction_op("all") if is_bool \
            else NumpyMinReductionOperation()
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
        self._cache: dict[int, Any] = {}

    def __call__(self, expr: Any) -> Any:
        key = id(expr)
        try:
            return self._cache[key]
        except KeyError:
            result = self._cache[key] = self._infer(expr)
            return result

    def _infer(self, expr: Any) -> Any:
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
                                                   "base", "exponent")
                        if hasattr(expr, a)]
        return np.result_type(*(self(c) for c in children))


def _is_complex(dtype: Any) -> bool:
    return (isinstance(dtype, complex)
            or (isinstance(dtype, np.dtype) and dtype.kind == "c"))


def _call(name: str, *args: Any) -> prim.Call:
    return prim.Call(prim.Variable(name), args)


def _complex_function(name: str, z: Any, dtype: np.dtype[Any]) -> Any:
    """Complex functions OpenCL lacks, in terms of ``log`` and ``sqrt``
    (numpy's branch cuts)."""
    i = dtype.type(1j)
    one = dtype.type(1)
    if name == "log10":
        return prim.Product((_call("log", z),
                             np.empty(0, dtype).real.dtype.type(1 / np.log(10))))
    if name == "arcsin":
        return prim.Product((-i, _call("log", prim.Sum((
            prim.Product((i, z)),
            _call("sqrt", prim.Sum((one, prim.Product((-1, z, z))))))))))
    if name == "arccos":
        return prim.Product((-i, _call("log", prim.Sum((
            z, prim.Product((i, _call("sqrt", prim.Sum((
                one, prim.Product((-1, z, z))))))))))))
    assert name == "arctan"
    return prim.Product((dtype.type(0.5j), prim.Sum((
        _call("log", prim.Sum((one, prim.Product((-i, z))))),
        prim.Product((-1, _call("log", prim.Sum((one, prim.Product((i, z)))))))))))


def _complex_parts(x: Any) -> tuple[Any, Any]:
    if isinstance(x, (complex, np.complexfloating)):
        return x.real, x.imag
    return _call("real", x), _call("imag", x)


def _opaque_divisor(den: Any) -> Any:
    """Hide a constant integer divisor from loopy's affine simplification of
    array indices. Loopy re-simplifies an index after choosing C's ``/`` and
    ``%`` for the divisions it proved non-negative; the simplified
    quasi-affine form may have negative numerators, which C truncates,
    giving wrong results (seen with nested reshapes). An opaque call (an
    identity ``max(c, c)``) keeps the expression out of isl; loopy then uses
    its floor-division functions."""
    if isinstance(den, (int, np.integer)) and not isinstance(den, bool):
        return prim.Call(prim.Variable("max"), (den, den))
    return den


def _guard_integer_division(den: Any, result: Any, by_minus_one: Any) -> Any:
    """Integer ``//`` or ``%`` defined for every divisor: numpy's 0 for a
    zero divisor, and the quotient ``-num`` (remainder 0) for -1, which C
    leaves undefined for the smallest integer (x86 traps). A constant
    divisor other than 0 and -1 needs no guard."""
    if isinstance(den, (int, np.integer)) and not isinstance(den, bool):
        if int(den) == 0:
            # user operands are numpy scalars (dividing by them is defined);
            # a Python int 0 comes from the index arithmetic of empty
            # arrays (reshapes), never evaluated: loopy's bounds check
            # would refuse a constant index into the empty array
            return 0 if isinstance(den, np.integer) else result
        if int(den) == -1:
            return by_minus_one
        return result
    return prim.If(prim.Comparison(den, "==", 0), 0,
                   prim.If(prim.Comparison(den, "==", -1), by_minus_one,
                           result))


def _integer_power(base: Any, exponent: Any, exp_dtype: Any) -> Any:
    """Integer powers with negative exponents known only at run time
    (constant ones are refused at construction, as numpy does):
    ``1/base**-n`` truncated toward zero, i.e. 1 for a base of 1,
    +-1 for -1 and 0 otherwise (0 too for a base of 0, where C's
    ``1/0`` would be undefined)."""
    if isinstance(exponent, (int, np.integer)) or not (
            isinstance(exp_dtype, np.dtype) and exp_dtype.kind == "i"):
        return prim.Power(base, exponent)
    minus_one = prim.If(prim.Comparison(prim.Remainder(exponent, 2), "==", 0),
                        1, -1)
    negative = prim.If(prim.Comparison(base, "==", 1), 1,
                       prim.If(prim.Comparison(base, "==", -1), minus_one, 0))
    return prim.If(prim.Comparison(exponent, "<", 0), negative,
                   prim.Power(base, exponent))


def _complex_power(base: Any, exponent: Any, dtype: np.dtype[Any]) -> Any:
    """numpy's complex power: ``z**0`` is 1, ``0**w`` is 0 for
    ``real(w) > 0`` and NaN otherwise, small integral exponents multiply
    (as numpy does, for exponents in (-100, 100)), the rest ``exp(w
    log(z))``."""
    if isinstance(exponent, (int, float, complex, np.number)):
        w = complex(exponent)
        if w.imag == 0 and w.real == int(w.real) and abs(w.real) < 100:
            n = int(w.real)
            if n == 0:
                return dtype.type(1)
            result: Any = None
            square = base
            k = abs(n)
            while k:
                if k & 1:
                    result = square if result is None else prim.Product(
                        (result, square))
                k >>= 1
                if k:
                    square = prim.Product((square, square))
            return prim.Quotient(dtype.type(1), result) if n < 0 else result
    (br, bi), (er, ei) = _complex_parts(base), _complex_parts(exponent)
    zero = np.empty(0, dtype).real.dtype.type(0)
    general = prim.Power(base, exponent)
    at_zero = prim.If(prim.Comparison(er, ">", zero), dtype.type(0),
                      dtype.type(complex(np.nan, np.nan)))
    return prim.If(
        prim.LogicalAnd((prim.Comparison(er, "==", zero),
                         prim.Comparison(ei, "==", zero))), dtype.type(1),
        prim.If(prim.LogicalAnd((prim.Comparison(br, "==", zero),
                                 prim.Comparison(bi, "==", zero))),
                at_zero, general))


def _complex_quotient(num: Any, den: Any) -> Any:
    """Complex division by Smith's method, numpy's algorithm: its
    infinities and NaNs for zero and infinite operands (``(1+1j)/0`` is
    ``inf+infj``, ``0/0j`` is ``nan+nanj``)."""
    (ar, ai), (br, bi) = _complex_parts(num), _complex_parts(den)
    abs_br, abs_bi = _call("fabs", br), _call("fabs", bi)

    def cplx(re: Any, im: Any) -> Any:
        return _call("_pt_complex", re, im)

    rat = prim.Quotient(bi, br)
    scl = prim.Quotient(1, prim.Sum((br, prim.Product((bi, rat)))))
    real_larger = cplx(
        prim.Product((prim.Sum((ar, prim.Product((ai, rat)))), scl)),
        prim.Product((prim.Sum((ai, prim.Product((-1, ar, rat)))), scl)))
    by_zero = cplx(prim.Quotient(ar, abs_br), prim.Quotient(ai, abs_br))
    rat2 = prim.Quotient(br, bi)
    scl2 = prim.Quotient(1, prim.Sum((bi, prim.Product((br, rat2)))))
    imag_larger = cplx(
        prim.Product((prim.Sum((prim.Product((ar, rat2)), ai)), scl2)),
        prim.Product((prim.Sum((prim.Product((ai, rat2)), prim.Product((-1, ar)))),
                      scl2)))
    return prim.If(
        prim.Comparison(abs_br, ">=", abs_bi),
        prim.If(prim.LogicalAnd((prim.Comparison(br, "==", 0),
                                 prim.Comparison(bi, "==", 0))),
                by_zero, real_larger),
        imag_larger)


def _is_inexact(dtype: Any) -> bool:
    return (isinstance(dtype, float)
            or (isinstance(dtype, np.dtype) and dtype.kind in "fc"))


class ScalarToLoopyMapper(IdentityMapper):
    """Lowers the scalar expression of an :class:`~pytato.array.IndexLambda`
    to a loopy expression: output indices are replaced by *index_map*,
    bindings by their :class:`ImplementedResult`, reductions become loopy
    reductions over fresh inames, ``pytato.c99.*`` calls become calls to
    the target's math functions."""

    def __init__(self, state: CodeGenState, node: IndexLambda,
                 bindings: Mapping[str, ImplementedResult],
                 index_map: Mapping[str, Any], ctx: ExpressionContext) -> None:
        self.state = state
        self.node = node
        self.bindings = bindings
        self.index_map = index_map
        self.ctx = ctx
        self._dtypes: _ScalarDTypeMapper | None = None

    def _dtype(self, expr: Any) -> Any:
        if self._dtypes is None:
            self._dtypes = _ScalarDTypeMapper(self.node.bindings)
        return self._dtypes(expr)

    def _operand(self, expr: Any) -> Any:
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
            if not isinstance(self.bindings.get(
                    getattr(var, "name", None)), InlinedResult):
                return result
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind in "iu" \
                and dtype.itemsize < 4:
            return _call("_pt_narrow_int", LoopyTypeCast(dtype, result))
        return result

    def _unknown(self, what: str) -> CannotBeLoweredToLoopyError:
        return CannotBeLoweredToLoopyError(
            f"IndexLambda: {what} in scalar expression {self.node.expr}")

    def map_variable(self, expr: prim.Variable) -> Any:
        name = expr.name
        if name in self.index_map:
            return self.index_map[name]
        if name in self.bindings:
            return self.bindings[name].to_loopy_expression((), self.ctx)
        if name in self.state.size_param_names:
            return expr
        raise self._unknown(f"unknown variable '{name}'")

    def map_subscript(self, expr: prim.Subscript) -> Any:
        agg = expr.aggregate
        if not isinstance(agg, prim.Variable) or agg.name not in self.bindings:
            raise self._unknown(f"subscript of unknown array '{agg}'")
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        return self.bindings[agg.name].to_loopy_expression(
            tuple(self.rec(i) for i in index), self.ctx)

    def map_call(self, expr: prim.Call) -> Any:
        fn = expr.function
        if isinstance(fn, prim.Variable) and fn.name.startswith("pytato.foreign."):
            from pytato.target.loopy.lower.calls import lower_foreign_call
            return lower_foreign_call(
                fn.name, tuple(self._operand(p) for p in expr.parameters))
        if not (isinstance(fn, prim.Variable)
                and fn.name.startswith("pytato.c99.")):
            raise self._unknown(f"call to unknown function '{fn}'")
        name = fn.name[len("pytato.c99."):]
        args = tuple(self._operand(p) for p in expr.parameters)
        if name in ("log10", "arcsin", "arccos", "arctan") and len(args) == 1:
            dtype = self._dtype(expr.parameters[0])
            if _is_complex(dtype):
                return _complex_function(name, args[0], np.dtype(dtype))
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
                from loopy.symbolic import get_reduction_inames
                x, = args
                if get_reduction_inames(x):
                    return LoopyTypeCast(dtype, prim.Call(
                        prim.Variable("abs"), args))
                neg: Any = prim.Product((-1, x))
                if dtype.itemsize >= 4:
                    unsigned = np.dtype(f"u{dtype.itemsize}")
                    # ~x + 1: a literal -1 prints as -1.0 in a float context
                    neg = LoopyTypeCast(dtype, prim.Sum((
                        prim.BitwiseNot(LoopyTypeCast(unsigned, x)),
                        unsigned.type(1))))
                return prim.If(prim.Comparison(x, "<", 0), neg, x)
        return prim.Call(prim.Variable(_C_FUNCTION_NAMES.get(name, name)), args)

    def _truth(self, expr: Any) -> Any:
        """*expr* lowered as an operand of a logical operation: complex
        values (which OpenCL cannot negate or combine logically) become
        whether they are nonzero."""
        if _is_complex(self._dtype(expr)):
            re, im = _complex_parts(self._operand(expr))
            return prim.LogicalOr((prim.Comparison(re, "!=", 0),
                                   prim.Comparison(im, "!=", 0)))
        return self.rec(expr)

    def map_logical_not(self, expr: prim.LogicalNot) -> Any:
        return prim.LogicalNot(self._truth(expr.child))

    def map_logical_and(self, expr: prim.LogicalAnd) -> Any:
        return prim.LogicalAnd(tuple(self._truth(c) for c in expr.children))

    def map_logical_or(self, expr: prim.LogicalOr) -> Any:
        return prim.LogicalOr(tuple(self._truth(c) for c in expr.children))

    def map_comparison(self, expr: prim.Comparison) -> Any:
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
        return prim.Comparison(left, expr.operator, right)

    def map_type_cast(self, expr: TypeCast) -> Any:
        inner = self._operand(expr.inner_expr)
        dtype = np.dtype(expr.dtype)
        if dtype.kind == "b":
            if _is_complex(self._dtype(expr.inner_expr)):
                re, im = _complex_parts(inner)
                return prim.LogicalOr((prim.Comparison(re, "!=", 0),
                                       prim.Comparison(im, "!=", 0)))
            return prim.Comparison(inner, "!=", 0)
        if dtype.kind != "c" and _is_complex(self._dtype(expr.inner_expr)):
            # numpy's astype of complex to real types drops the imaginary
            # part (C has no conversion of OpenCL's complex structs)
            inner = _complex_parts(inner)[0]
        return LoopyTypeCast(dtype, inner)

    def map_constant(self, expr: Any) -> Any:
        if isinstance(expr, (bool, np.bool_)):
            return int(expr)
        return expr

    def map_floor_div(self, expr: prim.FloorDiv) -> Any:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        if _is_inexact(self._dtype(expr)):
            return prim.Call(prim.Variable("floor"), (prim.Quotient(num, den),))
        simple = simplify_floor_div(num, den, self.state.index_ranges)
        if simple is not None:
            return simple
        return _guard_integer_division(
            den, prim.FloorDiv(num, _opaque_divisor(den)),
            prim.Product((-1, num)))

    def map_remainder(self, expr: prim.Remainder) -> Any:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        if _is_inexact(self._dtype(expr)):
            # numpy: the result has the sign of the divisor
            quot = prim.Call(prim.Variable("floor"), (prim.Quotient(num, den),))
            rem = prim.Sum((num, prim.Product((-1, den, quot))))
            dtype = np.dtype(self._dtype(expr))
            if dtype.kind == "c":
                return rem
            # a zero remainder has the sign of the divisor, as in numpy: it
            # is +0.0 here, negated for a negative divisor (not a -0.0
            # literal: loopy prints 0.0 and -0.0 of one kernel alike)
            return prim.If(prim.LogicalAnd((prim.Comparison(rem, "==", 0),
                                            prim.Comparison(den, "<", 0))),
                           prim.Product((-1, rem)), rem)
        simple = simplify_remainder(num, den, self.state.index_ranges)
        if simple is not None:
            return simple
        return _guard_integer_division(
            den, prim.Remainder(num, _opaque_divisor(den)), 0)

    def map_quotient(self, expr: prim.Quotient) -> Any:
        num, den = self._operand(expr.numerator), self._operand(expr.denominator)
        dtype = self._dtype(expr)
        if isinstance(dtype, np.dtype) and dtype.kind == "c" and not (
                isinstance(den, (int, float, complex, np.number)) and den != 0):
            return _complex_quotient(num, den)
        return prim.Quotient(num, den)

    def map_power(self, expr: prim.Power) -> Any:
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

    def map_right_shift(self, expr: prim.RightShift) -> Any:
        return prim.RightShift(self._operand(expr.shiftee),
                               self._operand(expr.shift))

    def map_if(self, expr: prim.If) -> Any:
        return prim.If(self._truth(expr.condition), self._operand(expr.then),
                       self._operand(expr.else_))

    def map_reduce(self, expr: Reduce) -> Any:
        state = self.state
        index_map = dict(self.index_map)
        inames = []
        for name, (lo, hi) in expr.bounds.items():
            iname = state.names("_pt_" + _REDUCTION_OPS.get(
                type(expr.op), "redn") + "_r")
            state.add_domain([iname], [self.rec(lo)], [self.rec(hi)])
            descr = self.node.var_to_reduction_descr.get(name)
            if descr is not None:
                state.tag_iname(iname, descr.tags)
            index_map[name] = prim.Variable(iname)
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
        op = _loopy_reduction_op(expr.op, dtype)
        return LoopyReduction(op, tuple(inames),
                              inner, allow_simultaneous=False)

# }}}


# {{{ walking loopy expressions

class UncachedLoopyWalkMapper(_LoopyWalkMapper):
    """A :class:`loopy.symbolic.WalkMapper` without a cache: it visits every
    subexpression each time it occurs. (Loopy's walk mappers, its
    ``UncachedWalkMapper`` too, skip subexpressions equal to ones seen
    before, keyed by the expression: on the generated kernels, building and
    hashing those keys cost more than the visits they save.) For walks
    whose results do not depend on how often a subexpression is
    visited."""

    __call__ = _PymbolicMapper.__call__
    rec = _PymbolicMapper.__call__

# }}}


# {{{ code generation state

def _isl_affine(expr: Any, params: set[str]) -> str:
    """*expr* (affine in size parameters) in isl syntax; collects the
    parameter names in *params*."""
    if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
        return str(int(expr))
    if isinstance(expr, prim.Variable):
        params.add(expr.name)
        return expr.name
    if isinstance(expr, prim.Sum):
        return "(" + " + ".join(_isl_affine(c, params)
                                for c in expr.children) + ")"
    if isinstance(expr, prim.Product):
        return "(" + "*".join(_isl_affine(c, params)
                              for c in expr.children) + ")"
    den = getattr(expr, "denominator", None)
    if isinstance(den, prim.Call) and den.function == prim.Variable("max"):
        den = den.parameters[0]   # see _opaque_divisor
    if isinstance(expr, prim.FloorDiv) and isinstance(den, (int, np.integer)):
        return f"floor(({_isl_affine(expr.numerator, params)})/{int(den)})"
    if isinstance(expr, prim.Remainder) and isinstance(den, (int, np.integer)):
        return f"(({_isl_affine(expr.numerator, params)}) mod {int(den)})"
    raise CannotBeLoweredToLoopyError(
        f"loop bound {expr} is not an affine expression of size parameters")


def _filter_tags(tags: frozenset[Tag], exclude: frozenset[type[Tag]]
                 ) -> frozenset[Tag]:
    if not exclude:
        return tags
    return frozenset(t for t in tags if not isinstance(t, tuple(exclude)))


@dataclass
class CodeGenState:
    """Everything collected for the kernel while lowering.

    .. attribute:: names

        The :class:`~pytato.codegen.NameGenerator` for all kernel-level
        names (arguments, temporaries, inames, instruction ids, rules).

    .. attribute:: translation_unit_transforms

        Functions applied, in order, to the translation unit once the kernel
        is created (for lowerings that need more than one kernel).
    """

    names: NameGenerator
    size_param_names: frozenset[str]
    array_tag_t_to_not_propagate: frozenset[type[Tag]]
    axis_tag_t_to_not_propagate: frozenset[type[Tag]]
    domains: list[str] = field(default_factory=list)
    instructions: list[Any] = field(default_factory=list)
    kernel_data: dict[str, Any] = field(default_factory=dict)
    substitutions: dict[str, Any] = field(default_factory=dict)
    iname_tags: dict[str, frozenset[Tag]] = field(default_factory=dict)
    translation_unit_transforms: list[
        Callable[[lp.TranslationUnit], lp.TranslationUnit]] = field(
            default_factory=list)
    stores: list[Any] = field(default_factory=list)
    #: inclusive bounds of the inames with constant bounds (for
    #: :mod:`pytato.target.loopy.lower.index_arith`)
    index_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add_domain(self, inames: Sequence[str], lower: Sequence[Any],
                   upper: Sequence[Any]) -> None:
        """Add the domain ``lower[k] <= inames[k] < upper[k]``."""
        for i, lo, hi in zip(inames, lower, upper, strict=True):
            if is_integer_constant(lo) and is_integer_constant(hi) and lo < hi:
                self.index_ranges[i] = (int(lo), int(hi) - 1)
        params: set[str] = set()
        conds = [f"{_isl_affine(lo, params)} <= {i} < {_isl_affine(hi, params)}"
                 for i, lo, hi in zip(inames, lower, upper, strict=True)]
        ps = ", ".join(sorted(params))
        self.domains.append(f"[{ps}] -> {{ [{', '.join(inames)}] : "
                            f"{' and '.join(conds)} }}")

    def tag_iname(self, iname: str, tags: frozenset[Tag]) -> None:
        tags = _filter_tags(tags, self.axis_tag_t_to_not_propagate)
        if tags:
            self.iname_tags[iname] = self.iname_tags.get(iname, frozenset()) | tags

    def array_tags(self, tags: frozenset[Tag]) -> frozenset[Tag]:
        return _filter_tags(tags, self.array_tag_t_to_not_propagate)

    def loopy_shape(self, ary: Array) -> tuple[Any, ...]:
        return tuple(shape_component_to_expr(c) for c in ary.shape)

    def store(self, name: str, ary: Array, result: ImplementedResult) -> str:
        """Add the instruction writing all elements of *ary* (given by
        *result*) to the array *name*; return its id."""
        from pytato.target.loopy.lower.fusion import _Store

        inames = [self.names(f"{name}_dim{i}") for i in range(ary.ndim)]
        domain_index = len(self.domains) if inames else None
        if inames:
            self.add_domain(inames, [0] * ary.ndim,
                            [shape_component_to_expr(c) for c in ary.shape])
        for iname, axis in zip(inames, ary.axes, strict=True):
            self.tag_iname(iname, axis.tags)
        ctx = ExpressionContext()
        idx = tuple(prim.Variable(i) for i in inames)
        rhs = result.to_loopy_expression(idx, ctx)
        insn_id = self.names(f"_pt_insn_{name}", try_bare=True)
        lhs = prim.Variable(name)[idx] if idx else prim.Variable(name)
        self.instructions.append(lp.Assignment(
            lhs, rhs, id=insn_id, within_inames=frozenset(inames),
            depends_on=frozenset(sorted(ctx.depends_on))))
        self.stores.append(_Store(insn_id, name, tuple(inames),
                                  self.loopy_shape(ary), domain_index))
        return insn_id

    def add_output_arg(self, name: str, ary: Array) -> None:
        self.kernel_data[name] = lp.ArrayArg(
            name, ary.dtype, shape=self.loopy_shape(ary),
            address_space=lp.AddressSpace.GLOBAL, is_input=False,
            is_output=True, tags=self.array_tags(ary.tags))

# }}}


# {{{ mapper

class CodeGenMapper(CachedMapper):
    """Maps each node of a preprocessed graph to its
    :class:`ImplementedResult`, adding arguments, temporaries,
    instructions and substitution rules to a :class:`CodeGenState`."""

    def __init__(self, state: CodeGenState, stored: set[Array],
                 output_names_of: Mapping[Array, Sequence[str]]) -> None:
        super().__init__()
        self.state = state
        self.stored = stored
        self.output_names_of = output_names_of

    def map_array(self, expr: Array) -> ImplementedResult:
        raise CannotBeLoweredToLoopyError(
            f"nodes of type {type(expr).__name__} cannot be lowered to loopy"
            + (" (inline calls first: pytato.inline_calls)"
               if type(expr).__name__ == "NamedArray" else ""))

    def map_named_array(self, expr: Any) -> ImplementedResult:
        return self.map_array(expr)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> None:
        for v in expr.values():
            self.rec(v)

    def map_placeholder(self, expr: Placeholder) -> ImplementedResult:
        s = self.state
        if expr.tags_of_type(ForceValueArgTag):
            if expr.ndim != 0:
                raise ShapeMismatchError(
                    f"placeholder '{expr.name}' is tagged ForceValueArgTag but "
                    f"has shape {expr.shape}: only 0-d inputs can be passed "
                    "by value")
            # the tag also marks the argument for the call-time checks
            # (pytato.target.loopy.run.arguments): not a size parameter.
            # OpenCL has no bool kernel arguments: a bool is passed as int8
            is_bool = expr.dtype.kind == "b"
            s.kernel_data[expr.name] = lp.ValueArg(
                expr.name, np.dtype(np.int8) if is_bool else expr.dtype,
                tags=s.array_tags(expr.tags) | {ForceValueArgTag()})
            return (BoolValueArgResult(expr.name) if is_bool
                    else SizeParamResult(expr.name))
        s.kernel_data[expr.name] = lp.ArrayArg(
            expr.name, expr.dtype, shape=s.loopy_shape(expr),
            address_space=lp.AddressSpace.GLOBAL, is_input=True,
            is_output=False, tags=s.array_tags(expr.tags))
        return StoredResult(expr.name, expr.ndim)

    def map_size_param(self, expr: SizeParam) -> ImplementedResult:
        s = self.state
        s.kernel_data[expr.name] = lp.ValueArg(
            expr.name, expr.dtype, tags=s.array_tags(expr.tags))
        return SizeParamResult(expr.name)

    def map_index_lambda(self, expr: IndexLambda) -> ImplementedResult:
        from pytato.target.loopy import ImplSubstitution

        s = self.state
        for c in expr.shape:
            if isinstance(c, Array):
                self.rec(c)
        bindings = {name: self.rec(b) for name, b in expr.bindings.items()}
        inlined = InlinedResult(expr, bindings, s)
        if expr in self.stored:
            out_names = self.output_names_of.get(expr)
            if out_names:
                name = out_names[0]
                s.add_output_arg(name, expr)
            else:
                name = _temporary_name(s.names, expr)
                s.kernel_data[name] = lp.TemporaryVariable(
                    name, expr.dtype, shape=s.loopy_shape(expr),
                    address_space=lp.AddressSpace.GLOBAL,
                    tags=s.array_tags(expr.tags))
            insn_id = s.store(name, expr, inlined)
            return StoredResult(name, expr.ndim, insn_id)
        if expr.tags_of_type(ImplSubstitution):
            return _make_substitution(s, expr, inlined)
        return inlined


def _temporary_name(names: NameGenerator, expr: Array) -> str:
    named = expr.tags_of_type(Named)
    if named:
        name: str = next(iter(named)).name
        return name
    prefixed = expr.tags_of_type(PrefixNamed)
    if prefixed:
        return names(next(iter(prefixed)).prefix, try_bare=False)
    return names("_pt_temp", try_bare=False)


def _make_substitution(state: CodeGenState, expr: IndexLambda,
                       inlined: InlinedResult) -> SubstitutionResult:
    name = _temporary_name(state.names, expr)
    args = tuple(state.names(f"{name}_arg{i}") for i in range(expr.ndim))
    ctx = ExpressionContext()
    rhs = inlined.to_loopy_expression(tuple(prim.Variable(a) for a in args), ctx)
    state.substitutions[name] = lp.SubstitutionRule(name, args, rhs)
    return SubstitutionResult(name, frozenset(ctx.depends_on))

# }}}


def _reserve_names(outputs: DictOfNamedArrays, order: Sequence[Any],
                   names: NameGenerator) -> None:
    """Reserve input and output names, then names from
    :class:`~pytato.tags.Named` tags (clashes are errors)."""
    for node in order:
        if isinstance(node, (Placeholder, SizeParam)):
            names.add_name(node.name)
    for name in outputs:
        names.add_name(name)
    seen: dict[str, Array] = {}
    output_arrays = set(outputs.values())
    for node in order:
        # Named tags of inputs and outputs are ignored: those have names
        if not isinstance(node, IndexLambda) or node in output_arrays:
            continue
        for tag in node.tags_of_type(Named):
            other = seen.get(tag.name)
            if other is not None and other != node:
                raise NameClashError(
                    f"two different arrays are tagged Named('{tag.name}')")
            if other is None and names.is_taken(tag.name):
                raise NameClashError(
                    f"Named('{tag.name}') clashes with an input or output "
                    "of the same name")
            seen[tag.name] = node
            names.add_name(tag.name)


def build_translation_unit(
        outputs: DictOfNamedArrays, *,
        target: lp.TargetBase, options: lp.Options, function_name: str,
        array_tag_t_to_not_propagate: frozenset[type[Tag]],
        axis_tag_t_to_not_propagate: frozenset[type[Tag]],
        stored_nodes: Callable[[DictOfNamedArrays], set[Array]] | None = None,
        mapper_class: type[CodeGenMapper] | None = None,
        fuse_loops: bool = True,
        ) -> lp.TranslationUnit:
    """Lower the preprocessed *outputs* (see :func:`pytato.codegen.preprocess`)
    to a loopy translation unit with one kernel named *function_name*.

    :arg stored_nodes: the materialization policy: a function returning the
        nodes to store (default: :func:`get_stored_nodes`). Outputs are
        always stored.
    :arg mapper_class: a subclass of :class:`CodeGenMapper` lowering more
        node types (e.g. calls); it may add functions to
        :attr:`CodeGenState.translation_unit_transforms` to be applied to
        the created translation unit (e.g. to register callee kernels).
    :arg fuse_loops: whether to fuse loop nests and keep values in private
        memory where possible
        (:func:`~pytato.target.loopy.lower.fusion.fuse_loop_nests`).

    Arrays with no elements (an extent of 0 known here) are not computed:
    such an output is an output argument that no instruction writes (the
    program only allocates it), and such an intermediate is not stored (its
    elements are never read), so that no kernel is launched for them.
    """
    from pytato.target.loopy.run.program_store import trim_loopy_memos
    trim_loopy_memos()
    empty_outputs = {name: ary for name, ary in outputs.items()
                     if has_no_elements(ary)}
    computed = outputs
    if empty_outputs:
        computed = DictOfNamedArrays(
            {k: v for k, v in outputs.items() if k not in empty_outputs},
            tags=outputs.tags)
    # (the inputs of the graph, and the sizes in the shapes of empty
    # outputs, are still kernel arguments)
    order = canonical_topological_order([
        computed, *(c for ary in empty_outputs.values() for c in ary.shape
                    if isinstance(c, Array)),
        *(outputs._pt_inputs.values()  # type: ignore[attr-defined]
          if empty_outputs else ())])
    names = NameGenerator()
    _reserve_names(outputs, order, names)
    size_params = frozenset(n.name for n in order if isinstance(n, SizeParam))
    state = CodeGenState(names, size_params,
                         frozenset(array_tag_t_to_not_propagate),
                         frozenset(axis_tag_t_to_not_propagate))

    output_names_of: dict[Array, list[str]] = {}
    for name, ary in computed.items():
        output_names_of.setdefault(ary, []).append(name)
    stored = {node for node in (stored_nodes or get_stored_nodes)(computed)
              if not has_no_elements(node)}
    stored.update(computed.values())
    for ary in computed.values():
        if not isinstance(ary, IndexLambda):
            stored.discard(ary)
    mapper = (mapper_class or CodeGenMapper)(state, stored, output_names_of)
    for node in order:
        mapper.rec(node)

    for name, ary in empty_outputs.items():
        state.add_output_arg(name, ary)

    # outputs not computed in place: inputs, and second names of an array
    for name, ary in computed.items():
        result = mapper.rec(ary)
        if isinstance(result, StoredResult) and result.name == name:
            continue
        state.add_output_arg(name, ary)
        state.store(name, ary, result)

    if fuse_loops:
        from pytato.target.loopy.lower.fusion import fuse_loop_nests
        fuse_loop_nests(state, state.stores)

    kernel_data = [state.kernel_data[n] for n in sorted(
        state.kernel_data, key=lambda n: (_data_rank(state.kernel_data[n]), n))]
    assumptions = " and ".join(f"{n} >= 0" for n in sorted(size_params))
    # a parameter-only domain makes every size parameter known to loopy,
    # also those used only in expressions (not in loop bounds)
    param_domain = ([f"[{', '.join(sorted(size_params))}] -> {{ : }}"]
                    if size_params else [])
    from pytato.target.loopy.lower.creation import make_translation_unit
    t_unit = make_translation_unit(
        [*param_domain, *state.domains] or ["{ : }"],
        [*state.instructions, *state.substitutions.values()],
        kernel_data,
        name=function_name, target=target, options=options,
        assumptions=assumptions)
    if state.iname_tags:
        knl = t_unit.default_entrypoint
        knl = knl.copy(inames={
            name: (iname.tagged(state.iname_tags[name])
                   if name in state.iname_tags else iname)
            for name, iname in knl.inames.items()})
        t_unit = t_unit.with_kernel(knl)
    for transform in state.translation_unit_transforms:
        t_unit = transform(t_unit)
    return t_unit


def has_no_elements(ary: Any) -> bool:
    """Whether the array *ary* has an extent known to be 0."""
    return any(isinstance(c, (int, np.integer)) and c == 0
               for c in getattr(ary, "shape", ()))


def _data_rank(arg: Any) -> int:
    if isinstance(arg, lp.ValueArg):
        return 0
    if isinstance(arg, lp.TemporaryVariable):
        return 3
    return 2 if arg.is_output else 1
