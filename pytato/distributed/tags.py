"""Turning user communication tags into integer MPI tags.

.. autofunction:: number_distributed_tags
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

from constantdict import constantdict

from pytato.distributed.nodes import DistributedRecv, DistributedSend
from pytato.distributed.partition import (
    DistributedGraphPart,
    DistributedGraphPartition,
    comm_tag_sort_key,
)


__all__ = ["number_distributed_tags"]


def _local_comm_tags(partition: DistributedGraphPartition) -> set[Hashable]:
    tags: set[Hashable] = set()
    for part in partition.parts.values():
        tags.update(recv.comm_tag for recv in part.name_to_recv_node.values())
        for sends in part.name_to_send_nodes.values():
            tags.update(send.comm_tag for send in sends)
    return tags


def _renumber_part(part: DistributedGraphPart,
                   tag_to_num: Mapping[Hashable, int]) -> DistributedGraphPart:
    def recv(r: DistributedRecv) -> DistributedRecv:
        return r.copy(comm_tag=tag_to_num[r.comm_tag])

    def send(s: DistributedSend) -> DistributedSend:
        return s.copy(comm_tag=tag_to_num[s.comm_tag])

    return replace(
        part,
        name_to_recv_node=constantdict({
            name: recv(r) for name, r in part.name_to_recv_node.items()}),
        name_to_send_nodes=constantdict({
            name: tuple(send(s) for s in sends)
            for name, sends in part.name_to_send_nodes.items()}))


def number_distributed_tags(mpi_communicator: Any,
                            partition: DistributedGraphPartition,
                            base_tag: int
                            ) -> tuple[DistributedGraphPartition, int]:
    """Replace the communication tags of the sends and receives of
    *partition* by integers ``base_tag, base_tag + 1, ...``, the same
    integer for the same tag on every rank.

    Collective: the tags of all ranks are gathered on rank 0, sorted
    deterministically (integers numerically, other tags by type and
    ``repr``) and numbered there, and the numbering is broadcast.

    :returns: the renumbered partition and the first tag not used, to pass
        as *base_tag* of a later call.
    """
    comm = mpi_communicator
    local = sorted(_local_comm_tags(partition), key=comm_tag_sort_key)
    gathered = comm.gather(local, root=0)
    if comm.rank == 0:
        all_tags: dict[Hashable, None] = {}
        for tags in gathered:
            for tag in tags:
                all_tags.setdefault(tag, None)
        numbering = {tag: base_tag + i for i, tag in enumerate(
            sorted(all_tags, key=comm_tag_sort_key))}
        result: tuple[dict[Hashable, int], int] | None = (
            numbering, base_tag + len(numbering))
    else:
        result = None
    tag_to_num, next_tag = comm.bcast(result, root=0)

    old_user_tags = partition.user_comm_tags
    user_tags = constantdict({
        num: old_user_tags.get(tag, tag) for tag, num in tag_to_num.items()})

    new_partition = replace(
        partition,
        parts=constantdict({pid: _renumber_part(part, tag_to_num)
                            for pid, part in partition.parts.items()}),
        user_comm_tags=user_tags)
    return new_partition, next_tag
