"""The workloads of issue 43 for the peers benchmark (``bench_peers.py``):
random DAGs of many small operations, the five-output workload and the
elementwise, reduction, matvec and stencil kernels.

Each is a :class:`peer_workload.Workload`, written once against an array
namespace (``numpy``, ``jax.numpy``, ``torch`` or ``pytato``). The few
operations spelled differently across them are in :func:`ops`.

The random DAGs (:func:`random_dag_workload`) are seeded and deterministic:
the same seed gives the same graph in every namespace. Their steps are
element-wise operations, reductions broadcast back (``keepdims``),
transposes, reversals, rolls, ``where`` and a broadcast of a row of
maxima, with sharing (operands are mostly recent results, sometimes any
earlier one), so that they lower to many distinct kernels. Every step
keeps its values in [-1, 1] (the inputs are uniform in [-1, 1]): long
chains neither overflow nor lose all their digits. Results nobody reads
are summed pairwise down to the requested number of outputs, one of which
is also reduced to a scalar.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from peer_workload import Workload


def _name(xp: Any) -> str:
    return getattr(xp, "__name__", "")


def ops(xp: Any) -> SimpleNamespace:
    """The operations the workloads spell differently per namespace:
    ``sum(a, axis, keepdims)``, ``amax(a, axis, keepdims)``, ``flip0(a)``,
    ``roll(a, shift, axis)``, ``matvec(a, v)``."""
    if _name(xp) == "torch":
        def tsum(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
            if axis is None:
                return xp.sum(a)
            return xp.sum(a, dim=axis, keepdim=keepdims)

        def tamax(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
            if axis is None:
                return xp.amax(a)
            return xp.amax(a, dim=axis, keepdim=keepdims)
        return SimpleNamespace(
            sum=tsum, amax=tamax, flip0=lambda a: xp.flip(a, (0,)),
            roll=lambda a, s, ax: xp.roll(a, s, ax),
            matvec=lambda a, v: a @ v)
    return SimpleNamespace(
        sum=lambda a, axis=None, keepdims=False: xp.sum(
            a, axis=axis, keepdims=keepdims),
        amax=lambda a, axis=None, keepdims=False: xp.amax(
            a, axis=axis, keepdims=keepdims),
        flip0=lambda a: a[::-1],
        roll=lambda a, s, ax: xp.roll(a, s, ax),
        matvec=lambda a, v: a @ v)


# {{{ random DAGs

#: The kinds of steps of :func:`build_random_dag` (each keeps [-1, 1]).
STEP_KINDS = ("mean", "product", "sin", "row mean", "transpose", "flip",
              "roll", "cos product", "where", "column max", "exp")


def build_random_dag(xp: Any, arrays: dict[str, Any], nsteps: int, seed: int,
                     noutputs: int) -> dict[str, Any]:
    """The random graph of *nsteps* operations over ``in0`` ... ``in3``
    (square, of side ``n``) with *noutputs* outputs (see the module
    docstring); the random choices depend on *nsteps*, *seed* and
    *noutputs* only."""
    o = ops(xp)
    rng = np.random.default_rng(seed)
    pool: list[Any] = [arrays[f"in{i}"] for i in range(4)]
    n = int(pool[0].shape[0])
    used: set[int] = set()

    def pick() -> int:
        if rng.random() < 0.7:
            i = len(pool) - 1 - int(rng.integers(min(3, len(pool))))
        else:
            i = int(rng.integers(len(pool)))
        used.add(i)
        return i

    for _ in range(nsteps):
        kind = STEP_KINDS[int(rng.integers(len(STEP_KINDS)))]
        a = pool[pick()]
        # coefficients in [0.5, 1], rounded so that every namespace reads
        # the same literal
        c = float(np.round(rng.uniform(0.5, 1.0), 6))
        if kind == "mean":
            r = (a + pool[pick()]) * (0.5 * c)
        elif kind == "product":
            r = a * pool[pick()] * c
        elif kind == "sin":
            r = xp.sin(a) * c
        elif kind == "row mean":
            # (a sum, not a difference: a - mean(a) of a row of equal
            # values is rounding noise, whose sign a later ``where``
            # reads, so that each implementation's rounding picked
            # another branch)
            r = (a + o.sum(a, 1, True) * (1. / n)) * (0.5 * c)
        elif kind == "transpose":
            r = a.T * c
        elif kind == "flip":
            r = o.flip0(a) * c
        elif kind == "roll":
            r = o.roll(a, 1 + int(rng.integers(3)), int(rng.integers(2))) * c
        elif kind == "cos product":
            r = xp.cos(a) * pool[pick()]
        elif kind == "where":
            r = xp.where(a > 0, a, pool[pick()] * c)
        elif kind == "column max":
            r = a * o.amax(a, 0, True) * c
        else:
            r = xp.exp(-(a * a)) * c
        pool.append(r)
    leaves = [p for i, p in enumerate(pool) if i not in used and i >= 4]
    while len(leaves) > noutputs:
        leaves = [(leaves[i] + leaves[i + 1]) * 0.5 if i + 1 < len(leaves)
                  else leaves[i] for i in range(0, len(leaves), 2)]
    outputs = {f"out{i}": p for i, p in enumerate(leaves)}
    outputs["total"] = o.sum(leaves[0])
    return outputs


def random_dag_workload(nsteps: int, noutputs: int, seed: int = 0
                        ) -> Workload:
    """The workload of :func:`build_random_dag`: four ``(n, n)`` float64
    inputs, ``n`` 256 on GPUs and 64 on CPUs."""
    def inputs(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        n = 256 if gpu else 64
        return {f"in{i}": rng.uniform(-1, 1, (n, n)) for i in range(4)}

    def build(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
        return build_random_dag(xp, arrays, nsteps, seed, noutputs)

    return Workload(f"random DAG {nsteps} steps, {noutputs} outputs",
                    inputs, build, rtol=1e-9)

# }}}


# {{{ the kernels

def _vectors(names: tuple[str, ...], gpu_n: int, cpu_n: int
             ) -> Callable[[np.random.Generator, bool], dict[str, np.ndarray]]:
    def inputs(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        n = gpu_n if gpu else cpu_n
        return {name: rng.random(n) for name in names}
    return inputs


def _matrices(names: tuple[str, ...], vector: str | None = None
              ) -> Callable[[np.random.Generator, bool], dict[str, np.ndarray]]:
    def inputs(rng: np.random.Generator, gpu: bool) -> dict[str, np.ndarray]:
        side = 4096 if gpu else 1024
        result = {name: rng.random((side, side)) for name in names}
        if vector is not None:
            result[vector] = rng.random(side)
        return result
    return inputs


def build_five_outputs(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    """Five outputs sharing ``s = sin(x) cos(y) + exp(-x y)`` and
    ``t = s s + x``, one of them a sum: two arrays read, four written."""
    x, y = arrays["x"], arrays["y"]
    s = xp.sin(x) * xp.cos(y) + xp.exp(-(x * y))
    t = s * s + x
    return {"s": s, "t": t, "u": s - t * y, "v": t * 0.5 - x,
            "total": ops(xp).sum(t)}


def build_elementwise(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    x = arrays["x"]
    return {"y": xp.sin(x) * 2 + x**2 - xp.exp(-x)}


def build_reductions(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    o = ops(xp)
    a = arrays["a"]
    return {"rows": o.sum(a, 1), "columns": o.sum(a, 0), "max": o.amax(a)}


def build_matvec(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    return {"y": ops(xp).matvec(arrays["a"], arrays["v"])}


def build_stencil(xp: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    o = ops(xp)
    u = arrays["u"]
    return {"lap": (o.roll(u, 1, 0) + o.roll(u, -1, 0) + o.roll(u, 1, 1)
                    + o.roll(u, -1, 1) - 4 * u)}

# }}}


WORKLOADS: list[Workload] = [
    random_dag_workload(100, 4),
    random_dag_workload(1000, 16),
    random_dag_workload(5000, 16),
    Workload("five outputs sharing s and t", _vectors(("x", "y"), 2**24, 2**20),
             build_five_outputs),
    Workload("elementwise", _vectors(("x",), 2**24, 2**20), build_elementwise),
    Workload("reductions (rows, columns, max)", _matrices(("a",)),
             build_reductions),
    Workload("matvec", _matrices(("a",), "v"), build_matvec),
    Workload("stencil", _matrices(("u",)), build_stencil),
]
