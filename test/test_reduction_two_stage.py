"""Tests of the two-stage parallel reductions
(:mod:`pytato.target.loopy.schedule.reductions`), run on the OpenCL test device."""

from __future__ import annotations

import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule.reductions import (
    split_reduction_columns,
    split_reduction_two_stage,
)


CPU_GRID = (8, 32)
GPU_GRID = (528, 256)   # an H100: 4 groups per compute unit, 256 items


def _two_stage(graph, num_groups, group_size, **kwargs):
    """The program of *graph* (without the default schedule) with every
    instruction holding a reduction computed in two stages (in one kernel
    with ``single_launch=True``), and global barriers between the
    instructions."""
    return _split_all(graph, lambda knl, insn_id: split_reduction_two_stage(
        knl, insn_id, num_groups=num_groups, group_size=group_size,
        **kwargs))


def _columns(graph, num_chunks, group_size, **kwargs):
    """As :func:`_two_stage`, by :func:`split_reduction_columns` (full
    reductions by :func:`split_reduction_two_stage`)."""
    def split(knl, insn_id):
        if not knl.id_to_insn[insn_id].within_inames:
            return split_reduction_two_stage(knl, insn_id, num_groups=8,
                                             group_size=group_size)
        return split_reduction_columns(knl, insn_id, num_chunks=num_chunks,
                                       group_size=group_size, **kwargs)
    return _split_all(graph, split)


def _split_all(graph, split):
    import loopy as lp
    prg = pt.generate_loopy(graph, default_schedule=False)
    knl = prg.program.default_entrypoint
    red_ids = [insn.id for insn in knl.instructions
               if insn.reduction_inames()]
    if not red_ids:
        # outputs with no elements are not computed: nothing to split
        outputs = graph.values() if isinstance(graph, dict) else [graph]
        assert all(0 in ary.shape for ary in outputs)
        assert not knl.instructions
        return prg
    for insn_id in red_ids:
        knl = split(knl, insn_id)
    # global barriers between consecutive instructions (as the default
    # schedule adds them), in the order of the original instructions:
    # from the last instruction made of one to the first made of the next
    insns = {insn.id: insn for insn in knl.instructions}
    groups = []
    for insn in prg.program.default_entrypoint.instructions:
        made = ([f"{insn.id}_stage1", insn.id] if insn.id in red_ids
                else [insn.id])
        # (a split may leave an instruction unchanged)
        groups.append([iid for iid in made if iid in insns])
    barriers = []
    for i in range(len(groups) - 1):
        bid = f"_test_gbarrier_{i}"
        barriers.append(lp.BarrierInstruction(
            id=bid, synchronization_kind="global", mem_kind="global",
            depends_on=frozenset({groups[i][-1]}),
            within_inames=frozenset()))
        after = insns[groups[i + 1][0]]
        insns[after.id] = after.copy(depends_on=after.depends_on | {bid})
    knl = knl.copy(instructions=[*insns.values(), *barriers])
    return prg.copy(program=prg.program.with_kernel(knl))


def _data(rng, dtype, shape, op):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < (0.999 if op == "all" else 0.001)
    if op == "prod":
        # products that neither overflow nor underflow
        if dtype.kind == "i":
            return rng.choice(np.array([-1, 1], dtype), shape)
        a = 1 + 1e-4 * (rng.random(shape) - 0.5)
        return (a + 1j * 1e-4 * rng.random(shape) if dtype.kind == "c"
                else a).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    a = rng.random(shape) - 0.3
    if dtype.kind == "c":
        a = a + 1j * rng.random(shape)
    return a.astype(dtype)


_PT_OPS = {"sum": pt.sum, "prod": pt.prod, "max": pt.amax, "min": pt.amin,
           "any": pt.any, "all": pt.all}
_NP_OPS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
           "any": np.any, "all": np.all}


def _check(res, ref, dtype, n):
    res = np.asarray(res)
    if np.dtype(dtype).kind in "fc":
        rtol = 1e-4 if np.dtype(dtype).itemsize <= 4 else 1e-12
        if np.dtype(dtype) == np.complex64:
            rtol = 1e-4
        np.testing.assert_allclose(res, ref, rtol=rtol,
                                   atol=rtol * max(n, 1) ** 0.5)
    else:
        np.testing.assert_array_equal(res, ref)


def _run(queue, graph, grid, single_launch=False, **inputs):
    prg = _two_stage(graph, *grid, single_launch=single_launch)
    _, out = prg(queue, **inputs)
    return out


SINGLE_LAUNCH = pytest.mark.parametrize("single_launch", [False, True],
                                        ids=["two_kernels", "one_kernel"])


@SINGLE_LAUNCH
@pytest.mark.parametrize("op", list(_PT_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.complex128, np.bool_])
def test_ops_and_dtypes(queue, op, dtype, single_launch):
    if op in ("max", "min") and np.dtype(dtype).kind == "c":
        pytest.skip("no ordering of complex numbers")
    rng = np.random.default_rng(7)
    n = 10007
    a = _data(rng, dtype, (n,), op)
    x = pt.make_placeholder("x", (n,), dtype)
    (res,) = _run(queue, _PT_OPS[op](x), CPU_GRID, single_launch, x=a)
    _check(res, _NP_OPS[op](a), dtype, n)


@SINGLE_LAUNCH
@pytest.mark.parametrize("grid", [CPU_GRID, GPU_GRID, (3, 5)])
@pytest.mark.parametrize("n", [0, 1, 100, 10007, 2**20])
@pytest.mark.parametrize("op", ["sum", "max", "prod", "all"])
def test_sizes(queue, op, n, grid, single_launch):
    if n == 0 and op == "max":
        pytest.skip("max of an empty array")
    dtype = {"all": np.bool_, "max": np.int32}.get(op, np.float64)
    rng = np.random.default_rng(n)
    a = _data(rng, dtype, (n,), op)
    x = pt.make_placeholder("x", (n,), dtype)
    (res,) = _run(queue, _PT_OPS[op](x), grid, single_launch, x=a)
    _check(res, _NP_OPS[op](a), dtype, n)


@SINGLE_LAUNCH
@pytest.mark.parametrize("grid", [CPU_GRID, GPU_GRID])
def test_symbolic_size(queue, grid, single_launch):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    prg = _two_stage(pt.sum(x), *grid, single_launch=single_launch)
    rng = np.random.default_rng(3)
    for size in [0, 1, 100, 10007, 2**20 + 3]:
        a = rng.random(size)
        _, (res,) = prg(queue, x=a)
        np.testing.assert_allclose(res, a.sum(), rtol=1e-12)


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_chunk(queue, chunk):
    a = np.random.default_rng(0).random(10007)
    x = pt.make_placeholder("x", (10007,), np.float64)
    prg = _two_stage(pt.sum(x), *CPU_GRID, chunk=chunk)
    _, (res,) = prg(queue, x=a)
    np.testing.assert_allclose(res, a.sum(), rtol=1e-12)


@SINGLE_LAUNCH
def test_nan_propagation(queue, single_launch):
    a = np.random.default_rng(0).random(10007)
    a[5000] = np.nan
    x = pt.make_placeholder("x", (10007,), np.float64)
    for op in [pt.amax, pt.amin]:
        (res,) = _run(queue, op(x), CPU_GRID, single_launch, x=a)
        assert np.isnan(res)


@SINGLE_LAUNCH
def test_reduction_in_arithmetic_and_outputs_with_inames(queue,
                                                         single_launch):
    rng = np.random.default_rng(1)
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 10007), np.float64)
    y = pt.make_placeholder("y", (n,), np.float64)
    z = pt.make_placeholder("z", (n, 3), np.float64)
    rows = pt.sum(x, axis=1) + 1
    # (not many outputs: stage 1 runs a tree reduction per output in
    # every group)
    graph = {"rows": rows, "dot": 2 * pt.sum(rows * y), "other": 2 * y,
             "all": pt.sum(x), "cols": pt.amax(z, axis=0)}
    xa = rng.random((5, 10007))
    ya = rng.random(5)
    za = rng.random((5, 3))
    for grid in [CPU_GRID, GPU_GRID]:
        out = _run(queue, graph, grid, single_launch, x=xa, y=ya, z=za)
        ref_rows = xa.sum(axis=1) + 1
        np.testing.assert_allclose(out["rows"], ref_rows, rtol=1e-12)
        np.testing.assert_allclose(out["dot"], 2 * (ref_rows * ya).sum(),
                                   rtol=1e-12)
        np.testing.assert_allclose(out["other"], 2 * ya)
        np.testing.assert_allclose(out["all"], xa.sum(), rtol=1e-12)
        np.testing.assert_array_equal(out["cols"], za.max(axis=0))


def test_structure():
    import loopy as lp
    from loopy.kernel.data import InameImplementationTag
    x = pt.make_placeholder("x", (1000,), np.float64)
    prg = pt.generate_loopy(3 * pt.sum(x), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    new = split_reduction_two_stage(knl, insn.id, num_groups=4,
                                    group_size=16)
    ids = {i.id for i in new.instructions}
    assert ids == {insn.id, f"{insn.id}_stage1",
                   f"{insn.id}_two_stage_barrier"}
    assert new.id_to_insn[insn.id].depends_on >= {
        f"{insn.id}_two_stage_barrier"}
    tags = sorted(str(t) for n in new.all_inames() for t in new.iname_tags(n)
                  if isinstance(t, InameImplementationTag))
    assert tags == ["g.0", "l.0", "l.0"]
    (tmp,) = new.temporary_variables.values()
    assert tmp.address_space == lp.AddressSpace.GLOBAL
    assert tmp.shape == (4,)
    code = lp.generate_code_v2(prg.program.with_kernel(new)).device_code()
    assert code.count("__kernel") == 2


def test_errors():
    x = pt.make_placeholder("x", (100,), np.float64)
    prg = pt.generate_loopy(2 * x, default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    with pytest.raises(ValueError):
        split_reduction_two_stage(knl, insn.id, num_groups=4, group_size=16)
    prg = pt.generate_loopy(pt.sum(x), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    with pytest.raises(ValueError):
        split_reduction_two_stage(knl, insn.id, num_groups=0, group_size=16)


# {{{ split_reduction_columns

COLUMN_GRIDS = [(8, 32), (64, 256), (3, 5)]


def _run_columns(queue, graph, grid, **inputs):
    _, out = _columns(graph, *grid)(queue, **inputs)
    return out


@pytest.mark.parametrize("op", list(_PT_OPS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.complex128, np.bool_])
def test_columns_ops_and_dtypes(queue, op, dtype):
    if op in ("max", "min") and np.dtype(dtype).kind == "c":
        pytest.skip("no ordering of complex numbers")
    rng = np.random.default_rng(7)
    shape = (1001, 67)
    a = _data(rng, dtype, shape, op)
    x = pt.make_placeholder("x", shape, dtype)
    (res,) = _run_columns(queue, _PT_OPS[op](x, axis=0), (8, 32), x=a)
    _check(res, _NP_OPS[op](a, axis=0), dtype, shape[0])


@pytest.mark.parametrize("grid", COLUMN_GRIDS)
@pytest.mark.parametrize("shape", [
    (0, 37), (1, 1), (100, 37), (1000, 300), (7, 1000), (0, 2, 3),
    (50, 3, 40), (333, 4, 100), (5, 0)])
@pytest.mark.parametrize("op", ["sum", "max", "prod", "any"])
def test_columns_sizes(queue, op, shape, grid):
    if shape[0] == 0 and op == "max":
        pytest.skip("max of an empty array")
    dtype = {"any": np.bool_, "max": np.int32}.get(op, np.float64)
    rng = np.random.default_rng(sum(shape))
    a = _data(rng, dtype, shape, op)
    x = pt.make_placeholder("x", shape, dtype)
    (res,) = _run_columns(queue, _PT_OPS[op](x, axis=0), grid, x=a)
    _check(res, _NP_OPS[op](a, axis=0), dtype, shape[0])


@pytest.mark.parametrize("grid", [(8, 32), (64, 256)])
@pytest.mark.parametrize("ndim", [2, 3])
def test_columns_symbolic_sizes(queue, grid, ndim):
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    shape = (n, m) if ndim == 2 else (n, 3, m)
    x = pt.make_placeholder("x", shape, np.float64)
    prg = _columns({"sum": pt.sum(x, axis=0), "min": pt.amin(x, axis=0)},
                   *grid)
    rng = np.random.default_rng(3)
    for size in [(0, 5), (1, 1), (100, 37), (1003, 300), (5, 0)]:
        a = rng.random(size if ndim == 2 else (size[0], 3, size[1]))
        if not size[0]:
            # numpy: no minimum of an empty axis (issue 41)
            from pytato.diagnostic import EmptyReductionError
            with pytest.raises(EmptyReductionError):
                prg(queue, x=a)
            continue
        _, out = prg(queue, x=a)
        np.testing.assert_allclose(out["sum"], a.sum(axis=0), rtol=1e-12)
        np.testing.assert_array_equal(out["min"], a.min(axis=0))


@pytest.mark.parametrize("run", [None, 1, 7])
def test_columns_run(queue, run):
    a = np.random.default_rng(0).random((1001, 67))
    x = pt.make_placeholder("x", a.shape, np.float64)
    prg = _columns(pt.sum(x, axis=0), 8, 32, run=run)
    _, (res,) = prg(queue, x=a)
    np.testing.assert_allclose(res, a.sum(axis=0), rtol=1e-12)


def test_columns_nan_and_several_reduction_axes(queue):
    a = np.random.default_rng(0).random((301, 20, 37))
    a[100, 3, 5] = np.nan
    x = pt.make_placeholder("x", a.shape, np.float64)
    for pt_op, np_op in [(pt.amax, np.max), (pt.amin, np.min)]:
        (res,) = _run_columns(queue, pt_op(x, axis=0), (8, 32), x=a)
        np.testing.assert_array_equal(res, np_op(a, axis=0))
        assert np.isnan(res[3, 5])
    b = np.nan_to_num(a)
    (res,) = _run_columns(queue, pt.sum(x, axis=(0, 1)), (8, 32), x=b)
    np.testing.assert_allclose(res, b.sum(axis=(0, 1)), rtol=1e-12)


def test_columns_arithmetic_and_dependents(queue):
    rng = np.random.default_rng(1)
    x = pt.make_placeholder("x", (1000, 300), np.float64)
    y = pt.make_placeholder("y", (300,), np.float64)
    cols = 2 * pt.sum(x, axis=0) + 1
    graph = {"cols": cols, "scaled": cols * y, "total": pt.sum(cols * y)}
    xa = rng.random((1000, 300))
    ya = rng.random(300)
    out = _run_columns(queue, graph, (8, 32), x=xa, y=ya)
    ref = 2 * xa.sum(axis=0) + 1
    np.testing.assert_allclose(out["cols"], ref, rtol=1e-12)
    np.testing.assert_allclose(out["scaled"], ref * ya, rtol=1e-12)
    np.testing.assert_allclose(out["total"], (ref * ya).sum(), rtol=1e-12)


def test_columns_structure():
    import loopy as lp
    from loopy.kernel.data import InameImplementationTag
    x = pt.make_placeholder("x", (1000, 300), np.float64)
    prg = pt.generate_loopy(3 * pt.sum(x, axis=0), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    new = split_reduction_columns(knl, insn.id, num_chunks=4, group_size=16)
    ids = {i.id for i in new.instructions}
    assert ids == {insn.id, f"{insn.id}_stage1",
                   f"{insn.id}_columns_barrier"}
    assert new.id_to_insn[insn.id].depends_on >= {
        f"{insn.id}_columns_barrier"}
    tags = sorted(str(t) for n in new.all_inames() for t in new.iname_tags(n)
                  if isinstance(t, InameImplementationTag))
    assert tags == ["g.0", "g.0", "g.1", "l.0", "l.0"]
    (tmp,) = new.temporary_variables.values()
    assert tmp.address_space == lp.AddressSpace.GLOBAL
    assert tmp.shape == (4, 300)
    code = lp.generate_code_v2(prg.program.with_kernel(new)).device_code()
    assert code.count("__kernel") == 2


def test_columns_errors():
    x = pt.make_placeholder("x", (100, 10), np.float64)
    for graph in [2 * x, pt.sum(x)]:
        prg = pt.generate_loopy(graph, default_schedule=False)
        knl = prg.program.default_entrypoint
        (insn,) = knl.instructions
        with pytest.raises(ValueError):
            split_reduction_columns(knl, insn.id, num_chunks=4,
                                    group_size=16)
    prg = pt.generate_loopy(pt.sum(x, axis=0), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    with pytest.raises(ValueError):
        split_reduction_columns(knl, insn.id, num_chunks=0, group_size=16)

# }}}


@pytest.mark.parametrize("n", [4096, 4000, 4099, 0, 1])
def test_two_stage_unroll_and_final_group(queue, n):
    """Stage 1 with its steps unrolled where their number (the chunk: 8 for
    4096 and 4000 elements, 9 for 4099, 64 for an empty domain, 1 for
    one element) is a multiple of the factor, with
    or without a bounds check per element, and a stage-2 group smaller than
    stage 1's."""
    from pytato.target.loopy.schedule.reductions import split_reduction_two_stage
    x = pt.make_placeholder("x", (n,), np.float64)
    prg = pt.generate_loopy(pt.sum(x), default_schedule=False)
    knl = prg.program.default_entrypoint
    insn, = knl.instructions
    knl = split_reduction_two_stage(knl, insn.id, num_groups=8,
                                    group_size=64, unroll=4,
                                    final_group_size=4)
    assert any("unr" in str(t) for i in knl.all_inames()
               for t in knl.iname_tags(i)) == (n in (4096, 4000, 0))
    prg = prg.copy(program=prg.program.with_kernel(knl))
    a = np.random.default_rng(n).random(n)
    _, (res,) = prg(queue, x=a)
    np.testing.assert_allclose(res, a.sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="unroll"):
        split_reduction_two_stage(prg.program.default_entrypoint, insn.id,
                                  num_groups=2, group_size=2, unroll=0)


# {{{ single-launch reductions: both stages in one kernel

def test_single_launch_structure():
    import re

    import loopy as lp

    from pytato.target.loopy.build.preprocessing import (
        generate_code,
        preprocess_and_linearize,
    )
    from pytato.target.loopy.schedule.reductions import ZeroedTemporary
    x = pt.make_placeholder("x", (1000,), np.float64)
    prg = pt.generate_loopy(3 * pt.sum(x), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    new = split_reduction_two_stage(knl, insn.id, num_groups=4,
                                    group_size=16, single_launch=True)
    ids = {i.id for i in new.instructions}
    assert ids == {insn.id, f"{insn.id}_stage1", f"{insn.id}_ticket"}
    assert not any(isinstance(i, lp.BarrierInstruction)
                   for i in new.instructions)
    # stage 2 (the instruction itself) runs in the group that took the
    # last ticket
    assert new.id_to_insn[insn.id].predicates
    (counter,) = [t for t in new.temporary_variables.values()
                  if any(isinstance(tag, ZeroedTemporary) for tag in t.tags)]
    assert counter.address_space == lp.AddressSpace.GLOBAL
    assert counter.shape == (1,)
    code = generate_code(preprocess_and_linearize(
        prg.program.with_kernel(new))).device_code()
    assert code.count("__kernel") == 1
    # the neutral elements of stage 2's tree are set after the ticket
    # (loopy gives their initialization the predicate, not the dependency:
    # see order_after_predicate_writers)
    before, after = code.split("atomic_inc")
    late = set(re.findall(r"(neutral\w+) = ", after))
    assert late
    assert not late & set(re.findall(r"(neutral\w+) = ", before))
    # with output inames: two kernels (stage 2 for every output in every
    # group would cost more than the launch it saves)
    y = pt.make_placeholder("y", (3, 1000), np.float64)
    prg = pt.generate_loopy(pt.sum(y, axis=1), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    new = split_reduction_two_stage(knl, insn.id, num_groups=4,
                                    group_size=16, single_launch=True)
    assert f"{insn.id}_two_stage_barrier" in new.id_to_insn


@pytest.fixture
def gpu_sum_prog():
    """The sum and the max of 10**5 doubles, scheduled for a GPU-like device
    (single-launch reductions), with a counter that each call must find
    zero."""
    from pytato.target.loopy.device import DeviceInfo
    info = DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256)
    assert info.single_launch_reductions
    x = pt.make_placeholder("x", (10**5,), np.float64)
    prog = pt.generate_loopy({"s": pt.sum(x), "m": pt.amax(2 * x)},
                             cl_device=info)
    assert "atomic_inc" in prog.get_code()
    return prog


def _check_sum_max(out, a):
    np.testing.assert_allclose(out["s"], a.sum(), rtol=1e-12)
    assert out["m"] == 2 * a.max()


def test_single_launch_repeated_calls(cl_ctx, queue, gpu_sum_prog):
    """The ticket counters are zero at every call: calls on one queue
    (temporaries kept between calls), on two queues in turn, with an
    explicit allocator (temporaries per call), on a profiling queue,
    through the bound executable and through a launcher."""
    import pyopencl as cl
    import pyopencl.array as cla
    from pyopencl.tools import ImmediateAllocator

    rng = np.random.default_rng(5)
    arrays = [rng.random(10**5) - 0.5 for _ in range(3)]
    dev = [cla.to_device(queue, a) for a in arrays]
    other = cl.CommandQueue(cl_ctx)
    prof = cl.CommandQueue(
        cl_ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    exe = gpu_sum_prog.bind_to_context(cl_ctx)
    alloc = ImmediateAllocator(queue)
    # (each call of a path gets other data than its previous call: a
    # group taking the last ticket too early would find a partial result
    # of that call)
    for k in range(12):
        _, out = gpu_sum_prog(queue, x=arrays[k % 3])
        _check_sum_max(out, arrays[k % 3])
        _, out = gpu_sum_prog(queue, x=dev[(k + 1) % 3])
        _check_sum_max({n: v.get() for n, v in out.items()},
                       arrays[(k + 1) % 3])
        q = other if k % 2 else queue
        _, out = exe(q, x=dev[k % 3])
        _check_sum_max({n: v.get(q) for n, v in out.items()}, arrays[k % 3])
        _, out = exe(queue, x=dev[(k + 2) % 3], allocator=alloc)
        _check_sum_max({n: v.get() for n, v in out.items()},
                       arrays[(k + 2) % 3])
        _, out = gpu_sum_prog(prof, x=arrays[k % 3])
        _check_sum_max(out, arrays[k % 3])
    # a launcher's temporaries: the counters are zero before and after
    # each launch
    launch = exe.launcher(queue, x=dev[0], per_call=["x"])
    counters = [t for t in launch.temporaries.values()
                if t.dtype == np.uint32]
    assert len(counters) == 2
    assert all(c.get().tolist() == [0] for c in counters)
    for k in range(6):
        launch(x=dev[k % 3]).wait()
        _check_sum_max({n: v.get() for n, v in launch.outputs.items()},
                       arrays[k % 3])
        assert all(c.get().tolist() == [0] for c in counters)


def test_single_launch_out_of_order_queue(cl_ctx, gpu_sum_prog):
    import pyopencl as cl
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if not cl_ctx.devices[0].queue_properties & props:
        pytest.skip("no out-of-order queues on this device")
    queue = cl.CommandQueue(cl_ctx, properties=props)
    rng = np.random.default_rng(6)
    for _ in range(6):
        a = rng.random(10**5)
        _, out = gpu_sum_prog(queue, x=a)
        _check_sum_max(out, a)

# }}}


def test_zeroing_allocator(cl_ctx, queue):
    """Where a program's kernels have no plan, loopy's invoker allocates
    their temporaries from an allocator that fills them with zeros."""
    import pyopencl as cl
    from pyopencl.tools import ImmediateAllocator

    from pytato.target.loopy.run.dispatch import _ZeroingAllocator
    from pytato.target.loopy.run.launcher import fill_zeros

    for base in (None, ImmediateAllocator(queue)):
        alloc = _ZeroingAllocator(queue, base)
        buf = alloc(4096)
        got = np.empty(1024, np.uint32)
        cl.enqueue_copy(queue, got, buf)
        assert not got.any()
    # on an out-of-order queue the fill is done when fill_zeros returns
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    if cl_ctx.devices[0].queue_properties & props:
        ooo = cl.CommandQueue(cl_ctx, properties=props)
        buf = cl.Buffer(cl_ctx, cl.mem_flags.READ_WRITE, 4096)
        cl.enqueue_copy(ooo, buf, np.full(1024, 7, np.uint32)).wait()
        evt = fill_zeros(ooo, buf, 4096)
        assert evt.command_execution_status == cl.command_execution_status.COMPLETE
        got = np.empty(1024, np.uint32)
        cl.enqueue_copy(ooo, got, buf).wait()
        assert not got.any()


def test_single_launch_only_where_verified(queue):
    """Descriptions of devices enable single-launch reductions on NVIDIA's
    GPUs only (and the environment switch turns them off there)."""
    from types import SimpleNamespace

    from pytato.target.loopy.device import (
        DeviceInfo,
        single_launch_enabled,
        single_launch_verified,
    )

    def device(vendor, platform):
        return SimpleNamespace(vendor=vendor,
                               platform=SimpleNamespace(name=platform))

    assert single_launch_verified(device("NVIDIA Corporation", "NVIDIA CUDA"))
    assert not single_launch_verified(device("Advanced Micro Devices, Inc.",
                                             "AMD Accelerated Parallel "
                                             "Processing"))
    assert not single_launch_verified(device("Intel(R) Corporation",
                                             "Intel(R) OpenCL Graphics"))
    info = DeviceInfo.from_cl_device(queue.device)
    assert info.single_launch == (single_launch_enabled()
                                  and single_launch_verified(queue.device))
    # hand-made descriptions keep the default (on), for GPUs only
    gpu = DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256)
    cpu = DeviceInfo(kind="cpu", compute_units=4, max_work_group_size=256)
    assert gpu.single_launch_reductions and not cpu.single_launch_reductions


def test_single_launch_final_group_at_most_the_group(queue):
    """In one kernel, stage 2 runs on stage 1's work-items: a larger
    *final_group_size* is cut to the group size."""
    x = pt.make_placeholder("x", (5000,), np.float64)
    prg = pt.generate_loopy(pt.sum(x), default_schedule=False)
    knl = prg.program.default_entrypoint
    (insn,) = knl.instructions
    knl = split_reduction_two_stage(knl, insn.id, num_groups=64,
                                    group_size=16, final_group_size=64,
                                    single_launch=True)
    prg = prg.copy(program=prg.program.with_kernel(knl))
    assert "reqd_work_group_size(16, 1, 1)" in prg.get_code()
    a = np.random.default_rng(2).random(5000)
    _, (res,) = prg(queue, x=a)
    np.testing.assert_allclose(res, a.sum(), rtol=1e-12)
