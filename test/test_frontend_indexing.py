"""Tests of pytato.frontend.indexing (``Array.__getitem__``) against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pytato as pt
from pytato.array.remapping import NormalizedSlice
from pytato.array.shape import are_shape_components_equal, concrete_shape
from pytato.diagnostic import IndexOutOfBoundsError, ShapeMismatchError
from pytato.transform import InputGatherer


DTYPES = [np.int32, np.float64, np.complex128]
SHAPE = (3, 4, 5)


def _data(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.integers(-50, 50, size=shape)
    return x


def _check(result: pt.Array, expected: np.ndarray, **inputs: Any) -> None:
    ctx = {k: v for k, v in inputs.items() if np.ndim(v) == 0}
    assert concrete_shape(result.shape, ctx) == expected.shape
    assert result.dtype == expected.dtype
    needed = {inp.name for inp in InputGatherer()(result)}
    value = np.asarray(pt.generate_numpy(result)(
        **{k: v for k, v in inputs.items() if k in needed}))
    assert value.shape == expected.shape
    assert value.dtype == expected.dtype
    np.testing.assert_array_equal(value, expected)


_ = slice(None)

BASIC = [
    (0,), (-1,), (2, -4, 4), (_, 1), (Ellipsis, -2), (1, Ellipsis, 3),
    (slice(1, None),), (slice(None, None, -1),), (_, slice(3, 0, -2)),
    (slice(-10, 10, 2), slice(None, -1), slice(None, None, -3)),
    (slice(10, None, -2),), (slice(3, 1),), (slice(-10, None, -1),),
    (_, slice(2, 2)), (None,), (None, 0, None), (_, None, 1, None),
    (Ellipsis, None), (0, 1, 2, None), (np.int64(1), np.int32(-1)), (),
    (Ellipsis,), (_, _, _), (None, Ellipsis, None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx", BASIC)
def test_basic_index(idx: Any, dtype: Any) -> None:
    x_in = _data(SHAPE, dtype)
    x = pt.make_placeholder("x", SHAPE, dtype)
    result = x[idx]
    _check(result, x_in[idx], x=x_in)
    assert not isinstance(result, (pt.AdvancedIndexInContiguousAxes,
                                   pt.AdvancedIndexInNoncontiguousAxes))


def test_full_slices_return_array() -> None:
    x = pt.make_placeholder("x", SHAPE)
    for idx in [(), Ellipsis, (_, _), (_, _, slice(0, 5, 1)),
                (slice(None, 100),)]:
        assert x[idx] is x
    assert isinstance(x[slice(None, None, -1)], pt.BasicIndex)
    assert isinstance(x[None], pt.Reshape)
    assert isinstance(x[0, None], pt.Reshape)
    s = x[-1, 1:3:1].indices
    assert s[0] == 2
    assert s[1] == NormalizedSlice(1, 3, 1)
    assert s[2] == NormalizedSlice(0, 5, 1)


def test_normalized_slices_are_clamped() -> None:
    x = pt.make_placeholder("x", (5,))
    assert x[-10:10:2].indices == (NormalizedSlice(0, 5, 2),)
    assert x[::-1].indices == (NormalizedSlice(4, -1, -1),)
    assert x[10:1:-2].indices == (NormalizedSlice(4, 1, -2),)
    for idx in [slice(3, 1), slice(-10, None, -1), slice(7, 9)]:
        (s,) = x[idx].indices
        assert s.start >= 0
        assert s.length == 0


IDX = np.array([[2, 0], [1, 1]])

ADVANCED = [
    ([0, 2],), ([[0, 1], [2, 0]],), (np.array([2, -1]),), (_, [0, 3]),
    (_, _, [4, -5, 0]), ([0, 1], [3, 2]), ([0, 1], _, [4, 3]),
    (0, _, [1, 2]), (_, 0, [1, 2]), ([1], [[0], [3]], [[2, 3]]),
    (IDX, 0), (Ellipsis, IDX), (IDX, Ellipsis, IDX), ([], _),
    (None, [0, 1]), ([0, 2], None), (_, [0], None, [1]), ([0], None, [1]),
    (slice(None, None, -1), [1, 0], slice(1, 4, 2)), ([[1]], 2, 3),
    (np.array(1), [0, 1]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx", ADVANCED)
def test_advanced_index_constant(idx: Any, dtype: Any) -> None:
    x_in = _data(SHAPE, dtype)
    x = pt.make_placeholder("x", SHAPE, dtype)
    _check(x[idx], x_in[idx], x=x_in)


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("make_idx", [
    lambda i, j: (i,), lambda i, j: (i, j), lambda i, j: (i, _, j),
    lambda i, j: (_, i, j), lambda i, j: (1, _, j), lambda i, j: (_, 1, i),
    lambda i, j: (Ellipsis, j, None), lambda i, j: (i, None, j),
    lambda i, j: (i[0, 0], j),
])
def test_advanced_index_lazy(make_idx: Any, idx_dtype: Any) -> None:
    x_in = _data(SHAPE, np.float64)
    i_in = np.array([[0, 2, 1]], dtype=idx_dtype)
    j_in = np.array([[3], [0]], dtype=idx_dtype)
    x = pt.make_placeholder("x", SHAPE)
    i = pt.make_placeholder("i", i_in.shape, idx_dtype)
    j = pt.make_placeholder("j", j_in.shape, idx_dtype)
    _check(x[make_idx(i, j)], x_in[make_idx(i_in, j_in)], x=x_in, i=i_in, j=j_in)


@pytest.mark.parametrize(("idx", "contiguous"), [
    ((_, [0, 1]), True), (([0, 1], [1, 2]), True), ((0, [1, 2]), True),
    ((_, 0, [1, 2]), True), ((0, _, [1, 2]), False), (([0], _, [1]), False),
    (([0], None, [1]), False), ((None, [0], [1]), True)])
def test_advanced_index_placement(idx: Any, contiguous: bool) -> None:
    x = pt.make_placeholder("x", SHAPE)
    result = x[idx]
    if None in idx:
        assert isinstance(result.array, pt.Reshape)
    cls = (pt.AdvancedIndexInContiguousAxes if contiguous
           else pt.AdvancedIndexInNoncontiguousAxes)
    assert isinstance(result, cls)
    assert result.shape == np.empty(SHAPE)[idx].shape


@pytest.mark.parametrize("shape", [(), (0,), (0, 3), (2, 0)])
@pytest.mark.parametrize("idx", [(), Ellipsis, None, (None, Ellipsis)])
def test_index_zero_dim_and_empty(shape: Any, idx: Any) -> None:
    x_in = _data(shape, np.int32)
    x = pt.make_placeholder("x", shape, np.int32)
    _check(x[idx], x_in[idx], x=x_in)


@pytest.mark.parametrize("idx", [
    (slice(None), 1), (slice(1, 0), 2), ([], 0), (slice(None), [0, 2])])
def test_index_empty_axis(idx: Any) -> None:
    x_in = _data((0, 3), np.float64)
    x = pt.make_placeholder("x", (0, 3))
    _check(x[idx], x_in[idx], x=x_in)


def test_index_symbolic() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 4))
    x_in = _data((5, 4), np.float64)
    # (index, symbolic length, the same index with n = 5)
    cases = [
        (slice(1, None), n - 1, slice(1, None)),
        (slice(None, -1), n - 1, slice(None, -1)),
        (slice(None, None, -1), n, slice(None, None, -1)),
        (slice(-2, None), 2, slice(-2, None)),
        (slice(2, 4), 2, slice(2, 4)),
        (slice(-1, 0, -1), n - 1, slice(-1, 0, -1)),
        (slice(1, n - 1), n - 2, slice(1, 4)),
        (slice(None, n - 2, -1), 1, slice(None, 3, -1)),
    ]
    for idx, length, np_idx in cases:
        result = x[idx]
        assert are_shape_components_equal(result.shape[0], length), idx
        assert result.shape[1] == 4
        _check(result, x_in[np_idx], x=x_in, n=5)
    assert x[:] is x
    for idx in [(-1,), (0, 1), (-2, -1), (1, [0, 3]), ([4, 0],), (-1, None)]:
        _check(x[idx], x_in[idx], x=x_in, n=5)


def test_index_errors() -> None:
    x = pt.make_placeholder("x", SHAPE)
    with pytest.raises(IndexOutOfBoundsError,
                       match="index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexOutOfBoundsError,
                       match="index -6 is out of bounds for axis 2 with size 5"):
        x[0, 0, -6]
    with pytest.raises(IndexOutOfBoundsError, match="axis 1 with size 4"):
        x[None, 0, 4]
    with pytest.raises(IndexOutOfBoundsError, match=r"index 4 .* axis 1 with size 4"):
        x[:, [0, 4]]
    with pytest.raises(IndexOutOfBoundsError, match=r"index -4 .* axis 0"):
        x[[-4]]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        pt.make_placeholder("s", ())[0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="index 1"):
        x[0, 1.5]
    with pytest.raises(IndexError, match="index 0"):
        x["a"]
    with pytest.raises(IndexError, match="integer dtype"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="integer dtype"):
        x[pt.make_placeholder("f", (2,))]
    with pytest.raises(IndexError, match="index 0: a nested sequence"):
        x[[pt.make_placeholder("i", (2,), np.int64), 0]]
    with pytest.raises(IndexError, match="index 1: a nested sequence"):
        x[0, [[0, 1], [2]]]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="slice start"):
        x[0.5:]
    with pytest.raises(ShapeMismatchError, match=r"index 0.*index 2"):
        x[[0, 1], :, [0, 1, 2]]
    for mask in [True, np.array([True, False, True]),
                 pt.make_placeholder("m", (3,), np.bool_), [True, False, True]]:
        with pytest.raises(NotImplementedError, match="boolean mask"):
            x[mask]


def test_index_symbolic_errors() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,))
    with pytest.raises(NotImplementedError, match="step"):
        x[::2]
    with pytest.raises(NotImplementedError, match="negative"):
        x[[-1]]
