"""The fast call path of pytato's OpenCL programs and executables
(``pytato.target.loopy.run.fast_call._FastCall``) gives what loopy's executor
gives: same result types and structure, same values, events, errors; and
repeated calls (``fast_call._RepeatedCalls``), which skip the argument checks,
skip them only for arguments checked before."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import ArgumentDTypeError, ArgumentShapeError
from pytato.target.loopy.run import fast_call, sized_calls
from pytato.target.loopy.run.queues import _queue_info


def _programs() -> dict[str, tuple[object, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    x = pt.make_placeholder("x", (100,), np.float64)
    y = pt.make_placeholder("y", (100,), np.float64)
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n, 3), np.float64)
    t = (x * y + 1).tagged(pt.tags.ImplStored())
    xv = rng.random(100)
    yv = rng.random(100)
    zv = rng.random((7, 3))
    return {
        "one": (2 * x + 1, {"x": xv}),
        "several": ({"a": 2 * t - x, "b": pt.sum(t * t)}, {"x": xv, "y": yv}),
        "temporary": (pt.roll(t, 1) * 3, {"x": xv, "y": yv}),
        "symbolic": ((z * 2).sum(axis=1), {"z": zv}),
    }


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    if isinstance(a, dict):
        assert list(a) == list(b)  # type: ignore[arg-type]
        for k in a:
            _same(a[k], b[k])  # type: ignore[index]
    elif isinstance(a, tuple):
        assert len(a) == len(b)  # type: ignore[arg-type]
        for u, v in zip(a, b, strict=True):  # type: ignore[call-overload]
            _same(u, v)
    elif isinstance(a, cla.Array):
        assert a.shape == b.shape and a.dtype == b.dtype  # type: ignore[attr-defined]
        assert a.strides == b.strides  # type: ignore[attr-defined]
        np.testing.assert_allclose(a.get(), b.get())  # type: ignore[attr-defined]
    else:
        assert isinstance(a, np.ndarray)
        assert a.shape == b.shape and a.dtype == b.dtype  # type: ignore[attr-defined]
        np.testing.assert_allclose(a, b)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["one", "several", "temporary", "symbolic"])
@pytest.mark.parametrize("host", [False, True])
@pytest.mark.parametrize("bound", [False, True])
def test_fast_call_matches_loopy(cl_ctx, monkeypatch, name, host, bound):
    queue = cl.CommandQueue(cl_ctx)
    result, inputs = _programs()[name]
    prog = pt.generate_loopy(result)
    args = dict(inputs) if host else {k: cla.to_device(queue, v)
                                      for k, v in inputs.items()}
    if bound:
        runner = prog.bind_to_context(cl_ctx)
        executor = runner.program
    else:
        runner = prog
        executor = prog._executor(cl_ctx)
    runner(queue, **args)        # first call: loopy (warms up)
    evt, got = runner(queue, **args)
    # repeated calls: no argument checks
    calls = _counting_process(monkeypatch)
    evt_again, got_again = runner(queue, **args)
    assert calls[0] == 0
    assert isinstance(evt_again, cl.Event)
    _same(got_again, got)
    fast = fast_call._FAST_CALLS.get(executor)
    assert fast is not None, "the fast path is not used"
    assert any(v is not None for v in fast._sized.values())
    assert isinstance(evt, cl.Event)
    evt.wait()
    # loopy's executor, as the programs call it
    monkeypatch.undo()
    arrays, values = runner._arg_spec.process(args, runner.bound_arguments)
    kwargs = dict(arrays, **values)
    if bound:
        ref_evt, ref = executor(queue, **kwargs)
    else:
        ref_evt, ref = executor(queue, out_host=host, **kwargs)
    ref_evt.wait()
    _same(got, ref)


def test_fast_call_wait_for(cl_ctx):
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (50,), np.float32)
    exe = pt.generate_loopy(x + 1).bind_to_context(cl_ctx)
    xd = cla.to_device(queue, np.arange(50, dtype=np.float32))
    exe(queue, x=xd)
    gate = cl.UserEvent(cl_ctx)
    evt, (out,) = exe(queue, x=xd, wait_for=[gate])
    assert evt.command_execution_status != cl.command_execution_status.COMPLETE
    gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_allclose(out.get(), np.arange(50) + 1)


def test_fast_call_errors_and_fallbacks(cl_ctx):
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (50,), np.float32)
    exe = pt.generate_loopy(x * 2).bind_to_context(cl_ctx)
    xd = cla.to_device(queue, np.arange(50, dtype=np.float32))
    for _ in range(3):
        exe(queue, x=xd)
    with pytest.raises(ArgumentShapeError, match="'x'"):
        exe(queue, x=cla.zeros(queue, 49, np.float32))
    with pytest.raises(ArgumentDTypeError, match="'x'"):
        exe(queue, x=cla.zeros(queue, 50, np.float64))
    # a device array at an offset into its buffer (a view): copied, on the
    # checked path, every call
    big = cla.to_device(queue, np.arange(51, dtype=np.float32))
    for i in range(2):
        big.set(np.arange(51, dtype=np.float32) + i)
        _, (out,) = exe(queue, x=big[1:])
        np.testing.assert_allclose(out.get(), (np.arange(1, 51) + i) * 2)
    # numpy in, numpy out; non-contiguous numpy input
    _, (out,) = exe(queue, x=np.arange(100, dtype=np.float32)[::2])
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.arange(100)[::2] * 2)
    _, (out,) = exe(queue, x=xd)
    np.testing.assert_allclose(out.get(), np.arange(50) * 2)


# {{{ repeated calls: checks skipped only for arguments checked before

def _counting_process(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of ``ArgumentSpec.process`` (the argument checks)."""
    from pytato.target.loopy.run.arguments import ArgumentSpec
    calls = [0]
    process = ArgumentSpec.process

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return process(self, *args, **kwargs)

    monkeypatch.setattr(ArgumentSpec, "process", counted)
    return calls


def _runner(kind: str, prog, ctx):
    return prog.bind_to_context(ctx) if kind == "exe" else prog


def _bound_program():
    x = pt.make_placeholder("x", (50,), np.float32)
    c = pt.make_data_wrapper(np.arange(50, dtype=np.float32))
    return pt.generate_loopy(x * c + 1), np.arange(50) ** 2 + 1


@pytest.mark.parametrize("kind", ["exe", "prog"])
@pytest.mark.parametrize("host", [False, True])
def test_repeated_calls_skip_checks(cl_ctx, monkeypatch, kind, host):
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _bound_program()
    runner = _runner(kind, prog, cl_ctx)
    xv = np.arange(50, dtype=np.float32)
    x = xv if host else cla.to_device(queue, xv)
    for _ in range(2):
        runner(queue, x=x)
    calls = _counting_process(monkeypatch)
    for _ in range(3):
        evt, (out,) = runner(queue, x=x)
        assert isinstance(evt, cl.Event)
        # an executable's bound data is on the device: device arrays out
        host_out = host and kind == "prog"
        assert isinstance(out, np.ndarray if host_out else cla.Array)
        np.testing.assert_allclose(out if host_out else out.get(), ref)
    assert calls[0] == 0, "repeated calls were checked again"
    # a new array of the same kind is checked no more
    runner(queue, x=xv.copy() if host else cla.to_device(queue, xv))
    assert calls[0] == 0


def _bad_calls(queue: cl.CommandQueue) -> dict[str, tuple[dict, type]]:
    from pytato.diagnostic import (
        BoundArgumentError,
        MissingArgumentError,
        UnknownArgumentError,
    )
    big = cla.to_device(queue, np.arange(101, dtype=np.float32))
    return {
        "shape": ({"x": cla.zeros(queue, 49, np.float32)}, ArgumentShapeError),
        "ndim": ({"x": cla.zeros(queue, (50, 1), np.float32)},
                 ArgumentShapeError),
        "dtype": ({"x": cla.zeros(queue, 50, np.float64)}, ArgumentDTypeError),
        "numpy shape": ({"x": np.zeros(49, np.float32)}, ArgumentShapeError),
        "numpy dtype": ({"x": np.zeros(50, np.float64)}, ArgumentDTypeError),
        "missing": ({}, MissingArgumentError),
        "missing, other name": ({"y": big}, MissingArgumentError),
        "output": ({"x": big[:50], "_pt_out": big}, UnknownArgumentError),
        "bound": ({"x": big[:50], "_pt_data_0": big}, BoundArgumentError),
        # loopy's checks of device arrays
        "non-contiguous": ({"x": big[::2][:50]}, ValueError),
    }


@pytest.mark.parametrize("kind", ["exe", "prog"])
@pytest.mark.parametrize("warm", ["device", "numpy"])
def test_repeated_calls_still_raise(cl_ctx, monkeypatch, kind, warm):
    """After good calls, each bad call raises its typed error, and does not
    disturb later good calls."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _bound_program()
    runner = _runner(kind, prog, cl_ctx)
    xv = np.arange(50, dtype=np.float32)
    good = {"x": xv if warm == "numpy" else cla.to_device(queue, xv)}
    for _ in range(3):
        runner(queue, **good)
    calls = _counting_process(monkeypatch)
    for name, (kwargs, error) in _bad_calls(queue).items():
        for _ in range(2):
            with pytest.raises(error):
                runner(queue, **kwargs)
            # the good signature still runs unchecked, with the right result
            before = calls[0]
            _, (out,) = runner(queue, **good)
            assert calls[0] == before, name
            np.testing.assert_allclose(
                out if isinstance(out, np.ndarray) else out.get(), ref)


@pytest.mark.parametrize("kind", ["exe", "prog"])
def test_repeated_calls_symbolic_sizes(cl_ctx, monkeypatch, kind):
    from pytato.diagnostic import MissingArgumentError
    queue = cl.CommandQueue(cl_ctx)
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n, 3), np.float64)
    runner = _runner(kind, pt.generate_loopy((z * 2).sum(axis=1)), cl_ctx)
    rng = np.random.default_rng(1)
    zs = {m: cla.to_device(queue, rng.random((m, 3))) for m in (7, 8, 9)}

    def check(m: int, **kwargs) -> None:
        _, (out,) = runner(queue, z=zs[m], **kwargs)
        assert out.shape == (m,)
        np.testing.assert_allclose(out.get(), 2 * zs[m].get().sum(axis=1))

    for _ in range(2):
        check(7)
        check(8, n=8)
    calls = _counting_process(monkeypatch)
    for _ in range(3):
        check(7)
        check(8, n=8)
    assert calls[0] == 0
    check(9)                       # a new size: checked, then kept
    check(9)
    assert calls[0] == 1
    with pytest.raises(ArgumentShapeError, match="n=8"):
        runner(queue, z=zs[7], n=8)
    with pytest.raises(ArgumentShapeError, match="non-negative"):
        runner(queue, z=zs[7], n=-1)
    with pytest.raises(ArgumentDTypeError, match="'n'"):
        runner(queue, z=zs[7], n=7.0)
    with pytest.raises(ArgumentDTypeError, match="'n'"):
        runner(queue, z=zs[7], n=True)
    with pytest.raises(ArgumentShapeError, match="'z'"):
        runner(queue, z=cla.zeros(queue, (7, 4), np.float64))
    with pytest.raises(ArgumentDTypeError, match="'z'"):
        runner(queue, z=cla.zeros(queue, (7, 3), np.float32))
    with pytest.raises(MissingArgumentError, match="'z'"):
        runner(queue, n=7)
    check(8, n=np.int64(8))        # numpy integers: checked every time
    check(7)
    check(8, n=8)


def test_repeated_calls_keep_few_signatures(cl_ctx):
    queue = cl.CommandQueue(cl_ctx)
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n,), np.float64)
    exe = pt.generate_loopy(z + 1).bind_to_context(cl_ctx)
    repeated = exe._repeated
    for m in [*range(1, 8), *range(1, 8)]:
        zd = cla.to_device(queue, np.arange(m, dtype=np.float64))
        for _ in range(3):
            _, (out,) = exe(queue, z=zd)
            np.testing.assert_allclose(out.get(), np.arange(m) + 1)
        assert len(repeated.signatures) <= repeated.max_signatures
    assert repeated.signatures[0].device_arrays[0][1] == (7,)


def test_repeated_calls_numpy_conversions(cl_ctx, monkeypatch):
    """Inputs that the checks convert (non-contiguous numpy arrays, lists)
    are checked on every call."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _bound_program()
    exe = prog.bind_to_context(cl_ctx)
    xv = np.arange(50, dtype=np.float32)
    for _ in range(2):
        exe(queue, x=xv)
    calls = _counting_process(monkeypatch)
    strided = np.arange(100, dtype=np.float32)[::2]
    for _ in range(2):
        _, (out,) = exe(queue, x=strided)
        np.testing.assert_allclose(out.get(), strided * np.arange(50) + 1)
    assert calls[0] == 2
    with pytest.raises(ArgumentDTypeError, match="int64"):
        exe(queue, x=list(range(50)))
    _, (out,) = exe(queue, x=xv)
    np.testing.assert_allclose(out.get(), ref)
    assert calls[0] == 3


def test_repeated_calls_other_queues(cl_ctx, monkeypatch):
    """Queues of other contexts, or with kernel tracing, go the checked way;
    queues with profiling take the fast path and keep the statistics."""
    from pytato.launchers import TRACE_KERNELS_ENV
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _bound_program()
    exe = prog.bind_to_context(cl_ctx)
    xv = np.arange(50, dtype=np.float32)
    xd = cla.to_device(queue, xv)
    for _ in range(2):
        exe(queue, x=xd)
        prog(queue, x=xd)
    calls = _counting_process(monkeypatch)

    other = cl.CommandQueue(cl.Context(cl_ctx.devices))
    with pytest.raises(ValueError, match="context"):
        exe(other, x=xv)
    _, (out,) = prog(other, x=xv)
    np.testing.assert_allclose(out, ref)
    assert calls[0] == 1

    profiling = cl.CommandQueue(
        cl_ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    exe.clear_statistics()
    for _ in range(2):
        _, (out,) = exe(profiling, x=xd)
        np.testing.assert_allclose(out.get(), ref)
    profiling.finish()
    assert sum(s.count for s in exe.statistics.values()) == 2
    assert calls[0] == 1

    monkeypatch.setenv(TRACE_KERNELS_ENV, "all")
    exe(queue, x=xd)
    assert calls[0] == 2
    monkeypatch.delenv(TRACE_KERNELS_ENV)
    _, (out,) = exe(queue, x=xd)
    np.testing.assert_allclose(out.get(), ref)
    assert calls[0] == 2


@pytest.mark.parametrize("allocator", [None, False, "pool"])
def test_repeated_calls_allocators(cl_ctx, allocator):
    from pyopencl.tools import ImmediateAllocator, MemoryPool

    from pytato.target.loopy.run.programs import default_allocator
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _bound_program()
    exe = prog.bind_to_context(cl_ctx)
    alloc = (MemoryPool(ImmediateAllocator(queue)) if allocator == "pool"
             else allocator)
    xd = cla.to_device(queue, np.arange(50, dtype=np.float32))
    for _ in range(3):
        _, (out,) = exe(queue, allocator=alloc, x=xd)
        np.testing.assert_allclose(out.get(), ref)
    if allocator is None:
        assert out.allocator is default_allocator(queue)
    elif allocator == "pool":
        assert out.allocator is alloc
    else:
        assert out.allocator is not default_allocator(queue)

# }}}


# {{{ repeated calls: outputs, kept temporaries, input events

def _temporary_program(n: int | None = None):
    """Three kernels (two stored temporaries) on 64 float64, or on a size
    parameter ``n`` when *n* is given; and its numpy reference."""
    size = pt.make_size_param("n") if n is not None else 64
    x = pt.make_placeholder("x", (size,), np.float64)
    t = (2 * x + 1).tagged(pt.tags.ImplStored())
    u = (pt.roll(t, 1) * t).tagged(pt.tags.ImplStored())
    prog = pt.generate_loopy(pt.roll(u, 1) - x)

    def ref(xv: np.ndarray) -> np.ndarray:
        tv = 2 * xv + 1
        uv = np.roll(tv, 1) * tv
        return np.roll(uv, 1) - xv
    return prog, ref


def _inputs(queue, count: int, n: int = 64) -> list:
    rng = np.random.default_rng(count)
    return [cla.to_device(queue, rng.random(n)) for _ in range(count)]


@pytest.mark.parametrize("kind", ["exe", "prog"])
def test_repeated_calls_outputs_do_not_alias(cl_ctx, kind):
    """The results of consecutive calls kept by the user stay valid: each
    call has outputs of its own (temporaries are kept, outputs are not)."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _temporary_program()
    runner = _runner(kind, prog, cl_ctx)
    xs = _inputs(queue, 6)
    outs = [runner(queue, x=x)[1][0] for x in xs]
    assert len({out.base_data.int_ptr for out in outs}) == len(outs)
    for x, out in zip(xs, outs, strict=True):
        np.testing.assert_allclose(out.get(), ref(x.get()))


def test_repeated_calls_output_arrays(cl_ctx):
    """The outputs of repeated calls are the arrays the constructor makes."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _temporary_program()
    exe = prog.bind_to_context(cl_ctx)
    (x,) = _inputs(queue, 1)
    for _ in range(3):
        evt, (out,) = exe(queue, x=x)
    expected = cla.empty(queue, out.shape, out.dtype,
                         allocator=out.allocator)
    assert type(out) is cla.Array
    assert list(vars(out)) == list(vars(expected))
    for name in ("context", "shape", "dtype", "strides", "nbytes", "size",
                 "offset", "allocator"):
        assert getattr(out, name) == getattr(expected, name), name
    assert out.queue is queue and out.events == [evt]
    assert out.flags.c_contiguous
    np.testing.assert_allclose((out + 0).get(), ref(x.get()))


@pytest.mark.parametrize("kind", ["exe", "prog"])
def test_repeated_calls_keep_temporaries(cl_ctx, kind):
    """On an in-order queue, the temporaries of a call from the queue's
    pool are kept for the next one (only the arguments of inputs and
    outputs are set again); another queue, allocator or size replaces
    or drops them, and every result stays right."""
    from pyopencl.tools import ImmediateAllocator, MemoryPool
    queue = cl.CommandQueue(cl_ctx)
    other = cl.CommandQueue(cl_ctx)
    prog, ref = _temporary_program()
    runner = _runner(kind, prog, cl_ctx)
    xs = _inputs(queue, 3)
    for x in xs:
        runner(queue, x=x)
    executor = runner.program if kind == "exe" else prog._executor(cl_ctx)
    held = fast_call._FAST_CALLS[executor].held
    kept = held[0]
    assert kept is not None and len(kept[3]) == 2

    pool = MemoryPool(ImmediateAllocator(queue))
    calls = [(queue, {}), (queue, {}), (other, {}), (queue, {}),
             (queue, {"allocator": pool}), (queue, {"allocator": False}),
             (queue, {}), (queue, {})]
    results = []
    for i, (q, kwargs) in enumerate(calls):
        x = xs[i % len(xs)]
        results.append((x, runner(q, x=x, **kwargs)[1][0]))
        if i == 1:
            assert held[0] is kept          # same queue: kept again
        elif i == 2:
            assert held[0] is not kept      # another queue: its own
            assert held[0][1] is _queue_info(other)
        elif i in (4, 5):
            assert held[0] is None          # other allocators: not kept
        elif i == 7:
            assert held[0] is not None
    other.finish()
    for x, out in results:
        np.testing.assert_allclose(out.get(), ref(x.get()))


def test_repeated_calls_temporaries_out_of_order(cl_ctx):
    """On out-of-order queues, temporaries are not kept and each kernel
    waits for the previous one."""
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        queue = cl.CommandQueue(cl_ctx, properties=props)
    except cl.Error:
        pytest.skip("no out-of-order queues")
    prog, ref = _temporary_program()
    exe = prog.bind_to_context(cl_ctx)
    xs = _inputs(queue, 4)
    outs = []
    for x in xs:
        evt, (out,) = exe(queue, x=x)
        outs.append((x, evt, out))
    assert fast_call._FAST_CALLS[exe.program].held[0] is None
    for x, evt, out in outs:
        evt.wait()
        np.testing.assert_allclose(out.get(), ref(x.get()))


def test_repeated_calls_temporaries_other_sizes(cl_ctx):
    """Temporaries of calls with other size parameters are their own."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _temporary_program(n=0)
    exe = prog.bind_to_context(cl_ctx)
    xs = {m: _inputs(queue, 1, m)[0] for m in (16, 40)}
    results = []
    for m in (16, 16, 40, 40, 16, 40, 16, 16):
        results.append((xs[m], exe(queue, x=xs[m])[1][0]))
    for x, out in results:
        np.testing.assert_allclose(out.get(), ref(x.get()))


@pytest.mark.parametrize("kind", ["exe", "prog"])
def test_repeated_calls_wait_for_input_events(cl_ctx, kind):
    """Repeated calls wait for the events of their inputs until they have
    completed (then they are no longer waited for)."""
    queue = cl.CommandQueue(cl_ctx)
    prog, ref = _temporary_program()
    runner = _runner(kind, prog, cl_ctx)
    (x,) = _inputs(queue, 1)
    for _ in range(3):
        runner(queue, x=x)
    queue.finish()
    executor = runner.program if kind == "exe" else prog._executor(cl_ctx)
    repeated = (runner._repeated if kind == "exe"
                else runner._repeated_calls[cl_ctx.int_ptr])
    runner(queue, x=x)
    assert repeated.last_events[1] == []        # the transfer has completed
    gate = cl.UserEvent(cl_ctx)
    x.add_event(gate)
    evts = [runner(queue, x=x)[0] for _ in range(3)]
    assert repeated.last_events[1] == [gate]
    for evt in evts:
        assert (evt.command_execution_status
                != cl.command_execution_status.COMPLETE)
    gate.set_status(cl.command_execution_status.COMPLETE)
    evt, (out,) = runner(queue, x=x)
    assert repeated.last_events[1] == []
    np.testing.assert_allclose(out.get(), ref(x.get()))
    assert fast_call._FAST_CALLS[executor] is not None

# }}}


def test_run_code_kept_in_store(cl_ctx, tmp_path, monkeypatch):
    """The function of a fast call of many kernels is compiled once: its
    code is kept in the program store, and a program made anew (as in a
    later process) loads it instead of compiling it, with the same
    results; functions of few kernels are not stored."""
    from pytato.target.loopy import PROGRAM_CACHE
    from pytato.target.loopy.store import program_store

    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE", raising=False)
    monkeypatch.setattr(program_store, "_STORE", [])
    monkeypatch.setattr(sized_calls, "STORED_RUN_MIN_KERNELS", 2)
    compiled: list[str] = []
    real_compile = compile

    def counting_compile(source, filename, mode):
        compiled.append(filename)
        return real_compile(source, filename, mode)

    monkeypatch.setattr(sized_calls, "compile", counting_compile, raising=False)
    found: list[bool] = []
    real_load = program_store.load

    def load(key, part):
        result = real_load(key, part)
        if part == "fast-call-code":
            found.append(result is not None)
        return result

    monkeypatch.setattr(program_store, "load", load)
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (100,), np.float64)
    t = (2 * x + 1).tagged(pt.tags.ImplStored())
    expr = {"a": pt.sum(t * x), "b": pt.roll(t, 3) - x}
    xv = np.random.default_rng(1).random(100)
    tv = 2 * xv + 1
    results = []
    for _ in range(2):
        PROGRAM_CACHE.clear()
        prog = pt.generate_loopy(expr)
        for _ in range(2):  # (the second call takes the fast path)
            _, out = prog(queue, x=xv)
        results.append(out)
    PROGRAM_CACHE.clear()
    assert compiled.count("<pytato fast call>") == 1
    assert found == [False, True]
    for out in results:
        np.testing.assert_allclose(out["a"], np.sum(tv * xv))
        np.testing.assert_allclose(out["b"], np.roll(tv, 3) - xv)

    # below the threshold: compiled each time, nothing stored
    code = "def run():\n    return 1\n"
    monkeypatch.setattr(sized_calls, "STORED_RUN_MIN_KERNELS", 16)
    del compiled[:]
    fast_call._compiled(code, 1)
    fast_call._compiled(code, 1)
    assert compiled == ["<pytato fast call>"] * 2
    fast_call._compiled(code, 16)
    fast_call._compiled(code, 16)
    assert len(compiled) == 3
    names: dict[str, object] = {}
    exec(fast_call._compiled(code, 16), names)
    assert names["run"]() == 1  # type: ignore[operator]
