"""Behaviours of code generation that code written for upstream pytato
relies on (issue 39): sizes of :func:`pytato.loopy.call_loopy` inferred
from the bound arrays' shapes, integer ``%`` and ``//`` of every integer
dtype (``np.longlong`` included), tags propagated to the generated
:mod:`loopy` kernel, symbolic reduction bounds and bounds depending on
output indices or data (private temporaries), the distributive law over
einsums, :func:`pytato.pad`, materialization lowering flop counts, outputs
sharing subexpressions, and data wrappers of :mod:`pyopencl` arrays.

Everything that computes is compared with numpy on the OpenCL test device
(PoCL on CPU machines).
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt


def _host(ary: Any) -> Any:
    if isinstance(ary, dict):
        return {k: _host(v) for k, v in ary.items()}
    return ary if isinstance(ary, np.ndarray) else ary.get()


def _run(queue: cl.CommandQueue, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return _host(out[0] if isinstance(out, tuple) else out)


# {{{ call_loopy: sizes inferred from the bound arrays' shapes

def test_call_loopy_infers_sizes_from_shapes(queue: cl.CommandQueue) -> None:
    import loopy as lp

    from pytato.loopy import call_loopy

    knl = lp.make_kernel("{[i, j]: 0 <= i < m and 0 <= j < n}",
                         "out[i, j] = 2*x[i, j]", lang_version=(2018, 2))
    x_in = np.random.default_rng(0).random((3, 4))
    out = call_loopy(knl, {"x": pt.make_data_wrapper(x_in)})["out"]
    assert out.shape == (3, 4)
    np.testing.assert_allclose(_run(queue, out), 2 * x_in)

    # a placeholder of the same shape, fed at call time
    x = pt.make_placeholder("x", (3, 4), np.float64)
    out = call_loopy(knl, {"x": x})["out"]
    np.testing.assert_allclose(_run(queue, out, x=x_in), 2 * x_in)


def _sum_kernel() -> Any:
    import loopy as lp

    # the shape of 'A' (inferred by loopy from its accesses) is
    # (2*n + 3*m + 2, 6*n + 4*m + 3): m and n solve two linear equations
    knl = lp.make_kernel(
        ["{[i, j]: 0 <= i < 2*n + 3*m + 2 and 0 <= j < 6*n + 4*m + 3}",
         "{[ii, jj]: 0 <= ii < m and 0 <= jj < n}"],
        """
        <> tmp = sum([i, j], A[i, j])
        out[ii, jj] = tmp*(ii + jj)
        """, lang_version=(2018, 2))
    return lp.add_dtypes(knl, {"A": np.float64})


def test_call_loopy_solves_affine_shape_constraints(
        queue: cl.CommandQueue) -> None:
    from pytato.loopy import call_loopy

    a_in = np.random.default_rng(1).random((20, 37))
    a = pt.make_placeholder("a", (20, 37), np.float64)
    out = call_loopy(_sum_kernel(), {"A": a})["out"]
    # 2n + 3m + 2 == 20, 6n + 4m + 3 == 37: m == 4, n == 3
    assert out.shape == (4, 3)
    np.testing.assert_allclose(
        _run(queue, out, a=a_in),
        a_in.sum() * (np.arange(4).reshape(4, 1) + np.arange(3)))


def test_call_loopy_infers_symbolic_sizes(queue: cl.CommandQueue) -> None:
    from pytato.loopy import call_loopy

    n1 = pt.make_size_param("n1")
    n2 = pt.make_size_param("n2")
    a = pt.make_placeholder("a", (4*n1 + 6*n2 + 2, 12*n1 + 8*n2 + 3),
                            np.float64)
    out = call_loopy(_sum_kernel(), {"A": a})["out"]
    # m == 2*n2, n == 2*n1
    a_in = np.random.default_rng(2).random((4*3 + 6*4 + 2, 12*3 + 8*4 + 3))
    result = _run(queue, out, a=a_in, n1=3, n2=4)
    np.testing.assert_allclose(
        result, a_in.sum() * (np.arange(8).reshape(8, 1) + np.arange(6)))

    # n bound to a size expression, m inferred: 2*(2*n1) + 3*m + 2 ==
    # 4*n1 + 6*n2 + 2 gives m == 2*n2
    out = call_loopy(_sum_kernel(), {"A": a, "n": 2*n1})["out"]
    result = _run(queue, out, a=a_in, n1=3, n2=4)
    np.testing.assert_allclose(
        result, a_in.sum() * (np.arange(8).reshape(8, 1) + np.arange(6)))


def test_call_loopy_undetermined_sizes_raise() -> None:
    import loopy as lp

    from pytato.diagnostic import CallBindingError
    from pytato.loopy import call_loopy

    # only m + n is known from x's shape
    knl = lp.make_kernel("{[i]: 0 <= i < m + n}", "out[i] = 2*x[i]",
                         lang_version=(2018, 2))
    with pytest.raises(CallBindingError, match=r"'m'|'n'"):
        call_loopy(knl, {"x": pt.make_placeholder("x", (5,), np.float64)})

# }}}


# {{{ integer % and // of every integer dtype

_INT_CHARS = "bhilqBHILQ"


def _int_operands(dtype: np.dtype[Any], seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    values = rng.integers(max(info.min, -100), 101, 64).astype(dtype)
    ends = [info.min, info.max, 0, 1,
            *([-1, info.min + 1] if info.min < 0 else [2, info.max - 1])]
    return np.concatenate([values, np.array(ends, dtype=dtype)])


def test_integer_division_of_every_dtype(queue: cl.CommandQueue) -> None:
    # (np.longlong operands: loopy named its functions after the scalar
    # type of the result, and 'loopy_mod_longlong' was never declared)
    inputs: dict[str, np.ndarray] = {}
    outputs: dict[str, pt.Array] = {}
    expected: dict[str, np.ndarray] = {}
    for c1, c2 in itertools.product(_INT_CHARS, repeat=2):
        d1, d2 = np.dtype(c1), np.dtype(c2)
        x_in = _int_operands(d1, 0)
        y_in = np.roll(_int_operands(d2, 1), 3)
        x = pt.make_placeholder(f"x_{c1}{c2}", x_in.shape, d1)
        y = pt.make_placeholder(f"y_{c1}{c2}", y_in.shape, d2)
        inputs[x.name], inputs[y.name] = x_in, y_in
        # every divisor in both orders, zero included
        for op, rev in itertools.product((operator.mod, operator.floordiv),
                                         (False, True)):
            num, den, num_in, den_in = ((y, x, y_in, x_in) if rev
                                        else (x, y, x_in, y_in))
            name = f"{op.__name__}_{num.name}_{den.name}"
            with np.errstate(all="ignore"):
                ref = op(num_in, den_in)
            if ref.dtype.kind in "iu":
                # the documented result of integer division by zero
                ref = np.where(den_in == 0, 0, ref).astype(ref.dtype)
            outputs[name] = op(num, den)
            expected[name] = ref
    result = _run(queue, pt.make_dict_of_named_arrays(outputs), **inputs)
    for name, ref in expected.items():
        assert result[name].dtype == ref.dtype, name
        np.testing.assert_array_equal(result[name], ref, err_msg=name)


@pytest.mark.parametrize("op", [operator.mod, operator.floordiv])
@pytest.mark.parametrize("c", ["q", "l", "i", "h", "b"])
def test_integer_division_by_scalars(queue: cl.CommandQueue, op: Any,
                                     c: str) -> None:
    x_in = _int_operands(np.dtype(c), 2)
    x = pt.make_placeholder(f"x_scalar_{c}", x_in.shape, np.dtype(c))
    for k in (3, -3, np.dtype(c).type(7)):
        np.testing.assert_array_equal(_run(queue, op(x, k), **{x.name: x_in}),
                                      op(x_in, k))
    nonzero = np.where(x_in == 0, 1, x_in)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(
            _run(queue, op(5, x), **{x.name: nonzero}), op(5, nonzero))

# }}}



# {{{ the distributive law over einsums: upstream's structure

def test_distributive_law_builds_einsums_as_written(
        queue: cl.CommandQueue) -> None:
    from pytato.transform.einsum_distributive_law import (
        DoDistribute,
        DoNotDistribute,
        EinsumDistributiveLawDescriptor,
        apply_distributive_property_to_einsums,
    )

    def how(expr: pt.Einsum) -> EinsumDistributiveLawDescriptor:
        if pt.analysis.is_einsum_similar_to_subscript(expr, "ij,j->i"):
            return DoDistribute(ioperand=1)
        return DoNotDistribute()

    x1 = pt.make_placeholder("x1", 4, np.float64)
    x2 = pt.make_placeholder("x2", 4, np.float64)
    a = pt.make_placeholder("a", (10, 4), np.float64)

    def mv(v: pt.Array) -> pt.Array:
        return pt.einsum("ij,j->i", a, v)

    cases = [
        (a @ (x1 + x2), a @ x1 + a @ x2),
        (mv(x1 + x2), mv(x1) + mv(x2)),
        (mv(2*x1 - x2), 2*mv(x1) - mv(x2)),
        (mv(-x1), -mv(x1)),
        (mv(x1 * 3), mv(x1) * 3),
        (mv(3*(x1 + 2*x2) - x1), 3*(mv(x1) + 2*mv(x2)) - mv(x1)),
    ]
    rng = np.random.default_rng(3)
    vals = {"x1": rng.random(4), "x2": rng.random(4), "a": rng.random((10, 4))}
    for expr, expected in cases:
        out = apply_distributive_property_to_einsums(expr, how)
        assert out == expected, (out, expected)
        np.testing.assert_allclose(_run(queue, out, **vals),
                                   _run(queue, expr, **vals), rtol=1e-13)
    # other einsums are left alone
    e = pt.einsum("ij,ij->i", a, a + a)
    assert apply_distributive_property_to_einsums(e, how) == e

# }}}


# {{{ tags propagated to the loopy kernel

def test_tags_reach_inames_arguments_and_temporaries() -> None:
    from pytools.tag import Tag

    class _AxisTag(Tag):
        pass

    class _ArrayTag(Tag):
        pass

    x = pt.make_placeholder("x", (10, 4), np.float64).tagged(_ArrayTag())
    tmp = (x + 1).tagged((pt.tags.ImplStored(), _ArrayTag(),
                          pt.tags.Named("tmp")))
    tmp = tmp.with_tagged_axis(1, _AxisTag())
    y = (tmp * tmp[::-1]).with_tagged_axis(0, _AxisTag())
    knl = pt.generate_loopy({"y": y}).program.default_entrypoint
    assert knl.arg_dict["x"].tags == frozenset({_ArrayTag()})
    assert knl.temporary_variables["tmp"].tags == frozenset({_ArrayTag()})
    assert knl.inames["y_dim0"].tags == frozenset({_AxisTag()})
    assert knl.inames["tmp_dim1"].tags == frozenset({_AxisTag()})
    assert not knl.inames["y_dim1"].tags and not knl.inames["tmp_dim0"].tags

    knl = pt.generate_loopy(
        {"y": y}, array_tag_t_to_not_propagate=frozenset({_ArrayTag}),
        axis_tag_t_to_not_propagate=frozenset({_AxisTag})
    ).program.default_entrypoint
    assert not knl.arg_dict["x"].tags
    assert not any(iname.tags for iname in knl.inames.values())
    # (the default's ImplStored and Named are propagated when not excluded)
    assert knl.temporary_variables["tmp"].tags == frozenset(
        {pt.tags.ImplStored(), pt.tags.Named("tmp")})

# }}}


# {{{ flops of the generated code: materialization, outputs sharing work

def _generated_flops(outputs: Any) -> int:
    """Arithmetic operations the generated kernel does (constant shapes):
    each instruction's operations times the size of its loop domain."""
    import loopy as lp
    from pymbolic.mapper import CombineMapper

    knl = pt.generate_loopy(outputs).program.default_entrypoint

    def extent(inames: Any) -> int:
        n = 1
        for iname in inames:
            n *= int(lp.symbolic.pw_aff_to_expr(
                knl.get_iname_bounds(iname).size))
        return n

    class _Ops(CombineMapper):  # type: ignore[type-arg]
        def combine(self, values: Any) -> int:
            return sum(values)

        def map_constant(self, expr: Any) -> int:
            return 0

        map_variable = map_subscript = map_constant

        def map_sum(self, expr: Any) -> int:
            return len(expr.children) - 1 + sum(self.rec(c)
                                                for c in expr.children)

        map_product = map_sum

        def map_reduction(self, expr: Any) -> int:
            return extent(expr.inames) * (1 + self.rec(expr.expr))

    return sum(extent(insn.within_inames) * _Ops()(insn.expression)
               for insn in knl.instructions)


def test_materialize_with_mpms_reduces_flops(queue: cl.CommandQueue) -> None:
    x1, x2, x3, x4, x5 = (pt.make_placeholder(f"x{i}", (10, 4), np.float64)
                          for i in range(1, 6))
    t = x1 + x2 + x3
    bad = pt.make_dict_of_named_arrays({"y1": t * x4, "y2": t * x5})
    good = pt.transform.materialize_with_mpms(bad)
    # t (2 additions of 40 elements) is computed once instead of twice
    assert _generated_flops(good) == _generated_flops(bad) - 80
    assert pt.analysis.get_num_tags_of_type(good, pt.tags.ImplStored) == 1
    vals = {f"x{i}": np.random.default_rng(i).random((10, 4))
            for i in range(1, 6)}
    expected = _run(queue, bad, **vals)
    result = _run(queue, good, **vals)
    for name in ("y1", "y2"):
        np.testing.assert_allclose(result[name], expected[name])


def test_outputs_sharing_work_compute_it_once(queue: cl.CommandQueue) -> None:
    x1, x2, x3, x4 = (pt.make_placeholder(f"x{i}", (10, 4), np.float64)
                      for i in range(1, 5))
    a = x1 * x2 + x3
    outputs = pt.make_dict_of_named_arrays({"a": a, "b": a + x4, "c": 2 * a,
                                            "d": a})
    # 'a' once (2 operations on 40 elements), 'b' and 'c' reading it
    assert _generated_flops(outputs) == 80 + 40 + 40
    vals = {f"x{i}": np.random.default_rng(i).random((10, 4))
            for i in range(1, 5)}
    a_ref = vals["x1"] * vals["x2"] + vals["x3"]
    result = _run(queue, outputs, **vals)
    np.testing.assert_allclose(result["a"], a_ref)
    np.testing.assert_allclose(result["b"], a_ref + vals["x4"])
    np.testing.assert_allclose(result["c"], 2 * a_ref)
    np.testing.assert_allclose(result["d"], a_ref)

# }}}


# {{{ pad

@pytest.mark.parametrize("pad_width", [
    2, (1,), (1, 2), ((1, 2),), ((1, 2), (0, 3)), [[1, 0], [2, 1]],
    np.array([[1, 0], [2, 1]]), ((0, 0), (0, 0))])
@pytest.mark.parametrize("constant_values", [0, 3.5, (1, 2), ((1, 2), (3, 4))])
def test_pad_constant_like_numpy(queue: cl.CommandQueue, pad_width: Any,
                                 constant_values: Any) -> None:
    a = np.arange(12.0).reshape(3, 4)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    result = _run(queue, pt.pad(x, pad_width, mode="constant",
                                constant_values=constant_values), x=a)
    np.testing.assert_array_equal(
        result, np.pad(a, pad_width, mode="constant",
                       constant_values=constant_values))

# }}}


# {{{ data wrappers of pyopencl arrays

def test_zero_size_cl_arrays_deduplicated(queue: cl.CommandQueue) -> None:
    import pyopencl.array as cla

    dw1, dw2, dw3 = (pt.make_data_wrapper(cla.empty(queue, (0, 3), np.float64))
                     for _ in range(3))
    dw4 = pt.make_data_wrapper(cla.empty(queue, (0, 4), np.float64))
    full = pt.make_data_wrapper(cla.zeros(queue, (2, 3), np.float64))
    outputs = pt.make_dict_of_named_arrays({
        "a": 2 * dw1, "b": 2 * dw2, "c": dw3 + 1, "d": dw4 - 1,
        "e": full + 1})
    dedup = pt.transform.deduplicate_data_wrappers(outputs)
    wrappers = {id(n) for n in pt.transform.topological_order([dedup])
                if isinstance(n, pt.DataWrapper)}
    # the three (0, 3) arrays are one (they hold the same: nothing)
    assert len(wrappers) == 3
    assert dedup._data["a"] == dedup._data["b"]
    result = _run(queue, dedup)
    assert result["a"].shape == (0, 3) and result["d"].shape == (0, 4)
    np.testing.assert_array_equal(result["e"], np.ones((2, 3)))
    # the structural deduplicator copes with them too
    assert isinstance(pt.transform.Deduplicator()(outputs), pt.DictOfNamedArrays)


def test_tagged_cl_array_data_wrappers(queue: cl.CommandQueue) -> None:
    import pyopencl.array as cla
    from pytools.tag import Tag

    class _ArrayTag(Tag):
        pass

    class _AxisTag(Tag):
        pass

    a = np.arange(12.0).reshape(3, 4)
    dw = pt.make_data_wrapper(cla.to_device(queue, a)).tagged(_ArrayTag())
    dw = dw.with_tagged_axis(0, _AxisTag())
    assert dw.tags == frozenset({_ArrayTag()})
    assert dw.axes[0].tags == frozenset({_AxisTag()})
    y = (2 * dw).with_tagged_axis(0, _AxisTag())
    knl = pt.generate_loopy(y).program.default_entrypoint
    (arg,) = [arg for arg in knl.args if arg.is_input]
    assert arg.tags == frozenset({_ArrayTag()})
    np.testing.assert_array_equal(_run(queue, y), 2 * a)

# }}}


# {{{ reductions with bounds that are not constant

def _sum_over(x: pt.Array, lower: Any, upper: Any, shape: tuple[int, ...],
              **bindings: pt.Array) -> pt.Array:
    import pymbolic.primitives as prim

    from pytato.reductions import SumReductionOperation
    from pytato.scalar_expr import Reduce

    return pt.IndexLambda(
        expr=Reduce(prim.Variable("_in0")[prim.Variable("_r0")],
                    SumReductionOperation(), {"_r0": (lower, upper)}),
        shape=shape, dtype=x.dtype, bindings={"_in0": x, **bindings},
        var_to_reduction_descr={"_r0": pt.ReductionDescriptor(frozenset())})


def test_reduction_with_symbolic_bounds(queue: cl.CommandQueue) -> None:
    import pymbolic.primitives as prim

    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    # sum of x[1:n-1]
    y = _sum_over(x, 1, prim.Variable("_in1") - 1, (), _in1=n)
    x_in = np.random.default_rng(4).random(10)
    np.testing.assert_allclose(_run(queue, y, x=x_in, n=10), x_in[1:9].sum())


def _prefix_sum(x: pt.Array) -> pt.Array:
    import pymbolic.primitives as prim

    # y[i] = sum(x[:i])
    return _sum_over(x, 0, prim.Variable("_0"), x.shape)


def _segment_sum(x: pt.Array, row_starts: pt.Array, nrows: Any) -> pt.Array:
    import pymbolic.primitives as prim

    # y[i] = sum(x[row_starts[i]:row_starts[i+1]]), as in a CSR product
    starts = prim.Variable("_in1")
    return _sum_over(x, starts[prim.Variable("_0")],
                     starts[prim.Variable("_0") + 1], (nrows,),
                     _in1=row_starts)


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1, a.dtype), np.cumsum(a)[:-1]])


def _segment_sums(a: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.array([a[starts[i]:starts[i + 1]].sum()
                     for i in range(len(starts) - 1)], dtype=a.dtype)


def _bound_temporaries(prog: Any) -> dict[str, Any]:
    import loopy as lp

    knl = prog.program.default_entrypoint
    return {name: tv for name, tv in knl.temporary_variables.items()
            if name.endswith(("_lbound", "_ubound"))
            and tv.address_space == lp.AddressSpace.PRIVATE}


def _schedule_devices() -> list[Any]:
    from pytato.target.loopy.device import DeviceInfo

    return [None,
            DeviceInfo(kind="gpu", compute_units=132,
                       max_work_group_size=1024, name="fake GPU"),
            DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096)]


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.complex128])
def test_reduction_with_index_dependent_bounds(queue: cl.CommandQueue,
                                               dtype: Any) -> None:
    rng = np.random.default_rng(5)
    n = 1000
    x_in = (rng.integers(-50, 50, n) if dtype == np.int32
            else rng.random(n) + (1j * rng.random(n)
                                  if dtype == np.complex128 else 0)
            ).astype(dtype)
    x = pt.make_placeholder("x", (n,), dtype)
    y = _prefix_sum(x)
    prog = pt.generate_loopy(y)
    # the upper bound (the output index) is a private temporary
    assert [name for name in _bound_temporaries(prog)
            if name.endswith("_ubound")]
    _, out = prog(queue, x=x_in)
    result = _host(out[0] if isinstance(out, tuple) else out)
    assert result.dtype == dtype
    np.testing.assert_allclose(result, _exclusive_cumsum(x_in), rtol=1e-12)


@pytest.mark.parametrize("device", _schedule_devices(),
                         ids=["any", "gpu", "cpu"])
def test_reduction_with_data_dependent_bounds(queue: cl.CommandQueue,
                                              device: Any) -> None:
    rng = np.random.default_rng(6)
    n, nrows = 5000, 300
    # rows of all lengths, empty ones (lbound == ubound) among them
    starts = np.sort(rng.integers(0, n + 1, nrows + 1))
    starts[0], starts[-1] = 0, n
    starts[10:14] = starts[10]
    x_in = rng.random(n)
    x = pt.make_placeholder("x", (n,), np.float64)
    row_starts = pt.make_placeholder("row_starts", (nrows + 1,), np.int64)
    y = _segment_sum(x, row_starts, nrows)
    prog = pt.generate_loopy(y, cl_device=device)
    assert set(_bound_temporaries(prog)) == {
        name for name in prog.program.default_entrypoint.temporary_variables
        if name.endswith(("_lbound", "_ubound"))}
    assert len(_bound_temporaries(prog)) == 2
    _, out = prog(queue, x=x_in, row_starts=starts)
    result = _host(out[0] if isinstance(out, tuple) else out)
    np.testing.assert_allclose(result, _segment_sums(x_in, starts),
                               rtol=1e-12)
    assert (result[10:13] == 0).all()


def test_csr_matvec_as_index_lambda(queue: cl.CommandQueue) -> None:
    import pymbolic.primitives as prim
    import scipy.sparse as sp

    from pytato.reductions import SumReductionOperation
    from pytato.scalar_expr import Reduce

    mat = sp.random(200, 150, density=0.05, format="csr", random_state=7)
    mat.data[:] = np.random.default_rng(7).random(mat.nnz)
    v_in = np.random.default_rng(8).random(150)
    nnz = mat.nnz
    data = pt.make_placeholder("data", (nnz,), np.float64)
    cols = pt.make_placeholder("cols", (nnz,), mat.indices.dtype)
    starts = pt.make_placeholder("starts", (201,), mat.indptr.dtype)
    v = pt.make_placeholder("v", (150,), np.float64)
    i, j = prim.Variable("_0"), prim.Variable("_r0")
    y = pt.IndexLambda(
        expr=Reduce(prim.Variable("_in0")[j]
                    * prim.Variable("_in2")[prim.Variable("_in1")[j]],
                    SumReductionOperation(),
                    {"_r0": (prim.Variable("_in3")[i],
                             prim.Variable("_in3")[i + 1])}),
        shape=(200,), dtype=data.dtype,
        bindings={"_in0": data, "_in1": cols, "_in2": v, "_in3": starts},
        var_to_reduction_descr={"_r0": pt.ReductionDescriptor(frozenset())})
    np.testing.assert_allclose(
        _run(queue, 2 * y + 1, data=mat.data, cols=mat.indices,
             starts=mat.indptr, v=v_in),
        2 * (mat @ v_in) + 1, rtol=1e-12)


def test_data_dependent_bounds_with_symbolic_sizes(
        queue: cl.CommandQueue) -> None:
    rng = np.random.default_rng(9)
    n, m = pt.make_size_param("n"), pt.make_size_param("m")
    x = pt.make_placeholder("x", (n,), np.float64)
    row_starts = pt.make_placeholder("row_starts", (m + 1,), np.int32)
    out = {"prefix": _prefix_sum(x), "seg": _segment_sum(x, row_starts, m)}
    prog = pt.generate_loopy(out)
    for n_val, m_val in [(37, 5), (1000, 40), (3, 1)]:
        x_in = rng.random(n_val)
        starts = np.sort(rng.integers(0, n_val + 1, m_val + 1)).astype(np.int32)
        starts[0], starts[-1] = 0, n_val
        _, res = prog(queue, x=x_in, row_starts=starts)
        res = _host(res)
        np.testing.assert_allclose(res["prefix"], _exclusive_cumsum(x_in),
                                   rtol=1e-12)
        np.testing.assert_allclose(res["seg"], _segment_sums(x_in, starts),
                                   rtol=1e-12)


@pytest.mark.parametrize("device", _schedule_devices(),
                         ids=["any", "gpu", "cpu"])
@pytest.mark.parametrize("bounds", [(5, 90000), (700, 700), (9, 3)],
                         ids=["range", "empty", "reversed"])
def test_full_reduction_with_data_dependent_bounds(
        queue: cl.CommandQueue, device: Any, bounds: tuple[int, int]) -> None:
    import pymbolic.primitives as prim

    from pytato.tags import ImplStored

    # a 0-d sum over x[b[0]:b[1]], b an intermediate stored in global
    # memory: the bounds are computed outside any loop, in the device
    # kernel of the reduction
    x_in = np.random.default_rng(10).random(100000)
    x = pt.make_placeholder("x", x_in.shape, np.float64)
    b = pt.make_placeholder("b", (2,), np.int64)
    stored = (b + 1).tagged(ImplStored())
    b_var = prim.Variable("_in1")
    y = _sum_over(x, b_var[0] - 1, b_var[1] - 1, (), _in1=stored)
    prog = pt.generate_loopy(y, cl_device=device)
    assert len(_bound_temporaries(prog)) == 2
    lo, hi = bounds
    np.testing.assert_allclose(
        _host(prog(queue, x=x_in, b=np.array(bounds))[1][0]),
        x_in[lo:hi].sum(), rtol=1e-12)


def test_data_dependent_bounds_of_a_2d_reduction(
        queue: cl.CommandQueue) -> None:
    import pymbolic.primitives as prim

    from pytato.reductions import SumReductionOperation
    from pytato.scalar_expr import Reduce

    # rows of x summed by segment: a reduction along the strided axis
    rng = np.random.default_rng(11)
    x_in = rng.random((1000, 64))
    starts = np.sort(rng.integers(0, 1001, 11))
    starts[0], starts[-1] = 0, 1000
    x = pt.make_placeholder("x", x_in.shape, np.float64)
    row_starts = pt.make_placeholder("row_starts", (11,), np.int64)
    i = prim.Variable("_0")
    y = pt.IndexLambda(
        expr=Reduce(prim.Variable("_in0")[prim.Variable("_r0"),
                                          prim.Variable("_1")],
                    SumReductionOperation(),
                    {"_r0": (prim.Variable("_in1")[i],
                             prim.Variable("_in1")[i + 1])}),
        shape=(10, 64), dtype=x.dtype,
        bindings={"_in0": x, "_in1": row_starts},
        var_to_reduction_descr={"_r0": pt.ReductionDescriptor(frozenset())})
    want = np.array([x_in[starts[k]:starts[k + 1]].sum(axis=0)
                     for k in range(10)])
    for device in _schedule_devices():
        prog = pt.generate_loopy(y, cl_device=device)
        np.testing.assert_allclose(
            _host(prog(queue, x=x_in, row_starts=starts)[1][0]), want,
            rtol=1e-12)


def test_bound_depending_on_an_enclosing_reduction_is_an_error() -> None:
    import pymbolic.primitives as prim

    from pytato.diagnostic import CannotBeLoweredToLoopyError
    from pytato.reductions import SumReductionOperation
    from pytato.scalar_expr import Reduce

    # sum over i of sum(x[:i]): the inner bound is the outer reduction's
    # index, which no loop of the instruction holds
    x = pt.make_placeholder("x", (10,), np.float64)
    inner = Reduce(prim.Variable("_in0")[prim.Variable("_r1")],
                   SumReductionOperation(), {"_r1": (0, prim.Variable("_r0"))})
    y = pt.IndexLambda(
        expr=Reduce(inner, SumReductionOperation(), {"_r0": (0, 10)}),
        shape=(), dtype=x.dtype, bindings={"_in0": x},
        var_to_reduction_descr={
            "_r0": pt.ReductionDescriptor(frozenset()),
            "_r1": pt.ReductionDescriptor(frozenset())})
    with pytest.raises(CannotBeLoweredToLoopyError,
                       match="index of an enclosing reduction"):
        pt.generate_loopy(y)


def test_data_dependent_bounds_in_a_substitution_rule_are_an_error() -> None:
    from pytato.diagnostic import CannotBeLoweredToLoopyError
    from pytato.tags import ImplSubstitution

    x = pt.make_placeholder("x", (10,), np.float64)
    y = _prefix_sum(x).tagged(ImplSubstitution())
    with pytest.raises(CannotBeLoweredToLoopyError, match="ImplSubstitution"):
        pt.generate_loopy(2 * y)

# }}}

# vim: foldmethod=marker
