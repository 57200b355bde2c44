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
    """x + 1 + 1 + ... (DEPTH additions), built by direct construction with
    one shared scalar expression, which keeps building cheap."""
    x = pt.make_placeholder("x", (4,))
    expr = prim.Sum((prim.Variable("_in0")[(prim.Variable("_0"),)],
                     np.float64(1)))
    dtype = np.dtype(np.float64)
    y: pt.Array = x
    for _ in range(DEPTH):
        y = IndexLambda((4,), dtype, expr, {"_in0": y})
    return y


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
    assert d2["b"].bindings["_in0"] is d2["a"]
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

    elapsed = time.perf_counter() - start
    assert elapsed < 60, f"deep-graph operations took {elapsed:.1f} s"


def test_deep_chain_dce_drops_dead_bindings(chain: pt.Array) -> None:
    # a dead binding on top of the chain drops all of it
    dead = IndexLambda((4,), np.dtype(np.float64),
                       prim.Variable("_in0")[(prim.Variable("_0"),)],
                       {"_in0": pt.make_placeholder("w", (4,)), "_in1": chain})
    out = pt.eliminate_dead_code(dead)
    assert set(out.bindings) == {"_in0"}
    assert get_num_nodes(out) == 2
