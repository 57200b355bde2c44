"""pytato.analysis on hand-built graphs."""

from __future__ import annotations

import numpy as np
import pymbolic.primitives as prim
import pytest
from random_graphs import make_random_graph

import pytato as pt
from pytato.analysis import (
    CostEstimate,
    collect_materialized_nodes,
    estimate_cost,
    get_bytes_estimate,
    get_flop_count,
    get_list_of_users,
    get_max_node_depth,
    get_node_multiplicities,
    get_node_type_counts,
    get_num_call_sites,
    get_num_nodes,
    get_num_tags_of_type,
    get_nusers,
    is_einsum_similar_to_subscript,
)
from pytato.array import Einsum, IndexLambda, Stack
from pytato.diagnostic import EinsumSpecError
from pytato.tags import ImplStored, Named, PrefixNamed


def _duplicated_graph():
    """x -> (sin(x) twice, as distinct equal objects) -> stack."""
    x = pt.make_placeholder("x", (4, 3))
    a = pt.sin(x)
    b = pt.sin(pt.make_placeholder("x", (4, 3)))
    return x, a, b, pt.Stack((a, b, a), 0)


def test_node_counts() -> None:
    x, a, _, s = _duplicated_graph()
    assert get_num_nodes(s) == 3
    assert get_num_nodes(s, count_duplicates=True) == 5
    assert get_node_type_counts(s) == {pt.Placeholder: 1, IndexLambda: 1,
                                       Stack: 1}
    assert get_node_type_counts(s, count_duplicates=True) == {
        pt.Placeholder: 2, IndexLambda: 2, Stack: 1}
    mult = get_node_multiplicities(s)
    assert mult == {x: 2, a: 2, s: 1}
    # outputs in several forms
    d = pt.make_dict_of_named_arrays({"s": s, "x": x})
    assert get_num_nodes(d) == get_num_nodes({"s": s}) == get_num_nodes([s, x]) \
        == 3
    with pytest.raises(TypeError):
        get_num_nodes(3)


def test_counts_include_shape_nodes() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 2 * n))
    assert get_node_type_counts(x) == {pt.SizeParam: 1, IndexLambda: 1,
                                       pt.Placeholder: 1}


def test_users() -> None:
    x = pt.make_placeholder("x", (3,))
    y = pt.make_placeholder("y", (3,))
    a = x + y
    b = a * x
    c = pt.Stack((a, b, a), 0)
    users = get_list_of_users(c)
    assert users[x] == [a, b]
    assert users[y] == [a]
    assert users[a] == [b, c]
    assert users[c] == []
    assert get_nusers(c) == {x: 2, y: 1, a: 2, b: 1, c: 0}
    # equal duplicates are one node: their users merge
    _, a1, _, s = _duplicated_graph()
    assert get_nusers(s)[a1] == 1


def test_max_depth_and_call_sites() -> None:
    x = pt.make_placeholder("x", (3,))
    assert get_max_node_depth(x) == 1
    y = x
    for _ in range(10):
        y = pt.exp(y)
    assert get_max_node_depth(y) == 11
    assert get_max_node_depth({"a": y, "b": x + 1}) == 11
    assert get_max_node_depth({}) == 0
    assert get_num_call_sites(y) == 0


def test_call_site_counter_dispatches_on_call_nodes() -> None:
    from pytato.analysis import CallSiteCounter

    class _Fn:
        def __init__(self, returns):
            self.returns = returns

    class _Call:
        _mapper_method = "map_call"
        _pt_kids = ()

        def __init__(self, function):
            self.function = function

    x = pt.make_placeholder("x", (3,))
    leaf = _Call(_Fn({"r": x}))
    assert CallSiteCounter().count([leaf]) == 1
    # a call in a function's body counts once per call site of the function
    fn = _Fn({"r": x, "q": leaf})
    assert CallSiteCounter().count([_Call(fn), _Call(fn)]) == 4


def test_tag_counts_and_materialized_nodes() -> None:
    x = pt.make_placeholder("x", (3,))
    n = pt.make_size_param("n")
    dw = pt.make_data_wrapper(np.ones(3))
    a = (x + dw).tagged(ImplStored())
    b = (a * 2).tagged([Named("b")])
    c = (b + 1).tagged([PrefixNamed("c"), ImplStored()])
    d = pt.make_placeholder("y", (n,)) * 2
    out = {"c": c, "d": d}
    assert get_num_tags_of_type(out, ImplStored) == 2
    assert get_num_tags_of_type(out, (Named, PrefixNamed)) == 2
    assert get_num_tags_of_type(out, [ImplStored, Named]) == 3
    mat = collect_materialized_nodes(out)
    assert mat == {x, n, dw, a, c, d, pt.make_placeholder("y", (n,))}
    assert b not in mat


def test_is_einsum_similar_to_subscript() -> None:
    a = pt.make_placeholder("a", (4, 3))
    b = pt.make_placeholder("b", (3, 5))
    e = pt.einsum("ij,jk->ik", a, b)
    assert isinstance(e, Einsum)
    assert is_einsum_similar_to_subscript(e, "ij,jk->ik")
    assert is_einsum_similar_to_subscript(e, "ab,bc->ac")
    assert is_einsum_similar_to_subscript(e, "ij,jk")     # implicit output
    assert not is_einsum_similar_to_subscript(e, "ij,jk->ki")
    assert not is_einsum_similar_to_subscript(e, "ij,kj->ik")
    assert not is_einsum_similar_to_subscript(e, "ij,jk,kl->il")
    t = pt.einsum("ii->i", pt.make_placeholder("s", (3, 3)))
    assert is_einsum_similar_to_subscript(t, "ii->i")
    assert not is_einsum_similar_to_subscript(t, "ij->i")
    r = pt.einsum("ijk,jk->i", pt.make_placeholder("c", (2, 3, 4)),
                  pt.make_placeholder("d", (3, 4)))
    assert is_einsum_similar_to_subscript(r, "abc,bc->a")
    assert not is_einsum_similar_to_subscript(r, "abc,cb->a")
    with pytest.raises(EinsumSpecError):
        is_einsum_similar_to_subscript(e, "i...,jk->ik")
    with pytest.raises(EinsumSpecError):
        is_einsum_similar_to_subscript(e, "ij,jk->iz")
    with pytest.raises(TypeError):
        is_einsum_similar_to_subscript(a, "ij->ij")


def test_cost_estimate_concrete() -> None:
    x = pt.make_placeholder("x", (4, 3))
    y = pt.make_placeholder("y", (3, 5))
    e = pt.einsum("ij,jk->ik", x, y)       # 4*5*3 terms, 1 mult + 1 add each
    s = pt.sum(pt.sin(x) * 2.0 + 1.0, axis=1)
    # sin: 12 calls; *2 + 1: 2 ops on 12 elements; sum: 4 * 3 adds
    cost = estimate_cost({"e": e, "s": s})
    assert cost["e"] == CostEstimate(flops=120, bytes_read=8 * 27,
                                     bytes_written=8 * 20)
    assert get_flop_count(pt.sin(x)) == 12
    assert get_flop_count(pt.sin(x) * 2.0) == 24
    assert cost["s"].flops == 12 + 12 * 2 + 4 * 3
    assert cost["s"].bytes_read == 8 * 12
    assert cost["s"].bytes_written == 8 * 4
    assert cost["s"].bytes_moved == 8 * 16
    # a stored intermediate is written and read once more
    stored = (x * 2).tagged(ImplStored())
    c2 = estimate_cost(stored + 1)["_pt_out"]
    assert c2.bytes_written == 2 * 96 and c2.bytes_read == 2 * 96
    assert get_bytes_estimate({"a": stored + 1}) == 96 * 4
    # shared nodes count once in the total
    assert get_flop_count({"e": e, "f": e * 2}) == 120 + 20
    # index remapping is free
    assert get_flop_count(pt.transpose(x)[1:, ::2]) == 0


def test_cost_estimate_symbolic() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3))
    y = x * 2 + x
    cost = estimate_cost({"y": y})["y"]
    assert not isinstance(cost.flops, int)
    assert pt.scalar_expr.evaluate(cost.flops, {"n": 7}) == 2 * 7 * 3
    assert estimate_cost({"y": y}, {"n": 7})["y"] == CostEstimate(
        flops=42, bytes_read=168, bytes_written=168)
    # a reduction over a symbolic extent
    s = pt.sum(pt.make_placeholder("z", (3, n)), axis=1)
    assert get_flop_count(s, {"n": 10}) == 30
    assert isinstance(get_flop_count(s), prim.ExpressionNode)


@pytest.mark.parametrize("seed", range(4))
def test_analyses_run_on_random_graphs(seed: int) -> None:
    g = make_random_graph(seed)
    n = get_num_nodes(g.outputs)
    assert 0 < n <= get_num_nodes(g.outputs, count_duplicates=True)
    assert sum(get_node_type_counts(g.outputs).values()) == n
    assert sum(get_node_multiplicities(g.outputs).values()) == get_num_nodes(
        g.outputs, count_duplicates=True)
    assert len(get_nusers(g.outputs)) == n
    assert get_max_node_depth(g.outputs) <= n
    costs = estimate_cost(g.outputs)
    assert set(costs) == set(g.outputs)
    assert all(isinstance(c.flops, int) and c.flops >= 0 for c in
               costs.values())
    assert pt.deduplicate(g.outputs) == g.outputs
    assert get_num_nodes(pt.deduplicate(g.outputs), count_duplicates=True) == n
