"""Tests of the tiling of small reductions
(:mod:`pytato.target.loopy.schedule.tiling`): GPU schedules run on the test device."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule
from pytato.target.loopy.schedule.tiling import (
    apply_tilings,
    plan_tiling,
    tile_small_reduction,
)


CPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096)


@pytest.fixture
def gpu(queue) -> DeviceInfo:
    """A GPU description whose work-groups fit on the test device."""
    return DeviceInfo(kind="gpu", compute_units=4, name="test",
                      min_tiled_outputs=0,
                      max_work_group_size=min(
                          1024, queue.device.max_work_group_size))


def _temporaries(prg, space) -> dict[str, tuple[int, ...]]:
    knl = prg.program.default_entrypoint
    return {t.name: t.shape for t in knl.temporary_variables.values()
            if t.address_space == space}


def _local_temporaries(prg) -> dict[str, tuple[int, ...]]:
    return _temporaries(prg, lp.AddressSpace.LOCAL)


def _private_arrays(prg, results: bool = False
                    ) -> dict[str, tuple[int, ...]]:
    """The private arrays of *prg*: rows of shared operands, and with
    *results* the sums of the elements of a work-item (``*_result``)."""
    return {k: v for k, v in _temporaries(
        prg, lp.AddressSpace.PRIVATE).items()
        if v and (results or not k.endswith("_result"))}


def _shared_einsum(n_el, n_out: int = 5, n_red: int = 4):
    """The untransformed program of ``einsum("ij,ej->ei", D, u)`` (``D``:
    *n_out* x *n_red*, ``u``: *n_el* x *n_red*), its kernel and its one
    instruction."""
    d = pt.make_placeholder("D", (n_out, n_red), np.float64)
    u = pt.make_placeholder("u", (n_el, n_red), np.float64)
    prg = pt.generate_loopy(pt.einsum("ij,ej->ei", d, u),
                            default_schedule=False)
    knl = prg.program.default_entrypoint
    insn, = knl.instructions
    return prg, knl, insn


def _operands(spec: str, n_el: int, n: int, dtype, rng):
    shapes = {"ij": (n, n), "ji": (n, n), "ej": (n_el, n),
              "eij": (n_el, n, n), "j": (n,)}
    ins = spec.split("->")[0].split(",")
    return [rng.random(shapes[s]).astype(dtype) for s in ins]


def _check(queue, prg, arrays, spec, dtype, names=("a", "b")):
    _, (res,) = prg(queue, **dict(zip(names, arrays, strict=True)))
    want = np.einsum(spec, *(a.astype(np.float64) for a in arrays))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(res, want, rtol=tol, atol=tol)
    assert res.dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 20, 35])
# 4099: 22 groups of 16 blocks of 12 (n = 20), the last one cut within a
# block; 4224: exactly 22 groups
@pytest.mark.parametrize("n_el", [0, 1, 7, 1000, 4099, 4224])
@pytest.mark.parametrize("spec", ["ij,ej->ei", "ji,ej->ei", "eij,ej->ei"])
def test_batched_matches_numpy(queue, gpu, spec, n_el, n, dtype):
    rng = np.random.default_rng(n_el + n)
    arrays = _operands(spec, n_el, n, dtype, rng)
    a, b = (pt.make_placeholder(k, x.shape, dtype)
            for k, x in zip("ab", arrays, strict=True))
    prg = pt.generate_loopy(pt.einsum(spec, a, b), cl_device=gpu)
    _check(queue, prg, arrays, spec, dtype)
    if spec != "eij,ej->ei" and n_el * n > gpu.group_size:
        # the rows of the matrix in private memory, u in local memory
        assert set(_private_arrays(prg)) == {"a_row"}
        assert set(_local_temporaries(prg)) == {"b_local"}
    elif spec != "eij,ej->ei" and n_el > 0:
        # all outputs in one group: no rows (no reuse across blocks)
        assert not _private_arrays(prg)
        assert set(_local_temporaries(prg)) == {"a_local", "b_local"}


@pytest.mark.parametrize("private_rows", [False, True])
@pytest.mark.parametrize("blocks", [1, 3, 8])
@pytest.mark.parametrize("n_el", [1, 7, 35, 100])
def test_blocks_by_hand(queue, blocks, private_rows, n_el):
    """Several blocks per group, with the shared matrix in local or private
    memory; numbers of elements below, at and past a group's."""
    prg, knl, insn = _shared_einsum(n_el)
    plan = plan_tiling(knl, insn.id, 32, blocks=blocks,
                       private_rows=private_rows)
    # 6 elements of 5 outputs per block
    assert plan.elements_per_group == min(6, n_el)
    assert plan.blocks == min(blocks, -(-n_el // plan.elements_per_group))
    tiled = tile_small_reduction(knl, insn.id, 32, blocks=blocks,
                                 private_rows=private_rows)
    prg = prg.copy(program=prg.program.with_kernel(tiled))
    # a single element: one group, no batch axis, no rows
    rows = private_rows and n_el > 1
    assert ("D_row" in _private_arrays(prg)) == rows
    assert ("D_local" in _local_temporaries(prg)) != rows
    rng = np.random.default_rng(n_el)
    arrays = [rng.random((5, 4)), rng.random((n_el, 4))]
    _check(queue, prg, arrays, "ij,ej->ei", np.float64, names=("D", "u"))


@pytest.mark.parametrize("spec", ["ij,j,ej->ei", "eij,ij->ei"])
def test_rows_with_other_operands(queue, gpu, spec):
    """A row in private memory beside a shared vector in local memory, and
    beside an operand read from global memory (no local arrays)."""
    n_el = pt.make_size_param("n_el")
    shapes = {"ij": (20, 20), "j": (20,), "ej": (n_el, 20),
              "eij": (n_el, 20, 20)}
    specs = spec.split("->")[0].split(",")
    names = "abc"[:len(specs)]
    args = [pt.make_placeholder(k, shapes[x], np.float64)
            for k, x in zip(names, specs, strict=True)]
    prg = pt.generate_loopy(pt.einsum(spec, *args), cl_device=gpu)
    row = names[specs.index("ij")]
    assert set(_private_arrays(prg)) == {f"{row}_row"}
    rng = np.random.default_rng(11)
    for count in (0, 5, 1000):
        arrays = [rng.random(tuple(x if isinstance(x, int) else count
                                   for x in shapes[y])) for y in specs]
        _check(queue, prg, arrays, spec, np.float64, names=names)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 20])
def test_small_matvec(queue, gpu, n, dtype):
    arrays = _operands("ij,j->i", 0, n, dtype, np.random.default_rng(n))
    a, b = (pt.make_placeholder(k, x.shape, dtype)
            for k, x in zip("ab", arrays, strict=True))
    prg = pt.generate_loopy(pt.einsum("ij,j->i", a, b), cl_device=gpu)
    assert len(_local_temporaries(prg)) == 2
    _check(queue, prg, arrays, "ij,j->i", dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spec", ["ij,ej->ei", "eij,ej->ei"])
def test_symbolic_elements(queue, gpu, spec, dtype):
    n_el = pt.make_size_param("n_el")
    shapes = {"ij": (20, 20), "ej": (n_el, 20), "eij": (n_el, 20, 20)}
    a, b = (pt.make_placeholder(k, shapes[s], dtype) for k, s in
            zip("ab", spec.split("->")[0].split(","), strict=True))
    prg = pt.generate_loopy(pt.einsum(spec, a, b), cl_device=gpu)
    if spec == "ij,ej->ei":
        assert _private_arrays(prg) == {"a_row": (20,)}
        assert _local_temporaries(prg)
    rng = np.random.default_rng(5)
    # 16 blocks of 12 elements per group
    for count in (0, 1, 7, 1000, 4099, 192 * 5):
        _check(queue, prg, _operands(spec, count, 20, dtype, rng), spec,
               dtype)


@pytest.mark.parametrize("symbolic", [False, True])
def test_several_batch_axes(queue, gpu, symbolic):
    rng = np.random.default_rng(7)
    n_a = pt.make_size_param("n_a") if symbolic else 13
    d = pt.make_placeholder("d", (6, 5), np.float64)
    t = pt.make_placeholder("t", (3, 4, 5), np.float64)
    u = pt.make_placeholder("u", (n_a, 70, 5), np.float64)
    prg = pt.generate_loopy({"a": pt.einsum("ij,abj->abi", d, u),
                             "b": pt.einsum("ikj,abj->abik", t, u)},
                            cl_device=gpu)
    # the rows of d and t in private memory, u in local memory
    assert len(_local_temporaries(prg)) == 2
    assert _private_arrays(prg) == {"d_row": (5,), "t_row": (5,)}
    for count in ((0, 13) if symbolic else (13,)):
        arrays = {"d": rng.random((6, 5)), "t": rng.random((3, 4, 5)),
                  "u": rng.random((count, 70, 5))}
        _, res = prg(queue, **arrays)
        np.testing.assert_allclose(
            res["a"], np.einsum("ij,abj->abi", arrays["d"], arrays["u"]))
        np.testing.assert_allclose(
            res["b"], np.einsum("ikj,abj->abik", arrays["t"], arrays["u"]))


def test_structure():
    import re

    d = pt.make_placeholder("D", (20, 20), np.float64)
    u = pt.make_placeholder("u", (2**20, 20), np.float64)
    gpu = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                     min_tiled_outputs=0, local_mem_size=48 * 1024)
    result = pt.einsum("ij,ej->ei", d, u)
    prg = pt.generate_loopy(result, cl_device=gpu)
    # a row of D per work-item; groups of 20 x 12 work-items, each
    # computing 23 elements of a block of 276 (padded rows: 45 KiB, all
    # the H100's 48 KiB of local memory but the 2 KiB reserve)
    assert _private_arrays(prg) == {"D_row": (20,)}
    assert _local_temporaries(prg) == {"u_local": (276, 21)}
    # the sums of the 23 elements, stored where the last block is cut
    assert _private_arrays(prg, results=True)["_pt_out_result"] == (23,)
    code = lp.generate_code_v2(prg.program).device_code()
    assert "reqd_work_group_size(20, 12, 1)" in code
    # one block per group: no block loop, loopy's barrier after the loads
    assert "_block" not in code
    assert code.count("barrier(CLK_LOCAL_MEM_FENCE)") == 1
    # the loads of the block and the 23 elements unrolled
    assert "for (int" not in code
    # the row at constant indices only (unrolled loops): registers
    indices = re.findall(r"(?<!double )D_row\[([^\]]*)\]", code)
    assert len(indices) == 20 + 23 * 20
    assert all(i.isdigit() for i in indices)
    # D read once per group of 276 elements: 3800 groups
    knl = prg.program.default_entrypoint
    gsize, _ = knl.get_grid_size_upper_bounds_as_exprs(
        prg.program.callables_table)
    assert gsize == (-(-2**20 // 276),)
    # the earlier structure, by hand: 16 blocks of 12 elements, one
    # element per work-item, between two barriers
    insn, = pt.generate_loopy(
        result, default_schedule=False).program.default_entrypoint.instructions
    knl = pt.generate_loopy(result, default_schedule=False) \
        .program.default_entrypoint
    plan = plan_tiling(knl, insn.id, 256, blocks=16)
    assert (plan.blocks, plan.elements_per_item) == (16, 1)
    code = lp.generate_code_v2(prg.program.with_kernel(
        apply_tilings(knl, [plan])[0])).device_code()
    assert re.search(r"for \(int \w+_block = 0; \w+_block <= 15;", code)
    assert code.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2
    # D in local memory without private rows, one block per group
    plan = plan_tiling(knl, insn.id, 256, private_rows=False)
    assert plan.blocks == 1 and plan.elements_per_item == 1
    assert {s.expr.aggregate.name for s in plan.staged if not s.blocked} \
        == {"D"}
    assert not any(s.row for s in plan.staged)
    assert not _local_temporaries(pt.generate_loopy(
        result, cl_device=gpu, default_schedule=False))
    # on CPUs (PoCL) tiling was slower: not applied
    assert not _local_temporaries(pt.generate_loopy(result, cl_device=CPU))
    assert not _private_arrays(pt.generate_loopy(result, cl_device=CPU))


@pytest.mark.parametrize(("n_el", "blocks"), [
    (2**20, 16), (2**16, 10), (192 * 132 * 4, 16), (96 * 132 * 4, 8),
    (96 * 132 * 4 - 12, 7), (12 * 2 * 132 * 4 - 12, 1), (5, 1)])
def test_default_blocks(n_el, blocks):
    """With one element per work-item: 16 blocks per group unless that
    leaves fewer than 4 groups per compute unit."""
    _, knl, insn = _shared_einsum(n_el, 20, 20)
    plan = plan_tiling(knl, insn.id, 256, compute_units=132,
                       elements_per_item=1)
    assert plan.blocks == blocks


@pytest.mark.parametrize(("n_el", "budget", "per_item"), [
    (2**20, 32 * 1024, 16), (2**20, 16 * 1024, 8), (2**20, 21 * 1024, 10),
    (2**20, 46 * 1024, 23), (2**20, 64 * 1024, 24),
    # at least 4 groups per compute unit
    (2**16, 32 * 1024, 10), (96 * 132 * 4, 32 * 1024, 8),
    (12 * 132 * 4 - 1, 32 * 1024, 1), (5, 32 * 1024, 1)])
def test_default_elements_per_item(n_el, budget, per_item):
    """As many elements per work-item as the block's local arrays fit in
    the budget (at most 24), one block per group."""
    _, knl, insn = _shared_einsum(n_el, 20, 20)
    plan = plan_tiling(knl, insn.id, 256, compute_units=132,
                       item_local_memory_budget=budget)
    assert plan.elements_per_item == per_item
    assert plan.blocks == 1
    assert plan.block_elements == plan.elements_per_group * per_item


@pytest.mark.parametrize("per_item", [2, 3, 16, 23])
@pytest.mark.parametrize("n_el", [1, 7, 35, 100, 1001])
def test_elements_per_item_by_hand(queue, per_item, n_el):
    """Several elements per work-item, alone and with several blocks per
    group; numbers of elements below, at and past a block's."""
    prg, knl, insn = _shared_einsum(n_el)
    rng = np.random.default_rng(n_el + per_item)
    arrays = [rng.random((5, 4)), rng.random((n_el, 4))]
    for blocks in (1, 3):
        plan = plan_tiling(knl, insn.id, 32, blocks=blocks,
                           elements_per_item=per_item)
        tiled = apply_tilings(knl, [plan])[0]
        tprg = prg.copy(program=prg.program.with_kernel(tiled))
        if n_el > 1:
            assert plan.elements_per_item == per_item
            assert _local_temporaries(tprg)["u_local"][0] \
                == plan.elements_per_group * per_item
        _check(queue, tprg, arrays, "ij,ej->ei", np.float64,
               names=("D", "u"))


def test_left_alone():
    gpu = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                     min_tiled_outputs=0)
    d = pt.make_placeholder("D", (20, 20), np.float64)
    u = pt.make_placeholder("u", (1000, 20), np.float64)
    big = pt.make_placeholder("B", (20, 100), np.float64)
    w = pt.make_placeholder("w", (1000, 100), np.float64)
    cases = {
        # a reduction longer than MAX_REDUCTION_EXTENT
        "long": pt.einsum("ij,ej->ei", big, w),
        # no operand shared by all elements, per-element ones read along
        # their contiguous axis
        "batched": pt.einsum("je,je->e", pt.make_placeholder(
            "T", (20, 1000), np.float64), pt.make_placeholder(
            "T2", (20, 1000), np.float64)),
        "strided": pt.einsum("eji,ej->ei", pt.make_placeholder(
            "A", (1000, 20, 20), np.float64), u),
        # a per-element block too large for the local memory budget
        "large": pt.einsum("eij,ej->ei", pt.make_placeholder(
            "A", (1000, 64, 64), np.float64), pt.make_placeholder(
            "v", (1000, 64), np.float64)),
        # not a sum
        "max": pt.amax(d[None, :, :] * u[:, None, :], axis=2),
        # a symbolic inner extent
        "symbolic inner": pt.einsum(
            "ij,ej->ei", pt.make_placeholder(
                "S", (pt.make_size_param("m"), 20), np.float64), u),
    }
    for name, result in cases.items():
        prg = pt.generate_loopy(result, cl_device=gpu)
        assert not _local_temporaries(prg), name


def test_axis_tags_do_not_stop_tiling():
    """Tags on the output's axes (metadata, not the user's mapping of the
    loops) leave the tiling as it is without them."""
    from pytools.tag import UniqueTag

    from pytato.tags import ImplStored

    class ElementAxis(UniqueTag):
        pass

    gpu = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                     min_tiled_outputs=0)
    d = pt.make_placeholder("D", (20, 20), np.float64)
    u = pt.make_placeholder("u", (1000, 20), np.float64)
    plain = pt.generate_loopy(pt.einsum("ij,ej->ei", d, u), cl_device=gpu)
    assert _local_temporaries(plain)
    for tag in (ImplStored(), ElementAxis()):
        tagged = pt.generate_loopy(
            pt.einsum("ij,ej->ei", d, u).with_tagged_axis(0, tag),
            cl_device=gpu)
        assert _local_temporaries(tagged) == _local_temporaries(plain), tag


@pytest.mark.parametrize("nel", [1, 7, 64, 1001])
def test_per_element_operands(queue, nel):
    """Per-element operands read at a stride of the reduction's extent
    (``A[e, i, j]`` of ``eij,ej->ei``, ``u[e, j]`` of ``ej,ej->e``) are
    staged in local memory on GPUs; results are unchanged."""
    gpu = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                     min_tiled_outputs=0)
    rng = np.random.default_rng(nel)
    a, u = rng.random((nel, 20, 20)), rng.random((nel, 20))
    pa = pt.make_placeholder("A", a.shape, np.float64)
    pu = pt.make_placeholder("u", u.shape, np.float64)
    for result, want in [
            (pt.einsum("eij,ej->ei", pa, pu), np.einsum("eij,ej->ei", a, u)),
            (pt.einsum("ej,ej->e", pu, 2 * pu), 2 * np.einsum("ej,ej->e", u,
                                                               u))]:
        prg = pt.generate_loopy(result, cl_device=gpu)
        # (fewer elements: one group, all operands shared, if they fit)
        assert _local_temporaries(prg) or nel < 64
        _, (res,) = prg(queue, A=a, u=u) if "A" in prg.program \
            .default_entrypoint.arg_dict else prg(queue, u=u)
        np.testing.assert_allclose(res, want, rtol=1e-12)


def test_small_nests_not_tiled():
    """By default, nests with fewer than ``min_tiled_outputs`` outputs are
    not tiled (each tiled nest costs loopy's code generation more than it
    saves at run time)."""
    d = pt.make_placeholder("D", (20, 20), np.float64)
    for nel, tiled in [(100, False), (300, True)]:
        u = pt.make_placeholder("u", (nel, 20), np.float64)
        gpu = DeviceInfo(kind="gpu", compute_units=132,
                         max_work_group_size=1024)
        prg = pt.generate_loopy(pt.einsum("ij,ej->ei", d, u), cl_device=gpu)
        assert bool(_local_temporaries(prg) or _private_arrays(prg)) == tiled


def test_tile_by_hand(queue):
    prg, knl, insn = _shared_einsum(33)
    assert tile_small_reduction(knl, insn.id, 64, local_memory_budget=8) \
        is None
    tiled = tile_small_reduction(knl, insn.id, 64)
    assert tiled is not None
    prg = prg.copy(program=prg.program.with_kernel(tiled))
    # groups of 12 elements of 5 outputs, each work-item computing 3
    # elements: all 33 in one block of 36
    assert _private_arrays(prg) == {"D_row": (4,)}
    assert _local_temporaries(prg) == {"u_local": (36, 5)}
    rng = np.random.default_rng(3)
    arrays = [rng.random((5, 4)), rng.random((33, 4))]
    _check(queue, prg, arrays, "ij,ej->ei", np.float64, names=("D", "u"))
    # the default schedule leaves a tiled nest alone
    again = default_schedule(prg.program, DeviceInfo(
        kind="gpu", compute_units=4, max_work_group_size=64))
    _check(queue, prg.copy(program=again), arrays, "ij,ej->ei", np.float64,
           names=("D", "u"))


def test_guarded_accesses_not_staged(queue, gpu):
    """An operand read in a branch of a conditional (here a concatenation
    inlined into the reduction: ``x1[j] if j < 2 else x1[j - 2]``) may be
    out of bounds where its branch is not taken: it is not copied whole
    (found by the random-graph test with the GPU schedule)."""
    rng = np.random.default_rng(7)
    x1 = pt.make_placeholder("x1", (2,), np.float64)
    d = pt.make_placeholder("d", (4, 4), np.float64)
    m = pt.make_placeholder("m", (300, 4), np.float64)
    c = pt.concatenate([x1, x1])
    xa, da, ma = rng.random(2), rng.random((4, 4)), rng.random((300, 4))
    ca = np.concatenate([xa, xa])
    # one program each: in one program, c (read twice) would be stored
    for spec, ops, inputs, ref in [
            ("j,ej->e", (c, m), {"x1": xa, "m": ma}, ma @ ca),
            ("ij,ej,j->ei", (d, m, c), {"x1": xa, "d": da, "m": ma},
             np.einsum("ij,ej,j->ei", da, ma, ca))]:
        prg = pt.generate_loopy(pt.einsum(spec, *ops), cl_device=gpu)
        staged = set(_local_temporaries(prg)) | set(_private_arrays(prg))
        assert not any(n.startswith("x1") for n in staged), spec
        _, (res,) = prg(queue, **inputs)
        np.testing.assert_allclose(res, ref, rtol=1e-12, err_msg=spec)
