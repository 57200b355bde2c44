"""The peers table (issues 43 and 44): pytato on the user path against the
fusing compilers jax.jit and torch.compile, torch eager and numpy, the same
workloads in one run.

Usage::

    python benchmarks/bench_peers.py [--only NAME] [--list] [--runs N]
        [--rounds R] [--settle S] [--no-first] [--first-timeout S]

The workloads are the ``WORKLOADS`` of ``peers_dags.py`` (issue 43: random
DAGs, the five-output workload, elementwise, reductions, matvec, stencil)
and, where it exists, of ``peers_dg.py`` (issue 44), each a
:class:`peer_workload.Workload` written once against an array namespace.
``--only`` keeps those whose name contains its value (or one of its
``|``-separated values), ``--list`` prints
their names.

The peers, each where it can run:

* ``pytato``: ``prog = pt.generate_loopy(outputs)`` without a device, then
  ``prog(queue, **pyopencl arrays)`` on the device of ``PYOPENCL_CTX`` (or
  ``PYOPENCL_TEST``);
* ``numpy``: on CPU devices;
* ``jax.jit``: with 64-bit floats, on the CPU (``JAX_PLATFORMS=cpu``) when
  the OpenCL device is a CPU, else on jax's default backend (CUDA where
  jax has it);
* ``torch`` (eager) and ``torch.compile``: on CUDA, where torch with CUDA
  imports.

The columns:

* ``first s``: seconds from the graph's construction to the first result,
  in a new process with empty caches (pytato: a new folder for the program
  store, ``PYTATO_PROGRAM_STORE_DIR``, and for loopy's, pyopencl's and
  PoCL's caches; jax: a new ``jax.jit``, no persistent compilation cache;
  torch.compile: new Inductor and Triton cache folders). ``--no-first``
  times it in this process instead (caches as they are), marked ``*``;
* ``kernels``, ``launches``: distinct kernels of the program and kernel
  launches per call (pytato: from its profiling statistics);
* ``kernel ms``: device time per call (pytato: the sum of its kernels'
  profiled durations, per call; torch: CUDA events around the call);
  numpy and jax on CPUs: their wall time;
* ``wall ms``: time per call with the synchronization (``queue.finish()``,
  ``block_until_ready()``, ``torch.cuda.synchronize()``), best of
  ``--runs``;
* ``% copy``: the workload's fewest bytes (:meth:`Workload.min_bytes`) over
  the kernel time, against the copy bandwidth of the OpenCL device
  (``enqueue_copy``, read + write);
* ``peer/ours``: the peer's wall time over pytato's (above 1: pytato is
  faster), and its range over the rounds.

Each workload is timed in ``--rounds`` interleaved rounds (numpy, a pause of
``--settle`` seconds on CPU devices, then the other peers); times are
medians over the rounds of the best of ``--runs``. Every peer's results are
checked against numpy's; the script exits with status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


_HERE = os.path.dirname(os.path.abspath(__file__))
# this checkout's pytato, not an installed one, and the benchmarks' modules
sys.path[:0] = [os.path.dirname(_HERE), _HERE]

from bench_user_path import time_call, time_ref  # noqa: E402
from peer_workload import Workload  # noqa: E402


def load_workloads() -> list[Workload]:
    """The workloads of ``peers_dags.py`` and, where present,
    ``peers_dg.py``."""
    from peers_dags import WORKLOADS as dags
    try:
        # (optional: another issue's workloads)
        from peers_dg import WORKLOADS as dg
    except ImportError:
        dg = []
    return [*dags, *dg]


def _find(name: str) -> Workload:
    for wl in load_workloads():
        if wl.name == name:
            return wl
    raise KeyError(name)


def _to_numpy(out: Any) -> np.ndarray:
    if hasattr(out, "get"):        # pyopencl
        return out.get()
    if hasattr(out, "detach"):     # torch
        return out.detach().cpu().numpy()
    return np.asarray(out)


def check(expected: dict[str, Any], got: dict[str, Any], rtol: float) -> bool:
    """Whether each output of *got* equals numpy's *expected* to *rtol*
    (with an absolute tolerance of *rtol* times the output's largest
    value: results that cancel keep the rounding errors of their terms)."""
    if not isinstance(got, dict) and len(expected) == 1:
        # (time_call returns a single output as it is)
        got = {next(iter(expected)): got}
    if set(got) != set(expected):
        return False
    for key, exp in expected.items():
        exp = np.asarray(exp)
        res = _to_numpy(got[key])
        if res.shape != exp.shape:
            return False
        scale = float(np.max(np.abs(exp))) if exp.size else 0.
        if not np.allclose(res, exp, rtol=rtol, atol=rtol * scale):
            return False
    return True


# {{{ the peers' setups

def _opencl_context() -> Any:
    import pyopencl as cl
    if "PYOPENCL_CTX" not in os.environ and "PYOPENCL_TEST" in os.environ:
        os.environ["PYOPENCL_CTX"] = os.environ["PYOPENCL_TEST"]
    return cl.create_some_context(interactive=False)


def _import_jax(gpu: bool) -> Any:
    if not gpu:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        # (optional peer: the bench extra)
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def _import_torch() -> Any:
    try:
        # (optional peer, on CUDA only)
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _placeholders(inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    import pytato as pt
    return {k: pt.make_placeholder(k, v.shape, v.dtype)
            for k, v in inputs.items()}

# }}}


# {{{ first result in a new process

def first_result_child(name: str, peer: str) -> None:
    """Print the seconds from the construction of *name*'s graph to its
    first result with *peer* (run in a new process by :func:`first_result`)."""
    wl = _find(name)
    if peer == "pytato":
        import pyopencl as cl
        import pyopencl.array as cla

        import pytato as pt
        ctx = _opencl_context()
        gpu = bool(ctx.devices[0].type & cl.device_type.GPU)
        inputs = wl.inputs(np.random.default_rng(0), gpu)
        queue = cl.CommandQueue(ctx)
        dev = {k: cla.to_device(queue, v) for k, v in inputs.items()}
        queue.finish()
        t0 = time.perf_counter()
        prog = pt.generate_loopy(wl.build(pt, _placeholders(inputs)))
        prog(queue, **dev)
        queue.finish()
    elif peer == "jax.jit":
        gpu = os.environ.get("JAX_PLATFORMS") != "cpu"
        jax = _import_jax(gpu)
        import jax.numpy as jnp
        inputs = wl.inputs(np.random.default_rng(0), gpu)
        dev = {k: jax.device_put(v) for k, v in inputs.items()}
        jax.block_until_ready(dev)
        t0 = time.perf_counter()
        fn = jax.jit(lambda a: wl.build(jnp, a))
        jax.block_until_ready(fn(dev))
    elif peer == "torch.compile":
        torch = _import_torch()
        inputs = wl.inputs(np.random.default_rng(0), True)
        dev = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn = torch.compile(lambda a: wl.build(torch, a))
        fn(dev)
        torch.cuda.synchronize()
    else:
        raise ValueError(f"peer: unknown peer {peer!r}")
    print(json.dumps({"first_s": time.perf_counter() - t0}))


def first_result(name: str, peer: str, timeout: float) -> float | None:
    """Seconds to the first result of workload *name* with *peer*, in a new
    process with empty caches (None if it failed or timed out)."""
    with tempfile.TemporaryDirectory(prefix="pytato-bench-peers-") as tmp:
        env = dict(os.environ)
        env.update({
            "PYTATO_PROGRAM_STORE_DIR": os.path.join(tmp, "store"),
            "XDG_CACHE_HOME": tmp,
            "POCL_CACHE_DIR": os.path.join(tmp, "pocl"),
            "CUDA_CACHE_DISABLE": "1",
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "inductor"),
            "TRITON_CACHE_DIR": os.path.join(tmp, "triton"),
        })
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        try:
            proc = subprocess.run(
                [sys.executable, os.path.abspath(__file__),
                 "--first-result", name, "--peer", peer],
                env=env, capture_output=True, text=True, timeout=timeout,
                check=False)
        except subprocess.TimeoutExpired:
            return None
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return float(json.loads(line)["first_s"])
    sys.stderr.write(f"first result of {name!r} with {peer}: failed\n"
                     f"{proc.stderr[-2000:]}\n")
    return None

# }}}


# {{{ timing

@dataclass
class Row:
    """One peer's measurements of one workload (medians over rounds)."""
    peer: str
    first_s: float | None = None
    first_in_process: bool = False
    kernels: int | None = None
    launches: float | None = None
    kernel_s: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    ok: bool = True


@dataclass
class Peer:
    """A peer ready to time: ``time()`` returns (kernel s, wall s) of one
    round; ``result()`` its outputs."""
    row: Row
    time: Callable[[], tuple[float, float]]
    result: Callable[[], dict[str, Any]]


def pytato_peer(wl: Workload, inputs: dict[str, np.ndarray], queue: Any,
                prof_queue: Any, runs: int) -> Peer:
    import pyopencl.array as cla

    import pytato as pt
    t0 = time.perf_counter()
    prog = pt.generate_loopy(wl.build(pt, _placeholders(inputs)))
    dev = {k: cla.to_device(queue, v) for k, v in inputs.items()}
    _, out = prog(queue, **dev)
    queue.finish()
    row = Row("pytato", time.perf_counter() - t0, True)
    profiled = [0]

    def call(q: Any) -> Any:
        profiled[0] += q is prof_queue
        return prog(q, **dev)

    last: dict[str, Any] = {"out": out}

    def time_round() -> tuple[float, float]:
        prog.clear_statistics()
        profiled[0] = 0
        _, t_wall, last["out"] = time_call(call, queue, prof_queue, runs)
        stats = prog.statistics
        row.kernels = len(stats)
        row.launches = stats.total.count / profiled[0]
        return stats.total.total / profiled[0], t_wall

    return Peer(row, time_round, lambda: last["out"])


def jax_peer(jax: Any, wl: Workload, inputs: dict[str, np.ndarray],
             runs: int) -> Peer:
    import jax.numpy as jnp
    dev = {k: jax.device_put(v) for k, v in inputs.items()}
    jax.block_until_ready(dev)
    t0 = time.perf_counter()
    fn = jax.jit(lambda a: wl.build(jnp, a))
    out = jax.block_until_ready(fn(dev))
    row = Row("jax.jit", time.perf_counter() - t0, True)

    def run() -> Any:
        return jax.block_until_ready(fn(dev))

    def time_round() -> tuple[float, float]:
        return time_ref(run, runs, False)
    return Peer(row, time_round, lambda: out)


def torch_peer(torch: Any, wl: Workload, inputs: dict[str, np.ndarray],
               runs: int, compiled: bool) -> Peer:
    dev = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn: Callable[[Any], Any] = (
        torch.compile(lambda a: wl.build(torch, a)) if compiled
        else (lambda a: wl.build(torch, a)))
    out = fn(dev)
    torch.cuda.synchronize()
    row = Row("torch.compile" if compiled else "torch",
              time.perf_counter() - t0, True)

    def time_round() -> tuple[float, float]:
        return time_ref(lambda: fn(dev), runs, True)
    return Peer(row, time_round, lambda: out)


def numpy_peer(wl: Workload, inputs: dict[str, np.ndarray], runs: int,
               expected: dict[str, Any]) -> Peer:
    row = Row("numpy")

    def time_round() -> tuple[float, float]:
        return time_ref(lambda: wl.build(np, inputs), runs, False)
    return Peer(row, time_round, lambda: expected)

# }}}


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None,
                        help="run the workloads whose name contains this "
                        "(alternatives separated by '|')")
    parser.add_argument("--list", action="store_true",
                        help="print the workloads' names")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds of pause after numpy (default: 0.5 "
                        "on CPU devices)")
    parser.add_argument("--no-first", action="store_true",
                        help="time the first result in this process")
    parser.add_argument("--first-timeout", type=float, default=600.)
    parser.add_argument("--first-result", default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--peer", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.first_result is not None:
        first_result_child(args.first_result, args.peer)
        return 0
    wanted = None if args.only is None else args.only.split("|")
    workloads = [wl for wl in load_workloads()
                 if wanted is None or any(w in wl.name for w in wanted)]
    if args.list:
        for wl in workloads:
            print(wl.name)
        return 0

    import pyopencl as cl
    ctx = _opencl_context()
    dev = ctx.devices[0]
    gpu = bool(dev.type & cl.device_type.GPU)
    settle = args.settle if args.settle is not None else (0. if gpu else .5)
    queue = cl.CommandQueue(ctx)
    prof_queue = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    jax = _import_jax(gpu)
    torch = _import_torch() if gpu else None

    versions = [f"numpy {np.__version__}"]
    if jax is not None:
        versions.append(f"jax {jax.__version__} ({jax.default_backend()})")
    if torch is not None:
        versions.append(f"torch {torch.__version__}")
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
          f"{dev.platform.name} / {dev.name}, {dev.max_compute_units} "
          f"compute units, Python {platform.python_version()}, "
          + ", ".join(versions))
    from bench_kernels import copy_bandwidth
    copy_gbs = copy_bandwidth(prof_queue, 2**28 if gpu else 2**26, 5)
    print(f"# median over {args.rounds} rounds of the best of {args.runs}; "
          f"copy bandwidth (enqueue_copy, read + write) {copy_gbs:.1f} GB/s; "
          "peer/ours = peer's wall / pytato's (>1: pytato faster); "
          + ("first s: in this process (*)" if args.no_first else
             "first s: a new process, empty caches"))
    print("| workload | peer | first s | kernels | launches | kernel ms "
          "| wall ms | % copy | peer/ours | range | ok |")
    print("| --- " * 11 + "|")
    sys.stdout.flush()

    failures = 0
    for wl in workloads:
        inputs = wl.inputs(np.random.default_rng(0), gpu)
        expected = wl.build(np, inputs)
        min_bytes = wl.min_bytes(inputs, expected)
        peers = [pytato_peer(wl, inputs, queue, prof_queue, args.runs)]
        if not gpu:
            peers.append(numpy_peer(wl, inputs, args.runs, expected))
        if jax is not None:
            peers.append(jax_peer(jax, wl, inputs, args.runs))
        if torch is not None:
            peers.append(torch_peer(torch, wl, inputs, args.runs, False))
            peers.append(torch_peer(torch, wl, inputs, args.runs, True))
        for _ in range(args.rounds):
            # numpy first, then a pause: its BLAS threads spin-wait after
            # a call and would take a core from the next peer's
            for peer in sorted(peers, key=lambda p: p.row.peer != "numpy"):
                t_kernel, t_wall = peer.time()
                peer.row.kernel_s.append(t_kernel)
                peer.row.wall_s.append(t_wall)
                if peer.row.peer == "numpy":
                    time.sleep(settle)
        if not args.no_first:
            for peer in peers:
                if peer.row.peer in ("pytato", "jax.jit", "torch.compile"):
                    peer.row.first_s = first_result(
                        wl.name, peer.row.peer, args.first_timeout)
                    peer.row.first_in_process = False
        ours = peers[0].row
        for peer in peers:
            row = peer.row
            row.ok = check(expected, peer.result(), wl.rtol)
            failures += not row.ok
            t_kernel = float(np.median(row.kernel_s))
            t_wall = float(np.median(row.wall_s))
            pct = 100 * min_bytes / t_kernel / 1e9 / copy_gbs
            if row is ours:
                ratio = rng = ""
            else:
                ratio = f"{t_wall / float(np.median(ours.wall_s)):.2f}"
                per_round = [p / o for p, o in zip(row.wall_s, ours.wall_s,
                                                   strict=True)]
                rng = f"{min(per_round):.2f}-{max(per_round):.2f}"
            first = _fmt(row.first_s, ".2f") + (
                "*" if row.first_in_process and row.first_s is not None
                else "")
            print(f"| {wl.name} | {row.peer} | {first} | "
                  f"{_fmt(row.kernels, 'd')} | {_fmt(row.launches, '.0f')} | "
                  f"{t_kernel * 1e3:.3f} | {t_wall * 1e3:.3f} | {pct:.0f} | "
                  f"{ratio} | {rng} | {'yes' if row.ok else 'NO'} |")
            sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
