"""Reductions over any set of axes (full reductions of 2-D and 3-D arrays,
``vdot``, matvec, column sums) under the CPU and the GPU schedules, run on
the OpenCL test device against numpy; and the transformations behind them
(:func:`~pytato.target.loopy.schedule.reductions.flatten_reduction_inames`,
:func:`~pytato.target.loopy.schedule.cpu_reductions.split_reduction_parts`)."""

from __future__ import annotations

import itertools

import loopy as lp
import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule import reduction_plans
from pytato.target.loopy.schedule.default import DeviceInfo


SCHEDULES = {
    "cpu": DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096),
    # a small GPU (PoCL accepts its work-groups)
    "gpu": DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256),
}

# large enough for the multi-group paths: 4608 elements (the CPU splits
# full reductions of at least 512, the small GPU those of at least 4096)
SHAPES = [(72, 64), (12, 16, 24)]

_OPS = {
    "sum": (pt.sum, np.sum),
    "prod": (pt.prod, np.prod),
    "amax": (pt.amax, np.max),
    "amin": (pt.amin, np.min),
    "any": (pt.any, np.any),
    "all": (pt.all, np.all),
}

# (op, dtype) pairs tested: every op on the dtypes it is defined for
_CASES = [
    *(("sum", d) for d in ("bool", "int32", "float32", "float64",
                           "complex128")),
    *(("prod", d) for d in ("int32", "float64", "complex128")),
    *((op, d) for op in ("amax", "amin")
      for d in ("int32", "float32", "float64", "uint8", "uint32", "uint64")),
    *((op, d) for op in ("any", "all") for d in ("bool", "float64")),
]


#: the threshold of the CPU's splits as the code sets it
_CPU_MIN_SPLIT_ELEMENTS = reduction_plans.CPU_MIN_SPLIT_ELEMENTS


@pytest.fixture(autouse=True)
def _split_small_cpu_reductions(monkeypatch):
    """The layouts of the CPU's split reductions, on arrays small enough
    for fast tests: below
    :data:`~pytato.target.loopy.schedule.reduction_plans.CPU_MIN_SPLIT_ELEMENTS`
    a CPU keeps a reduction in one kernel
    (:func:`test_small_cpu_reductions_stay_in_one_kernel`)."""
    monkeypatch.setattr(reduction_plans, "CPU_MIN_SPLIT_ELEMENTS", 0)


@pytest.mark.parametrize(("shape", "axis"), [
    ((64, 64), None), ((64, 64), 0), ((8, 16, 32), None), ((96, 64), 0)])
def test_small_cpu_reductions_stay_in_one_kernel(queue, monkeypatch, shape,
                                                  axis):
    """A CPU reduction of fewer than CPU_MIN_SPLIT_ELEMENTS elements is not
    split across kernels (parts, row blocks or column chunks, each reduced
    again by a second kernel): one kernel; a larger one still is."""
    monkeypatch.setattr(reduction_plans, "CPU_MIN_SPLIT_ELEMENTS",
                        _CPU_MIN_SPLIT_ELEMENTS)
    info = SCHEDULES["cpu"]
    rng = np.random.default_rng(3)
    for scale, kernels in [(1, 1), (8, 2)]:
        big = (shape[0] * scale, *shape[1:])
        # (a name of its own: the in-memory program cache does not key
        # the constants that the other tests change)
        x = pt.make_placeholder("x_small", big, np.float64)
        with lp.CacheMode(False):
            prg = pt.generate_loopy(pt.sum(x, axis=axis), cl_device=info)
        code = lp.generate_code_v2(prg.program).device_code()
        assert code.count("__kernel ") == kernels, (big, axis)
        xa = rng.random(big)
        _, (res,) = prg(queue, x_small=xa)
        np.testing.assert_allclose(res, xa.sum(axis=axis), rtol=1e-12)


def _data(rng, dtype, shape, op):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        # mostly one value, so that any/all over many axes are not trivial
        return rng.random(shape) < (0.999 if op == "all" else 0.001)
    if op == "prod":
        # neither overflow nor underflow over 4608 factors
        if dtype.kind == "i":
            return rng.choice(np.array([-1, 1], dtype), shape)
        x = 1 + (rng.random(shape) - 0.5) * 0.01
        if dtype.kind == "c":
            x = x * np.exp(1j * (rng.random(shape) - 0.5) * 0.01)
        return x.astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    if dtype.kind == "u":
        # the whole range: the neutral elements of min and max are its ends
        return rng.integers(0, np.iinfo(dtype).max, shape, dtype=dtype,
                            endpoint=True)
    if op in ("any", "all"):
        # zeros are false: mostly nonzero for all, mostly zero for any
        x = (rng.random(shape) < (0.999 if op == "all" else 0.001))
        return (x * rng.random(shape)).astype(dtype)
    x = rng.random(shape) - 0.5
    if dtype.kind == "c":
        x = x + 1j * (rng.random(shape) - 0.5)
    return x.astype(dtype)


def _compare(got, expected, dtype):
    got = np.asarray(got)
    if np.dtype(dtype).kind in "biu" or expected.dtype.kind == "b":
        np.testing.assert_array_equal(got, expected)
    else:
        tol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def _subsets(ndim):
    return [axes for k in range(1, ndim + 1)
            for axes in itertools.combinations(range(ndim), k)]


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize(("op", "dtype"), _CASES)
def test_every_set_of_axes(queue, schedule, op, dtype):
    """Each op over every set of axes of a 2-D and a 3-D array, one
    program per op, dtype and schedule."""
    rng = np.random.default_rng(7)
    pt_op, np_op = _OPS[op]
    graph = {}
    inputs = {}
    expected = {}
    for k, shape in enumerate(SHAPES):
        name = f"x{k}"
        x = pt.make_placeholder(name, shape, dtype)
        inputs[name] = _data(rng, dtype, shape, op)
        for axes in _subsets(len(shape)):
            out = f"r{k}_{''.join(map(str, axes))}"
            graph[out] = pt_op(x, axis=axes)
            expected[out] = np_op(inputs[name], axis=axes)
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=SCHEDULES[schedule])
    _, res = prg(queue, **inputs)
    for out, ref in expected.items():
        _compare(res[out], ref, dtype)


def _full_sum_program(shape, info):
    x = pt.make_placeholder("x", shape, np.float64)
    with lp.CacheMode(False):
        return pt.generate_loopy(pt.sum(x), cl_device=info)


@pytest.mark.parametrize("shape", [(64, 64), (8, 16, 32), (4096,)])
def test_gpu_full_reductions_use_many_groups(queue, shape):
    """On a GPU, a full reduction over several axes is flattened and
    shared among many groups (it used to run as one work-group); checked
    in the kernel and run."""
    info = SCHEDULES["gpu"]
    prg = _full_sum_program(shape, info)
    knl = prg.program.default_entrypoint
    stage1 = [i for i in knl.instructions if i.id.endswith("_stage1")]
    assert len(stage1) == 1
    partial = [t for t in knl.temporary_variables.values()
               if t.name.endswith("_partial")]
    assert len(partial) == 1
    # one partial result per group of the first stage
    assert partial[0].shape[0] >= info.compute_units
    assert len(stage1[0].reduction_inames()) >= 2  # tree and steps
    x = np.random.default_rng(0).random(shape)
    _, (res,) = prg(queue, x=x)
    np.testing.assert_allclose(res, x.sum(), rtol=1e-12)


@pytest.mark.parametrize("shape", [(64, 64), (8, 16, 32), (2**14,),
                                   (3, 1031), (2053,)])
def test_cpu_full_reductions_in_parts(queue, shape):
    """On a CPU, full reductions are cut into contiguous parts, one per
    work-item (first axis, or all axes flattened where the first has no
    fit divisor); a prime extent keeps the generic two-stage split."""
    info = SCHEDULES["cpu"]
    prg = _full_sum_program(shape, info)
    knl = prg.program.default_entrypoint
    ids = {i.id for i in knl.instructions}
    parts = any(i.endswith("_parts_barrier") for i in ids)
    assert parts == (shape != (2053,))
    x = np.random.default_rng(0).random(shape)
    _, (res,) = prg(queue, x=x)
    np.testing.assert_allclose(res, x.sum(), rtol=1e-12)


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64",
                                   "complex128"])
def test_vdot_dot_matvec_columns(queue, schedule, dtype):
    rng = np.random.default_rng(3)
    n, m = 3000, 70

    def data(*shape):
        return _data(rng, dtype, shape, "sum")

    xa, ya, aa, va = data(n), data(n), data(m, n), data(n)
    x = pt.make_placeholder("x", (n,), dtype)
    y = pt.make_placeholder("y", (n,), dtype)
    a = pt.make_placeholder("a", (m, n), dtype)
    v = pt.make_placeholder("v", (n,), dtype)
    graph = {"vdot": pt.vdot(x, y), "dot": pt.dot(x, y), "matvec": a @ v,
             "cols": pt.sum(a, axis=0), "rows": pt.sum(a, axis=1),
             "tcols": pt.sum(a.T, axis=1)}
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=SCHEDULES[schedule])
    _, res = prg(queue, x=xa, y=ya, a=aa, v=va)
    expected = {"vdot": np.vdot(xa, ya), "dot": np.dot(xa, ya),
                "matvec": aa @ va, "cols": aa.sum(0), "rows": aa.sum(1),
                "tcols": aa.T.sum(1)}
    for name, ref in expected.items():
        if np.dtype(dtype) == np.float32:
            # (sums of values in [-0.5, 0.5] may be close to 0)
            np.testing.assert_allclose(res[name], ref, rtol=1e-4, atol=1e-4)
        else:
            _compare(res[name], ref, dtype)


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_empty_and_symbolic_extents(queue, schedule):
    rng = np.random.default_rng(5)
    info = SCHEDULES[schedule]
    n = pt.make_size_param("n")
    xs = pt.make_placeholder("xs", (n, 40), np.float64)
    e = pt.make_placeholder("e", (0, 30), np.float64)
    graph = {"s_sum": pt.sum(xs), "s_max": pt.amax(xs),
             "s_cols": pt.sum(xs, axis=0), "s_rows": pt.sum(xs, axis=1),
             "e_sum": pt.sum(e), "e_prod": pt.prod(e),
             "e_any": pt.any(e), "e_all": pt.all(e),
             "e_cols": pt.sum(e, axis=0)}
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=info)
    for rows in (1, 37, 700):
        xa = rng.random((rows, 40))
        _, res = prg(queue, xs=xa, e=np.zeros((0, 30)))
        np.testing.assert_allclose(res["s_sum"], xa.sum(), rtol=1e-12)
        assert res["s_max"] == xa.max()
        np.testing.assert_allclose(res["s_cols"], xa.sum(0), rtol=1e-12)
        np.testing.assert_allclose(res["s_rows"], xa.sum(1), rtol=1e-12)
        assert res["e_sum"] == 0 and res["e_prod"] == 1
        assert not res["e_any"] and res["e_all"]
        np.testing.assert_array_equal(res["e_cols"], np.zeros(30))


def test_nan_propagates_through_parts(queue):
    """amax/amin over several axes keep numpy's NaN semantics in the
    parts and their combination."""
    x = pt.make_placeholder("x", (64, 64), np.float64)
    graph = {"max": pt.amax(x), "min": pt.amin(x)}
    for info in SCHEDULES.values():
        with lp.CacheMode(False):
            prg = pt.generate_loopy(graph, cl_device=info)
        xa = np.random.default_rng(0).random((64, 64))
        xa[50, 3] = np.nan
        _, res = prg(queue, x=xa)
        assert np.isnan(res["max"]) and np.isnan(res["min"])


@pytest.mark.parametrize("dtype", ["bool", "int8", "float64", "complex128"])
def test_any_all_branch_free(queue, dtype):
    """any/all update their accumulators with a bitwise or/and of truth
    values (no short-circuit branch), with numpy's results, NaN (true)
    and complex values included, on every schedule."""
    x = pt.make_placeholder("x", (64, 72), dtype)
    graph = {"any": pt.any(x), "all": pt.all(x),
             "any0": pt.any(x, axis=0), "all1": pt.all(x, axis=1)}
    rng = np.random.default_rng(5)
    base = rng.random((64, 72)) < 0.5
    xs = {
        "zeros": np.zeros((64, 72)),
        "ones": np.ones((64, 72)),
        "mixed": base.astype(np.float64),
    }
    if np.dtype(dtype).kind in "fc":
        nan = np.zeros((64, 72))
        nan[3, 5] = np.nan
        xs["nan"] = nan
    if np.dtype(dtype).kind == "c":
        xs["imag"] = 1j * base
    for info in SCHEDULES.values():
        with lp.CacheMode(False):
            prg = pt.generate_loopy(graph, cl_device=info)
        code = prg.get_code()
        assert "||" not in code.split("__kernel", 1)[1] or dtype == "complex128"
        for xa in xs.values():
            xa = np.asarray(xa).astype(dtype)
            _, res = prg(queue, x=xa)
            np.testing.assert_array_equal(res["any"], np.any(xa))
            np.testing.assert_array_equal(res["all"], np.all(xa))
            np.testing.assert_array_equal(res["any0"], np.any(xa, axis=0))
            np.testing.assert_array_equal(res["all1"], np.all(xa, axis=1))


# reductions along strided axes whose outputs run along the contiguous
# one, with a divisor of the rows giving blocks of at least 16 rows (the
# CPU schedule: blocks of whole rows)
_BLOCK_SHAPES = [((256, 40), 0), ((32, 16, 24), (0, 1)), ((256, 4, 6), 0)]


def _row_block_barriers(prg):
    return sum(i.id.endswith("_row_blocks_barrier")
               for i in prg.program.default_entrypoint.instructions)


@pytest.mark.parametrize(("op", "dtype"), _CASES)
def test_cpu_column_reductions_by_row_blocks(queue, op, dtype):
    """Column reductions on a CPU: each block of rows added into a row of
    accumulators, then the blocks' rows reduced; every op and dtype
    against numpy, with the path taken wherever the operation needs no
    callable of the target (integer max/min keep the chunks of
    columns)."""
    rng = np.random.default_rng(11)
    pt_op, np_op = _OPS[op]
    graph, inputs, expected = {}, {}, {}
    for k, (shape, axis) in enumerate(_BLOCK_SHAPES):
        x = pt.make_placeholder(f"x{k}", shape, dtype)
        inputs[f"x{k}"] = _data(rng, dtype, shape, op)
        graph[f"r{k}"] = pt_op(x, axis=axis)
        expected[f"r{k}"] = np_op(inputs[f"x{k}"], axis=axis)
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=SCHEDULES["cpu"])
    needs_callable = op in ("amax", "amin") and np.dtype(dtype).kind in "iu"
    assert _row_block_barriers(prg) == (0 if needs_callable
                                        else len(_BLOCK_SHAPES))
    _, res = prg(queue, **inputs)
    for out, ref in expected.items():
        _compare(res[out], ref, dtype)


def test_row_blocks_expressions_and_nans(queue):
    """The reduced expression and the arithmetic around the reduction are
    evaluated in the stages; NaNs propagate through amax/amin; the GPU
    schedule does not take the path."""
    rng = np.random.default_rng(12)
    x = pt.make_placeholder("x", (512, 33), np.float64)
    y = pt.make_placeholder("y", (512, 33), np.float64)
    graph = {"dot": 2 * pt.sum(x * pt.sin(y), axis=0) + 1,
             "max": pt.amax(x, axis=0), "min": pt.amin(x - y, axis=0)}
    xa, ya = rng.random((512, 33)), rng.random((512, 33))
    xa[300, 5] = np.nan
    xa[7, 20] = np.nan
    for name, info in SCHEDULES.items():
        with lp.CacheMode(False):
            prg = pt.generate_loopy(graph, cl_device=info)
        assert _row_block_barriers(prg) == (3 if name == "cpu" else 0)
        _, res = prg(queue, x=xa, y=ya)
        np.testing.assert_allclose(res["dot"], 2 * (xa * np.sin(ya)).sum(0)
                                   + 1, rtol=1e-12)
        np.testing.assert_array_equal(res["max"], xa.max(0))
        np.testing.assert_array_equal(res["min"], (xa - ya).min(0))


def test_row_blocks_empty_symbolic_and_targets(queue):
    """Empty outputs, symbolic extents and rows without a fit divisor keep
    the other paths and their results; the column sums of the user-path
    benchmark (4096 x 4096) take the blocks on a CPU of any number of
    compute units."""
    rng = np.random.default_rng(13)
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    shapes = {"empty_out": (256, 0), "empty_rows": (0, 24),
              "prime_rows": (257, 24), "sym_rows": (n, 24),
              "sym_cols": (256, m)}
    graph = {f"s_{k}": pt.sum(pt.make_placeholder(k, s, np.float64), axis=0)
             for k, s in shapes.items()}
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=SCHEDULES["cpu"])
    assert _row_block_barriers(prg) == 0
    inputs = {"empty_out": rng.random((256, 0)),
              "empty_rows": rng.random((0, 24)),
              "prime_rows": rng.random((257, 24)),
              "sym_rows": rng.random((300, 24)),
              "sym_cols": rng.random((256, 17))}
    _, res = prg(queue, **inputs)
    for k, xa in inputs.items():
        np.testing.assert_allclose(res[f"s_{k}"], xa.sum(0), rtol=1e-12)
    big = pt.sum(pt.make_placeholder("a", (4096, 4096), np.float64), axis=0)
    for units in (1, 2, 8, 64):
        info = DeviceInfo(kind="cpu", compute_units=units,
                          max_work_group_size=1024)
        with lp.CacheMode(False):
            assert _row_block_barriers(
                pt.generate_loopy(big, cl_device=info)) == 1


def test_split_reduction_row_blocks(queue):
    from pytato.target.loopy.schedule.cpu_reductions import (
        split_reduction_row_blocks,
    )
    x = pt.make_placeholder("x", (48, 10), np.float64)
    prg = _lowered(pt.sum(x, axis=0) * 3)
    t_unit = prg.program
    knl = t_unit.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    dtype = lp.types.to_loopy_type(np.float64)
    xa = np.random.default_rng(9).random((48, 10))
    for blocks in (1, 3, 48):
        new = split_reduction_row_blocks(
            knl, insn.id, num_blocks=blocks, dtype=dtype,
            callables_table=t_unit.callables_table, group_size=4)
        _, (res,) = prg.copy(program=t_unit.with_kernel(new))(queue, x=xa)
        np.testing.assert_allclose(res, 3 * xa.sum(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="multiple of num_blocks"):
        split_reduction_row_blocks(
            knl, insn.id, num_blocks=5, dtype=dtype,
            callables_table=t_unit.callables_table, group_size=4)
    full = _lowered(pt.sum(x)).program
    (finsn,) = [i for i in full.default_entrypoint.instructions
                if i.reduction_inames()]
    with pytest.raises(ValueError, match="no output inames"):
        split_reduction_row_blocks(
            full.default_entrypoint, finsn.id, num_blocks=2, dtype=dtype,
            callables_table=full.callables_table, group_size=4)


# {{{ the transformations

def _lowered(graph):
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, default_schedule=False)
    return prg


def test_flatten_reduction_inames(queue):
    from pytato.target.loopy.schedule.reductions import flatten_reduction_inames
    x = pt.make_placeholder("x", (6, 5, 7), np.float64)
    prg = _lowered(pt.sum(x, axis=(0, 2)) * 2)
    knl = prg.program.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    result = flatten_reduction_inames(knl, insn.id)
    assert result is not None
    new, flat = result
    (new_insn,) = [i for i in new.instructions if i.id == insn.id]
    assert new_insn.reduction_inames() == frozenset({flat})
    assert int(new.get_constant_iname_length(flat)) == 42
    xa = np.random.default_rng(1).random((6, 5, 7))
    _, (res,) = prg.copy(program=prg.program.with_kernel(new))(queue, x=xa)
    np.testing.assert_allclose(res, 2 * xa.sum(axis=(0, 2)), rtol=1e-12)
    # one iname: nothing to flatten
    assert flatten_reduction_inames(knl, insn.id,
                                    sorted(insn.reduction_inames())[:1]) \
        is None


def test_flatten_refuses_symbolic_extents():
    from pytato.target.loopy.schedule.reductions import flatten_reduction_inames
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 5), np.float64)
    knl = _lowered(pt.sum(x)).program.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    assert flatten_reduction_inames(knl, insn.id) is None


def test_split_reduction_parts(queue):
    from pytato.target.loopy.schedule.cpu_reductions import split_reduction_parts
    x = pt.make_placeholder("x", (12, 30), np.float64)
    prg = _lowered(pt.amax(x) + 1)
    knl = prg.program.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    first = sorted(insn.reduction_inames())[0]
    with pytest.raises(ValueError, match="multiple of num_parts"):
        split_reduction_parts(knl, insn.id, num_parts=5, group_size=2,
                              iname=first)
    with pytest.raises(ValueError, match="not an iname"):
        split_reduction_parts(knl, insn.id, num_parts=4, group_size=2,
                              iname="nope")
    xa = np.random.default_rng(2).random((12, 30))
    for parts, gsize in [(12, 4), (4, 8), (1, 1)]:
        new = split_reduction_parts(knl, insn.id, num_parts=parts,
                                    group_size=gsize, iname=first)
        assert f"{insn.id}_parts_barrier" in new.id_to_insn
        _, (res,) = prg.copy(program=prg.program.with_kernel(new))(
            queue, x=xa)
        assert res == xa.max() + 1

# }}}

# vim: foldmethod=marker


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_few_outputs_share_the_device(queue, schedule):
    """Reductions with fewer outputs than the device's compute units (GPU)
    or a few per unit (CPU) are shared among all groups, like full
    reductions, one output after the other."""
    info = SCHEDULES[schedule]
    rng = np.random.default_rng(6)
    x = pt.make_placeholder("x", (3, 8192), np.float64)
    y = pt.make_placeholder("y", (2, 64, 3, 32), np.float64)
    graph = {"rows": pt.sum(x, axis=1), "mid": pt.amax(y, axis=(0, 1, 3)),
             "prod": pt.prod(1 + x * 1e-3, axis=1)}
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=info)
    knl = prg.program.default_entrypoint
    barriers = [i.id for i in knl.instructions
                if i.id.endswith(("_parts_barrier", "_two_stage_barrier"))]
    assert len(barriers) == 3
    xa, ya = rng.random((3, 8192)), rng.random((2, 64, 3, 32))
    _, res = prg(queue, x=xa, y=ya)
    np.testing.assert_allclose(res["rows"], xa.sum(1), rtol=1e-12)
    np.testing.assert_array_equal(res["mid"], ya.max(axis=(0, 1, 3)))
    np.testing.assert_allclose(res["prod"], (1 + xa * 1e-3).prod(1),
                               rtol=1e-12)


@pytest.mark.parametrize(("rows", "chunks"), [(256, 2), (250, 3)])
def test_column_chunks_without_guard(queue, rows, chunks):
    """Chunks that cover the reduction axis exactly need no guard: the run
    of rows is the reduction's innermost iname, and long runs get
    interleaved accumulators on CPUs."""
    from pytato.target.loopy.run.executor import device_code
    from pytato.target.loopy.schedule.reduction_plans import (
        CPU_COLUMN_RUN,
        CPU_ROW_ACCUMULATOR_BYTES,
    )
    from pytato.target.loopy.schedule.reductions import split_reduction_columns
    x = pt.make_placeholder("x", (rows, 24), np.float64)
    prg = _lowered(pt.sum(x, axis=0))
    knl = prg.program.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    new = split_reduction_columns(knl, insn.id, num_chunks=chunks,
                                  group_size=8)
    exact = rows % chunks == 0
    assert any(i.endswith("_guard") for i in new.all_inames()) != exact
    xa = np.random.default_rng(8).random((rows, 24))
    _, (res,) = prg.copy(program=prg.program.with_kernel(new))(queue, x=xa)
    np.testing.assert_allclose(res, xa.sum(axis=0), rtol=1e-12)
    # the CPU schedule: blocks of whole rows for the sum (the rows have a
    # divisor near the blocks wanted, of at least MIN_BLOCK_ROWS rows);
    # the max of integers (whose update needs a callable) and rows wider
    # than CPU_ROW_ACCUMULATOR_BYTES in runs of CPU_COLUMN_RUN rows, with
    # 4 accumulators where they cover the rows exactly (code only)
    xi = pt.make_placeholder("xi", (rows, 24), np.int64)
    with lp.CacheMode(False):
        scheduled = pt.generate_loopy(
            {"s": pt.sum(x, axis=0), "m": pt.amax(xi, axis=0)},
            cl_device=SCHEDULES["cpu"])
    ids = [i.id for i in scheduled.program.default_entrypoint.instructions]
    assert [i for i in ids if i.endswith("_row_blocks_barrier")] == [
        "_pt_insn_s_row_blocks_barrier"], ids
    wide = pt.make_placeholder(
        "w", (rows, CPU_ROW_ACCUMULATOR_BYTES // 8 + 8), np.float64)
    with lp.CacheMode(False):
        chunks = pt.generate_loopy(pt.sum(wide, axis=0),
                                   cl_device=SCHEDULES["cpu"])
    code = device_code(chunks.program)
    assert _row_block_barriers(chunks) == 0
    assert ("[4];" in code) == (rows % CPU_COLUMN_RUN == 0), code
    xia = np.random.default_rng(8).integers(-99, 99, (rows, 24))
    _, res = scheduled(queue, x=xa, xi=xia)
    np.testing.assert_allclose(res["s"], xa.sum(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(res["m"], xia.max(axis=0))
