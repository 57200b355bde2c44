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
    An operand that is a linear combination of arrays of its own shape and
    dtype (``a + b``, ``a - 2*b``, as built by element-wise arithmetic) is
    split: ``einsum(..., a + b, ...) = einsum(..., a, ...) + einsum(..., b,
    ...)``. This pays when the summands are cheaper to contract separately
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
from typing import TYPE_CHECKING

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
)
from pytato.scalar_expr import SCALAR_CLASSES
from pytato.transform._identity_cache import IdentityCachedCopyMapper
from pytato.transform.base import ArrayOrNamesOrDictTc


if TYPE_CHECKING:
    from pymbolic.typing import Scalar

    from pytato.function import FunctionDefinition
    from pytato.scalar_expr import ScalarExpression


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
        return {k: mapper(v)  # type: ignore[misc]
                for k, v in expr.items()}  # type: ignore[return-value]
    return mapper(expr)  # type: ignore[return-value]

# }}}


# {{{ distributive law

def _term(e: ScalarExpression, operand: IndexLambda
          ) -> tuple[str, Scalar] | None:
    """``(binding name, coefficient)`` if *e* is ``coef * name[_0, ...]``
    reading a binding of the operand's shape and dtype."""
    coef: Scalar = 1
    if isinstance(e, prim.Product):
        scalars = [c for c in e.children if isinstance(c, SCALAR_CLASSES)]
        rest = [c for c in e.children if not isinstance(c, SCALAR_CLASSES)]
        if len(rest) != 1:
            return None
        for c in scalars:
            coef = coef * c
        e = rest[0]
    if not (isinstance(e, prim.Subscript)
            and isinstance(e.aggregate, prim.Variable)):
        if isinstance(e, prim.Variable) and operand.ndim == 0:
            name = e.name
        else:
            return None
    else:
        name = e.aggregate.name
        if tuple(_out_index(i) for i in e.index_tuple) != tuple(
                range(operand.ndim)):
            return None
    b = operand.bindings.get(name)
    if b is None or b.dtype != operand.dtype or b.ndim != operand.ndim:
        return None
    if not all(_eq(x, y) for x, y in zip(b.shape, operand.shape, strict=True)):
        return None
    return name, coef


def _as_linear_combination(operand: Array) -> list[tuple[Array, Scalar]] | None:
    """``[(array, coefficient), ...]`` summing to *operand*, or None."""
    if not isinstance(operand, IndexLambda) or operand.var_to_reduction_descr:
        return None
    if operand.dtype.kind not in "iufc":
        return None     # e.g. '+' of booleans is 'or'
    if not isinstance(operand.expr, prim.Sum) or len(operand.expr.children) < 2:
        return None
    coefs: dict[str, Scalar] = {}
    for child in operand.expr.children:
        t = _term(child, operand)
        if t is None:
            return None
        name, coef = t
        coefs[name] = coefs[name] + coef if name in coefs else coef
    if operand.dtype.kind == "u" and any(c != 1 for c in coefs.values()):
        return None     # negative coefficients do not fit the dtype
    return [(operand.bindings[name], c) for name, c in coefs.items()]


ShouldDistribute = Callable[[Einsum, int], bool]


def _always(einsum: Einsum, iarg: int) -> bool:
    return True


class EinsumDistributor(IdentityCachedCopyMapper):
    """Copies a graph, applying the distributive law to einsum operands
    that are sums (see :func:`apply_distributive_property_to_einsums`)."""

    def __init__(self, should_distribute: ShouldDistribute = _always) -> None:
        super().__init__()
        self.should_distribute = should_distribute
        self._split_cache: dict[
            Einsum, tuple[list[Einsum], list[Scalar]] | None] = {}

    def clone_for_callee(self, function: FunctionDefinition) -> EinsumDistributor:
        return type(self)(self.should_distribute)

    def _split(self, e: Einsum) -> tuple[list[Einsum], list[Scalar]] | None:
        if e in self._split_cache:
            return self._split_cache[e]
        result = None
        for iarg, arg in enumerate(e.args):
            terms = _as_linear_combination(arg)
            if terms is None or not self.should_distribute(e, iarg):
                continue
            parts = [
                Einsum(e.access_descriptors,
                       (*e.args[:iarg], t, *e.args[iarg + 1:]),
                       e.redn_axis_to_redn_descr, e.index_to_access_descr,
                       axes=e.axes)
                for t, _ in terms]
            result = (parts, [c for _, c in terms])
            break
        self._split_cache[e] = result
        return result

    def _sum(self, e: Einsum, parts: list[Array], coefs: list[Scalar]) -> Array:
        idx = tuple(prim.Variable(f"_{i}") for i in range(e.ndim))
        terms = []
        bindings = {}
        for k, (p, c) in enumerate(zip(parts, coefs, strict=True)):
            name = f"_in{k}"
            bindings[name] = p
            t: prim.ExpressionNode = prim.Subscript(prim.Variable(name), idx) \
                if idx else prim.Variable(name)
            if not (isinstance(c, (int, np.integer)) and c == 1):
                t = prim.Product((e.dtype.type(c), t))
            terms.append(t)
        return IndexLambda(e.shape, e.dtype, prim.Sum(tuple(terms)), bindings,
                           axes=e.axes, tags=e.tags,
                           non_equality_tags=e.non_equality_tags)

    def map_einsum(self, expr: Einsum) -> Array:
        root = self.map_array(expr)
        done: dict[Einsum, Array] = {}
        stack = [root]
        while stack:
            e = stack[-1]
            if e in done:
                stack.pop()
                continue
            split = self._split(e)
            if split is None:
                done[e] = e
                stack.pop()
                continue
            parts, coefs = split
            pending = [p for p in parts if p not in done]
            if pending:
                stack.extend(pending)
                continue
            done[e] = self._sum(e, [done[p] for p in parts], coefs)
            stack.pop()
        return done[root]


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
    ``c1*einsum(..., a1, ...) + c2*einsum(..., a2, ...)``, repeatedly, for
    operands that are linear combinations (with scalar coefficients) of
    arrays of the operand's shape and dtype.

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
        return {k: mapper(v)  # type: ignore[misc]
                for k, v in expr.items()}  # type: ignore[return-value]
    return mapper(expr)  # type: ignore[return-value]

# }}}
