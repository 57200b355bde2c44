"""What the reduction transforms of the schedule read and build of a
reduction instruction (:mod:`~pytato.target.loopy.schedule.reductions`,
:mod:`~pytato.target.loopy.schedule.cpu_reductions`): its one top-level
reduction (``_the_reduction``) with the inames of its outputs
(``_reduction_with_outputs``), a reduction replaced in an expression
(``_ReplaceReduction``), the reduction iname to split (``_chosen_iname``),
fresh names of the stages' inames and temporaries (``_stage_names``), the
steps of a flat index over a reduction iname (``_steps_of``), and the
domains of a reduction taken in sequential runs (``_sequential_domains``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import (
    IdentityMapper as LoopyIdentityMapper,
    Reduction as LoopyReduction,
    SubstitutionMapper,
    WalkMapper,
)
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import ArithmeticExpression, Expression


class _TopLevelReductions(WalkMapper):
    """Collects the reductions of an expression that are not nested in
    another reduction."""

    def __init__(self) -> None:
        super().__init__()
        self.reductions: list[LoopyReduction] = []

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        self.reductions.append(expr)


class _ReplaceReduction(LoopyIdentityMapper):
    def __init__(self, old: LoopyReduction, new: Expression) -> None:
        super().__init__()
        self.old = old
        self.new = new

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Expression:
        if expr == self.old:
            return self.new
        return super().map_reduction(expr, *args)


def _assignee_inames(insn: lp.Assignment) -> tuple[str, list[str]]:
    """The assigned variable's name and its index inames."""
    lhs = insn.assignee
    if isinstance(lhs, prim.Variable):
        return lhs.name, []
    if isinstance(lhs, prim.Subscript) and isinstance(lhs.aggregate,
                                                     prim.Variable):
        idx = lhs.index if isinstance(lhs.index, tuple) else (lhs.index,)
        if all(isinstance(i, prim.Variable) for i in idx):
            names = [i.name for i in idx]
            if len(set(names)) == len(names):
                return lhs.aggregate.name, names
    raise ValueError(f"instruction '{insn.id}': the assignee must be a "
                     "variable indexed by distinct inames, not "
                     f"'{lhs}'")


def _the_reduction(kernel: lp.LoopKernel, insn_id: str
                   ) -> tuple[lp.Assignment, str, list[str], LoopyReduction]:
    """The instruction *insn_id*, its assignee's name and index inames, and
    its one top-level reduction; :class:`ValueError` where the instruction
    is not an assignment of that form within exactly its output inames."""
    insn = kernel.id_to_insn[insn_id]
    if not isinstance(insn, lp.Assignment):
        raise ValueError(f"instruction '{insn_id}' is not an Assignment")
    out_name, out_inames = _assignee_inames(insn)
    if set(out_inames) != set(insn.within_inames):
        raise ValueError(f"instruction '{insn_id}': the loops around it "
                         "must be exactly the output inames")
    coll = _TopLevelReductions()
    coll(insn.expression)
    if len(coll.reductions) != 1:
        raise ValueError(f"instruction '{insn_id}' has "
                         f"{len(coll.reductions)} (top-level) reductions, "
                         "expected one")
    return insn, out_name, out_inames, coll.reductions[0]


def _reduction_with_outputs(kernel: lp.LoopKernel, insn_id: str,
                            instead: str
                            ) -> tuple[lp.Assignment, str, list[str],
                                       LoopyReduction] | None:
    """:func:`_the_reduction` of *insn_id*, which must have output inames
    (else the error names the transform to use *instead*); None if its
    output domain is empty: nothing to compute (and :mod:`loopy` cannot
    map an empty loop onto the grid)."""
    insn, out_name, out_inames, red = _the_reduction(kernel, insn_id)
    if not out_inames:
        raise ValueError(f"instruction '{insn_id}' has no output inames "
                         f"(use {instead})")
    if kernel.get_inames_domain(frozenset(out_inames)).is_empty():
        return None
    return insn, out_name, out_inames, red


def _chosen_iname(red: LoopyReduction, iname: str | None, default: int
                  ) -> str:
    """*iname* (an iname of *red*, checked), or by default the iname of
    *red* at position *default*."""
    if iname is None:
        return red.inames[default]
    if iname not in red.inames:
        raise ValueError(f"'{iname}' is not an iname of the reduction")
    return iname


def _stage_names(kernel: lp.LoopKernel, vng: Callable[[str], str],
                 iname: str, out_name: str, insn_id: str,
                 suffixes: tuple[str, ...], kind: str
                 ) -> tuple[list[str], str, str, str]:
    """New names for a reduction of *iname* (into *out_name*, by the
    instruction *insn_id*) split in stages: the inames
    ``{iname}_{suffix}`` for each of *suffixes*, the array of partial
    results, the id of stage 1 and that of the global barrier (named after
    *kind*), in this order. (*vng*: the kernel's name generator, which
    the caller may go on using.)"""
    ing = kernel.get_instruction_id_generator()
    inames = [vng(f"{iname}_{suffix}") for suffix in suffixes]
    partial = vng(f"{out_name}_partial")
    stage1_id = ing(f"{insn_id}_stage1")
    barrier_id = ing(f"{insn_id}_{kind}_barrier")
    return inames, partial, stage1_id, barrier_id


def _steps_of(red: LoopyReduction, iname: str, flat: ArithmeticExpression,
              steps: tuple[str, ...]) -> tuple[tuple[str, ...], Expression]:
    """The inames and the reduced expression of *red* with *iname* replaced
    by the expression *flat* of the new inames *steps*, which take its
    place among the reduction's inames."""
    expr = SubstitutionMapper(make_subst_func({iname: flat}))(red.expr)
    inames = tuple(j for i in red.inames
                   for j in (steps if i == iname else (i,)))
    return inames, expr


def _sequential_domains(kernel: lp.LoopKernel, iname: str, flat: str, *,
                        outer: list[str], outer_ranges: str, seq: str,
                        inner: str, extent: int, guard: str
                        ) -> tuple[isl.BasicSet, isl.BasicSet]:
    """The sequential and guard domains of a stage 1 that covers the
    domain of *iname* (a domain of its own, without other inames among its
    parameters) with the elements ``r = flat`` (*flat*: isl syntax, over
    the inames *outer*, *seq* and *inner*):

    * the sequential inames, nested in the box of the inames *outer*
      (*outer_ranges*: their isl constraints): *inner* in ``[0, extent)``
      and *seq* over the values for which some point of the box and some
      *inner* has an element;
    * nested in those, the guard iname *guard*, 0 where *r* is in the
      domain of *iname*, else empty (a domain of its own: :mod:`loopy`
      fails on loops with piecewise bounds, the ``min`` of two bounds,
      with this :mod:`islpy`).
    """
    dom = kernel.domains[kernel.get_home_domain_index(iname)]
    if dom.get_var_names(isl.dim_type.set) != [iname]:
        raise ValueError(f"the domain of '{iname}' must have no other inames")
    params = dom.get_var_names(isl.dim_type.param)
    if set(params) & kernel.all_inames():
        raise ValueError(f"the domain of '{iname}' depends on other inames")
    dom = dom.set_tuple_name(None) if dom.get_tuple_name() else dom

    def preimage(space_params: list[str], dims: list[str]) -> isl.BasicSet:
        ma = isl.MultiAff(f"[{', '.join(space_params)}] -> "
                          f"{{ [{', '.join(dims)}] -> [{flat}] }}")
        result = dom.align_params(ma.get_space().params()) \
            .preimage_multi_aff(ma)
        for i, name in enumerate(dims):
            result = result.set_dim_name(isl.dim_type.set, i, name)
        return result

    # seq: where any point of the box and any inner step has an element
    s_dims = [seq, *outer, inner]
    s_dom = preimage(params, s_dims) & isl.BasicSet(
        f"[{', '.join(params)}] -> {{ [{', '.join(s_dims)}] : "
        f"{outer_ranges} and 0 <= {inner} < {extent} }}")
    s_dom = s_dom.project_out(isl.dim_type.set, 1, len(outer) + 1)
    seq_params = [*params, *outer]
    seq_dom = (s_dom.align_params(isl.BasicSet(
        f"[{', '.join(seq_params)}] -> {{ : }}").get_space())
        .insert_dims(isl.dim_type.set, 1, 1)
        .set_dim_name(isl.dim_type.set, 1, inner)
        & isl.BasicSet(f"[{', '.join(seq_params)}] -> "
                       f"{{ [{seq}, {inner}] : 0 <= {inner} < {extent} }}"))
    seq_dom = seq_dom.remove_redundancies()
    guard_params = [*seq_params, seq, inner]
    guard_dom = preimage(guard_params, [guard]) & isl.BasicSet(
        f"[{', '.join(guard_params)}] -> "
        f"{{ [{guard}] : {guard} = 0 }}")
    return seq_dom, guard_dom
