"""Graph passes: each keeps results (random graphs against numpy) and does
what it promises (hand-built graphs)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymbolic.primitives as prim
import pytest
from pytools.tag import Tag, UniqueTag
from random_graphs import make_random_graph

import pytato as pt
from pytato.analysis import get_node_type_counts, get_num_nodes
from pytato.array import (
    Einsum,
    EinsumReductionAxis,
    IndexLambda,
    Reshape,
)
from pytato.diagnostic import NonUniqueTagError
from pytato.scalar_expr import Reduce, SumReductionOperation
from pytato.tags import ImplStored


def _run(result, inputs):
    """Evaluate *result* (a dict of arrays) with the numpy target."""
    return pt.generate_numpy(result)(**inputs)


def _check(graph, transformed) -> None:
    assert set(transformed) == set(graph.outputs)
    for name, ary in transformed.items():
        assert ary.shape == graph.outputs[name].shape
        assert ary.dtype == graph.outputs[name].dtype
    result = _run(transformed, graph.inputs_for(transformed))
    for name, ref in graph.expected.items():
        np.testing.assert_allclose(result[name], ref, rtol=1e-11, atol=1e-13,
                                   err_msg=f"{name}: ops {graph.ops}")


@dataclass(frozen=True)
class _AxisA(Tag):
    pass


@dataclass(frozen=True)
class _AxisB(Tag):
    pass


@dataclass(frozen=True)
class _UniqueAxis(UniqueTag):
    which: int


def _tag_inputs(outputs):
    """Tag the first axis of every placeholder, so that unify_axes_tags has
    something to propagate."""
    def tag(node):
        if isinstance(node, pt.Placeholder) and node.ndim:
            return node.with_tagged_axis(0, _AxisA())
        return node
    return dict(pt.transform.map_and_copy(pt.DictOfNamedArrays(outputs), tag))


_PASSES = {
    "deduplicate": pt.deduplicate,
    "eliminate_dead_code": pt.eliminate_dead_code,
    "unify_axes_tags": lambda g: pt.unify_axes_tags(_tag_inputs(g)),
    "rewrite_einsums_with_no_broadcasts": pt.rewrite_einsums_with_no_broadcasts,
    "apply_distributive_property_to_einsums":
        pt.apply_distributive_property_to_einsums,
    "precompute_subexpressions": pt.precompute_subexpressions,
    "all_in_sequence": lambda g: pt.precompute_subexpressions(
        pt.rewrite_einsums_with_no_broadcasts(
            pt.apply_distributive_property_to_einsums(
                pt.eliminate_dead_code(pt.deduplicate(g))))),
}


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("pass_name", sorted(_PASSES))
def test_passes_keep_results(pass_name: str, seed: int) -> None:
    graph = make_random_graph(seed, n_steps=30, n_data_wrappers=2)
    _check(graph, _PASSES[pass_name](dict(graph.outputs)))


@pytest.mark.parametrize("pass_name", sorted(_PASSES))
def test_passes_keep_results_float32(pass_name: str) -> None:
    graph = make_random_graph(100, n_steps=20, dtype=np.float32)
    transformed = _PASSES[pass_name](dict(graph.outputs))
    result = _run(transformed, graph.inputs_for(transformed))
    for name, ref in graph.expected.items():
        assert result[name].dtype == np.float32
        np.testing.assert_allclose(result[name], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pass_name", ["deduplicate", "eliminate_dead_code",
                                       "rewrite_einsums_with_no_broadcasts",
                                       "apply_distributive_property_to_einsums",
                                       "unify_axes_tags"])
def test_passes_accept_arrays_and_dicts(pass_name: str) -> None:
    x = pt.make_placeholder("x", (3, 4))
    y = pt.sin(x) + 1
    fn = getattr(pt, pass_name)
    assert fn(y) == y
    d = fn(pt.make_dict_of_named_arrays({"y": y}))
    assert isinstance(d, pt.DictOfNamedArrays) and d["y"].expr == y
    d = fn({"y": y})
    assert isinstance(d, dict) and d["y"] == y


# {{{ deduplicate

def test_deduplicate_merges_equal_subgraphs() -> None:
    x = pt.make_placeholder("x", (4, 3))
    a = pt.sin(x) * 2
    b = pt.sin(pt.make_placeholder("x", (4, 3))) * 2   # equal, distinct
    assert a == b and a is not b
    s = pt.Stack((a, b), 0)
    assert get_num_nodes(s, count_duplicates=True) == 7
    d = pt.deduplicate(s)
    assert d == s
    assert d.arrays[0] is d.arrays[1]
    assert get_num_nodes(d, count_duplicates=True) == 4
    # idempotent, and graphs without duplicates come back as they are
    assert pt.deduplicate(d) is d
    assert pt.deduplicate(a) is a


def test_deduplicate_shares_across_outputs() -> None:
    x = pt.make_placeholder("x", (5,))
    d = pt.deduplicate({"a": pt.exp(x) + 1,
                        "b": pt.exp(pt.make_placeholder("x", (5,))) * 3})
    assert d["a"].bindings["_in0"] is d["b"].bindings["_in0"]


def test_deduplicate_keeps_data_wrappers_of_different_data_apart() -> None:
    d1 = pt.make_data_wrapper(np.ones(3))
    d2 = pt.make_data_wrapper(np.ones(3))
    s = pt.deduplicate(pt.Stack((d1 + 1, d2 + 1, d1 + 1), 0))
    assert s.arrays[0] is s.arrays[2]
    assert s.arrays[0] is not s.arrays[1]


# }}}


# {{{ dead code elimination

def test_dce_drops_unused_bindings_and_their_subgraphs() -> None:
    x = pt.make_placeholder("x", (4,))
    y = pt.make_placeholder("y", (4,))
    unused = pt.exp(y) * 3
    idx = prim.Variable("_0")
    lam = IndexLambda((4,), np.dtype(np.float64), prim.Variable("a")[idx] * 2,
                      {"a": x + 1, "b": unused},
                      var_to_reduction_descr={"_r9": pt.ReductionDescriptor()})
    out = pt.eliminate_dead_code(pt.make_dict_of_named_arrays({"o": lam}))
    assert set(out["o"].expr.bindings) == {"a"}
    assert not out["o"].expr.var_to_reduction_descr
    assert set(out["o"]._pt_inputs) == {"x"}
    assert get_num_nodes(out) == 3
    assert out["o"].tags == lam.tags and out["o"].axes == lam.axes
    xv = np.arange(4.0)
    np.testing.assert_allclose(_run(out, {"x": xv})["o"], (xv + 1) * 2)


def test_dce_keeps_reduction_descriptors_in_use() -> None:
    x = pt.make_placeholder("x", (4, 3))
    s = pt.sum(x, axis=1)
    assert pt.eliminate_dead_code(s) is s
    red = IndexLambda((4,), np.dtype(np.float64),
                      Reduce(prim.Variable("a")[prim.Variable("_0"),
                                                prim.Variable("_r0")],
                             SumReductionOperation(), {"_r0": (0, 3)}),
                      {"a": x, "b": x * 2},
                      var_to_reduction_descr={"_r0": pt.ReductionDescriptor()})
    out = pt.eliminate_dead_code(red)
    assert set(out.bindings) == {"a"}
    assert set(out.var_to_reduction_descr) == {"_r0"}


# }}}


# {{{ unify_axes_tags

def _axis_tags(ary, i):
    return {type(t) for t in ary.axes[i].tags}


def test_unify_axes_through_elementwise_einsum_and_remapping() -> None:
    x = pt.make_placeholder("x", (4, 3)).with_tagged_axis(0, _AxisA())
    y = pt.make_placeholder("y", (3, 5)).with_tagged_axis(1, _AxisB())
    z = pt.einsum("ij,jk->ik", x, y)         # (4, 5)
    w = pt.transpose(pt.sin(z) + 1)          # (5, 4)
    s = pt.stack([w, w], axis=1)             # (5, 2, 4)
    r = pt.roll(pt.reshape(s, (5, 8)), 1, axis=0)
    c = pt.concatenate([x, x], axis=0)       # (8, 3)
    out = pt.unify_axes_tags({"w": w, "s": s, "r": r, "c": c, "z": z})
    assert _axis_tags(out["z"], 0) == {_AxisA} and _axis_tags(out["z"], 1) == {
        _AxisB}
    assert _axis_tags(out["w"], 0) == {_AxisB} and _axis_tags(out["w"], 1) == {
        _AxisA}
    assert _axis_tags(out["s"], 0) == {_AxisB}
    assert _axis_tags(out["s"], 1) == set()
    assert _axis_tags(out["s"], 2) == {_AxisA}
    # the reshape keeps axis 0 (length 5), merges the others
    assert _axis_tags(out["r"], 0) == {_AxisB}
    assert _axis_tags(out["r"], 1) == set()
    # concatenation: the joined axis is not equal, the other one is
    assert _axis_tags(out["c"], 0) == set()
    # the einsum's reduction axis is shared by x's axis 1 and y's axis 0
    x2 = pt.make_placeholder("x", (4, 3))
    y2 = pt.make_placeholder("y", (3, 5)).with_tagged_axis(0, _AxisB())
    out2 = pt.unify_axes_tags(pt.einsum("ij,jk->ik", x2, y2))
    assert _axis_tags(out2.args[0], 1) == {_AxisB}
    assert _axis_tags(out2.args[0], 0) == set()


def test_unify_axes_through_reductions_indexing_and_broadcasts() -> None:
    x = pt.make_placeholder("x", (6, 4)).with_tagged_axis(1, _AxisA())
    y = pt.make_placeholder("y", (4,))
    s = pt.sum(x * y, axis=0)                 # (4,): y's axis equals x's axis 1
    b = x[::-1, :]
    adv = x[pt.make_data_wrapper(np.array([0, 2])), :]
    out = pt.unify_axes_tags({"s": s, "b": b, "adv": adv, "y": y})
    assert _axis_tags(out["s"], 0) == {_AxisA}
    assert _axis_tags(out["y"], 0) == {_AxisA}
    assert _axis_tags(out["b"], 1) == {_AxisA}
    assert _axis_tags(out["adv"], 1) == {_AxisA}
    assert _axis_tags(out["adv"], 0) == set()

    # a reduction index shared by two bindings relates their axes
    u = pt.make_placeholder("u", (3, 5)).with_tagged_axis(1, _AxisB())
    v = pt.make_placeholder("v", (5,))
    red = IndexLambda(
        (3,), np.dtype(np.float64),
        Reduce(prim.Variable("a")[prim.Variable("_0"), prim.Variable("_r0")]
               * prim.Variable("b")[prim.Variable("_r0")],
               SumReductionOperation(), {"_r0": (0, 5)}),
        {"a": u, "b": v},
        var_to_reduction_descr={"_r0": pt.ReductionDescriptor()})
    out = pt.unify_axes_tags(red)
    assert _axis_tags(out.bindings["b"], 0) == {_AxisB}
    assert _axis_tags(out, 0) == set()


def test_unify_axes_options_and_conflicts() -> None:
    x = pt.make_placeholder("x", (4, 6)).with_tagged_axis(0, _AxisA())
    r = pt.reshape(x, (4, 2, 3))
    out = pt.unify_axes_tags(r)
    assert _axis_tags(out, 0) == {_AxisA}
    out = pt.unify_axes_tags(r, node_t_to_not_propagate_through={Reshape})
    assert _axis_tags(out, 0) == set()
    out = pt.unify_axes_tags(r, tag_t_to_not_propagate={_AxisA})
    assert _axis_tags(out, 0) == set()
    assert pt.unify_axes_tags(pt.sin(pt.make_placeholder("z", (3,)))) == pt.sin(
        pt.make_placeholder("z", (3,)))

    a = pt.make_placeholder("a", (3,)).with_tagged_axis(0, _UniqueAxis(1))
    b = pt.make_placeholder("b", (3,)).with_tagged_axis(0, _UniqueAxis(2))
    with pytest.raises(NonUniqueTagError, match="conflicting"):
        pt.unify_axes_tags(a + b)


def test_unify_axes_is_linear_on_long_chains() -> None:
    x = pt.make_placeholder("x", (3, 4)).with_tagged_axis(1, _AxisA())
    y = x
    for _ in range(3000):
        y = pt.transpose(y)
    out = pt.unify_axes_tags(y)
    assert _axis_tags(out, 1) == {_AxisA}


# }}}


# {{{ einsum rewrites

def _einsum_operand_ndims(ary):
    return [tuple(a.ndim for a in n.args)
            for n in pt.transform.topological_order([ary])
            if isinstance(n, Einsum)]


def test_rewrite_einsums_with_no_broadcasts() -> None:
    a = pt.make_placeholder("a", (4, 3))
    b = pt.make_placeholder("b", (3,))
    c = pt.make_placeholder("c", (1, 3))
    e1 = pt.einsum("ij,ij->i", a, pt.broadcast_to(b, (4, 3)))
    e2 = pt.einsum("ij,ij->ij", a, pt.broadcast_to(c, (4, 3)))
    # the broadcast axis is the only one of length 4 for 'k': kept
    e3 = pt.einsum("kj,j->kj", pt.broadcast_to(b, (4, 3)), b)
    out = pt.rewrite_einsums_with_no_broadcasts({"e1": e1, "e2": e2, "e3": e3})
    assert _einsum_operand_ndims(out["e1"]) == [(2, 1)]
    assert _einsum_operand_ndims(out["e2"]) == [(2, 1)]
    assert _einsum_operand_ndims(out["e3"]) == [(2, 1)]
    assert out["e3"] is e3
    vals = {"a": np.random.default_rng(0).random((4, 3)),
            "b": np.arange(3.0), "c": np.arange(3.0)[None] + 1}
    got = _run(out, vals)
    np.testing.assert_allclose(got["e1"], vals["a"] @ vals["b"])
    np.testing.assert_allclose(got["e2"], vals["a"] * vals["c"])
    np.testing.assert_allclose(got["e3"], np.broadcast_to(vals["b"] ** 2,
                                                          (4, 3)))
    # the einsum's descriptors stay valid for a broadcast in a reduction
    e4 = pt.einsum("ij,ij->", a, pt.broadcast_to(b, (4, 3)))
    out4 = pt.rewrite_einsums_with_no_broadcasts(e4)
    assert out4.args[1] is b
    assert out4.access_descriptors[1] == (EinsumReductionAxis(1),)


def test_distributive_law_on_einsums() -> None:
    a = pt.make_placeholder("a", (4, 3))
    b = pt.make_placeholder("b", (4, 3))
    c = pt.make_placeholder("c", (3, 5))
    d = pt.make_placeholder("d", (3, 5))
    e = pt.einsum("ij,jk->ik", a - 2 * b + a, c + d).tagged(ImplStored())
    out = pt.apply_distributive_property_to_einsums(e)
    counts = get_node_type_counts(out)
    # (a + a - 2b) has two distinct summands (a twice), (c + d) two: 4 einsums
    assert counts[Einsum] == 4
    assert out.tags == e.tags
    assert not any(isinstance(n, Einsum) and n.tags
                   for n in pt.transform.topological_order([out]))
    rng = np.random.default_rng(1)
    vals = {k: rng.random(v.shape) for k, v in
            {"a": a, "b": b, "c": c, "d": d}.items()}
    ref = (2 * vals["a"] - 2 * vals["b"]) @ (vals["c"] + vals["d"])
    np.testing.assert_allclose(_run({"o": out}, vals)["o"], ref)

    # only the second operand
    out2 = pt.apply_distributive_property_to_einsums(
        e, should_distribute=lambda einsum, iarg: iarg == 1)
    assert get_node_type_counts(out2)[Einsum] == 2
    np.testing.assert_allclose(_run({"o": out2}, vals)["o"], ref)
    # nothing to do
    assert pt.apply_distributive_property_to_einsums(
        e, should_distribute=lambda einsum, iarg: False) is e
    f = pt.einsum("ij,jk->ik", a, c)
    assert pt.apply_distributive_property_to_einsums(f) is f


def test_distributive_law_on_deeply_nested_sums() -> None:
    xs = [pt.make_placeholder(f"x{i}", (3,)) for i in range(300)]
    total = xs[0]
    for x in xs[1:]:
        total = total + x
    v = pt.make_placeholder("v", (3,))
    out = pt.apply_distributive_property_to_einsums(pt.einsum("i,i->", total, v))
    assert get_node_type_counts(out)[Einsum] == 300
    vals = {f"x{i}": np.full(3, float(i)) for i in range(300)}
    vals["v"] = np.ones(3)
    np.testing.assert_allclose(_run({"o": out}, vals)["o"],
                               3 * sum(range(300)))


# }}}


# {{{ precompute

def test_precompute_subexpressions() -> None:
    x = pt.make_placeholder("x", (4,))
    dw = pt.make_data_wrapper(np.arange(4.0))
    const = pt.sin(dw) * 2 + pt.arange(4.0)
    out = pt.precompute_subexpressions({"a": x * const, "b": const,
                                        "c": dw, "d": x + 1})
    assert isinstance(out["b"], pt.DataWrapper)
    assert out["a"].bindings["_in1"] is out["b"]
    assert out["c"] is dw
    assert out["d"] == x + 1
    np.testing.assert_allclose(out["b"].data, np.sin(np.arange(4.0)) * 2
                               + np.arange(4.0))
    assert not out["b"].data.flags.writeable
    # a graph without constants comes back as it is
    y = x + 1
    assert pt.precompute_subexpressions(y) is y
    # tags and axes of the replaced node are kept
    t = (pt.arange(3.0) + 1).tagged(ImplStored()).with_tagged_axis(0, _AxisA())
    p = pt.precompute_subexpressions(t)
    assert isinstance(p, pt.DataWrapper)
    assert p.tags == t.tags and p.axes == t.axes
    np.testing.assert_allclose(p.data, np.arange(3.0) + 1)


def test_precompute_with_custom_evaluator() -> None:
    calls = []

    def evaluate(outputs):
        calls.append(sorted(outputs))
        return pt.generate_numpy(outputs)()

    c = pt.make_data_wrapper(np.ones((2, 2))) @ pt.make_data_wrapper(np.eye(2))
    x = pt.make_placeholder("x", (2, 2))
    out = pt.precompute_subexpressions(x + c, evaluate=evaluate)
    assert len(calls) == 1 and len(calls[0]) == 1
    np.testing.assert_allclose(out.bindings["_in1"].data, np.ones((2, 2)))

# }}}


def test_passes_on_a_symbolic_shape() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3)).with_tagged_axis(0, _AxisA())
    v = pt.make_placeholder("v", (3,))
    y = pt.einsum("ij,ij->i", x + x * 2, pt.broadcast_to(v, (n, 3)))
    out = {"y": y, "z": pt.reshape(pt.sin(x), (n, 3, 1))}
    for fn in _PASSES.values():
        res = fn(dict(out))
        xv = np.arange(15.0).reshape(5, 3)
        vv = np.arange(3.0)
        got = _run(res, {"x": xv, "v": vv})
        np.testing.assert_allclose(got["y"], (3 * xv) @ vv)
        np.testing.assert_allclose(got["z"], np.sin(xv)[:, :, None])
    tagged = pt.unify_axes_tags(out)
    assert _axis_tags(tagged["y"], 0) == {_AxisA}
    assert _axis_tags(tagged["z"], 0) == {_AxisA}


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.complex128, np.bool_])
def test_distributive_law_dtypes(dtype) -> None:
    a = pt.make_placeholder("a", (3,), dtype)
    b = pt.make_placeholder("b", (3,), dtype)
    # for booleans '+' is 'or': not distributed
    e = pt.einsum("i,i->", a + b, b) if dtype == np.bool_ else pt.einsum(
        "i,i->", a - b, a + b)
    out = pt.apply_distributive_property_to_einsums(e)
    vals = {"a": np.array([1, 2, 3]).astype(dtype),
            "b": np.array([4, 0, 1]).astype(dtype)}
    assert _run({"o": out}, vals)["o"] == _run({"o": e}, vals)["o"]
    n_einsums = get_node_type_counts(out)[Einsum]
    assert n_einsums == {np.int32: 4, np.uint32: 2, np.complex128: 4,
                         np.bool_: 1}[dtype]
