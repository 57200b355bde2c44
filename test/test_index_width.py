"""The integer type of generated index arithmetic (issue 41, item 3): 64-bit
for arrays and loop nests of ``2**31`` or more elements (and symbolic
sizes), 32-bit for small kernels; shapes too big for numpy refused."""

from __future__ import annotations

import re

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.diagnostic import ArrayTooBigError


BIG = 2**31 + 5

_INT_IDS = "#define gid(N) ((int) get_group_id(N))"
_LONG_IDS = "#define gid(N) ((long) get_group_id(N))"


def _code(expr: pt.Array, ctx: cl.Context) -> str:
    return pt.generate_loopy(expr).get_code(ctx.devices[0])


def _big_cases() -> dict[str, pt.Array]:
    x = pt.make_placeholder("x", (BIG,), np.int8)
    y = pt.make_placeholder("y", (65536, 65536), np.int8)
    i = pt.make_placeholder("i", (10,), np.int32)
    j = pt.make_placeholder("j", (10,), np.int32)
    a = pt.make_placeholder("a", (65536,), np.float32)
    return {
        "elementwise": x * 2,
        "transposed": y.T + 1,
        "reduction": pt.sum(x),
        "row_reduction": pt.sum(y, axis=1),
        "indexed": x[i],
        "indexed_2d": y[i, j],
        "reduced_loop_nest": pt.sum(a[:, None] * a[None, :]),
    }


@pytest.mark.parametrize("case", sorted(_big_cases()))
def test_big_kernels_index_with_64_bits(ctx_factory, case):
    code = _code(_big_cases()[case], ctx_factory())
    assert _LONG_IDS in code
    # no 32-bit variable but the flag of a two-stage reduction's last
    # work-group (GPU schedules)
    narrow = [name for name in re.findall(r"\bint (_pt\w*)", code)
              if not name.endswith("_last_group")]
    assert not narrow, narrow
    if case == "indexed_2d":
        # the int32 entries of the index arrays are widened before being
        # multiplied by the stride 65536
        assert "65536 * _pt_index64(" in code


def test_symbolic_sizes_index_with_64_bits(ctx_factory):
    n = pt.make_size_param("n")
    b = pt.make_placeholder("b", (n,), np.float32)
    assert _LONG_IDS in _code(b * 2, ctx_factory())


def test_small_kernels_keep_32_bit_indices(ctx_factory):
    ctx = ctx_factory()
    a = pt.make_placeholder("a", (1000,), np.float32)
    m = pt.make_placeholder("m", (300, 200), np.float32)
    i = pt.make_placeholder("i", (10,), np.int32)
    for expr in (a * 2, pt.sum(a), m.T + 1, pt.sum(m, axis=1), m[i, i],
                 pt.sum(a[:, None] * a[None, :])):
        code = _code(expr, ctx)
        assert _INT_IDS in code
        assert "long _pt" not in code
        assert "_pt_index64" not in code


def test_index_width_limit_is_shape_based():
    import loopy as lp

    from pytato.target.loopy.lower.index_width import (
        INT32_INDEX_LIMIT,
        kernel_index_dtype,
    )

    def dtype_for(shape):
        return kernel_index_dtype(
            [lp.GlobalArg("x", np.int8, shape=shape)], [], {})

    assert dtype_for((INT32_INDEX_LIMIT - 1,)) == np.int32
    assert dtype_for((INT32_INDEX_LIMIT,)) == np.int64
    assert dtype_for((2**15, 2**15)) == np.int64
    assert dtype_for((0, 2**40)) == np.int32


@pytest.mark.parametrize("make", [
    lambda: pt.make_placeholder("x", (2**40, 2**40), np.int8),
    lambda: pt.zeros((2**40, 2**40), np.int8),
    lambda: pt.make_placeholder("x", (2**61, 4), np.float64),
    lambda: (pt.make_placeholder("a", (2**40,), np.int8)[:, None]
             * pt.make_placeholder("b", (2**40,), np.int8)[None, :]),
    lambda: pt.make_placeholder("x", (2**62, pt.make_size_param("n")),
                                np.int16),
])
def test_shapes_too_big_for_int64_are_refused(make):
    with pytest.raises(ArrayTooBigError, match=r"shape \((1099511627776"
                       r"|2305843009213693952|4611686018427387904)"):
        make()


def test_largest_shapes_are_accepted():
    # numpy's limits: bytes up to 2**63 - 1; an empty array of any extents
    assert pt.make_placeholder("x", (2**62, 1), np.int8).shape == (2**62, 1)
    assert pt.make_placeholder("y", (2**62, 0, 2**40), np.int8).size == 0
    with pytest.raises(ValueError, match="too big"):
        np.empty((2**62, 4), np.int8)


def _available_ram() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def test_elementwise_run_on_2_pow_31_plus_5_int8(ctx_factory):
    ctx = ctx_factory()
    dev = ctx.devices[0]
    if dev.max_mem_alloc_size < BIG or dev.global_mem_size < 3 * BIG:
        pytest.skip(f"{dev.name}: buffers of {BIG} bytes not allowed")
    if _available_ram() < 8 * 2**30:
        pytest.skip("less than 8 GiB of RAM available")
    queue = cl.CommandQueue(ctx)
    # the input made on the host and copied over: NVIDIA's OpenCL refuses
    # clEnqueueFillBuffer of a one-byte pattern over 2^31 bytes and more
    # (CL_INVALID_VALUE), and pyopencl's fill kernel is slow on PoCL
    tail = np.arange(-20, 20, dtype=np.int8)
    x_host = np.full(BIG, 3, dtype=np.int8)
    x_host[BIG - tail.size:] = tail
    x_dev = cla.to_device(queue, x_host)
    del x_host
    x = pt.make_placeholder("x", (BIG,), np.int8)
    # the reversal reads x at BIG - 1 - k: the last elements of x land at
    # the start of the output, the first ones at its end
    prog = pt.generate_loopy({"y": x[::-1] * 2 + 1})
    _, result = prog(queue, x=x_dev)
    out = result["y"]
    np.testing.assert_array_equal(out[:tail.size].get(), tail[::-1] * 2 + 1)
    np.testing.assert_array_equal(out[BIG - 3:].get(), [7, 7, 7])
