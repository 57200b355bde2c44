"""The code of small contractions on GPUs: the rewrite of the loop nests
planned by :mod:`~pytato.target.loopy.schedule.gpu_contractions` (which
describes it) into the work-items' accumulators, the per-element factors,
the sums staged in local memory and the stores.

.. autofunction:: apply_gpu_contractions
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import GroupInameTag, Iname, LocalInameTag, UnrollTag
from loopy.symbolic import (
    IdentityMapper as LoopyIdentityMapper,
    Reduction as LoopyReduction,
    SubstitutionMapper,
    aff_from_expr,
)
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import ArithmeticExpression, Expression
from pytools.tag import Tag

from pytato.target.loopy.lower.expr_types import arithmetic_tuple
from pytato.target.loopy.schedule import gpu_contractions
from pytato.target.loopy.schedule.analysis import _prod
from pytato.target.loopy.schedule.gpu_contractions import (
    GpuContraction,
    _product,
)
from pytato.target.loopy.schedule.tiling import _box_domain, _unflatten
from pytato.target.loopy.schedule.tiling_plan import _ints


__all__ = ["apply_gpu_contractions"]


class _ReplaceSum(LoopyIdentityMapper):
    def __init__(self, new: Expression) -> None:
        super().__init__()
        self.new = new

    def map_reduction(self, expr: LoopyReduction, *args: object
                      ) -> Expression:
        return self.new


@dataclass
class _Rewrite:
    """What :func:`apply_gpu_contractions` changes in the kernel."""

    domains: list[isl.BasicSet]
    new_domains: list[isl.BasicSet]
    insns: dict[str, lp.InstructionBase]
    added: list[lp.InstructionBase]
    inames: dict[str, Iname]
    temporaries: dict[str, lp.TemporaryVariable]
    priorities: set[tuple[str, ...]]
    vng: Callable[[str], str]
    ids: Callable[[str], str]

    def box(self, prefix: str, extents: Sequence[int],
            tag: Tag | None = None) -> list[str]:
        """New inames of a box of their own (``0 <= v < extent``)
        tagged *tag* (extents of 1 included: their value is 0)."""
        names = [self.vng(prefix) for _ in extents]
        for name in names:
            self.inames[name] = Iname(name, frozenset([tag] if tag else []))
        self.new_domains.append(_box_domain(names, list(extents)))
        return names


def _flat(names: Sequence[ArithmeticExpression], extents: Sequence[int]
          ) -> ArithmeticExpression:
    """The row-major flat index of *names* in a box of *extents*."""
    terms: list[ArithmeticExpression] = []
    for k, name in enumerate(names):
        stride = _prod(extents[k + 1:])
        terms.append(name if stride == 1 else name * stride)
    return prim.flattened_sum(terms) if terms else 0


@dataclass(frozen=True)
class _Nest:
    """The new inames and values shared by the instructions of a planned
    nest."""

    plan: GpuContraction
    base: str
    #: the group iname (``g.0``)
    group: str
    #: the work-item iname of the sums (``l.0``)
    item: str
    #: the private accumulators and per-element values
    acc: str
    fac: str

    @property
    def start(self) -> ArithmeticExpression:
        """The first element of the group."""
        return prim.Variable(self.group) * self.plan.block

    def element(self, k: ArithmeticExpression) -> ArithmeticExpression:
        """The element *k* (of the elements of a work-item) of the
        work-item."""
        t = prim.Variable(self.item)
        if self.plan.elements_per_item == 1:
            return prim.flattened_sum((self.start, t))
        return prim.flattened_sum((self.start, k * self.plan.group_size, t))

    def batch_values(self, element: ArithmeticExpression
                     ) -> dict[str, ArithmeticExpression]:
        """The batch inames at the (flat) *element*."""
        extents = [1, *_ints(self.plan.lengths[v]
                             for v in self.plan.batch[1:])]
        return dict(zip(self.plan.batch, _unflatten(element, extents),
                        strict=True))

    def items(self, rw: _Rewrite, prefix: str
              ) -> tuple[list[str], ArithmeticExpression]:
        """A new unrolled iname over the elements of a work-item (none if
        one), and its value."""
        if self.plan.elements_per_item == 1:
            return [], 0
        name, = rw.box(f"{self.base}_{prefix}",
                       [self.plan.elements_per_item], UnrollTag())
        return [name], prim.Variable(name)


def _grid(kernel: lp.LoopKernel, rw: _Rewrite, plan: GpuContraction,
          base: str) -> _Nest:
    """The group iname and its domain ``{[g] : 0 <= g, block g < n}``, in
    place of the output domain (the box of the output inames), the
    work-items' iname and the private temporaries."""
    group = rw.vng(f"{base}_cgroup")
    rw.inames[group] = Iname(group, frozenset([GroupInameTag(0)]))
    for name in (*plan.batch, *plan.inner):
        del rw.inames[name]
    out_dom = kernel.get_home_domain_index(plan.batch[0])
    space = isl.Space.create_from_names(
        isl.DEFAULT_CONTEXT, set=[group],
        params=kernel.domains[out_dom].get_var_names_not_none(
            isl.dim_type.param))
    dom = isl.BasicSet.universe(space).add_constraint(
        isl.Constraint.ineq_from_names(space, {group: 1}))
    dom = dom.add_constraint(isl.Constraint.inequality_from_aff(
        aff_from_expr(space, plan.n_batch - 1
                      - prim.Variable(group) * plan.block)))
    rw.domains[out_dom] = dom
    item, = rw.box(f"{base}_elem", [plan.group_size], LocalInameTag(0))
    acc = rw.vng(f"{base}_acc")
    fac = rw.vng(f"{base}_fac")
    rw.temporaries[acc] = lp.TemporaryVariable(
        acc, dtype=plan.acc_dtype,
        shape=(plan.elements_per_item, plan.n_inner),
        address_space=lp.AddressSpace.PRIVATE)
    rw.temporaries[fac] = lp.TemporaryVariable(
        fac, dtype=plan.factor_dtype, shape=(plan.elements_per_item,),
        address_space=lp.AddressSpace.PRIVATE)
    return _Nest(plan, base, group, item, acc, fac)


def _sums(rw: _Rewrite, nest: _Nest, insn: lp.Assignment
          ) -> list[lp.Assignment]:
    """The instructions computing the sums of the work-item's elements
    into the accumulators: their initialization, the per-element factors
    and the updates (the last)."""
    plan = nest.plan
    inner_ext = _ints(plan.lengths[v] for v in plan.inner)
    k_init, k = nest.items(rw, "kinit")
    flat_init, = rw.box(f"{nest.base}_oinit", [plan.n_inner], UnrollTag())
    init = lp.Assignment(
        prim.Variable(nest.acc)[k, prim.Variable(flat_init)], 0,
        id=rw.ids(f"{plan.insn_id}_acc_init"),
        within_inames=frozenset([nest.group, nest.item, *k_init,
                                 flat_init]),
        depends_on=insn.depends_on)

    # the inner inames of the per-element factors: loops around them
    outer = [rw.box(f"{nest.base}_{v}_outer", _ints([plan.lengths[v]]),
                    UnrollTag())[0] for v in plan.element_inner]
    k_fac, k = nest.items(rw, "kfac")
    element = nest.element(k)
    if plan.cut:
        # the last group's elements past the end compute the last one's
        element = prim.Min((element, plan.n_batch - 1))
    subst = SubstitutionMapper(make_subst_func({
        **nest.batch_values(element),
        **{v: prim.Variable(n) for v, n in zip(plan.element_inner, outer,
                                               strict=True)}}))
    compute = lp.Assignment(
        prim.Variable(nest.fac)[k], subst(_product(plan.per_element)),
        id=rw.ids(f"{plan.insn_id}_factor"),
        within_inames=frozenset([nest.group, nest.item, *plan.reduction,
                                 *outer, *k_fac]),
        depends_on=insn.depends_on)

    # the other inner inames inside, then the elements of the work-item
    rest = [v for v in plan.inner if v not in plan.element_inner]
    inside = rw.box(f"{nest.base}_o", _ints(plan.lengths[v] for v in rest),
                    UnrollTag())
    k_upd, k = nest.items(rw, "kupd")
    names = dict(zip(plan.element_inner, outer, strict=True))
    names.update(zip(rest, inside, strict=True))
    subst = SubstitutionMapper(make_subst_func(
        {v: prim.Variable(n) for v, n in names.items()}))
    target = prim.Variable(nest.acc)[k, _flat(
        [prim.Variable(names[v]) for v in plan.inner], inner_ext)]
    update = lp.Assignment(
        target, prim.Sum((target, prim.Product(arithmetic_tuple(
            (subst(_product(plan.shared)), prim.Variable(nest.fac)[k]))))),
        id=rw.ids(f"{plan.insn_id}_update"),
        within_inames=frozenset([nest.group, nest.item, *plan.reduction,
                                 *outer, *inside, *k_upd]),
        depends_on=frozenset([init.id, compute.id]))
    rw.priorities.add((*plan.reduction, *outer, *inside, *k_upd))
    return [init, compute, update]


def _staged_stores(rw: _Rewrite, nest: _Nest, after: str
                   ) -> tuple[lp.Assignment, dict[str, ArithmeticExpression],
                              Expression, frozenset[str],
                              set[Expression]]:
    """The copy of the accumulators into the local array of the block's
    sums (after the instruction *after*); the values of the output inames,
    the sum, the inames and the predicates of the stores of the block, in
    the order of the result."""
    plan = nest.plan
    n_inner = plan.n_inner
    res = rw.vng(f"{nest.base}_sums")
    rw.temporaries[res] = lp.TemporaryVariable(
        res, dtype=plan.acc_dtype, shape=(plan.block, plan.padded_outputs),
        address_space=lp.AddressSpace.LOCAL)
    k_put, k = nest.items(rw, "kput")
    flat_put, = rw.box(f"{nest.base}_oput", [n_inner], UnrollTag())
    t = prim.Variable(nest.item)
    row = prim.flattened_sum((k * plan.group_size, t)) \
        if plan.elements_per_item > 1 else t
    put = lp.Assignment(
        prim.Variable(res)[row, prim.Variable(flat_put)],
        prim.Variable(nest.acc)[k, prim.Variable(flat_put)],
        id=rw.ids(f"{plan.insn_id}_put"),
        within_inames=frozenset([nest.group, nest.item, *k_put, flat_put]),
        depends_on=frozenset([after]))
    steps = plan.elements_per_item * n_inner
    item, = rw.box(f"{nest.base}_out", [plan.group_size], LocalInameTag(0))
    unrolled = steps <= gpu_contractions.MAX_UNROLLED_STEPS
    step, = rw.box(f"{nest.base}_step", [steps],
                   UnrollTag() if unrolled else None)
    q = prim.flattened_sum((prim.Variable(step) * plan.group_size,
                            prim.Variable(item)))
    row = prim.FloorDiv(q, n_inner) if n_inner > 1 else q
    col = prim.Remainder(q, n_inner) if n_inner > 1 else 0
    values = {**nest.batch_values(prim.flattened_sum((nest.start, row))),
              **dict(zip(plan.inner, _unflatten(
                  col, _ints(plan.lengths[v] for v in plan.inner)),
                  strict=True))}
    predicates: set[Expression] = set()
    if plan.cut:
        predicates.add(prim.Comparison(
            prim.flattened_sum((prim.Variable(nest.group)
                                * (plan.block * n_inner), q)),
            "<", plan.n_batch * n_inner))
    return (put, values, prim.Variable(res)[row, col],
            frozenset([nest.group, item, step]), predicates)


def _direct_stores(rw: _Rewrite, nest: _Nest
                   ) -> tuple[dict[str, ArithmeticExpression], Expression,
                              frozenset[str], set[Expression]]:
    """The values of the output inames, the sum, the inames and the
    predicates of the stores of each work-item's elements."""
    plan = nest.plan
    inner_ext = _ints(plan.lengths[v] for v in plan.inner)
    k_out, k = nest.items(rw, "kout")
    out = rw.box(f"{nest.base}_oout", inner_ext, UnrollTag())
    element = nest.element(k)
    values = {**nest.batch_values(element),
              **{v: prim.Variable(n) for v, n in zip(plan.inner, out,
                                                     strict=True)}}
    value = prim.Variable(nest.acc)[k, _flat(
        [prim.Variable(n) for n in out], inner_ext)]
    predicates: set[Expression] = set()
    if plan.cut:
        predicates.add(prim.Comparison(element, "<", plan.n_batch))
    return (values, value, frozenset([nest.group, nest.item, *k_out, *out]),
            predicates)


def _rewrite(kernel: lp.LoopKernel, rw: _Rewrite, plan: GpuContraction
             ) -> list[str]:
    """Record the rewrite of *plan* in *rw*; the ids of the instructions
    it adds."""
    insn = rw.insns[plan.insn_id]
    assert isinstance(insn, lp.Assignment)
    assert isinstance(insn.assignee, prim.Subscript)
    assert isinstance(insn.assignee.aggregate, prim.Variable)
    nest = _grid(kernel, rw, plan, insn.assignee.aggregate.name)
    added: list[lp.Assignment] = _sums(rw, nest, insn)
    if plan.staged:
        put, values, value, within, predicates = _staged_stores(
            rw, nest, added[-1].id)
        added.append(put)
    else:
        values, value, within, predicates = _direct_stores(rw, nest)
    subst = SubstitutionMapper(make_subst_func(values))
    rw.insns[plan.insn_id] = insn.copy(
        assignee=subst(insn.assignee),
        expression=subst(_ReplaceSum(value)(insn.expression)),
        within_inames=within, depends_on=insn.depends_on | {added[-1].id},
        # loopy types predicates as strings, they are expressions
        predicates=frozenset(predicates | set(insn.predicates)))
    rw.added.extend(added)
    return [a.id for a in added]


def apply_gpu_contractions(kernel: lp.LoopKernel,
                           plans: Sequence[GpuContraction]
                           ) -> tuple[lp.LoopKernel, dict[str, list[str]]]:
    """The kernel with the loop nests of *plans* (from
    :func:`~pytato.target.loopy.schedule.gpu_contractions.plan_gpu_contraction`
    on this kernel, or on one differing only
    in other loop nests) rewritten, in one rewrite; and the ids of the
    instructions added for each (they run in the nest's device kernel).
    The output inames of the nests are replaced by new ones (``g.0``,
    ``l.0`` and unrolled loops); results are unchanged."""
    if not plans:
        return kernel, {}
    rw = _Rewrite(
        domains=list(kernel.domains), new_domains=[],
        insns={p.insn_id: kernel.id_to_insn[p.insn_id] for p in plans},
        added=[], inames=dict(kernel.inames),
        temporaries=dict(kernel.temporary_variables),
        priorities=set(kernel.loop_priority),
        vng=kernel.get_var_name_generator(),
        ids=kernel.get_instruction_id_generator())
    added = {plan.insn_id: _rewrite(kernel, rw, plan) for plan in plans}
    kernel = kernel.copy(
        domains=[*rw.domains, *rw.new_domains],
        instructions=[*(rw.insns.get(i.id, i) for i in kernel.instructions),
                      *rw.added],
        inames=rw.inames, temporary_variables=rw.temporaries,
        loop_priority=frozenset(rw.priorities))
    return kernel, added

