"""The persistent program store (:mod:`pytato.target.loopy.store.program_store`):
graph keys, programs found by later calls and processes, and what is kept
out of it."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from random_graphs import make_random_dag, make_random_graph

import pytato as pt
from pytato.codegen import preprocess
from pytato.tags import Tag
from pytato.target.loopy import PROGRAM_CACHE, BoundPyOpenCLExecutable
from pytato.target.loopy.build import split
from pytato.target.loopy.store import program_store


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A new, empty program store in *tmp_path*."""
    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE", raising=False)
    monkeypatch.setattr(program_store, "_STORE", [])
    # the single kernel's path (loopy's code stored whole), which the split
    # path of GPUs replaces (tested in test_cold_start.py)
    monkeypatch.setenv(split.SPLIT_ENV, "0")
    PROGRAM_CACHE.clear()
    yield tmp_path
    PROGRAM_CACHE.clear()


def _key(result) -> str:
    return program_store.graph_key([preprocess(result).outputs])


# {{{ graph keys

def _graph(n: int = 5, dtype=np.float64, c: float = 2.0, name: str = "x",
           tags=frozenset(), axis_tag=None):
    x = pt.make_placeholder(name, (n, 3), dtype)
    if axis_tag is not None:
        x = x.with_tagged_axis(0, axis_tag)
    y = (pt.sin(x) * c).tagged(tags)
    return {"out": pt.sum(y, axis=1) + y[:, 0], "other": y.T}


@dataclass(frozen=True)
class _SomeTag(Tag):
    value: int


def test_graph_key_of_equal_graphs():
    assert _key(_graph()) == _key(_graph())


@pytest.mark.parametrize("change", [
    {"n": 6}, {"dtype": np.float32}, {"c": 2.5}, {"c": 2.0000000000000004},
    {"name": "z"}, {"tags": frozenset({_SomeTag(1)})},
    {"axis_tag": _SomeTag(2)},
])
def test_graph_key_differs(change):
    assert _key(_graph(**change)) != _key(_graph())


def test_graph_key_of_tags_differs_by_value():
    assert _key(_graph(tags=frozenset({_SomeTag(1)}))) \
        != _key(_graph(tags=frozenset({_SomeTag(2)})))


def test_graph_key_is_the_same_in_other_processes():
    code = (
        "import sys; sys.path.insert(0, 'test');"
        "from random_graphs import make_random_dag;"
        "from pytato.codegen import preprocess;"
        "from pytato.target.loopy.store.program_store import graph_key;"
        "print(graph_key([preprocess(make_random_dag(300, seed=3)).outputs]))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    keys = {subprocess.run(
        [sys.executable, "-c", code], cwd=root, check=True, text=True,
        capture_output=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}
        ).stdout.split()[-1] for seed in (1, 2)}
    assert keys == {_key(make_random_dag(300, seed=3))}


def test_graph_key_of_random_graphs_distinct():
    keys = {_key(make_random_graph(seed).outputs) for seed in range(30)}
    assert len(keys) == 30


def test_graph_key_ignores_sharing():
    """Shared subvalues (the index variables of element-wise operations, the
    skeletons of their bindings) are encoded as their copies are."""
    import pymbolic.primitives as prim

    from pytato.array import IndexLambda
    x = pt.make_placeholder("x", (4, 3), np.float64)
    shared = x * x
    fresh = IndexLambda(
        (4, 3), np.dtype(np.float64),
        prim.Product(tuple(
            prim.Subscript(prim.Variable("_in0"),
                           (prim.Variable("_0"), prim.Variable("_1")))
            for _ in range(2))),
        {"_in0": x})
    assert shared == fresh
    assert program_store.graph_key([shared + 1]) \
        == program_store.graph_key([fresh + 1])
    assert program_store.graph_key([shared]) \
        != program_store.graph_key([x + x])


class _FreshValues(dict):
    """A mapping whose values are new objects at each access."""

    def items(self):
        for k, v in super().items():
            yield k, tuple(v)


def test_encoder_of_temporary_values():
    """Values that live only while they are encoded (values of a mapping
    made at each access, the parts of slices) do not lend their text to
    later values at the same address."""
    from pytato.analysis.graph_key import _Encoder
    value = _FreshValues({f"k{i}": [i, i + 1] for i in range(50)})
    text = _Encoder()((value, slice(1, 2, 3), slice(4, 5, None)))
    for i in range(50):
        assert f"'k{i}':(int:{i},int:{i + 1})" in text
    assert "slice:(int:1,int:2,int:3)" in text
    assert "slice:(int:4,int:5,NoneType:None)" in text


def _loopy_call(factor: int):
    import loopy as lp

    from pytato.loopy import call_loopy
    knl = lp.make_kernel(
        "{[i]: 0 <= i < 4}", f"y[i] = {factor}*x[i]",
        [lp.GlobalArg("x", np.float64, (4,)),
         lp.GlobalArg("y", np.float64, (4,), is_output=True)],
        name="scale", lang_version=(2018, 2))
    x = pt.make_placeholder("x", (4,), np.float64)
    return call_loopy(knl, {"x": x + 1})["y"] * 3


def test_graph_key_of_loopy_calls():
    """Loopy calls are keyed by their translation unit's persistent
    hash."""
    assert _key(_loopy_call(2)) == _key(_loopy_call(2))
    assert _key(_loopy_call(2)) != _key(_loopy_call(5))


def test_loopy_call_from_store(store, queue):
    first = pt.generate_loopy(_loopy_call(2))
    first(queue, x=np.ones(4))
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(_loopy_call(2))
    assert prog.store_key == first.store_key is not None
    _, (res,) = prog(queue, x=np.arange(4.0))
    np.testing.assert_allclose(res, 3 * 2 * (np.arange(4.0) + 1))


def test_graph_key_refuses_data():
    """Data wrappers are compared by identity: a graph that holds one has
    no persistent key (programs get keys of preprocessed graphs, where
    data wrappers became placeholders)."""
    x = pt.make_data_wrapper(np.ones(3))
    with pytest.raises(program_store.NotPersistentError):
        program_store.graph_key([2 * x])
    assert isinstance(_key(2 * x), str)


def test_graph_key_refuses_functions():
    @dataclass(frozen=True)
    class FunctionTag(Tag):
        f: object

    x = pt.make_placeholder("x", (3,), np.float64)
    with pytest.raises(program_store.NotPersistentError, match="function"):
        program_store.graph_key([x.tagged(FunctionTag(len))])
    with pytest.raises(program_store.NotPersistentError, match="function"):
        program_store.graph_key([x.tagged(FunctionTag(lambda: 1))])

# }}}


# {{{ programs from the store

def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_program_from_store(store, queue, caplog):
    g = make_random_dag(120, seed=7)
    inputs = {f"in{i}": np.random.default_rng(i).random((16, 16))
              for i in range(4)}
    first = pt.generate_loopy(g, cl_device=queue.device)
    assert first.store_key is not None
    _, expected = first(queue, **inputs)
    PROGRAM_CACHE.clear()
    with caplog.at_level(logging.INFO, logger="pytato"):
        second = pt.generate_loopy(g, cl_device=queue.device)
        _, result = second(queue, **inputs)
    messages = _messages(caplog)
    assert "program store hit for '_pt_kernel'" in messages
    assert "program store hit for the compiled '_pt_kernel'" in messages
    assert not any(m.startswith(("lowering took", "loopy code generation"))
                   for m in messages)
    assert second is not first
    assert second.store_key == first.store_key
    assert second.program == first.program
    assert set(result) == set(expected) == set(g)
    for name in expected:
        np.testing.assert_array_equal(result[name], expected[name])


def test_store_hit_skips_preprocessing(store, queue, caplog):
    """A graph without data is found in the store under the key of the
    user's graph, before it is preprocessed; a graph with data is found
    under the key of the preprocessed graph (with its data bound anew)."""
    x = pt.make_placeholder("x", (6, 3), np.float64)
    data = np.arange(18.0).reshape(6, 3)
    graphs = {"no data": {"out": pt.sin(x) * 2 + x.T.T},
              "data": {"out": pt.sin(x) * 2 + pt.make_data_wrapper(data)}}
    xv = np.random.default_rng(3).random((6, 3))
    for label, g in graphs.items():
        first = pt.generate_loopy(g, cl_device=queue.device)
        _, expected = first(queue, x=xv)
        PROGRAM_CACHE.clear()
        with caplog.at_level(logging.INFO, logger="pytato"):
            caplog.clear()
            second = pt.generate_loopy(g, cl_device=queue.device)
            _, result = second(queue, x=xv)
        messages = _messages(caplog)
        assert "program store hit for '_pt_kernel'" in messages
        preprocessed = any(m.startswith("transform (preprocess)")
                           for m in messages)
        assert preprocessed == (label == "data"), label
        assert second.store_key == first.store_key
        assert set(second.bound_arguments) == set(first.bound_arguments)
        np.testing.assert_array_equal(result["out"], expected["out"])
        ref = np.sin(xv) * 2 + (data if label == "data" else xv)
        np.testing.assert_allclose(result["out"], ref, rtol=1e-14)


@pytest.mark.parametrize("seed", range(8))
def test_random_graphs_from_store(store, queue, seed):
    """Programs from the store (graph and compiled program) compute what
    numpy does, also a second time (the launch plan of repeated calls)."""
    g = make_random_graph(seed)
    first = pt.generate_loopy(g.outputs, cl_device=queue.device)
    first(queue, **g.inputs_for(g.outputs))
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(g.outputs, cl_device=queue.device)
    assert prog is not first and prog.store_key == first.store_key
    for _ in range(2):
        _, result = prog(queue, **g.inputs_for(g.outputs))
        for name, ref in g.expected.items():
            np.testing.assert_allclose(result[name], ref, rtol=1e-10,
                                       atol=1e-12, err_msg=str(g.ops))


def test_lowered_unit_unpickled_when_needed(store, queue, monkeypatch):
    """A program generated without a device and found in the store holds
    its lowered unit pickled (a ``StoredUnit``) until ``program`` is read:
    calls whose schedule is stored, copies and ``bind_to_context`` do
    not unpickle it; then it is the stored unit, and the program is the
    one made without the store."""
    import pickle

    from pytato.target.loopy.run.programs import _PROGRAM
    from pytato.target.loopy.run.stored_unit import LazyUnitField, StoredUnit

    g = make_random_dag(80, seed=5)
    inputs = {f"in{i}": np.random.default_rng(i).random((16, 16))
              for i in range(4)}
    first = pt.generate_loopy(g)
    _, expected = first(queue, **inputs)
    PROGRAM_CACHE.clear()
    loads = []
    real_load = StoredUnit.load

    def load(self):
        loads.append(self)
        return real_load(self)

    monkeypatch.setattr(StoredUnit, "load", load)
    prog = pt.generate_loopy(g)
    lowered = _PROGRAM.raw(prog)
    assert type(lowered) is StoredUnit
    assert prog.generated_inames == first.generated_inames
    _, result = prog(queue, **inputs)
    copied = prog.copy()
    assert type(_PROGRAM.raw(copied)) is StoredUnit
    exe = prog.bind_to_context(queue.context)
    lazy = BoundPyOpenCLExecutable.lowered_program
    assert isinstance(lazy, LazyUnitField)
    assert type(lazy.raw(exe)) is StoredUnit
    _, exe_result = exe(queue, **inputs)
    # (the scheduled unit runs the single kernel's path here: read)
    assert not any(u is lowered for u in loads)
    for name in expected:
        np.testing.assert_array_equal(result[name], expected[name])
        np.testing.assert_array_equal(exe_result[name], expected[name])
    assert prog.program == first.program
    assert sum(u is lowered for u in loads) == 1
    assert type(_PROGRAM.raw(prog)) is not StoredUnit
    assert prog.program is prog.program
    # (one unpickling, shared by the holders of the stored unit)
    assert exe.lowered_program is prog.program
    assert exe.lowered_program == first.program
    # pickled, a program from the store holds its unit
    assert pickle.loads(pickle.dumps(_PROGRAM.raw(copied))) == first.program
    assert copied == first


def test_unreadable_lowered_unit_made_anew(store, queue, caplog):
    """A lowered unit whose stored bytes cannot be unpickled when it is
    first read is lowered anew from the graph."""
    from pytato.target.loopy.run.programs import _PROGRAM
    from pytato.target.loopy.run.stored_unit import StoredUnit

    g = make_random_dag(40, seed=9)
    first = pt.generate_loopy(g)
    PROGRAM_CACHE.clear()
    prog = pt.generate_loopy(g)
    raw = _PROGRAM.raw(prog)
    assert type(raw) is StoredUnit
    raw._data = b"not a pickle"
    with caplog.at_level(logging.WARNING, logger="pytato"):
        assert prog.program == first.program
    assert any("cannot read a unit" in m for m in _messages(caplog))


def test_program_from_store_in_another_process(store, queue):
    code = """
import logging, os, sys
sys.path.insert(0, "test")
import numpy as np, pyopencl as cl, pytato as pt
from conftest import _pick_device
# (importing conftest gave this process a store of its own: use the test's)
os.environ["PYTATO_PROGRAM_STORE_DIR"] = sys.argv[1]
from random_graphs import make_random_dag
logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                    format="%(message)s")
ctx = cl.Context([_pick_device()])
queue = cl.CommandQueue(ctx)
prog = pt.generate_loopy(make_random_dag(200, seed=11),
                         cl_device=queue.device)
_, out = prog(queue, **{f"in{i}": np.full((16, 16), i + 0.5)
                        for i in range(4)})
print("RESULT", repr(sorted((k, float(v.sum())) for k, v in out.items())))
"""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outputs = [subprocess.run([sys.executable, "-c", code, str(store)],
                              cwd=root, check=True, text=True,
                              capture_output=True).stdout
               for _ in range(2)]
    assert "program store hit" not in outputs[0]
    assert "lowering took" in outputs[0]
    assert "program store hit for '_pt_kernel'" in outputs[1]
    assert "program store hit for the compiled '_pt_kernel'" in outputs[1]
    assert "lowering took" not in outputs[1]
    results = [next(line for line in out.splitlines()
                    if line.startswith("RESULT")) for out in outputs]
    assert results[0] == results[1]


def test_get_code(store, queue):
    """``get_code`` gives loopy's code, from the store once the program
    was compiled."""
    import loopy as lp
    g = make_random_dag(150, seed=4)
    prog = pt.generate_loopy(g, cl_device=queue.device)
    with lp.CacheMode(False):
        reference = lp.generate_code_v2(prog.program).device_code()
    assert prog.get_code() == reference
    prog(queue, **{f"in{i}": np.ones((16, 16)) for i in range(4)})
    assert program_store.load(prog.store_key, "compiled")[1] == reference
    assert prog.get_code() == reference
    transformed = prog.with_transformed_program(
        lambda t: lp.tag_array_axes(t, "in0", "f,c"))
    with lp.CacheMode(False):
        assert transformed.get_code() == lp.generate_code_v2(
            transformed.program).device_code()


def test_data_is_bound_not_stored(store, queue):
    """Graphs that differ only in the data of data wrappers share a stored
    program, and each runs with its own data."""
    rng = np.random.default_rng(0)
    a, b = rng.random(10), rng.random(10)
    progs = []
    for data in (a, b):
        PROGRAM_CACHE.clear()
        x = pt.make_data_wrapper(data)
        progs.append(pt.generate_loopy(3 * x + 1))
    assert progs[0].store_key == progs[1].store_key
    for prog, data in zip(progs, (a, b), strict=True):
        _, (res,) = prog(queue)
        np.testing.assert_allclose(res, 3 * data + 1)


def test_schedule_device_is_in_the_key(store):
    from pytato.target.loopy.schedule.default import DeviceInfo
    x = pt.make_placeholder("x", (1000,), np.float64)
    keys = {pt.generate_loopy(2 * x, cl_device=dev).store_key for dev in (
        DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=256),
        DeviceInfo(kind="cpu", compute_units=8, max_work_group_size=256),
        DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024))}
    keys.add(pt.generate_loopy(2 * x, default_schedule=False).store_key)
    assert len(keys) == 4


def test_tuning_constants_are_in_the_key(store, monkeypatch):
    """A program generated after a documented tuning constant changed is
    not the one stored under the old value."""
    from pytato.target.loopy.schedule import tiling_plan
    x = pt.make_placeholder("x", (1000,), np.float64)
    before = pt.generate_loopy(2 * x).store_key
    PROGRAM_CACHE.clear()
    monkeypatch.setattr(tiling_plan, "MAX_ELEMENTS_PER_ITEM", 8)
    assert pt.generate_loopy(2 * x).store_key != before


def test_no_store_without_sources(store, monkeypatch):
    """Where pytato's source files cannot be read, their digest is unknown
    and the store is not used (rather than risk finding the results of
    other code)."""
    monkeypatch.setattr(program_store, "_SOURCE_DIGEST", [None])
    x = pt.make_placeholder("x", (8,), np.float64)
    assert pt.generate_loopy(2 * x).store_key is None


def test_transformed_program_is_not_stored(store, queue):
    import loopy as lp
    x = pt.make_placeholder("x", (8,), np.float64)
    prog = pt.generate_loopy(2 * x)
    assert prog.store_key is not None
    assert prog.copy().store_key == prog.store_key
    transformed = prog.with_transformed_program(
        lambda t: lp.tag_array_axes(t, "x", "c"))
    assert transformed.store_key is None
    _, (res,) = transformed(queue, x=np.arange(8.0))
    np.testing.assert_allclose(res, 2 * np.arange(8.0))
    assert prog.copy(program=prog.program.copy()).store_key is None


def test_store_switched_off(store, monkeypatch):
    import loopy as lp
    x = pt.make_placeholder("x", (8,), np.float64)
    with lp.CacheMode(False):
        assert pt.generate_loopy(2 * x).store_key is None
    PROGRAM_CACHE.clear()
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    assert pt.generate_loopy(2 * x).store_key is None
    PROGRAM_CACHE.clear()
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "0")
    assert pt.generate_loopy(2 * x).store_key is not None


def test_unreadable_entry_is_generated_anew(store, queue, caplog,
                                           monkeypatch):
    x = pt.make_placeholder("x", (8,), np.float64)
    prog = pt.generate_loopy(2 * x + 1)
    key = prog.store_key
    # a new store whose entry for the program does not unpickle
    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(store / "other"))
    monkeypatch.setattr(program_store, "_STORE", [])
    program_store._store().store((key, "unit"), b"not a pickle")
    PROGRAM_CACHE.clear()
    with caplog.at_level(logging.WARNING, logger="pytato"):
        again = pt.generate_loopy(2 * x + 1)
    assert any("cannot read unit" in m for m in _messages(caplog))
    assert again.program == prog.program
    _, (res,) = again(queue, x=np.ones(8))
    np.testing.assert_allclose(res, 3)


def test_kernels_pickled_by_attributes(queue):
    """The store pickles loopy kernels without computing their persistent
    hash; they unpickle equal, with the same code."""
    import pickle

    import loopy as lp
    g = make_random_dag(60, seed=2)
    t_unit = pt.generate_loopy(g, cl_device=queue.device).program
    loaded = pickle.loads(program_store._dumps(t_unit))
    assert loaded == t_unit
    assert "_pytools_persistent_hash_digest" not in vars(
        loaded.default_entrypoint)
    with lp.CacheMode(False):
        assert lp.generate_code_v2(loaded).device_code() \
            == lp.generate_code_v2(t_unit).device_code()


@pytest.mark.parametrize("collecting", [True, False])
def test_loads_without_collections(queue, monkeypatch, collecting):
    """Entries are unpickled with the garbage collector off (it walked the
    objects made so far every 700 of them), equal to what was stored; the
    collector is on again afterwards if it was on before, and stays off
    if the caller had switched it off."""
    import gc
    import pickle

    t_unit = pt.generate_loopy(make_random_dag(40, seed=3),
                               cl_device=queue.device).program
    seen = []
    real_loads = pickle.loads

    def loads(data):
        seen.append(gc.isenabled())
        return real_loads(data)

    monkeypatch.setattr(program_store.pickle, "loads", loads)
    was = gc.isenabled()
    if not collecting:
        gc.disable()
    try:
        assert program_store._loads(program_store._dumps(t_unit)) == t_unit
        assert seen == [False]
        assert gc.isenabled() is collecting
    finally:
        if was:
            gc.enable()



class _Probe:
    """Records whether the garbage collector is on when it is pickled."""

    seen: list[bool] = []

    def __reduce__(self):
        import gc
        _Probe.seen.append(gc.isenabled())
        return (_Probe, ())


@pytest.mark.parametrize("collecting", [True, False])
def test_dumps_without_collections(collecting):
    """Entries are pickled with the garbage collector off (pickling makes
    short-lived objects that started collections over the whole process),
    and it is on again afterwards if it was on before."""
    import gc
    was = gc.isenabled()
    if not collecting:
        gc.disable()
    _Probe.seen = []
    try:
        value = program_store._loads(program_store._dumps([_Probe(), 1]))
        assert _Probe.seen == [False]
        assert type(value[0]) is _Probe
        assert gc.isenabled() is collecting
    finally:
        if was:
            gc.enable()


def test_loads_promotes_to_oldest_generation():
    """Unpickled entries go straight to the collector's oldest generation
    (not walked by two young collections first), unless the process has
    frozen objects, which stay frozen; they are still collected."""
    import gc
    import weakref

    class Node:
        pass

    data = program_store._dumps([{"a": (1, [2.0])} for _ in range(100)])
    value = program_store._loads(data)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    # (unless another library froze objects in this process before: then
    # loads leave objects where they are, as checked below)
    assert gc.get_freeze_count() or (
        id(value) in oldest and id(value[0]) in oldest)

    frozen = [object()]
    gc.freeze()
    try:
        value = program_store._loads(data)
        # (the collector's generations do not list frozen objects)
        assert id(frozen) not in {id(o) for o in gc.get_objects()}
        assert id(value) not in {id(o) for o in gc.get_objects(generation=2)}
    finally:
        gc.unfreeze()
    del frozen

    # cyclic garbage promoted so is freed by a full collection
    node = Node()
    node.self = node  # type: ignore[attr-defined]
    value = program_store._loads(program_store._dumps([1]))
    ref = weakref.ref(node)
    del node
    gc.collect()
    assert ref() is None

# }}}

# vim: foldmethod=marker
