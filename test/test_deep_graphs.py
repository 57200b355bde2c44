"""A 10^5-node chain survives equality, hashing, pickling, printing and the
graph passes, without recursion errors and in linear time."""

from __future__ import annotations

import pickle
import sys
import time

import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.analysis import get_max_node_depth, get_num_nodes
from pytato.array import IndexLambda
from pytato.stringifier import graph_to_str


DEPTH = 100_000


@pytest.fixture(scope="module")
def chain() -> pt.Array:
    from random_graphs import make_deep_chain
    return make_deep_chain(DEPTH)


def test_deep_chain(chain: pt.Array) -> None:
    assert sys.getrecursionlimit() < DEPTH
    start = time.perf_counter()

    # pickling round trip: an equal, distinct graph with the same hash
    data = pickle.dumps(chain)
    copy = pickle.loads(data)
    assert copy is not chain
    assert hash(copy) == hash(chain)
    assert copy == chain
    assert not (copy != chain)
    assert {chain: 1}[copy] == 1

    assert chain != chain.bindings["_in0"]

    # dicts of named arrays pickle as one graph: shared nodes stay shared
    mid = chain
    for _ in range(DEPTH // 2):
        mid = mid.bindings["_in0"]
    d = pt.make_dict_of_named_arrays({"a": mid, "b": mid * 2})
    d2 = pickle.loads(pickle.dumps(d))
    assert isinstance(d2, pt.DictOfNamedArrays) and d2 == d
    assert d2["b"].expr.bindings["_in0"] is d2["a"].expr
    assert d2.tags == d.tags

    # printing: each node once, no recursion
    text = graph_to_str(chain)
    assert text.count("\n") == DEPTH
    assert text.rsplit("\n", 1)[1] == (
        f"v{DEPTH} = IndexLambda (4,) float64: v{DEPTH - 1}[_0] + 1.0")
    assert repr(chain).startswith("IndexLambda(")

    # passes and analyses
    assert pt.eliminate_dead_code(chain) is chain
    dedup = pt.deduplicate({"a": chain, "b": copy})
    assert dedup["a"] is dedup["b"]
    assert get_num_nodes(chain) == DEPTH + 1
    assert get_max_node_depth(chain) == DEPTH + 1

    # A bound that only a super-linear pass can exceed (about 10 s on 2
    # cores; a quadratic pass over 10^5 nodes would take hours), not a
    # benchmark: it must not fail on a loaded machine.
    elapsed = time.perf_counter() - start
    assert elapsed < 600, f"deep-graph operations took {elapsed:.1f} s"


def test_deep_chain_dce_drops_dead_bindings(chain: pt.Array) -> None:
    # a dead binding on top of the chain drops all of it
    dead = IndexLambda((4,), np.dtype(np.float64),
                       prim.Variable("_in0")[(prim.Variable("_0"),)],
                       {"_in0": pt.make_placeholder("w", (4,)), "_in1": chain})
    out = pt.eliminate_dead_code(dead)
    assert set(out.bindings) == {"_in0"}
    assert get_num_nodes(out) == 2


def test_deep_chain_walk_mappers(chain: pt.Array) -> None:
    """The uncached WalkMapper and a CachedWalkMapper called with extra
    arguments walk a 10^5-deep chain without recursion errors, in the order
    of the recursive walk."""
    from pytato.transform import CachedWalkMapper, WalkMapper

    class Count(WalkMapper[[]]):
        def __init__(self) -> None:
            self.pre: list[int] = []
            self.post = 0

        def visit(self, expr: object) -> bool:
            self.pre.append(id(expr))
            return True

        def post_visit(self, expr: object) -> None:
            self.post += 1

    c = Count()
    c(chain)
    assert len(c.pre) == c.post == DEPTH + 1
    assert c.pre[0] == id(chain)           # pre-order: the root first

    class CountArgs(WalkMapper[[int]]):
        def __init__(self) -> None:
            self.seen = 0

        def visit(self, expr: object, scale: int) -> bool:
            self.seen += scale
            return True

    ca = CountArgs()
    ca(chain, 3)
    assert ca.seen == 3 * (DEPTH + 1)

    class CachedArgs(CachedWalkMapper[[int]]):
        def __init__(self) -> None:
            super().__init__()
            self.seen = 0

        def visit(self, expr: object, scale: int) -> bool:
            self.seen += scale
            return True

    cc = CachedArgs()
    cc(chain, 2)
    assert cc.seen == 2 * (DEPTH + 1)

    # an overridden method (of the leaf's type): the walk stays iterative
    # above it
    class Override(Count):
        def map_placeholder(self, expr: pt.Placeholder) -> None:
            self.pre.append(-1)
            super().map_placeholder(expr)

    o = Override()
    o(chain)
    assert o.pre[-2] == -1    # before the visit of the placeholder
    assert len(o.pre) == DEPTH + 2 and o.post == DEPTH + 1


def test_walk_mapper_paths_and_pruning() -> None:
    """The uncached walk visits shared nodes once per path, prunes where
    ``visit`` returns False, and post-visits in post-order (bool and
    complex graphs)."""
    from pytato.transform import WalkMapper

    for dtype in (np.bool_, np.complex128):
        x = pt.make_placeholder("x", (3,), dtype)
        a = pt.logical_not(x) if dtype == np.bool_ else pt.exp(x)
        b = pt.stack([a, a])
        e = a[np.newaxis]
        pruned = pt.concatenate([b, e])

        class Log(WalkMapper[[]]):
            def __init__(self, prune: object) -> None:
                self.log: list[tuple[str, int]] = []
                self.prune = prune

            def visit(self, expr: object) -> bool:
                self.log.append(("pre", id(expr)))
                return expr is not self.prune

            def post_visit(self, expr: object) -> None:
                self.log.append(("post", id(expr)))

        w = Log(b)
        w(pruned)
        assert w.log == [("pre", id(pruned)), ("pre", id(b)), ("pre", id(e)),
                         ("pre", id(a)), ("pre", id(x)), ("post", id(x)),
                         ("post", id(a)), ("post", id(e)), ("post", id(pruned))]
        w2 = Log(b)
        w2(b)       # pruned at the root
        assert w2.log == [("pre", id(b))]
        w3 = Log(b)
        w3(pt.stack([a, a]))      # a shared node: walked once per path
        assert sum(1 for what, i in w3.log if i == id(x)) == 4
