"""Walks over :mod:`loopy` expressions, shared by the stages of the loopy
backend (lowering and schedule). Imports no stage.

.. autoclass:: UncachedLoopyWalkMapper
.. autodata:: CHILDREN
.. autofunction:: holds_reduction
.. autofunction:: expression_names
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import (
    Reduction as _Reduction,
    TypeCast as _TypeCast,
    WalkMapper as _LoopyWalkMapper,
)
from pymbolic.mapper import Mapper as _PymbolicMapper


__all__ = ["CHILDREN", "UncachedLoopyWalkMapper", "expression_names",
           "holds_reduction"]


#: The common node types of the expressions of pytato's kernels that bind
#: no name, each with a function giving its children (for walks by a
#: stack, much faster than a mapper's visits; what is not here
#: is left to a mapper by the walks below).
CHILDREN: dict[type, Callable[[Any], Iterable[Any]]] = {
    prim.Variable: lambda e: (),
    prim.Subscript: lambda e: (e.aggregate, e.index),
    prim.Sum: lambda e: e.children,
    prim.Product: lambda e: e.children,
    prim.Quotient: lambda e: (e.numerator, e.denominator),
    prim.FloorDiv: lambda e: (e.numerator, e.denominator),
    prim.Remainder: lambda e: (e.numerator, e.denominator),
    prim.Power: lambda e: (e.base, e.exponent),
    prim.Call: lambda e: (e.function, *e.parameters),
    prim.Comparison: lambda e: (e.left, e.right),
    prim.LogicalAnd: lambda e: e.children,
    prim.LogicalOr: lambda e: e.children,
    prim.LogicalNot: lambda e: (e.child,),
    prim.If: lambda e: (e.condition, e.then, e.else_),
    _TypeCast: lambda e: (e.child,),
    tuple: lambda e: e,
}

_NUMBERS = (int, float, complex, np.generic)


def holds_reduction(expr: object) -> bool | None:
    """Whether *expr* holds a :class:`loopy.Reduction` (None where it has
    a node of a type not in :data:`CHILDREN`)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        children = CHILDREN.get(type(e))
        if children is not None:
            stack.extend(children(e))
        elif type(e) is _Reduction:
            return True
        elif not isinstance(e, _NUMBERS):
            return None
    return False


def expression_names(exprs: Iterable[object]) -> set[str] | None:
    """The names of the variables in *exprs* (not the functions they call)
    and the inames of their reductions: what :mod:`loopy`'s dependency
    analysis finds in them together with their reduction inames. None
    where they have a node of a type not in :data:`CHILDREN`."""
    names: set[str] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        t = type(e)
        if t is prim.Variable:
            names.add(e.name)
        elif t is prim.Call:
            stack.extend(e.parameters)
        elif t is _Reduction:
            names.update(e.inames)
            stack.append(e.expr)
        else:
            children = CHILDREN.get(t)
            if children is not None:
                stack.extend(children(e))
            elif not isinstance(e, _NUMBERS):
                return None
    return names


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
