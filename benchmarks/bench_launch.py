"""Per-call host overhead of running a pytato program: raw pyopencl enqueues
vs. loopy's executor, pytato's programs and executables, and launchers.

For a 1-kernel and a 10-kernel program, each way of running is called
``--calls`` times in a row (enqueue only; the queue is drained between
repetitions, not timed) and the best of ``--repeat`` repetitions is
reported in microseconds per call (one call enqueues all kernels of the
program). The pytato ways run both on a plain queue and on a queue with
profiling enabled (the ``(profiling)`` rows, which keep the events for
``statistics``); ``profiling / plain`` is their ratio for the executable,
and ``statistics read`` the time per call to read the recorded events into
statistics (once, after all repetitions). Unless ``--no-gate`` is given,
the queues are held behind a user event while the calls are enqueued, so
that the device runs nothing meanwhile: the figures are host-side costs,
not disturbed by a CPU device competing for the cores.

Run::

    python benchmarks/bench_launch.py [--n 1024] [--calls 300] [--repeat 9]
                                      [--no-gate] [--device-match NVIDIA]
                                      [--json results.json]

The OpenCL device is the first whose platform or device name contains
``--device-match``, else the first of ``PYOPENCL_CTX`` (pyopencl's syntax),
else the first CPU device (PoCL preferred), else any device.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import pytato as pt
from pytato.target.loopy.run.launcher import get_kernel_plan


def pick_context(match: str | None = None) -> cl.Context:
    """The benchmark's context (see the module docstring); *match* selects
    the first device whose platform or device name contains it."""
    import os
    if match is None and os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False)
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if match is not None:
        devices = [d for d in devices
                   if match in d.platform.name or match in d.name]
    if not devices:
        raise RuntimeError("no OpenCL device"
                           + (f" matching {match!r}" if match else ""))

    def rank(dev: cl.Device) -> tuple[bool, bool]:
        return (not dev.type & cl.device_type.CPU,
                "Portable Computing Language" not in dev.platform.name)
    return cl.Context([min(devices, key=rank)])


def split_loops(t_unit: Any) -> Any:
    """Map the loops not yet mapped to the device onto work groups and let
    loopy split kernels at global barriers (a no-op on loops that a default
    schedule already mapped)."""
    import loopy as lp
    knl = t_unit.default_entrypoint
    for iname in sorted(knl.all_inames()):
        if not knl.iname_tags(iname):
            knl = lp.split_iname(knl, iname, 64, outer_tag="g.0",
                                 inner_tag="l.0")
    return t_unit.with_kernel(lp.set_options(knl, insert_gbarriers=True))


def make_program(nkernels: int, n: int) -> Any:
    """A program of *nkernels* kernels: a chain of stored element-wise
    steps, each reading its predecessor shifted (so that each needs a
    global barrier)."""
    x = pt.make_placeholder("x", (n,), np.float32)
    y = x
    for i in range(nkernels):
        y = pt.roll(y, 1) * np.float32(0.5) + np.float32(i)
        if i < nkernels - 1:
            y = y.tagged(pt.tags.ImplStored())
    try:
        # the same kernels whether or not pytato maps loops by default
        prog = pt.generate_loopy(y, default_schedule=False)
    except TypeError:
        prog = pt.generate_loopy(y)
    return prog.with_transformed_program(split_loops)


def time_calls(fns: dict[str, Callable[[], Any]],
               queue: cl.CommandQueue | list[cl.CommandQueue],
               calls: int, repeat: int, gate: bool) -> dict[str, float]:
    """Best time per call (us) of *calls* calls of each of *fns* (enqueue
    only). Repetitions interleave the functions, so that a slower period
    of a shared machine affects them alike.

    :arg gate: hold the queue behind a user event while timing, so that the
        device does not run (and compete with the host for the CPU, as a
        CPU device does) until the timed calls are enqueued.
    """
    queues = queue if isinstance(queue, list) else [queue]
    best = dict.fromkeys(fns, float("inf"))
    for fn in fns.values():
        fn()
    for q in queues:
        q.finish()
    for _ in range(repeat):
        for name, fn in fns.items():
            if gate:
                user_evt = cl.UserEvent(queues[0].context)
                for q in queues:
                    cl.enqueue_marker(q, wait_for=[user_evt])
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            t1 = time.perf_counter()
            if gate:
                user_evt.set_status(cl.command_execution_status.COMPLETE)
            for q in queues:
                q.finish()
            best[name] = min(best[name], (t1 - t0) / calls)
    return {name: t * 1e6 for name, t in best.items()}


def bench_program(nkernels: int, ctx: cl.Context, queue: cl.CommandQueue,
                  n: int, calls: int, repeat: int,
                  gate: bool) -> dict[str, Any]:
    prog = make_program(nkernels, n)
    executor = prog._executor(ctx)
    plan = get_kernel_plan(executor)
    if len(plan.subkernels) != nkernels:
        raise RuntimeError(f"expected {nkernels} kernels, loopy made "
                           f"{len(plan.subkernels)}")
    x_np = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cla.to_device(queue, x_np)
    exe = prog.bind_to_context(ctx)
    launch = prog.launcher(queue, x=x)

    # raw pyopencl: the launcher's kernels (arguments already set),
    # enqueued directly
    raw = [(sub.kernel, sub.default_global_work_size,
            sub.default_local_work_size) for sub in launch.launchers]
    enqueue = cl.enqueue_nd_range_kernel

    def raw_enqueue() -> None:
        for knl, gws, lws in raw:
            enqueue(queue, knl, gws, lws)

    def raw_enqueue_profiling() -> None:
        # the floor of a profiled call: the same enqueues on a profiling
        # queue, their events kept (as the statistics keep them)
        kept.append([enqueue(pqueue, knl, gws, lws) for knl, gws, lws in raw])
        if len(kept) > 4096:
            kept.clear()

    kept: list[list[cl.Event]] = []

    # check that every way computes the same
    launch().wait()
    ref = launch.outputs
    (ref_out,) = ref.values()
    for name, fn in [("executor", lambda: executor(queue, x=x)),
                     ("executable", lambda: exe(queue, x=x)),
                     ("program", lambda: prog(queue, x=x))]:
        _, out = fn()
        got = out[0] if isinstance(out, tuple) else next(iter(out.values()))
        if not np.allclose(got.get(), ref_out.get()):
            raise RuntimeError(f"{name} disagrees with the launcher")

    pqueue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    xp = cla.to_device(pqueue, x_np)
    plaunch = prog.launcher(pqueue, x=xp)
    _, out = exe(pqueue, x=xp)
    got = out[0] if isinstance(out, tuple) else next(iter(out.values()))
    if not np.allclose(got.get(), ref_out.get()):
        raise RuntimeError("the call on a profiling queue disagrees")
    pqueue.finish()
    exe.clear_statistics()
    prog.clear_statistics()

    results = time_calls({
        "raw pyopencl enqueue": raw_enqueue,
        "raw pyopencl enqueue (profiling)": raw_enqueue_profiling,
        "loopy executor": lambda: executor(queue, x=x),
        "BoundPyOpenCLExecutable": lambda: exe(queue, x=x),
        "BoundPyOpenCLExecutable (profiling)": lambda: exe(pqueue, x=xp),
        "BoundPyOpenCLProgram": lambda: prog(queue, x=x),
        "BoundPyOpenCLProgram (profiling)": lambda: prog(pqueue, x=xp),
        "launcher": launch,
        "launcher (profiling)": plaunch,
    }, [queue, pqueue], calls, repeat, gate)
    pqueue.finish()
    ncalls = 1 + calls * repeat  # a warm-up call, then the timed ones
    t0 = time.perf_counter()
    stats = exe.statistics
    t1 = time.perf_counter()
    counted = sum(s.count for s in stats.values())
    if counted != ncalls * nkernels:
        raise RuntimeError(f"statistics count {counted} kernel runs, "
                           f"expected {ncalls * nkernels}")
    results["statistics read"] = (t1 - t0) / ncalls * 1e6
    return {"kernels": nkernels, "us_per_call": results,
            "launcher_over_raw": results["launcher"]
            / results["raw pyopencl enqueue"],
            "profiling_over_plain": results[
                "BoundPyOpenCLExecutable (profiling)"]
            / results["BoundPyOpenCLExecutable"],
            "raw_profiling_over_plain": results[
                "raw pyopencl enqueue (profiling)"]
            / results["raw pyopencl enqueue"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1024,
                        help="array length (default: 1024)")
    parser.add_argument("--calls", type=int, default=300,
                        help="calls per repetition (default: 300)")
    parser.add_argument("--repeat", type=int, default=9,
                        help="repetitions, the best is kept (default: 9)")
    parser.add_argument("--no-gate", action="store_true",
                        help="let the device run while calls are timed "
                        "(by default the queue waits for a user event until "
                        "the timed calls are enqueued)")
    parser.add_argument("--device-match",
                        help="use the first device whose platform or device "
                        "name contains this (e.g. NVIDIA)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)

    ctx = pick_context(args.device_match)
    queue = cl.CommandQueue(ctx)
    dev = ctx.devices[0]
    header = {"device": dev.name.strip(), "platform": dev.platform.name,
              "python": platform.python_version(),
              "pyopencl": cl.VERSION_TEXT, "n": args.n, "calls": args.calls,
              "repeat": args.repeat, "gate": not args.no_gate,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(" ".join(f"{k}={v}" for k, v in header.items()))
    runs = [bench_program(k, ctx, queue, args.n, args.calls, args.repeat,
                          not args.no_gate)
            for k in (1, 10)]
    names = list(runs[0]["us_per_call"])
    width = max(len(s) for s in names)
    print(f"{'us per call':<{width}} " + " ".join(
        f"{str(r['kernels']) + ' kernel(s)':>12}" for r in runs))
    for name in names:
        print(f"{name:<{width}} " + " ".join(
            f"{r['us_per_call'][name]:>12.2f}" for r in runs))
    print(f"{'launcher / raw':<{width}} " + " ".join(
        f"{r['launcher_over_raw']:>12.2f}" for r in runs))
    print(f"{'profiling / plain':<{width}} " + " ".join(
        f"{r['profiling_over_plain']:>12.2f}" for r in runs))
    print(f"{'raw profiling / plain':<{width}} " + " ".join(
        f"{r['raw_profiling_over_plain']:>12.2f}" for r in runs))
    if args.json:
        with open(args.json, "w") as outf:
            json.dump({**header, "runs": runs}, outf, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
