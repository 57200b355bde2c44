"""The driver of the loopy backend: :func:`generate_loopy`.

A graph goes through the stages in order: the program store
(:mod:`pytato.target.loopy.store`) is asked first, by the key of the
user's graph (:mod:`~pytato.target.loopy.pipeline.store_keys`); else the
graph is preprocessed, lowered (:mod:`pytato.target.loopy.lower`),
scheduled for the device if one is known (:mod:`pytato.target.loopy.schedule`;
otherwise at the program's first call on each device, see
:mod:`pytato.target.loopy.run.deferred_schedule`), saved in the store, and
bound with the data of the graph's data wrappers into a
:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram`, which
builds (:mod:`pytato.target.loopy.build`) and runs
(:mod:`pytato.target.loopy.run`) at its calls.

.. autofunction:: generate_loopy
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyopencl as cl

from pytato.array.base import Array, topological_order
from pytato.array.constructors import make_dict_of_named_arrays
from pytato.array.results import DictOfNamedArrays
from pytato.codegen import (
    SINGLE_OUTPUT_NAME,
    check_distinct_input_names,
    normalize_outputs,
    preprocess,
)
from pytato.diagnostic import (
    CannotBeLoweredToLoopyError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from pytato.lazy_imports import lazy_module
from pytato.tags import ImplStored, Named, PrefixNamed, Tag
from pytato.target.loopy.build.split_build import prestart_merged_workers
from pytato.target.loopy.build.target_parameters import out_of_line_math_enabled
from pytato.target.loopy.lower.call_keywords import check_call_keyword_names

# (index_checks under a private name: importing the moved module path
# pytato.target.loopy.index_checks sets this package's attribute of that
# name to the module, see pytato.target.loopy._compat)
from pytato.target.loopy.lower.index_checks import (
    IndexCheckedProgram,
    index_checks as _index_checks,
)
from pytato.target.loopy.pipeline.store_keys import (
    _options_key,
    _program_store_key,
)
from pytato.target.loopy.run.programs import (
    BoundPyOpenCLProgram,
    LoopyPyOpenCLTarget,
    LoopyTarget,
)
from pytato.target.loopy.run.stored_unit import (
    StoredUnit,
    save_unit,
    stored_unit,
)
from pytato.target.loopy.store.program_cache import PROGRAM_CACHE
from pytato.timing import FewerCollections, PhaseTimer
from pytato.transform.mappers import UnsupportedNodeError


if TYPE_CHECKING:
    import loopy as lp

    from pytato.target import BoundProgram
else:
    lp = lazy_module("loopy")


__all__ = ["generate_loopy"]

logger = logging.getLogger("pytato.codegen")


def generate_loopy(
        result: Array | DictOfNamedArrays | Mapping[str, Array],
        target: LoopyTarget | None = None,
        options: lp.Options | None = None,
        *,
        function_name: str = "_pt_kernel",
        cl_device: cl.Device | None = None,
        array_tag_t_to_not_propagate: frozenset[type[Tag]] = frozenset(
            {ImplStored, Named, PrefixNamed}),
        axis_tag_t_to_not_propagate: frozenset[type[Tag]] = frozenset(),
        default_schedule: bool = True,
        check_indices: bool = False,
        ) -> BoundProgram:
    """Code generation entry point.

    :arg result: the outputs of the computation: an array, a
        :class:`~pytato.DictOfNamedArrays` or a :class:`dict` of arrays.
    :arg target: the code generation target (by default a
        :class:`LoopyPyOpenCLTarget` for *cl_device*).
    :arg options: :class:`loopy.Options` of the kernel. If *result* is a
        dict and *options* is not given, ``return_dict`` is set; if it is
        given, it must set ``return_dict``.
    :returns: a :class:`pytato.target.BoundProgram` (a
        :class:`BoundPyOpenCLProgram` for the default target) wrapping the
        generated :class:`loopy.TranslationUnit`.

    Metadata is carried over to :mod:`loopy`:

    * the inames indexing an array's axis in the instruction computing it
      are tagged with the tags of the :class:`~pytato.Axis` (except
      instances of *axis_tag_t_to_not_propagate*); the inames of a
      reduction with the tags of its
      :class:`~pytato.ReductionDescriptor`. These tags are metadata (by
      which a transformation can find the loops): they never change the
      default schedule, which only implementation tags of :mod:`loopy`
      (``g.0``, ``l.0``, ``unr``, ...) and inames created by the user's
      transformation mark as the user's (see :ref:`users-loops`);
    * the tags of inputs and outputs are copied to the corresponding
      :class:`loopy.ArrayArg`, those of stored intermediate arrays
      (:class:`~pytato.tags.ImplStored`) to the
      :class:`loopy.TemporaryVariable` (except instances of
      *array_tag_t_to_not_propagate*).

    :arg default_schedule: whether to map the kernel's loops onto
        work-groups and work-items for the device with
        :func:`pytato.target.loopy.schedule.default.default_schedule`. Pass False
        to transform the generated kernel yourself.

    **Which device the schedule is for.** With *cl_device*, or a *target*
    with a device, the kernel is scheduled for that device here, and
    :attr:`BoundPyOpenCLProgram.program` is the scheduled unit (which runs
    on any device). Without a device (the usual ``generate_loopy(y)``),
    the program keeps the lowered, unscheduled unit as
    :attr:`~BoundPyOpenCLProgram.program` and schedules it at its first
    call on each device (for ``queue.device``; in
    :meth:`~BoundPyOpenCLProgram.bind_to_context`, for the context's first
    device), with the same kernels as ``generate_loopy(result,
    cl_device=device)``; see "Scheduling for the device that runs the
    program" in :mod:`pytato.target.loopy.run.deferred_schedule`.

    The lowered unit names its loops after the arrays they compute: the
    output axes of the stored array ``name`` are the inames
    ``name_dim0``, ``name_dim1``, ... (``_pt_out_dim0``, ... for the
    array result of a single-array *result*; the keys of a dict result
    name theirs); reductions have inames starting ``_pt_sum_r``,
    ``_pt_max_r``, ... (tagged with the reduction descriptor's tags, by
    which transformations can find them); output inames carry the tags of
    their :class:`~pytato.Axis`. Arrays computed in one loop nest
    (:mod:`pytato.target.loopy.lower.fusion`) share the loops of the first
    array stored there: the loops of an output are those of the
    instruction ``_pt_insn_<name>`` storing it (its ``within_inames``).
    In the unit that :meth:`BoundPyOpenCLProgram.with_transformed_program`
    and :meth:`BoundPyOpenCLExecutable.with_transformed_translation_unit`
    hand to a transformation, the loop and reduction inames of each
    instruction lie in one domain (as loopy's :func:`loopy.add_prefetch`
    and :func:`loopy.precompute` need), but for reductions whose length may
    be zero for some values of the size parameters.

    :arg check_indices: whether the program checks the entries of index
        arrays known only at run time, raising
        :class:`~pytato.diagnostic.IndexOutOfBoundsError` naming the index
        array after the call (see :mod:`pytato.target.loopy.lower.index_checks`;
        the program is then an
        :class:`~pytato.target.loopy.lower.index_checks.IndexCheckedProgram`).
        Otherwise out-of-range entries are clamped (see
        :ref:`numerical-semantics`).

    :raises pytato.diagnostic.CannotBeLoweredToLoopyError: for graphs with
        nodes that cannot be lowered (naming the node type).
    """
    if check_indices:
        return _generate_checked(
            result, target, options, function_name=function_name,
            cl_device=cl_device,
            array_tag_t_to_not_propagate=array_tag_t_to_not_propagate,
            axis_tag_t_to_not_propagate=axis_tag_t_to_not_propagate,
            default_schedule=default_schedule)

    is_dict = not isinstance(result, Array)
    if target is None:
        target = LoopyPyOpenCLTarget(device=cl_device)
    elif not isinstance(target, LoopyTarget):
        raise InvalidArgumentTypeError(
            f"'target' must be a LoopyTarget, got {type(target).__name__}")
    elif cl_device is not None and getattr(target, "device", None) not in (
            None, cl_device):
        raise InvalidArgumentError("'cl_device' differs from the device of 'target'")
    if options is None:
        pass  # lp.Options(return_dict=is_dict), made where it is needed
    elif not isinstance(options, lp.Options):
        raise InvalidArgumentTypeError(f"'options' must be a loopy.Options, got "
                                       f"{type(options).__name__}")
    elif is_dict and not options.return_dict:
        raise InvalidArgumentError("for a dict result, 'options' must set "
                                   "return_dict=True")

    try:
        outputs: DictOfNamedArrays | None = normalize_outputs(result)
    except TypeError:
        outputs = None  # (reported by preprocess, below)
    if outputs is not None:
        # before the caches: a graph equal to one generated before may be
        # refused (distinct inputs of one name)
        check_distinct_input_names(outputs)
        # (inputs named like the call's keywords could not be passed)
        check_call_keyword_names(outputs)
    try:
        cache_key: Any = (outputs, is_dict, target,
                          _options_key(options), function_name,
                          frozenset(array_tag_t_to_not_propagate),
                          frozenset(axis_tag_t_to_not_propagate), default_schedule,
                          # (the loopy target's switch, from the environment)
                          out_of_line_math_enabled())
        if outputs is None:
            raise TypeError
        hash(cache_key)
    except TypeError:
        cache_key = None
    if cache_key is not None:
        cached = PROGRAM_CACHE.get(cache_key)
        if cached is not None:
            logger.info("program cache hit for '%s'", function_name)
            return cached  # type: ignore[no-any-return]
    with FewerCollections():
        prog = _lower_and_bind(
            result, target, options, is_dict=is_dict,
            function_name=function_name, cl_device=cl_device,
            array_tag_t_to_not_propagate=array_tag_t_to_not_propagate,
            axis_tag_t_to_not_propagate=axis_tag_t_to_not_propagate,
            default_schedule=default_schedule)
    if cache_key is not None:
        PROGRAM_CACHE.put(cache_key, prog)
    return prog


def _generate_checked(result: Array | DictOfNamedArrays | Mapping[str, Array],
                      target: LoopyTarget | None, options: lp.Options | None,
                      **kwargs: Any) -> BoundProgram:
    """:func:`generate_loopy` with ``check_indices=True``."""
    is_dict = not isinstance(result, Array)
    outputs = normalize_outputs(result)
    flags = _index_checks(outputs)
    if not flags:
        return generate_loopy(result, target, options, **kwargs)
    if options is None:
        pass  # (the default options of a dict result)
    elif not is_dict or not options.return_dict:
        options = options.copy(return_dict=True)
    data = dict(outputs._data)
    data.update({name: flag for name, (flag, _) in flags.items()})
    prog = generate_loopy(make_dict_of_named_arrays(data), target, options,
                          **kwargs)
    return IndexCheckedProgram(  # type: ignore[return-value]
        prog, {name: desc for name, (_, desc) in flags.items()},
        None if is_dict else SINGLE_OUTPUT_NAME)


def _lower_and_bind(result: Array | DictOfNamedArrays | Mapping[str, Array],
                    target: LoopyTarget, options: lp.Options | None, *,
                    is_dict: bool, function_name: str,
                    cl_device: cl.Device | None,
                    array_tag_t_to_not_propagate: frozenset[type[Tag]],
                    axis_tag_t_to_not_propagate: frozenset[type[Tag]],
                    default_schedule: bool) -> BoundProgram:
    """The program of :func:`generate_loopy` (after its argument checks and
    its in-memory cache): from the program store, or lowered, scheduled
    and saved there."""
    device = cl_device or getattr(target, "device", None)
    # no device known: keep the lowered unit, scheduled for each device at
    # the program's first call there (see BoundPyOpenCLProgram)
    deferred = (default_schedule and device is None
                and isinstance(target, LoopyPyOpenCLTarget))
    key_parameters = {
        "is_dict": is_dict, "target": target, "options": options,
        "function_name": function_name,
        "array_tag_t_to_not_propagate": array_tag_t_to_not_propagate,
        "axis_tag_t_to_not_propagate": axis_tag_t_to_not_propagate,
        "default_schedule": default_schedule and not deferred,
        "device": device}

    def lower(outputs: DictOfNamedArrays) -> lp.TranslationUnit:
        # (the lowering and schedule stages, and loopy, are imported here:
        # a process finding its programs in the store needs neither)
        import loopy as lp

        # calls, loopy calls, foreign functions and sparse products lower
        # through the extended mapper of pytato.target.loopy.lower.calls
        from pytato.target.loopy.lower.calls import (
            build_translation_unit_with_calls,
        )
        return build_translation_unit_with_calls(
            outputs, target=target.get_loopy_target(),
            options=(lp.Options(return_dict=is_dict) if options is None
                     else options),
            function_name=function_name,
            array_tag_t_to_not_propagate=frozenset(
                array_tag_t_to_not_propagate),
            axis_tag_t_to_not_propagate=frozenset(axis_tag_t_to_not_propagate))

    def schedule_unit(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
        # (imported here, as the lowering stage above)
        from pytato.target.loopy.schedule.default import default_schedule
        return default_schedule(t_unit, device)

    def make_anew() -> lp.TranslationUnit:
        # (the unit of a stored program whose entry is unreadable)
        t_unit = lower(preprocess(result).outputs)
        if default_schedule and not deferred:
            t_unit = schedule_unit(t_unit)
        return t_unit

    def stored(key: str) -> lp.TranslationUnit | StoredUnit | None:
        # the unit stays pickled until it is read (see stored_unit)
        return stored_unit(key, make_anew, facts=True, run=not deferred)

    t_unit: lp.TranslationUnit | StoredUnit | None = None
    # the key of the user's graph: a graph without data (whose values
    # have no persistent hash) is found in the store before it is
    # preprocessed (preprocessing is a function of the graph, and binds
    # only data)
    with PhaseTimer(logger, "program store lookup"):
        user_outputs = normalize_outputs(result)
        store_key = _program_store_key(
            user_outputs, topological_order([user_outputs]),
            graph="user", **key_parameters)
        if store_key is not None:
            t_unit = stored(store_key)
    if t_unit is not None:
        logger.info("program store hit for '%s'", function_name)
        return BoundPyOpenCLProgram(
            program=t_unit, bound_arguments={}, target=target,
            store_key=store_key, schedule_per_device=deferred)
    try:
        with PhaseTimer(logger, "transform (preprocess)"):
            prep = preprocess(result)
    except UnsupportedNodeError as e:
        raise CannotBeLoweredToLoopyError(str(e)) from e
    order = topological_order([prep.outputs])
    nnodes = len(order)
    if store_key is None:  # a graph with data: the preprocessed graph's key
        with PhaseTimer(logger, "program store lookup", f"{nnodes} nodes"):
            store_key = _program_store_key(
                prep.outputs, order, graph="preprocessed", **key_parameters)
            if store_key is not None:
                t_unit = stored(store_key)
        if t_unit is not None:
            logger.info("program store hit for '%s'", function_name)
    if t_unit is None:
        with PhaseTimer(logger, "lowering", f"{nnodes} nodes"):
            t_unit = lower(prep.outputs)
        if default_schedule and not deferred:
            if isinstance(device, cl.Device):
                prestart_merged_workers(
                    bool(device.type & cl.device_type.CPU),
                    len(t_unit.default_entrypoint.instructions))
            with PhaseTimer(logger, "default schedule"):
                t_unit = schedule_unit(t_unit)
        if store_key is not None:
            with PhaseTimer(logger, "program store save"):
                save_unit(store_key, t_unit, facts=True, run=not deferred)
    if store_key is not None or deferred:
        prog: BoundProgram = BoundPyOpenCLProgram(
            program=t_unit, bound_arguments=prep.bound_arguments,
            target=target, store_key=store_key, schedule_per_device=deferred)
    else:
        prog = target.bind_program(t_unit, prep.bound_arguments)
    return prog
