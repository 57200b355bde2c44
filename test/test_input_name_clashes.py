"""Inputs made separately under one name clash, as in the reference pytato:
code generation raises :class:`~pytato.diagnostic.NameClashError` for a
graph holding two distinct placeholders (or size parameters, or named data
wrappers) of one name, even when they are equal; one object used several
times is one input, and :func:`pytato.transform.deduplicate` merges equal
inputs. Results are checked against numpy on the OpenCL device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pytato as pt
from pytato.diagnostic import NameClashError


def _run(queue: Any, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return out[0] if isinstance(out, tuple) else out


def test_placeholders_made_twice_clash() -> None:
    # (the reference's test)
    x = pt.make_placeholder("arr", (10, 4), np.int8)
    y = pt.make_placeholder("arr", (10, 4), np.int8)
    assert x == y and x is not y
    with pytest.raises(NameClashError, match="'arr'"):
        pt.generate_loopy(x + y)
    # as the reference's, also a RuntimeError
    with pytest.raises(RuntimeError):
        pt.generate_loopy(x + y)
    for generate in [pt.generate_numpy, pt.generate_loopy]:
        with pytest.raises(NameClashError, match="'arr'"):
            generate({"a": x + 1, "b": 2 * y})
    with pytest.raises(NameClashError, match="'arr'"):
        pt.codegen.preprocess(x + y)


def test_size_params_made_twice_clash() -> None:
    n1 = pt.make_size_param("n")
    n2 = pt.make_size_param("n")
    x = pt.make_placeholder("arr", (n1, n2), np.int8)
    with pytest.raises(NameClashError, match="'n'"):
        pt.generate_loopy(2 * x)
    y = pt.make_placeholder("y", (n1,), np.float64)
    z = pt.make_placeholder("z", (n2,), np.float64)
    with pytest.raises(NameClashError, match="'n'"):
        pt.generate_loopy(pt.make_dict_of_named_arrays({"y": y, "z": z}))


@pytest.mark.parametrize("build", [
    lambda ops, x, y, z: x + y,
    lambda ops, x, y, z: ops.stack([x, y]),
    lambda ops, x, y, z: ops.where(x > 0, y, z),
    lambda ops, x, y, z: ops.sum(x) + ops.sum(y, axis=0)[0],
    lambda ops, x, y, z: ops.einsum("ij,ij->i", x, y),
    lambda ops, x, y, z: ops.concatenate([(x + 1)[:2], (2 * y)[2:]]),
    lambda ops, x, y, z: (x + z) * (y + z),
    lambda ops, x, y, z: {"a": x + z, "b": 2 * y},
], ids=["add", "stack", "where", "sums", "einsum", "concatenate",
        "shared_subexpression", "outputs"])
def test_clash_anywhere_in_the_graph(queue: Any, build: Any) -> None:
    """*build(ops, x, y, z)* computes with the functions of *ops* (pytato
    or numpy)."""
    x = pt.make_placeholder("arr", (4, 3), np.float64)
    y = pt.make_placeholder("arr", (4, 3), np.float64)
    z = pt.make_placeholder("z", (4, 3), np.float64)
    with pytest.raises(NameClashError, match="'arr'"):
        pt.generate_loopy(build(pt, x, y, z))

    a = np.arange(12, dtype=np.float64).reshape(4, 3) - 5
    c = np.linspace(-1, 1, 12).reshape(4, 3)
    expected = build(np, a, a, c)

    def check(out: Any) -> None:
        if isinstance(out, tuple):
            (out,) = out
        if isinstance(expected, dict):
            for name, value in expected.items():
                np.testing.assert_allclose(out[name], value)
        else:
            np.testing.assert_allclose(out, expected)

    # the same object used twice is one input
    check(pt.generate_loopy(build(pt, x, x, z))(queue, arr=a, z=c)[1])
    # merged by deduplicate, the graph is generated
    dedup = pt.transform.deduplicate(build(pt, x, y, z))
    check(pt.generate_loopy(dedup)(queue, arr=a, z=c)[1])


def test_named_data_wrappers_made_twice_clash(queue: Any) -> None:
    a = np.arange(5, dtype=np.float64)
    d1 = pt.make_data_wrapper(a, name="d")
    d2 = pt.make_data_wrapper(a, name="d")
    assert d1 == d2
    with pytest.raises(NameClashError, match="'d'"):
        pt.generate_loopy(d1 + d2)
    np.testing.assert_allclose(_run(queue, d1 + d1), 2 * a)

    # unnamed data wrappers have no name to clash: bound separately
    b = np.linspace(0, 1, 5)
    for u1, u2, expected in [
            (pt.make_data_wrapper(a), pt.make_data_wrapper(a), 2 * a),
            (pt.make_data_wrapper(a), pt.make_data_wrapper(b), a + b)]:
        np.testing.assert_allclose(_run(queue, u1 + u2), expected)
        np.testing.assert_allclose(pt.generate_numpy(u1 + u2)(), expected)


def test_equal_graph_generated_before_does_not_hide_the_clash(
        queue: Any) -> None:
    # the program cache is keyed by graph equality: a valid graph equal to
    # a clashing one, generated first, must not let the clash through
    x = pt.make_placeholder("arr", (6,), np.float64)
    y = pt.make_placeholder("arr", (6,), np.float64)
    valid = pt.array.make_index_lambda("_in0[_0] + _in1[_0]", {"_in0": x, "_in1": x},
                                 (6,), np.float64)
    clash = pt.array.make_index_lambda("_in0[_0] + _in1[_0]", {"_in0": x, "_in1": y},
                                 (6,), np.float64)
    assert valid == clash
    a = np.arange(6, dtype=np.float64)
    np.testing.assert_allclose(_run(queue, valid, arr=a), 2 * a)
    with pytest.raises(NameClashError, match="'arr'"):
        pt.generate_loopy(clash)
    with pytest.raises(NameClashError, match="'arr'"):
        pt.generate_numpy(clash)


def test_equal_subexpressions_of_one_input_share_a_binding(
        queue: Any) -> None:
    x = pt.make_placeholder("x", (5,), np.float64)
    y = pt.make_placeholder("x", (5,), np.float64)
    # equal and reading the same input: one binding, as before
    assert len(((x + 1) + (x + 1)).bindings) == 1
    # equal but reading distinct inputs: kept apart
    assert len(((x + 1) + (y + 1)).bindings) == 2
    a = np.arange(5, dtype=np.float64)
    np.testing.assert_allclose(_run(queue, (x + 1) * (x + 1), x=a),
                               (a + 1) ** 2)


def test_call_result_shapes_keep_the_size_parameters(queue: Any) -> None:
    # a call substituting some of the sizes of its function's results keeps
    # the other size parameters as the same objects (a new 'n' would clash)
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    k = pt.make_size_param("k")
    x = pt.make_placeholder("x", (n + m,), np.float64)
    fn = pt.trace_call(lambda a: 2 * a, x)._container.function
    assert fn.parameters == {"_pt_arg_0", "n", "m"}
    y = pt.make_placeholder("y", (n + 2 * k,), np.float64)
    call = pt.function.Call(fn, {"_pt_arg_0": y, "n": n, "m": 2 * k})
    result = call["_"] + y
    a = np.arange(3 + 2 * 2, dtype=np.float64)
    np.testing.assert_allclose(_run(queue, result, y=a, n=3, k=2), 3 * a)


def test_function_traced_again_with_another_size_param(queue: Any) -> None:
    # a definition traced before (with another, equal 'n') is shared by the
    # second call, whose results have the shapes of the call's own 'n'
    def f(a: Any) -> Any:
        return 2 * a

    results = []
    for length in [4, 6]:
        n = pt.make_size_param("n")
        x = pt.make_placeholder("x", (n,), np.float64)
        r = pt.trace_call(f, x, identifier="twice")
        results.append(r._container.function)
        a = np.arange(length, dtype=np.float64)
        np.testing.assert_allclose(_run(queue, r + x, x=a, n=length), 3 * a)
        np.testing.assert_allclose(pt.generate_numpy(r + x)(x=a, n=length),
                                   3 * a)
    assert results[0] is results[1]


@pytest.mark.parametrize("keyword", ["queue", "allocator", "wait_for",
                                     "out_host"])
def test_names_of_call_keywords_refused_at_generation(queue: Any,
                                                      keyword: str) -> None:
    # (issue 41, item 6: such inputs were accepted, then the call failed
    # with "got multiple values" or MissingArgumentError)
    x = pt.make_placeholder("x", (3,), np.float64)
    kinds = {
        "placeholder": lambda: 2 * pt.make_placeholder(keyword, (3,),
                                                       np.float64),
        "size parameter": lambda: 2 * pt.make_placeholder(
            "y", (pt.make_size_param(keyword),), np.float64),
        "named data wrapper": lambda: 2 * pt.make_data_wrapper(
            np.ones(3), name=keyword) + x,
        "data wrapper tagged Named": lambda: 2 * pt.make_data_wrapper(
            np.ones(3)).tagged(pt.tags.Named(keyword)) + x,
        "stored array tagged Named": lambda: 3 * (2 * x).tagged(
            (pt.tags.ImplStored(), pt.tags.Named(keyword))),
        "output": lambda: {keyword: 2 * x, "z": 3 * x},
    }
    for kind, build in kinds.items():
        with pytest.raises(NameClashError, match=f"'{keyword}'"):
            pt.generate_loopy(build())
            pytest.fail(f"{kind} named '{keyword}' accepted")
    # a keyword-like name that is not one runs
    y = pt.make_placeholder(keyword + "_", (3,), np.float64)
    a = np.arange(3.0)
    _, (out,) = pt.generate_loopy(2 * y)(queue, **{keyword + "_": a})
    np.testing.assert_allclose(out, 2 * a)
