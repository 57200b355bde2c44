"""Element-wise mathematical functions, gathered in one namespace (in the
manner of :mod:`cmath`): ``pytato.cmath.sin(x)``. These are the functions of
:mod:`pytato.frontend.math`, also available as ``pytato.sin`` etc., and, as
in the reference pytato, :func:`~pytato.zeros_like` and
:func:`~pytato.ones_like`.
"""

from __future__ import annotations

from pytato.frontend.creation import ones_like, zeros_like
from pytato.frontend.math import (
    abs,
    arccos,
    arcsin,
    arctan,
    arctan2,
    ceil,
    conj,
    conjugate,
    cos,
    cosh,
    exp,
    floor,
    imag,
    isfinite,
    isinf,
    isnan,
    log,
    log10,
    real,
    reciprocal,
    sign,
    sin,
    sinh,
    sqrt,
    square,
    tan,
    tanh,
)


__all__ = [
    "abs",
    "arccos",
    "arcsin",
    "arctan",
    "arctan2",
    "ceil",
    "conj",
    "conjugate",
    "cos",
    "cosh",
    "exp",
    "floor",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log10",
    "ones_like",
    "real",
    "reciprocal",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "tan",
    "tanh",
    "zeros_like",
]
