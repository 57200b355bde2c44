"""A 2-D five-point stencil (explicit heat equation steps) on a grid split
into slabs of rows across MPI ranks, with halo exchange between neighbors.

Run it on any number of ranks, e.g.::

    mpiexec -n 4 python examples/distributed_stencil.py

Each rank builds the graph of ``--steps`` time steps on its own rows: at
each step it sends its first row to the rank above and its last row to the
rank below, and receives their boundary rows as halos. The partitioner
splits each rank's graph into one part per time step (a part's sends must
go out before the next step's halos can arrive). Rank 0 gathers the result
and checks that it equals the single-rank result (the same graph on the
whole grid, without communication) and a plain numpy computation.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import pytato as pt


def row_range(nx: int, nranks: int, rank: int) -> tuple[int, int]:
    """The rows ``[start, stop)`` of an *nx*-row grid owned by *rank*."""
    bounds = np.linspace(0, nx, nranks + 1).round().astype(int)
    return int(bounds[rank]), int(bounds[rank + 1])


def stencil_step(u: pt.Array, top: pt.Array, bottom: pt.Array,
                 nu: float) -> pt.Array:
    """One explicit step on the rows *u*, given the rows just above and
    below them (*top*, *bottom*); the grid is zero outside in both
    directions."""
    ext = pt.concatenate([top, u, bottom], axis=0)
    ext = pt.pad(ext, ((0, 0), (1, 1)))
    lap = (ext[:-2, 1:-1] + ext[2:, 1:-1] + ext[1:-1, :-2] + ext[1:-1, 2:]
           - 4 * u)
    return u + nu * lap


def build_local_graph(rank: int, nranks: int, nx: int, ny: int, nsteps: int,
                      nu: float, dtype: Any = np.float64) -> pt.Array:
    """The graph of *nsteps* steps on the rows of *rank*, whose values are
    the input ``u0`` (a placeholder)."""
    start, stop = row_range(nx, nranks, rank)
    u: pt.Array = pt.make_placeholder("u0", (stop - start, ny), dtype)
    above = rank - 1 if rank > 0 else None
    below = rank + 1 if rank < nranks - 1 else None
    zero_row = pt.zeros((1, ny), dtype)
    for step in range(nsteps):
        # the message going up carries the sender's first row, the one
        # going down its last row
        top = (pt.make_distributed_recv(above, ("down", step), (1, ny), dtype)
               if above is not None else zero_row)
        bottom = (pt.make_distributed_recv(below, ("up", step), (1, ny), dtype)
                  if below is not None else zero_row)
        new_u = stencil_step(u, top, bottom, nu)
        if above is not None:
            new_u = pt.staple_distributed_send(u[:1], above, ("up", step),
                                               stapled_to=new_u)
        if below is not None:
            new_u = pt.staple_distributed_send(u[-1:], below, ("down", step),
                                               stapled_to=new_u)
        u = new_u
    return u


def numpy_reference(u: np.ndarray[Any, Any], nsteps: int, nu: float
                    ) -> np.ndarray[Any, Any]:
    for _ in range(nsteps):
        ext = np.pad(u, 1)
        u = u + nu * (ext[:-2, 1:-1] + ext[2:, 1:-1] + ext[1:-1, :-2]
                      + ext[1:-1, 2:] - 4 * u)
    return u


def make_program_generator(target: str) -> tuple[Any, Any]:
    """The code generator and the queue (None for numpy) for *target*."""
    if target == "numpy":
        return pt.generate_numpy, None
    import pyopencl as cl
    ctx = cl.create_some_context(interactive=False)
    return pt.generate_loopy, cl.CommandQueue(ctx)


def run(comm: Any, nx: int, ny: int, nsteps: int, target: str,
        nu: float = 0.1) -> int:
    """Run the distributed stencil; return the number of parts of this
    rank's graph. Raises AssertionError on rank 0 if the result is wrong."""
    rank, nranks = comm.rank, comm.size
    generate, queue = make_program_generator(target)

    u0 = np.random.default_rng(seed=17).random((nx, ny))
    start, stop = row_range(nx, nranks, rank)
    result = build_local_graph(rank, nranks, nx, ny, nsteps, nu)

    partition = pt.find_distributed_partition(comm, {"u": result})
    partition, _ = pt.number_distributed_tags(comm, partition, base_tag=0)
    pt.verify_distributed_partition(comm, partition)
    prgs = pt.generate_code_for_partition(partition, generate_code=generate)
    out = pt.execute_distributed_partition(
        partition, prgs, queue, comm,
        input_args={"u0": u0[start:stop]})["u"]
    if queue is not None:
        # a pyopencl array on the queue
        out = out.get(queue)

    pieces = comm.gather(out, root=0)
    if rank == 0:
        distributed = np.concatenate(pieces, axis=0)
        single = build_local_graph(0, 1, nx, ny, nsteps, nu)
        single_prg = generate({"u": single})
        if queue is None:
            single_out = single_prg(u0=u0)["u"]
        else:
            _, single_res = single_prg(queue, u0=u0)
            single_out = single_res["u"]
        ref = numpy_reference(u0, nsteps, nu)
        np.testing.assert_allclose(single_out, ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(distributed, single_out, rtol=1e-12,
                                   atol=1e-12)
        print(f"distributed stencil on {nranks} rank(s), {nsteps} steps, "
              f"{len(partition.parts)} parts per rank: matches the "
              "single-rank result")
    return len(partition.parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nx", type=int, default=24)
    parser.add_argument("--ny", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--target", choices=["numpy", "loopy"],
                        default="loopy")
    args = parser.parse_args()

    from mpi4py import MPI
    nparts = run(MPI.COMM_WORLD, args.nx, args.ny, args.steps, args.target)
    expected = 1 if MPI.COMM_WORLD.size == 1 else args.steps + 1
    assert nparts == expected, (nparts, expected)


if __name__ == "__main__":
    main()
