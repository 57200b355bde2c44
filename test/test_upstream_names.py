"""Behaviour of the names provided for compatibility with the reference
pytato (see ``doc/upstream.rst``): :mod:`pytato.raising`,
:mod:`pytato.utils`, :mod:`pytato.reductions`, :mod:`pytato.pad`, the
analysis mappers, the scalar expression helpers, loopy shape inference and
the code generation helpers. Results of graphs are checked against numpy on
the OpenCL device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.diagnostic import (
    CannotBroadcastError,
    InvalidEinsumIndex,
    NameClashError,
    ShapeMismatchError,
    UnknownIndexLambdaExpr,
)


def _run(queue: Any, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return out[0] if isinstance(out, tuple) else out


# {{{ raising

def _rebuild(op: Any, shape: tuple[int, ...]) -> Any:
    """The array computing the high-level operation *op*, built with the
    front end."""
    from pytato import raising as r

    binary = {
        r.BinaryOpType.ADD: np.add, r.BinaryOpType.SUB: np.subtract,
        r.BinaryOpType.MULT: np.multiply, r.BinaryOpType.TRUEDIV: np.divide,
        r.BinaryOpType.POWER: np.power, r.BinaryOpType.LESS: np.less,
        r.BinaryOpType.LOGICAL_AND: np.logical_and,
        r.BinaryOpType.EQUAL: np.equal, r.BinaryOpType.FLOORDIV: np.floor_divide,
        r.BinaryOpType.MOD: np.remainder,
    }
    if isinstance(op, r.BinaryOp):
        return getattr(pt, binary[op.binary_op].__name__)(op.x1, op.x2)
    if isinstance(op, r.C99CallOp):
        name = {"atan2": "arctan2"}.get(op.function, op.function)
        return getattr(pt, name)(*op.args)
    if isinstance(op, r.WhereOp):
        return pt.where(op.condition, op.then, op.else_)
    if isinstance(op, r.LogicalNotOp):
        return pt.logical_not(op.x)
    if isinstance(op, r.BroadcastOp):
        return pt.broadcast_to(op.x, shape)
    if isinstance(op, r.FullOp):
        return pt.full(shape, op.fill_value)
    if isinstance(op, r.ReduceOp):
        from pytato import reductions as red
        func = {red.SumReductionOperation: pt.sum,
                red.MaxReductionOperation: pt.amax,
                red.AnyReductionOperation: pt.any}[type(op.op)]
        return func(op.x, axis=tuple(sorted(op.axes)))
    raise AssertionError(op)


_RAISING_CASES = [
    ("add", lambda x, y: x + y, "BinaryOp"),
    ("sub", lambda x, y: x - y, "BinaryOp"),
    ("mul_scalar", lambda x, y: 3 * x, "BinaryOp"),
    ("div", lambda x, y: x / y, "BinaryOp"),
    ("pow", lambda x, y: x ** 2, "BinaryOp"),
    ("less", lambda x, y: x < y, "BinaryOp"),
    ("and", lambda x, y: pt.logical_and(x < 1, y > 0), "BinaryOp"),
    ("not", lambda x, y: pt.logical_not(x < y), "LogicalNotOp"),
    ("where", lambda x, y: pt.where(x < y, x, 2.0), "WhereOp"),
    ("sin", lambda x, y: pt.sin(x), "C99CallOp"),
    ("arctan2", lambda x, y: pt.arctan2(x, y), "C99CallOp"),
    ("broadcast", lambda x, y: pt.broadcast_to(y, (3, 4)), "BroadcastOp"),
    ("full", lambda x, y: pt.full((3, 4), 2.5), "FullOp"),
    ("sum", lambda x, y: pt.sum(x, axis=1), "ReduceOp"),
    ("amax", lambda x, y: pt.amax(x), "ReduceOp"),
    ("any", lambda x, y: pt.any(x, axis=0), "ReduceOp"),
]


@pytest.mark.parametrize(("name", "build", "kind"), _RAISING_CASES,
                         ids=[c[0] for c in _RAISING_CASES])
def test_raising_recovers_the_operation(queue: Any, name: str, build: Any,
                                        kind: str) -> None:
    from pytato.raising import index_lambda_to_high_level_op

    rng = np.random.default_rng(7)
    xv = rng.random((3, 4)) + 0.5
    yv = rng.random(4) + 0.5
    x = pt.make_placeholder("x", (3, 4), np.float64)
    y = pt.make_placeholder("y", (4,), np.float64)
    expr = build(x, y)
    assert isinstance(expr, pt.IndexLambda)
    op = index_lambda_to_high_level_op(expr)
    assert type(op).__name__ == kind
    # the operands are the arrays the expression was built from
    arrays = [v for v in vars(op).values() if isinstance(v, pt.Array)]
    arrays += [a for v in vars(op).values() if isinstance(v, tuple)
               for a in v if isinstance(a, pt.Array)]
    assert all(a in (x, y) or isinstance(a, pt.IndexLambda) for a in arrays)
    rebuilt = _rebuild(op, expr.shape)
    inputs = {k: v for k, v in (("x", xv), ("y", yv))
              if k in rebuilt._pt_inputs or k in expr._pt_inputs}
    np.testing.assert_allclose(_run(queue, rebuilt, **inputs),
                               _run(queue, expr, **inputs))


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.complex128])
def test_raising_over_dtypes(dtype: Any) -> None:
    from pytato.raising import (
        BinaryOp,
        BinaryOpType,
        ReduceOp,
        index_lambda_to_high_level_op,
    )

    x = pt.make_placeholder("x", (5,), dtype)
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n, 5), dtype)
    op = index_lambda_to_high_level_op(pt.equal(x, z))
    assert op == BinaryOp(BinaryOpType.EQUAL, x, z)
    red = index_lambda_to_high_level_op(pt.any(z, axis=0))
    assert isinstance(red, ReduceOp) and red.x is z and list(red.axes) == [0]


def test_raising_rejects_fused_expressions() -> None:
    from pytato.raising import index_lambda_to_high_level_op

    x = pt.make_placeholder("x", (3,), np.float64)
    from pytato.array import make_index_lambda

    fused = make_index_lambda("x[_0] * x[_0] + 1", {"x": x}, (3,),
                                 np.float64)
    with pytest.raises(UnknownIndexLambdaExpr):
        index_lambda_to_high_level_op(fused)
    transposed = make_index_lambda("x[_1, _0]",
                                      {"x": pt.make_placeholder(
                                          "y", (3, 3), np.float64)},
                                      (3, 3), np.float64)
    with pytest.raises(UnknownIndexLambdaExpr, match="not as a broadcast"):
        index_lambda_to_high_level_op(transposed)
    with pytest.raises(TypeError, match="IndexLambda"):
        index_lambda_to_high_level_op(x)  # type: ignore[arg-type]

# }}}


# {{{ utils

@pytest.mark.parametrize("dtypes", [(np.float64, np.float32),
                                    (np.int32, np.int64),
                                    (np.bool_, np.bool_),
                                    (np.complex128, np.float64)])
@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((), (2, 1)),
                                    ((0, 3), (3,)), ((2, 1), (1, 5))])
def test_broadcast_binary_op(queue: Any, dtypes: Any, shapes: Any) -> None:
    from pytato.utils import broadcast_binary_op

    rng = np.random.default_rng(1)
    a = (rng.random(shapes[0]) * 5).astype(dtypes[0])
    b = (rng.random(shapes[1]) * 5 + 1).astype(dtypes[1])
    pa = pt.make_placeholder("a", shapes[0], dtypes[0])
    pb = pt.make_placeholder("b", shapes[1], dtypes[1])

    def result_type(x: Any, y: Any) -> np.dtype[Any]:
        return np.result_type(x.dtype, y.dtype)

    for op, np_op in [(lambda p, q: prim.Sum((p, q)), np.add),
                      (lambda p, q: prim.Product((p, q)), np.multiply)]:
        if dtypes[0] == np.bool_:
            np_op = np.logical_or if np_op is np.add else np.logical_and
            op = ((lambda p, q: prim.LogicalOr((p, q))) if np_op is np.logical_or
                  else (lambda p, q: prim.LogicalAnd((p, q))))
        res = broadcast_binary_op(pa, pb, op, result_type, tags=frozenset(),
                                  non_equality_tags=frozenset(),
                                  cast_to_result_dtype=True)
        expected = np_op(a, b)
        assert res.shape == expected.shape
        assert res.dtype == expected.dtype
        np.testing.assert_allclose(_run(queue, res, a=a, b=b), expected)

    with pytest.raises(CannotBroadcastError):
        broadcast_binary_op(pt.make_placeholder("c", (3,), np.float64),
                            pt.make_placeholder("d", (4,), np.float64),
                            lambda p, q: prim.Sum((p, q)), result_type,
                            tags=frozenset(), non_equality_tags=frozenset(),
                            cast_to_result_dtype=True)
    # two scalars: a scalar of the result dtype
    assert broadcast_binary_op(
        np.float32(2), 3, lambda p, q: prim.Power(p, q),
        lambda x, y: np.dtype(np.float32), tags=frozenset(),
        non_equality_tags=frozenset(), cast_to_result_dtype=True,
        is_pow=True) == np.float32(8)


def test_shape_utils() -> None:
    from pytato.array.remapping import NormalizedSlice
    from pytato.utils import (
        ShapeExpressionMapper,
        are_shape_components_equal,
        are_shapes_equal,
        dim_to_index_lambda_components,
        get_common_dtype_of_ary_or_scalars,
        get_indexing_expression,
        get_shape_after_broadcasting,
        normalized_slice_does_not_change_axis,
        partition,
        update_bindings_and_get_broadcasted_expr,
        with_indices_for_broadcasted_shape,
    )

    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (n, 1), np.float32)
    assert get_shape_after_broadcasting([x, 2.0, pt.zeros((4,))]) == (n, 4)
    with pytest.raises(ShapeMismatchError):
        get_shape_after_broadcasting([pt.zeros((3,)), pt.zeros((4,))])
    assert are_shape_components_equal(n + 1, 1 + n)
    assert not are_shape_components_equal(n, m)
    assert are_shapes_equal((n, 2 * m), (n, m + m))
    assert get_common_dtype_of_ary_or_scalars([x, 2.0]) == np.float32
    assert get_common_dtype_of_ary_or_scalars([x, np.float64(2)]) == np.float64

    expr, bindings = dim_to_index_lambda_components(2 * n + m)
    assert bindings == {"n": n, "m": m}
    assert pt.scalar_expr.evaluate(expr, {"n": 3, "m": 4}) == 10
    from pytools import UniqueNameGenerator
    expr, bindings = dim_to_index_lambda_components(
        n + 1, UniqueNameGenerator({"_in"}))
    (name,) = bindings
    assert name != "n" and bindings[name] is n
    assert dim_to_index_lambda_components(5) == (5, {})

    assert get_indexing_expression((1, 4), (3, 2, 4)) == (
        0, prim.Variable("_2"))
    assert get_indexing_expression((1, 4), (3, 1, 4)) == (
        prim.Variable("_1"), prim.Variable("_2"))
    assert get_indexing_expression((3,), (3,)) == (prim.Variable("_0"),)
    v = prim.Variable("v")
    assert with_indices_for_broadcasted_shape(v, (), (3,)) == v
    bnds: dict[str, pt.Array] = {}
    e = update_bindings_and_get_broadcasted_expr(x, "_in0", bnds, (n, 4))
    assert bnds == {"_in0": x}
    assert e == prim.Subscript(prim.Variable("_in0"), (prim.Variable("_0"), 0))
    assert update_bindings_and_get_broadcasted_expr(1.5, "_in1", bnds, ()) == 1.5

    assert normalized_slice_does_not_change_axis(NormalizedSlice(0, n, 1), n)
    assert not normalized_slice_does_not_change_axis(NormalizedSlice(1, n, 1), n)
    assert not normalized_slice_does_not_change_axis(NormalizedSlice(0, 4, 2), 4)

    assert partition(lambda i: i % 2 == 1, range(6)) == ([0, 2, 4], [1, 3, 5])

    mapper = ShapeExpressionMapper(UniqueNameGenerator())
    e1 = mapper(n * 2)
    e2 = mapper(n + m)
    assert len(mapper.bindings) == 2
    assert set(mapper.bindings.values()) == {n, m}
    names = {v: k for k, v in mapper.bindings.items()}
    assert pt.scalar_expr.evaluate(e1, {names[n]: 5}) == 10
    assert pt.scalar_expr.evaluate(e2, {names[n]: 5, names[m]: 2}) == 7


def test_shape_to_isl() -> None:
    import islpy as isl

    from pytato.utils import ShapeToISLExpressionMapper

    n = pt.make_size_param("n")
    space = isl.Space.create_from_names(isl.DEFAULT_CONTEXT, set=[],
                                        params=["n"])
    aff = ShapeToISLExpressionMapper(space)(2 * n + 1)
    assert aff.is_equal(isl.PwAff("[n] -> { [] -> [(2n + 1)] }"))


def test_einsum_subscript_strings(queue: Any) -> None:
    from pytato.utils import get_einsum_specification, get_einsum_subscript_str

    a = np.random.default_rng(2).random((3, 4, 5))
    b = np.random.default_rng(3).random((5, 4))
    pa = pt.make_placeholder("a", a.shape, np.float64)
    pb = pt.make_placeholder("b", b.shape, np.float64)
    ein = pt.einsum("ijk,kj->i", pa, pb)
    spec = get_einsum_subscript_str(ein)
    assert spec == "ijk,kj->i"
    assert get_einsum_specification(ein) == "ijk,kj->i|float64,float64"
    # the string describes the same contraction
    again = pt.einsum(spec, pa, pb)
    np.testing.assert_allclose(_run(queue, again, a=a, b=b),
                               np.einsum("ijk,kj->i", a, b))
    assert get_einsum_subscript_str(pt.einsum("ba->ab", pb)) == "ji->ij"
    with pytest.raises(InvalidEinsumIndex):
        pt.einsum("i2->i", pb)


def test_make_index_lambda_and_shape_is_int_only(queue: Any) -> None:
    from pytato.array import make_index_lambda, shape_is_int_only

    xv = np.arange(12.0).reshape(3, 4)
    x = pt.make_placeholder("x", (3, 4), np.float64)
    lam = make_index_lambda("x[_1, _0] * 2", {"x": x}, (4, 3), np.float64)
    np.testing.assert_allclose(_run(queue, lam, x=xv), xv.T * 2)
    red = make_index_lambda(
        pt.scalar_expr.Reduce(
            prim.Subscript(prim.Variable("x"), (prim.Variable("_0"),
                                                prim.Variable("_r0"))),
            pt.reductions.SumReductionOperation(), {"_r0": (0, 4)}),
        {"x": x}, (3,), np.float64)
    assert set(red.var_to_reduction_descr) == {"_r0"}
    np.testing.assert_allclose(_run(queue, red, x=xv), xv.sum(axis=1))
    with pytest.raises(TypeError, match="binding 'x'"):
        make_index_lambda("x[_0]", {"x": xv}, (3,), np.float64)

    assert shape_is_int_only((3, np.int64(4))) == (3, 4)
    with pytest.raises(TypeError, match="component 1"):
        shape_is_int_only((3, pt.make_size_param("n")))


def test_reductions_and_pad_modules(queue: Any) -> None:
    import importlib

    import pytato.reductions as red
    from pytato.pad import pad

    # pytato.pad is the function, as upstream; the module is pytato.pad too
    assert pt.pad is pad
    assert importlib.import_module("pytato.pad").pad is pad
    xv = np.arange(6.0).reshape(2, 3)
    x = pt.make_placeholder("x", xv.shape, np.float64)
    np.testing.assert_allclose(_run(queue, pad(x, 1), x=xv),
                               np.pad(xv, 1))
    np.testing.assert_allclose(_run(queue, red.sum(x, axis=0), x=xv),
                               xv.sum(axis=0))
    assert red.SumReductionOperation() == pt.scalar_expr.SumReductionOperation()


def test_array_dataclass_forms() -> None:
    from pytato.array import array_dataclass

    with pytest.raises(ValueError, match="hash"):
        array_dataclass(hash=False)
    assert callable(array_dataclass())

# }}}


# {{{ scalar expressions

def test_scalar_expr_helpers() -> None:
    from pytato.scalar_expr import (
        CombineMapper,
        DependencyMapper,
        IdentityMapper,
        Reduce,
        StringifyMapper,
        SumReductionOperation,
        distribute,
        get_reduction_induction_variables,
        is_integral_scalar_expression,
        is_quasi_affine,
        parse,
    )

    assert IdentityMapper[[]] is not None
    assert CombineMapper[int, []] is not None
    red = Reduce(parse("a[_0, _r0] * (b + c)"), SumReductionOperation(),
                 {"_r0": (0, parse("n"))})
    assert get_reduction_induction_variables(red) == {"_r0"}
    assert get_reduction_induction_variables(3) == frozenset()
    assert StringifyMapper()(red) == "sum(_r0 in [0, n), a[_0, _r0]*(b + c))"
    assert distribute(parse("(a + b)*c")) == distribute(parse("a*c + b*c"))
    assert is_quasi_affine(parse("2*n + (m // 3)"))
    assert not is_quasi_affine(parse("n*m"))
    assert not is_quasi_affine(parse("n // m"))
    assert is_integral_scalar_expression(parse("n*m + 1"))
    assert not is_integral_scalar_expression(parse("n / 2"))
    assert not is_integral_scalar_expression(1.5)
    deps = DependencyMapper(include_idx_lambda_indices=False)(
        parse("a[_0] + _1 + n"))
    assert prim.Variable("_1") not in deps and prim.Variable("n") in deps

# }}}


# {{{ analysis mappers

def test_analysis_mappers() -> None:
    from pytato.analysis import (
        DirectPredecessorsGetter,
        ListOfDirectPredecessorsGetter,
        ListOfUsersCollector,
        MaterializedNodeCollector,
        NodeMultiplicityMapper,
        PytatoKeyBuilder,
        TagCountMapper,
        get_list_of_users,
        get_node_multiplicities,
    )
    from pytato.tags import ImplStored, Named

    x = pt.make_placeholder("x", (3,), np.float64)
    y = (x + 1).tagged(ImplStored())
    z = y * y + x
    out = pt.make_dict_of_named_arrays({"z": z})

    assert DirectPredecessorsGetter()(z) == frozenset(z.bindings.values())
    assert ListOfDirectPredecessorsGetter()(z) == list(z.bindings.values())

    users = ListOfUsersCollector()
    users(out)
    for node, us in get_list_of_users(out).items():
        assert [u for u in users.node_to_users[node]
                if isinstance(u, pt.Array)] == us
    assert users.node_to_users[z] == [out]

    mat = MaterializedNodeCollector()
    mat(out)
    assert set(mat.materialized_nodes) == {x, y, z}
    mat = MaterializedNodeCollector(include_outputs=False)
    mat(out)
    assert set(mat.materialized_nodes) == {x, y}

    dup = pt.make_dict_of_named_arrays({"a": (x + 1) * 2, "b": (x + 1) * 3})
    mult = NodeMultiplicityMapper()
    mult(dup)
    assert {k: v for k, v in mult.expr_multiplicity_counts.items()
            if isinstance(k, pt.Array)} == get_node_multiplicities(dup)

    tagged = pt.make_dict_of_named_arrays({"z": z.tagged(Named("q"))})
    assert TagCountMapper(ImplStored)(tagged) == 1
    assert TagCountMapper([ImplStored, Named])(tagged) == 2

    # a subclass may override one node type
    class Counting(ListOfDirectPredecessorsGetter):
        def map_placeholder(self, expr: Any) -> list[Any]:
            return ["placeholder"]

    assert Counting()(x) == ["placeholder"]

    kb = PytatoKeyBuilder()
    x2 = pt.make_placeholder("x", (3,), np.float64)
    assert kb((x + 1) * 2) == kb((x2 + 1) * 2)
    assert kb((x + 1) * 2) != kb((x + 2) * 2)
    assert kb(np.arange(3)) != kb(np.arange(4))


def test_analysis_and_transform_functions_by_keyword() -> None:
    """The functions of :mod:`pytato.analysis` and :mod:`pytato.transform`
    that upstream's tests call (its random-DAG and determinism tests among
    them), called with upstream's parameter names, agree with the
    positional calls and with counts made by hand."""
    from pytato import analysis as ana, transform as tr
    from pytato.tags import ImplStored

    x = pt.make_placeholder("x", (3, 4), np.float64)
    y = pt.make_placeholder("y", (4,), np.float64)
    e = pt.einsum("ij,j->i", x, y)
    z = (pt.sin(e) + 1).tagged(ImplStored())
    out = pt.make_dict_of_named_arrays({"z": z, "w": 2 * z})
    nodes = tr.get_dependencies(expr=out)
    all_nodes = frozenset().union(*nodes.values())
    assert nodes == tr.get_dependencies(out)
    assert {x, y, e, z} <= all_nodes

    assert ana.get_num_nodes(outputs=out, count_duplicates=False) \
        == ana.get_num_nodes(out) == len(all_nodes)
    counts = ana.get_node_type_counts(outputs=out, count_duplicates=True)
    assert counts == ana.get_node_type_counts(out)
    assert counts[pt.Placeholder] == 2 and counts[pt.Einsum] == 1
    assert sum(counts.values()) == len(all_nodes)
    assert set(ana.get_node_multiplicities(outputs=out).values()) == {1}
    assert ana.get_num_call_sites(outputs=out) == 0
    assert ana.get_num_tags_of_type(outputs=out, tag_types=ImplStored) == 1
    assert ana.get_nusers(outputs=out) == ana.get_nusers(out)
    assert ana.get_nusers(outputs=out)[x] == 1
    assert ana.get_list_of_users(outputs=out)[x] == [e]
    assert ana.collect_materialized_nodes(expr=out, include_outputs=False) \
        == frozenset({x, y, z})
    assert ana.is_einsum_similar_to_subscript(expr=e, subscripts="ij,j->i")
    assert ana.DirectPredecessorsGetter(include_functions=True)(e) \
        == frozenset({x, y})

    assert tr.deduplicate(expr=out) == out
    assert tr.deduplicate_data_wrappers(array_or_names=out) == out
    assert tr.rec_get_user_nodes(expr=out, node=e) >= {z}
    assert tr.get_users(expr=out) == tr.get_users(out)
    assert tr.map_and_copy(expr=out, map_fn=lambda n: n) == out
    assert tr.copy_dict_of_named_arrays(source_dict=out,
                                        copy_mapper=tr.CopyMapper()) == out
    mat = tr.materialize_with_mpms(expr=out)
    assert mat.keys() == out.keys()
    assert tr.Deduplicator()(mat) == mat


def test_analysis_mappers_on_calls() -> None:
    from pytato.analysis import (
        DirectPredecessorsGetter,
        MaterializedNodeCollector,
        NodeMultiplicityMapper,
    )

    x = pt.make_placeholder("x", (4,), np.float64)
    res = pt.trace_call(lambda a: 2 * a, x)
    call = res._container
    assert DirectPredecessorsGetter()(call) == frozenset({x})
    assert call.function in DirectPredecessorsGetter(include_functions=True)(
        call)
    mat = MaterializedNodeCollector()
    mat(pt.make_dict_of_named_arrays({"r": res}))
    # the placeholder of the function's body is an input, materialized
    assert any(isinstance(n, pt.Placeholder) and n is not x
               for n in mat.materialized_nodes)
    mult = NodeMultiplicityMapper()
    mult(pt.make_dict_of_named_arrays({"r": res}))
    assert mult.expr_multiplicity_counts[call.function] == 1

# }}}


# {{{ loopy shape inference

def test_solve_constraints() -> None:
    from pytato.loopy import ShapeInferenceFailure, solve_constraints

    n, m, big_n = prim.Variable("n"), prim.Variable("m"), prim.Variable("N")
    sol = solve_constraints(["n", "m"], ["N"], [(n + 2, big_n), (m, 5)])
    assert sol["m"] == 5
    assert pt.scalar_expr.evaluate(sol["n"], {"N": 9}) == 7
    with pytest.raises(ShapeInferenceFailure, match="not an affine"):
        solve_constraints(["n"], ["N", "M"], [(n, big_n * prim.Variable("M"))])
    with pytest.raises(ShapeInferenceFailure, match="do not determine"):
        solve_constraints(["n", "m"], ["N"], [(n + m, big_n)])
    with pytest.raises(ShapeInferenceFailure, match="no solution"):
        solve_constraints(["n"], [], [(n, 3), (n, 4)])


def test_extend_bindings_with_shape_inference(queue: Any) -> None:
    import loopy as lp

    from pytato.loopy import extend_bindings_with_shape_inference

    knl = lp.make_kernel(
        "{[i, j]: 0 <= i < n and 0 <= j < m}",
        "out[i] = sum(j, x[i, j])",
        [lp.GlobalArg("x", np.float64, shape=("n", "m")),
         lp.GlobalArg("out", np.float64, shape=("n",)),
         lp.ValueArg("n", np.int64), lp.ValueArg("m", np.int64)],
        lang_version=(2018, 2))
    xv = np.random.default_rng(4).random((6, 5))
    x = pt.make_placeholder("x", xv.shape, np.float64)
    bindings = extend_bindings_with_shape_inference(knl, {"x": x})
    assert bindings["n"] == 6 and bindings["m"] == 5
    out = pt.loopy.call_loopy(knl, dict(bindings))["out"]
    np.testing.assert_allclose(_run(queue, out, x=xv), xv.sum(axis=1))

    big_n = pt.make_size_param("N")
    sym = extend_bindings_with_shape_inference(
        knl, {"x": pt.make_placeholder("y", (big_n, 5), np.float64)})
    assert sym["n"] is big_n and sym["m"] == 5

# }}}


# {{{ code generation helpers

def test_codegen_helpers() -> None:
    from pytools import UniqueNameGenerator

    from pytato.codegen import (
        NameGenerator,
        _generate_name_for_temp,
        check_validity_of_outputs,
        is_symbolic_index,
        preprocess,
    )
    from pytato.tags import Named, PrefixNamed

    x = pt.make_placeholder("x", (3,), np.float64)
    for gen in (UniqueNameGenerator(), NameGenerator()):
        assert _generate_name_for_temp(x + 1, gen) == "_pt_temp"
        a = _generate_name_for_temp((x + 1).tagged(PrefixNamed("tmp")), gen)
        b = _generate_name_for_temp((x + 2).tagged(PrefixNamed("tmp")), gen)
        assert a.startswith("tmp") and b.startswith("tmp") and a != b
        assert _generate_name_for_temp((x * 2).tagged(Named("res")),
                                       gen) == "res"
        with pytest.raises(NameClashError, match="res"):
            _generate_name_for_temp((x * 3).tagged(Named("res")), gen)

    with pytest.raises(NameClashError, match="'x'"):
        check_validity_of_outputs(pt.make_dict_of_named_arrays({"x": x + 1}))
    with pytest.raises(TypeError, match="target"):
        preprocess({"y": x + 1}, "opencl")  # type: ignore[arg-type]
    prep = preprocess({"b": x + 1, "a": x * 2}, pt.LoopyPyOpenCLTarget())
    assert prep.compute_order == ("a", "b")
    assert prep.input_names == frozenset({"x"})

    assert is_symbolic_index((0, prim.Variable("i") + 1))
    assert not is_symbolic_index((0.5,))
    assert not is_symbolic_index([0])


def test_bound_program_attributes(ctx_factory: Any) -> None:
    data = np.arange(3.0)
    prg = pt.generate_loopy(pt.make_data_wrapper(data, name="d") * 2)
    assert prg.kernel is prg.program.default_entrypoint
    assert prg.all_bound_args_on_host
    exe = prg.bind_to_context(ctx_factory())
    assert exe.kernel.name == prg.kernel.name
    assert not exe.all_bound_args_on_host

# }}}


# {{{ miscellaneous

def test_reprifier() -> None:
    from pytato.stringifier import Reprifier

    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.sin(x + 1) * 2
    full = Reprifier()(y)
    assert full.count("IndexLambda(") == 3
    assert "Placeholder(shape=(3,), dtype=dtype('float64'), name='x'" in full
    short = Reprifier(1, "<cut>")(y)
    assert short.count("IndexLambda(") == 2 and "<cut>" in short
    assert "Placeholder" not in short
    with pytest.raises(ValueError, match="truncation_depth"):
        Reprifier(-1)


def test_dot_helpers() -> None:
    from pytato.tags import Named
    from pytato.visualization.dot import (
        DotEmitter,
        dot_escape,
        dot_escape_leave_space,
        stringify_shape,
        stringify_tags,
    )

    emit = DotEmitter()
    with emit.block("digraph G"):
        emit("a -> b;")
    assert emit.get() == "digraph G {\n  a -> b;\n}\n"
    assert dot_escape("a <b> c") == "a_&lt;b&gt;_c"
    assert dot_escape_leave_space("a & b") == "a &amp; b"
    assert stringify_shape((3, pt.make_size_param("n"))) == "(3, n)"
    assert stringify_tags(frozenset({Named("x"), None})) == "{Named(name='x')}"
    assert stringify_tags(frozenset()) == "{}"


def test_set_debug_enabled() -> None:
    import logging

    try:
        pt.set_debug_enabled(True)
        assert pt.DEBUG_ENABLED
        assert logging.getLogger("pytato").level == logging.DEBUG
    finally:
        pt.set_debug_enabled(False)
    assert logging.getLogger("pytato").level == logging.NOTSET


def test_replace_if_different() -> None:
    x = pt.make_placeholder("x", (3,), np.float64)
    y = x + 1
    assert y.replace_if_different(bindings=y.bindings) is y
    z = y.replace_if_different(bindings={"_in0": x * 2})
    assert z is not y and z.bindings["_in0"] == x * 2
    d = pt.make_dict_of_named_arrays({"y": y})
    assert d.replace_if_different(tags=d.tags) is d


def test_distributed_send_ref_holder() -> None:
    from pytato.distributed import make_distributed_send

    x = pt.make_placeholder("x", (3,), np.float64)
    send = make_distributed_send(x + 1, 1, "t")
    holder = pt.make_distributed_send_ref_holder(send, x)
    assert holder.send is send and holder.passthrough_data is x
    assert holder.shape == x.shape and holder.dtype == x.dtype
    with pytest.raises(TypeError, match="'send'"):
        pt.make_distributed_send_ref_holder(x, x)  # type: ignore[arg-type]


def test_python_target_names() -> None:
    from pytato.target.python import (
        JAXPythonTarget,
        NumpyLikePythonTarget,
        NumpyTarget,
    )
    from pytato.target.python.numpy_like import first_true

    assert issubclass(NumpyTarget, NumpyLikePythonTarget)
    assert issubclass(JAXPythonTarget, NumpyLikePythonTarget)
    assert NumpyTarget().numpy_like_module_name == "numpy"
    assert JAXPythonTarget().numpy_like_module_name == "jax.numpy"
    assert NumpyTarget().numpy_like_module_name_shorthand == "_pt_np"
    assert first_true([0, "", 3, 4], default=9) == 3
    assert first_true([1, 2, 3], default=9, pred=lambda v: v > 5) == 9


def test_abstract_result_constructor() -> None:
    from pytato.diagnostic import NonUniqueTagError
    from pytato.tags import Named

    class Empty(pt.AbstractResultWithNamedArrays):
        _mapper_method = "map_empty"

        def __getitem__(self, name: str) -> pt.Array:
            raise KeyError(name)

        def __iter__(self) -> Any:
            return iter(())

        def __len__(self) -> int:
            return 0

    assert Empty(tags=frozenset({Named("e")})).tags == frozenset({Named("e")})
    with pytest.raises(NonUniqueTagError):
        Empty(tags=frozenset({Named("e"), Named("f")}))
    with pytest.raises(TypeError):
        Empty(frozenset())  # type: ignore[misc]

# }}}

# vim: foldmethod=marker
