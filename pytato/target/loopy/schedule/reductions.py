"""Two-stage parallel reductions.

A reduction with few outputs (e.g. the sum of all elements of an array) has
too little output parallelism to occupy a device. :func:`split_reduction_two_stage`
rewrites the instruction computing it into two stages, separated by a
global barrier (so that :mod:`loopy` emits them as two device kernels):

* **Stage 1.** Work-group ``g`` (``g.0``, ``0 <= g < num_groups``) with
  work-items ``l`` (``l.0``, ``0 <= l < group_size``) reduces the elements
  ``r = ((s*num_groups + g)*chunk + c)*group_size + l`` for
  ``c = 0, ..., chunk - 1`` and ``s = 0, 1, ...`` (sequential in each
  work-item): the groups take turns over runs of ``chunk*group_size``
  contiguous elements, in which consecutive work-items read consecutive
  elements (coalesced). By default, for a constant extent, ``chunk`` makes
  one run per group (a contiguous block: on PoCL, interleaving the groups
  element by element, ``chunk = 1``, was much slower). Then the
  work-items of the group combine their values by a tree reduction in
  local memory, and group ``g`` stores the result in ``partial[g, ...]``, a
  new global temporary.
* **Stage 2.** One work-group of ``group_size`` work-items reduces
  ``partial`` over its first axis the same way (sequential chunks, then a
  tree) and evaluates the original right-hand side with the reduction
  replaced by this result.

Both stages use the reduction operation of the original reduction, so
every operation (sum, product, max and min with :mod:`numpy`'s NaN
semantics, all, any) and dtype is handled. Work-items and groups whose
chunk is empty (the extent is smaller than ``num_groups*group_size``, or
zero) contribute the neutral element of the operation.

Elements outside the domain of the reduction iname (the end of the last
run) are skipped by a guard (a one-point reduction iname whose domain is
empty there).

On NVIDIA's GPUs (where it was verified:
:func:`~pytato.target.loopy.device.single_launch_verified`), the two
stages of a full reduction run in one kernel (*single_launch*): each
group of stage 1 stores its partial result and takes a ticket from a
global counter; the group that takes the last one
computes stage 2, the others skip it. This saves the launch of the second
kernel, a visible part of the time of a sum that takes a few tens of
microseconds on a GPU. The counter is a global temporary tagged
:class:`ZeroedTemporary`: pytato's executors fill it with zeros when they
allocate it, and each launch leaves it zero. A scheduled unit with such
reductions (``prog.program`` of a program generated with ``cl_device=``)
must therefore be run by pytato (its programs, executables and launchers),
not by :mod:`loopy`'s own invoker, which allocates temporaries without
initializing them.

.. autofunction:: split_reduction_two_stage
.. autoclass:: ZeroedTemporary
.. autodata:: DEFAULT_CHUNK

Reductions with many outputs that are still too few to occupy a device one
work-item per output (e.g. ``sum(x, axis=0)`` of a 4096 x 4096 array on a
GPU), or whose reduction axis is strided, are split along the reduction by
:func:`split_reduction_columns`: every output column is cut into chunks
reduced by different work-groups (``g.1``), consecutive work-items taking
consecutive outputs (coalesced loads), then a second kernel reduces the
chunks of each output.

.. autofunction:: split_reduction_columns
.. autodata:: DEFAULT_COLUMN_RUN

A reduction over several axes is first made a reduction over one
(row-major) iname by :func:`flatten_reduction_inames`, so that all of its
elements are shared among the groups, whatever the extents of its axes.
The layouts of reductions on CPUs are in
:mod:`pytato.target.loopy.schedule.cpu_reductions`.

.. autofunction:: flatten_reduction_inames
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.data import Iname, LocalInameTag
from loopy.symbolic import (
    Reduction as LoopyReduction,
    SubstitutionMapper,
)
from pymbolic.mapper.substitutor import make_subst_func
from pymbolic.typing import ArithmeticExpression, Expression
from pytools.tag import Tag, tag_dataclass

from pytato.target.loopy.schedule.analysis import _constant_length, box_extent

# (the names moved to reduction_parts are importable from here as before)
from pytato.target.loopy.schedule.reduction_parts import (  # noqa: F401
    _assignee_inames,
    _chosen_iname,
    _reduction_with_outputs,
    _ReplaceReduction,
    _sequential_domains,
    _stage_names,
    _steps_of,
    _the_reduction,
    _TopLevelReductions,
)
from pytato.tuning import record_defaults


__all__ = [
    "DEFAULT_CHUNK",
    "DEFAULT_COLUMN_RUN",
    "ZeroedTemporary",
    "flatten_reduction_inames",
    "split_reduction_columns",
    "split_reduction_two_stage",
]


def _stage1_domains(kernel: lp.LoopKernel, iname: str, r_g: str, r_l: str,
                    r_s: str, r_c: str, r_d: str, num_groups: int,
                    group_size: int, chunk: int) -> list[isl.BasicSet]:
    """The domains of stage 1, for
    ``r = ((r_s*num_groups + r_g)*chunk + r_c)*group_size + r_l``:

    * the group and local inames, a box (every group and work-item exists
      even where it has nothing to reduce);
    * nested in it, the sequential inames: *r_c* in ``[0, chunk)``, *r_s*
      over the values for which some group and work-item has an element;
    * nested in those, the guard iname *r_d*, 0 where *r* is in the domain
      of *iname*, else empty.

    The guard is a domain of its own because :mod:`loopy` fails on loops
    with piecewise bounds (the ``min`` of two bounds) with this
    :mod:`islpy`.
    """
    flat = (f"(({r_s}*{num_groups} + {r_g})*{chunk} + {r_c})*{group_size} "
            f"+ {r_l}")
    group_dom = isl.BasicSet(
        f"{{ [{r_g}, {r_l}] : 0 <= {r_g} < {num_groups} "
        f"and 0 <= {r_l} < {group_size} }}")
    seq_dom, guard = _sequential_domains(
        kernel, iname, flat, outer=[r_g, r_l],
        outer_ranges=(f"0 <= {r_g} < {num_groups} "
                      f"and 0 <= {r_l} < {group_size}"),
        seq=r_s, inner=r_c, extent=chunk, guard=r_d)
    return [group_dom, seq_dom, guard]


#: The default *chunk* of :func:`split_reduction_two_stage` for reductions
#: of symbolic extent.
DEFAULT_CHUNK = 64


def _default_chunk(kernel: lp.LoopKernel, iname: str, num_groups: int,
                   group_size: int) -> int:
    length = _constant_length(kernel, iname)
    if length is None:
        return DEFAULT_CHUNK
    return max(1, -(-length // (num_groups * group_size)))


@tag_dataclass
class ZeroedTemporary(Tag):
    """Tags a global temporary (of :mod:`loopy`) that must be all zeros
    when a kernel using it starts, and that the kernels using it leave all
    zeros: the ticket counters of single-launch reductions
    (:func:`split_reduction_two_stage` with *single_launch*). Whoever
    allocates such a temporary fills it with zeros once; memory kept
    between calls needs no refill."""


def _ticket_instruction(kernel: lp.LoopKernel, vng: Callable[[str], str],
                        insn_id: str, stage1_id: str, group_iname: str,
                        num_groups: int, tags: frozenset[Any]
                        ) -> tuple[lp.CInstruction, str,
                                   list[lp.TemporaryVariable], str]:
    """The instruction that ends stage 1 of a single-launch reduction in
    each work-group: after the group's partial results are stored, one
    work-item takes a ticket from a global counter (an atomic increment,
    after a global memory fence). The group that takes the last ticket
    resets the counter and computes stage 2 (in the same kernel). A barrier
    with local and global fences follows, so that every work-item of the
    group sees whether its group was last, and the last group sees every
    group's partial results.

    :returns: the instruction, the name of the local flag "this group
        took the last ticket", the new temporaries (the counter, tagged
        :class:`ZeroedTemporary`, and the flag) and a new iname that the
        caller must give a domain and map to ``l.0`` (every work-item runs
        the instruction; one of them takes the ticket)."""
    ticket_id = kernel.get_instruction_id_generator()(f"{insn_id}_ticket")
    counter = vng(f"{insn_id}_tickets")
    last = vng(f"{insn_id}_last_group")
    item = vng(f"{insn_id}_ticket_item")
    code = "\n".join([
        "if (get_local_id(0) == 0 && get_local_id(1) == 0"
        " && get_local_id(2) == 0)",
        "{",
        "  mem_fence(CLK_GLOBAL_MEM_FENCE);",
        f"  {last} = (atomic_inc(&{counter}[0]) == {num_groups - 1}u);",
        f"  if ({last})",
        f"    {counter}[0] = 0u;",
        "  mem_fence(CLK_GLOBAL_MEM_FENCE);",
        "}",
        "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"])
    insn = lp.CInstruction(
        (), code, id=ticket_id,
        read_variables=frozenset({counter}),
        assignees=(prim.Variable(last),
                   prim.Subscript(prim.Variable(counter), (0,))),
        depends_on=frozenset({stage1_id}),
        within_inames=frozenset({group_iname, item}),
        tags=tags)
    temps = [
        lp.TemporaryVariable(counter, dtype=np.uint32, shape=(1,),
                             address_space=lp.AddressSpace.GLOBAL,
                             tags=frozenset({ZeroedTemporary()})),
        lp.TemporaryVariable(last, dtype=np.int32, shape=(),
                             address_space=lp.AddressSpace.LOCAL)]
    return insn, last, temps, item


def _with_stages(kernel: lp.LoopKernel, insn: lp.Assignment,
                 red: LoopyReduction, iname: str, *, out_name: str,
                 out_inames: list[str], partial: str, part: str,
                 num_parts: int, stage1_red: Expression,
                 stage2_red: LoopyReduction, stage1_id: str,
                 barrier_id: str, new_domains: list[isl.BasicSet],
                 single_launch: bool = False,
                 vng: Callable[[str], str] | None = None,
                 group_size: int = 1
                 ) -> lp.LoopKernel:
    """*kernel* with the reduction *red* of the instruction *insn* computed
    in two stages: stage 1 (the new instruction *stage1_id*, within the
    iname *part* and the output inames) writes *stage1_red* to
    ``partial[part, outputs...]`` (a new global temporary of *num_parts*
    parts), a global barrier *barrier_id* follows, and *insn* (stage 2,
    same id) has *red* replaced by *stage2_red*. The domains
    *new_domains* are added; the reduction iname *iname* is dropped (with
    its domain, where it is the domain's only iname) if nothing else uses
    it.

    With *single_launch* (*part* being the group iname ``g.0`` of stage
    1), there is no global barrier: stage 1 ends with a ticket
    (:func:`_ticket_instruction`, *vng* naming its variables) and stage 2
    runs, in the same kernel, in the group that took the last one
    (*group_size* work-items: the ticket's work-item iname is tagged
    ``l.0``)."""
    out_shape: tuple[ArithmeticExpression, ...] = ()
    if out_inames:
        out_shape = tuple(kernel.get_var_descriptor(out_name).shape)
    stage1 = lp.Assignment(
        prim.Subscript(prim.Variable(partial), (
            prim.Variable(part), *(prim.Variable(i) for i in out_inames))),
        stage1_red,
        id=stage1_id,
        depends_on=insn.depends_on,
        within_inames=frozenset({part, *out_inames}),
        tags=insn.tags)
    stage2_expr = _ReplaceReduction(red, stage2_red)(insn.expression)
    new_temps = [lp.TemporaryVariable(
        partial, dtype=None, shape=(num_parts, *out_shape),
        address_space=lp.AddressSpace.GLOBAL)]
    if single_launch:
        assert vng is not None
        sync, last, temps, item = _ticket_instruction(
            kernel, vng, insn.id, stage1_id, part, num_parts, insn.tags)
        new_temps += temps
        new_domains = [*new_domains, isl.BasicSet(
            f"{{ [{item}] : 0 <= {item} < {group_size} }}")]
        item_tag = {item: Iname(item, frozenset({LocalInameTag(0)}))}
        # Stage 2 runs in every group's code, predicated on the flag: the
        # groups that are not last skip it. (They must not read the partial
        # results: on an H100, a group reading them early left stale lines
        # in its compute unit's L1 cache, which another group of that unit,
        # the last one, then read.) The initialization of the neutral
        # element of stage 2's tree inherits the predicate but not the
        # dependencies: the preprocessing orders it after the ticket
        # (:func:`pytato.target.loopy.build.preprocessing
        # .order_after_predicate_writers`).
        stage2 = insn.copy(
            expression=stage2_expr,
            depends_on=frozenset({sync.id, stage1_id}),
            within_inames=insn.within_inames | {part},
            predicates=insn.predicates | {prim.Variable(last)},
            # the ticket's fences and barrier order stage 2 after stage 1
            no_sync_with=insn.no_sync_with | {
                (stage1_id, "global"), (sync.id, "any")})
        silenced = {f"write_race({sync.id})"}
    else:
        sync = lp.BarrierInstruction(
            id=barrier_id, synchronization_kind="global",
            mem_kind="global", depends_on=frozenset({stage1_id}),
            within_inames=frozenset())
        stage2 = insn.copy(expression=stage2_expr,
                           depends_on=frozenset({barrier_id, stage1_id}))
        silenced = set()
        item_tag = {}

    insns = [stage2 if i.id == insn.id else i for i in kernel.instructions]
    domains = list(kernel.domains)
    inames = {**kernel.inames, **item_tag}
    if not any(iname in i.within_inames or iname in i.reduction_inames()
               for i in kernel.instructions if i.id != insn.id):
        home = kernel.get_home_domain_index(iname)
        if domains[home].get_var_names(isl.dim_type.set) == [iname]:
            del domains[home]
        inames.pop(iname, None)
    return kernel.copy(
        instructions=[*insns, stage1, sync],
        domains=[*domains, *new_domains],
        inames=inames,
        temporary_variables={**kernel.temporary_variables,
                             **{t.name: t for t in new_temps}},
        silenced_warnings=frozenset(kernel.silenced_warnings | {
            f"write_race({stage1_id})", f"write_race({insn.id})",
            *silenced}))


def split_reduction_two_stage(kernel: lp.LoopKernel, insn_id: str, *,
                              num_groups: int, group_size: int,
                              iname: str | None = None,
                              chunk: int | None = None,
                              unroll: int = 1,
                              final_group_size: int | None = None,
                              single_launch: bool = False
                              ) -> lp.LoopKernel:
    """Compute the reduction in instruction *insn_id* of *kernel* in two
    stages (see the module documentation).

    :arg insn_id: an :class:`loopy.Assignment` whose assignee is a variable,
        or a variable indexed by distinct inames (the output inames), and
        whose right-hand side contains exactly one reduction that is not
        nested in another one (it may be nested in arithmetic, e.g.
        ``2*sum(...)``; reductions nested in it stay sequential).
    :arg num_groups: the number of work-groups of stage 1.
    :arg group_size: the number of work-items per group, in both stages.
    :arg iname: the reduction iname to parallelize; by default the last one
        of the reduction. Other inames of the reduction are reduced
        sequentially in each work-item. Its domain must involve no other
        iname (its bounds may depend on size parameters).
    :arg chunk: the number of consecutive steps of the work-items of a
        group over contiguous elements: group ``g`` reduces the runs of
        ``chunk*group_size`` elements number ``g``, ``g + num_groups``, ...
        By default, for a constant extent ``N``, ``ceil(N/(num_groups*
        group_size))`` (each group reduces one contiguous block: on a CPU
        much faster than interleaving the groups element-wise), else
        :data:`DEFAULT_CHUNK`.
    :arg unroll: unroll the steps over a run by this factor (when it
        divides *chunk*; else the steps stay a plain loop), so that each
        work-item has several loads in flight.
    :arg final_group_size: the number of work-items of the group of stage
        2 (by default *group_size*; with *single_launch*, at most
        *group_size*).
    :arg single_launch: compute both stages in one kernel: each group of
        stage 1 stores its partial result, then takes a ticket from a
        global counter (an atomic increment); the group that takes the
        last one computes stage 2 and resets the counter. This saves the
        second kernel's launch. The counter is a global
        temporary tagged :class:`ZeroedTemporary`, which its allocator
        must fill with zeros (the kernel leaves it zero); the kernel needs
        OpenCL's 32-bit global atomics (core since OpenCL 1.1). Only for
        reductions without output inames (with them, two kernels).
    :returns: the new kernel. The instruction *insn_id* keeps its id and
        becomes stage 2 (so instructions depending on it still wait for the
        result); it depends on a new global barrier
        (``<insn_id>_two_stage_barrier``) which depends on the new stage-1
        instruction ``<insn_id>_stage1`` which has the original
        instruction's dependencies. Stage 1 is within duplicates of the
        output inames (untagged, as are the output inames in stage 2), and
        writes the new global temporary ``<assignee>_partial`` of shape
        ``(num_groups, *output shape)``. Write races of all work-items of a
        group writing the same reduced value are silenced.
    """
    if final_group_size is None:
        final_group_size = group_size
    if num_groups < 1 or group_size < 1 or final_group_size < 1:
        raise ValueError("num_groups and group sizes must be positive")
    if unroll < 1:
        raise ValueError("unroll must be positive")
    insn, out_name, out_inames, red = _the_reduction(kernel, insn_id)
    iname = _chosen_iname(red, iname, default=-1)
    if out_inames:
        # (stage 2 would be computed by every group, for every output)
        single_launch = False
    if single_launch:
        # (stage 2 runs on the work-items of stage 1's groups)
        final_group_size = min(final_group_size, group_size)

    vng = kernel.get_var_name_generator()
    (r_l, r_g, r_s, r_c, r_d, p_l, p_s), partial, stage1_id, barrier_id = \
        _stage_names(kernel, vng, iname, out_name, insn_id,
                     ("l", "g", "s", "c", "guard", "pl", "ps"), "two_stage")

    # {{{ stage 1: r = ((r_s*num_groups + r_g)*chunk + r_c)*group_size + r_l

    if chunk is None:
        chunk = _default_chunk(kernel, iname, num_groups, group_size)
    if chunk < 1:
        raise ValueError("chunk must be positive")

    flat = ((prim.Variable(r_s) * num_groups + prim.Variable(r_g)) * chunk
            + prim.Variable(r_c)) * group_size + prim.Variable(r_l)
    seq_inames, inner_expr = _steps_of(red, iname, flat, (r_s, r_c, r_d))
    stage1_red = LoopyReduction(
        red.operation, (r_l,),
        LoopyReduction(red.operation, seq_inames, inner_expr,
                       allow_simultaneous=False),
        allow_simultaneous=False)
    stage1_doms = _stage1_domains(kernel, iname, r_g, r_l, r_s, r_c, r_d,
                                  num_groups, group_size, chunk)

    # }}}

    # {{{ stage 2: reduce partial over p = p_s*final_group_size + p_l

    stage2_red = LoopyReduction(
        red.operation, (p_l,),
        LoopyReduction(
            red.operation, (p_s,),
            prim.Subscript(prim.Variable(partial), (
                prim.Variable(p_s) * final_group_size + prim.Variable(p_l),
                *(prim.Variable(i) for i in out_inames))),
            allow_simultaneous=False),
        allow_simultaneous=False)

    # }}}

    p_dom = isl.BasicSet(
        f"{{ [{p_s}, {p_l}] : 0 <= {p_l} < {final_group_size} and "
        f"0 <= {p_s}*{final_group_size} + {p_l} < {num_groups} }}")
    kernel = _with_stages(
        kernel, insn, red, iname, out_name=out_name, out_inames=out_inames,
        partial=partial, part=r_g, num_parts=num_groups,
        stage1_red=stage1_red, stage2_red=stage2_red, stage1_id=stage1_id,
        barrier_id=barrier_id, new_domains=[*stage1_doms, p_dom],
        single_launch=single_launch, vng=vng, group_size=group_size)
    if out_inames:
        kernel = lp.duplicate_inames(kernel, out_inames, within=f"id:{stage1_id}")
    # steps over a contiguous run inside the steps over runs
    kernel = lp.prioritize_loops(kernel, (r_s, r_c))
    if unroll > 1 and chunk % unroll == 0:
        kernel = lp.split_iname(kernel, r_c, unroll, inner_tag="unr")
    return lp.tag_inames(kernel, {r_g: "g.0", r_l: "l.0", p_l: "l.0"})



# {{{ column reductions: many outputs, each a long reduction

#: The default *run* of :func:`split_reduction_columns` for reductions of
#: symbolic extent.
DEFAULT_COLUMN_RUN = 16


def _column_domains(kernel: lp.LoopKernel, iname: str, r_c: str, r_s: str,
                    r_t: str, r_d: str, num_chunks: int,
                    run: int) -> list[isl.BasicSet]:
    """The domains of stage 1 of :func:`split_reduction_columns`, for
    ``r = (r_s*num_chunks + r_c)*run + r_t``:

    * the chunk iname *r_c* in ``[0, num_chunks)`` (a box: every chunk
      exists even where it has nothing to reduce);
    * the sequential inames *r_s* (over the values for which some chunk has
      an element) and *r_t* in ``[0, run)``;
    * nested in those (and *r_c*), the guard iname *r_d*, 0 where *r* is in
      the domain of *iname*, else empty (a domain of its own: :mod:`loopy`
      fails on loops with piecewise bounds).
    """
    flat = f"({r_s}*{num_chunks} + {r_c})*{run} + {r_t}"
    chunk_dom = isl.BasicSet(f"{{ [{r_c}] : 0 <= {r_c} < {num_chunks} }}")
    # (the sequential domain nested in the chunk domain: the guard needs
    # both)
    seq_dom, guard = _sequential_domains(
        kernel, iname, flat, outer=[r_c],
        outer_ranges=f"0 <= {r_c} < {num_chunks}",
        seq=r_s, inner=r_t, extent=run, guard=r_d)
    return [chunk_dom, seq_dom, guard]


def _tag_outputs(kernel: lp.LoopKernel, inames: list[str],
                 group_size: int, second_axis: str) -> lp.LoopKernel:
    """Map the output inames *inames* (the last one the fastest varying)
    onto ``g.0``/``l.0`` (and *second_axis*), see
    :func:`split_reduction_columns`.
    """
    lengths = [_constant_length(kernel, name) for name in inames]
    if len(inames) > 1 and all(n is not None for n in lengths):
        flat = kernel.get_var_name_generator()(f"{inames[-1]}_flat")
        kernel = lp.join_inames(kernel, inames, new_iname=flat)
        inames = [flat]
    kernel = lp.split_iname(kernel, inames[-1], group_size,
                            outer_tag="g.0", inner_tag="l.0")
    if len(inames) > 1:
        kernel = lp.tag_inames(kernel, {inames[-2]: second_axis})
    return kernel


def split_reduction_columns(kernel: lp.LoopKernel, insn_id: str, *,
                            num_chunks: int, group_size: int,
                            iname: str | None = None,
                            run: int | None = None) -> lp.LoopKernel:
    """Compute the reduction in instruction *insn_id* of *kernel*, which
    has output inames ``j...`` (many outputs, but too few to occupy the
    device one work-item per output) and a long reduction, in two stages
    (e.g. ``sum(x, axis=0)`` of a tall 2-D array):

    * **Stage 1.** ``partial[c, j...]`` is the reduction over the elements
      ``r = (s*num_chunks + c)*run + t`` (``t = 0, ..., run - 1`` and
      ``s = 0, 1, ...``, sequential in each work-item) of the reduction
      iname, for chunks ``c = 0, ..., num_chunks - 1`` (``g.1``). The
      output inames are mapped onto the grid with consecutive work-items
      on consecutive values of the last output iname (coalesced where it
      is the contiguous axis of the operand): when all their extents are
      known integers they are joined into one flat iname (row-major) which
      is split by *group_size*, inner part ``l.0`` and outer part ``g.0``;
      otherwise the last one is split that way, the one before it goes to
      ``g.2`` (``g.1`` in stage 2) and any others stay sequential loops in
      each work-item.
    * **Stage 2.** A global barrier, then the instruction *insn_id* with
      the reduction replaced by the reduction of ``partial[c, j...]`` over
      ``c`` (sequential in each work-item), with its output inames mapped
      as in stage 1.

    Both stages use the reduction operation of the original reduction, so
    every operation (sum, product, max and min with :mod:`numpy`'s NaN
    semantics, all, any) and dtype is handled; chunks without elements
    (fewer than ``num_chunks*run`` elements, or none) contribute the
    neutral element.

    :arg insn_id: an :class:`loopy.Assignment` whose assignee is a variable
        indexed by distinct inames (at least one: for full reductions see
        :func:`split_reduction_two_stage`), the loops around it exactly
        those inames, and whose right-hand side contains exactly one
        reduction that is not nested in another one (it may be nested in
        arithmetic; reductions nested in it stay sequential).
    :arg num_chunks: the number of chunks of the reduction (the extent of
        ``g.1`` in stage 1).
    :arg group_size: the number of work-items per group (``l.0``), in both
        stages.
    :arg iname: the reduction iname to split into chunks; by default the
        first one of the reduction (the axis of the largest stride for a
        reduction over leading axes). Other inames of the reduction are
        reduced sequentially in each work-item. Its domain must involve no
        other iname (its bounds may depend on size parameters).
    :arg run: the number of consecutive elements reduced in a row by one
        chunk. By default, for a constant extent ``N``,
        ``ceil(N/num_chunks)`` (each chunk is one contiguous range), else
        :data:`DEFAULT_COLUMN_RUN` (the chunks take turns over runs).
    :returns: the new kernel. The instruction *insn_id* keeps its id and
        becomes stage 2; it depends on a new global barrier
        (``<insn_id>_columns_barrier``) which depends on the new stage-1
        instruction ``<insn_id>_stage1`` which has the original
        instruction's dependencies. Stage 1 is within duplicates of the
        output inames, and writes the new global temporary
        ``<assignee>_partial`` of shape ``(num_chunks, *output shape)``.
        If the output domain is empty (an extent is the integer 0), the
        kernel is returned unchanged.
    """
    if num_chunks < 1 or group_size < 1:
        raise ValueError("num_chunks and group_size must be positive")
    found = _reduction_with_outputs(kernel, insn_id,
                                    "split_reduction_two_stage")
    if found is None:
        return kernel
    insn, out_name, out_inames, red = found
    iname = _chosen_iname(red, iname, default=0)
    if run is None:
        length = _constant_length(kernel, iname)
        run = (DEFAULT_COLUMN_RUN if length is None
               else max(1, -(-length // num_chunks)))
    if run < 1:
        raise ValueError("run must be positive")

    vng = kernel.get_var_name_generator()
    (r_c, r_s, r_t, r_d, p_c), partial, stage1_id, barrier_id = \
        _stage_names(kernel, vng, iname, out_name, insn_id,
                     ("chunk", "s", "t", "guard", "pc"), "columns")

    exact = box_extent(kernel, iname) == num_chunks * run
    if exact:
        # the chunks cover the extent exactly: r = r_c*run + r_t, no guard
        # and no steps over runs, so that the run's iname is the
        # reduction's innermost, of a domain of its own (long runs get
        # interleaved accumulators: pytato.target.loopy.schedule.accumulators)
        flat = prim.Variable(r_c) * run + prim.Variable(r_t)
        steps: tuple[str, ...] = (r_t,)
    else:
        flat = ((prim.Variable(r_s) * num_chunks + prim.Variable(r_c)) * run
                + prim.Variable(r_t))
        steps = (r_s, r_t, r_d)
    seq_inames, inner_expr = _steps_of(red, iname, flat, steps)
    stage1_red = LoopyReduction(red.operation, seq_inames, inner_expr,
                                allow_simultaneous=False)
    stage2_red = LoopyReduction(
        red.operation, (p_c,),
        prim.Subscript(prim.Variable(partial), (
            prim.Variable(p_c), *(prim.Variable(i) for i in out_inames))),
        allow_simultaneous=False)

    if exact:
        doms = [isl.BasicSet(f"{{ [{r_c}] : 0 <= {r_c} < {num_chunks} }}"),
                isl.BasicSet(f"{{ [{r_t}] : 0 <= {r_t} < {run} }}")]
    else:
        doms = _column_domains(kernel, iname, r_c, r_s, r_t, r_d,
                               num_chunks, run)
    p_dom = isl.BasicSet(f"{{ [{p_c}] : 0 <= {p_c} < {num_chunks} }}")
    kernel = _with_stages(
        kernel, insn, red, iname, out_name=out_name, out_inames=out_inames,
        partial=partial, part=r_c, num_parts=num_chunks,
        stage1_red=stage1_red, stage2_red=stage2_red, stage1_id=stage1_id,
        barrier_id=barrier_id, new_domains=[*doms, p_dom])
    dup = [vng(f"{i}_s1") for i in out_inames]
    kernel = lp.duplicate_inames(kernel, out_inames, within=f"id:{stage1_id}",
                                 new_inames=dup)
    if not exact:
        kernel = lp.prioritize_loops(kernel, (r_s, r_t))
    kernel = lp.tag_inames(kernel, {r_c: "g.1"})
    kernel = _tag_outputs(kernel, dup, group_size, "g.2")
    return _tag_outputs(kernel, list(out_inames), group_size, "g.1")

# }}}


# {{{ several reduction inames as one

def flatten_reduction_inames(kernel: lp.LoopKernel, insn_id: str,
                             inames: list[str] | None = None
                             ) -> tuple[lp.LoopKernel, str] | None:
    """Replace the inames *inames* (by default all) of the one top-level
    reduction of the instruction *insn_id* by one iname ``f`` over the
    product of their extents, row-major (the first iname varying slowest):
    the ``k``-th iname becomes ``f // stride_k % n_k``. The flat iname
    takes the place of the first of them in the reduction.

    :returns: the new kernel and the flat iname, or None where an iname is
        used by another instruction or has no box domain of its own with a
        constant extent
        (:func:`~pytato.target.loopy.schedule.analysis.box_extent`), or
        where fewer than two
        inames are given.
    """
    insn, _, _, red = _the_reduction(kernel, insn_id)
    if inames is None:
        inames = list(red.inames)
    if len(inames) < 2 or not set(inames) <= set(red.inames):
        return None
    extents = []
    for name in inames:
        n = box_extent(kernel, name)
        if n is None:
            return None
        extents.append(n)
    users = [i for i in kernel.instructions if i.id != insn_id
             and (set(inames) & (i.within_inames | i.reduction_inames()))]
    if users:
        return None
    vng = kernel.get_var_name_generator()
    flat = vng(f"{inames[0]}_flat")
    total = 1
    for n in extents:
        total *= n
    f = prim.Variable(flat)
    values: dict[str, ArithmeticExpression] = {}
    stride = total
    for k, (name, n) in enumerate(zip(inames, extents, strict=True)):
        stride //= n
        e: ArithmeticExpression = f if stride == 1 else prim.FloorDiv(f, stride)
        if k > 0:
            e = prim.Remainder(e, n)
        values[name] = e
    expr = SubstitutionMapper(make_subst_func(values))(red.expr)
    new_inames = []
    for name in red.inames:
        if name == inames[0]:
            new_inames.append(flat)
        elif name not in values:
            new_inames.append(name)
    new_red = LoopyReduction(red.operation, tuple(new_inames), expr,
                             allow_simultaneous=red.allow_simultaneous)
    new_insn = insn.copy(
        expression=_ReplaceReduction(red, new_red)(insn.expression))
    homes = {kernel.get_home_domain_index(name) for name in inames}
    domains = [d for k, d in enumerate(kernel.domains) if k not in homes]
    domains.append(isl.BasicSet(f"{{ [{flat}] : 0 <= {flat} < {total} }}"))
    all_inames = {k: v for k, v in kernel.inames.items() if k not in values}
    all_inames[flat] = Iname(flat, frozenset())
    return kernel.copy(
        instructions=[new_insn if i.id == insn_id else i
                      for i in kernel.instructions],
        domains=domains, inames=all_inames), flat

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())


# vim: foldmethod=marker
