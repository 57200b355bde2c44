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
def _run_program(prg: Callable[..., Any],
                 queue: pyopencl.CommandQueue | None, allocator: object,
                 inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    if queue is not None and _takes_queue(prg):
        kwargs = dict(inputs)
        if allocator is not None:
            kwargs["allocator"] = allocator
        result = prg(queue, **kwargs)
    else:
        result = prg(**inputs)
    if isinstance(result, tuple) and len(result) == 2:
        result = result[1]   # (event, outputs)
    if not isinstance(result, Mapping):
        raise InvalidArgumentTypeError(
            "the program of a part must return a dict of its "
            f"outputs, got {type(result).__name__}")
    return result


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
        prg_per_partition: Mapping[PartId, Callable[..., Any]],
        queue: pyopencl.CommandQueue | None,
        mpi_communicator: mpi4py.MPI.Comm, *,
        allocator: object = None,
        input_args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run the parts of *partition* with the programs in
    *prg_per_partition* (see :func:`generate_code_for_partition`) and
    return the overall outputs by name.

    All receives are posted (non-blocking) up front. A part runs as soon as
    the values it receives and the outputs of the parts it needs are there,
    and the data it sends is sent (non-blocking) as soon as it has run, so
    that communication overlaps with computation. Before returning, waits
    for all sends to complete.

    Loopy programs are called as ``prg(queue, allocator=..., **inputs)``;
    pass ``queue=None`` (or programs that take no queue, such as those of
    :func:`pytato.generate_numpy`) to call them as ``prg(**inputs)``.
    Received data and sent data travel through host (:mod:`numpy`) buffers.

    The communication tags of the partition must be integers (see
    :func:`~pytato.distributed.number_distributed_tags`). Run
    :func:`~pytato.distributed.verify_distributed_partition` first: a
    receive without a matching send waits forever.

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

    context: dict[str, Any] = {}
    sends: list[tuple[mpi4py.MPI.Request, np.ndarray]] = []
    pending = sorted(parts)

    def run_part(part: DistributedGraphPart) -> None:
        inputs = {name: context[name] for name in part.partition_input_names}
        inputs.update({name: input_args[name]
                       for name in part.user_input_names})
        outputs = _run_program(prg_per_partition[part.pid], queue, allocator,
                               inputs)
        for name in part.output_names:
            context[name] = outputs[name]
        for name, send_nodes in part.name_to_send_nodes.items():
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
            context[recv_names[i]] = recv_bufs[i]

    # received values no part waited for (e.g. overall outputs)
    MPI.Request.Waitall(recv_reqs)
    for name, buf in zip(recv_names, recv_bufs, strict=True):
        context.setdefault(name, buf)
    MPI.Request.Waitall([req for req, _ in sends])

    return {name: context[name] for name in partition.overall_output_names}

# vim: foldmethod=marker
