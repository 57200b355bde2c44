"""A program's kernel cut into sub-units, each keyed by its canonical form.

The default schedule (:mod:`pytato.target.loopy.schedule.default`)
separates the loop nests of a program's single :mod:`loopy` kernel with
global barriers; :mod:`loopy` then preprocesses, linearizes and generates
code for the whole kernel at once, and splits it into device kernels at
those barriers. Its cost grows with the number of instructions (as for
the 10 000-node random DAG of
``benchmarks/bench_codegen.py``), and the nests of an application often
repeat (the same operator applied to many fields).

Here the scheduled kernel is cut at its global barriers instead, before
:mod:`loopy`'s passes (:func:`split_kernel`): each *phase* (the
instructions after the same number of global barriers on their longest
dependency path) becomes a kernel of its own (a :class:`SubUnit`), whose
arguments are the program's arguments and the global temporaries it
shares with other phases. Each sub-unit has a *canonical form* (the text
of its instructions, domains and declarations with every argument,
temporary, iname and instruction id renamed by order of first appearance)
and is keyed by a hash of it: sub-units with equal keys compute the same
thing on other arrays, so they need one code generation and one device
build (:mod:`pytato.target.loopy.build.split_build`).

In its canonical form, a sub-unit's *sizes* are value arguments: the
extents of its loops over work groups, the guards of a loop nest fused
with longer ones and the outermost size of its global arrays become
arguments named after their values
(:func:`~pytato.target.loopy.build.split_sizes.hoisted_name`), which the
host side passes at launch
(:class:`~pytato.target.loopy.run.split_executor.SplitKernelPlan`), so that
the same operator on element groups of other sizes is one sub-unit. What
the schedule chose stays constant: work-group sizes, sequential loop
bounds (reductions, unrolled or vectorized loops), strides, and the
constants of index expressions (the divisions of a flattened index); if
the schedule chose them from the size, the sub-units stay distinct.

This path is taken by default on devices that are not CPUs
(:func:`split_enabled`, :data:`SPLIT_ENV`). On CPUs, large kernels are cut
into a few *merged* sub-units instead, one per usable CPU (the *groups*
of :func:`split_kernel`, see
:func:`~pytato.target.loopy.build.split_build.merged_split_groups`).

.. autodata:: SPLIT_ENV
.. autodata:: SPLIT_WORKERS_ENV
.. autodata:: SPLIT_HOIST_ENV
.. autodata:: CALL_WEIGHT
.. autodata:: MERGED_CALL_WEIGHT
.. autodata:: MERGED_MIN_REPEATED_WEIGHT
.. autofunction:: unit_weight
.. autofunction:: split_enabled
.. autoclass:: SubUnit
.. autoexception:: SplitNotPossible
.. autofunction:: split_kernel

The hoisting itself is in :mod:`pytato.target.loopy.build.split_sizes`.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
from constantdict import constantdict

from pytato.lazy_imports import lazy_module

# (the names moved to split_canonical are importable from here as before)
from pytato.target.loopy.build.split_canonical import (  # noqa: F401
    _FIELDS,
    _IDENT,
    _INSN_SKIP,
    _canonical,
    _declaration_text,
    _fields,
    _is_global_barrier,
    _phases,
    _unit_priorities,
)
from pytato.target.loopy.build.split_sizes import (
    _NAMES,
    _arg_dict,
    _hoist,
    _Hoisted,
    _insn_names,
)


if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    import islpy as isl
    import loopy as lp
    import loopy.kernel.data as _kdata
    import loopy.kernel.instruction as _kinsn
else:
    # (imported at first use: see pytato.lazy_imports)
    isl = lazy_module("islpy")
    _kdata = lazy_module("loopy.kernel.data")
    _kinsn = lazy_module("loopy.kernel.instruction")


__all__ = [
    "CALL_WEIGHT",
    "MERGED_CALL_WEIGHT",
    "MERGED_MIN_REPEATED_WEIGHT",
    "SPLIT_ENV",
    "SPLIT_HOIST_ENV",
    "SPLIT_WORKERS_ENV",
    "SplitNotPossible",
    "SubUnit",
    "split_enabled",
    "split_kernel",
    "unit_weight",
]

#: Environment variable choosing the split path: ``1`` on for every
#: device, ``0`` off; unset, it is on for devices that are not CPUs (see
#: :func:`split_enabled`).
SPLIT_ENV = "PYTATO_SPLIT_KERNELS"

#: Environment variable switching off the sizes hoisted into value
#: arguments (``0``; see :func:`split_kernel`), for comparisons: the
#: sub-units then keep their constants.
SPLIT_HOIST_ENV = "PYTATO_SPLIT_HOIST"

#: Environment variable giving the number of worker processes generating
#: the distinct sub-units (default: the usable CPUs; ``1``: in the calling
#: process, which gives the same code).
SPLIT_WORKERS_ENV = "PYTATO_SPLIT_WORKERS"


#: The weight of a function call (``sin``, ``exp``, ...) in
#: :func:`unit_weight`, by which the worker processes share the sub-units:
#: device compilers take long on them (NVIDIA's expands the ``double`` ones
#: inline: in a sub-unit of ``sin`` calls, each call cost as much of
#: :mod:`loopy`'s time and NVIDIA's build as some twenty instructions).
CALL_WEIGHT = 20

#: The weight of a function call in merged sub-units (the *groups* of
#: :func:`split_kernel`), which are for CPUs: on PoCL (the sub-units of
#: the 10 000-node random DAG), a call cost about five times as much as
#: an instruction of :mod:`loopy`'s time and PoCL's build and compilation
#: of the kernels for their launch.
MERGED_CALL_WEIGHT = 5

#: A nest that repeats in the program is a sub-unit of its own in merged
#: sub-units if its copies after the first weigh this much
#: (:func:`unit_weight` with :data:`MERGED_CALL_WEIGHT`) or more in all:
#: a sub-unit has constant costs of code generation, build and first
#: launch (:mod:`loopy`'s and PoCL's), about what this much weight costs.
MERGED_MIN_REPEATED_WEIGHT = 160


def unit_weight(insns: Sequence[Any], call_weight: int = CALL_WEIGHT) -> int:
    """The weight of instructions *insns* for code generation and device
    builds: one per instruction, *call_weight* (default
    :data:`CALL_WEIGHT`) per function call."""
    calls = sum(isinstance(e, prim.Call) for insn in insns
                for e in _expression_values(getattr(insn, "expression", None)))
    return len(insns) + call_weight * calls


def _expression_values(expr: Any) -> Iterator[Any]:
    """*expr*, its subexpressions and the other values in their fields
    (tuples and their elements, constants), parents before children."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        if isinstance(e, prim.ExpressionNode):
            tp = type(e)
            names = _FIELD_NAMES.get(tp)
            if names is None:
                names = _FIELD_NAMES[tp] = tuple(
                    f.name for f in dataclasses.fields(e))
            stack.extend(getattr(e, n) for n in names)
        elif isinstance(e, tuple):
            stack.extend(e)


def split_enabled(devices: Sequence[cl.Device] = ()) -> bool:
    """Whether programs on *devices* take the split path: as
    :data:`SPLIT_ENV` says, else when none of *devices* is a CPU.

    On GPUs the split path more than halves a fresh process's time to
    the first result of the 10 000-node random DAG of
    ``benchmarks/bench_codegen.py``: :mod:`loopy` runs on the distinct
    sub-units in worker processes, which also build their code (NVIDIA's
    compiler alone took about as long as the whole split path over the
    program's kernels in threads of one process). With PoCL on a CPU of
    few cores it gains little cold and loses warm (a first call from the
    store is slower: PoCL compiles each program's kernels at their first
    launch), so CPUs do not take it (``benchmarks/README.md``, section
    "Code generation", has the figures): their large kernels are merged
    sub-units instead
    (:func:`~pytato.target.loopy.build.split_build.merged_split_groups`)."""
    flag = os.environ.get(SPLIT_ENV, "").strip()
    if flag:
        return flag != "0"
    return bool(devices) and not any(
        d.type & cl.device_type.CPU for d in devices)




# {{{ splitting

@dataclass(frozen=True)
class SubUnit:
    """One phase of a kernel, as a kernel of its own.

    .. attribute:: kernel

        The :class:`loopy.LoopKernel` (named after its key); None for
        sub-units after the first of their key (not generated).

    .. attribute:: key

        The hash of its canonical form.

    .. attribute:: canonical_names

        The names of its arguments, temporaries and inames, by canonical
        position (the order of first appearance in its canonical form).

    .. attribute:: instructions

        Its instructions, as in the kernel it was cut from.
    """

    kernel: lp.LoopKernel | None
    key: str
    canonical_names: tuple[str, ...]
    instructions: Sequence[Any]


class SplitNotPossible(ValueError):
    """The kernel cannot be split (see :func:`split_kernel`)."""


class _KernelNeeded(LookupError):
    """A sub-unit without its kernel is not in the program store."""


def _positive(params: Iterable[str]) -> isl.BasicSet:
    """The parameter set where each of *params* is at least 1 (the values
    of hoisted sizes)."""
    names = sorted(params)
    return isl.BasicSet(f"[{', '.join(names)}] -> {{ : "
                        + " and ".join(f"{n} >= 1" for n in names) + " }")


def _single_piece_grid(knl: lp.LoopKernel, hoisted: _Hoisted) -> bool:
    """Whether the number of work groups of *hoisted* along each axis is
    one expression of the hoisted sizes (as the positive values they
    are): loopy's code generation refuses piecewise group counts, which
    two hoisted bounds on the loops of one axis give (a guard and an
    extent, or the extents of two nests, one split by the user: their
    maximum). Such sub-units keep their constants."""
    if not hoisted.params:
        return True
    positive = _positive(hoisted.params)
    by_axis: dict[int, Any] = {}
    for dom in hoisted.domains:
        dom_set = dom.to_set()
        for i, name in enumerate(dom.get_var_names(isl.dim_type.set)):
            tags = knl.iname_tags_of_type(name, _kdata.GroupInameTag)
            if not tags:
                continue
            bound = dom_set.dim_max(i)
            axis = next(iter(tags)).axis
            other = by_axis.get(axis)
            if other is not None:
                other, bound = isl.align_two(other, bound)
                bound = other.max(bound)
            by_axis[axis] = bound
    for bound in by_axis.values():
        context = positive.align_params(bound.get_space().params())
        bound = bound.gist_params(
            context.align_params(bound.get_space().params()))
        if bound.n_piece() > 1:
            return False
    return True


def split_kernel(knl: lp.LoopKernel,
                 dtypes: Mapping[str, Any] | None = None,
                 hoist: bool | None = None,
                 groups: int | None = None,
                 on_unit: Callable[[SubUnit], None] | None = None
                 ) -> list[SubUnit]:
    """Cut the scheduled, unpreprocessed kernel *knl* into its phases (see
    the module documentation), in order.

    :arg dtypes: the types of the temporaries whose type *knl* leaves
        open (needed for those shared by phases).
    :arg hoist: whether the sizes of the sub-units are hoisted into value
        arguments (see the module documentation; off: each sub-unit keeps
        its constants); None: unless :data:`SPLIT_HOIST_ENV` is ``0``.
    :arg groups: if given, the phases are merged into about this many
        sub-units of equal weight (:func:`unit_weight` with
        :data:`MERGED_CALL_WEIGHT`) instead of one sub-unit a phase: the
        nests of consecutive phases are put together, with the global
        barriers between them, and the k-th merged sub-unit ends at the
        nest nearest to k/*groups* of the total weight. A phase whose
        nests repeat elsewhere in the program, with copies of
        :data:`MERGED_MIN_REPEATED_WEIGHT` or more, still gives those
        nests sub-units of their own (one code generation for all), and
        ends the merged sub-unit before it. Merged sub-units of several
        phases keep their constants.
    :arg on_unit: called with each sub-unit as soon as it is made, in
        order (so that its code generation can start while the rest of
        the kernel is split).
    :raises SplitNotPossible: if *knl* has no global barriers, or if a
        phase needs something the split cannot give it (a temporary that
        is not global used in two phases, nested domains, substitution
        rules). Loop priorities go to the sub-units with their inames
        (:func:`_unit_priorities`).
    """

    if not any(_is_global_barrier(i) for i in knl.instructions):
        raise SplitNotPossible("no global barriers")
    if knl.substitutions:
        raise SplitNotPossible("substitution rules")
    if any(len(dom.get_var_names(isl.dim_type.param)) and set(
            dom.get_var_names(isl.dim_type.param)) & set(knl.inames)
            for dom in knl.domains):
        raise SplitNotPossible("nested domains")
    _NAMES.clear()
    try:
        if hoist is None:
            hoist = os.environ.get(SPLIT_HOIST_ENV, "").strip() != "0"
        return _split(knl, dtypes, hoist, groups, on_unit)
    finally:
        _NAMES.clear()


def _split(knl: lp.LoopKernel, dtypes: Mapping[str, Any] | None,
           hoist: bool, groups: int | None = None,
           on_unit: Callable[[SubUnit], None] | None = None
           ) -> list[SubUnit]:
    phase = _phases(knl)
    nphases = max(phase.values(), default=-1) + 1
    insns_of: list[list[Any]] = [[] for _ in range(nphases)]
    for insn in knl.instructions:
        if insn.id in phase:
            insns_of[phase[insn.id]].append(insn)
    used: list[set[str]] = [set() for _ in range(nphases)]
    for p, insns in enumerate(insns_of):
        for insn in insns:
            used[p] |= _insn_names(insn)
    users: dict[str, list[int]] = {}
    for p, names in enumerate(used):
        for name in names:
            users.setdefault(name, []).append(p)
    for name, tv in knl.temporary_variables.items():
        if len(users.get(name, ())) > 1 and (
                tv.address_space != _kdata.AddressSpace.GLOBAL
                or tv.base_storage is not None or tv.initializer is not None):
            raise SplitNotPossible(f"temporary {name!r} used in two phases")

    if dtypes is None:
        dtypes = {}
    for name, tv in knl.temporary_variables.items():
        if len(users.get(name, ())) > 1 and tv.dtype is None \
                and name not in dtypes:
            raise SplitNotPossible(f"the type of {name!r} is not known")
    value_args = [a for a in knl.args if isinstance(a, _kdata.ValueArg)]
    # the loop priorities by iname (each sub-unit looks up its own)
    priorities_of: dict[str, list[tuple[str, ...]]] = {}
    for prio in knl.loop_priority:
        for n in prio:
            priorities_of.setdefault(n, []).append(prio)
    dom_names = [frozenset(dom.get_var_names(isl.dim_type.set)) for dom in knl.domains]
    domains_of: dict[str, list[int]] = {}
    for k, dnames in enumerate(dom_names):
        for n in dnames:
            domains_of.setdefault(n, []).append(k)

    def make_unit(insns: list[Any], build: bool = True,
                  hoist: bool = hoist) -> SubUnit:
        names: set[str] = set()
        for insn in insns:
            names |= _insn_names(insn)
        dom_ids = sorted({k for n in names for k in domains_of.get(n, ())})
        domains = [knl.domains[k] for k in dom_ids]
        if not domains:  # instructions outside loops: a 0-dimensional one
            domains = [isl.BasicSet.universe(isl.Space.set_alloc(
                knl.domains[0].get_ctx(), 0, 0))]
        inames = {n for k in dom_ids for n in dom_names[k]}
        written = {w for insn in insns for w in insn.assignee_var_names()}
        shared = {n for n in names if n in knl.temporary_variables
                  and len(users[n]) > 1}
        arg_names = shared | {n for n in names if n in _arg_dict(knl)}
        temp_names = {n for n in names
                      if n in knl.temporary_variables and n not in shared}
        # the value arguments the sub-unit needs: those of its
        # instructions, and the parameters of its domains and of the
        # shapes of its arrays
        if value_args:
            dep_text = " ".join([
                *(str(d) for d in domains),
                *(repr(getattr(_arg_dict(knl)[n], "shape", ()))
                  for n in arg_names if n in _arg_dict(knl)),
                *(repr(knl.temporary_variables[n].shape)
                  for n in shared | temp_names)])
            words = set(_IDENT.findall(dep_text)) | names
            arg_names |= {a.name for a in value_args if a.name in words}
        arrays = sorted(
            n for n in arg_names | temp_names
            if (n in _arg_dict(knl)
                and not isinstance(_arg_dict(knl)[n], _kdata.ValueArg))
            or (n in knl.temporary_variables
                and knl.temporary_variables[n].address_space
                == _kdata.AddressSpace.GLOBAL))
        hoisted = _hoist(knl, insns, domains, arrays) if hoist else None
        if hoisted is None or not _single_piece_grid(knl, hoisted):
            hoisted = _Hoisted(domains, list(insns), {}, set())
        priorities = _unit_priorities(
            {p for n in inames for p in priorities_of.get(n, ())}, inames)
        key, order = _canonical(knl, hoisted.insns, hoisted.domains,
                                inames | temp_names | arg_names
                                | hoisted.params,
                                arg_names | hoisted.params, written, dtypes,
                                hoisted.shapes, priorities)
        if not build:
            return SubUnit(None, key, order, insns)
        shapes = hoisted.shapes
        args = []
        for tv_name in sorted(shared):
            tv = knl.temporary_variables[tv_name]
            args.append(_kdata.ArrayArg(
                tv_name, dtype=tv.dtype if tv.dtype is not None
                else dtypes[tv_name], shape=shapes.get(tv_name, tv.shape),
                dim_tags=tv.dim_tags,
                offset=tv.offset, address_space=_kdata.AddressSpace.GLOBAL,
                is_output=tv_name in written,
                is_input=tv_name not in written))
        for arg in knl.args:
            if arg.name in names and not isinstance(arg, _kdata.ValueArg):
                args.append(arg.copy(is_output=arg.name in written,
                                     is_input=arg.name not in written,
                                     shape=shapes.get(arg.name, arg.shape)))
        temps = {n: knl.temporary_variables[n] for n in sorted(names)
                 if n in knl.temporary_variables and n not in shared}
        temps = {n: tv.copy(shape=shapes[n]) if n in shapes else tv
                 for n, tv in temps.items()}
        args.extend(a for a in value_args if a.name in arg_names)
        args.extend(_kdata.ValueArg(n, dtype=knl.index_dtype)
                    for n in sorted(hoisted.params))
        ids = {i.id for i in insns}
        # (copies only where a dependency is left out: a copy of a loopy
        # instruction takes long)
        new_insns = [i if i.depends_on <= ids else
                     i.copy(depends_on=frozenset(d for d in i.depends_on
                                                 if d in ids))
                     for i in hoisted.insns]
        # loopy's check of the array accesses cannot relate a hoisted
        # shape to the constant bounds of the loops indexing the array, or
        # a hoisted loop bound to a constant shape (the accesses are those
        # of the unsplit kernel, with the constants): off where sizes are
        # hoisted
        options = (knl.options.copy(
            enforce_array_accesses_within_bounds="no_check")
            if hoisted.params else knl.options)
        sub = knl.copy(
            name="_pt_sub", domains=hoisted.domains, instructions=new_insns,
            args=args, temporary_variables=constantdict(temps),
            inames=constantdict({n: knl.inames[n] for n in sorted(inames)
                                 if n in knl.inames}),
            loop_priority=priorities, options=options)
        if hoisted.params:
            # only positive values are hoisted: without saying so, the
            # group count of a hoisted extent is piecewise (one group at
            # most for an extent of 0), which loopy's code generation
            # refuses (a loop mapped by the user onto work groups)
            old, new = isl.align_two(sub.assumptions,
                                     _positive(hoisted.params))
            sub = sub.copy(assumptions=old.params() & new.params())
        return SubUnit(sub.copy(name=f"_pt_k{key[:16]}"), key, order, insns)

    # each phase's independent nests (connected by dependencies,
    # temporaries of their own and inames) as sub-units; a phase's nests
    # whose sub-unit occurs once in the program are put back together
    # (one device kernel, as the schedule made it)
    # (only components whose shape repeats can repeat: keys are computed
    # for those alone, which leaves out most of a graph that repeats little)
    all_inames = frozenset(knl.inames)
    phases = [(insns, comps if len(comps) > 1 else [insns])
              for insns in insns_of if insns
              for comps in [_components(knl, insns, all_inames)]]
    # (single-nest phases too: the steps of a deep chain repeat)
    shapes = {id(c): _shape(c) for _, comps in phases for c in comps}
    shape_counts = Counter(shapes.values())
    phase_parts: list[list[tuple[list[Any], SubUnit]]] = []
    counts: dict[str, int] = {}
    for _, comps in phases:
        parts = [(c, make_unit(c, build=False)
                  if shape_counts[shapes[id(c)]] > 1 else None)
                 for c in comps]
        for _, u in parts:
            if u is not None:
                counts[u.key] = counts.get(u.key, 0) + 1
        phase_parts.append(parts)  # type: ignore[arg-type]
    order = {i.id: k for k, i in enumerate(knl.instructions)}
    units: list[SubUnit] = []

    def emit(unit: SubUnit) -> None:
        units.append(unit)
        if on_unit is not None:
            on_unit(unit)

    built: set[str] = set()
    # the nests not yet made a sub-unit: a phase's rest, or (merged) the
    # nests of several phases
    pending: list[list[Any]] = []
    merged = 0  # merged sub-units ended for their weight

    separate_keys: dict[str, bool] = {}

    def separate(u: SubUnit | None) -> bool:
        # whether a nest is a sub-unit of its own (once a key)
        if u is None or counts[u.key] < 2:
            return False
        result = separate_keys.get(u.key)
        if result is None:
            result = separate_keys[u.key] = groups is None or (
                counts[u.key] - 1) * unit_weight(
                u.instructions, MERGED_CALL_WEIGHT) \
                >= MERGED_MIN_REPEATED_WEIGHT
        return result

    # merged: the weight of each nest to merge, and of all of them
    weights = {} if groups is None else {
        id(insns): unit_weight(insns, MERGED_CALL_WEIGHT)
        for parts in phase_parts for insns, u in parts if not separate(u)}
    total = sum(weights.values())
    merged_weight = 0  # of the nests merged so far

    def flush() -> None:
        if not pending:
            return
        insns = sorted({i.id: i for part in pending for i in part}.values(),
                       key=lambda i: order[i.id])
        if len(pending) > 1:
            emit(make_unit(_with_barriers(knl, insns, phase),
                                    hoist=False))
        else:
            emit(make_unit(insns))
        pending.clear()

    for parts in phase_parts:
        rest: list[Any] = []
        repeated = []
        for insns, u in parts:
            if separate(u):
                repeated.append(u)
            else:
                rest.extend(insns)
        if repeated:
            # (a later phase's rest may need them: no merging across)
            flush()
        for u in repeated:
            if u.key not in built:  # the kernel of the first of a key
                u = make_unit(u.instructions)
                built.add(u.key)
            emit(u)
        if groups is None:
            if rest:
                pending.append(rest)
                flush()
            continue
        # merged: the phase's nests one by one (independent of each
        # other: those before a merged sub-unit ends and those after can
        # be apart); the k-th merged sub-unit ends before a nest if the
        # weight merged so far is nearer to k/groups of the total without
        # it than with it
        for insns, u in parts:
            if separate(u):
                continue
            weight = weights[id(insns)]
            end = total * (merged + 1) / groups
            if pending and merged < groups - 1 and (
                    merged_weight + weight - end > end - merged_weight):
                flush()
                merged += 1
            pending.append(insns)
            merged_weight += weight
    flush()
    return units


def _with_barriers(knl: lp.LoopKernel, insns: list[Any],
                   phase: Mapping[str, int]) -> list[Any]:
    """The instructions *insns* of several phases (*phase*) of *knl*, with
    the global barriers between their phases, in the kernel's order. A
    barrier after phase *q* (the latest phase of the instructions it
    depends on) depends on the instructions of *insns* of phase *q* and on
    the barrier before it: the instructions after it depend on it, and
    those of phase *q* that its own dependencies leave out (in an earlier
    sub-unit) would not be ordered before it."""
    ids = {i.id for i in insns}
    phases = {phase[i.id] for i in insns}
    first, last = min(phases), max(phases)
    of_phase: dict[int, set[str]] = {}
    for i in insns:
        of_phase.setdefault(phase[i.id], set()).add(i.id)
    barriers = {}
    for insn in knl.instructions:
        if not _is_global_barrier(insn):
            continue
        q = max((phase[d] for d in insn.depends_on if d in phase),
                default=-1)
        if first <= q < last:
            barriers[insn.id] = q
    result = []
    previous: str | None = None
    for insn in knl.instructions:
        if insn.id in ids:
            result.append(insn)
        elif insn.id in barriers:
            deps = ({d for d in insn.depends_on if d in ids}
                    | of_phase.get(barriers[insn.id], set()))
            if previous is not None and barriers[previous] < barriers[insn.id]:
                deps.add(previous)
            result.append(insn.copy(depends_on=frozenset(deps)))
            previous = insn.id
    return result


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _shape(insns: Sequence[Any]) -> tuple[str, ...]:
    """What the canonical forms of the instructions *insns* have in common
    whatever their names and sizes: their kinds, numbers of loops, the
    node types of their expressions and their floating-point constants
    (equal keys have equal shapes)."""
    result = []
    for insn in insns:
        out = [type(insn).__name__, str(len(insn.within_inames))]
        for e in _expression_values(getattr(insn, "expression", None)):
            if isinstance(e, prim.ExpressionNode):
                out.append(type(e).__name__)
            elif isinstance(e, tuple):
                out.append(f"({len(e)}")
            elif isinstance(e, (float, complex, np.floating,
                                np.complexfloating)):
                # (floating-point constants are never hoisted; integers
                # may be sizes)
                out.append(repr(e))
        result.append(" ".join(out))
    return tuple(sorted(result))


def _components(knl: lp.LoopKernel, insns: list[Any],
                all_inames: frozenset[str] | None = None
                ) -> list[list[Any]]:
    """*insns* (of one phase) in groups that share no dependency,
    temporary or iname, in order. *all_inames*: those of *knl* (given by
    a caller calling this for each phase: computing them is linear in
    the kernel's size)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    ids = {i.id for i in insns}
    temps = knl.temporary_variables
    if all_inames is None:
        all_inames = frozenset(knl.inames)
    # instructions that only compute private temporaries from inames
    # (index computations shared by fused nests) are copied into each
    # group that uses them
    copied: dict[str, Any] = {}
    copied_temps: dict[str, str] = {}
    for insn in insns:
        out = insn.assignee_var_names()
        if (not any(d in ids for d in insn.depends_on) and out
                and all(n in temps and temps[n].address_space
                        != _kdata.AddressSpace.GLOBAL for n in out)
                and not (insn.read_dependency_names() - set(out)
                         - all_inames)):
            copied[insn.id] = insn
            for n in out:
                copied_temps[n] = insn.id
    if len(set(copied_temps.values())) != len(copied) or any(
            n in copied_temps for i in copied.values()
            for n in i.read_dependency_names()):
        copied = {}
        copied_temps = {}
    owner: dict[str, str] = {}
    for insn in insns:
        if insn.id in copied:
            continue
        find(insn.id)
        for d in insn.depends_on:
            if d in ids and d not in copied:
                union(insn.id, d)
        for n in _insn_names(insn):
            if n in temps and n not in copied_temps:
                o = owner.setdefault(n, insn.id)
                union(insn.id, o)
    groups: dict[str, list[Any]] = {}
    for insn in insns:
        if insn.id not in copied:
            groups.setdefault(find(insn.id), []).append(insn)
    if not copied:
        return list(groups.values())
    result = []
    order = {insn.id: k for k, insn in enumerate(insns)}
    for group in groups.values():
        need = {copied_temps[n] for i in group for n in _insn_names(i)
                if n in copied_temps}
        need |= {d for i in group for d in i.depends_on if d in copied}
        group = group + [copied[c] for c in need]
        group.sort(key=lambda i: order[i.id])
        result.append(group)
    result.sort(key=lambda g: order[g[0].id])
    return result



# }}}

# vim: foldmethod=marker
