"""The edges of dtypes, indices and names (issue 21): runtime indices out
of range never read outside a buffer, numpy's results at the special values
of integer and complex arithmetic, and the graphs that cannot be run are
refused at construction with a typed error."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt
from pytato.diagnostic import DTypeError, IndexOutOfBoundsError, PytatoError


def _clamp_reference(x, idx, axis):
    """numpy's take with the documented policy: one wrap, then clamp."""
    n = x.shape[axis]
    idx = np.where(idx < 0, idx + n, idx)
    return np.take(x, np.clip(idx, 0, n - 1), axis=axis)


# {{{ item 1: runtime indices out of range

@pytest.mark.parametrize("dtype", [np.float64, np.bool_, np.complex128,
                                   np.int32])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32, np.uint32,
                                       np.int8])
def test_runtime_index_out_of_range_is_clamped(queue, dtype, idx_dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) * 10).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((3, 4))
    raw = [0, 10**6, 3, -4, -1, 2, -3, 4, -10**6, 127, -128]
    info = np.iinfo(idx_dtype)
    i = np.array([v for v in raw if info.min <= v <= info.max], idx_dtype)
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    ip = pt.make_placeholder("i", i.shape, i.dtype)
    outs = {"rows": xp[ip], "cols": xp[:, ip], "both": xp[ip, ip],
            "outer": xp[ip[:, None], ip[None, :]], "noncontig": xp[ip, 1:3][:, 0]}
    expected = {
        "rows": _clamp_reference(x, i, 0),
        "cols": _clamp_reference(x, i, 1),
        "both": x[np.clip(np.where(i < 0, i + 3, i), 0, 2),
                  np.clip(np.where(i < 0, i + 4, i), 0, 3)],
        "outer": x[np.clip(np.where(i < 0, i + 3, i), 0, 2)[:, None],
                   np.clip(np.where(i < 0, i + 4, i), 0, 3)[None, :]],
        "noncontig": _clamp_reference(x, i, 0)[:, 1],
    }
    _, got = pt.generate_loopy(outs)(queue, x=x, i=i)
    got_np = pt.generate_numpy(outs)(x=x, i=i)
    for name, ref in expected.items():
        np.testing.assert_array_equal(got[name], ref, err_msg=name)
        np.testing.assert_array_equal(got_np[name], ref, err_msg=name)
        assert got[name].dtype == ref.dtype


def test_in_range_runtime_indices_match_numpy(queue):
    x = np.arange(24.0).reshape(2, 3, 4)
    i = np.array([[0, -1], [1, -2]])
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    ip = pt.make_placeholder("i", i.shape, i.dtype)
    outs = {"a": xp[:, ip], "b": xp[1, :, ip], "c": xp[ip, :, ip],
            "d": xp[..., ip]}
    _, got = pt.generate_loopy(outs)(queue, x=x, i=i)
    for name, ref in {"a": x[:, i], "b": x[1, :, i], "c": x[i, :, i],
                      "d": x[..., i]}.items():
        np.testing.assert_array_equal(got[name], ref)


def test_runtime_index_symbolic_length(queue):
    n = pt.make_size_param("n")
    yp = pt.make_placeholder("y", (n,), np.float64)
    ip = pt.make_placeholder("i", (5,), np.int64)
    i = np.array([0, 10**6, 3, -4, -1])
    prg = pt.generate_loopy(yp[ip] * 2)
    for size in (1, 3, 7):
        y = np.arange(size, dtype=np.float64) + 1
        _, (got,) = prg(queue, y=y, i=i)
        np.testing.assert_array_equal(got, 2 * _clamp_reference(y, i, 0))
    # an empty axis: nothing can be read, the result is zero (not garbage)
    _, (got,) = prg(queue, y=np.zeros(0), i=i)
    np.testing.assert_array_equal(got, np.zeros(5))


def test_index_into_empty_axis_refused():
    xp = pt.make_placeholder("x", (0, 3), np.float64)
    ip = pt.make_placeholder("i", (2,), np.int64)
    with pytest.raises(IndexOutOfBoundsError, match="size 0"):
        xp[ip]
    # an empty index array is fine
    assert xp[pt.make_placeholder("j", (0,), np.int64)].shape == (0, 3)


def test_gather_from_other_arrays_does_not_leak(queue):
    """Reading at a huge index must not reveal another array's data."""
    secret = np.full(1000, 1234.5)
    x = np.arange(4.0)
    xp = pt.make_placeholder("x", (4,), np.float64)
    sp = pt.make_placeholder("s", (1000,), np.float64)
    ip = pt.make_placeholder("i", (3,), np.int64)
    i = np.array([4, 100, 2**40])
    _, got = pt.generate_loopy({"g": xp[ip], "t": sp + 1})(
        queue, x=x, s=secret, i=i)
    np.testing.assert_array_equal(got["g"], [3.0, 3.0, 3.0])


def test_sparse_runtime_indices_never_read_outside(queue):
    cols = pt.make_placeholder("cols", (4,), np.int64)
    starts = pt.make_placeholder("starts", (4,), np.int64)
    vals = pt.make_placeholder("vals", (4,), np.float64)
    a = pt.make_csr_matrix((3, 3), vals, cols, starts)
    x = pt.make_placeholder("x", (3,), np.float64)
    prg = pt.generate_loopy(a @ x)
    xv = np.array([1.0, 2.0, 3.0])
    # valid data: the product
    _, (y,) = prg(queue, cols=np.array([0, 2, 1, 0]), starts=np.array([0, 2, 3, 4]),
                  vals=np.ones(4), x=xv)
    np.testing.assert_allclose(y, [4.0, 2.0, 1.0])
    # a column out of range and a row start out of range: those rows are NaN
    _, (y,) = prg(queue, cols=np.array([0, 10**9, 1, 0]),
                  starts=np.array([0, 2, 3, 10**9]), vals=np.ones(4), x=xv)
    assert np.isnan(y[0]) and y[1] == 2.0 and np.isnan(y[2])

# }}}


def _run(queue, outs, inputs):
    phs = {k: pt.make_placeholder(k, v.shape, v.dtype) for k, v in inputs.items()}
    graph = outs(pt, phs)
    _, got = pt.generate_loopy(graph)(queue, **inputs)
    return got


def _assert_same(got, ref):
    ref = np.asarray(ref)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got, ref)
    # the signs of zeros, infinities and NaN-free parts too
    for part in ((lambda a: a.real), (lambda a: a.imag)) if ref.dtype.kind == "c" \
            else ((lambda a: a),):
        if ref.dtype.kind in "fc":
            r, g = part(ref), part(got)
            ok = ~np.isnan(r)
            np.testing.assert_array_equal(np.signbit(g[ok]), np.signbit(r[ok]))


# {{{ item 2: silently wrong

@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.bool_])
def test_integer_negative_constant_power_refused(dtype):
    from pytato.diagnostic import IntegerPowerError
    x = pt.make_placeholder("x", (3,), dtype)
    for exponent in (-1, np.int32(-2), np.array([1, -1, 2])):
        with pytest.raises(IntegerPowerError, match="x2"):
            x ** exponent
        with pytest.raises(ValueError):
            pt.power(x, exponent)
    # a float exponent or base is fine, as in numpy
    assert (x ** -1.0).dtype == np.float64


def test_integer_runtime_negative_power(queue):
    base = np.array([0, 2, -1, -1, 1, 3, -3, 5], np.int64)
    exp = np.array([-1, -1, -1, -2, -5, 2, 3, 0], np.int64)
    got = _run(queue, lambda m, a: {"p": a["b"] ** a["e"]}, {"b": base, "e": exp})
    # documented: 1/base**-n truncated toward zero
    ref = np.array([0, 0, -1, 1, 1, 9, -27, 1])
    np.testing.assert_array_equal(got["p"], ref)


def test_bool_power_dtypes(queue):
    b = np.array([True, False, True])
    got = _run(queue, lambda m, a: {"sq": a["b"] ** 2, "cube": a["b"] ** 3,
                                    "fn": pt.power(a["b"], 2)}, {"b": b})
    _assert_same(got["sq"], b ** 2)
    _assert_same(got["cube"], b ** 3)
    _assert_same(got["fn"], np.power(b, 2))


def test_bool_einsum(queue):
    rng = np.random.default_rng(1)
    a = rng.random(5) < 0.5
    m = rng.random((4, 5)) < 0.5
    got = _run(queue, lambda np_, x: {
        "dot": pt.einsum("i,i->", x["a"], x["a"]),
        "mv": pt.einsum("ij,j->i", x["m"], x["a"]),
        "mx": pt.maximum(pt.einsum("ij,j->i", x["m"], x["a"]), x["m"][:, 0]),
        "add": pt.einsum("ij,j->i", x["m"], x["a"]) + x["m"][:, 1],
        "sq": pt.einsum("i,i->", x["a"], x["a"]) ** 2,
        "cast": pt.einsum("ij,j->i", x["m"], x["a"]).astype(np.int32),
        "ew": pt.einsum("ij,ij->ij", x["m"], x["m"]) * 3},
        {"a": a, "m": m})
    # booleans are stored as 0 or 1, not as a count
    for k in ("dot", "mv", "mx"):
        assert got[k].view(np.uint8).max(initial=0) <= 1, k
    _assert_same(got["sq"], np.asarray(np.einsum("i,i->", a, a)) ** 2)
    _assert_same(got["cast"], np.einsum("ij,j->i", m, a).astype(np.int32))
    _assert_same(got["ew"], np.einsum("ij,ij->ij", m, m) * 3)
    _assert_same(got["dot"], np.einsum("i,i->", a, a))
    _assert_same(got["mv"], np.einsum("ij,j->i", m, a))
    _assert_same(got["mx"], np.maximum(np.einsum("ij,j->i", m, a), m[:, 0]))
    _assert_same(got["add"], np.einsum("ij,j->i", m, a) + m[:, 1])


SPECIAL = [0j, -0.0 + 0j, 1 + 1j, -2j, complex(np.inf, 0), complex(0, -np.inf),
           complex(np.nan, 1), 1e-300 + 0j, -3 + 4j, complex(np.inf, np.inf)]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_division_special_values(queue, dtype):
    z = np.array(SPECIAL, dtype)
    w = np.array(SPECIAL[::-1], dtype)
    with np.errstate(all="ignore"):
        refs = {"by0j": z / 0j, "by0": z / 0, "zw": z / w,
                "int0": z / np.zeros(len(z), np.int32), "r": 2.0 / z}
    got = _run(queue, lambda m, a: {
        "by0j": a["z"] / 0j, "by0": a["z"] / 0, "zw": a["z"] / a["w"],
        "int0": a["z"] / a["i"], "r": 2.0 / a["z"]},
        {"z": z, "w": w, "i": np.zeros(len(z), np.int32)})
    for k, ref in refs.items():
        if k in ("zw", "r"):
            np.testing.assert_allclose(got[k], ref, rtol=1e-6, err_msg=k)
            assert got[k].dtype == ref.dtype
        else:
            _assert_same(got[k], ref)


def test_complex_power_special_values(queue):
    z = np.array(SPECIAL)
    with np.errstate(all="ignore"):
        refs = {"cz": 0j ** z, "fz": 0.0 ** z, "sq": z ** 2.0, "sq2": z ** 2,
                "cube": z ** 3, "inv": z ** -1, "zero": z ** 0,
                "root": z ** 0.5}
    got = _run(queue, lambda m, a: {
        "cz": 0j ** a["z"], "fz": 0.0 ** a["z"], "sq": a["z"] ** 2.0,
        "sq2": a["z"] ** 2, "cube": a["z"] ** 3, "inv": a["z"] ** -1,
        "zero": a["z"] ** 0, "root": a["z"] ** 0.5}, {"z": z})
    for k in ("cz", "fz", "zero", "sq", "sq2"):
        _assert_same(got[k], refs[k])
    for k in ("root", "inv"):
        _assert_same(got[k], refs[k])
    np.testing.assert_allclose(got["cube"], refs["cube"], rtol=1e-12)


# {{{ complex elementary functions at special values

#: the values of each part of the complex grids
_GRID_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf,
               np.nan]

_COMPLEX_FUNCTIONS = ["sqrt", "exp", "log", "log10", "sin", "cos", "tan",
                      "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                      "abs", "sign", "reciprocal", "square"]


def _complex_grid(dtype):
    return np.array([complex(a, b) for a in _GRID_PARTS for b in _GRID_PARTS],
                    dtype)


def _assert_numpy_results(got, ref, args, what, ulps=8, overflowed=None,
                          unsigned_zeros=None):
    """*got* is numpy's *ref*: in each part NaN where numpy's is NaN,
    equal (with the sign of zeros and infinities) where numpy's is zero or
    infinite, and within *ulps* units of rounding of ``abs(ref)``
    elsewhere. Where *overflowed* is true, an infinite part of *ref* (an
    overflow of finite operands) needs only be infinite: its sign may be
    rounding's (the sign of a sine near a multiple of pi, e.g.). Where
    *unsigned_zeros* is true, a zero part of *ref* needs only be zero."""
    assert got.dtype == ref.dtype, (what, got.dtype, ref.dtype)
    eps = np.finfo(ref.dtype).eps
    scale = np.abs(ref)
    parts = (np.real, np.imag) if ref.dtype.kind == "c" else (np.asarray,)
    for part in parts:
        g, r = part(got), part(ref)
        bad = np.isnan(g) != np.isnan(r)
        exact = ~np.isnan(r) & ((r == 0) | np.isinf(r))
        if overflowed is not None:
            loose = overflowed & np.isinf(r)
            bad |= loose & ~np.isinf(g)
            exact &= ~loose
        signed = exact if unsigned_zeros is None else (
            exact & ~(unsigned_zeros & (r == 0)))
        bad |= exact & (g != r)
        bad |= signed & (np.signbit(g) != np.signbit(r))
        close = ~np.isnan(r) & ~exact
        with np.errstate(invalid="ignore"):
            bad |= close & (g != r) & ~(np.abs(g - r) <= ulps * eps * scale)
        if bad.any():
            i = np.flatnonzero(bad)[:5]
            raise AssertionError(
                f"{what}: {int(bad.sum())} results differ from numpy's, e.g. "
                + ", ".join(f"{what}({', '.join(str(a[j]) for a in args)}) "
                            f"= {got[j]}, numpy: {ref[j]}" for j in i))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_special_values(queue, dtype):
    """Every complex elementary function over the grid of special values
    (+-0, +-finite, +-inf, NaN in each part): numpy's results, signs of
    zeros and infinities included (issue 21); the NumPy target agrees."""
    z = _complex_grid(dtype)
    zp = pt.make_placeholder("z", z.shape, z.dtype)
    outs = {f: getattr(pt, f)(zp) for f in _COMPLEX_FUNCTIONS}
    outs["inv_op"] = zp ** -1
    outs["sqrt_op"] = zp ** 0.5
    _, got = pt.generate_loopy(outs)(queue, z=z)
    got_np = pt.generate_numpy(outs)(z=z)
    with np.errstate(all="ignore"):
        refs = {f: getattr(np, f)(z) for f in _COMPLEX_FUNCTIONS}
        refs["inv_op"], refs["sqrt_op"] = z ** -1, z ** 0.5
    for f, ref in refs.items():
        _assert_numpy_results(got[f], ref, (z,), f)
        _assert_numpy_results(got_np[f], ref, (z,), f, ulps=0)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_power_special_values_grid(queue, dtype):
    """``z ** w`` (numpy's algorithm: zero exponents and bases, integral
    exponents multiplied out, ``exp(w log z)`` with C99's product) over
    all pairs of the grid, and constant exponents."""
    grid = _complex_grid(dtype)
    z, w = np.repeat(grid, len(grid)), np.tile(grid, len(grid))
    zp = pt.make_placeholder("z", z.shape, z.dtype)
    wp = pt.make_placeholder("w", w.shape, w.dtype)
    consts = [0, 1, 2, 3, 4, -2, 5, 99, -99, 100, 0.5, 2.5, -1.5, 1j, 2 + 0j,
              complex(0.5, -1)]
    outs = {"zw": zp ** wp, **{f"c{i}": zp ** c for i, c in enumerate(consts)},
            "rz": 2.0 ** wp, "fz": 0.0 ** wp}
    _, got = pt.generate_loopy(outs)(queue, z=z, w=w)
    with np.errstate(all="ignore"):
        refs = {"zw": z ** w, **{f"c{i}": z ** c for i, c in enumerate(consts)},
                "rz": 2.0 ** w, "fz": 0.0 ** w}
    def cond(w):
        # exp(w log z) amplifies the rounding of w log z (numpy's too)
        with np.errstate(all="ignore"):
            c = np.abs(np.asarray(w, np.complex128) * np.log(
                z.astype(np.complex128)))
        return 8 * (1 + np.nan_to_num(c, nan=0, posinf=0))

    # exp(w log z) of non-finite operands may make a NaN (inf - inf, ...)
    # whose sign C99 leaves to the device (x86 CPUs set it, NVIDIA's GPUs
    # do not), and the sign of a zero result follows it (glibc's, numpy's
    # and ours): checked on CPUs only
    cpu = bool(queue.device.type & cl.device_type.CPU)
    for k, ref in refs.items():
        exponent = consts[int(k[1:])] if k[0] == "c" else w
        finite = np.isfinite(z) & np.isfinite(np.asarray(exponent))
        _assert_numpy_results(got[k], ref, (z, w), f"power[{k}]",
                              ulps=cond(exponent), overflowed=finite,
                              unsigned_zeros=None if cpu else ~finite)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_functions_finite_accuracy(queue, dtype):
    """Finite arguments over the whole exponent range, near the unit
    circle and near the branch points +-1 and +-i: within a few units of
    rounding of numpy's (norm-wise), infinite where numpy's overflow."""
    rng = np.random.default_rng(21)
    real = np.finfo(dtype).dtype
    emax = np.finfo(real).maxexp * np.log10(2) * 0.98
    n = 2000

    def signs():
        return rng.choice([-1.0, 1.0], n)

    def mags(lo, hi):
        return signs() * 10.0 ** rng.uniform(lo, hi, n)

    z = np.concatenate([
        mags(-emax, emax) + 1j * mags(-emax, emax),
        rng.uniform(-3, 3, n) + 1j * rng.uniform(-3, 3, n),
        1 + mags(-15, 0) + 1j * mags(-20, 0),
        mags(-20, 0) + 1j * (1 + mags(-15, 0)),
        rng.uniform(-800, 800, n) + 1j * rng.uniform(-800, 800, n),
        ]).astype(dtype)
    z = z[np.isfinite(z)]
    w = (rng.uniform(-4, 4, len(z)) + 1j * rng.uniform(-4, 4, len(z))
         ).astype(dtype)
    zp = pt.make_placeholder("z", z.shape, z.dtype)
    wp = pt.make_placeholder("w", w.shape, w.dtype)
    funcs = [f for f in _COMPLEX_FUNCTIONS if f != "square"]
    outs = {f: getattr(pt, f)(zp) for f in funcs}
    outs["power"] = zp ** wp
    _, got = pt.generate_loopy(outs)(queue, z=z, w=w)
    eps = np.finfo(real).eps
    tiny = np.finfo(real).tiny
    with np.errstate(all="ignore"):
        refs = {f: getattr(np, f)(z) for f in funcs}
        refs["power"] = z ** w
        # the rounding of w log z, amplified by exp
        power_cond = 1 + np.abs(w * np.log(z.astype(np.complex128)))
    for f, ref in refs.items():
        g = got[f]
        assert g.dtype == ref.dtype
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(ref),
                                      err_msg=f)
        fin = np.isfinite(ref) & (np.abs(ref) > tiny / eps)
        tol = 8 * eps * (power_cond if f == "power" else 1)
        err = np.abs(g - ref) / np.abs(ref)
        assert np.all((err <= tol)[fin]), (f, z[fin][np.argmax(err[fin])])
        if f != "power":
            # each part too, unless tiny next to the other (log near the
            # unit circle: a small real part of a larger result)
            for part in (np.real, np.imag):
                r, gp = part(ref), part(g)
                big = fin & (np.abs(r) > 1e-3 * np.abs(ref))
                perr = np.abs(gp - r)[big] / np.abs(r)[big]
                assert np.all(perr <= 16 * eps), (
                    f, part.__name__, z[big][np.argmax(perr)])


# }}}


# {{{ float -> integer conversions out of range

_CAST_VALUES = [np.nan, np.inf, -np.inf, -0.0, -1.0, -1.5, -0.5, 0.5, 255.7,
                256.0, 300.0, -129.0, 127.9, 65539.0, -2.0**31, 2.0**31,
                -2.0**31 - 0.5, -2.0**31 - 1, 2.0**31 - 0.5, 2.0**32 + 5,
                2.0**32 - 0.5, -2.0**63, 2.0**63, 2.0**64, 2.0**63 + 2.0**40,
                1e30, -1e30, 3e9, -3e9, 1e-300]

_INT_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
               np.int64, np.uint64, np.bool_]


def _numpy_casts(x, dtype):
    """numpy's conversion of each element (its scalar loop: for values
    outside the target type's range, numpy's vectorized loops over long
    contiguous arrays may differ, e.g. to uint32)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.array([x[i:i + 1].astype(dtype)[0] for i in range(len(x))],
                        dtype)


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_float_to_integer_out_of_range(queue, src):
    """astype of NaN, infinities, negative values to unsigned types and
    values out of range: numpy's x86-64 results (issue 21), also for the
    real part of complex numbers and for computed operands."""
    x = np.array(_CAST_VALUES, src)
    c = (x + 1j * np.float32(2)).astype(np.result_type(src, np.complex64))
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    cp = pt.make_placeholder("c", c.shape, c.dtype)
    outs = {}
    for dt in _INT_DTYPES:
        name = np.dtype(dt).name
        outs[f"x_{name}"] = xp.astype(dt)
        outs[f"c_{name}"] = cp.astype(dt)
        # a computed operand, and one holding a reduction
        outs[f"e_{name}"] = (2 * xp).astype(dt)
        outs[f"r_{name}"] = pt.sum(xp.reshape(-1, 1), axis=1).astype(dt)
    _, got = pt.generate_loopy(outs)(queue, x=x, c=c)
    for dt in _INT_DTYPES:
        name = np.dtype(dt).name
        with np.errstate(all="ignore"):
            refs = {"x": _numpy_casts(x, dt),
                    "c": _numpy_casts(c, dt),
                    "e": _numpy_casts(2 * x, dt),
                    "r": _numpy_casts(x, dt)}
        for k, ref in refs.items():
            g = got[f"{k}_{name}"]
            assert g.dtype == ref.dtype
            bad = np.flatnonzero(g != ref)
            assert not bad.size, (k, name, [(x[i], g[i], ref[i]) for i in bad])


# }}}


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_integer_division_by_zero(queue, dtype):
    info = np.iinfo(dtype)
    a = np.array([5, 7, 0, info.min, 3, info.max, 7], dtype)
    b = np.array([0, 0, 0, 1, 3, 0, 2], dtype)
    if info.min < 0:
        a = np.concatenate([a, np.array([-7, info.min, -3], dtype)])
        b = np.concatenate([b, np.array([0, -1, -1], dtype)])
    with np.errstate(all="ignore"):
        refs = {"q": a // b, "r": a % b, "q0": a // dtype(0), "r0": a % dtype(0)}
    got = _run(queue, lambda m, x: {"q": x["a"] // x["b"], "r": x["a"] % x["b"],
                                    "q0": x["a"] // 0, "r0": x["a"] % 0},
               {"a": a, "b": b})
    for k, ref in refs.items():
        _assert_same(got[k], ref)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_remainder_sign_of_zero(queue, dtype):
    a = np.array([4.0, -4.0, 0.0, -0.0, 3.0, -3.0, 5.5], dtype)
    b = np.array([-2.0, -2.0, -2.0, 2.0, 2.0, 3.0, -1.0], dtype)
    got = _run(queue, lambda m, x: {"r": x["a"] % x["b"], "c": x["a"] % -2.0},
               {"a": a, "b": b})
    _assert_same(got["r"], a % b)
    _assert_same(got["c"], a % dtype(-2.0))



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_floor_divide_and_remainder_as_numpy(queue, dtype):
    """numpy's floating-point ``//`` and ``%`` (``npy_divmod``) for every
    pair of special values: infinite divisors (``1 // -inf`` is -1,
    ``1 % -inf`` is -inf), infinite dividends (NaN), zeros and NaN; and
    exact remainders of large dividends, also of 64-bit integers mixed with
    floats (computed from ``fmod``: ``a - b*floor(a/b)`` lost every digit),
    in reductions too."""
    special = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.25, 1e30, -3e-30,
                        np.inf, -np.inf, np.nan], dtype)
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    rng = np.random.default_rng(3)
    big = rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)
    ubig = rng.integers(0, 2**64 - 1, 64, dtype=np.uint64, endpoint=True)
    div = (rng.standard_normal(64) * 10).astype(dtype)
    m = (rng.standard_normal((40, 50)) * 1e6).astype(dtype)
    n = (rng.standard_normal((40, 50)) + 0.1).astype(dtype)
    got = _run(queue, lambda pt, x: {
        "q": x["a"] // x["b"], "r": x["a"] % x["b"],
        "qi": x["big"] // x["div"], "ri": x["big"] % x["div"],
        "qu": x["ubig"] // x["div"], "ru": x["ubig"] % x["div"],
        "rs": x["a"] % 2.5, "qs": x["a"] // -0.5,
        "red": pt.sum(x["m"] % x["n"], axis=1)},
        {"a": a, "b": b, "big": big, "ubig": ubig, "div": div, "m": m, "n": n})
    with np.errstate(all="ignore"):
        refs = {"q": a // b, "r": a % b, "qi": big // div, "ri": big % div,
                "qu": ubig // div, "ru": ubig % div,
                "rs": a % 2.5, "qs": a // -0.5}
    for k, ref in refs.items():
        _assert_same(got[k], ref)
    np.testing.assert_allclose(got["red"], np.sum(m % n, axis=1),
                               rtol=1e-4 if dtype == np.float32 else 1e-12)



@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32,
                                   np.int64, np.uint64])
def test_shifts_by_any_count(queue, dtype):
    """numpy's ``<<`` and ``>>`` for counts outside ``[0, bits)`` (negative
    or too large): every bit shifted out, leaving 0, or -1 for negative
    values shifted right (OpenCL takes the count modulo the width); in
    range, as C's, with narrow types wrapped; also mixed dtypes."""
    info = np.iinfo(dtype)
    a = np.array([0, 1, 3, info.max, info.min, info.max // 3, 7, 1], dtype)
    bits = 8 * np.dtype(dtype).itemsize
    counts = [0, 1, bits - 1, bits, bits + 1, 2 * bits + 1, 5, 3]
    if info.min < 0:
        a[-1] = -5
        counts[-2:] = [-1, -bits - 2]
    b = np.array(counts, dtype)
    c = np.array([1, 2, 70, 9, 0, 3, 64, 65], np.int64)
    # (uint64 with int64 is float64 in numpy, and shifting it refused)
    mixed = np.result_type(a, c).kind in "iu"
    got = _run(queue, lambda pt, x: {
        "l": x["a"] << x["b"], "r": x["a"] >> x["b"],
        "lc": x["a"] << bits, "rc": x["a"] >> (bits + 3), "l2": x["a"] << 2,
        **({"lm": x["a"] << x["c"], "rm": x["a"] >> x["c"]} if mixed else {})},
        {"a": a, "b": b, "c": c} if mixed else {"a": a, "b": b})
    refs = {"l": a << b, "r": a >> b, "lc": a << bits, "rc": a >> (bits + 3),
            "l2": a << 2}
    if mixed:
        refs.update({"lm": a << c, "rm": a >> c})
    for k, ref in refs.items():
        _assert_same(got[k], ref)


def test_roll_broadcasts_shift_and_axis(queue):
    x = np.arange(12.0).reshape(3, 4)
    got = _run(queue, lambda m, a: {
        "a": pt.roll(a["x"], (1, 2), axis=(0,)),
        "b": pt.roll(a["x"], 1, axis=(0, 1)),
        "c": pt.roll(a["x"], (1, -1), axis=(1, 1))}, {"x": x})
    _assert_same(got["a"], np.roll(x, (1, 2), axis=(0,)))
    _assert_same(got["b"], np.roll(x, 1, axis=(0, 1)))
    _assert_same(got["c"], np.roll(x, (1, -1), axis=(1, 1)))
    xp = pt.make_placeholder("x", (3, 4), np.float64)
    with pytest.raises(ValueError):
        pt.roll(xp, (1, 2, 3), axis=(0, 1))

# }}}


# {{{ item 3: refused at construction, or run

def test_float16_refused_at_construction():
    b = pt.make_placeholder("b", (3,), np.bool_)
    for f in (pt.sqrt, pt.sin, pt.exp, pt.log, pt.tanh, pt.cos):
        with pytest.raises(DTypeError, match="float16"):
            f(b)
    with pytest.raises(DTypeError, match=r"'dtype'.*float16"):
        pt.make_placeholder("h", (3,), np.float16)
    with pytest.raises(DTypeError, match="float16"):
        pt.make_data_wrapper(np.ones(3, np.float16))
    with pytest.raises(DTypeError, match="float16"):
        b.astype(np.float16)
    assert isinstance(DTypeError("x"), PytatoError)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_ordered_comparisons(queue, dtype):
    a = np.array([complex(1, np.nan), complex(np.nan, 0), 1 + 0j, 1 + 1j, 1 + 0j,
                  0.5 + 3j, -1j, 2 + 0j], dtype)
    b = np.array([2 + 0j, 2 + 0j, complex(2, np.nan), 1 + 0j, 1 + 0j, 1 + 0j,
                  0j, 1 + 5j], dtype)
    f = np.array([0.5, 1.0, 2.0, 0.0, 1.0, 1.0, 0.0, 2.0])
    with np.errstate(all="ignore"):
        refs = {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                "s": a < 1.0, "r": 1.0 >= a, "vf": a > f}
    got = _run(queue, lambda m, x: {
        "lt": x["a"] < x["b"], "le": x["a"] <= x["b"], "gt": x["a"] > x["b"],
        "ge": x["a"] >= x["b"], "s": x["a"] < 1.0, "r": 1.0 >= x["a"],
        "vf": x["a"] > x["f"]}, {"a": a, "b": b, "f": f})
    for k, ref in refs.items():
        _assert_same(got[k], ref)


@pytest.mark.parametrize("name", ["for", "int", "while", "lambda", "class",
                                  "float4", "global", "kernel", "double"])
def test_keyword_names_refused(name):
    from pytato.diagnostic import NameClashError
    with pytest.raises(NameClashError, match=repr(name)):
        pt.make_placeholder(name, (3,), np.float64)
    with pytest.raises(ValueError, match=repr(name)):
        pt.make_size_param(name)
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(NameClashError, match=repr(name)):
        pt.make_dict_of_named_arrays({name: x + 1})

# }}}


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.bool_])
def test_bitwise_operands_of_comparisons(queue, dtype):
    """C's ``&``, ``|`` and ``^`` bind looser than comparisons; generated
    code must keep numpy's (Python's) grouping."""
    a = np.array([1, 2, 3, 4, 0, 7]).astype(dtype)
    b = np.array([1, 0, 1, 1, 0, 0]).astype(dtype)
    one = dtype(1)
    refs = {"band": (a & one) == 0, "bor": (a | b) > one, "bxor": (a ^ b) != a,
            "mix": ((a & b) | (a ^ one)) <= (a & one),
            "inner": (a & (b == one)) == 0}
    got = _run(queue, lambda m, x: {
        "band": pt.equal(x["a"] & one, 0), "bor": (x["a"] | x["b"]) > one,
        "bxor": pt.not_equal(x["a"] ^ x["b"], x["a"]),
        "mix": ((x["a"] & x["b"]) | (x["a"] ^ one)) <= (x["a"] & one),
        "inner": pt.equal(x["a"] & pt.equal(x["b"], one), 0)},
        {"a": a, "b": b})
    for k, ref in refs.items():
        _assert_same(got[k], ref)


def test_checked_mode_raises_naming_the_index_array(queue):
    x = np.arange(12.0).reshape(3, 4)
    xp = pt.make_placeholder("x", (3, 4), np.float64)
    ip = pt.make_placeholder("idx", (5,), np.int64)
    prg = pt.generate_loopy(xp[ip] + 1, check_indices=True)
    good = np.array([0, 1, 2, -1, -3])
    _, (got,) = prg(queue, x=x, idx=good)
    np.testing.assert_array_equal(got, x[good] + 1)
    for bad in ([0, 3, 1, 1, 1], [0, -4, 1, 1, 1], [0, 10**6, 3, -4, -1]):
        with pytest.raises(IndexOutOfBoundsError, match="'idx'"):
            prg(queue, x=x, idx=np.array(bad))
    with pytest.raises(IndexError):
        prg(queue, x=x, idx=np.array([5, 0, 0, 0, 0]))

    # a dict of outputs, a computed index array on axis 1, unsigned indices
    jp = pt.make_placeholder("j", (3,), np.uint8)
    prg = pt.generate_loopy({"a": xp[:, ip * 2], "b": xp[jp]},
                            check_indices=True)
    _, got = prg(queue, x=x, idx=np.array([0, 1, 1, -1, -2]),
                 j=np.array([0, 2, 1], np.uint8))
    assert set(got) == {"a", "b"}
    np.testing.assert_array_equal(got["a"], x[:, np.array([0, 2, 2, -2, -4])])
    with pytest.raises(IndexOutOfBoundsError, match="computed index array"):
        prg(queue, x=x, idx=np.array([0, 1, 2, -1, -2]),
            j=np.array([0, 2, 1], np.uint8))
    with pytest.raises(IndexOutOfBoundsError, match="'j'"):
        prg(queue, x=x, idx=np.array([0, 1, 1, -1, -2]),
            j=np.array([0, 3, 1], np.uint8))


def test_checked_mode_symbolic_length_and_no_index_arrays(queue):
    n = pt.make_size_param("n")
    yp = pt.make_placeholder("y", (n,), np.complex128)
    ip = pt.make_placeholder("i", (2, 2), np.int32)
    prg = pt.generate_loopy(yp[ip], check_indices=True)
    y = np.arange(3) + 1j
    i = np.array([[0, -3], [2, 1]], np.int32)
    _, (got,) = prg(queue, y=y, i=i)
    np.testing.assert_array_equal(got, y[i])
    with pytest.raises(IndexOutOfBoundsError, match="'i'"):
        prg(queue, y=y[:2], i=i)
    # no runtime index array: the ordinary program
    prg = pt.generate_loopy(yp * 2, check_indices=True)
    _, (got,) = prg(queue, y=y)
    np.testing.assert_array_equal(got, 2 * y)


def test_complex_truth_values(queue):
    z = np.array([0j, 1j, 2 + 0j, complex(0, -0.0), complex(np.nan, 0)])
    w = np.array([1 + 0j, 0j, 0j, 3j, 0j])
    refs = {"nz": z.astype(bool), "lor": np.logical_or(z, w),
            "land": np.logical_and(z, w), "lnot": np.logical_not(z),
            "wh": np.where(z, z, w)}
    got = _run(queue, lambda m, x: {
        "nz": x["z"].astype(bool), "lor": pt.logical_or(x["z"], x["w"]),
        "land": pt.logical_and(x["z"], x["w"]), "lnot": pt.logical_not(x["z"]),
        "wh": pt.where(x["z"], x["z"], x["w"])}, {"z": z, "w": w})
    for k, ref in refs.items():
        _assert_same(got[k], ref)


def test_scalar_data_wrapper(queue):
    for value in (np.bool_(True), np.int8(-3), np.complex64(1 - 2j)):
        d = pt.make_data_wrapper(value)
        assert d.shape == ()
        x = pt.make_placeholder("x", (2,), np.int32)
        _, (got,) = pt.generate_loopy(x + d)(queue, x=np.array([1, 2], np.int32))
        _assert_same(got, np.array([1, 2], np.int32) + value)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.bool_])
def test_extrema_of_narrow_integer_expressions(queue, dtype):
    """``amin``/``amax`` of computed char/short values (C computes them in
    int: OpenCL's min(char, int) failed to compile)."""
    x = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    cases = {"add": (lambda a: a + a, lambda a: a + a),
             "where": (lambda a: pt.where(a > 0, a, a * 2),
                       lambda a: np.where(a > 0, a, a * 2)),
             "minimum": (lambda a: pt.minimum(a, 2 * a),
                         lambda a: np.minimum(a, 2 * a))}
    outs, refs = {}, {}
    # (one placeholder: two made separately under one name would clash)
    x_in = pt.make_placeholder("x", x.shape, x.dtype)
    for name, (f, g) in cases.items():
        for red in ("amin", "amax"):
            outs[f"{name}_{red}"] = getattr(pt, red)(f(x_in), axis=1)
            refs[f"{name}_{red}"] = getattr(np, red)(g(x), axis=1)
    _, got = pt.generate_loopy(outs)(queue, x=x)
    for k, ref in refs.items():
        _assert_same(got[k], ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64,
                                   np.int32, np.int64])
def test_extrema_of_differences_and_negations(queue, dtype):
    """``amax``/``amin`` over ``a - b``, ``-b``, ``-(2*b)``, ``0 - b`` and
    ``3*b`` wrap as numpy's (random typed graph seed 71153: for ``uint32``
    loopy typed ``a + -1*b`` as ``long``, and OpenCL's ``max(long, uint)``
    failed to compile; NVIDIA's compiler, driver 580.159.04, computed ``amax(-b)``,
    ``amax(-(2*b))`` and ``amax(0 - b)`` of ``int32`` wrongly until the
    negation went through a call)."""
    a = np.array(5, dtype)
    b = np.arange(12, dtype=dtype).reshape(4, 3)
    pa = pt.make_placeholder("a", (), dtype)
    pb = pt.make_placeholder("b", (4, 3), dtype)
    outs, refs = {}, {}
    with np.errstate(over="ignore"):
        for name, f in {"diff": lambda x, y: x - y,
                        "neg": lambda x, y: -y,
                        "neg2": lambda x, y: -(2 * y),
                        "zero_minus": lambda x, y: 0 - y,
                        "scaled": lambda x, y: 3 * y - x}.items():
            for red in ("amin", "amax"):
                for axis in (None, 1):
                    key = f"{name}_{red}_{axis}"
                    outs[key] = getattr(pt, red)(f(pa, pb), axis=axis)
                    refs[key] = getattr(np, red)(f(a, b), axis=axis)
    _, got = pt.generate_loopy(outs)(queue, a=a, b=b)
    for k, ref in refs.items():
        _assert_same(got[k], ref)


def test_concatenate_with_empty_reshaped_operand(queue):
    """The index arithmetic of empty arrays divides by zero-length axes;
    it is never evaluated and must not make the read look out of bounds."""
    x = pt.make_placeholder("x", (2,), np.float64)
    empty = pt.reshape(pt.make_data_wrapper(np.zeros((4, 0))), (0,))
    _, got = pt.generate_loopy({"o": pt.concatenate([x, empty])})(
        queue, x=np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got["o"], [1.0, 2.0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
def test_wrapped_narrow_integers_as_operands(queue, dtype):
    """numpy's wrapped value of char/short arithmetic where it is the
    operand of a cast, a comparison, a division or a widening sum (C
    computes it in int; the conversion back to the narrow type was a cast
    that loopy dropped, since it infers char arithmetic as char: found by
    the typed sweep, ``sum(-x)`` of uint8 was off by multiples of 2**32)."""
    info = np.iinfo(dtype)
    x = np.array([info.max, info.max - 1, info.min, info.min + 1, 3, 0],
                 dtype)
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    cases = {  # each takes the module (pytato or numpy) and the array
        "cast": lambda m, a: (a + a).astype(np.int64),
        "cast_neg": lambda m, a: (-a).astype(np.float64),
        "compare": lambda m, a: a * 3 < a,
        "floordiv": lambda m, a: (a + a) // 3,
        "sum": lambda m, a: m.sum(-a),
        "sum_axis": lambda m, a: m.sum((a * a).reshape(2, 3), axis=1),
    }
    outs = {k: f(pt, xp) for k, f in cases.items()}
    with np.errstate(all="ignore"):
        refs = {k: f(np, x) for k, f in cases.items()}
    _, got = pt.generate_loopy(outs)(queue, x=x)
    got_np = pt.generate_numpy(outs)(x=x)
    for k, ref in refs.items():
        _assert_same(got[k], ref)
        _assert_same(got_np[k], ref)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32, np.float64])
def test_complex_values_inside_real_kernels(queue, dtype):
    """Complex values computed and consumed within one expression of a
    kernel without complex arrays (loopy printed their products and
    quotients as C's '*' and '/' on structs, which OpenCL refused: found
    by the typed sweep)."""
    x = np.array([0, 1, 2, 3], dtype)
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    c = np.complex64(0.9 + 0.8j)
    cases = {
        "lnot": lambda m, a: m.logical_not(a.astype(np.complex64) * c),
        "any_": lambda m, a: m.any(a.astype(np.complex64) * c),
        "all_": lambda m, a: m.all(a.astype(np.complex128) / (1 + a * 1j)),
        "eq": lambda m, a: m.equal(a.astype(np.complex64) * c, c),
        "mag": lambda m, a: m.abs(a * c + 1j),
        "re": lambda m, a: m.real(a * c * c),
        "im": lambda m, a: m.imag((a - c) / c),
        # astype to real types drops the imaginary part, as in numpy
        "to_float": lambda m, a: (a * c).astype(np.float32),
        "to_int": lambda m, a: (a * (1 + c)).astype(np.int64),
        "cplx_to_float": lambda m, a: (a * c).astype(np.complex128).astype(
            np.float64),
    }
    for k, f in cases.items():
        # one kernel each: a complex temporary shared by two outputs would
        # turn loopy's complex arithmetic on for the others
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            ref = f(np, x)
        _, (got,) = pt.generate_loopy(f(pt, xp))(queue, x=x)
        got_np = np.asarray(pt.generate_numpy(f(pt, xp))(x=x))
        for result in (got, got_np):
            assert result.dtype == ref.dtype, k
            np.testing.assert_allclose(result, ref, rtol=1e-6, atol=1e-6,
                                       err_msg=k)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_abs_of_signed_integers_is_signed(queue, dtype):
    """numpy's abs keeps a signed integer type (OpenCL's abs returns an
    unsigned one: ``abs(x) >= y`` compared as unsigned, false for y < 0;
    found by the typed sweep), and maps the most negative value to
    itself."""
    info = np.iinfo(dtype)
    x = np.array([-2, 3, 0, info.min, info.max, -7], dtype)
    y = np.array([-4, 5, -1, 0, -3, 6], dtype)
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    yp = pt.make_placeholder("y", y.shape, y.dtype)
    cases = {
        "ge": lambda m, a, b: m.abs(a) >= b,
        "minus": lambda m, a, b: m.abs(a) - b,
        "as_float": lambda m, a, b: m.abs(a).astype(np.float64),
        "negative": lambda m, a, b: m.abs(a) < 0,
        "amin": lambda m, a, b: m.amin(m.abs(a)),
        "in_float": lambda m, a, b: m.abs(a) * 0.5,
        # of a reduction, which is not repeated
        "of_sum": lambda m, a, b: m.abs(m.sum(b.reshape(2, 3), axis=1)) > -1,
    }
    outs = {k: f(pt, xp, yp) for k, f in cases.items()}
    with np.errstate(all="ignore"):
        refs = {k: f(np, x, y) for k, f in cases.items()}
    _, got = pt.generate_loopy(outs)(queue, x=x, y=y)
    got_np = pt.generate_numpy(outs)(x=x, y=y)
    for k, ref in refs.items():
        _assert_same(got[k], ref)
        _assert_same(got_np[k], ref)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_floor_division_at_type_limits(queue, dtype):
    """numpy's floor quotient and remainder where the C definition of
    floor division (which first moves the numerator towards the divisor's
    sign) would overflow: the smallest and largest values of the type."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    pairs = [(lo, 2), (lo, 3), (lo, 7), (lo + 1, 2), (hi, -2), (hi, -3),
             (hi - 1, -7), (lo, -2), (lo, -3), (hi, 2), (hi, 3), (-7, 2),
             (7, -2), (-1, hi), (1, lo), (lo, hi), (hi, lo), (lo, lo),
             (0, lo), (-6, 3), (6, -3)]
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    got = _run(queue, lambda m, x: {"q": x["a"] // x["b"], "r": x["a"] % x["b"],
                                    "q3": x["a"] // 3, "qm2": x["a"] // -2},
               {"a": a, "b": b})
    _assert_same(got["q"], a // b)
    _assert_same(got["r"], a % b)
    _assert_same(got["q3"], a // dtype(3))
    _assert_same(got["qm2"], a // dtype(-2))


def test_sum_of_booleans_is_logical_or(queue):
    """numpy's ``bool + bool`` is a logical or: stored as 1, not 2 (found
    by the widened differential test: ``-6 | (b + b)`` gave -6)."""
    b = np.array([True, True, False, True])
    c = np.array([True, False, False, True])
    bp = pt.make_placeholder("b", b.shape, b.dtype)
    cp = pt.make_placeholder("c", c.shape, c.dtype)
    outs = {"s": bp + cp, "s2": bp + bp, "o": np.int32(-6) | (bp + bp),
            "v": (bp + cp).astype(np.int8) * 3, "w": pt.sum(bp + cp)}
    _, got = pt.generate_loopy(outs)(queue, b=b, c=c)
    refs = {"s": b + c, "s2": b + b, "o": np.int32(-6) | (b + b),
            "v": (b + c).astype(np.int8) * 3, "w": np.sum(b + c)}
    for k, ref in refs.items():
        assert got[k].dtype == ref.dtype, k
        np.testing.assert_array_equal(got[k], ref, err_msg=k)
    # the stored booleans are 0 or 1
    assert set(got["s2"].view(np.uint8).tolist()) <= {0, 1}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_einsum_signs_of_zero(queue, dtype):
    """numpy's einsum of several operands adds each product to a zero, so
    a product -0.0 is +0.0 (a single operand is a view: -0.0 stays)."""
    a = np.array([-0.5, 0.0, -0.0, 1.0])
    c = np.array([0.0, -1.0, 1.0, -0.0])
    if np.dtype(dtype).kind == "c":
        a = a + 1j * np.array([0.0, -0.0, 1.0, -1.0])
        c = c + 1j * np.array([-0.0, 0.0, 0.0, 1.0])
    a, c = a.astype(dtype), c.astype(dtype)
    ap = pt.make_placeholder("a", a.shape, a.dtype)
    cp = pt.make_placeholder("c", c.shape, c.dtype)
    specs = {"e": ("i,i->i", ap, cp), "o": ("i,j->ij", ap, cp),
             "s": ("i,i->", ap, cp), "one": ("i->i", ap)}
    outs = {k: pt.einsum(spec, *ops) for k, (spec, *ops) in specs.items()}
    outs["m"] = ap * cp
    _, got = pt.generate_loopy(outs)(queue, a=a, c=c)
    refs = {k: np.einsum(spec, *(a if o is ap else c for o in ops))
            for k, (spec, *ops) in specs.items()}
    refs["m"] = a * c
    for k, ref in refs.items():
        _assert_same(got[k], ref)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64])
def test_integer_division_by_reductions(queue, dtype):
    """``//`` and ``%`` whose operands hold reductions (found by the
    widened differential test: ``x // any(b)`` failed in loopy's type
    inference): numpy's results, zero and -1 divisors included."""
    info = np.iinfo(dtype)
    x = np.array([v for v in (int(info.min), -7, -1, 0, 5, 7, int(info.max))
                  if info.min <= v <= info.max], dtype)
    m = np.array([[0, 0], [1, 0], [-1, 0], [3, -5], [2, 0]], np.int64)
    m = np.clip(m, info.min, info.max).astype(dtype)
    b = np.array([[False, False], [True, False]])
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    mp = pt.make_placeholder("m", m.shape, m.dtype)
    bp = pt.make_placeholder("b", b.shape, b.dtype)
    outs, refs = {}, {}
    for i in range(m.shape[0]):
        d, dn = pt.sum(mp[i]), np.sum(m[i])
        outs[f"q{i}"], refs[f"q{i}"] = xp // d.astype(dtype), x // dn.astype(dtype)
        outs[f"r{i}"], refs[f"r{i}"] = xp % d.astype(dtype), x % dn.astype(dtype)
        outs[f"n{i}"] = d.astype(dtype) // xp
        refs[f"n{i}"] = dn.astype(dtype) // x
    for i in range(2):
        outs[f"a{i}"] = xp // pt.any(bp[i])
        refs[f"a{i}"] = x // np.any(b[i])
    with np.errstate(all="ignore"):
        refs = {k: np.asarray(v) for k, v in refs.items()}
    _, got = pt.generate_loopy(outs)(queue, x=x, m=m, b=b)
    for k, ref in refs.items():
        assert got[k].dtype == ref.dtype, k
        np.testing.assert_array_equal(got[k], ref, err_msg=k)
