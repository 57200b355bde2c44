"""Scenarios run under mpiexec by test/test_distributed.py.

Usage: mpiexec -n N python distributed_checks.py SCENARIO [TARGET]

Each rank prints one line starting with "OK" or "RAISED" (followed by the
error message on one line); any other outcome exits with an error.
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import pytato as pt


def run_partition(comm, outputs, input_args, target):
    partition = pt.find_distributed_partition(comm, outputs)
    partition, _ = pt.number_distributed_tags(comm, partition, base_tag=100)
    pt.verify_distributed_partition(comm, partition)
    if target == "numpy":
        generate, queue = pt.generate_numpy, None
    else:
        import pyopencl as cl
        generate = pt.generate_loopy
        queue = cl.CommandQueue(cl.create_some_context(interactive=False))
    prgs = pt.generate_code_for_partition(partition, generate_code=generate)
    out = pt.execute_distributed_partition(partition, prgs, queue, comm,
                                           input_args=input_args)
    if queue is None:
        return out
    # (device arrays, as upstream)
    return {k: v.get(queue) for k, v in out.items()}


def x_of(rank):
    return np.arange(6, dtype=np.float64) + 10 * rank


def stapled(comm, target):
    """Sends of data no output uses; forwarding a received value."""
    rank, size = comm.rank, comm.size
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    x = pt.make_placeholder("x", (6,), np.float64)
    got = pt.make_distributed_recv(prev, "triple", (6,), np.float64)
    fwd = pt.make_distributed_recv(prev, ("fwd", 1), (6,), np.float64)
    y = pt.staple_distributed_send(3 * x, nxt, "triple", stapled_to=x + 1)
    y = pt.staple_distributed_send(got, nxt, ("fwd", 1), stapled_to=y)
    out = run_partition(comm, {"y": y, "got": got, "fwd": fwd},
                        {"x": x_of(rank)}, target)
    np.testing.assert_allclose(out["y"], x_of(rank) + 1)
    np.testing.assert_allclose(out["got"], 3 * x_of(prev))
    np.testing.assert_allclose(out["fwd"], 3 * x_of((rank - 2) % size))


def mismatch(comm, target, kind):
    rank = comm.rank
    x = pt.make_placeholder("x", (6,), np.float64)
    if rank == 0:
        dtype = np.float32 if kind == "dtype" else np.float64
        y = pt.staple_distributed_send(x.astype(dtype), 1, "a", stapled_to=x)
        outputs = {"y": y}
    elif rank == 1:
        shape = (5,) if kind == "shape" else (6,)
        tag = "b" if kind == "tag" else "a"
        outputs = {"y": pt.make_distributed_recv(0, tag, shape, np.float64)}
    else:
        outputs = {"y": x + 1}
    run_partition(comm, outputs, {"x": x_of(rank)}, target)


def main():
    scenario = sys.argv[1]
    target = sys.argv[2] if len(sys.argv) > 2 else "numpy"
    comm = MPI.COMM_WORLD
    try:
        if scenario == "stapled":
            stapled(comm, target)
        elif scenario.startswith("mismatch-"):
            mismatch(comm, target, scenario.split("-", 1)[1])
        else:
            raise ValueError(f"unknown scenario {scenario!r}")
    except pt.diagnostic.DistributedError as e:
        msg = str(e).replace("\n", " | ")
        sys.stdout.write(f"RAISED rank {comm.rank}: {msg}\n")
        sys.stdout.flush()
        return
    sys.stdout.write(f"OK rank {comm.rank}\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
