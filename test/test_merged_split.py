"""Large kernels for CPUs generated in parallel as a few merged sub-units
(:func:`pytato.target.loopy.build.split_build.merged_split_groups`, issue
20), whose worker processes also launch each device kernel once."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
from constantdict import constantdict
from loopy.kernel.function_interface import CallableKernel
from random_graphs import make_random_dag

import pytato as pt
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.build import jit_primer, split, split_build
from pytato.target.loopy.build.launch_once import launch_each_once
from pytato.target.loopy.build.parallel_builds import _program_kernels
from pytato.target.loopy.run import split_executor
from pytato.target.loopy.run.launcher import get_kernel_plan


class _FakeDevice:
    def __init__(self, device_type: int) -> None:
        self.type = device_type


@pytest.fixture
def merged(monkeypatch):
    """The default path choice (no :data:`split.SPLIT_ENV`), two workers,
    merged sub-units for kernels of any size, the program store off."""
    monkeypatch.delenv(split.SPLIT_ENV, raising=False)
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    monkeypatch.setattr(split_build, "MIN_MERGED_SPLIT_INSTRUCTIONS", 1)
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    PROGRAM_CACHE.clear()
    yield
    PROGRAM_CACHE.clear()


def test_merged_split_groups_by_device_and_size(monkeypatch):
    monkeypatch.delenv(split.SPLIT_ENV, raising=False)
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    cpu = _FakeDevice(cl.device_type.CPU)
    gpu = _FakeDevice(cl.device_type.GPU)
    big = split_build.MIN_MERGED_SPLIT_INSTRUCTIONS
    small = split_build.MIN_MERGED_SPLIT_INSTRUCTIONS - 1
    assert split_build.merged_split_groups([cpu], big) == 2
    assert split_build.merged_split_groups([cpu], small) is None
    assert split_build.merged_split_groups([gpu], big) is None
    assert split_build.merged_split_groups([cpu, gpu], big) is None
    assert split_build.merged_split_groups([], big) is None
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "1")
    assert split_build.merged_split_groups([cpu], big) is None
    # the environment variable of the split path decides alone
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    for flag in ("0", "1"):
        monkeypatch.setenv(split.SPLIT_ENV, flag)
        assert split_build.merged_split_groups([cpu], big) is None


def _kernel(dag, device):
    PROGRAM_CACHE.clear()
    return pt.generate_loopy(dag, cl_device=device).program_for(device)


def test_merged_units_cover_the_kernel(ctx_factory):
    """Merged sub-units hold every instruction once (repeated nests once
    a copy), with the global barriers between their phases; they are
    fewer than the phases."""
    device = ctx_factory().devices[0]
    t_unit = _kernel(make_random_dag(400, seed=3), device)
    knl = t_unit.default_entrypoint
    fine = split.split_kernel(knl)
    merged = split.split_kernel(knl, groups=2, hoist=False)
    assert len(merged) < len(fine)
    barrier_ids = {i.id for i in knl.instructions
                   if split._is_global_barrier(i)}
    seen = []
    for unit in merged:
        ids = [i.id for i in unit.instructions]
        seen.extend(i for i in ids if i not in barrier_ids)
        if unit.kernel is not None:
            own = {i.id for i in unit.kernel.instructions}
            assert own == set(ids)
            for insn in unit.kernel.instructions:
                assert insn.depends_on <= own
    assert sorted(seen) == sorted(i.id for i in knl.instructions
                                  if i.id not in barrier_ids)
    assert any(any(split._is_global_barrier(i) for i in u.instructions)
               for u in merged)
    # within a merged sub-unit, each instruction is ordered after those of
    # earlier phases through a global barrier (a dependency path holding
    # one), as in the kernel
    phase = split._phases(knl)
    for unit in merged:
        if unit.kernel is None:
            continue
        by_id = unit.kernel.id_to_insn
        for insn in unit.kernel.instructions:
            if insn.id in barrier_ids:
                continue
            # the instructions reachable through a barrier
            after_barrier = set()
            stack = [(d, split._is_global_barrier(by_id[d]))
                     for d in insn.depends_on]
            seen_states = set()
            while stack:
                iid, crossed = stack.pop()
                if (iid, crossed) in seen_states:
                    continue
                seen_states.add((iid, crossed))
                if crossed and iid not in barrier_ids:
                    after_barrier.add(iid)
                stack.extend((d, crossed or split._is_global_barrier(by_id[d]))
                             for d in by_id[iid].depends_on)
            earlier = {i.id for i in unit.kernel.instructions
                       if i.id not in barrier_ids
                       and phase[i.id] < phase[insn.id]}
            assert earlier <= after_barrier, insn.id


def test_merged_program_equals_single_kernel(ctx_factory, merged,
                                             monkeypatch):
    """On a CPU the default path generates a large kernel as merged
    sub-units in worker processes: the same device kernels, the same
    results as the single kernel."""
    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("merged sub-units are for CPU devices")
    dag = make_random_dag(300, seed=5)
    rng = np.random.default_rng(5)
    inputs = {f"in{i}": rng.standard_normal((16, 16)) for i in range(4)}
    prog = pt.generate_loopy(dag)
    _, out = prog(queue, **inputs)
    (executor,) = prog._executor_cache.values()
    assert isinstance(executor, split_executor.SplitExecutor)
    assert executor.groups == 2
    nlaunches = len(executor.kernel_plan().subkernels)

    monkeypatch.setenv(split.SPLIT_ENV, "0")
    PROGRAM_CACHE.clear()
    single = pt.generate_loopy(dag)
    _, ref = single(queue, **inputs)
    (single_exe,) = single._executor_cache.values()
    assert not isinstance(single_exe, split_executor.SplitExecutor)
    assert nlaunches == len(get_kernel_plan(single_exe).subkernels)
    assert set(out) == set(ref)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-12,
                                   atol=1e-12)
    numpy_ref = pt.generate_numpy(dag)(**inputs)
    for name in numpy_ref:
        np.testing.assert_allclose(out[name], numpy_ref[name], rtol=1e-10,
                                   atol=1e-10)


def test_worker_launches_each_kernel_once(ctx_factory):
    """What a worker does after the code generation of its merged
    sub-units: the launch specifications cover every device kernel, and
    launching each once on buffers of those sizes works."""
    ctx = ctx_factory()
    device = ctx.devices[0]
    t_unit = _kernel(make_random_dag(200, seed=8, n=6), device)
    units = split.split_kernel(t_unit.default_entrypoint, groups=2,
                               hoist=False)
    codes = []
    specs: list[jit_primer.LaunchSpec] = []
    nlaunches = 0
    for unit in units:
        if unit.kernel is None:
            continue
        name = unit.kernel.name
        sub = t_unit.copy(
            callables_table=constantdict({name: CallableKernel(unit.kernel)}),
            entrypoints=frozenset({name}))
        compiled = split_build._compile_one(sub, unit.canonical_names, specs)
        codes.append(compiled.code)
        nlaunches += len(compiled.launches)
    assert len(specs) == nlaunches
    kernels = {}
    for code in codes:
        kernels.update(_program_kernels(cl.Program(ctx, code).build()))
    assert {name for name, _, _ in specs} <= set(kernels)
    launch_each_once(ctx, kernels, specs)


def test_failed_workers_fall_back_to_this_process(ctx_factory, merged,
                                                  monkeypatch, caplog):
    """Worker processes that fail (could not start, died) leave the code
    generation to the calling process: the call still gives numpy's
    results, with a warning."""
    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("merged sub-units are for CPU devices")

    # worker processes that die before they answer
    split_build.discard_prestarted_workers()
    monkeypatch.setattr(split_build, "_WORKER",
                        "import sys; sys.stderr.write('killed'); sys.exit(3)")
    dag = make_random_dag(120, seed=9, n=6)
    rng = np.random.default_rng(9)
    inputs = {f"in{i}": rng.standard_normal((6, 6)) for i in range(4)}
    with caplog.at_level("WARNING", logger="pytato.target.loopy"):
        _, out = pt.generate_loopy(dag)(queue, **inputs)
    assert "generating in this process" in caplog.text
    ref = pt.generate_numpy(dag)(**inputs)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-10,
                                   atol=1e-10)


def test_worker_started_ahead_is_taken(ctx_factory, merged, monkeypatch):
    """Where the program will be merged sub-units, ``generate_loopy`` with
    a CPU device starts one worker process before it schedules the kernel;
    the first call takes it (and starts the other)."""
    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("merged sub-units are for CPU devices")
    split_build._take_prestarted(0)
    taken = []
    real_take = split_build._take_prestarted

    def take(count):
        workers = real_take(count)
        taken.append((count, list(workers)))
        return workers

    monkeypatch.setattr(split_build, "_take_prestarted", take)
    dag = make_random_dag(150, seed=4, n=6)
    prog = pt.generate_loopy(dag, cl_device=queue.device)
    (ahead,) = split_build._PRESTARTED
    assert ahead.poll() is None
    rng = np.random.default_rng(4)
    inputs = {f"in{i}": rng.standard_normal((6, 6)) for i in range(4)}
    _, out = prog(queue, **inputs)
    assert taken == [(2, [ahead])]
    assert not split_build._PRESTARTED
    ref = pt.generate_numpy(dag)(**inputs)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-10,
                                   atol=1e-10)


def test_no_worker_started_ahead_elsewhere(monkeypatch):
    monkeypatch.delenv(split.SPLIT_ENV, raising=False)
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    split_build._take_prestarted(0)
    # not a CPU, too small a kernel, the split path chosen by the user
    split_build.prestart_merged_workers(False, 10**6)
    split_build.prestart_merged_workers(
        True, split_build.MIN_MERGED_SPLIT_INSTRUCTIONS - 1)
    monkeypatch.setenv(split.SPLIT_ENV, "0")
    split_build.prestart_merged_workers(True, 10**6)
    assert not split_build._PRESTARTED
    # one at a time
    monkeypatch.delenv(split.SPLIT_ENV)
    split_build.prestart_merged_workers(True, 10**6)
    split_build.prestart_merged_workers(True, 10**6)
    assert len(split_build._PRESTARTED) == 1
    assert split_build._take_prestarted(0) == []
    assert not split_build._PRESTARTED


def test_merged_sub_units_from_store(ctx_factory, merged, monkeypatch,
                                     tmp_path):
    """A merged program generated again (in-memory cache cleared) takes
    its sub-units from the program store, as merged sub-units (their
    executor keeps the number of groups, for a split where the store
    misses some), with the same results."""
    from pytato.target.loopy.store import program_store

    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("merged sub-units are for CPU devices")
    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE")
    monkeypatch.setattr(program_store, "_STORE", [])
    dag = make_random_dag(150, seed=6, n=6)
    rng = np.random.default_rng(6)
    inputs = {f"in{i}": rng.standard_normal((6, 6)) for i in range(4)}
    _, first = pt.generate_loopy(dag, cl_device=queue.device)(queue, **inputs)
    generated = split_build.STATS["generated"]
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(dag, cl_device=queue.device)
    _, again = prog(queue, **inputs)
    assert split_build.STATS["generated"] == generated
    (executor,) = prog._executor_cache.values()
    assert isinstance(executor, split_executor.SplitExecutor)
    assert executor.groups == 2
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])


def test_no_worker_started_ahead_to_show_code(ctx_factory, merged):
    """The code of a program generated without a device, shown for a CPU
    device, starts no worker process (its first call does)."""
    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("merged sub-units are for CPU devices")
    split_build._take_prestarted(0)
    prog = pt.generate_loopy(make_random_dag(150, seed=2, n=6))
    assert "__kernel" in prog.get_code(queue.device)
    assert not split_build._PRESTARTED
    rng = np.random.default_rng(2)
    inputs = {f"in{i}": rng.standard_normal((6, 6)) for i in range(4)}
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(make_random_dag(150, seed=2, n=6))
    prog(queue, **inputs)
    (executor,) = prog._executor_cache.values()
    assert isinstance(executor, split_executor.SplitExecutor)


def test_worker_started_ahead_discarded_by_single_kernel(ctx_factory,
                                                         merged):
    """A worker process started ahead that no split takes is stopped when
    a program takes the single kernel."""
    queue = cl.CommandQueue(ctx_factory())
    split_build._take_prestarted(0)
    split_build.prestart_merged_workers(True, 10**6)
    (ahead,) = split_build._PRESTARTED
    x = pt.make_placeholder("x", (5,), np.float64)
    PROGRAM_CACHE.clear()
    _, (out,) = pt.generate_loopy(2 * x)(queue, x=np.arange(5.0))
    np.testing.assert_array_equal(out, 2 * np.arange(5.0))
    assert not split_build._PRESTARTED
    assert ahead.wait(timeout=10) is not None
