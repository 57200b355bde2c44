"""Splitting one rank's graph into parts separated by communication.

Each rank calls :func:`find_distributed_partition` (collectively) with the
outputs of its own graph. The parts of a rank run one after the other; a
part starts once the values it receives have arrived, and the data it sends
is sent as soon as it has run. A rank must not wait for a value that can
only be sent after one of its own later sends, so the parts are chosen from
the *communication levels* of the whole job:

* a send whose data depends on no receive has level 0;
* a receive has the level of the matching send (on the peer rank) plus one;
* a send has the largest level of the receives its data depends on;
* any other node has the largest level of its children (0 if none).

The levels are computed from the send/receive dependencies of all ranks,
exchanged with one ``allgather``. A rank gets one part for each level at
which it sends data, plus one for its last output; each computation is
placed in the earliest of these parts that comes at or after its level.
Values used by a later part than the one computing them become named
outputs of the earlier part and inputs (placeholders) of the later one.

.. autoclass:: CommunicationOpIdentifier
.. autoclass:: DistributedGraphPart
.. autoclass:: DistributedGraphPartition
.. autofunction:: find_distributed_partition
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, overload

import pymbolic.primitives as prim
from constantdict import constantdict

from pytato.array.base import (
    Array,
    ChildNode,
    GraphNode,
    get_children,
    topological_order,
)
from pytato.array.constructors import make_dict_of_named_arrays
from pytato.array.inputs import DataWrapper, InputArgumentBase, Placeholder, SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import (
    DistributedError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)

# (private, imported by the reference pytato's tests)
from pytato.distributed._task_batches import (
    _schedule_task_batches as _schedule_task_batches,
    _schedule_task_batches_counted as _schedule_task_batches_counted,
)
from pytato.distributed.nodes import (
    DistributedRecv,
    DistributedSend,
    DistributedSendRefHolder,
)
from pytato.transform.mappers import ArrayOrNames, CopyMapper


if TYPE_CHECKING:
    import mpi4py.MPI


__all__ = [
    "CommunicationOpIdentifier",
    "DistributedGraphPart",
    "DistributedGraphPartition",
    "PartId",
    "find_distributed_partition",
]

PartId = int

#: Prefix of the names the partitioner gives to received values and to
#: values passed between parts.
_NAME_PREFIX = "_pt_dist_"


# {{{ verification errors (documented and re-exported by pytato.distributed.verify)

class DistributedPartitionVerificationError(DistributedError):
    """The partitions of the ranks do not fit together (a
    :class:`~pytato.diagnostic.DistributedError`, so a :class:`ValueError`)."""


class DuplicateSendError(DistributedPartitionVerificationError):
    """A rank sends more than once with the same destination and tag."""


class DuplicateRecvError(DistributedPartitionVerificationError):
    """A rank receives more than once with the same source and tag."""


class MissingSendError(DistributedPartitionVerificationError):
    """A receive has no matching send on its source rank."""


class MissingRecvError(DistributedPartitionVerificationError):
    """A send has no matching receive on its destination rank."""


class PartitionInducedCycleError(DistributedPartitionVerificationError,
                                 AssertionError):
    """The parts of the ranks wait for each other in a cycle (which would
    deadlock); also an :class:`AssertionError`, as upstream."""


_VERIFICATION_ERRORS: tuple[type[DistributedPartitionVerificationError], ...] = (
    DuplicateSendError, DuplicateRecvError, MissingSendError, MissingRecvError,
    PartitionInducedCycleError, DistributedPartitionVerificationError)

# }}}


# {{{ data structures

class CommunicationOpIdentifier(NamedTuple):
    """Identifies one message of the whole job: the sender's rank, the
    receiver's rank and the tag. A send and a receive match when their
    identifiers are equal.

    .. attribute:: src_rank
    .. attribute:: dest_rank
    .. attribute:: comm_tag
    """

    src_rank: int
    dest_rank: int
    comm_tag: Hashable


def comm_tag_sort_key(tag: Hashable) -> tuple[int, str, int, str]:
    """A sort key ordering communication tags the same way in every process
    (integers numerically, anything else by type name and ``repr``)."""
    if isinstance(tag, int) and not isinstance(tag, bool):
        return (0, "", tag, "")
    typ = type(tag)
    return (1, f"{typ.__module__}.{typ.__qualname__}", 0, repr(tag))


def comm_id_sort_key(cid: CommunicationOpIdentifier
                     ) -> tuple[int, int, tuple[int, str, int, str]]:
    """A deterministic sort key for :class:`CommunicationOpIdentifier`."""
    return (cid.src_rank, cid.dest_rank, comm_tag_sort_key(cid.comm_tag))


def format_comm_tag(tag: Hashable,
                    user_comm_tags: Mapping[Hashable, Hashable] | None = None
                    ) -> str:
    """*tag* for error messages, with the user's tag it was numbered from
    (see :attr:`DistributedGraphPartition.user_comm_tags`)."""
    if user_comm_tags and tag in user_comm_tags:
        return f"{tag!r} (numbered from {user_comm_tags[tag]!r})"
    return repr(tag)


def format_comm_id(cid: CommunicationOpIdentifier,
                   user_comm_tags: Mapping[Hashable, Hashable] | None = None
                   ) -> str:
    return (f"rank {cid.src_rank} -> rank {cid.dest_rank} "
            f"(tag {format_comm_tag(cid.comm_tag, user_comm_tags)})")


@dataclass(frozen=True)
class DistributedGraphPart:
    """One part of a rank's graph: a program run once the values it
    receives and the values of the parts it needs are available.

    .. attribute:: pid

        The part's identifier (parts run in increasing order of ids, as far
        as their inputs allow).

    .. attribute:: needed_pids

        Ids of the parts whose outputs this part uses.

    .. attribute:: user_input_names

        Names of user-supplied inputs (placeholders and size parameters)
        the part uses.

    .. attribute:: partition_input_names

        Names of the values the part gets from other parts or from
        receives.

    .. attribute:: output_names

        Names of the values the part computes (overall outputs, values
        needed by later parts and data to send); see
        :attr:`DistributedGraphPartition.name_to_output`.

    .. attribute:: name_to_recv_node

        The receives that complete before this part runs, by the name of
        the received value.

    .. attribute:: name_to_send_nodes

        The sends posted once this part has run: the name of the data sent
        (one of :attr:`output_names`) to the :class:`DistributedSend`\\ s of
        it.

    .. automethod:: all_input_names
    """

    pid: PartId
    needed_pids: frozenset[PartId]
    user_input_names: frozenset[str]
    partition_input_names: frozenset[str]
    output_names: frozenset[str]
    name_to_recv_node: Mapping[str, DistributedRecv] = field(
        default_factory=constantdict)
    name_to_send_nodes: Mapping[str, Sequence[DistributedSend]] = field(
        default_factory=constantdict)

    @property
    def needed_pid(self) -> frozenset[PartId]:
        """Alias of :attr:`needed_pids`."""
        return self.needed_pids

    def all_input_names(self) -> frozenset[str]:
        """The names of all inputs of the part's program."""
        return self.user_input_names | self.partition_input_names


@dataclass(frozen=True)
class DistributedGraphPartition:
    """The parts of one rank's graph.

    .. attribute:: parts

        A mapping from part id to :class:`DistributedGraphPart`.

    .. attribute:: name_to_output

        The expression computing each output of each part, in terms of
        the part's inputs (placeholders named as in
        :attr:`DistributedGraphPart.all_input_names`).

    .. attribute:: overall_output_names

        The names of the outputs passed to
        :func:`find_distributed_partition`.

    .. attribute:: user_comm_tags

        After :func:`~pytato.distributed.number_distributed_tags`: the
        communication tag given by the user for each integer tag (used in
        error messages).
    """

    parts: Mapping[PartId, DistributedGraphPart]
    name_to_output: Mapping[str, Array]
    overall_output_names: Sequence[str]
    user_comm_tags: Mapping[Hashable, Hashable] = field(
        default_factory=constantdict)

# }}}


# {{{ send holders

@overload
def _resolve(node: Array) -> Array: ...


@overload
def _resolve(node: GraphNode) -> GraphNode: ...


def _resolve(node: GraphNode) -> GraphNode:
    """*node* with send holders replaced by their passthrough data."""
    while isinstance(node, DistributedSendRefHolder):
        node = node.passthrough_data
    return node


def _value_children(node: GraphNode) -> tuple[ChildNode, ...]:
    """The children whose values *node*'s value depends on: those of a send
    holder's passthrough data, not its send (a side effect)."""
    if isinstance(node, DistributedSendRefHolder):
        return (node.passthrough_data,)
    return get_children(node)


def _normalize_outputs(outputs: DictOfNamedArrays | Mapping[str, Array]
                       ) -> DictOfNamedArrays:
    if isinstance(outputs, DictOfNamedArrays):
        return outputs
    if isinstance(outputs, Mapping):
        return make_dict_of_named_arrays(outputs)
    raise InvalidArgumentTypeError(
        "'outputs' must be a DictOfNamedArrays or a mapping of "
        f"names to arrays, got {type(outputs).__name__}")

# }}}


# {{{ communication levels (collective)

def _local_comm_ops(rank: int, nodes: Sequence[GraphNode],
                    sends: Iterable[DistributedSend]
                    ) -> tuple[dict[CommunicationOpIdentifier, DistributedRecv],
                               dict[CommunicationOpIdentifier, DistributedSend],
                               dict[CommunicationOpIdentifier,
                                    frozenset[CommunicationOpIdentifier]]]:
    """The rank's receives and sends by identifier, and the receives the
    data of each send depends on. Raises :class:`DistributedError` for
    two different receives (or sends) with one identifier."""
    recvs: dict[CommunicationOpIdentifier, DistributedRecv] = {}
    deps: dict[int, frozenset[CommunicationOpIdentifier]] = {}
    empty: frozenset[CommunicationOpIdentifier] = frozenset()
    for node in nodes:
        if isinstance(node, DistributedRecv):
            cid = CommunicationOpIdentifier(node.src_rank, rank, node.comm_tag)
            other = recvs.setdefault(cid, node)
            if other is not node and other != node:
                raise DuplicateRecvError(
                    f"rank {rank}: two different receives from rank "
                    f"{node.src_rank} with tag {node.comm_tag!r} "
                    f"(shapes {other.shape} and {node.shape}, dtypes "
                    f"{other.dtype} and {node.dtype})")
            deps[id(node)] = frozenset([cid])
            continue
        kid_deps = [d for d in (deps[id(k)] for k in _value_children(node))
                    if d]
        if not kid_deps:
            deps[id(node)] = empty
        elif len(kid_deps) == 1:
            deps[id(node)] = kid_deps[0]
        else:
            biggest = max(kid_deps, key=len)
            if all(d is biggest or d <= biggest for d in kid_deps):
                deps[id(node)] = biggest
            else:
                deps[id(node)] = frozenset().union(*kid_deps)

    sends_by_id: dict[CommunicationOpIdentifier, DistributedSend] = {}
    needs: dict[CommunicationOpIdentifier, frozenset[CommunicationOpIdentifier]]
    needs = {}
    for send in sends:
        cid = CommunicationOpIdentifier(rank, send.dest_rank, send.comm_tag)
        other_send = sends_by_id.setdefault(cid, send)
        if other_send is not send and other_send.data != send.data:
            raise DuplicateSendError(
                f"rank {rank}: two sends of different data to rank "
                f"{send.dest_rank} with tag {send.comm_tag!r}")
        needs[cid] = deps[id(send.data)]
    return recvs, sends_by_id, needs


def _compute_comm_levels(
        send_needs: Mapping[CommunicationOpIdentifier,
                            frozenset[CommunicationOpIdentifier]],
        recv_ids: Iterable[CommunicationOpIdentifier],
        ) -> dict[CommunicationOpIdentifier, int]:
    """The level of each receive of the job (see the module docstring).

    A receive without a matching send gets level 1 (the mismatch is
    reported by :func:`~pytato.distributed.verify_distributed_partition`).
    Raises :class:`~pytato.distributed.verify.PartitionInducedCycleError` (a
    :class:`DistributedError`) if the sends and receives of all ranks
    depend on each other in a cycle.
    """
    recv_level: dict[CommunicationOpIdentifier, int] = {}
    send_level: dict[CommunicationOpIdentifier, int] = {}

    # iterative depth-first search over sends; a receive is resolved
    # through its matching send
    for start in sorted(send_needs, key=comm_id_sort_key):
        if start in send_level:
            continue
        in_progress: list[CommunicationOpIdentifier] = [start]
        on_stack = {start}
        iters = [iter(sorted(send_needs[start], key=comm_id_sort_key))]
        while iters:
            send = in_progress[-1]
            for recv in iters[-1]:
                if recv in recv_level:
                    continue
                if recv not in send_needs:
                    recv_level[recv] = 1
                    continue
                if recv in on_stack:
                    cycle = in_progress[in_progress.index(recv):]
                    raise PartitionInducedCycleError(
                        "the sends and receives of the ranks depend on each "
                        "other in a cycle: "
                        + "; ".join(
                            f"the send {format_comm_id(a)} needs the value "
                            f"received as {format_comm_id(b)}"
                            for a, b in zip(cycle, [*cycle[1:], cycle[0]],
                                            strict=True)))
                in_progress.append(recv)
                on_stack.add(recv)
                iters.append(iter(sorted(send_needs[recv], key=comm_id_sort_key)))
                break
            else:
                iters.pop()
                in_progress.pop()
                on_stack.discard(send)
                level = max((recv_level[r] for r in send_needs[send]), default=0)
                send_level[send] = level
                recv_level[send] = level + 1

    for rid in recv_ids:
        recv_level.setdefault(rid, 1)
    return recv_level

# }}}


#: The checks :func:`find_distributed_partition` runs on the partition it
#: built (unless Python runs with ``-O``):
#: :func:`pytato.distributed.verify.verify_distributed_partition`, which
#: registers itself when :mod:`pytato.distributed.verify` is imported (as the
#: package :mod:`pytato.distributed` does; that module imports this one).
_VERIFIERS: list[Callable[[Any, DistributedGraphPartition], None]] = []


# {{{ building the parts

def _copy_of(ary: Array) -> IndexLambda:
    """An array computing a copy of *ary* (for outputs that are inputs)."""
    name = "_in0"
    if ary.ndim == 0:
        expr: prim.Variable | prim.Subscript = prim.Variable(name)
    else:
        expr = prim.Subscript(prim.Variable(name), tuple(
            prim.Variable(f"_{i}") for i in range(ary.ndim)))
    return IndexLambda(ary.shape, ary.dtype, expr, {name: ary}, axes=ary.axes)


def _bounded_topological_order(roots: Iterable[ChildNode],
                               is_stop: Callable[[GraphNode], bool]
                               ) -> list[ChildNode]:
    """The nodes reachable from *roots* without going through nodes for
    which *is_stop* holds, children first (stop nodes excluded, roots
    included)."""
    order: list[ChildNode] = []
    visited: set[int] = set()
    for root in roots:
        if id(root) in visited:
            continue
        visited.add(id(root))
        stack: list[tuple[ChildNode, int]] = [(root, 0)]
        while stack:
            node, i = stack[-1]
            kids = _value_children(node)
            if i < len(kids):
                stack[-1] = (node, i + 1)
                kid = kids[i]
                if id(kid) not in visited:
                    visited.add(id(kid))
                    if not is_stop(kid):
                        stack.append((kid, 0))
            else:
                stack.pop()
                order.append(node)
    return order


class _Partitioner:
    """Assigns the nodes of the holder-free graph to parts and builds the
    part graphs."""

    def __init__(self, nodes: Sequence[GraphNode],
                 recv_level: Mapping[CommunicationOpIdentifier, int],
                 rank: int) -> None:
        self.level: dict[int, int] = {}
        # whether a node depends on nothing but size parameters: such 0-d
        # nodes (shape expressions) are recomputed in each part using them
        sp_only: dict[int, bool] = {}
        for node in nodes:
            if isinstance(node, DistributedRecv):
                self.level[id(node)] = recv_level[CommunicationOpIdentifier(
                    node.src_rank, rank, node.comm_tag)]
                sp_only[id(node)] = False
                continue
            kids = _value_children(node)
            self.level[id(node)] = max((self.level[id(k)] for k in kids),
                                       default=0)
            if isinstance(node, SizeParam):
                sp_only[id(node)] = True
            elif isinstance(node, (Placeholder, DataWrapper)):
                sp_only[id(node)] = False
            else:
                sp_only[id(node)] = all(sp_only[id(k)] for k in kids)
        self.sp_only = sp_only

    def is_cheap(self, node: Array) -> bool:
        return isinstance(node, InputArgumentBase) or (
            node.ndim == 0 and self.sp_only[id(node)])


class _PartGraphBuilder(CopyMapper):
    """Copies the computations of one part, replacing received values and
    values of earlier parts by placeholders."""

    def __init__(self, pid: PartId, part_of: Callable[[Array], PartId],
                 cut: Callable[[Array], Array]) -> None:
        super().__init__()
        self.pid = pid
        self.part_of = part_of
        self.cut = cut

    def is_stop(self, expr: GraphNode) -> bool:
        # non-array nodes (e.g. calls) are copied along with their users
        expr = _resolve(expr)
        return isinstance(expr, Array) and (
            isinstance(expr, DistributedRecv) or self.part_of(expr) < self.pid)

    def rec(self, expr: ArrayOrNames) -> ArrayOrNames:  # type: ignore[override]
        # send holders are left out: the sends are made by the executor
        expr = _resolve(expr)  # type: ignore[assignment]
        if self.is_stop(expr):
            return self.cut(expr)  # type: ignore[arg-type]
        return super().rec(expr)

    def map_distributed_send_ref_holder(self, expr: DistributedSendRefHolder
                                        ) -> Array:
        return self.rec(expr.passthrough_data)  # type: ignore[return-value]

    def build(self, roots: Sequence[Array]) -> list[Array]:
        for node in _bounded_topological_order(roots, self.is_stop):
            if not self.is_stop(node):
                super().rec(node)
        return [_copy_of(self.cut(r)) if isinstance(
                    r, (DistributedRecv, InputArgumentBase))
                else super(_PartGraphBuilder, self).rec(r)
                for r in roots]


def find_distributed_partition(mpi_communicator: mpi4py.MPI.Comm,
                               outputs: DictOfNamedArrays | Mapping[str, Array]
                               ) -> DistributedGraphPartition:
    """Split the graph of *outputs* (a :class:`~pytato.DictOfNamedArrays`
    or a mapping of names to arrays) into parts, so that each part's
    receives come before it and its sends after it, with as few parts as
    the communication of all ranks allows (see
    :mod:`pytato.distributed.partition`).

    Collective: every rank of *mpi_communicator* must call it (with its own
    graph). Raises on all ranks if one rank has two different receives or
    sends under one identifier
    (:class:`~pytato.distributed.verify.DuplicateRecvError`,
    :class:`~pytato.distributed.verify.DuplicateSendError`), or if the
    sends and receives of the ranks depend on each other in a cycle
    (:class:`~pytato.distributed.verify.PartitionInducedCycleError`).
    Unless Python runs with ``-O``, the result is then checked with
    :func:`~pytato.distributed.verify_distributed_partition` (as upstream
    does), so that sends and receives that do not match raise here, on all
    ranks; all of these errors are
    :class:`~pytato.diagnostic.DistributedError`\\ s.
    """
    comm = mpi_communicator
    rank = comm.rank

    # an error found by one rank is reported to all before any waits for it
    local_error: Exception | None = None
    try:
        outputs = _normalize_outputs(outputs)
        for name in outputs:
            if name.startswith(_NAME_PREFIX):
                raise InvalidArgumentError(f"output name '{name}': names starting with "
                                           f"'{_NAME_PREFIX}' are reserved")
        nodes = topological_order([outputs])
        sends = list(dict.fromkeys(
            n for n in nodes if isinstance(n, DistributedSend)))
        recvs, sends_by_id, send_needs = _local_comm_ops(rank, nodes, sends)
    except Exception as e:
        local_error = e
        send_needs, recvs = {}, {}

    gathered = comm.allgather((
        None if local_error is None else (
            type(local_error).__name__,
            f"{type(local_error).__name__}: {local_error}"),
        send_needs, list(recvs)))
    if local_error is not None:
        raise local_error
    errors = [(err[0], f"rank {r}: {err[1]}")
              for r, (err, _, _) in enumerate(gathered) if err is not None]
    if errors:
        # the class of the first error if it is one of the verification
        # errors, so that all ranks raise the same
        error_class: type[DistributedError] = next(
            (cls for cls in _VERIFICATION_ERRORS if cls.__name__ == errors[0][0]),
            DistributedError)
        raise error_class("find_distributed_partition failed on other "
                          "ranks: " + "; ".join(msg for _, msg in errors))
    all_needs: dict[CommunicationOpIdentifier,
                    frozenset[CommunicationOpIdentifier]] = {}
    all_recvs: list[CommunicationOpIdentifier] = []
    for _, needs, rids in gathered:
        all_needs.update(needs)
        all_recvs.extend(rids)
    recv_level = _compute_comm_levels(all_needs, all_recvs)

    result = _build_partition(rank, outputs,  # type: ignore[arg-type]
                              sends_by_id, recvs, nodes,
                              recv_level)
    if __debug__:
        # as upstream: sends and receives that do not match are reported
        # here (on all ranks), not as a hang when executing
        for verify in _VERIFIERS:
            verify(comm, result)
    return result


def _build_partition(rank: int, outputs: DictOfNamedArrays,
                     sends_by_id: Mapping[CommunicationOpIdentifier,
                                          DistributedSend],
                     recvs: Mapping[CommunicationOpIdentifier, DistributedRecv],
                     nodes: Sequence[GraphNode],
                     recv_level: Mapping[CommunicationOpIdentifier, int],
                     ) -> DistributedGraphPartition:
    info = _Partitioner(nodes, recv_level, rank)
    level = info.level

    # one part per level at which data is sent, and one for the last output
    anchors = {level[id(_resolve(s.data))] for s in sends_by_id.values()}
    if outputs:
        anchors.add(max(level[id(_resolve(a))] for a in outputs._data.values()))
    sorted_anchors = sorted(anchors)

    def part_of_level(lvl: int) -> PartId:
        pid = bisect.bisect_left(sorted_anchors, lvl)
        assert pid < len(sorted_anchors), "level above the last part"
        return pid

    part_cache: dict[int, PartId] = {}

    def part_of(node: Array) -> PartId:
        if info.is_cheap(node):
            return -1   # available in every part
        try:
            return part_cache[id(node)]
        except KeyError:
            pid = part_cache[id(node)] = part_of_level(level[id(node)])
            return pid

    # {{{ names

    names: dict[int, str] = {}
    part_outputs: dict[PartId, dict[str, Array]] = {
        pid: {} for pid in range(len(sorted_anchors))}
    for name, ary in outputs._data.items():
        ary = _resolve(ary)
        names.setdefault(id(ary), name)
        part_outputs[max(part_of(ary), 0)][name] = ary

    # received values are inputs of the parts: their names differ from
    # those of outputs, even of outputs that are copies of them
    recv_names: dict[int, str] = {}
    name_to_recv: dict[PartId, dict[str, DistributedRecv]] = {
        pid: {} for pid in part_outputs}
    for i, (cid, recv) in enumerate(sorted(recvs.items(),
                                           key=lambda kv: comm_id_sort_key(kv[0]))):
        name = recv_names[id(recv)] = f"{_NAME_PREFIX}recv{i}"
        name_to_recv[part_of_level(recv_level[cid])][name] = recv

    counter = 0

    def name_of(ary: Array) -> str:
        nonlocal counter
        try:
            return names[id(ary)]
        except KeyError:
            name = names[id(ary)] = f"{_NAME_PREFIX}value{counter}"
            counter += 1
            return name

    name_to_sends: dict[PartId, dict[str, list[DistributedSend]]] = {
        pid: {} for pid in part_outputs}
    for cid in sorted(sends_by_id, key=comm_id_sort_key):
        send = sends_by_id[cid]
        data = _resolve(send.data)
        pid = max(part_of(data), 0)
        name = name_of(data)
        part_outputs[pid][name] = data
        name_to_sends[pid].setdefault(name, []).append(send)

    # }}}

    # {{{ part graphs, last part first: they find the values of earlier ones

    name_to_output: dict[str, Array] = {}
    parts: dict[PartId, DistributedGraphPart] = {}
    for pid in reversed(range(len(sorted_anchors))):
        placeholders: dict[str, Placeholder] = {}
        needed_pids: set[PartId] = set()

        def cut(expr: Array, pid: PartId = pid,
                placeholders: dict[str, Placeholder] = placeholders,
                needed_pids: set[PartId] = needed_pids) -> Array:
            if isinstance(expr, DistributedRecv):
                name = recv_names[id(expr)]
            elif info.is_cheap(expr):
                return expr
            else:
                src_pid = part_of(expr)
                assert src_pid < pid
                name = name_of(expr)
                part_outputs[src_pid].setdefault(name, expr)
                needed_pids.add(src_pid)
            try:
                return placeholders[name]
            except KeyError:
                ph = placeholders[name] = Placeholder(
                    expr.shape, expr.dtype, name, axes=expr.axes)
                return ph

        builder = _PartGraphBuilder(pid, part_of, cut)
        out_names = list(part_outputs[pid])
        built = builder.build([part_outputs[pid][n] for n in out_names])
        name_to_output.update(zip(out_names, built, strict=True))

        user_inputs: set[str] = set()
        for ary in built:
            for name, inp in ary._pt_inputs.items():
                if (isinstance(inp, (Placeholder, SizeParam))
                        and name not in placeholders):
                    user_inputs.add(name)
        parts[pid] = DistributedGraphPart(
            pid=pid,
            needed_pids=frozenset(needed_pids),
            user_input_names=frozenset(user_inputs),
            partition_input_names=frozenset(placeholders),
            output_names=frozenset(out_names),
            name_to_recv_node=constantdict(name_to_recv[pid]),
            name_to_send_nodes=constantdict({
                name: tuple(s) for name, s in name_to_sends[pid].items()}),
        )

    # }}}

    return DistributedGraphPartition(
        parts=constantdict({pid: parts[pid] for pid in sorted(parts)}),
        name_to_output=constantdict(name_to_output),
        overall_output_names=tuple(outputs))

# }}}

# vim: foldmethod=marker
