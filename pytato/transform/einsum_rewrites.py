"""Algebraic rewrites of :class:`~pytato.array.Einsum` nodes.

Broadcast removal
    An operand that only broadcasts a lower-dimensional array (an
    :class:`~pytato.array.IndexLambda` reading one binding at output indices,
    as :func:`pytato.broadcast_to` and element-wise broadcasting build) is
    replaced by that array, dropping the broadcast axes from the operand's
    access descriptors. An axis is dropped only if another operand still
    determines its index with the full length, so the einsum's value and
    shape are unchanged and no broadcast copy needs to be computed.

Distributive law
    An operand that is a sum, a difference, a negation or a scalar multiple
    of arrays of its own shape and dtype (``a + b``, ``a - 2*b``, as built
    by element-wise arithmetic) is split, recursively:
    ``einsum(..., a - 2*b, ...)`` becomes ``einsum(..., a, ...) -
    2*einsum(..., b, ...)``, built with the front end's operators as
    written there, so that it equals the expression a user writes for it
    (as upstream pytato's). This pays when the summands are cheaper to
    contract separately
    (e.g. when some are sparse, broadcasts, or shared with other einsums);
    it multiplies the number of einsums by the number of summands, so a
    predicate chooses which operands to split.

.. autofunction:: rewrite_einsums_with_no_broadcasts
.. autofunction:: apply_distributive_property_to_einsums
.. autoclass:: EinsumBroadcastRemover
.. autoclass:: EinsumDistributor
.. autoclass:: EinsumDistributiveLawDescriptor
.. autoclass:: DoDistribute
.. autoclass:: DoNotDistribute
.. autoclass:: EinsumDistributiveLawMapper
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pymbolic.primitives as prim

from pytato.array.base import Array, ShapeComponent
from pytato.array.lambdas import (
    Einsum,
    EinsumAxisDescriptor,
    IndexLambda,
)
from pytato.array.remapping import BasicIndex, NormalizedSlice
from pytato.array.shape import are_shape_components_equal, is_one
from pytato.diagnostic import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NonAffineShapeError,
    UnknownIndexLambdaExpr,
)
from pytato.raising import BinaryOp, BinaryOpType, index_lambda_to_high_level_op
from pytato.scalar_expr import SCALAR_CLASSES
from pytato.transform._identity_cache import IdentityCachedCopyMapper
from pytato.transform.base import ArrayOrNamesOrDictTc


if TYPE_CHECKING:

    from pytato.function import FunctionDefinition


__all__ = [
    "DoDistribute", "DoNotDistribute", "EinsumBroadcastRemover",
    "EinsumDistributiveLawDescriptor", "EinsumDistributiveLawMapper",
    "EinsumDistributor",
    "apply_distributive_property_to_einsums",
    "rewrite_einsums_with_no_broadcasts",
]


def _eq(a: ShapeComponent, b: ShapeComponent) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return are_shape_components_equal(a, b)
    except NonAffineShapeError:
        return False


def _out_index(i: object) -> int | None:
    if isinstance(i, prim.Variable) and i.name.startswith("_") \
            and i.name[1:].isdigit():
        return int(i.name[1:])
    return None


# {{{ broadcast removal

@dataclass(frozen=True)
class _Broadcast:
    """*operand* reads *base* (after squeezing the unit axes that it indexes
    by 0): base axis ``k`` is operand axis ``axis_map[k]``."""

    base: Array
    axis_map: tuple[int, ...]


def _as_broadcast(operand: Array) -> _Broadcast | None:
    if not isinstance(operand, IndexLambda) or operand.var_to_reduction_descr:
        return None
    if len(operand.bindings) != 1:
        return None
    (name, base), = operand.bindings.items()
    if base.dtype != operand.dtype:
        return None
    expr = operand.expr
    if isinstance(expr, prim.Variable) and expr.name == name and base.ndim == 0:
        return _Broadcast(base, ())
    if not (isinstance(expr, prim.Subscript)
            and isinstance(expr.aggregate, prim.Variable)
            and expr.aggregate.name == name):
        return None
    idx = expr.index_tuple
    if len(idx) != base.ndim:
        return None
    axis_map = []
    squeeze = []
    for k, i in enumerate(idx):
        out = _out_index(i)
        if out is not None and out < operand.ndim \
                and _eq(base.shape[k], operand.shape[out]):
            axis_map.append(out)
            squeeze.append(False)
        elif isinstance(i, (int, np.integer)) and int(i) == 0 \
                and is_one(base.shape[k]):
            squeeze.append(True)
        else:
            return None
    if len(set(axis_map)) != len(axis_map) or len(axis_map) == operand.ndim:
        return None
    if any(squeeze):
        base = BasicIndex(base, tuple(
            0 if sq else NormalizedSlice(0, n, 1)
            for sq, n in zip(squeeze, base.shape, strict=True)))
    return _Broadcast(base, tuple(axis_map))


def _descr_length(args: list[Array],
                  accs: list[tuple[EinsumAxisDescriptor, ...]],
                  skip: int, d: EinsumAxisDescriptor,
                  length: ShapeComponent) -> bool:
    """Whether an operand other than *skip* indexes *d* with *length*."""
    for iarg, (acc, arg) in enumerate(zip(accs, args, strict=True)):
        if iarg == skip:
            continue
        for dd, n in zip(acc, arg.shape, strict=True):
            if dd == d and _eq(n, length):
                return True
    return False


def _descr_not_one(args: list[Array],
                   accs: list[tuple[EinsumAxisDescriptor, ...]],
                   skip: int, d: EinsumAxisDescriptor) -> bool:
    """Whether an operand other than *skip* indexes *d* with a length that
    is not 1."""
    for iarg, (acc, arg) in enumerate(zip(accs, args, strict=True)):
        if iarg == skip:
            continue
        for dd, n in zip(acc, arg.shape, strict=True):
            if dd == d and not is_one(n):
                return True
    return False


class EinsumBroadcastRemover(IdentityCachedCopyMapper):
    """Copies a graph, replacing broadcast operands of einsums by the
    broadcast arrays, and dropping operand axes of length 1 that broadcast
    against a longer axis of another operand (see
    :func:`rewrite_einsums_with_no_broadcasts`)."""

    def map_einsum(self, expr: Einsum) -> Array:
        args = [self.rec(a) for a in expr.args]
        accs = list(expr.access_descriptors)
        changed = any(a is not b for a, b in zip(args, expr.args, strict=True))
        for iarg, arg in enumerate(args):
            bc = _as_broadcast(arg)
            if bc is None:
                continue
            acc = accs[iarg]
            kept = set(bc.axis_map)
            if not all(_descr_length(args, accs, iarg, acc[j], arg.shape[j])
                       for j in range(arg.ndim) if j not in kept):
                continue
            accs[iarg] = tuple(acc[j] for j in bc.axis_map)
            args[iarg] = bc.base
            changed = True
        for iarg, arg in enumerate(args):
            # size-1 axes broadcast against a longer axis of another operand
            acc = accs[iarg]
            drop = [j for j in range(arg.ndim)
                    if is_one(arg.shape[j])
                    and _descr_not_one(args, accs, iarg, acc[j])]
            if not drop:
                continue
            args[iarg] = BasicIndex(arg, tuple(
                0 if j in drop else NormalizedSlice(0, n, 1)
                for j, n in enumerate(arg.shape)))
            accs[iarg] = tuple(d for j, d in enumerate(acc) if j not in drop)
            changed = True
        if not changed:
            return expr
        return Einsum(tuple(accs), tuple(args), expr.redn_axis_to_redn_descr,
                      expr.index_to_access_descr, axes=expr.axes,
                      tags=expr.tags, non_equality_tags=expr.non_equality_tags)


def rewrite_einsums_with_no_broadcasts(expr: ArrayOrNamesOrDictTc
                                       ) -> ArrayOrNamesOrDictTc:
    """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or a
    :class:`dict` of arrays) with einsum operands that merely broadcast
    lower-dimensional arrays replaced by those arrays (see
    :mod:`pytato.transform.einsum_rewrites`). Linear in the size of the
    graph."""
    mapper = EinsumBroadcastRemover()
    if isinstance(expr, dict):
        return {k: mapper(v)
                for k, v in expr.items()}
    return mapper(expr)

# }}}


# {{{ distributive law

@dataclass(frozen=True)
class _Split:
    """An einsum operand that the distributive law splits: ``x1 + x2``
    (*op* ``"add"``), ``x1 - x2`` (``"sub"``), ``scalar * x1``
    (``"lmul"``), ``x1 * scalar`` (``"rmul"``) or ``-x1`` (``"neg"``),
    with *parts* arrays of the operand's shape and dtype."""

    op: str
    parts: tuple[Array, ...]
    scalar: Any = None


def _split_operand(operand: Array) -> _Split | None:
    """How *operand* splits (see :class:`_Split`), or None."""
    if not isinstance(operand, IndexLambda) or operand.var_to_reduction_descr:
        return None
    if operand.dtype.kind not in "iufc":
        return None     # e.g. '+' of booleans is 'or'
    try:
        hlo = index_lambda_to_high_level_op(operand)
    except UnknownIndexLambdaExpr:
        return None
    if not isinstance(hlo, BinaryOp):
        return None

    def like(x: object) -> bool:
        return (isinstance(x, Array) and x.dtype == operand.dtype
                and x.ndim == operand.ndim
                and all(_eq(a, b) for a, b in zip(x.shape, operand.shape,
                                                  strict=True)))

    x1, x2 = hlo.x1, hlo.x2
    unsigned = operand.dtype.kind == "u"
    if hlo.binary_op is BinaryOpType.ADD and like(x1) and like(x2):
        return _Split("add", (x1, x2))
    if hlo.binary_op is BinaryOpType.SUB and like(x1) and like(x2) \
            and not unsigned:
        return _Split("sub", (x1, x2))
    if hlo.binary_op is BinaryOpType.MULT:
        for scalar, ary, op in ((x1, x2, "lmul"), (x2, x1, "rmul")):
            if not (isinstance(scalar, SCALAR_CLASSES) and like(ary)):
                continue
            # (negative coefficients; those of unsigned operations are real)
            if unsigned and not cast("float", scalar) >= 0:
                continue
            if op == "lmul" and type(scalar) is int and scalar == -1:
                # (how the front end builds -x)
                return _Split("neg", (ary,))
            return _Split(op, (ary,), scalar)
    return None


def _combine(split: _Split, parts: list[Array]) -> Array:
    """The distributed einsums *parts* combined as *split* combines its
    parts, with the front end's operators (as a user writes them)."""
    if split.op == "add":
        return parts[0] + parts[1]
    if split.op == "sub":
        return parts[0] - parts[1]
    if split.op == "neg":
        return -parts[0]
    if split.op == "lmul":
        return split.scalar * parts[0]
    return parts[0] * split.scalar


ShouldDistribute = Callable[[Einsum, int], bool]


def _always(einsum: Einsum, iarg: int) -> bool:
    return True


class EinsumDistributor(IdentityCachedCopyMapper):
    """Copies a graph, applying the distributive law to einsum operands
    that are sums, differences, negations or scalar multiples (see
    :func:`apply_distributive_property_to_einsums`)."""

    def __init__(self, should_distribute: ShouldDistribute = _always) -> None:
        super().__init__()
        self.should_distribute = should_distribute

    def clone_for_callee(self, function: FunctionDefinition) -> EinsumDistributor:
        return type(self)(self.should_distribute)

    def _operand_to_distribute(self, e: Einsum) -> int | None:
        for iarg, arg in enumerate(e.args):
            if _split_operand(arg) is not None \
                    and self.should_distribute(e, iarg):
                return iarg
        return None

    def map_einsum(self, expr: Einsum) -> Array:
        iarg = self._operand_to_distribute(expr)
        if iarg is None:
            return self.map_array(expr)
        # the operand's tree of sums, mapped bottom-up without recursion
        # (sums may be deep): each leaf becomes the einsum with the leaf in
        # its place (itself mapped, distributing its other operands)
        done: dict[Array, Array] = {}
        stack: list[Array] = [expr.args[iarg]]
        while stack:
            node = stack[-1]
            if node in done:
                stack.pop()
                continue
            split = _split_operand(node)
            if split is None:
                done[node] = self.rec(Einsum(
                    expr.access_descriptors,
                    (*expr.args[:iarg], node, *expr.args[iarg + 1:]),
                    expr.redn_axis_to_redn_descr, expr.index_to_access_descr,
                    axes=expr.axes))
                stack.pop()
                continue
            pending = [p for p in split.parts if p not in done]
            if pending:
                stack.extend(pending)
                continue
            done[node] = _combine(split, [done[p] for p in split.parts])
            stack.pop()
        result = done[expr.args[iarg]]
        if result.dtype != expr.dtype:
            result = result.astype(expr.dtype)
        if expr.tags or expr.non_equality_tags \
                or any(ax.tags for ax in expr.axes):
            result = result.copy(
                axes=expr.axes, tags=expr.tags | result.tags,
                non_equality_tags=expr.non_equality_tags)
        return result


class EinsumDistributiveLawDescriptor:
    """What :func:`apply_distributive_property_to_einsums` does with one
    einsum: :class:`DoDistribute` or :class:`DoNotDistribute`."""


@dataclass(frozen=True)
class DoDistribute(EinsumDistributiveLawDescriptor):
    """Distribute the einsum over the terms of its operand number
    *ioperand* (if that operand is a linear combination).

    .. attribute:: ioperand
    """

    ioperand: int


@dataclass(frozen=True)
class DoNotDistribute(EinsumDistributiveLawDescriptor):
    """Leave the einsum as it is."""


def _should_distribute_from_descriptors(
        how_to_distribute: Callable[[Einsum], EinsumDistributiveLawDescriptor]
        ) -> ShouldDistribute:
    def should_distribute(einsum: Einsum, iarg: int) -> bool:
        descr = how_to_distribute(einsum)
        if isinstance(descr, DoDistribute):
            if not 0 <= descr.ioperand < len(einsum.args):
                raise InvalidArgumentError(
                    f"how_to_distribute returned DoDistribute({descr.ioperand}) "
                    f"for an einsum with {len(einsum.args)} operands")
            return descr.ioperand == iarg
        if isinstance(descr, DoNotDistribute):
            return False
        raise InvalidArgumentTypeError(
            "how_to_distribute must return a DoDistribute or a "
            f"DoNotDistribute, got {descr!r}")
    return should_distribute


class EinsumDistributiveLawMapper(EinsumDistributor):
    """An :class:`EinsumDistributor` choosing the operand to distribute
    over with a callback returning an
    :class:`EinsumDistributiveLawDescriptor` (upstream's interface)."""

    def __init__(self, how_to_distribute: Callable[
            [Einsum], EinsumDistributiveLawDescriptor]) -> None:
        super().__init__(_should_distribute_from_descriptors(how_to_distribute))
        self.how_to_distribute = how_to_distribute

    def clone_for_callee(self, function: FunctionDefinition
                         ) -> EinsumDistributiveLawMapper:
        return type(self)(self.how_to_distribute)


def apply_distributive_property_to_einsums(
        expr: ArrayOrNamesOrDictTc,
        how_to_distribute: Callable[
            [Einsum], EinsumDistributiveLawDescriptor] | None = None,
        *,
        should_distribute: ShouldDistribute | None = None
        ) -> ArrayOrNamesOrDictTc:
    """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or a
    :class:`dict` of arrays) with einsums over sums rewritten as sums of
    einsums: ``einsum(..., c1*a1 + c2*a2, ...)`` becomes
    ``c1*einsum(..., a1, ...) + c2*einsum(..., a2, ...)``, recursively
    through the sums, differences, negations and scalar multiples of arrays
    of the operand's shape and dtype, built with the front end's operators
    as written there (so ``A @ (x1 + x2)`` becomes an array equal to
    ``A @ x1 + A @ x2``). The result takes the einsum's tags and axes.

    :arg how_to_distribute: called as ``how_to_distribute(einsum)`` for
        each einsum (those created by distributing included); returns
        :class:`DoDistribute` ``(ioperand)`` to distribute over that operand
        or :class:`DoNotDistribute` (upstream's interface). Default: every
        operand that is a linear combination.
    :arg should_distribute: alternatively, called as
        ``should_distribute(einsum, iarg)`` for each candidate operand; only
        operands for which it returns *True* are split. Splitting every
        operand of an einsum of several sums creates the product of their
        numbers of terms, so restrict it where that matters.
    """
    if how_to_distribute is not None and should_distribute is not None:
        raise InvalidArgumentTypeError(
            "apply_distributive_property_to_einsums: pass "
            "'how_to_distribute' or 'should_distribute', not both")
    if how_to_distribute is not None:
        if not callable(how_to_distribute):
            raise InvalidArgumentTypeError("apply_distributive_property_to_einsums: "
                                           "'how_to_distribute' must be callable, got "
                                           f"{how_to_distribute!r}")
        mapper: EinsumDistributor = EinsumDistributiveLawMapper(
            how_to_distribute)
    else:
        mapper = EinsumDistributor(should_distribute or _always)
    if isinstance(expr, dict):
        return {k: mapper(v)
                for k, v in expr.items()}
    return mapper(expr)

# }}}
