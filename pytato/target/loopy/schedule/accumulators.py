"""Sequential reductions as explicit accumulator loops.

:mod:`loopy` turns each :class:`loopy.symbolic.Reduction` into instructions
during preprocessing (``realize_reduction``), rebuilding the whole kernel
once per reduction, so that a kernel with thousands of reductions takes
time quadratic in its size (the preprocessing of the hundreds of
reductions of a 10^4-node graph took most of its code generation). The
default schedule does the same
rewrite itself for the reductions that run sequentially inside a
work-item, all of them in one pass over the kernel:

.. code-block:: text

    out[i] = f(sum_j g(i, j))      -->      acc = 0                  (init)
                                            acc = acc + g(i, j)      (loop j)
                                            out[i] = f(acc)

``acc`` is a scalar in private memory (a register) of the reduction's
result type; the update uses the reduction operation itself (so
:mod:`numpy`'s NaN semantics of max/min are kept).

With *lanes* ``k > 1`` (the default schedule asks for
:attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lanes`: 4 on
CPUs), a reduction whose innermost iname ``j`` is long (at least
*min_lane_extent* steps, or of symbolic extent) and has a domain of its
own keeps ``k`` accumulators, each reducing every ``k``-th element, updated
side by side in one loop (``j = k*s + q``, the lane ``q`` a loop inside
the loop over ``s``, which device compilers vectorize, for floating-point
accumulators where the steps cover the extent exactly; else unrolled),
and combined at the end:

.. code-block:: text

    acc[q] = 0                                    (q = 0..k-1, unrolled)
    acc[q] = acc[q] + g(i, k*s + q)               (loop s, loop q inside)
    acc[0] = acc[0] + acc[p]                      (p = 1..k-1, unrolled)
    out[i] = f(acc[0])

A CPU runs one accumulator's updates one after the other, each waiting
for the previous result; the compilers of OpenCL CPU devices (PoCL)
vectorize across work-items, so a loop inside a work-item stays scalar,
and ``k`` independent chains keep ``k`` updates in flight. Lanes past the
end (fewer than ``k`` elements) keep the neutral element. The order of
the sum changes, as it does in numpy's own (pairwise) summation.

With *lane_blocks* ``b > 1`` (the default schedule asks for
:attr:`~pytato.target.loopy.device.DeviceInfo.accumulator_lane_blocks`: 4
on CPUs), floating-point reductions whose steps cover a constant extent
exactly keep ``b*k`` accumulators in ``b`` blocks: ``j = b*k*s + k*u +
q``, the blocks ``u`` unrolled, each a loop over its lanes ``q``. A
compiler turns each block's loop into one vector register, so ``b``
vector updates are in flight where one block's updates each wait for the
previous one (``k*b`` lanes in a single loop kept their accumulators in
memory on PoCL).

Reductions are left to
:mod:`loopy` when they run in parallel (a reduction iname carries a tag),
contain another reduction, sit in a branch of a conditional expression
or inside a substitution rule, need a
callable of the target (integer max/min), combine several values
(argmax), or when the type of the reduced expression cannot be read off
the kernel.

.. autofunction:: realize_sequential_reductions
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import Iname, UnrollTag
from loopy.library.reduction import (
    AllReductionOperation,
    AnyReductionOperation,
    ScalarReductionOperation,
)
from loopy.symbolic import (
    IdentityMapper as _LoopyIdentityMapper,
    Reduction as LoopyReduction,
    SubstitutionMapper,
    WalkMapper as _LoopyWalkMapper,
)
from loopy.type_inference import TypeReader
from loopy.types import LoopyType
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import Expression

from pytato.target.loopy.lower.expressions import (
    _NumpyExtremumMixin,
    _truth_value,
)
from pytato.target.loopy.schedule.analysis import _has_impl_tag, _reduction_inames
from pytato.tuning import record_defaults


__all__ = ["realize_sequential_reductions"]


class _HasReduction(_LoopyWalkMapper):
    found = False

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        self.found = True


def _contains_reduction(expr: Expression) -> bool:
    w = _HasReduction()
    w(expr)
    return w.found


class _InameUses(_LoopyWalkMapper):
    """Counts the reductions over each iname into *uses*."""

    def __init__(self, uses: dict[str, int]) -> None:
        super().__init__()
        self.uses = uses

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        for name in expr.inames:
            self.uses[name] = self.uses.get(name, 0) + 1
        super().map_reduction(expr, *args)


class _Realizer(_LoopyIdentityMapper):
    """Replaces the realizable reductions of one instruction by their
    accumulators, collecting the new instructions and temporaries."""

    def __init__(self, kernel: lp.LoopKernel, t_unit: lp.TranslationUnit,
                 type_reader: TypeReader, insn: lp.Assignment,
                 names: Callable[[str], str], ids: Callable[[str], str],
                 lanes: _Lanes) -> None:
        super().__init__()
        self.kernel = kernel
        self.t_unit = t_unit
        self.type_reader = type_reader
        self.insn = insn
        self.names = names
        self.ids = ids
        self.lanes = lanes
        self.new_insns: list[lp.Assignment] = []
        self.new_temps: dict[str, lp.TemporaryVariable] = {}
        self.update_ids: list[str] = []

    def _realizable_dtype(self, expr: LoopyReduction) -> LoopyType | None:
        if not isinstance(expr.operation, ScalarReductionOperation):
            return None
        if any(_has_impl_tag(self.kernel, i) for i in expr.inames):
            return None
        if _contains_reduction(expr.expr):
            return None
        try:
            dtype = self.type_reader(expr.expr)
        except Exception:
            return None
        if isinstance(dtype, (list, tuple)):
            dtype = dtype[0] if len(dtype) == 1 else None
        return dtype if isinstance(dtype, lp.types.LoopyType) else None

    def map_if(self, expr: prim.If, *args: Any) -> Expression:
        # a reduction in a branch runs only where its branch is taken (its
        # reads may be out of bounds elsewhere): loopy's job
        return prim.If(self.rec(expr.condition), expr.then, expr.else_)

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Expression:
        dtype = self._realizable_dtype(expr)
        if dtype is None:
            return expr
        op = expr.operation
        table = self.t_unit.callables_table
        target = self.kernel.target
        acc_dtype, = op.result_dtypes(dtype)
        acc = prim.Variable(self.names(f"acc_{expr.inames[0]}"))
        try:
            neutral, t1 = op.neutral_element(acc_dtype, callables_table=table,
                                             target=target)
            update, t2 = op([acc_dtype], acc, expr.expr,
                            callables_table=table, target=target)
        except Exception:
            return expr
        if t1 is not table or t2 is not table:
            # the operation needs a callable of the target: loopy's job
            return expr
        init_id = self.ids(f"{self.insn.id}_{acc.name}_init")
        update_id = self.ids(f"{self.insn.id}_{acc.name}_update")
        within = self.insn.within_inames
        lanes = self.lanes.split(
            expr.inames[-1], self.names,
            tuple(i for i in expr.inames[:-1]
                  if not _has_impl_tag(self.kernel, i)),
            blocks=self.lanes.blocks if _is_float(acc_dtype) else 1)
        if lanes is not None:
            return self._interleaved(expr, op, acc, acc_dtype, neutral,
                                     init_id, update_id, lanes)
        self.new_temps[acc.name] = lp.TemporaryVariable(
            acc.name, acc_dtype, shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        self.new_insns.append(lp.Assignment(
            acc, neutral, id=init_id, within_inames=within,
            depends_on=frozenset(), predicates=self.insn.predicates))
        self.new_insns.append(lp.Assignment(
            acc, update, id=update_id,
            within_inames=within | frozenset(expr.inames),
            depends_on=self.insn.depends_on | {init_id},
            predicates=self.insn.predicates))
        self.update_ids.append(update_id)
        return acc

    def _interleaved(self, expr: LoopyReduction,
                     op: ScalarReductionOperation, acc: prim.Variable,
                     acc_dtype: LoopyType, neutral: Expression, init_id: str,
                     update_id: str, lanes: _LaneInames
                     ) -> Expression:
        """*expr* reduced into :attr:`_Lanes.lanes` accumulators (times
        the blocks of *lanes*; see the module documentation): the init,
        update and combine instructions; the result is the first
        accumulator."""

        lane0, lane, step, rest = lanes.lane0, lanes.lane, lanes.step, \
            lanes.rest
        k = self.lanes.lanes * lanes.blocks
        table = self.t_unit.callables_table
        target = self.kernel.target
        iname = expr.inames[-1]
        # the accumulator of an update: its lane, in its block
        q: prim.ArithmeticExpression = prim.Variable(lane)
        loop_inames = {step, lane}
        if lanes.block is not None:
            q = self.lanes.lanes * prim.Variable(lanes.block) + q
            loop_inames.add(lanes.block)
        flat = k * prim.Variable(step) + q
        body = SubstitutionMapper(make_subst_func({iname: flat}))(expr.expr)
        combine, _ = op([acc_dtype], acc[0], acc[prim.Variable(rest)],
                        callables_table=table, target=target)
        self.new_temps[acc.name] = lp.TemporaryVariable(
            acc.name, acc_dtype, shape=(k,),
            address_space=lp.AddressSpace.PRIVATE)
        within = self.insn.within_inames
        loop = within | frozenset(expr.inames[:-1]) | loop_inames
        preds = self.insn.predicates
        combine_id = self.ids(f"{self.insn.id}_{acc.name}_combine")
        self.new_insns.append(lp.Assignment(
            acc[prim.Variable(lane0)], neutral, id=init_id,
            within_inames=within | {lane0},
            depends_on=frozenset(), predicates=preds))
        bitwise = _bitwise_logic(op)
        if lane in self.lanes.boxes and (bitwise is not None or (
                getattr(acc_dtype, "numpy_dtype", None) is not None
                and acc_dtype.numpy_dtype.kind == "f")):
            # the lanes of the update of floats a loop, which device
            # compilers vectorize (unrolled, PoCL kept them scalar, and
            # the matvec, row sums and amax were much slower; but `any`
            # of booleans, whose update was a short-circuit ||, became
            # much slower in a loop: any/all
            # are updated with a bitwise operation instead, other types
            # keep unrolled lanes); where the steps do not cover the extent
            # exactly, loopy's code generation fails on a loop whose bounds
            # depend on the step: unrolled there
            self.lanes.keep_loop(lane)
        extremum = _float_extremum(op, acc_dtype)
        if extremum is None:
            if bitwise is not None:
                # any/all: acc | (v != 0), acc & (v != 0), without the
                # short-circuit of || and && (whose conditional loads kept
                # the lanes scalar: on PoCL, a loop with | was faster than
                # unrolled lanes with ||, and than numpy)
                update: Expression = bitwise((acc[q], _truth_value(body)))
            else:
                update, _ = op([acc_dtype], acc[q], body,
                               callables_table=table, target=target)
            self.new_insns.append(lp.Assignment(
                acc[q], update, id=update_id,
                within_inames=loop,
                depends_on=self.insn.depends_on | {init_id},
                predicates=preds))
            self.new_insns.append(lp.Assignment(
                acc[0], combine, id=combine_id,
                within_inames=within | {rest},
                depends_on=frozenset({update_id}), predicates=preds))
            self.update_ids.append(combine_id)
            return acc[0]

        # numpy's max/min of floats: one comparison per update and the
        # first NaN kept apart (see _float_extremum), combined at the end
        nan = prim.Variable(self.names(f"{acc.name}_nan"))
        val = prim.Variable(self.names(f"{acc.name}_val"))
        self.new_temps[nan.name] = lp.TemporaryVariable(
            nan.name, acc_dtype, shape=(k,),
            address_space=lp.AddressSpace.PRIVATE)
        self.new_temps[val.name] = lp.TemporaryVariable(
            val.name, acc_dtype, shape=(k,),
            address_space=lp.AddressSpace.PRIVATE)
        nan_init_id = self.ids(f"{self.insn.id}_{nan.name}_init")
        val_id = self.ids(f"{self.insn.id}_{val.name}")
        nan_update_id = self.ids(f"{self.insn.id}_{nan.name}_update")
        nan_combine_id = self.ids(f"{self.insn.id}_{nan.name}_combine")
        result_id = self.ids(f"{self.insn.id}_{acc.name}_result")
        r = prim.Variable(rest)
        self.new_insns.append(lp.Assignment(
            nan[prim.Variable(lane0)], 0, id=nan_init_id,
            within_inames=within | {lane0},
            depends_on=frozenset(), predicates=preds))
        self.new_insns.append(lp.Assignment(
            val[q], body, id=val_id, within_inames=loop,
            depends_on=self.insn.depends_on, predicates=preds))
        self.new_insns.append(lp.Assignment(
            acc[q], prim.If(prim.Comparison(val[q], extremum, acc[q]),
                            val[q], acc[q]),
            id=update_id, within_inames=loop,
            depends_on=frozenset({init_id, val_id}), predicates=preds))
        self.new_insns.append(lp.Assignment(
            nan[q], prim.If(prim.Comparison(val[q], "!=", val[q]),
                            val[q], nan[q]),
            id=nan_update_id, within_inames=loop,
            depends_on=frozenset({nan_init_id, val_id}), predicates=preds))
        self.new_insns.append(lp.Assignment(
            acc[0], combine, id=combine_id,
            within_inames=within | {rest},
            depends_on=frozenset({update_id}), predicates=preds))
        self.new_insns.append(lp.Assignment(
            nan[0], prim.If(prim.Comparison(nan[r], "!=", nan[r]),
                            nan[r], nan[0]),
            id=nan_combine_id, within_inames=within | {rest},
            depends_on=frozenset({nan_update_id}), predicates=preds))
        self.new_insns.append(lp.Assignment(
            acc[0], prim.If(prim.Comparison(nan[0], "!=", nan[0]),
                            nan[0], acc[0]),
            id=result_id, within_inames=within,
            depends_on=frozenset({combine_id, nan_combine_id}),
            predicates=preds))
        self.update_ids.append(result_id)
        return acc[0]


def _float_extremum(op: ScalarReductionOperation, dtype: LoopyType
                    ) -> str | None:
    """``">"`` or ``"<"`` where *op* is numpy's max or min
    (:class:`pytato.target.loopy.lower.expressions.NumpyMaxReductionOperation`, ...)
    over the floating-point *dtype*, else None.

    Their interleaved accumulators are then updated with one comparison
    (``acc = v > acc ? v : acc``, which skips NaNs), while a second set of
    accumulators keeps the last NaN met (``nan = v != v ? v : nan``); the
    result is that NaN, if any. The update of the operation itself
    (``acc > v || acc != acc ? acc : v``) is one dependent chain of two
    comparisons per element. On PoCL, the ``amax`` of a long vector in
    parts was much faster with this update and a loop over the
    lanes than with the operation's update or with unrolled lanes (and a
    little faster than numpy)."""
    if not isinstance(op, _NumpyExtremumMixin):
        return None
    if getattr(dtype, "numpy_dtype", None) is None \
            or dtype.numpy_dtype.kind != "f":
        return None
    return op._cmp


def _bitwise_logic(op: ScalarReductionOperation
                   ) -> type[prim.BitwiseOr] | type[prim.BitwiseAnd] | None:
    """The bitwise operation that updates the accumulators of the
    reduction operation *op* in lanes (see :meth:`_Realizer._interleaved`):
    or for any, and for all; None for other operations."""
    if isinstance(op, AnyReductionOperation):
        return prim.BitwiseOr
    if isinstance(op, AllReductionOperation):
        return prim.BitwiseAnd
    return None


def _is_float(dtype: LoopyType) -> bool:
    return getattr(dtype, "numpy_dtype", None) is not None \
        and dtype.numpy_dtype.kind == "f"


@dataclass(frozen=True)
class _LaneInames:
    """The inames replacing a reduction iname ``j`` split into lanes:
    ``j = K*step + lanes*block + lane`` (``K = lanes*blocks``; no *block*
    where *blocks* is 1), *lane0* and *rest* those of the accumulators'
    init (``[0, K)``) and combination (``[1, K)``)."""

    lane0: str
    lane: str
    step: str
    rest: str
    block: str | None
    blocks: int


class _Lanes:
    """Which reductions of a kernel get interleaved accumulators, and the
    kernel's domains and inames for them."""

    def __init__(self, kernel: lp.LoopKernel, lanes: int,
                 min_extent: int, uses: dict[str, int],
                 blocks: int = 1) -> None:
        self.kernel = kernel
        self.lanes = lanes
        #: blocks of lanes of floating-point reductions whose steps cover
        #: their extent exactly
        self.blocks = blocks
        self.min_extent = min_extent
        #: how many instructions use each iname (loops and reductions)
        self.uses = uses
        self.new_domains: list[isl.BasicSet] = []
        self.dropped: set[int] = set()
        self.unrolled: list[str] = []
        self.rolled: list[str] = []
        #: the lanes of steps that cover a constant extent exactly
        self.boxes: set[str] = set()
        self.priorities: list[tuple[str, str]] = []

    def split(self, iname: str, names: Callable[[str], str],
              outer: tuple[str, ...] = (), blocks: int = 1
              ) -> _LaneInames | None:
        """The new inames replacing the reduction iname *iname*, with
        their domains recorded, or None where *iname* keeps one
        accumulator: a short or shared iname, or one whose domain holds
        other inames. *blocks* blocks of lanes where the steps cover the
        constant extent exactly, else one."""
        kernel = self.kernel
        if self.lanes < 2 or self.uses.get(iname, 0) != 1:
            return None
        home = kernel.get_home_domain_index(iname)
        dom = kernel.domains[home]
        if home in self.dropped \
                or dom.get_var_names(isl.dim_type.set) != [iname]:
            return None
        params = dom.get_var_names(isl.dim_type.param)
        if any(p in kernel.inames for p in params):
            return None
        try:
            length: int | None = int(kernel.get_constant_iname_length(iname))
        except Exception:
            length = None
        if length is not None and length < self.min_extent:
            return None
        lanes = self.lanes
        if blocks > 1 and (length is None or length % (lanes * blocks)):
            blocks = 1
        k = lanes * blocks
        lane0, lane, step, rest = (
            names(f"{iname}_lane0"), names(f"{iname}_lane"),
            names(f"{iname}_step"), names(f"{iname}_lanes"))
        block = names(f"{iname}_block") if blocks > 1 else None
        if dom.get_tuple_name():
            dom = dom.set_tuple_name(None)
        space = ", ".join(params)
        dims = [lane, step] if block is None else [lane, block, step]
        flat = f"{k}*{step} + {lane}" if block is None \
            else f"{k}*{step} + {lanes}*{block} + {lane}"
        ma = isl.MultiAff(f"[{space}] -> {{ [{', '.join(dims)}] -> "
                          f"[{flat}] }}")
        joint = dom.align_params(ma.get_space().params()) \
            .preimage_multi_aff(ma)
        for i, name in enumerate(dims):
            joint = joint.set_dim_name(isl.dim_type.set, i, name)
        block_range = "" if block is None \
            else f" and 0 <= {block} < {blocks}"
        box = isl.BasicSet(f"[{space}] -> {{ [{', '.join(dims)}] : "
                           f"0 <= {lane} < {lanes}{block_range} "
                           f"and {step} >= 0 }}")
        joint = (joint & box.align_params(joint.get_space().params())) \
            .remove_redundancies()
        self.new_domains.append(joint)
        self.new_domains.append(
            isl.BasicSet(f"{{ [{lane0}] : 0 <= {lane0} < {k} }}"))
        self.new_domains.append(
            isl.BasicSet(f"{{ [{rest}] : 1 <= {rest} < {k} }}"))
        self.dropped.add(home)
        self.unrolled.extend((lane0, lane, rest))
        if length is not None and length % k == 0:
            self.boxes.add(lane)
        # the lanes inside the blocks inside the steps, inside the
        # reduction's other inames (its order: the innermost iname is the
        # contiguous one)
        if block is None:
            self.priorities.append((*outer, step, lane))
        else:
            self.unrolled.append(block)
            self.priorities.append((*outer, step, block, lane))
        return _LaneInames(lane0, lane, step, rest, block, blocks)

    def keep_loop(self, lane: str) -> None:
        """Leave the lane iname *lane* a loop (not unrolled)."""
        self.unrolled.remove(lane)
        self.rolled.append(lane)

    def apply(self, kernel: lp.LoopKernel) -> lp.LoopKernel:
        """*kernel* (with the new instructions) with the domains and
        inames of the split reductions."""
        if not self.new_domains:
            return kernel
        domains = [d for j, d in enumerate(kernel.domains)
                   if j not in self.dropped] + self.new_domains
        unrolled = frozenset({UnrollTag()})
        inames = {**kernel.inames, **{
            name: Iname(name, unrolled) for name in self.unrolled},
            **{name: Iname(name, frozenset()) for name in self.rolled}}
        return kernel.copy(
            domains=domains, inames=inames,
            loop_priority=kernel.loop_priority | frozenset(self.priorities))


def realize_sequential_reductions(t_unit: lp.TranslationUnit,
                                  insn_ids: frozenset[str] | None = None,
                                  *, lanes: int = 1,
                                  min_lane_extent: int = 64,
                                  lane_blocks: int = 1,
                                  ) -> tuple[lp.TranslationUnit,
                                             dict[str, list[str]]]:
    """Rewrite the sequential reductions of *t_unit*'s entrypoint kernel
    into accumulator instructions (see the module documentation), in one
    pass over the kernel.

    :arg insn_ids: only instructions with these ids (all if None).
    :arg lanes: the number of interleaved accumulators of long reductions
        (1: one accumulator each).
    :arg min_lane_extent: the least constant extent of the innermost
        reduction iname for which *lanes* accumulators are used.
    :arg lane_blocks: the number of blocks of *lanes* accumulators of
        floating-point reductions whose steps cover their constant extent
        exactly (each block a loop over its lanes, the blocks unrolled).
    :returns: the new translation unit, and for each rewritten instruction
        the ids of the instructions added for it (they run in the same
        loop nest and before it).
    """

    kernel = t_unit.default_entrypoint
    type_reader = TypeReader(kernel, t_unit.callables_table)
    names = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    new_insns: list[lp.InstructionBase] = []
    new_temps = dict(kernel.temporary_variables)
    added: dict[str, list[str]] = {}
    red_inames = {insn.id: _reduction_inames(insn)
                  for insn in kernel.instructions
                  if isinstance(insn, lp.Assignment)}
    uses: dict[str, int] = {}
    if lanes > 1:
        counter = _InameUses(uses)
        for insn in kernel.instructions:
            for name in insn.within_inames:
                uses[name] = uses.get(name, 0) + 1
            if red_inames.get(insn.id):
                counter(insn.expression)
    lane_plan = _Lanes(kernel, lanes, min_lane_extent, uses, lane_blocks)
    for insn in kernel.instructions:
        if (not isinstance(insn, lp.Assignment)
                or (insn_ids is not None and insn.id not in insn_ids)
                or not red_inames[insn.id]):
            new_insns.append(insn)
            continue
        realizer = _Realizer(kernel, t_unit, type_reader, insn, names, ids,
                             lane_plan)
        expr = realizer(insn.expression)
        if not realizer.new_insns:
            new_insns.append(insn)
            continue
        new_insns.extend(realizer.new_insns)
        new_temps.update(realizer.new_temps)
        new_insns.append(insn.copy(
            expression=expr,
            depends_on=insn.depends_on | frozenset(realizer.update_ids)))
        added[insn.id] = [i.id for i in realizer.new_insns]
    if not added:
        return t_unit, added
    kernel = kernel.copy(instructions=new_insns, temporary_variables=new_temps)
    return t_unit.with_kernel(lane_plan.apply(kernel)), added


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
