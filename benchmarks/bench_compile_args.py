"""Device compile time against the number of pointer arguments of a kernel.

Usage::

    python benchmarks/bench_compile_args.py [--counts 50,100,200,300]

For N pointer arguments, each used by one statement, it builds a kernel
three ways and times its first launch (with PoCL, the device compiler runs
when a kernel is first enqueued; the time of ``Program.build`` is printed
too): every pointer ``restrict``, none ``restrict``, and one buffer
indexed at N offsets. This is the measurement behind
:data:`pytato.target.loopy.build.cl_target.MAX_RESTRICT_ARGUMENTS`. pyopencl's
and PoCL's binary caches are bypassed (a new PoCL cache folder, a comment
making each source new).
"""

from __future__ import annotations

import os
import sys
import tempfile


if __name__ == "__main__":
    os.environ["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="pytato-bench-args-")

import argparse
import time
import uuid
from typing import Any


def _source(n: int, kind: str) -> str:
    restrict = "__restrict__ " if kind == "restrict" else ""
    if kind == "buffer":
        sig = "__global double *a, __global double const *x"
        body = [f"  a[{256 * k} + i] = x[i] * {k + 1}.5 + a[{256 * ((k + 7) % n)} + i];"
                for k in range(n)]
    else:
        sig = ", ".join([f"__global double *{restrict}t{k}" for k in range(n)]
                        + [f"__global double const *{restrict}x"])
        body = [f"  t{k}[i] = x[i] * {k + 1}.5 + t{(k + 7) % n}[i];"
                for k in range(n)]
    return ("// " + uuid.uuid4().hex + "\n"
            "__kernel void __attribute__((reqd_work_group_size(32, 1, 1)))\n"
            f"k({sig})\n{{\n  int i = get_global_id(0);\n"
            + "\n".join(body) + "\n}\n")


def time_kernel(ctx: Any, queue: Any, n: int, kind: str) -> tuple[float, float]:
    """(build, first launch) seconds of the kernel of *n* pointers."""
    import pyopencl as cl
    t = time.perf_counter()
    prg = cl.Program(ctx, _source(n, kind)).build()
    build = time.perf_counter() - t
    knl = prg.k
    # the buffers stay referenced until the kernel has run (setting an
    # argument does not retain its memory object)
    if kind == "buffer":
        buffers = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256 * 8 * n)]
    else:
        buffers = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256 * 8)
                   for _ in range(n)]
    buffers.append(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 256 * 8))
    knl.set_args(*buffers)
    t = time.perf_counter()
    cl.enqueue_nd_range_kernel(queue, knl, (256,), (32,))
    queue.finish()
    return build, time.perf_counter() - t


def main() -> None:
    import pyopencl as cl
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="50,100,200,300")
    args = parser.parse_args()
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    print(f"device: {ctx.devices[0].name} ({ctx.devices[0].platform.name})")
    print("pointers  kind       build s  first launch s")
    for n in (int(c) for c in args.counts.split(",")):
        for kind in ("restrict", "plain", "buffer"):
            build, launch = time_kernel(ctx, queue, n, kind)
            print(f"{n:8d}  {kind:9s} {build:8.3f} {launch:15.3f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
