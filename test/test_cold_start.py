"""The split path of :mod:`pytato.target.loopy.build.split`: a program's
kernel cut into its phases, each distinct one generated and built once
(issue 20)."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array
import pytest
from random_graphs import make_random_dag, make_random_graph

import pytato as pt
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.build import split, split_build, split_sizes
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.run import split_executor
from pytato.target.loopy.run.kernel_facts import kernel_facts
from pytato.target.loopy.store import program_store


@pytest.fixture
def split_on(monkeypatch):
    """The split path on, the program store off, empty program cache."""
    monkeypatch.setenv(split.SPLIT_ENV, "1")
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "1")
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    PROGRAM_CACHE.clear()
    yield
    PROGRAM_CACHE.clear()


@pytest.fixture
def split_store(split_on, monkeypatch, tmp_path):
    """The split path on, with a new, empty program store."""
    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE")
    monkeypatch.setattr(program_store, "_STORE", [])


def _dg_like(nfields: int, ngroups: int = 3, ndofs: int = 4,
             nels: tuple[int, ...] | None = None
             ) -> tuple[dict[str, pt.Array], dict[str, np.ndarray],
                        dict[str, np.ndarray]]:
    """The same operator (an einsum with a differentiation matrix, a flux
    from a face reduction broadcast back) applied to *nfields* fields
    over *ngroups* element groups (of *nels* elements, default 5, 7, ...):
    outputs, inputs and numpy results."""
    rng = np.random.default_rng(7)
    outputs = {}
    inputs = {}
    expected = {}
    if nels is None:
        nels = tuple(5 + 2 * g for g in range(ngroups))
    for g, nel in enumerate(nels):
        dmat = rng.standard_normal((ndofs, ndofs))
        inputs[f"d{g}"] = dmat
        d = pt.make_placeholder(f"d{g}", (ndofs, ndofs), np.float64)
        for f in range(nfields):
            name = f"u{f}_{g}"
            u_np = rng.standard_normal((nel, ndofs))
            inputs[name] = u_np
            u = pt.make_placeholder(name, (nel, ndofs), np.float64)
            du = pt.einsum("ij,ej->ei", d, u)
            flux = 0.5 * (pt.sum(u, axis=1).reshape(nel, 1) - u)
            outputs[f"r{f}_{g}"] = du + flux
            du_np = np.einsum("ij,ej->ei", dmat, u_np)
            expected[f"r{f}_{g}"] = du_np + 0.5 * (
                u_np.sum(axis=1).reshape(nel, 1) - u_np)
    return outputs, inputs, expected


def _cpu_schedule(queue):
    """The device the hoisting tests schedule for: the queue's if it is a
    CPU, else a CPU's description. Their groups are wider than a CPU's
    work group (32 work-items); a GPU's work groups are wider than some of
    them, whose sub-units then stay distinct (the schedule chose the
    work-group size from the size)."""
    if queue.device.type & cl.device_type.CPU:
        return queue.device
    return DeviceInfo(kind="cpu", compute_units=16, max_work_group_size=4096,
                      name="a CPU (test)")


def _run(outputs, inputs, queue, device=None):
    prog = pt.generate_loopy(outputs, cl_device=device or queue.device)
    _, out = prog(queue, **inputs)
    return prog, out


def test_dg_like_distinct_kernels(ctx_factory, split_on):
    """Five fields: no more distinct kernels than one field needs."""
    queue = cl.CommandQueue(ctx_factory())
    counts = {}
    for nfields in (1, 5):
        outputs, inputs, expected = _dg_like(nfields)
        knl = pt.generate_loopy(outputs, cl_device=queue.device
                                ).program.default_entrypoint
        units = split.split_kernel(knl)
        counts[nfields] = (len(units), len({u.key for u in units}))
        before = split_build.STATS["generated"]
        _, out = _run(outputs, inputs, queue)
        assert split_build.STATS["generated"] - before == counts[nfields][1]
        for name, ref in expected.items():
            np.testing.assert_allclose(out[name], ref, rtol=1e-12, atol=1e-12)
    # five fields: each field's nests in a sub-unit of their own, one
    # distinct sub-unit per nest of one field (a phase of one field keeps
    # its nests of the three groups in one device kernel)
    outputs, _, _ = _dg_like(1)
    knl = pt.generate_loopy(outputs, cl_device=queue.device
                            ).program.default_entrypoint
    phase = split._phases(knl)
    nests = sum(
        len(split._components(knl, [i for i in knl.instructions
                                    if phase.get(i.id) == p]))
        for p in set(phase.values()))
    # (groups smaller than a work group: their work-group size is chosen
    # from the size of the largest, which stays distinct, see
    # test_groups_share_sub_units)
    assert counts[5][1] == counts[1][1] <= nests
    assert counts[5][0] == 5 * nests


def test_equal_sub_units_deduplicated(ctx_factory, split_on):
    """The same expression on two inputs of equal shapes: one generation
    per distinct sub-unit, fewer than the sub-units."""
    queue = cl.CommandQueue(ctx_factory())
    rng = np.random.default_rng(1)
    outputs = {}
    inputs = {}
    for k in range(3):
        x = pt.make_placeholder(f"x{k}", (7, 5), np.float64)
        inputs[f"x{k}"] = rng.standard_normal((7, 5))
        outputs[f"y{k}"] = x - pt.sum(x, axis=0)
    before = split_build.STATS["generated"]
    prog, out = _run(outputs, inputs, queue)
    generated = split_build.STATS["generated"] - before
    units = split.split_kernel(prog.program.default_entrypoint)
    assert generated == len({u.key for u in units}) < len(units)
    for k in range(3):
        x = inputs[f"x{k}"]
        np.testing.assert_allclose(out[f"y{k}"], x - x.sum(axis=0),
                                   rtol=1e-13)


# (seed 28: a constant array summed by sequential loops in a sub-unit
# whose array shapes are hoisted)
@pytest.mark.parametrize("seed", [*range(8), 28])
def test_random_graphs_unchanged(ctx_factory, split_on, seed):
    queue = cl.CommandQueue(ctx_factory())
    g = make_random_graph(seed)
    _, out = _run(g.outputs, g.inputs_for(g.outputs), queue)
    for name, ref in g.expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-10, atol=1e-10)


def _codes(outputs, queue, monkeypatch, workers, device=None):
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, str(workers))
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(outputs, cl_device=device or queue.device)
    t_unit = prog.program
    units = split.split_kernel(t_unit.default_entrypoint)
    compiled = split_build.compile_sub_units(t_unit, units)
    return {k: (c.code, c.launches) for k, c in compiled.items()}


def test_parallel_equals_serial(ctx_factory, split_on, monkeypatch):
    """Worker processes generate the same code as the calling process,
    and the program's results equal the unsplit program's."""
    queue = cl.CommandQueue(ctx_factory())
    dag = make_random_dag(150)
    serial = _codes(dag, queue, monkeypatch, 1)
    parallel = _codes(dag, queue, monkeypatch, 2)
    assert serial == parallel
    assert len(serial) > 1

    rng = np.random.default_rng(3)
    inputs = {f"in{i}": rng.standard_normal((16, 16)) for i in range(4)}
    PROGRAM_CACHE.clear()
    _, out = _run(dag, inputs, queue)
    monkeypatch.setenv(split.SPLIT_ENV, "0")
    PROGRAM_CACHE.clear()
    _, ref = _run(dag, inputs, queue)
    assert set(out) == set(ref)
    for name in ref:
        np.testing.assert_allclose(out[name], ref[name], rtol=1e-12,
                                   atol=1e-12)


def test_sub_unit_store_hit_across_renamed_inputs(ctx_factory, split_store):
    """A second program with renamed inputs finds every sub-unit of the
    first in the program store."""
    queue = cl.CommandQueue(ctx_factory())
    rng = np.random.default_rng(2)
    results = []
    for name in ("x", "y"):
        x = pt.make_placeholder(name, (6, 3), np.float64)
        val = rng.standard_normal((6, 3))
        outputs = {"out": 2 * x - pt.sum(x, axis=1).reshape(6, 1)}
        hits = split_build.STATS["store_hits"]
        generated = split_build.STATS["generated"]
        PROGRAM_CACHE.clear()
        _, out = _run(outputs, {name: val}, queue)
        results.append((split_build.STATS["store_hits"] - hits,
                        split_build.STATS["generated"] - generated))
        np.testing.assert_allclose(
            out["out"], 2 * val - val.sum(axis=1).reshape(6, 1), rtol=1e-13)
    (hits_x, gen_x), (hits_y, gen_y) = results
    assert gen_x > 0 and hits_x == 0
    assert gen_y == 0 and hits_y == gen_x


def test_split_not_possible_without_barriers(ctx_factory):
    queue = cl.CommandQueue(ctx_factory())
    x = pt.make_placeholder("x", (4,), np.float64)
    knl = pt.generate_loopy(2 * x, cl_device=queue.device
                            ).program.default_entrypoint
    with pytest.raises(split.SplitNotPossible):
        split.split_kernel(knl)


def test_split_units_from_store(ctx_factory, split_store, caplog):
    """A program generated again (in-memory cache cleared) takes its
    sub-units from the store: no split, no loopy, same results."""
    import logging
    queue = cl.CommandQueue(ctx_factory())
    g = make_random_graph(3)
    inputs = g.inputs_for(g.outputs)
    _run(g.outputs, inputs, queue)
    PROGRAM_CACHE.clear()
    generated = split_build.STATS["generated"]
    with caplog.at_level(logging.INFO, logger="pytato.target.loopy"):
        _, out = _run(g.outputs, inputs, queue)
    assert split_build.STATS["generated"] == generated
    assert any("sub-units" in r.getMessage() and "store hit" in r.getMessage()
               for r in caplog.records)
    assert not any("kernel split into" in r.getMessage()
                   for r in caplog.records)
    for name, ref in g.expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("deferred", [False, True])
def test_split_executor_of_stored_unit(ctx_factory, split_store, monkeypatch,
                                       deferred):
    """A program from the store runs the split path from the stored facts
    of its scheduled unit (its arguments, temporaries, options): the unit
    itself is unpickled only when it is read (the executor's ``t_unit``,
    ``get_code``), or where a sub-unit is missing from the store, which
    then splits it again; the results are unchanged."""
    from pytato.target.loopy.run.stored_unit import StoredUnit

    queue = cl.CommandQueue(ctx_factory())
    g = make_random_graph(5)
    inputs = g.inputs_for(g.outputs)
    device = None if deferred else queue.device
    first = pt.generate_loopy(g.outputs, cl_device=device)
    first(queue, **inputs)
    code = first.get_code(queue.device)
    loads: list[StoredUnit] = []
    real_load = StoredUnit.load

    def load(self):
        loads.append(self)
        return real_load(self)

    monkeypatch.setattr(StoredUnit, "load", load)
    for missing in (False, True):
        PROGRAM_CACHE.clear()
        del loads[:]
        if missing:  # a sub-unit is no longer in the store
            def store_load(key, part, real=program_store.load):
                return None if part == "sub-unit" else real(key, part)

            monkeypatch.setattr(program_store, "load", store_load)
        prog = pt.generate_loopy(g.outputs, cl_device=device)
        for _ in range(2):
            _, out = prog(queue, **inputs)
            for name, ref in g.expected.items():
                np.testing.assert_allclose(out[name], ref, rtol=1e-10,
                                           atol=1e-10)
        assert bool(loads) == missing
        (executor,) = prog._executors()
        assert isinstance(executor, split_executor.SplitExecutor)
        assert executor.t_unit.default_entrypoint.instructions
        assert prog.get_code(queue.device) == code
        exe = prog.bind_to_context(queue.context)
        _, out = exe(queue, **inputs)
        assert exe.kernel.instructions
        for name, ref in g.expected.items():
            np.testing.assert_allclose(out[name], ref, rtol=1e-10, atol=1e-10)


class _FakeDevice:
    def __init__(self, device_type: int) -> None:
        self.type = device_type


def test_split_default_by_device_type(monkeypatch):
    """Unset, the split path is on for devices that are not CPUs only;
    :data:`~pytato.target.loopy.build.split.SPLIT_ENV` overrides."""
    monkeypatch.delenv(split.SPLIT_ENV, raising=False)
    gpu = _FakeDevice(cl.device_type.GPU)
    cpu = _FakeDevice(cl.device_type.CPU)
    assert split.split_enabled([gpu])
    assert not split.split_enabled([cpu])
    assert not split.split_enabled([gpu, cpu])
    assert not split.split_enabled([])
    monkeypatch.setenv(split.SPLIT_ENV, "1")
    assert split.split_enabled([cpu])
    monkeypatch.setenv(split.SPLIT_ENV, "0")
    assert not split.split_enabled([gpu])


def test_default_on_cpu_is_one_kernel(ctx_factory, monkeypatch):
    """On the CPU device of the tests, programs keep their single kernel by
    default (loopy's executor, not the split one)."""
    monkeypatch.delenv(split.SPLIT_ENV, raising=False)
    queue = cl.CommandQueue(ctx_factory())
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("not a CPU device")
    outputs, inputs, expected = _dg_like(2)
    prog, out = _run(outputs, inputs, queue)
    for name, ref in expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-12)
    assert not any(isinstance(exe, split_executor.SplitExecutor)
                   for exe in prog._executor_cache.values())


def test_packed_arguments_not_split(ctx_factory, split_on):
    """A target that packs arguments (``limit_arg_size_nbytes``) keeps the
    single kernel: the split path falls back instead of failing."""
    import loopy as lp

    queue = cl.CommandQueue(ctx_factory())
    outputs, inputs, expected = _dg_like(2)

    class ArgSizeLimitingTarget(pt.target.loopy.LoopyPyOpenCLTarget):
        def get_loopy_target(self) -> lp.PyOpenCLTarget:
            return lp.PyOpenCLTarget(limit_arg_size_nbytes=4096)

    prog = pt.generate_loopy(outputs, cl_device=queue.device,
                             target=ArgSizeLimitingTarget())
    _, out = prog(queue, **inputs)
    for name, ref in expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-12)


def test_early_workers_stopped(ctx_factory, split_on, monkeypatch):
    """Worker processes started before the split are used for the code
    generation, and stopped when it is done, or when the kernel cannot be
    split, or when the executor is dropped unused."""
    import gc

    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    rg = make_random_graph(3)
    prog = pt.generate_loopy(rg.outputs, cl_device=queue.device)
    t_unit = prog.program
    (entrypoint,) = t_unit.entrypoints

    started = []
    real_start = split_build._start_workers

    def recording_start(count):
        procs = real_start(count)
        started.extend(procs)
        return procs

    monkeypatch.setattr(split_build, "_start_workers", recording_start)
    monkeypatch.setattr(split_build, "MIN_INSTRUCTIONS_PER_WORKER", 1)
    facts = kernel_facts(t_unit, entrypoint)
    exe = split_executor.make_split_executor(facts, ctx, lambda: t_unit)
    if exe is None:
        pytest.skip("graph not split")
    assert len(started) == 2
    assert all(p.poll() is None for p in started)  # waiting for work
    _, out = exe(queue, **rg.inputs, **prog.bound_arguments)
    for name, ref in rg.expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-10, atol=1e-12)
    assert all(p.poll() is not None for p in started)

    started.clear()
    exe = split_executor.make_split_executor(facts, ctx, lambda: t_unit)
    assert len(started) == 2
    del exe
    gc.collect()
    for p in started:
        p.wait(timeout=30)


# {{{ sizes hoisted into value arguments

def _hoisted_values(unit: split.SubUnit) -> set[int]:
    return {v for v in map(split_sizes.hoisted_value, unit.canonical_names)
            if v is not None}


@pytest.mark.parametrize("nels", [(40, 80, 130), (40, 80, 120)])
@pytest.mark.parametrize("nfields", [1, 5])
def test_groups_share_sub_units(ctx_factory, split_on, nfields, nels):
    """Element groups of different sizes (larger than a work group) share
    their sub-units, also with a group of one size only: the element
    counts are value arguments, one code per nest of one group; the
    results equal numpy's. (The flattened extents of the largest group,
    520 or 480 dofs, are or are not multiples of the work-group size:
    loopy's domain is a box in the second case, bounded by the group
    count, brought to the first's form.)"""
    queue = cl.CommandQueue(ctx_factory())
    outputs, inputs, expected = _dg_like(nfields, nels=nels)
    device = _cpu_schedule(queue)
    knl = pt.generate_loopy(outputs, cl_device=device
                            ).program.default_entrypoint
    units = split.split_kernel(knl)
    keys = {u.key for u in units}
    one, _, _ = _dg_like(1, nels=(77,))
    one_units = split.split_kernel(pt.generate_loopy(
        one, cl_device=device).program.default_entrypoint)
    assert keys == {u.key for u in one_units}
    assert len(units) == nfields * len(nels) * len(one_units)
    # without hoisting, the groups differ (one field: a phase's nests are
    # put back together into one sub-unit, as the schedule fused them)
    unhoisted = split.split_kernel(knl, hoist=False)
    assert len({u.key for u in unhoisted}) == (
        len(nels) * len(keys) if nfields > 1 else len(keys))
    assert len(unhoisted) == (len(units) if nfields > 1 else len(keys))
    # each sub-unit's hoisted sizes are those of its group (the element
    # count, the flattened loop's extent); the differentiation matrix's
    # shape (4, 4) is hoisted too: no stride depends on its first axis
    for u in units:
        values = _hoisted_values(u)
        nel = next(n for n in nels if n in values)
        assert values <= {nel, nel * 4, 4}
    before = split_build.STATS["generated"]
    _, out = _run(outputs, inputs, queue, device)
    assert split_build.STATS["generated"] - before == len(keys)
    for name, ref in expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-12, atol=1e-12)


def test_hoisted_code_keeps_schedule_constants(ctx_factory, split_on):
    """The code shared by the groups keeps the constants the schedule
    chose (work-group size, the reduction's loop bound, the flattened
    index's division): only the sizes are value arguments."""
    queue = cl.CommandQueue(ctx_factory())
    outputs, _, _ = _dg_like(1, nels=(40, 81), ndofs=5)
    t_unit = pt.generate_loopy(outputs, cl_device=_cpu_schedule(queue)
                               ).program
    units = split.split_kernel(t_unit.default_entrypoint)
    compiled = split_build.compile_sub_units(t_unit, units)
    for comp in compiled.values():
        assert split_sizes.HOISTED_PREFIX in comp.code
        assert "<= 4;" in comp.code  # the reduction over 5 dofs
        for _, _, gsize, lsize in comp.launches:
            # the work-group size a constant, the group count an
            # expression in the hoisted extent
            assert all(isinstance(s, int) for s in lsize)
            assert not all(isinstance(g, int) for g in gsize)
    einsum = [c for c in compiled.values() if "/ 5" in c.code]
    assert einsum  # the flattened index (element, dof) divided by 5


@pytest.mark.parametrize("nels", [(0, 40, 80), (40, 0), (1, 33, 64)])
def test_hoisted_groups_edge_sizes(ctx_factory, split_on, nels):
    """Empty groups, a group of one element and a group whose extent is a
    multiple of the work-group size: results equal numpy's and the
    single kernel's."""
    queue = cl.CommandQueue(ctx_factory())
    outputs, inputs, expected = _dg_like(2, nels=nels)
    prog, out = _run(outputs, inputs, queue)
    # again, with device arrays (the fast path of repeated calls)
    dev = {k: cl.array.to_device(queue, v) for k, v in inputs.items()}
    _, again = prog(queue, **dev)
    for name, ref in expected.items():
        assert out[name].shape == ref.shape
        np.testing.assert_allclose(out[name], ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(again[name].get(), ref, rtol=1e-12,
                                   atol=1e-12)


def test_hoisted_with_symbolic_sizes(ctx_factory, split_on):
    """A group of a symbolic element count next to constant ones: the
    symbolic size stays a value argument of its own, results equal
    numpy's for several values of it."""
    queue = cl.CommandQueue(ctx_factory())
    rng = np.random.default_rng(11)
    n = pt.make_size_param("n")
    d = pt.make_placeholder("d", (4, 4), np.float64)
    outputs = {}
    for g, nel in enumerate((n, 40, 80)):
        u = pt.make_placeholder(f"u{g}", (nel, 4), np.float64)
        flux = 0.5 * (pt.sum(u, axis=1).reshape(nel, 1) - u)
        outputs[f"r{g}"] = pt.einsum("ij,ej->ei", d, u) + flux
    prog = pt.generate_loopy(outputs, cl_device=queue.device)
    dmat = rng.standard_normal((4, 4))
    for nval in (3, 50, 100):
        inputs = {"d": dmat, "n": nval}
        for g, nel in enumerate((nval, 40, 80)):
            inputs[f"u{g}"] = rng.standard_normal((nel, 4))
        _, out = prog(queue, **inputs)
        for g in range(3):
            u_np = inputs[f"u{g}"]
            ref = np.einsum("ij,ej->ei", dmat, u_np) + 0.5 * (
                u_np.sum(axis=1).reshape(-1, 1) - u_np)
            np.testing.assert_allclose(out[f"r{g}"], ref, rtol=1e-12,
                                       atol=1e-12)


def test_store_hit_across_sizes(ctx_factory, split_store):
    """A second program that differs from the first only in its element
    counts finds every sub-unit of the first in the program store."""
    queue = cl.CommandQueue(ctx_factory())
    results = []
    for nels in ((40, 80), (56, 200)):
        outputs, inputs, expected = _dg_like(2, nels=nels)
        hits = split_build.STATS["store_hits"]
        generated = split_build.STATS["generated"]
        PROGRAM_CACHE.clear()
        _, out = _run(outputs, inputs, queue, _cpu_schedule(queue))
        results.append((split_build.STATS["store_hits"] - hits,
                        split_build.STATS["generated"] - generated))
        for name, ref in expected.items():
            np.testing.assert_allclose(out[name], ref, rtol=1e-12,
                                       atol=1e-12)
    (hits_a, gen_a), (hits_b, gen_b) = results
    assert gen_a > 0 and hits_a == 0
    assert gen_b == 0 and hits_b == gen_a


def test_hoisted_parallel_equals_serial(ctx_factory, split_on, monkeypatch):
    """Worker processes generate the same hoisted code as the calling
    process."""
    queue = cl.CommandQueue(ctx_factory())
    outputs, _, _ = _dg_like(2, nels=(40, 80, 120))
    device = _cpu_schedule(queue)
    serial = _codes(outputs, queue, monkeypatch, 1, device)
    parallel = _codes(outputs, queue, monkeypatch, 2, device)
    assert serial == parallel
    assert all(split_sizes.HOISTED_PREFIX in code for code, _ in serial.values())




def test_hoisting_switched_off(ctx_factory, split_on, monkeypatch):
    """``PYTATO_SPLIT_HOIST=0``: the sub-units keep their constants (the
    groups do not share them), the results are the same."""
    monkeypatch.setenv(split.SPLIT_HOIST_ENV, "0")
    queue = cl.CommandQueue(ctx_factory())
    outputs, inputs, expected = _dg_like(2, nels=(40, 80))
    knl = pt.generate_loopy(outputs, cl_device=queue.device
                            ).program.default_entrypoint
    units = split.split_kernel(knl)
    assert not any(split_sizes.hoisted_value(n) is not None
                   for u in units for n in u.canonical_names)
    assert ({u.key for u in units}
            == {u.key for u in split.split_kernel(knl, hoist=False)}
            != {u.key for u in split.split_kernel(knl, hoist=True)})
    _, out = _run(outputs, inputs, queue)
    for name, ref in expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-12, atol=1e-12)

# }}}


def test_unit_weight_counts_calls():
    """Sub-units are shared among the worker processes by weight: one per
    instruction and CALL_WEIGHT per function call."""
    import loopy as lp
    knl = lp.make_kernel(
        "{[i]: 0 <= i < 8}",
        """
        a[i] = sin(x[i]) + cos(x[i]) * 2
        b[i] = x[i] + 1
        """, [lp.GlobalArg("x,a,b", np.float64, shape=(8,))])
    insns = knl.default_entrypoint.instructions
    assert split.unit_weight(insns) == 2 + 2 * split.CALL_WEIGHT
    assert split.unit_weight(insns[1:]) == 1
    assert split.unit_weight([]) == 0
