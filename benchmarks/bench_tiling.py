"""Timings of the tiling variants of a small shared matrix applied to many
elements: ``einsum("ij,ej->ei", D, u)`` (:mod:`pytato.target.loopy.schedule.tiling`).

Usage::

    python benchmarks/bench_tiling.py [--quick] [--runs 20]
        [--dtype float64] [--blocks 1,2,4,8,16]

Runs on the first GPU OpenCL device (any device if there is none),
always with the GPU schedule (on a CPU device, e.g. PoCL, this only checks
that the variants run and agree with numpy: there the default schedule does
not tile). For each size ``(elements, N)`` (``(2**20, 20)``,
``(2**18, 35)``, ``(2**16, 20)``; small sizes with ``--quick``) it prints
one line per variant:

* ``flat``: tiling disabled (one output per work-item);
* ``local``: ``D`` staged in local memory, one block of elements per
  work-group (the schedule before register blocking);
* ``local K=8``: the same with 8 blocks per work-group;
* ``rows K=...``: each work-item's row of ``D`` in private memory, ``K``
  blocks per group (``default``: the schedule's choice);
* ``torch`` (``torch.einsum`` on CUDA) when ``torch.cuda.is_available()``.

Times are the median of ``--runs`` device times of a plain call of the
program (its output left on the device) on a profiling queue: after
``queue.finish()``, from the start of the first to the end of the last
kernel event recorded for the call. Results are checked against numpy.
GB/s count ``2 * u.nbytes + D.nbytes`` (read ``u`` and ``D``, write the
result). Variants are built by replacing
``pytato.target.loopy.schedule.default.plan_tiling`` (after clearing
:data:`pytato.target.loopy.PROGRAM_CACHE`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np


SIZES = [(2**20, 20), (2**18, 35), (2**16, 20)]
QUICK_SIZES = [(2**12, 20), (2**10, 35), (2**8, 20)]


def pick_device() -> Any:
    """The first GPU OpenCL device, else the first device."""
    import pyopencl as cl
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise SystemExit("no OpenCL device found")
    for d in devices:
        if d.type & cl.device_type.GPU:
            return d
    return devices[0]


def variants(blocks: list[int]) -> list[tuple[str, dict[str, Any] | None]]:
    """``(name, keyword arguments of plan_tiling)``; None: no tiling."""
    return [("flat", None),
            ("local", {"private_rows": False, "blocks": 1}),
            ("local K=8", {"private_rows": False, "blocks": 8}),
            ("rows K=default", {}),
            *((f"rows K={k}", {"blocks": k}) for k in blocks)]


def build(result: Any, info: Any, kwargs: dict[str, Any] | None
          ) -> tuple[Any, list[Any]]:
    """The program of *result* scheduled for *info* with the tiling variant
    *kwargs*, and the tiling plans it used."""
    import pytato as pt
    import pytato.target.loopy.schedule.default as schedule
    from pytato.target.loopy import PROGRAM_CACHE

    original = schedule.plan_tiling
    plans: list[Any] = []

    def plan_tiling(*args: Any, **kw: Any) -> Any:
        if kwargs is None:
            return None
        plan = original(*args, **{**kw, **kwargs})
        plans.append(plan)
        return plan

    PROGRAM_CACHE.clear()
    schedule.plan_tiling = plan_tiling
    try:
        prg = pt.generate_loopy(result, cl_device=info)
    finally:
        schedule.plan_tiling = original
        PROGRAM_CACHE.clear()
    return prg, plans


def device_time(queue: Any, prg: Any, inputs: dict[str, Any],
                allocator: Any) -> float:
    """Seconds from the start of the first to the end of the last kernel
    of one call of *prg* (nan without profiling information)."""
    import pyopencl as cl

    from pytato.target.loopy.run.statistics import executor_statistics

    queue.finish()
    prg.clear_statistics()
    prg(queue, allocator=allocator, out_host=False, **inputs)
    queue.finish()
    events = [evt for _, evt in
              executor_statistics(prg._executor(queue.context)).events]
    if not events:
        return float("nan")
    try:
        return (max(e.profile.end for e in events)
                - min(e.profile.start for e in events)) * 1e-9
    except cl.Error:
        return float("nan")


def median_time(once: Callable[[], float], runs: int, warmup: int = 2
                ) -> float:
    for _ in range(warmup):
        once()
    return statistics.median(once() for _ in range(runs))


def time_torch(d: np.ndarray, u: np.ndarray, want: np.ndarray, runs: int,
               rtol: float) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    td, tu = torch.from_numpy(d).cuda(), torch.from_numpy(u).cuda()
    np.testing.assert_allclose(
        torch.einsum("ij,ej->ei", td, tu).cpu().numpy(), want, rtol=rtol,
        atol=rtol)

    def once() -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.einsum("ij,ej->ei", td, tu)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3
    return median_time(once, runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes (e.g. to check the script on PoCL)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--blocks", default="1,2,4,8,16",
                    help="comma-separated blocks per group of 'rows K='")
    args = ap.parse_args(argv)

    import pyopencl as cl
    import pyopencl.array as cl_array

    import pytato as pt
    from pytato.target.loopy.device import DeviceInfo
    from pytato.target.loopy.run.programs import default_allocator

    dev = pick_device()
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    allocator = default_allocator(queue) or False
    found = DeviceInfo.from_cl_device(dev)
    # the GPU schedule (tiling) even on a CPU device
    info = DeviceInfo(kind="gpu", compute_units=found.compute_units,
                      max_work_group_size=found.max_work_group_size,
                      name=found.name)
    dtype = np.dtype(args.dtype)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    print(f"device: {dev.name} ({dev.platform.name}), "
          f"{info.compute_units} compute units; {dtype.name}, median of "
          f"{args.runs} runs", flush=True)

    rng = np.random.default_rng(0)
    blocks = [int(k) for k in args.blocks.split(",") if k]
    for n_el, n in (QUICK_SIZES if args.quick else SIZES):
        d = rng.random((n, n)).astype(dtype)
        u = rng.random((n_el, n)).astype(dtype)
        want = u.astype(np.float64) @ d.T.astype(np.float64)
        nbytes = 2 * u.nbytes + d.nbytes
        inputs = {"D": cl_array.to_device(queue, d),
                  "u": cl_array.to_device(queue, u)}
        result = pt.einsum("ij,ej->ei",
                           pt.make_placeholder("D", d.shape, dtype),
                           pt.make_placeholder("u", u.shape, dtype))
        print(f"-- {n_el} x {n} ({nbytes / 1e6:.1f} MB moved)", flush=True)
        for name, kwargs in variants(blocks):
            prg, plans = build(result, info, kwargs)
            if kwargs is not None and not any(plans):
                print(f"{name:16s} not tiled", flush=True)
                continue
            _, (out,) = prg(queue, allocator=allocator, out_host=True,
                            **inputs)
            np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol)
            t = median_time(
                lambda p=prg, i=inputs: device_time(queue, p, i, allocator),
                args.runs)
            how = ""
            plan = next((p for p in plans if p is not None), None)
            if plan is not None:
                how = (f"  (K={plan.blocks}, Eb={plan.elements_per_group}, "
                       f"{len([s for s in plan.staged if s.row])} rows)")
            print(f"{name:16s} {t * 1e3:9.3f} ms {nbytes / t / 1e9:8.1f} GB/s"
                  f"{how}", flush=True)
        t_torch = time_torch(d, u, want, args.runs, rtol)
        if t_torch is not None:
            print(f"{'torch':16s} {t_torch * 1e3:9.3f} ms "
                  f"{nbytes / t_torch / 1e9:8.1f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
