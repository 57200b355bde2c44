"""Tests of small contractions on GPUs
(:mod:`pytato.target.loopy.schedule.gpu_contractions`): the GPU schedule
run on the OpenCL device of the tests against numpy, for the einsum forms
of DG codes over dtypes, the matrix sizes of simplices of orders 1 to 4,
empty and symbolic element counts, the lift with an inlined flux and the
DG operators of the peers benchmark; which nests take the schedule; and
what its code does."""

from __future__ import annotations

import re
import sys
from math import comb
from pathlib import Path
from typing import Any

import loopy as lp
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.target.loopy import PROGRAM_CACHE
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.schedule import gpu_contractions
from pytato.target.loopy.schedule.gpu_contractions import plan_gpu_contraction


#: a small GPU (work-groups the CPU device of the tests runs)
GPU = DeviceInfo(kind="gpu", compute_units=4, max_work_group_size=256,
                 name="small GPU")
#: the forms with a shared matrix and per-element values
SHARED = ["ij,ej->ei", "ji,ej->ei", "ij,ejk->eik", "ifj,fej->ei"]
#: the tiling keeps the forms of one reduction iname
OVER_TILING = {"ifj,fej->ei"}


@pytest.fixture(autouse=True)
def _fresh_programs() -> Any:
    """Programs generated here, not found in the in-memory cache (which
    does not key the constants that tests change)."""
    PROGRAM_CACHE.clear()
    yield
    PROGRAM_CACHE.clear()


def _rtol(dtype: Any) -> float:
    return 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-11


def _random(rng: np.random.Generator, shape: tuple[int, ...],
            dtype: Any) -> np.ndarray:
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _operands(spec: str, sizes: dict[str, int], dtype: Any
              ) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    ins = spec.split("->")[0].split(",")
    return [_random(rng, tuple(sizes[c] for c in s), dtype) for s in ins]


def _taken(prog: Any) -> int:
    """The number of nests of *prog* computed as small contractions on a
    GPU (each has one group iname of its own)."""
    knl = prog.program.default_entrypoint
    return sum(name.endswith("_cgroup") for name in knl.inames)


def _run(queue: cl.CommandQueue, expr: Any, inputs: dict[str, Any]
         ) -> tuple[dict[str, np.ndarray], Any]:
    with lp.CacheMode(False):
        prog = pt.generate_loopy(expr, cl_device=GPU)
    _, res = prog(queue, **{k: cla.to_device(queue, v)
                            for k, v in inputs.items()})
    if not hasattr(res, "keys"):
        res = {"out": res[0] if isinstance(res, tuple) else res}
    return {k: np.asarray(v.get() if hasattr(v, "get") else v)
            for k, v in res.items()}, prog


def _check(got: np.ndarray, want: np.ndarray, rtol: float) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol,
                               atol=rtol * np.abs(want).max(initial=0))


def _einsum(queue: cl.CommandQueue, spec: str, operands: list[np.ndarray],
            shapes: list[tuple[Any, ...]] | None = None) -> int:
    """Check ``einsum(spec)`` against numpy; the number of nests taken."""
    names = [f"a{k}" for k in range(len(operands))]
    placeholders = [
        pt.make_placeholder(n, x.shape if shapes is None else s, x.dtype)
        for n, x, s in zip(names, operands, shapes or [None] * len(names),
                           strict=True)]
    got, prog = _run(queue, pt.einsum(spec, *placeholders),
                     dict(zip(names, operands, strict=True)))
    want = np.einsum(spec, *operands)
    _check(got["out"], want, _rtol(want.dtype))
    return _taken(prog)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("spec", [*SHARED, "eij,ej->ei"])
def test_forms_match_numpy(queue: cl.CommandQueue, spec: str, dtype: Any,
                           replace: bool,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every form, the last group's block cut at the end of the batch; the
    tiling keeps the forms of one reduction iname unless
    :data:`~pytato.target.loopy.schedule.gpu_contractions.REPLACE_TILING`;
    a matrix per element (no shared factor) is left alone."""
    monkeypatch.setattr(gpu_contractions, "REPLACE_TILING", replace)
    sizes = {"i": 20, "j": 20, "k": 3, "f": 4, "e": 1100}
    if spec == "ifj,fej->ei":
        sizes["j"] = 10
    taken = _einsum(queue, spec, _operands(spec, sizes, dtype))
    assert taken == (spec in SHARED and (replace or spec in OVER_TILING))


@pytest.mark.parametrize("spec", ["ifj,fej->ei", "ij,ejk->eik"])
def test_outputs_not_staged(queue: cl.CommandQueue, spec: str,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Each work-item storing its elements' outputs itself."""
    monkeypatch.setattr(gpu_contractions, "STAGE_OUTPUTS", False)
    monkeypatch.setattr(gpu_contractions, "REPLACE_TILING", True)
    sizes = {"i": 20, "j": 10, "k": 3, "f": 4, "e": 1001}
    assert _einsum(queue, spec, _operands(spec, sizes, np.float64)) == 1
    code = _code(spec, {**sizes, "e": 2**20})
    assert "__local" not in code
    assert "barrier(" not in code


@pytest.mark.parametrize(("dim", "order"),
                         [(d, p) for d in (2, 3) for p in (1, 2, 3, 4)])
def test_simplex_orders(queue: cl.CommandQueue, dim: int, order: int
                        ) -> None:
    lift = {"i": comb(order + dim, dim), "f": dim + 1,
            "j": comb(order + dim - 1, dim - 1), "e": 4097}
    assert _einsum(queue, "ifj,fej->ei",
                   _operands("ifj,fej->ei", lift, np.float64)) == 1


def test_several_batch_axes(queue: cl.CommandQueue) -> None:
    """Elements numbered flat over two batch axes."""
    sizes = {"i": 10, "f": 3, "j": 6, "a": 37, "b": 30}
    assert _einsum(queue, "ifj,fabj->abi",
                   _operands("ifj,fabj->abi", sizes, np.float64)) == 1


def test_no_elements(queue: cl.CommandQueue) -> None:
    sizes = {"i": 20, "j": 10, "f": 3, "e": 0}
    _einsum(queue, "ifj,fej->ei",
            _operands("ifj,fej->ei", sizes, np.float64))


@pytest.mark.parametrize("n_el", [0, 5, 100, 1001])
def test_symbolic_elements(queue: cl.CommandQueue, n_el: int) -> None:
    n = pt.make_size_param("n")
    sizes = {"i": 20, "j": 10, "f": 3, "e": n_el}
    symbolic = {**sizes, "e": n}
    shapes = [tuple(symbolic[c] for c in s) for s in ("ifj", "fej")]
    assert _einsum(queue, "ifj,fej->ei",
                   _operands("ifj,fej->ei", sizes, np.float64), shapes) == 1


def test_computed_factor(queue: cl.CommandQueue) -> None:
    """A per-element factor that is no plain access (``sin(u[e, j])``,
    one reduction iname): taken in place of the tiling, which would compute
    it once per output."""
    rng = np.random.default_rng(5)
    d, u = rng.standard_normal((20, 20)), rng.standard_normal((4100, 20))
    pd = pt.make_placeholder("d", d.shape, d.dtype)
    pu = pt.make_placeholder("u", u.shape, u.dtype)
    got, prog = _run(queue, pt.einsum("ij,ej->ei", pd, pt.sin(pu)),
                     {"d": d, "u": u})
    _check(got["out"], np.einsum("ij,ej->ei", d, np.sin(u)), 1e-11)
    assert _taken(prog) == 1


def _lift_graph(n_el: int, dtype: Any
                ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``volume - lift(flux)`` with the flux (gathered face values, an
    upwind choice) inlined in the sum; the placeholders' values."""
    rng = np.random.default_rng(3)
    n_vol, n_faces, n_face = 10, 4, 6
    values = {
        "lift": _random(rng, (n_vol, n_faces, n_face), dtype),
        "u": _random(rng, (n_el, n_vol), dtype),
        "c": _random(rng, (n_faces, n_el, 1), dtype),
        "volume": _random(rng, (n_el, n_vol), dtype),
        "idx": rng.integers(0, n_el * n_vol, (n_faces, n_el, n_face)),
    }

    def build(xp: Any, a: dict[str, Any]) -> Any:
        flat = a["u"].reshape(n_el * n_vol)
        u_ext = flat[a["idx"]]
        u_int = flat[a["idx"][::-1]]
        flux = 0.5 * a["c"] * (u_int + u_ext) + 0.5 * abs(a["c"]) * (
            u_int - u_ext)
        return a["volume"] - xp.einsum("ifj,fej->ei", a["lift"], flux)

    placeholders = {k: pt.make_placeholder(k, v.shape, v.dtype)
                    for k, v in values.items()}
    return {"pt": build(pt, placeholders), "np": build(np, values)}, values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inlined_lift(queue: cl.CommandQueue, dtype: Any) -> None:
    graphs, values = _lift_graph(1100, dtype)
    got, prog = _run(queue, graphs["pt"], values)
    _check(got["out"], graphs["np"], _rtol(dtype))
    assert _taken(prog) == 1


def _dg_workloads() -> dict[str, Any]:
    bench = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    from peers_dg import DG_FIELDS, WORKLOADS
    assert DG_FIELDS == 3
    return {w.name: w for w in WORKLOADS if w.name.startswith("dg operator")}


@pytest.mark.parametrize(("dim", "order"),
                         [(d, p) for d in (2, 3) for p in (1, 2, 3, 4)])
def test_dg_operators(queue: cl.CommandQueue, dim: int, order: int) -> None:
    """The DG operators of the peers benchmark (CPU sizes): the lift of
    each of the 3 fields is one nest taken here."""
    workload = _dg_workloads()[f"dg operator {dim}d p{order}"]
    values = workload.inputs(np.random.default_rng(0), False)
    placeholders = {k: pt.make_placeholder(k, v.shape, v.dtype)
                    for k, v in values.items()}
    got, prog = _run(queue, pt.make_dict_of_named_arrays(
        workload.build(pt, placeholders)), values)
    want = workload.build(np, values)
    for name, ref in want.items():
        _check(got[name], ref, workload.rtol)
    assert _taken(prog) == 3


def _code(spec: str, sizes: dict[str, int]) -> str:
    ins = spec.split("->")[0].split(",")
    args = [pt.make_placeholder(f"a{k}", tuple(sizes[c] for c in s),
                                np.float64) for k, s in enumerate(ins)]
    info = DeviceInfo(kind="gpu", compute_units=132,
                      max_work_group_size=1024)
    with lp.CacheMode(False):
        return pt.generate_loopy(pt.einsum(spec, *args),
                                 cl_device=info).get_code()


def test_code_of_the_lift() -> None:
    """``ifj,fej->ei`` (20 outputs, 40 terms): 64 work-items per group,
    2 elements each (40 accumulators), the per-element value loaded once
    per element and term, the 20 matrix values of a term used for both
    elements, the sums through local memory (rows padded to 21)."""
    code = _code("ifj,fej->ei", {"i": 20, "f": 4, "j": 10, "e": 2**20})
    assert "reqd_work_group_size(64, 1, 1)" in code
    assert re.search(r"double \w*_acc\[2 \* 20\];", code)
    assert re.search(r"__local double \w*_sums\[128 \* 21\];", code)
    assert code.count("a1[") == 2
    assert code.count("a0[") == 40
    assert len(set(re.findall(r"a0\[[^]]*\]", code))) == 20
    assert code.count("barrier(") == 1


def test_plan_only_on_gpus() -> None:
    """The CPU schedules never take it."""
    x = pt.make_placeholder("x", (3, 4096, 10), np.float64)
    m = pt.make_placeholder("m", (20, 3, 10), np.float64)
    prog = pt.generate_loopy(pt.einsum("ifj,fej->ei", m, x),
                             default_schedule=False)
    knl = prog.program.default_entrypoint
    insn, = knl.instructions
    assert isinstance(insn, lp.Assignment)
    names = [v.name for v in insn.assignee.index_tuple]
    table = prog.program.callables_table
    assert plan_gpu_contraction(knl, insn, names, GPU, table) is not None
    cpu = DeviceInfo(kind="cpu", compute_units=4, max_work_group_size=256,
                     vector_calls=True)
    assert plan_gpu_contraction(knl, insn, names, cpu, table) is None
