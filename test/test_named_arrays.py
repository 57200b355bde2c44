"""Entries of a :class:`pytato.DictOfNamedArrays` and results of calls, as
in the reference pytato: ``dona[name]`` is a :class:`pytato.NamedArray`
whose ``.expr`` is the array (arraycontext reads ``.expr.axes`` and
``.expr.tags`` when it freezes), and calling a traced function gives its
results in the shape the function returned them."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from constantdict import constantdict
from pytools.tag import Tag, UniqueTag

import pytato as pt
from pytato.function import Call, NamedCallResult, ReturnType


class _Mark(Tag):
    pass


class _ElementAxis(UniqueTag):
    pass


def _outputs() -> tuple[pt.Array, pt.Array, pt.DictOfNamedArrays]:
    x = pt.make_placeholder("x", (4, 3), np.float64)
    a = (2 * x).tagged(_Mark()).with_tagged_axis(0, _ElementAxis())
    b = pt.sum(x, axis=1)
    return a, b, pt.make_dict_of_named_arrays({"a": a, "b": b})


def test_entries_are_named_arrays() -> None:
    a, b, dona = _outputs()
    na = dona["a"]
    assert isinstance(na, pt.NamedArray)
    assert na.expr is a
    assert na.name == "a"
    assert na._container is dona
    assert na.shape == a.shape and na.dtype == a.dtype
    assert na.axes == a.axes and na.tags == a.tags
    assert na.expr.axes[0].tags_of_type(_ElementAxis)
    # one node per entry, and the mapping interface agrees with indexing
    assert dona["a"] is na
    assert dict(dona.items()) == {"a": na, "b": dona["b"]}
    assert [v.expr for v in dona.values()] == [a, b]
    assert set(dona.keys()) == {"a", "b"}
    assert len(dona) == 2 and "a" in dona and "c" not in dona
    with pytest.raises(KeyError):
        dona["c"]


def test_expr_only_for_dict_entries() -> None:
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.trace_call(lambda u: 2 * u, x)
    assert isinstance(y, NamedCallResult)
    # a call result's .expr is the callee's returned array
    assert y.expr.shape == (3,)


def test_equal_dicts_give_equal_entries() -> None:
    _, _, d1 = _outputs()
    _, _, d2 = _outputs()
    assert d1 == d2
    assert d1["a"] == d2["a"] and hash(d1["a"]) == hash(d2["a"])
    assert d1["a"] != d1["b"]


@pytest.mark.parametrize("as_dict", [False, True])
def test_entries_in_graphs_generate(ctx_factory, as_dict: bool) -> None:
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    _, _, dona = _outputs()
    y = dona["a"] + pt.expand_dims(dona["b"], 1)
    xv = np.arange(12.0).reshape(4, 3)
    ref = 2 * xv + xv.sum(axis=1)[:, None]
    if as_dict:
        prog = pt.generate_loopy({"y": y, "b": dona["b"]})
        _, out = prog(queue, x=xv)
        np.testing.assert_allclose(out["y"], ref)
        np.testing.assert_allclose(out["b"], xv.sum(axis=1))
    else:
        _, (out,) = pt.generate_loopy(y)(queue, x=xv)
        np.testing.assert_allclose(out, ref)


def test_entries_on_the_numpy_target() -> None:
    _, _, dona = _outputs()
    prog = pt.generate_numpy(dona["a"] * 3)
    xv = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(prog(x=xv), 6 * xv)


def test_transforms_keep_entries() -> None:
    _, _, dona = _outputs()
    y = dona["a"] - 1
    copied = pt.transform.CopyMapper()(y)
    assert copied == y
    counts = pt.analysis.get_node_type_counts(copied)
    assert counts[pt.NamedArray] == 1
    # graphs holding entries pickle, and their entries stay entries
    back = pickle.loads(pickle.dumps(y))
    assert back == y
    d_back = pickle.loads(pickle.dumps(dona))
    assert d_back == dona and d_back["b"].expr == dona["b"].expr


def test_function_call_returns_like_the_function(ctx_factory) -> None:
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    x = pt.make_placeholder("x", (5,), np.float64)

    def f(u: pt.Array) -> dict[str, pt.Array]:
        return {"s": u + 1, "d": 2 * u}

    res = pt.trace_call(f, x)
    assert isinstance(res, constantdict)
    assert set(res) == {"s", "d"}
    assert all(isinstance(v, NamedCallResult) for v in res.values())
    call = res["s"].call
    assert isinstance(call, Call)
    assert call.function.return_type == ReturnType.DICT_OF_ARRAYS

    # FunctionDefinition.__call__ gives the same shapes of results
    again = call.function(**call.bindings)
    assert isinstance(again, constantdict) and again == res
    single = pt.trace_call(lambda u: u * 3, x)
    assert isinstance(single._container.function(**single._container.bindings),
                      NamedCallResult)
    pair = pt.trace_call(lambda u: (u, -u), x)
    fn = pair[0].call.function
    assert isinstance(fn(**pair[0].call.bindings), tuple)

    xv = np.linspace(0, 1, 5)
    _, out = pt.generate_loopy({"s": res["s"], "d": res["d"]})(queue, x=xv)
    np.testing.assert_allclose(out["s"], xv + 1)
    np.testing.assert_allclose(out["d"], 2 * xv)
