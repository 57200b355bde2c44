"""Deep mixed chains: the time to the first result of a chain of *depth*
steps cycling through elementwise operations (``sin``, ``where``, a
linear combination with ``cos``), a reduction (the mean subtracted),
``roll``, a reshape with a transpose, a concatenation of slices and
indexing by an index array (the ``depth`` of issue 41, item 15).

Usage::

    python benchmarks/bench_deep_mixed.py [DEPTH ...]

(default depths: 1000 3000). The input has 64 float64 elements; the
result is checked against numpy. The program store is disabled
(``PYTATO_NO_PROGRAM_STORE=1``), so the first call generates and compiles
everything.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import numpy as np


N = 64


def build(m: Any, x: Any, idx: Any, depth: int) -> Any:
    y = x
    for i in range(depth):
        k = i % 8
        if k == 0:
            y = m.sin(y)
        elif k == 1:
            y = m.where(y > 0, y, 0.5 * y)
        elif k == 2:
            y = m.roll(y, 1)
        elif k == 3:
            y = y - m.sum(y) / N
        elif k == 4:
            y = m.reshape(m.reshape(y, (2, N // 2)).T, (N,))
        elif k == 5:
            y = m.concatenate([y[1:], y[:1]])
        elif k == 6:
            y = y[idx]
        else:
            y = 0.9 * y + 0.1 * m.cos(y)
    return y


def run(depth: int) -> str:
    import pyopencl as cl

    import pytato as pt

    queue = cl.CommandQueue(cl.create_some_context(interactive=False))
    x = pt.make_placeholder("x", (N,), np.float64)
    idx = pt.make_placeholder("idx", (N,), np.int64)
    t0 = time.perf_counter()
    expr = build(pt, x, idx, depth)
    t1 = time.perf_counter()
    prog = pt.generate_loopy(expr)
    t2 = time.perf_counter()
    xv = np.linspace(-1, 1, N)
    iv = np.random.default_rng(0).permutation(N).astype(np.int64)
    _, (out,) = prog(queue, x=xv, idx=iv)
    queue.finish()
    t3 = time.perf_counter()
    ok = np.allclose(out, build(np, xv, iv, depth))
    return (f"depth {depth}: build {t1 - t0:.2f} s, generate_loopy "
            f"{t2 - t1:.2f} s, first call {t3 - t2:.2f} s, "
            f"total {t3 - t0:.2f} s, correct: {ok}")


def main() -> None:
    os.environ["PYTATO_NO_PROGRAM_STORE"] = "1"
    depths = [int(a) for a in sys.argv[1:]] or [1000, 3000]
    for d in depths:
        print(run(d), flush=True)


if __name__ == "__main__":
    main()
