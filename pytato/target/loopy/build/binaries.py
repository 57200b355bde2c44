"""Device binaries of built programs, kept in the program store.

:mod:`pyopencl` keeps no binaries for devices whose driver caches builds
from source itself (NVIDIA's, PoCL's). A build from source that hits the
driver's cache still costs the driver's lookup, which on NVIDIA's
driver takes several times as long as a build from the program's binary
(for the many programs of the 10 000-node DAG of
``benchmarks/bench_codegen.py``, even in threads).
:func:`build_programs` builds from the binaries that an earlier build of
the same source saved in the program store
(:mod:`~pytato.target.loopy.store.program_store`), for the same device,
driver and options, and saves them after builds from source, on the
devices where reading a program's binary is cheap
(:func:`binaries_cheap`: GPUs other than PoCL's). On PoCL's CPU device,
building from binaries saves little, but reading the binaries of a
program just built is slow in a cold process (PoCL compiles every kernel
for them).

Programs are built with :func:`device_build_options`: the user's options,
and correctly rounded ``float`` division and square roots where the
devices support them (numpy's results).

.. autofunction:: build_programs
.. autofunction:: binary_key
.. autofunction:: binaries_cheap
.. autofunction:: device_build_options
.. autodata:: CORRECTLY_ROUNDED_OPTION
"""

from __future__ import annotations

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyopencl as cl

import pytato.target.loopy.store.program_store as program_store


if TYPE_CHECKING:
    from collections.abc import Sequence


_logger = logging.getLogger("pytato.target.loopy")

# (the layout of the key; part of it)
_BINARY_KEY_VERSION = 1


def binary_key(device: cl.Device, options: str | Sequence[str] | None,
               source: str) -> str:
    """The key of the binary of *source* built with *options* for *device*:
    a hash of them and of the device's platform, name, version and driver
    version."""
    if options is None:
        options = ()
    elif isinstance(options, str):
        options = (options,)
    platform = device.platform
    parts = (f"binary-v{_BINARY_KEY_VERSION}", platform.name, platform.version,
             device.name, device.version, device.driver_version,
             *options, source)
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def binaries_cheap(device: cl.Device) -> bool:
    """Whether :func:`build_programs` keeps the binaries of programs for
    *device*: a GPU, not of PoCL."""
    return bool(device.type & cl.device_type.GPU) \
        and device.platform.name != "Portable Computing Language"


#: the build option that makes ``float`` division and square roots
#: correctly rounded, as numpy's (OpenCL allows 2.5 ulp for division and 3
#: for ``sqrt``: NVIDIA's ``1e30f // -7.25f`` was one ulp off numpy's)
CORRECTLY_ROUNDED_OPTION = "-cl-fp32-correctly-rounded-divide-sqrt"

# whether a device (by its handle) reports correctly rounded float division
_CORRECTLY_ROUNDED: dict[int, bool] = {}


def device_build_options(devices: Sequence[cl.Device],
                         options: str | Sequence[str] | None
                         ) -> list[str]:
    """The build *options* for programs on *devices*, with
    :data:`CORRECTLY_ROUNDED_OPTION` added where every device supports it
    (``CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT``) and it is not there."""
    if options is None:
        result = []
    elif isinstance(options, str):
        result = [options]
    else:
        result = list(options)
    if devices and all(_correctly_rounded(d) for d in devices) \
            and CORRECTLY_ROUNDED_OPTION not in result:
        result.append(CORRECTLY_ROUNDED_OPTION)
    return result


def _correctly_rounded(device: cl.Device) -> bool:
    key = device.int_ptr
    supported = _CORRECTLY_ROUNDED.get(key)
    if supported is None:
        try:
            supported = bool(device.single_fp_config
                             & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        except (cl.Error, AttributeError):  # pragma: no cover
            supported = False
        _CORRECTLY_ROUNDED[key] = supported
    return supported


def _build(context: cl.Context, source: str,
           options: str | Sequence[str] | None,
           binary: bytes | None) -> tuple[cl.Program, bool]:
    """The program of *source* (from *binary* where given and usable) and
    whether it was built from source."""
    if binary is not None:
        try:
            return cl.Program(context, list(context.devices), [binary]).build(
                options=options), False
        except (cl.Error, RuntimeError) as e:
            _logger.debug("building from a stored binary failed (%s); "
                          "building from source", e)
    return cl.Program(context, source).build(options=options), True


def build_programs(context: cl.Context, sources: Sequence[str],
                   options: str | Sequence[str] | None = None,
                   threads: int | None = None) -> list[cl.Program]:
    """The programs of *sources* built on *context* with the build
    *options*, several at once (in up to *threads* threads, by default one
    a source: :mod:`pyopencl` releases the GIL while the driver builds).
    For a context of one device (for which :func:`binaries_cheap`), with
    the program store on, each is built from the binary saved by an
    earlier build of its source for that device (its binary is saved
    after a build from source). Build errors
    are raised as by :meth:`pyopencl.Program.build`."""
    devices = context.devices
    keys: list[str | None] = [None] * len(sources)
    binaries: list[bytes | None] = [None] * len(sources)
    if len(devices) == 1 and program_store.store_enabled() \
            and binaries_cheap(devices[0]):
        keys = [binary_key(devices[0], options, s) for s in sources]
        binaries = [program_store.load(k, "binary") for k in keys]

    def build(i: int) -> tuple[cl.Program, bool]:
        return _build(context, sources[i], options, binaries[i])

    nthreads = min(len(sources), threads or len(sources))
    if nthreads <= 1:
        results = [build(i) for i in range(len(sources))]
    else:
        with ThreadPoolExecutor(nthreads,
                                thread_name_prefix="pytato-build") as pool:
            results = list(pool.map(build, range(len(sources))))
    for key, (program, from_source) in zip(keys, results, strict=True):
        if key is not None and from_source:
            try:
                (binary,) = program.get_info(cl.program_info.BINARIES)
            except (cl.Error, ValueError):  # pragma: no cover
                continue
            if binary:
                program_store.save(key, "binary", bytes(binary))
    return [program for program, _ in results]


# vim: foldmethod=marker
