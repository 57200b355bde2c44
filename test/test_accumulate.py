"""Tests of sequential reductions realized as accumulator loops
(:mod:`pytato.target.loopy.accumulate`), on the OpenCL test device."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest
from loopy.symbolic import WalkMapper

import pytato as pt
from pytato.target.loopy.accumulate import realize_sequential_reductions
from pytato.target.loopy.schedule import DeviceInfo, default_schedule


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
        _, res = prg(queue, x=xa)
        np.testing.assert_allclose(res["s"], xa.sum(axis=1))
        if cols:
            np.testing.assert_allclose(res["m"], xa.max(axis=1))
        else:
            assert np.all(np.isneginf(res["m"]))


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
