"""The parts of scalar expressions with numpy's semantics that C's or
OpenCL's lack, as :mod:`loopy` expressions, for
:class:`~pytato.target.loopy.lower.expressions.ScalarToLoopyMapper`:
integer division and remainder defined for every divisor
(``_guard_integer_division``, with divisors hidden from loopy's affine
simplification, ``_opaque_divisor``), integer powers with negative
exponents (``_integer_power``), numpy's complex powers and quotients
(``_complex_power``, ``_complex_quotient``), ``int32`` negations kept out
of line (``_opaque_negation``), and the constant comparisons and integers
that the mapper folds (``_constant_truth``, ``_constant_int``).
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import Expression

from pytato.target.loopy.lower.index_arith import is_integer_constant


if TYPE_CHECKING:
    from pytato.target.loopy.lower.expressions import ScalarDType


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge, "==": operator.eq, "!=": operator.ne}


def _constant_truth(cond: object) -> bool | None:
    """The value of *cond* if it is a comparison of two integer constants
    (None otherwise)."""
    if not isinstance(cond, prim.Comparison):
        return None
    left, right = _constant_int(cond.left), _constant_int(cond.right)
    if left is None or right is None:
        return None
    return bool(_COMPARE[cond.operator](left, right))


def _constant_int(expr: object) -> int | None:
    """The value of *expr* if it is an integer constant or a sum or
    product of such (None otherwise)."""
    if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
        return int(expr)
    if isinstance(expr, (prim.Sum, prim.Product)):
        values = [_constant_int(c) for c in expr.children]
        ints = [v for v in values if v is not None]
        if len(ints) != len(values):
            return None
        return sum(ints) if isinstance(expr, prim.Sum) else math.prod(ints)
    return None


def _is_complex(dtype: ScalarDType) -> bool:
    return (isinstance(dtype, complex)
            or (isinstance(dtype, np.dtype) and dtype.kind == "c"))


def _call(name: str, *args: Expression) -> prim.Call:
    return prim.Call(prim.Variable(name), args)


def _opaque_negation(expr: Expression) -> Expression:
    """*expr*, the operand of an ``int32`` maximum or minimum, with a
    negative constant factor (``-1 * b``, ``-2 * b``) taken out as a call of
    ``_pt_neg_int32`` (not inlined): NVIDIA's OpenCL compiler computed
    ``max(acc, -b[i])`` over the loop of a reduction wrongly (see
    :class:`pytato.target.loopy.build.cl_target._NegatedInt`). The value is
    the same, wrapped as numpy wraps it. So are the negated terms of a sum
    whose other terms are constants (``0 - b``, which the compiler folds to
    ``-b``; ``a - b`` of a variable ``a`` was computed right)."""
    if isinstance(expr, prim.Sum):
        if all(isinstance(t, prim.Product) or is_integer_constant(t)
               for t in expr.children):
            return prim.Sum(tuple(_opaque_negation(t)
                                  for t in expr.children))
        return expr
    if not isinstance(expr, prim.Product):
        return expr
    factors = list(expr.children)
    for k, factor in enumerate(factors):
        if is_integer_constant(factor) and factor < 0:
            if factor == -1:
                del factors[k]
            else:
                factors[k] = -int(factor)
            rest = factors[0] if len(factors) == 1 else prim.Product(
                tuple(factors))
            return _call("_pt_neg_int32", rest)
    return expr


#: ``pytato.c99`` functions of one complex argument that the target
#: computes with numpy's special values, as ``_pt_c<name>``
#: (:mod:`pytato.target.loopy.build.cl_complex`).
_COMPLEX_FUNCTIONS = frozenset({
    "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "sign", "reciprocal"})


def _complex_parts(x: Expression) -> tuple[Expression, Expression]:
    if isinstance(x, (complex, np.complexfloating)):
        return x.real, x.imag
    return _call("real", x), _call("imag", x)


def _opaque_divisor(den: Expression) -> Expression:
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


def _guard_integer_division(den: Expression, result: Expression,
                            by_minus_one: Expression, signed: bool = True,
                            zero: Expression = 0) -> Expression:
    """Integer ``//`` or ``%`` defined for every divisor: numpy's 0 for a
    zero divisor, and the quotient ``-num`` (remainder 0) for -1, which C
    leaves undefined for the smallest integer (x86 traps). A constant
    divisor other than 0 and -1 needs no guard. An unsigned divisor is
    never -1 (C would convert -1 to the largest value: ``1 // 2**32-1`` in
    ``uint32`` gave ``2**32-1``)."""
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
    # (a *zero* of the result's dtype: with a Python 0, loopy typed the
    # result of uint64 operands float64, losing precision)
    if not signed:
        return prim.If(prim.Comparison(den, "==", 0), zero, result)
    return prim.If(prim.Comparison(den, "==", 0), zero,
                   prim.If(prim.Comparison(den, "==", -1), by_minus_one,
                           result))


def _integer_power(base: Expression, exponent: Expression,
                   exp_dtype: ScalarDType) -> Expression:
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


def _complex_power(base: Expression, exponent: Expression,
                   dtype: np.dtype[Any]) -> Expression:
    """numpy's complex power (``npy_cpow``), in the target's ``_pt_cpow``:
    ``z**0`` is 1, ``0**w`` is 0 for ``real(w) > 0`` and NaN otherwise,
    integral exponents in (-100, 100) multiply, the rest is ``exp(w
    log(z))``. (A constant exponent 0 gives 1 here; other constant
    exponents go through the zero test too, as in numpy.)"""
    if isinstance(exponent, (int, float, complex, np.number)) \
            and complex(exponent) == 0:
        return dtype.type(1)
    # Python scalars (weakly typed, as numpy treats them) in the result's
    # dtype: loopy would type them as 64-bit values
    base, exponent = (dtype.type(x) if isinstance(x, (int, float, complex))
                      else x for x in (base, exponent))
    return _call("_pt_cpow", base, exponent)


def _complex_quotient(num: Expression, den: Expression,
                      dtype: np.dtype[Any]) -> Expression:
    """Complex division by numpy's algorithm (Smith's method, with numpy's
    infinities and NaNs for a zero divisor: ``(1+1j)/0`` is ``inf+infj``,
    ``0/0j`` is ``nan+nanj``), in the target's ``_pt_cdiv``, compiled
    without contraction to fused multiply-adds as numpy's C is: ``z/z`` is
    exactly 1 where numpy's is (a fused ``im(z) - re(z)*(im(z)/re(z))``
    left a residue of the rounding of the product, so ``z/z`` was never
    exactly 1). A call, not a conditional expression of the lowered
    operands: loopy would realize a reduction in the divisor once for each
    of its occurrences."""
    num, den = (dtype.type(x) if isinstance(x, (int, float, complex))
                else x for x in (num, den))
    return _call("_pt_cdiv", num, den)


def _is_inexact(dtype: ScalarDType) -> bool:
    return (isinstance(dtype, float)
            or (isinstance(dtype, np.dtype) and dtype.kind in "fc"))


def _float_name(dtype: ScalarDType) -> str:
    """The name of a real floating-point scalar dtype (``float64`` for a
    Python float)."""
    return dtype.name if isinstance(dtype, np.dtype) else "float64"


#: unsigned types whose sums and products with a Python integer loopy
#: types wrongly: as ``float64`` (``uint64`` with a signed constant) or
