"""Tests of small contractions shared across elements
(:mod:`pytato.target.loopy.schedule.small_contractions` and
:mod:`pytato.target.loopy.schedule.contraction_split`): every einsum form
of DG codes against numpy on the OpenCL device of the tests, over dtypes,
the matrix sizes of simplices of orders 1 to 4, empty and symbolic
element counts; and which schedule is chosen."""

from __future__ import annotations

from math import comb
from typing import Any

import loopy as lp
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.schedule import small_contractions
from pytato.target.loopy.schedule.default import default_schedule


#: a CPU with the vector code on, whatever the device of the tests
VCPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096,
                  name="fake CPU", vector_calls=True)
GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU", vector_calls=True)

#: the einsums of DG codes: one matrix for all elements, a matrix per
#: element, several components per node, the lift from faces
FORMS = ["ij,ej->ei", "ji,ej->ei", "ij,ejk->eik", "ifj,fej->ei",
         "eij,ej->ei", "eij,ejk->eik", "ej,ij->ie"]
#: the forms whose sum has a shared matrix and per-element values
SHARED = {"ij,ej->ei", "ji,ej->ei", "ij,ejk->eik", "ifj,fej->ei"}


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


def _is_vector_cpu(queue: cl.CommandQueue) -> bool:
    info = DeviceInfo.from_cl_device(queue.device)
    return not info.is_gpu and info.vector_calls


def _contractions(t_unit: lp.TranslationUnit) -> list[lp.CInstruction]:
    """The small contractions' instructions of a scheduled unit."""
    return [insn for insn in t_unit.default_entrypoint.instructions
            if isinstance(insn, lp.CInstruction) and "_pt_sc_" in insn.code]


def _run(queue: cl.CommandQueue, expr: Any, inputs: dict[str, Any]
         ) -> tuple[np.ndarray, lp.TranslationUnit]:
    """The result of *expr* on *queue*'s device and the unit that ran."""
    prog = pt.generate_loopy(expr)
    _, res = prog(queue, **inputs)
    if hasattr(res, "keys"):
        res = tuple(res.values())
    out = res[0] if isinstance(res, tuple) else res
    return np.asarray(out.get() if hasattr(out, "get") else out), \
        prog.program_for(queue.device)


def _einsum(queue: cl.CommandQueue, spec: str, operands: list[np.ndarray],
            shapes: list[tuple[Any, ...]] | None = None
            ) -> tuple[np.ndarray, lp.TranslationUnit]:
    names = [f"a{k}" for k in range(len(operands))]
    placeholders = [
        pt.make_placeholder(n, x.shape if shapes is None else s, x.dtype)
        for n, x, s in zip(names, operands, shapes or [None] * len(names),
                           strict=True)]
    got, t_unit = _run(queue, pt.einsum(spec, *placeholders),
                       {n: cla.to_device(queue, x)
                        for n, x in zip(names, operands, strict=True)})
    want = np.einsum(spec, *operands)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=_rtol(want.dtype),
                               atol=_rtol(want.dtype) * np.abs(want).max(
                                   initial=0))
    return got, t_unit


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("spec", FORMS)
def test_forms_match_numpy(queue: cl.CommandQueue, spec: str,
                           dtype: Any) -> None:
    sizes = {"i": 20, "j": 20, "k": 3, "f": 4, "e": 1100}
    if spec == "ifj,fej->ei":
        sizes["j"] = 10
    _, t_unit = _einsum(queue, spec, _operands(spec, sizes, dtype))
    taken = bool(_contractions(t_unit))
    expected = (_is_vector_cpu(queue) and spec in SHARED
                and np.dtype(dtype).kind == "f")
    assert taken == expected


@pytest.mark.parametrize(("dim", "order"),
                         [(d, p) for d in (2, 3) for p in (1, 2, 3, 4)])
def test_simplex_orders(queue: cl.CommandQueue, dim: int, order: int
                        ) -> None:
    n_vol = comb(order + dim, dim)
    n_face = comb(order + dim - 1, dim - 1)
    sizes = {"i": n_vol, "j": n_vol, "e": 1025, "k": dim}
    _einsum(queue, "ij,ej->ei", _operands("ij,ej->ei", sizes, np.float64))
    _einsum(queue, "ij,ejk->eik",
            _operands("ij,ejk->eik", sizes, np.float64))
    lift = {"i": n_vol, "f": dim + 1, "j": n_face, "e": 1025}
    _, t_unit = _einsum(queue, "ifj,fej->ei",
                        _operands("ifj,fej->ei", lift, np.float64))
    assert bool(_contractions(t_unit)) == _is_vector_cpu(queue)


@pytest.mark.parametrize("spec", ["ij,ej->ei", "ifj,fej->ei"])
def test_no_elements(queue: cl.CommandQueue, spec: str) -> None:
    sizes = {"i": 20, "j": 10, "f": 3, "e": 0}
    got, _ = _einsum(queue, spec, _operands(spec, sizes, np.float64))
    assert got.shape == (0, 20)


@pytest.mark.parametrize("n_el", [0, 5, 100, 1001])
@pytest.mark.parametrize("spec", ["ij,ej->ei", "ifj,fej->ei"])
def test_symbolic_elements(queue: cl.CommandQueue, spec: str, n_el: int
                           ) -> None:
    n = pt.make_size_param("n")
    sizes = {"i": 20, "j": 10, "f": 3, "e": n_el}
    symbolic = {**sizes, "e": n}
    ins = spec.split("->")[0].split(",")
    shapes = [tuple(symbolic[c] for c in s) for s in ins]
    _, t_unit = _einsum(queue, spec, _operands(spec, sizes, np.float64),
                        shapes)
    assert bool(_contractions(t_unit)) == _is_vector_cpu(queue)


def _lift_graph(n_el: int, dtype: Any = np.float64
                ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``volume - lift(flux)`` with the flux (gathered face values, an
    upwind choice) inlined in the sum, as arraycontext-based codes emit
    it; the placeholders' values."""
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
def test_inlined_lift_is_split(queue: cl.CommandQueue, dtype: Any) -> None:
    graphs, values = _lift_graph(1100, dtype)
    got, t_unit = _run(queue, graphs["pt"],
                       {k: cla.to_device(queue, v)
                        for k, v in values.items()})
    want = graphs["np"]
    np.testing.assert_allclose(got, want, rtol=_rtol(dtype),
                               atol=_rtol(dtype) * np.abs(want).max())
    if _is_vector_cpu(queue):
        ids = {insn.id for insn in t_unit.default_entrypoint.instructions}
        assert any(i.startswith("_pt_sc_factor") for i in ids)
        assert _contractions(t_unit)


def _scheduled(spec: str, sizes: dict[str, int], info: DeviceInfo
               ) -> lp.TranslationUnit:
    ins = spec.split("->")[0].split(",")
    args = [pt.make_placeholder(f"a{k}", tuple(sizes[c] for c in s),
                                np.float64) for k, s in enumerate(ins)]
    prog = pt.generate_loopy(pt.einsum(spec, *args), default_schedule=False)
    return default_schedule(prog.program, info)


def test_schedule_of_shared_matrix() -> None:
    """``ij,ej->ei`` on a CPU: the matrix copied in the order of the
    vectors' lanes (``D[j, i]``), then one vector instruction over the
    elements, ``ELEMENTS_PER_ITEM`` per work-item, on ``g.0``/``l.0``,
    with 8-lane vectors over the outputs of an element (20 = 8 + 8 + 4),
    ``MAX_ELEMENT_BLOCK`` elements at a time."""
    t_unit = _scheduled("ij,ej->ei", {"i": 20, "j": 20, "e": 4096}, VCPU)
    knl = t_unit.default_entrypoint
    insn, = _contractions(t_unit)
    tags = sorted(str(t) for i in insn.within_inames
                  for t in knl.iname_tags(i))
    assert tags == ["g.0", "l.0"]
    per_item = small_contractions.ELEMENTS_PER_ITEM
    assert insn.iname_exprs[0][1].children[0] == per_item
    matrix, = (name for name in knl.temporary_variables
               if name.startswith("_pt_sc_matrix"))
    assert knl.temporary_variables[matrix].shape == (20, 20)
    code = insn.code
    assert f"vload8(0, {matrix} + 8)" in code
    block = small_contractions.MAX_ELEMENT_BLOCK
    # the block of elements, then the elements left one by one
    assert code.count("vstore8") == 2 * (block + 1)
    assert code.count("vstore4") == block + 1
    assert "fma(" in code


def test_matrix_in_lane_order_used_as_it_is() -> None:
    """``ji,ej->ei`` reads its matrix in the order of the lanes: no
    copy."""
    t_unit = _scheduled("ji,ej->ei", {"i": 20, "j": 20, "e": 4096}, VCPU)
    insn, = _contractions(t_unit)
    assert "vload8(0, a0 + 8)" in insn.code
    assert not any(name.startswith("_pt_sc_matrix")
                   for name in t_unit.default_entrypoint.temporary_variables)


def test_not_taken_on_gpus_or_small_batches() -> None:
    sizes = {"i": 20, "j": 20, "e": 4096}
    assert not _contractions(_scheduled("ij,ej->ei", sizes, GPU))
    # GPUs keep the tiling in local and private memory
    tags = {str(t) for i in _scheduled("ij,ej->ei", sizes, GPU)
            .default_entrypoint.inames.values() for t in i.tags}
    assert {"g.0", "l.0", "l.1"} <= tags
    few = {**sizes, "e": small_contractions.MIN_ELEMENTS - 1}
    assert not _contractions(_scheduled("ij,ej->ei", few, VCPU))
    # one output per element: no inner axis to vectorize over
    assert not _contractions(_scheduled("j,ej->e", {"j": 20, "e": 4096},
                                        VCPU))
