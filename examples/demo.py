"""Build a small pytato graph, show the OpenCL code generated for it, run it
on the default OpenCL device and check the results against numpy.

The graph: a symbolic-size matrix ``A`` (``n x 4``) and a vector ``x``;
``y = A @ x + b`` (``b`` is data bound into the graph), a softmax-like
normalization of ``exp(y)`` whose sum is stored once in a named temporary
and shared by two outputs, the column maxima of ``A`` and a reshaped,
transposed view of ``A``.

Run it with ``bash scripts/run-demo.sh`` (or ``python examples/demo.py``).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

import pytato as pt
from pytato.tags import ImplStored


def build_graph() -> tuple[dict[str, pt.Array], np.ndarray]:
    n = pt.make_size_param("n")
    a = pt.make_placeholder("A", (n, 4), np.float64)
    x = pt.make_placeholder("x", (4,), np.float64)
    b_data = np.linspace(-1, 1, 4)
    b = pt.make_data_wrapper(b_data, name="b")

    y = a @ x                                   # matvec: a reduction
    e = pt.exp(y - pt.amax(y))                  # element-wise + reduction
    total = pt.sum(e).tagged(ImplStored()).named("total")  # shared, stored once
    outputs = {
        "softmax": e / total,
        "log_sum": pt.log(total) + pt.amax(y),
        "col_max": pt.amax(a + b, axis=0),      # broadcasting the bound data
        "shuffled": pt.transpose(pt.reshape(a, (2, n * 2)))[::-1],
    }
    return outputs, b_data


def reference(a: np.ndarray, x: np.ndarray, b: np.ndarray
              ) -> dict[str, np.ndarray]:
    y = a @ x
    e = np.exp(y - y.max())
    total = e.sum()
    n = a.shape[0]
    return {
        "softmax": e / total,
        "log_sum": np.log(total) + y.max(),
        "col_max": (a + b).max(axis=0),
        "shuffled": a.reshape(2, n * 2).T[::-1],
    }


def main() -> None:
    outputs, b_data = build_graph()
    prog = pt.generate_loopy(outputs)

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    # the kernels are scheduled for the device that runs them
    print("=" * 30, "generated OpenCL code", "=" * 30)
    prog.show_code(queue.device)

    print("=" * 30, f"running on {ctx.devices[0].name}", "=" * 30)

    rng = np.random.default_rng(0)
    for n in (6, 10):
        a = rng.random((n, 4))
        x = rng.random(4)
        _, result = prog(queue, A=a, x=x)     # n is inferred from A's shape
        ref = reference(a, x, b_data)
        for name, value in sorted(result.items()):
            np.testing.assert_allclose(value, ref[name], rtol=1e-12)
            print(f"n={n}: {name:9s} shape={value.shape} matches numpy")

    print("demo OK")


if __name__ == "__main__":
    main()
