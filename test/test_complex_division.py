"""Reductions feeding conditional expressions (issue 41, item 1): complex
division by an inlined reduction, ``where``, ``maximum``/``minimum``,
``sign``, integer ``//`` and ``%`` by reductions, against numpy on the
OpenCL device, without a schedule, with the device's default schedule and
with the default schedules of a CPU and a GPU
(:mod:`pytato.target.loopy.lower.reduction_hoisting`)."""

from __future__ import annotations

import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule


GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU")
CPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096)

SCHEDULES = ["default", "none", "cpu", "gpu"]


def _run(queue, outputs, schedule, **inputs):
    if schedule == "default":
        prg = pt.generate_loopy(outputs)
    else:
        prg = pt.generate_loopy(outputs, default_schedule=False)
        if schedule != "none":
            prg = prg.copy(program=default_schedule(
                prg.program, CPU if schedule == "cpu" else GPU))
    _, out = prg(queue, **inputs)
    return {k: v.get() if hasattr(v, "get") else v for k, v in out.items()}


def _complex(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape)
            + 1j * rng.standard_normal(shape)).astype(dtype)


def _check(got, want, dtype):
    rtol = 1e-4 if np.dtype(dtype) in (np.complex64, np.float32) else 1e-10
    for k, w in want.items():
        np.testing.assert_allclose(got[k], w, rtol=rtol, atol=0, err_msg=k)


A = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_issue_example(queue, schedule):
    """The issue's example: ``1 / sum(a)`` gave ``0.36697+0.11009j``."""
    a = pt.make_placeholder("a", A.shape, A.dtype)
    got = _run(queue, {"o": 1 / pt.sum(a)}, schedule, a=A)
    np.testing.assert_allclose(got["o"], 1 / A.sum(), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_division_by_complex_reductions(queue, schedule, dtype):
    rng = np.random.default_rng(41)
    n = 37
    a_np, b_np = _complex(rng, n, dtype), _complex(rng, n, dtype)
    m_np = _complex(rng, (5, n), dtype)
    r_np = rng.standard_normal(n).astype(np.empty(0, dtype).real.dtype)
    a = pt.make_placeholder("a", a_np.shape, a_np.dtype)
    b = pt.make_placeholder("b", b_np.shape, b_np.dtype)
    m = pt.make_placeholder("m", m_np.shape, m_np.dtype)
    r = pt.make_placeholder("r", r_np.shape, r_np.dtype)
    one_plus_i = dtype(1 + 1j)
    outputs = {
        "inv_sum": 1 / pt.sum(a),
        "neg3_sum": -3 / pt.sum(a),
        "cplx_sum": one_plus_i / pt.sum(a),
        "real_sum_by_sum": pt.sum(r) / pt.sum(a),
        "sum_by_sum": pt.sum(b) / pt.sum(a),
        "inv_prod": 1 / pt.prod(a[:6]),
        "inv_matmul": 1 / (a @ b),
        "inv_dot": 1 / pt.dot(a, b),
        "inv_einsum": 1 / pt.einsum("i->", a),
        "inv_rows": 1 / pt.sum(m, axis=1),
        "rows_by_rows": pt.sum(m, axis=1) / pt.sum(m * m, axis=1),
        "nested": pt.sum(1 / pt.sum(m, axis=1)),
        "nested_rows": pt.sum(m / pt.sum(m * m, axis=1).reshape(5, 1), axis=1),
        "elem_by_sum": a / pt.sum(a),
        "reciprocal": pt.reciprocal(pt.sum(a)),
    }
    want = {
        "inv_sum": 1 / a_np.sum(),
        "neg3_sum": -3 / a_np.sum(),
        "cplx_sum": one_plus_i / a_np.sum(),
        "real_sum_by_sum": r_np.sum() / a_np.sum(),
        "sum_by_sum": b_np.sum() / a_np.sum(),
        "inv_prod": 1 / np.prod(a_np[:6]),
        "inv_matmul": 1 / (a_np @ b_np),
        "inv_dot": 1 / np.dot(a_np, b_np),
        "inv_einsum": 1 / np.einsum("i->", a_np),
        "inv_rows": 1 / m_np.sum(axis=1),
        "rows_by_rows": m_np.sum(axis=1) / (m_np * m_np).sum(axis=1),
        "nested": (1 / m_np.sum(axis=1)).sum(),
        "nested_rows": (m_np / (m_np * m_np).sum(axis=1).reshape(5, 1)).sum(
            axis=1),
        "elem_by_sum": a_np / a_np.sum(),
        "reciprocal": np.reciprocal(a_np.sum()),
    }
    got = _run(queue, outputs, schedule, a=a_np, b=b_np, m=m_np, r=r_np)
    _check(got, want, dtype)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_long_reductions(queue, schedule):
    """Reductions long enough for the schedules to split or run them in
    parallel."""
    rng = np.random.default_rng(7)
    a_np = _complex(rng, 20000)
    m_np = _complex(rng, (40, 3000))
    a = pt.make_placeholder("a", a_np.shape, a_np.dtype)
    m = pt.make_placeholder("m", m_np.shape, m_np.dtype)
    outputs = {"inv_sum": 1 / pt.sum(a),
               "inv_rows": 1 / pt.sum(m, axis=1),
               "cols": pt.sum(m, axis=0) / pt.sum(m[:, :1] * m, axis=0),
               "where": pt.where(pt.sum(a.real) > 0, pt.sum(a.imag),
                                 pt.sum(a.real))}
    s = a_np.sum()
    want = {"inv_sum": 1 / s, "inv_rows": 1 / m_np.sum(axis=1),
            "cols": m_np.sum(axis=0) / (m_np[:, :1] * m_np).sum(axis=0),
            "where": np.where(a_np.real.sum() > 0, a_np.imag.sum(),
                              a_np.real.sum())}
    got = _run(queue, outputs, schedule, a=a_np, m=m_np)
    _check(got, want, np.complex128)


#: conditionals on reductions, as functions of the array namespace (pytato
#: or numpy), the inputs and a factor making each case's reductions its own
#: (a reduction read by several nodes is stored, not inlined)
REAL_CASES = {
    "where": lambda M, d, k: M.where(M.sum(k * d["x"]) > 0, M.sum(k * d["y"]),
                                     M.sum(k * d["x"])),
    "where_prod": lambda M, d, k: M.where(M.sum(k * d["x"]) < 0,
                                          M.sum(k * d["y"] * d["y"]),
                                          M.prod(k * d["y"])),
    "where_rows": lambda M, d, k: M.where(M.sum(k * d["m"], axis=1) > 0,
                                          M.amax(k * d["m"], axis=1),
                                          M.amin(k * d["m"], axis=1)),
    "maximum": lambda M, d, k: M.maximum(M.sum(k * d["x"]), M.sum(k * d["y"])),
    "minimum": lambda M, d, k: M.minimum(M.sum(k * d["x"]), M.sum(k * d["y"])),
    "maximum_nan": lambda M, d, k: M.maximum(M.sum(k * d["nn"]),
                                             M.sum(k * d["x"])),
    "minimum_nan": lambda M, d, k: M.minimum(M.sum(k * d["x"]),
                                             M.sum(k * d["nn"])),
    "minimum_amax": lambda M, d, k: M.minimum(M.amax(k * d["x"]),
                                              M.amax(k * d["y"])),
    "maximum_rows": lambda M, d, k: M.maximum(M.sum(k * d["m"], axis=1),
                                              M.amin(k * d["m"], axis=1)),
    "sign": lambda M, d, k: M.sign(M.sum(k * d["x"])),
    "sign_rows": lambda M, d, k: M.sign(M.sum(k * d["m"], axis=1)),
    "abs": lambda M, d, k: M.abs(M.sum(k * d["x"])),
    "floordiv": lambda M, d, k: M.sum(k * d["i"]) // M.sum(k * d["j"]),
    "mod": lambda M, d, k: M.sum(k * d["i"]) % M.sum(k * d["j"]),
    "floordiv_by": lambda M, d, k: 17 // M.sum(k * d["j"]),
    "mod_by": lambda M, d, k: -17 % M.sum(k * d["j"]),
    "int_where": lambda M, d, k: M.where(M.sum(k * d["j"]) < 0,
                                         M.sum(k * d["i"]), M.amax(k * d["i"])),
    "int_maximum": lambda M, d, k: M.maximum(M.sum(k * d["i"]),
                                             M.sum(k * d["j"])),
    "int_minimum_rows": lambda M, d, k: M.minimum(
        M.sum(k * d["im"], axis=1), M.amax(k * d["im"], axis=1)),
    "int_abs": lambda M, d, k: M.abs(M.sum(k * d["j"])),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conditionals_on_real_reductions(queue, schedule):
    """``where``, ``maximum``/``minimum`` (NaN-aware), ``sign``, ``abs`` and
    integer ``//`` and ``%`` of and by reductions."""
    data = {"x": np.array([3.0, -1.0, -4.0, 0.5]),
            "y": np.array([-2.0, 1.5, 0.25, -1.0]),
            "nn": np.array([1.0, np.nan, 2.0, 0.0]),
            "i": np.array([7, -3, 5, 2], dtype=np.int64),
            "j": np.array([-2, 3, 1, -4], dtype=np.int32),
            "m": np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5,
            "im": np.arange(12, dtype=np.int32).reshape(3, 4) - 7}
    phs = {k: pt.make_placeholder(k, v.shape, v.dtype) for k, v in data.items()}
    outputs, want = {}, {}
    for n, (name, case) in enumerate(REAL_CASES.items()):
        for sign in (1, -1):
            k = sign * (n + 1)
            outputs[f"{name}_{n}_{sign + 1}"] = case(pt, phs, k)
            with np.errstate(all="ignore"):
                want[f"{name}_{n}_{sign + 1}"] = case(np, data, k)
    got = _run(queue, outputs, schedule, **data)
    for k, w in want.items():
        np.testing.assert_array_equal(got[k], w, err_msg=k)
        assert np.asarray(got[k]).dtype == np.asarray(w).dtype, k


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conditionals_on_complex_reductions(queue, schedule):
    """``where`` on comparisons, ``sign`` and ``abs`` of complex reductions
    (``maximum`` of complex arrays is refused)."""
    rng = np.random.default_rng(3)
    a_np, b_np = _complex(rng, 9), _complex(rng, 9)
    a = pt.make_placeholder("a", a_np.shape, a_np.dtype)
    b = pt.make_placeholder("b", b_np.shape, b_np.dtype)
    sa, sb = pt.sum(a), pt.sum(b)
    outputs = {"where": pt.where(sa.real > sb.imag, sa, sb),
               "where_eq": pt.where(sa == sa, sb, sa),
               "sign": pt.sign(sa), "abs": pt.abs(sa)}
    a_sum, b_sum = a_np.sum(), b_np.sum()
    want = {"where": np.where(a_sum.real > b_sum.imag, a_sum, b_sum),
            "where_eq": b_sum, "sign": np.sign(a_sum), "abs": np.abs(a_sum)}
    got = _run(queue, outputs, schedule, a=a_np, b=b_np)
    _check(got, want, np.complex128)


def test_each_reduction_computed_once(queue):
    """The divisor of ``1 / sum(a)`` is one reduction (it was realized in
    28 accumulators, one per occurrence in the division)."""
    a = pt.make_placeholder("a", A.shape, A.dtype)
    prg = pt.generate_loopy({"o": 1 / pt.sum(a)}, default_schedule=False)
    code = prg.program.default_entrypoint
    from loopy.symbolic import Reduction

    from pytato.target.loopy.lower.reduction_hoisting import _ReductionFinder
    found = []
    for insn in code.instructions:
        finder = _ReductionFinder()
        finder(insn.expression)
        found.extend(finder.found)
        assert all(isinstance(r, Reduction) for r in finder.found)
    assert len(found) == 1


def _branching_on(red: pt.Array, then_sign: int = 1) -> pt.Array:
    """``red if red > 0 else -red`` (or ``-red if ...``) as one node whose
    expression holds the reduction of *red* three times: what a lowering
    repeating an operand makes (complex division did, see
    :func:`test_division_by_complex_reductions`)."""
    import dataclasses

    import pymbolic.primitives as prim
    r = red.expr
    return dataclasses.replace(red, expr=prim.If(
        prim.Comparison(r, ">", 0), prim.Product((then_sign, r)),
        prim.Product((-1, r))))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_conditional_repeating_a_reduction(queue, schedule):
    """A conditional branching on a reduction that its branches also read:
    the reduction is computed first (it was accumulated in each branch only
    in the steps where the condition on the partial sum held)."""
    x_np = np.array([3.0, -1.0, -4.0, 0.5, 2.0, -0.75])
    m_np = np.array([[3.0, -1.0, -4.0, 0.5], [-1.0, 2.0, 0.25, -2.0],
                     [1.0, 1.0, -3.0, 0.5]])
    x = pt.make_placeholder("x", x_np.shape, x_np.dtype)
    m = pt.make_placeholder("m", m_np.shape, m_np.dtype)
    outputs = {"abs": _branching_on(pt.sum(x)),
               "neg_abs": _branching_on(pt.sum(2 * x), -1),
               "rows": _branching_on(pt.sum(m, axis=1)),
               "nested": pt.sum(_branching_on(pt.sum(3 * m, axis=1)))}
    want = {"abs": abs(x_np.sum()),
            "neg_abs": np.where((2 * x_np).sum() > 0, 1, -1) * (2 * x_np).sum(),
            "rows": abs(m_np.sum(axis=1)),
            "nested": abs((3 * m_np).sum(axis=1)).sum()}
    got = _run(queue, outputs, schedule, x=x_np, m=m_np)
    for k, w in want.items():
        np.testing.assert_allclose(got[k], w, rtol=1e-14, err_msg=k)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_division_matches_numpy_bitwise(queue, dtype):
    """numpy's complex division bit for bit (issue 41, item 9): ``z/z`` is
    exactly 1 where numpy's is (it was never: the imaginary part of the
    numerator was fused into a multiply-add), ``equal(z/z, 1)`` agrees,
    and so do quotients of random values, real by complex, by constants,
    and by zero."""
    rng = np.random.default_rng(9)
    n = 2000
    z_np, w_np = _complex(rng, n, dtype), _complex(rng, n, dtype)
    w_np[:4] = [0, 1j, -2, np.inf]
    z_np[:4] = [1 + 1j, 0, 3 - 1j, 1]
    r_np = rng.standard_normal(n).astype(np.empty(0, dtype).real.dtype)
    z, w, r = (pt.make_placeholder(k, v.shape, v.dtype)
               for k, v in (("z", z_np), ("w", w_np), ("r", r_np)))
    c = dtype(0.5 - 2j)
    outputs = {"zz": z / z, "eq": pt.equal(z / z, 1), "zw": z / w,
               "rw": r / w, "cw": c / w, "one": 1 / w, "zc": z / c}
    with np.errstate(all="ignore"):
        want = {"zz": z_np / z_np, "eq": np.equal(z_np / z_np, 1),
                "zw": z_np / w_np, "rw": r_np / w_np, "cw": c / w_np,
                "one": 1 / w_np, "zc": z_np / c}
    got = _run(queue, outputs, "default", z=z_np, w=w_np, r=r_np)
    assert want["eq"].sum() > n // 2
    for k, v in want.items():
        assert got[k].dtype == v.dtype, k
        np.testing.assert_array_equal(got[k], v, err_msg=k)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_integer_power_by_row_reductions(queue, schedule):
    """An integer power whose exponent is an inlined reduction: the
    lowering's test of a negative exponent branched on the partial sums
    (``[2, -1, 1] ** sum(J, axis=1)`` gave ``[16, 1, 1]`` for
    ``[4, -1, 1]``)."""
    b_np = np.array([2, -1, 1, 3], dtype=np.int64)
    j_np = np.array([[1, -2, 1, 2], [-1, 2, 1, 1], [1, -3, 2, 1],
                     [0, 4, -1, -1]], dtype=np.int64)
    b = pt.make_placeholder("b", b_np.shape, b_np.dtype)
    j = pt.make_placeholder("j", j_np.shape, j_np.dtype)
    got = _run(queue, {"o": b ** pt.sum(j, axis=1),
                       "t": b ** pt.sum(j, axis=0)},
               schedule, b=b_np, j=j_np)
    np.testing.assert_array_equal(got["o"], b_np ** j_np.sum(axis=1))
    np.testing.assert_array_equal(got["t"], b_np ** j_np.sum(axis=0))
