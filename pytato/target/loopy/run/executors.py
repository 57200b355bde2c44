"""The executor of a program on a context (``_make_executor``): that of
the split path (:func:`~pytato.target.loopy.run.split_executor.make_split_executor`)
where :func:`~pytato.target.loopy.build.split.split_enabled` or merged
sub-units (:func:`~pytato.target.loopy.build.split_build.merged_split_groups`)
apply and the kernel can be split, else :mod:`loopy`'s
(:func:`~pytato.target.loopy.run.executor.make_executor`, imported only
then: a process running programs from the store on the split path does not
import :mod:`loopy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyopencl as cl

from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build.split import split_enabled
from pytato.target.loopy.build.split_build import (
    discard_prestarted_workers,
    merged_split_groups,
)
from pytato.target.loopy.run.kernel_facts import kernel_facts

# (the names moved to launched are importable from here as before)
from pytato.target.loopy.run.launched import (  # noqa: F401
    _all_on_host,
    _LaunchedAndProfiled,
)
from pytato.target.loopy.run.split_executor import (
    make_split_executor,
)
from pytato.target.loopy.run.stored_unit import (
    StoredUnit,
    loaded,
)
from pytato.timing import FewerCollections


if TYPE_CHECKING:
    import loopy as lp
else:
    lp = lazy_module("loopy")


def _make_executor(t_unit: lp.TranslationUnit | StoredUnit,
                   context: cl.Context, *, store_key: str | None = None
                   ) -> Any:
    """:func:`~pytato.target.loopy.run.executor.make_executor`, or the
    executor of the split path
    (:func:`~pytato.target.loopy.run.split_executor.make_split_executor`)
    where :func:`~pytato.target.loopy.build.split.split_enabled` and the
    kernel can be split. A
    :class:`~pytato.target.loopy.run.stored_unit.StoredUnit` with its
    :class:`~pytato.target.loopy.run.stored_unit.RunFacts` is unpickled
    only where the split executor needs it (see
    :mod:`~pytato.target.loopy.run.stored_unit`)."""
    run = t_unit.run if type(t_unit) is StoredUnit else None
    if run is not None:
        pyopencl_target = run.kernel.pyopencl_target
        ninstructions = run.kernel.ninstructions
    else:
        unit = loaded(t_unit)
        pyopencl_target = (len(unit.entrypoints) == 1
                           and isinstance(unit.target, lp.PyOpenCLTarget))
        ninstructions = (len(unit.default_entrypoint.instructions)
                         if pyopencl_target else 0)
    if pyopencl_target:
        groups = None
        if split_enabled(context.devices) or (
                groups := merged_split_groups(context.devices,
                                              ninstructions)):
            if run is not None:
                facts, full_unit = run.kernel, t_unit.load
            else:
                facts = kernel_facts(unit, unit.default_entrypoint.name)

                def full_unit() -> lp.TranslationUnit:
                    return unit
            with FewerCollections():  # (the split of a large kernel)
                executor = make_split_executor(
                    facts, context, store_key=store_key, groups=groups,
                    full_unit=full_unit)
            if executor is not None:
                return executor
    # (a worker process started ahead for merged sub-units is not needed)
    discard_prestarted_workers()
    # (loopy's executor: imported here, not by a process that runs
    # programs from the store on the split path)
    from pytato.target.loopy.run.executor import make_executor
    return make_executor(loaded(t_unit), context, store_key=store_key)
