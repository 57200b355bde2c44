"""Tests of pytato.distributed.

Partitioning, tag numbering and verification are tested in-process, with
ranks run as threads sharing a fake communicator; execution with MPI's
``COMM_SELF`` (a rank sending to itself) and under ``mpiexec`` in
subprocesses (with a timeout, so that a deadlock fails instead of hanging).
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytato as pt
from pytato.diagnostic import DistributedError
from pytato.distributed import (
    DistributedRecv,
    DistributedSend,
    DistributedSendRefHolder,
    execute_distributed_partition,
    find_distributed_partition,
    generate_code_for_partition,
    make_distributed_recv,
    make_distributed_send,
    number_distributed_tags,
    staple_distributed_send,
    verify_distributed_partition,
)


REPO = Path(__file__).resolve().parent.parent
MPI_SCRIPT = REPO / "test" / "mpi_scripts" / "distributed_checks.py"
UPSTREAM_USES_SCRIPT = REPO / "test" / "mpi_scripts" / "upstream_uses.py"
EXAMPLE = REPO / "examples" / "distributed_stencil.py"


# {{{ ranks as threads

class _Shared:
    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots: list[Any] = [None] * size


class ThreadComm:
    """The collectives of an MPI communicator (``allgather``, ``gather``,
    ``bcast``) for ranks running as threads of one process."""

    def __init__(self, shared: _Shared, rank: int) -> None:
        self._shared = shared
        self.rank = rank
        self.size = shared.size

    def _exchange(self, obj: Any) -> list[Any]:
        sh = self._shared
        sh.slots[self.rank] = pickle.loads(pickle.dumps(obj))
        sh.barrier.wait(timeout=30)
        result = list(sh.slots)
        sh.barrier.wait(timeout=30)
        return result

    def allgather(self, obj: Any) -> list[Any]:
        return self._exchange(obj)

    def gather(self, obj: Any, root: int = 0) -> list[Any] | None:
        result = self._exchange(obj)
        return result if self.rank == root else None

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return self._exchange(obj)[root]


def run_ranks(size: int, fn: Callable[[ThreadComm], Any]
              ) -> tuple[list[Any], list[BaseException | None]]:
    """Run ``fn(comm)`` for *size* ranks as threads; return the results and
    exceptions by rank."""
    shared = _Shared(size)
    results: list[Any] = [None] * size
    errors: list[BaseException | None] = [None] * size

    def target(rank: int) -> None:
        try:
            results[rank] = fn(ThreadComm(shared, rank))
        except BaseException as e:
            errors[rank] = e

    threads = [threading.Thread(target=target, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "a rank thread hangs"
    return results, errors


def partition_on_ranks(size: int, make_outputs: Callable[[int, int], Any],
                       verify: bool = True) -> list[Any]:
    def fn(comm: ThreadComm) -> Any:
        part = find_distributed_partition(
            comm, make_outputs(comm.rank, comm.size))
        part, _ = number_distributed_tags(comm, part, base_tag=0)
        if verify:
            verify_distributed_partition(comm, part)
        return part

    results, errors = run_ranks(size, fn)
    for e in errors:
        if e is not None:
            raise e
    return results

# }}}


# {{{ nodes

def test_nodes_equality_hash_pickle() -> None:
    x = pt.make_placeholder("x", (4,), np.float64)
    recv = make_distributed_recv(1, ("halo", 0), (4,), np.float64)

    def build() -> pt.Array:
        return staple_distributed_send(2 * x, 1, ("halo", 0),
                                       stapled_to=x + recv)

    a, b = build(), build()
    assert isinstance(a, DistributedSendRefHolder)
    assert a == b and hash(a) == hash(b)
    assert a.shape == (4,) and a.dtype == np.float64
    assert isinstance(a.send, DistributedSend)
    assert a.send.dest_rank == 1 and a.send.comm_tag == ("halo", 0)
    assert a != staple_distributed_send(2 * x, 0, ("halo", 0),
                                        stapled_to=x + recv)
    assert a != staple_distributed_send(3 * x, 1, ("halo", 0),
                                        stapled_to=x + recv)
    assert pickle.loads(pickle.dumps(a)) == a
    assert pickle.loads(pickle.dumps(recv)) == recv
    assert isinstance(recv, DistributedRecv) and recv.shape == (4,)
    assert "DistributedSend" in repr(a.send)


@pytest.mark.parametrize(("make", "exc"), [
    (lambda x: make_distributed_send(x, -1, "t"), ValueError),
    (lambda x: make_distributed_send(x, 1.5, "t"), TypeError),
    (lambda x: make_distributed_send(x, 0, ["unhashable"]), TypeError),
    (lambda x: make_distributed_send(np.ones(3), 0, "t"), TypeError),
    (lambda x: staple_distributed_send(x, 0, "t", stapled_to=3), TypeError),
    (lambda x: make_distributed_recv(0, "t", (-1,), np.float64), ValueError),
    (lambda x: make_distributed_recv(0, "t", (2,), object), TypeError),
    (lambda x: make_distributed_recv(True, "t", (2,), np.float64), TypeError),
])
def test_constructor_errors(make: Callable[[pt.Array], Any],
                            exc: type[Exception]) -> None:
    x = pt.make_placeholder("x", (4,), np.float64)
    with pytest.raises(exc):
        make(x)


def test_mappers_visit_sends() -> None:
    from pytato.transform import CachedWalkMapper, CopyMapper, InputGatherer

    x = pt.make_placeholder("x", (4,), np.float64)
    z = pt.make_placeholder("z", (4,), np.float64)
    y = pt.make_placeholder("y", (4,), np.float64)
    holder = staple_distributed_send(x + 1, 1, "t", stapled_to=2 * z)
    assert {inp.name for inp in InputGatherer()(holder)} == {"x", "z"}
    assert CopyMapper()(holder) is holder

    class Rename(CopyMapper):
        def map_placeholder(self, expr: Any) -> Any:
            return y if expr.name == "x" else expr

    new = Rename()(holder)
    assert new.send.data == y + 1 and new.passthrough_data == 2 * z

    class Collect(CachedWalkMapper):
        def __init__(self) -> None:
            super().__init__()
            self.kinds: list[str] = []

        def post_visit(self, expr: Any) -> None:
            self.kinds.append(type(expr).__name__)

    c = Collect()
    c(holder)
    assert "DistributedSend" in c.kinds and "DistributedSendRefHolder" in c.kinds

# }}}


# {{{ partitioning

def _ring(rank: int, size: int) -> tuple[int, int]:
    return (rank + 1) % size, (rank - 1) % size


def _graph_no_comm(rank: int, size: int) -> Any:
    x = pt.make_placeholder("x", (4,), np.float64)
    return {"y": 2 * x, "w": x + 1}


def _graph_exchange(rank: int, size: int) -> Any:
    # one halo exchange: sends at level 0, output at level 1
    nxt, prev = _ring(rank, size)
    x = pt.make_placeholder("x", (4,), np.float64)
    recv = make_distributed_recv(prev, "a", (4,), np.float64)
    return {"y": staple_distributed_send(2 * x, nxt, "a",
                                         stapled_to=x + recv)}


def _graph_two_levels(rank: int, size: int) -> Any:
    nxt, prev = _ring(rank, size)
    x = pt.make_placeholder("x", (4,), np.float64)
    r1 = make_distributed_recv(prev, "a", (4,), np.float64)
    z = staple_distributed_send(2 * x, nxt, "a", stapled_to=x + r1)
    r2 = make_distributed_recv(prev, "b", (4,), np.float64)
    return {"w": staple_distributed_send(z, nxt, "b", stapled_to=z * r2),
            "early": 3 * x}


def _graph_independent_recvs(rank: int, size: int) -> Any:
    # two receives of one level and an output not depending on them: one
    # part computes everything after the receives arrive (the sends do not
    # depend on any receive)
    nxt, prev = _ring(rank, size)
    x = pt.make_placeholder("x", (4,), np.float64)
    r1 = make_distributed_recv(prev, "a", (4,), np.float64)
    r2 = make_distributed_recv(nxt, "b", (4,), np.float64)
    y = staple_distributed_send(x, nxt, "a", stapled_to=r1 + r2)
    y = staple_distributed_send(x, prev, "b", stapled_to=y)
    return {"y": y, "x2": x * x}


def _graph_one_way(rank: int, size: int) -> Any:
    # rank 0 sends to rank 1, rank 1 returns a function of it to rank 0
    x = pt.make_placeholder("x", (4,), np.float64)
    if rank == 0:
        back = make_distributed_recv(1, "back", (4,), np.float64)
        return {"y": staple_distributed_send(x, 1, "there",
                                             stapled_to=back + x)}
    if rank == 1:
        got = make_distributed_recv(0, "there", (4,), np.float64)
        return {"y": staple_distributed_send(got * 2, 0, "back",
                                             stapled_to=got + x)}
    return {"y": x}


def _graph_relay(rank: int, size: int) -> Any:
    # a value travels 0 -> 1 -> 2 -> ... ; each rank adds its x
    x = pt.make_placeholder("x", (4,), np.float64)
    if rank == 0:
        val = x
    else:
        val = make_distributed_recv(rank - 1, ("relay", rank - 1), (4,),
                                    np.float64) + x
    if rank < size - 1:
        val = staple_distributed_send(val, rank + 1, ("relay", rank),
                                      stapled_to=val)
    return {"y": val}


@pytest.mark.parametrize(("make_outputs", "size", "expected_nparts"), [
    (_graph_no_comm, 2, [1, 1]),
    (_graph_exchange, 2, [2, 2]),
    (_graph_exchange, 3, [2, 2, 2]),
    (_graph_two_levels, 2, [3, 3]),
    (_graph_independent_recvs, 2, [2, 2]),
    (_graph_one_way, 2, [2, 1]),
    (_graph_one_way, 3, [2, 1, 1]),
    (_graph_relay, 4, [1, 1, 1, 1]),
])
def test_partition_counts(make_outputs: Callable[[int, int], Any], size: int,
                          expected_nparts: list[int]) -> None:
    parts = partition_on_ranks(size, make_outputs)
    assert [len(p.parts) for p in parts] == expected_nparts


def test_schedule_task_batches() -> None:
    from pytato.distributed.partition import (
        _schedule_task_batches,
        _schedule_task_batches_counted,
    )

    rng = np.random.default_rng(seed=5)
    for ntasks in (0, 1, 7, 60):
        # a random DAG: task i needs some of the tasks before it
        needs = {i: {int(j) for j in rng.integers(0, i, size=3)} if i else set()
                 for i in range(ntasks)}
        # (listed in another order than that of the needs)
        needs = dict(reversed(needs.items()))
        batches = _schedule_task_batches(needs)
        assert sorted(t for b in batches for t in b) == list(range(ntasks))
        batch_of = {t: i for i, b in enumerate(batches) for t in b}
        longest: dict[int, int] = {}
        for task in range(ntasks):
            # after all it needs, as early as possible: the number of
            # batches is the number of tasks on the longest chain
            assert all(batch_of[t] < batch_of[task] for t in needs[task])
            assert batch_of[task] == max(
                (batch_of[t] + 1 for t in needs[task]), default=0)
            longest[task] = 1 + max((longest[t] for t in needs[task]),
                                    default=0)
        assert len(batches) == max(longest.values(), default=0)
        assert _schedule_task_batches_counted(needs)[0] == batches

    # each task visited once: linear in the length of a chain, in either
    # order, and no recursion
    for order in (1, -1):
        counts = []
        sizes = [10, 1000, 100_000]
        for n in sizes:
            chain = {i: ({i - 1} if i else set()) for i in range(n)[::order]}
            batches, count = _schedule_task_batches_counted(chain)
            assert len(batches) == n and batches[-1] == {n - 1}
            counts.append(count)
        assert [c / n for c, n in zip(counts, sizes, strict=True)] == [2, 2, 2]


def test_schedule_task_batches_errors() -> None:
    from pytools.graph import CycleError

    from pytato.distributed.partition import _schedule_task_batches

    with pytest.raises(CycleError):
        _schedule_task_batches({0: {2}, 1: {0}, 2: {1}, 3: set()})
    # a needed task that is not a key: a KeyError naming it
    with pytest.raises(KeyError, match="task 5 is needed"):
        _schedule_task_batches({0: set(), 1: {0, 5}})


def test_partition_structure() -> None:
    part0, _ = partition_on_ranks(2, _graph_two_levels)
    p0, p1, p2 = (part0.parts[i] for i in range(3))
    # part 0 computes what is sent first (and the output not needing
    # any receive); part 1 waits for the first receive and sends again;
    # part 2 waits for the second receive
    assert p0.name_to_recv_node == {} and len(p0.name_to_send_nodes) == 1
    assert p0.user_input_names == {"x"} and p0.needed_pids == frozenset()
    assert len(p1.name_to_recv_node) == 1 and len(p1.name_to_send_nodes) == 1
    assert len(p2.name_to_recv_node) == 1 and not p2.name_to_send_nodes
    assert p1.needed_pids == frozenset() and p2.needed_pids == {1}
    assert "w" in p2.output_names
    assert "early" in p0.output_names
    assert set(part0.overall_output_names) == {"w", "early"}
    for p in (p0, p1, p2):
        for name in p.output_names:
            assert name in part0.name_to_output
        for name, sends in p.name_to_send_nodes.items():
            assert name in p.output_names
            assert all(isinstance(s.comm_tag, int) for s in sends)
    # received values and values of earlier parts are placeholders
    names = {inp for ary in part0.name_to_output.values()
             for inp in ary._pt_inputs}
    assert names >= p1.partition_input_names | p2.partition_input_names
    assert all(not isinstance(n, (DistributedRecv, DistributedSendRefHolder))
               for ary in part0.name_to_output.values()
               for n in pt.transform.topological_order([ary]))


def test_partition_deep_graph() -> None:
    # no recursion that grows with the depth of the graph
    def make(rank: int, size: int) -> Any:
        nxt, prev = _ring(rank, size)
        y = pt.make_placeholder("x", (3,), np.float64)
        for i in range(6000):
            y = y + 1
            if i == 3000:
                y = staple_distributed_send(y, nxt, "mid", stapled_to=y)
                y = y * make_distributed_recv(prev, "mid", (3,), np.float64)
        return {"y": y}

    parts = partition_on_ranks(2, make, verify=False)
    assert [len(p.parts) for p in parts] == [2, 2]


def test_outputs_that_are_inputs_or_received() -> None:
    def make(rank: int, size: int) -> Any:
        nxt, prev = _ring(rank, size)
        x = pt.make_placeholder("x", (4,), np.float64)
        recv = make_distributed_recv(prev, "a", (4,), np.float64)
        return {"x": staple_distributed_send(x, nxt, "a", stapled_to=x),
                "r": recv}

    part, _ = partition_on_ranks(2, make)
    assert len(part.parts) == 2
    assert part.parts[1].output_names == {"r"}
    out_names = set(part.name_to_output)
    for p in part.parts.values():
        # no program has an output named like one of its inputs
        assert not (p.all_input_names() & p.output_names - {"x"})
        assert not (set(p.name_to_recv_node) & out_names)


def test_cycle_is_reported_on_all_ranks() -> None:
    def make(rank: int, size: int) -> Any:
        other = 1 - rank
        x = pt.make_placeholder("x", (4,), np.float64)
        got = make_distributed_recv(other, f"from{other}", (4,), np.float64)
        return {"y": staple_distributed_send(got + x, other, f"from{rank}",
                                             stapled_to=got)}

    from pytato.distributed.verify import PartitionInducedCycleError
    with pytest.raises(PartitionInducedCycleError, match="cycle") as info:
        partition_on_ranks(2, make)
    assert isinstance(info.value, DistributedError)
    assert isinstance(info.value, AssertionError)
    assert "rank 0 -> rank 1" in str(info.value)
    assert "'from1'" in str(info.value)


def test_duplicate_identifier_is_reported_on_all_ranks() -> None:
    def make(rank: int, size: int) -> Any:
        if rank == 0:
            a = make_distributed_recv(1, "t", (4,), np.float64)
            b = make_distributed_recv(1, "t", (5,), np.float64)
            return {"a": a, "b": b}
        x = pt.make_placeholder("x", (4,), np.float64)
        return {"y": x}

    from pytato.distributed.verify import DuplicateRecvError

    _, errors = run_ranks(2, lambda comm: find_distributed_partition(
        comm, make(comm.rank, comm.size)))
    # upstream's class, on all ranks
    assert all(type(e) is DuplicateRecvError for e in errors), errors
    assert all(isinstance(e, DistributedError) for e in errors)
    assert "two different receives from rank 1 with tag 't'" in str(errors[0])
    assert "rank 0" in str(errors[1])


def test_duplicate_send_is_reported_on_all_ranks() -> None:
    from pytato.distributed.verify import DuplicateSendError

    def make(rank: int, size: int) -> Any:
        x = pt.make_placeholder("x", (4,), np.float64)
        if rank == 0:
            y = staple_distributed_send(x, 1, "t", stapled_to=x)
            return {"y": staple_distributed_send(2 * x, 1, "t", stapled_to=y)}
        return {"y": make_distributed_recv(0, "t", (4,), np.float64)}

    _, errors = run_ranks(2, lambda comm: find_distributed_partition(
        comm, make(comm.rank, comm.size)))
    assert all(type(e) is DuplicateSendError for e in errors), errors
    assert "two sends of different data to rank 1 with tag 't'" in str(errors[1])


def test_number_distributed_tags() -> None:
    tags = ["b", 7, ("halo", 2), ("halo", 10), "a", 3]

    def make(rank: int, size: int) -> Any:
        other = 1 - rank
        x = pt.make_placeholder("x", (2,), np.float64)
        y: pt.Array = x
        # rank 0 uses the tags in one order, rank 1 in another
        for tag in (tags if rank == 0 else tags[::-1]):
            y = staple_distributed_send(x, other, tag, stapled_to=y)
            y = y + make_distributed_recv(other, tag, (2,), np.float64)
        return {"y": y}

    def fn(comm: ThreadComm) -> Any:
        part = find_distributed_partition(comm, make(comm.rank, comm.size))
        return number_distributed_tags(comm, part, base_tag=40)

    results, errors = run_ranks(2, fn)
    assert errors == [None, None]
    numberings = []
    for part, next_tag in results:
        assert next_tag == 40 + len(tags)
        numbering = {}
        for p in part.parts.values():
            for recv in p.name_to_recv_node.values():
                numbering[part.user_comm_tags[recv.comm_tag]] = recv.comm_tag
            for sends in p.name_to_send_nodes.values():
                for s in sends:
                    numbering[part.user_comm_tags[s.comm_tag]] = s.comm_tag
        assert sorted(numbering.values()) == list(range(40, 40 + len(tags)))
        numberings.append(numbering)
    assert numberings[0] == numberings[1]
    # integers first, numerically; then by type and repr
    assert numberings[0][3] < numberings[0][7] < numberings[0]["a"]

# }}}


# {{{ verification

def _mismatched(kind: str) -> Callable[[int, int], Any]:
    def make(rank: int, size: int) -> Any:
        x = pt.make_placeholder("x", (6,), np.float64)
        if rank == 0:
            dtype = np.float32 if kind == "dtype" else np.float64
            return {"y": staple_distributed_send(x.astype(dtype), 1, "a",
                                                 stapled_to=x)}
        if kind == "no-recv":
            return {"y": x}
        shape = (5,) if kind == "shape" else (6,)
        src = 2 if kind == "rank" else 0
        return {"y": make_distributed_recv(src, "a", shape, np.float64)}
    return make


@pytest.mark.parametrize(("kind", "expected", "error_class"), [
    ("shape", "rank 0 sends shape (6,), float64, but rank 1 receives shape "
              "(5,), float64", "DistributedPartitionVerificationError"),
    ("dtype", "rank 0 sends shape (6,), float32, but rank 1 receives shape "
              "(6,), float64", "DistributedPartitionVerificationError"),
    ("no-recv", "rank 0 sends to rank 1 with tag 'a'", "MissingRecvError"),
    ("rank", "there is no rank 2", "DistributedPartitionVerificationError"),
])
def test_verify_reports_mismatches_on_all_ranks(kind: str, expected: str,
                                                error_class: str) -> None:
    # find_distributed_partition verifies its result (as upstream's does
    # unless python runs with -O)
    import pytato.distributed.verify as verify_module

    def fn(comm: ThreadComm) -> None:
        find_distributed_partition(comm, _mismatched(kind)(comm.rank, 2))

    _, errors = run_ranks(2, fn)
    for e in errors:
        assert isinstance(e, DistributedError), e
        # the reference pytato's classes, all raising the same on all ranks
        assert type(e) is getattr(verify_module, error_class), e
        assert isinstance(e, verify_module.DistributedPartitionVerificationError)
        assert expected in str(e)


def test_verify_names_numbered_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    # as under python -O: find_distributed_partition does not verify, the
    # tags are numbered, then verification names the user's tags
    import pytato.distributed.partition as partition_module
    import pytato.distributed.verify as verify_module
    real_verify = verify_module.verify_distributed_partition
    assert real_verify in partition_module._VERIFIERS
    monkeypatch.setattr(partition_module, "_VERIFIERS", [])

    def fn(comm: ThreadComm) -> None:
        part = find_distributed_partition(comm,
                                          _mismatched("no-recv")(comm.rank, 2))
        part, _ = number_distributed_tags(comm, part, 0)
        real_verify(comm, part)

    _, errors = run_ranks(2, fn)
    for e in errors:
        assert type(e) is verify_module.MissingRecvError, e
        assert "rank 0 sends to rank 1 with tag 0 (numbered from 'a')" in str(e)


def test_verify_accepts_consistent_partitions() -> None:
    partition_on_ranks(3, _graph_two_levels)
    partition_on_ranks(3, _graph_relay)

# }}}


# {{{ execution

def _generator(target: str) -> Callable[..., Any]:
    if target == "numpy":
        return pt.generate_numpy
    gen = getattr(pt, "generate_loopy", None)
    if gen is None:
        pytest.skip("pytato.generate_loopy is not available")
    return gen  # type: ignore[no-any-return]


def _result_on_host(value: Any, queue: Any) -> np.ndarray:
    """A result of :func:`execute_distributed_partition`, which must be a
    device array with a queue (as upstream), a numpy array without."""
    if queue is None:
        assert isinstance(value, np.ndarray), type(value)
        return value
    import pyopencl.array as cl_array
    assert isinstance(value, cl_array.Array), type(value)
    return value.get(queue)


@pytest.mark.parametrize("target", ["numpy", "loopy"])
def test_execute_on_comm_self(target: str, request: pytest.FixtureRequest
                              ) -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    generate = _generator(target)
    queue = request.getfixturevalue("queue") if target == "loopy" else None
    comm = MPI.COMM_SELF

    x = pt.make_placeholder("x", (5,), np.float64)
    # a rank sending to itself: two levels of communication
    r1 = make_distributed_recv(0, "a", (5,), np.float64)
    y = staple_distributed_send(2 * x, 0, "a", stapled_to=r1 + x)
    r2 = make_distributed_recv(0, "b", (5,), np.float64)
    z = staple_distributed_send(y, 0, "b", stapled_to=r2 * y)
    outputs = {"z": z, "r1": r1, "x_out": x, "early": x - 1}

    part = find_distributed_partition(comm, outputs)
    part, _ = number_distributed_tags(comm, part, base_tag=0)
    verify_distributed_partition(comm, part)
    assert len(part.parts) == 3
    prgs = generate_code_for_partition(part, generate_code=generate)
    xv = np.linspace(0, 1, 5)
    out = execute_distributed_partition(part, prgs, queue, comm,
                                        input_args={"x": xv})
    out = {k: _result_on_host(v, queue) for k, v in out.items()}
    np.testing.assert_allclose(out["r1"], 2 * xv)
    np.testing.assert_allclose(out["z"], (3 * xv) ** 2)
    np.testing.assert_allclose(out["x_out"], xv)
    np.testing.assert_allclose(out["early"], xv - 1)


@pytest.mark.parametrize("target", ["numpy", "loopy"])
def test_execute_symbolic_shapes(target: str, request: pytest.FixtureRequest
                                 ) -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    generate = _generator(target)
    queue = request.getfixturevalue("queue") if target == "loopy" else None
    comm = MPI.COMM_SELF

    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 2), np.float64)
    recv = make_distributed_recv(0, "a", (n, 2), np.float64)
    y = staple_distributed_send(2 * x, 0, "a", stapled_to=recv + x)
    part = find_distributed_partition(comm, {"y": y})
    part, _ = number_distributed_tags(comm, part, base_tag=0)
    verify_distributed_partition(comm, part)
    assert all(p.user_input_names == {"n", "x"} for p in part.parts.values())
    prgs = generate_code_for_partition(part, generate_code=generate)
    xv = np.arange(6.0).reshape(3, 2)
    out = execute_distributed_partition(part, prgs, queue, comm,
                                        input_args={"x": xv, "n": 3})["y"]
    np.testing.assert_allclose(_result_on_host(out, queue), 3 * xv)


def _self_exchange() -> tuple[Any, Any]:
    """A partition (on ``COMM_SELF``) sending ``2 * x`` to itself, with the
    outputs ``y = x * received`` and ``r`` (the received value)."""
    MPI = pytest.importorskip("mpi4py.MPI")
    comm = MPI.COMM_SELF
    x = pt.make_placeholder("x", (4,), np.float64)
    recv = make_distributed_recv(0, "a", (4,), np.float64)
    y = staple_distributed_send(2 * x, 0, "a", stapled_to=x * recv)
    part = find_distributed_partition(comm, {"y": y, "r": recv})
    part, _ = number_distributed_tags(comm, part, base_tag=0)
    return comm, part


@pytest.mark.parametrize("as_device", [False, True])
def test_execute_device_results_and_allocator(queue: Any,
                                              as_device: bool) -> None:
    # inputs as numpy or pyopencl arrays; results (received ones too) are
    # arrays on the queue, allocated by the allocator given
    import pyopencl.array as cl_array
    from pyopencl.tools import ImmediateAllocator, MemoryPool

    comm, part = _self_exchange()
    pool = MemoryPool(ImmediateAllocator(queue))
    xv = np.linspace(-1, 1, 4)
    x_in = cl_array.to_device(queue, xv) if as_device else xv
    out = execute_distributed_partition(
        part, generate_code_for_partition(part), queue, comm,
        allocator=pool, input_args={"x": x_in})
    for name in ("y", "r"):
        assert isinstance(out[name], cl_array.Array)
        assert out[name].allocator is pool
    np.testing.assert_allclose(out["r"].get(queue), 2 * xv)
    np.testing.assert_allclose(out["y"].get(queue), 2 * xv * xv)


def test_execute_device_results_of_host_programs(queue: Any) -> None:
    # programs called with a queue that return numpy arrays (and take no
    # out_host) still give device results; device inputs reach programs
    # that take no queue as numpy arrays
    import pyopencl.array as cl_array

    comm, part = _self_exchange()
    numpy_prgs = generate_code_for_partition(part,
                                             generate_code=pt.generate_numpy)
    seen: list[type] = []

    def with_queue(prg: Any) -> Any:
        def run(queue: Any, allocator: Any = None, **kwargs: Any) -> Any:
            seen.extend(type(v) for v in kwargs.values())
            return None, prg(**{k: v.get(queue) if hasattr(v, "get") else v
                                for k, v in kwargs.items()})
        return run

    xv = np.arange(4.0)
    out = execute_distributed_partition(
        part, {pid: with_queue(prg) for pid, prg in numpy_prgs.items()},
        queue, comm, input_args={"x": xv})
    assert all(isinstance(v, cl_array.Array) for v in out.values())
    assert cl_array.Array in seen   # received values passed on the device
    np.testing.assert_allclose(out["y"].get(queue), 2 * xv * xv)

    out = execute_distributed_partition(
        part, numpy_prgs, None, comm,
        input_args={"x": cl_array.to_device(queue, xv)})
    assert all(isinstance(v, np.ndarray) for v in out.values())
    np.testing.assert_allclose(out["y"], 2 * xv * xv)


def test_execute_requires_numbered_tags_and_inputs() -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    comm = MPI.COMM_SELF
    x = pt.make_placeholder("x", (2,), np.float64)
    y = staple_distributed_send(x, 0, "a", stapled_to=x + make_distributed_recv(
        0, "a", (2,), np.float64))
    part = find_distributed_partition(comm, {"y": y})
    prgs = generate_code_for_partition(part, generate_code=pt.generate_numpy)
    with pytest.raises(DistributedError, match="missing input arguments: x"):
        execute_distributed_partition(part, prgs, None, comm)
    with pytest.raises(DistributedError, match="number_distributed_tags"):
        execute_distributed_partition(part, prgs, None, comm,
                                      input_args={"x": np.ones(2)})

# }}}


# {{{ under mpiexec

def _mpiexec() -> str:
    pytest.importorskip("mpi4py")
    candidate = Path(sys.executable).parent / "mpiexec"
    found = str(candidate) if candidate.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("mpiexec not found")
    return found


#: Variables of the test process's environment that the ranks get too.
_FORWARDED_ENV = ("PYOPENCL_CTX", "PYOPENCL_TEST", "PYTATO_PROGRAM_STORE_DIR",
                  "PYTATO_ALLOW_NO_OPENCL", "POCL_CACHE_DIR", "XDG_CACHE_HOME")


def run_mpi(nranks: int, args: list[str], timeout: float = 60) -> str:
    """Run ``python *args`` on *nranks* ranks; return the output. A run
    longer than *timeout* seconds (a deadlock) fails the test."""
    from mpi_launch import mpi_implementation, mpiexec_command

    mpiexec = _mpiexec()
    # (this checkout first, then the environment's own path: dependencies
    # may be installed there)
    path = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    rank_env = {name: os.environ[name] for name in _FORWARDED_ENV
                if name in os.environ}
    rank_env.update(PYTHONPATH=path, OMP_NUM_THREADS="1")
    cmd, launcher_env = mpiexec_command(
        mpiexec, nranks, [sys.executable, *args],
        implementation=mpi_implementation(mpiexec), env_vars=rank_env)
    env = dict(os.environ, **launcher_env)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{' '.join(cmd)} did not finish in {timeout} s "
                    f"(deadlock?)\nstdout:\n{out}\nstderr:\n{err}")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out}\n{err}"
    return out


# {{{ launching under MPICH and Open MPI

def test_mpi_implementation_from_version_text() -> None:
    from mpi_launch import implementation_from_version_text as impl

    # what the launchers and libraries print
    assert impl("mpiexec (Open MPI) 4.1.5\n\nReport bugs to "
                "http://www.open-mpi.org/community/help/") == "openmpi"
    assert impl("mpirun (Open MPI) 5.0.3\n") == "openmpi"
    assert impl("mpiexec (OpenRTE) 2.1.1\n") == "openmpi"
    assert impl("Open MPI v4.1.4, package: Debian OpenMPI") == "openmpi"
    assert impl("HYDRA build details:\n    Version: 4.1.2") == "mpich"
    assert impl("MPICH Version:      5.0.2\nMPICH Release date: ...") \
        == "mpich"
    assert impl("Intel(R) MPI Library for Linux* OS, Version 2021.10") \
        == "mpich"
    assert impl("") == "unknown"
    assert impl("some other launcher 1.0") == "unknown"


def _fake_launcher(tmp_path: Path, version_text: str) -> str:
    script = tmp_path / "mpiexec"
    script.write_text(f"#!/bin/sh\necho '{version_text}'\n")
    script.chmod(0o755)
    return str(script)


def test_mpi_implementation_of_launcher(tmp_path: Path) -> None:
    from mpi_launch import mpi_implementation

    (tmp_path / "ompi").mkdir()
    (tmp_path / "unknown").mkdir()
    ompi = _fake_launcher(tmp_path / "ompi", "mpiexec (Open MPI) 4.1.5")
    assert mpi_implementation(ompi) == "openmpi"
    # a launcher that does not say: the library of mpi4py decides
    pytest.importorskip("mpi4py")
    unknown = _fake_launcher(tmp_path / "unknown", "launcher 1.0")
    from mpi4py import MPI
    from mpi_launch import implementation_from_version_text
    assert mpi_implementation(unknown) == implementation_from_version_text(
        MPI.Get_library_version())


def test_mpiexec_command_open_mpi() -> None:
    from mpi_launch import OPENMPI_ROOT_ENV, mpiexec_command

    env_vars = {"PYTHONPATH": "/src:/lib", "OMP_NUM_THREADS": "1"}
    cmd, launcher_env = mpiexec_command(
        "/usr/bin/mpiexec", 3, ["python", "script.py", "arg"],
        implementation="openmpi", env_vars=env_vars, as_root=False)
    assert cmd == ["/usr/bin/mpiexec", "-n", "3", "--oversubscribe",
                   "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS",
                   "python", "script.py", "arg"]
    # the values forwarded with -x are those of the launcher's environment
    assert launcher_env == env_vars

    cmd, launcher_env = mpiexec_command(
        "mpiexec", 2, ["python", "s.py"], implementation="openmpi",
        env_vars={"A": "1"}, as_root=True)
    assert cmd == ["mpiexec", "-n", "2", "--oversubscribe",
                   "--allow-run-as-root", "-x", "A", "python", "s.py"]
    assert launcher_env == {"A": "1", **OPENMPI_ROOT_ENV}
    assert OPENMPI_ROOT_ENV == {"OMPI_ALLOW_RUN_AS_ROOT": "1",
                                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def test_mpiexec_command_mpich_and_unknown() -> None:
    from mpi_launch import mpiexec_command

    env_vars = {"PYTHONPATH": "/src:/lib", "OMP_NUM_THREADS": "1"}
    for as_root in (False, True):
        cmd, launcher_env = mpiexec_command(
            "mpiexec", 4, ["python", "s.py"], implementation="mpich",
            env_vars=env_vars, as_root=as_root)
        assert cmd == ["mpiexec", "-n", "4",
                       "-genv", "PYTHONPATH", "/src:/lib",
                       "-genv", "OMP_NUM_THREADS", "1", "python", "s.py"]
        assert launcher_env == env_vars
    cmd, launcher_env = mpiexec_command(
        "mpiexec", 2, ["python", "s.py"], implementation="unknown",
        env_vars=env_vars, as_root=True)
    assert cmd == ["mpiexec", "-n", "2", "python", "s.py"]
    assert launcher_env == env_vars


def test_mpiexec_command_runs_here() -> None:
    # the command built for the MPI installed here starts the ranks with
    # the variables given
    from mpi_launch import mpi_implementation, mpiexec_command

    mpiexec = _mpiexec()
    cmd, launcher_env = mpiexec_command(
        mpiexec, 2, [sys.executable, "-c",
                     "import os; os.write(1, ('VALUE ' + os.environ['PT_MPI_TEST']"
                     " + '\\n').encode())"],
        implementation=mpi_implementation(mpiexec),
        env_vars={"PT_MPI_TEST": "a b:c"})
    env = dict(os.environ, **launcher_env)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         timeout=60, check=True).stdout
    assert out.count("VALUE a b:c") == 2, out

# }}}


@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_stencil_example(nranks: int) -> None:
    out = run_mpi(nranks, [str(EXAMPLE), "--target", "numpy"])
    assert f"on {nranks} rank(s)" in out and "matches" in out


def test_stencil_example_loopy() -> None:
    _generator("loopy")
    out = run_mpi(2, [str(EXAMPLE), "--target", "loopy", "--steps", "2"])
    assert "matches" in out


_UPSTREAM_USES = ("basic", "send-ref-holder", "placeholders",
                  "symbolic-tags", "random-dag", "empty",
                  "no-output-on-rank0", "zero-size", "allocator",
                  "verify-errors")


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_mpi_upstream_uses(nranks: int) -> None:
    # all scenarios in one launch (a failure prints the scenario and its
    # traceback)
    pytest.importorskip("pyopencl")
    out = run_mpi(nranks, [str(UPSTREAM_USES_SCRIPT), *_UPSTREAM_USES],
                  timeout=300)
    assert len(re.findall(r"OK rank \d", out)) == nranks, out


@pytest.mark.parametrize("nranks", [2, 3])
def test_mpi_stapled_sends(nranks: int) -> None:
    out = run_mpi(nranks, [str(MPI_SCRIPT), "stapled"])
    assert len(re.findall(r"OK rank \d", out)) == nranks, out


@pytest.mark.parametrize(("kind", "expected"), [
    ("shape", "rank 0 sends shape (6,), float64, but rank 1 receives shape "
              "(5,), float64"),
    ("dtype", "float32, but rank 1 receives"),
    ("tag", "rank 1 receives from rank 0 with tag 'b'"),
])
def test_mpi_mismatch_is_an_error_not_a_hang(kind: str, expected: str) -> None:
    out = run_mpi(3, [str(MPI_SCRIPT), f"mismatch-{kind}"])
    # one message per rank, each naming the ranks, tag, shapes and dtypes
    messages = re.findall(r"RAISED rank \d: [^\n]*?(?=RAISED|\n|$)", out)
    assert len(messages) == 3, out
    assert all(expected in msg for msg in messages), out

# }}}

# vim: foldmethod=marker
