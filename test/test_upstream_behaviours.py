"""Behaviours that code written for upstream pytato relies on (issue 22):
tags constructed positionally, data wrappers inside array containers,
complex and boolean :func:`pytato.arange`, sparse axes given as tag sets,
the upstream signatures and field orders, :class:`pytools.tag.Taggable`
arrays, ``with_tagged_reduction``, pictures of partitions, dtype inference
of :func:`pytato.loopy.call_loopy`, scalars passed by value
(:class:`~pytato.tags.ForceValueArgTag`), bound argument names at call
time, and programs whose outputs have no elements.

Everything that computes is compared with numpy on the OpenCL test device
(PoCL on CPU machines).
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
import pyopencl.array as cla
import pytest
from pytools.tag import Tag, Taggable, UniqueTag, tag_dataclass

import pytato as pt
from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    DTypeError,
    EinsumSpecError,
    NameClashError,
    NonUniqueTagError,
    ScalarOverflowError,
    ShapeMismatchError,
    UnknownArgumentError,
)
from pytato.tags import ForceValueArgTag, Named, PrefixNamed


V = prim.Variable


def _rand(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.random(shape) + 1j * rng.random(shape) - 0.5).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 5, shape).astype(dtype)
    return (rng.random(shape) - 0.5).astype(dtype)


def _run(queue: cl.CommandQueue, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return _host(out[0] if isinstance(out, tuple) else out)


def _host(ary: Any) -> Any:
    if isinstance(ary, dict):
        return {k: _host(v) for k, v in ary.items()}
    return ary if isinstance(ary, np.ndarray) else ary.get()


# {{{ tags constructed with positional arguments

@tag_dataclass
class _Weight(Tag):
    value: int


@dataclass(frozen=True)
class _Label(UniqueTag):
    text: str


def test_positional_tags_through_the_pipeline(queue: cl.CommandQueue) -> None:
    x = pt.make_placeholder(
        "x", (3, 4), np.complex128, tags=_Weight(1),
        axes=(pt.Axis(frozenset({_Weight(2)})), pt.Axis(frozenset())))
    y = (2 * x).tagged(_Label("y")).with_tagged_axis(1, _Weight(3))
    z = pt.sum(y, axis=1,
               axis_to_reduction_descr={1: pt.ReductionDescriptor(
                   frozenset({_Weight(4)}))}).tagged(_Weight(5))
    d = pt.make_dict_of_named_arrays({"y": y, "z": z},
                                     tags=frozenset({_Weight(7)}))
    assert y.tags_of_type(_Label) == {_Label("y")}
    assert y.axes[1].tags == {_Weight(3)}
    assert d.tags == {_Weight(7)}
    # tags equal by value: rebuilt graphs are equal
    assert (2 * x).tagged(_Label("y")).with_tagged_axis(1, _Weight(3)) == y
    assert y != (2 * x).tagged(_Label("other")).with_tagged_axis(1, _Weight(3))
    assert pickle.loads(pickle.dumps(d)) == d

    a = _rand((3, 4), np.complex128)
    _, out = pt.generate_loopy(d)(queue, x=a)
    np.testing.assert_allclose(out["y"], 2 * a)
    np.testing.assert_allclose(out["z"], (2 * a).sum(axis=1))
    np.testing.assert_allclose(pt.generate_numpy(d)(x=a)["z"],
                               (2 * a).sum(axis=1))


def test_arrays_are_taggable() -> None:
    x = pt.make_placeholder("x", (3,), np.bool_)
    for obj in [x, x.axes[0], pt.ReductionDescriptor(),
                pt.make_dict_of_named_arrays({"x": x})]:
        assert isinstance(obj, Taggable)
    t = x.tagged(_Weight(1)).tagged([_Weight(2), _Label("a")])
    assert t.tags == {_Weight(1), _Weight(2), _Label("a")}
    assert t.tags_of_type(_Weight) == {_Weight(1), _Weight(2)}
    assert t.tags_not_of_type(_Weight) == {_Label("a")}
    assert t.without_tags(_Weight(1)).tags == {_Weight(2), _Label("a")}
    assert t.without_tags(_Weight(9), verify_existence=False) is t
    with pytest.raises(ValueError):
        t.without_tags(_Weight(9))
    # immutable, hashed by structure
    assert x.tags == frozenset()
    assert hash(t) == hash(x.tagged([_Weight(2), _Label("a"), _Weight(1)]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.tags = frozenset()  # type: ignore[misc]
    # a second unique tag of one type: also pytools' error type
    from pytools.tag import NonUniqueTagError as PytoolsNonUniqueTagError
    with pytest.raises(NonUniqueTagError) as err:
        t.tagged(_Label("b"))
    assert isinstance(err.value, PytoolsNonUniqueTagError)
    d = pt.make_dict_of_named_arrays({"x": x}).tagged(_Weight(3))
    assert isinstance(d, pt.DictOfNamedArrays) and d.tags == {_Weight(3)}
    assert d["x"].expr is x

# }}}


# {{{ data wrappers in array containers

@dataclass(frozen=True)
class _Container:
    u: Any
    v: Any


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_data_wrappers_in_containers(queue: cl.CommandQueue,
                                     dtype: Any) -> None:
    a, b = _rand((5,), dtype, 1), _rand((5,), dtype, 2)
    dwa = pt.make_data_wrapper(a)
    dwb = pt.make_data_wrapper(cla.to_device(queue, b))
    c = _Container(dwa, dwb)
    # hashable and comparable as fields of a container, usable as values
    assert c == _Container(dwa, dwb) and c != _Container(dwb, dwa)
    assert {c: 1}[_Container(dwa, dwb)] == 1
    assert {"u": dwa}["u"] is dwa

    # data wrappers as outputs, directly and computed from, in a dict
    outputs = {"u": c.u, "v": c.v, "w": pt.logical_not(c.u)}
    _, out = pt.generate_loopy(outputs)(queue)
    out = _host(out)
    np.testing.assert_array_equal(out["u"], a)
    np.testing.assert_array_equal(out["v"], b)
    np.testing.assert_array_equal(out["w"], np.logical_not(a))
    for k, ref in [("u", a), ("v", b)]:
        assert out[k].dtype == ref.dtype and out[k].shape == ref.shape

    # object arrays of data wrappers (arraycontext's object array
    # containers) in arithmetic with arrays: element by element
    objs = np.empty(2, dtype=object)
    objs[0], objs[1] = dwa, dwb
    for res in [objs + dwa, dwa + objs]:
        assert res.dtype == object and res.shape == (2,)
        np.testing.assert_array_equal(_run(queue, res[0]), a + a)
        np.testing.assert_array_equal(_run(queue, res[1]), b + a)
    prod = dwa * objs
    np.testing.assert_array_equal(_run(queue, prod[1]), a * b)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.bool_])
def test_data_wrapper_outputs_empty_and_0d(queue: cl.CommandQueue,
                                           dtype: Any) -> None:
    empty = np.zeros((0, 3), dtype)
    scalar = _rand((), dtype)
    _, out = pt.generate_loopy({"e": pt.make_data_wrapper(empty),
                                "s": pt.make_data_wrapper(scalar)})(queue)
    assert out["e"].shape == (0, 3) and out["e"].dtype == empty.dtype
    assert out["s"].shape == () and out["s"] == scalar

# }}}


# {{{ arange

_ARANGE_CASES = [
    ((5,), {"dtype": np.complex128}),
    ((0, 5, 1), {"dtype": np.complex64}),
    ((0.5, 3.2, 0.7), {"dtype": complex}),
    ((5, -1, -1.5), {"dtype": np.complex64}),
    ((1 + 2j, 9 + 13j, 1 + 1j), {}),
    ((1 + 2j, 6 + 3j), {}),
    ((0, 5 + 0j), {}),
    ((0,), {"dtype": np.complex128}),
    ((2,), {"dtype": bool}),
    ((1, 3), {"dtype": bool}),
    ((0.5, 2), {"dtype": bool}),
    ((1, -1, -1), {"dtype": bool}),
    ((0,), {"dtype": bool}),
    ((3, 10, 2), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), _ARANGE_CASES)
def test_arange_complex_and_bool(queue: cl.CommandQueue, args: tuple[Any, ...],
                                 kwargs: dict[str, Any]) -> None:
    ref = np.arange(*args, **kwargs)
    ary = pt.arange(*args, **kwargs)
    assert ary.shape == ref.shape and ary.dtype == ref.dtype
    out = _run(queue, ary)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=1e-6)


def test_arange_complex_symbolic_and_errors(queue: cl.CommandQueue) -> None:
    n = pt.make_size_param("n")
    out = _run(queue, pt.arange(2, n, dtype=np.complex64), n=6)
    np.testing.assert_array_equal(out, np.arange(2, 6, dtype=np.complex64))
    with pytest.raises(DTypeError, match="at most 2"):
        pt.arange(3, dtype=bool)
    with pytest.raises(DTypeError, match="complex 'start'"):
        pt.arange(1j, 5, dtype=np.float64)
    with pytest.raises(DTypeError):
        pt.arange(n, dtype=bool)

# }}}


# {{{ sparse: axes as tag sets, the dtype field

def test_csr_axes_as_tag_sets(queue: cl.CommandQueue) -> None:
    dense = np.array([[1 + 1j, 0, 2], [0, 0, 3j], [4, 5, 0]])
    values = dense[dense != 0]
    cols = np.nonzero(dense)[1]     # not contiguous: copied when bound
    assert not cols.flags.c_contiguous
    starts = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))])
    mat = pt.make_csr_matrix(dense.shape, values, cols, starts,
                             axes=(frozenset({_Weight(1)}), _Weight(2)))
    assert mat.axes[0].tags == {_Weight(1)} and mat.axes[1].tags == {_Weight(2)}
    mixed = pt.make_csr_matrix(dense.shape, values, cols, starts,
                               axes=(pt.Axis(frozenset({_Weight(1)})), None))
    assert mixed.axes[1] == pt.Axis()
    assert mat.dtype == np.complex128 == values.dtype
    x = _rand((3,), np.complex128)
    np.testing.assert_allclose(_run(queue, mat @ x), dense @ x)

    with pytest.raises(ValueError, match="2 entries"):
        pt.make_csr_matrix(dense.shape, values, cols, starts,
                           axes=(frozenset(),))
    with pytest.raises(TypeError, match=r"axes\[1\]"):
        pt.make_csr_matrix(dense.shape, values, cols, starts,
                           axes=(frozenset(), 5))
    with pytest.raises(NonUniqueTagError):
        pt.make_csr_matrix(dense.shape, values, cols, starts,
                           axes=({_Label("a"), _Label("b")}, None))


def test_csr_matrix_fields() -> None:
    params = list(inspect.signature(pt.CSRMatrix).parameters.values())
    assert [p.name for p in params[:5]] == [
        "shape", "dtype", "elem_values", "elem_col_indices", "row_starts"]
    assert all(p.kind is p.KEYWORD_ONLY for p in params[5:])
    assert {"axes", "tags", "non_equality_tags"} <= {p.name for p in params}
    values = pt.make_data_wrapper(np.ones(2, np.float32))
    cols = pt.make_data_wrapper(np.array([0, 1]))
    starts = pt.make_data_wrapper(np.array([0, 1, 2]))
    mat = pt.CSRMatrix((2, 2), np.float32, values, cols, starts)
    assert mat.dtype == np.dtype(np.float32)
    with pytest.raises(DTypeError, match="'dtype' is float64"):
        pt.CSRMatrix((2, 2), np.float64, values, cols, starts)

# }}}


# {{{ signatures and field orders

def _names(f: Any) -> list[str]:
    return list(inspect.signature(f).parameters)


def test_upstream_signatures() -> None:
    assert _names(pt.arctan2) == ["y", "x"]
    for red in [pt.all, pt.any]:
        params = inspect.signature(red).parameters
        assert list(params)[:3] == ["a", "axis", "axis_to_reduction_descr"]
        assert params["initial"].kind is inspect.Parameter.KEYWORD_ONLY
    amax = inspect.signature(pt.amax).parameters
    assert amax["initial"].kind is inspect.Parameter.KEYWORD_ONLY
    assert amax["axis_to_reduction_descr"].kind is \
        inspect.Parameter.KEYWORD_ONLY
    assert _names(pt.amin)[:4] == ["a", "axis", "initial",
                                   "axis_to_reduction_descr"]
    params = inspect.signature(pt.DictOfNamedArrays).parameters
    assert list(params) == ["data", "tags"]
    assert params["tags"].kind is inspect.Parameter.KEYWORD_ONLY
    assert _names(pt.analysis.collect_materialized_nodes) == [
        "expr", "include_outputs"]
    for cls, fields in [
            (pt.Placeholder, ["shape", "dtype", "name"]),
            (pt.IndexLambda, ["shape", "dtype", "expr", "bindings",
                              "var_to_reduction_descr"]),
            (pt.DistributedRecv, ["shape", "dtype", "src_rank", "comm_tag"])]:
        params = list(inspect.signature(cls).parameters.values())
        positional = [p.name for p in params
                      if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert positional == fields, cls
    from pytato.target.python import BoundPythonProgram, PythonTarget
    assert _names(PythonTarget.bind_program)[:5] == [
        "self", "program", "bound_arguments", "expected_arguments",
        "entrypoint"]
    call = inspect.signature(BoundPythonProgram.__call__).parameters
    assert call["args"].kind is inspect.Parameter.VAR_POSITIONAL


def test_upstream_calls(queue: cl.CommandQueue) -> None:
    y = _rand((4,), np.float64, 1)
    x = _rand((4,), np.float64, 2)
    py, px = pt.make_placeholder("py", (4,)), pt.make_placeholder("px", (4,))
    np.testing.assert_allclose(
        _run(queue, pt.arctan2(y=py, x=px), py=y, px=x), np.arctan2(y, x))

    b = _rand((3, 4), np.bool_)
    pb = pt.make_placeholder("b", (3, 4), np.bool_)
    descr = {1: pt.ReductionDescriptor(frozenset({_Weight(1)}))}
    for red, np_red in [(pt.all, np.all), (pt.any, np.any)]:
        res = red(pb, 1, descr)
        (d,) = res.var_to_reduction_descr.values()
        assert d.tags == {_Weight(1)}
        np.testing.assert_array_equal(_run(queue, res, b=b), np_red(b, axis=1))
    np.testing.assert_array_equal(
        _run(queue, pt.any(pb, axis=0, initial=True), b=b), np.ones(4, bool))

    dona = pt.DictOfNamedArrays(data={"o": pb}, tags=frozenset({_Weight(1)}))
    assert dona["o"].expr is pb and dona.tags == {_Weight(1)}
    assert pt.DictOfNamedArrays({"o": pb}).tags == frozenset()

    ph = pt.Placeholder((2, 3), np.dtype(np.complex64), "p")
    assert ph == pt.make_placeholder("p", (2, 3), np.complex64)
    lam = pt.IndexLambda((2, 3), np.dtype(np.complex64),
                         V("_in0")[V("_0"), V("_1")] * 2, {"_in0": ph}, {})
    a = _rand((2, 3), np.complex64)
    np.testing.assert_allclose(_run(queue, lam, p=a), 2 * a)
    recv = pt.DistributedRecv((4,), np.dtype(np.float64), 1, "tag")
    assert recv == pt.make_distributed_recv(1, "tag", (4,), np.float64)

    stored = (ph * 2).tagged(pt.tags.ImplStored())
    out = stored + 1
    from pytato.analysis import collect_materialized_nodes
    assert collect_materialized_nodes(out) == {ph, stored, out}
    assert collect_materialized_nodes(out, include_outputs=False) == {ph, stored}
    res = pt.trace_call(lambda u: (u * 2).tagged(pt.tags.ImplStored()), ph)
    assert len(collect_materialized_nodes(res._container.function)) == 2


def test_python_target_calls() -> None:
    from pytato.target.python import NumpyTarget
    x = pt.make_placeholder("x", (3,), np.complex128)
    prg = pt.generate_numpy(x * 2)
    with pytest.raises(UnknownArgumentError, match="by name"):
        prg(np.ones(3, np.complex128))
    # bind_program with upstream's positional arguments
    source = "def f(x):\n    return x + 1\n"
    target = NumpyTarget()
    bound = target.bind_program(source, {}, frozenset({"x"}), "f")
    assert bound.entrypoint == "f" and bound.expected_arguments == {"x"}
    np.testing.assert_array_equal(bound(x=np.arange(3)), np.arange(1, 4))

# }}}


# {{{ Array.all/any, with_tagged_reduction

@pytest.mark.parametrize("dtype", [np.bool_, np.complex128, np.float32])
def test_array_all_any(queue: cl.CommandQueue, dtype: Any) -> None:
    a = _rand((3, 4), dtype)
    a[0] = 0
    x = pt.make_placeholder("x", (3, 4), dtype)
    for axis in [None, 0, 1]:
        np.testing.assert_array_equal(_run(queue, x.all(axis), x=a),
                                      a.all(axis=axis))
        np.testing.assert_array_equal(_run(queue, x.any(axis), x=a),
                                      a.any(axis=axis))


def test_with_tagged_reduction(queue: cl.CommandQueue) -> None:
    a, b = _rand((3, 4), np.complex128), _rand((4, 5), np.complex128)
    pa, pb = pt.make_placeholder("a", (3, 4), np.complex128), \
        pt.make_placeholder("b", (4, 5), np.complex128)
    e = pt.einsum("ij,jk->ik", pa, pb)
    (axis,) = e.reduction_axes
    by_letter = e.with_tagged_reduction("j", _Weight(1))
    by_axis = e.with_tagged_reduction(axis, [_Weight(1)])
    assert by_letter == by_axis != e
    assert by_letter.redn_axis_to_redn_descr[axis].tags == {_Weight(1)}
    assert e.redn_axis_to_redn_descr[axis].tags == frozenset()
    np.testing.assert_allclose(_run(queue, by_letter, a=a, b=b), a @ b)
    with pytest.raises(EinsumSpecError, match="'i' is not a summed index"):
        e.with_tagged_reduction("i", _Weight(1))
    with pytest.raises(ValueError):
        e.with_tagged_reduction(type(axis)(3), _Weight(1))

    s = pt.sum(pa, axis=1)
    (var,) = s.var_to_reduction_descr
    tagged = s.with_tagged_reduction(var, _Weight(2))
    assert tagged.var_to_reduction_descr[var].tags == {_Weight(2)}
    np.testing.assert_allclose(_run(queue, tagged, a=a), a.sum(axis=1))
    bare = pt.IndexLambda((3,), np.dtype(np.complex128), pt.scalar_expr.Reduce(
        V("_in0")[V("_0"), V("_r0")], pt.scalar_expr.SumReductionOperation(),
        {"_r0": (0, 4)}), {"_in0": pa})
    assert bare.with_tagged_reduction("_r0", _Weight(3)) \
        .var_to_reduction_descr["_r0"].tags == {_Weight(3)}
    with pytest.raises(ValueError, match="'_r1' is not a reduction index"):
        bare.with_tagged_reduction("_r1", _Weight(3))

# }}}


# {{{ pictures of partitions

def test_dot_graph_of_partition(tmp_path: Any) -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    from pytato.distributed.partition import find_distributed_partition
    x = pt.make_placeholder("x", (4,))
    held = pt.staple_distributed_send(x * 2, dest_rank=0, comm_tag=1,
                                      stapled_to=x + 1)
    recvd = pt.make_distributed_recv(0, 1, (4,), np.float64)
    partition = find_distributed_partition(MPI.COMM_SELF,
                                           {"o": held + recvd * 3})
    src = pt.get_dot_graph(partition)
    assert src == pt.get_dot_graph_from_partition(partition)
    assert "cluster_part_" in src
    path = pt.show_dot_graph(partition, output_to=tmp_path / "p.dot")
    assert path.read_text() == src

# }}}


# {{{ call_loopy infers output dtypes

def test_loopy_call_infers_output_dtypes(queue: cl.CommandQueue) -> None:
    import loopy as lp
    knl = lp.make_kernel(
        "{[i]: 0<=i<5}", "y[i] = 2*x[i] + a",
        [lp.GlobalArg("x", shape=(5,)), lp.GlobalArg("y", shape=(5,)),
         lp.ValueArg("a")], lang_version=(2018, 2))
    x = pt.make_placeholder("x", (5,), np.complex64)
    a = _rand((5,), np.complex64)
    # (a Python float is bound as float64: loopy's rules make y complex128)
    for scalar, dtype in [(np.float32(1.5), np.complex64),
                          (1.5, np.complex128)]:
        ref = 2 * a.astype(dtype) + scalar
        for call in [pt.loopy.call_loopy(knl, {"x": x, "a": scalar}),
                     pt.loopy.LoopyCall(knl, {"x": x, "a": scalar},
                                        "loopy_kernel")]:
            assert call["y"].dtype == dtype
            np.testing.assert_allclose(_run(queue, call["y"], x=a), ref,
                                       rtol=1e-6)

# }}}


# {{{ scalars: ** with integers, ForceValueArgTag

@pytest.mark.parametrize("dtype", [np.complex128, np.complex64, np.float32,
                                   np.int32, np.bool_])
def test_power_with_python_ints(queue: cl.CommandQueue, dtype: Any) -> None:
    a = _rand((6,), dtype, 3)
    x = pt.make_placeholder("x", (6,), dtype)
    for k in [0, 1, 2, 3, 5]:
        # numpy's ``**`` operator (not np.power): bool ** 2 is an int8 square
        ref = a ** k
        out = _run(queue, x ** k, x=a)
        assert out.dtype == ref.dtype
        np.testing.assert_allclose(out, ref, rtol=1e-5)
    if np.dtype(dtype).kind == "i":
        # numpy 2 (NEP 50) raises OverflowError: a typed one here
        with pytest.raises(ScalarOverflowError):
            x ** 2**70


@pytest.mark.parametrize(("dtype", "value"), [
    (np.int64, 3), (np.int64, -2), (np.float64, 2.5), (np.float64, 2),
    (np.complex128, 1 - 2j), (np.bool_, True), (np.bool_, np.bool_(False)),
    (np.int32, np.int32(-4)), (np.int64, np.int32(7))])
def test_force_value_arg(queue: cl.CommandQueue, ctx_factory: Any,
                         dtype: Any, value: Any) -> None:
    import loopy as lp
    s = pt.make_placeholder("s", (), dtype, tags=ForceValueArgTag())
    x = pt.make_placeholder("x", (4,), np.float64)
    result = x * s
    a = _rand((4,), np.float64)
    ref = a * np.asarray(value, dtype)
    prg = pt.generate_loopy(result)
    arg = prg.program.default_entrypoint.arg_dict["s"]
    assert isinstance(arg, lp.ValueArg)
    np.testing.assert_allclose(prg(queue, x=a, s=value)[1][0], ref)
    # the same through a context-bound executable, with device arrays
    exe = pt.generate_loopy(
        {"o": result}, options=lp.Options(no_numpy=True, return_dict=True)
    ).bind_to_context(queue.context)
    _, out = exe(queue, x=cla.to_device(queue, a), s=value)
    np.testing.assert_allclose(out["o"].get(), ref)
    # and as the exponent of **
    if np.dtype(dtype).kind in "iu" and value >= 0:
        np.testing.assert_allclose(_run(queue, x ** s, x=a, s=value),
                                   a ** value)


def test_force_value_arg_data_and_errors(queue: cl.CommandQueue) -> None:
    x = pt.make_placeholder("x", (4,), np.float32)
    a = _rand((4,), np.float32)
    for data in [np.float32(1.5), np.array(1.5, np.float32)]:
        dw = pt.make_data_wrapper(data).tagged(ForceValueArgTag())
        prg = pt.generate_loopy(x + dw)
        assert np.ndim(prg.bound_arguments["_pt_data_0"]) == 0
        out = prg(queue, x=a)[1][0]
        assert isinstance(out, np.ndarray)
        np.testing.assert_allclose(out, a + np.float32(1.5))
    s = pt.make_placeholder("s", (), np.float32, tags=ForceValueArgTag())
    prg = pt.generate_loopy(x * s)
    with pytest.raises(ArgumentDTypeError, match="complex"):
        prg(queue, x=a, s=1j)
    with pytest.raises(ArgumentShapeError, match="by value"):
        prg(queue, x=a, s=np.ones(2, np.float32))
    with pytest.raises(ShapeMismatchError, match="only 0-d"):
        pt.generate_loopy(pt.make_placeholder("v", (2,),
                                              tags=ForceValueArgTag()) * 2)

# }}}


# {{{ bound argument names at call time

def test_bound_argument_names(queue: cl.CommandQueue) -> None:
    import loopy as lp
    a = _rand((5,), np.complex128)
    x = pt.make_placeholder("x", (5,), np.complex128)
    dw = pt.make_data_wrapper(a).tagged(Named("b"))
    prg = pt.generate_loopy(dw + x)
    assert set(prg.bound_arguments) == {"b"}
    np.testing.assert_allclose(prg(queue, x=a)[1][0], 2 * a)
    with pytest.raises(ValueError, match="'b' is bound"):
        prg(queue, x=a, b=a)
    with pytest.raises(BoundArgumentError):
        pt.generate_loopy(dw * 2)(queue, b=a)
    exe = pt.generate_loopy(
        {"o": dw + x}, options=lp.Options(no_numpy=True, return_dict=True)
    ).bind_to_context(queue.context)
    with pytest.raises(BoundArgumentError):
        exe(queue, x=cla.to_device(queue, a), b=a)
    for gen in [pt.generate_numpy, pt.generate_jax]:
        with pytest.raises(ValueError, match="'b' is bound"):
            gen(dw + x)(x=a, b=a)
    # unnamed and prefix-named wrappers are bound under their generated name
    pre = pt.make_data_wrapper(a).tagged(PrefixNamed("data"))
    prg = pt.generate_loopy(pre + pt.make_data_wrapper(a) + x)
    assert "data" in prg.bound_arguments and len(prg.bound_arguments) == 2
    for name in prg.bound_arguments:
        with pytest.raises(BoundArgumentError):
            prg(queue, x=a, **{name: a})
    with pytest.raises(NameClashError, match="Named\\('x'\\)"):
        pt.generate_loopy(pt.make_data_wrapper(a).tagged(Named("x")) + x)

# }}}


# {{{ arrays of size 0

@pytest.mark.parametrize("dtype", [np.float64, np.complex64, np.bool_])
def test_empty_outputs_launch_nothing(queue: cl.CommandQueue,
                                      dtype: Any) -> None:
    import loopy as lp
    x = pt.make_placeholder("x", (0, 3), dtype)
    y = pt.make_placeholder("y", (2, 3), dtype)
    n = pt.make_size_param("n")
    a, b = np.zeros((0, 3), dtype), _rand((2, 3), dtype)

    # with other outputs: no instruction writes the empty ones
    prg = pt.generate_loopy({"e": pt.logical_not(x),
                             "f": pt.zeros((n, 0), dtype=dtype),
                             "s": pt.sum(x, axis=0), "y2": y * 2})
    knl = prg.program.default_entrypoint
    written = knl.get_written_variables()
    assert "e" not in written and "f" not in written
    _, out = prg(queue, x=a, y=b, n=4)
    assert out["e"].shape == (0, 3) and out["e"].dtype == np.bool_
    assert out["f"].shape == (4, 0) and out["f"].dtype == dtype
    np.testing.assert_allclose(out["s"], a.sum(axis=0))
    np.testing.assert_allclose(out["y2"], b * 2)

    # only empty outputs: no kernel is launched, a marker is enqueued
    only = pt.generate_loopy({"e": x * 2, "t": pt.transpose(x)})
    assert not only.program.default_entrypoint.instructions
    for inputs in [{"x": a}, {"x": cla.to_device(queue, a)}]:
        evt, out = only(queue, **inputs)
        assert evt.command_type == cl.command_type.MARKER
        assert out["e"].shape == (0, 3) and out["t"].shape == (3, 0)
        assert out["e"].dtype == (x * 2).dtype
        assert isinstance(out["e"], np.ndarray) == isinstance(inputs["x"],
                                                               np.ndarray)
    exe = pt.generate_loopy(
        {"e": x * 2}, options=lp.Options(no_numpy=True, return_dict=True)
    ).bind_to_context(queue.context)
    evt, out = exe(queue, x=cla.to_device(queue, a))
    assert evt.command_type == cl.command_type.MARKER
    assert out["e"].shape == (0, 3)

    # sizes known only at run time: pyopencl enqueues nothing for them
    xs = pt.make_placeholder("xs", (n, 3), dtype)
    evt, (res,) = pt.generate_loopy(pt.logical_not(xs))(queue, xs=a)
    assert evt.command_type == cl.command_type.MARKER
    assert res.shape == (0, 3)

# }}}
