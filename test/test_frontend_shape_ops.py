"""Tests of pytato.frontend.shape_ops against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pytato as pt
from pytato.array.shape import are_shape_components_equal, concrete_shape
from pytato.diagnostic import (
    AxisError,
    NonAffineShapeError,
    ReshapeError,
    ShapeMismatchError,
)
from pytato.frontend.shape_ops import (
    broadcast_to,
    concatenate,
    expand_dims,
    moveaxis,
    ravel,
    reshape,
    roll,
    squeeze,
    stack,
    swapaxes,
    transpose,
)
from pytato.tags import ExpandedDimsReshape
from pytato.transform import InputGatherer


DTYPES = [np.int32, np.float64, np.complex128]


def _data(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.integers(-50, 50, size=shape)
    return x


def _evaluate(result: Any, **inputs: Any) -> np.ndarray:
    return np.asarray(pt.generate_numpy(result)(**inputs))


def _check(result: pt.Array, expected: np.ndarray, **inputs: Any) -> None:
    ctx = {k: v for k, v in inputs.items() if np.ndim(v) == 0}
    assert concrete_shape(result.shape, ctx) == expected.shape
    assert result.dtype == expected.dtype
    needed = {inp.name for inp in InputGatherer()(result)}
    value = _evaluate(result, **{k: v for k, v in inputs.items() if k in needed})
    assert value.shape == expected.shape
    assert value.dtype == expected.dtype
    np.testing.assert_array_equal(value, expected)


# {{{ reshape

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "newshape"), [
    ((2, 3), (3, 2)),
    ((2, 3), (6,)),
    ((2, 3), -1),
    ((2, 3, 4), (4, -1)),
    ((2, 3, 4), (-1, 2, 2)),
    ((), (1, 1)),
    ((1, 1), ()),
    ((6,), (1, 6, 1)),
    ((0, 3), (3, 0)),
    ((0, 3), (-1, 5)),
    ((4, 0), (0,)),
])
@pytest.mark.parametrize("order", ["C", "F"])
def test_reshape(shape: Any, newshape: Any, order: str, dtype: Any) -> None:
    x_in = _data(shape, dtype)
    x = pt.make_placeholder("x", shape, dtype)
    _check(reshape(x, newshape, order=order),
           np.reshape(x_in, newshape, order=order), x=x_in)


def test_reshape_method_and_identity() -> None:
    x = pt.make_placeholder("x", (2, 3, 4))
    assert x.reshape(6, 4).shape == (6, 4)
    assert x.reshape((6, 4)) == reshape(x, (6, 4))
    assert reshape(x, (2, 3, 4)) is x
    assert reshape(x, (2, -1, 4)) is x
    assert isinstance(x.reshape(24, order="F"), pt.Reshape)
    assert x.reshape(24, order="F").order == "F"
    assert ravel(x).shape == (24,)
    assert reshape(x, np.array([4, -1])).shape == (4, 6)
    assert reshape(x, np.array(24)).shape == (24,)


@pytest.mark.parametrize(("shape", "newshape"), [
    ((2, 3), (4, 2)),
    ((2, 3), (4, -1)),
    ((2, 3), (5,)),
    ((0, 3), (-1, 0)),
])
def test_reshape_size_mismatch(shape: Any, newshape: Any) -> None:
    x = pt.make_placeholder("x", shape)
    with pytest.raises(ReshapeError) as exc:
        reshape(x, newshape)
    msg = str(exc.value)
    assert str(shape) in msg
    assert "newshape" in msg
    with pytest.raises(ValueError):
        np.reshape(np.empty(shape), newshape)


def test_reshape_bad_arguments() -> None:
    x = pt.make_placeholder("x", (2, 3))
    with pytest.raises(ReshapeError, match=r"newshape.*-1"):
        reshape(x, (-1, -1))
    with pytest.raises(ReshapeError, match="newshape"):
        reshape(x, (-2, -3))
    with pytest.raises(ValueError, match="order"):
        reshape(x, (3, 2), order="A")
    with pytest.raises(TypeError, match="newshape"):
        reshape(x, 2.5)
    with pytest.raises(TypeError, match="array"):
        reshape("abc", (3,))


def test_reshape_symbolic() -> None:
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (n, 6), np.float64)
    x_in = _data((4, 6), np.float64)

    y = reshape(x, (-1, 3))
    assert are_shape_components_equal(y.shape[0], 2 * n)
    _check(y, x_in.reshape(-1, 3), x=x_in, n=4)

    y = reshape(x, (n, 2, 3))
    assert y.shape[0] is n
    _check(y, x_in.reshape(4, 2, 3), x=x_in, n=4)

    y = reshape(reshape(x, (n, 2, -1)), (-1,))
    assert are_shape_components_equal(y.shape[0], 6 * n)
    _check(y, x_in.ravel(), x=x_in, n=4)

    z = pt.make_placeholder("z", (n + 1, 3))
    z_in = _data((3, 3), np.float64)
    y = reshape(z, (3, -1))
    assert are_shape_components_equal(y.shape[1], n + 1)
    _check(y, z_in.reshape(3, -1), z=z_in, n=2)

    w = pt.make_placeholder("w", (n, m))
    assert reshape(w, (m, n)).shape == (m, n)
    assert reshape(w, (n, 1, -1)).shape == (n, 1, m)
    with pytest.raises(NonAffineShapeError):
        reshape(w, -1)
    with pytest.raises(ReshapeError, match="provably"):
        reshape(w, (n, n))
    with pytest.raises(ReshapeError, match="inferred"):
        reshape(pt.make_placeholder("v", (n,)), (2, -1))

# }}}


# {{{ broadcast_to, expand_dims, squeeze

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "target"), [
    ((3,), (2, 3)),
    ((3, 1), (3, 4)),
    ((1, 1), (2, 5, 4)),
    ((), (2, 2)),
    ((1,), (0,)),
    ((2, 3), (2, 3)),
])
def test_broadcast_to(shape: Any, target: Any, dtype: Any) -> None:
    x_in = _data(shape, dtype)
    x = pt.make_placeholder("x", shape, dtype)
    result = broadcast_to(x, target)
    if shape == target:
        assert result is x
    else:
        assert isinstance(result, pt.IndexLambda)
    _check(result, np.broadcast_to(x_in, target), x=x_in)


@pytest.mark.parametrize(("shape", "target"), [
    ((3,), (4,)), ((2, 3), (3,)), ((3, 2), (3, 3))])
def test_broadcast_to_error(shape: Any, target: Any) -> None:
    with pytest.raises(ShapeMismatchError, match=r"'array'.*'shape'"):
        broadcast_to(pt.make_placeholder("x", shape), target)


def test_broadcast_to_symbolic() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 1))
    y = broadcast_to(x, (2, n, 3))
    assert y.shape == (2, n, 3)
    x_in = _data((4, 1), np.float64)
    _check(y, np.broadcast_to(x_in, (2, 4, 3)), x=x_in, n=4)
    with pytest.raises(ShapeMismatchError):
        broadcast_to(x, (n + 1, 3))


@pytest.mark.parametrize(("shape", "axis"), [
    ((2, 3), 0), ((2, 3), -1), ((2, 3), 1), ((), 0), ((2, 3), (0, 3)),
    ((2,), (-1, 0)), ((0, 2), (1,)), ((2, 3), ())])
def test_expand_dims(shape: Any, axis: Any) -> None:
    x_in = _data(shape, np.float64)
    x = pt.make_placeholder("x", shape)
    y = expand_dims(x, axis)
    _check(y, np.expand_dims(x_in, axis), x=x_in)
    if axis == ():
        assert y is x
    else:
        assert isinstance(y, pt.Reshape)
        tags = y.tags_of_type(ExpandedDimsReshape)
        new_dims = tuple(sorted(a % y.ndim for a in np.atleast_1d(axis)))
        assert tags == {ExpandedDimsReshape(new_dims)}


def test_expand_dims_errors() -> None:
    x = pt.make_placeholder("x", (2, 3))
    with pytest.raises(AxisError, match="axis"):
        expand_dims(x, 3)
    with pytest.raises(AxisError, match="axis"):
        expand_dims(x, (0, 0))


@pytest.mark.parametrize(("shape", "axis"), [
    ((1, 3, 1), None), ((1, 3, 1), 0), ((1, 3, 1), -1), ((1, 3, 1), (0, 2)),
    ((2, 3), None), ((1,), None), ((1, 0), 0)])
def test_squeeze(shape: Any, axis: Any) -> None:
    x_in = _data(shape, np.int32)
    x = pt.make_placeholder("x", shape, np.int32)
    y = squeeze(x, axis)
    _check(y, np.squeeze(x_in, axis), x=x_in)
    if 1 not in shape:
        assert y is x


def test_squeeze_errors_and_symbolic() -> None:
    x = pt.make_placeholder("x", (1, 3))
    with pytest.raises(AxisError, match=r"'axis'.*axis 1 of length 3"):
        squeeze(x, 1)
    with pytest.raises(AxisError, match="axis"):
        squeeze(x, 2)
    n = pt.make_size_param("n")
    y = pt.make_placeholder("y", (1, n))
    assert squeeze(y).shape == (n,)
    with pytest.raises(AxisError, match="length n"):
        squeeze(y, 1)

# }}}


# {{{ axis permutations

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "axes"), [
    ((2, 3), None), ((2, 3, 4), None), ((2, 3, 4), (1, 2, 0)),
    ((2, 3, 4), (-1, 0, 1)), ((), None), ((0, 3), None)])
def test_transpose(shape: Any, axes: Any, dtype: Any) -> None:
    x_in = _data(shape, dtype)
    x = pt.make_placeholder("x", shape, dtype)
    _check(transpose(x, axes), np.transpose(x_in, axes), x=x_in)
    if axes is None:
        _check(x.T, x_in.T, x=x_in)
        _check(x.transpose(), x_in.transpose(), x=x_in)
    else:
        _check(x.transpose(*axes), x_in.transpose(*axes), x=x_in)


def test_transpose_identity_and_errors() -> None:
    x = pt.make_placeholder("x", (2, 3, 4))
    assert transpose(x, (0, 1, 2)) is x
    assert isinstance(transpose(x), pt.AxisPermutation)
    for bad in [(0, 1), (0, 0, 1), (0, 1, 3), (0, 1, 2, 3)]:
        with pytest.raises(AxisError, match="axes"):
            transpose(x, bad)


@pytest.mark.parametrize(("source", "destination"), [
    (0, -1), (-1, 0), ((0, 1), (-1, -2)), (1, 1), ((0, 2), (2, 0))])
def test_moveaxis(source: Any, destination: Any) -> None:
    x_in = _data((2, 3, 4), np.float64)
    x = pt.make_placeholder("x", (2, 3, 4))
    _check(moveaxis(x, source, destination),
           np.moveaxis(x_in, source, destination), x=x_in)


@pytest.mark.parametrize(("a1", "a2"), [(0, 2), (-1, 1), (1, 1)])
def test_swapaxes(a1: int, a2: int) -> None:
    x_in = _data((2, 3, 4), np.float64)
    x = pt.make_placeholder("x", (2, 3, 4))
    _check(swapaxes(x, a1, a2), np.swapaxes(x_in, a1, a2), x=x_in)


def test_moveaxis_errors() -> None:
    x = pt.make_placeholder("x", (2, 3, 4))
    with pytest.raises(AxisError, match="source"):
        moveaxis(x, 3, 0)
    with pytest.raises(AxisError, match="destination"):
        moveaxis(x, (0, 1), (0, 0))
    with pytest.raises(AxisError, match="same number"):
        moveaxis(x, (0, 1), 0)
    with pytest.raises(AxisError, match="axis2"):
        swapaxes(x, 0, -4)

# }}}


# {{{ stack, concatenate

@pytest.mark.parametrize("dtypes", [
    (np.int32, np.int32), (np.int32, np.float64), (np.float32, np.complex128),
    (np.int64, np.float32, np.int8)])
@pytest.mark.parametrize(("shape", "axis"), [
    ((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((), 0), ((0, 2), 1)])
def test_stack(shape: Any, axis: int, dtypes: Any) -> None:
    ins = [_data(shape, dt, seed=i) for i, dt in enumerate(dtypes)]
    xs = [pt.make_placeholder(f"x{i}", shape, dt) for i, dt in enumerate(dtypes)]
    _check(stack(xs, axis), np.stack(ins, axis),
           **{f"x{i}": v for i, v in enumerate(ins)})


@pytest.mark.parametrize("dtypes", [
    (np.int32, np.int32), (np.int32, np.float64), (np.float32, np.complex128)])
@pytest.mark.parametrize(("shapes", "axis"), [
    (((2, 3), (4, 3)), 0), (((2, 3), (2, 1)), 1), (((2, 3), (2, 0)), -1),
    (((3,), (5,)), 0), (((2, 3), (4,)), None)])
def test_concatenate(shapes: Any, axis: Any, dtypes: Any) -> None:
    pairs = list(enumerate(zip(shapes, dtypes, strict=True)))
    ins = [_data(s, dt, seed=i) for i, (s, dt) in pairs]
    xs = [pt.make_placeholder(f"x{i}", s, dt) for i, (s, dt) in pairs]
    _check(concatenate(xs, axis), np.concatenate(ins, axis),
           **{f"x{i}": v for i, v in enumerate(ins)})


def test_stack_concatenate_numpy_operands() -> None:
    a = np.arange(6.).reshape(2, 3)
    x = pt.make_placeholder("x", (2, 3))
    x_in = _data((2, 3), np.float64)
    _check(stack([x, a]), np.stack([x_in, a]), x=x_in)
    _check(concatenate([a, x], 1), np.concatenate([a, x_in], 1), x=x_in)
    assert concatenate([x]) is x


def test_stack_concatenate_errors() -> None:
    x = pt.make_placeholder("x", (2, 3))
    y = pt.make_placeholder("y", (2, 4))
    z = pt.make_placeholder("z", (2, 3, 1))
    with pytest.raises(ShapeMismatchError, match=r"'arrays\[2\]'.*\(2, 4\)"):
        stack([x, x, y])
    with pytest.raises(AxisError, match="axis"):
        stack([x, x], 3)
    with pytest.raises(ValueError, match="at least one"):
        stack([])
    with pytest.raises(TypeError, match="arrays"):
        stack(x)
    with pytest.raises(ShapeMismatchError, match=r"axis 1 of 'arrays\[1\]'"):
        concatenate([x, y], 0)
    with pytest.raises(ShapeMismatchError, match=r"'arrays\[1\]'.*3 dimensions"):
        concatenate([x, z])
    with pytest.raises(ShapeMismatchError, match=r"'arrays\[0\]'.*0-d"):
        concatenate([pt.make_placeholder("s", ()), x])
    with pytest.raises(AxisError, match="axis"):
        concatenate([x, y], 2)
    with pytest.raises(ValueError, match="at least one"):
        concatenate([])


def test_stack_concatenate_symbolic() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 2))
    y = pt.make_placeholder("y", (3, 2))
    c = concatenate([x, y, x])
    assert are_shape_components_equal(c.shape[0], 2 * n + 3)
    x_in, y_in = _data((4, 2), np.float64), _data((3, 2), np.float64, 1)
    _check(c, np.concatenate([x_in, y_in, x_in]), x=x_in, y=y_in, n=4)
    s = stack([x, x + 1], 1)
    assert s.shape == (n, 2, 2)
    _check(s, np.stack([x_in, x_in + 1], 1), x=x_in, n=4)
    with pytest.raises(ShapeMismatchError, match=r"'arrays\[1\]'"):
        stack([x, y])
    with pytest.raises(ShapeMismatchError, match=r"'arrays\[1\]'"):
        concatenate([x, y], 1)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64,
                                   np.float32, np.float64, np.complex64,
                                   np.complex128])
@pytest.mark.parametrize("offset", [1, 2])
def test_concatenate_beside_subtraction_of_equal_constant(
        queue: Any, dtype: Any, offset: int) -> None:
    """A concatenation reads its second operand at ``i - offset``; a
    subtraction of a constant of the same value in the same kernel once
    made loopy type that index as a float (issue 21: loopy memoizes the
    types of subexpressions by equality, and ``(-1)*1 == (-1)*1.0``), so
    the program failed at its first call. Output ``d`` comes first in the
    kernel, so its float constant is typed first."""
    a = pt.make_placeholder("a", (offset, 2), dtype)
    b = pt.make_placeholder("b", (3, 2), dtype)
    a_in, b_in = _data((offset, 2), dtype), _data((3, 2), dtype, 1)
    if np.dtype(dtype).kind == "u":
        a_in, b_in = np.abs(a_in), np.abs(b_in)
    a_in, b_in = a_in.astype(dtype), b_in.astype(dtype)
    outputs = {"d": a - float(offset), "e": concatenate([a, b]),
               "f": concatenate([b[:offset], a], 1) - offset}
    expected = {"d": a_in - float(offset), "e": np.concatenate([a_in, b_in]),
                "f": np.concatenate([b_in[:offset], a_in], 1) - offset}
    _, cl_result = pt.generate_loopy(outputs)(queue, a=a_in, b=b_in)
    np_result = pt.generate_numpy(outputs)(a=a_in, b=b_in)
    for name, ref in expected.items():
        for result in (cl_result, np_result):
            got = np.asarray(result[name])
            assert got.dtype == ref.dtype, name
            np.testing.assert_array_equal(got, ref, err_msg=name)


def test_subtraction_of_zero_keeps_signed_zeros(queue: Any) -> None:
    """``x - 0.0`` and ``x + 0.0`` in one kernel: numpy's ``-0.0 - 0.0`` is
    ``-0.0`` and ``-0.0 + 0.0`` is ``0.0`` (the negated constant of a
    subtraction must not be a ``-0.0`` literal, which loopy prints like an
    equal ``0.0``)."""
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        x = pt.make_placeholder("x", (3,), dtype)
        x_in = np.array([-0.0, 0.0, 1.5], dtype)
        if np.dtype(dtype).kind == "c":
            x_in.imag = [-0.0, -0.0, 0.0]
        outputs = {"p": x - 0.0, "q": x + 0.0, "r": x - 0.0j}
        _, cl_result = pt.generate_loopy(outputs)(queue, x=x_in)
        np_result = pt.generate_numpy(outputs)(x=x_in)
        for name, ref in (("p", x_in - 0.0), ("q", x_in + 0.0),
                          ("r", x_in - 0.0j)):
            for result in (cl_result, np_result):
                got = np.asarray(result[name])
                assert got.dtype == ref.dtype, (dtype, name)
                np.testing.assert_array_equal(got, ref)
                for part in (np.real, np.imag):
                    np.testing.assert_array_equal(
                        np.signbit(part(got)), np.signbit(part(ref)),
                        err_msg=f"{dtype} {name}")

# }}}


# {{{ roll

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "shift", "axis"), [
    ((5,), 2, None), ((5,), -7, 0), ((3, 4), 5, None), ((3, 4), 1, 1),
    ((3, 4), -1, 0), ((3, 4), (1, 2), (0, 1)), ((3, 4), 2, (0, 1)),
    ((3, 4), (1, -1), 1), ((0, 3), 2, 0), ((), 3, None)])
def test_roll(shape: Any, shift: Any, axis: Any, dtype: Any) -> None:
    x_in = _data(shape, dtype)
    x = pt.make_placeholder("x", shape, dtype)
    _check(roll(x, shift, axis), np.roll(x_in, shift, axis), x=x_in)


def test_roll_trivial_and_errors() -> None:
    x = pt.make_placeholder("x", (3, 4))
    assert roll(x, 0, 1) is x
    assert roll(x, 4, 1) is x
    assert roll(x, 0) is x
    assert isinstance(roll(x, 1, 1), pt.Roll)
    assert roll(x, -1, 1).shift == 3
    with pytest.raises(AxisError, match="axis"):
        roll(x, 1, 2)
    with pytest.raises(TypeError, match="shift"):
        roll(x, 1.5, 0)
    with pytest.raises(ValueError, match="same length"):
        roll(x, (1, 2, 3), (0, 1))


def test_roll_symbolic() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3))
    y = roll(x, -2, 0)
    assert isinstance(y, pt.Roll)
    assert y.shape == (n, 3)
    x_in = _data((5, 3), np.float64)
    _check(y, np.roll(x_in, -2, 0), x=x_in, n=5)

# }}}
