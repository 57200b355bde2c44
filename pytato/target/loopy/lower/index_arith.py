"""Simplification of integer floor divisions and remainders in array
indices, from the ranges of the loop indices they depend on.

Reshapes compose into index expressions such as ``((15 - i)*16 + j) // 16``
and ``% 16`` (a reversal flattened and unflattened again): with ``0 <= j <
16`` these are ``15 - i`` and ``j``. Simplifying them when an expression is
lowered keeps the division out of the generated code (loopy emits a
floor-division function for divisors it cannot see, see
:func:`pytato.target.loopy.lower.expressions._opaque_divisor`) and makes the
expressions that loopy's passes walk smaller.

The rule: split the numerator into the terms whose constant factor is a
multiple of the divisor ``k`` and the rest; if the rest provably lies in
one block ``[m*k, m*k + k - 1]`` (interval arithmetic over the known index
ranges), then ``num // k = multiples / k + m`` and ``num % k = rest -
m*k``.

.. autofunction:: integer_bounds
.. autofunction:: is_integer_constant
.. autofunction:: simplify_floor_div
.. autofunction:: simplify_remainder
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression, Expression


__all__ = [
    "integer_bounds",
    "is_integer_constant",
    "simplify_floor_div",
    "simplify_remainder",
]


Bounds = tuple[int, int]


def is_integer_constant(x: object) -> TypeGuard[int | np.integer]:
    """Whether *x* is a Python or numpy integer (not a boolean)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool,
                                                                   np.bool_))


def integer_bounds(expr: Expression, ranges: Mapping[str, Bounds]) -> Bounds | None:
    """Inclusive bounds ``(lo, hi)`` of the integer expression *expr*,
    given inclusive bounds *ranges* of its variables; None where unknown
    (other variables, other operations)."""
    if is_integer_constant(expr):
        return int(expr), int(expr)
    if isinstance(expr, prim.Variable):
        return ranges.get(expr.name)
    if isinstance(expr, (prim.Sum, prim.Product)):
        add = isinstance(expr, prim.Sum)
        lo = hi = 0 if add else 1
        for child in expr.children:
            b = integer_bounds(child, ranges)
            if b is None:
                return None
            if add:
                lo, hi = lo + b[0], hi + b[1]
            else:
                corners = (lo * b[0], lo * b[1], hi * b[0], hi * b[1])
                lo, hi = min(corners), max(corners)
        return lo, hi
    if isinstance(expr, (prim.FloorDiv, prim.Remainder)) \
            and is_integer_constant(expr.denominator) and expr.denominator > 0:
        k = int(expr.denominator)
        if isinstance(expr, prim.Remainder):
            return 0, k - 1
        b = integer_bounds(expr.numerator, ranges)
        if b is None:
            return None
        return b[0] // k, b[1] // k
    return None


def _split(num: ArithmeticExpression, k: int
           ) -> tuple[list[ArithmeticExpression], list[ArithmeticExpression]]:
    """The terms of *num* that are multiples of *k* (each divided by *k*)
    and the other terms."""
    terms = num.children if isinstance(num, prim.Sum) else (num,)
    multiples: list[ArithmeticExpression] = []
    rest: list[ArithmeticExpression] = []
    for t in terms:
        if is_integer_constant(t) and t % k == 0:
            multiples.append(int(t) // k)
        elif isinstance(t, prim.Product):
            c = 1
            others: list[ArithmeticExpression] = []
            for f in t.children:
                if is_integer_constant(f):
                    c *= int(f)
                else:
                    others.append(f)
            if c % k or not others:
                rest.append(t)
                continue
            c //= k
            factor = others[0] if len(others) == 1 else prim.Product(
                tuple(others))
            multiples.append(factor if c == 1 else prim.Product((c, factor)))
        else:
            rest.append(t)
    return multiples, rest


def _sum(terms: list[ArithmeticExpression]) -> ArithmeticExpression:
    terms = [t for t in terms if not (is_integer_constant(t) and t == 0)]
    if not terms:
        return 0
    return terms[0] if len(terms) == 1 else prim.Sum(tuple(terms))


def _block(num: ArithmeticExpression, k: int, ranges: Mapping[str, Bounds]
           ) -> tuple[list[ArithmeticExpression], ArithmeticExpression, int] | None:
    """(multiples of *k* divided by *k*, rest, m) if the rest of *num* lies
    in ``[m*k, m*k + k - 1]``."""
    if k <= 0:
        return None
    multiples, rest = _split(num, k)
    rest_expr = _sum(rest)
    b = integer_bounds(rest_expr, ranges)
    if b is None or b[0] // k != b[1] // k:
        return None
    return multiples, rest_expr, b[0] // k


def simplify_floor_div(num: ArithmeticExpression, k: Expression,
                       ranges: Mapping[str, Bounds]
                       ) -> Expression | None:
    """``num // k`` without the division, or None if that needs more than
    the *ranges* of the variables (see the module documentation)."""
    if not is_integer_constant(k):
        return None
    found = _block(num, int(k), ranges)
    if found is None:
        return None
    multiples, _, m = found
    return _sum([*multiples, m])


def simplify_remainder(num: ArithmeticExpression, k: Expression,
                       ranges: Mapping[str, Bounds]
                       ) -> Expression | None:
    """``num % k`` without the remainder, or None (as
    :func:`simplify_floor_div`)."""
    if not is_integer_constant(k):
        return None
    found = _block(num, int(k), ranges)
    if found is None:
        return None
    _, rest, m = found
    return _sum([rest, -m * int(k)]) if m else rest
