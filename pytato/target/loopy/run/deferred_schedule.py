"""Deferred schedules: programs generated without a device are scheduled
for each device at their first call there.

The lowered unit of such a program
(:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.program`)
goes through the schedule stage (:mod:`pytato.target.loopy.schedule`) at run
time, for the :class:`~pytato.target.loopy.device.DeviceInfo` of the
device (``_schedule_for``, through the program store); the user's
:mod:`loopy` transformations work on the lowered unit with the domains of
each instruction joined (``_transform_lowered``). The joined domains that
a transformation leaves as they were are split again afterwards
(``_unjoined_domains``): the schedule's layouts (vector code, tiles, split
reductions, flat output indices) need each store's and each reduction's
domain on its own, so that a transformation that only tags the kernel or
its inames (as arraycontext's compiled functions do) gets the schedule of
the untransformed program.

.. rubric:: Scheduling for the device that runs the program

The default schedule (:mod:`pytato.target.loopy.schedule.default`) maps the
loops of a kernel onto work-groups and work-items with sizes and strategies
that depend on the device (a GPU gets groups of 256 and parallel reductions
where a CPU gets groups of 32 and interleaved accumulators). When
:func:`~pytato.generate_loopy` is given the device (``cl_device=``, or a
target with a device), it schedules for it right away. Otherwise (the usual
``prog = pt.generate_loopy(y)``) the
:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram` keeps the
lowered, unscheduled translation unit as
:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.program`
(:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.schedule_per_device`
is true) and

* schedules it at its first call on a queue for ``queue.device``, and
  keeps the scheduled unit and its executor per device (one schedule per
  :class:`~pytato.target.loopy.device.DeviceInfo`, one executor per
  context; in a context of devices of different kinds, one per device),
  so that later calls cost what they cost before: repeated calls (see
  :mod:`~pytato.target.loopy.run.fast_call`) check nothing more (but in a
  context of devices of different kinds, whose calls are all checked, to
  find the device's executor).
  The kernels are those of ``generate_loopy(y, cl_device=queue.device)``;
* in
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.bind_to_context`,
  schedules it for the context's first device; the
  :class:`~pytato.target.loopy.run.programs.BoundPyOpenCLExecutable` keeps
  the lowered unit
  (:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLExecutable.lowered_program`);
* lets the user's :mod:`loopy` transformations work on the lowered unit:
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.with_transformed_program`
  and
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLExecutable.with_transformed_translation_unit`
  apply the transformation to it first, then the default schedule maps only
  the loop nests the transformation left unmapped (see "Kernels the user
  mapped" in :mod:`pytato.target.loopy.schedule.default`: a fully
  hand-mapped kernel runs as the user wrote it). The lowered unit's loops
  are named as documented in :func:`~pytato.generate_loopy`
  (``_pt_out_dim0``, ...);
* shows the code for a device:
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.get_code`,
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.show_code`
  and
  :meth:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.program_for`
  take a :class:`pyopencl.Device` (by default the device of the last call,
  else the conservative schedule of an unknown device).

In the persistent program store
(:mod:`pytato.target.loopy.store.program_store`) the lowered unit has a key
without a device
(:attr:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram.store_key`),
and the unit scheduled for each device, with its compiled code, a key naming
the device (:func:`~pytato.target.loopy.store.program_store.scheduled_key`).

For example, with an arraycontext-style transformation::

    prog = pt.generate_loopy(y)      # not scheduled yet
    prog = prog.with_transformed_program(lambda t: lp.split_iname(
        t, "_pt_out_dim0", 128, outer_tag="g.0", inner_tag="l.0"))
    _, (out,) = prog(queue, x=x)     # scheduled for queue.device here
    prog.show_code(queue.device)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytato.target.loopy.store.program_store as program_store
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build.split_build import prestart_merged_workers
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.run.stored_unit import (
    StoredUnit,
    loaded,
    save_unit,
    stored_unit,
)
from pytato.timing import FewerCollections, PhaseTimer


if TYPE_CHECKING:
    import islpy as isl
    import loopy as lp
    import pyopencl as cl

    from pytato.target.loopy.run.programs import LoopyPyOpenCLTarget
else:
    isl = lazy_module("islpy")
    lp = lazy_module("loopy")


_logger = logging.getLogger("pytato.target.loopy")


def _joint_domains(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """*t_unit* with the domains of its entrypoint merged so that the inames
    of each instruction (loop and reduction inames) lie in one domain, as in
    the kernels of pytato's upstream release: loopy's domain changing
    transformations (:func:`loopy.add_prefetch`, :func:`loopy.precompute`,
    ...) that user transformations apply need the inames they sweep in one
    leaf domain. Codegen gives each store and each reduction a domain of
    its own; the merged domain is their product (they are independent
    boxes), so the iteration spaces are unchanged. Nested domains (with
    parents or children) are left as they are, and so are the domains of
    reductions that may be empty."""
    knl = t_unit.default_entrypoint
    domains = list(knl.domains)
    if len(domains) < 2:
        return t_unit
    parents = knl.all_parents_per_domain()
    kept = {i for i, ps in enumerate(parents) if ps}
    kept.update(p for ps in parents for p in ps)
    # a product with an empty domain is empty: the domain of a reduction
    # that may be empty (a sum over 0 elements still writes its result)
    # stays apart
    loop_inames: set[str] = set()
    for insn in knl.instructions:
        loop_inames.update(insn.within_inames)
    for i, dom in enumerate(domains):
        names = dom.get_var_names(isl.dim_type.set)
        if set(names) <= loop_inames:
            continue
        if not dom.params().is_equal(
                isl.BasicSet.universe(dom.get_space().params())):
            kept.add(i)
    group = list(range(len(domains)))

    def find(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    merged = False
    for insn in knl.instructions:
        homes = {knl.get_home_domain_index(i)
                 for i in insn.within_inames | insn.reduction_inames()}
        homes -= kept
        if len(homes) < 2:
            continue
        roots = sorted({find(h) for h in homes})
        for r in roots[1:]:
            group[r] = roots[0]
            merged = True
    if not merged:
        return t_unit
    members: dict[int, list[int]] = {}
    for i in range(len(domains)):
        members.setdefault(find(i), []).append(i)
    new_domains = []
    for i, dom in enumerate(domains):
        if find(i) != i:
            continue
        for j in members[i][1:]:
            other = domains[j].align_params(dom.get_space())
            dom = dom.align_params(other.get_space()).flat_product(other)
        new_domains.append(dom)
    try:
        return t_unit.with_kernel(knl.copy(domains=new_domains))
    except lp.LoopyError:  # pragma: no cover (a kernel loopy refuses so)
        return t_unit


def _unjoined_domains(result: lp.TranslationUnit, lowered: lp.TranslationUnit,
                      joint: lp.TranslationUnit) -> lp.TranslationUnit:
    """*result* (a transformation of *joint*, the unit
    :func:`_joint_domains` made of *lowered*) with each merged domain that
    the transformation left as it was split again into the domains of
    *lowered* it was made of: the schedule stage's layouts (vector code,
    tiles, split reductions, shared output inames) need each store's and
    each reduction's domain on its own, and a transformation that changed
    no domain (one tagging the kernel, as arraycontext's compiled
    functions do, or one tagging inames) should not cost the program those
    layouts. Merged domains that the transformation changed, or on whose
    inames another domain depends, stay merged."""
    knl = result.default_entrypoint
    if knl.name != joint.default_entrypoint.name:
        return result
    originals = list(lowered.default_entrypoint.domains)
    kept = {id(d) for d in joint.default_entrypoint.domains}
    merged_parts: dict[int, list[isl.BasicSet]] = {}
    for dom in joint.default_entrypoint.domains:
        if any(dom is d for d in originals):
            continue
        names = set(dom.get_var_names(isl.dim_type.set))
        merged_parts[id(dom)] = [
            d for d in originals if id(d) not in kept
            and set(d.get_var_names(isl.dim_type.set)) <= names]
    by_names = {frozenset(d.get_var_names(isl.dim_type.set)): d
                for d in joint.default_entrypoint.domains
                if id(d) in merged_parts}
    params: set[str] = set()
    for dom in knl.domains:
        params.update(dom.get_var_names(isl.dim_type.param))
    new_domains: list[isl.BasicSet] = []
    changed = False
    for dom in knl.domains:
        names = dom.get_var_names(isl.dim_type.set)
        ref = by_names.get(frozenset(names))
        if ref is not None and not params & set(names) and (
                dom is ref or dom.plain_is_equal(ref)):
            new_domains.extend(merged_parts[id(ref)])
            changed = True
        else:
            new_domains.append(dom)
    if not changed:
        return result
    try:
        return result.with_kernel(knl.copy(domains=new_domains))
    except lp.LoopyError:  # pragma: no cover (a kernel loopy refuses so)
        return result


def _transform_lowered(f: Callable[[lp.TranslationUnit], lp.TranslationUnit],
                       lowered: lp.TranslationUnit) -> lp.TranslationUnit:
    """*f* applied to the lowered unit *lowered* with joint domains (see
    :func:`_joint_domains`); *lowered* itself where *f* changed nothing;
    the merged domains that *f* left as they were split again (see
    :func:`_unjoined_domains`)."""
    joint = _joint_domains(lowered)
    result = f(joint)
    if joint is not lowered:
        if result is joint or result == joint:
            return lowered
        return _unjoined_domains(result, lowered, joint)
    return result


_DEVICE_INFOS: dict[cl.Device, DeviceInfo] = {}


def _device_info(device: cl.Device) -> DeviceInfo:
    """The :class:`~pytato.target.loopy.device.DeviceInfo` of *device*
    (kept per device: reading it costs OpenCL queries)."""
    info = _DEVICE_INFOS.get(device)
    if info is None:
        info = _DEVICE_INFOS[device] = DeviceInfo.of(device)
    return info


def _schedule_for(lowered: lp.TranslationUnit | StoredUnit,
                  device_target: LoopyPyOpenCLTarget | None,
                  info: DeviceInfo, generated_inames: frozenset[str] | None,
                  store_key: str | None, *, to_run: bool = False
                  ) -> tuple[lp.TranslationUnit | StoredUnit, str | None]:
    """*lowered* (the lowered unit, perhaps transformed by the user; a
    :class:`~pytato.target.loopy.run.stored_unit.StoredUnit` is unpickled
    only if the result is not in the store) scheduled for
    the device *info* with
    :func:`~pytato.target.loopy.schedule.default.default_schedule` (the inames of
    the entrypoint not among *generated_inames* are the user's), with the
    loopy target that *device_target* (the program's
    :class:`~pytato.target.loopy.LoopyPyOpenCLTarget` for that device; None
    to keep the unit's target) gives; and the key of the result in the program store
    (derived from *store_key*, the key of *lowered*; None without one). Taken
    from the store where it is there. *to_run*: the unit is for an
    executor (not only to show its code), which may start a worker
    process of merged sub-units while the unit is scheduled
    (:func:`~pytato.target.loopy.build.split_build.prestart_merged_workers`).
    A unit from the store may be a
    :class:`~pytato.target.loopy.run.stored_unit.StoredUnit` (see
    :func:`~pytato.target.loopy.run.stored_unit.loaded`)."""
    def schedule(to_run: bool = False) -> lp.TranslationUnit:
        t_unit = loaded(lowered)
        new_target = (None if device_target is None
                      else device_target.get_loopy_target())
        if new_target is not None and t_unit.target != new_target:
            try:
                t_unit = t_unit.copy(target=new_target)
            except lp.LoopyError:  # preprocessed by the user: keep its target
                pass
        user_inames: frozenset[str] = frozenset()
        if generated_inames is not None:
            user_inames = frozenset(
                t_unit.default_entrypoint.all_inames()) - generated_inames
        if to_run:
            prestart_merged_workers(info.kind == "cpu",
                                    len(t_unit.default_entrypoint.instructions))
        # (the schedule stage imports loopy: here, not where the
        # scheduled unit is found in the store)
        from pytato.target.loopy.schedule.default import default_schedule
        with PhaseTimer(_logger, "default schedule", f"for {info.name!r}"), \
                FewerCollections():
            return default_schedule(t_unit, info, user_inames=user_inames)

    key = None
    if store_key is not None and program_store.store_enabled():
        key = program_store.scheduled_key(
            store_key, device_info=info,
            loopy_target=(None if device_target is None
                          else device_target.loopy_target_key()))
        # (pickled until read, where its run facts are stored)
        stored = stored_unit(key, schedule, run=True)
        if stored is not None:
            return stored, key
    scheduled = schedule(to_run)
    if key is not None:
        save_unit(key, scheduled, run=True)
    return scheduled, key


# vim: foldmethod=marker
