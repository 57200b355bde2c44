"""Tests of the chunked, parallel OpenCL builds of
:mod:`pytato.target.loopy.run.executor`: splitting device code into kernels
and what they share, building it as several programs, and programs run
from such builds giving the results of one-program builds."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.target.loopy.build.parallel_builds import (
    BUILD_CHUNKS_ENV,
    MIN_CHUNK_BYTES,
    build_chunk_count,
    build_kernels,
    split_device_code,
)
from pytato.target.loopy.run.launcher import get_kernel_plan


# a source with everything loopy and pytato put around kernels: macros
# (with continuation lines and a top-level invocation without a
# semicolon), conditional directives, a struct type, helper functions
# (declared, then defined), comments and literals with braces
SOURCE = r"""
#define lid(N) ((int) get_local_id(N))
#if __OPENCL_C_VERSION__ < 120
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#endif
#define DEFINE_TWICE(SUFFIX, TYPE) \
    static inline TYPE twice_##SUFFIX(TYPE a) \
    { \
        return a + a; \
    }
DEFINE_TWICE(float, float)
#undef DEFINE_TWICE

typedef struct { float scale; int shift; } params_t;

/* a comment with { an unbalanced brace */
static float helper(float x);
static float helper(float x)
{
  // another } unbalanced brace
  return x * 3.0f + 1.0f;
}

__constant char label[] = "{ not a block ;";

__kernel void __attribute__ ((reqd_work_group_size(1, 1, 1))) k_helper(
    __global float *out, __global const float *x)
{
  int i = get_global_id(0);
  out[i] = helper(x[i]) + (label[0] == '{' ? 0.0f : 100.0f);
}

__kernel void k_twice(__global float *out, __global const float *x)
{
  int i = get_global_id(0);
  out[i] = twice_float(x[i]);
}

__kernel void k_params(__global float *out, __global const float *x,
                       float scale, int shift)
{
  params_t p = {scale, shift};
  int i = get_global_id(0);
  out[i] = p.scale * x[i] + p.shift;
}
"""


def test_split_device_code():
    split = split_device_code(SOURCE)
    assert split is not None
    shared, kernels = split
    assert [re.search(r"(\w+)\s*\(\s*__global", k).group(1)
            for k in kernels] == [
        "k_helper", "k_twice", "k_params"]
    assert all(k.startswith("__kernel") and k.endswith("}") for k in kernels)
    for needed in ("#define lid", "DEFINE_TWICE(float, float)", "params_t;",
                   "static float helper(float x)\n{", "label[]", "#endif"):
        assert needed in shared
    assert "__kernel" not in shared
    # nothing lost: the same text, up to whitespace
    assert sorted("".join(shared.split()) + "".join(
        "".join(k.split()) for k in kernels)) == sorted("".join(SOURCE.split()))


@pytest.mark.parametrize("source", [
    "__kernel void f(__global float *x) { x[0] = 1; ",  # unbalanced
    "__kernel void f(__global float *x) { x[0] = 1; } /* open",
    "__kernel void f(__global char *x) { x[0] = '{; }",
])
def test_split_device_code_refuses_unbalanced(source):
    assert split_device_code(source) is None


@pytest.mark.parametrize("nchunks", [1, 2, 3])
def test_build_kernels_chunks(cl_ctx, nchunks):
    """Kernels built as several programs share the helpers, types and
    macros, and compute what the one-program build computes."""
    queue = cl.CommandQueue(cl_ctx)
    kernels = build_kernels(cl_ctx, SOURCE, nchunks=nchunks)
    assert set(kernels) == {"k_helper", "k_twice", "k_params"}
    assert len({k.program.int_ptr for k in kernels.values()}) == nchunks
    x = np.arange(7, dtype=np.float32) - 3
    xd = cla.to_device(queue, x)
    out = cla.empty_like(xd)
    kernels["k_helper"](queue, x.shape, (1,), out.data, xd.data)
    np.testing.assert_array_equal(out.get(), 3 * x + 1)
    kernels["k_twice"](queue, x.shape, None, out.data, xd.data)
    np.testing.assert_array_equal(out.get(), 2 * x)
    kernels["k_params"](queue, x.shape, None, out.data, xd.data,
                        np.float32(0.5), np.int32(4))
    np.testing.assert_array_equal(out.get(), 0.5 * x + 4)


def test_build_kernels_in_processes(cl_ctx):
    """Programs built in processes of their own (their binaries loaded
    here) compute what the one-program build computes."""
    queue = cl.CommandQueue(cl_ctx)
    kernels = build_kernels(cl_ctx, SOURCE, nchunks=2, parallel="processes")
    assert set(kernels) == {"k_helper", "k_twice", "k_params"}
    assert len({k.program.int_ptr for k in kernels.values()}) == 2
    x = np.arange(5, dtype=np.float32)
    xd = cla.to_device(queue, x)
    out = cla.empty_like(xd)
    kernels["k_helper"](queue, x.shape, (1,), out.data, xd.data)
    np.testing.assert_array_equal(out.get(), 3 * x + 1)
    kernels["k_params"](queue, x.shape, None, out.data, xd.data,
                        np.float32(2), np.int32(-1))
    np.testing.assert_array_equal(out.get(), 2 * x - 1)
    with pytest.raises(ValueError, match="parallel"):
        build_kernels(cl_ctx, SOURCE, nchunks=2, parallel="fibers")


def test_build_kernels_falls_back_to_one_program(cl_ctx):
    """A kernel calling another cannot be built apart from it: the source
    is then built as one program."""
    source = """
    __kernel void first(__global int *x) { x[get_global_id(0)] += 1; }
    __kernel void second(__global int *x) { first(x); x[0] += 10; }
    """
    kernels = build_kernels(cl_ctx, source, nchunks=2)
    assert set(kernels) == {"first", "second"}
    assert len({k.program.int_ptr for k in kernels.values()}) == 1


def test_build_kernels_reports_errors(cl_ctx):
    with pytest.raises(cl.RuntimeError):
        build_kernels(cl_ctx, "__kernel void f(__global int *x) { y = 1; }\n"
                      "__kernel void g(__global int *x) { x[0] = 1; }",
                      nchunks=2)


def test_build_chunk_count(monkeypatch):
    monkeypatch.delenv(BUILD_CHUNKS_ENV, raising=False)
    # one kernel, or a small source: one program
    assert build_chunk_count([10 * MIN_CHUNK_BYTES]) == 1
    assert build_chunk_count([100] * 50) == 1
    many = build_chunk_count([MIN_CHUNK_BYTES // 4] * 400)
    assert 1 <= many <= 100
    import os
    assert many == min(100, len(os.sched_getaffinity(0)))
    monkeypatch.setenv(BUILD_CHUNKS_ENV, "3")
    assert build_chunk_count([100] * 50) == 3
    assert build_chunk_count([100] * 2) == 2
    assert build_chunk_count([100]) == 1
    monkeypatch.setenv(BUILD_CHUNKS_ENV, "many")
    assert build_chunk_count([100] * 50) == 1


# {{{ programs built in chunks

def _graph() -> dict[str, pt.Array]:
    """A random DAG of many kernels."""
    from random_graphs import make_random_dag
    return make_random_dag(300, seed=3, n=8)


def _run(ctx: cl.Context, prog: Any) -> tuple[dict[str, np.ndarray], int]:
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(4)
    inputs = {f"in{i}": rng.random((8, 8)) for i in range(4)}
    exe = prog.bind_to_context(ctx)
    _, out = exe(queue, **inputs)
    plan = get_kernel_plan(exe.program)
    nprograms = len({p.int_ptr for p in plan.cl_programs.values()})
    return {k: np.asarray(v) for k, v in out.items()}, nprograms


def test_chunked_program_equals_one_program(cl_ctx, monkeypatch):
    # (the single kernel's build: GPUs take the split path by default,
    # whose sub-units are programs of their own)
    monkeypatch.setenv("PYTATO_SPLIT_KERNELS", "0")
    prog = pt.generate_loopy(_graph())
    monkeypatch.setenv(BUILD_CHUNKS_ENV, "1")
    # a new context for each build: the executors (and builds) are per
    # context
    ref, nref = _run(cl.Context(cl_ctx.devices), prog)
    assert nref == 1
    monkeypatch.setenv(BUILD_CHUNKS_ENV, "4")
    got, nprograms = _run(cl.Context(cl_ctx.devices), prog)
    assert nprograms == 4
    assert got.keys() == ref.keys()
    for name in ref:
        np.testing.assert_array_equal(got[name], ref[name])


def test_program_with_calls_in_chunks(cl_ctx, monkeypatch):
    """Programs with function calls (helper functions in the device code):
    a forced chunk count is capped to the number of kernels, and results
    are right."""
    x = pt.make_placeholder("in0", (8, 8), np.float64)

    def f(a: pt.Array) -> pt.Array:
        return 2 * a + pt.sum(a)

    prog = pt.generate_loopy({"r": pt.trace_call(f, x),
                              "s": pt.trace_call(f, x + 1) * 3})
    monkeypatch.setenv(BUILD_CHUNKS_ENV, "4")
    queue = cl.CommandQueue(cl.Context(cl_ctx.devices))
    xv = np.random.default_rng(5).random((8, 8))
    _, out = prog(queue, in0=xv)
    np.testing.assert_allclose(out["r"], 2 * xv + xv.sum(), rtol=1e-13)
    np.testing.assert_allclose(out["s"], 3 * (2 * (xv + 1) + (xv + 1).sum()),
                               rtol=1e-13)

# }}}
