"""Tests of kernel launchers of pytato programs and of program statistics
(:mod:`pytato.target.loopy.run.launcher`,
:mod:`pytato.target.loopy.run.instrumented`)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import (
    ArgumentDTypeError,
    ArgumentShapeError,
    BoundArgumentError,
    MissingArgumentError,
    PytatoError,
    UnknownArgumentError,
)
from pytato.launchers import (
    PROFILE_KERNELS_ENV,
    TRACE_KERNELS_ENV,
    event_duration,
)
from pytato.target.loopy.run.instrumented import wants_instrumented_run
from pytato.target.loopy.run.launcher import (
    ProgramLauncher,
    env_switches_set,
    get_kernel_plan,
    make_program_launcher,
)
from pytato.target.loopy.run.statistics import executor_statistics


PROFILING = cl.command_queue_properties.PROFILING_ENABLE
N = 100


# {{{ programs

def _split_loops(t_unit: Any) -> Any:
    """Map the loops that are not yet mapped to the device onto work groups,
    and let loopy split the kernel at global barriers."""
    import loopy as lp
    knl = t_unit.default_entrypoint
    for iname in sorted(knl.all_inames()):
        if not knl.iname_tags(iname):
            knl = lp.split_iname(knl, iname, 16, outer_tag="g.0",
                                 inner_tag="l.0")
    knl = lp.set_options(knl, insert_gbarriers=True)
    return t_unit.with_kernel(knl)


def _multi_kernel_graph() -> dict[str, pt.Array]:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    y = (2 * x + 1).tagged(pt.tags.ImplStored())
    y2 = (pt.roll(y, 1) * y).tagged(pt.tags.ImplStored())
    return {"z": pt.roll(y2, 2) + x, "w": y[::-1] - 1}


def _multi_kernel_reference(x: np.ndarray) -> dict[str, np.ndarray]:
    y = 2 * x + 1
    y2 = np.roll(y, 1) * y
    return {"z": np.roll(y2, 2) + x, "w": y[::-1] - 1}


@pytest.fixture(scope="module")
def multi_prog(cl_ctx: cl.Context) -> Any:
    prog = pt.generate_loopy(_multi_kernel_graph()).with_transformed_program(
        _split_loops)
    plan = get_kernel_plan(prog._executor(cl_ctx))
    assert len(plan.subkernels) >= 3
    return prog


@pytest.fixture
def prof_queue(cl_ctx: cl.Context):
    q = cl.CommandQueue(cl_ctx, properties=PROFILING)
    yield q
    q.finish()


def _rand(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


def _check_dict(result: dict[str, Any], ref: dict[str, np.ndarray]) -> None:
    assert set(result) == set(ref)
    for name, expected in ref.items():
        got = result[name]
        if isinstance(got, cla.Array):
            got = got.get()
        np.testing.assert_allclose(got, expected, rtol=1e-13)

# }}}


# {{{ launchers give the program's results

@pytest.mark.parametrize("source", ["program", "executable"])
@pytest.mark.parametrize("input_kind", ["device", "numpy"])
def test_list_launcher_matches_program(cl_ctx, queue, multi_prog, source,
                                       input_kind):
    x = _rand()
    _, expected = multi_prog(queue, x=x)
    _check_dict(expected, _multi_kernel_reference(x))

    prog = multi_prog if source == "program" else multi_prog.bind_to_context(
        cl_ctx)
    arg = cla.to_device(queue, x) if input_kind == "device" else x
    launch = prog.launcher(queue, x=arg)
    assert isinstance(launch, ProgramLauncher)
    assert len(launch) >= 3
    assert launch.size_params == {"n": N}
    assert isinstance(launch.inputs["x"], cla.Array)
    if input_kind == "device":
        assert launch.inputs["x"] is arg
    evt = launch()
    assert isinstance(evt, cl.Event)
    evt.wait()
    _check_dict(launch.outputs, expected)
    _check_dict(launch.result(), expected)
    # global temporaries are allocated once and exposed
    assert launch.temporaries
    assert all(isinstance(t, cla.Array) for t in launch.temporaries.values())


def test_repeated_launches_see_updated_inputs(queue, multi_prog):
    x_dev = cla.to_device(queue, _rand(seed=1))
    launch = multi_prog.launcher(queue, x=x_dev)
    outputs = dict(launch.outputs)
    for step in range(4):
        x = _rand(seed=10 + step)
        x_dev.set(x)
        launch()
        _check_dict(launch.outputs, _multi_kernel_reference(x))
    # the same device arrays are overwritten on each call
    assert all(launch.outputs[k] is outputs[k] for k in outputs)


def test_time_step_loop_feeds_output_back(queue):
    """A launcher whose output is copied back into its input each step."""
    x = pt.make_placeholder("x", (N,), np.float64)
    prog = pt.generate_loopy(0.5 * x + 1)
    x0 = _rand(seed=3)
    x_dev = cla.to_device(queue, x0)
    launch = prog.launcher(queue, x=x_dev)
    (out_name,) = launch.outputs
    launch.push_copy_device_to_device("feedback", launch.outputs[out_name],
                                      x_dev)
    ref = x0
    for _ in range(5):
        launch()
        ref = 0.5 * ref + 1
    np.testing.assert_allclose(x_dev.get(), ref, rtol=1e-13)


def test_per_call_inputs(queue, multi_prog):
    x0, x1 = _rand(seed=4), _rand(seed=5)
    d0, d1 = cla.to_device(queue, x0), cla.to_device(queue, x1)
    launch = multi_prog.launcher(queue, per_call=["x"], x=d0)
    assert launch.per_call == frozenset({"x"})
    launch(x=d1)
    _check_dict(launch.outputs, _multi_kernel_reference(x1))
    assert launch.inputs["x"] is d1
    launch(x=d0)
    _check_dict(launch.outputs, _multi_kernel_reference(x0))


@pytest.mark.parametrize(("value", "error"), [
    ("short", ArgumentShapeError),
    ("int32", ArgumentDTypeError),
    ("numpy", TypeError),
    ("missing", MissingArgumentError),
    ("unknown", UnknownArgumentError),
])
def test_per_call_input_errors(queue, multi_prog, value, error):
    d0 = cla.to_device(queue, _rand())
    launch = multi_prog.launcher(queue, per_call=["x"], x=d0)
    kwargs: dict[str, Any] = {
        "short": {"x": cla.zeros(queue, N - 1, np.float64)},
        "int32": {"x": cla.zeros(queue, N, np.int32)},
        "numpy": {"x": np.zeros(N)},
        "missing": {},
        "unknown": {"x": d0, "y": d0},
    }[value]
    with pytest.raises(error):
        launch(**kwargs)


def test_per_call_names_checked(queue, multi_prog):
    with pytest.raises(UnknownArgumentError):
        multi_prog.launcher(queue, per_call=["z"], x=_rand())
    launch = multi_prog.launcher(queue, x=_rand())
    with pytest.raises(UnknownArgumentError):
        launch(x=cla.zeros(queue, N, np.float64))


def test_bound_data_and_scalar_inputs(queue):
    data = np.arange(N, dtype=np.float64)
    a = pt.make_data_wrapper(data)
    s = pt.make_placeholder("s", (), np.float64)
    x = pt.make_placeholder("x", (N,), np.float64)
    prog = pt.generate_loopy({"y": a * s + x, "m": pt.sum(x * a)})
    x_np = _rand(seed=6)
    _, expected = prog(queue, x=x_np, s=2.5)
    launch = prog.launcher(queue, x=x_np, s=2.5)
    launch()
    _check_dict(launch.outputs, expected)
    with pytest.raises(BoundArgumentError):
        prog.launcher(queue, per_call=list(prog.bound_arguments), x=x_np,
                      s=2.5)

@pytest.mark.parametrize("nrows", [0, 5])
@pytest.mark.parametrize("profiling", [False, True])
def test_symbolic_empty_and_scalar_outputs(cl_ctx, nrows, profiling):
    q = cl.CommandQueue(cl_ctx, properties=PROFILING if profiling else 0)
    n, m = pt.make_size_param("n"), pt.make_size_param("m")
    x = pt.make_placeholder("x", (n, 3), np.float32)
    y = pt.make_placeholder("y", (m,), np.float32)
    prog = pt.generate_loopy({"a": 2 * x, "t": pt.sum(x), "b": y + 1,
                              "c": pt.sum(y)})
    xv = np.ones((nrows, 3), np.float32)
    yv = np.arange(4, dtype=np.float32)
    _, ref = prog(q, x=xv, y=yv)
    launch = prog.launcher(q, x=xv, y=yv)
    launch()
    assert launch.size_params == {"n": nrows, "m": 4}
    assert launch.outputs["a"].shape == (nrows, 3)
    assert launch.outputs["t"].shape == ()
    _check_dict(launch.outputs, ref)
    # per-call input of symbolic shape: the shape given first is kept
    y_dev = cla.to_device(q, np.arange(7, dtype=np.float32))
    launch = prog.launcher(q, per_call=["y"], x=xv,
                           y=cla.zeros(q, 7, np.float32))
    launch(y=y_dev)
    np.testing.assert_allclose(launch.outputs["c"].get(), 21)
    with pytest.raises(ArgumentShapeError, match=r"expected shape \(7,\)"):
        launch(y=cla.zeros(q, 6, np.float32))
    q.finish()


def test_launcher_of_program_with_calls(queue, prof_queue):
    x = pt.make_placeholder("x", (N,), np.float64)

    def f(a: pt.Array) -> pt.Array:
        return 2 * a + pt.sum(a)

    prog = pt.generate_loopy({"r": pt.trace_call(f, x),
                              "s": pt.trace_call(f, x + 1)})
    xv = _rand(seed=12)
    expected = {"r": 2 * xv + xv.sum(), "s": 2 * (xv + 1) + (xv + 1).sum()}
    _, out = prog(queue, x=xv)
    _check_dict(out, expected)
    for q in (queue, prof_queue):
        launch = prog.launcher(q, x=xv)
        launch()
        _check_dict(launch.outputs, expected)
        _, out = prog(q, x=xv)
        _check_dict(out, expected)

# }}}


# {{{ errors at creation are the program's errors

def _error_cases(queue: cl.CommandQueue) -> dict[str, dict[str, Any]]:
    return {
        "wrong ndim": {"x": np.zeros((N, 2))},
        "wrong dtype": {"x": np.zeros(N, np.float32)},
        "wrong dtype device": {"x": cla.zeros(queue, N, np.float32)},
        "missing": {},
        "output passed": {"x": np.zeros(N), "z": np.zeros(N)},
        "inconsistent size": {"x": np.zeros(N), "n": N + 1},
    }


@pytest.mark.parametrize("case", ["wrong ndim", "wrong dtype",
                                  "wrong dtype device", "missing",
                                  "output passed", "inconsistent size"])
@pytest.mark.parametrize("source", ["program", "executable"])
def test_creation_errors_match_program(cl_ctx, queue, multi_prog, case, source):
    prog = multi_prog if source == "program" else multi_prog.bind_to_context(
        cl_ctx)
    kwargs = _error_cases(queue)[case]
    with pytest.raises(PytatoError) as prog_err:
        prog(queue, **kwargs)
    with pytest.raises(PytatoError) as launch_err:
        prog.launcher(queue, **kwargs)
    assert type(launch_err.value) is type(prog_err.value)
    assert str(launch_err.value) == str(prog_err.value)


def test_executable_launcher_needs_its_context(ctx_factory, multi_prog):
    exe = multi_prog.bind_to_context(ctx_factory())
    other_queue = cl.CommandQueue(ctx_factory())
    with pytest.raises(ValueError, match="context"):
        exe.launcher(other_queue, x=_rand())

# }}}


# {{{ statistics

def _durations_by_name(pairs: Any) -> dict[str, list[float]]:
    result: dict[str, list[float]] = {}
    for name, evt in pairs:
        result.setdefault(name, []).append(event_duration(evt))
    return result


def _check_stats(stats: Any, durations: dict[str, list[float]]) -> None:
    assert set(stats) == set(durations)
    for name, times in durations.items():
        st = stats[name]
        assert st.count == len(times)
        assert st.total == pytest.approx(sum(times), rel=1e-12, abs=0)
        assert st.min == min(times)
        assert st.max == max(times)
        assert st.mean == pytest.approx(sum(times) / len(times), rel=1e-12)


def test_launcher_statistics_equal_event_times(prof_queue, multi_prog):
    launch = multi_prog.launcher(prof_queue, x=_rand())
    for _ in range(3):
        launch()
    prof_queue.finish()
    pairs = [(sub.name, evt) for sub in launch.launchers for evt in sub.events]
    assert len(pairs) == 3 * len(launch)
    stats = launch.statistics
    _check_stats(stats, _durations_by_name(pairs))
    assert not launch.events  # consumed
    table = str(stats)
    for sub in launch.launchers:
        assert sub.name in table


@pytest.mark.parametrize("source", ["program", "executable"])
def test_program_statistics_equal_event_times(cl_ctx, prof_queue, multi_prog,
                                              source):
    prog = multi_prog if source == "program" else multi_prog.bind_to_context(
        cl_ctx)
    prog.clear_statistics()
    x = _rand(seed=7)
    for _ in range(2):
        _, out = prog(prof_queue, x=x)
        _check_dict(out if isinstance(out, dict) else dict(out),
                    _multi_kernel_reference(x))
    prof_queue.finish()
    executor = (prog._executor(cl_ctx) if source == "program"
                else prog.program)
    pairs = executor_statistics(executor).events
    names = [sk.name for sk in get_kernel_plan(executor).subkernels]
    assert [name for name, _ in pairs] == 2 * names
    stats = prog.statistics
    _check_stats(stats, _durations_by_name(pairs))
    assert stats.total.count == 2 * len(names)
    assert "(total)" in str(stats)
    prog.clear_statistics()
    assert not prog.statistics


def test_no_statistics_without_profiling(queue, multi_prog):
    multi_prog.clear_statistics()
    multi_prog(queue, x=_rand())
    launch = multi_prog.launcher(queue, x=_rand())
    launch()
    queue.finish()
    assert not multi_prog.statistics
    assert not launch.statistics


@pytest.mark.parametrize("input_kind", ["numpy", "device"])
def test_profiled_run_returns_like_loopy(cl_ctx, queue, prof_queue, input_kind):
    """On profiling queues programs enqueue kernels themselves: results keep
    the types and layout of loopy's executor."""
    x = pt.make_placeholder("x", (N,), np.float64)
    y = pt.make_placeholder("y", (N,), np.float64)
    exe = pt.generate_loopy(x * y + 1).bind_to_context(cl_ctx)
    xv, yv = _rand(seed=8), _rand(seed=9)
    results = []
    for q in (queue, prof_queue):
        args = ({"x": xv, "y": yv} if input_kind == "numpy" else
                {"x": cla.to_device(q, xv), "y": cla.to_device(q, yv)})
        _, out = exe(q, **args)
        results.append(out)
    plain, profiled = results
    assert type(plain) is type(profiled) is tuple
    assert [type(r) for r in plain] == [type(r) for r in profiled]
    got = profiled[0] if input_kind == "numpy" else profiled[0].get()
    np.testing.assert_allclose(got, xv * yv + 1, rtol=1e-14)
    assert exe.statistics.total.count == 1

# }}}


# {{{ environment switches

def test_trace_switch_logs_program_kernels(queue, multi_prog, monkeypatch,
                                           caplog):
    monkeypatch.setenv(TRACE_KERNELS_ENV, "1")
    x = _rand(seed=11)
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        _, out = multi_prog(queue, x=x)
    _check_dict(out, _multi_kernel_reference(x))
    executor = multi_prog._executor(queue.context)
    names = [sk.name for sk in get_kernel_plan(executor).subkernels]
    messages = [r.getMessage() for r in caplog.records]
    for name in names:
        assert any(m.startswith(f"enqueue {name}: global_size=")
                   for m in messages)


def test_profile_switch_selects_kernels(prof_queue, multi_prog, monkeypatch,
                                        caplog):
    executor = multi_prog._executor(prof_queue.context)
    first = get_kernel_plan(executor).subkernels[0].name
    monkeypatch.setenv(PROFILE_KERNELS_ENV, first)
    launch = multi_prog.launcher(prof_queue, x=_rand())
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        launch()
        multi_prog(prof_queue, x=_rand())
    profiled = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("profile ")]
    assert len(profiled) == 2
    assert all(m.startswith(f"profile {first}: ") for m in profiled)

def test_switch_values(queue, monkeypatch):
    for name in (TRACE_KERNELS_ENV, PROFILE_KERNELS_ENV):
        monkeypatch.delenv(name, raising=False)
    assert not env_switches_set()
    assert not wants_instrumented_run(queue)
    monkeypatch.setenv(TRACE_KERNELS_ENV, "off")
    assert env_switches_set()
    assert not wants_instrumented_run(queue)
    monkeypatch.setenv(PROFILE_KERNELS_ENV, "some_kernel")
    assert wants_instrumented_run(queue)


def test_trace_switch_logs_launcher_kernels(queue, multi_prog, monkeypatch,
                                            caplog):
    x = _rand(seed=13)
    launch = multi_prog.launcher(queue, x=x)
    monkeypatch.setenv(TRACE_KERNELS_ENV, "all")
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        launch()
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == len(launch)
    for sub, message in zip(launch.launchers, messages, strict=True):
        assert message.startswith(f"enqueue {sub.name}: global_size=")
    _check_dict(launch.outputs, _multi_kernel_reference(x))

# }}}

# vim: foldmethod=marker


# {{{ profiling queues take the fast path

@pytest.fixture(scope="module")
def dag_prog() -> Any:
    """A random DAG of many kernels (the code generation benchmark's)."""
    from random_graphs import make_random_dag
    return pt.generate_loopy(make_random_dag(300, seed=5, n=8))


def _dag_inputs(queue: cl.CommandQueue) -> dict[str, cla.Array]:
    rng = np.random.default_rng(11)
    return {f"in{i}": cla.to_device(queue, rng.random((8, 8)))
            for i in range(4)}


@pytest.mark.parametrize("source", ["program", "executable"])
def test_profiling_calls_equal_plain_calls(cl_ctx, queue, prof_queue, dag_prog,
                                           source):
    """Repeated calls on a profiling queue (which run through the fast
    path) give the results of plain calls and record each kernel once per
    call."""
    prog = dag_prog if source == "program" else dag_prog.bind_to_context(
        cl_ctx)
    executor = (prog._executor(cl_ctx) if source == "program"
                else prog.program)
    inputs = _dag_inputs(queue)
    _, plain = prog(queue, **inputs)
    plain = {k: v.get() for k, v in dict(plain).items()} if isinstance(
        plain, dict) else [v.get() for v in plain]
    names = [sk.name for sk in get_kernel_plan(executor).subkernels]
    assert len(names) > 5
    pinputs = _dag_inputs(prof_queue)
    prog.clear_statistics()
    ncalls = 4
    for _ in range(ncalls):
        _, out = prog(prof_queue, **pinputs)
        got = ({k: v.get() for k, v in out.items()} if isinstance(out, dict)
               else [v.get() for v in out])
        if isinstance(got, dict):
            assert got.keys() == plain.keys()
            for k in got:
                np.testing.assert_array_equal(got[k], plain[k])
        else:
            for a, b in zip(got, plain, strict=True):
                np.testing.assert_array_equal(a, b)
    prof_queue.finish()
    # one batch of events per call, in plan order
    pairs = executor_statistics(executor).events
    assert [name for name, _ in pairs] == ncalls * names
    stats = prog.statistics
    assert set(stats) == set(names)
    for name in names:
        assert stats[name].count == ncalls * names.count(name)
        assert stats[name].total >= 0
    _check_stats(stats, _durations_by_name(pairs))
    assert not executor_statistics(executor).events
    prog.clear_statistics()
    assert not prog.statistics


def test_profiling_calls_out_of_order_queue(cl_ctx, queue, dag_prog):
    """On an out-of-order queue with profiling, the kernels of a call are
    chained by their events: same results as a plain queue, every kernel
    counted."""
    dev = cl_ctx.devices[0]
    props = (cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
             | PROFILING)
    if not dev.queue_properties & props == props:
        pytest.skip("device has no out-of-order queues")
    ooo = cl.CommandQueue(cl_ctx, properties=props)
    exe = dag_prog.bind_to_context(cl_ctx)
    _, plain = exe(queue, **_dag_inputs(queue))
    exe.clear_statistics()
    inputs = _dag_inputs(ooo)
    ooo.finish()
    for _ in range(3):
        evt, out = exe(ooo, **inputs)
        evt.wait()
        for k in plain:
            np.testing.assert_array_equal(out[k].get(), plain[k].get())
    ooo.finish()
    nkernels = len(get_kernel_plan(exe.program).subkernels)
    assert exe.statistics.total.count == 3 * nkernels
    exe.clear_statistics()


def test_profiling_calls_bounded_memory(cl_ctx, prof_queue, dag_prog,
                                        monkeypatch):
    """Past ``max_pending`` events, finished events are read as calls
    record more: the statistics count every call."""
    exe = dag_prog.bind_to_context(cl_ctx)
    stats_obj = executor_statistics(exe.program)
    stats_obj.clear()
    nkernels = len(get_kernel_plan(exe.program).subkernels)
    monkeypatch.setattr(stats_obj, "max_pending", 2 * nkernels)
    stats_obj.clear()  # takes the new limit
    inputs = _dag_inputs(prof_queue)
    for _ in range(10):
        exe(prof_queue, **inputs)
        prof_queue.finish()
    assert len(stats_obj.events) <= 3 * nkernels
    assert exe.statistics.total.count == 10 * nkernels
    exe.clear_statistics()


def test_profiling_launcher_keeps_events_and_profiler(prof_queue, multi_prog):
    """A launcher on a profiling queue records its kernels' events on the
    fast path, in its launchers and in its profiler."""
    from pytato.launchers import KernelProfiler
    prog = multi_prog
    profiler = KernelProfiler("run")
    executor = prog._executor(prof_queue.context)
    launch = make_program_launcher(
        executor, prof_queue, prog._arg_spec, {}, {"x": _rand(seed=3)},
        profiler=profiler)
    assert all(sub.profiler is profiler for sub in launch.launchers)
    for _ in range(3):
        launch()
    prof_queue.finish()
    _check_dict(launch.result(), _multi_kernel_reference(_rand(seed=3)))
    pairs = profiler.events
    assert len(pairs) == 3 * len(launch)
    expected = _durations_by_name(pairs)
    _check_stats(profiler.statistics, expected)
    _check_stats(launch.statistics, expected)

# }}}
