"""The loop nests of a kernel and the global barriers between them.

:func:`_loop_groups` groups the instructions of a kernel by loop nest
(telling the user's nests from those to schedule), :func:`_user_units`
gathers the user's nests that share inames, :func:`_nest_levels` orders the
nests by dependency level, and :func:`_add_global_barriers` separates the
levels by global barriers, so that each level becomes one device kernel
(see "Kernels" in :mod:`pytato.target.loopy.schedule.default`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import islpy as isl
import loopy as lp
from loopy.kernel.data import GroupInameTag, LocalInameTag

from pytato.target.loopy.schedule.analysis import (
    _constant_length,
    _has_impl_tag,
    _output_inames,
    _reduction_inames,
)


def _loop_groups(kernel: lp.LoopKernel,
                 user_inames: frozenset[str] = frozenset()
                 ) -> list[tuple[list[lp.InstructionBase], list[str] | None]] | None:
    """The instructions of *kernel* grouped by loop nest (their set of
    inames), in instruction order, each with its output inames in order,
    or None in place of them for the user's nests (see "Kernels the user
    mapped" in the module documentation: an iname of *user_inames* or one
    with an implementation tag among the loops or reductions); None if
    some instruction is not an assignment or no instruction of a group
    that is not the user's stores over exactly the group's inames."""
    groups: dict[frozenset[str] | str, list[lp.InstructionBase]] = {}
    keys: dict[str, frozenset[str] | str] = {}
    for insn in kernel.instructions:
        if not isinstance(insn, lp.Assignment):
            return None
        # instructions outside loops are never fused
        keys[insn.id] = frozenset(insn.within_inames) or insn.id
    # the assignment of a data-dependent loop bound (a private temporary,
    # see pytato.target.loopy.lower.reduction_bounds) belongs to the nest
    # of the instruction whose loops it bounds: a global barrier between
    # them would lose the temporary
    users = _bound_users(kernel)
    if users:
        writers = kernel.writer_map()
        for name, user in users.items():
            for writer in writers.get(name, ()):
                keys[writer] = keys[user]
    for insn in kernel.instructions:
        groups.setdefault(keys[insn.id], []).append(insn)
    impl_tagged = frozenset(i for i in kernel.inames if _has_impl_tag(kernel, i))
    mapped = user_inames | impl_tagged
    result: list[tuple[list[lp.InstructionBase], list[str] | None]] = []
    for insns in groups.values():
        if mapped and any(
                not mapped.isdisjoint(insn.within_inames)
                or not mapped.isdisjoint(_reduction_inames(insn))
                for insn in insns):
            result.append((insns, None))
            continue
        order = None
        for insn in insns:
            names = _output_inames(insn)
            if names is not None and set(names) == set(insn.within_inames):
                order = names
                break
        if order is None:
            return None
        result.append((insns, order))
    return result


def _bound_users(kernel: lp.LoopKernel) -> dict[str, str]:
    """The temporaries of *kernel* that bound loops (domain parameters),
    each with the id of an instruction in or reducing over such a loop."""
    bounded: dict[str, frozenset[str]] = {}
    for dom in kernel.domains:
        temps = frozenset(p for p in dom.get_var_names_not_none(
                              isl.dim_type.param)
                          if p in kernel.temporary_variables)
        if temps:
            for iname in dom.get_var_names_not_none(isl.dim_type.set):
                bounded[iname] = bounded.get(iname, frozenset()) | temps
    users: dict[str, str] = {}
    if not bounded:
        return users
    for insn in kernel.instructions:
        for iname in (*insn.within_inames, *_reduction_inames(insn)):
            for name in bounded.get(iname, ()):
                users.setdefault(name, insn.id)
    return users


def _add_global_barriers(kernel: lp.LoopKernel, groups: list[list[str]],
                         level: dict[int, int],
                         alone: frozenset[int] = frozenset()) -> lp.LoopKernel:
    """Order the loop nests *groups* (lists of instruction ids) by their
    dependency *level* and separate them with global barriers, so that
    every nest sees the arrays it reads complete.

    Nests of one dependency level (none reads another) share a device
    kernel (loopy sizes its grid for the largest of them and guards the
    others), so that a graph becomes as many device kernels as it has
    levels, not one per nest. A nest that is not mapped onto both ``g.0``
    and ``l.0`` in all its instructions, or that holds a global barrier of
    its own (two-stage reductions), gets a level of its own, as do the
    nests of *alone* (indices into *groups*: the user's)."""
    if len(groups) < 2:
        return kernel
    by_id = kernel.id_to_insn

    hw_cache: dict[str, tuple[bool, bool, bool]] = {}

    def hw_axes(iname: str) -> tuple[bool, bool, bool]:
        """(on g.0, on l.0, fit for sharing: of constant length and on no
        other hardware axis)"""
        r = hw_cache.get(iname)
        if r is None:
            tags = kernel.iname_tags(iname)
            g = any(isinstance(t, GroupInameTag) and t.axis == 0 for t in tags)
            loc = any(isinstance(t, LocalInameTag) and t.axis == 0
                      for t in tags)
            other = any(isinstance(t, (GroupInameTag, LocalInameTag))
                        and t.axis != 0 for t in tags)
            r = (g, loc, not other and (
                not (g or loc) or _constant_length(kernel, iname) is not None))
            hw_cache[iname] = r
        return r

    def shareable(ids: list[str]) -> bool:
        # symbolic grid sizes stay alone: loopy cannot size a grid for the
        # largest of several symbolic (or symbolic and constant) extents;
        # so do nests on other axes (l.1 of local-memory tiling, or of the
        # rows of a column reduction, where l.1 is a reduction iname: the
        # other nests would not use it, which loopy rejects)
        for iid in ids:
            insn = by_id[iid]
            if isinstance(insn, lp.BarrierInstruction):
                return False
            axes = [hw_axes(i) for i in insn.within_inames]
            if not (any(a[0] for a in axes) and any(a[1] for a in axes)
                    and all(a[2] for a in axes)):
                return False
            if any(not hw_axes(i)[2] for i in _reduction_inames(insn)):
                return False
        return True

    # the nests of one level that can share a device kernel do, the others
    # (after them) get one each
    share = [k not in alone and shareable(ids) for k, ids in enumerate(groups)]
    order = sorted(range(len(groups)), key=lambda k: (level[k], not share[k]))
    chunks: list[list[int]] = []
    prev: int | None = None
    for k in order:
        key = level[k] if share[k] else None
        if key is not None and key == prev:
            chunks[-1].append(k)
        else:
            chunks.append([k])
        prev = key
    if len(chunks) < 2:
        return kernel
    vng = kernel.get_instruction_id_generator()
    new_insns = dict(by_id)
    barriers = []
    for before, after in itertools.pairwise(chunks):
        bid = vng("_pt_gbarrier")
        barriers.append(lp.BarrierInstruction(
            id=bid, synchronization_kind="global", mem_kind="global",
            depends_on=frozenset(i for k in before for i in groups[k]),
            within_inames=frozenset()))
        for k in after:
            for iid in groups[k]:
                a = new_insns[iid]
                new_insns[iid] = a.copy(depends_on=a.depends_on | {bid})
    return kernel.copy(instructions=[*new_insns.values(), *barriers])


def _nest_levels(kernel: lp.LoopKernel, groups: list[list[str]]
                 ) -> dict[int, int]:
    """The dependency level of each loop nest of *groups* (lists of
    instruction ids, by index): the longest chain of nests, each reading a
    result of the one before, that ends in it (0 for nests that read no
    other nest's results)."""
    group_of = {iid: k for k, ids in enumerate(groups) for iid in ids}
    by_id = kernel.id_to_insn
    deps: list[set[int]] = [set() for _ in groups]
    for k, ids in enumerate(groups):
        for iid in ids:
            for dep in by_id[iid].depends_on:
                g = group_of.get(dep)
                if g is not None and g != k:
                    deps[k].add(g)
    # depth-first, without recursion (graphs may be deep)
    level: dict[int, int] = {}
    entered: set[int] = set()
    for start in range(len(groups)):
        stack: list[tuple[int, bool]] = [(start, False)]
        while stack:
            k, expanded = stack.pop()
            if k in level:
                continue
            if expanded:
                level[k] = 1 + max((level[d] for d in deps[k]), default=-1)
                continue
            if k in entered:
                raise lp.LoopyError(
                    "default_schedule: loop nests depend on each other "
                    f"cyclically (through {groups[k]})")
            entered.add(k)
            stack.append((k, True))
            stack.extend((d, False) for d in deps[k] if d not in level)
    return level


def _user_units(groups: list[tuple[list[lp.InstructionBase], list[str] | None]],
                red_inames: Mapping[str, frozenset[str]]) -> list[list[int]]:
    """The user's loop nests of *groups* (those without output inames)
    gathered into units: nests sharing an iname (loop or reduction) are
    one unit (indices into *groups*, in order)."""
    parent: dict[int, int] = {}

    def find(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    owner: dict[str, int] = {}
    for k, (insns, order) in enumerate(groups):
        if order is not None:
            continue
        parent[k] = k
        for insn in insns:
            for name in (*insn.within_inames, *red_inames[insn.id]):
                other = owner.setdefault(name, k)
                a, b = find(other), find(k)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    units: dict[int, list[int]] = {}
    for k in parent:
        units.setdefault(find(k), []).append(k)
    return list(units.values())
