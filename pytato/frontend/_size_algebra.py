"""Polynomial arithmetic on symbolic sizes, for shape inference.

Shape components are ints or 0-d integer arrays whose expressions (see
:func:`~pytato.array.shape.shape_component_to_expr`) are built from size
parameters with ``+``, ``-`` and ``*``. To compare and divide *products*
of shape components (array sizes), they are expanded into polynomials:
mappings from monomials (sorted tuples of size-parameter names) to integer
coefficients. Components that are not polynomials (``n // 2``, say) are
reported by :class:`NotPolynomialError` and handled by the callers.

.. autoclass:: NotPolynomialError
.. autofunction:: shape_poly
.. autofunction:: poly_divide
.. autofunction:: poly_to_component
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import pymbolic.primitives as prim

from pytato.array.base import Array
from pytato.array.inputs import SizeParam
from pytato.array.shape import shape_component_to_expr
from pytato.diagnostic import NonAffineShapeError
from pytato.scalar_expr import is_integral_scalar


if TYPE_CHECKING:
    from pytato.array.base import ShapeComponent
    from pytato.array.inputs import SizeParam


Monomial: TypeAlias = tuple[str, ...]
Poly: TypeAlias = dict[Monomial, int]


class NotPolynomialError(ValueError):
    """A size expression is not a polynomial in size parameters."""


def _clean(p: Poly) -> Poly:
    return {m: c for m, c in p.items() if c != 0}


def _add(a: Poly, b: Poly) -> Poly:
    result = dict(a)
    for m, c in b.items():
        result[m] = result.get(m, 0) + c
    return _clean(result)


def _mul(a: Poly, b: Poly) -> Poly:
    result: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(sorted(ma + mb))
            result[m] = result.get(m, 0) + ca * cb
    return _clean(result)


def expr_poly(expr: object) -> Poly:
    """Expand the size expression *expr* into a polynomial."""
    if is_integral_scalar(expr):
        return _clean({(): int(expr)})
    if isinstance(expr, prim.Variable):
        return {(expr.name,): 1}
    if isinstance(expr, prim.Sum):
        result: Poly = {}
        for ch in expr.children:
            result = _add(result, expr_poly(ch))
        return result
    if isinstance(expr, prim.Product):
        result = {(): 1}
        for ch in expr.children:
            result = _mul(result, expr_poly(ch))
        return result
    raise NotPolynomialError(f"size expression {expr} is not a polynomial")


def shape_poly(components: Iterable[ShapeComponent]) -> Poly:
    """The product of *components* as a polynomial."""
    result: Poly = {(): 1}
    for c in components:
        result = _mul(result, expr_poly(shape_component_to_expr(c)))
    return result


def poly_divide(num: Poly, den: Poly) -> Poly | None:
    """*num* / *den* if *den* is a monomial dividing every term of *num*
    exactly, else *None*."""
    if len(den) != 1:
        return None
    ((dm, dc),) = den.items()
    result: Poly = {}
    for m, c in num.items():
        rest = list(m)
        for name in dm:
            if name not in rest:
                return None
            rest.remove(name)
        if c % dc:
            return None
        result[tuple(rest)] = c // dc
    return result


def poly_degree(p: Poly) -> int:
    """The total degree of *p* (0 for constants and zero)."""
    return max((len(m) for m in p), default=0)


def poly_to_component(p: Poly, size_params: Mapping[str, SizeParam],
                      candidates: Sequence[ShapeComponent] = ()
                      ) -> ShapeComponent:
    """A shape component equal to the affine polynomial *p*: one of
    *candidates* if one is equal, else an expression built from
    *size_params*. Raises :class:`~pytato.diagnostic.NonAffineShapeError`
    if *p* is not affine."""
    if poly_degree(p) > 1:
        raise NonAffineShapeError(
            f"the inferred size {_poly_str(p)} is not affine in size "
            "parameters")
    if poly_degree(p) == 0:
        return p.get((), 0)
    for c in candidates:
        try:
            if shape_poly([c]) == p:
                return c
        except NotPolynomialError:
            continue
    terms: list[Any] = [
        size_params[m[0]] if coeff == 1 else size_params[m[0]] * coeff
        for m, coeff in sorted(p.items()) if m]
    result: Any = terms[0]
    for t in terms[1:]:
        result = result + t
    if p.get((), 0):
        result = result + p[()]
    return result


def _poly_str(p: Poly) -> str:
    terms = [("*".join([str(c), *m]) if c != 1 or not m else "*".join(m))
             for m, c in sorted(p.items())]
    return " + ".join(terms) or "0"


def size_params_of(components: Iterable[object]) -> dict[str, SizeParam]:
    """The size parameters that the array components of *components*
    depend on, by name."""
    result: dict[str, SizeParam] = {}
    for c in components:
        if isinstance(c, Array):
            for name, inp in c._pt_inputs.items():
                if isinstance(inp, SizeParam):
                    result[name] = inp
    return result
