"""Device binaries kept in the program store
(:mod:`pytato.target.loopy.build.binaries`): later builds of the same source
for the same device and options are built from them, with the same
kernels; unusable binaries and the store switched off fall back to builds
from source; build errors are raised as before."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from pytato.target.loopy.build import binaries
from pytato.target.loopy.store import program_store


_SOURCE = """
__kernel void scale(__global double *out, __global const double *x)
{
    int i = get_global_id(0);
    out[i] = SCALE * x[i];
}
"""


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A new, empty program store in *tmp_path*; binaries kept for every
    device (PoCL's too, which :func:`binaries.binaries_cheap` leaves out:
    reading them is slow, not wrong)."""
    monkeypatch.setenv("PYTATO_PROGRAM_STORE_DIR", str(tmp_path))
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE", raising=False)
    monkeypatch.setattr(program_store, "_STORE", [])
    monkeypatch.setattr(binaries, "binaries_cheap", lambda device: True)
    return tmp_path


@pytest.fixture
def builds(monkeypatch):
    """The ``from_source`` flags of the builds of :mod:`binaries`."""
    flags: list[bool] = []
    real = binaries._build

    def build(*args):
        program, from_source = real(*args)
        flags.append(from_source)
        return program, from_source

    monkeypatch.setattr(binaries, "_build", build)
    return flags


def _scaled(queue: cl.CommandQueue, program: cl.Program) -> np.ndarray:
    x = cla.to_device(queue, np.arange(8.0))
    out = cla.empty_like(x)
    cl.Kernel(program, "scale")(queue, (8,), None, out.data, x.data)
    return out.get()


def test_built_from_stored_binaries(cl_ctx, store, builds):
    queue = cl.CommandQueue(cl_ctx)
    sources = [_SOURCE, _SOURCE + "\n// another program\n"]
    for scale in (2, 3):  # (other options: other binaries)
        del builds[:]
        options = [f"-DSCALE={scale}"]
        for _ in range(2):
            programs = binaries.build_programs(cl_ctx, sources, options)
            for program in programs:
                np.testing.assert_array_equal(_scaled(queue, program),
                                              scale * np.arange(8.0))
        assert builds == [True, True, False, False], scale
    device = cl_ctx.devices[0]
    keys = {binaries.binary_key(device, o, s)
            for o in ("-DSCALE=2", ["-DSCALE=2"], ["-DSCALE=3"], None)
            for s in sources}
    assert len(keys) == 6  # (a string and a list of one option agree)


def test_unusable_binary_built_from_source(cl_ctx, store, builds):
    queue = cl.CommandQueue(cl_ctx)
    options = ["-DSCALE=5"]
    key = binaries.binary_key(cl_ctx.devices[0], options, _SOURCE)
    program_store.save(key, "binary", b"not a binary")
    (program,) = binaries.build_programs(cl_ctx, [_SOURCE], options)
    assert builds == [True]
    np.testing.assert_array_equal(_scaled(queue, program), 5 * np.arange(8.0))


def test_without_store(cl_ctx, store, builds, monkeypatch):
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    for _ in range(2):
        binaries.build_programs(cl_ctx, [_SOURCE], ["-DSCALE=2"])
    assert builds == [True, True]
    monkeypatch.delenv("PYTATO_NO_PROGRAM_STORE")
    key = binaries.binary_key(cl_ctx.devices[0], ["-DSCALE=2"], _SOURCE)
    assert program_store.load(key, "binary") is None


def test_build_errors_raised(cl_ctx, store):
    with pytest.raises((cl.Error, RuntimeError)):
        binaries.build_programs(cl_ctx, ["__kernel void f() { nonsense }"])


def test_binaries_kept_for_gpus_not_pocl():
    class Platform:
        def __init__(self, name: str) -> None:
            self.name = name

    class Device:
        def __init__(self, kind: int, platform: str) -> None:
            self.type = kind
            self.platform = Platform(platform)

    gpu, cpu = cl.device_type.GPU, cl.device_type.CPU
    assert binaries.binaries_cheap(Device(gpu, "NVIDIA CUDA"))
    assert not binaries.binaries_cheap(Device(cpu, "Intel(R) OpenCL"))
    assert not binaries.binaries_cheap(
        Device(cpu, "Portable Computing Language"))
    assert not binaries.binaries_cheap(
        Device(gpu, "Portable Computing Language"))


def test_correctly_rounded_float_division_option(cl_ctx):
    """Programs are built with ``-cl-fp32-correctly-rounded-divide-sqrt``
    on devices that support it (once, whatever the user's options)."""
    dev = cl_ctx.devices[0]
    supported = bool(dev.single_fp_config
                     & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    flag = binaries.CORRECTLY_ROUNDED_OPTION
    for options in (None, "-cl-mad-enable", ["-DX=1", flag]):
        got = binaries.device_build_options(cl_ctx.devices, options)
        assert got.count(flag) == int(supported or (
            isinstance(options, list) and flag in options))
    assert binaries.device_build_options([], None) == []


def test_float32_division_and_sqrt_as_numpy(queue):
    """float32 ``/``, ``//``, ``%`` and ``sqrt`` equal numpy's bit for bit
    on devices with correctly rounded division (NVIDIA's default division
    is within 2.5 ulp)."""
    import pytato as pt
    dev = queue.device
    if not dev.single_fp_config \
            & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
        pytest.skip("the device has no correctly rounded float division")
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(4096) * 10.0 ** rng.integers(-20, 20, 4096)
         ).astype(np.float32)
    b = (rng.standard_normal(4096) * 10.0 ** rng.integers(-20, 20, 4096)
         ).astype(np.float32)
    x = pt.make_placeholder("x", a.shape, np.float32)
    y = pt.make_placeholder("y", b.shape, np.float32)
    _, got = pt.generate_loopy({"q": x / y, "f": x // y, "r": x % y,
                                "s": pt.sqrt(pt.abs(x))})(queue, x=a, y=b)
    with np.errstate(all="ignore"):
        refs = {"q": a / b, "f": a // b, "r": a % b, "s": np.sqrt(np.abs(a))}
    for k, ref in refs.items():
        np.testing.assert_array_equal(got[k], ref, err_msg=k)
