"""Sequential reductions as explicit accumulator loops.

:mod:`loopy` turns each :class:`loopy.symbolic.Reduction` into instructions
during preprocessing (``realize_reduction``), rebuilding the whole kernel
once per reduction, so that a kernel with thousands of reductions takes
time quadratic in its size (42 s of loopy preprocessing for the 483
reductions of a 10^4-node graph). The default schedule does the same
rewrite itself for the reductions that run sequentially inside a
work-item, all of them in one pass over the kernel:

.. code-block:: text

    out[i] = f(sum_j g(i, j))      -->      acc = 0                  (init)
                                            acc = acc + g(i, j)      (loop j)
                                            out[i] = f(acc)

``acc`` is a scalar in private memory (a register) of the reduction's
result type; the update uses the reduction operation itself (so
:mod:`numpy`'s NaN semantics of max/min are kept). Reductions are left to
:mod:`loopy` when they run in parallel (a reduction iname carries a tag),
contain another reduction, sit in a branch of a conditional expression
or inside a substitution rule, need a
callable of the target (integer max/min), combine several values
(argmax), or when the type of the reduced expression cannot be read off
the kernel.

.. autofunction:: realize_sequential_reductions
"""

from __future__ import annotations

from typing import Any

import loopy as lp
import pymbolic.primitives as prim
from loopy.symbolic import (
    IdentityMapper as _LoopyIdentityMapper,
    Reduction as LoopyReduction,
    WalkMapper as _LoopyWalkMapper,
)


__all__ = ["realize_sequential_reductions"]


class _HasReduction(_LoopyWalkMapper):
    found = False

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> None:
        self.found = True


def _contains_reduction(expr: Any) -> bool:
    w = _HasReduction()
    w(expr)
    return w.found


class _Realizer(_LoopyIdentityMapper):
    """Replaces the realizable reductions of one instruction by their
    accumulators, collecting the new instructions and temporaries."""

    def __init__(self, kernel: lp.LoopKernel, t_unit: lp.TranslationUnit,
                 type_reader: Any, insn: lp.Assignment,
                 names: Any, ids: Any) -> None:
        super().__init__()
        self.kernel = kernel
        self.t_unit = t_unit
        self.type_reader = type_reader
        self.insn = insn
        self.names = names
        self.ids = ids
        self.new_insns: list[lp.Assignment] = []
        self.new_temps: dict[str, lp.TemporaryVariable] = {}
        self.update_ids: list[str] = []

    def _realizable_dtype(self, expr: LoopyReduction) -> Any:
        from loopy.library.reduction import ScalarReductionOperation
        if not isinstance(expr.operation, ScalarReductionOperation):
            return None
        if any(self.kernel.iname_tags(i) for i in expr.inames):
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

    def map_if(self, expr: prim.If, *args: Any) -> Any:
        # a reduction in a branch runs only where its branch is taken (its
        # reads may be out of bounds elsewhere): loopy's job
        return prim.If(self.rec(expr.condition), expr.then, expr.else_)

    def map_reduction(self, expr: LoopyReduction, *args: Any) -> Any:
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
        self.new_temps[acc.name] = lp.TemporaryVariable(
            acc.name, acc_dtype, shape=(),
            address_space=lp.AddressSpace.PRIVATE)
        init_id = self.ids(f"{self.insn.id}_{acc.name}_init")
        update_id = self.ids(f"{self.insn.id}_{acc.name}_update")
        within = self.insn.within_inames
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


def realize_sequential_reductions(t_unit: lp.TranslationUnit,
                                  insn_ids: frozenset[str] | None = None
                                  ) -> tuple[lp.TranslationUnit,
                                             dict[str, list[str]]]:
    """Rewrite the sequential reductions of *t_unit*'s entrypoint kernel
    into accumulator instructions (see the module documentation), in one
    pass over the kernel.

    :arg insn_ids: only instructions with these ids (all if None).
    :returns: the new translation unit, and for each rewritten instruction
        the ids of the instructions added for it (they run in the same
        loop nest and before it).
    """
    from loopy.type_inference import TypeReader

    kernel = t_unit.default_entrypoint
    type_reader = TypeReader(kernel, t_unit.callables_table)
    names = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    new_insns: list[Any] = []
    new_temps = dict(kernel.temporary_variables)
    added: dict[str, list[str]] = {}
    for insn in kernel.instructions:
        if (not isinstance(insn, lp.Assignment)
                or (insn_ids is not None and insn.id not in insn_ids)
                or not insn.reduction_inames()):
            new_insns.append(insn)
            continue
        realizer = _Realizer(kernel, t_unit, type_reader, insn, names, ids)
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
    return t_unit.with_kernel(kernel), added
