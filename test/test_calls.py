"""Functions in graphs: tracing, calls, mappers, inlining, and lowering to
callee kernels (PoCL) and the NumPy target."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from constantdict import constantdict

import pytato as pt
from pytato.array.base import topological_order
from pytato.diagnostic import (
    CallBindingError,
    DTypeError,
    FunctionTracingError,
    ShapeMismatchError,
)
from pytato.function import Call, FunctionDefinition, NamedCallResult, ReturnType
from pytato.tags import InlineCallTag
from pytato.transform import CachedWalkMapper, CombineMapper, CopyMapper


# {{{ helpers

def _run(target, result, queue=None, **inputs):
    if target == "numpy":
        return pt.generate_numpy(result)(**inputs)
    prg = pt.generate_loopy(result)
    _, out = prg(queue, **inputs)
    return out if isinstance(out, dict) else out[0]


def _callee_kernels(prg):
    import loopy as lp
    return sorted(name for name, clbl in prg.program.callables_table.items()
                  if isinstance(clbl, lp.CallableKernel)
                  and name not in prg.program.entrypoints)


def _calls_in(expr):
    return [n for n in topological_order([expr]) if isinstance(n, Call)]


def f_sum_diff(a, b):
    return {"s": a + b, "d": 2 * a - b}


def f_norm(a):
    s = pt.sum(a * a, axis=-1)
    return a / pt.sqrt(s)[..., None], pt.sum(s)


def f_scale(a):
    return 3 * pt.sin(a)

# }}}


# {{{ tracing and the graph

def test_trace_call_results():
    x = pt.make_placeholder("x", (4, 3), np.float32)
    y = pt.make_placeholder("y", (4, 3), np.float32)
    d = pt.trace_call(f_sum_diff, x, y)
    # as the reference's: a constantdict of the results of one call
    assert isinstance(d, constantdict) and set(d) == {"s", "d"}
    assert isinstance(d["s"].call, Call) and d["s"].call is d["d"].call
    assert d["s"].call.function.return_type == ReturnType.DICT_OF_ARRAYS
    assert isinstance(d["s"], NamedCallResult)
    assert d["s"].shape == (4, 3) and d["s"].dtype == np.float32

    r, tot = pt.trace_call(f_norm, x)
    assert r.shape == (4, 3) and tot.shape == ()
    assert r._container.function.return_type == ReturnType.TUPLE_OF_ARRAYS

    a = pt.trace_call(f_scale, x)
    assert isinstance(a, NamedCallResult) and a.name == "_"
    assert a._container.function.identifier == "f_scale"
    assert pt.trace_call(f_scale, x, identifier="scale")._container.function \
        .identifier == "scale"


def test_same_function_shares_one_definition():
    x = pt.make_placeholder("x", (5,), np.float64)
    y = pt.make_placeholder("y", (5,), np.float64)
    z = pt.make_placeholder("z", (6,), np.float64)
    c1 = pt.trace_call(f_sum_diff, x, y)["s"].call
    c2 = pt.trace_call(f_sum_diff, y, x + 1)["s"].call
    assert c1.function is c2.function
    assert c1 != c2
    assert pt.trace_call(f_sum_diff, x, y)["s"].call == c1
    # other shapes: another definition
    assert pt.trace_call(f_sum_diff, z, z)["s"].call.function != c1.function
    # structurally equal definitions compare equal even when not shared
    assert pt.trace_call(lambda a, b: {"s": a + b, "d": 2 * a - b}, x, y
                         )["s"].call.function.returns == c1.function.returns


def test_captured_inputs_become_parameters():
    x = pt.make_placeholder("x", (3,), np.float64)
    w = pt.make_placeholder("w", (3,), np.float64)
    data = pt.make_data_wrapper(np.arange(3.0))

    def f(a):
        return a * w + data

    r1 = pt.trace_call(f, x)
    fn = r1._container.function
    assert fn.parameters == {"_pt_arg_0", "_pt_capture_0", "_pt_capture_1"}
    assert {b.name if isinstance(b, pt.Placeholder) else "data"
            for b in r1._container.bindings.values()} == {"x", "w", "data"}
    # other captured data: the same definition
    data = pt.make_data_wrapper(np.ones(3))
    r2 = pt.trace_call(f, x)
    assert r2._container.function is fn
    assert r2 != r1


@pytest.mark.parametrize("ret", [
    lambda a: 1.0,
    lambda a: (a, 2),
    lambda a: {"x": a, "y": np.ones(3)},
    lambda a: {"not an identifier": a},
    lambda a: (),
    lambda a: None,
])
def test_trace_call_non_array_returns(ret):
    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(FunctionTracingError, match="function"):
        pt.trace_call(ret, x, identifier="bad_function")
    with pytest.raises(TypeError):
        pt.trace_call(ret, x)


def test_call_binding_errors():
    x = pt.make_placeholder("x", (3,), np.float64)
    y = pt.make_placeholder("y", (3,), np.float64)
    fn = pt.trace_call(f_sum_diff, x, y)["s"].call.function
    ok = {"_pt_arg_0": x, "_pt_arg_1": y}
    assert Call(fn, ok) == pt.trace_call(f_sum_diff, x, y)["s"].call
    assert fn(**ok) == pt.trace_call(f_sum_diff, x, y)
    with pytest.raises(ShapeMismatchError, match=r"'f_sum_diff'.*'_pt_arg_1'"):
        Call(fn, {**ok, "_pt_arg_1": pt.make_placeholder("z", (4,))})
    with pytest.raises(DTypeError, match=r"'f_sum_diff'.*'_pt_arg_0'.*int32"):
        Call(fn, {**ok, "_pt_arg_0": pt.make_placeholder("z", (3,), np.int32)})
    with pytest.raises(CallBindingError, match=r"missing.*_pt_arg_1"):
        Call(fn, {"_pt_arg_0": x})
    with pytest.raises(CallBindingError, match=r"unknown.*extra"):
        Call(fn, {**ok, "extra": x})
    with pytest.raises(CallBindingError, match="not an array"):
        Call(fn, {**ok, "_pt_arg_1": 3.0})


def test_function_definition_checks():
    p = pt.Placeholder((3,), np.dtype(np.float64), "p")
    q = pt.Placeholder((3,), np.dtype(np.float64), "q")
    with pytest.raises(FunctionTracingError, match=r"'q'.*not a parameter"):
        FunctionDefinition(frozenset({"p"}), ReturnType.ARRAY, {"_": p + q})
    with pytest.raises(FunctionTracingError, match="DataWrapper"):
        FunctionDefinition(frozenset({"p"}), ReturnType.ARRAY,
                           {"_": p + pt.make_data_wrapper(np.ones(3))})


def test_symbolic_size_bindings():
    n = pt.make_size_param("n")
    m = pt.make_size_param("m")
    x = pt.make_placeholder("x", (n,), np.float64)
    r = pt.trace_call(f_scale, x)
    fn = r._container.function
    assert fn.parameters == {"_pt_arg_0", "n"}
    # a call binding n to another size: results have the substituted shape
    call = Call(fn, {"_pt_arg_0": pt.make_placeholder("y", (2 * m,)),
                     "n": 2 * m})
    assert pt.array.shape.are_shapes_equal(call["_"].shape, (2 * m,))
    with pytest.raises(ShapeMismatchError):
        Call(fn, {"_pt_arg_0": pt.make_placeholder("y", (m,)), "n": 2 * m})
    with pytest.raises(CallBindingError, match="size parameter 'n'"):
        Call(fn, {"_pt_arg_0": x, "n": pt.make_placeholder("k", (), np.int64)})


def test_pickle_and_equality():
    x = pt.make_placeholder("x", (3,), np.float64)
    r, t = pt.trace_call(f_norm, pt.trace_call(f_sum_diff, x, x)["d"])
    out = pt.make_dict_of_named_arrays({"r": r, "t": t})
    again = pickle.loads(pickle.dumps(out))
    assert again == out
    assert hash(again["r"].expr) == hash(r)

# }}}


# {{{ mappers and inlining

class _VisitCounter(CachedWalkMapper):
    def __init__(self):
        super().__init__()
        self.visits: dict[int, int] = {}
        self.functions = 0

    def visit(self, expr):
        if isinstance(expr, FunctionDefinition):
            self.functions += 1
        self.visits[id(expr)] = self.visits.get(id(expr), 0) + 1
        return True


class _CountingCopyMapper(CopyMapper):
    def __init__(self, log=None):
        super().__init__()
        self.log = [] if log is None else log

    def clone_for_callee(self, function):
        return _CountingCopyMapper(self.log)

    def map_function_definition(self, expr):
        self.log.append(expr)
        return super().map_function_definition(expr)

    def map_placeholder(self, expr):
        if expr.name == "x":
            return pt.make_placeholder("xx", expr.shape, expr.dtype)
        return expr


class _NodeCounter(CombineMapper):
    def combine(self, *args):
        return sum(args)

    def map_array(self, expr):
        return 1 + super().map_array(expr)

    def map_named_call_result(self, expr):
        return 1 + self.rec(expr._container)


def test_mappers_visit_bodies_once():
    x = pt.make_placeholder("x", (4,), np.float64)
    acc = x
    for _ in range(10):
        acc = pt.trace_call(f_scale, acc) + acc
    fn = acc.bindings["_in0"]._container.function
    body = topological_order(list(fn.returns.values()))

    counter = _VisitCounter()
    counter(acc)
    assert counter.functions == 1
    assert all(counter.visits[id(n)] == 1 for n in body)

    mapper = _CountingCopyMapper()
    new = mapper(acc)
    assert len(mapper.log) == 1
    assert {b.name for b in new._pt_inputs.values()} == {"xx"}
    assert CopyMapper()(acc) is acc

    # body (placeholder, IndexLambda "sin", IndexLambda "3 *") counted once
    assert _NodeCounter()(pt.trace_call(f_scale, x)) == 1 + 3 + 1


def test_inline_calls_and_tagging():
    x = pt.make_placeholder("x", (4,), np.float64)
    y = pt.make_placeholder("y", (4,), np.float64)

    def outer(a, b):
        return pt.trace_call(f_scale, pt.trace_call(f_sum_diff, a, b)["d"])

    r = pt.trace_call(outer, x, y)
    assert pt.inline_calls(r) is r  # nothing tagged
    tagged = pt.tag_all_calls_to_be_inlined(r)
    assert all(c.tags_of_type(InlineCallTag) for c in _calls_in(tagged))
    inner_calls = _calls_in(next(iter(
        _calls_in(tagged)[0].function.returns.values())))
    assert inner_calls and all(c.tags_of_type(InlineCallTag)
                               for c in inner_calls)
    for inlined in [pt.inline_calls(tagged),
                    pt.inline_calls(r, only_tagged=False)]:
        assert not _calls_in(inlined)
        assert {i.name for i in inlined._pt_inputs.values()} == {"x", "y"}

    # tags of a call result stay on the inlined array
    named = pt.trace_call(f_scale, x).tagged(pt.tags.ImplStored())
    assert pt.inline_calls(named, only_tagged=False).tags_of_type(
        pt.tags.ImplStored)

# }}}


# {{{ execution

@pytest.mark.parametrize("target", ["loopy", "numpy"])
def test_nested_calls_with_shared_arguments(target, queue):
    rng = np.random.default_rng(1)
    x = pt.make_placeholder("x", (5, 3), np.float64)
    y = pt.make_placeholder("y", (5, 3), np.float64)

    def inner(a, b):
        return {"s": a + b, "p": a * b}

    def outer(a, b):
        # a call inside a call, both using the same argument
        d = pt.trace_call(inner, a, a)
        n, tot = pt.trace_call(f_norm, d["s"] + b)
        return n * tot, d["p"], a  # the parameter itself is a result

    o1, o2, o3 = pt.trace_call(outer, x, y)
    q1, _, _ = pt.trace_call(outer, y, x)
    ident = pt.trace_call(lambda a: a, x)
    result = {"o1": o1 + q1, "o2": o2, "o3": o3, "id": ident,
              "shared": pt.trace_call(inner, x, x)["p"]}

    xv, yv = rng.random((5, 3)), rng.random((5, 3))

    def outer_np(a, b):
        s = 2 * a + b
        ss = (s * s).sum(-1)
        return s / np.sqrt(ss)[:, None] * ss.sum(), a * a, a

    r1, r2, _ = outer_np(xv, yv)
    out = _run(target, result, queue, x=xv, y=yv)
    np.testing.assert_allclose(out["o1"], r1 + outer_np(yv, xv)[0], rtol=1e-12)
    np.testing.assert_allclose(out["o2"], r2, rtol=1e-12)
    np.testing.assert_array_equal(out["o3"], xv)
    np.testing.assert_array_equal(out["id"], xv)
    np.testing.assert_allclose(out["shared"], xv * xv, rtol=1e-12)

    if target == "loopy":
        prg = pt.generate_loopy(result)
        assert len(_callee_kernels(prg)) == 4  # inner, f_norm, outer, <lambda>


def test_one_callee_for_many_call_sites(queue):
    x = pt.make_placeholder("x", (8,), np.float64)
    acc = x
    for i in range(40):
        acc = pt.trace_call(f_scale, acc + i)
    prg = pt.generate_loopy(acc)
    assert _callee_kernels(prg) == ["_pt_fn_f_scale"]
    xv = np.linspace(0, 1, 8)
    ref = xv
    for i in range(40):
        ref = 3 * np.sin(ref + i)
    _, (res,) = prg(queue, x=xv)
    # (40 steps of x -> 3 sin(x + i) amplify the last-bit differences of
    # a device's sin: 2e-9 on the H100)
    np.testing.assert_allclose(res, ref, rtol=1e-7)


def test_inlined_and_called_agree(queue):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float32)

    def body(a):
        r, t = pt.trace_call(f_norm, a)
        return r * t + pt.trace_call(f_scale, a)

    out = pt.trace_call(body, x) + pt.trace_call(body, 2 * x)
    called = pt.generate_loopy(out)
    inlined = pt.generate_loopy(pt.tag_all_calls_to_be_inlined(out))
    assert len(_callee_kernels(called)) == 3
    assert _callee_kernels(inlined) == []
    xv = np.random.default_rng(2).random((6, 3)).astype(np.float32)
    _, (a,) = called(queue, x=xv)
    _, (b,) = inlined(queue, x=xv)
    assert a.dtype == b.dtype == np.float32
    np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_allclose(pt.generate_numpy(out)(x=xv), a, rtol=1e-5)


def test_partially_inlined_calls(queue):
    x = pt.make_placeholder("x", (4,), np.float64)
    inlined = pt.trace_call(f_scale, x)._container.tagged(InlineCallTag())["_"]
    called = pt.trace_call(f_sum_diff, inlined, x)["d"]
    prg = pt.generate_loopy(called)
    assert _callee_kernels(prg) == ["_pt_fn_f_sum_diff"]
    xv = np.arange(4.0)
    _, (res,) = prg(queue, x=xv)
    np.testing.assert_allclose(res, 6 * np.sin(xv) - xv, rtol=1e-12)


def test_call_with_captured_data(queue):
    x = pt.make_placeholder("x", (3,), np.float64)
    w = np.array([1.0, 2.0, 3.0])

    def f(a):
        return a * pt.make_data_wrapper(w) + 1

    out = pt.trace_call(f, x) + pt.trace_call(f, 2 * x)
    xv = np.array([1.0, -1.0, 0.5])
    ref = xv * w + 1 + 2 * xv * w + 1
    np.testing.assert_allclose(_run("loopy", out, queue, x=xv), ref)
    np.testing.assert_allclose(_run("numpy", out, x=xv), ref)

# }}}
