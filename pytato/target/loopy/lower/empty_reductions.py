"""Reductions without an identity over axes of symbolic length.

numpy refuses to take the maximum (minimum) of an empty axis without an
``initial`` value. :func:`pytato.amax` and :func:`pytato.amin` refuse axes of
length 0 when the graph is built; an axis of symbolic length is known only
at the call. Its :class:`~pytato.array.ReductionDescriptor` is then tagged
:class:`~pytato.tags.ReductionWithoutIdentity`, and the lowering records
its length (an expression in size parameters) on the kernel, as a
:class:`~pytato.tags.NonEmptyReductionLengths` tag, which the call's
argument checks (:class:`pytato.target.loopy.run.arguments.ArgumentSpec`)
evaluate: a length of 0 raises
:class:`~pytato.diagnostic.EmptyReductionError` before anything runs.

Reductions whose bounds depend on data or output indices are not checked
(their lengths are not known before the kernel runs); nor are those in
the kernels of traced functions (whose size parameters are the callee's).

.. autofunction:: record_length_to_check
.. autofunction:: tag_kernel_with_lengths
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import loopy as lp
import pymbolic.primitives as prim
from pymbolic.typing import Expression

from pytato.tags import NonEmptyReductionLengths, ReductionWithoutIdentity
from pytato.target.loopy.lower.expr_types import arithmetic
from pytato.target.loopy.lower.reduction_bounds import is_parametric_bound


if TYPE_CHECKING:
    from pytato.array.base import ReductionDescriptor
    from pytato.target.loopy.lower.graph import CodeGenState


__all__ = ["record_length_to_check", "tag_kernel_with_lengths"]


def record_length_to_check(state: CodeGenState, descr: ReductionDescriptor,
                           lower: Expression, upper: Expression) -> None:
    """Record in *state* the length ``upper - lower`` of a reduction whose
    descriptor *descr* is tagged
    :class:`~pytato.tags.ReductionWithoutIdentity`, if its (lowered) bounds
    are affine in size parameters and not both constant."""
    tags = [t for t in descr.tags if isinstance(t, ReductionWithoutIdentity)]
    if not tags:
        return
    if not (is_parametric_bound(state, lower)
            and is_parametric_bound(state, upper)):
        return
    if isinstance(lower, int) and isinstance(upper, int):
        return
    length: Expression = (upper if lower == 0 else
                          prim.Sum((arithmetic(upper),
                                    prim.Product((-1, arithmetic(lower))))))
    entry = (length, tags[0].func)
    if entry not in state.nonempty_lengths:
        state.nonempty_lengths.append(entry)


def tag_kernel_with_lengths(t_unit: lp.TranslationUnit,
                            lengths: list[tuple[Any, str]]
                            ) -> lp.TranslationUnit:
    """*t_unit* with its entrypoint tagged
    :class:`~pytato.tags.NonEmptyReductionLengths` of *lengths* (if any)."""
    if not lengths:
        return t_unit
    knl = t_unit.default_entrypoint
    return t_unit.with_kernel(knl.tagged(
        NonEmptyReductionLengths(tuple(lengths))))
