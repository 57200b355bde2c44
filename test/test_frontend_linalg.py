"""Tests of pytato.frontend.linalg (einsum, matmul, dot, vdot, outer)
against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pytato as pt
from pytato.array.lambdas import EinsumElementwiseAxis, EinsumReductionAxis
from pytato.array.shape import concrete_shape
from pytato.diagnostic import EinsumSpecError, ShapeMismatchError
from pytato.frontend.linalg import dot, einsum, matmul, outer, vdot
from pytato.tags import Named
from pytato.transform import InputGatherer


DTYPES = [np.int32, np.float64, np.complex128]


def _data(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-9, 9, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = (x + 1j * rng.integers(-9, 9, size=shape)).astype(dtype)
    return x


def _check(result: Any, expected: np.ndarray, **inputs: Any) -> None:
    expected = np.asarray(expected)
    ctx = {k: v for k, v in inputs.items() if np.ndim(v) == 0}
    assert concrete_shape(result.shape, ctx) == expected.shape
    assert result.dtype == expected.dtype
    needed = {inp.name for inp in InputGatherer()(result)}
    value = np.asarray(pt.generate_numpy(result)(
        **{k: v for k, v in inputs.items() if k in needed}))
    assert value.shape == expected.shape
    assert value.dtype == expected.dtype
    np.testing.assert_allclose(value, expected, rtol=1e-12)


def _operands(shapes: Any, dtypes: Any) -> tuple[list[pt.Array], dict[str, Any]]:
    if not isinstance(dtypes, (tuple, list)):
        dtypes = [dtypes] * len(shapes)
    arys, inputs = [], {}
    for i, (s, dt) in enumerate(zip(shapes, dtypes, strict=True)):
        inputs[f"x{i}"] = _data(s, dt, seed=i)
        arys.append(pt.make_placeholder(f"x{i}", s, dt))
    return arys, inputs


# {{{ einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i", [(5,), (5,)]),
    ("i->", [(5,)]),
    ("i->", [(0,)]),
    ("ij->", [(2, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
    ("Ba,aC", [(2, 3), (3, 4)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    (",i->i", [(), (3,)]),
    (",", [(), ()]),
    ("...i,...i", [(2, 1, 3), (4, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 2)]),
    ("ij...,jk->...ik", [(2, 3, 5), (3, 4)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,ij", [(0, 3), (0, 3)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES)
def test_einsum(subscripts: str, shapes: Any, dtype: Any) -> None:
    arys, inputs = _operands(shapes, dtype)
    result = einsum(subscripts, *arys)
    assert isinstance(result, pt.Einsum)
    _check(result, np.einsum(subscripts, *inputs.values()), **inputs)


@pytest.mark.parametrize("dtypes", [
    (np.int32, np.float32), (np.float32, np.complex128), (np.int8, np.int64),
    (np.bool_, np.bool_)])
def test_einsum_dtype_promotion(dtypes: Any) -> None:
    arys, inputs = _operands([(2, 3), (3, 4)], dtypes)
    expected = np.einsum("ij,jk->ik", *inputs.values())
    result = einsum("ij,jk->ik", *arys)
    assert result.dtype == expected.dtype
    if expected.dtype.kind != "b":
        _check(result, expected, **inputs)


def test_einsum_descriptors() -> None:
    a = pt.make_placeholder("a", (3, 3, 4))
    b = pt.make_placeholder("b", (4, 5))
    e = einsum("iij,jk->k", a, b)
    r0, r1 = EinsumReductionAxis(0), EinsumReductionAxis(1)
    assert e.access_descriptors == ((r0, r0, r1), (r1, EinsumElementwiseAxis(0)))
    assert e.index_to_access_descr == {"i": r0, "j": r1,
                                       "k": EinsumElementwiseAxis(0)}
    assert set(e.redn_axis_to_redn_descr) == {r0, r1}
    assert e.shape == (5,)

    descr = pt.ReductionDescriptor(frozenset({Named("red")}))
    e = einsum("ij,jk->ik", a[0], b, index_to_redn_descr={"j": descr})
    assert e.redn_axis_to_redn_descr == {r0: descr}


def test_einsum_numpy_operands() -> None:
    a_in = _data((2, 3), np.float64)
    b = pt.make_placeholder("b", (3,))
    b_in = _data((3,), np.float64, 1)
    _check(einsum("ij,j->i", a_in, b), a_in @ b_in, b=b_in)


def test_einsum_symbolic() -> None:
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    a = pt.make_placeholder("a", (n, m))
    b = pt.make_placeholder("b", (m, 3))
    e = einsum("ij,jk->ik", a, b)
    assert e.shape == (n, 3)
    assert e.reduction_axis_length(EinsumReductionAxis(0)) is m
    a_in, b_in = _data((4, 2), np.float64), _data((2, 3), np.float64, 1)
    _check(e, a_in @ b_in, a=a_in, b=b_in, n=4, m=2)
    _check(einsum("ii->i", pt.make_placeholder("c", (n, n))),
           np.diag(np.eye(4)), c=np.eye(4), n=4)
    with pytest.raises(EinsumSpecError, match="'j'"):
        einsum("ij,jk->ik", a, pt.make_placeholder("c", (n, 3)))


@pytest.mark.parametrize(("subscripts", "shapes", "match"), [
    ("ij,jk->ik", [(2, 3)], r"'ij,jk->ik'.*2 operand.*1 were given"),
    ("ij->ij", [(2, 3), (3,)], r"1 operand.*2 were given"),
    ("ij,jk->ik", [(2, 3), (3,)], r"operand 1 has 1 dimension.*'jk' names 2"),
    ("ijk", [(2, 3)], r"operand 0 has 2 dimension.*'ijk' names 3"),
    ("i...j", [(2,)], r"operand 0 has 1 dimension"),
    ("ij,jk->ik", [(2, 3), (4, 5)], r"index 'j' has length 3 in operand 0.*"
                                    r"length 4 in operand 1"),
    ("ii", [(2, 3)], r"index 'i' is repeated in operand 0.*2 and 3"),
    ("ii->i", [(1, 3)], r"index 'i' is repeated in operand 0"),
    ("ij->k", [(2, 3)], r"output index 'k' does not appear"),
    ("ij->ii", [(2, 3)], r"output index 'i' is repeated"),
    ("i2", [(2, 3)], r"invalid character '2' in operand 0"),
    ("ij->i.", [(2, 3)], r"invalid character '.' in the output"),
    ("ij->i->j", [(2, 3)], r"more than one '->'"),
    ("...i...", [(2, 3)], r"more than one ellipsis"),
    ("...i->i", [(2, 3)], r"must contain '...'"),
    ("...i,...i", [(2, 3), (4, 3)], r"index '...' has length 2"),
])
def test_einsum_errors(subscripts: str, shapes: Any, match: str) -> None:
    arys, _ = _operands(shapes, np.float64)
    with pytest.raises(EinsumSpecError, match=match):
        einsum(subscripts, *arys)


def test_einsum_bad_arguments() -> None:
    a = pt.make_placeholder("a", (2, 3))
    with pytest.raises(EinsumSpecError, match=r"'index_to_redn_descr'.*'i'"):
        einsum("ij->i", a, index_to_redn_descr={"i": pt.ReductionDescriptor()})
    with pytest.raises(EinsumSpecError, match=r"'index_to_redn_descr'.*'k'"):
        einsum("ij->i", a, index_to_redn_descr={"k": pt.ReductionDescriptor()})
    with pytest.raises(TypeError, match="index_to_redn_descr"):
        einsum("ij->i", a, index_to_redn_descr={"j": "sum"})
    with pytest.raises(TypeError, match="subscripts"):
        einsum(a, a)
    with pytest.raises(TypeError, match=r"operands\[1\]"):
        einsum("ij,jk", a, "b")

# }}}


# {{{ matmul, dot, vdot, outer

MATMUL_SHAPES = [
    ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (7, 3, 4)),
    ((1, 2, 3), (5, 3, 4)), ((4,), (2, 4, 3)), ((2, 2, 4), (4,)),
    ((0, 3), (3, 2)), ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("dtypes", [
    np.float64, np.int32, np.complex128, (np.int32, np.float32)])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul(shapes: Any, dtypes: Any) -> None:
    (a, b), inputs = _operands(shapes, dtypes)
    expected = np.matmul(*inputs.values())
    _check(matmul(a, b), expected, **inputs)
    _check(a @ b, expected, **inputs)


def test_matmul_numpy_operands() -> None:
    a = pt.make_placeholder("a", (2, 3))
    a_in = _data((2, 3), np.float64)
    m = _data((3, 2), np.float64, 1)
    _check(a @ m, a_in @ m, a=a_in)
    _check(m @ a, m @ a_in, a=a_in)


def test_matmul_errors() -> None:
    a = pt.make_placeholder("a", (2, 3))
    with pytest.raises(ShapeMismatchError, match=r"'x1'.*0-d"):
        matmul(pt.make_placeholder("s", ()), a)
    with pytest.raises(ShapeMismatchError, match=r"'x2'.*0-d"):
        matmul(a, 2.0)
    with pytest.raises(ShapeMismatchError,
                       match=r"axis 1 of 'x1' \(shape \(2, 3\)\).*axis 0 of 'x2'"):
        matmul(a, pt.make_placeholder("b", (2, 3)))
    with pytest.raises(ShapeMismatchError, match="'x2'"):
        matmul(a, pt.make_placeholder("b", (4,)))
    with pytest.raises(ShapeMismatchError, match="batch dimensions of 'x1'"):
        matmul(pt.make_placeholder("c", (2, 2, 3)),
               pt.make_placeholder("d", (3, 3, 2)))


def test_matmul_symbolic() -> None:
    n = pt.make_size_param("n")
    a = pt.make_placeholder("a", (n, 3))
    b = pt.make_placeholder("b", (3, n))
    c = a @ b
    assert c.shape == (n, n)
    a_in, b_in = _data((4, 3), np.float64), _data((3, 4), np.float64, 1)
    _check(c, a_in @ b_in, a=a_in, b=b_in, n=4)
    _check(b @ a, b_in @ a_in, a=a_in, b=b_in, n=4)
    with pytest.raises(ShapeMismatchError):
        a @ a


DOT_SHAPES = [
    ((), ()), ((), (3,)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3, 4)),
    ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 6)),
    ((4,), (5, 4, 6)), ((2, 3, 4), (4, 6)), ((0, 3), (3,)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", DOT_SHAPES)
def test_dot(shapes: Any, dtype: Any) -> None:
    (a, b), inputs = _operands(shapes, dtype)
    _check(dot(a, b), np.dot(*inputs.values()), **inputs)


def test_dot_scalars_and_errors() -> None:
    assert dot(2, 3) == 6
    a = pt.make_placeholder("a", (2, 3))
    a_in = _data((2, 3), np.float64)
    _check(dot(a, 2.0), a_in * 2.0, a=a_in)
    with pytest.raises(ShapeMismatchError,
                       match=r"axis 1 of 'a'.*axis 0 of 'b'.*3 != 2"):
        dot(a, pt.make_placeholder("b", (2, 3)))
    with pytest.raises(ShapeMismatchError, match="'b'"):
        dot(a, pt.make_placeholder("b", (1,)))


@pytest.mark.parametrize("dtypes", [
    (np.complex128, np.complex128), (np.float64, np.complex128),
    (np.complex64, np.float32), (np.int32, np.int32)])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (6,)),
                                    ((2, 2), (2, 2)), ((0,), (0,))])
def test_vdot(shapes: Any, dtypes: Any) -> None:
    (a, b), inputs = _operands(shapes, dtypes)
    _check(vdot(a, b), np.vdot(*inputs.values()), **inputs)


def test_vdot_error() -> None:
    with pytest.raises(ShapeMismatchError, match=r"'a' and 'b'.*same size"):
        vdot(pt.make_placeholder("a", (3,)), pt.make_placeholder("b", (2, 2)))


@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2, 2), (3,)), ((), (2,))])
def test_outer(shapes: Any) -> None:
    (a, b), inputs = _operands(shapes, np.float64)
    _check(outer(a, b), np.outer(*inputs.values()), **inputs)

# }}}
