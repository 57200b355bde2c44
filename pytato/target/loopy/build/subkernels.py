"""The device kernels of a linearized :mod:`loopy` kernel, as its host code
enqueues them: their names, arguments and work sizes
(:class:`SubkernelInfo`). The build workers launch them once after a build
(see :mod:`pytato.target.loopy.build.jit_primer`), and the run stage's
kernel plans (:mod:`pytato.target.loopy.run.launcher`) enqueue them.

.. autofunction:: linearized_subkernels
.. autoclass:: SubkernelInfo
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pymbolic import evaluate

from pytato.diagnostic import UnsupportedByTargetError
from pytato.lazy_imports import lazy_module


if TYPE_CHECKING:
    import loopy as lp
    import loopy.schedule as _schedule
else:
    _schedule = lazy_module("loopy.schedule")


__all__ = ["SubkernelInfo", "linearized_subkernels"]


def linearized_subkernels(knl: lp.LoopKernel, callables_table: Any
                          ) -> list[SubkernelInfo]:
    """The device kernels that the linearized *knl* enqueues, in order
    (those without instructions, for outputs without elements, left out).

    :raises UnsupportedByTargetError: if one is enqueued inside a host
        loop or takes loop indices from the host."""
    sched = knl.linearization
    assert sched is not None
    subkernels = []
    depth = 0
    for idx, item in enumerate(sched):
        if isinstance(item, _schedule.EnterLoop):
            depth += 1
        elif isinstance(item, _schedule.LeaveLoop):
            depth -= 1
        elif isinstance(item, _schedule.CallKernel):
            ids = _schedule.get_insn_ids_for_block_at(sched, idx)
            if not ids:
                continue
            if depth:
                raise UnsupportedByTargetError(
                    f"kernel {item.kernel_name!r} is enqueued inside a host "
                    "loop; launchers support straight-line host code only")
            # (loopy's, imported where a linearized kernel is at hand)
            from loopy.schedule.tools import get_subkernel_arg_info
            info = get_subkernel_arg_info(knl, item.kernel_name)
            if info.passed_inames:
                raise UnsupportedByTargetError(
                    f"kernel {item.kernel_name!r} takes loop indices "
                    f"{list(info.passed_inames)} from the host")
            gsize, lsize = knl.get_grid_sizes_for_insn_ids_as_exprs(
                ids, callables_table)
            subkernels.append(SubkernelInfo(
                item.kernel_name, tuple(info.passed_names),
                tuple(gsize), tuple(lsize)))
    return subkernels


@dataclass(frozen=True)
class SubkernelInfo:
    """One OpenCL kernel of a :mod:`loopy` program, as its host code
    enqueues it.

    .. attribute:: name

        The kernel's function name.

    .. attribute:: arg_names

        The names of the kernel's arguments, in order (kernel arguments,
        then global temporaries).

    .. attribute:: group_count
    .. attribute:: local_size

        Expressions (in the program's value arguments) of the number of
        work groups and of the work group size, per axis.
    """

    name: str
    arg_names: tuple[str, ...]
    group_count: tuple[Any, ...]
    local_size: tuple[Any, ...]

    def work_sizes(self, values: Mapping[str, int]
                   ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Return ``(global_size, local_size)`` in work items, for the
        value arguments *values*."""
        groups = _eval_shape(self.group_count, values) or (1,)
        local = _eval_shape(self.local_size, values) or (1,)
        ndim = max(len(groups), len(local))
        groups += (1,) * (ndim - len(groups))
        local += (1,) * (ndim - len(local))
        return (tuple(g * s for g, s in zip(groups, local, strict=True)),
                local)


def _eval_shape(shape: Any, values: Mapping[str, int]) -> tuple[int, ...]:
    if shape is None:
        return ()
    # (constant extents, the commonest, without pymbolic's evaluator)
    return tuple(c if type(c) is int else int(evaluate(c, values))
                 for c in shape)
