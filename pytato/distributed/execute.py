"""Generating code for the parts of a partition and running them.

.. autofunction:: generate_code_for_partition
.. autofunction:: execute_distributed_partition
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import concrete_shape
from pytato.diagnostic import DistributedError, InvalidArgumentTypeError
from pytato.distributed.nodes import DistributedRecv, DistributedSend
from pytato.distributed.partition import (
    DistributedGraphPart,
    DistributedGraphPartition,
    PartId,
)
from pytato.target.loopy import generate_loopy


if TYPE_CHECKING:
    import mpi4py.MPI
    import pyopencl
    from pyopencl.typing import Allocator


_ProgramT = TypeVar("_ProgramT")


__all__ = ["execute_distributed_partition", "generate_code_for_partition"]


def generate_code_for_partition(
        partition: DistributedGraphPartition, *,
        generate_code: Callable[[DictOfNamedArrays], _ProgramT] | None = None,
        ) -> dict[PartId, _ProgramT]:
    """Generate one program per part of *partition*, computing the part's
    outputs (a :class:`~pytato.DictOfNamedArrays`) from its inputs.

    :arg generate_code: the code generator, :func:`pytato.generate_loopy`
        by default (:func:`pytato.generate_numpy` also works).
    :returns: a mapping from part id to program.
    """
    if generate_code is None:
        # (_ProgramT is then the loopy program type)
        gen: Callable[[DictOfNamedArrays], _ProgramT] = (
            generate_loopy)  # type: ignore[assignment]
    else:
        gen = generate_code
    return {
        pid: gen(DictOfNamedArrays({
            name: partition.name_to_output[name]
            for name in sorted(part.output_names)}))
        for pid, part in partition.parts.items()}


# {{{ helpers

def _int_tag(op: DistributedSend | DistributedRecv) -> int:
    tag = op.comm_tag
    if isinstance(tag, bool) or not isinstance(tag, numbers.Integral):
        raise DistributedError(
            f"communication tag {tag!r} is not an integer: call "
            "pytato.number_distributed_tags on the partition before executing "
            "it")
    return int(tag)


def _takes_queue(prg: Callable[..., object]) -> bool:
    """Whether *prg* is called as ``prg(queue, **inputs)`` (loopy/OpenCL
    programs) rather than ``prg(**inputs)`` (numpy or JAX programs)."""
    try:
        params = list(inspect.signature(prg).parameters.values())
    except (TypeError, ValueError):
        return True
    return bool(params) and params[0].name == "queue" and params[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD)


# the values of inputs and outputs are the programs' arrays (numpy, pyopencl
# or JAX arrays, or scalars): Any
class _PartRunner:
    """Calls the program of a part and brings its inputs and outputs where
    they belong: with a *queue*, the arrays of device programs (those
    called as ``prg(queue, ...)``) are :class:`pyopencl.array.Array`\\ s on
    it (allocated by *allocator*); programs without a queue get and return
    host arrays."""

    def __init__(self, queue: pyopencl.CommandQueue | None,
                 allocator: Allocator | None) -> None:
        self.queue = queue
        self.allocator = allocator
        # user inputs given as numpy arrays, transferred once
        self._on_device: dict[str, object] = {}

    def on_device(self, value: object, *, zero_dim: bool = True) -> object:
        """*value* as an array on the queue if it is a :mod:`numpy` array
        (of one axis or more, unless *zero_dim*); else *value*."""
        assert self.queue is not None
        if isinstance(value, np.ndarray) and (zero_dim or value.ndim):
            # (pyopencl only where there are device arrays)
            import pyopencl.array as cl_array
            return cl_array.to_device(self.queue, value,
                                      allocator=self.allocator)
        return value

    def user_input(self, name: str, value: object, device: bool) -> object:
        if not device:
            return (_to_host(value, self.queue)
                    if _is_device_array(value) else value)
        try:
            return self._on_device[name]
        except KeyError:
            # (0-d arrays may be the values of size parameters)
            result = self._on_device[name] = self.on_device(value,
                                                            zero_dim=False)
            return result

    def run(self, prg: Callable[..., object], part_inputs: Mapping[str, object],
            user_inputs: Mapping[str, object]) -> Mapping[str, object]:
        device = self.queue is not None and _takes_queue(prg)
        inputs = {
            name: (value if device or not _is_device_array(value)
                   else _to_host(value, self.queue))
            for name, value in part_inputs.items()}
        inputs.update({name: self.user_input(name, value, device)
                       for name, value in user_inputs.items()})
        if device:
            kwargs = dict(inputs)
            if self.allocator is not None:
                kwargs["allocator"] = self.allocator
            returns_host = not _has_parameter(prg, "out_host")
            if not returns_host:
                kwargs["out_host"] = False
            result = prg(self.queue, **kwargs)
        else:
            result = prg(**inputs)
        if isinstance(result, tuple) and len(result) == 2:
            result = result[1]   # (event, outputs)
        if not isinstance(result, Mapping):
            raise InvalidArgumentTypeError(
                "the program of a part must return a dict of its "
                f"outputs, got {type(result).__name__}")
        if device and returns_host:
            result = {name: self.on_device(value)
                      for name, value in result.items()}
        return result


def _is_device_array(value: object) -> bool:
    return (not isinstance(value, np.ndarray)
            and hasattr(value, "get") and hasattr(value, "shape"))


def _has_parameter(prg: Callable[..., object], name: str) -> bool:
    try:
        params = inspect.signature(prg).parameters
    except (TypeError, ValueError):
        return False
    param = params.get(name)
    return param is not None and param.kind in (
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _to_host(value: object, queue: pyopencl.CommandQueue | None
             ) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    if hasattr(value, "get"):
        # a device array (e.g. pyopencl.array.Array)
        return np.ascontiguousarray(value.get(queue=queue)
                                    if queue is not None else value.get())
    return np.ascontiguousarray(np.asarray(value))


def _size_param_values(input_args: Mapping[str, object]) -> dict[str, int]:
    return {name: int(v) for name, v in input_args.items()
            if isinstance(v, numbers.Integral)
            or (isinstance(v, np.ndarray) and v.shape == ()
                and v.dtype.kind in "iu")}

# }}}


def execute_distributed_partition(
        partition: DistributedGraphPartition,
        prg_per_partition: Mapping[PartId, Callable[..., object]],
        queue: pyopencl.CommandQueue | None,
        mpi_communicator: mpi4py.MPI.Comm, *,
        allocator: Allocator | None = None,
        input_args: Mapping[str, object] | None = None) -> dict[str, Any]:
    """Run the parts of *partition* with the programs in
    *prg_per_partition* (see :func:`generate_code_for_partition`) and
    return the overall outputs by name.

    With a *queue* and the programs of :func:`pytato.generate_loopy` (the
    default of :func:`generate_code_for_partition`), the outputs are
    :class:`pyopencl.array.Array`\\ s on *queue* (get them with
    ``result["out"].get(queue)``), received values included; *allocator*
    (e.g. a :class:`pyopencl.tools.MemoryPool`) allocates them and the
    programs' temporaries, the queue's default otherwise. The values of
    *input_args* may be :mod:`numpy` or :mod:`pyopencl` arrays (numpy
    arrays are transferred to the device once). Programs are called as
    ``prg(queue, allocator=..., **inputs)`` (with ``out_host=False`` if
    they take that argument); numpy arrays they return are transferred to
    the device.

    Programs that take no queue (those of :func:`pytato.generate_numpy`,
    called with ``queue=None``) are called as ``prg(**inputs)`` with host
    arrays; their outputs stay what they return (numpy arrays).

    All receives are posted (non-blocking) up front, into host buffers. A
    part runs as soon as the values it receives and the outputs of the
    parts it needs are there, and the data it sends is copied to the host
    and sent (non-blocking) as soon as it has run, so that communication
    overlaps with computation. Before returning, waits for all sends to
    complete.

    The communication tags of the partition must be integers (see
    :func:`~pytato.distributed.number_distributed_tags`). The partition
    must have been verified (see
    :func:`~pytato.distributed.verify_distributed_partition`, which
    :func:`~pytato.distributed.find_distributed_partition` calls unless
    Python runs with ``-O``): a receive without a matching send waits
    forever.

    :arg input_args: the values of the user inputs (placeholders and size
        parameters) by name.
    """
    # mpi4py is an optional dependency
    from mpi4py import MPI

    comm = mpi_communicator
    input_args = dict(input_args or {})
    parts: Mapping[PartId, DistributedGraphPart] = partition.parts
    missing = sorted({name for part in parts.values()
                      for name in part.user_input_names} - input_args.keys())
    if missing:
        raise DistributedError(
            f"rank {comm.rank}: missing input arguments: {', '.join(missing)}")

    runner = _PartRunner(queue, allocator)

    # {{{ post all receives

    sizes = _size_param_values(input_args)
    recv_names: list[str] = []
    recv_bufs: list[np.ndarray] = []
    recv_reqs: list[mpi4py.MPI.Request] = []
    for part in parts.values():
        for name, recv in part.name_to_recv_node.items():
            buf = np.empty(concrete_shape(recv.shape, sizes), recv.dtype)
            recv_reqs.append(comm.Irecv(buf, source=recv.src_rank,
                                        tag=_int_tag(recv)))
            recv_names.append(name)
            recv_bufs.append(buf)

    # }}}

    context: dict[str, object] = {}

    def received(i: int) -> None:
        name = recv_names[i]
        if name not in context:
            buf = recv_bufs[i]
            context[name] = buf if queue is None else runner.on_device(buf)

    sends: list[tuple[mpi4py.MPI.Request, np.ndarray]] = []
    pending = sorted(parts)

    def run_part(part: DistributedGraphPart) -> None:
        outputs = runner.run(
            prg_per_partition[part.pid],
            {name: context[name] for name in part.partition_input_names},
            {name: input_args[name] for name in part.user_input_names})
        for name in part.output_names:
            context[name] = outputs[name]
        for name, send_nodes in part.name_to_send_nodes.items():
            # (the host copy lives until the send has completed)
            data = _to_host(context[name], queue)
            for send in send_nodes:
                sends.append((comm.Isend(data, dest=send.dest_rank,
                                         tag=_int_tag(send)), data))

    while pending:
        ready = [pid for pid in pending
                 if all(name in context
                        for name in parts[pid].partition_input_names)]
        if ready:
            pid = ready[0]
            pending.remove(pid)
            run_part(parts[pid])
            continue
        done = MPI.Request.Waitsome(recv_reqs)
        if not done:
            raise DistributedError(
                f"rank {comm.rank}: parts {pending} wait for values that no "
                "part computes and no receive provides")
        for i in done:
            received(i)

    # received values no part waited for (e.g. overall outputs)
    MPI.Request.Waitall(recv_reqs)
    for i in range(len(recv_names)):
        received(i)
    MPI.Request.Waitall([req for req, _ in sends])

    return {name: context[name] for name in partition.overall_output_names}

# vim: foldmethod=marker
