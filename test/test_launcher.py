"""Tests of :mod:`pytato.launchers`."""

from __future__ import annotations

import logging
import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError
from pytato.launchers import (
    HostLauncherI,
    KernelProfiler,
    KernelStatistics,
    LauncherStatistics,
    OpenClCopyBuffer,
    OpenClCopyDevice2Device,
    OpenClCopyDevice2Host,
    OpenClCopyHost2Device,
    OpenClIterativeKernelLauncher,
    OpenClKernelLauncher,
    OpenClKernelListLauncher,
    OpenClKernelParameterYielder,
    OpenClParametrizedKernelLauncher,
    event_duration,
    launcher_from_kernels,
    profile_kernel,
)


SOURCE = """
__kernel void add_one(__global const float *x, __global float *a, int n)
{
    int i = get_global_id(0);
    if (i < n) a[i] = x[i] + 1.0f;
}

__kernel void times_two(__global const float *a, __global float *b, int n)
{
    int i = get_global_id(0);
    if (i < n) b[i] = 2.0f * a[i];
}

__kernel void scale(__global float *y, __global const float *x, float alpha)
{
    int i = get_global_id(0);
    y[i] = alpha * x[i];
}

__kernel void write_param(__global int *out, __global int *counter,
                          int p, int q)
{
    int k = atomic_inc(counter);
    out[k] = 100 * p + q;
}
"""

N = 1000
PROFILING = cl.command_queue_properties.PROFILING_ENABLE
OUT_OF_ORDER = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE


@pytest.fixture(scope="module")
def prg(cl_ctx: cl.Context) -> cl.Program:
    return cl.Program(cl_ctx, SOURCE).build()


@pytest.fixture
def prof_queue(cl_ctx: cl.Context):
    q = cl.CommandQueue(cl_ctx, properties=PROFILING)
    yield q
    q.finish()


def _ooo_queue(ctx: cl.Context) -> cl.CommandQueue:
    dev = ctx.devices[0]
    if not dev.queue_properties & OUT_OF_ORDER:
        pytest.skip("device does not support out-of-order queues")
    try:
        return cl.CommandQueue(ctx, properties=OUT_OF_ORDER | PROFILING)
    except cl.Error as e:
        pytest.skip(f"cannot create an out-of-order queue: {e}")


def _host_x() -> np.ndarray:
    return np.random.default_rng(7).random(N, dtype=np.float32)


# {{{ statistics

def test_kernel_statistics_merge() -> None:
    a = KernelStatistics.from_durations([1.0, 3.0])
    b = KernelStatistics.from_durations([0.5])
    assert (a.count, a.total, a.min, a.max, a.mean) == (2, 4.0, 1.0, 3.0, 2.0)
    a += b
    assert (a.count, a.total, a.min, a.max) == (3, 4.5, 0.5, 3.0)
    assert a.mean == pytest.approx(1.5)
    assert b.count == 1  # unchanged
    assert a + KernelStatistics() == a

    empty = KernelStatistics()
    assert empty.count == 0
    assert math.isnan(empty.mean) and math.isnan(empty.min)

    table = LauncherStatistics({"k1": a})
    table += LauncherStatistics({"k1": b, "k2": b})
    assert table["k1"].count == 4
    assert table["k2"].count == 1
    assert table.total.count == 5
    text = str(table)
    lines = text.splitlines()
    assert lines[0].split() == ["name", "count", "total", "(ms)", "mean", "(us)",
                                "min", "(us)", "max", "(us)"]
    # sorted by total time, then the sum of all
    assert lines[2].split()[:3] == ["k1", "4", f"{5.0e3:.3f}"]
    assert lines[3].split()[:2] == ["k2", "1"]
    assert lines[-1].split()[:2] == ["(total)", "5"]
    assert str(LauncherStatistics()) == "(no kernel statistics)"


def test_statistics_equal_event_profile_times(cl_ctx, prof_queue, prg) -> None:
    x = cla.to_device(prof_queue, _host_x())
    a = cla.empty_like(x)
    launcher = OpenClKernelLauncher(
        "add_one", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N, default_queue=prof_queue)

    for _ in range(4):
        evt = launcher()
    assert isinstance(evt, cl.Event)
    prof_queue.finish()

    events = launcher.events
    assert len(events) == 4
    durations = [(e.profile.end - e.profile.start) * 1e-9 for e in events]

    stats = launcher.statistics
    assert list(stats) == ["add_one"]
    st = stats["add_one"]
    assert st.count == 4
    assert st.total == pytest.approx(sum(durations), rel=1e-12, abs=0)
    assert st.min == min(durations)
    assert st.max == max(durations)
    assert st.mean == pytest.approx(sum(durations) / 4)
    # finished events were consumed, statistics are cumulative
    assert launcher.events == ()
    assert launcher.statistics["add_one"] == st

    launcher()
    prof_queue.finish()
    (last,) = launcher.events
    st2 = launcher.statistics["add_one"]
    assert st2.count == 5
    assert st2.total == pytest.approx(
        sum(durations) + (last.profile.end - last.profile.start) * 1e-9)
    assert "add_one" in str(launcher.statistics)

    launcher.clear_statistics()
    assert len(launcher.statistics) == 0
    np.testing.assert_array_equal(a.get(), x.get() + 1)


def test_no_events_without_profiling(queue, prg) -> None:
    x = cla.to_device(queue, _host_x())
    a = cla.empty_like(x)
    launcher = OpenClKernelLauncher(
        "add_one", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N)
    launcher(queue).wait()
    assert launcher.events == ()
    assert len(launcher.statistics) == 0

# }}}


# {{{ parameters

def _write_param_setup(queue, prg, n_out):
    out = cla.zeros(queue, n_out, np.int32)
    counter = cla.zeros(queue, 1, np.int32)
    return out, counter


def test_iterated_parameters_reach_kernel_in_order(cl_ctx, prof_queue, prg):
    out, counter = _write_param_setup(prof_queue, prg, 16)
    values = [5, 3, 8, 1]
    launcher = OpenClIterativeKernelLauncher(
        parameters_map={"p": (2, np.int32), "q": (3, np.int32)},
        args_list=((0, out), (1, counter)),
        iterated_parameters={
            "p": OpenClKernelParameterYielder(lambda: iter(values))},
        name="write_param", kernel=cl.Kernel(prg, "write_param"),
        default_global_work_size=1, default_queue=prof_queue)
    assert set(launcher.parameters) == {"q"}

    launcher(q=np.int32(7))
    # each call draws from a fresh iterator
    evt = launcher(q=7)
    evt.wait()
    expected = [100 * v + 7 for v in values] * 2
    np.testing.assert_array_equal(out.get()[:8], expected)
    assert counter.get()[0] == 8
    prof_queue.finish()
    assert launcher.statistics["write_param"].count == 8


def test_iterated_parameters_product(queue, prg):
    out, counter = _write_param_setup(queue, prg, 8)
    launcher = OpenClIterativeKernelLauncher(
        {"p": (2, np.int32), "q": (3, np.int32)}, ((0, out), (1, counter)),
        {"p": OpenClKernelParameterYielder(lambda: range(1, 3)),
         "q": OpenClKernelParameterYielder(lambda: (10, 20, 30))},
        name="write_param", kernel=cl.Kernel(prg, "write_param"),
        default_global_work_size=(1,))
    assert list(launcher.iter_parameters()) == [
        (1, 10), (1, 20), (1, 30), (2, 10), (2, 20), (2, 30)]
    launcher(queue).wait()
    np.testing.assert_array_equal(out.get()[:6],
                                  [110, 120, 130, 210, 220, 230])


def test_parametrized_launcher_and_type_errors(queue, prg):
    x = cla.to_device(queue, _host_x())
    y = cla.empty_like(x)
    launcher = OpenClParametrizedKernelLauncher(
        {"y": (0, cl.Buffer), "alpha": (2, np.float32)}, ((1, x),),
        name="scale", kernel=cl.Kernel(prg, "scale"),
        default_global_work_size=N, default_queue=queue)
    assert launcher.parameters == {"y": (cl.Buffer,),
                                   "alpha": np.dtype(np.float32)}

    launcher(y=y, alpha=np.float32(3)).wait()
    np.testing.assert_allclose(y.get(), 3 * x.get(), rtol=1e-6)
    launcher(y=y.base_data, alpha=0.5).wait()  # Python float fits float32
    np.testing.assert_allclose(y.get(), 0.5 * x.get(), rtol=1e-6)

    with pytest.raises(TypeError, match=r"'alpha'.*float32.*float64"):
        launcher(y=y, alpha=np.float64(3))
    with pytest.raises(TypeError, match=r"'alpha'"):
        launcher(y=y, alpha="3")
    with pytest.raises(TypeError, match=r"'y'.*Buffer.*ndarray"):
        launcher(y=np.empty(N, np.float32), alpha=np.float32(1))
    with pytest.raises(TypeError, match=r"missing parameters \['alpha'\]"):
        launcher(y=y)
    with pytest.raises(TypeError, match=r"unexpected parameters \['beta'\]"):
        launcher(y=y, alpha=np.float32(1), beta=1)

    with pytest.raises(TypeError, match=r"numpy scalar"):
        OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"),
                             (x, y, N), default_global_work_size=N)
    with pytest.raises(IndexError):
        OpenClParametrizedKernelLauncher(
            {"alpha": (5, np.float32)}, (), name="scale",
            kernel=cl.Kernel(prg, "scale"))

# }}}


# {{{ lists and copies

def test_list_launcher_matches_numpy(cl_ctx, prof_queue, prg):
    x_host = _host_x()
    result = np.empty_like(x_host)
    x = cla.empty(prof_queue, N, np.float32)
    a = cla.empty_like(x)
    b = cla.empty_like(x)
    n = np.int32(N)

    add_one = OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"),
                                   (x, a, n), default_global_work_size=N)
    times_two = OpenClKernelLauncher("times_two", cl.Kernel(prg, "times_two"),
                                     (a, b, n), default_global_work_size=N)
    lst = OpenClKernelListLauncher("pipeline", default_queue=prof_queue)
    lst.push_copy_host_to_device("x", x_host, x)
    lst += add_one
    lst += [times_two, None]
    lst.push_copy_device_to_host("b", b, result)
    assert [ln.name for ln in lst] == [
        "copy_h2d_x", "add_one", "times_two", "copy_d2h_b"]

    for _ in range(3):
        lst().wait()
        np.testing.assert_array_equal(result, (x_host + 1) * 2)
        result[:] = 0
    prof_queue.finish()
    stats = lst.statistics
    assert set(stats) == {"copy_h2d_x", "add_one", "times_two", "copy_d2h_b"}
    assert all(st.count == 3 for st in stats.values())
    assert "times_two" in str(stats)

    # nesting: a list pushed into a list is flattened
    outer = OpenClKernelListLauncher("outer", default_queue=prof_queue)
    outer += lst
    assert len(outer) == 4
    x_host2 = x_host[::-1].copy()
    x_host[:] = x_host2  # the copy reads the (same) host array on each call
    outer().wait()
    np.testing.assert_array_equal(result, (x_host2 + 1) * 2)


def test_launcher_from_kernels(queue, prg):
    x = cla.to_device(queue, _host_x())
    a = cla.empty_like(x)
    b = cla.empty_like(x)
    k1 = cl.Kernel(prg, "add_one")
    k1.set_args(x.base_data, a.base_data, np.int32(N))
    k2 = cl.Kernel(prg, "times_two")
    k2.set_args(a.base_data, b.base_data, np.int32(N))
    lst = launcher_from_kernels("two", [(k1, (N,), None), (k2, N)], queue)
    assert isinstance(lst, OpenClKernelListLauncher)
    assert [ln.name for ln in lst] == ["add_one", "times_two"]
    lst().wait()
    np.testing.assert_array_equal(b.get(), (x.get() + 1) * 2)


def test_copies(queue):
    host = np.arange(64, dtype=np.float64)
    dev = cla.zeros(queue, 64, np.float64)
    dev2 = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size=host.nbytes)
    back = np.zeros_like(host)

    OpenClCopyHost2Device("h", host, dev, default_queue=queue)().wait()
    np.testing.assert_array_equal(dev.get(), host)

    # device to device with offsets: elements 8..23 of dev to 0..15 of dev2
    d2d = OpenClCopyDevice2Device("d", dev, dev2, src_device_offset=8 * 8,
                                  byte_count=16 * 8)
    assert d2d.direction == "d2d" and d2d.nbytes == 128
    d2d(queue).wait()
    part = np.zeros(16, np.float64)
    OpenClCopyDevice2Host("p", dev2, part)(queue).wait()
    np.testing.assert_array_equal(part, host[8:24])

    # host to device into an offset, and back from a Buffer
    lst = OpenClKernelListLauncher("copies", default_queue=queue)
    lst.push_copy_host_device("h", host[:4].copy(), dev2, dst_device_offset=32)
    lst.push_copy_host_device("b", dev2, back)
    assert [ln.direction for ln in lst] == ["h2d", "d2h"]
    lst().wait()
    np.testing.assert_array_equal(back[:4], host[8:12])
    np.testing.assert_array_equal(back[4:8], host[:4])
    np.testing.assert_array_equal(back[8:16], host[16:24])

    with pytest.raises(ValueError, match="do not fit"):
        OpenClCopyHost2Device("big", np.zeros(65), dev)
    with pytest.raises(TypeError):
        OpenClCopyDevice2Host("x", host, back)
    with pytest.raises(TypeError, match="device memory"):
        lst.push_copy_host_device("x", host, back)


def test_empty_list_and_missing_size(queue, prg):
    lst = OpenClKernelListLauncher("empty")
    evt = lst(queue)
    assert isinstance(evt, cl.Event)
    evt.wait()
    with pytest.raises(ValueError, match="no queue"):
        lst()
    no_size = OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"))
    with pytest.raises(ValueError, match="global work size"):
        lst += no_size

# }}}


# {{{ out-of-order queues

def test_out_of_order_queue(cl_ctx, prg):
    q = _ooo_queue(cl_ctx)
    x_host = _host_x()
    result = np.empty_like(x_host)
    x = cl.Buffer(cl_ctx, cl.mem_flags.READ_WRITE, size=x_host.nbytes)
    a = cl.Buffer(cl_ctx, cl.mem_flags.READ_WRITE, size=x_host.nbytes)
    b = cl.Buffer(cl_ctx, cl.mem_flags.READ_WRITE, size=x_host.nbytes)
    n = np.int32(N)
    lst = OpenClKernelListLauncher("ooo", default_queue=q)
    lst.push_copy_host_to_device("x", x_host, x)
    lst.push_kernels(
        OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"), (x, a, n),
                             default_global_work_size=N),
        OpenClKernelLauncher("times_two", cl.Kernel(prg, "times_two"),
                             (a, b, n), default_global_work_size=N))
    lst.push_copy_device_to_host("b", b, result)
    user_evt = cl.UserEvent(cl_ctx)
    evt = lst(wait_for=[user_evt])
    assert evt.command_execution_status != cl.command_execution_status.COMPLETE
    user_evt.set_status(cl.command_execution_status.COMPLETE)
    evt.wait()
    np.testing.assert_array_equal(result, (x_host + 1) * 2)

    out = cla.zeros(q, 8, np.int32)
    counter = cla.zeros(q, 1, np.int32)
    q.finish()
    it = OpenClIterativeKernelLauncher(
        {"p": (2, np.int32), "q": (3, np.int32)}, ((0, out), (1, counter)),
        {"p": OpenClKernelParameterYielder(lambda: range(4))},
        name="write_param", kernel=cl.Kernel(prg, "write_param"),
        default_global_work_size=1, default_queue=q)
    barrier = it(q=np.int32(1))
    assert isinstance(barrier, cl.Event)
    barrier.wait()
    # launches may run in any order on an out-of-order queue
    assert sorted(out.get()[:4]) == [1, 101, 201, 301]
    assert it(q=np.int32(2), enqueue_barrier=False) is None
    q.finish()
    assert sorted(out.get()[4:]) == [2, 102, 202, 302]
    assert it.statistics["write_param"].count == 8

# }}}


def test_env_trace_and_profile(monkeypatch, caplog, prof_queue, prg):
    x = cla.to_device(prof_queue, _host_x())
    a = cla.empty_like(x)
    launcher = OpenClKernelLauncher(
        "add_one", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N, default_local_work_size=None,
        default_queue=prof_queue)
    other = OpenClKernelLauncher(
        "other", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N, default_queue=prof_queue)
    monkeypatch.setenv("PYTATO_TRACE_KERNELS", "1")
    monkeypatch.setenv("PYTATO_PROFILE_KERNELS", "add_one,unknown")
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        launcher()
        other()
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("enqueue add_one: global_size=(1000,)")
               for m in messages)
    assert any(m.startswith("enqueue other:") for m in messages)
    assert any(m.startswith("profile add_one:") and m.endswith(" ms")
               for m in messages)
    assert not any(m.startswith("profile other") for m in messages)

    caplog.clear()
    monkeypatch.setenv("PYTATO_TRACE_KERNELS", "0")
    monkeypatch.delenv("PYTATO_PROFILE_KERNELS")
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        launcher()
    assert not caplog.records


# {{{ the seed's profiler API

def _duration(evt: cl.Event) -> float:
    return (evt.profile.end - evt.profile.start) * 1e-9


def test_profiler_collects_launchers(prof_queue, prg):
    """One profiler given to several launchers (and through a list) collects
    the durations of their events, by launcher name."""
    x_host = _host_x()
    x = cla.empty(prof_queue, N, np.float32)
    a = cla.empty_like(x)
    b = cla.empty_like(x)
    n = np.int32(N)
    profiler = KernelProfiler("pipeline")
    add_one = OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"),
                                   (x, a, n), default_global_work_size=N,
                                   profiler=profiler)
    times_two = OpenClParametrizedKernelLauncher(
        {"n": (2, np.int32)}, ((0, a), (1, b)), name="times_two",
        kernel=cl.Kernel(prg, "times_two"), default_global_work_size=N)
    lst = OpenClKernelListLauncher("pipeline", profiler)
    assert lst.profiler is profiler
    lst.push_copy_host_to_device("x", x_host, x)
    lst.push_kernels(add_one, times_two)
    # the list's profiler goes to the launchers pushed without one
    assert all(ln.profiler is profiler for ln in lst)
    for _ in range(3):
        lst(prof_queue, n=N)
    prof_queue.finish()
    np.testing.assert_array_equal(b.get(), (x_host + 1) * 2)
    pairs = profiler.events
    assert [name for name, _ in pairs] == 3 * ["copy_h2d_x", "add_one",
                                               "times_two"]
    expected = {name: [_duration(e) for nm, e in pairs if nm == name]
                for name in ("copy_h2d_x", "add_one", "times_two")}
    stats = profiler.statistics
    for name, times in expected.items():
        assert stats[name].count == 3
        assert stats[name].total == pytest.approx(sum(times), rel=1e-12)
    # the launchers keep their own statistics as well
    assert lst.statistics["add_one"] == stats["add_one"]
    assert not profiler.events
    assert "add_one" in str(profiler) and "pipeline" in profiler.summary()
    profiler.clear()
    assert not profiler.statistics


def test_profiler_ignores_plain_queues(queue, prg):
    x = cla.to_device(queue, _host_x())
    a = cla.empty_like(x)
    profiler = KernelProfiler()
    launcher = OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"),
                                    (x, a, np.int32(N)),
                                    default_global_work_size=N,
                                    profiler=profiler)
    launcher(queue)
    queue.finish()
    assert not profiler.events and not profiler.statistics
    np.testing.assert_array_equal(a.get(), x.get() + 1)


def test_profiler_type_checked(prg):
    with pytest.raises(TypeError, match="profiler must be a KernelProfiler"):
        OpenClKernelLauncher("add_one", cl.Kernel(prg, "add_one"),
                             profiler=object())  # type: ignore[arg-type]


def test_profiler_record_batches_and_bound(prof_queue, prg):
    """record_batch keeps events pairwise with names; past max_pending the
    finished ones are read (and counted) as more are recorded."""
    x = cla.to_device(prof_queue, _host_x())
    a = cla.empty_like(x)
    knl = cl.Kernel(prg, "add_one")
    for i, arg in enumerate((x.base_data, a.base_data, np.int32(N))):
        knl.set_arg(i, arg)
    profiler = KernelProfiler()
    profiler.max_pending = 4
    profiler.clear()
    events = []
    for _ in range(5):
        batch = tuple(cl.enqueue_nd_range_kernel(prof_queue, knl, (N,), None)
                      for _ in range(2))
        prof_queue.finish()
        profiler.record_batch(("first", "second"), batch)
        events.append(batch)
    assert len(profiler.events) <= 4
    profiler["host step"] = 0.5
    profiler.add("host step", 1.5)
    stats = profiler.statistics
    assert stats["first"].count == stats["second"].count == 5
    assert stats["first"].total == pytest.approx(
        sum(_duration(b[0]) for b in events), rel=1e-12)
    assert stats["host step"] == KernelStatistics.from_durations([0.5, 1.5])
    with pytest.raises(ValueError):
        profiler.record_batch(("only one name",), events[0])


def test_profile_kernel_signature(prof_queue, queue, prg, caplog):
    x = cla.to_device(prof_queue, _host_x())
    a = cla.empty_like(x)
    knl = cl.Kernel(prg, "add_one")
    for i, arg in enumerate((x.base_data, a.base_data, np.int32(N))):
        knl.set_arg(i, arg)
    profiler = KernelProfiler()
    evt = cl.enqueue_nd_range_kernel(prof_queue, knl, (N,), None)
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        seconds = profile_kernel(knl, evt, fprofiler=profiler)
    assert seconds == event_duration(evt)
    assert any(r.getMessage().startswith("profile add_one:")
               for r in caplog.records)
    evt2 = cl.enqueue_nd_range_kernel(prof_queue, knl, (N,), None)
    assert profile_kernel(knl, evt2, kernel_msg="step 2",
                          fprofiler=profiler) == event_duration(evt2)
    assert profile_kernel("by name", evt2, None, profiler) == event_duration(evt2)
    stats = profiler.statistics
    assert stats["add_one"].count == stats["step 2"].count == 1
    assert stats["by name"].count == 1
    # no kernel and no message
    with pytest.raises(ValueError, match="kernel_msg"):
        profile_kernel(None, evt2)
    # plain queue: no timing, nothing recorded
    evt3 = cl.enqueue_nd_range_kernel(queue, knl, (N,), None)
    assert profile_kernel(knl, evt3, fprofiler=profiler) is None
    assert profiler.statistics["add_one"].count == 1


class _HostSum(HostLauncherI):
    """Sums a device array on the host (after the kernels before it)."""

    def __init__(self, name: str, ary: cla.Array, **kwds) -> None:
        super().__init__(name, **kwds)
        self.ary = ary
        self.sums: list[float] = []

    @property
    def parameters(self):
        return {"scale": np.dtype(np.float32)}

    def apply(self, scale: float = 1.0) -> None:
        self.sums.append(float(self.ary.get().sum()) * scale)


@pytest.mark.parametrize("profiling", [False, True])
def test_host_launcher(cl_ctx, prg, profiling):
    """A host launcher runs after the work enqueued before it, with its
    parameters, and measures its wall time on any queue."""
    q = cl.CommandQueue(cl_ctx, properties=PROFILING if profiling else 0)
    x_host = _host_x()
    x = cla.to_device(q, x_host)
    a = cla.empty_like(x)
    profiler = KernelProfiler()
    host = _HostSum("host_sum", a)
    assert host.global_size_configured()
    lst = OpenClKernelListLauncher("with_host", profiler=profiler,
                                   default_queue=q)
    lst.push_kernels(OpenClKernelLauncher(
        "add_one", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N), host)
    assert lst.parameters == {"scale": np.dtype(np.float32)}
    assert lst(scale=2.0) is None
    assert lst(scale=1.0) is None
    expected = float((x_host + 1).sum())
    assert host.sums == [pytest.approx(2 * expected, rel=1e-5),
                         pytest.approx(expected, rel=1e-5)]
    assert host.statistics["host_sum"].count == 2
    assert profiler.statistics["host_sum"].count == 2
    assert ("add_one" in profiler.statistics) == profiling
    with pytest.raises(TypeError, match="unexpected parameters"):
        host(q, scale=1.0, other=2)
    with pytest.raises(TypeError, match="missing parameters"):
        host(q)

# }}}


# {{{ copies in every direction share one checking

@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float32, np.complex128])
def test_copy_round_trip_dtypes(queue, dtype):
    """Host to device, device to device and back, whole and with a byte
    count, for several dtypes (copies move bytes, whatever the dtype)."""
    rng = np.random.default_rng(7)
    host = rng.integers(0, 100, 12).astype(dtype)
    if np.dtype(dtype).kind == "c":
        host = host + 1j * host[::-1]
    dev = cla.empty(queue, host.shape, host.dtype)
    dev2 = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size=host.nbytes)
    out = np.zeros_like(host)
    lst = OpenClKernelListLauncher("trip", default_queue=queue)
    lst.push_copy_host_to_device("a", host, dev)
    lst.push_copy_device_to_device("b", dev, dev2)
    lst.push_copy_device_to_host("c", dev2, out)
    assert [ln.direction for ln in lst] == ["h2d", "d2d", "d2h"]
    assert all(ln.nbytes == host.nbytes for ln in lst)
    lst().wait()
    np.testing.assert_array_equal(out, host)

    # the first half only, through the generic class
    half = host.nbytes // 2
    part = np.zeros_like(host)
    copy = OpenClCopyBuffer("h", dev, part, byte_count=half,
                            default_queue=queue)
    assert copy.direction == "d2h" and copy.nbytes == half
    copy().wait()
    np.testing.assert_array_equal(part[:host.size // 2], host[:host.size // 2])
    np.testing.assert_array_equal(part[host.size // 2:], 0)


def test_copy_of_nothing(queue):
    """A copy of zero bytes enqueues a marker and copies nothing."""
    empty = np.zeros(0, np.float32)
    dev = cla.zeros(queue, 4, np.float32)
    copy = OpenClCopyHost2Device("e", empty, dev, default_queue=queue)
    assert copy.nbytes == 0
    evt = copy()
    assert isinstance(evt, cl.Event)
    evt.wait()
    np.testing.assert_array_equal(dev.get(), 0)


def test_copy_errors(queue):
    """Each direction rejects bad memories, offsets and sizes with a typed
    error naming the launcher and the end of the copy at fault."""
    host = np.zeros(8, np.float32)
    dev = cla.zeros(queue, 8, np.float32)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size=32)
    readonly = np.zeros(8, np.float32)
    readonly.flags.writeable = False
    strided = np.zeros((4, 4), np.float32)[:, ::2]

    cases = [
        # (class, args, keywords, error, message)
        (OpenClCopyHost2Device, ("v", dev, buf), {}, InvalidArgumentTypeError,
         "copy of 'v': host to device copy needs a numpy array source"),
        (OpenClCopyDevice2Host, ("v", host, host), {}, InvalidArgumentTypeError,
         "copy of 'v': device to host copy needs a pyopencl Buffer"),
        (OpenClCopyDevice2Device, ("v", host, dev), {},
         InvalidArgumentTypeError,
         "copy of 'v': device to device copy needs pyopencl Buffers"),
        (OpenClCopyBuffer, ("v", host, host), {}, InvalidArgumentTypeError,
         "neither source .* nor destination .* is device memory"),
        (OpenClCopyBuffer, ("v", host, dev), {"src_device_offset": 4},
         InvalidArgumentError,
         "copy_h2d_v: src_device_offset given for host source"),
        (OpenClCopyBuffer, ("v", dev, host), {"dst_device_offset": 4},
         InvalidArgumentError,
         "copy_d2h_v: dst_device_offset given for host destination"),
        (OpenClCopyHost2Device, ("v", host, buf), {"dst_device_offset": 8},
         InvalidArgumentError,
         "copy_h2d_v: 32 bytes do not fit the 24 bytes of the destination"),
        (OpenClCopyDevice2Host, ("v", buf, host), {"src_device_offset": 8},
         InvalidArgumentError,
         "copy_d2h_v: 32 bytes requested from a source of 24 bytes"),
        (OpenClCopyDevice2Device, ("v", dev, buf), {"byte_count": 40},
         InvalidArgumentError, "copy_d2d_v: 40 bytes exceed the source"),
        (OpenClCopyBuffer, ("v", dev, buf), {"byte_count": -1},
         InvalidArgumentError, "copy_d2d_v: negative byte_count -1"),
        (OpenClCopyDevice2Host, ("v", dev, readonly), {},
         InvalidArgumentError,
         r"copy_d2h_v \(destination\): host array is not writeable"),
        (OpenClCopyHost2Device, ("v", strided, dev), {},
         InvalidArgumentError,
         r"copy_h2d_v \(source\): host array is not contiguous"),
        (OpenClCopyHost2Device, ("v", host, dev), {"byte_count": 64},
         InvalidArgumentError, r"copy_h2d_v \(source\): byte_count 64"),
        (OpenClCopyDevice2Device, ("v", dev, buf), {"src_device_offset": 64},
         InvalidArgumentError,
         r"copy_d2d_v \(source\): device offset 64 is past the end"),
        (OpenClCopyDevice2Device, ("v", dev, buf), {"dst_device_offset": -8},
         InvalidArgumentError,
         r"copy_d2d_v \(destination\): negative device offset -8"),
    ]
    for cls, args, kwds, error, message in cases:
        with pytest.raises(error, match=message):
            cls(*args, **kwds)
    # a named copy reports its name
    with pytest.raises(InvalidArgumentError, match=r"^upload: "):
        OpenClCopyHost2Device("v", host, buf, dst_device_offset=8,
                              name="upload")

# }}}


# {{{ the package's one logger and its imports

class _Noop(HostLauncherI):
    def apply(self) -> None:
        pass


def test_one_logger(monkeypatch, caplog, prof_queue, prg):
    """Kernels, copies and host launchers trace and profile through the
    logger ``pytato.launchers`` itself, whichever module logs."""
    x = cla.to_device(prof_queue, _host_x())
    a = cla.empty_like(x)
    lst = OpenClKernelListLauncher("all", default_queue=prof_queue)
    lst.push_kernels(OpenClKernelLauncher(
        "add_one", cl.Kernel(prg, "add_one"), (x, a, np.int32(N)),
        default_global_work_size=N), _Noop("noop"))
    lst.push_copy_device_to_host("a", a, np.empty(N, np.float32))
    monkeypatch.setenv("PYTATO_TRACE_KERNELS", "1")
    monkeypatch.setenv("PYTATO_PROFILE_KERNELS", "1")
    with caplog.at_level(logging.INFO, logger="pytato.launchers"):
        lst().wait()
    messages = {r.getMessage().split(":")[0] for r in caplog.records}
    assert messages == {"enqueue add_one", "profile add_one", "enqueue noop",
                        "profile noop", "enqueue copy_d2h_a",
                        "profile copy_d2h_a"}
    assert {r.name for r in caplog.records} == {"pytato.launchers"}


def test_package_imports():
    """The launchers know nothing of pytato's graphs nor of loopy: their
    modules import, of pytato, only :mod:`pytato.diagnostic` and each other,
    and import nothing inside functions."""
    import ast
    from pathlib import Path

    import pytato.launchers

    package = Path(pytato.launchers.__file__).parent
    modules = sorted(package.glob("*.py"))
    assert len(modules) > 1
    for path in modules:
        tree = ast.parse(path.read_text())
        top_level = set(tree.body)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            assert node in top_level, f"{path.name}:{node.lineno}: inner import"
            names = ([alias.name for alias in node.names]
                     if isinstance(node, ast.Import) else [node.module or ""])
            for name in names:
                assert not name.startswith("loopy"), f"{path.name}: {name}"
                if name.startswith("pytato"):
                    assert (name == "pytato.diagnostic"
                            or name.startswith("pytato.launchers.")), (
                        f"{path.name}: imports {name}")

# }}}


# vim: foldmethod=marker
