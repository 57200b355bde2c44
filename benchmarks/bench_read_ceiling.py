"""How fast a device reads memory: hand-written first stages of the sum of
2**24 doubles, against the copy of the same array.

Each variant reduces its group's part of the array (``WG`` work-items,
``UNR`` loads in flight per work-item, ``double`` or ``double2`` loads)
to one partial sum per group; there is no second stage. The medians of
the profiled kernel durations (100 launches each, interleaved) give the
read bandwidth that a reduction cannot exceed on the device, to compare
pytato's reductions with (``benchmarks/README.md``). Run with the device
chosen by ``PYOPENCL_CTX``::

    python benchmarks/bench_read_ceiling.py
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla


N = 2**24

_STAGE = r"""
#pragma OPENCL EXTENSION cl_khr_fp64: enable
__kernel void __attribute__((reqd_work_group_size(WG, 1, 1)))
stage(__global const double *restrict x, __global double *restrict part,
      int steps)
{
  __local double l[WG];
  size_t base = get_group_id(0) * (size_t) (WG * UNR * steps)
                + get_local_id(0);
  double a = 0, b = 0;
#if VEC
  __global const double2 *x2 = (__global const double2 *) x;
  double2 v = 0;
  for (int s = 0; s < steps; ++s)
    for (int u = 0; u < UNR; ++u)
      v += x2[base + (s * UNR + u) * WG];
  a = v.x + v.y;
#else
  for (int s = 0; s < steps; ++s)
    for (int u = 0; u < UNR; u += 2) {
      a += x[base + (s * UNR + u) * WG];
      b += x[base + (s * UNR + u + 1) * WG];
    }
  a += b;
#endif
  l[get_local_id(0)] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int o = WG / 2; o > 0; o >>= 1) {
    if (get_local_id(0) < o)
      l[get_local_id(0)] += l[get_local_id(0) + o];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (get_local_id(0) == 0)
    part[get_group_id(0)] = l[0];
}
"""

_COPY = """
__kernel void copy(__global const double2 *a, __global double2 *b)
{ size_t i = get_global_id(0); b[i] = a[i]; }
"""

#: (double2 loads, work-items per group, loads in flight, groups)
VARIANTS = [(0, 1024, 4, 256), (0, 1024, 8, 256), (0, 512, 8, 512),
            (0, 256, 8, 1024), (1, 1024, 4, 256), (1, 1024, 2, 256),
            (1, 512, 4, 256), (1, 256, 4, 512), (1, 1024, 4, 128),
            (1, 1024, 2, 512), (0, 1024, 4, 512)]


def main() -> None:
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    wg_max = ctx.devices[0].max_work_group_size
    print(ctx.devices[0].name)
    x = np.random.default_rng(0).random(N)
    dx = cla.to_device(queue, x)
    dy = cla.empty_like(dx)
    part = cla.zeros(queue, 4096, np.float64)
    runs = {}
    for vec, wg, unr, groups in VARIANTS:
        elements = N // (2 if vec else 1)
        steps = elements // (wg * unr * groups)
        if wg > wg_max or steps * wg * unr * groups != elements:
            continue
        prg = cl.Program(ctx, _STAGE).build(
            options=[f"-DWG={wg}", f"-DUNR={unr}", f"-DVEC={vec}"])
        knl = prg.stage
        knl.set_args(dx.data, part.data, np.int32(steps))
        runs[f"vec{vec} wg{wg} unr{unr} g{groups}"] = (knl, groups * wg, wg, 1)
    copy = cl.Program(ctx, _COPY).build().copy
    copy.set_args(dx.data, dy.data)
    runs["copy"] = (copy, N // 2, 256, 2)
    for knl, gsize, lsize, _ in runs.values():
        for _ in range(5):
            cl.enqueue_nd_range_kernel(queue, knl, (gsize,), (lsize,))
    queue.finish()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(100):
        for name, (knl, gsize, lsize, _) in runs.items():
            evt = cl.enqueue_nd_range_kernel(queue, knl, (gsize,), (lsize,))
            evt.wait()
            times[name].append((evt.profile.end - evt.profile.start) * 1e-9)
    for name, ts in times.items():
        t = float(np.median(ts))
        passes = runs[name][3]
        print(f"{name:28s} {t * 1e6:7.1f} us  {passes * N * 8 / t / 1e9:6.0f} GB/s")


if __name__ == "__main__":
    main()
