"""What programs and executables have in common as launched and profiled
programs (``_LaunchedAndProfiled``, a base class of
:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram` and
:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLExecutable`): a
:class:`~pytato.target.loopy.run.launcher.ProgramLauncher` of their
kernels, and the profiling statistics of their executors
(:mod:`pytato.target.loopy.run.statistics`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl

from pytato.launchers import LauncherStatistics
from pytato.lazy_imports import lazy_module
from pytato.target.loopy.run.arguments import ArgumentSpec
from pytato.target.loopy.run.launcher import (
    ProgramLauncher,
    make_program_launcher,
)
from pytato.target.loopy.run.queues import (
    _allocator_for,
)
from pytato.target.loopy.run.statistics import (
    clear_executors_statistics,
    executors_statistics,
)


if TYPE_CHECKING:
    import loopy as lp
    from loopy.target.pyopencl_execution import PyOpenCLExecutor
else:
    lp = lazy_module("loopy")


def _all_on_host(bound_arguments: Mapping[str, Any]) -> bool:
    return all(isinstance(v, np.ndarray) for v in bound_arguments.values())


class _LaunchedAndProfiled:
    """The launcher and the profiling statistics of a program or an
    executable, from the executors it runs (:meth:`_executors`) and, on a
    queue, the executor and the bound data on the device
    (:meth:`_launched_executor`, :meth:`_launched_bound`)."""

    _arg_spec: ArgumentSpec

    def _launched_executor(self, queue: cl.CommandQueue) -> PyOpenCLExecutor:
        raise NotImplementedError

    def _launched_bound(self, queue: cl.CommandQueue) -> Mapping[str, Any]:
        raise NotImplementedError

    def _executors(self) -> list[PyOpenCLExecutor]:
        raise NotImplementedError

    def launcher(self, queue: cl.CommandQueue, *,
                 per_call: Collection[str] = (), name: str | None = None,
                 allocator: Any = None, **inputs: Any) -> ProgramLauncher:
        """A :class:`~pytato.target.loopy.run.launcher.ProgramLauncher` of the
        kernels on *queue* (for an executable, a queue of its
        :attr:`~BoundPyOpenCLExecutable.cl_context`), with all arguments set
        once (see :func:`pytato.target.loopy.run.launcher.make_program_launcher`;
        *allocator* as for :meth:`BoundPyOpenCLProgram.__call__`)."""
        return make_program_launcher(
            self._launched_executor(queue), queue, self._arg_spec,
            self._launched_bound(queue), inputs, per_call=per_call, name=name,
            allocator=_allocator_for(queue, allocator))

    @property
    def statistics(self) -> LauncherStatistics:
        """Per-kernel execution time statistics of the calls on queues with
        profiling enabled (a
        :class:`~pytato.launchers.launchers.LauncherStatistics`; finished
        events are consumed)."""
        return executors_statistics(self._executors())

    def clear_statistics(self) -> None:
        """Forget the profiling statistics and events."""
        clear_executors_statistics(self._executors())
