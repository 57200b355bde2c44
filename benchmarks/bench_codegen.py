"""Code generation benchmark: how long pytato takes to turn a graph into a
running OpenCL program, phase by phase.

Usage::

    python benchmarks/bench_codegen.py [--quick] [--json PATH] [--warm-caches]
        [--process-nodes N] [--processes-only] [--build-nodes N]
        [--split-counts] [--dg-run NFIELDS [--dg-elements N,N,...]]

For random DAGs of 100 / 1 000 / 10 000 nodes (``--quick``: 100 / 1 000)
it reports the time of the pytato transforms (preprocess), the lowering to
a loopy translation unit, ``generate_loopy`` with its default schedule,
loopy preprocessing and linearization (as programs run them:
:mod:`pytato.target.loopy.build.preprocessing`), code generation (the same
module's ``generate_code``: ``lp.generate_code_v2`` less a no-op pass),
the OpenCL build and the program's first call
(with PoCL, the device compiler runs when a kernel is first enqueued), the
number of instructions, global temporaries and device kernels, and the
time of a program cache hit, and of a hit in the persistent program store
(:mod:`pytato.target.loopy.store.program_store`: ``generate_loopy`` and the first
call of a program the in-memory cache has forgotten). loopy's, PoCL's and
the program store's on-disk caches start empty (a new folder) unless
``--warm-caches`` is given.
It also measures the per-call overhead of a raw pyopencl kernel enqueue,
loopy's executor, :class:`~pytato.target.loopy.BoundPyOpenCLExecutable` and
:class:`~pytato.target.loopy.BoundPyOpenCLProgram`, and a cold against a warm
process (loopy's and pyopencl's on-disk caches) generating and first
running a DAG of ``--process-nodes`` nodes (1 000 by default; the time
until the program exists, from the start of the process, and of its
first call).

``--split-counts`` only counts the sub-units of the split path
(:mod:`pytato.target.loopy.build.split`) and the distinct ones, with sizes
hoisted into value arguments and without; ``--dg-run NFIELDS`` only runs
the DG-like graph (:func:`make_dg_like`; groups of ``--dg-elements``
elements) on the device: first call, kernel and wall time per call
(``PYTATO_SPLIT_KERNELS`` and ``PYTATO_SPLIT_HOIST`` choose the path).

``--build-nodes N`` only measures the device build of the N-node DAG
(for the device of the context): its code is generated, then built as one
OpenCL program and as the programs of
:func:`pytato.target.loopy.build.parallel_builds.build_kernels` (its default chunk
count, or ``PYTATO_BUILD_CHUNKS``; built in threads, then in processes),
each from a source made unique by a comment (no driver cache hits), and
the first call of the program is timed, in a new context (loopy's work,
the build with the default chunks and, on PoCL, the kernels' compilation
at first launch). For NVIDIA, also set ``CUDA_CACHE_DISABLE=1`` for cold builds.

:func:`make_random_dag` is also used by ``test/test_codegen_perf.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile


if __name__ == "__main__" and "--warm-caches" not in sys.argv:
    # cold caches: loopy's and PoCL's on-disk caches in a new folder (a
    # graph benchmarked before would find its preprocessing, code and
    # binaries there); set before loopy and PoCL read them
    _cache = tempfile.mkdtemp(prefix="pytato-bench-codegen-")
    os.environ["XDG_CACHE_HOME"] = _cache
    os.environ["POCL_CACHE_DIR"] = os.path.join(_cache, "pocl")

import argparse
import json
import subprocess
import time
from typing import Any

import numpy as np

import pytato as pt


def make_random_dag(nnodes: int, seed: int = 0, n: int = 16
                    ) -> dict[str, pt.Array]:
    """A random graph of about *nnodes* distinct nodes over four ``(n, n)``
    float64 placeholders ``in0`` ... ``in3``: element-wise operations,
    reductions broadcast back, transposes, reshapes, reversals and rolls,
    with sharing (operands are mostly recent nodes, sometimes any earlier
    one). Nodes nobody reads are summed pairwise into at most three outputs
    ``out0``, ``out1``, ``out2``."""
    rng = np.random.default_rng(seed)
    pool: list[pt.Array] = [pt.make_placeholder(f"in{i}", (n, n), np.float64)
                            for i in range(4)]
    used: set[int] = set()
    count = 4

    def pick() -> pt.Array:
        if rng.random() < 0.7:
            a = pool[-1 - int(rng.integers(min(3, len(pool))))]
        else:
            a = pool[int(rng.integers(len(pool)))]
        used.add(id(a))
        return a

    while count < nnodes:
        k = int(rng.integers(8))
        a = pick()
        c = float(np.round(rng.uniform(0.5, 1.0), 6))
        if k < 3:
            b = pick()
            r = (a + c * b if k == 0 else a * b * c if k == 1 else a - c * b)
            count += 2
        elif k == 3:
            r = pt.sin(a) * c
            count += 2
        elif k == 4:
            r = a - pt.sum(a, axis=1).reshape(n, 1) * c
            count += 4
        elif k == 5:
            r = a.T * c
            count += 2
        elif k == 6:
            r = a.reshape(n * n).reshape(n, n)[::-1] * c
            count += 4
        else:
            r = pt.roll(a, 1, axis=0) * c
            count += 2
        pool.append(r)
    leaves = [p for p in pool if id(p) not in used]
    while len(leaves) > 3:
        leaves = [leaves[i] + leaves[i + 1] if i + 1 < len(leaves) else leaves[i]
                  for i in range(0, len(leaves), 2)]
    return {f"out{i}": p for i, p in enumerate(leaves)}


def _time(f: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    r = f()
    return time.perf_counter() - t, r


def bench_dag(nnodes: int, ctx: Any, *, build: bool = True) -> dict[str, Any]:
    import loopy as lp
    import pyopencl as cl

    from pytato.analysis import get_num_nodes
    from pytato.codegen import preprocess
    from pytato.target.loopy.lower.calls import build_translation_unit_with_calls

    graph = make_random_dag(nnodes)
    res: dict[str, Any] = {
        "requested_nodes": nnodes,
        "nodes": get_num_nodes(pt.make_dict_of_named_arrays(graph))}
    res["t_transform"], prep = _time(lambda: preprocess(graph))
    res["t_lowering"], t_unit = _time(
        lambda: build_translation_unit_with_calls(
            prep.outputs, target=lp.PyOpenCLTarget(),
            options=lp.Options(return_dict=True), function_name="_pt_kernel",
            array_tag_t_to_not_propagate=frozenset(),
            axis_tag_t_to_not_propagate=frozenset()))
    knl = t_unit.default_entrypoint
    res["instructions"] = len(knl.instructions)
    res["global_temporaries"] = sum(
        1 for v in knl.temporary_variables.values()
        if v.address_space == lp.AddressSpace.GLOBAL)
    res["private_temporaries"] = sum(
        1 for v in knl.temporary_variables.values()
        if v.address_space == lp.AddressSpace.PRIVATE)
    res["loop_nests"] = len({frozenset(i.within_inames)
                             for i in knl.instructions if i.within_inames})
    # what users get: generate_loopy with its default schedule (for the
    # device of ctx), then loopy's phases on that translation unit
    dev = ctx.devices[0]
    res["t_generate_loopy_unscheduled"], _ = _time(
        lambda: pt.generate_loopy(graph, default_schedule=False))
    res["t_generate_loopy"], prog = _time(
        lambda: pt.generate_loopy(graph, cl_device=dev))
    res["t_cache_hit"], prog2 = _time(
        lambda: pt.generate_loopy(graph, cl_device=dev))
    res["device_kernels"] = None
    assert prog2 is prog
    t_unit = prog.program
    # loopy's preprocessing and linearization as programs run them
    # (pytato.target.loopy.build.preprocessing: loopy's steps without its
    # intermediate on-disk caches and without a no-op inlining pass)
    # (with the garbage collector's thresholds that programs use)
    from pytato.codegen import FewerCollections
    from pytato.target.loopy.build.preprocessing import preprocess_program

    def preprocess_() -> Any:
        with FewerCollections():
            return preprocess_program(t_unit)

    res["t_loopy_preprocess"], pre = _time(preprocess_)
    if not build:
        return res

    def linearize() -> Any:
        with lp.CacheMode(False), FewerCollections():
            return lp.linearize(pre)

    res["t_loopy_linearize"], lin = _time(linearize)
    from pytato.target.loopy.build.preprocessing import generate_code

    def codegen() -> Any:
        with FewerCollections():
            return generate_code(lin).device_code()

    res["t_loopy_codegen"], code = _time(codegen)
    res["device_kernels"] = code.count("__kernel ")
    res["t_opencl_build"], _ = _time(
        lambda: cl.Program(ctx, code).build())
    # the program's first call: loopy's invoker, the build (now in
    # pyopencl's cache) and the device compiler's work at first launch
    # (PoCL compiles each kernel when it is first enqueued)
    queue = cl.CommandQueue(ctx)
    inputs = {f"in{i}": np.ones((16, 16)) for i in range(4)}
    res["t_first_call"], _ = _time(lambda: prog(queue, **inputs))
    # a program the in-memory cache has forgotten: from the persistent
    # program store (generate_loopy, then the compiled program at the first
    # call), as a later process finds it
    from pytato.target.loopy import PROGRAM_CACHE
    PROGRAM_CACHE.clear()
    res["t_generate_loopy_store_hit"], prog3 = _time(
        lambda: pt.generate_loopy(graph, cl_device=dev))
    assert prog3 is not prog
    res["t_first_call_store_hit"], _ = _time(lambda: prog3(queue, **inputs))
    for k in ("t_transform", "t_lowering"):
        res[k.replace("t_", "us_per_node_")] = 1e6 * res[k] / res["nodes"]
    return res


def bench_build(nnodes: int, ctx: Any) -> dict[str, Any]:
    """The device build of the *nnodes*-node DAG's code: as one program and
    in chunks (see the module docstring)."""
    import uuid

    import pyopencl as cl

    from pytato.target.loopy.run.executor import (
        build_chunk_count,
        build_kernels,
        device_code,
        split_device_code,
    )

    graph = make_random_dag(nnodes)
    dev = ctx.devices[0]
    res: dict[str, Any] = {"requested_nodes": nnodes, "device": dev.name,
                           "cpus": len(os.sched_getaffinity(0))}
    res["t_generate_loopy"], prog = _time(
        lambda: pt.generate_loopy(graph, cl_device=dev))
    res["t_device_code"], code = _time(lambda: device_code(prog.program))
    split = split_device_code(code)
    assert split is not None
    res["code_bytes"] = len(code)
    res["device_kernels"] = len(split[1])
    default = build_chunk_count([len(k) for k in split[1]])
    res["default_chunks"] = default
    runs = [(1, "threads")]
    if default > 1:
        runs += [(default, "threads"), (default, "processes")]
    for nchunks, parallel in runs:
        source = f"// bench_codegen build {uuid.uuid4()}\n{code}"
        key = (f"t_build_{nchunks}_programs"
               + (f"_{parallel}" if nchunks > 1 else ""))
        res[key], _ = _time(
            lambda: build_kernels(ctx, source,  # noqa: B023
                                  nchunks=nchunks,  # noqa: B023
                                  parallel=parallel))  # noqa: B023
    # the program's first call, in a new context (its own executor): the
    # build with the default chunks (a source not built before)
    ctx2 = cl.Context([dev])
    queue = cl.CommandQueue(ctx2)
    inputs = {f"in{i}": np.ones((16, 16)) for i in range(4)}
    res["t_first_call"], _ = _time(lambda: prog(queue, **inputs))
    queue.finish()
    return res


def bench_overhead(ctx: Any, ncalls: int = 2000) -> dict[str, float]:
    """Per-call overhead (µs) of launching a tiny kernel."""
    import loopy as lp
    import pyopencl as cl
    import pyopencl.array as cla

    queue = cl.CommandQueue(ctx)
    x = pt.make_placeholder("x", (16,), np.float64)
    prog = pt.generate_loopy(2 * x, options=lp.Options(no_numpy=True))
    xd = cla.to_device(queue, np.ones(16))
    out = cla.empty_like(xd)
    raw = cl.Program(ctx, """
        __kernel void k(__global double *out, __global const double *x)
        { int i = get_global_id(0); out[i] = 2 * x[i]; }""").build().k

    def per_call(f: Any) -> float:
        f()
        queue.finish()
        t = time.perf_counter()
        for _ in range(ncalls):
            f()
        queue.finish()
        return 1e6 * (time.perf_counter() - t) / ncalls

    executor = prog.program_for(ctx.devices[0]).executor(ctx)
    exe = prog.bind_to_context(ctx)
    return {
        "raw_pyopencl_enqueue_us": per_call(
            lambda: raw(queue, (16,), None, out.data, xd.data)),
        "loopy_executor_us": per_call(lambda: executor(queue, x=xd, _pt_out=out)),
        "BoundPyOpenCLExecutable_us": per_call(lambda: exe(queue, x=xd)),
        "BoundPyOpenCLProgram_us": per_call(lambda: prog(queue, x=xd)),
    }


_PROCESS_SNIPPET = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {bench_dir!r})
import numpy as np, pyopencl as cl, pytato as pt
t_import = time.perf_counter()
from bench_codegen import make_random_dag
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
t_context = time.perf_counter()
g = make_random_dag({nnodes})
t_graph = time.perf_counter()
prog = pt.generate_loopy(g{device})
t1 = time.perf_counter()
inputs = {{f"in{{i}}": np.ones((16, 16)) for i in range(4)}}
prog(queue, **inputs)
t2 = time.perf_counter()
print(t_import - t0, t_context - t_import, t_graph - t_context, t1 - t_graph)
print(t1 - t0, t2 - t1)
"""

#: the parts of "until program" that the snippet prints, in order
_PROCESS_PARTS = ("imports", "context", "graph", "generate_loopy")


def bench_processes(nnodes: int, user_path: bool = False
                    ) -> dict[str, float]:
    """Time of a fresh process generating and first running a DAG, twice
    (the second finds loopy's and pyopencl's on-disk caches warm); with
    *user_path*, ``generate_loopy`` is given no device (the program is
    scheduled for the queue's at its first call), else the queue's."""
    import os
    import random
    nnodes += random.randrange(20)  # a graph not in the on-disk caches yet
    code = _PROCESS_SNIPPET.format(
        bench_dir=os.path.dirname(os.path.abspath(__file__)), nnodes=nnodes,
        device="" if user_path else ", cl_device=queue.device")
    res = {}
    for label in ("first", "second"):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], check=True,
                             capture_output=True, text=True).stdout.split()
        res[f"{label}_process_total_s"] = time.perf_counter() - t
        res[f"{label}_process_until_program_s"] = float(out[-2])
        res[f"{label}_process_first_call_s"] = float(out[-1])
        for part, value in zip(_PROCESS_PARTS, out[-6:-2], strict=True):
            res[f"{label}_process_{part}_s"] = round(float(value), 3)
    return res


def make_dg_like(nfields: int, ngroups: int = 3, ndofs: int = 10
                 ) -> dict[str, pt.Array]:
    """A DG-like graph: the same operator (an ``einsum`` with a
    differentiation matrix per element group, plus a flux: a face sum
    broadcast back) applied to *nfields* fields over *ngroups* element
    groups of different sizes."""
    outputs = {}
    for g in range(ngroups):
        nel = 100 * (g + 1)
        d = pt.make_placeholder(f"diff{g}", (ndofs, ndofs), np.float64)
        for f in range(nfields):
            u = pt.make_placeholder(f"u{f}_{g}", (nel, ndofs), np.float64)
            flux = 0.5 * (pt.sum(u, axis=1).reshape(nel, 1) - u)
            outputs[f"rhs{f}_{g}"] = pt.einsum("ij,ej->ei", d, u) + flux
    return outputs


def bench_split_counts(ctx: Any) -> list[dict[str, Any]]:
    """Sub-units (device kernels of the split path,
    :mod:`pytato.target.loopy.build.split`) and distinct ones of the random
    DAGs and of the DG-like graphs of 1 and 5 fields (no code generated),
    with sizes hoisted into value arguments (the default) and without."""
    from pytato.target.loopy.build import split

    graphs = [(f"random DAG {n}", make_random_dag(n))
              for n in (100, 1000, 10000)]
    graphs += [(f"DG-like, {f} field(s), 3 groups", make_dg_like(f))
               for f in (1, 5)]
    rows = []
    for label, graph in graphs:
        prog = pt.generate_loopy(graph, cl_device=ctx.devices[0])
        knl = prog.program.default_entrypoint
        t0 = time.perf_counter()
        units = split.split_kernel(knl)
        split_s = time.perf_counter() - t0
        plain = split.split_kernel(knl, hoist=False)
        rows.append({"graph": label,
                     "instructions": len(knl.instructions),
                     "sub_units": len(units),
                     "distinct": len({u.key for u in units}),
                     # sub-units with sizes hoisted into value arguments
                     "hoisted": sum(
                         any(split.hoisted_value(n) is not None
                             for n in u.canonical_names) for u in units),
                     "sub_units_unhoisted": len(plain),
                     "distinct_unhoisted": len({u.key for u in plain}),
                     "split_s": split_s})
        print(json.dumps(rows[-1]))
    return rows


def bench_dg_run(ctx: Any, nfields: int, nels: list[int], runs: int = 20,
                 ndofs: int = 10) -> dict[str, Any]:
    """The DG-like graph of *nfields* fields on groups of *nels* elements
    (:func:`make_dg_like`'s operator), run as it is on this device: the
    first call (``generate_loopy`` included), then the best of *runs*
    calls with device arrays: the kernel time (from a marker before the
    call to the end of its event, on a profiling queue) and the wall time
    (the call and ``queue.finish()``); results checked against numpy."""
    import pyopencl as cl
    import pyopencl.array as cla

    rng = np.random.default_rng(0)
    outputs = {}
    inputs = {}
    for g, nel in enumerate(nels):
        d = pt.make_placeholder(f"diff{g}", (ndofs, ndofs), np.float64)
        inputs[f"diff{g}"] = rng.standard_normal((ndofs, ndofs))
        for f in range(nfields):
            u = pt.make_placeholder(f"u{f}_{g}", (nel, ndofs), np.float64)
            inputs[f"u{f}_{g}"] = rng.standard_normal((nel, ndofs))
            flux = 0.5 * (pt.sum(u, axis=1).reshape(nel, 1) - u)
            outputs[f"rhs{f}_{g}"] = pt.einsum("ij,ej->ei", d, u) + flux
    queue = cl.CommandQueue(ctx)
    prof = cl.CommandQueue(
        ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    t0 = time.perf_counter()
    prog = pt.generate_loopy(outputs, cl_device=ctx.devices[0])
    dev = {k: cla.to_device(queue, v) for k, v in inputs.items()}
    _, out = prog(queue, **dev)
    queue.finish()
    first = time.perf_counter() - t0
    for g in range(len(nels)):
        d = inputs[f"diff{g}"]
        for f in range(nfields):
            u = inputs[f"u{f}_{g}"]
            ref = np.einsum("ij,ej->ei", d, u) + 0.5 * (
                u.sum(axis=1).reshape(-1, 1) - u)
            np.testing.assert_allclose(out[f"rhs{f}_{g}"].get(), ref,
                                       rtol=1e-12, atol=1e-12)
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        prog(queue, **dev)
        queue.finish()
        walls.append(time.perf_counter() - t)
    pdev = {k: cla.to_device(prof, v) for k, v in inputs.items()}
    kernel = []
    for _ in range(runs):
        marker = cl.enqueue_marker(prof)
        evt, _ = prog(prof, **pdev)
        prof.finish()
        kernel.append((evt.profile.end - marker.profile.start) * 1e-9)
    plans = [exe.kernel_plan() for exe in prog._executor_cache.values()
             if hasattr(exe, "kernel_plan")]
    res = {"nfields": nfields, "nels": nels,
           "device_kernels": (len(plans[0].subkernels) if plans else None),
           "first_call_s": first, "kernel_ms": min(kernel) * 1e3,
           "wall_ms": min(walls) * 1e3}
    print(json.dumps(res))
    return res


def main() -> None:
    import pyopencl as cl
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("--warm-caches", action="store_true",
                        help="keep the user's loopy/PoCL on-disk caches "
                        "(default: a new, empty cache folder)")
    parser.add_argument("--process-nodes", type=int, default=None,
                        help="nodes of the DAG of the two fresh processes "
                        "(default: 1000, 300 with --quick)")
    parser.add_argument("--processes-only", action="store_true",
                        help="only the two fresh processes")
    parser.add_argument("--user-path", action="store_true",
                        help="the fresh processes call generate_loopy "
                        "without a device, as users do")
    parser.add_argument("--build-nodes", type=int, default=None,
                        help="only the device build (one program, then in "
                        "chunks) and first call of a DAG of this many nodes")
    parser.add_argument("--split-counts", action="store_true",
                        help="only the sub-units and distinct sub-units of "
                        "the split path for the DAGs and DG-like graphs")
    parser.add_argument("--dg-run", type=int, default=None, metavar="NFIELDS",
                        help="only the DG-like graph of NFIELDS fields run "
                        "(first call, kernel and wall time per call)")
    parser.add_argument("--dg-elements", default="100,200,300",
                        help="the element counts of the groups of --dg-run")
    args = parser.parse_args()
    ctx = cl.create_some_context(interactive=False)
    if args.split_counts:
        bench_split_counts(ctx)
        return
    if args.dg_run is not None:
        bench_dg_run(ctx, args.dg_run,
                     [int(n) for n in args.dg_elements.split(",")])
        return
    if args.build_nodes is not None:
        res = bench_build(args.build_nodes, ctx)
        print(json.dumps(res))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    sizes = [100, 1000] if args.quick else [100, 1000, 10000]
    results: dict[str, Any] = {"dags": []}
    if not args.processes_only:
        for n in sizes:
            r = bench_dag(n, ctx)
            results["dags"].append(r)
            print(json.dumps(r))
        results["overhead"] = bench_overhead(ctx)
        print(json.dumps(results["overhead"]))
    nodes = args.process_nodes or (300 if args.quick else 1000)
    results["processes"] = {"nodes": nodes, "user_path": args.user_path,
                            **bench_processes(nodes, args.user_path)}
    print(json.dumps(results["processes"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
