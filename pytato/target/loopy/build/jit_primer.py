"""Kernels compiled for their launch ahead of the first call, in a second
process, on CPU devices.

PoCL, the CPU OpenCL device, builds a program's source when it is built,
but compiles each kernel's *work-group function* (the kernel for one
work-group size) only when the kernel is first launched, one kernel after
another whatever the number of threads or queues: for the 10 000-node
random DAG of ``benchmarks/bench_codegen.py``, a large part of its first
call. PoCL keeps these compiled functions in
its on-disk kernel cache, keyed by the program, the kernel and its
work-group size (not by the number of work groups), and so does a
process that launches the same kernels.

Where the calling process has just generated a program of at least
:data:`MIN_KERNELS` device kernels for a CPU device, :func:`start_primer`
starts a Python process (importing only :mod:`pyopencl`) that builds the
same sources (found in :mod:`pyopencl`'s binary cache) and launches each
kernel once, as one work group of its work-group size, on buffers of the
sizes of the program's arrays, in the reverse order of the program's
launches. The first call launches them in order: the two processes meet
in the middle, and the kernels compiled by one are cache hits for the
other. What the second process computes is thrown away (its buffers are
its own, of unset values); if it fails, the first call compiles what is
left itself.

Programs whose arrays or launches depend on values known only at the call
(symbolic sizes), or whose arrays take more than :data:`MAX_BYTES`, are
not primed. :data:`PRIME_ENV` set to ``0`` turns this off, ``1`` on for
every device.

.. autodata:: PRIME_ENV
.. autodata:: MIN_KERNELS
.. autodata:: MAX_BYTES
.. autofunction:: launch_specs
.. autofunction:: enabled
.. autofunction:: wanted
.. autofunction:: start_primer
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import subprocess
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl

from pytato.diagnostic import UnsupportedByTargetError
from pytato.target.loopy.build import launch_once
from pytato.target.loopy.build.child_processes import start_child
from pytato.target.loopy.build.subkernels import linearized_subkernels


if TYPE_CHECKING:
    import loopy as lp
else:
    from pytato.lazy_imports import lazy_module
    lp = lazy_module("loopy")


__all__ = ["MAX_BYTES", "MIN_KERNELS", "PRIME_ENV", "enabled",
           "launch_specs", "start_primer", "wanted"]

_logger = logging.getLogger("pytato.target.loopy")

#: Environment variable: ``0`` no priming, ``1`` priming on every device
#: (unset: on CPU devices).
PRIME_ENV = "PYTATO_PRIME_KERNELS"

#: Programs of fewer device kernels than this are not primed: a second
#: process costs more CPU time to start than priming a few kernels saves.
MIN_KERNELS = 16

#: Programs whose arrays take more bytes than this in all are not primed
#: (the second process allocates them all).
MAX_BYTES = 256 * 2**20

#: A launch: the kernel's name, its arguments (the byte size of each
#: buffer), its work-group size.
LaunchSpec = tuple[str, tuple[int, ...], tuple[int, ...]]


def _nbytes(var: Any) -> int | None:
    """The bytes an array argument or temporary spans, if its shape and
    strides are constant."""
    shape = var.shape
    if not isinstance(shape, tuple) or not all(
            isinstance(n, (int, np.integer)) for n in shape):
        return None
    itemsize = var.dtype.numpy_dtype.itemsize
    tags = var.dim_tags or ()
    if len(tags) == len(shape) and all(
            isinstance(t, lp.kernel.array.FixedStrideArrayDimTag)
            and isinstance(t.stride, (int, np.integer)) for t in tags):
        if any(n == 0 for n in shape):
            return itemsize
        return itemsize * (1 + sum((int(n) - 1) * int(t.stride)
                                   for n, t in zip(shape, tags, strict=True)))
    size = 1
    for n in shape:
        size *= int(n)
    return itemsize * max(size, 1)


def launch_specs(t_unit: lp.TranslationUnit) -> list[LaunchSpec] | None:
    """The device kernels of the linearized *t_unit* (one kernel) in launch
    order, with the byte sizes of their buffers and their work-group
    sizes; None if one of them needs a value known only at the call (a
    value argument, a symbolic size or work-group size) or if the arrays
    take more than :data:`MAX_BYTES`."""
    knl = t_unit.default_entrypoint
    if knl.linearization is None:
        return None
    try:
        subkernels = linearized_subkernels(knl, t_unit.callables_table)
    except UnsupportedByTargetError:
        return None
    variables = {**knl.arg_dict, **knl.temporary_variables}
    specs = []
    total: dict[str, int] = {}
    for sub in subkernels:
        sizes = []
        for name in sub.arg_names:
            var = variables.get(name)
            if var is None or isinstance(var, lp.ValueArg):
                return None
            nbytes = _nbytes(var)
            if nbytes is None:
                return None
            sizes.append(nbytes)
            total[name] = nbytes
        lsize = sub.local_size
        if not all(isinstance(n, (int, np.integer)) for n in lsize):
            return None
        # as many dimensions as the program's launch
        dims = max(len(sub.group_count), len(lsize), 1)
        specs.append((sub.name, tuple(sizes),
                      tuple(int(n) for n in lsize)
                      + (1,) * (dims - len(lsize))))
    if sum(total.values()) > MAX_BYTES:
        return None
    return specs


# the second process: reads (path of launch_once.py, platform number,
# device number, sources, build options, launch specs) pickled on stdin;
# builds the sources and launches each kernel once, last first, as one
# work group (launch_once is loaded from its file: importing it from
# pytato would import pytato and loopy)
_PRIMER = """
import importlib.util, pickle, sys
import pyopencl as cl
path, platform, device, sources, options, specs = pickle.load(sys.stdin.buffer)
spec = importlib.util.spec_from_file_location("_pt_launch_once", path)
launch_once = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launch_once)
device = cl.get_platforms()[platform].get_devices()[device]
ctx = cl.Context([device])
kernels = {}
for source in sources:
    program = cl.Program(ctx, source).build(options=options)
    for name in program.kernel_names.split(";"):
        if name:
            kernels[name] = getattr(program, name)
launch_once.launch_each_once(ctx, kernels, reversed(specs))
"""

_RUNNING: list[subprocess.Popen[bytes]] = []


def _reap(kill: bool = False) -> None:
    for proc in list(_RUNNING):
        if kill and proc.poll() is None:
            proc.kill()
        if kill or proc.poll() is not None:
            proc.wait()
            _RUNNING.remove(proc)


atexit.register(_reap, True)


def enabled(device: cl.Device) -> bool:
    """Whether kernels for *device* are primed (:data:`PRIME_ENV`, else
    on CPU devices)."""
    env = os.environ.get(PRIME_ENV, "").strip()
    if env in ("0", "1"):
        return env == "1"
    return bool(device.type & cl.device_type.CPU)


def wanted(device: cl.Device, nkernels: int) -> bool:
    """Whether a program of *nkernels* device kernels just generated for
    *device* is primed (:func:`enabled`, :data:`MIN_KERNELS`)."""
    return enabled(device) and nkernels >= MIN_KERNELS


def start_primer(device: cl.Device, sources: Sequence[str],
                 options: str | Sequence[str] | None,
                 specs: Sequence[LaunchSpec]
                 ) -> subprocess.Popen[bytes] | None:
    """Start the second process (see the module documentation) for the
    kernels of *specs*, built from *sources* with the build *options* on
    *device*; return it (it exits when done; the process is killed at
    the exit of the calling process if it still runs, and exits when the
    calling process dies, see
    :mod:`~pytato.target.loopy.build.child_processes`), or None if it
    could not start."""
    platform, index = launch_once.device_index(device)
    _reap()
    data = pickle.dumps((launch_once.__file__, platform, index,
                         list(sources), options, list(specs)))
    try:
        proc = start_child(_PRIMER, stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    except OSError as e:
        _logger.info("kernel primer not started: %s", e)
        return None

    def write() -> None:
        # (in a thread: the process reads its input after importing
        # pyopencl, and the input is larger than a pipe holds)
        assert proc.stdin is not None
        try:
            proc.stdin.write(data)
            proc.stdin.close()
        except OSError:  # it died: the first call compiles the rest
            pass

    threading.Thread(target=write, daemon=True,
                     name="pytato-primer-input").start()
    _RUNNING.append(proc)
    _logger.info("started a process compiling %d kernels, last first",
                 len(specs))
    return proc

# vim: foldmethod=marker
