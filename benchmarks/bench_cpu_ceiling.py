"""What a CPU's memory allows a reduction: pytato's ``vdot``, matvec and
1-D sum against numpy's and against plain C loops compiled for the host,
interleaved in one process.

The C loops (``gcc -O3 -march=native -fopenmp``, one OpenMP thread per
core, threads that sleep between calls as PoCL's and OpenBLAS's do after
their spin) are what a compiled loop over all cores reads per second on
this machine: the ceiling for a memory-bound reduction. When numpy, pytato
and the C loop take the same time, the reduction is at the memory's
bandwidth and no schedule can make it faster.

Each round times every entry (best of ``--runs`` calls after 0.05 s of
untimed calls), in alternating order, with a pause of ``--settle`` seconds
after each entry; the table has the median over the rounds, the range,
the GB/s of the median and the ratio of numpy's median to each. Results are
checked against numpy (exit status 1 on a mismatch). Without gcc (or
OpenMP), the C entries are left out.

Usage (the device is chosen by ``PYOPENCL_CTX``, as
:func:`pyopencl.create_some_context` does)::

    python benchmarks/bench_cpu_ceiling.py [--rounds R] [--runs N]
        [--settle S] [--small]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


_C_SOURCE = r"""
double pt_bench_vdot(const double *restrict x, const double *restrict y,
                     long n)
{
  double s = 0;
  #pragma omp parallel for reduction(+:s) schedule(static)
  for (long i = 0; i < n; ++i)
    s += x[i] * y[i];
  return s;
}

double pt_bench_sum(const double *restrict x, long n)
{
  double s = 0;
  #pragma omp parallel for reduction(+:s) schedule(static)
  for (long i = 0; i < n; ++i)
    s += x[i];
  return s;
}

void pt_bench_matvec(const double *restrict a, const double *restrict v,
                     double *restrict out, long rows, long cols)
{
  #pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    double s = 0;
    for (long c = 0; c < cols; ++c)
      s += a[r * cols + c] * v[c];
    out[r] = s;
  }
}
"""


def _c_library(workdir: Path) -> Any | None:
    """The C loops, compiled for this host; None without gcc or OpenMP."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    src = workdir / "loops.c"
    lib = workdir / "libloops.so"
    src.write_text(_C_SOURCE)
    proc = subprocess.run(
        [gcc, "-O3", "-march=native", "-ffast-math", "-fopenmp", "-shared",
         "-fPIC", str(src), "-o", str(lib)],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"# C loops left out: gcc failed: {proc.stderr.strip()[:200]}")
        return None
    # sleep between calls (no core kept spinning for the next entry)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    loops = ctypes.CDLL(str(lib))
    dptr = ctypes.POINTER(ctypes.c_double)
    loops.pt_bench_vdot.restype = ctypes.c_double
    loops.pt_bench_vdot.argtypes = [dptr, dptr, ctypes.c_long]
    loops.pt_bench_sum.restype = ctypes.c_double
    loops.pt_bench_sum.argtypes = [dptr, ctypes.c_long]
    loops.pt_bench_matvec.restype = None
    loops.pt_bench_matvec.argtypes = [dptr, dptr, dptr, ctypes.c_long,
                                      ctypes.c_long]
    return loops


def _ptr(a: np.ndarray) -> Any:
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--settle", type=float, default=0.3)
    parser.add_argument("--small", action="store_true",
                        help="small sizes, for a quick check")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import pyopencl as cl
    import pyopencl.array as cla

    import pytato as pt

    n = 2**16 if args.small else 2**24
    side = 256 if args.small else 4096
    rng = np.random.default_rng(0)
    x, y = rng.random(n), rng.random(n)
    a, v = rng.random((side, side)), rng.random(side)
    out = np.empty(side)

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    dev = queue.device
    dx, dy, da, dv = (cla.to_device(queue, t) for t in (x, y, a, v))

    def ph(name: str, shape: tuple[int, ...]) -> Any:
        return pt.make_placeholder(name, shape, np.float64)

    # the README's path: no device given to generate_loopy
    p_vdot = pt.generate_loopy(pt.vdot(ph("x", (n,)), ph("y", (n,))))
    p_sum = pt.generate_loopy(pt.sum(ph("x", (n,))))
    p_mv = pt.generate_loopy(ph("a", (side, side)) @ ph("v", (side,)))

    def on_device(prog: Any, **kwargs: Any) -> Callable[[], Any]:
        def call() -> Any:
            _, (res,) = prog(queue, **kwargs)
            queue.finish()
            return res
        return call

    # name -> (call, bytes read, numpy's entry of the same workload)
    entries: dict[str, tuple[Callable[[], Any], int, str]] = {
        "numpy vdot": (lambda: np.vdot(x, y), 2 * x.nbytes, "numpy vdot"),
        "pytato vdot": (on_device(p_vdot, x=dx, y=dy), 2 * x.nbytes,
                        "numpy vdot"),
        "numpy matvec": (lambda: a @ v, a.nbytes, "numpy matvec"),
        "pytato matvec": (on_device(p_mv, a=da, v=dv), a.nbytes,
                          "numpy matvec"),
        "numpy sum": (lambda: x.sum(), x.nbytes, "numpy sum"),
        "pytato sum": (on_device(p_sum, x=dx), x.nbytes, "numpy sum"),
    }
    refs = {"numpy vdot": np.vdot(x, y), "numpy matvec": a @ v,
            "numpy sum": x.sum()}

    with tempfile.TemporaryDirectory() as tmp:
        loops = _c_library(Path(tmp))
        if loops is not None:
            def c_matvec() -> np.ndarray:
                loops.pt_bench_matvec(_ptr(a), _ptr(v), _ptr(out), side, side)
                return out
            entries["C vdot"] = (
                lambda: loops.pt_bench_vdot(_ptr(x), _ptr(y), n),
                2 * x.nbytes, "numpy vdot")
            entries["C matvec"] = (c_matvec, a.nbytes, "numpy matvec")
            entries["C sum"] = (lambda: loops.pt_bench_sum(_ptr(x), n),
                                x.nbytes, "numpy sum")

        ok = True
        for name, (call, _, ref) in entries.items():
            res = call()
            res = res.get() if hasattr(res, "get") else res
            if not np.allclose(res, refs[ref], rtol=1e-9):
                print(f"# MISMATCH: {name}")
                ok = False

        times: dict[str, list[float]] = {name: [] for name in entries}
        names = list(entries)
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                call = entries[name][0]
                end = time.perf_counter() + 0.05
                while time.perf_counter() < end:
                    call()
                best = float("inf")
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    call()
                    best = min(best, time.perf_counter() - t0)
                times[name].append(best)
                time.sleep(args.settle)

    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}"
          f" UTC, {dev.platform.name} / {dev.name}, "
          f"{dev.max_compute_units} compute units, host cores "
          f"{os.cpu_count()}, Python {platform.python_version()}, numpy "
          f"{np.__version__}")
    print(f"# median over {args.rounds} rounds of the best of {args.runs} "
          "wall-time calls (device arrays and queue.finish() for pytato); "
          "ratio = numpy's median / this one's (>1: faster than numpy)")
    print("| entry | median ms | range ms | GB/s read | ratio to numpy |")
    print("| --- | ---: | --- | ---: | ---: |")
    for name, (_, nbytes, ref) in entries.items():
        med = float(np.median(times[name]))
        lo, hi = min(times[name]), max(times[name])
        ratio = float(np.median(times[ref])) / med
        print(f"| {name} | {med * 1e3:.3f} | {lo * 1e3:.3f}-{hi * 1e3:.3f} | "
              f"{nbytes / med / 1e9:.1f} | {ratio:.2f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
