"""Bounds of reductions that are not affine in size parameters.

The domain of a reduction iname is a set in :mod:`islpy`: its bounds must be
affine in the kernel's parameters. A bound of a
:class:`pytato.scalar_expr.Reduce` may instead depend on the output indices
(a prefix sum, ``out[i] = sum(x[j] for j < i)``) or on data (a segment sum
``out[i] = sum(x[j] for row_starts[i] <= j < row_starts[i+1])``, as in a
CSR matrix-vector product). As upstream pytato does, such a bound is
computed into a private temporary (``<reduction iname>_lbound``,
``<reduction iname>_ubound``) by an instruction in the loop nest of the
instruction holding the reduction, and the reduction's domain is bounded by
that temporary as a :mod:`loopy` domain parameter (loopy's data-dependent
loop bounds). The reduction's instruction depends on the bound's.

The domain of the reduction then names no loop index of the enclosing nest,
so that schedules may split, join and parallelize the output loops (the
bound instructions are rewritten with the others of the nest); the
reduction iname itself must stay sequential (loopy cannot launch work-items
over data-dependent extents).

.. autoclass:: BoundAssignment
.. autofunction:: is_parametric_bound
.. autofunction:: lower_reduction_bound
.. autofunction:: emit_bound_assignments
.. autofunction:: data_dependent_inames
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from islpy import dim_type
from pymbolic.typing import Expression

from pytato.diagnostic import CannotBeLoweredToLoopyError


if TYPE_CHECKING:
    from pytato.target.loopy.lower.expressions import ExpressionContext
    from pytato.target.loopy.lower.graph import CodeGenState


__all__ = [
    "BoundAssignment", "data_dependent_inames", "emit_bound_assignments",
    "is_parametric_bound", "lower_reduction_bound",
]


@dataclass(frozen=True)
class BoundAssignment:
    """The assignment of a reduction bound to the private temporary *name*,
    still to be emitted (in the loops of the instruction it belongs to) by
    :func:`emit_bound_assignments`."""

    insn_id: str
    name: str
    expression: Expression
    depends_on: frozenset[str]


def is_parametric_bound(state: CodeGenState, bound: Expression) -> bool:
    """Whether the lowered *bound* is affine in kernel value arguments of
    integer type (size parameters), i.e. can be written in an isl set."""
    # (lower.graph imports this module)
    from pytato.target.loopy.lower.graph import _isl_affine

    params: set[str] = set()
    try:
        _isl_affine(bound, params)
    except CannotBeLoweredToLoopyError:
        return False
    for name in params:
        if name in state.size_param_names:
            continue
        arg = state.kernel_data.get(name)
        if not (isinstance(arg, lp.ValueArg) and arg.dtype is not None
                and arg.dtype.numpy_dtype.kind in "iu"):
            return False
    return True


def _bound_dtype(dtype: object) -> np.dtype[np.generic]:
    if isinstance(dtype, np.dtype):
        if dtype.kind in "iu":
            return dtype
        raise CannotBeLoweredToLoopyError(
            f"reduction bound of dtype {dtype}: bounds must be integers")
    if isinstance(dtype, (bool, np.bool_)) or not isinstance(
            dtype, (int, np.integer)):
        raise CannotBeLoweredToLoopyError(
            f"reduction bound {dtype!r}: bounds must be integers")
    return np.dtype(np.int64)


def lower_reduction_bound(state: CodeGenState, ctx: ExpressionContext,
                          bound_ctx: ExpressionContext, iname: str,
                          which: str, bound: Expression, dtype: object
                          ) -> Expression:
    """The expression bounding the domain of the reduction iname *iname*
    (*which* is ``"lbound"`` or ``"ubound"``) given the lowered *bound*
    (lowered with *bound_ctx*, of scalar type *dtype*): *bound* itself if
    it is parametric (:func:`is_parametric_bound`), else a private
    temporary whose assignment is recorded in *ctx* (with the dependencies
    of *bound_ctx*), on which the instruction of *ctx* depends."""
    ctx.bound_assignments.extend(bound_ctx.bound_assignments)
    if is_parametric_bound(state, bound):
        ctx.depends_on.update(bound_ctx.depends_on)
        return bound
    name = state.names(f"{iname}_{which}")
    state.kernel_data[name] = lp.TemporaryVariable(
        name, _bound_dtype(dtype), shape=(),
        address_space=lp.AddressSpace.PRIVATE)
    insn_id = state.names(f"_pt_insn_{name}", try_bare=True)
    ctx.bound_assignments.append(BoundAssignment(
        insn_id, name, bound,
        frozenset(bound_ctx.depends_on | {
            b.insn_id for b in bound_ctx.bound_assignments})))
    ctx.depends_on.add(insn_id)
    return prim.Variable(name)


def emit_bound_assignments(state: CodeGenState, ctx: ExpressionContext,
                           inames: Collection[str], where: str) -> None:
    """Add the instructions of the bound assignments of *ctx* to *state*,
    inside the loops *inames* of the instruction that holds the
    reductions (described by *where* in errors). A bound depending on any
    other loop index (of an enclosing reduction) cannot be computed there:
    an error. (Substitution rules, which have no loops, reject such
    bounds.)"""
    # (loopy at first use: pytato.lazy_imports)
    from loopy.symbolic import get_dependencies

    own = frozenset(inames)
    for b in ctx.bound_assignments:
        foreign = {v for v in get_dependencies(b.expression)
                   if v not in own and v not in state.kernel_data
                   and v not in state.size_param_names}
        if foreign:
            raise CannotBeLoweredToLoopyError(
                f"the reduction bound {b.expression} of {where} depends on "
                f"{', '.join(sorted(foreign))}, which is not an index of "
                "its output (a bound depending on the index of an "
                "enclosing reduction cannot be computed before the "
                "reduction's loop)")
        state.instructions.append(lp.Assignment(
            prim.Variable(b.name), b.expression, id=b.insn_id,
            within_inames=own, depends_on=b.depends_on))
        state.bound_insn_ids.add(b.insn_id)


def data_dependent_inames(kernel: lp.LoopKernel) -> frozenset[str]:
    """The inames of *kernel* whose domain has a temporary variable as a
    parameter (a data-dependent bound): loops that cannot be mapped onto
    work-items, nor have their extent assumed constant."""
    result: set[str] = set()
    for dom in kernel.domains:
        params = dom.get_var_names(dim_type.param)
        if any(p in kernel.temporary_variables for p in params):
            result.update(dom.get_var_names_not_none(dim_type.set))
    return frozenset(result)
