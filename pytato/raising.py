"""Raising: recognizing the high-level operation that an
:class:`~pytato.array.IndexLambda` computes.

The front end builds element-wise operations, broadcasts, constants,
selections, calls of math functions and reductions as
:class:`~pytato.array.IndexLambda`\\ s.
:func:`index_lambda_to_high_level_op` recovers the operation and its
operands (arrays or scalars), e.g. for analyses or for printing.

.. autofunction:: index_lambda_to_high_level_op
.. autoclass:: HighLevelOp
.. autoclass:: BinaryOpType
.. autoclass:: BinaryOp
.. autoclass:: C99CallOp
.. autoclass:: FullOp
.. autoclass:: ZerosLikeOp
.. autoclass:: WhereOp
.. autoclass:: BroadcastOp
.. autoclass:: LogicalNotOp
.. autoclass:: ReduceOp
.. autoclass:: TypeCastDropper
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict

from pytato.array.base import Array
from pytato.array.lambdas import IndexLambda
from pytato.array.shape import are_shapes_equal, is_one
from pytato.diagnostic import InvalidArgumentTypeError, UnknownIndexLambdaExpr
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    IdentityMapper,
    Reduce,
    ReductionOperation,
    ScalarExpression,
    TypeCast,
)


__all__ = [
    "BinaryOp",
    "BinaryOpType",
    "BroadcastOp",
    "C99CallOp",
    "FullOp",
    "HighLevelOp",
    "LogicalNotOp",
    "ReduceOp",
    "TypeCastDropper",
    "WhereOp",
    "ZerosLikeOp",
    "index_lambda_to_high_level_op",
]

ArrayOrScalar = Any  # Array | a numpy/Python scalar

_C99_PREFIX = "pytato.c99."


class HighLevelOp:
    """Base class of the operations :func:`index_lambda_to_high_level_op`
    recognizes. Instances are immutable and compare by value."""


class BinaryOpType(enum.Enum):
    """The binary operations of :class:`BinaryOp`."""

    ADD = enum.auto()
    SUB = enum.auto()
    MULT = enum.auto()
    TRUEDIV = enum.auto()
    FLOORDIV = enum.auto()
    MOD = enum.auto()
    POWER = enum.auto()
    BITWISE_AND = enum.auto()
    BITWISE_OR = enum.auto()
    BITWISE_XOR = enum.auto()
    LEFT_SHIFT = enum.auto()
    RIGHT_SHIFT = enum.auto()
    LOGICAL_AND = enum.auto()
    LOGICAL_OR = enum.auto()
    LESS = enum.auto()
    LESS_EQUAL = enum.auto()
    GREATER = enum.auto()
    GREATER_EQUAL = enum.auto()
    EQUAL = enum.auto()
    NOT_EQUAL = enum.auto()


_COMPARISON_TO_OP = {
    "<": BinaryOpType.LESS, "<=": BinaryOpType.LESS_EQUAL,
    ">": BinaryOpType.GREATER, ">=": BinaryOpType.GREATER_EQUAL,
    "==": BinaryOpType.EQUAL, "!=": BinaryOpType.NOT_EQUAL,
}


@dataclass(frozen=True)
class BinaryOp(HighLevelOp):
    """``x1 <binary_op> x2``, element-wise with broadcasting.

    .. attribute:: binary_op
    .. attribute:: x1
    .. attribute:: x2
    """

    binary_op: BinaryOpType
    x1: ArrayOrScalar
    x2: ArrayOrScalar


@dataclass(frozen=True)
class C99CallOp(HighLevelOp):
    """The math function *function* (its C99 name, e.g. ``"sin"``,
    ``"atan2"``) applied element-wise to *args*.

    .. attribute:: function
    .. attribute:: args
    """

    function: str
    args: tuple[ArrayOrScalar, ...]


@dataclass(frozen=True)
class FullOp(HighLevelOp):
    """An array filled with *fill_value* (as :func:`pytato.full`)."""

    fill_value: Any


@dataclass(frozen=True)
class ZerosLikeOp(HighLevelOp):
    """An array of the shape of *x* filled with zeros or ones, built with a
    (otherwise unused) binding of *x*; *function* is ``"zeros_like"`` or
    ``"ones_like"``."""

    function: str
    x: Array


@dataclass(frozen=True)
class WhereOp(HighLevelOp):
    """``where(condition, then, else_)``, element-wise with broadcasting."""

    condition: ArrayOrScalar
    then: ArrayOrScalar
    else_: ArrayOrScalar


@dataclass(frozen=True)
class BroadcastOp(HighLevelOp):
    """*x* broadcast to the shape of the index lambda (or copied, if the
    shapes are equal)."""

    x: Array


@dataclass(frozen=True)
class LogicalNotOp(HighLevelOp):
    """Element-wise ``logical_not(x)``."""

    x: Array


@dataclass(frozen=True)
class ReduceOp(HighLevelOp):
    """The reduction of *x* with *op* over the axes of *axes*, a mapping
    from the reduced axes of *x* to the names of their reduction
    variables."""

    op: ReductionOperation
    x: Array
    axes: Mapping[int, str]

    def __post_init__(self) -> None:
        if not isinstance(self.axes, constantdict):
            object.__setattr__(self, "axes", constantdict(self.axes))


class TypeCastDropper(IdentityMapper[[]]):
    """Removes the :class:`~pytato.scalar_expr.TypeCast`\\ s of a scalar
    expression (keeping their operands)."""

    def map_type_cast(self, expr: TypeCast, *args: object, **kwargs: object
                      ) -> ScalarExpression:
        return self.rec(expr.inner_expr, *args, **kwargs)


# {{{ recognizing operands

def _unknown(expr: IndexLambda, why: str) -> UnknownIndexLambdaExpr:
    return UnknownIndexLambdaExpr(
        f"index_lambda_to_high_level_op: the expression {expr.expr} of the "
        f"index lambda (shape {expr.shape}, dtype {expr.dtype}) {why}")


def _is_output_index(e: object, k: int) -> bool:
    return isinstance(e, prim.Variable) and e.name == f"_{k}"


def _operand(e: ScalarExpression, lam: IndexLambda) -> ArrayOrScalar:
    """The array or scalar that *e* (an operand expression inside *lam*,
    type casts removed) reads, broadcast to the shape of *lam*."""
    if isinstance(e, SCALAR_CLASSES):
        return e
    if isinstance(e, prim.Variable) and e.name in lam.bindings:
        ary = lam.bindings[e.name]
        if ary.ndim == 0:
            return ary
        raise _unknown(lam, f"reads the {ary.ndim}-d binding {e.name} as "
                       "a scalar")
    if isinstance(e, prim.Subscript) and isinstance(e.aggregate, prim.Variable) \
            and e.aggregate.name in lam.bindings:
        ary = lam.bindings[e.aggregate.name]
        idx = e.index if isinstance(e.index, tuple) else (e.index,)
        offset = lam.ndim - ary.ndim
        if len(idx) != ary.ndim or offset < 0:
            raise _unknown(lam, f"indexes {e.aggregate.name} with {len(idx)} "
                           f"indices")
        for i, (ix, n) in enumerate(zip(idx, ary.shape, strict=True)):
            if _is_output_index(ix, i + offset):
                continue
            if ix == 0 and is_one(n):
                continue
            raise _unknown(lam, f"indexes {e.aggregate.name} with {ix} in "
                           f"axis {i}, not as a broadcast")
        return ary
    raise _unknown(lam, f"has the operand {e}, which is not a (broadcast) "
                   "read of a binding or a scalar")


def _binary(lam: IndexLambda, op: BinaryOpType, a: Any, b: Any) -> BinaryOp:
    return BinaryOp(op, _operand(a, lam), _operand(b, lam))


def _recognize_sum(lam: IndexLambda, expr: prim.Sum) -> BinaryOp:
    if len(expr.children) != 2:
        raise _unknown(lam, "is a sum of more than two terms")
    a, b = expr.children
    if isinstance(b, prim.Product) and len(b.children) == 2 \
            and isinstance(b.children[0], SCALAR_CLASSES) \
            and b.children[0] == -1:
        return _binary(lam, BinaryOpType.SUB, a, b.children[1])
    return _binary(lam, BinaryOpType.ADD, a, b)


_TWO_CHILD_CLASSES: tuple[tuple[type, BinaryOpType], ...] = (
    (prim.Product, BinaryOpType.MULT),
    (prim.BitwiseAnd, BinaryOpType.BITWISE_AND),
    (prim.BitwiseOr, BinaryOpType.BITWISE_OR),
    (prim.BitwiseXor, BinaryOpType.BITWISE_XOR),
    (prim.LogicalAnd, BinaryOpType.LOGICAL_AND),
    (prim.LogicalOr, BinaryOpType.LOGICAL_OR),
)

_QUOTIENT_CLASSES: tuple[tuple[type, BinaryOpType], ...] = (
    (prim.FloorDiv, BinaryOpType.FLOORDIV),
    (prim.Remainder, BinaryOpType.MOD),
    (prim.Quotient, BinaryOpType.TRUEDIV),
)


def _recognize_reduce(lam: IndexLambda, expr: Reduce) -> ReduceOp:
    inner = expr.inner_expr
    if isinstance(inner, prim.Comparison) and inner.operator == "!=" \
            and isinstance(inner.right, SCALAR_CLASSES) and inner.right == 0:
        # all/any of a non-boolean array compare with zero first
        inner = inner.left
    if isinstance(inner, prim.Variable) and inner.name in lam.bindings:
        ary = lam.bindings[inner.name]
        if ary.ndim == 0:
            return ReduceOp(expr.op, ary, {})
    if not (isinstance(inner, prim.Subscript)
            and isinstance(inner.aggregate, prim.Variable)
            and inner.aggregate.name in lam.bindings):
        raise _unknown(lam, "reduces an expression that is not a read of a "
                       "binding")
    ary = lam.bindings[inner.aggregate.name]
    idx = inner.index if isinstance(inner.index, tuple) else (inner.index,)
    if len(idx) != ary.ndim:
        raise _unknown(lam, f"indexes {inner.aggregate.name} with {len(idx)} "
                       "indices")
    axes: dict[int, str] = {}
    n_out = 0
    for i, ix in enumerate(idx):
        if isinstance(ix, prim.Variable) and ix.name in expr.bounds:
            axes[i] = ix.name
        elif _is_output_index(ix, n_out):
            n_out += 1
        elif ix == 0 and is_one(ary.shape[i]):
            pass
        else:
            raise _unknown(lam, f"reduces with the index {ix} in axis {i}")
    if set(axes.values()) != set(expr.bounds) or n_out != lam.ndim:
        raise _unknown(lam, "does not reduce whole axes of one binding")
    return ReduceOp(expr.op, ary, axes)


def index_lambda_to_high_level_op(expr: IndexLambda) -> HighLevelOp:
    """The high-level operation that the index lambda *expr* computes.

    Type casts of the operands (inserted for numpy's dtype rules) are
    ignored: the operation's dtype is the index lambda's.

    :raises pytato.diagnostic.UnknownIndexLambdaExpr: if the expression is
        not one of the forms of :class:`HighLevelOp` (for example a fused
        expression of several operations).
    """
    if not isinstance(expr, IndexLambda):
        raise InvalidArgumentTypeError(
            "index_lambda_to_high_level_op: 'expr' must be an "
            f"IndexLambda, got {type(expr).__name__}")
    lam = expr
    e = TypeCastDropper()(lam.expr)

    if isinstance(e, SCALAR_CLASSES):
        if len(lam.bindings) == 1:
            (x,) = lam.bindings.values()
            if are_shapes_equal(x.shape, lam.shape) and e in (0, 1):
                return ZerosLikeOp("zeros_like" if e == 0 else "ones_like", x)
        return FullOp(np.dtype(lam.dtype).type(e))
    if isinstance(e, Reduce):
        return _recognize_reduce(lam, e)
    if isinstance(e, prim.Sum):
        return _recognize_sum(lam, e)
    for cls, op in _TWO_CHILD_CLASSES:
        if type(e) is cls:
            children = cast("prim.Product", e).children  # (or alike)
            if len(children) != 2:
                raise _unknown(lam, f"combines {len(children)} operands")
            return _binary(lam, op, *children)
    for cls, op in _QUOTIENT_CLASSES:
        if type(e) is cls:
            quotient = cast("prim.Quotient", e)  # (or alike)
            return _binary(lam, op, quotient.numerator,
                           quotient.denominator)
    if isinstance(e, prim.Power):
        return _binary(lam, BinaryOpType.POWER, e.base, e.exponent)
    if isinstance(e, prim.LeftShift):
        return _binary(lam, BinaryOpType.LEFT_SHIFT, e.shiftee, e.shift)
    if isinstance(e, prim.RightShift):
        return _binary(lam, BinaryOpType.RIGHT_SHIFT, e.shiftee, e.shift)
    if isinstance(e, prim.Comparison):
        return _binary(lam, _COMPARISON_TO_OP[e.operator], e.left, e.right)
    if isinstance(e, prim.LogicalNot):
        x = _operand(e.child, lam)
        if not isinstance(x, Array):
            raise _unknown(lam, "negates a scalar")
        return LogicalNotOp(x)
    if isinstance(e, prim.If):
        return WhereOp(_operand(e.condition, lam), _operand(e.then, lam),
                       _operand(e.else_, lam))
    if isinstance(e, prim.Call) and isinstance(e.function, prim.Variable) \
            and e.function.name.startswith(_C99_PREFIX):
        return C99CallOp(e.function.name[len(_C99_PREFIX):],
                         tuple(_operand(a, lam) for a in e.parameters))
    x = _operand(e, lam)
    if isinstance(x, Array):
        return BroadcastOp(x)
    raise _unknown(lam, "matches no high-level operation")

# }}}

# vim: foldmethod=marker
