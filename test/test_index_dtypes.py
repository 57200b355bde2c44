"""Index arrays of every integer dtype, and slices with huge steps and
bounds (issue 41, items 4, 5, 7 and 11), against numpy on the OpenCL device
and on the NumPy target.

Entries of lazy index arrays follow the project's policy (see
:ref:`numerical-semantics`): those in ``[-n, 0)`` count from the end, the
rest is clamped to the axis; :func:`_policy` is its numpy reference."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt


INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.uint16, np.uint32, np.uint64]


def _policy(idx: np.ndarray, n: int) -> np.ndarray:
    """The positions that entries *idx* of a lazy index array read on an
    axis of length *n* (exact integer arithmetic)."""
    wide = idx.astype(object)
    wide = np.where(wide < 0, wide + n, wide)
    return np.clip(wide, 0, n - 1).astype(np.int64)


def _entries(dtype: Any, n: int) -> np.ndarray:
    """In-range entries, negative ones for signed types, and the extreme
    values of *dtype* (out of range of an axis of length *n*)."""
    info = np.iinfo(dtype)
    values = [0, 1, n - 1, info.max]
    if info.min < 0:
        values += [-1, -n, info.min]
    return np.array([v for v in values if info.min <= v <= info.max],
                    dtype=dtype)


def _run(queue: cl.CommandQueue, expr: Any, **inputs: Any) -> Any:
    _, (out,) = pt.generate_loopy(expr)(queue, **inputs)
    return out


# {{{ item 4: every integer dtype, in indexing, reductions and einsums

@pytest.mark.parametrize("dtype", INDEX_DTYPES)
def test_index_arrays_of_every_integer_dtype(queue: cl.CommandQueue,
                                             dtype: Any) -> None:
    """Index arrays of all integer types compute what numpy does, in plain
    indexing, reductions and einsums, with negative entries for signed
    types (``uint64``: a ``LoopyError`` of non-integral indices before;
    ``int8`` with negative entries read outside the array on an axis of
    length 300)."""
    rng = np.random.default_rng(41)
    info = np.iinfo(dtype)
    idx_in = np.array([3, 1, 7, 0] + ([-1, -10, -4] if info.min < 0 else []),
                      dtype=dtype)
    x_in = rng.normal(size=10)
    a_in = rng.normal(size=(10, 5))
    v_in = rng.normal(size=5)
    x = pt.make_data_wrapper(x_in)
    a = pt.make_placeholder("a", (10, 5), np.float64)
    v = pt.make_placeholder("v", (5,), np.float64)
    i = pt.make_placeholder("i", idx_in.shape, dtype)
    inputs = {"a": a_in, "v": v_in, "i": idx_in}

    np.testing.assert_array_equal(_run(queue, x[i], i=idx_in), x_in[idx_in])
    np.testing.assert_allclose(_run(queue, pt.sum(x[i]), i=idx_in),
                               np.sum(x_in[idx_in]), rtol=1e-13)
    np.testing.assert_allclose(
        _run(queue, pt.einsum("ij,j->i", a[i], v), **inputs),
        np.einsum("ij,j->i", a_in[idx_in], v_in), rtol=1e-13)
    np.testing.assert_allclose(
        _run(queue, pt.sum(a[i, 1:], axis=0), **inputs),
        np.sum(a_in[idx_in, 1:], axis=0), rtol=1e-13)

    # a computed index array (its expression inlined into the access)
    j = pt.make_placeholder("j", (4,), dtype)
    j_in = np.array([2, 0, 8, 5], dtype=dtype)
    k = j + dtype(1)
    want = x_in[(j_in + dtype(1)).astype(np.int64)]
    np.testing.assert_array_equal(_run(queue, x[k], j=j_in), want)
    np.testing.assert_allclose(_run(queue, pt.sum(x[k]), j=j_in), want.sum(),
                               rtol=1e-13)


@pytest.mark.parametrize("dtype", INDEX_DTYPES)
@pytest.mark.parametrize("symbolic", [False, True])
def test_index_dtypes_on_long_axes(queue: cl.CommandQueue, dtype: Any,
                                   symbolic: bool) -> None:
    """On an axis longer than the index type's range, entries count from
    the end and are clamped in exact arithmetic, for all integer types, on
    the OpenCL device and on the NumPy target."""
    n = 300
    y_in = np.arange(n, dtype=np.float64) * 1.5
    idx_in = _entries(dtype, n)
    shape = (pt.make_size_param("n"),) if symbolic else (n,)
    y = pt.make_placeholder("y", shape, np.float64)
    i = pt.make_placeholder("i", idx_in.shape, dtype)
    inputs: dict[str, Any] = {"y": y_in, "i": idx_in}
    if symbolic:
        inputs["n"] = n
    want = y_in[_policy(idx_in, n)]
    np.testing.assert_array_equal(_run(queue, y[i], **inputs), want)
    np.testing.assert_array_equal(_run(queue, pt.sum(y[i]), **inputs),
                                  want.sum())
    np.testing.assert_array_equal(
        np.asarray(pt.generate_numpy(y[i])(**inputs)), want)

# }}}


# {{{ item 5: narrow index arrays inside a reduction

@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16])
def test_narrow_index_in_reduction_stays_parallel(
        queue: cl.CommandQueue, caplog: pytest.LogCaptureFixture,
        dtype: Any) -> None:
    """``pt.sum(x[i])`` with a narrow (computed) index array is scheduled
    like any reduction: the schedule's analysis of contiguous accesses
    reads loopy's type casts (it failed with pymbolic's
    ``UnsupportedExpressionError`` for ``TypeCast``, and the reduction
    was left serial)."""
    x_in = np.linspace(0, 1, 37)
    j_in = np.array([5, 0, 35, 20, 11, 3, 7, 30, 1, 9, 17], dtype=dtype)
    x = pt.make_placeholder("x", x_in.shape, np.float64)
    j = pt.make_placeholder("j", j_in.shape, dtype)
    # a distinct graph per dtype, so no stored program hides the schedule
    for expr, want in [
            (pt.sum(x[j]), x_in[j_in].sum()),
            (pt.sum(x[j + dtype(1)] * 2),
             2 * x_in[(j_in + dtype(1)).astype(np.int64)].sum())]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
            got = _run(queue, expr, x=x_in, j=j_in)
        np.testing.assert_allclose(got, want, rtol=1e-13)
        serial = [r.getMessage() for r in caplog.records
                  if r.name.startswith("pytato.target.loopy.schedule")]
        assert not serial, serial

# }}}


# {{{ item 7: huge slice steps and bounds

HUGE = [
    slice(None, None, 10**19), slice(None, None, -10**19),
    slice(-10**20, 10**20, 10**19), slice(10**20, -10**20, -10**19),
    slice(3, None, 2**63), slice(-2, None, -2**64), slice(-10**20, 10**20),
    slice(10**20, -10**20, -1), slice(10**20, None), slice(None, -10**20),
    slice(None, None, 11), slice(None, None, -11),
]


@pytest.mark.parametrize("s", HUGE, ids=str)
def test_huge_slice_steps_and_bounds(queue: cl.CommandQueue, s: slice
                                     ) -> None:
    """Steps and bounds beyond the axis (and beyond int64) are clipped as
    numpy does, when the graph is built (before: loopy's
    ``TypeInferenceFailure: integer constant too large``)."""
    x_in = np.arange(10.0)
    x = pt.make_placeholder("x", (10,), np.float64)
    y = x[s]
    assert y.shape == x_in[s].shape
    if x_in[s].size:
        np.testing.assert_array_equal(_run(queue, y, x=x_in), x_in[s])
    np.testing.assert_array_equal(np.asarray(pt.generate_numpy(y)(x=x_in)),
                                  x_in[s])


@pytest.mark.parametrize("s", [
    slice(-10**20, 10**20), slice(10**20, None), slice(None, 10**20),
    slice(None, -10**20), slice(10**20, -10**20, -1),
    slice(-10**20, None, -1), slice(None, 10**20, -1),
    slice(None, -10**20, -1), slice(2, 10**20), slice(10**20, 3, -1),
], ids=str)
def test_huge_slice_bounds_on_symbolic_axes(queue: cl.CommandQueue, s: slice
                                            ) -> None:
    """Bounds beyond any axis (an axis length is an int64) are clipped to
    the ends of a symbolic axis as numpy clips them."""
    n = 10
    x_in = np.arange(float(n))
    x = pt.make_placeholder("x", (pt.make_size_param("n"),), np.float64)
    y = x[s]
    want = x_in[s]
    np.testing.assert_array_equal(
        np.asarray(pt.generate_numpy(y)(x=x_in, n=n)), want)
    if want.size:
        np.testing.assert_array_equal(_run(queue, y, x=x_in, n=n), want)

# }}}


# {{{ item 11: NumPy target, empty unsigned index into an empty axis

@pytest.mark.parametrize("dtype", INDEX_DTYPES)
@pytest.mark.parametrize("lazy", [False, True])
def test_numpy_target_empty_index_into_empty_axis(dtype: Any, lazy: bool
                                                  ) -> None:
    """An empty index array of any integer type into an axis of length 0
    gives an empty result on the NumPy target (unsigned ones raised
    ``OverflowError``: ``n - 1`` was converted to their type)."""
    x_in = np.zeros((0, 3))
    idx_in = np.zeros(0, dtype)
    x = pt.make_placeholder("x", (0, 3), np.float64)
    i = pt.make_placeholder("i", (0,), dtype) if lazy else idx_in
    inputs = {"x": x_in, "i": idx_in} if lazy else {"x": x_in}
    got = np.asarray(pt.generate_numpy(x[i])(**inputs))
    assert got.shape == x_in[idx_in].shape == (0, 3)

# }}}
