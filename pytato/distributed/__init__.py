"""Distributed-memory evaluation of graphs over MPI.

Each MPI rank builds its own graph, in which
:class:`~pytato.distributed.nodes.DistributedRecv` arrays stand for data
received from other ranks and sends are attached with
:func:`~pytato.distributed.nodes.staple_distributed_send`. Then, on every
rank (the calls marked *collective* must be made by all ranks)::

    parts = find_distributed_partition(comm, outputs)        # collective
    parts, _ = number_distributed_tags(comm, parts, base_tag=0)  # collective
    verify_distributed_partition(comm, parts)                # collective
    prgs = generate_code_for_partition(parts)
    result = execute_distributed_partition(parts, prgs, queue, comm,
                                           input_args={...})

.. automodule:: pytato.distributed.nodes
.. automodule:: pytato.distributed.partition
.. automodule:: pytato.distributed.tags
.. automodule:: pytato.distributed.verify
.. automodule:: pytato.distributed.execute
"""

from __future__ import annotations

from pytato.distributed.execute import (
    execute_distributed_partition,
    generate_code_for_partition,
)
from pytato.distributed.nodes import (
    DistributedRecv,
    DistributedSend,
    DistributedSendRefHolder,
    make_distributed_recv,
    make_distributed_send,
    make_distributed_send_ref_holder,
    staple_distributed_send,
)
from pytato.distributed.partition import (
    CommunicationOpIdentifier,
    DistributedGraphPart,
    DistributedGraphPartition,
    PartId,
    find_distributed_partition,
)
from pytato.distributed.tags import number_distributed_tags
from pytato.distributed.verify import verify_distributed_partition


__all__ = [
    "CommunicationOpIdentifier",
    "DistributedGraphPart",
    "DistributedGraphPartition",
    "DistributedRecv",
    "DistributedSend",
    "DistributedSendRefHolder",
    "PartId",
    "execute_distributed_partition",
    "find_distributed_partition",
    "generate_code_for_partition",
    "make_distributed_recv",
    "make_distributed_send",
    "make_distributed_send_ref_holder",
    "number_distributed_tags",
    "staple_distributed_send",
    "verify_distributed_partition",
]
