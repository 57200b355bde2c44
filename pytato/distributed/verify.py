"""Checking a distributed partition across all ranks before running it.

.. autofunction:: verify_distributed_partition

The error raised names the kind of inconsistency found first:

.. autoexception:: DistributedPartitionVerificationError
.. autoexception:: DuplicateSendError
.. autoexception:: DuplicateRecvError
.. autoexception:: MissingSendError
.. autoexception:: MissingRecvError
.. autoexception:: PartitionInducedCycleError
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytato.array.base import ShapeType
from pytato.array.shape import shape_component_to_expr
from pytato.distributed.partition import (
    _VERIFIERS,
    CommunicationOpIdentifier,
    DistributedGraphPartition,
    DistributedPartitionVerificationError,
    DuplicateRecvError,
    DuplicateSendError,
    MissingRecvError,
    MissingSendError,
    PartId,
    PartitionInducedCycleError,
    comm_id_sort_key,
    format_comm_id,
    format_comm_tag,
)


__all__ = [
    "DistributedPartitionVerificationError",
    "DuplicateRecvError",
    "DuplicateSendError",
    "MissingRecvError",
    "MissingSendError",
    "PartitionInducedCycleError",
    "verify_distributed_partition",
]


_ERROR_CLASSES: dict[str, type[DistributedPartitionVerificationError]] = {
    cls.__name__: cls for cls in (
        DistributedPartitionVerificationError, DuplicateSendError,
        DuplicateRecvError, MissingSendError, MissingRecvError,
        PartitionInducedCycleError)}


@dataclass(frozen=True)
class _CommOpDescr:
    """What rank 0 needs to know about one send or receive."""

    cid: CommunicationOpIdentifier
    shape: tuple[Any, ...]
    dtype: str
    #: the parts computing the data (send), or waiting for it (receive)
    pids: frozenset[PartId]


@dataclass
class _RankSummary:
    rank: int
    sends: list[_CommOpDescr] = field(default_factory=list)
    recvs: list[_CommOpDescr] = field(default_factory=list)
    needed_pids: dict[PartId, frozenset[PartId]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _describe_shape(shape: ShapeType) -> tuple[Any, ...]:
    return tuple(c if isinstance(c, int) else str(shape_component_to_expr(c))
                 for c in shape)


def _fmt_shape(shape: tuple[object, ...]) -> str:
    return "(" + ", ".join(str(c) for c in shape) + ("," if len(shape) == 1
                                                      else "") + ")"


def _summarize(rank: int, partition: DistributedGraphPartition) -> _RankSummary:
    """The local sends, receives and part dependencies, and the local
    inconsistencies of *partition*."""
    summary = _RankSummary(rank)
    produced: dict[str, PartId] = {}
    recv_names: set[str] = set()
    for pid, part in partition.parts.items():
        summary.needed_pids[pid] = frozenset(part.needed_pids)
        for name in part.output_names:
            if name in produced:
                summary.errors.append(
                    f"rank {rank}: value '{name}' is computed by parts "
                    f"{produced[name]} and {pid}")
            produced[name] = pid
            if name not in partition.name_to_output:
                summary.errors.append(
                    f"rank {rank}: part {pid} has output '{name}' without an "
                    "expression in name_to_output")
        recv_names.update(part.name_to_recv_node)

    for pid, part in partition.parts.items():
        for name in part.partition_input_names:
            if name not in produced and name not in recv_names:
                summary.errors.append(
                    f"rank {rank}: part {pid} needs '{name}', which no part "
                    "computes and no receive provides")
            elif name in produced and produced[name] not in part.needed_pids:
                summary.errors.append(
                    f"rank {rank}: part {pid} uses '{name}' of part "
                    f"{produced[name]} but does not list it in needed_pids")

        for name, recv in part.name_to_recv_node.items():
            users = frozenset(
                p.pid for p in partition.parts.values()
                if name in p.partition_input_names) | {pid}
            summary.recvs.append(_CommOpDescr(
                CommunicationOpIdentifier(recv.src_rank, rank, recv.comm_tag),
                _describe_shape(recv.shape), str(recv.dtype), users))

        for name, sends in part.name_to_send_nodes.items():
            if name not in part.output_names:
                summary.errors.append(
                    f"rank {rank}: part {pid} sends '{name}', which is not one "
                    "of its outputs")
            for send in sends:
                summary.sends.append(_CommOpDescr(
                    CommunicationOpIdentifier(rank, send.dest_rank,
                                              send.comm_tag),
                    _describe_shape(send.data.shape), str(send.data.dtype),
                    frozenset([pid])))
    return summary


def _check_matching(summaries: list[_RankSummary],
                    user_tags: Mapping[Hashable, Hashable]
                    ) -> list[tuple[str, str]]:
    """The inconsistencies found, as (name of the error class, message)."""
    nranks = len(summaries)
    errors: list[tuple[str, str]] = []
    sends: dict[CommunicationOpIdentifier, _CommOpDescr] = {}
    recvs: dict[CommunicationOpIdentifier, _CommOpDescr] = {}
    for s in summaries:
        for what, ops, table in (("send", s.sends, sends),
                                 ("receive", s.recvs, recvs)):
            for op in ops:
                peer = op.cid.dest_rank if what == "send" else op.cid.src_rank
                if not 0 <= peer < nranks:
                    errors.append((
                        "DistributedPartitionVerificationError",
                        f"rank {s.rank}: {what} {format_comm_id(op.cid, user_tags)}: "
                        f"there is no rank {peer} (the communicator has "
                        f"{nranks} ranks)"))
                if op.cid in table:
                    errors.append((
                        "DuplicateSendError" if what == "send"
                        else "DuplicateRecvError",
                        f"rank {s.rank}: more than one {what} "
                        f"{format_comm_id(op.cid, user_tags)}"))
                table[op.cid] = op

    for cid in sorted(sends.keys() | recvs.keys(), key=comm_id_sort_key):
        send, recv = sends.get(cid), recvs.get(cid)
        tag = format_comm_tag(cid.comm_tag, user_tags)
        if recv is None:
            assert send is not None
            errors.append((
                "MissingRecvError",
                f"rank {cid.src_rank} sends to rank {cid.dest_rank} with tag "
                f"{tag} (shape {_fmt_shape(send.shape)}, "
                f"{send.dtype}), but rank {cid.dest_rank} posts no receive "
                f"from rank {cid.src_rank} with that tag"))
        elif send is None:
            errors.append((
                "MissingSendError",
                f"rank {cid.dest_rank} receives from rank {cid.src_rank} with "
                f"tag {tag} (shape {_fmt_shape(recv.shape)}, "
                f"{recv.dtype}), but rank {cid.src_rank} sends nothing to rank "
                f"{cid.dest_rank} with that tag"))
        elif send.shape != recv.shape or send.dtype != recv.dtype:
            errors.append((
                "DistributedPartitionVerificationError",
                f"message {format_comm_id(cid, user_tags)}: rank {cid.src_rank} sends "
                f"shape {_fmt_shape(send.shape)}, {send.dtype}, but rank "
                f"{cid.dest_rank} receives shape {_fmt_shape(recv.shape)}, "
                f"{recv.dtype}"))
    return errors


def _find_cycle(summaries: list[_RankSummary],
                user_tags: Mapping[Hashable, Hashable]) -> str | None:
    """Describe a cycle in the graph of parts (rank, pid), whose edges are
    "part computes data needed by part", within and across ranks."""
    Node = tuple[int, PartId]
    edges: dict[Node, dict[Node, str]] = {}
    for s in summaries:
        for pid, needed in s.needed_pids.items():
            edges.setdefault((s.rank, pid), {})
            for src in needed:
                edges.setdefault((s.rank, src), {})[(s.rank, pid)] = (
                    f"rank {s.rank}: part {pid} uses values of part {src}")
    recv_by_id = {op.cid: (s.rank, op) for s in summaries for op in s.recvs}
    for s in summaries:
        for op in s.sends:
            if op.cid not in recv_by_id:
                continue
            dest, recv = recv_by_id[op.cid]
            for spid in op.pids:
                for rpid in recv.pids:
                    edges.setdefault((s.rank, spid), {})[(dest, rpid)] = (
                        f"rank {s.rank} part {spid} sends "
                        f"{format_comm_id(op.cid, user_tags)} to part {rpid}")

    # iterative depth-first search for a back edge
    state: dict[Node, int] = {}  # 1: on the stack, 2: done
    for start in sorted(edges):
        if start in state:
            continue
        path = [start]
        state[start] = 1
        iters = [iter(sorted(edges.get(start, {})))]
        while iters:
            for nxt in iters[-1]:
                st = state.get(nxt)
                if st == 2:
                    continue
                if st == 1:
                    cycle = [*path[path.index(nxt):], nxt]
                    return "; ".join(edges[a][b]
                                     for a, b in itertools.pairwise(cycle))
                state[nxt] = 1
                path.append(nxt)
                iters.append(iter(sorted(edges.get(nxt, {}))))
                break
            else:
                iters.pop()
                state[path.pop()] = 2
    return None


def verify_distributed_partition(mpi_communicator: Any,
                                 partition: DistributedGraphPartition) -> None:
    """Check that the partitions of all ranks fit together: every send has
    a matching receive on its destination rank (same tag, shape and dtype)
    and vice versa, each part's inputs are provided, and no part waits,
    directly or through other ranks, for data it computes itself.

    Collective: descriptions of the sends and receives are gathered on
    rank 0, checked there and the verdict is broadcast, so that all ranks
    raise a :class:`DistributedPartitionVerificationError` (a
    :class:`~pytato.diagnostic.DistributedError`) naming the ranks and
    tags involved, of the subclass describing the first inconsistency
    found, or none does.
    """
    comm = mpi_communicator
    summary = _summarize(comm.rank, partition)
    summaries = comm.gather(summary, root=0)
    verdict: tuple[str, str] | None = None
    if comm.rank == 0:
        errors: list[tuple[str, str]] = [
            ("DistributedPartitionVerificationError", e)
            for s in summaries for e in s.errors]
        errors.extend(_check_matching(summaries, partition.user_comm_tags))
        if not errors:
            cycle = _find_cycle(summaries, partition.user_comm_tags)
            if cycle is not None:
                errors.append((
                    "PartitionInducedCycleError",
                    "the parts of the ranks wait for each other in "
                    f"a cycle (this would deadlock): {cycle}"))
        if errors:
            verdict = (errors[0][0],
                       "distributed partition is inconsistent across ranks:\n  "
                       + "\n  ".join(msg for _, msg in errors))
    verdict = comm.bcast(verdict, root=0)
    if verdict is not None:
        kind, msg = verdict
        raise _ERROR_CLASSES[kind](msg)


_VERIFIERS.append(verify_distributed_partition)
