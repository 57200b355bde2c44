"""The edges of dtypes, indices and names (issue 21): runtime indices out
of range never read outside a buffer, numpy's results at the special values
of integer and complex arithmetic, and the graphs that cannot be run are
refused at construction with a typed error."""

from __future__ import annotations

import warnings

import numpy as np
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
    # sqrt of infinities: pyopencl's complex sqrt differs (documented)
    finite = np.isfinite(z)
    _assert_same(got["root"][finite], refs["root"][finite])
    np.testing.assert_allclose(got["cube"], refs["cube"], rtol=1e-12)
    np.testing.assert_allclose(got["inv"], refs["inv"], rtol=1e-12)


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
    for name, (f, g) in cases.items():
        for red in ("amin", "amax"):
            outs[f"{name}_{red}"] = getattr(pt, red)(f(pt.make_placeholder(
                "x", x.shape, x.dtype)), axis=1)
            refs[f"{name}_{red}"] = getattr(np, red)(g(x), axis=1)
    _, got = pt.generate_loopy(outs)(queue, x=x)
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
