"""Deep mixed chains (elementwise operations, reductions, reshapes,
indexing, concatenations) on the split paths (issue 41, item 15): kernels
with loop priorities (those of reductions) are split, and the repeated
steps of a chain (phases of one nest) are generated once."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.build import split, split_build


def _load_benchmark():
    # the chain of benchmarks/bench_deep_mixed.py, one definition for both
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent.parent / "benchmarks" / "bench_deep_mixed.py"
    spec = importlib.util.spec_from_file_location("bench_deep_mixed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_BENCH = _load_benchmark()
N = _BENCH.N
_mixed_chain = _BENCH.build


def _placeholders():
    return (pt.make_placeholder("x", (N,), np.float64),
            pt.make_placeholder("idx", (N,), np.int64))


def _values():
    return (np.linspace(-1, 1, N),
            np.random.default_rng(0).permutation(N).astype(np.int64))


@pytest.fixture
def no_store(monkeypatch):
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    PROGRAM_CACHE.clear()
    yield
    PROGRAM_CACHE.clear()


def test_loop_priorities_go_to_sub_units(ctx_factory, no_store):
    """A kernel with loop priorities (a reduction's) is split; each
    sub-unit keeps the priorities of its own loops."""
    device = ctx_factory().devices[0]
    x, idx = _placeholders()
    knl = pt.generate_loopy(_mixed_chain(pt, x, idx, 16),
                            cl_device=device).program_for(
                                device).default_entrypoint
    if not knl.loop_priority:
        pytest.skip("this device's schedule sets no loop priorities")
    units = split.split_kernel(knl)
    with_priorities = 0
    for unit in units:
        if unit.kernel is None:  # (a repeat of a sub-unit built before)
            continue
        own = set(unit.kernel.all_inames())
        expected = {kept for prio in knl.loop_priority
                    for kept in [tuple(n for n in prio if n in own)]
                    if len(kept) > 1}
        assert set(unit.kernel.loop_priority) == expected
        with_priorities += bool(expected)
    assert with_priorities


def test_unit_priorities_restricted():
    prios = frozenset({("a", "b", "c"), ("d", "e"), ("f", "a")})
    assert split._unit_priorities(prios, {"a", "c", "d"}) == frozenset(
        {("a", "c")})
    assert split._unit_priorities(prios, {"x"}) == frozenset()


@pytest.mark.parametrize("path", ["split", "merged"])
def test_deep_mixed_chain_repeats_generated_once(ctx_factory, no_store,
                                                 monkeypatch, path):
    """The steps of a deep mixed chain, one nest a phase, repeat: they
    are generated once each (a few distinct sub-units for 40 steps), on
    the split path and among merged sub-units; the result is numpy's."""
    queue = cl.CommandQueue(ctx_factory())
    if path == "split":
        monkeypatch.setenv(split.SPLIT_ENV, "1")
    else:
        if not queue.device.type & cl.device_type.CPU:
            pytest.skip("merged sub-units are for CPU devices")
        monkeypatch.delenv(split.SPLIT_ENV, raising=False)
        monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
        monkeypatch.setattr(split_build, "MIN_MERGED_SPLIT_INSTRUCTIONS", 1)
    depth = 80
    x, idx = _placeholders()
    prog = pt.generate_loopy(_mixed_chain(pt, x, idx, depth))
    before = dict(split_build.STATS)
    xv, iv = _values()
    _, (out,) = prog(queue, x=xv, idx=iv)
    generated = split_build.STATS["generated"] - before["generated"]
    np.testing.assert_allclose(out, _mixed_chain(np, xv, iv, depth),
                               rtol=1e-12, atol=1e-12)
    # (about one a kind of step: 8 kinds; before, one a step on the split
    # path, or two merged sub-units holding every step)
    assert 0 < generated <= 16, generated


def test_merged_units_share_repeated_steps(ctx_factory, no_store):
    """Among merged sub-units, the repeated steps of a chain (phases of
    one nest each) are sub-units of their own, one code generation a
    kind of step, instead of all in the merged sub-units."""
    device = ctx_factory().devices[0]
    x, idx = _placeholders()
    knl = pt.generate_loopy(_mixed_chain(pt, x, idx, 80),
                            cl_device=device).program_for(
                                device).default_entrypoint
    units = split.split_kernel(knl, groups=2)
    keys = {u.key for u in units}
    assert len(keys) <= 16
    assert len(units) >= 4 * len(keys)
