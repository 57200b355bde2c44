"""The loop nests that the default schedule leaves serial, and why.

:func:`~pytato.target.loopy.schedule.default.default_schedule` maps every
loop nest it can onto work-groups and work-items. A nest that could run in
parallel (it has a loop, or a reduction, of an extent other than 1) but is
left without any hardware-parallel loop is reported, with the reason, in
one warning per scheduled program through :mod:`logging` (the logger
``pytato.target.loopy.schedule``):

* the nest is **the user's**: one of its inames carries a
  :class:`loopy.kernel.data.InameImplementationTag` (``unr``, ``ilp``,
  ``for``, ... without a ``g.``/``l.`` one) or was created by the user's
  transformation (see "Kernels the user mapped" in
  :mod:`pytato.target.loopy.schedule.default`);
* the kernel **calls other kernels** (the schedule maps kernels without
  calls only);
* an instruction is **not a plain store** over its loops (e.g. a
  :class:`loopy.CInstruction`, or a store whose loops are not exactly its
  output axes);
* a loop is **shared with other loop nests** (e.g. through a substitution
  rule);
* a layout's precondition failed on the nest (the error is named).

Tags on arrays and axes (:mod:`pytools.tag` tags propagated to the inames
as metadata) are never a reason.

.. autofunction:: serial_nest_reasons
.. autofunction:: report_serial_nests
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import loopy as lp
from loopy.kernel.data import HardwareConcurrentTag

from pytato.target.loopy.schedule.analysis import (
    _constant_length,
    _has_impl_tag,
    _output_inames,
    _reduction_inames,
)


__all__ = ["report_serial_nests", "serial_nest_reasons"]

_logger = logging.getLogger("pytato.target.loopy.schedule")

#: the most nests named in one warning (the others are counted)
_MAX_LISTED = 8


def _loops(insn: lp.InstructionBase) -> frozenset[str]:
    return frozenset(insn.within_inames) | _reduction_inames(insn)


def _could_run_in_parallel(kernel: lp.LoopKernel,
                          insns: Iterable[lp.InstructionBase]) -> bool:
    """Whether the instructions *insns* of *kernel* have a loop or a
    reduction of an extent other than the constant 1."""
    return any(_constant_length(kernel, i) != 1
               for insn in insns for i in _loops(insn))


def _runs_in_parallel(kernel: lp.LoopKernel, ids: Iterable[str]) -> bool:
    """Whether one of the instructions *ids* of *kernel* (those still there)
    has a loop or a reduction mapped onto work-groups or work-items."""
    by_id = kernel.id_to_insn
    return any(kernel.iname_tags_of_type(i, HardwareConcurrentTag)
               for iid in ids if iid in by_id for i in _loops(by_id[iid]))


def _users_reason(kernel: lp.LoopKernel, insns: Iterable[lp.InstructionBase],
                 user_inames: frozenset[str]) -> str:
    """Why the loop nest of *insns* is the user's: the inames with
    implementation tags, and those the user's transformation created."""
    names = sorted(set().union(*(_loops(insn) for insn in insns)))
    tagged = [f"{i!r} ({', '.join(sorted(str(t) for t in kernel.iname_tags(i)))})"
              for i in names if _has_impl_tag(kernel, i)]
    created = [repr(i) for i in names if i in user_inames]
    parts = []
    if tagged:
        parts.append("implementation tags on " + ", ".join(tagged))
    if created:
        parts.append("inames created by the user's transformation: "
                     + ", ".join(created))
    return ("the user's loop nest (" + "; ".join(parts)
            + "), left as the user wrote it")


def serial_nest_reasons(kernel: lp.LoopKernel, not_inlined: str | None,
                        user_inames: frozenset[str] = frozenset()
                        ) -> list[tuple[list[str], str]]:
    """Why the default schedule leaves all of *kernel* as it is, as
    ``(instruction ids, reason)`` pairs for the instructions that could run
    in parallel: the kernels it calls could not be inlined (*not_inlined*,
    the reason, see :mod:`pytato.target.loopy.schedule.callees`), or an
    instruction
    is not an assignment, or no instruction of a loop nest that is not the
    user's (no iname of *user_inames* or with an implementation tag) stores
    over exactly the nest's loops. Empty if none of these holds."""
    ids = [insn.id for insn in kernel.instructions
           if _could_run_in_parallel(kernel, [insn])]
    if not ids:
        return []
    if not_inlined is not None:
        return [(ids, not_inlined)]
    for insn in kernel.instructions:
        if isinstance(insn, lp.CallInstruction):
            # loopy types a call instruction's expression as any expression
            return [(ids, f"instruction {insn.id!r} calls the kernel "
                     f"{insn.expression.function.name!r} (kernels other "  # type: ignore[union-attr]
                     "than traced functions, e.g. of call_loopy, are the "
                     "user's: the default schedule maps kernels of "
                     "assignments only)")]
        if not isinstance(insn, lp.Assignment):
            return [(ids, f"instruction {insn.id!r} is a "
                     f"{type(insn).__name__}, not an assignment (the "
                     "default schedule maps kernels of assignments only)")]
    nests: dict[frozenset[str] | str, list[lp.InstructionBase]] = {}
    for insn in kernel.instructions:
        nests.setdefault(frozenset(insn.within_inames) or insn.id,
                         []).append(insn)
    for insns in nests.values():
        if any(i in user_inames or _has_impl_tag(kernel, i)
               for insn in insns for i in _loops(insn)):
            continue
        if not any(_output_inames(insn) is not None for insn in insns):
            return [(ids, f"the loops {sorted(insns[0].within_inames)} of "
                     f"instruction {insns[0].id!r} are not exactly the axes "
                     "of the array it stores (the default schedule maps "
                     "kernels of plain stores only)")]
    return []


def report_serial_nests(kernel_name: str,
                        serial: Sequence[tuple[Sequence[str], str]]) -> None:
    """Log one warning listing the loop nests *serial* (``(instruction
    ids, reason)`` pairs) of the kernel *kernel_name* left serial; nothing
    if there are none."""
    if not serial:
        return
    lines = []
    for ids, why in serial[:_MAX_LISTED]:
        shown = ", ".join(repr(i) for i in ids[:3])
        more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
        lines.append(f"  instructions {shown}{more}: {why}")
    if len(serial) > _MAX_LISTED:
        lines.append(f"  ... and {len(serial) - _MAX_LISTED} more loop nests")
    _logger.warning(
        "kernel %r: %d loop nest(s) that could run in parallel are left "
        "serial (one work-item runs them):\n%s",
        kernel_name, len(serial), "\n".join(lines))
