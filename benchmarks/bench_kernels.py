"""Kernel benchmarks: the run time of pytato's generated kernels (with the
default schedule) against numpy (CPU), torch (GPU, CUDA) and the device's
copy bandwidth.

Usage::

    python benchmarks/bench_kernels.py [--device-type cpu|gpu] [--quick]
        [--json PATH] [--group-sizes 8,16,32,...] [--dtype float64]
        [--only SUBSTRING] [--schedule-kind cpu|gpu] [--no-gate]

For each case: kernel time from OpenCL profiling events (median of several
runs after warm-up; the queue waits behind a user event while the program
call is enqueued, so the kernels run back to back: from the start of the
first kernel to the end of the last, see :func:`time_pytato`), effective
GB/s (bytes that must move at least once / time), % of the device's copy
bandwidth (``enqueue_copy`` of a large buffer, counting read + write),
number of device kernels and global temporaries of the translation unit,
and the numpy (and, when CUDA is available, torch eager) times of the same
computation.

``--group-sizes`` re-runs every case with the default schedule forced to each
work-group size (to choose the defaults by measurement).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Case:
    """A benchmark case: *build* returns ``(pytato result, inputs)``."""

    name: str
    build: Callable[[Any, dict[str, np.ndarray]], Any]
    make_inputs: Callable[[], dict[str, np.ndarray]]
    numpy_fn: Callable[[dict[str, Any]], Any]
    torch_fn: Callable[[dict[str, Any]], Any] | None
    nbytes: int


def _chain(m: Any, x: Any, y: Any) -> Any:
    r = x * 1.5 + y          # 2 ops
    r = r * x - y            # 4
    r = r * 0.5 + x          # 6
    r = r * y - 2.0          # 8
    return r * r + x         # 10


def _stencil(m: Any, u: Any) -> Any:
    return (m.roll(u, 1, 0) + m.roll(u, -1, 0) + m.roll(u, 1, 1)
            + m.roll(u, -1, 1) - 4 * u)


def _shared(m: Any, x: Any, y: Any) -> dict[str, Any]:
    s = x * y + 1.0
    t = s * s - x
    return {"a": s * 2.0 + t, "b": t - y, "c": s * t}


def make_cases(quick: bool, dtype: np.dtype) -> list[Case]:
    import pytato as pt

    rng = np.random.default_rng(0)
    isz = dtype.itemsize
    n = 2**20 if quick else 2**24
    side = 1024 if quick else 4096
    nel = 2**12 if quick else 2**16
    nmv = 1024 if quick else 4096

    def rand(*shape: int) -> np.ndarray:
        return rng.random(shape).astype(dtype)

    def ph(name: str, a: np.ndarray) -> Any:
        return pt.make_placeholder(name, a.shape, a.dtype)

    cases = [
        Case("elementwise chain (10 ops)",
             lambda i: _chain(pt, ph("x", i["x"]), ph("y", i["y"])),
             lambda: {"x": rand(n), "y": rand(n)},
             lambda i: _chain(np, i["x"], i["y"]),
             lambda i: _chain(None, i["x"], i["y"]), 3 * n * isz),
        Case("sum over axis 1",
             lambda i: pt.sum(ph("x", i["x"]), axis=1),
             lambda: {"x": rand(side, side)},
             lambda i: np.sum(i["x"], axis=1),
             lambda i: i["x"].sum(dim=1), side * side * isz + side * isz),
        Case("sum over axis 0",
             lambda i: pt.sum(ph("x", i["x"]), axis=0),
             lambda: {"x": rand(side, side)},
             lambda i: np.sum(i["x"], axis=0),
             lambda i: i["x"].sum(dim=0), side * side * isz + side * isz),
        Case("full sum",
             lambda i: pt.sum(ph("x", i["x"])),
             lambda: {"x": rand(n)},
             lambda i: np.sum(i["x"]),
             lambda i: i["x"].sum(), n * isz),
        Case("matvec",
             lambda i: ph("A", i["A"]) @ ph("v", i["v"]),
             lambda: {"A": rand(nmv, nmv), "v": rand(nmv)},
             lambda i: i["A"] @ i["v"],
             lambda i: i["A"] @ i["v"], (nmv * nmv + 2 * nmv) * isz),
        Case("DG einsum eij,ej->ei (20x20)",
             lambda i: pt.einsum("eij,ej->ei", ph("A", i["A"]), ph("u", i["u"])),
             lambda: {"A": rand(nel, 20, 20), "u": rand(nel, 20)},
             lambda i: np.einsum("eij,ej->ei", i["A"], i["u"]),
             lambda i: (i["A"] @ i["u"][:, :, None])[:, :, 0],
             (nel * 400 + 2 * nel * 20) * isz),
        Case("DG einsum ij,ej->ei (shared 20x20)",
             lambda i: pt.einsum("ij,ej->ei", ph("D", i["D"]), ph("u", i["u"])),
             lambda: {"D": rand(20, 20), "u": rand(nel * 16, 20)},
             lambda i: np.einsum("ij,ej->ei", i["D"], i["u"]),
             lambda i: i["u"] @ i["D"].T, 2 * nel * 16 * 20 * isz),
        Case("5-point stencil via roll",
             lambda i: _stencil(pt, ph("u", i["u"])),
             lambda: {"u": rand(side, side)},
             lambda i: _stencil(np, i["u"]),
             None, 2 * side * side * isz),
        Case("multi-output, shared subexpressions",
             lambda i: _shared(pt, ph("x", i["x"]), ph("y", i["y"])),
             lambda: {"x": rand(n), "y": rand(n)},
             lambda i: _shared(np, i["x"], i["y"]),
             lambda i: _shared(None, i["x"], i["y"]), 5 * n * isz),
    ]
    # torch's roll
    cases[7].torch_fn = lambda i: _stencil(_TorchRoll(), i["u"])
    return cases


class _TorchRoll:
    @staticmethod
    def roll(u: Any, shift: int, axis: int) -> Any:
        import torch
        return torch.roll(u, shift, axis)


def _median_time(fn: Callable[[], float], runs: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    return statistics.median(fn() for _ in range(runs))


def copy_bandwidth(queue: Any, nbytes: int, runs: int) -> float:
    """GB/s of ``enqueue_copy`` between two device buffers (read + write)."""
    import pyopencl as cl
    mf = cl.mem_flags
    a = cl.Buffer(queue.context, mf.READ_WRITE, nbytes)
    b = cl.Buffer(queue.context, mf.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, a, np.float32(1), 0, nbytes)
    cl.enqueue_fill_buffer(queue, b, np.float32(0), 0, nbytes)
    queue.finish()

    def once() -> float:
        evt = cl.enqueue_copy(queue, b, a)
        evt.wait()
        return (evt.profile.end - evt.profile.start) * 1e-9
    t = _median_time(once, runs, 2)
    return 2 * nbytes / t / 1e9


def count_kernels(t_unit: Any) -> tuple[int, int]:
    import loopy as lp
    code = lp.generate_code_v2(t_unit)
    knl = t_unit.default_entrypoint
    n_tmp = sum(1 for t in knl.temporary_variables.values()
                if t.address_space == lp.AddressSpace.GLOBAL)
    return len(code.device_programs), n_tmp


#: Seconds after which a gated call is taken to block (waiting for the
#: gated queue): the gate is then opened anyway and the timing falls back to
#: a marker enqueued before the call.
GATE_TIMEOUT_S = 30.0


class _Gate:
    """A :class:`pyopencl.UserEvent` that holds back *queue*: a marker waiting
    for it is enqueued, and a watchdog opens it after *timeout* seconds (so
    that a call that blocks on the queue cannot deadlock)."""

    def __init__(self, queue: Any, timeout: float) -> None:
        import pyopencl as cl
        self.event = cl.UserEvent(queue.context)
        self.marker = cl.enqueue_marker(queue, wait_for=[self.event])
        self.timed_out = False
        self._opened = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self._open, (True,))
        self._timer.daemon = True
        self._timer.start()

    def _open(self, by_timer: bool) -> None:
        import pyopencl as cl
        with self._lock:
            if self._opened:
                return
            self._opened = True
            self.timed_out = by_timer
            self.event.set_status(cl.command_execution_status.COMPLETE)

    def open(self) -> None:
        """Let the queue run (unless the watchdog did)."""
        self._timer.cancel()
        self._open(False)


def _kernel_events(prg: Any, queue: Any) -> list[Any]:
    """The kernel events that *prg* recorded on the profiling *queue* since
    its last ``clear_statistics()``."""
    from pytato.target.loopy.run.statistics import executor_statistics
    return [evt for _, evt in
            executor_statistics(prg._executor(queue.context)).events]


def time_pytato(queue: Any, prg: Any, inputs: dict[str, Any], runs: int,
                warmup: int, gate: bool = True) -> tuple[float, str]:
    """Median device time of a call of *prg* and how it was measured.

    ``"plain"`` (with *gate* False): the call runs as it is enqueued; the
    time is from the start of the first to the end of the last of its
    kernels (it counts gaps while the host enqueues the next kernel).

    ``"gated"``: the queue waits behind a user event while the call is
    enqueued, then runs all kernels back to back; the time is from the
    start of the first kernel (the end of the gate's marker where kernel
    events are not available) to the end of the last, so that it counts
    the gaps between kernels but not the host's time to make the call.
    ``"marker"`` (if the call blocked while the queue was gated): from a
    marker enqueued before the call to the end of the last kernel.
    ``"wall"``: host wall clock around the call and ``queue.finish()``.
    The default allocator (a memory pool per queue) is passed explicitly.
    """
    import pyopencl as cl

    from pytato.target.loopy.run.programs import default_allocator
    allocator = default_allocator(queue)
    if allocator is None:
        allocator = False
    method = ["gated"]

    def call() -> Any:
        evt, _ = prg(queue, allocator=allocator, out_host=False, **inputs)
        return evt

    def gated() -> float:
        queue.finish()
        prg.clear_statistics()
        gate = _Gate(queue, GATE_TIMEOUT_S)
        try:
            evt = call()
        finally:
            gate.open()
        evt.wait()
        queue.finish()
        if gate.timed_out:
            print(f"warning: the call blocked while the queue was gated "
                  f"(opened after {GATE_TIMEOUT_S} s); timing from a marker "
                  "before the call instead", file=sys.stderr, flush=True)
            method[0] = "marker"
            return float("nan")
        events = _kernel_events(prg, queue)
        try:
            if events:
                start = min(e.profile.start for e in events)
                end = max(e.profile.end for e in [*events, evt])
            else:
                start = gate.marker.profile.end
                end = evt.profile.end
        except cl.Error:
            return float("nan")
        return (end - start) * 1e-9

    def marker() -> float:
        queue.finish()
        start = cl.enqueue_marker(queue)
        evt = call()
        evt.wait()
        queue.finish()
        try:
            return (evt.profile.end - start.profile.end) * 1e-9
        except cl.Error:
            return float("nan")

    def plain() -> float:
        queue.finish()
        prg.clear_statistics()
        call().wait()
        queue.finish()
        events = _kernel_events(prg, queue)
        try:
            return (max(e.profile.end for e in events)
                    - min(e.profile.start for e in events)) * 1e-9
        except (cl.Error, ValueError):
            return float("nan")

    if not gate:
        method[0] = "plain"

    def once() -> float:
        if method[0] == "plain":
            return plain()
        if method[0] == "gated":
            t = gated()
            if method[0] == "gated":
                return t
        return marker()

    # warm up outside the gate (a first call may build the kernels)
    call().wait()
    t = _median_time(once, runs, warmup)
    if method[0] in ("gated", "plain") and not (t > 0):
        method[0] = "marker"
        t = _median_time(marker, runs, warmup)
    if not (t > 0):
        # the marker's profile is not available everywhere: wall clock then
        def wall() -> float:
            queue.finish()
            t0 = time.perf_counter()
            call()
            queue.finish()
            return time.perf_counter() - t0
        method[0] = "wall"
        t = _median_time(wall, runs, warmup)
    return t, method[0]


def time_numpy(fn: Callable[[], Any], runs: int) -> float:
    def once() -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    return _median_time(once, runs, 1)


def time_torch(fn: Callable[[], Any], runs: int) -> float:
    import torch

    def once() -> float:
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e-3
    return _median_time(once, runs, 2)


def pick_device(device_type: str) -> Any:
    import pyopencl as cl
    want = cl.device_type.GPU if device_type == "gpu" else cl.device_type.CPU
    for p in cl.get_platforms():
        for d in p.get_devices():
            if d.type & want:
                return d
    raise SystemExit(f"no OpenCL {device_type} device found")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device-type", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--group-sizes", default=None,
                    help="comma-separated work-group sizes to compare")
    ap.add_argument("--only", default=None, help="substring of case names")
    ap.add_argument("--no-gate", action="store_true",
                    help="time plain calls (kernel events of each call) "
                    "instead of calls gated behind a user event; on "
                    "NVIDIA's OpenCL the gate crashed a few timing loops")
    ap.add_argument("--schedule-kind", choices=["cpu", "gpu"], default=None,
                    help="schedule for this kind of device instead of the "
                    "one run on (e.g. the GPU schedule on PoCL)")
    args = ap.parse_args(argv)

    import pyopencl as cl
    import pyopencl.array as cl_array

    import pytato as pt
    from pytato.target.loopy.device import DeviceInfo
    from pytato.target.loopy.schedule.default import default_schedule

    dev = pick_device(args.device_type)
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    runs = args.runs or (5 if args.quick else 10)
    dtype = np.dtype(args.dtype)

    torch = None
    if args.device_type == "gpu":
        try:
            import torch as _torch
            if _torch.cuda.is_available():
                torch = _torch
        except ImportError:
            pass

    copy_bytes = (2**26 if args.quick else 2**28) if args.device_type == "gpu" \
        else (2**24 if args.quick else 2**27)
    bw = copy_bandwidth(queue, copy_bytes, runs)
    info = DeviceInfo.from_cl_device(dev)
    if args.schedule_kind:
        info = DeviceInfo(kind=args.schedule_kind,
                          compute_units=info.compute_units,
                          max_work_group_size=info.max_work_group_size,
                          name=info.name)
    print(f"device: {dev.name} ({dev.platform.name}), {info.compute_units} "
          f"compute units; copy bandwidth {bw:.1f} GB/s", flush=True)

    group_sizes: list[int | None] = [None]
    if args.group_sizes:
        group_sizes = [int(g) for g in args.group_sizes.split(",")]

    results = []
    for case in make_cases(args.quick, dtype):
        if args.only and args.only not in case.name:
            continue
        inputs = case.make_inputs()
        d_inputs = {k: cl_array.to_device(queue, v) for k, v in inputs.items()}
        result = case.build(inputs)
        base = pt.generate_loopy(result, cl_device=dev, default_schedule=False)
        t_np = time_numpy(lambda c=case, i=inputs: c.numpy_fn(i), runs)
        t_torch = None
        if torch is not None and case.torch_fn is not None:
            t_inputs = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
            t_torch = time_torch(
                lambda c=case, i=t_inputs: c.torch_fn(i), runs)
        for gs in group_sizes:
            dinfo = info if gs is None else DeviceInfo(
                kind=info.kind, compute_units=info.compute_units,
                max_work_group_size=info.max_work_group_size, name=info.name,
                preferred_group_size=gs)
            prg = base.copy(program=default_schedule(base.program, dinfo))
            # check the result once
            _, out = prg(queue, **d_inputs)
            ref = case.numpy_fn(inputs)
            ok = _compare(out, ref)
            t, timing = time_pytato(queue, prg, d_inputs, runs, 2,
                                    gate=not args.no_gate)
            n_knl, n_tmp = count_kernels(prg.program)
            row = {
                "case": case.name, "group_size": gs or info.group_size,
                "time_ms": t * 1e3, "gbps": case.nbytes / t / 1e9,
                "pct_copy_bw": 100 * case.nbytes / t / 1e9 / bw,
                "kernels": n_knl, "global_temporaries": n_tmp,
                "numpy_ms": t_np * 1e3,
                "torch_ms": None if t_torch is None else t_torch * 1e3,
                "correct": ok, "timing": timing,
            }
            results.append(row)
            print(_fmt(row), flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "device": dev.name, "platform": dev.platform.name,
                "copy_bandwidth_gbps": bw, "dtype": dtype.name,
                "quick": args.quick, "command": " ".join(sys.argv),
                "date": datetime.datetime.now(datetime.UTC).isoformat(),
                "host": platform.node(), "results": results}, f, indent=1)
    return 0


def _compare(out: Any, ref: Any) -> bool:
    if isinstance(ref, dict):
        return all(_compare(out[k], ref[k]) for k in ref)
    if isinstance(out, tuple):
        out, = out
    got = out.get() if hasattr(out, "get") else np.asarray(out)
    return bool(np.allclose(got, ref, rtol=1e-5, atol=1e-6 * max(
        1.0, float(np.max(np.abs(ref))) if np.size(ref) else 1.0)))


def _fmt(r: dict[str, Any]) -> str:
    torch_s = "-" if r["torch_ms"] is None else f"{r['torch_ms']:8.3f}"
    return (f"{r['case']:40s} L={r['group_size']:<4d} {r['time_ms']:9.3f} ms "
            f"{r['gbps']:8.1f} GB/s {r['pct_copy_bw']:6.1f}% copy  "
            f"kernels={r['kernels']} temps={r['global_temporaries']}  "
            f"numpy {r['numpy_ms']:9.3f} ms  torch {torch_s} ms"
            + ("" if r["timing"] == "gated" else f"  [{r['timing']} timing]")
            + ("" if r["correct"] else "  WRONG"))


if __name__ == "__main__":
    sys.exit(main())
