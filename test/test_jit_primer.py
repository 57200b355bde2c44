"""Kernels compiled for their launch in a second process
(:mod:`pytato.target.loopy.build.jit_primer`)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from random_graphs import make_random_dag

import pytato as pt
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.build import jit_primer, split


@pytest.fixture
def primed(monkeypatch):
    """Priming on for every device and program, the split path off (the
    primer is for programs of one kernel with several device kernels)."""
    monkeypatch.setenv(jit_primer.PRIME_ENV, "1")
    monkeypatch.setenv(split.SPLIT_ENV, "0")
    monkeypatch.setattr(jit_primer, "MIN_KERNELS", 1)
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    jit_primer._reap(kill=True)
    PROGRAM_CACHE.clear()
    yield
    jit_primer._reap(kill=True)


def _dag(seed: int) -> dict[str, pt.Array]:
    return make_random_dag(120, seed=seed, n=5)


def test_primer_runs_and_results_unchanged(ctx_factory, primed):
    queue = cl.CommandQueue(ctx_factory())
    dag = _dag(11)
    rng = np.random.default_rng(0)
    inputs = {f"in{i}": rng.standard_normal((5, 5)) for i in range(4)}
    prog = pt.generate_loopy(dag)
    _, out = prog(queue, **inputs)
    assert len(jit_primer._RUNNING) == 1
    (proc,) = jit_primer._RUNNING
    assert proc.wait(timeout=120) == 0
    ref = pt.generate_numpy(dag)(**inputs)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-11,
                                   atol=1e-11)
    # a second call: no new process
    prog(queue, **inputs)
    jit_primer._reap()
    assert not jit_primer._RUNNING


def test_launch_specs(ctx_factory, primed):
    ctx = ctx_factory()
    prog = pt.generate_loopy(_dag(12))
    t_unit = prog.program_for(ctx.devices[0])
    from pytato.target.loopy.build.preprocessing import preprocess_and_linearize
    lin = preprocess_and_linearize(t_unit)
    specs = jit_primer.launch_specs(lin)
    assert specs
    code = prog.get_code(ctx.devices[0])
    for name, sizes, lsize in specs:
        assert f" {name}(" in code
        # 5x5 float64 arrays (and smaller temporaries)
        assert all(0 < n <= 25 * 8 for n in sizes)
        assert all(isinstance(n, int) and n >= 1 for n in lsize)


def test_no_specs_for_symbolic_sizes(ctx_factory, primed):
    ctx = ctx_factory()
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    prog = pt.generate_loopy({"a": x - pt.sum(x), "b": pt.roll(x, 1) * 2})
    from pytato.target.loopy.build.preprocessing import preprocess_and_linearize
    lin = preprocess_and_linearize(prog.program_for(ctx.devices[0]))
    assert jit_primer.launch_specs(lin) is None
    queue = cl.CommandQueue(ctx)
    xv = np.arange(7.0)
    _, out = prog(queue, x=xv)
    assert not jit_primer._RUNNING
    np.testing.assert_allclose(out["a"], xv - xv.sum())


def test_primer_off(ctx_factory, primed, monkeypatch):
    monkeypatch.setenv(jit_primer.PRIME_ENV, "0")
    queue = cl.CommandQueue(ctx_factory())
    inputs = {f"in{i}": np.ones((5, 5)) for i in range(4)}
    pt.generate_loopy(_dag(13))(queue, **inputs)
    assert not jit_primer._RUNNING


def test_wanted_by_device_kind(ctx_factory, monkeypatch):
    dev = ctx_factory().devices[0]
    monkeypatch.delenv(jit_primer.PRIME_ENV, raising=False)
    is_cpu = bool(dev.type & cl.device_type.CPU)
    assert jit_primer.wanted(dev, jit_primer.MIN_KERNELS) == is_cpu
    assert not jit_primer.wanted(dev, jit_primer.MIN_KERNELS - 1)
