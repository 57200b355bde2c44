"""Kernels over arrays of 2^31 elements and more (issue 41, item 3): a
float32 array of 2^31+5 elements and one of 65536 x 65536 (16 GiB),
element-wise (reversed), full sum, transposed, row sums and indexed, each
result checked against numpy's values at its ends. Needs a device holding
such buffers (an H200); ``BIG_N`` and ``BIG_M`` shrink the sizes for a try
on a CPU::

    PYOPENCL_CTX=NVIDIA python benchmarks/check_big_arrays.py
    BIG_N=1000 BIG_M=64 python benchmarks/check_big_arrays.py

Prints one line per kernel, with ``True`` where the values are right.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import pytato as pt


def main() -> None:
    n = int(os.environ.get("BIG_N", 2**31 + 5))
    m = int(os.environ.get("BIG_M", 65536))
    q = cl.CommandQueue(cl.create_some_context())
    print(q.device.name, q.device.max_mem_alloc_size / 2**30, "GiB max alloc")

    def run(expr: pt.Array, **args: object) -> cla.Array:
        _, (out,) = pt.generate_loopy(expr)(q, out_host=False, **args)
        return out

    t = time.time()
    ramp = (pt.arange(n, dtype=np.int64) % 1000).astype(np.float32)
    y = run(2 * ramp[::-1] + 1)
    tail, head = y[-3:].get(), y[:2].get()
    ok = (np.array_equal(tail, 2 * (np.arange(2, -1, -1) % 1000) + 1)
          and np.array_equal(head, 2 * (np.array([n - 1, n - 2]) % 1000) + 1))
    print(f"elementwise reversed, {n} elements: {ok} ({time.time() - t:.1f} s)")
    del y

    t = time.time()
    total = run(pt.sum(pt.full((n,), 1, np.int64))).get()
    print(f"sum of {n} ones: {total == n} ({time.time() - t:.1f} s)")

    def aval(r: object, c: object) -> np.ndarray:
        return ((np.int64(r) * m + np.int64(c)) % 997).astype(np.float32)

    a = run(pt.reshape(
        (pt.arange(m * m, dtype=np.int64) % 997).astype(np.float32), (m, m)))
    x = pt.make_placeholder("A", (m, m), np.float32)
    t = time.time()
    got = run(x.T * 2, A=a)[-1, -3:].get()
    ok = np.array_equal(got, 2 * aval(np.arange(m - 3, m), m - 1))
    print(f"transposed {m} x {m}, last row: {ok} ({time.time() - t:.1f} s)")

    got = run(pt.sum(x, axis=1), A=a)[-3:].get()
    ref = np.array([aval(r, np.arange(m)).astype(np.float64).sum()
                    for r in range(m - 3, m)])
    print(f"row sums, last rows: {np.allclose(got, ref, rtol=1e-5)}")

    rows, cols = np.array([0, 1, m - 1, m - 1]), np.array([0, m - 1, 0, m - 1])
    i = pt.make_placeholder("i", (4,), np.int64)
    j = pt.make_placeholder("j", (4,), np.int64)
    got = run(x[i, j] + 1, A=a, i=cla.to_device(q, rows),
              j=cla.to_device(q, cols)).get()
    print(f"indexed corners: {np.array_equal(got, aval(rows, cols) + 1)}")


if __name__ == "__main__":
    main()
