"""The user-path table: pytato's programs called the way users call them,
against numpy (CPU devices) or torch eager (CUDA, GPU devices), measured in
the same run.

Usage::

    python benchmarks/bench_user_path.py [--runs N] [--rounds R]
        [--settle S] [--only NAME] [--small] [--device-schedule]
        [--show-code]

Two paths per workload, both at full sizes by default:

* ``program``: ``prog = pt.generate_loopy(expr)`` *without* a device (the
  README's path), then ``prog(queue, **device arrays)``;
* ``bound``: ``pt.generate_loopy(expr, options=lp.Options(no_numpy=True,
  return_dict=True), target=None).bind_to_context(ctx)`` (the path of
  arraycontext's ``PytatoPyOpenCLArrayContext``), then a call with device
  arrays.

``--device-schedule`` passes ``cl_device=`` to :func:`pytato.generate_loopy`
(the schedule for the device, which the no-device path gets only where the
program schedules itself for the device of the queue it runs on).

For each: the kernel time (a profiling-enabled queue: from a marker
enqueued before the call to the end of the call's event, best of the
runs), the GB/s it gives (bytes of the inputs and outputs / kernel time)
and their percentage of the device's copy bandwidth (``enqueue_copy``,
read + write), and the wall time per call (a plain queue: the call and
``queue.finish()``, overhead included, best of the runs), and the ratio
``reference / pytato`` of each (above 1: pytato is faster) against numpy
(wall time) on CPU devices or torch eager on CUDA (CUDA events for the
kernel column, wall time with ``torch.cuda.synchronize()`` for the other).

Each workload is timed in ``--rounds`` rounds (default 3): the reference,
a pause of ``--settle`` seconds (default 0.5 on CPU devices: numpy's
OpenBLAS threads spin-wait after a call, and on a machine of two cores a
spinning thread takes a core from PoCL's threads, which made the path
timed first up to 1.2x slower), then each path, each after 0.1 s of
untimed calls (the first calls after a pause run slower). The table has the median
over the rounds of each best-of-runs time, and the range of the rounds'
wall ratios.

The device is chosen by ``PYOPENCL_CTX`` (or ``PYOPENCL_TEST``), as
:func:`pyopencl.create_some_context` does. ``--show-code`` prints the
device code of each workload's program. The script exits with status 1
if a result differs from the reference.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Workload:
    name: str
    #: pytato expression from placeholders (given the module ``pt``)
    build: Callable[[Any], Any]
    #: the inputs (numpy arrays)
    inputs: Callable[[], dict[str, np.ndarray]]
    #: the same computation with numpy or torch (module, inputs)
    ref: Callable[[Any, dict[str, Any]], Any]


def _elementwise(m: Any, x: Any) -> Any:
    return m.sin(x) * 2 + x**2 - m.exp(-x)


def _stencil(m: Any, u: Any, roll: Callable[..., Any]) -> Any:
    return (roll(u, 1, 0) + roll(u, -1, 0) + roll(u, 1, 1)
            + roll(u, -1, 1) - 4 * u)


def make_workloads(small: bool, gpu: bool) -> list[Workload]:
    import pytato as pt

    rng = np.random.default_rng(0)
    n = 2**16 if small else 2**24
    side = 256 if small else 4096
    n_elt = n * (8 if gpu and not small else 1)
    elt_dtype = np.float32 if gpu else np.float64

    def ph(name: str, shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
        return pt.make_placeholder(name, shape, dtype)

    def vec(k: int = n, dtype: Any = np.float64) -> np.ndarray:
        return rng.random(k).astype(dtype)

    def mat() -> np.ndarray:
        return rng.random((side, side))

    def roll_np(u: Any, s: int, a: int) -> Any:
        return np.roll(u, s, a)

    def roll_any(m: Any) -> Callable[..., Any]:
        if m is np:
            return roll_np
        if getattr(m, "__name__", "") == "torch":
            return lambda u, s, a: m.roll(u, s, a)
        return lambda u, s, a: pt.roll(u, s, a)

    def amax(m: Any, a: Any) -> Any:
        return m.amax(a) if m is np else a.max()

    def vdot(m: Any, x: Any, y: Any) -> Any:
        return m.vdot(x, y) if m is np else m.dot(x, y)

    return [
        Workload("elementwise",
                 lambda pt: _elementwise(pt, ph("x", (n_elt,), elt_dtype)),
                 lambda: {"x": vec(n_elt, elt_dtype)},
                 lambda m, i: _elementwise(m, i["x"])),
        Workload("stencil",
                 lambda pt: _stencil(pt, ph("u", (side, side)), roll_any(pt)),
                 lambda: {"u": mat()},
                 lambda m, i: _stencil(m, i["u"], roll_any(m))),
        Workload("sum 1-D",
                 lambda pt: pt.sum(ph("x", (n,))),
                 lambda: {"x": vec()},
                 lambda m, i: i["x"].sum()),
        Workload("sum both axes",
                 lambda pt: pt.sum(ph("a", (side, side))),
                 lambda: {"a": mat()},
                 lambda m, i: i["a"].sum()),
        Workload("column sums",
                 lambda pt: pt.sum(ph("a", (side, side)), axis=0),
                 lambda: {"a": mat()},
                 lambda m, i: i["a"].sum(0)),
        Workload("row sums",
                 lambda pt: pt.sum(ph("a", (side, side)), axis=1),
                 lambda: {"a": mat()},
                 lambda m, i: i["a"].sum(1)),
        Workload("amax both axes",
                 lambda pt: pt.amax(ph("a", (side, side))),
                 lambda: {"a": mat()},
                 lambda m, i: amax(m, i["a"])),
        Workload("vdot",
                 lambda pt: pt.vdot(ph("x", (n,)), ph("y", (n,))),
                 lambda: {"x": vec(), "y": vec()},
                 lambda m, i: vdot(m, i["x"], i["y"])),
        Workload("matvec",
                 lambda pt: ph("a", (side, side)) @ ph("v", (side,)),
                 lambda: {"a": mat(), "v": vec(side)},
                 lambda m, i: i["a"] @ i["v"]),
        Workload("prod 1-D",
                 lambda pt: pt.prod(ph("x", (n,))),
                 # values close to 1: the product stays finite
                 lambda: {"x": 1 + (vec() - 0.5) * 1e-6},
                 lambda m, i: i["x"].prod()),
        Workload("any 1-D",
                 lambda pt: pt.any(ph("x", (n,)) > 2.0),
                 lambda: {"x": vec()},
                 lambda m, i: (i["x"] > 2.0).any()),
    ]


def best(fn: Callable[[], float], runs: int) -> float:
    fn()
    return min(fn() for _ in range(runs))


def _result(out: Any) -> Any:
    """A call's single output (a dict of several outputs as it is)."""
    if isinstance(out, dict):
        if len(out) != 1:
            return out
        (out,) = out.values()
    elif isinstance(out, (tuple, list)):
        (out,) = out
    return out


def device_time(stats: Any) -> float:
    """The device time of one call from a program's profiling statistics
    (:class:`~pytato.launchers.LauncherStatistics` of calls that each ran
    every kernel once): the sum over its kernels of their shortest
    duration. Unlike the kernel time of :func:`time_call`, it leaves out
    the host's time before the first kernel starts and the gaps between
    kernels."""
    return sum(k.min for k in stats.values())


#: Seconds of untimed calls before a path's timing (:func:`time_call`).
WARM_UP_S = 0.1


def time_call(call: Callable[[Any], Any], queue: Any, prof_queue: Any,
              runs: int) -> tuple[float, float, Any]:
    """(kernel time, wall time per call, result) of ``call(queue)``. The
    kernel time is the time from a marker enqueued before the call to the
    end of the call's last event, on a profiling queue: the device time of
    the call's kernels, with the gaps between them and the host's time
    until it enqueues the first."""
    import pyopencl as cl

    def kernel() -> float:
        prof_queue.finish()
        t0 = time.perf_counter()
        start = cl.enqueue_marker(prof_queue)
        evt = call(prof_queue)[0]
        evt.wait()
        prof_queue.finish()
        t1 = time.perf_counter()
        try:
            return (evt.profile.end - start.profile.end) * 1e-9
        except cl.Error:
            # no profile of markers on this platform: the host's clock
            return t1 - t0

    def wall() -> float:
        queue.finish()
        t0 = time.perf_counter()
        call(queue)
        queue.finish()
        return time.perf_counter() - t0

    # warm up for WARM_UP_S at least: after a pause the first calls run
    # slower (on the 2-core PoCL host, the first 20 ms or so), which
    # would count against the path timed first in a round
    t_end = time.perf_counter() + WARM_UP_S
    while True:
        _, out = call(queue)
        queue.finish()
        if time.perf_counter() >= t_end:
            break
    return best(kernel, runs), best(wall, runs), _result(out)


def time_ref(fn: Callable[[], Any], runs: int, cuda: bool
             ) -> tuple[float, float]:
    """(kernel time, wall time) of the reference (numpy: both the wall
    time)."""
    if not cuda:
        def once() -> float:
            t0 = time.perf_counter()
            fn()
            return time.perf_counter() - t0
        t = best(once, runs)
        return t, t
    import torch

    def events() -> float:
        torch.cuda.synchronize()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3

    def wall() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0
    return best(events, runs), best(wall, runs)


def main(argv: list[str] | None = None) -> int:
    # this checkout's pytato, not an installed one (a script's folder, not
    # the working directory, is first on sys.path)
    sys.path.insert(0, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    import loopy as lp
    import pyopencl as cl
    import pyopencl.array as cla

    import pytato as pt

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--only", default=None,
                        help="run the workloads whose name contains this")
    parser.add_argument("--small", action="store_true",
                        help="small sizes, for a quick check")
    parser.add_argument("--device-schedule", action="store_true",
                        help="pass cl_device= to generate_loopy")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of reference and pytato timings "
                        "(medians over them)")
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds of pause after the reference's "
                        "timing (default: 0.5 on CPU devices, 0 on GPUs)")
    parser.add_argument("--show-code", action="store_true",
                        help="print the device code of each workload")
    args = parser.parse_args(argv)

    if "PYOPENCL_CTX" not in os.environ and "PYOPENCL_TEST" in os.environ:
        os.environ["PYOPENCL_CTX"] = os.environ["PYOPENCL_TEST"]
    ctx = cl.create_some_context(interactive=False)
    dev = ctx.devices[0]
    gpu = bool(dev.type & cl.device_type.GPU)
    settle = args.settle if args.settle is not None else (0. if gpu else .5)
    queue = cl.CommandQueue(ctx)
    prof_queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)

    torch = None
    if gpu:
        try:
            import torch as _torch
            if _torch.cuda.is_available():
                torch = _torch
        except ImportError:
            pass
    ref_name = "torch" if torch is not None else "numpy"

    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} "
          f"UTC, {dev.platform.name} / {dev.name}, "
          f"{dev.max_compute_units} compute units, Python "
          f"{platform.python_version()}, numpy {np.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else ""))
    schedule = ("cl_device=dev" if args.device_schedule
                else "no device (user path)")
    print(f"# schedule: {schedule}; median over {args.rounds} rounds of "
          f"the best of {args.runs}; pause {settle} s after the reference; "
          f"ratio = {ref_name} / pytato (>1: pytato faster)")
    # the copy bandwidth as bench_kernels.py measures it (this script's
    # folder is first on sys.path when it runs)
    from bench_kernels import copy_bandwidth
    copy_gbs = copy_bandwidth(prof_queue, 2**28 if gpu else 2**26, 5)
    print(f"# copy bandwidth (enqueue_copy, read + write): {copy_gbs:.1f} "
          "GB/s; GB/s = bytes of inputs and outputs / kernel time")
    print("# kernel ms: from a marker before the call to its last event; "
          "device ms: the sum of its kernels' profiled durations (no gaps); "
          "% copy and % copy dev: GB/s of each against the copy's")
    header = (f"| workload | path | kernel ms | device ms | wall ms | GB/s "
              f"| % copy | % copy dev | {ref_name} kernel ms "
              f"| {ref_name} wall ms | kernel ratio | wall ratio "
              f"| wall ratio range | ok |")
    print(header)
    print("| --- " * 14 + "|")
    sys.stdout.flush()

    failures = 0
    for wl in make_workloads(args.small, gpu):
        if args.only and args.only not in wl.name:
            continue
        inputs = wl.inputs()
        expected = np.asarray(wl.ref(np, inputs))
        nbytes = sum(v.nbytes for v in inputs.values()) + expected.nbytes
        dev_inputs = {k: cla.to_device(queue, v) for k, v in inputs.items()}
        expr = wl.build(pt)
        kw: dict[str, Any] = {}
        if args.device_schedule:
            kw["cl_device"] = dev
        prog = pt.generate_loopy(expr, **kw)
        if args.show_code:
            print(f"## {wl.name}\n```c\n{prog.get_code()}\n```")
        bound = pt.generate_loopy(
            expr, options=lp.Options(no_numpy=True, return_dict=True),
            target=None, **kw).bind_to_context(ctx)

        if torch is not None:
            t_inputs = {k: torch.from_numpy(v).cuda()
                        for k, v in inputs.items()}

        paths: list[tuple[str, Any, Callable[[Any], Any]]] = [
            ("program", prog, lambda q, p=prog, i=dev_inputs: p(q, **i)),
            ("bound", bound, lambda q, b=bound, i=dev_inputs: b(q, **i)),
        ]
        # rounds: the reference, a pause (numpy's BLAS threads spin-wait
        # for a while after a call: on a machine of two cores one of them
        # would take a core from the device's threads), then each path;
        # the median over the rounds of each best-of-runs time, and the
        # range of the per-round ratios
        refs: list[tuple[float, float]] = []
        rounds: dict[str, list[tuple[float, float, float]]] = {
            path: [] for path, _, _ in paths}
        outs: dict[str, Any] = {}
        for _ in range(args.rounds):
            if torch is not None:
                refs.append(time_ref(
                    lambda w=wl, i=t_inputs: w.ref(torch, i), args.runs,
                    True))
            else:
                refs.append(time_ref(
                    lambda w=wl, i=inputs: w.ref(np, i), args.runs, False))
            time.sleep(settle)
            for path, runner, call in paths:
                runner.clear_statistics()
                t_kernel, t_wall, outs[path] = time_call(
                    call, queue, prof_queue, args.runs)
                rounds[path].append(
                    (t_kernel, t_wall, device_time(runner.statistics)))
        r_kernel = float(np.median([r[0] for r in refs]))
        r_wall = float(np.median([r[1] for r in refs]))
        for path, _, _ in paths:
            t_kernel, t_wall, t_device = (
                float(np.median(col)) for col in zip(*rounds[path], strict=True))
            ratios = [ref[1] / got[1]
                      for ref, got in zip(refs, rounds[path], strict=True)]
            out = outs[path]
            got = out.get(queue) if hasattr(out, "get") else np.asarray(out)
            tol = 1e-4 if expected.dtype == np.float32 else 1e-8
            # absolute tolerance on the scale of the values: results that
            # cancel to near zero (sin(x)*2 + x**2 - exp(-x)) keep the
            # rounding error of their terms, in torch's results as in ours
            scale = float(np.max(np.abs(expected))) if expected.size else 0.
            ok = (np.array_equal(got, expected) if expected.dtype == bool
                  else np.allclose(got, expected, rtol=tol, atol=tol * scale))
            failures += not ok
            gbs = nbytes / t_kernel / 1e9
            dev_pct = 100 * nbytes / t_device / 1e9 / copy_gbs
            print(f"| {wl.name} | {path} | {t_kernel * 1e3:.3f} | "
                  f"{t_device * 1e3:.3f} | "
                  f"{t_wall * 1e3:.3f} | {gbs:.1f} | "
                  f"{100 * gbs / copy_gbs:.0f} | {dev_pct:.0f} | "
                  f"{r_kernel * 1e3:.3f} | "
                  f"{r_wall * 1e3:.3f} | {r_kernel / t_kernel:.2f} | "
                  f"{r_wall / t_wall:.2f} | "
                  f"{min(ratios):.2f}-{max(ratios):.2f} | "
                  f"{'yes' if ok else 'NO'} |")
            sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
