"""Reductions computed before the conditionals that branch on them.

:mod:`loopy` realizes a reduction inside a branch of a conditional
expression (``c if cond else d``) with update instructions predicated on
the condition, and realizes a reduction in the condition in the same
loop: where the condition holds a reduction and a branch holds the same
one again (a lowering repeating an operand: the test of a negative
exponent of an integer power, and complex division, whose branch test
``|re(b)| >= |im(b)|`` and whose branches all read the divisor ``b``,
before it became a call), each step of the branch's reduction is taken
or skipped by the condition on the *partial* value of the condition's
reduction, and each copy keeps an accumulator of its own.
``[2, -1, 1] ** sum(J, axis=1)`` gave ``[16, 1, 1]`` for ``[4, -1, 1]``;
``1 / sum(a)`` of complex values gave ``0.367+0.110j`` where numpy gives
``0.253-0.090j``.

:func:`hoist_branching_reductions` computes such a reduction first: each
reduction in the condition of a conditional whose branches hold a
reduction is written by an instruction of its own, over loops of its own,
to a temporary array in global memory with an axis per loop of the
instruction reading it and per loop of a reduction around the conditional
that it reads (``sum(1 / sum(m, axis=1))``); every occurrence of that
reduction in the instruction reads the array, and the instruction depends
on the new one, so the condition is evaluated on the complete value, and
the schedules see an ordinary stored array (its own loop nest and kernel
level). The value is computed once, where :mod:`loopy` kept one
accumulator per occurrence (28 for a complex division). Instructions
that are not the code generator's stores get a scalar in private memory
instead, computed in their own loops; a reduction whose bounds depend on
other loops is left as it is.

.. autofunction:: hoist_branching_reductions
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import (
    DependencyMapper,
    Reduction as LoopyReduction,
    SubstitutionMapper,
    UncachedIdentityMapper as _LoopyIdentityMapper,
)
from pymbolic.mapper.substitutor import make_subst_func

from pytato.target.loopy.loopy_walk import CHILDREN, holds_reduction
from pytato.target.loopy.lower.expr_types import arithmetic
from pytato.target.loopy.lower.fusion import _Store


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression, Expression

    from pytato.target.loopy.lower.graph import CodeGenState


__all__ = ["hoist_branching_reductions"]


def _branches_on_reduction(expr: object) -> bool:
    """Whether *expr* may hold a conditional whose condition holds a
    reduction (True where it has a node the quick walk does not know)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if type(e) is prim.If and holds_reduction(e.condition) is not False:
            return True
        children = CHILDREN.get(type(e))
        if children is not None:
            stack.extend(children(e))
        elif type(e) is LoopyReduction:
            stack.append(e.expr)
        elif not isinstance(e, (int, float, complex, np.generic)):
            return True
    return False


def _holds_reduction(expr: Expression) -> bool:
    found = holds_reduction(expr)
    if found is None:
        finder = _ReductionFinder()
        finder(expr)
        return bool(finder.found)
    return found


class _ReductionFinder(_LoopyIdentityMapper[[]]):
    """The outermost reductions of an expression, in order, in *found*."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[LoopyReduction] = []

    def map_reduction(self, expr: LoopyReduction) -> Expression:
        if expr not in self.found:
            self.found.append(expr)
        return expr


def _variables(expr: Expression) -> set[str]:
    deps: DependencyMapper[[]] = DependencyMapper(
        include_subscripts=False, include_lookups=False, include_calls=False)
    return {v.name for v in deps(expr) if isinstance(v, prim.Variable)}


class _Hoister(_LoopyIdentityMapper[[]]):
    """Replaces the reductions that conditionals of one instruction branch
    on (see the module documentation) by the temporaries that *hoist*
    gives for them."""

    def __init__(self, hoist: Callable[[LoopyReduction, tuple[str, ...]],
                                       Expression | None]) -> None:
        super().__init__()
        self.hoist = hoist
        #: the inames of the reductions around the node being visited
        self.enclosing: list[tuple[str, ...]] = []
        #: reduction -> the read of its value
        self.hoisted: dict[LoopyReduction, Expression] = {}

    def map_reduction(self, expr: LoopyReduction) -> Expression:
        known = self.hoisted.get(expr)
        if known is not None:
            return known
        self.enclosing.append(tuple(expr.inames))
        try:
            inner = self.rec(expr.expr)
        finally:
            self.enclosing.pop()
        if inner is expr.expr:
            return expr
        return LoopyReduction(expr.operation,
                              # loopy types the inames of a reduction as a
                              # sequence, its constructor as a tuple
                              expr.inames,  # type: ignore[arg-type]
                              inner,
                              allow_simultaneous=expr.allow_simultaneous)

    def map_if(self, expr: prim.If) -> Expression:
        then, else_ = self.rec(expr.then), self.rec(expr.else_)
        cond = expr.condition
        if _holds_reduction(cond) and (_holds_reduction(then)
                                       or _holds_reduction(else_)):
            finder = _ReductionFinder()
            finder(cond)
            around = [i for inames in self.enclosing for i in inames]
            for red in finder.found:
                if red in self.hoisted:
                    continue
                # the loops of the reductions around it that it reads
                # become axes of the array holding its values
                read = _variables(red)
                value = self.hoist(red, tuple(i for i in around if i in read))
                if value is not None:
                    self.hoisted[red] = value
            if self.hoisted:
                # the branches read the hoisted values too
                then, else_ = self.rec(then), self.rec(else_)
        return prim.If(self.rec(cond), then, else_)


def _reduction_dtype(state: CodeGenState, red: LoopyReduction
                     ) -> np.dtype[np.generic] | None:
    dtype = state.reduction_dtypes.get(red)
    return None if dtype is None else np.dtype(dtype)


def _hoist(state: CodeGenState, insn: lp.Assignment, store: _Store | None,
           added: list[lp.Assignment], red: LoopyReduction,
           around: tuple[str, ...]) -> Expression | None:
    """Store the values of *red*, read by *insn* (the store *store*, None
    if it is none) in the loops of the reductions *around* it, in a new
    temporary array with the shape of the loops of *store* and *around*,
    written over loops of its own; return its read by *insn* (None where
    that cannot be done)."""
    dtype = _reduction_dtype(state, red)
    if store is None or set(store.inames) != set(insn.within_inames):
        if around:
            return None
        # (not one of the code generator's stores: a value in private
        # memory, computed in the loops of *insn*)
        name = state.names("_pt_red_value", try_bare=False)
        state.kernel_data[name] = lp.TemporaryVariable(
            name, dtype, shape=(), address_space=lp.AddressSpace.PRIVATE)
        added.append(lp.Assignment(
            prim.Variable(name), red,
            id=state.names(f"_pt_insn_{name}", try_bare=True),
            within_inames=insn.within_inames,
            depends_on=insn.depends_on,
            # loopy types predicates as strings, they are expressions
            predicates=insn.predicates))  # type: ignore[arg-type]
        return prim.Variable(name)
    bounds = [state.iname_bounds.get(i) for i in around]
    loop_inames = set(store.inames) | set(state.iname_bounds)
    if any(b is None or (_variables(b[0]) | _variables(b[1])) & loop_inames
           for b in bounds):
        # (a reduction whose bounds depend on other loops)
        return None
    lower = [arithmetic(b[0]) for b in bounds if b is not None]
    shape: list[ArithmeticExpression] = [
        *(arithmetic(e) for e in store.shape), *(
        arithmetic(b[1]) if b[0] == 0 else prim.Sum((arithmetic(b[1]),
                                         prim.Product((-1, arithmetic(b[0])))))
        for b in bounds if b is not None)]
    old_inames = [*store.inames, *around]
    name = state.names("_pt_red_value", try_bare=False)
    inames = [state.names(f"{name}_dim{i}") for i in range(len(old_inames))]
    if inames:
        state.add_domain(inames, [*[0] * len(store.inames), *lower],
                         [*store.shape, *(b[1] for b in bounds if b)])
        for old, new in zip(old_inames, inames, strict=True):
            if old in state.iname_tags and old in store.inames:
                state.iname_tags[new] = state.iname_tags[old]
    subst = SubstitutionMapper(make_subst_func(
        {old: prim.Variable(new)
         for old, new in zip(old_inames, inames, strict=True)}))
    state.kernel_data[name] = lp.TemporaryVariable(
        name, dtype, shape=tuple(shape),
        address_space=lp.AddressSpace.GLOBAL)

    def index(names: Sequence[str]) -> tuple[Expression, ...]:
        return tuple(
            prim.Variable(n) if k < len(store.inames) or lower[
                k - len(store.inames)] == 0
            else prim.Sum((prim.Variable(n), prim.Product(
                (-1, lower[k - len(store.inames)]))))
            for k, n in enumerate(names))

    new_idx = index(inames)
    insn_id = state.names(f"_pt_insn_{name}", try_bare=True)
    added.append(lp.Assignment(
        prim.Variable(name)[new_idx] if new_idx else prim.Variable(name),
        subst(red), id=insn_id, within_inames=frozenset(inames),
        depends_on=insn.depends_on,
        # loopy types predicates as strings, they are expressions
        predicates=frozenset(
            subst(p) for p in insn.predicates)))  # type: ignore[misc]
    state.stores.append(_Store(insn_id, name, tuple(inames), tuple(shape),
                               len(state.domains) - 1 if inames else None))
    old_idx = index(old_inames)
    return prim.Variable(name)[old_idx] if old_idx else prim.Variable(name)


def hoist_branching_reductions(state: CodeGenState) -> None:
    """Give each reduction that a conditional expression of an instruction
    of *state* branches on, while a branch holds a reduction, an instruction
    of its own computing it first (see the module documentation), in
    place."""
    new_insns: list[lp.InstructionBase] = []
    store_of = {s.insn_id: s for s in state.stores}
    changed = False
    for insn in list(state.instructions):
        if not isinstance(insn, lp.Assignment) \
                or not _branches_on_reduction(insn.expression):
            new_insns.append(insn)
            continue
        added: list[lp.Assignment] = []
        hoister = _Hoister(partial(_hoist, state, insn, store_of.get(insn.id),
                                   added))
        expr = hoister(insn.expression)
        if not added:
            new_insns.append(insn)
            continue
        changed = True
        new_insns.extend(added)
        new_insns.append(insn.copy(
            expression=expr,
            depends_on=insn.depends_on | {a.id for a in added}))
    if changed:
        state.instructions[:] = new_insns
