"""The edges of dtypes, indices and names (issue 21): runtime indices out
of range never read outside a buffer, numpy's results at the special values
of integer and complex arithmetic, and the graphs that cannot be run are
refused at construction with a typed error."""

from __future__ import annotations

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
