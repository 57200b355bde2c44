"""Randomized differential tests: seeded random graphs evaluated by the
NumPy target and by OpenCL (PoCL in CI) against step-by-step numpy."""

from __future__ import annotations

import numpy as np
import pytest
from random_graphs import make_random_graph

import pytato as pt


NUMPY_SEEDS = range(300)
OPENCL_SEEDS = range(1000, 1080)


def _check(result: dict[str, np.ndarray], graph: object, rtol: float) -> None:
    for name, ref in graph.expected.items():  # type: ignore[attr-defined]
        got = np.asarray(result[name])
        assert got.shape == ref.shape, (name, graph.ops)  # type: ignore
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-12,
                                   err_msg=f"{name} after {graph.ops}")  # type: ignore


@pytest.mark.parametrize("seed", NUMPY_SEEDS)
def test_random_graphs_numpy_target(seed: int) -> None:
    g = make_random_graph(seed)
    prg = pt.generate_numpy(g.outputs)
    _check(prg(**g.inputs_for(g.outputs)), g, rtol=1e-10)


@pytest.mark.parametrize("seed", OPENCL_SEEDS)
def test_random_graphs_opencl(queue: object, seed: int) -> None:
    dtype = np.float32 if seed % 4 == 3 else np.float64
    g = make_random_graph(seed, dtype=dtype)
    prg = pt.generate_loopy(g.outputs)
    _, result = prg(queue, **g.inputs_for(g.outputs))
    _check(result, g, rtol=2e-4 if dtype == np.float32 else 1e-10)
