"""The keys of programs in the program store
(:mod:`pytato.target.loopy.store.program_store`), from the graph and the
parameters of :func:`~pytato.target.loopy.generate_loopy`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyopencl as cl

from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.run.programs import LoopyPyOpenCLTarget
from pytato.target.loopy.store import program_store


if TYPE_CHECKING:
    import loopy as lp

    from pytato.array.base import GraphNode
    from pytato.array.results import DictOfNamedArrays
    from pytato.target.loopy.run.programs import LoopyTarget


logger = logging.getLogger("pytato.codegen")


def _options_key(options: lp.Options | None) -> tuple[tuple[str, str], ...]:
    # (None: the default options, lp.Options(return_dict=<dict result>);
    # a key without loopy, which a warm process need not import)
    if options is None:
        return (("<default>", ""),)
    return tuple(sorted((k, repr(v)) for k, v in vars(options).items()))


def _program_store_key(outputs: DictOfNamedArrays, order: list[GraphNode], *,
                       target: LoopyTarget,
                       device: cl.Device | DeviceInfo | None,
                       default_schedule: bool,
                       **parameters: Any) -> str | None:
    """The key of the program for *outputs* (the user's graph, or the
    preprocessed one: the *graph* parameter says which) in the
    persistent store (:mod:`pytato.target.loopy.store.program_store`), or None
    if it is not used: the store is off, the target is not a
    :class:`LoopyPyOpenCLTarget`, or the graph or a parameter has no
    persistent hash."""
    if type(target) is not LoopyPyOpenCLTarget \
            or not program_store.store_enabled():
        return None
    info = DeviceInfo.of(device) if default_schedule else None
    parameters["options"] = _options_key(parameters["options"])
    for name in ("array_tag_t_to_not_propagate",
                 "axis_tag_t_to_not_propagate"):
        parameters[name] = frozenset(parameters[name])
    try:
        return program_store.program_key(
            [outputs], order=order, loopy_target=target.loopy_target_key(),
            default_schedule=default_schedule, device_info=info,
            **parameters)
    except program_store.NotPersistentError as e:
        logger.debug("program store not used: %s", e)
        return None
