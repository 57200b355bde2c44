"""Tests of :mod:`pytato.target.loopy.build.cl_target`: kernels with many
arguments declare their pointers without ``restrict``."""

from __future__ import annotations

import re

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.target.loopy.build.cl_target import (
    GPU_MAX_RESTRICT_ARGUMENTS,
    MAX_RESTRICT_ARGUMENTS,
    PytatoPyOpenCLTarget,
)
from pytato.target.loopy.build.preprocessing import (
    generate_code,
    preprocess_and_linearize,
)


def _weighted_sum(n: int) -> tuple[list[pt.Array], pt.Array]:
    xs = [pt.make_placeholder(f"x{i}", (5, 3), np.float64) for i in range(n)]
    result = xs[0]
    for i, x in enumerate(xs[1:]):
        result = result + (i + 2) * x
    return xs, result


def _signatures(code: str) -> list[str]:
    return re.findall(r"__kernel void[^{]*", code)


def _code(prg: pt.target.BoundProgram, target: lp.TargetBase | None = None
          ) -> str:
    t_unit = prg.program
    if target is not None:
        t_unit = t_unit.copy(target=target)
    return generate_code(preprocess_and_linearize(t_unit)).device_code()


@pytest.mark.parametrize("nargs", [3, MAX_RESTRICT_ARGUMENTS - 1,
                                   MAX_RESTRICT_ARGUMENTS,
                                   MAX_RESTRICT_ARGUMENTS + 5])
def test_restrict_up_to_the_limit(nargs):
    """Kernels of at most :data:`MAX_RESTRICT_ARGUMENTS` arguments keep
    ``restrict``; larger ones drop it from every pointer, the rest of the
    code being loopy's."""
    # nargs - 1 inputs and the output
    _, result = _weighted_sum(nargs - 1)
    prg = pt.generate_loopy(result)
    assert isinstance(prg.program.target, PytatoPyOpenCLTarget)
    code = _code(prg)
    reference = _code(prg, lp.PyOpenCLTarget())
    (sig,) = _signatures(code)
    assert sig.count("__global") == nargs
    if nargs <= MAX_RESTRICT_ARGUMENTS:
        assert code == reference
        assert sig.count("__restrict__") == nargs
    else:
        assert "__restrict__" not in code
        assert code == reference.replace("__restrict__ ", "")
        # inputs stay const
        assert sig.count("double const *") == nargs - 1


def test_large_kernels_run(queue):
    """A kernel of many arguments without ``restrict``, and global
    temporaries in a kernel of many arguments, compute what numpy does."""
    n = MAX_RESTRICT_ARGUMENTS + 8
    xs, result = _weighted_sum(n)
    # stored intermediates read by a later kernel, with all the inputs
    stored = [(x * x).tagged(pt.tags.ImplStored()) for x in xs]
    total = result + sum(stored[1:], stored[0]) + pt.sum(result, axis=0)
    prg = pt.generate_loopy({"a": total, "b": result})
    code = _code(prg)
    assert any("__restrict__" not in s and s.count("__global") > n
               for s in _signatures(code))
    rng = np.random.default_rng(3)
    values = {f"x{i}": rng.random((5, 3)) for i in range(n)}
    _, out = prg(queue, **values)
    ref = values["x0"].copy()
    for i in range(1, n):
        ref = ref + (i + 1) * values[f"x{i}"]
    squares = sum(v * v for v in values.values())
    np.testing.assert_allclose(out["b"], ref, rtol=1e-13)
    np.testing.assert_allclose(out["a"], ref + squares + ref.sum(axis=0),
                               rtol=1e-13)


def test_target_equality_and_pickling():
    """The target compares, hashes and pickles as a loopy target of its
    own class, with its limit (programs' on-disk cache keys depend on
    it)."""
    import pickle
    a, b = PytatoPyOpenCLTarget(), PytatoPyOpenCLTarget()
    assert a == b and hash(a) == hash(b)
    assert a != lp.PyOpenCLTarget()
    c = PytatoPyOpenCLTarget(max_restrict_arguments=GPU_MAX_RESTRICT_ARGUMENTS)
    assert a != c
    from loopy.tools import LoopyKeyBuilder
    key = LoopyKeyBuilder()
    assert key(a) == key(b) != key(c)
    assert pickle.loads(pickle.dumps(a)) == a
    assert pickle.loads(pickle.dumps(c)) == c


def test_gpu_limit():
    """Programs for a GPU keep ``restrict`` up to
    :data:`GPU_MAX_RESTRICT_ARGUMENTS` arguments."""
    from pytato.target.loopy.schedule.default import DeviceInfo
    gpu = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024)
    cpu = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=256)
    _, result = _weighted_sum(MAX_RESTRICT_ARGUMENTS + 5)
    for device, limit in [(gpu, GPU_MAX_RESTRICT_ARGUMENTS),
                          (cpu, MAX_RESTRICT_ARGUMENTS),
                          (None, MAX_RESTRICT_ARGUMENTS)]:
        prg = pt.generate_loopy(result, cl_device=device)
        assert prg.program.target.max_restrict_arguments == limit
        assert ("__restrict__" in _code(prg)) == (limit == GPU_MAX_RESTRICT_ARGUMENTS)
    _, result = _weighted_sum(GPU_MAX_RESTRICT_ARGUMENTS + 5)
    assert "__restrict__" not in _code(pt.generate_loopy(result, cl_device=gpu))


def test_target_key_includes_pytato_sources(monkeypatch):
    """loopy's on-disk caches key code by the target's persistent hash:
    it includes a digest of pytato's sources, whose functions and AST
    builder the code comes from."""
    from loopy.tools import LoopyKeyBuilder

    from pytato.target.loopy.build import cl_target
    key = LoopyKeyBuilder()(cl_target.PytatoPyOpenCLTarget())
    assert LoopyKeyBuilder()(cl_target.PytatoPyOpenCLTarget()) == key
    monkeypatch.setattr(cl_target, "_source_digest", lambda: "other sources")
    assert LoopyKeyBuilder()(cl_target.PytatoPyOpenCLTarget()) != key


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_narrow_signed_wrap_not_inlined(queue, dtype):
    """The wrap-around of signed char/short arithmetic is a call of a
    function computing in uint (NVIDIA's compiler miscompiled it inlined):
    numpy's values at the ends of the range."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, info.max, -1, 0, 1], dtype)
    xp = pt.make_placeholder("x", x.shape, x.dtype)
    prog = pt.generate_loopy({"s": pt.sum(-xp), "c": (xp * 3 < xp)})
    code = prog.get_code()
    ctype = {1: "char", 2: "short"}[np.dtype(dtype).itemsize]
    assert f"__attribute__((noinline)) {ctype} _pt_wrap_{ctype}(uint v)" in code
    _, out = prog(queue, x=x)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out["s"], np.sum(-x))
        np.testing.assert_array_equal(out["c"], x * 3 < x)


def test_shorter_mapper_keys_same_code_and_restored():
    """Under :class:`ShorterMapperKeys` pymbolic's memoizing mappers key
    their memos without the empty keyword arguments; the method is put
    back when the last context closes, and the code is the same as with
    pymbolic's keys."""
    from pymbolic.mapper import CachedMapper, IdentityMapper

    from pytato.target.loopy.build import preprocessing

    original = CachedMapper.__dict__["get_cache_key"]
    _, result = _weighted_sum(6)
    t_unit = pt.generate_loopy(pt.sin(result) + pt.sum(result)).program

    class Counting(CachedMapper, IdentityMapper):
        pass

    x = prim.Variable("x")
    expr = prim.Sum((prim.Product((2, x)), prim.Product((2, x))))
    with preprocessing.ShorterMapperKeys():
        assert CachedMapper.get_cache_key is not original
        with preprocessing.ShorterMapperKeys():
            mapper = Counting()
            assert mapper(expr) == expr
            # the sum, the product (once), 2 and x
            assert len(mapper._cache) == 4
            assert (type(x), x, ()) in mapper._cache
        assert CachedMapper.get_cache_key is not original
        ours = lp.generate_code_v2(lp.linearize(lp.preprocess_program(
            t_unit))).device_code()
    assert CachedMapper.__dict__["get_cache_key"] is original
    theirs = lp.generate_code_v2(lp.linearize(lp.preprocess_program(
        t_unit))).device_code()
    assert ours == theirs
    # a keyword argument keeps it in the key
    with preprocessing.ShorterMapperKeys():
        key = Counting().get_cache_key(x, flag=True)
    assert key[:3] == (type(x), x, ()) and dict(key[3]) == {"flag": True}


def test_target_functions_hashable_for_loopy(queue):
    """The target's functions give loopy hashable argument types
    (``constantdict``): loopy deprecates others ("will stop working in
    2026")."""
    import warnings

    import loopy as lp
    x = pt.make_placeholder("x", (5,), np.float64)
    n = pt.make_placeholder("n", (5,), np.int32)
    z = pt.make_placeholder("z", (5,), np.complex128)
    graph = {"a": z * z / (z + 1), "b": abs(z) + pt.exp(z).real,
             "c": x.astype(np.complex64) * z, "d": n // 3 + n % 4 + n ** 2,
             "e": pt.sqrt(z) + x, "f": x ** n, "g": (x + 1j * x) ** 2}
    rng = np.random.default_rng(3)
    inputs = {"x": rng.uniform(1, 2, 5), "n": np.arange(5, dtype=np.int32),
              "z": rng.uniform(1, 2, 5) + 1j * rng.uniform(1, 2, 5)}
    with warnings.catch_warnings(record=True) as caught, \
            lp.CacheMode(False):
        warnings.simplefilter("always")
        _, out = pt.generate_loopy(graph)(queue, **inputs)
    assert not [w for w in caught if "hashable" in str(w.message)]
    np.testing.assert_allclose(out["a"], inputs["z"] ** 2 / (inputs["z"] + 1))
