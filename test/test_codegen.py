"""Tests of code generation to loopy and execution on OpenCL
(:func:`pytato.generate_loopy`).

Compiling a kernel costs a good fraction of a second on PoCL, so most tests
put many graphs into one dict result (one kernel) and check every output
against numpy (and the numpy target).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
import pytest
from pytools.tag import Tag, UniqueTag

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
    CannotBeLoweredToLoopyError,
    MissingArgumentError,
    NameClashError,
    UnknownArgumentError,
)
from pytato.scalar_expr import (
    MaxReductionOperation,
    Reduce,
    SumReductionOperation,
    TypeCast,
)
from pytato.tags import ImplInlined, ImplStored, Named, PrefixNamed
from pytato.target.loopy import (
    BoundPyOpenCLExecutable,
    BoundPyOpenCLProgram,
    ImplSubstitution,
    LoopyPyOpenCLTarget,
)


V = prim.Variable
rng = np.random.default_rng(seed=42)


def _rand(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, 9, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape)
                + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def _check(actual: Any, expected: Any) -> None:
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), type(actual)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        rtol = 1e-5 if expected.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * 1e-2)


def _kernel(prog: BoundPyOpenCLProgram) -> Any:
    return prog.program.default_entrypoint


def _lam(expr: Any, shape: tuple[Any, ...], dtype: Any,
         bindings: dict[str, pt.Array], **kwargs: Any) -> IndexLambda:
    return IndexLambda(shape, np.dtype(dtype), expr, bindings, **kwargs)


# {{{ every node type, built with constructors, in one kernel

def _node_cases() -> tuple[dict[str, pt.Array], dict[str, np.ndarray],
                           dict[str, np.ndarray]]:
    a, b, c = _rand((3, 4)), _rand((4, 5)), _rand((3, 4))
    v, i1 = _rand((4,), np.float32), np.array([2, -1, 0, 1])
    idx2 = np.array([[0, 2], [1, -3]])
    x = pt.make_placeholder("a", a.shape, a.dtype)
    y = pt.make_placeholder("b", b.shape, b.dtype)
    z = pt.make_placeholder("c", c.shape, c.dtype)
    w = pt.make_placeholder("v", v.shape, v.dtype)
    ind = pt.make_placeholder("i1", i1.shape, i1.dtype)
    ind2 = pt.make_placeholder("idx2", idx2.shape, idx2.dtype)
    dw_data = _rand((4,))
    dw = pt.make_data_wrapper(dw_data)
    el, rd = EinsumElementwiseAxis, EinsumReductionAxis
    xi = V("_in0")

    graphs: dict[str, tuple[pt.Array, np.ndarray]] = {
        "matmul": (Einsum(((el(0), rd(0)), (rd(0), el(1))), (x, y), {}), a @ b),
        "einsum_mixed": (Einsum(((el(0),), (el(0),)), (w, dw), {}),
                         v.astype(np.float64) * dw_data),
        "einsum_trace": (Einsum(((rd(0), rd(1)),), (x,), {}), a.sum()),
        "einsum_bcast": (Einsum(((el(0), el(1)), (el(0), el(1))),
                                (x, pt.make_data_wrapper(np.ones((1, 4)))), {}),
                         a),
        "stack": (Stack((x, z, x), 1), np.stack([a, c, a], 1)),
        "concat": (Concatenate((x, z, x[:1]), 0),
                   np.concatenate([a, c, a[:1]], 0)),
        "concat_empty": (Concatenate((x[:0], z), 0), c),
        "roll": (Roll(x, 3, 1), np.roll(a, 3, 1)),
        "roll_neg": (Roll(x, -5, 0), np.roll(a, -5, 0)),
        "permute": (AxisPermutation(x, (1, 0)), a.T),
        "reshape_c": (Reshape(x, (2, 6), "C"), a.reshape(2, 6)),
        "reshape_f": (Reshape(x, (6, 2), "F"), a.reshape(6, 2, order="F")),
        "reshape_units": (Reshape(x, (1, 3, 1, 4), "C"), a.reshape(1, 3, 1, 4)),
        "reshape_flat": (Reshape(x, (12,), "C"), a.ravel()),
        "basic_index": (BasicIndex(x, (1, NormalizedSlice(3, -1, -2))),
                        a[1, 3::-2]),
        "basic_slice": (BasicIndex(x, (NormalizedSlice(0, 3, 2),
                                       NormalizedSlice(1, 4, 1))),
                        a[0:3:2, 1:4]),
        "adv_contig": (AdvancedIndexInContiguousAxes(
            x, (NormalizedSlice(0, 3, 1), ind)), a[:, i1]),
        "adv_2d": (AdvancedIndexInContiguousAxes(
            x, (ind2, NormalizedSlice(0, 4, 1))), a[idx2, :]),
        "adv_noncontig": (AdvancedIndexInNoncontiguousAxes(
            pt.make_data_wrapper(np.arange(36.).reshape(3, 3, 4)),
            (ind, NormalizedSlice(0, 3, 1), ind)),
            np.arange(36.).reshape(3, 3, 4)[i1, :, i1]),
        "gather": (_lam(xi[V("_0"), 3 - V("_1")], (3, 4), np.float64,
                        {"_in0": x}), a[:, ::-1]),
        "if_cast": (_lam(prim.If(prim.Comparison(xi[V("_0"), V("_1")], ">", 0),
                                 TypeCast(np.dtype(np.float32),
                                          xi[V("_0"), V("_1")]),
                                 np.float32(-1)),
                         (3, 4), np.float32, {"_in0": x}),
                    np.where(a > 0, a.astype(np.float32), np.float32(-1))),
        "index_values": (_lam(V("_0") * 10 + V("_1"), (3, 4), np.int64, {}),
                         np.arange(3)[:, None] * 10 + np.arange(4)),
        "reduce_max": (_lam(Reduce(xi[V("_r0"), V("_0")], MaxReductionOperation(),
                                   {"_r0": (0, 3)}),
                            (4,), np.float64, {"_in0": x}), a.max(0)),
        "nested_reduce": (_lam(Reduce(
            xi[V("_r0"), V("_0")] * Reduce(xi[V("_r1"), V("_r0") + 1],
                                           SumReductionOperation(),
                                           {"_r1": (0, 3)}),
            SumReductionOperation(), {"_r0": (0, 3)}),
            (4,), np.float64, {"_in0": x}),
            (a[:, :] * a.sum(0)[1:4][:, None]).sum(0)),
        "placeholder_copy": (z, c),
        "data_copy": (dw, dw_data),
    }
    outputs = {k: g for k, (g, _) in graphs.items()}
    refs = {k: r for k, (_, r) in graphs.items()}
    return outputs, refs, {"a": a, "b": b, "c": c, "v": v, "i1": i1,
                           "idx2": idx2}


def test_every_node_type(queue):
    outputs, refs, args = _node_cases()
    prog = pt.generate_loopy(outputs)
    _, res = prog(queue, **args)
    np_res = pt.generate_numpy(outputs)(**args)
    assert set(res) == set(refs)
    for name, ref in refs.items():
        _check(res[name], ref)
        _check(res[name], np_res[name])

# }}}


# {{{ front-end cases and random graphs (shared with the numpy target tests)

sys.path.insert(0, os.path.dirname(__file__))
import frontend_cases as fc  # noqa: E402
from random_graphs import make_random_dag, make_random_graph  # noqa: E402


def _frontend_batches(size: int = 70) -> list[tuple[str, list[Any]]]:
    batches = []
    for list_name in ("MATH_CASES", "REDUCTION_CASES", "CREATION_CASES",
                      "MISC_CASES"):
        cases = getattr(fc, list_name)
        for k in range(0, len(cases), size):
            batches.append((f"{list_name}[{k}:{k + size}]", cases[k:k + size]))
    return batches


def _prefixed_inputs(case: Any, prefix: str) -> dict[str, pt.Array]:
    sizes = {n: pt.make_size_param(prefix + n) for n, v in case.args.items()
             if isinstance(v, int)}
    inputs: dict[str, pt.Array] = dict(sizes)
    for n, v in case.args.items():
        if not isinstance(v, int):
            shape = tuple(sizes[c] if isinstance(c, str) else c
                          for c in case.shapes.get(n, v.shape))
            inputs[n] = pt.make_placeholder(prefix + n, shape, v.dtype)
    return inputs


@pytest.mark.parametrize("batch", _frontend_batches(), ids=lambda b: b[0])
def test_frontend_cases(queue, batch):
    """All front-end cases of a list in one kernel (inputs renamed per
    case), checked against numpy."""
    _, cases = batch
    outputs, args = {}, {}
    for i, case in enumerate(cases):
        prefix = f"c{i}_"
        outputs[f"out{i}"] = case.build(**_prefixed_inputs(case, prefix))
        args.update({prefix + k: v for k, v in case.args.items()})
    prog = pt.generate_loopy(outputs)
    with np.errstate(all="ignore"):
        _, res = prog(queue, **args)
    for i, case in enumerate(cases):
        value, exp = res[f"out{i}"], fc.expected(case)
        assert value.shape == exp.shape and value.dtype == exp.dtype, case.id
        if exp.dtype.kind in "biu":
            np.testing.assert_array_equal(value, exp, err_msg=case.id)
        else:
            tol = fc._rtol(exp.dtype)
            np.testing.assert_allclose(value, exp, rtol=tol, atol=tol * 1e-3,
                                       equal_nan=True, err_msg=case.id)


def test_frontend_indexing_and_einsum(queue):
    """The indexing and einsum cases of the front-end tests, in one kernel."""
    import test_frontend_indexing as fi
    import test_frontend_linalg as fl

    outputs, refs, args = {}, {}, {}
    lazy_i = np.array([[0, 2, 1]], dtype=np.int32)
    lazy_j = np.array([[3], [0]], dtype=np.uint8)
    i = pt.make_placeholder("i", lazy_i.shape, lazy_i.dtype)
    j = pt.make_placeholder("j", lazy_j.shape, lazy_j.dtype)
    args.update(i=lazy_i, j=lazy_j)
    for dt in fi.DTYPES:
        xname = f"x_{np.dtype(dt).name}"
        x_in = fi._data(fi.SHAPE, dt)
        x = pt.make_placeholder(xname, fi.SHAPE, dt)
        args[xname] = x_in
        for k, idx in enumerate(fi.BASIC + fi.ADVANCED):
            outputs[f"{xname}_{k}"] = x[idx]
            refs[f"{xname}_{k}"] = x_in[idx]
        outputs[f"{xname}_lazy"] = x[i, :, j]
        refs[f"{xname}_lazy"] = x_in[lazy_i, :, lazy_j]
        outputs[f"{xname}_lazy2"] = x[:, i[0, 1], j]
        refs[f"{xname}_lazy2"] = x_in[:, lazy_i[0, 1], lazy_j]
    for k, (subscripts, shapes) in enumerate(fl.EINSUM_CASES):
        operands = []
        for m, shape in enumerate(shapes):
            name = f"e{k}_{m}"
            args[name] = fi._data(shape, np.float64, seed=m)
            operands.append(pt.make_placeholder(name, shape, np.float64))
        outputs[f"einsum{k}"] = pt.einsum(subscripts, *operands)
        refs[f"einsum{k}"] = np.einsum(
            subscripts, *(args[f"e{k}_{m}"] for m in range(len(shapes))))
    prog = pt.generate_loopy(outputs)
    _, res = prog(queue, **args)
    for name, ref in refs.items():
        _check(res[name], ref)


@pytest.mark.parametrize("seed", range(6))
def test_random_graphs(queue, seed):
    g = make_random_graph(seed)
    prog = pt.generate_loopy(g.outputs)
    _, res = prog(queue, **g.inputs_for(g.outputs))
    for name, ref in g.expected.items():
        np.testing.assert_allclose(res[name], ref, rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name}: {g.ops}")

# }}}


# {{{ dtypes, 0-d, empty, symbolic sizes

_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32,
           np.float64, np.complex64, np.complex128]


def test_dtypes(queue):
    outputs, refs, args = {}, {}, {}
    for dt in _DTYPES:
        name = np.dtype(dt).name
        a, b = _rand((5,), dt), _rand((5,), dt)
        x = pt.make_placeholder(f"x_{name}", (5,), dt)
        y = pt.make_placeholder(f"y_{name}", (5,), dt)
        args.update({f"x_{name}": a, f"y_{name}": b})
        outputs[f"mul_{name}"] = x * y
        refs[f"mul_{name}"] = a * b
        outputs[f"eq_{name}"] = pt.equal(x, y)
        refs[f"eq_{name}"] = a == b
        outputs[f"sum_{name}"] = pt.sum(x)
        refs[f"sum_{name}"] = np.sum(a)
        outputs[f"where_{name}"] = pt.where(pt.not_equal(x, y), x, y + y)
        refs[f"where_{name}"] = np.where(a != b, a, b + b)
        if np.dtype(dt).kind != "c":
            outputs[f"max_{name}"] = pt.amax(x)
            refs[f"max_{name}"] = np.max(a)
            outputs[f"maximum_{name}"] = pt.maximum(x, y)
            refs[f"maximum_{name}"] = np.maximum(a, b)
        if np.dtype(dt).kind in "iu":
            outputs[f"floordiv_{name}"] = x // (y + 1)
            refs[f"floordiv_{name}"] = a // (b + 1)
            outputs[f"mod_{name}"] = (x - 4) % (y + 1)
            refs[f"mod_{name}"] = (a - 4) % (b + 1)
        if np.dtype(dt).kind == "f":
            outputs[f"floordiv_{name}"] = x // y
            refs[f"floordiv_{name}"] = a // b
            outputs[f"mod_{name}"] = x % y
            refs[f"mod_{name}"] = a % b
        if np.dtype(dt).kind == "c":
            outputs[f"abs_{name}"] = abs(x)
            refs[f"abs_{name}"] = abs(a)
            outputs[f"real_{name}"] = x.real * 2
            refs[f"real_{name}"] = a.real * 2
    prog = pt.generate_loopy(outputs)
    with np.errstate(all="ignore"):
        _, res = prog(queue, **args)
    for name, ref in refs.items():
        _check(res[name], ref)


def test_nan_propagation(queue):
    a = np.array([1.0, np.nan, 3.0])
    x = pt.make_placeholder("x", (3,), np.float64)
    prog = pt.generate_loopy({"max": pt.amax(x), "min": pt.amin(x),
                              "maximum": pt.maximum(x, 2.0)})
    _, res = prog(queue, x=a)
    assert np.isnan(res["max"]) and np.isnan(res["min"])
    _check(res["maximum"], np.maximum(a, 2.0))


def test_zero_dim_and_empty(queue):
    s = pt.make_placeholder("s", (), np.float64)
    n = pt.make_size_param("n")
    e = pt.make_placeholder("e", (0, 3), np.float32)
    x = pt.make_placeholder("x", (n,), np.float64)
    outputs = {
        "s2": s * 2, "s_copy": s, "n_out": n, "nx": n * s,
        "e2": e + 1, "e_sum": pt.sum(e, axis=0), "e_prod": pt.prod(e),
        "e_t": e.T, "x_sum": pt.sum(x), "x_twice": 2 * x,
    }
    prog = pt.generate_loopy(outputs)
    ev = np.zeros((0, 3), np.float32)
    for nval in (4, 0):
        xv = _rand((nval,))
        _, res = prog(queue, s=1.5, e=ev, x=xv)
        _check(res["s2"], 3.0)
        _check(res["s_copy"], 1.5)
        _check(res["n_out"], np.int64(nval))
        _check(res["nx"], nval * 1.5)
        _check(res["e2"], ev + 1)
        _check(res["e_sum"], ev.sum(0))
        _check(res["e_prod"], ev.prod())
        _check(res["e_t"], ev.T)
        _check(res["x_sum"], xv.sum())
        _check(res["x_twice"], 2 * xv)


def test_symbolic_sizes(queue):
    n, m = pt.make_size_param("n"), pt.make_size_param("m")
    a = pt.make_placeholder("a", (n, 4), np.float64)
    b = pt.make_placeholder("b", (m, 4), np.float64)
    c = pt.make_placeholder("c", (n + 1,), np.float64)
    outputs = {
        "concat": pt.concatenate([a, b, a], axis=0),
        "col_sum": pt.sum(a, axis=0),
        "matvec": a @ pt.sum(b, axis=0),
        "flat": pt.reshape(a, (4 * n,)),
        "roll": pt.roll(a, 1, axis=0),
        "shifted": c[1:] - c[:-1],
        "stack": pt.stack([a, 2 * a]),
        "rev": a[::-1, 1],
        "einsum": pt.einsum("ij,kj->ik", a, b),
    }
    prog = pt.generate_loopy(outputs)
    kernel = _kernel(prog)
    assert {"n", "m"} <= set(kernel.arg_dict)
    for nval, mval in [(3, 2), (5, 0), (0, 1)]:
        av, bv, cv = _rand((nval, 4)), _rand((mval, 4)), _rand((nval + 1,))
        _, res = prog(queue, a=av, b=bv, c=cv)
        refs = {
            "concat": np.concatenate([av, bv, av]), "col_sum": av.sum(0),
            "matvec": av @ bv.sum(0), "flat": av.reshape(-1),
            "roll": np.roll(av, 1, axis=0), "shifted": cv[1:] - cv[:-1],
            "stack": np.stack([av, 2 * av]), "rev": av[::-1, 1],
            "einsum": np.einsum("ij,kj->ik", av, bv),
        }
        for name, ref in refs.items():
            _check(res[name], ref)
    # passing the size explicitly, consistently, is fine
    _, res = prog(queue, a=_rand((2, 4)), b=_rand((1, 4)), c=_rand((3,)), n=2)
    assert res["col_sum"].shape == (4,)



def test_data_wrapper_with_symbolic_shape(queue):
    n = pt.make_size_param("n")
    d = pt.make_data_wrapper(np.arange(4.0), shape=(n,))
    x = pt.make_placeholder("x", (n,), np.float64)
    prog = pt.generate_loopy(x * d)
    _, (res,) = prog(queue, x=np.ones(4))
    _check(res, np.arange(4.0))
    with pytest.raises(ArgumentShapeError, match=r"n=4 .*_pt_data_0"):
        prog(queue, x=np.ones(5))

# }}}


# {{{ storage decisions, names, substitution rules

def test_shared_subexpressions_computed_once(queue):
    a = _rand((6,))
    x = pt.make_placeholder("x", (6,), np.float64)
    t = pt.sin(x) * 3
    prog = pt.generate_loopy({"u": t + 1, "w": t * t, "r": pt.sum(t)},
                             default_schedule=False)  # counts instructions
    knl = _kernel(prog)
    # t is computed once into a register, read there by u and w, and
    # copied once to global memory for the reduction
    glob = [n for n, v in knl.temporary_variables.items()
            if v.address_space == lp.AddressSpace.GLOBAL]
    assert len(glob) == 1
    (tmp,) = glob
    writers = [i for i in knl.instructions if tmp in i.assignee_var_names()]
    assert len(writers) == 1
    assert str(prog).count("sin(") == 1
    _, res = prog(queue, x=a)
    tv = np.sin(a) * 3
    _check(res["u"], tv + 1)
    _check(res["w"], tv * tv)
    _check(res["r"], tv.sum())

    # forced inlining recomputes; the same array under two names is copied
    ti = t.tagged(ImplInlined())
    prog = pt.generate_loopy({"u": ti + 1, "w": ti * 2, "u2": ti + 1})
    assert not [n for n, v in _kernel(prog).temporary_variables.items()
                if v.address_space == lp.AddressSpace.GLOBAL]
    assert str(prog).count("sin(") == 2
    _, res = prog(queue, x=a)
    _check(res["u2"], res["u"])
    _check(res["w"], tv * 2)


def test_broadcast_reductions_are_stored(queue):
    """Reductions read broadcast are stored (not recomputed per element);
    reductions read element by element are inlined."""
    a, b, v = _rand((5, 5)), _rand((5, 5)), _rand((5,))
    x = pt.make_placeholder("a", (5, 5), np.float64)
    y = pt.make_placeholder("b", (5, 5), np.float64)
    w = pt.make_placeholder("v", (5,), np.float64)
    cases = {
        "centered": (w - pt.sum(w), v - v.sum(), 1),
        "matvec2": (x @ (y @ w), a @ (b @ v), 1),
        "bcast": ((pt.sum(x, axis=1) * 2)[:, None] + x,
                  (a.sum(1) * 2)[:, None] + a, 1),
        "sumsum": (pt.sum(pt.sum(x, axis=1)), a.sum(), 0),
        "scaled": (pt.sum(x, axis=1) * 2, a.sum(1) * 2, 0),
    }
    for name, (graph, _, ntemps) in cases.items():
        prog = pt.generate_loopy({name: graph})
        # stored arrays (accumulators of sequential reductions are private)
        glob = [n for n, v in _kernel(prog).temporary_variables.items()
                if v.address_space == lp.AddressSpace.GLOBAL]
        assert len(glob) == ntemps, name
    _, res = pt.generate_loopy({k: g for k, (g, _, _) in cases.items()})(
        queue, a=a, b=b, v=v)
    for name, (_, ref, _) in cases.items():
        _check(res[name], ref)


def test_stored_named_and_substitution(queue):
    a = _rand((3, 4))
    x = pt.make_placeholder("x", (3, 4), np.float64)
    stored = (2 * x).tagged(ImplStored())
    named = (x + 1).tagged([ImplStored(), Named("xplus1")])
    prefixed = (x - 1).tagged([ImplStored(), PrefixNamed("xm")])
    subst = (x * x).tagged([ImplSubstitution(), Named("sq")])
    redn_subst = pt.sum(x, axis=1).tagged(ImplSubstitution())
    result = stored + named + prefixed + subst + redn_subst.reshape(3, 1)
    prog = pt.generate_loopy(result)
    knl = _kernel(prog)
    # stored arrays (the schedule adds private index variables)
    temps = {name for name, t in knl.temporary_variables.items()
             if t.address_space == lp.AddressSpace.GLOBAL}
    assert "xplus1" in temps
    assert any(t.startswith("xm_") for t in temps)
    assert len(temps) == 3
    assert "sq" in knl.substitutions and len(knl.substitutions) == 2
    _, (res,) = prog(queue, x=a)
    _check(res, 2 * a + (a + 1) + (a - 1) + a * a + a.sum(1, keepdims=True))


def test_name_clashes():
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(NameClashError, match="'x'"):
        pt.generate_loopy({"x": x + 1})
    with pytest.raises(NameClashError, match="x"):
        pt.generate_loopy((x + 1).tagged([ImplStored(), Named("x")]) * 2)
    with pytest.raises(NameClashError, match="tmp"):
        pt.generate_loopy((x + 1).tagged([ImplStored(), Named("tmp")])
                          + (x * 2).tagged([ImplStored(), Named("tmp")]))
    # a Named tag on an output is ignored
    prog = pt.generate_loopy({"y": (x + 1).named("y"), "z": (x + 2).named("y")})
    assert "y" in _kernel(prog).arg_dict
    # generated names avoid user names
    y = pt.make_placeholder("x_dim0", (3,), np.float64)
    prog = pt.generate_loopy({"x_out": x + y})
    assert "x_dim0" in _kernel(prog).arg_dict


def test_nested_reshapes(queue):
    """Chains of reshapes nest integer divisions in indices: results must
    stay right (loopy's index simplification must not turn floor divisions
    into C's truncating ones) and index expressions must stay small."""
    a = np.arange(24.0).reshape(4, 6)
    x = pt.make_placeholder("x", (4, 6), np.float64)
    y, ref = x, a
    for _ in range(8):
        y = pt.reshape(pt.reshape(y, (6, 4)).T, (4, 6)) + 1
        ref = ref.reshape(6, 4).T.reshape(4, 6) + 1
    prog = pt.generate_loopy(y)
    # not counting the schedule's index variables
    stores = [i for i in _kernel(prog).instructions
              if not i.id.startswith("_pt_index_")]
    assert 1 < len(stores) <= 4
    _, (res,) = prog(queue, x=a)
    _check(res, ref)


def test_deep_graph(queue):
    x = pt.make_placeholder("x", (2,), np.float64)
    y = x
    for _ in range(2000):
        y = y + 1
    prog = pt.generate_loopy(y)
    _, (res,) = prog(queue, x=np.zeros(2))
    _check(res, np.full(2, 2000.0))

# }}}


# {{{ metadata

class AxisFoo(Tag):
    pass


class AxisBar(UniqueTag):
    pass


class ArrayFoo(Tag):
    pass


class ReductionFoo(Tag):
    pass


def _iname_tags(knl: Any) -> dict[str, frozenset[Tag]]:
    return {name: iname.tags for name, iname in knl.inames.items()}


def test_tag_propagation():
    x = pt.make_placeholder("x", (3, 4), np.float64, tags=ArrayFoo()) \
        .with_tagged_axis(0, AxisBar())
    t = (2 * x).tagged([ImplStored(), ArrayFoo(), Named("tmp")]) \
        .with_tagged_axis(1, AxisFoo())
    s = pt.sum(t, axis=1, axis_to_reduction_descr={
        1: ReductionDescriptor(frozenset({ReductionFoo()}))})
    y = (s + 1).with_tagged_axis(0, [AxisFoo(), AxisBar()]).tagged(ArrayFoo())

    prog = pt.generate_loopy({"y": y, "t2": t * 2})
    knl = _kernel(prog)
    tags = _iname_tags(knl)
    assert knl.arg_dict["x"].tags == frozenset({ArrayFoo()})
    assert knl.arg_dict["y"].tags == frozenset({ArrayFoo()})
    # ImplStored and Named are not propagated by default
    assert knl.temporary_variables["tmp"].tags == frozenset({ArrayFoo()})
    assert tags["tmp_dim1"] == frozenset({AxisFoo()})
    assert tags["tmp_dim0"] == frozenset()
    assert tags["y_dim0"] == frozenset({AxisFoo(), AxisBar()})
    redn = [n for n, tg in tags.items() if ReductionFoo() in tg]
    assert len(redn) == 1 and redn[0].startswith("_pt_sum_r")

    prog = pt.generate_loopy({"y": y, "t2": t * 2},
                             array_tag_t_to_not_propagate=frozenset({ArrayFoo}),
                             axis_tag_t_to_not_propagate=frozenset({AxisBar}))
    knl = _kernel(prog)
    tags = _iname_tags(knl)
    assert knl.arg_dict["x"].tags == frozenset()
    assert knl.temporary_variables["tmp"].tags == frozenset(
        {ImplStored(), Named("tmp")})
    assert tags["y_dim0"] == frozenset({AxisFoo()})


def test_transform_by_tag(queue):
    """A loopy transformation finds inames by the axis tags."""
    import loopy as lp
    a = _rand((10,))
    x = pt.make_placeholder("x", (10,), np.float64)
    prog = pt.generate_loopy((x * 3).with_tagged_axis(0, AxisFoo()))

    def split(t_unit: Any) -> Any:
        (iname,) = [n for n, tg in _iname_tags(t_unit.default_entrypoint).items()
                    if AxisFoo() in tg]
        return lp.split_iname(t_unit, iname, 4)

    prog2 = prog.with_transformed_program(split)
    assert isinstance(prog2, BoundPyOpenCLProgram)
    assert len(_kernel(prog2).inames) == 2
    _, (res,) = prog2(queue, x=a)
    _check(res, 3 * a)

# }}}


# {{{ programs: inputs, outputs, executables

def test_program_api(queue):
    import loopy as lp
    import pyopencl.array as cla

    a = _rand((5,))
    dw_data = _rand((5,))
    x = pt.make_placeholder("x", (5,), np.float64)
    dw = pt.make_data_wrapper(dw_data, name="w")
    prog = pt.generate_loopy(x * dw)
    assert isinstance(prog.target, LoopyPyOpenCLTarget)
    assert set(prog.bound_arguments) == {"w"}
    assert prog.bound_arguments["w"] is dw_data
    assert "__kernel" in str(prog) and "_pt_kernel" in str(prog)

    _, (res,) = prog(queue, x=a)
    _check(res, a * dw_data)
    _, (res,) = prog(queue, x=cla.to_device(queue, a))
    assert isinstance(res, cla.Array)
    _check(res.get(), a * dw_data)
    _, (res,) = prog(queue, x=a, out_host=False)
    assert isinstance(res, cla.Array)
    _, (res,) = prog(queue, x=a, unrelated=np.zeros(3))  # ignored

    prog2 = prog.copy(bound_arguments={"w": 2 * dw_data})
    _, (res,) = prog2(queue, x=a)
    _check(res, 2 * a * dw_data)

    # pyopencl data in the graph; no array passed: outputs stay on device
    dev = cla.to_device(queue, dw_data)
    prog3 = pt.generate_loopy({"y": 2 * pt.make_data_wrapper(dev)})
    _, res = prog3(queue)
    assert isinstance(res["y"], cla.Array)
    _check(res["y"].get(), 2 * dw_data)

    # an executable bound to a context, with no_numpy
    prog4 = pt.generate_loopy({"y": x * dw + 1},
                              options=lp.Options(no_numpy=True, return_dict=True),
                              default_schedule=False)  # transformed below
    exe = prog4.bind_to_context(queue.context)
    assert isinstance(exe, BoundPyOpenCLExecutable)
    for _ in range(2):
        _, res = exe(queue, x=cla.to_device(queue, a))
        _check(res["y"].get(), a * dw_data + 1)
    with pytest.raises(BoundArgumentError):
        exe(queue, x=cla.to_device(queue, a), w=dev)
    exe2 = exe.with_transformed_translation_unit(
        lambda t: lp.split_iname(t, "y_dim0", 2))
    _, res = exe2(queue, x=cla.to_device(queue, a))
    _check(res["y"].get(), a * dw_data + 1)
    # numpy in, numpy out, also with no_numpy
    _, res = prog4(queue, x=a)
    _check(res["y"], a * dw_data + 1)


def test_options_and_unsupported():
    import loopy as lp
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(ValueError, match="return_dict"):
        pt.generate_loopy({"y": x}, options=lp.Options())
    prog = pt.generate_loopy(x + 1, options=lp.Options(return_dict=True),
                             function_name="my_knl")
    assert _kernel(prog).name == "my_knl"
    assert prog.program.default_entrypoint.options.return_dict

    recv = pt.make_distributed_recv(0, "tag", (3,), np.float64)
    with pytest.raises(CannotBeLoweredToLoopyError, match="DistributedRecv"):
        pt.generate_loopy(recv + x)
    with pytest.raises(NotImplementedError):
        pt.generate_loopy(recv + x)


def test_call_time_errors():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    y = pt.make_placeholder("y", (n,), np.int32)
    z = pt.make_placeholder("z", (2 * n + 1,), np.float64)
    k = pt.make_size_param("k")
    w = pt.make_placeholder("w", (k,), np.float64)
    dw = pt.make_data_wrapper(np.ones(3), name="d")
    prog = pt.generate_loopy({"out": pt.sum(x, axis=1) * y + pt.sum(z) + dw[0],
                              "o2": pt.sum(w)})
    xv, yv, zv = np.ones((4, 3)), np.ones(4, np.int32), np.ones(9)
    good = {"x": xv, "y": yv, "z": zv, "w": np.ones(2)}

    class FakeQueue:
        context = None

    q = FakeQueue()   # errors are raised before anything touches the device
    with pytest.raises(MissingArgumentError, match="'y'"):
        prog(q, x=xv, z=zv, w=np.ones(2))
    with pytest.raises(MissingArgumentError, match="'k'"):
        pt.generate_loopy(pt.zeros(k) + 1)(q)
    with pytest.raises(MissingArgumentError, match=r"'w'.*not inputs: wx"):
        prog(q, x=xv, y=yv, z=zv, wx=np.ones(2))
    with pytest.raises(ArgumentShapeError, match="'y'"):
        prog(q, **{**good, "y": np.ones(5, np.int32)})
    with pytest.raises(ArgumentShapeError, match=r"'z'.*2") as info:
        prog(q, **{**good, "z": np.ones(8)})
    # a symbolic shape is given with its value
    assert "n=4" in str(info.value) and "i.e. (9,)" in str(info.value)
    # a constant one once
    with pytest.raises(ArgumentShapeError, match="'v'") as info:
        pt.generate_loopy(pt.make_placeholder("v", (3,), np.float64) + 1)(
            q, v=np.ones(4))
    assert str(info.value) == "argument 'v': expected shape (3,), got (4,)"
    with pytest.raises(ArgumentShapeError, match="'x'"):
        prog(q, **{**good, "x": np.ones((4, 2))})
    with pytest.raises(ArgumentShapeError, match="'x'"):
        prog(q, **{**good, "x": np.ones(4)})
    with pytest.raises(ArgumentShapeError, match="n=5"):
        prog(q, **good, n=5)
    with pytest.raises(ArgumentDTypeError, match=r"'y'.*int32"):
        prog(q, **{**good, "y": np.ones(4)})
    with pytest.raises(ArgumentDTypeError, match="'n'"):
        prog(q, **good, n=4.0)
    with pytest.raises(BoundArgumentError, match="'d'"):
        prog(q, **good, d=np.ones(3))
    with pytest.raises(UnknownArgumentError, match="'out'"):
        prog(q, **good, out=np.ones(4))


def test_deterministic_across_processes():
    script = """if True:
        import numpy as np, pytato as pt
        n = pt.make_size_param("n")
        x = pt.make_placeholder("x", (n, 4), np.float64)
        y = pt.make_placeholder("y", (4,), np.float64)
        t = pt.exp(x @ y)
        outs = {"b": t / pt.sum(t), "a": pt.amax(x, axis=0) + y,
                "c": pt.concatenate([x, 2 * x]).T, "d": pt.sum(t)}
        print(pt.generate_loopy(outs).get_code())
    """
    codes = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        codes.append(subprocess.run(
            [sys.executable, "-c", script], env=env, check=True,
            capture_output=True, text=True).stdout)
    assert codes[0] == codes[1] and "__kernel" in codes[0]


def test_deterministic_construction_order():
    """Equal graphs built in different orders (bindings, outputs) give the
    same code, including the names of data and temporaries."""
    d1, d2 = np.ones(3), np.zeros(3)

    def build(flip: bool) -> str:
        x = pt.make_placeholder("x", (3,), np.float64)
        w1, w2 = pt.make_data_wrapper(d1), pt.make_data_wrapper(d2)
        s1 = (pt.sin(x) * w1).tagged(ImplStored())
        s2 = (pt.cos(x) * w2).tagged(ImplStored())
        sub = V("_in0")[V("_0")] - V("_in1")[V("_0")]
        bindings = {"_in1": s2, "_in0": s1} if flip else {"_in0": s1, "_in1": s2}
        # (stored although cheap to recompute: the test counts temporaries)
        lam = _lam(sub, (3,), np.float64, bindings).tagged(ImplStored())
        outs = {"p": lam + 1, "q": lam * 2}
        if flip:
            outs = {"q": outs["q"], "p": outs["p"]}
        return pt.generate_loopy(outs).get_code()
    code = build(False)
    assert code == build(True)
    assert "_pt_data_1" in code and "_pt_temp_2" in code

# }}}


def test_size_param_used_only_in_expressions(queue: Any) -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (3,), np.float64)
    _, (out,) = pt.generate_loopy(x * n)(queue, x=np.ones(3), n=4)
    np.testing.assert_allclose(out, 4 * np.ones(3))


def _creation_graphs():
    from pytato.target.loopy import ImplStored, ImplSubstitution
    x = pt.make_placeholder("x", (10, 4), np.float64)
    n = pt.make_size_param("n")
    y = pt.make_placeholder("y", (n, 3), np.float32)
    m = pt.make_size_param("m")
    z = pt.make_placeholder("z", (m, m), np.float64)
    c = pt.make_placeholder("c", (6,), np.complex128)
    v = pt.make_placeholder("v", (4,), np.float64)
    return {
        "symbolic": {"a": pt.sum(y, axis=0), "b": 2 * y + 1},
        "symbolic reductions": {"t": z @ z, "u": pt.sum(z, axis=1),
                                "v": pt.amax(z)},
        "einsum": pt.einsum("ij,j->i", x, v),
        "where": pt.where(x > 0, x, 0 * x),
        "integer": pt.make_placeholder("k", (5,), np.int8) // 3,
        "0-d": pt.sum(x),
        "empty": pt.make_placeholder("e", (0, 3), np.float64) + 1,
        "concatenate": pt.concatenate([x, x * 2]),
        "gather": x[pt.make_placeholder("ii", (3,), np.int64)],
        "stored and substitutions": (
            (2 * x).tagged(ImplStored())
            + (x + 1).tagged([ImplStored(), Named("xplus1")])
            + (x * x).tagged([ImplSubstitution(), Named("sq")])
            + pt.sum(x, axis=1).tagged(ImplSubstitution()).reshape(10, 1)),
        "complex": {"r": pt.abs(c) + pt.real(c * c), "s": c.conj()},
        "shared outputs": {"a": x + 1, "b": x + 1, "c": x},
        "roll": pt.roll(x, 2, axis=0) + x.T.T,
    }


@pytest.mark.parametrize("case", list(_creation_graphs()))
def test_kernel_creation_matches_make_kernel(case, monkeypatch):
    """:func:`pytato.target.loopy.lower.creation.make_translation_unit` creates
    the kernel that :func:`loopy.make_kernel` would (it skips make_kernel's
    generic passes)."""
    from pytato.target.loopy import PROGRAM_CACHE
    from pytato.target.loopy.lower import creation

    graph = _creation_graphs()[case]
    quick = _kernel(pt.generate_loopy(graph, default_schedule=False))
    monkeypatch.setattr(creation, "make_translation_unit",
                        creation._with_make_kernel)
    PROGRAM_CACHE.clear()
    with lp.CacheMode(False):  # not from the program store
        reference = _kernel(pt.generate_loopy(graph, default_schedule=False))
    assert quick is not reference
    assert quick == reference


def test_kernel_creation_matches_make_kernel_on_random_dags(monkeypatch):
    from pytato.target.loopy import PROGRAM_CACHE
    from pytato.target.loopy.lower import creation

    for nnodes in (60, 400):
        graph = make_random_dag(nnodes, seed=nnodes)
        quick = pt.generate_loopy(graph, default_schedule=False)
        with monkeypatch.context() as m:
            m.setattr(creation, "make_translation_unit",
                      creation._with_make_kernel)
            PROGRAM_CACHE.clear()
            with lp.CacheMode(False):  # not from the program store
                reference = pt.generate_loopy(graph, default_schedule=False)
        assert quick is not reference
        assert _kernel(quick) == _kernel(reference)


def _preprocessing_devices():
    from pytato.target.loopy.schedule.default import DeviceInfo
    return {
        "no schedule": None,
        "cpu": DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=256),
        "gpu": DeviceInfo(kind="gpu", compute_units=132,
                          max_work_group_size=1024, min_tiled_outputs=0,
                          local_mem_size=48 * 1024),
    }


def _check_preprocessing(graph, device) -> None:
    from pytato.target.loopy.build.preprocessing import (
        order_after_predicate_writers,
        preprocess_and_linearize,
    )
    if device is None:
        t_unit = pt.generate_loopy(graph, default_schedule=False).program
    else:
        t_unit = pt.generate_loopy(graph, cl_device=device).program
    with lp.CacheMode(False):
        reference = lp.preprocess_program(t_unit)
        # (the one deliberate difference: predicated instructions wait for
        # the writers of their predicates, see order_after_predicate_writers)
        knl = reference.default_entrypoint
        reference = lp.linearize(reference.with_kernel(
            order_after_predicate_writers(knl)))
    quick = preprocess_and_linearize(t_unit)
    assert quick is not reference
    assert quick == reference
    # code generation without the renaming pass: the same code
    from pytato.target.loopy.build.preprocessing import generate_code
    with lp.CacheMode(False):
        code = generate_code(quick)
        reference_code = lp.generate_code_v2(reference)
    assert code.device_code() == reference_code.device_code()
    assert code.host_code() == reference_code.host_code()
    assert [(p.name, str(p.ast)) for p in code.device_programs] \
        == [(p.name, str(p.ast)) for p in reference_code.device_programs]
    assert list(code.device_preambles) \
        == list(reference_code.device_preambles)


@pytest.mark.parametrize("device", list(_preprocessing_devices()))
@pytest.mark.parametrize("case", list(_creation_graphs()))
def test_preprocessing_matches_loopy(case, device):
    """:func:`pytato.target.loopy.build.preprocessing.preprocess_and_linearize`
    (no on-disk caches, no inlining pass for a unit of one kernel) gives
    the translation unit of :func:`loopy.preprocess_program` and
    :func:`loopy.linearize`, with and without the default schedule (the
    GPU schedule tiles and separates levels with global barriers), and
    :func:`~pytato.target.loopy.build.preprocessing.generate_code` the code of
    :func:`loopy.generate_code_v2`."""
    _check_preprocessing(_creation_graphs()[case],
                         _preprocessing_devices()[device])


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_preprocessing_matches_loopy_on_random_dags(device):
    for nnodes in (60, 400):
        _check_preprocessing(make_random_dag(nnodes, seed=nnodes),
                             _preprocessing_devices()[device])


def test_callable_passes_on_the_calling_instructions(monkeypatch):
    """loopy's passes over callables run on a copy of the kernel with the
    instructions that may call (here the ``sin`` of a graph of plain
    arithmetic otherwise), and give the unit that they give on the whole
    kernel; a kernel with a temporary of unknown type goes through them
    whole."""
    from pytato.target.loopy.build import preprocessing
    x = pt.make_placeholder("x", (16, 16), np.float64)
    y = pt.sin(2 * x + 1) * 3 + (x - 1).T
    t_unit = pt.generate_loopy(
        {"a": y, "b": 2 * y, "c": y[::-1] - x},
        cl_device=_preprocessing_devices()["cpu"]).program
    name = t_unit.default_entrypoint.name
    seen = []

    def passes(tu):
        seen.append(len(tu[name].instructions))
        return preprocessing._resolve_and_infer(tu)

    with lp.CacheMode(False):
        quick = preprocessing.on_calls_only(t_unit, name, passes)
        whole = preprocessing._resolve_and_infer(t_unit)
    assert quick == whole
    assert len(seen) == 1
    assert 0 < seen[0] < len(t_unit[name].instructions)

    knl = t_unit[name]
    tv = next(iter(knl.temporary_variables.values()))
    untyped = t_unit.with_kernel(knl.copy(temporary_variables={
        **knl.temporary_variables, tv.name: tv.copy(dtype=None)}))
    seen.clear()
    with lp.CacheMode(False):
        preprocessing.on_calls_only(untyped, name, passes)
    assert seen == [len(knl.instructions)]

    # complex arithmetic (which the target implements with functions)
    z = pt.make_placeholder("z", (8, 8), np.complex128)
    c_unit = pt.generate_loopy(
        {"a": z * z + z / (z - 1), "b": abs(z) * z.T},
        cl_device=_preprocessing_devices()["cpu"]).program
    with lp.CacheMode(False):
        assert preprocessing.preprocess_and_linearize(c_unit) \
            == lp.linearize(lp.preprocess_program(c_unit))


def test_no_hash_of_whole_kernels(monkeypatch):
    """Linearization and code generation of a unit of one kernel do not
    hash the kernel (loopy's grid-size memo keys hold the table of
    callables, which gets a cheaper hash: names, states and sizes); equal
    tables get equal such hashes, and a table hashed already keeps its
    hash."""
    from constantdict import constantdict

    from pytato.target.loopy.build import preprocessing
    x = pt.make_placeholder("x", (16, 16), np.float64)
    y = pt.sin(2 * x + 1) * 3 + (x - 1).T
    t_unit = pt.generate_loopy(
        {"a": y, "b": pt.sum(y, axis=1)},
        cl_device=_preprocessing_devices()["cpu"]).program
    with lp.CacheMode(False):
        reference = lp.generate_code_v2(lp.linearize(
            lp.preprocess_program(t_unit))).device_code()
    hashed = []
    original = lp.LoopKernel.__hash__
    monkeypatch.setattr(lp.LoopKernel, "__hash__",
                        lambda self: hashed.append(self) or original(self))
    lin = preprocessing.preprocess_and_linearize(t_unit)
    with lp.CacheMode(False):
        code = preprocessing.generate_code(lin, cache=False).device_code()
    assert hashed == []
    assert code == reference

    def table():
        return t_unit.copy(callables_table=constantdict(
            dict(t_unit.callables_table)))
    a, b = table(), table()
    assert a.callables_table is not b.callables_table
    preprocessing.cheap_table_hash(a)
    preprocessing.cheap_table_hash(b)
    assert hash(a.callables_table) == hash(b.callables_table)
    assert hashed == []
    c = table()
    full = hash(c.callables_table)
    assert len(hashed) == 1
    assert hash(preprocessing.cheap_table_hash(c).callables_table) == full


def test_preprocessing_of_several_kernels_by_loopy(monkeypatch):
    """Units with a callee kernel (here from :func:`pytato.loopy.call_loopy`)
    are preprocessed by :func:`loopy.preprocess_program` itself."""
    from pytato.loopy import call_loopy
    from pytato.target.loopy.build import preprocessing
    knl = lp.make_kernel(
        "{[i]: 0 <= i < 4}", "y[i] = 2*x[i]",
        [lp.GlobalArg("x", np.float64, (4,)),
         lp.GlobalArg("y", np.float64, (4,), is_output=True)],
        name="twice", lang_version=(2018, 2))
    x = pt.make_placeholder("x", (4,), np.float64)
    call = call_loopy(knl, {"x": x + 1})
    t_unit = pt.generate_loopy(call["y"] * 3).program
    calls = []
    monkeypatch.setattr(lp, "preprocess_program",
                        lambda tu: calls.append(tu) or
                        lp.preprocess.preprocess_program(tu))
    with lp.CacheMode(False):
        reference = lp.linearize(lp.preprocess.preprocess_program(t_unit))
    assert preprocessing.preprocess_and_linearize(t_unit) == reference
    assert calls == [t_unit]
    # and their code is generated by loopy.generate_code_v2
    generated = []
    monkeypatch.setattr(lp, "generate_code_v2",
                        lambda tu: generated.append(tu) or
                        lp.codegen.generate_code_v2(tu))
    with lp.CacheMode(False):
        code = preprocessing.generate_code(reference)
    assert generated == [reference]
    assert "twice" in code.device_code()


def test_branches_on_constant_conditions_folded(queue):
    """A selection whose condition compares integer constants (a
    concatenation indexed at constant positions) is lowered to the branch
    it takes: no self-comparison in the code (which compilers warn of),
    and numpy's values."""
    x = pt.make_placeholder("x", (3, 2), np.float64)
    y = pt.concatenate([x[1:], x[:1]])
    graph = {"a": y[2], "b": y[0]}
    prog = pt.generate_loopy(graph)
    code = prog.get_code(queue.device)
    assert "2 < 2" not in code and "0 < 2" not in code
    xv = np.arange(6.0).reshape(3, 2)
    yv = np.concatenate([xv[1:], xv[:1]])
    _, out = prog(queue, x=xv)
    np.testing.assert_array_equal(out["a"], yv[2])
    np.testing.assert_array_equal(out["b"], yv[0])


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8, np.float64])
def test_self_comparisons_folded(queue, dtype):
    """An integer or boolean compared with itself (``maximum(x, x)``,
    ``x < x``) is lowered to its value, and ``!x < y`` to ``(x == 0) < y``:
    no code that compilers warn of (a self-comparison, a logical not
    applied to the left-hand side only). Floating-point self-comparisons
    stay (NaN differs from itself). numpy's values throughout."""
    import re
    x = pt.make_placeholder("x", (5,), dtype)
    graph = {"mx": pt.maximum(x, x), "mn": pt.minimum(x, x),
             "lt": x < x, "le": x <= x, "eq": pt.equal(x, x),
             "ne": pt.not_equal(x, x)}
    if dtype == np.bool_:
        graph["notmin"] = pt.minimum(pt.logical_not(x), x)
        graph["notlt"] = pt.logical_not(x) < x
    prog = pt.generate_loopy(graph)
    code = prog.get_code(queue.device)
    if dtype != np.float64:
        assert not re.search(r"(x\[[^\]]*\]) *(<|>|==|!=|<=|>=) *\1", code), \
            code
    assert not re.search(r"!x\[[^\]]*\] *(<|>|==|!=|<=|>=)", code), code
    xv = (np.array([0, 1, 1, 0, 1], dtype) if dtype == np.bool_
          else np.array([3, 0, 200, 7, 1]).astype(dtype))
    if dtype == np.float64:
        xv[1] = np.nan
    _, out = prog(queue, x=xv)
    ref = {"mx": np.maximum(xv, xv), "mn": np.minimum(xv, xv),
           "lt": xv < xv, "le": xv <= xv, "eq": xv == xv, "ne": xv != xv}
    if dtype == np.bool_:
        ref["notmin"] = np.minimum(~xv, xv)
        ref["notlt"] = ~xv < xv
    for name, expected in ref.items():
        assert out[name].dtype == expected.dtype, name
        np.testing.assert_array_equal(out[name], expected, err_msg=name)


def test_comparisons_of_comparisons(queue):
    """Comparisons whose operands are comparisons are parenthesized in the
    code: loopy prints them with Python's chaining precedence, and
    ``(x == y) >= (y != z)`` came out as ``x == y >= y != z``, which C
    reads as ``(x == (y >= y)) != z``."""
    x, y, z = (pt.make_placeholder(name, (16,), np.int32) for name in "xyz")
    graph = {
        "a": pt.greater_equal(pt.equal(x, y), pt.not_equal(y, z)),
        "b": pt.equal(pt.less(x, y), pt.less(y, z)),
        "c": pt.less(pt.equal(x, y), z),
        "d": pt.not_equal(pt.equal(x, y), pt.logical_not(pt.less(y, z))),
        "e": pt.less(pt.logical_not(pt.equal(x, y)), pt.equal(y, z)),
    }
    prog = pt.generate_loopy(graph)
    rng = np.random.default_rng(0)
    xv, yv, zv = (rng.integers(-1, 3, 16).astype(np.int32) for _ in range(3))
    _, out = prog(queue, x=xv, y=yv, z=zv)
    ref = {
        "a": np.greater_equal(xv == yv, yv != zv),
        "b": np.equal(xv < yv, yv < zv),
        "c": np.less(xv == yv, zv),
        "d": np.not_equal(xv == yv, ~(yv < zv)),
        "e": np.less(~(xv == yv), yv == zv),
    }
    for name, expected in ref.items():
        np.testing.assert_array_equal(out[name], expected, err_msg=name)
