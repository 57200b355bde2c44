"""Structural tests of the materialization policy, the program cache, phase
logging and code generation for large graphs (no timing assertions)."""

from __future__ import annotations

import logging

import loopy as lp
import numpy as np
import pytest
from random_graphs import make_random_dag

import pytato as pt
from pytato.codegen import preprocess
from pytato.tags import ImplInlined, ImplStored
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.lower.calls import build_translation_unit_with_calls
from pytato.transform.materialize import get_stored_nodes


def _kernel(result: object) -> lp.LoopKernel:
    prep = preprocess(result)  # type: ignore[arg-type]
    t_unit = build_translation_unit_with_calls(
        prep.outputs, target=lp.PyOpenCLTarget(),
        options=lp.Options(return_dict=True), function_name="knl",
        array_tag_t_to_not_propagate=frozenset(),
        axis_tag_t_to_not_propagate=frozenset())
    return t_unit.default_entrypoint


def _stored_tags(result: pt.DictOfNamedArrays) -> set[pt.Array]:
    return {n for n in pt.array.base.topological_order([result])
            if isinstance(n, pt.Array) and n.tags_of_type(ImplStored)}


x = pt.make_placeholder("x", (6,), np.float64)
y = pt.make_placeholder("y", (6,), np.float64)


# {{{ materialize_with_mpms decisions

def test_mpms_two_predecessors_two_users():
    t = x + y          # 2 materialized predecessors, 2 users: stored
    u = pt.sin(x)      # 1 materialized predecessor, 2 users: inlined
    r = pt.materialize_with_mpms(pt.make_dict_of_named_arrays(
        {"a": t * 2, "b": t * 3, "c": u + 1, "d": u * 2}))
    stored = _stored_tags(r)
    assert len(stored) == 1
    (s,) = stored
    assert set(s.bindings.values()) == {x, y}


def test_mpms_one_user_not_stored():
    t = x + y
    r = pt.materialize_with_mpms(pt.make_dict_of_named_arrays({"a": t * 2}))
    assert not _stored_tags(r)


def test_mpms_chain_of_stored_predecessors():
    # s is stored (2 preds, 2 users); v reads s and x: 2 materialized preds
    s = x * y
    v = s + x
    r = pt.materialize_with_mpms(pt.make_dict_of_named_arrays(
        {"a": s * 2, "b": v * 2, "c": v + 1, "d": s - 1}))
    assert len(_stored_tags(r)) == 2


def test_mpms_broadcast_reduction_stored():
    r = pt.materialize_with_mpms(x - pt.sum(x))
    (s,) = _stored_tags(pt.make_dict_of_named_arrays({"o": r}))
    assert s.shape == ()


def test_mpms_gather_source_stored():
    idx = pt.make_placeholder("idx", (4,), np.int32)
    src = pt.sin(x) * 2
    r = pt.materialize_with_mpms(src[idx] + 1)
    stored = _stored_tags(pt.make_dict_of_named_arrays({"o": r}))
    assert len(stored) == 1
    (s,) = stored
    assert s.shape == (6,)


def test_mpms_array_result_and_no_change():
    r = pt.materialize_with_mpms(x + 1)
    assert r == x + 1


def test_mpms_keeps_values(queue):
    t = x + y
    expr = pt.make_dict_of_named_arrays({"a": t * 2, "b": t - pt.sum(t)})
    r = pt.materialize_with_mpms(expr)
    a, b = np.arange(6.0), np.ones(6)
    _, res = pt.generate_loopy(r)(queue, x=a, y=b)
    np.testing.assert_allclose(res["a"], 2 * (a + b))
    np.testing.assert_allclose(res["b"], (a + b) - (a + b).sum())

# }}}


# {{{ default policy: fusion and sharing

@pytest.mark.parametrize("length", [1, 5, 12])
def test_chain_fuses_into_one_instruction(length):
    # (2 nodes a step: chains longer than MAX_INLINE_DEPTH nodes are cut,
    # and so are those costing more than MAX_INLINE_COST: one call)
    a = pt.make_placeholder("a", (8, 8), np.float64)
    r = a
    for i in range(length):
        r = ((pt.sin(r) if i == 1 else r) * (i + 1)).T if i % 2 \
            else r[::-1] + 1.0
    knl = _kernel(r)
    assert len(knl.instructions) == 1
    assert not knl.temporary_variables


def test_shared_subexpression_stored_once():
    t = pt.exp(x) * y
    knl = _kernel({"u": t + 1, "w": t * t, "v": t[::-1]})
    glob = [n for n, v in knl.temporary_variables.items()
            if v.address_space == lp.AddressSpace.GLOBAL]
    assert len(glob) == 1
    assert str(knl).count("exp(") == 1


def test_default_policy_contains_mpms():
    # a shared node too costly to compute again (a call)
    t = pt.sin(x) + y
    out = pt.make_dict_of_named_arrays({"a": t * 2, "b": t * 3})
    prep = preprocess(out).outputs
    default = get_stored_nodes(prep)
    mpms = get_stored_nodes(prep, store_shared=False)
    assert mpms <= default
    assert len(default - set(prep._data.values())) == 1


def test_cheap_shared_node_computed_again(queue):
    # x + 0.5*y (2 operations) read at 3 places: computed at each, no store
    t = x + 0.5 * y
    outs = {"u": t + 1, "w": t * t, "v": t[::-1]}
    knl = _kernel(outs)
    assert not knl.temporary_variables
    assert len(knl.instructions) == 3
    a, b = np.linspace(-1, 1, 6), np.linspace(2, 3, 6)
    _, res = pt.generate_loopy(outs)(queue, x=a, y=b)
    tn = a + 0.5 * b
    np.testing.assert_allclose(res["u"], tn + 1, rtol=1e-15)
    np.testing.assert_allclose(res["w"], tn * tn, rtol=1e-15)
    np.testing.assert_allclose(res["v"], tn[::-1], rtol=1e-15)


@pytest.mark.parametrize("case", ["call", "reduction", "many_reads",
                                  "non_integer_power", "threshold"])
def test_costly_shared_node_stored(case, monkeypatch):
    import pytato.transform.materialize as mat
    t = {"call": pt.exp(x) + y,
         "reduction": x + pt.sum(y),
         "many_reads": x + 0.5 * y,
         "non_integer_power": x ** y + 1,
         "threshold": x + 0.5 * y}[case]
    if case == "many_reads":
        # 2 operations times 5 more reads than one: 10 > 8
        out = {f"o{i}": t * (i + 2) for i in range(6)}
    else:
        out = {"a": t * 2, "b": t[::-1]}
    if case == "threshold":
        monkeypatch.setattr(mat, "MAX_SHARED_RECOMPUTE", 1)
    prep = preprocess(pt.make_dict_of_named_arrays(out)).outputs
    stored = get_stored_nodes(prep) - set(prep._data.values())
    assert len(stored) == 1


def test_recomputed_chain_is_bounded():
    # each step reads the previous one twice (cost doubles): nodes are
    # inlined while their cost times their extra reads stays within
    # MAX_SHARED_RECOMPUTE, then one is stored
    from pytato.transform.materialize import MAX_SHARED_RECOMPUTE
    r = x
    for _ in range(12):
        r = r * 1.5 + r[::-1]
    prep = preprocess(pt.make_dict_of_named_arrays({"o": r})).outputs
    stored = get_stored_nodes(prep) - set(prep._data.values())
    assert 0 < len(stored) < 12
    knl = _kernel({"o": r})
    for insn in knl.instructions:
        assert str(insn.expression).count("*") <= 4 * MAX_SHARED_RECOMPUTE


def test_inlined_expressions_bounded(queue):
    # a sum of 40 single-use terms with a call each: inlined whole it
    # would be one statement of 40 calls; parts of it are stored instead
    from pytato.transform.materialize import CALL_COST, MAX_INLINE_COST
    a = pt.make_placeholder("a", (5,), np.float64)
    terms = [pt.sin(a * (i + 1)) for i in range(40)]
    while len(terms) > 1:
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    knl = _kernel({"o": terms[0]})
    assert len(knl.instructions) > 1
    for insn in knl.instructions:
        assert str(insn.expression).count("sin(") \
            <= 2 * (MAX_INLINE_COST // CALL_COST + 1)
    av = np.linspace(0, 1, 5)
    _, res = pt.generate_loopy({"o": terms[0]})(queue, a=av)
    np.testing.assert_allclose(
        res["o"], sum(np.sin(av * (i + 1)) for i in range(40)), rtol=1e-13)


def test_inlined_tag_respected():
    t = (pt.sin(x) * y).tagged(ImplInlined())
    knl = _kernel({"u": t + 1, "w": t * 2})
    assert not knl.temporary_variables

# }}}


# {{{ cache and logging

def test_cache_hit_same_program():
    def build():
        a = pt.make_placeholder("a", (5,), np.float64)
        return {"o": pt.sin(a) * 2 + pt.sum(a)}
    p1 = pt.generate_loopy(build())
    p2 = pt.generate_loopy(build())
    assert p2 is p1
    p3 = pt.generate_loopy(build(), function_name="other")
    assert p3 is not p1
    # data wrappers compare by identity: new data, new program
    d1 = pt.make_data_wrapper(np.ones(3))
    d2 = pt.make_data_wrapper(np.ones(3))
    assert pt.generate_loopy(d1 * 2) is not pt.generate_loopy(d2 * 2)


def test_cache_is_bounded():
    from pytato.codegen import ProgramCache
    c = ProgramCache(2)
    for i in range(4):
        c.put(i, str(i))
    assert len(c) == 2 and c.get(0) is None and c.get(3) == "3"
    c.put([1], "unhashable")  # ignored
    assert len(c) == 2


def test_phase_logging(caplog, queue):
    PROGRAM_CACHE.clear()
    # a graph of its own (not in this process's program store)
    a = pt.make_placeholder("a_phase_logging", (7,), np.float64)
    with caplog.at_level(logging.INFO, logger="pytato"):
        prog = pt.generate_loopy(pt.cos(a) + 3)
        prog(queue, a_phase_logging=np.zeros(7))
        pt.generate_loopy(pt.cos(a) + 3)
    msgs = [(r.name, r.getMessage()) for r in caplog.records]
    assert any(n == "pytato.codegen" and m.startswith("transform")
               for n, m in msgs)
    assert any(n == "pytato.codegen" and m.startswith("lowering took")
               and "nodes)" in m for n, m in msgs)
    assert any(n == "pytato.target.loopy" and m.startswith("first call")
               for n, m in msgs)
    assert any(m.startswith("default schedule took") for _, m in msgs)
    import loopy as lp
    if lp.CACHING_ENABLED:
        for phase in ("loopy preprocessing and linearization",
                      "loopy code generation", "OpenCL build",
                      "loopy host code"):
            assert sum(m.startswith(f"{phase} took") for _, m in msgs) == 1
    assert any("cache hit" in m for _, m in msgs)


def test_executor_looks_up_once(queue):
    """Programs run through :class:`PhasedExecutor`, which memoizes the
    typed and linearized translation unit: loopy's caches are looked up
    once per result, also when a launch plan is built for later calls."""
    from pytato.target.loopy.run.executor import PhasedExecutor
    PROGRAM_CACHE.clear()
    a = pt.make_placeholder("a", (7,), np.float64)
    prog = pt.generate_loopy(2 * a)
    _, (res,) = prog(queue, a=np.ones(7))
    _, (res,) = prog(queue, a=np.ones(7))
    np.testing.assert_allclose(res, 2)
    exe = prog._executor(queue.context)
    assert isinstance(exe, PhasedExecutor)
    t_unit = exe.get_typed_and_scheduled_translation_unit(None)
    assert exe.get_typed_and_scheduled_translation_unit(None) is t_unit
    assert exe.translation_unit_info(None) is exe.translation_unit_info(None)
    executable = prog.bind_to_context(queue.context)
    assert isinstance(executable.program, PhasedExecutor)
    np.testing.assert_allclose(executable(queue, a=np.ones(7))[1][0], 2)

# }}}


# {{{ big graphs

def test_large_random_dag_lowers():
    graph = make_random_dag(10000)
    knl = _kernel(graph)
    assert knl.instructions
    assert len(knl.temporary_variables) < len(knl.instructions)


def test_random_dag_values(queue):
    graph = make_random_dag(150, seed=3, n=4)
    inputs = {f"in{i}": np.random.default_rng(i).uniform(size=(4, 4))
              for i in range(4)}
    _, res = pt.generate_loopy(graph)(queue, **inputs)
    ref = pt.generate_numpy(graph)(**inputs)
    for k in graph:
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-10)

# }}}


def test_fewer_collections_restores_thresholds():
    import gc

    from pytato.codegen import GC_GENERATION0_THRESHOLD, FewerCollections
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with FewerCollections():
            assert gc.get_threshold() == (GC_GENERATION0_THRESHOLD, 20, 10)
            with FewerCollections():
                assert gc.get_threshold()[0] == GC_GENERATION0_THRESHOLD
            assert gc.get_threshold()[0] == GC_GENERATION0_THRESHOLD
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(ZeroDivisionError), FewerCollections():
            1 / 0  # noqa: B018
        assert gc.get_threshold() == (700, 10, 10)
        # higher thresholds set by the user are kept
        gc.set_threshold(10**6, 50, 10)
        with FewerCollections():
            assert gc.get_threshold() == (10**6, 50, 10)
    finally:
        gc.set_threshold(*saved)


def test_no_automatic_collections_at_exit():
    """At exit, pytato switches automatic collections off (after the
    handlers registered later have run); cyclic garbage is still
    finalized by the interpreter's last collection."""
    import subprocess
    import sys
    code = "\n".join([
        "import atexit, gc",
        "atexit.register(lambda: print('before-import handler sees',"
        " gc.isenabled()))",
        "import pytato",
        "atexit.register(lambda: print('later handler sees', gc.isenabled()))",
        "class Cycle:",
        "    def __del__(self):",
        "        print('cycle finalized')",
        "c = Cycle()",
        "c.me = c",
    ])
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True).stdout
    assert "later handler sees True" in out
    assert "before-import handler sees False" in out
    assert "cycle finalized" in out
