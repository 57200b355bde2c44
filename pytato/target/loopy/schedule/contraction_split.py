"""Small contractions rewritten into the nests that
:mod:`~pytato.target.loopy.schedule.small_contractions` computes (CPUs).

:func:`split_small_contractions` rewrites each instruction holding one
sum with the shape of a small contraction (a sum over reduction inames
of constant extents whose terms are the product of *shared* factors,
plain array accesses indexed by no batch axis, and *per-element* factors
indexed by no inner output axis, as in
:mod:`~pytato.target.loopy.schedule.small_contractions`):

* **The shared factors in the order of the vectors' lanes.** Unless they
  are one array already indexed by the reduction inames then the inner
  output inames, in C order, their product is copied by a new loop nest
  into a new global temporary indexed that way
  (``_pt_sc_matrix[j, i] = D[i, j]`` for ``ij,ej->ei``; ``D[i, j]`` over
  ``(j, i, k)`` for ``ij,ejk->eik``), so that each vector of them is one
  contiguous load. Sums reading the same values share the copy.
* **Per-element factors computed inline.** Graphs as arraycontext-based
  codes build them do not store every einsum: the lift of a DG
  operator, ``rhs = volume - einsum("ifj,fej->ei", L, flux(u_int,
  u_ext))``, becomes one store whose expression holds the sum, with the
  numerical flux (face values gathered by index arrays, normals, an
  upwind choice) inlined as a factor of its terms. One output per
  work-item then computes the flux of every face node once per *output*
  node of the element (35 times for a 3-D simplex of order 4). Each
  per-element factor that is not a plain array access is computed once
  per element and term by a new loop nest into a new global temporary
  indexed by the batch axes then the reduction axes
  (``_pt_sc_factor[e, f, j]``), which the sum reads instead.
* **Sums inside larger expressions.** A sum that is not the whole
  expression is computed by a new loop nest into a new global temporary
  of the output's shape (``_pt_sc_sum[e, i]``), which the expression
  reads instead.

Each new nest has inames of its own, and the instructions reading a new
temporary depend on its writer, so that the default schedule orders the
nests and puts global barriers between them. The extra memory traffic
(one store and one load of each temporary) is small next to what it
saves (``benchmarks/README.md``, issue 44). Sums over fewer than
:data:`~pytato.target.loopy.schedule.small_contractions.MIN_ELEMENTS`
elements, or whose batch extents are symbolic, are left as they are.

.. autofunction:: split_small_contractions
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.array import FixedStrideArrayDimTag
from loopy.library.reduction import SumReductionOperation
from loopy.symbolic import (
    CombineMapper,
    IdentityMapper as LoopyIdentityMapper,
    Reduction as LoopyReduction,
    SubstitutionMapper,
)
from pymbolic.mapper.substitutor import make_subst_func

from pytato.target.loopy.lower.expr_types import arithmetic_tuple
from pytato.target.loopy.schedule.analysis import _box_length, _has_impl_tag
from pytato.target.loopy.schedule.small_contractions import (
    MAX_OUTPUTS,
    MAX_TERMS,
    MAX_WORK,
    MIN_ELEMENTS,
    _factors,
    _float_variable,
    _plain,
)
from pytato.target.loopy.schedule.tiling import _box_domain


if TYPE_CHECKING:
    from collections.abc import Collection

    from pymbolic.typing import Expression


__all__ = ["split_small_contractions"]


class _Names(CombineMapper):
    """The variable names of an expression (aggregates included); None
    inside reductions marks one."""

    def combine(self, values: Any) -> frozenset[str]:
        result: frozenset[str] = frozenset()
        for v in values:
            result = result | v
        return result

    def map_variable(self, expr: prim.Variable, *args: Any) -> frozenset[str]:
        return frozenset([expr.name])

    def map_constant(self, expr: object, *args: Any) -> frozenset[str]:
        return frozenset()

    def map_reduction(self, expr: LoopyReduction, *args: Any
                      ) -> frozenset[str]:
        raise _Unsplittable

    map_tagged_variable = map_variable

    def map_call(self, expr: prim.Call, *args: Any) -> frozenset[str]:
        # the function's name is no value
        return self.combine([self.rec(p) for p in expr.parameters])


class _Unsplittable(Exception):
    pass


class _ReplaceReduction(LoopyIdentityMapper):
    def __init__(self, old: LoopyReduction, new: Expression) -> None:
        super().__init__()
        self.old = old
        self.new = new

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Expression:
        if expr is self.old:
            return self.new
        return super().map_reduction(expr, *args)


class _Reductions(CombineMapper):
    def combine(self, values: Any) -> list[LoopyReduction]:
        return [r for v in values for r in v]

    def map_reduction(self, expr: LoopyReduction, *args: Any
                      ) -> list[LoopyReduction]:
        return [expr, *self.rec(expr.expr)]

    def map_constant(self, expr: object, *args: Any) -> list[LoopyReduction]:
        return []

    def map_variable(self, expr: object, *args: Any) -> list[LoopyReduction]:
        return []

    map_tagged_variable = map_variable


def _is_global(kernel: lp.LoopKernel, name: str) -> bool:
    var = kernel.arg_dict.get(name)
    if var is not None:
        return True
    tv = kernel.temporary_variables.get(name)
    return tv is not None and tv.address_space == lp.AddressSpace.GLOBAL


def _arranged(kernel: lp.LoopKernel, shared: list[Expression],
              axes: list[str]) -> bool:
    """Whether the shared factors *shared* are one access to an array
    whose values are in the order of the vectors' lanes: indexed by
    *axes* (the reduction inames, then the inner output inames) in this
    order, in C order (contiguous)."""
    if len(shared) != 1:
        return False
    factor, = shared
    # (a shared factor: an array access)
    assert isinstance(factor, prim.Subscript)
    assert isinstance(factor.aggregate, prim.Variable)
    if _plain(factor.index) != tuple(axes):
        return False
    var = kernel.arg_dict.get(factor.aggregate.name) \
        or kernel.temporary_variables.get(factor.aggregate.name)
    shape = getattr(var, "shape", None)
    tags = getattr(var, "dim_tags", None)
    if not isinstance(shape, tuple) or tags is None \
            or len(tags) != len(shape):
        return False
    stride = 1
    for tag, extent in zip(reversed(tags), reversed(shape), strict=True):
        if not isinstance(tag, FixedStrideArrayDimTag) \
                or tag.stride != stride \
                or not isinstance(extent, (int, np.integer)):
            return False
        stride *= int(extent)
    return True


def _split_one(kernel: lp.LoopKernel, insn: lp.Assignment,
               red: LoopyReduction, added: list[lp.InstructionBase],
               domains: list[isl.BasicSet],
               temporaries: dict[str, lp.TemporaryVariable],
               vng: Any, ids: Any, matrices: dict[Any, str],
               writers: dict[str, str]) -> lp.Assignment | None:
    """*insn* with its sum *red* split (new instructions, domains and
    temporaries appended to the arguments), or None if it does not
    qualify."""
    lhs = insn.assignee
    if not isinstance(lhs, prim.Subscript) \
            or not isinstance(lhs.aggregate, prim.Variable):
        return None
    out = _plain(lhs.index)
    if out is None or set(out) != set(insn.within_inames) \
            or len(set(out)) != len(out) or len(out) < 2:
        return None
    found = _float_variable(kernel, lhs.aggregate.name)
    if found is None:
        return None
    dtype = found[1]
    if not isinstance(red.operation, SumReductionOperation):
        return None
    lengths = [_box_length(kernel, i) for i in (*out, *red.inames)]
    if any(n is None or n < 1 for n in lengths):
        return None
    out_len = [int(n) for n in lengths[:len(out)] if n is not None]
    red_len = [int(n) for n in lengths[len(out):] if n is not None]
    for names in ([*out], *([r] for r in red.inames)):
        home = {kernel.get_home_domain_index(i) for i in names}
        if len(home) != 1 or set(kernel.domains[home.pop()].get_var_names(
                isl.dim_type.set)) != set(names):
            return None
    n_terms = int(np.prod(red_len))
    split = len(out)
    while split > 1 and int(np.prod(out_len[split - 1:])) <= MAX_OUTPUTS:
        split -= 1
    if split == len(out):
        return None
    batch, inner = set(out[:split]), set(out[split:])
    n_inner = int(np.prod(out_len[split:]))
    if n_terms > MAX_TERMS or n_inner * n_terms > MAX_WORK \
            or int(np.prod(out_len[:split])) < MIN_ELEMENTS:
        return None

    inames = set(out) | set(red.inames)
    shared, element, computed = [], [], []
    for factor in _factors(red.expr):
        try:
            names = _Names()(factor)
        except _Unsplittable:
            return None
        used = names & inames
        plain = isinstance(factor, prim.Subscript) \
            and isinstance(factor.aggregate, prim.Variable) \
            and _plain(factor.index) is not None \
            and _is_global(kernel, factor.aggregate.name)
        if not used & batch:
            if not plain:
                return None
            shared.append(factor)
        elif used & inner:
            return None
        elif plain:
            element.append(factor)
        else:
            # the values read must be those of global arrays or sizes
            others = names - inames
            if not all(_is_global(kernel, n) or isinstance(
                    kernel.arg_dict.get(n), lp.ValueArg) for n in others):
                return None
            computed.append(factor)
    if not shared or not (element or computed):
        return None
    whole = insn.expression is red
    arranged = _arranged(kernel, shared, [*red.inames, *out[split:]])
    if whole and not computed and arranged:
        return None  # planned as it is

    deps = set(insn.depends_on)
    factors: list[Expression] = [*element]
    if arranged:
        factors.extend(shared)
    else:
        # the shared factors in the order of the vectors' lanes
        axes = [*red.inames, *out[split:]]
        extents = [*red_len, *out_len[split:]]
        value = shared[0] if len(shared) == 1 else prim.Product(
            arithmetic_tuple(shared))
        canonical = SubstitutionMapper(make_subst_func(
            {a: prim.Variable(f"_pt_sc_axis{k}") for k, a in enumerate(axes)}
            ))(value)
        key = (str(canonical), tuple(extents), dtype)
        name = matrices.get(key)
        if name is None:
            fresh = [vng(f"_pt_sc_{a}") for a in axes]
            name = matrices[key] = vng("_pt_sc_matrix")
            temporaries[name] = lp.TemporaryVariable(
                name, dtype=dtype, shape=tuple(extents),
                address_space=lp.AddressSpace.GLOBAL)
            domains.append(_box_domain(fresh, extents))
            subst = SubstitutionMapper(make_subst_func(
                {a: prim.Variable(f) for a, f in zip(axes, fresh,
                                                     strict=True)}))
            writers[name] = ids(f"_pt_sc_matrix_{insn.id}")
            added.append(lp.Assignment(
                prim.Variable(name)[tuple(prim.Variable(f) for f in fresh)],
                subst(value), id=writers[name],
                within_inames=frozenset(fresh),
                depends_on=frozenset(insn.depends_on)))
        deps.add(writers[name])
        factors.insert(0, prim.Variable(name)[
            tuple(prim.Variable(a) for a in axes)])
    if computed:
        # the per-element factors, once per element and term
        axes = [*out[:split], *red.inames]
        extents = [*out_len[:split], *red_len]
        fresh = [vng(f"_pt_sc_{a}") for a in axes]
        name = vng("_pt_sc_factor")
        temporaries[name] = lp.TemporaryVariable(
            name, dtype=dtype, shape=tuple(extents),
            address_space=lp.AddressSpace.GLOBAL)
        domains.append(_box_domain(fresh, extents))
        subst = SubstitutionMapper(make_subst_func(
            {a: prim.Variable(f) for a, f in zip(axes, fresh, strict=True)}))
        value = computed[0] if len(computed) == 1 \
            else prim.Product(arithmetic_tuple(computed))
        iid = ids(f"_pt_sc_factor_{insn.id}")
        added.append(lp.Assignment(
            prim.Variable(name)[tuple(prim.Variable(f) for f in fresh)],
            subst(value), id=iid, within_inames=frozenset(fresh),
            depends_on=frozenset(insn.depends_on)))
        deps.add(iid)
        factors.append(prim.Variable(name)[
            tuple(prim.Variable(a) for a in axes)])
    new_red = LoopyReduction(red.operation,
                             # loopy types the inames of a reduction as a
                             # sequence, its constructor as a tuple
                             red.inames,  # type: ignore[arg-type]
                             prim.Product(arithmetic_tuple(factors)),
                             allow_simultaneous=red.allow_simultaneous)
    if whole:
        return insn.copy(expression=new_red, depends_on=frozenset(deps))
    # the sum alone, into a temporary of the output's shape
    fresh = [vng(f"_pt_sc_{a}") for a in out]
    name = vng("_pt_sc_sum")
    temporaries[name] = lp.TemporaryVariable(
        name, dtype=dtype, shape=tuple(out_len),
        address_space=lp.AddressSpace.GLOBAL)
    domains.append(_box_domain(fresh, out_len))
    subst = SubstitutionMapper(make_subst_func(
        {a: prim.Variable(f) for a, f in zip(out, fresh, strict=True)}))
    iid = ids(f"_pt_sc_sum_{insn.id}")
    added.append(lp.Assignment(
        prim.Variable(name)[tuple(prim.Variable(f) for f in fresh)],
        subst(new_red), id=iid, within_inames=frozenset(fresh),
        depends_on=frozenset(deps)))
    expression = _ReplaceReduction(red, prim.Variable(name)[
        tuple(prim.Variable(a) for a in out)])(insn.expression)
    return insn.copy(expression=expression,
                     depends_on=frozenset(insn.depends_on | {iid}))


def split_small_contractions(kernel: lp.LoopKernel,
                             user_inames: Collection[str] = frozenset()
                             ) -> lp.LoopKernel:
    """*kernel* with the small contractions inside its instructions split
    into loop nests of their own (see the module documentation); the
    user's nests (an iname of *user_inames* or one with an implementation
    tag) are left alone. Results are unchanged."""
    user = frozenset(user_inames)
    added: list[lp.InstructionBase] = []
    domains = list(kernel.domains)
    temporaries = dict(kernel.temporary_variables)
    vng = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    new: dict[str, lp.Assignment] = {}
    # the arranged shared factors, by their expression, and their writers
    matrices: dict[Any, str] = {}
    writers: dict[str, str] = {}
    for insn in kernel.instructions:
        if not isinstance(insn, lp.Assignment) or insn.predicates:
            continue
        try:
            reds = _Reductions()(insn.expression)
        except Exception:
            continue
        if len(reds) != 1:
            continue
        red, = reds
        touched = set(insn.within_inames) | set(red.inames)
        if touched & user or any(_has_impl_tag(kernel, i) for i in touched):
            continue
        done = _split_one(kernel, insn, red, added, domains, temporaries,
                          vng, ids, matrices, writers)
        if done is not None:
            new[insn.id] = done
    if not new:
        return kernel
    return kernel.copy(
        domains=domains,
        instructions=[*(new.get(i.id, i) for i in kernel.instructions),
                      *added],
        temporary_variables=temporaries)
