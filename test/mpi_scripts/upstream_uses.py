"""Distributed scenarios as code written for upstream pytato uses them, run
under mpiexec by test/test_distributed.py.

Usage: mpiexec -n N python upstream_uses.py SCENARIO

Graphs are built with :func:`pytato.staple_distributed_send`,
:func:`pytato.make_distributed_send` and :func:`pytato.make_distributed_recv`,
partitioned, compiled with the default code generator (loopy) and run with
:func:`pytato.execute_distributed_partition` on an OpenCL queue; the results
are :class:`pyopencl.array.Array`\\ s, read with ``.get(queue)`` and
compared with numpy. Each rank prints ``OK rank N`` when its checks pass;
an exception prints its traceback and aborts all ranks.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from mpi4py import MPI

import pytato as pt


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def make_queue() -> cl.CommandQueue:
    return cl.CommandQueue(cl.create_some_context(interactive=False))


def get(queue: cl.CommandQueue, context: dict[str, Any], name: str
        ) -> np.ndarray:
    """The output *name*, which must be a device array, on the host."""
    value = context[name]
    assert isinstance(value, cl_array.Array), (name, type(value))
    assert value.queue is None or value.queue.context == queue.context
    return value.get(queue)


def expect_raises(exc_type: type[BaseException], fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except exc_type:
        return
    raise AssertionError(f"{exc_type.__name__} not raised")


# {{{ scenarios

def basic(comm: MPI.Comm) -> None:
    """A halo exchange around the ring with integer tags (no numbering),
    data from a DataWrapper."""
    rank, size = comm.rank, comm.size
    rng = np.random.default_rng(seed=27)
    x_in = rng.integers(100, size=(4, 4))
    x = pt.make_data_wrapper(x_in)
    halo = pt.staple_distributed_send(
        x, dest_rank=(rank - 1) % size, comm_tag=42,
        stapled_to=pt.make_distributed_recv(
            src_rank=(rank + 1) % size, comm_tag=42, shape=(4, 4),
            dtype=x_in.dtype))
    y = x + halo
    outputs = pt.make_dict_of_named_arrays({"out": y})
    parts = pt.find_distributed_partition(comm, outputs)
    assert isinstance(parts, pt.DistributedGraphPartition)
    assert all(isinstance(p, pt.DistributedGraphPart)
               for p in parts.parts.values())
    assert "digraph" in pt.get_dot_graph_from_partition(parts)
    prg_per_partition = pt.generate_code_for_partition(parts)
    queue = make_queue()
    context = pt.execute_distributed_partition(parts, prg_per_partition,
                                               queue, comm)
    np.testing.assert_allclose(get(queue, context, "out"), 2 * x_in)


def send_ref_holder(comm: MPI.Comm) -> None:
    """make_distributed_send with make_distributed_send_ref_holder and the
    DistributedSendRefHolder constructor; received values as outputs."""
    rank, size = comm.rank, comm.size
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    x_in = np.arange(12, dtype=np.float64).reshape(3, 4) + rank
    x = pt.make_data_wrapper(x_in)
    send_a = pt.make_distributed_send(2 * x, dest_rank=nxt, comm_tag="a")
    send_b = pt.make_distributed_send(x[0], dest_rank=prev, comm_tag="b")
    assert isinstance(send_a, pt.DistributedSend)
    recv_a = pt.make_distributed_recv(prev, "a", (3, 4), np.float64)
    recv_b = pt.make_distributed_recv(nxt, "b", (4,), np.float64)
    y = pt.make_distributed_send_ref_holder(send_a, recv_a + recv_b)
    y = pt.DistributedSendRefHolder(send_b, y)
    parts = pt.find_distributed_partition(
        comm, pt.make_dict_of_named_arrays({"y": y, "a": recv_a}))
    parts, _ = pt.number_distributed_tags(comm, parts, base_tag=0)
    pt.verify_distributed_partition(comm, parts)
    queue = make_queue()
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm)
    x_prev = np.arange(12, dtype=np.float64).reshape(3, 4) + prev
    x_next = np.arange(12, dtype=np.float64).reshape(3, 4) + nxt
    np.testing.assert_allclose(get(queue, context, "a"), 2 * x_prev)
    np.testing.assert_allclose(get(queue, context, "y"),
                               2 * x_prev + x_next[0])


def placeholders(comm: MPI.Comm) -> None:
    """Placeholders and a size parameter given in input_args, as numpy and
    as pyopencl arrays."""
    rank, size = comm.rank, comm.size
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    queue = make_queue()
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    w = pt.make_placeholder("w", (3,), np.float64)
    recv = pt.make_distributed_recv(prev, "halo", (n, 3), np.float64)
    y = pt.staple_distributed_send(x * w, nxt, "halo", stapled_to=x + recv)
    parts = pt.find_distributed_partition(comm, {"y": y, "z": 2 * y})
    parts, _ = pt.number_distributed_tags(comm, parts, base_tag=0)
    prgs = pt.generate_code_for_partition(parts)

    def x_of(r: int) -> np.ndarray:
        return np.linspace(0, 1, 15).reshape(5, 3) + r

    w_np = np.array([1.0, -2.0, 0.5])
    for as_device in (False, True):
        x_in: Any = x_of(rank)
        w_in: Any = w_np
        if as_device:
            x_in = cl_array.to_device(queue, x_in)
            w_in = cl_array.to_device(queue, w_in)
        context = pt.execute_distributed_partition(
            parts, prgs, queue, comm,
            input_args={"x": x_in, "w": w_in, "n": 5})
        expected = x_of(rank) + x_of(prev) * w_np
        np.testing.assert_allclose(get(queue, context, "y"), expected)
        np.testing.assert_allclose(get(queue, context, "z"), 2 * expected)


class HaloTag:
    """A tag that is a class, as upstream's tests use."""


def symbolic_tags(comm: MPI.Comm) -> None:
    """Bare classes as tags, numbered from a base tag."""
    rank, size = comm.rank, comm.size
    rng = np.random.default_rng(seed=27)
    x_np = rng.random((4, 4))
    x = pt.make_data_wrapper(x_np)
    halo = pt.staple_distributed_send(
        x, dest_rank=(rank - 1) % size, comm_tag=HaloTag,
        stapled_to=pt.make_distributed_recv(
            src_rank=(rank + 1) % size, comm_tag=HaloTag, shape=(4, 4),
            dtype=np.float64))
    y = x + halo
    parts = pt.find_distributed_partition(
        comm, pt.make_dict_of_named_arrays({"out": y}))
    parts, next_tag = pt.number_distributed_tags(comm, parts, base_tag=4242)
    assert next_tag == 4243
    send_nodes = next(iter(parts.parts[0].name_to_send_nodes.values()))
    assert send_nodes[0].comm_tag == 4242
    queue = make_queue()
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm)
    np.testing.assert_allclose(get(queue, context, "out"), 2 * x_np)


def random_dag(comm: MPI.Comm) -> None:
    """Random graphs with values passed around the ring, materialized with
    MPMS, against numpy."""
    from random_graphs import make_random_graph

    queue = make_queue()
    for seed in range(120, 126):
        graph = make_random_graph(seed, n_steps=20, n_outputs=2,
                                  comm=(comm.rank, comm.size))
        dag = pt.transform.materialize_with_mpms(
            pt.make_dict_of_named_arrays(graph.outputs))
        parts = pt.find_distributed_partition(comm, dag)
        pt.verify_distributed_partition(comm, parts)
        parts, _ = pt.number_distributed_tags(comm, parts, base_tag=17)
        context = pt.execute_distributed_partition(
            parts, pt.generate_code_for_partition(parts), queue, comm,
            input_args=graph.inputs_for(graph.outputs))
        for name, ref in graph.expected.items():
            np.testing.assert_allclose(get(queue, context, name), ref,
                                       rtol=1e-12, atol=1e-12,
                                       err_msg=f"seed {seed}, {name}")


def empty(comm: MPI.Comm) -> None:
    """No outputs at all: no parts, an empty result."""
    parts = pt.find_distributed_partition(comm,
                                          pt.make_dict_of_named_arrays({}))
    assert len(parts.parts) == 0
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), make_queue(), comm)
    assert len(context) == 0


def no_output_on_rank0(comm: MPI.Comm) -> None:
    """Rank 0 has no outputs (and no parts); the others exchange around a
    ring of their own; then rank 0 gathers from all the others, which
    output nothing but the value they send."""
    rank, size = comm.rank, comm.size
    queue = make_queue()
    x_np = np.arange(10, dtype=np.float64) + rank
    x = pt.make_data_wrapper(x_np)

    if rank == 0:
        outputs: dict[str, pt.Array] = {}
    else:
        others = size - 1
        nxt, prev = rank % others + 1, (rank - 2) % others + 1
        recv = pt.make_distributed_recv(prev, "ring", (10,), np.float64)
        outputs = {"out": pt.staple_distributed_send(x, nxt, "ring",
                                                     stapled_to=x + recv)}
    parts = pt.find_distributed_partition(
        comm, pt.make_dict_of_named_arrays(outputs))
    parts, _ = pt.number_distributed_tags(comm, parts, base_tag=0)
    if rank == 0:
        assert len(parts.parts) == 0
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm)
    if rank == 0:
        assert context == {}
    else:
        np.testing.assert_allclose(get(queue, context, "out"),
                                   x_np + (x_np - rank + prev))

    if rank == 0:
        total = x
        for src in range(1, size):
            total = total + pt.make_distributed_recv(src, ("gather", src),
                                                     (10,), np.float64)
        outputs = {"total": total}
    else:
        outputs = {"sent": pt.staple_distributed_send(
            3 * x, 0, ("gather", rank), stapled_to=3 * x)}
    parts = pt.find_distributed_partition(comm, outputs)
    parts, _ = pt.number_distributed_tags(comm, parts, base_tag=0)
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm)
    if rank == 0:
        expected = x_np + sum(3 * (np.arange(10.0) + r)
                              for r in range(1, size))
        np.testing.assert_allclose(get(queue, context, "total"), expected)
    else:
        np.testing.assert_allclose(get(queue, context, "sent"), 3 * x_np)


def zero_size(comm: MPI.Comm) -> None:
    """Sends and receives of arrays with no elements, next to others."""
    rank, size = comm.rank, comm.size
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    x_np = np.arange(8, dtype=np.float64).reshape(2, 4) + rank
    x = pt.make_placeholder("x", (2, 4), np.float64)
    empty_rows = pt.make_placeholder("e", (0, 4), np.float64)
    got_empty = pt.make_distributed_recv(prev, "empty", (0, 4), np.float64)
    got_empty_1d = pt.make_distributed_recv(prev, "empty1", (0,), np.int32)
    got_x = pt.make_distributed_recv(prev, "x", (2, 4), np.float64)
    y = pt.concatenate([got_empty, x + got_x, 2 * empty_rows], axis=0)
    y = pt.staple_distributed_send(empty_rows + 1, nxt, "empty", stapled_to=y)
    y = pt.staple_distributed_send(pt.zeros((0,), np.int32), nxt, "empty1",
                                   stapled_to=y)
    y = pt.staple_distributed_send(x, nxt, "x", stapled_to=y)
    parts = pt.find_distributed_partition(
        comm, {"y": y, "got_empty": got_empty, "got_empty_1d": got_empty_1d})
    parts, _ = pt.number_distributed_tags(comm, parts, base_tag=0)
    queue = make_queue()
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm,
        input_args={"x": x_np, "e": np.empty((0, 4))})
    x_prev = np.arange(8, dtype=np.float64).reshape(2, 4) + prev
    np.testing.assert_allclose(get(queue, context, "y"), x_np + x_prev)
    assert get(queue, context, "got_empty").shape == (0, 4)
    got_1d = get(queue, context, "got_empty_1d")
    assert got_1d.shape == (0,) and got_1d.dtype == np.int32


def allocator(comm: MPI.Comm) -> None:
    """The allocator given allocates the results, received ones too."""
    from pyopencl.tools import ImmediateAllocator, MemoryPool

    rank, size = comm.rank, comm.size
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    queue = make_queue()
    pool = MemoryPool(ImmediateAllocator(queue))
    x = pt.make_placeholder("x", (6,), np.float64)
    recv = pt.make_distributed_recv(prev, 7, (6,), np.float64)
    y = pt.staple_distributed_send(x, nxt, 7, stapled_to=x * recv)
    parts = pt.find_distributed_partition(comm, {"y": y, "r": recv})
    context = pt.execute_distributed_partition(
        parts, pt.generate_code_for_partition(parts), queue, comm,
        allocator=pool, input_args={"x": np.arange(6.0) + rank})
    for name in ("y", "r"):
        assert context[name].allocator is pool, name
    np.testing.assert_allclose(get(queue, context, "r"), np.arange(6.0) + prev)
    np.testing.assert_allclose(
        get(queue, context, "y"),
        (np.arange(6.0) + rank) * (np.arange(6.0) + prev))


def verify_errors(comm: MPI.Comm) -> None:
    """find_distributed_partition raises the verification errors of
    pytato.distributed.verify on every rank."""
    from pytato.distributed.verify import (
        DuplicateRecvError,
        MissingRecvError,
        MissingSendError,
        PartitionInducedCycleError,
    )

    rank, size = comm.rank, comm.size
    x = pt.make_placeholder("x", (4, 4), np.float64)

    # a receive nobody sends
    y = pt.make_distributed_recv(src_rank=(rank - 1) % size, comm_tag=42,
                                 shape=(4, 4), dtype=np.float64)
    expect_raises(MissingSendError, pt.find_distributed_partition, comm,
                  pt.make_dict_of_named_arrays({"out": y}))

    # a send nobody receives
    sent = pt.staple_distributed_send(x, dest_rank=(rank - 1) % size,
                                      comm_tag=42, stapled_to=x)
    expect_raises(MissingRecvError, pt.find_distributed_partition, comm,
                  pt.make_dict_of_named_arrays({"out": sent}))

    # two different receives under one identifier
    recv1 = pt.make_distributed_recv(src_rank=(rank - 1) % size, comm_tag=42,
                                     shape=(4, 4), dtype=np.float64)
    recv2 = pt.make_distributed_recv(src_rank=(rank - 1) % size, comm_tag=42,
                                     shape=(4, 4), dtype=np.float32)
    out = pt.staple_distributed_send(x, dest_rank=(rank + 1) % size,
                                     comm_tag=42, stapled_to=recv1 + recv2)
    expect_raises(DuplicateRecvError, pt.find_distributed_partition, comm,
                  pt.make_dict_of_named_arrays({"out": out}))

    # each rank's send needs what the previous rank sends it
    got = pt.make_distributed_recv(src_rank=(rank - 1) % size, comm_tag=43,
                                   shape=(4, 4), dtype=np.float64)
    out = pt.staple_distributed_send(got + x, dest_rank=(rank + 1) % size,
                                     comm_tag=43, stapled_to=got)
    expect_raises(PartitionInducedCycleError, pt.find_distributed_partition,
                  comm, pt.make_dict_of_named_arrays({"out": out}))

# }}}


SCENARIOS = {fn.__name__.replace("_", "-"): fn for fn in (
    basic, send_ref_holder, placeholders, symbolic_tags, random_dag, empty,
    no_output_on_rank0, zero_size, allocator, verify_errors)}


def main() -> None:
    comm = MPI.COMM_WORLD
    name = None
    try:
        for name in sys.argv[1:]:
            SCENARIOS[name](comm)
    except BaseException:
        sys.stdout.write(f"FAILED rank {comm.rank}, scenario {name}:\n"
                         f"{traceback.format_exc()}")
        sys.stdout.flush()
        comm.Abort(1)
        sys.exit(1)
    sys.stdout.write(f"OK rank {comm.rank}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
