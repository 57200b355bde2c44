"""Deep mixed chains: the first call (device compilation) and later calls of
a chain of *depth* steps cycling through ``sin``, ``where`` (reading its
operand three times, so that the operand is stored), ``roll`` and a slice.

Usage::

    python benchmarks/bench_deep_chain.py [DEPTH ...]

(default depths: 500 1000 2000). The input has ``depth // 4 + 100``
float64 elements; the result is checked against numpy. Each depth runs in
its own process state: the program store is disabled
(``PYTATO_NO_PROGRAM_STORE=1``), so the first call compiles the device
code (PoCL compiles kernels at their first enqueue).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np


def build(m: Any, x: Any, depth: int) -> Any:
    y = x
    for i in range(depth):
        k = i % 4
        if k == 0:
            y = m.sin(y)
        elif k == 1:
            y = m.where(y > 0, y, 0.5 * y)
        elif k == 2:
            y = m.roll(y, 1)
        else:
            y = y[1:]
    return y


def run(depth: int) -> str:
    import pyopencl as cl

    import pytato as pt

    n = depth // 4 + 100
    queue = cl.CommandQueue(cl.create_some_context(interactive=False))
    x = pt.make_placeholder("x", (n,), np.float64)
    t0 = time.perf_counter()
    prog = pt.generate_loopy(build(pt, x, depth))
    t1 = time.perf_counter()
    xv = np.linspace(-1, 1, n)
    _, (out,) = prog(queue, x=xv)
    queue.finish()
    t2 = time.perf_counter()
    for _ in range(3):
        _, (out,) = prog(queue, x=xv)
    queue.finish()
    t3 = time.perf_counter()
    ok = np.allclose(out, build(np, xv, depth))
    kernels = prog.get_code().count("__kernel ")
    return (f"depth {depth}: generate_loopy {t1 - t0:.2f} s, first call "
            f"{t2 - t1:.2f} s, later calls {(t3 - t2) / 3 * 1e3:.1f} ms, "
            f"{kernels} device kernels, correct: {ok}")


def main() -> None:
    os.environ["PYTATO_NO_PROGRAM_STORE"] = "1"
    depths = [int(a) for a in sys.argv[1:]] or [500, 1000, 2000]
    for d in depths:
        print(run(d), flush=True)


if __name__ == "__main__":
    main()
