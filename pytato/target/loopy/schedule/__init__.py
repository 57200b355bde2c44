"""Stage 2 of the loopy backend: scheduling for a device.

**In:** the lowered :class:`loopy.TranslationUnit` of
:mod:`pytato.target.loopy.lower` (possibly transformed by the user) and the
:class:`~pytato.target.loopy.device.DeviceInfo` of the device that will run
it.

**Out:** the same translation unit with every loop nest the user left
unmapped given a schedule for that device: work-groups and lanes, tiles in
local memory, reductions split over work-items or work-groups, interleaved
accumulators, and the global barriers between dependent nests.

* :mod:`~pytato.target.loopy.schedule.default`: the policy
  (:func:`default_schedule`);
* :mod:`~pytato.target.loopy.schedule.tiling`: tiles of small reductions;
* :mod:`~pytato.target.loopy.schedule.reductions`: long reductions split
  in stages, columns and parts;
* :mod:`~pytato.target.loopy.schedule.accumulators`: sequential reductions
  with interleaved accumulators.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # The entry points, importable from the package as from the module
    # ``pytato.target.loopy.schedule`` that this package replaced; imported
    # on use because the stages below import this package's modules.
    if name == "default_schedule":
        from pytato.target.loopy.schedule.default import default_schedule
        return default_schedule
    if name == "DeviceInfo":
        from pytato.target.loopy.schedule.default import DeviceInfo
        return DeviceInfo
    raise AttributeError(
        f"module 'pytato.target.loopy.schedule' has no attribute {name!r}")
