"""The output axes of loop nests mapped onto work-groups and work-items.

:func:`_schedule_outputs` maps the output inames of one nest onto ``g.0``
and ``l.0`` with :mod:`loopy`'s transformations. :func:`_apply_output_plans`
does the same for many nests (:class:`_OutputPlan`) in one rewrite of the
kernel: the nests of constant extents of one dependency level share one
flat pair of hardware inames, and their indices are read from private
index variables (:class:`_IndexVariables`) computed once per work-item.
:func:`~pytato.target.loopy.schedule.default.default_schedule` decides
which nests go which way.

.. autodata:: MAX_GROUPS_FOR_JOIN
.. autodata:: SILENCED_WRITE_RACES
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import GroupInameTag, Iname, LocalInameTag
from loopy.symbolic import UncachedIdentityMapper as LoopyIdentityMapperBase
from loopy.types import LoopyType
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.target.loopy.schedule.analysis import _prod
from pytato.tuning import record_defaults


#: Kernels with more loop nests than this do not join output inames:
#: :func:`loopy.join_inames` rewrites the whole kernel at each call, which
#: made scheduling quadratic in the number of loop nests (tens of seconds
#: for a 1000-node graph).
MAX_GROUPS_FOR_JOIN = 32


def _schedule_outputs(kernel: lp.LoopKernel, insn_id: str,
                      inames: list[str], lengths: list[int | None],
                      group_size: int | None,
                      allow_join: bool = True) -> lp.LoopKernel:
    """Map output inames onto ``g.0``/``l.0`` (and ``g.1``); with
    *group_size* None, only onto ``g.0``."""
    if not inames:
        return kernel
    if all(n is not None for n in lengths) and (allow_join or len(inames) == 1):
        if len(inames) > 1:
            flat = kernel.get_var_name_generator()(f"{inames[-1]}_flat")
            kernel = lp.join_inames(kernel, inames, new_iname=flat)
        else:
            flat = inames[0]
        if group_size is None:
            return lp.tag_inames(kernel, {flat: "g.0"})
        return lp.split_iname(kernel, flat, group_size,
                              outer_tag="g.0", inner_tag="l.0")
    inner = inames[-1]
    if group_size is not None and lengths[-1] is not None:
        # a small innermost axis needs no larger work-groups than itself
        group_size = max(1, min(group_size, lengths[-1]))
    if len(inames) == 1:
        if group_size is None:
            return lp.tag_inames(kernel, {inner: "g.0"})
        return lp.split_iname(kernel, inner, group_size,
                              outer_tag="g.0", inner_tag="l.0")
    # symbolic, several axes: outermost axis to g.0, innermost split with
    # its inner part to l.0 (only g.0 and l.0 are used anywhere, so that
    # instructions sharing a device kernel agree on the hardware axes)
    kernel = lp.tag_inames(kernel, {inames[0]: "g.0"})
    if group_size is not None:
        kernel = lp.split_iname(kernel, inner, group_size, inner_tag="l.0")
    return kernel


@dataclass
class _OutputPlan:
    """The output axes *inames* (extents *lengths*, None where symbolic) of
    the loop nest of instructions *insn_ids*, to map onto work-groups of
    *group_size* work-items."""

    insn_ids: list[str]
    inames: list[str]
    lengths: list[int | None]
    group_size: int
    #: the nest's dependency level: plans of one level with constant
    #: extents share their hardware inames (one device kernel)
    level: int = 0


def _split_in_domain(dom: isl.BasicSet, iname: str, outer: str, inner: str,
                     size: int) -> isl.BasicSet:
    """*dom* with *iname* replaced by ``size*outer + inner``,
    ``0 <= inner < size``."""
    set_t = isl.dim_type.set
    n = dom.dim(set_t)
    dom = dom.add_dims(set_t, 2)
    dom = dom.set_dim_name(set_t, n, outer).set_dim_name(set_t, n + 1, inner)
    space = dom.get_space()
    dom = dom.add_constraint(isl.Constraint.eq_from_names(
        space, {iname: 1, outer: -size, inner: -1}))
    dom = dom.add_constraint(isl.Constraint.ineq_from_names(
        space, {inner: 1}))
    dom = dom.add_constraint(isl.Constraint.ineq_from_names(
        space, {1: size - 1, inner: -1}))
    idx = dom.get_var_dict()[iname][1]
    return dom.project_out(set_t, idx, 1)


#: The write-race warnings that :func:`default_schedule` silences in
#: kernels where stores index through :class:`_IndexVariables` (loopy sees
#: no hardware iname in their index): those of pytato's instructions,
#: whose ids all start with ``_pt_``. Instructions added later under other
#: ids keep loopy's check.
SILENCED_WRITE_RACES = "write_race(_pt_*)"


@dataclass(eq=False)
class _IndexVariables:
    """The private integer temporaries holding the indices derived from the
    flat index *flat* of one pair of hardware inames *within*: ``flat //
    stride`` and ``flat // stride % n``, each computed once per work-item
    by an instruction of its own.

    Every subscript of a flat loop nest then reads a variable instead of
    repeating ``(s*f_outer + f_inner) // stride % n``: loopy's passes and
    its C code generation walk every node of every expression (and prove
    the signs of ``//`` and ``%`` operands with isl at each), so those
    repeated index expressions were about half of loopy's work on graphs of
    many small arrays."""

    base: str
    flat: ArithmeticExpression
    within: frozenset[str]
    #: the kernel's generators of variable names and instruction ids
    vng: Callable[[str], str]
    ids: Callable[[str], str]
    dtype: LoopyType
    insns: list[lp.Assignment] = field(default_factory=list)
    temporaries: dict[str, lp.TemporaryVariable] = field(default_factory=dict)
    _vars: dict[tuple[int, int | None] | tuple[int, int, str],
                prim.Variable] = field(default_factory=dict)
    _insn_of: dict[str, str] = field(default_factory=dict)

    def _quotient(self, k: int) -> ArithmeticExpression:
        return self.flat if k == 1 else prim.FloorDiv(self.flat, k)

    def _new(self, key: tuple[int, int | None] | tuple[int, int, str],
             name: str, expr: ArithmeticExpression) -> prim.Variable:
        var = prim.Variable(self.vng(name))
        insn_id = self.ids(f"_pt_index_{var.name}")
        self.temporaries[var.name] = lp.TemporaryVariable(
            var.name, self.dtype, shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        self.insns.append(lp.Assignment(
            var, expr, id=insn_id, within_inames=self.within,
            depends_on=frozenset()))
        self._vars[key] = var
        self._insn_of[var.name] = insn_id
        return var

    def get(self, stride: int, mod: int | None) -> prim.Variable:
        """The variable holding ``flat // stride % mod`` (no ``% mod``
        for None)."""
        var = self._vars.get((stride, mod))
        if var is not None:
            return var
        expr = self._quotient(stride)
        name = self.base + ("" if stride == 1 else f"_div{stride}")
        if mod is not None:
            expr = prim.Remainder(expr, mod)
            name += f"_mod{mod}"
        elif stride == 1:
            name += "_idx"
        return self._new((stride, mod), name, expr)

    def contiguous(self, stride: int, mod: int) -> prim.Variable:
        """The variable holding ``flat // stride % mod`` written as
        ``flat // stride - mod*(flat // (stride*mod))``, for the last
        (contiguous) index of subscripts: the row-major address
        ``mod*(flat // (stride*mod)) + this`` then folds back to ``flat //
        stride`` in the device compiler. PoCL vectorizes across work-items
        only where it sees consecutive addresses: the stencil of
        ``bench_kernels.py`` was slower with ``%`` there, while
        the shared-matrix DG einsum was much slower with this form as a
        row index (``D[i, j]``), so each form is used where it helps."""
        key = (stride, mod, "contiguous")
        var = self._vars.get(key)
        if var is not None:
            return var
        expr = prim.Sum((self._quotient(stride), prim.Product(
            (-mod, self._quotient(stride * mod)))))
        name = self.base + ("" if stride == 1 else f"_div{stride}") \
            + f"_mod{mod}_c"
        return self._new(key, name, expr)

    def ids_of(self, variables: Iterable[prim.Variable]) -> frozenset[str]:
        """The ids of the instructions computing *variables*."""
        return frozenset(self._insn_of[v.name] for v in variables)


class _Substitute(LoopyIdentityMapperBase):
    """Replaces variables by name: :class:`loopy.symbolic.SubstitutionMapper`
    with a :func:`~pymbolic.mapper.substitutor.make_subst_func` of
    *values*, without its cache (hashing every subexpression for the cache
    cost more than it saved: the expressions of a nest share few
    subexpressions)."""

    def __init__(self, values: Mapping[str, Expression]) -> None:
        super().__init__()
        self.values = values

    def map_variable(self, expr: prim.Variable, *args: Any) -> Expression:
        value = self.values.get(expr.name)
        return expr if value is None else value


class _LastIndex(LoopyIdentityMapperBase):
    """Replaces variables by others (*twins*) in the last index of each
    subscript only."""

    def __init__(self, twins: dict[str, prim.Variable]) -> None:
        super().__init__()
        self.subst = _Substitute(twins)

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Expression:
        index = tuple(self.rec(i) for i in expr.index_tuple)
        if index:
            index = (*index[:-1], self.subst(index[-1]))
        return prim.Subscript(self.rec(expr.aggregate), index)


class _NestRewrite(LoopyIdentityMapperBase):
    """The rewrite of the expressions of one loop nest: inames replaced by
    *subst*, then, in the last index of subscripts, index variables by
    their *twins* (:meth:`_IndexVariables.contiguous`). Made once per nest
    and shared by its instructions.

    One pass over each expression, with the result of the two: substituting
    (:class:`_Substitute`), then applying :class:`_LastIndex` to the result
    (which also turns the index of each subscript into a tuple)."""

    def __init__(self, subst: dict[str, Expression],
                 twins: dict[str, prim.Variable] | None = None) -> None:
        super().__init__()
        self.subst = subst
        self.last = _LastIndex(twins) if twins else None

    def map_variable(self, expr: prim.Variable, *args: Any) -> Expression:
        value = self.subst.get(expr.name)
        if value is None:
            return expr
        return value if self.last is None else self.last(value)

    def map_subscript(self, expr: prim.Subscript, *args: Any) -> Expression:
        if self.last is None:
            return super().map_subscript(expr)
        index = tuple(self.rec(i) for i in expr.index_tuple)
        if index:
            index = (*index[:-1], self.last.subst(index[-1]))
        return prim.Subscript(self.rec(expr.aggregate), index)


def _apply_output_plans(kernel: lp.LoopKernel, plans: list[_OutputPlan]
                        ) -> tuple[lp.LoopKernel, dict[str, list[str]]]:
    """Apply the schedules of the output axes of many loop nests in one
    rewrite of the kernel (what :func:`_schedule_outputs` does with one
    :mod:`loopy` transformation per nest, each rewriting the whole kernel,
    which is quadratic in the number of nests).

    Constant extents: the output inames are replaced by a flat index
    ``f = group_size*f_outer + f_inner`` (row-major, ``f_outer`` on ``g.0``,
    ``f_inner`` on ``l.0``). All such nests of one dependency level share
    one pair ``f_outer, f_inner``, sized for the largest of them; the
    instructions of smaller nests are predicated on ``f < size``. (One pair
    of hardware inames per device kernel instead of one per nest: loopy's
    code generation walks every hardware iname of a kernel for each of
    them.) Symbolic extents: the innermost iname is split likewise (one
    axis), or the outermost goes to ``g.0`` and the innermost is split with
    its inner part on ``l.0`` (several axes)."""
    if not plans:
        return kernel, {}
    vng = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    domains: list[isl.BasicSet] = list(kernel.domains)
    inames = dict(kernel.inames)
    rewrite_of_insn: dict[str, _NestRewrite] = {}
    within_of_insn: dict[str, frozenset[str]] = {}
    pred_of_insn: dict[str, prim.Comparison] = {}
    deps_of_insn: dict[str, frozenset[str]] = {}
    index_insns: list[lp.Assignment] = []
    temporaries: dict[str, lp.TemporaryVariable] = {}
    added: dict[str, list[str]] = {}
    all_subst: dict[prim.Variable, Expression] = {}
    unbatched = []
    own: list[tuple[_OutputPlan, int]] = []
    for plan in plans:
        home = {kernel.get_home_domain_index(i) for i in plan.inames}
        dom_idx = next(iter(home))
        if len(home) != 1 or (set(domains[dom_idx].get_var_names(
                isl.dim_type.set)) != set(plan.inames)):
            # not a domain of its own: loopy's transformations
            unbatched.append(plan)
        else:
            own.append((plan, dom_idx))

    # constant extents: one flat pair of inames per level
    by_level: dict[int, list[tuple[_OutputPlan, int]]] = {}
    for plan, dom_idx in own:
        if all(n is not None for n in plan.lengths):
            by_level.setdefault(plan.level, []).append((plan, dom_idx))
    dropped: set[int] = set()
    for members in by_level.values():
        totals = [_prod(plan.lengths) for plan, _ in members]
        total = max(totals)
        size = max(1, min(members[0][0].group_size, total))
        lead = members[0][0]
        base = lead.inames[-1] + ("_flat" if len(lead.inames) > 1 else "")
        outer, inner = vng(f"{base}_outer"), vng(f"{base}_inner")
        domains[members[0][1]] = isl.BasicSet(
            f"{{ [{outer}, {inner}] : 0 <= {inner} < {size} and "
            f"0 <= {size}*{outer} + {inner} < {total} }}")
        dropped.update(idx for _, idx in members[1:])
        inames[outer] = Iname(outer, frozenset([GroupInameTag(0)]))
        inames[inner] = Iname(inner, frozenset([LocalInameTag(0)]))
        flat = prim.Sum((prim.Product((size, prim.Variable(outer))),
                         prim.Variable(inner)))
        index_vars = _IndexVariables(base, flat, frozenset({outer, inner}),
                                     vng, ids, kernel.index_dtype)
        for (plan, _), n_plan in zip(members, totals, strict=True):
            subst: dict[str, Expression] = {}
            exprs: dict[str, Expression] = {}
            twins: dict[str, prim.Variable] = {}
            stride = n_plan
            for k, (iname, n) in enumerate(zip(plan.inames, plan.lengths,
                                               strict=True)):
                assert n is not None
                stride //= n
                e: ArithmeticExpression = (
                    flat if stride == 1 else prim.FloorDiv(flat, stride))
                if k > 0:
                    e = prim.Remainder(e, n)
                exprs[iname] = e
                subst[iname] = (0 if n == 1 else
                                index_vars.get(stride, n if k > 0 else None))
                if k > 0 and n > 1:
                    twin = index_vars.contiguous(stride, n)
                    twins[subst[iname].name] = twin
            pred = (prim.Comparison(flat, "<", n_plan) if n_plan < total
                    else None)
            _record(kernel, plan, subst, set(plan.inames), {outer, inner},
                    inames, rewrite_of_insn, within_of_insn, all_subst,
                    exprs=exprs, twins=twins)
            used = index_vars.ids_of(
                [*(v for v in subst.values() if isinstance(v, prim.Variable)),
                 *twins.values()])
            for iid in plan.insn_ids:
                deps_of_insn[iid] = used
                if pred is not None:
                    pred_of_insn[iid] = pred
        index_insns.extend(index_vars.insns)
        temporaries.update(index_vars.temporaries)
        if index_vars.insns:
            added[members[0][0].insn_ids[0]] = [
                i.id for i in index_vars.insns]

    # symbolic extents: a split of the innermost axis per nest
    for plan, dom_idx in own:
        if all(n is not None for n in plan.lengths):
            continue
        last = plan.inames[-1]
        size = plan.group_size
        if plan.lengths[-1] is not None:
            size = max(1, min(size, plan.lengths[-1]))
        outer, inner = vng(f"{last}_outer"), vng(f"{last}_inner")
        domains[dom_idx] = _split_in_domain(domains[dom_idx], last, outer,
                                            inner, size)
        if len(plan.inames) == 1:
            inames[outer] = Iname(outer, frozenset([GroupInameTag(0)]))
        else:
            inames[outer] = Iname(outer, frozenset())
            first = plan.inames[0]
            inames[first] = inames[first].tagged(GroupInameTag(0))
        inames[inner] = Iname(inner, frozenset([LocalInameTag(0)]))
        subst = {last: prim.Sum((prim.Product((size, prim.Variable(outer))),
                                 prim.Variable(inner)))}
        _record(kernel, plan, subst, {last}, {outer, inner}, inames,
                rewrite_of_insn, within_of_insn, all_subst)

    if rewrite_of_insn:
        domains = [d for i, d in enumerate(domains) if i not in dropped]
        kernel = _rewrite_inames(kernel, domains, inames, rewrite_of_insn,
                                 within_of_insn, pred_of_insn, all_subst,
                                 deps_of_insn)
        if index_insns:
            # loopy's write-race check looks for the hardware inames in
            # the stored index; it now reads index variables (a bijection
            # of the flat index, so no two work-items store one element)
            kernel = kernel.copy(
                instructions=[*index_insns, *kernel.instructions],
                temporary_variables={**kernel.temporary_variables,
                                     **temporaries},
                silenced_warnings=kernel.silenced_warnings
                | {SILENCED_WRITE_RACES})
    for plan in unbatched:
        kernel = _schedule_outputs(kernel, plan.insn_ids[0], plan.inames,
                                   plan.lengths, plan.group_size)
    return kernel, added


def _record(kernel: lp.LoopKernel, plan: _OutputPlan,
            subst: dict[str, Expression],
            removed: set[str], added: set[str], inames: dict[str, Iname],
            rewrite_of_insn: dict[str, _NestRewrite],
            within_of_insn: dict[str, frozenset[str]],
            all_subst: dict[prim.Variable, Expression],
            exprs: dict[str, Expression] | None = None,
            twins: dict[str, prim.Variable] | None = None) -> None:
    """Note the rewrite of the nest of *plan*: inames *removed* replaced
    (in expressions, by *subst*, with *twins* in last indices, see
    :class:`_NestRewrite`; in loops, by *added*). *exprs*: the values of
    the removed inames in terms of the added ones, where *subst* replaces
    them by variables holding those values."""
    for name in removed:
        inames.pop(name, None)
    rewrite = _NestRewrite(subst, twins)
    for iid in plan.insn_ids:
        rewrite_of_insn[iid] = rewrite
        within_of_insn[iid] = frozenset(
            (kernel.id_to_insn[iid].within_inames - removed) | added)
    all_subst.update({prim.Variable(k): v
                      for k, v in (exprs or subst).items()})


def _rewrite_inames(kernel: lp.LoopKernel, domains: list[isl.BasicSet],
                    inames: dict[str, Iname],
                    rewrite_of_insn: dict[str, _NestRewrite],
                    within_of_insn: dict[str, frozenset[str]],
                    pred_of_insn: dict[str, prim.Comparison],
                    all_subst: dict[prim.Variable, Expression],
                    deps_of_insn: dict[str, frozenset[str]]
                    ) -> lp.LoopKernel:
    new_insns = []
    for insn in kernel.instructions:
        mapper = rewrite_of_insn.get(insn.id)
        if mapper is None:
            new_insns.append(insn)
            continue
        pred = pred_of_insn.get(insn.id)
        predicates = frozenset(mapper(p) for p in insn.predicates)
        new_insns.append(insn.copy(
            assignee=mapper(insn.assignee),
            expression=mapper(insn.expression),
            within_inames=within_of_insn[insn.id],
            depends_on=insn.depends_on | deps_of_insn.get(insn.id, frozenset()),
            predicates=predicates | {pred} if pred is not None
            else predicates))
    return kernel.copy(
        domains=domains, instructions=new_insns, inames=inames,
        applied_iname_rewrites=(*kernel.applied_iname_rewrites, all_subst))


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
