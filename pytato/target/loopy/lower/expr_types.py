"""Narrowing of :mod:`pymbolic` expressions for the type checker.

:mod:`pymbolic`'s operation nodes (:class:`~pymbolic.primitives.Sum`,
:class:`~pymbolic.primitives.Quotient`, ...) are typed to take
:data:`~pymbolic.typing.ArithmeticExpression` operands, while its mappers
return any :data:`~pymbolic.typing.Expression` (tuples and numpy booleans
included). The operands that the lowering builds such nodes from are
arithmetic (numpy booleans are lowered to ints by
:meth:`~pytato.target.loopy.lower.expressions.ScalarToLoopyMapper.map_constant`):
:func:`arithmetic` says so to the type checker, without a check at run
time (the nodes accepted any operand before they were typed).

.. autofunction:: arithmetic
.. autofunction:: arithmetic_tuple
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from pymbolic.typing import ArithmeticExpression, Expression


__all__ = ["arithmetic", "arithmetic_tuple"]


def arithmetic(expr: Expression) -> ArithmeticExpression:
    """*expr*, an operand of an arithmetic operation, typed as one."""
    return cast("ArithmeticExpression", expr)


def arithmetic_tuple(exprs: Iterable[Expression]
                     ) -> tuple[ArithmeticExpression, ...]:
    """The operands *exprs* of an arithmetic operation, typed as such."""
    return tuple(arithmetic(e) for e in exprs)
