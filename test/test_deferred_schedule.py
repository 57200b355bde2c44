"""Tests of the schedule deferred to the device that runs a program
(:func:`pytato.generate_loopy` without a device; see "Scheduling for the
device that runs the program" in :mod:`pytato.target.loopy.run.programs`) and
of the default schedule on kernels the user mapped in part or fully."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

import pytato as pt
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule


GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU")
CPU = DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096,
                 name="fake CPU")


def _hw_tags(t_unit: Any) -> dict[str, str]:
    from loopy.kernel.data import InameImplementationTag
    knl = t_unit.default_entrypoint
    return {n: str(t) for n in knl.all_inames() for t in knl.iname_tags(n)
            if isinstance(t, InameImplementationTag)}


def _code(t_unit: Any) -> str:
    import loopy as lp
    return lp.generate_code_v2(t_unit).device_code()


def _graphs() -> dict[str, tuple[Any, dict[str, np.ndarray], Any]]:
    """name: (result, inputs, numpy reference of the inputs)."""
    rng = np.random.default_rng(7)
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (3000,), np.float64)
    m = pt.make_placeholder("m", (300, 200), np.float64)
    t3 = pt.make_placeholder("t3", (40, 30, 20), np.float64)
    v = pt.make_placeholder("v", (200,), np.float64)
    a = pt.make_placeholder("a", (64, 5, 5), np.float64)
    u = pt.make_placeholder("u", (64, 5), np.float64)
    s = pt.make_placeholder("s", (n, 9), np.float32)
    big = pt.make_placeholder("big", (100000,), np.float64)
    inputs = {"x": rng.random(3000), "m": rng.random((300, 200)),
              "t3": rng.random((40, 30, 20)), "v": rng.random(200),
              "a": rng.random((64, 5, 5)), "u": rng.random((64, 5)),
              "s": rng.random((11, 9)).astype(np.float32),
              "big": rng.random(100000)}
    shared = (2 * m).tagged(pt.tags.ImplStored())
    return {
        "elementwise": (pt.sin(x) * 2 + x**2 - pt.exp(-x), {"x": inputs["x"]},
                        lambda d: np.sin(d["x"]) * 2 + d["x"]**2
                        - np.exp(-d["x"])),
        "rows": (pt.sum(m, axis=1), {"m": inputs["m"]},
                 lambda d: d["m"].sum(axis=1)),
        "cols": (pt.sum(m, axis=0), {"m": inputs["m"]},
                 lambda d: d["m"].sum(axis=0)),
        "multi_axis": (pt.sum(t3, axis=(0, 2)), {"t3": inputs["t3"]},
                       lambda d: d["t3"].sum(axis=(0, 2))),
        "amax": (pt.amax(t3, axis=(1, 2)), {"t3": inputs["t3"]},
                 lambda d: d["t3"].max(axis=(1, 2))),
        "full": (pt.sum(big), {"big": inputs["big"]},
                 lambda d: d["big"].sum()),
        "matvec": (m @ v, {"m": inputs["m"], "v": inputs["v"]},
                   lambda d: d["m"] @ d["v"]),
        "einsum": (pt.einsum("eij,ej->ei", a, u),
                   {"a": inputs["a"], "u": inputs["u"]},
                   lambda d: np.einsum("eij,ej->ei", d["a"], d["u"])),
        "dict": ({"p": shared + 1, "q": pt.sum(shared, axis=1),
                  "r": 3 * pt.sum(shared)},
                 {"m": inputs["m"]},
                 lambda d: {"p": 2 * d["m"] + 1,
                            "q": (2 * d["m"]).sum(axis=1),
                            "r": 3 * (2 * d["m"]).sum()}),
        "symbolic": ({"y": 2 * s + 1, "z": pt.sum(s, axis=0)},
                     {"s": inputs["s"]},
                     lambda d: {"y": 2 * d["s"] + 1,
                                "z": d["s"].sum(axis=0)}),
    }


def _check(got: Any, want: Any, rtol: float = 1e-10) -> None:
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=rtol, err_msg=k)
    else:
        (res,) = got
        np.testing.assert_allclose(res, want, rtol=rtol)


@pytest.mark.parametrize("name", list(_graphs()))
def test_deferred_equals_cl_device(queue, name):
    """The deferred schedule gives the kernels of ``cl_device=``: for the
    queue's device (after a call) and for described GPUs and CPUs."""
    result, inputs, ref = _graphs()[name]
    prog = pt.generate_loopy(result)
    assert prog.schedule_per_device
    assert not _hw_tags(prog.program)  # the lowered unit
    _, got = prog(queue, **inputs)
    _check(got, ref(inputs), rtol=1e-5 if name == "symbolic" else 1e-10)

    eager = pt.generate_loopy(result, cl_device=queue.device)
    assert not eager.schedule_per_device
    assert prog.program_for(queue.device) == eager.program
    assert prog.get_code() == eager.get_code()
    assert prog.get_code(queue.device) == eager.get_code()
    for info in (GPU, CPU):
        eager = pt.generate_loopy(result, cl_device=info)
        assert prog.program_for(info) == eager.program, info.name
        assert _code(prog.program_for(info)) == _code(eager.program)
    # the conservative schedule of an unknown device, as before
    fresh = pt.generate_loopy(result)
    assert fresh is prog  # the in-memory cache
    assert pt.generate_loopy(
        result, default_schedule=False).program == prog.program


def test_program_cache_and_repeated_calls(cl_ctx, monkeypatch):
    """The in-memory cache returns the deferred program with its schedules;
    repeated calls skip the argument checks."""
    from pytato.target.loopy.run.fast_call import _FAST_CALLS
    queue = cl.CommandQueue(cl_ctx)
    x = pt.make_placeholder("x", (1000,), np.float64)
    prog = pt.generate_loopy(3 * x - 1)
    xd = cla.to_device(queue, np.arange(1000.0))
    prog(queue, x=xd)
    prog(queue, x=xd)
    again = pt.generate_loopy(3 * x - 1)
    assert again is prog
    executor = prog._executor(cl_ctx)
    assert _FAST_CALLS.get(executor) is not None
    calls = [0]
    process = type(prog._arg_spec).process

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return process(self, *args, **kwargs)

    monkeypatch.setattr(type(prog._arg_spec), "process", counting)
    _, (res,) = again(queue, x=xd)
    assert calls[0] == 0
    np.testing.assert_allclose(res.get(), 3 * np.arange(1000.0) - 1)


def test_user_split_then_default_schedule(queue):
    """The README path with the user's split of ``_pt_out_dim0`` (what
    arraycontext's subclasses do): left as the user mapped it."""
    import loopy as lp
    x = pt.make_placeholder("x", (1000,), np.float64)
    prog = pt.generate_loopy(pt.sin(x) * 2 + x**2)
    prog2 = prog.with_transformed_program(lambda t: lp.split_iname(
        t, "_pt_out_dim0", 128, outer_tag="g.0", inner_tag="l.0"))
    assert prog2.schedule_per_device
    a = np.linspace(-2, 2, 1000)
    _, (res,) = prog2(queue, x=a)
    np.testing.assert_allclose(res, np.sin(a) * 2 + a**2, rtol=1e-13)
    assert _hw_tags(prog2.program_for(queue.device)) == {
        "_pt_out_dim0_outer": "g.0", "_pt_out_dim0_inner": "l.0"}
    assert "reqd_work_group_size(128, 1, 1)" in prog2.get_code()
    # the original program is unchanged
    _, (res,) = prog(queue, x=a)
    np.testing.assert_allclose(res, np.sin(a) * 2 + a**2, rtol=1e-13)


def test_fully_hand_mapped_left_alone(queue):
    import loopy as lp
    x = pt.make_placeholder("x", (40, 50), np.float64)
    y = pt.make_placeholder("y", (50,), np.float64)
    prog = pt.generate_loopy({"a": 2 * x + y, "b": pt.sum(x, axis=0)})

    def hand_map(t_unit: Any) -> Any:
        t_unit = lp.split_iname(t_unit, "a_dim1", 16, outer_tag="g.0",
                                inner_tag="l.0")
        t_unit = lp.split_iname(t_unit, "b_dim0", 16, outer_tag="g.0",
                                inner_tag="l.0")
        return lp.tag_inames(t_unit, {"a_dim0": "for"})

    mapped = prog.with_transformed_program(hand_map)
    for info in (CPU, GPU):
        t_unit = default_schedule(mapped.program, info)
        assert t_unit is mapped.program
    # for the device of the queue: the same kernel (a GPU's program may
    # carry a loopy target of its own)
    ran = mapped.program_for(queue.device).default_entrypoint
    knl = mapped.program.default_entrypoint
    assert ran.instructions == knl.instructions
    assert ran.inames == knl.inames
    assert ran.domains == knl.domains
    xa, ya = np.random.default_rng(2).random((40, 50)), np.arange(50.0)
    _, res = mapped(queue, x=xa, y=ya)
    np.testing.assert_allclose(res["a"], 2 * xa + ya)
    np.testing.assert_allclose(res["b"], xa.sum(axis=0), rtol=1e-13)


def _loop_of(t_unit: Any, output: str) -> str:
    """The (one) loop of the instruction storing *output*: fused nests are
    named after the first array stored in them."""
    (iname,) = t_unit.default_entrypoint.id_to_insn[
        f"_pt_insn_{output}"].within_inames
    return str(iname)


def test_partly_mapped_gets_the_rest(queue):
    """The user maps one loop nest; the schedule maps the others (also
    those the user's nest reads from or that read the user's results), and
    leaves the user's as it is, even where it maps only some of its loops.
    """
    import loopy as lp
    rng = np.random.default_rng(3)
    x = pt.make_placeholder("x", (1000,), np.float64)
    m = pt.make_placeholder("m", (64, 300), np.float64)
    t = (2 * x).tagged(pt.tags.ImplStored())
    graph = {"a": t + 1, "b": pt.sum(m, axis=1), "c": pt.roll(t, 3) * t,
             "d": 3 * m}
    prog = pt.generate_loopy(graph)
    xa, ma = rng.random(1000), rng.random((64, 300))
    want = {"a": 2 * xa + 1, "b": ma.sum(axis=1),
            "c": 4 * np.roll(xa, 3) * xa, "d": 3 * ma}
    loop_a = _loop_of(prog.program, "a")  # shared with t
    loop_c = _loop_of(prog.program, "c")
    assert loop_a != loop_c

    def split_a(t_unit: Any) -> Any:
        return lp.split_iname(t_unit, loop_a, 64, outer_tag="g.0",
                              inner_tag="l.0")

    def split_c(t_unit: Any) -> Any:
        return lp.split_iname(t_unit, loop_c, 48, outer_tag="g.0",
                              inner_tag="l.0")

    def tag_d_rows(t_unit: Any) -> Any:
        # one loop of the nest of d mapped: the other stays sequential
        return lp.tag_inames(t_unit, {"d_dim0": "g.0"})

    for fs in [(split_a,), (split_c,), (tag_d_rows,),
               (split_a, tag_d_rows)]:
        part = prog
        for f in fs:
            part = part.with_transformed_program(f)
        for device in (queue.device, CPU, GPU):
            t_unit = part.program_for(device)
            tags = _hw_tags(t_unit)
            for f, loop, size in [(split_a, loop_a, 64), (split_c, loop_c, 48)]:
                if f in fs:
                    assert tags[f"{loop}_outer"] == "g.0"
                    assert tags[f"{loop}_inner"] == "l.0"
                    assert t_unit.default_entrypoint.get_constant_iname_length(
                        f"{loop}_inner") == size
                    assert not any(n.startswith(f"{loop}_") and n not in (
                        f"{loop}_outer", f"{loop}_inner") for n in tags)
            if tag_d_rows in fs:
                assert tags["d_dim0"] == "g.0"
                assert "d_dim1" not in tags
            # all nests are mapped (those of a level share their inames)
            for insn in t_unit.default_entrypoint.instructions:
                if isinstance(insn, lp.Assignment):
                    loops = insn.within_inames | insn.reduction_inames()
                    assert any(n in tags for n in loops), insn.id
        _, res = part(queue, x=xa, m=ma)
        for k in want:
            np.testing.assert_allclose(res[k], want[k], rtol=1e-13, err_msg=k)


def test_user_split_without_tags_is_the_users(queue):
    """Inames the user created are the user's, tagged or not: the nest keeps
    them as they are."""
    import loopy as lp
    x = pt.make_placeholder("x", (100,), np.float64)
    w = pt.make_placeholder("w", (30,), np.float64)
    prog = pt.generate_loopy({"a": x * 3, "b": w + 1})
    part = prog.with_transformed_program(
        lambda t: lp.split_iname(t, "a_dim0", 4))
    t_unit = part.program_for(queue.device)
    tags = _hw_tags(t_unit)
    assert not any(n.startswith("a_dim0") for n in tags)
    assert "l.0" in tags.values()  # b's nest
    _, res = part(queue, x=np.arange(100.0), w=np.ones(30))
    np.testing.assert_allclose(res["a"], 3 * np.arange(100.0))
    np.testing.assert_allclose(res["b"], 2 * np.ones(30))


def _frozen_transform(t_unit: Any) -> Any:
    """An arraycontext-like ``transform_loopy_program``: split the first
    axis of every stored output over work-groups of 16."""
    import loopy as lp
    knl = t_unit.default_entrypoint
    for iname in sorted(knl.all_inames()):
        if iname.endswith("_dim0") and not iname.startswith("_pt_"):
            knl = lp.split_iname(knl, iname, 16, outer_tag="g.0",
                                 inner_tag="l.0")
    return t_unit.with_kernel(knl)


def test_bind_to_context_arraycontext_path(cl_ctx):
    """arraycontext's path: no_numpy and return_dict, target None,
    bind_to_context, then with_transformed_translation_unit."""
    import loopy as lp
    queue = cl.CommandQueue(cl_ctx)
    rng = np.random.default_rng(5)
    x = pt.make_placeholder("x", (70, 20), np.float64)
    v = pt.make_placeholder("v", (20,), np.float64)
    dag = {"y": pt.sin(x) + 1, "z": x @ v, "s": pt.sum(x)}
    prog = pt.generate_loopy(dag, options=lp.Options(no_numpy=True,
                                                     return_dict=True),
                             function_name="frozen_result", target=None)
    exe = prog.bind_to_context(cl_ctx)
    assert exe.lowered_program is prog.program
    eager = pt.generate_loopy(dag, options=lp.Options(no_numpy=True,
                                                      return_dict=True),
                              function_name="frozen_result",
                              cl_device=cl_ctx.devices[0])
    assert exe.program.t_unit == eager.program
    xa, va = rng.random((70, 20)), rng.random(20)
    args = {"x": cla.to_device(queue, xa), "v": cla.to_device(queue, va)}
    want = {"y": np.sin(xa) + 1, "z": xa @ va, "s": xa.sum()}

    identity = exe.with_transformed_translation_unit(lambda t: t)
    assert identity.program.t_unit == eager.program
    transformed = exe.with_transformed_translation_unit(_frozen_transform)
    tags = _hw_tags(transformed.program.t_unit)
    assert tags["y_dim0_outer"] == "g.0" and tags["z_dim0_inner"] == "l.0"
    assert _hw_tags(transformed.lowered_program) == {
        k: v for k, v in tags.items() if k.startswith(("y_dim0", "z_dim0"))}
    for runner in (exe, identity, transformed):
        for _ in range(3):  # the checked call, then repeated calls
            _, res = runner(queue, **args)
            for k in want:
                np.testing.assert_allclose(res[k].get(), want[k], rtol=1e-12,
                                           err_msg=k)
    # transformations compose on the lowered unit
    twice = transformed.with_transformed_translation_unit(
        lambda t: lp.tag_inames(t, {"y_dim1": "unr"}))
    assert _hw_tags(twice.program.t_unit)["y_dim1"] == "unr"
    _, res = twice(queue, **args)
    np.testing.assert_allclose(res["y"].get(), want["y"], rtol=1e-12)


def test_get_code_by_device(queue):
    from pytato.target.loopy.run.executor import device_code
    x = pt.make_placeholder("x", (1000,), np.float64)
    prog = pt.generate_loopy(2 * x + 1)
    # before any call: the conservative schedule
    conservative = device_code(default_schedule(prog.program, None))
    assert prog.get_code() == conservative
    assert "reqd_work_group_size(256" in prog.get_code(GPU)
    assert "reqd_work_group_size(32" in prog.get_code(CPU)
    here = pt.generate_loopy(2 * x + 1, cl_device=queue.device).get_code()
    assert prog.get_code(queue.device) == here
    assert prog.show_code(queue.device) == here
    prog(queue, x=np.ones(1000))
    # after a call: the code for the device it ran on
    assert prog.get_code() == here
    assert str(prog) == here
    # a program scheduled for a device shows its one code
    eager = pt.generate_loopy(2 * x + 1, cl_device=GPU)
    assert eager.get_code() == eager.get_code(queue.device) \
        == prog.get_code(GPU)


def test_store_key_names_the_device(queue):
    from pytato.target.loopy import PROGRAM_CACHE
    from pytato.target.loopy.store import program_store
    x = pt.make_placeholder("x", (500,), np.float64)
    y = pt.sum(x * x) + 1
    prog = pt.generate_loopy(y)
    assert prog.store_key is not None
    lowered_key = pt.generate_loopy(y, default_schedule=False).store_key
    assert prog.store_key == lowered_key  # names no device
    keys = {info: prog._scheduled(info)[1] for info in (CPU, GPU)}
    prog(queue, x=np.ones(500))
    here = DeviceInfo.of(queue.device)
    keys[here] = prog._scheduled(here)[1]
    assert None not in keys.values()
    assert len(set(keys.values()) | {prog.store_key}) == 4
    for info, key in keys.items():
        assert program_store.load(key, "unit") == prog.program_for(info)
    # a new process (here: an emptied in-memory cache) finds them again
    PROGRAM_CACHE.clear()
    again = pt.generate_loopy(y)
    assert again is not prog and again.store_key == prog.store_key
    assert again._scheduled(GPU)[1] == keys[GPU]
    _, (res,) = again(queue, x=np.full(500, 2.0))
    np.testing.assert_allclose(res, 2001.0)


def test_multi_device_descriptions(queue):
    """Programs keep one schedule per device description: equal devices
    share it."""
    x = pt.make_placeholder("x", (100,), np.float64)
    prog = pt.generate_loopy(x + 1)
    gpu_again = DeviceInfo(kind="gpu", compute_units=132,
                           max_work_group_size=1024, name="fake GPU")
    assert prog.program_for(GPU) is prog.program_for(gpu_again)
    assert prog.program_for(GPU) is not prog.program_for(CPU)
