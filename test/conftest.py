"""Shared pytest fixtures: OpenCL contexts and queues.

Device selection, in order of precedence:

* ``PYOPENCL_TEST``: pyopencl's test syntax, e.g. ``portable:cpu`` or
  ``0:1``; the first matching device is used.
* ``PYOPENCL_CTX``: pyopencl's context syntax, as for
  :func:`pyopencl.create_some_context`.
* otherwise the first CPU device, preferring PoCL ("Portable Computing
  Language"), then any device.

When no OpenCL device can be found the tests that use these fixtures fail,
unless ``PYTATO_ALLOW_NO_OPENCL=1`` is set, in which case they are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest


if TYPE_CHECKING:
    import pyopencl as cl


os.environ.setdefault("PYOPENCL_COMPILER_OUTPUT", "0")


def _own_program_store() -> None:
    """Give this test process a new, empty persistent program store
    (:mod:`pytato.target.loopy.store.program_store`), removed at exit: tests
    must not find programs that other runs stored."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="pytato-test-program-store-")
    os.environ["PYTATO_PROGRAM_STORE_DIR"] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


_own_program_store()

_POCL_PLATFORM_NAME = "Portable Computing Language"


def _pick_device() -> cl.Device:
    import pyopencl as cl

    if os.environ.get("PYOPENCL_TEST"):
        from pyopencl.tools import get_test_platforms_and_devices

        for _, devices in get_test_platforms_and_devices():
            if devices:
                return devices[0]
        raise RuntimeError(
            f"PYOPENCL_TEST={os.environ['PYOPENCL_TEST']!r} matched no device"
        )

    if os.environ.get("PYOPENCL_CTX"):
        return cl.create_some_context(interactive=False).devices[0]

    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise RuntimeError("OpenCL platforms were found, but no devices")

    def rank(dev: cl.Device) -> tuple[bool, bool]:
        return (
            not (dev.type & cl.device_type.CPU),
            _POCL_PLATFORM_NAME not in dev.platform.name,
        )

    return min(devices, key=rank)


class _ContextFactory:
    """Callable returning a new :class:`pyopencl.Context` on one device."""

    def __init__(self, device: cl.Device) -> None:
        self.device = device

    def __call__(self) -> cl.Context:
        import pyopencl as cl

        return cl.Context([self.device])

    def __str__(self) -> str:
        return (
            f"<context factory for {self.device.name} on {self.device.platform.name}>"
        )


@pytest.fixture(scope="session")
def ctx_factory() -> Callable[[], cl.Context]:
    """Return a callable that creates a context on the test device."""
    try:
        device = _pick_device()
    except Exception as e:
        msg = f"no usable OpenCL device ({type(e).__name__}: {e})"
        if os.environ.get("PYTATO_ALLOW_NO_OPENCL") == "1":
            pytest.skip(msg + "; skipped since PYTATO_ALLOW_NO_OPENCL=1")
        selected = [
            f"{var}={os.environ[var]!r}"
            for var in ("PYOPENCL_TEST", "PYOPENCL_CTX")
            if os.environ.get(var)
        ]
        hint = (
            f"check {' and '.join(selected)}"
            if selected
            else "run 'bash scripts/setup.sh' to install PoCL"
        )
        pytest.fail(
            f"{msg}. To fix, {hint}, "
            "or set PYTATO_ALLOW_NO_OPENCL=1 to skip OpenCL tests."
        )
    return _ContextFactory(device)


@pytest.fixture(scope="session")
def cl_ctx(ctx_factory: Callable[[], cl.Context]) -> cl.Context:
    """The OpenCL context shared by all tests of the session."""
    return ctx_factory()


@pytest.fixture
def queue(cl_ctx: cl.Context) -> Iterator[cl.CommandQueue]:
    """A fresh command queue on the session context."""
    import pyopencl as cl

    q = cl.CommandQueue(cl_ctx)
    yield q
    q.finish()


def pytest_report_header(config: pytest.Config) -> str:
    try:
        dev = _pick_device()
    except Exception as e:
        return f"OpenCL: no device ({type(e).__name__}: {e})"
    return f"OpenCL device: {dev.platform.name} / {dev.name}"
