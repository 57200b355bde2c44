"""Layouts of reductions for CPUs.

On CPUs a work-item is a loop iteration of a thread, and PoCL vectorizes
across the work-items of a group along ``l.0``: a reduction is fast when
each work-item streams contiguous memory into several independent
accumulators. These transforms give the default schedule
(:mod:`pytato.target.loopy.schedule.default`) such layouts:

* Full reductions are cut into contiguous parts by
  :func:`split_reduction_parts`, each reduced by one work-item.
* A reduction along a strided axis whose outputs run along the contiguous
  one (``sum(x, axis=0)``) is computed by blocks of whole rows, each added
  into a row of accumulators, as numpy does
  (:func:`split_reduction_row_blocks`, with the operations of
  :func:`row_block_operations`).
* A reduction along the contiguous axis with many outputs (row sums, a
  matvec) may reduce several consecutive outputs side by side in each
  work-item (:func:`split_reduction_row_tiles`).

.. autofunction:: split_reduction_parts
.. autofunction:: split_reduction_row_blocks
.. autofunction:: row_block_operations
.. autofunction:: split_reduction_row_tiles
"""

from __future__ import annotations

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import Iname, UnrollTag
from loopy.library.reduction import ReductionOperation, ScalarReductionOperation
from loopy.symbolic import (
    Reduction as LoopyReduction,
    SubstitutionMapper,
)
from loopy.target import TargetBase
from loopy.translation_unit import CallablesTable
from loopy.types import LoopyType
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import Expression

from pytato.target.loopy.schedule.analysis import box_extent
from pytato.target.loopy.schedule.reductions import (
    _chosen_iname,
    _reduction_with_outputs,
    _ReplaceReduction,
    _stage_names,
    _steps_of,
    _tag_outputs,
    _the_reduction,
    _with_stages,
)
from pytato.tuning import record_defaults


__all__ = [
    "row_block_operations",
    "split_reduction_parts",
    "split_reduction_row_blocks",
    "split_reduction_row_tiles",
]


# {{{ full reductions in contiguous parts (CPUs)

def split_reduction_parts(kernel: lp.LoopKernel, insn_id: str, *,
                          num_parts: int, group_size: int,
                          iname: str | None = None) -> lp.LoopKernel:
    """Compute the reduction of the instruction *insn_id*, a full
    reduction or one with few outputs, in two stages, for CPUs:

    * **Stage 1.** Work-item ``p`` (``0 <= p < num_parts``, split by
      *group_size* onto ``g.0``/``l.0``) reduces the contiguous part ``r =
      p*m + t``, ``0 <= t < m`` of the reduction iname *iname* (``m =
      n / num_parts`` for its extent ``n``, which *num_parts* must
      divide), together with the other inames of the reduction, into
      ``partial[p, outputs...]``, a new global temporary (for each output
      in turn: duplicates of the output inames are sequential loops in
      each work-item). The reduction over ``t`` and
      the other inames is left sequential (the default schedule gives it
      interleaved accumulators: :mod:`pytato.target.loopy.schedule.accumulators`): a
      work-item reads consecutive addresses, which a CPU's compiler can
      vectorize within the work-item, while a tree across work-items (as
      in :func:`split_reduction_two_stage`) keeps each work-item's loop a
      scalar chain of dependent updates.
    * **Stage 2.** After a global barrier, the instruction *insn_id*
      reduces ``partial`` sequentially (one work-item, looping over the
      outputs).

    :arg iname: the reduction iname to cut into parts (by default the
        first one of the reduction); its domain must be ``0 <= iname < n``
        with *num_parts* dividing the constant ``n``.
    :returns: the new kernel: stage 1 is the instruction
        ``<insn_id>_stage1``, writing ``<assignee>_partial``; a global
        barrier ``<insn_id>_parts_barrier`` follows; *insn_id* keeps its id
        and becomes stage 2.
    """
    if num_parts < 1 or group_size < 1:
        raise ValueError("num_parts and group_size must be positive")
    insn, out_name, out_inames, red = _the_reduction(kernel, insn_id)
    if out_inames and kernel.get_inames_domain(
            frozenset(out_inames)).is_empty():
        # no outputs
        return kernel
    iname = _chosen_iname(red, iname, default=0)
    n = box_extent(kernel, iname)
    if n is None or n % num_parts:
        raise ValueError(f"the extent of '{iname}' must be a constant "
                         f"multiple of num_parts ({num_parts})")
    m = n // num_parts

    vng = kernel.get_var_name_generator()
    (r_p, r_t, p_c), partial, stage1_id, barrier_id = _stage_names(
        kernel, vng, iname, out_name, insn_id, ("part", "t", "pc"), "parts")

    flat = prim.Variable(r_p) * m + prim.Variable(r_t) if m > 1 \
        else prim.Variable(r_p)
    seq_inames, inner_expr = _steps_of(red, iname, flat, (r_t,))
    if m == 1:
        seq_inames = tuple(i for i in seq_inames if i != r_t)
    stage1_red: Expression = (LoopyReduction(red.operation, seq_inames, inner_expr,
                                      allow_simultaneous=False)
                       if seq_inames else inner_expr)
    stage2_red = LoopyReduction(
        red.operation, (p_c,),
        prim.Subscript(prim.Variable(partial), (
            prim.Variable(p_c), *(prim.Variable(i) for i in out_inames))),
        allow_simultaneous=False)
    new_domains = [
        isl.BasicSet(f"{{ [{r_p}] : 0 <= {r_p} < {num_parts} }}"),
        isl.BasicSet(f"{{ [{p_c}] : 0 <= {p_c} < {num_parts} }}")]
    if m > 1:
        new_domains.append(isl.BasicSet(f"{{ [{r_t}] : 0 <= {r_t} < {m} }}"))
    kernel = _with_stages(
        kernel, insn, red, iname, out_name=out_name, out_inames=out_inames,
        partial=partial, part=r_p, num_parts=num_parts,
        stage1_red=stage1_red, stage2_red=stage2_red, stage1_id=stage1_id,
        barrier_id=barrier_id, new_domains=new_domains)
    if out_inames:
        kernel = lp.duplicate_inames(
            kernel, out_inames, within=f"id:{stage1_id}",
            new_inames=[vng(f"{i}_s1") for i in out_inames])
    return lp.split_iname(kernel, r_p, min(group_size, num_parts),
                          outer_tag="g.0", inner_tag="l.0")

# }}}


# {{{ column reductions by blocks of whole rows (CPUs)

def row_block_operations(operation: ReductionOperation, dtype: LoopyType,
                         callables_table: CallablesTable, target: TargetBase
                         ) -> tuple[LoopyType, Expression] | None:
    """The accumulator type and neutral element of the reduction operation
    *operation* over elements of type *dtype*, for
    :func:`split_reduction_row_blocks`; None where the operation is not a
    scalar one whose neutral element and update need no callable of the
    target (integer max/min, argmax: left to other schedules)."""
    if not isinstance(operation, ScalarReductionOperation):
        return None
    try:
        acc_dtype, = operation.result_dtypes(dtype)
        neutral, t1 = operation.neutral_element(
            acc_dtype, callables_table=callables_table, target=target)
        _, t2 = operation([acc_dtype], prim.Variable("_pt_a"),
                          prim.Variable("_pt_b"),
                          callables_table=callables_table, target=target)
    except Exception:
        return None
    if t1 is not callables_table or t2 is not callables_table:
        return None
    return acc_dtype, neutral


def _operations(kernel: lp.LoopKernel, insn_id: str, red: LoopyReduction,
                dtype: LoopyType, callables_table: CallablesTable
                ) -> tuple[LoopyType, Expression]:
    """:func:`row_block_operations` of the reduction *red* of *insn_id*.

    :raises ValueError: if the operation needs a callable.
    """
    ops = row_block_operations(red.operation, dtype, callables_table,
                               kernel.target)
    if ops is None:
        raise ValueError(f"instruction '{insn_id}': the reduction "
                         f"operation '{red.operation}' needs a callable")
    return ops


def split_reduction_row_blocks(kernel: lp.LoopKernel, insn_id: str, *,
                               num_blocks: int, dtype: LoopyType,
                               callables_table: CallablesTable,
                               group_size: int,
                               iname: str | None = None) -> lp.LoopKernel:
    """Compute the reduction of the instruction *insn_id* along a strided
    axis, with outputs along the contiguous one (``sum(x, axis=0)``), the
    way numpy does on a CPU: by adding whole rows into a row of
    accumulators.

    * **Stage 1.** Work-group ``b`` (``g.0``, one work-item,
      ``0 <= b < num_blocks``) owns the rows ``r = b*m + t``, ``0 <= t <
      m`` of the reduction iname *iname* (``m = n / num_blocks`` for its
      extent ``n``, which *num_blocks* must divide). It sets
      ``partial[b, j...]`` (a new global temporary, one row of
      accumulators per block) to the neutral element, then for each of its
      rows in turn, updates ``partial[b, j...]`` with the row's element for
      every output ``j...`` (loops in this order): the inner loop reads and
      writes consecutive addresses, which a CPU compiler vectorizes, and
      each block streams through its rows while its row of accumulators
      stays in cache.
    * **Stage 2.** After a global barrier, the instruction *insn_id*
      reduces ``partial`` over the blocks into a private accumulator (new
      instructions ``<insn_id>_acc_..._init`` and ``..._update``: a
      sequential loop in each work-item), its outputs mapped onto
      ``g.0``/``l.0`` by groups of *group_size* (see
      :func:`split_reduction_columns`).

    A work-item that walked a column (the chunks of
    :func:`split_reduction_columns`) read one element per cache line and
    per row; on PoCL, whose compiler vectorizes across the work-items of a
    group only where a loop has no iterations in the work-items, that
    kernel stayed much slower than numpy.

    :arg dtype: the type of the reduced expression (the accumulators get
        the operation's result type for it).
    :arg callables_table: the translation unit's callables table (for the
        reduction operation's expressions).
    :arg iname: the reduction iname (by default the first one); it must be
        the reduction's only iname, with a domain ``0 <= iname < n`` of its
        own, *num_blocks* dividing the constant ``n``.
    :returns: the new kernel: stage 1 is the instructions
        ``<insn_id>_stage1_init`` and ``<insn_id>_stage1``, writing
        ``<assignee>_partial``; a global barrier
        ``<insn_id>_row_blocks_barrier`` follows; *insn_id* keeps its id
        and becomes stage 2. If the output domain is empty, the kernel is
        returned unchanged.
    """
    if num_blocks < 1 or group_size < 1:
        raise ValueError("num_blocks and group_size must be positive")
    found = _reduction_with_outputs(kernel, insn_id, "split_reduction_parts")
    if found is None:
        return kernel
    insn, out_name, out_inames, red = found
    iname = _chosen_iname(red, iname, default=0)
    if len(red.inames) != 1:
        raise ValueError(f"instruction '{insn_id}': the reduction must have "
                         f"one iname, not {len(red.inames)}")
    n = box_extent(kernel, iname)
    if n is None or n % num_blocks:
        raise ValueError(f"the extent of '{iname}' must be a constant "
                         f"multiple of num_blocks ({num_blocks})")
    acc_dtype, neutral = _operations(kernel, insn_id, red, dtype,
                                     callables_table)
    m = n // num_blocks

    vng = kernel.get_var_name_generator()
    ing = kernel.get_instruction_id_generator()
    (r_b, r_t, p_c), partial, stage1_id, barrier_id = _stage_names(
        kernel, vng, iname, out_name, insn_id, ("block", "t", "pc"),
        "row_blocks")
    init_id = ing(f"{stage1_id}_init")
    dup_init = [vng(f"{i}_s0") for i in out_inames]
    dup_upd = [vng(f"{i}_s1") for i in out_inames]

    def elem(inames: list[str]) -> prim.Subscript:
        return prim.Subscript(prim.Variable(partial), (
            prim.Variable(r_b), *(prim.Variable(i) for i in inames)))

    row = prim.Variable(r_b) * m + prim.Variable(r_t) if m > 1 \
        else prim.Variable(r_b)
    body = SubstitutionMapper(make_subst_func({
        iname: row, **{o: prim.Variable(d)
                       for o, d in zip(out_inames, dup_upd, strict=True)}}))(
                           red.expr)
    update, _ = red.operation([acc_dtype], elem(dup_upd), body,
                              callables_table=callables_table,
                              target=kernel.target)
    init = lp.Assignment(
        elem(dup_init), neutral, id=init_id, depends_on=insn.depends_on,
        within_inames=frozenset({r_b, *dup_init}), tags=insn.tags)
    stage1 = lp.Assignment(
        elem(dup_upd), update, id=stage1_id,
        depends_on=insn.depends_on | {init_id},
        within_inames=frozenset({r_b, *dup_upd} | ({r_t} if m > 1 else set())),
        # a block's row is written and read by its one work-item only
        no_sync_with=frozenset({(init_id, "any"), (stage1_id, "any")}),
        tags=insn.tags)
    barrier = lp.BarrierInstruction(
        id=barrier_id, synchronization_kind="global", mem_kind="global",
        depends_on=frozenset({stage1_id}), within_inames=frozenset())
    # stage 2: the blocks' rows reduced into a private accumulator, first
    # set to block 0's row after the barrier (an accumulator set without
    # dependencies could be placed in the kernel of stage 1)
    acc = prim.Variable(vng(f"acc_{p_c}"))
    acc_init_id = ing(f"{insn_id}_{acc.name}_init")
    acc_update_id = ing(f"{insn_id}_{acc.name}_update")

    def block_row(b: Expression) -> prim.Subscript:
        return prim.Subscript(prim.Variable(partial), (
            b, *(prim.Variable(i) for i in out_inames)))

    combine, _ = red.operation([acc_dtype], acc, block_row(prim.Variable(p_c)),
                               callables_table=callables_table,
                               target=kernel.target)
    within = insn.within_inames
    acc_init = lp.Assignment(
        acc, block_row(0), id=acc_init_id, within_inames=within,
        depends_on=frozenset({barrier_id}), predicates=insn.predicates)
    acc_update = lp.Assignment(
        acc, combine, id=acc_update_id, within_inames=within | {p_c},
        depends_on=frozenset({acc_init_id}), predicates=insn.predicates)
    stage2 = insn.copy(
        expression=_ReplaceReduction(red, acc)(insn.expression),
        depends_on=frozenset({barrier_id, acc_update_id}))
    acc_temp = lp.TemporaryVariable(acc.name, acc_dtype, shape=(),
                                    address_space=lp.AddressSpace.PRIVATE)
    out_shape = tuple(kernel.get_var_descriptor(out_name).shape)
    temp = lp.TemporaryVariable(
        partial, dtype=acc_dtype, shape=(num_blocks, *out_shape),
        address_space=lp.AddressSpace.GLOBAL)

    # the output inames' domains, copied for the duplicates
    out_dom = kernel.get_inames_domain(frozenset(out_inames))
    out_dom = out_dom.project_out_except(out_inames, [isl.dim_type.set])
    new_domains = [
        isl.BasicSet(f"{{ [{r_b}] : 0 <= {r_b} < {num_blocks} }}"),
        isl.BasicSet(f"{{ [{p_c}] : 1 <= {p_c} < {num_blocks} }}")]
    if m > 1:
        new_domains.append(isl.BasicSet(f"{{ [{r_t}] : 0 <= {r_t} < {m} }}"))
    for dups in (dup_init, dup_upd):
        dom = out_dom
        for old, new in zip(out_inames, dups, strict=True):
            dom = dom.set_dim_name(
                isl.dim_type.set,
                dom.get_var_names(isl.dim_type.set).index(old), new)
        new_domains.extend(dom.get_basic_sets())

    insns = [stage2 if i.id == insn.id else i for i in kernel.instructions]
    domains = list(kernel.domains)
    inames = dict(kernel.inames)
    if not any(iname in i.within_inames or iname in i.reduction_inames()
               for i in kernel.instructions if i.id != insn.id):
        home = kernel.get_home_domain_index(iname)
        if domains[home].get_var_names(isl.dim_type.set) == [iname]:
            del domains[home]
        inames.pop(iname, None)
    for name in (r_b, r_t, p_c, *dup_init, *dup_upd):
        if name != r_t or m > 1:
            inames[name] = Iname(name, frozenset())
    kernel = kernel.copy(
        instructions=[*insns, init, stage1, barrier, acc_init, acc_update],
        domains=[*domains, *new_domains], inames=inames,
        temporary_variables={**kernel.temporary_variables, temp.name: temp,
                             acc.name: acc_temp},
        silenced_warnings=frozenset(kernel.silenced_warnings | {
            f"write_race({insn.id})"}))
    if m > 1:
        kernel = lp.prioritize_loops(kernel, (r_t, *dup_upd))
    kernel = lp.tag_inames(kernel, {r_b: "g.0"})
    return _tag_outputs(kernel, list(out_inames), group_size, "g.1")

# }}}


# {{{ rows reduced side by side in a work-item (CPUs)

def split_reduction_row_tiles(kernel: lp.LoopKernel, insn_id: str, *,
                              rows: int, lanes: int, group_size: int,
                              dtype: LoopyType,
                              callables_table: CallablesTable
                              ) -> lp.LoopKernel:
    """Compute the reduction of the instruction *insn_id*, one output iname
    ``i`` of constant extent (a multiple of *rows*) and one reduction iname
    ``j`` along the contiguous axis (row sums, a matvec), with each
    work-item reducing *rows* consecutive outputs side by side, for CPUs:
    ``i = rows*o + r``, ``o`` mapped onto ``g.0``/``l.0`` by groups of
    *group_size*; ``j = lanes*s + q``, each output ``r`` with its own
    *lanes* accumulators ``acc_r[q]``, all updated in one loop over
    ``q`` (which a CPU compiler vectorizes) inside the loop over the steps
    ``s``. Operands that do not depend on ``i`` (the vector of a matvec)
    are read once for the *rows* outputs, and the *rows* chains of vector
    updates are independent.

    :arg dtype: the type of the reduced expression.
    :returns: the new kernel: instructions ``<insn_id>_r<r>_init``,
        ``..._update``, ``..._combine`` and ``..._store`` for each ``r``;
        the store of the last output of each work-item keeps the id
        *insn_id* and depends on the other stores.
    """
    if rows < 1 or lanes < 1 or group_size < 1:
        raise ValueError("rows, lanes and group_size must be positive")
    insn, _, out_inames, red = _the_reduction(kernel, insn_id)
    if len(out_inames) != 1 or len(red.inames) != 1:
        raise ValueError(f"instruction '{insn_id}': one output iname and one "
                         "reduction iname expected")
    (out_iname,), (red_iname,) = out_inames, red.inames
    n_out, n_red = box_extent(kernel, out_iname), box_extent(kernel, red_iname)
    if n_out is None or n_red is None or n_out % rows or n_red % lanes:
        raise ValueError(f"instruction '{insn_id}': the extents must be "
                         f"constant multiples of rows ({rows}) and lanes "
                         f"({lanes})")
    acc_dtype, neutral = _operations(kernel, insn_id, red, dtype,
                                     callables_table)
    if any(red_iname in i.within_inames or red_iname in i.reduction_inames()
           or out_iname in i.within_inames
           for i in kernel.instructions if i.id != insn_id):
        raise ValueError(f"instruction '{insn_id}': its inames are shared")

    vng = kernel.get_var_name_generator()
    ing = kernel.get_instruction_id_generator()
    o = vng(f"{out_iname}_tile")
    step, lane, lane0, rest = (vng(f"{red_iname}_step"),
                               vng(f"{red_iname}_lane"),
                               vng(f"{red_iname}_lane0"),
                               vng(f"{red_iname}_lanes"))
    flat = lanes * prim.Variable(step) + prim.Variable(lane)
    q = prim.Variable(lane)
    new_insns: list[lp.InstructionBase] = []
    temps = dict(kernel.temporary_variables)
    stores = []
    for r in range(rows):
        row = rows * prim.Variable(o) + r
        acc = prim.Variable(vng(f"acc_{red_iname}_r{r}"))
        temps[acc.name] = lp.TemporaryVariable(
            acc.name, acc_dtype, shape=(lanes,),
            address_space=lp.AddressSpace.PRIVATE)
        body = SubstitutionMapper(make_subst_func(
            {red_iname: flat, out_iname: row}))(red.expr)
        update, _ = red.operation([acc_dtype], acc[q], body,
                                  callables_table=callables_table,
                                  target=kernel.target)
        combine, _ = red.operation([acc_dtype], acc[0],
                                   acc[prim.Variable(rest)],
                                   callables_table=callables_table,
                                   target=kernel.target)
        base = f"{insn_id}_r{r}"
        init_id, update_id = ing(f"{base}_init"), ing(f"{base}_update")
        combine_id = ing(f"{base}_combine")
        store_id = insn_id if r == rows - 1 else ing(f"{base}_store")
        new_insns.append(lp.Assignment(
            acc[prim.Variable(lane0)], neutral, id=init_id,
            within_inames=frozenset({o, lane0}), depends_on=frozenset()))
        new_insns.append(lp.Assignment(
            acc[q], update, id=update_id,
            within_inames=frozenset({o, step, lane}),
            depends_on=insn.depends_on | {init_id}))
        new_insns.append(lp.Assignment(
            acc[0], combine, id=combine_id,
            within_inames=frozenset({o, rest}),
            depends_on=frozenset({update_id})))
        result = _ReplaceReduction(red, acc[0])(insn.expression)
        result = SubstitutionMapper(make_subst_func({out_iname: row}))(
            result)
        assignee = SubstitutionMapper(make_subst_func({out_iname: row}))(
            insn.assignee)
        deps = frozenset({combine_id})
        if r == rows - 1:
            deps = deps | frozenset(stores)
        new_insns.append(insn.copy(
            id=store_id, assignee=assignee, expression=result,
            within_inames=frozenset({o}), depends_on=deps))
        stores.append(store_id)

    # (box_extent: both inames have a box domain of their own)
    homes = {kernel.get_home_domain_index(out_iname),
             kernel.get_home_domain_index(red_iname)}
    domains = [d for k, d in enumerate(kernel.domains) if k not in homes]
    domains += [
        isl.BasicSet(f"{{ [{o}] : 0 <= {o} < {n_out // rows} }}"),
        isl.BasicSet(f"{{ [{step}, {lane}] : 0 <= {step} < {n_red // lanes} "
                     f"and 0 <= {lane} < {lanes} }}"),
        isl.BasicSet(f"{{ [{lane0}] : 0 <= {lane0} < {lanes} }}"),
        isl.BasicSet(f"{{ [{rest}] : 1 <= {rest} < {lanes} }}")]
    unrolled = frozenset({UnrollTag()})
    inames = {k: v for k, v in kernel.inames.items()
              if k not in (out_iname, red_iname)}
    inames.update({o: Iname(o, frozenset()), step: Iname(step, frozenset()),
                   lane: Iname(lane, frozenset()),
                   lane0: Iname(lane0, unrolled),
                   rest: Iname(rest, unrolled)})
    kernel = kernel.copy(
        instructions=[i for i in kernel.instructions if i.id != insn_id]
        + new_insns,
        domains=domains, inames=inames, temporary_variables=temps,
        loop_priority=kernel.loop_priority | frozenset({(step, lane)}))
    return lp.split_iname(kernel, o, group_size, outer_tag="g.0",
                          inner_tag="l.0")

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
