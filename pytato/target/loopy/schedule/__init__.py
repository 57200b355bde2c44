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
* :mod:`~pytato.target.loopy.schedule.analysis`: what the policy reads
  from a kernel (extents, tags, reductions, contiguous indices);
* :mod:`~pytato.target.loopy.schedule.outputs`: output axes onto
  work-groups and work-items;
* :mod:`~pytato.target.loopy.schedule.barriers`: loop nests, their
  dependency levels, and the global barriers between them;
* :mod:`~pytato.target.loopy.schedule.tiling_plan` and
  :mod:`~pytato.target.loopy.schedule.tiling`: tiles of small reductions
  (planned, then written);
* :mod:`~pytato.target.loopy.schedule.reductions`: long reductions split
  in stages, columns and parts (with what it reads of a reduction
  instruction in :mod:`~pytato.target.loopy.schedule.reduction_parts`);
* :mod:`~pytato.target.loopy.schedule.accumulators`: sequential reductions
  with interleaved accumulators;
* :mod:`~pytato.target.loopy.schedule.vector_calls`: elementwise nests
  calling math functions as OpenCL vector code (CPU devices), written by
  the build stage's emitter (:mod:`pytato.target.loopy.build.vector_code`).
* :mod:`~pytato.target.loopy.schedule.contraction_split` and
  :mod:`~pytato.target.loopy.schedule.small_contractions`: small
  contractions shared across many elements (DG operators) as OpenCL
  vector code (CPU devices).

The stage imports the lowering stage and, for that emitter, the build
stage; not the run stage nor the pipeline.
"""

from __future__ import annotations

# importable from the package as from the module
# ``pytato.target.loopy.schedule`` that this package replaced
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.schedule.default import default_schedule


__all__ = ["DeviceInfo", "default_schedule"]
