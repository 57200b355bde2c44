"""Tests of the default schedule (:mod:`pytato.target.loopy.schedule.default`)."""

from __future__ import annotations

import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule


GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU")
CPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096)


def _hw_tags(t_unit):
    from loopy.kernel.data import InameImplementationTag
    knl = t_unit.default_entrypoint
    return {n: str(t) for n in knl.all_inames() for t in knl.iname_tags(n)
            if isinstance(t, InameImplementationTag)}


def test_device_info():
    assert GPU.group_size == 256
    assert CPU.group_size == 32
    assert DeviceInfo.conservative().kind == "cpu"
    small = DeviceInfo(kind="gpu", compute_units=1, max_work_group_size=64)
    assert small.group_size == 64
    assert DeviceInfo(kind="cpu", compute_units=1, max_work_group_size=64,
                      preferred_group_size=8).group_size == 8


def test_applied_and_skippable():
    x = pt.make_placeholder("x", (100, 30), np.float64)
    prg = pt.generate_loopy(2 * x)
    assert not _hw_tags(prg.program)  # scheduled per device
    tags = _hw_tags(prg.program_for())
    assert sorted(tags.values()) == ["g.0", "l.0"]
    prg = pt.generate_loopy(2 * x, default_schedule=False)
    assert not _hw_tags(prg.program)


def test_gpu_group_size():
    x = pt.make_placeholder("x", (1000,), np.float64)
    prg = pt.generate_loopy(2 * x, default_schedule=False)
    t_unit = default_schedule(prg.program, GPU)
    assert "reqd_work_group_size(256" in _code(t_unit)
    t_unit = default_schedule(prg.program, CPU)
    assert "reqd_work_group_size(32" in _code(t_unit)


def _code(t_unit):
    import loopy as lp
    return lp.generate_code_v2(t_unit).device_code()


def test_user_tags_respected(queue):
    import loopy as lp
    x = pt.make_placeholder("x", (64,), np.float64)
    prg = pt.generate_loopy(3 * x, default_schedule=False)
    (iname,) = prg.program.default_entrypoint.all_inames()
    t_unit = lp.tag_inames(prg.program, {iname: "g.0"})
    t_unit = default_schedule(t_unit, GPU)
    assert _hw_tags(t_unit) == {iname: "g.0"}
    a = np.arange(64.0)
    _, (res,) = prg.copy(program=t_unit)(queue, x=a)
    np.testing.assert_allclose(res, 3 * a)


def _cases():
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (50, 300), np.float64)
    v = pt.make_placeholder("v", (300,), np.float64)
    a = pt.make_placeholder("a", (64, 5, 5), np.float64)
    u = pt.make_placeholder("u", (64, 5), np.float64)
    s = pt.make_placeholder("s", (n, 9), np.float64)
    g = pt.make_placeholder("g", (40, 40), np.float64)
    graph = {
        "ew": pt.sin(x) * 2 + x,
        "rows": pt.sum(x, axis=1),
        "cols": pt.sum(x, axis=0),
        "full": pt.sum(x),
        "centered": x - pt.sum(x) / x.size,
        "amax": pt.amax(x, axis=1),
        "mv": x @ v,
        "dg": pt.einsum("eij,ej->ei", a, u),
        "stencil": (pt.roll(g, 1, 0) + pt.roll(g, -1, 0) + pt.roll(g, 1, 1)
                    + pt.roll(g, -1, 1) - 4 * g),
        "sym": 2 * s + 1,
        "symsum": pt.sum(s, axis=0),
        "symfull": pt.sum(s),
    }
    return graph


@pytest.mark.parametrize("device", [None, CPU, GPU], ids=["any", "cpu", "gpu"])
def test_results_unchanged(queue, device):
    rng = np.random.default_rng(1)
    graph = _cases()
    inputs = {"x": rng.random((50, 300)), "v": rng.random(300),
              "a": rng.random((64, 5, 5)), "u": rng.random((64, 5)),
              "s": rng.random((7, 9)), "g": rng.random((40, 40))}
    ref = pt.generate_loopy(graph, default_schedule=False)
    prg = ref.copy(program=default_schedule(ref.program, device))
    assert _hw_tags(prg.program)
    _, want = ref(queue, **inputs)
    _, got = prg(queue, **inputs)
    for k in graph:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-12,
                                   err_msg=k)
    x = inputs["x"]
    np.testing.assert_allclose(got["full"], x.sum(), rtol=1e-12)
    np.testing.assert_allclose(got["symsum"], inputs["s"].sum(axis=0),
                               rtol=1e-12)


def test_empty_and_several_kernels(queue):
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3), np.float64)
    t = 2 * x
    prg = pt.generate_loopy({"a": t + 1, "b": t * t, "c": pt.sum(t)})
    import loopy as lp
    assert len(lp.generate_code_v2(prg.program_for(queue.device)).device_programs) >= 2
    for rows in (0, 5):
        a = np.ones((rows, 3))
        _, res = prg(queue, x=a)
        np.testing.assert_allclose(res["a"], 2 * a + 1)
        np.testing.assert_allclose(res["c"], 2 * a.sum())


# {{{ one device kernel per dependency level

def _device_kernels(t_unit):
    import loopy as lp
    return len(lp.generate_code_v2(t_unit).device_programs)


@pytest.mark.parametrize("device", [None, CPU, GPU], ids=["any", "cpu", "gpu"])
def test_independent_nests_share_a_device_kernel(queue, device):
    """Stored arrays of different shapes that do not read each other run
    in one device kernel (smaller ones predicated); each non-elementwise
    read of a stored array starts a new kernel."""
    rng = np.random.default_rng(3)
    x = pt.make_placeholder("x", (37, 11), np.float64)
    y = pt.make_placeholder("y", (5, 300), np.float64)
    z = pt.make_placeholder("z", (3,), np.float64)
    # level 0: four independent stores of different sizes
    a, b, c = pt.sin(x) + 1, y * y, 2 * z
    s = pt.sum(x, axis=1)
    graph = {"a": a, "b": b, "c": c, "s": s,
             # level 1: reads of level-0 arrays at other indices
             "at": a.T * 3, "br": pt.roll(b, 1, axis=1) - b[::-1],
             "sc": s[:3] * c[::-1]}
    ref = pt.generate_loopy(graph, default_schedule=False)
    prg = ref.copy(program=default_schedule(ref.program, device))
    assert _device_kernels(prg.program) == 2
    inputs = {"x": rng.random((37, 11)), "y": rng.random((5, 300)),
              "z": rng.random(3)}
    _, want = ref(queue, **inputs)
    _, got = prg(queue, **inputs)
    for k in graph:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-13, err_msg=k)
    np.testing.assert_allclose(got["br"], np.roll(inputs["y"] ** 2, 1, axis=1)
                               - (inputs["y"] ** 2)[::-1], rtol=1e-13)


def test_levels_with_symbolic_and_parallel_nests(queue):
    """Nests with symbolic grid sizes and parallel reductions keep device
    kernels of their own next to a shared one."""
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 4), np.float64)
    v = pt.make_placeholder("v", (100000,), np.float64)
    w = pt.make_placeholder("w", (6,), np.float64)
    graph = {"a": x + 1, "b": 3 * w, "full": pt.sum(v), "c": w[::-1] * 2}
    prg = pt.generate_loopy(graph, cl_device=CPU)
    assert _device_kernels(prg.program) >= 3
    rng = np.random.default_rng(4)
    for rows in (0, 1, 9):
        xa, va, wa = rng.random((rows, 4)), rng.random(100000), rng.random(6)
        _, res = prg(queue, x=xa, v=va, w=wa)
        np.testing.assert_allclose(res["a"], xa + 1)
        np.testing.assert_allclose(res["b"], 3 * wa)
        np.testing.assert_allclose(res["c"], wa[::-1] * 2)
        np.testing.assert_allclose(res["full"], va.sum(), rtol=1e-11)

# }}}


def test_tiled_nest_keeps_its_own_kernel(queue):
    """A nest tiled in local memory (on l.0 and l.1) does not share a device
    kernel with the element-wise nests of its level."""
    import loopy as lp
    rng = np.random.default_rng(5)
    d = pt.make_placeholder("D", (20, 20), np.float64)
    u = pt.make_placeholder("u", (50, 20), np.float64)
    w = pt.make_placeholder("w", (7,), np.float64)
    graph = {"t": pt.einsum("ij,ej->ei", d, u), "b": 2 * w, "c": u * 3}
    gpu = DeviceInfo(kind="gpu", compute_units=4,
                     max_work_group_size=min(256, queue.device.max_work_group_size),
                     name="test", min_tiled_outputs=0)
    prg = pt.generate_loopy(graph, cl_device=gpu)
    knl = prg.program.default_entrypoint
    assert any(t.address_space == lp.AddressSpace.LOCAL
               for t in knl.temporary_variables.values())
    assert _device_kernels(prg.program) == 2
    da, ua, wa = rng.random((20, 20)), rng.random((50, 20)), rng.random(7)
    _, res = prg(queue, D=da, u=ua, w=wa)
    np.testing.assert_allclose(res["t"], ua @ da.T, rtol=1e-12)
    np.testing.assert_allclose(res["b"], 2 * wa)
    np.testing.assert_allclose(res["c"], 3 * ua)


def test_full_reduction_groups():
    """Two-stage full reductions use 2 groups of 1024 per compute unit in
    their first stage on GPUs, 4 on CPUs, from 4 groups' worth of elements
    per compute unit on."""
    import loopy as lp
    assert GPU.reduction_num_groups == 2 * 132
    assert GPU.two_stage_group_size == 1024
    assert CPU.two_stage_group_size == CPU.reduction_group_size
    assert CPU.reduction_num_groups == 4 * 2
    for n, two_stage in [(4 * 132 * 256, True), (4 * 132 * 256 - 1, False)]:
        v = pt.make_placeholder("v", (n,), np.float64)
        prg = pt.generate_loopy(pt.sum(v), cl_device=GPU)
        knl = prg.program.default_entrypoint
        partial = [t for t in knl.temporary_variables.values()
                   if t.address_space == lp.AddressSpace.GLOBAL]
        assert bool(partial) == two_stage
        if two_stage:
            assert partial[0].shape == (GPU.two_stage_groups(n),)
    # a whole number of elements per work-item where possible
    assert GPU.two_stage_groups(2**24) == 256
    assert GPU.two_stage_groups(4 * 132 * 256) == 132
    assert GPU.two_stage_groups(2**24 + 1) == 2 * 132
    assert GPU.two_stage_groups(None) == 2 * 132
    assert CPU.two_stage_groups(2**24) == 4 * 2


@pytest.mark.parametrize("device", ["gpu", "cpu"])
def test_reductions_of_several_kinds_in_one_program(queue, device):
    """Outputs reduced in different ways (a column reduction whose rows
    are tree-reduced along ``l.1``, a two-stage full reduction, reductions
    along the contiguous axis) share a program: the nest whose reduction
    uses ``l.1`` gets a device kernel of its own (loopy rejects a kernel
    where other instructions leave ``l.1`` unused)."""
    rng = np.random.default_rng(5)
    xv, yv = rng.random((1024, 3, 32)), rng.random((2048, 64))
    x = pt.make_placeholder("x", xv.shape, np.float64)
    y = pt.make_placeholder("y", yv.shape, np.float64)
    outputs = {"a": pt.sum(x, axis=(0, 1)), "b": pt.prod(1 + x / 1000, axis=0),
               "c": pt.sum(y, axis=0), "d": pt.sum(y), "e": pt.amax(y, axis=1),
               "f": pt.sum(x, axis=2) * 2}
    expected = {"a": xv.sum(axis=(0, 1)), "b": np.prod(1 + xv / 1000, axis=0),
                "c": yv.sum(axis=0), "d": yv.sum(), "e": yv.max(axis=1),
                "f": xv.sum(axis=2) * 2}
    for names in [("a", "e"), ("b", "e"), ("c", "e"), ("c", "f"), ("a", "d"),
                  tuple(outputs)]:
        prg = pt.generate_loopy({k: outputs[k] for k in names},
                                cl_device={"gpu": GPU, "cpu": CPU}[device])
        _, res = prg(queue, x=xv, y=yv)
        for k in names:
            np.testing.assert_allclose(res[k], expected[k], rtol=1e-12,
                                       err_msg=str(names))


@pytest.mark.parametrize("op", ["sum", "amax", "prod"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_column_reduction_in_one_kernel(queue, op, dtype):
    """On GPUs, a long reduction along a strided axis with few outputs
    (``sum(x, axis=0)``) runs in one kernel of 32 x 16 work-groups (rows
    tree-reduced in local memory) where the extents are multiples of
    those, else in two (chunks, then their reduction)."""
    rng = np.random.default_rng(3)
    fn = getattr(pt, op)
    for shape, axis, kernels in [((2048, 64), 0, 1), ((1024, 2, 32), 0, 1),
                                 ((1024, 3, 32), (0, 1), 1),
                                 ((2048, 40), 0, 2), ((2056, 64), 0, 2)]:
        a = rng.random(shape)
        if op == "prod":
            a = 1 + (a - 0.5) / 1000
        if np.dtype(dtype).kind == "i":
            a = (10 * a).astype(dtype) if op != "prod" else np.ones(shape,
                                                                  dtype)
        a = a.astype(dtype)
        x = pt.make_placeholder("x", shape, dtype)
        prg = pt.generate_loopy(fn(x, axis=axis), cl_device=GPU)
        assert _device_kernels(prg.program) == kernels, shape
        assert (kernels == 1) == ("l.1" in _hw_tags(prg.program).values())
        _, (res,) = prg(queue, x=a)
        want = getattr(np, {"amax": "max"}.get(op, op))(a, axis=axis)
        np.testing.assert_allclose(res, want, rtol=1e-5 if dtype == np.float32
                                   else 1e-12)


def test_flat_nests_index_through_variables(queue):
    """The indices derived from a flat nest's index are private integer
    variables computed once per work-item, shared by the nests of a level;
    loopy's write-race check is silenced for pytato's instructions only."""
    import warnings

    import loopy as lp
    import pymbolic.primitives as prim
    from loopy.diagnostic import WriteRaceConditionWarning

    from pytato.target.loopy.schedule.outputs import SILENCED_WRITE_RACES

    a = np.random.default_rng(1).random((16, 24))
    x = pt.make_placeholder("x", (16, 24), np.float64)
    y = 2 * x
    outs = {"u": y.T + 1, "v": pt.roll(y, 3, axis=1) * y,
            "w": pt.sum(y, axis=1)}
    for info in (GPU, CPU):
        prg = pt.generate_loopy(outs, default_schedule=False)
        t_unit = default_schedule(prg.program, info)
        knl = t_unit.default_entrypoint
        index_insns = [i for i in knl.instructions
                       if i.id.startswith("_pt_index_")]
        assert index_insns
        index_vars = {i.assignee.name for i in index_insns}
        for name in index_vars:
            tv = knl.temporary_variables[name]
            assert tv.address_space == lp.AddressSpace.PRIVATE
            assert tv.shape == ()
        # one variable per derived index and level, not per nest
        rhs = {str(i.expression) for i in index_insns}
        assert len(rhs) == len(index_insns)
        stores = [i for i in knl.instructions
                  if isinstance(i, lp.Assignment)
                  and i.assignee_var_names()[0] in ("u", "v")]
        for insn in stores:
            idx = insn.assignee.index_tuple
            assert all(isinstance(e, prim.Variable)
                       and e.name in index_vars for e in idx), insn
            assert insn.depends_on & {i.id for i in index_insns}
            # the contiguous (last) index in the form that folds the
            # row-major address back to the flat index
            assert idx[-1].name.endswith("_c"), insn
            assert not idx[0].name.endswith("_c"), insn
        assert SILENCED_WRITE_RACES in knl.silenced_warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error", WriteRaceConditionWarning)
            lp.generate_code_v2(t_unit)
        _, res = prg.copy(program=t_unit)(queue, x=a)
        np.testing.assert_allclose(res["u"], (2 * a).T + 1)
        np.testing.assert_allclose(res["v"],
                                   np.roll(2 * a, 3, axis=1) * 2 * a)
        np.testing.assert_allclose(res["w"], (2 * a).sum(axis=1))


def test_analysis_shortcuts_agree_with_loopy():
    """The schedule's and the split's quick reads of a kernel (the
    constant extent of an iname from its domain, whether an expression
    holds a reduction, the names an instruction uses) give what loopy's
    analyses give, on the kernels of random DAGs with and without the
    schedule, and on a triangular and an empty domain."""
    import loopy as lp
    from random_graphs import make_random_dag

    from pytato.target.loopy.build.split_sizes import _names_of
    from pytato.target.loopy.loopy_walk import holds_reduction
    from pytato.target.loopy.schedule import analysis

    units = []
    for seed in (3, 11):
        prg = pt.generate_loopy(make_random_dag(300, seed=seed),
                                default_schedule=False)
        units += [prg.program, default_schedule(prg.program, GPU),
                  default_schedule(prg.program, CPU)]
    x = pt.make_placeholder("x", (16, 8), np.float64)
    units.append(pt.generate_loopy(
        {"a": pt.sum(x, axis=1), "b": pt.amax(x) + x[::-1, :0].sum()},
        default_schedule=False).program)
    z = pt.make_placeholder("z", (16, 8), np.complex128)
    n = pt.make_placeholder("n", (16, 8), np.int32)
    units.append(pt.generate_loopy(
        {"c": pt.where(x > 1, x ** 2.5, n // 3 + n % 5), "d": abs(z) * z,
         "e": pt.logical_and(x < 2, pt.logical_not(n > 0)),
         "f": x.astype(np.float32) ** n},
        default_schedule=False).program)
    units.append(lp.make_kernel(
        "{[i, j]: 0 <= i < 16 and 0 <= j <= i}", "a[i, j] = 1",
        lang_version=(2018, 2)))
    units.append(lp.make_kernel(
        "{[i, j]: 0 <= i < 5 and 0 <= j < n}",
        "a[i] = sum(j, b[i, j])", lang_version=(2018, 2)))
    checked = 0
    for t_unit in units:
        knl = t_unit.default_entrypoint
        for iname in sorted(knl.all_inames()):
            quick = analysis._box_length(knl, iname)
            try:
                ref = int(knl.get_constant_iname_length(iname))
            except Exception:
                ref = None
            assert quick is None or quick == ref, iname
            assert analysis._constant_length(knl, iname) == ref
            checked += quick is not None
        for insn in knl.instructions:
            expected = frozenset(insn.reduction_inames())
            assert analysis._reduction_inames(insn) == expected
            assert _names_of(insn) == frozenset(
                insn.dependency_names() | insn.within_inames
                | insn.reduction_inames())
            if not isinstance(insn, lp.Assignment):
                continue
            finder = analysis._ReductionFinder()
            finder(insn.expression)
            assert holds_reduction(insn.expression) \
                in (finder.found, None)
    assert checked > 100


def test_one_element_outputs_without_race_warnings(queue, monkeypatch):
    """Outputs of one element, whose index is the constant 0 and whose
    loop (of extent 1) is mapped onto a work-group, are stored by one
    work-item: loopy's write-race warning is silenced for them (and their
    values are numpy's)."""
    import warnings

    import loopy as lp
    from loopy.diagnostic import WriteRaceConditionWarning

    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    x = pt.make_placeholder("x", (1,), np.uint32)
    d = pt.make_data_wrapper(np.arange(4, dtype=np.uint32))
    graph = {"a": pt.einsum("j,i->i", d, x), "b": x * x}
    with warnings.catch_warnings(record=True) as caught, \
            lp.CacheMode(False):
        warnings.simplefilter("always")
        _, out = pt.generate_loopy(graph)(queue, x=np.array([3], np.uint32))
    assert not [w for w in caught
                if issubclass(w.category, WriteRaceConditionWarning)]
    np.testing.assert_array_equal(out["a"], [18])
    np.testing.assert_array_equal(out["b"], [9])
    # a real race is still reported: a store of every work-item into one
    # element of a longer loop
    knl = lp.make_kernel("{[i]: 0 <= i < 64}", "y[0] = x[i]",
                         [lp.GlobalArg("x", np.float64, (64,)),
                          lp.GlobalArg("y", np.float64, (1,),
                                       is_output=True)],
                         lang_version=(2018, 2))
    knl = lp.tag_inames(knl, {"i": "l.0"})
    from pytato.target.loopy.schedule.default import (
        _single_writer_races_silenced,
    )
    kernel = knl.default_entrypoint
    assert _single_writer_races_silenced(kernel) is kernel
