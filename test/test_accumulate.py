"""Tests of sequential reductions realized as accumulator loops
(:mod:`pytato.target.loopy.schedule.accumulators`), on the OpenCL test device."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest
from loopy.symbolic import WalkMapper

import pytato as pt
from pytato.target.loopy.schedule.accumulators import realize_sequential_reductions
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule


CPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096)


class _Count(WalkMapper):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def map_reduction(self, expr, *args):
        self.n += 1
        super().map_reduction(expr, *args)


def _reductions(t_unit) -> int:
    c = _Count()
    for insn in t_unit.default_entrypoint.instructions:
        if isinstance(insn, lp.Assignment):
            c(insn.expression)
    return c.n


_OPS = {
    "sum": (pt.sum, np.sum),
    "prod": (pt.prod, np.prod),
    "max": (pt.amax, np.max),
    "min": (pt.amin, np.min),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32,
                                   np.complex128])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_results_match_numpy(queue, op, dtype):
    if np.dtype(dtype).kind == "c" and op in ("max", "min"):
        pytest.skip("complex max/min are not defined")
    rng = np.random.default_rng(0)
    pt_op, np_op = _OPS[op]
    x = pt.make_placeholder("x", (13, 7), dtype)
    graph = {"r1": pt_op(x, axis=1) * 2, "r0": pt_op(x, axis=0) + 1,
             "bc": x - pt_op(x, axis=1).reshape(13, 1)}
    prg = pt.generate_loopy(graph, cl_device=queue.device)
    xa = (rng.random((13, 7)) * 3 + 0.5).astype(dtype)
    if np.dtype(dtype).kind == "c":
        xa = xa + 1j * xa[::-1]
    _, res = prg(queue, x=xa)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(res["r1"], np_op(xa, axis=1) * 2, rtol=rtol)
    np.testing.assert_allclose(res["r0"], np_op(xa, axis=0) + 1, rtol=rtol)
    np.testing.assert_allclose(res["bc"], xa - np_op(xa, axis=1)[:, None],
                               rtol=rtol, atol=rtol)


def test_nan_semantics_and_bool(queue):
    x = pt.make_placeholder("x", (4, 5), np.float64)
    b = pt.make_placeholder("b", (4, 5), np.bool_)
    prg = pt.generate_loopy({"mx": pt.amax(x, axis=1), "mn": pt.amin(x, axis=1),
                             "any": pt.any(b, axis=1), "all": pt.all(b, axis=1)},
                            cl_device=queue.device)
    xa = np.arange(20.0).reshape(4, 5)
    xa[1, 2] = np.nan
    ba = np.array([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 0, 0],
                   [1, 1, 0, 1, 1]], dtype=bool)
    _, res = prg(queue, x=xa, b=ba)
    np.testing.assert_array_equal(res["mx"], np.max(xa, axis=1))
    np.testing.assert_array_equal(res["mn"], np.min(xa, axis=1))
    np.testing.assert_array_equal(res["any"], ba.any(axis=1))
    np.testing.assert_array_equal(res["all"], ba.all(axis=1))


def test_empty_and_symbolic_extents(queue):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (6, n), np.float64)
    prg = pt.generate_loopy({"s": pt.sum(x, axis=1), "m": pt.amax(x, axis=1)},
                            cl_device=queue.device)
    for cols in (0, 1, 40):
        xa = np.random.default_rng(cols).random((6, cols))
        if not cols:
            # numpy: no maximum of an empty axis (issue 41)
            from pytato.diagnostic import EmptyReductionError
            with pytest.raises(EmptyReductionError):
                prg(queue, x=xa)
            continue
        _, res = prg(queue, x=xa)
        np.testing.assert_allclose(res["s"], xa.sum(axis=1))
        np.testing.assert_allclose(res["m"], xa.max(axis=1))


def test_rewritten_only_where_sequential():
    x = pt.make_placeholder("x", (64, 16), np.float64)
    v = pt.make_placeholder("v", (1 << 20,), np.float64)
    ref = pt.generate_loopy({"s": pt.sum(x, axis=1), "full": pt.sum(v)},
                            default_schedule=False)
    assert _reductions(ref.program) == 2
    t_unit = default_schedule(ref.program, CPU)
    # the row sums became accumulator loops; the large full sum is a
    # two-stage parallel reduction left to loopy
    knl = t_unit.default_entrypoint

    def reductions_writing(name):
        c = _Count()
        for insn in knl.instructions:
            if isinstance(insn, lp.Assignment) \
                    and name in insn.assignee_var_names():
                c(insn.expression)
        return c.n

    assert reductions_writing("s") == 0
    assert reductions_writing("full") > 0
    accs = [n for n, t in knl.temporary_variables.items()
            if t.address_space == lp.AddressSpace.PRIVATE and n.startswith("acc")]
    assert accs


def test_direct_use_and_conditionals():
    # a reduction inside a branch of a conditional (concatenate) stays
    x = pt.make_placeholder("x", (4, 3), np.float64)
    y = pt.make_placeholder("y", (2,), np.float64)
    prg = pt.generate_loopy(pt.concatenate([y, pt.amax(x, axis=1)]),
                            default_schedule=False)
    new, added = realize_sequential_reductions(prg.program)
    assert not added and _reductions(new) == _reductions(prg.program) == 1
    prg = pt.generate_loopy(pt.sum(x, axis=1) * 2, default_schedule=False)
    new, added = realize_sequential_reductions(prg.program)
    assert len(added) == 1 and _reductions(new) == 0
    (ids,) = added.values()
    assert len(ids) == 2


# {{{ interleaved accumulators (CPU schedule)

GPU = DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256)


def _lane_code(graph, info):
    from pytato.target.loopy.run.executor import device_code
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=info)
    return prg, device_code(prg.program)


def test_lanes_only_for_long_reductions_on_cpus():
    from pytato.target.loopy.schedule.reduction_plans import MIN_LANE_EXTENT
    # (301 rows: not reduced CPU_TILE_ROWS at a time by a work-item)
    long_x = pt.make_placeholder("x", (301, 4 * MIN_LANE_EXTENT), np.float64)
    short_x = pt.make_placeholder("y", (301, MIN_LANE_EXTENT - 1), np.float64)
    graph = {"a": pt.sum(long_x, axis=1), "b": pt.sum(short_x, axis=1)}
    _, code = _lane_code(graph, CPU)
    assert CPU.accumulator_lanes == 4
    assert CPU.accumulator_lane_blocks == 4
    # the long sum keeps 4 blocks of 4 accumulators, the short one a scalar
    assert _declared_sizes(code) == [16], code
    assert "acc__pt_sum_r;" in code or "acc__pt_sum_r_0;" in code, code
    _, gpu_code = _lane_code(graph, GPU)
    assert GPU.accumulator_lanes == 1
    assert GPU.accumulator_lane_blocks == 1
    assert _declared_sizes(gpu_code) == []


def _declared_sizes(code):
    """The sizes of the private arrays declared in *code*."""
    import re
    return [int(n) for n in re.findall(r"^\s*\w+ \w+\[(\d+)\];$", code,
                                        re.MULTILINE)]


@pytest.mark.parametrize(("op", "dtype", "cols", "accumulators"), [
    ("sum", np.float64, 256, 16), ("sum", np.float64, 260, 4),
    ("sum", np.float32, 1024, 16), ("max", np.float32, 512, 16),
    ("min", np.float64, 260, 4), ("prod", np.float64, 64, 16),
    ("sum", np.complex128, 256, 4), ("sum", np.int32, 256, 4),
    ("max", np.int64, 256, 1), ("any", np.bool_, 256, 4),
    ("all", np.bool_, 256, 4), ("any", np.float64, 256, 4),
    ("all", np.float32, 259, 4)])
def test_lane_blocks(queue, op, dtype, cols, accumulators):
    """Floating-point reductions whose steps cover their extent exactly
    keep :attr:`DeviceInfo.accumulator_lane_blocks` blocks of lanes on a
    CPU, each block a loop over its lanes (the blocks unrolled); other
    extents and types keep one block (unrolled lanes for complex numbers,
    integers and booleans; integer max/min are loopy's); results against
    numpy, with NaNs for max/min."""
    pt_op = {"sum": pt.sum, "prod": pt.prod, "max": pt.amax, "min": pt.amin,
             "any": pt.any, "all": pt.all}[op]
    np_op = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
             "any": np.any, "all": np.all}[op]
    # (41 rows: not reduced CPU_TILE_ROWS at a time by a work-item)
    x = pt.make_placeholder("x", (41, cols), dtype)
    prg, code = _lane_code({"r": pt_op(x, axis=1)}, CPU)
    # (the extremum of floats: accumulators, NaNs and values)
    assert set(_declared_sizes(code)) == (
        {accumulators} if accumulators > 1 else set()), code
    if accumulators == 16:
        # 4 loops over the 4 lanes of a block in each step
        assert code.count("_lane <= 3; ++") == 4, code
    if op in ("any", "all"):
        # a bitwise update (no short-circuit), in a loop over the lanes
        # where the steps cover the extent
        assert (" | (" if op == "any" else " & (") in code, code
        assert ("_lane <= 3; ++" in code) == (cols % 4 == 0), code
    rng = np.random.default_rng(4)
    kind = np.dtype(dtype).kind
    if op in ("any", "all"):
        # mostly false for any, mostly true for all; some rows all one value
        p = 0.99 if op == "all" else 0.01
        xa = (rng.random((41, cols)) < p)
        xa[:10] = op == "all"
        xa[10:15] = op != "all"
        xa = (xa * (rng.random((41, cols)) + 0.5)).astype(dtype)
    elif kind == "i":
        xa = rng.integers(-9, 9, (41, cols)).astype(dtype)
    else:
        xa = (rng.random((41, cols)) * 0.2 + 0.95).astype(dtype)
        if kind == "c":
            xa = xa + 1j * xa[::-1]
        if op in ("max", "min"):
            xa[3, 7] = np.nan
            xa[5, cols - 1] = np.nan
    _, res = prg(queue, x=xa)
    if kind in "fc" and op not in ("any", "all"):
        rtol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(res["r"], np_op(xa, axis=1), rtol=rtol)
    else:
        np.testing.assert_array_equal(res["r"], np_op(xa, axis=1))
    _, gpu_code = _lane_code({"r": pt_op(x, axis=1)}, GPU)
    assert _declared_sizes(gpu_code) == []


def test_lanes_use_loopys_fast_scheduler(recwarn):
    x = pt.make_placeholder("x", (300, 1000), np.float64)
    from pytato.target.loopy.build.preprocessing import preprocess_and_linearize
    with lp.CacheMode(False):
        prg = pt.generate_loopy(pt.sum(x, axis=1), cl_device=CPU)
        preprocess_and_linearize(prg.program)
    assert not [w for w in recwarn if "slow scheduler" in str(w.message)]


_LANE_CASES = [
    *((op, dt) for op in ("sum", "prod", "max", "min")
      for dt in (np.float64, np.float32, np.int32)),
    ("sum", np.complex128), ("sum", np.bool_), ("any", np.bool_),
    ("all", np.bool_)]


@pytest.mark.parametrize(("op", "dtype"), _LANE_CASES)
def test_lanes_match_numpy(queue, op, dtype):
    """Interleaved accumulators (forced CPU schedule) over constant extents
    around multiples of the lane count and symbolic extents (0, 1, 3, 4,
    5, 65, 259), with NaNs for max/min."""
    kind = np.dtype(dtype).kind
    pt_op = {"sum": pt.sum, "prod": pt.prod, "max": pt.amax, "min": pt.amin,
             "any": pt.any, "all": pt.all}[op]
    np_op = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min,
             "any": np.any, "all": np.all}[op]
    n = pt.make_size_param("n")
    rows = 70
    xs = pt.make_placeholder("xs", (rows, n), dtype)
    xc = pt.make_placeholder("xc", (rows, 259), dtype)
    graph = {"s": pt_op(xs, axis=1), "c": pt_op(xc, axis=1)}
    with lp.CacheMode(False):
        prg = pt.generate_loopy(graph, cl_device=CPU)
    rng = np.random.default_rng(3)

    def data(cols):
        if kind == "b":
            return rng.random((rows, cols)) < (0.98 if op == "all" else 0.02)
        a = rng.random((rows, cols)) * 0.2 + 0.95
        if kind == "i":
            a = rng.integers(-3, 4, (rows, cols))
            if op == "prod":
                a = rng.integers(1, 3, (rows, cols)) * np.where(
                    rng.random((rows, cols)) < 0.5, 1, -1)
                a[:, 20:] = 1
        a = a.astype(dtype)
        if kind == "c":
            a = a + 1j * a[::-1]
        if kind == "f" and op in ("max", "min") and cols > 4:
            a[5, cols // 2] = np.nan
            a[6, cols - 1] = np.nan
        return a

    cdata = data(259)
    for cols in (0, 1, 3, 4, 5, 65, 259):
        if cols == 0 and op in ("max", "min"):
            continue
        sdata = data(cols)
        _, res = prg(queue, xs=sdata, xc=cdata)
        rtol = 1e-4 if dtype == np.float32 else 1e-12
        for name, a in (("s", sdata), ("c", cdata)):
            expected = np_op(a, axis=1)
            if kind in "fc":
                np.testing.assert_allclose(res[name], expected, rtol=rtol,
                                           err_msg=f"{name}, {cols} columns")
            else:
                np.testing.assert_array_equal(res[name], expected,
                                              err_msg=f"{name}, {cols}")


def _row_kernel(domains, insn, arrays):
    return lp.make_kernel(
        domains, insn,
        [lp.GlobalArg(arrays, np.float64, shape=(40, 300)), "..."],
        target=lp.PyOpenCLTarget(), lang_version=(2018, 2))


def _lane_shapes(t_unit):
    return [tv.shape for tv in
            t_unit.default_entrypoint.temporary_variables.values()]


def test_lanes_left_alone_for_shared_reduction_inames(queue):
    """Two reductions over one iname in one instruction keep one
    accumulator each (the iname's domain stays), as does a reduction iname
    sharing its domain with another iname."""
    own_domains = ["{[i]: 0 <= i < 40}", "{[j]: 0 <= j < 300}"]
    knl = _row_kernel(own_domains,
                      "out[i] = sum(j, a[i, j]) + 2*sum(j, b[i, j])", "a,b")
    t_unit, added = realize_sequential_reductions(knl, lanes=4)
    assert added and _lane_shapes(t_unit) == [(), ()]
    rng = np.random.default_rng(0)
    a, b = rng.random((40, 300)), rng.random((40, 300))
    _, (out,) = t_unit.executor(queue.context)(queue, a=a, b=b)
    np.testing.assert_allclose(out, a.sum(axis=1) + 2 * b.sum(axis=1))

    # j shares its domain with i: one accumulator
    shared = _row_kernel("{[i, j]: 0 <= i < 40 and 0 <= j < 300}",
                         "out[i] = sum(j, a[i, j])", "a")
    assert _lane_shapes(realize_sequential_reductions(shared, lanes=4)[0]) \
        == [()]
    # in a domain of its own: four
    own = _row_kernel(own_domains, "out[i] = sum(j, a[i, j])", "a")
    t_unit3, _ = realize_sequential_reductions(own, lanes=4)
    assert _lane_shapes(t_unit3) == [(4,)]
    _, (out3,) = t_unit3.executor(queue.context)(queue, a=a)
    np.testing.assert_allclose(out3, a.sum(axis=1))

# }}}


@pytest.mark.parametrize(("op", "dtype"), [
    ("sum", np.float64), ("sum", np.float32), ("prod", np.float64),
    ("max", np.float64), ("sum", np.int64), ("sum", np.complex128)])
def test_row_tiles(queue, op, dtype):
    """On a CPU, reductions along the contiguous axis with an operand
    shared by the outputs (a matvec) of floating-point sums and products
    with a multiple of CPU_TILE_ROWS outputs reduce that many outputs side
    by side in each work-item (one set of accumulators each, all updated
    in one loop over the lanes); row sums, other operations and types,
    other extents and GPUs keep one output per work-item; results against
    numpy, with arithmetic around the reduction."""
    from pytato.target.loopy.schedule.reduction_plans import CPU_TILE_ROWS
    pt_op = {"sum": pt.sum, "prod": pt.prod, "max": pt.amax}[op]
    np_op = {"sum": np.sum, "prod": np.prod, "max": np.max}[op]
    rng = np.random.default_rng(5)
    rows = 8 * CPU_TILE_ROWS
    x = pt.make_placeholder("x", (rows, 256), dtype)
    y = pt.make_placeholder("y", (rows + 1, 256), dtype)
    v = pt.make_placeholder("v", (256,), dtype)
    graph = {"tiled": 2 * pt_op(x * v, axis=1) + 1, "odd": pt_op(y * v, axis=1),
             "rows": pt_op(x, axis=1)}
    if op == "sum":
        graph["matvec"] = x @ v
    prg, code = _lane_code(graph, CPU)
    tiled = op in ("sum", "prod") and np.dtype(dtype).kind == "f"
    import re
    tiles = re.findall(rf"^\s*\w+ acc_\w*_r{CPU_TILE_ROWS - 1}\[4\];$", code,
                       re.MULTILINE)
    # the tiled reduction and the matvec; not the odd number of rows, nor
    # the row sums (no operand shared by the outputs)
    assert len(tiles) == (len(graph) - 2 if tiled else 0), code

    def data(shape):
        a = rng.random(shape) * 0.2 + 0.95
        if np.dtype(dtype).kind == "i":
            a = rng.integers(-9, 9, shape)
        a = a.astype(dtype)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * a
        return a

    xa, ya, va = data((rows, 256)), data((rows + 1, 256)), data(256)
    _, res = prg(queue, x=xa, y=ya, v=va)
    expected = {"tiled": 2 * np_op(xa * va, axis=1) + 1,
                "odd": np_op(ya * va, axis=1), "rows": np_op(xa, axis=1)}
    if op == "sum":
        expected["matvec"] = xa @ va
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    for name, ref in expected.items():
        np.testing.assert_allclose(res[name], ref, rtol=rtol, err_msg=name)
    _, gpu_code = _lane_code(graph, GPU)
    assert "_r_r0" not in gpu_code


def test_split_reduction_row_tiles_errors():
    from pytato.target.loopy.schedule.cpu_reductions import (
        split_reduction_row_tiles,
    )
    x = pt.make_placeholder("x", (6, 64), np.float64)
    with lp.CacheMode(False):
        prg = pt.generate_loopy(pt.sum(x, axis=1), default_schedule=False)
    t_unit = prg.program
    knl = t_unit.default_entrypoint
    (insn,) = [i for i in knl.instructions if i.reduction_inames()]
    kwargs = {"lanes": 4, "group_size": 8,
              "dtype": lp.types.to_loopy_type(np.float64),
              "callables_table": t_unit.callables_table}
    with pytest.raises(ValueError, match="constant multiples"):
        split_reduction_row_tiles(knl, insn.id, rows=4, **kwargs)
    with pytest.raises(ValueError, match="positive"):
        split_reduction_row_tiles(knl, insn.id, rows=0, **kwargs)
    new = split_reduction_row_tiles(knl, insn.id, rows=3, **kwargs)
    assert {i.id for i in new.instructions} >= {insn.id}
