"""The cost of clamping runtime indices and of the checked mode (issue 21).

A gather ``x[i]`` of 2**22 random int64 indices into 2**22 float64 values
(``--log2-size`` changes both), three ways:

* ``unclamped``: an :class:`~pytato.array.IndexLambda` reading
  ``x[i[k]]`` directly (what indexing generated before clamping; it reads
  out of bounds for bad indices);
* ``clamped``: ``x[i]`` (the default policy: one wrap of negative entries,
  then a clamp to the axis);
* ``checked``: ``x[i]`` with ``generate_loopy(..., check_indices=True)``:
  one more reduction over ``i`` and a synchronous flag read per call.

Kernel time is from OpenCL profiling events of the one kernel of the
unclamped/clamped programs; call time (wall clock of the call, waiting for
the result, arrays on the device) for all three. Median of ``--runs``
after warm-up.

Usage::

    python benchmarks/bench_index_clamp.py [--log2-size 22] [--runs 21]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pymbolic.primitives as prim
import pyopencl as cl
import pyopencl.array as cla

import pytato as pt


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2-size", type=int, default=22)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    n = 2 ** args.log2_size

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    x = cla.to_device(queue, rng.standard_normal(n))
    i = cla.to_device(queue, rng.integers(-n, n, n))

    xp = pt.make_placeholder("x", (n,), np.float64)
    ip = pt.make_placeholder("i", (n,), np.int64)
    raw = pt.IndexLambda(
        prim.Variable("_in0")[prim.Variable("_in1")[prim.Variable("_0")]],
        (n,), np.dtype(np.float64), {"_in0": xp, "_in1": ip})
    programs = {
        "unclamped": pt.generate_loopy(raw),
        "clamped": pt.generate_loopy(xp[ip]),
        "checked": pt.generate_loopy(xp[ip], check_indices=True),
    }
    print(f"device: {queue.device.name} ({queue.device.platform.name}), "
          f"gather of {n} float64 at {n} int64 indices")
    # the unclamped gather gets in-range indices (it would read out of bounds)
    inputs = {"unclamped": cla.to_device(queue, i.get() % n)}
    for name, prg in programs.items():
        ii = inputs.get(name, i)
        for _ in range(3):
            prg(queue, x=x, i=ii)
        kernel, call = [], []
        for _ in range(args.runs):
            queue.finish()
            t0 = time.perf_counter()
            evt, _ = prg(queue, x=x, i=ii)
            evt.wait()
            queue.finish()
            call.append(time.perf_counter() - t0)
            if name != "checked":
                kernel.append((evt.profile.end - evt.profile.start) * 1e-9)
        ktime = (f"kernel {statistics.median(kernel) * 1e3:7.2f} ms, "
                 if kernel else " " * 19)
        print(f"{name:10s} {ktime}call {statistics.median(call) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
