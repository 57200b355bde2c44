"""Cheap producers recomputed in their readers
(:mod:`pytato.target.loopy.lower.recompute`), and the random DAGs of the
peers benchmark (``benchmarks/peers_dags.py``): fewer kernels, the results
of numpy."""

from __future__ import annotations

import sys
from pathlib import Path

import loopy as lp
import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.lower import recompute
from pytato.target.loopy.schedule.default import DeviceInfo


SCHEDULES = {
    "cpu": DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096),
    # a small GPU (PoCL accepts its work-groups)
    "gpu": DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256),
}


@pytest.fixture(autouse=True)
def _recompute_on(monkeypatch):
    """Recomputation on (off by default, see
    :data:`~pytato.target.loopy.lower.recompute.RECOMPUTE_PRODUCERS`); the
    in-memory program cache emptied after each test (its keys do not
    hold the switch)."""
    from pytato.target.loopy import PROGRAM_CACHE
    monkeypatch.setattr(recompute, "RECOMPUTE_PRODUCERS", True)
    yield
    PROGRAM_CACHE.clear()


def _generate(outputs, info):
    # (no program store: tests change the module's constants, which are
    # not part of its keys)
    with lp.CacheMode(False):
        return pt.generate_loopy(outputs, cl_device=info)


def _kernels(prog) -> int:
    return lp.generate_code_v2(prog.program).device_code().count("__kernel ")


def _global_temporaries(prog) -> list[str]:
    knl = prog.program.default_entrypoint
    return sorted(n for n, v in knl.temporary_variables.items()
                  if v.address_space == lp.AddressSpace.GLOBAL)


def _permutations(m, x, y):
    # a is read transposed, rolled and reversed (never at its own
    # indices), b transposed and at its own indices
    roll = np.roll if m is np else pt.roll
    a = x * 2.0 + y
    b = a.T * 0.5 - roll(a, 1, 0)
    return {"b": b, "c": b[::-1] + a.T, "d": b.T * x - b}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_permuted_reads_are_recomputed(queue, monkeypatch, schedule):
    """Arithmetic stores read at other indices than their own are
    recomputed by their readers: one kernel, no temporary array (two
    kernels without recomputation: the readers of ``b`` wait for all of
    it)."""
    info = SCHEDULES[schedule]
    rng = np.random.default_rng(0)
    xa, ya = rng.random((24, 24)), rng.random((24, 24))
    expected = _permutations(np, xa, ya)
    x = pt.make_placeholder("x", (24, 24), np.float64)
    y = pt.make_placeholder("y", (24, 24), np.float64)
    prog = _generate(_permutations(pt, x, y), info)
    assert _kernels(prog) == 1
    assert not _global_temporaries(prog)
    _, res = prog(queue, x=xa, y=ya)
    for name, value in expected.items():
        np.testing.assert_allclose(res[name], value, rtol=1e-13)

    # without recomputation (other names: a graph of its own for the
    # in-memory program cache)
    monkeypatch.setattr(recompute, "MAX_RECOMPUTE_NODES", 0)
    x = pt.make_placeholder("x_kept", (24, 24), np.float64)
    y = pt.make_placeholder("y_kept", (24, 24), np.float64)
    kept = _generate(_permutations(pt, x, y), info)
    assert _kernels(kept) == 2
    _, res = kept(queue, x_kept=xa, y_kept=ya)
    for name, value in expected.items():
        np.testing.assert_allclose(res[name], value, rtol=1e-13)


def test_calls_and_reductions_stay_stored(queue):
    """Stores calling functions are not recomputed (``sin(x)`` read
    transposed stays an array), nor are operands of reductions; the
    results are numpy's."""
    rng = np.random.default_rng(1)
    xa = rng.random((16, 16))
    x = pt.make_placeholder("x", (16, 16), np.float64)
    s = pt.sin(x)
    prog = _generate({"t": s.T + s}, SCHEDULES["cpu"])
    assert len(_global_temporaries(prog)) == 1
    _, res = prog(queue, x=xa)
    np.testing.assert_allclose(res["t"], np.sin(xa).T + np.sin(xa),
                               rtol=1e-13)

    a = x * 3.0 - 1.0
    b = a.T * 2.0
    outputs = {"r": pt.sum(b, axis=1) + pt.sum(b.T, axis=0) + b[:, 0],
               "m": b.T @ b}
    prog = _generate(outputs, SCHEDULES["cpu"])
    _, res = prog(queue, x=xa)
    ba = (xa * 3.0 - 1.0).T * 2.0
    np.testing.assert_allclose(res["r"], ba.sum(1) + ba.T.sum(0) + ba[:, 0],
                               rtol=1e-13)
    np.testing.assert_allclose(res["m"], ba.T @ ba, rtol=1e-13)


def test_chain_of_permutations_collapses(queue):
    """A chain of shared, permuted arithmetic steps is one expression over
    the inputs: one kernel whatever its length (up to the expression
    size bound), results of numpy."""
    rng = np.random.default_rng(2)
    xa = rng.random((20, 20))
    x = pt.make_placeholder("x", (20, 20), np.float64)

    def chain(m, x):
        roll = np.roll if m is np else pt.roll
        outs = {}
        a = x
        for k in range(6):
            a = roll(a, k + 1, k % 2).T * 0.9 + 0.1
            outs[f"o{k}"] = a
        return outs

    prog = _generate(chain(pt, x), SCHEDULES["gpu"])
    assert _kernels(prog) == 1
    _, res = prog(queue, x=xa)
    for name, value in chain(np, xa).items():
        np.testing.assert_allclose(res[name], value, rtol=1e-13)


def _random_dag_workload(nsteps, noutputs, seed):
    bench = str(Path(__file__).parent.parent / "benchmarks")
    sys.path.insert(0, bench)
    try:
        from peers_dags import random_dag_workload
    finally:
        sys.path.remove(bench)
    return random_dag_workload(nsteps, noutputs, seed)


#: kernels of the random DAGs before (commit 107316b) under each schedule
_BEFORE = {(100, 0, "cpu"): 35, (100, 0, "gpu"): 17,
           (100, 1, "cpu"): 41, (100, 1, "gpu"): 23}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("seed", [0, 1])
def test_random_dags_fewer_kernels(queue, schedule, seed):
    """The random DAGs of the peers benchmark (100 steps: reductions,
    broadcasts, transposes, rolls, reversals, several outputs) need fewer
    kernels than before (CPU: small reductions in one kernel; both:
    recomputed permutations), and their results are numpy's."""
    wl = _random_dag_workload(100, 4, seed)
    inputs = wl.inputs(np.random.default_rng(seed), False)
    expected = wl.build(np, inputs)
    placeholders = {k: pt.make_placeholder(k, v.shape, v.dtype)
                    for k, v in inputs.items()}
    prog = _generate(wl.build(pt, placeholders), SCHEDULES[schedule])
    before = _BEFORE[100, seed, schedule]
    assert _kernels(prog) < (before if schedule == "gpu" else before * 2 // 3)
    _, res = prog(queue, **inputs)
    for name, value in expected.items():
        np.testing.assert_allclose(res[name], value, rtol=wl.rtol,
                                   atol=wl.rtol * np.max(np.abs(value)))
