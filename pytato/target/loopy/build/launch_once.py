"""Each device kernel of a program launched once, so that the device
compiles it (see :mod:`pytato.target.loopy.build.jit_primer`), and how a
process finds the device of another.

This module imports nothing but :mod:`pyopencl`: the primer's second
process loads it from its file, without importing :mod:`pytato` (and
:mod:`loopy`).

.. autofunction:: launch_each_once
.. autofunction:: device_index
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyopencl as cl


if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


__all__ = ["device_index", "launch_each_once"]


def device_index(device: cl.Device) -> tuple[int, int]:
    """The numbers of *device*'s platform and of *device* on it, by which
    another process finds it (``cl.get_platforms()[p].get_devices()[d]``)."""
    platforms = cl.get_platforms()
    platform = platforms.index(device.platform)
    return platform, platforms[platform].get_devices().index(device)


def launch_each_once(ctx: cl.Context, kernels: Mapping[str, cl.Kernel],
                     specs: Iterable[tuple[str, tuple[int, ...],
                                           tuple[int, ...]]]) -> None:
    """Launch each kernel of *specs* (``(name, byte sizes of its
    arguments, work-group size)``, in their order) from *kernels* (by
    name) once, as one work group of its work-group size, on buffers of
    the sizes of its arguments (shared by equal sizes; their values
    unset) in the context *ctx*, so that the device compiles it. What the
    kernels compute is thrown away."""
    queue = cl.CommandQueue(ctx)
    buffers: dict[int, cl.Buffer] = {}
    for name, sizes, lsize in specs:
        args = []
        for nbytes in sizes:
            if nbytes not in buffers:
                buffers[nbytes] = cl.Buffer(ctx, cl.mem_flags.READ_WRITE,
                                            max(nbytes, 8))
            args.append(buffers[nbytes])
        kernel = kernels[name]
        kernel.set_args(*args)
        cl.enqueue_nd_range_kernel(queue, kernel, lsize, lsize)
        queue.finish()
