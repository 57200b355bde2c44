"""Tests of the vector code of elementwise loop nests with math functions
on CPU devices (:mod:`pytato.target.loopy.schedule.vector_calls`): results
against numpy on the OpenCL device of the tests, and when the vector path
is taken."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.target.loopy.device import VECTOR_CALLS_ENV, DeviceInfo
from pytato.target.loopy.schedule import vector_calls
from pytato.target.loopy.schedule.default import default_schedule


GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU")
#: a CPU with the vector code on, whatever the device of the tests
VCPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096,
                  name="fake CPU", vector_calls=True)


def _gpu_lanes(dtype: Any) -> int:
    return (vector_calls.GPU_DOUBLE_LANES if np.dtype(dtype) == np.float64
            else vector_calls.GPU_LANES)


def _lanes(dtype: Any, queue: cl.CommandQueue | None = None) -> int:
    if queue is not None and queue.device.type & cl.device_type.GPU:
        return _gpu_lanes(dtype)
    return (vector_calls.DOUBLE_LANES if np.dtype(dtype) == np.float64
            else vector_calls.FLOAT_LANES)


def _rtol(dtype: Any) -> float:
    return 1e-5 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12


def _vector_device(queue: cl.CommandQueue) -> bool:
    return DeviceInfo.from_cl_device(queue.device).vector_calls


def _run(queue: cl.CommandQueue, expr: Any, inputs: dict[str, np.ndarray],
         **kwargs: Any) -> tuple[dict[str, np.ndarray], str]:
    """The results of *expr* (a dict of outputs, or one array: key
    ``"out"``) on *queue*'s device, scheduled there at the first call
    (the user path), and the device code."""
    graph = expr if isinstance(expr, dict) else {"out": expr}
    prog = pt.generate_loopy(graph, **kwargs)
    _, res = prog(queue, **inputs)
    return ({k: np.asarray(v) for k, v in res.items()},
            prog.get_code(queue.device))


def _check(got: np.ndarray, want: np.ndarray, rtol: float,
           atol: float = 0.0) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                               equal_nan=True)
    # signed zeros as numpy's
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]),
                                  np.signbit(want[zeros]))


def _chain(m: Any, x: Any) -> Any:
    return m.sin(x) * 2 + x**2 - m.exp(-x)


# {{{ results and vector code

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 15, 16, 17, 1000,
                                  2**16 + 3])
def test_chain_matches_numpy(queue, dtype, size):
    xa = np.random.default_rng(size).uniform(-3, 3, size).astype(dtype)
    x = pt.make_placeholder("x", (size,), dtype)
    res, code = _run(queue, _chain(pt, x), {"x": xa})
    _check(res["out"], _chain(np, xa), _rtol(dtype), atol=1e-6)
    w = _lanes(dtype, queue)
    vectorized = _vector_device(queue) and size > 0
    assert (f"vload{w}(" in code) == vectorized
    assert (f"vstore{w}(" in code) == vectorized
    # the scalar tail only where the size is not a multiple of the width
    assert ("_pt_vc_e" in code) == (vectorized and size % w != 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_symbolic_size(queue, dtype):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), dtype)
    y = pt.make_placeholder("y", (n, 3), dtype)
    prog = pt.generate_loopy({"a": _chain(pt, x), "b": pt.cos(y) / (1 + y)})
    for size in [0, 1, 5, 8, 9, 16, 100, 1003]:
        rng = np.random.default_rng(size)
        xa = rng.uniform(-2, 2, size).astype(dtype)
        ya = rng.uniform(0, 2, (size, 3)).astype(dtype)
        _, res = prog(queue, x=xa, y=ya)
        _check(np.asarray(res["a"]), _chain(np, xa), _rtol(dtype), 1e-6)
        _check(np.asarray(res["b"]), np.cos(ya) / (1 + ya), _rtol(dtype),
               1e-6)
    code = prog.get_code(queue.device)
    w = _lanes(dtype, queue)
    if _vector_device(queue):
        assert code.count(f"vload{w}(") == 2
        assert "_pt_vc_e < n" in code
        assert "_pt_vc_e < (n * 3)" in code


def test_two_size_parameters(queue):
    """n*m elements (not affine in the size parameters): the nest keeps the
    scalar code; (2n + 1, 3) gets vector code."""
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    a = pt.make_placeholder("a", (n, m), np.float64)
    b = pt.make_placeholder("b", (2 * n + 1, 3), np.float64)
    prog = pt.generate_loopy({"p": pt.exp(a), "q": pt.sin(b)})
    for nv, mv in [(0, 3), (4, 5), (7, 1)]:
        rng = np.random.default_rng(nv)
        aa, ba = rng.random((nv, mv)), rng.random((2 * nv + 1, 3))
        _, res = prog(queue, a=aa, b=ba)
        np.testing.assert_allclose(res["p"], np.exp(aa), rtol=1e-12)
        np.testing.assert_allclose(res["q"], np.sin(ba), rtol=1e-12)
    if _vector_device(queue):
        code = prog.get_code(queue.device)
        w = _lanes(np.float64, queue)
        assert code.count(f"vload{w}(") == 1
        assert f"vload{w}(0, b + _pt_vc_base)" in code


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(33, 7), (5, 6, 7), (1, 1, 9)])
def test_multidimensional(queue, dtype, shape):
    rng = np.random.default_rng(1)
    aa = rng.uniform(-1, 1, shape).astype(dtype)
    ba = rng.uniform(0.5, 2, shape).astype(dtype)
    a = pt.make_placeholder("a", shape, dtype)
    b = pt.make_placeholder("b", shape, dtype)
    res, code = _run(queue, pt.sin(a) * pt.log(b) + pt.arctan2(a, b),
                     {"a": aa, "b": ba})
    _check(res["out"], np.sin(aa) * np.log(ba) + np.arctan2(aa, ba),
           _rtol(dtype), 1e-6)
    if _vector_device(queue):
        assert code.count(f"vload{_lanes(dtype, queue)}(") == 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_several_outputs_and_private_values(queue, dtype):
    """Several stores in one nest, values kept in private scalars by the
    fusion (t, read twice), a stored intermediate read by a later nest."""
    rng = np.random.default_rng(2)
    xa = rng.uniform(-2, 2, 1001).astype(dtype)
    ya = rng.uniform(-2, 2, 1001).astype(dtype)
    x = pt.make_placeholder("x", (1001,), dtype)
    y = pt.make_placeholder("y", (1001,), dtype)
    t = pt.sin(x) * y
    stored = pt.tanh(x + y).tagged(pt.tags.ImplStored())
    graph = {"s": t + 1, "c": pt.cos(t) * t, "e": pt.exp(-x * x),
             "r": stored, "u": pt.roll(stored, 5) * pt.sqrt(pt.abs(y))}
    res, code = _run(queue, graph, {"x": xa, "y": ya})
    ta = np.sin(xa) * ya
    sa = np.tanh(xa + ya)
    want = {"s": ta + 1, "c": np.cos(ta) * ta, "e": np.exp(-xa * xa),
            "r": sa, "u": np.roll(sa, 5) * np.sqrt(np.abs(ya))}
    for k in want:
        _check(res[k], want[k], _rtol(dtype), 1e-6)
    if _vector_device(queue):
        assert f"vload{_lanes(dtype, queue)}(" in code


@pytest.mark.parametrize("cl_device", [None, VCPU])
def test_several_nests_in_one_kernel(queue, cl_device):
    """Nests small enough to share one kernel (one work-item each: found by
    the random graphs, seed 70081) declare bases of their own; the
    kernel built with one name twice failed in the OpenCL compiler."""
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-2, 2, 6), rng.uniform(-2, 2, 2)
    x1 = pt.make_placeholder("x1", (6,), np.float64)
    x2 = pt.make_placeholder("x2", (2,), np.float64)
    s1 = pt.sin(x1).tagged(pt.tags.ImplStored())
    s2 = pt.sin(x2).tagged(pt.tags.ImplStored())
    graph = {"out1": s1[:2] * s2 + 1, "out2": s2 - s1[4:]}
    kwargs = {} if cl_device is None else {"cl_device": cl_device}
    res, code = _run(queue, graph, {"x1": a, "x2": b}, **kwargs)
    _check(res["out1"], np.sin(a[:2]) * np.sin(b) + 1, 1e-12)
    _check(res["out2"], np.sin(b) - np.sin(a[4:]), 1e-12)
    if cl_device is not None or _vector_device(queue):
        for kernel in code.split("__kernel")[1:]:
            bases = [line.split("=")[0].split()[-1]
                     for line in kernel.split("\n")
                     if line.strip().startswith("int _pt_vc_base")]
            assert len(bases) == len(set(bases))
        assert code.count("int _pt_vc_base") >= 2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_zero_dimensional_operands(queue, dtype):
    """0-d arrays (a placeholder, the result of a full reduction) are the
    same for all elements of a vector nest."""
    rng = np.random.default_rng(12)
    xa = rng.uniform(-5, 5, 1001).astype(dtype)
    aa = np.array(1.5, dtype=dtype)
    x = pt.make_placeholder("x", (1001,), dtype)
    a = pt.make_placeholder("a", (), dtype)
    e = pt.exp(x - pt.amax(x))
    graph = {"softmax": e / pt.sum(e), "scaled": pt.sin(x) * a + a}
    res, code = _run(queue, graph, {"x": xa, "a": aa})
    ea = np.exp(xa - xa.max())
    _check(res["softmax"], ea / ea.sum(), _rtol(dtype) * 10, 1e-7)
    _check(res["scaled"], np.sin(xa) * aa + aa, _rtol(dtype), 1e-6)
    if _vector_device(queue):
        assert code.count(f"vload{_lanes(dtype, queue)}(") >= 2
        assert "a[0]" in code


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_powers_and_conditionals(queue, dtype):
    rng = np.random.default_rng(3)
    xa = rng.uniform(0.1, 3, 999).astype(dtype)
    ya = rng.uniform(-1, 1, 999).astype(dtype)
    x = pt.make_placeholder("x", (999,), dtype)
    y = pt.make_placeholder("y", (999,), dtype)
    graph = {
        "p3": pt.sin(x) ** 3, "pm2": pt.exp(y) ** -2, "p5": x**5 * pt.cos(y),
        "p0": x**0 + pt.sin(y), "phalf": x**1.5, "pxy": x**y,
        "w": pt.where(y > 0, pt.log(x), y), "mx": pt.maximum(pt.sin(x), y),
        "mn": pt.minimum(y, pt.cos(x)),
        "sel": pt.where((y > 0) | (x < 1), 2.5, pt.exp(y)),
        "fl": pt.floor(pt.exp(x)) + pt.ceil(pt.sin(y))}
    res, code = _run(queue, graph, {"x": xa, "y": ya})
    want = {
        "p3": np.sin(xa) ** 3, "pm2": np.exp(ya) ** -2,
        "p5": xa**5 * np.cos(ya), "p0": xa**0 + np.sin(ya),
        "phalf": xa**1.5, "pxy": xa**ya,
        "w": np.where(ya > 0, np.log(xa), ya),
        "mx": np.maximum(np.sin(xa), ya), "mn": np.minimum(ya, np.cos(xa)),
        "sel": np.where((ya > 0) | (xa < 1), dtype(2.5), np.exp(ya)),
        "fl": np.floor(np.exp(xa)) + np.ceil(np.sin(ya))}
    for k in want:
        _check(res[k], want[k].astype(dtype), _rtol(dtype), 1e-6)
    if _vector_device(queue):
        assert f"vstore{_lanes(dtype, queue)}(" in code


_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 1e-310,
            -1e-310, 710.0, -746.0, 1.0, -1.0, 0.5, 3.0, 88.8, -104.0, 1e30,
            1e-3, -1e-7, 1e-40, -1e-40, 1e-5, 2.5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", [
    "sin", "cos", "tan", "exp", "log", "log10", "sqrt", "tanh", "sinh",
    "cosh", "arcsin", "arccos", "arctan", "chain", "pow", "where", "maximum",
    "minimum", "arctan2", "isfinite", "isinf", "not"])
def test_special_values(queue, dtype, name):
    """NaN, infinities, signed zeros, overflow and subnormals go through
    the vector functions as numpy's scalar ones (the values repeat so that
    each lands in the vector part and in the tail)."""
    with np.errstate(all="ignore"):
        base = np.array(_SPECIAL, dtype=np.float64).astype(dtype)
    xa = np.concatenate([base, base[::-1], base[:5]])
    ya = np.roll(xa, 3)
    x = pt.make_placeholder("x", xa.shape, dtype)
    y = pt.make_placeholder("y", xa.shape, dtype)

    def f(m: Any, x: Any, y: Any) -> Any:
        if name == "chain":
            return _chain(m, x)
        if name == "pow":
            return m.sin(x) + m.abs(x) ** 1.5
        if name == "where":
            return m.where(m.isnan(x), y, m.exp(x))
        if name == "isfinite":
            return m.where(m.isfinite(x) & (y > 0), m.sin(x), y)
        if name == "isinf":
            return m.where(m.isinf(x) | m.isnan(y), 2.0, m.exp(x))
        if name == "not":
            return m.where(~(x > y), m.cos(y), m.tan(x))
        if name in ("maximum", "minimum", "arctan2"):
            return getattr(m, name)(m.sin(x), y) + m.exp(y) * 0
        return getattr(m, name)(x)

    res, code = _run(queue, f(pt, x, y), {"x": xa, "y": ya})
    with np.errstate(all="ignore"):
        want = f(np, xa, ya)
    got = res["out"]
    # the scalar code of the device, for comparison: where numpy's and
    # OpenCL's libraries differ (e.g. subnormals), the vector code must
    # agree with the scalar code
    off = pt.generate_loopy({"out": f(pt, x, y)},
                            cl_device=dataclasses.replace(
                                DeviceInfo.from_cl_device(queue.device),
                                vector_calls=False))
    _, scalar = off(queue, x=xa, y=ya)
    scalar = np.asarray(scalar["out"])
    assert np.array_equal(np.isnan(got), np.isnan(scalar))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite & ~np.isnan(want)],
                          want[~finite & ~np.isnan(want)])
    _check(got[finite], want[finite], rtol=_rtol(dtype) * 10, atol=0)
    if _vector_device(queue) and name not in ("sqrt", "maximum", "minimum"):
        assert f"vload{_lanes(dtype, queue)}(" in code


def _wide_values(dtype: Any, n: int, seed: int) -> np.ndarray:
    """Special values, values of moderate size and values of all
    magnitudes, mixed."""
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        special = np.array(_SPECIAL).astype(dtype)
        mags = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-45, 40, n)
        parts = [rng.choice(special, n), rng.uniform(-10, 10, n).astype(dtype),
                 mags.astype(dtype)]
    return rng.permutation(np.concatenate(parts))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
    "tanh", "exp", "log", "log10", "arctan2", "power", "pow15"])
def test_functions_agree_with_scalar_code(queue, dtype, name):
    """Each function in vector code against the device's scalar code, over
    values of all kinds (OpenCL libraries' vector functions can be wrong
    where their scalar ones are right: see
    :data:`~pytato.target.loopy.schedule.vector_calls.FLOAT_VIA_DOUBLE`)."""
    if not _vector_device(queue):
        pytest.skip("no vector code on this device")
    xa = _wide_values(dtype, 3000, 10)
    ya = _wide_values(dtype, 3000, 11)
    x = pt.make_placeholder("x", xa.shape, dtype)
    y = pt.make_placeholder("y", xa.shape, dtype)
    if name == "arctan2":
        expr = pt.arctan2(x, y)
    elif name == "power":
        expr = x**y
    elif name == "pow15":
        expr = x**1.5
    else:
        expr = getattr(pt, name)(x)
    info = DeviceInfo.from_cl_device(queue.device)
    got = {}
    for on in (True, False):
        prog = pt.generate_loopy(expr, cl_device=dataclasses.replace(
            info, vector_calls=on))
        assert ("vload" in prog.get_code()) == on
        _, (res,) = prog(queue, x=xa, y=ya)
        got[on] = np.asarray(res)
    vec, scalar = got[True], got[False]
    np.testing.assert_array_equal(np.isnan(vec), np.isnan(scalar))
    np.testing.assert_array_equal(vec[np.isinf(scalar)],
                                  scalar[np.isinf(scalar)])
    finite = np.isfinite(scalar)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(vec[finite], scalar[finite], rtol=8 * eps,
                               atol=np.finfo(dtype).tiny)


def test_results_equal_scalar_code(queue):
    """The vector code gives the scalar code's results up to the rounding
    of the vector functions, over a wide range."""
    xa = np.linspace(-50, 50, 100003)
    x = pt.make_placeholder("x", xa.shape, np.float64)
    expr = pt.sin(x) * pt.cos(x / 3) + pt.exp(-pt.abs(x)) * pt.tanh(x)
    info = DeviceInfo.from_cl_device(queue.device)
    got = {}
    for on in (True, False):
        prog = pt.generate_loopy(expr, cl_device=dataclasses.replace(
            info, vector_calls=on))
        _, (res,) = prog(queue, x=xa)
        got[on] = np.asarray(res)
    np.testing.assert_allclose(got[True], got[False], rtol=1e-14, atol=1e-15)
    with np.errstate(all="ignore"):
        want = np.sin(xa) * np.cos(xa / 3) + np.exp(-np.abs(xa)) * np.tanh(xa)
    np.testing.assert_allclose(got[True], want, rtol=1e-12, atol=1e-15)

# }}}


# {{{ when the vector path is not taken

def _not_vectorized(queue: cl.CommandQueue, graph: dict[str, Any],
                    inputs: dict[str, np.ndarray],
                    want: dict[str, np.ndarray], rtol: float = 1e-12) -> str:
    res, code = _run(queue, graph, inputs)
    for k in want:
        np.testing.assert_allclose(res[k], want[k], rtol=rtol, atol=1e-6,
                                   err_msg=k)
    return code


def test_not_taken_for_other_dtypes(queue):
    rng = np.random.default_rng(4)
    ia = rng.integers(-5, 5, 100).astype(np.int32)
    ca = (rng.random(100) + 1j * rng.random(100)).astype(np.complex128)
    ba = rng.random(100) > 0.5
    i = pt.make_placeholder("i", (100,), np.int32)
    c = pt.make_placeholder("c", (100,), np.complex128)
    b = pt.make_placeholder("b", (100,), np.bool_)
    for graph, inputs, want in [
            ({"o": pt.sin(i)}, {"i": ia}, {"o": np.sin(ia)}),
            ({"o": pt.exp(c)}, {"c": ca}, {"o": np.exp(ca)}),
            ({"o": pt.where(b, pt.sin(i / 2), 0.5)}, {"b": ba, "i": ia},
             {"o": np.where(ba, np.sin(ia / 2), 0.5)}),
            ({"o": pt.isnan(pt.sin(pt.make_placeholder("f", (100,),
                                                       np.float64)))},
             {"f": rng.random(100)}, {"o": np.zeros(100, bool)})]:
        code = _not_vectorized(queue, graph, inputs, want)
        assert "vload" not in code


def test_mixed_precision_not_taken(queue):
    rng = np.random.default_rng(5)
    xa = rng.random(100).astype(np.float32)
    ya = rng.random(100)
    x = pt.make_placeholder("x", (100,), np.float32)
    y = pt.make_placeholder("y", (100,), np.float64)
    code = _not_vectorized(queue, {"o": pt.sin(x) + y}, {"x": xa, "y": ya},
                           {"o": np.sin(xa) + ya}, rtol=1e-6)
    assert "vload" not in code


def test_not_taken_without_math_functions(queue):
    """Arithmetic alone is left to the device compiler's vectorization."""
    xa = np.arange(100.0)
    x = pt.make_placeholder("x", (100,), np.float64)
    code = _not_vectorized(queue, {"o": x * 2 + x**2 - 1 / (1 + x),
                                   "s": pt.sqrt(x) + pt.abs(x)},
                           {"x": xa}, {"o": xa * 2 + xa**2 - 1 / (1 + xa),
                                       "s": np.sqrt(xa) + xa})
    assert "vload" not in code


@pytest.mark.parametrize("case", ["roll", "reversed", "slice", "transpose",
                                  "broadcast", "reduction", "gather"])
def test_irregular_accesses_fall_back(queue, case):
    """Nests whose accesses are not at their own flat index (shifted,
    reversed, offset, transposed, broadcast, gathered, reduced) keep the
    scalar code; a vectorizable nest beside them still gets vector code."""
    rng = np.random.default_rng(6)
    xa = rng.uniform(-1, 1, 200)
    ma = rng.uniform(-1, 1, (20, 10))
    va = rng.uniform(-1, 1, 10)
    ia = rng.integers(0, 200, 200)
    x = pt.make_placeholder("x", (200,), np.float64)
    m = pt.make_placeholder("m", (20, 10), np.float64)
    v = pt.make_placeholder("v", (10,), np.float64)
    idx = pt.make_placeholder("idx", (200,), np.int64)

    def build(mod: Any, x: Any, m: Any, v: Any, idx: Any) -> Any:
        if case == "roll":
            return mod.sin(x) + mod.roll(x, 1)
        if case == "reversed":
            return mod.sin(x) * mod.exp(x[::-1])
        if case == "slice":
            return mod.sin(x[1:]) + mod.cos(x[:-1])
        if case == "transpose":
            return mod.sin(m.T) + mod.exp(m.T)
        if case == "broadcast":
            return mod.sin(m) + mod.exp(v)
        if case == "reduction":
            return mod.sum(mod.sin(m), axis=1)
        return mod.sin(x[idx])

    graph = {"o": build(pt, x, m, v, idx), "ok": pt.exp(x) * pt.sin(x)}
    inputs = {"x": xa, "m": ma, "v": va, "idx": ia}
    res, code = _run(queue, graph, {k: inputs[k] for k in inputs
                                    if k in ("x", "m", "v", "idx")})
    np.testing.assert_allclose(res["o"], build(np, xa, ma, va, ia),
                               rtol=1e-12)
    np.testing.assert_allclose(res["ok"], np.exp(xa) * np.sin(xa),
                               rtol=1e-12)
    if _vector_device(queue):
        # "ok" is vector code in a nest of its own; where the fusion puts
        # it in o's nest (same shape), that nest keeps its scalar code as
        # a whole
        fused = case in ("roll", "reversed", "gather")
        assert code.count(f"vload{_lanes(np.float64, queue)}(") == (
            0 if fused else 1)


def test_other_devices_unchanged(queue):
    """Descriptions with the switch off (by default: hand-made ones, the
    unknown device) get no vector code; a CPU and a GPU with it on do."""
    x = pt.make_placeholder("x", (1000,), np.float64)
    prog = pt.generate_loopy(_chain(pt, x), default_schedule=False)
    import loopy as lp

    def code(info: DeviceInfo | None) -> str:
        return lp.generate_code_v2(
            default_schedule(prog.program, info)).device_code()

    assert "vload" not in code(GPU)
    assert "vload" not in code(None)
    assert "vload" not in code(DeviceInfo.conservative())
    assert "vload" not in code(dataclasses.replace(VCPU, vector_calls=False))
    assert "vload8(" in code(VCPU)
    # a GPU with the switch on: 16 bytes per work-item (2 doubles)
    assert "vload2(" in code(dataclasses.replace(VCPU, kind="gpu"))


def test_switch(queue, monkeypatch):
    dev = queue.device
    monkeypatch.setenv(VECTOR_CALLS_ENV, "0")
    assert not DeviceInfo.from_cl_device(dev).vector_calls
    monkeypatch.setenv(VECTOR_CALLS_ENV, "1")
    assert DeviceInfo.from_cl_device(dev).vector_calls == (
        bool(dev.type & cl.device_type.GPU)
        or "cl_khr_fp64" in dev.extensions)
    x = pt.make_placeholder("x", (100,), np.float64)
    prog = pt.generate_loopy(pt.sin(x), cl_device=dataclasses.replace(
        DeviceInfo.from_cl_device(dev), vector_calls=False))
    assert "vload" not in prog.get_code()


def test_user_mapped_nest_left_alone(queue):
    """A nest the user mapped keeps the user's mapping (no vector code);
    the schedule's other nests get it."""
    import loopy as lp
    x = pt.make_placeholder("x", (1000,), np.float64)
    w = pt.make_placeholder("w", (300,), np.float64)
    prog = pt.generate_loopy({"a": pt.sin(x) * 2, "b": pt.exp(w)})
    part = prog.with_transformed_program(lambda t: lp.split_iname(
        t, "a_dim0", 128, outer_tag="g.0", inner_tag="l.0"))
    xa, wa = np.linspace(-1, 1, 1000), np.linspace(-2, 2, 300)
    _, res = part(queue, x=xa, w=wa)
    np.testing.assert_allclose(res["a"], np.sin(xa) * 2, rtol=1e-13)
    np.testing.assert_allclose(res["b"], np.exp(wa), rtol=1e-13)
    t_unit = part.program_for(VCPU)
    knl = t_unit.default_entrypoint
    assert {"a_dim0_outer", "a_dim0_inner"} <= set(knl.inames)
    kinds = {type(i).__name__ for i in knl.instructions}
    assert "CInstruction" in kinds
    assert knl.id_to_insn["_pt_insn_a"].within_inames == frozenset(
        {"a_dim0_outer", "a_dim0_inner"})

# }}}


# {{{ programs

def test_deferred_equals_device_schedule(queue):
    x = pt.make_placeholder("x", (5000,), np.float32)
    expr = _chain(pt, x)
    deferred = pt.generate_loopy(expr)
    direct = pt.generate_loopy(expr, cl_device=queue.device)
    assert deferred.get_code(queue.device) == direct.get_code()
    xa = np.linspace(-1, 1, 5000, dtype=np.float32)
    _, (a,) = deferred(queue, x=xa)
    _, (b,) = direct(queue, x=xa)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_device_arrays_and_repeated_calls(queue):
    xa = np.random.default_rng(8).random(4099)
    x = pt.make_placeholder("x", (4099,), np.float64)
    prog = pt.generate_loopy(_chain(pt, x))
    xd = cla.to_device(queue, xa)
    for _ in range(3):
        _, (res,) = prog(queue, x=xd)
        np.testing.assert_allclose(res.get(), _chain(np, xa), rtol=1e-12)


@pytest.mark.parametrize("split", ["0", "1"])
def test_split_path(queue, monkeypatch, caplog, split):
    """Vector nests on the split path (a kernel cut at its global
    barriers, each sub-unit generated alone), and without it."""
    import logging
    monkeypatch.setenv("PYTATO_SPLIT_KERNELS", split)
    monkeypatch.setenv("PYTATO_SPLIT_WORKERS", "1")
    # other sizes for each case: not the program (and executor) of the
    # other from the program cache
    n = 1000 + 3 * int(split)
    rng = np.random.default_rng(9)
    xa, ya = rng.random(n), rng.random(n)
    x = pt.make_placeholder("x", (n,), np.float64)
    y = pt.make_placeholder("y", (n,), np.float64)
    s = pt.sin(x).tagged(pt.tags.ImplStored())
    graph = {"a": pt.exp(s[::-1]) * y, "c": pt.exp(-y) + pt.cos(x)}
    with caplog.at_level(logging.INFO, logger="pytato.target.loopy"):
        res, code = _run(queue, graph, {"x": xa, "y": ya})
    sa = np.sin(xa)
    np.testing.assert_allclose(res["a"], np.exp(sa[::-1]) * ya, rtol=1e-12)
    np.testing.assert_allclose(res["c"], np.exp(-ya) + np.cos(xa),
                               rtol=1e-12)
    assert ("kernel split into 2 sub-units" in caplog.text) == (split == "1")
    if _vector_device(queue):
        assert code.count(f"vload{_lanes(np.float64, queue)}(") == 2


def test_show_code(queue, capsys):
    x = pt.make_placeholder("x", (100,), np.float64)
    prog = pt.generate_loopy(pt.sin(x))
    prog.show_code(queue.device)
    out = capsys.readouterr().out
    assert (f"vload{_lanes(np.float64, queue)}(" in out) \
        == _vector_device(queue)

# }}}

# vim: foldmethod=marker


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 5, 1000, 2**16 + 3])
def test_gpu_schedule_vector_code(queue, dtype, n):
    """The GPU schedule's vector code (16 bytes per work-item, no PoCL
    workarounds: ``float`` functions in ``float`` vectors, ``pow`` of whole
    vectors) runs on any device and equals numpy's results."""
    gpu = dataclasses.replace(GPU, vector_calls=True)
    x = pt.make_placeholder("x", (n,), dtype)
    y = pt.make_placeholder("y", (n,), dtype)
    graph = {"c": _chain(pt, x), "p": (pt.abs(x) + 1) ** (y * 0.5),
             "t": pt.sin(x) + pt.cos(y) + pt.tan(x / 4)}
    rng = np.random.default_rng(n)
    xv = rng.uniform(-3, 3, n).astype(dtype)
    yv = rng.uniform(-2, 2, n).astype(dtype)
    prog = pt.generate_loopy(graph, cl_device=gpu)
    code = prog.get_code()
    if n:
        assert f"vload{_gpu_lanes(dtype)}(" in code
        assert "convert_double4" not in code and ".lo" not in code
    _, res = prog(queue, x=xv, y=yv)
    with np.errstate(all="ignore"):
        want = {"c": _chain(np, xv), "p": (np.abs(xv) + 1) ** (yv * 0.5),
                "t": np.sin(xv) + np.cos(yv) + np.tan(xv / 4)}
    for k, ref in want.items():
        # (the chain cancels near its zeros: an absolute tolerance on the
        # scale of its terms)
        scale = float(np.max(np.abs(ref))) if n else 0.0
        _check(np.asarray(res[k]), ref.astype(dtype), _rtol(dtype),
               atol=_rtol(dtype) * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_many_trig_calls_stay_scalar(queue, dtype):
    """On GPUs a nest of more than ``GPU_MAX_TRIG_CALLS`` calls of ``sin``,
    ``cos`` or ``tan`` stays scalar code (its vector code is slower there);
    one of that many is vector code, and so is one of many ``exp``. Results
    equal numpy's either way."""
    gpu = dataclasses.replace(GPU, vector_calls=True)
    limit = vector_calls.GPU_MAX_TRIG_CALLS
    n = 1003
    x = pt.make_placeholder("x", (n,), dtype)
    xv = np.random.default_rng(3).uniform(-3, 3, n).astype(dtype)

    def at_limit(m: Any, v: Any) -> Any:
        return sum((m.sin if k % 2 else m.cos)((k + 1) * v)
                   for k in range(limit))

    def over_limit(m: Any, v: Any) -> Any:
        return sum(m.sin((k + 1) * v) for k in range(limit)) + m.tan(v / 4)

    def many_exp(m: Any, v: Any) -> Any:
        return sum(m.exp(v / (k + 1)) for k in range(3 * limit))

    for make, vector in ((at_limit, True), (over_limit, False),
                         (many_exp, True)):
        prog = pt.generate_loopy(make(pt, x), cl_device=gpu)
        assert (f"vload{_gpu_lanes(dtype)}(" in prog.get_code()) == vector, \
            make.__name__
        _, (out,) = prog(queue, x=xv)
        ref = make(np, xv)
        _check(np.asarray(out), ref.astype(dtype), _rtol(dtype) * 10,
               atol=_rtol(dtype) * 10 * float(np.max(np.abs(ref))))


def test_vector_code_computes_each_store_once():
    """Instructions of a nest that depend on a private temporary of the same
    nest are emitted once each (they were emitted twice)."""
    gpu = dataclasses.replace(GPU, vector_calls=True)
    n = 1000
    x = pt.make_placeholder("x", (n,), np.float64)
    y = pt.make_placeholder("y", (n,), np.float64)
    s = pt.sin(x)
    graph = {"c": s * 2 + x**2 - pt.exp(-x), "t": s + pt.cos(y)}
    code = pt.generate_loopy(graph, cl_device=gpu).get_code()
    # (n a multiple of the lanes: no scalar rest)
    assert code.count("vstore2(") == 2, code
    assert code.count("sin(") == 1, code
