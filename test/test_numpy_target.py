"""Tests of the NumPy target (:func:`pytato.generate_numpy`): every node type
against hand-computed numpy, generated code, call-time checks."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.array import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    Einsum,
    IndexLambda,
    NormalizedSlice,
    ReductionDescriptor,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.lambdas import EinsumElementwiseAxis, EinsumReductionAxis
from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    MissingArgumentError,
    UnknownArgumentError,
)
from pytato.scalar_expr import (
    AllReductionOperation,
    AnyReductionOperation,
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    Reduce,
    SumReductionOperation,
    TypeCast,
)
from pytato.target.python import BoundPythonProgram, NumpyTarget


V = prim.Variable
rng = np.random.default_rng(seed=17)


def _rand(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(1, 9, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.random(shape) + 1j * rng.random(shape)).astype(dtype)
    return rng.random(shape).astype(dtype)


def _check(result, expected):
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.asarray(expected).dtype
    assert result.shape == np.shape(expected)
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def _lam(expr, shape, dtype, bindings):
    return IndexLambda(shape, np.dtype(dtype), expr, bindings)


# {{{ element-wise arithmetic through operators

_BINOPS = [
    ("add", lambda a, b: a + b),
    ("sub", lambda a, b: a - b),
    ("mul", lambda a, b: a * b),
    ("truediv", lambda a, b: a / b),
    ("floordiv", lambda a, b: a // b),
    ("mod", lambda a, b: a % b),
    ("pow", lambda a, b: a ** b),
    ("lt", lambda a, b: a < b),
    ("ge", lambda a, b: a >= b),
]


@pytest.mark.parametrize(("name", "op"), _BINOPS)
@pytest.mark.parametrize(("dt1", "dt2"), [
    (np.float64, np.float64), (np.int32, np.int64), (np.float32, np.int8),
    (np.uint8, np.uint8)])
def test_binary_operators(name, op, dt1, dt2):
    a, b = _rand((3, 4), dt1), _rand((4,), dt2)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    res = pt.generate_numpy(op(x, y))(x=a, y=b)
    _check(res, op(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.uint16, np.bool_])
def test_bitwise_and_logical(dtype):
    a, b = _rand((5,), dtype), _rand((2, 5), dtype)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    prog = pt.generate_numpy({
        "and": x & y, "or": x | y, "xor": x ^ y, "inv": ~x,
        "land": pt.logical_and(x, y), "lnot": pt.logical_not(y),
        "lxor": pt.logical_xor(x, y)})
    res = prog(x=a, y=b)
    for key, ref in [("and", a & b), ("or", a | b), ("xor", a ^ b),
                     ("inv", ~a), ("land", np.logical_and(a, b)),
                     ("lnot", np.logical_not(b)),
                     ("lxor", np.logical_xor(a, b))]:
        _check(res[key], ref)


def test_negation_and_shifts_of_unsigned():
    a = np.array([0, 1, 200], dtype=np.uint8)
    s = np.array([1, 2, 3], dtype=np.uint8)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", s.shape, s.dtype)
    res = pt.generate_numpy({"neg": -x, "l": x << y, "r": x >> y})(x=a, y=s)
    _check(res["neg"], -a)
    _check(res["l"], a << s)
    _check(res["r"], a >> s)


def test_maximum_minimum_nan():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([2.0, 0.0, np.nan])
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.make_placeholder("y", (3,), np.float64)
    res = pt.generate_numpy({"max": pt.maximum(x, y),
                             "min": pt.minimum(x, y)})(x=a, y=b)
    _check(res["max"], np.maximum(a, b))
    _check(res["min"], np.minimum(a, b))

# }}}


# {{{ IndexLambda built directly

@pytest.mark.parametrize(("func", "ref"), [
    ("sin", np.sin), ("exp", np.exp), ("sqrt", np.sqrt), ("abs", np.abs),
    ("fabs", np.abs), ("log10", np.log10), ("tanh", np.tanh),
    ("floor", np.floor), ("isnan", np.isnan)])
def test_c99_functions(func, ref):
    a = _rand((4, 2))
    x = pt.make_placeholder("x", a.shape, a.dtype)
    out_dtype = np.bool_ if func == "isnan" else np.float64
    expr = prim.Call(V(f"pytato.c99.{func}"), (V("_in0")[V("_0"), V("_1")],))
    res = pt.generate_numpy(_lam(expr, (4, 2), out_dtype, {"_in0": x}))(x=a)
    _check(res, ref(a))


def test_c99_binary_and_complex():
    a, b = _rand((3,)), _rand((3,))
    c = _rand((3,), np.complex128)
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.make_placeholder("y", (3,), np.float64)
    z = pt.make_placeholder("z", (3,), np.complex128)
    xi, yi, zi = V("_in0")[V("_0")], V("_in1")[V("_0")], V("_in2")[V("_0")]
    b3 = {"_in0": x, "_in1": y, "_in2": z}
    prog = pt.generate_numpy({
        "atan2": _lam(prim.Call(V("pytato.c99.atan2"), (xi, yi)), (3,),
                      np.float64, b3),
        "pow": _lam(prim.Call(V("pytato.c99.pow"), (xi, yi)), (3,),
                    np.float64, b3),
        "real": _lam(prim.Call(V("pytato.c99.real"), (zi,)), (3,),
                     np.float64, b3),
        "conj": _lam(prim.Call(V("pytato.c99.conj"), (zi,)), (3,),
                     np.complex128, b3),
    })
    res = prog(x=a, y=b, z=c)
    _check(res["atan2"], np.arctan2(a, b))
    _check(res["pow"], a ** b)
    _check(res["real"], c.real)
    _check(res["conj"], c.conj())


def test_if_typecast_and_literals():
    a = _rand((6,), np.int32)
    x = pt.make_placeholder("x", (6,), np.int32)
    xi = V("_in0")[V("_0")]
    expr = prim.If(prim.Comparison(xi, ">", np.int32(4)),
                   TypeCast(np.dtype(np.float32), xi) / np.float32(2),
                   np.float32(np.inf))
    res = pt.generate_numpy(_lam(expr, (6,), np.float32, {"_in0": x}))(x=a)
    _check(res, np.where(a > 4, a.astype(np.float32) / np.float32(2),
                         np.float32(np.inf)))


def test_index_arithmetic_and_gather():
    """Subscripts that are not plain indices are gathers; out-of-range
    indices in branches masked by If must not fail."""
    a = _rand((5,))
    x = pt.make_placeholder("x", (5,), np.float64)
    xi = V("_in0")
    # reverse and shifted neighbour sums, with padding
    rev = _lam(xi[4 - V("_0")], (5,), np.float64, {"_in0": x})
    shifted = _lam(prim.If(prim.Comparison(V("_0"), "<", 5),
                           xi[V("_0")] + xi[V("_0") + 1], np.float64(0)),
                   (6,), np.float64, {"_in0": x})
    res = pt.generate_numpy({"rev": rev, "shifted": shifted})(x=a)
    _check(res["rev"], a[::-1])
    ref = np.zeros(6)
    ref[:4] = a[:4] + a[1:]
    ref[4] = a[4] + a[4]  # clipped (index 5 is outside x)
    _check(res["shifted"][:4], ref[:4])
    assert res["shifted"][5] == 0


def test_index_values_and_constant_lambda():
    idx = _lam(V("_0") * 10 + V("_1"), (3, 4), np.int64, {})
    const = _lam(np.float32(2.5), (2, 3), np.float32, {})
    res = pt.generate_numpy({"idx": idx, "const": const})()
    _check(res["idx"], np.arange(3)[:, None] * 10 + np.arange(4))
    _check(res["const"], np.full((2, 3), 2.5, np.float32))


def test_transposed_and_broadcast_bindings():
    a, b = _rand((4, 3)), _rand((1, 3))
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    expr = V("_in0")[V("_1"), V("_0")] * V("_in1")[0, V("_0")]
    prog = pt.generate_numpy(_lam(expr, (3, 4), np.float64,
                                  {"_in0": x, "_in1": y}))
    _check(prog(x=a, y=b), a.T * b[0][:, None])
    assert "transpose" in str(prog)


_REDUCTIONS = [
    (SumReductionOperation(), np.sum), (ProductReductionOperation(), np.prod),
    (MaxReductionOperation(), np.max), (MinReductionOperation(), np.min),
    (AllReductionOperation(), np.all), (AnyReductionOperation(), np.any)]


@pytest.mark.parametrize(("op", "ref"), _REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_reduce_direct(op, ref, dtype):
    a = _rand((3, 4, 5), dtype)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    expr = Reduce(V("_in0")[V("_r0"), V("_0"), V("_r1")], op,
                  {"_r0": (0, 3), "_r1": (0, 5)})
    out_dtype = ref(a, axis=(0, 2)).dtype
    res = pt.generate_numpy(_lam(expr, (4,), out_dtype, {"_in0": x}))(x=a)
    _check(res, ref(a, axis=(0, 2)))


@pytest.mark.parametrize(("op", "neutral"), [
    (SumReductionOperation(), 0.0), (ProductReductionOperation(), 1.0),
    (MaxReductionOperation(), -np.inf), (MinReductionOperation(), np.inf)])
def test_reduce_over_empty_extent(op, neutral):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 2), np.float64)
    expr = Reduce(V("_in0")[V("_r0"), V("_0")], op, {"_r0": (0, V("_in1"))})
    prog = pt.generate_numpy(_lam(expr, (2,), np.float64,
                                  {"_in0": x, "_in1": n}))
    _check(prog(x=np.zeros((0, 2))), np.full(2, neutral))
    a = _rand((3, 2))
    ref = {SumReductionOperation: np.sum, ProductReductionOperation: np.prod,
           MaxReductionOperation: np.max, MinReductionOperation: np.min}
    _check(prog(x=a), ref[type(op)](a, axis=0))


def test_nested_and_inner_reductions():
    a = _rand((3, 4))
    x = pt.make_placeholder("x", a.shape, a.dtype)
    xi = V("_in0")
    # sum over rows of (x - max of each row), and x[_0, _0:] cumulative-ish
    expr = Reduce(xi[V("_0"), V("_r1")]
                  - Reduce(xi[V("_0"), V("_r0")], MaxReductionOperation(),
                           {"_r0": (0, 4)}),
                  SumReductionOperation(), {"_r1": (0, 4)})
    scaled = 2 * Reduce(xi[V("_r0"), V("_0")], SumReductionOperation(),
                        {"_r0": (1, 3)})
    prog = pt.generate_numpy({
        "a": _lam(expr, (3,), np.float64, {"_in0": x}),
        "b": _lam(scaled, (4,), np.float64, {"_in0": x})})
    res = prog(x=a)
    _check(res["a"], (a - a.max(axis=1, keepdims=True)).sum(axis=1))
    _check(res["b"], 2 * a[1:3].sum(axis=0))

# }}}


# {{{ front-end reductions (built by pytato.sum etc.)

@pytest.mark.parametrize("fn", ["sum", "prod", "amax", "amin", "any", "all"])
@pytest.mark.parametrize("axis", [None, 0, (1, 2)])
def test_frontend_reductions(fn, axis):
    pt_fn = getattr(pt, fn, None)
    if pt_fn is None:
        pytest.skip(f"pt.{fn} is not available")
    a = _rand((2, 3, 4), np.int32)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    res = pt.generate_numpy(pt_fn(x, axis=axis))(x=a)
    _check(res, getattr(np, fn)(a, axis=axis))

# }}}


# {{{ einsum

def _einsum(descrs, args):
    redn = {EinsumReductionAxis(i): ReductionDescriptor()
            for i in sorted({d.dim for acc in descrs for d in acc
                             if isinstance(d, EinsumReductionAxis)})}
    return Einsum(tuple(tuple(acc) for acc in descrs), tuple(args), redn)


E, R = EinsumElementwiseAxis, EinsumReductionAxis


@pytest.mark.parametrize(("spec", "descrs", "shapes"), [
    ("ij,jk->ik", [(E(0), R(0)), (R(0), E(1))], [(3, 4), (4, 5)]),
    ("ii->", [(R(0), R(0))], [(4, 4)]),
    ("ii->i", [(E(0), E(0))], [(4, 4)]),
    ("i,j->ij", [(E(0),), (E(1),)], [(3,), (2,)]),
    ("ijk,ik->j", [(R(0), E(0), R(1)), (R(0), R(1))], [(2, 3, 4), (2, 4)]),
    (",i->i", [(), (E(0),)], [(), (3,)]),
])
def test_einsum_direct(spec, descrs, shapes):
    data = [_rand(s) for s in shapes]
    phs = [pt.make_placeholder(f"a{i}", s, np.float64)
           for i, s in enumerate(shapes)]
    res = pt.generate_numpy(_einsum(descrs, phs))(
        **{f"a{i}": d for i, d in enumerate(data)})
    _check(res, np.einsum(spec, *data))


def test_einsum_broadcast_unit_axis_and_mixed_dtypes():
    a = _rand((1, 4), np.float32)
    b = _rand((3, 4), np.int64)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    # out[i] = sum_j x[0(bcast), j] * y[i, j]
    res = pt.generate_numpy(_einsum([(E(0), R(0)), (E(0), R(0))], [x, y]))(
        x=a, y=b)
    _check(res, np.einsum("ij,ij->i", np.broadcast_to(a, (3, 4)), b))

# }}}


# {{{ index remapping nodes

def test_stack_concatenate_roll_permute_reshape():
    a, b = _rand((2, 3)), _rand((2, 3), np.float32)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    prog = pt.generate_numpy({
        "stack": Stack((x, y, x), 1),
        "concat": Concatenate((x, y), 0),
        "roll": Roll(x, -4, 1),
        "perm": AxisPermutation(x, (1, 0)),
        "reshape_c": Reshape(x, (3, 2), "C"),
        "reshape_f": Reshape(x, (6, 1), "F"),
    })
    res = prog(x=a, y=b)
    _check(res["stack"], np.stack([a, b, a], axis=1))
    _check(res["concat"], np.concatenate([a, b], axis=0))
    _check(res["roll"], np.roll(a, -4, axis=1))
    _check(res["perm"], a.T)
    _check(res["reshape_c"], a.reshape((3, 2)))
    _check(res["reshape_f"], a.reshape((6, 1), order="F"))


@pytest.mark.parametrize("indices", [
    (1, NormalizedSlice(0, 4, 1)),
    (NormalizedSlice(4, -1, -1), 2),
    (NormalizedSlice(3, 0, -2), NormalizedSlice(1, 4, 2)),
    (0, 0),
])
def test_basic_index(indices):
    a = _rand((5, 4))
    x = pt.make_placeholder("x", a.shape, a.dtype)
    res = pt.generate_numpy(BasicIndex(x, indices))(x=a)
    np_idx = tuple(
        slice(i.start, None if i.stop == -1 else i.stop, i.step)
        if isinstance(i, NormalizedSlice) else i for i in indices)
    _check(res, a[np_idx])


def test_advanced_index_contiguous_and_not():
    a = _rand((4, 5, 6))
    i1 = np.array([[0, 3], [2, 1]])
    i2 = np.array([4, 0])
    x = pt.make_placeholder("x", a.shape, a.dtype)
    p1 = pt.make_placeholder("i1", i1.shape, i1.dtype)
    p2 = pt.make_placeholder("i2", i2.shape, i2.dtype)
    full = NormalizedSlice(0, 6, 1)
    contiguous = AdvancedIndexInContiguousAxes(x, (NormalizedSlice(0, 4, 1),
                                                   p2, p2))
    noncontig = AdvancedIndexInNoncontiguousAxes(x, (p1, NormalizedSlice(1, 5, 2),
                                                     p2))
    with_int = AdvancedIndexInNoncontiguousAxes(
        x, (p2 - 1, NormalizedSlice(0, 5, 1), 3))
    prog = pt.generate_numpy({"c": contiguous, "n": noncontig, "i": with_int,
                              "f": AdvancedIndexInContiguousAxes(
                                  x, (p2 - 1, p2, full))})
    res = prog(x=a, i1=i1, i2=i2)
    _check(res["c"], a[:, i2, i2])
    _check(res["n"], a[i1, 1:5:2, i2])
    _check(res["i"], a[i2 - 1, :, 3])
    _check(res["f"], a[i2 - 1, i2, :])


def test_frontend_indexing_and_shape_ops():
    a = _rand((4, 5))
    x = pt.make_placeholder("x", a.shape, a.dtype)
    prog = pt.generate_numpy({
        "basic": x[1:3, ::-2], "neg": x[-1], "adv": x[np.array([3, 0]), 1:],
        "t": x.T, "r": x.reshape(5, 4),
    })
    res = prog(x=a)
    _check(res["basic"], a[1:3, ::-2])
    _check(res["neg"], a[-1])
    _check(res["adv"], a[np.array([3, 0]), 1:])
    _check(res["t"], a.T)
    _check(res["r"], a.reshape(5, 4))

# }}}


# {{{ inputs, outputs, symbolic sizes

def test_data_wrapper_bound_and_named():
    a, b = _rand((3,)), _rand((3,))
    dw = pt.make_data_wrapper(a)
    named = pt.make_data_wrapper(b, name="bee")
    x = pt.make_placeholder("x", (3,), np.float64)
    prog = pt.generate_numpy(dw + named * x)
    assert set(prog.bound_arguments) == {"_pt_data0", "bee"}
    assert prog.bound_arguments["bee"] is b
    _check(prog(x=a), a + b * a)
    with pytest.raises(BoundArgumentError, match="bee"):
        prog(x=a, bee=b)
    with pytest.raises(BoundArgumentError, match="_pt_data0"):
        prog(x=a, _pt_data0=a)


def test_pyopencl_data_wrapper(queue):
    import pyopencl.array as cla
    a = _rand((4,))
    dev = cla.to_device(queue, a)
    prog = pt.generate_numpy(2 * pt.make_data_wrapper(dev))
    _check(prog(), 2 * a)


def test_zero_dim_results_and_scalars():
    x = pt.make_placeholder("x", (), np.float64)
    n = pt.make_size_param("n")
    prog = pt.generate_numpy({"y": x * 2, "x": x, "n": n, "nx": n * x})
    res = prog(x=1.5, n=4)
    for key, val, dt in [("y", 3.0, np.float64), ("x", 1.5, np.float64),
                         ("n", 4, np.int64), ("nx", 6.0, np.float64)]:
        assert isinstance(res[key], np.ndarray) and res[key].shape == ()
        assert res[key].dtype == dt and res[key] == val
    assert prog(x=np.float64(2.0), n=np.int32(1))["nx"] == 2.0


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_arrays(shape):
    a = np.zeros(shape)
    x = pt.make_placeholder("x", shape, np.float64)
    res = pt.generate_numpy({"y": 2 * x + 1, "t": x.T, "s": x.sum()})(x=a)
    _check(res["y"], 2 * a + 1)
    _check(res["t"], a.T)
    _check(res["s"], a.sum())


def test_symbolic_sizes_inferred_and_checked():
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    y = pt.make_placeholder("y", (n + 1, m), np.float64)
    z = pt.make_placeholder("z", (2 * m,), np.float64)
    prog = pt.generate_numpy({"x": 2 * x, "ys": y.sum(axis=0), "z": z,
                              "n": n})
    a, b, c = _rand((4, 3)), _rand((5, 2)), _rand((4,))
    res = prog(x=a, y=b, z=c)
    _check(res["x"], 2 * a)
    _check(res["ys"], b.sum(axis=0))
    _check(res["z"], c)
    assert res["n"] == 4
    # explicit and consistent
    _check(prog(x=a, y=b, z=c, n=4, m=2)["x"], 2 * a)
    with pytest.raises(ArgumentShapeError, match=r"'y'.*\(n \+ 1, m\)"):
        prog(x=a, y=_rand((4, 2)), z=c)
    with pytest.raises(ArgumentShapeError, match="n=5"):
        prog(x=a, y=b, z=c, n=5)
    with pytest.raises(ArgumentShapeError, match="'z'"):
        prog(x=a, y=b, z=_rand((5,)))


def test_size_param_not_inferable():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (3,), np.float64)
    prog = pt.generate_numpy(x * n)
    with pytest.raises(MissingArgumentError, match="'n'"):
        prog(x=_rand((3,)))
    _check(prog(x=np.ones(3), n=3), np.full(3, 3.0))
    with pytest.raises(ArgumentDTypeError, match="'n'"):
        prog(x=np.ones(3), n=2.5)


def test_call_time_errors():
    x = pt.make_placeholder("x", (2, 3), np.float32)
    y = pt.make_placeholder("y", (), np.int32)
    prog = pt.generate_numpy(x * y)
    a = _rand((2, 3), np.float32)
    with pytest.raises(UnknownArgumentError, match="'w'"):
        prog(x=a, y=1, w=3)
    with pytest.raises(MissingArgumentError, match="'y'"):
        prog(x=a)
    with pytest.raises(ArgumentShapeError, match=r"'x'.*\(2, 3\).*\(3, 2\)"):
        prog(x=_rand((3, 2), np.float32), y=1)
    with pytest.raises(ArgumentShapeError, match="'x'"):
        prog(x=_rand((6,), np.float32), y=1)
    with pytest.raises(ArgumentDTypeError, match=r"'x'.*float32.*float64"):
        prog(x=a.astype(np.float64), y=1)
    with pytest.raises(ArgumentDTypeError, match="'y'"):
        prog(x=a, y=np.int64(1))
    with pytest.raises(ArgumentDTypeError, match="'y'"):
        prog(x=a, y=1.5)
    with pytest.raises(ArgumentDTypeError, match="'x'"):
        prog(x=[[1.0] * 3] * 2, y=1)
    _check(prog(x=a, y=np.int32(2)), a * np.array(2, np.int32))


def test_result_dtype_exact():
    a = _rand((3, 4), np.int8)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    s = _lam(Reduce(V("_in0")[V("_0"), V("_r0")], SumReductionOperation(),
                    {"_r0": (0, 4)}), (3,), np.int8, {"_in0": x})
    res = pt.generate_numpy(s)(x=a)
    assert res.dtype == np.int8
    np.testing.assert_array_equal(res, a.sum(axis=1, dtype=np.int8))


def test_outputs_do_not_alias_inputs():
    a = _rand((3,))
    x = pt.make_placeholder("x", (3,), np.float64)
    res = pt.generate_numpy({"x": x, "y": x})(x=a)
    assert res["x"] is not a and not np.shares_memory(res["x"], a)
    assert not np.shares_memory(res["x"], res["y"])

# }}}


# {{{ generated code

def test_show_code_shared_nodes_and_names(capsys):
    x = pt.make_placeholder("x", (3,), np.float64)
    shared = (x * 2).tagged(pt.tags.Named("twice"))
    prefixed = (shared + 1).tagged(pt.tags.PrefixNamed("plus"))
    prog = pt.generate_numpy({"a": shared + prefixed, "b": shared * 3},
                             function_name="kern", show_code=True)
    out = capsys.readouterr().out
    src = str(prog)
    assert out.strip() == src.strip()
    assert "def kern(x):" in src and prog.entrypoint == "kern"
    assert src.count("twice = ") == 1
    assert "plus0 = " in src
    assert "for " not in src  # vectorized: no element loops
    prog.show_code()
    assert capsys.readouterr().out.strip() == src.strip()
    _check(prog(x=np.arange(3.0))["a"], 4 * np.arange(3.0) + 1)


def test_deterministic_code():
    def build():
        x = pt.make_placeholder("x", (3, 3), np.float64)
        return pt.generate_numpy({"a": x @ x + x.T if hasattr(pt, "matmul")
                                  else x + x.T, "b": x.sum()}).program
    assert build() == build()


def test_copy_and_transformed_program():
    x = pt.make_placeholder("x", (3,), np.float64)
    prog = pt.generate_numpy(x + 1)
    assert isinstance(prog, BoundPythonProgram)
    assert isinstance(prog.target, NumpyTarget)
    assert prog.expected_arguments == frozenset({"x"})
    prog2 = prog.with_transformed_program(
        lambda src: src.replace("float64(1.0)", "float64(2.0)"))
    _check(prog2(x=np.zeros(3)), np.full(3, 2.0))
    prog3 = prog.copy(entrypoint=prog.entrypoint)
    _check(prog3(x=np.zeros(3)), np.ones(3))


def test_deep_graph():
    x = pt.make_placeholder("x", (2,), np.float64)
    y = x
    for _ in range(3000):
        y = y + 1
    _check(pt.generate_numpy(y)(x=np.zeros(2)), np.full(2, 3000.0))


def test_result_kinds():
    x = pt.make_placeholder("x", (2,), np.float64)
    a = np.ones(2)
    assert isinstance(pt.generate_numpy(x)(x=a), np.ndarray)
    d = pt.generate_numpy(pt.make_dict_of_named_arrays({"u": x, "v": 2 * x}))
    assert set(d(x=a)) == {"u", "v"}
    assert pt.generate_numpy({})() == {}
    with pytest.raises(TypeError):
        pt.generate_numpy([x])

# }}}


# {{{ graphs lowered to IndexLambdas (gathers, selects, symbolic bounds)

def _lowering_cases():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    a = _rand((5, 3))
    return x, a, [
        (lambda: pt.pad(x, ((1, 2), (0, 1))), lambda: np.pad(a, ((1, 2), (0, 1)))),
        (lambda: pt.concatenate([x, x[1:]]), lambda: np.concatenate([a, a[1:]])),
        (lambda: pt.stack([x, 2 * x], axis=2), lambda: np.stack([a, 2 * a], 2)),
        (lambda: pt.roll(x, 2, axis=0), lambda: np.roll(a, 2, axis=0)),
        (lambda: x[::-1, np.array([2, 0])], lambda: a[::-1, [2, 0]]),
        (lambda: x.reshape(-1), lambda: a.reshape(-1)),
        (lambda: x.T @ x, lambda: a.T @ a),
        (lambda: pt.sum(x, axis=0) + pt.amax(x), lambda: a.sum(0) + a.max()),
    ]


@pytest.mark.parametrize("icase", range(8))
def test_lowered_to_index_lambdas(icase):
    lower = pytest.importorskip(
        "pytato.transform.lower_to_index_lambda").lower_to_index_lambdas
    _, a, cases = _lowering_cases()
    build, ref = cases[icase]
    expr = build()
    expected = ref()
    for graph in [expr, lower(expr)]:
        _check(pt.generate_numpy(graph)(x=a), expected)


def test_named_clash():
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(pt.diagnostic.NameClashError, match="'x'"):
        pt.generate_numpy((2 * x).tagged(pt.tags.Named("x")))


def test_data_wrapper_with_symbolic_shape():
    n = pt.make_size_param("n")
    data = _rand((4,))
    dw = pt.make_data_wrapper(data, shape=(n,))
    x = pt.make_placeholder("x", (n,), np.float64)
    prog = pt.generate_numpy(dw * x)
    _check(prog(x=np.ones(4)), data)
    with pytest.raises(ArgumentShapeError, match="'x'"):
        prog(x=np.ones(3))

# }}}


def test_empty_symbolic_extremum_raises_as_numpy():
    # (issue 41, item 8, for the NumPy target: the result was -inf)
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (m, n), np.float64)
    cases = [(pt.amax(x), np.max), (pt.amin(x, axis=1),
                                    lambda a: np.min(a, axis=1)),
             (pt.amin(x, axis=1, initial=3.0),
              lambda a: np.min(a, axis=1, initial=3.0))]
    for expr, ref in cases:
        prog = pt.generate_numpy(expr)
        for a in [np.zeros((0, 2)), np.zeros((2, 0)),
                  np.arange(6.0).reshape(2, 3)]:
            try:
                expected = ref(a)
            except ValueError as e:
                with pytest.raises(ValueError, match="zero-size array"):
                    prog(x=a)
                assert "no identity" in str(e)
                continue
            np.testing.assert_array_equal(prog(x=a), expected)
