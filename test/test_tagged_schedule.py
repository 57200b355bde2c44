"""Tags on arrays and axes never turn the default schedule off (see
"Which loops are the user's" in ``doc/codegen.rst``): graphs whose every
array carries axis tags, as arraycontext's ``unify_axes_tags`` leaves them,
launch the kernels of the same graphs without tags, on every path a client
takes (``prog(queue, ...)``, ``bind_to_context`` with a transformation,
subclasses of :class:`~pytato.target.loopy.LoopyPyOpenCLTarget`, the parts
of a distributed program, arraycontext's compiled functions); loop nests
left serial are reported through :mod:`logging`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from pytools.tag import Tag, UniqueTag

import pytato as pt
from pytato.target.loopy import LoopyPyOpenCLTarget
from pytato.target.loopy.build import split
from pytato.target.loopy.device import DeviceInfo
from pytato.target.loopy.run.launcher import linearized_subkernels


GPU = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                 name="fake GPU")

E, D, R = 4000, 10, 6   # elements, DOFs per element, reference DOFs


class ElementAxis(UniqueTag):
    pass


class DOFAxis(UniqueTag):
    pass


class RefDOFAxis(UniqueTag):
    pass


class KernelMark(Tag):
    """A tag of the kernel (as arraycontext's ``FromArrayContextCompile``)."""


def _axes(ary: pt.Array, *tags: type[Tag] | None) -> pt.Array:
    for i, tag in enumerate(tags):
        if tag is not None:
            ary = ary.with_tagged_axis(i, tag())
    return ary


Graph = tuple[dict[str, pt.Array], Callable[[dict[str, np.ndarray]],
                                            dict[str, np.ndarray]]]


def _graphs(tagged: bool) -> dict[str, Graph]:
    """name: (outputs, numpy reference of the inputs); with *tagged*, every
    array's axes carry tags (the inputs' tags spread by
    :func:`pytato.unify_axes_tags`)."""
    def ax(ary: pt.Array, *tags: type[Tag] | None) -> pt.Array:
        return _axes(ary, *tags) if tagged else ary

    u = ax(pt.make_placeholder("u", (E, D), np.float64), ElementAxis, DOFAxis)
    v = ax(pt.make_placeholder("v", (E, D), np.float64), ElementAxis, DOFAxis)
    m = ax(pt.make_placeholder("m", (R, D), np.float64), RefDOFAxis, DOFAxis)
    idx = ax(pt.make_placeholder("idx", (E,), np.int32), ElementAxis)
    graphs: dict[str, Graph] = {
        "elementwise": (
            {"y": 2 * u + pt.sin(v), "z": u * v - 1},
            lambda d: {"y": 2 * d["u"] + np.sin(d["v"]),
                       "z": d["u"] * d["v"] - 1}),
        "einsum": (
            {"y": pt.einsum("ij,ej->ei", m, u),
             "w": pt.einsum("ej,ej->e", u, v)},
            lambda d: {"y": np.einsum("ij,ej->ei", d["m"], d["u"]),
                       "w": np.einsum("ej,ej->e", d["u"], d["v"])}),
        "reduction": (
            {"rows": pt.sum(u, axis=1), "cols": pt.sum(u, axis=0),
             "total": pt.sum(u * v), "top": pt.amax(v, axis=1)},
            lambda d: {"rows": d["u"].sum(axis=1), "cols": d["u"].sum(axis=0),
                       "total": (d["u"] * d["v"]).sum(),
                       "top": d["v"].max(axis=1)}),
        "indexing": (
            {"gathered": u[idx] + v, "flipped": u[:, ::-1] * 3,
             "face": v[:, 0] + v[:, D - 1]},
            lambda d: {"gathered": d["u"][d["idx"]] + d["v"],
                       "flipped": d["u"][:, ::-1] * 3,
                       "face": d["v"][:, 0] + d["v"][:, D - 1]}),
        "stored": (
            {"y": pt.einsum("ij,ej->ei", m,
                            (2 * u).tagged(pt.tags.ImplStored())) + 1},
            lambda d: {"y": np.einsum("ij,ej->ei", d["m"], 2 * d["u"]) + 1}),
    }
    if tagged:
        graphs = {name: (pt.unify_axes_tags(outs), ref)
                  for name, (outs, ref) in graphs.items()}
    return graphs


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(40)
    return {"u": rng.random((E, D)), "v": rng.random((E, D)),
            "m": rng.random((R, D)),
            "idx": rng.integers(0, E, E).astype(np.int32)}


def _args_of(prog: Any, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    lowered = getattr(prog, "lowered_program", None) or prog.program
    names = lowered.default_entrypoint.arg_dict
    return {k: v for k, v in inputs.items() if k in names}


@pytest.fixture(autouse=True)
def _merged_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # the work sizes are read off the linearized kernel of the path that
    # runs a unit whole (the split path, which GPUs take by default, has no
    # such kernel; it is tested in test_cold_start.py and test_merged_split.py)
    monkeypatch.setenv(split.SPLIT_ENV, "0")


def _work_sizes(executor: Any) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (global size, local size) of each kernel a :mod:`loopy` executor
    launches (read off its linearized kernel, as its host code does; for
    any loopy target, those that pack kernel arguments included)."""
    t_unit = executor.get_typed_and_scheduled_translation_unit(
        executor.arg_to_dtype({}))
    knl = t_unit[executor.entrypoint]
    return [sk.work_sizes({})
            for sk in linearized_subkernels(knl, t_unit.callables_table)]


def _check(out: dict[str, Any], want: dict[str, np.ndarray]) -> None:
    assert set(out) == set(want)
    for name, ref in want.items():
        got = out[name]
        got = got.get() if isinstance(got, cla.Array) else np.asarray(got)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12,
                                   err_msg=name)


def _all_inames_tagged(t_unit: Any) -> bool:
    knl = t_unit.default_entrypoint
    return all(knl.iname_tags(i) for i in knl.all_inames())


def _parallel(sizes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> bool:
    return max(int(np.prod(g)) for g, _ in sizes) > 1


NAMES = sorted(_graphs(False))


# {{{ the README path and the bind_to_context path

@pytest.mark.parametrize("name", NAMES)
def test_readme_path_same_work_sizes(cl_ctx: cl.Context, name: str) -> None:
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    sizes = {}
    for tagged in (True, False):
        outs, ref = _graphs(tagged)[name]
        prog = pt.generate_loopy(outs)
        if tagged:
            # the axis tags reach the inames (metadata a transform finds
            # the loops by)
            assert _all_inames_tagged(prog.program)
        args = _args_of(prog, inputs)
        _, out = prog(queue, **args)
        _check(out, ref(inputs))
        sizes[tagged] = (_work_sizes(prog._executor(cl_ctx)),
                         prog.get_code(GPU))
    assert _parallel(sizes[False][0])
    assert sizes[True][0] == sizes[False][0]
    # the GPU schedule too: the same code
    assert sizes[True][1] == sizes[False][1]


def _identity(t_unit: Any) -> Any:
    return t_unit


def _mark_kernel(t_unit: Any) -> Any:
    # what arraycontext's compiled functions do before the client's transform
    return t_unit.with_kernel(t_unit.default_entrypoint.tagged(KernelMark()))


@pytest.mark.parametrize("transform", [_identity, _mark_kernel])
@pytest.mark.parametrize("name", NAMES)
def test_bind_to_context_path_same_work_sizes(
        cl_ctx: cl.Context, name: str,
        transform: Callable[[Any], Any]) -> None:
    import loopy as lp
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    sizes = {}
    for tagged in (True, False):
        outs, ref = _graphs(tagged)[name]
        prog = pt.generate_loopy(
            outs, options=lp.Options(no_numpy=True, return_dict=True),
            target=None).bind_to_context(cl_ctx)
        exe = prog.with_transformed_translation_unit(transform)
        dev_args = {k: cla.to_device(queue, a)
                    for k, a in _args_of(exe, inputs).items()}
        for _ in range(2):  # the first call, then the fast path
            _, out = exe(queue, **dev_args)
            _check(out, ref(inputs))
        sizes[tagged] = _work_sizes(exe.program)
    assert _parallel(sizes[False])
    assert sizes[True] == sizes[False]


class ArgSizeLimitingTarget(LoopyPyOpenCLTarget):
    """A target subclass, as arraycontext's for GPUs with shared virtual
    memory (kernel arguments limited in size)."""

    def __init__(self, limit_arg_size_nbytes: int) -> None:
        super().__init__()
        self.limit_arg_size_nbytes = limit_arg_size_nbytes

    def get_loopy_target(self) -> Any:
        import loopy as lp
        return lp.PyOpenCLTarget(
            limit_arg_size_nbytes=self.limit_arg_size_nbytes)


@pytest.mark.parametrize("name", ["einsum", "reduction"])
def test_target_subclass_same_work_sizes(cl_ctx: cl.Context,
                                         name: str) -> None:
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    plain_outs, _ = _graphs(False)[name]
    plain = pt.generate_loopy(plain_outs).bind_to_context(cl_ctx)
    _, out = plain(queue, **_args_of(plain, inputs))
    want = _work_sizes(plain.program)
    outs, ref = _graphs(True)[name]
    for path in ("readme", "bind_to_context"):
        prog = pt.generate_loopy(outs, target=ArgSizeLimitingTarget(4096))
        if path == "bind_to_context":
            prog = prog.bind_to_context(cl_ctx).with_transformed_translation_unit(
                _mark_kernel)
        args = _args_of(prog, inputs)
        _, out = prog(queue, **args)
        _check(out, ref(inputs))
        executor = (prog.program if path == "bind_to_context"
                    else prog._executor(cl_ctx))
        assert _work_sizes(executor) == want, path

# }}}


def _reordered_domains(t_unit: Any) -> Any:
    """A transformation changing the kernel's domains (their dimensions in
    reverse order: the same sets), so that the domains it was handed with
    the inames of each instruction joined stay joined."""
    import islpy as isl
    knl = t_unit.default_entrypoint
    domains = []
    for dom in knl.domains:
        names = dom.get_var_names(isl.dim_type.set)
        if len(names) > 1 and not dom.get_var_names(isl.dim_type.param):
            src, dst = ", ".join(names), ", ".join(reversed(names))
            perm = isl.BasicMap(f"{{ [{src}] -> [{dst}] }}")
            dom = dom.apply(perm)
            for i, name in enumerate(reversed(names)):
                dom = dom.set_dim_name(isl.dim_type.set, i, name)
        domains.append(dom)
    return t_unit.with_kernel(knl.copy(domains=domains))


def test_joined_domains_kept_by_the_user(
        cl_ctx: cl.Context, caplog: pytest.LogCaptureFixture) -> None:
    """Reductions whose domains a transformation changed (joined with
    others) compute right: layouts that need domains of their own are
    skipped (a column sum stays parallel over its columns); where no
    layout fits, the nest is left serial, with a warning naming why."""
    import loopy as lp
    queue = cl.CommandQueue(cl_ctx)
    un = _inputs()["u"]
    u = pt.make_placeholder("u", (E, D), np.float64)
    cases = {"cols": (pt.sum(u, axis=0), un.sum(axis=0), True),
             "total": (pt.sum(u), un.sum(), False)}
    for name, (y, want, parallel) in cases.items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
            exe = pt.generate_loopy(
                {name: y}, options=lp.Options(no_numpy=True, return_dict=True),
                function_name=f"joined_{name}", target=None).bind_to_context(
                    cl_ctx).with_transformed_translation_unit(_reordered_domains)
            import islpy as isl
            knl = exe.lowered_program.default_entrypoint
            assert any(len(d.get_var_names(isl.dim_type.set)) > 1
                       for d in knl.domains)
            _, out = exe(queue, u=cla.to_device(queue, un))
        np.testing.assert_allclose(out[name].get(), want, rtol=1e-12)
        # (the full sum keeps a layout on GPUs: parallel there)
        ran_parallel = _parallel(_work_sizes(exe.program))
        assert ran_parallel or not parallel, name
        msgs = _serial_records(caplog)
        if ran_parallel:
            assert not msgs
        else:
            (msg,) = msgs
            assert f"'joined_{name}'" in msg and "layout failed" in msg


# {{{ axis tags still reach the inames

def test_transform_finds_loops_by_axis_tag(cl_ctx: cl.Context) -> None:
    """A client's transformation finds the element loop by its tag and maps
    it; the schedule keeps the user's mapping (and maps nothing else of
    that nest)."""
    import loopy as lp
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    outs, ref = _graphs(True)["elementwise"]
    found: list[str] = []

    def by_tag(t_unit: Any) -> Any:
        knl = t_unit.default_entrypoint
        for iname in sorted(knl.all_inames()):
            if knl.iname_tags_of_type(iname, ElementAxis):
                found.append(iname)
                knl = lp.split_iname(knl, iname, 16, outer_tag="g.0",
                                     inner_tag="l.0")
        return t_unit.with_kernel(knl)

    exe = pt.generate_loopy(outs, target=None).bind_to_context(
        cl_ctx).with_transformed_translation_unit(by_tag)
    assert found
    _, out = exe(queue, **_args_of(exe, inputs))
    _check(out, ref(inputs))
    sizes = _work_sizes(exe.program)
    assert all(local == (16,) for _, local in sizes)
    assert all(glob == (16 * -(-E // 16),) for glob, _ in sizes)

# }}}


# {{{ distributed partitions

def test_distributed_parts_same_work_sizes(queue: cl.CommandQueue) -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    from pytato.distributed import (
        execute_distributed_partition,
        find_distributed_partition,
        generate_code_for_partition,
        make_distributed_recv,
        number_distributed_tags,
        staple_distributed_send,
    )
    comm = MPI.COMM_SELF
    inputs = _inputs()

    def parts(tagged: bool) -> tuple[Any, dict[Any, Any]]:
        def ax(ary: pt.Array) -> pt.Array:
            return _axes(ary, ElementAxis, DOFAxis) if tagged else ary
        u = ax(pt.make_placeholder("u", (E, D), np.float64))
        v = ax(pt.make_placeholder("v", (E, D), np.float64))
        # a rank sending to itself (a halo exchange with one rank)
        recv = ax(make_distributed_recv(0, "halo", (E, D), np.float64))
        flux = staple_distributed_send(2 * u + v, 0, "halo",
                                       stapled_to=recv * v - u)
        outs = {"flux": flux, "interior": pt.sin(u) * v}
        if tagged:
            outs = pt.unify_axes_tags(outs)
        part = find_distributed_partition(comm, outs)
        part, _ = number_distributed_tags(comm, part, base_tag=0)
        return part, generate_code_for_partition(
            part, generate_code=lambda d: pt.generate_loopy(
                d, target=ArgSizeLimitingTarget(4096)))

    sizes: dict[bool, list[Any]] = {}
    for tagged in (True, False):
        part, prgs = parts(tagged)
        out = execute_distributed_partition(
            part, prgs, queue, comm,
            input_args={"u": inputs["u"], "v": inputs["v"]})
        _check(out, {"flux": (2 * inputs["u"] + inputs["v"]) * inputs["v"]
                     - inputs["u"],
                     "interior": np.sin(inputs["u"]) * inputs["v"]})
        sizes[tagged] = [_work_sizes(prgs[pid]._executor(queue.context))
                         for pid in sorted(prgs, key=str)]
    assert all(_parallel(s) for s in sizes[False] if s)
    assert sizes[True] == sizes[False]

# }}}


# {{{ arraycontext's PytatoPyOpenCLArrayContext

def _actx_class() -> Any:
    ac = pytest.importorskip("arraycontext")
    base = ac.PytatoPyOpenCLArrayContext

    class TaggingArrayContext(base):  # type: ignore[misc,valid-type]
        """As DG clients do: the axis tags spread over the graph before
        code generation; the loopy program kept as generated."""

        def transform_dag(self, dag: Any) -> Any:
            return pt.unify_axes_tags(super().transform_dag(dag))

        def transform_loopy_program(self, t_unit: Any) -> Any:
            return t_unit

    return TaggingArrayContext


def _compiled_programs(compiled: Any) -> list[Any]:
    """The pytato programs (executables) of an arraycontext compiled
    function."""
    return [c.pytato_program for c in compiled.program_cache.values()]


def test_placeholder_takes_axes_of_other_taggable_arrays() -> None:
    """arraycontext makes the placeholders of a compiled function's frozen
    arguments with the axes of its own arrays (objects with ``tags``): their
    tags become the placeholder's axis tags."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class ForeignAxis:
        tags: frozenset[Tag]

    x = pt.make_placeholder("x", (3, 4), np.float64, axes=(
        ForeignAxis(frozenset({ElementAxis()})), pt.Axis(frozenset({DOFAxis()}))))
    assert [ax.tags for ax in x.axes] == [frozenset({ElementAxis()}),
                                          frozenset({DOFAxis()})]
    with pytest.raises(pt.diagnostic.InvalidArgumentError, match="Axis"):
        pt.make_placeholder("x", (3, 4), np.float64, axes=(1, 2))


@pytest.mark.parametrize("svm_limit", [None, 4096])
def test_arraycontext_compile_launches_parallel_kernels(
        queue: cl.CommandQueue, svm_limit: int | None) -> None:
    import loopy as lp
    actx_cls = _actx_class()
    actx = actx_cls(queue, _force_svm_arg_limit=svm_limit)
    if svm_limit is not None:
        # arraycontext's target subclass for GPUs with shared virtual memory
        assert type(actx.get_target()) is not LoopyPyOpenCLTarget
        assert isinstance(actx.get_target(), LoopyPyOpenCLTarget)
    inputs = _inputs()
    un, vn, mn = inputs["u"], inputs["v"][:, :R].copy(), inputs["m"]

    def tag(ary: Any) -> Any:
        return actx.tag_axis(1, DOFAxis(), actx.tag_axis(0, ElementAxis(), ary))

    # (the arguments: object arrays of frozen arrays, the containers of
    # arraycontext)
    def rhs(state: Any) -> Any:
        u, v, m = state
        du = actx.einsum("ij,ej->ei", m, u)
        return tag(du * v + actx.np.sin(du))

    def energy(state: Any) -> Any:
        u = state[0]
        return actx.tag_axis(0, ElementAxis(), actx.np.sum(u * u, axis=1))

    f_rhs, f_energy = actx.compile(rhs), actx.compile(energy)
    state = np.empty(3, dtype=object)
    state[:] = [actx.freeze(tag(actx.from_numpy(un))),
                actx.freeze(tag(actx.from_numpy(vn))),
                actx.freeze(actx.from_numpy(mn))]
    du = np.einsum("ij,ej->ei", mn, un)
    for _ in range(2):
        got = actx.to_numpy(actx.freeze(f_rhs(state)))
        np.testing.assert_allclose(got, du * vn + np.sin(du), rtol=1e-12)
        got = actx.to_numpy(actx.freeze(f_energy(state[:1])))
        np.testing.assert_allclose(got, (un * un).sum(axis=1), rtol=1e-12)
    for f in (f_rhs, f_energy):
        (exe,) = _compiled_programs(f)
        sizes = _work_sizes(exe.program)
        assert sizes
        # every kernel (of element-many outputs) runs on many work-groups
        for glob, local in sizes:
            assert int(np.prod(glob)) // int(np.prod(local)) > 1, sizes
        code = lp.generate_code_v2(exe.program.t_unit).device_code()
        assert "reqd_work_group_size(1, 1, 1)" not in code


# }}}


# {{{ the warning for loop nests left serial

def _serial_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "pytato.target.loopy.schedule"
            and r.levelno == logging.WARNING]


def test_no_warning_for_tagged_graphs(cl_ctx: cl.Context,
                                      caplog: pytest.LogCaptureFixture
                                      ) -> None:
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    outs, ref = _graphs(True)["einsum"]
    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        prog = pt.generate_loopy(outs, function_name="tagged_no_warning")
        _, out = prog(queue, **_args_of(prog, inputs))
    _check(out, ref(inputs))
    assert not _serial_records(caplog)


def test_warning_names_the_users_loops(cl_ctx: cl.Context,
                                       caplog: pytest.LogCaptureFixture
                                       ) -> None:
    """A transformation that unrolls the DOF loop makes the nest the
    user's: it is left serial, once per program, with the reason."""
    import loopy as lp
    queue = cl.CommandQueue(cl_ctx)
    inputs = _inputs()
    u = _axes(pt.make_placeholder("u", (E, D), np.float64),
              ElementAxis, DOFAxis)
    y = pt.unify_axes_tags(3 * u + 1)

    def unroll_dofs(t_unit: Any) -> Any:
        knl = t_unit.default_entrypoint
        (dof,) = [i for i in knl.all_inames()
                  if knl.iname_tags_of_type(i, DOFAxis)]
        return lp.tag_inames(t_unit, {dof: "unr"})

    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        exe = pt.generate_loopy(y, function_name="users_unrolled").bind_to_context(
            cl_ctx).with_transformed_translation_unit(unroll_dofs)
        for _ in range(3):
            _, (out,) = exe(queue, u=inputs["u"])
    np.testing.assert_allclose(out, 3 * inputs["u"] + 1)
    assert _work_sizes(exe.program) == [((1,), (1,))]
    (msg,) = _serial_records(caplog)
    assert "'users_unrolled'" in msg
    assert "the user's loop nest" in msg and "unr" in msg


def test_warning_names_calls(caplog: pytest.LogCaptureFixture) -> None:
    """A kernel that calls a kernel not of a traced function (the user's,
    as call_loopy's) keeps its loops: the warning says so (on the schedule
    applied by hand)."""
    import loopy as lp

    from pytato.target.loopy.schedule.default import default_schedule
    callee = lp.make_function(
        "{[i]: 0 <= i < 8}", "y[i] = 2*x[i]",
        [lp.GlobalArg("x", np.float64, (8,)),
         lp.GlobalArg("y", np.float64, (8,), is_output=True)],
        name="twice", lang_version=(2018, 2))
    caller = lp.make_kernel(
        "{[e, j]: 0 <= e < 100 and 0 <= j < 8}",
        """
        z[e, j] = x[e, j] + 1
        [j]: y[e, j] = twice([j]: z[e, j])
        """,
        [lp.GlobalArg("x", np.float64, (100, 8)),
         lp.GlobalArg("y", np.float64, (100, 8), is_output=True),
         lp.GlobalArg("z", np.float64, (100, 8), is_output=True)],
        name="calls_twice", lang_version=(2018, 2))
    t_unit = lp.merge([caller, callee])
    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        assert default_schedule(t_unit, GPU) is t_unit
    (msg,) = _serial_records(caplog)
    assert "'calls_twice'" in msg and "calls the kernel 'twice'" in msg

# }}}


def test_warning_names_shared_loops_and_other_instructions(
        caplog: pytest.LogCaptureFixture) -> None:
    """The other reasons for serial nests: loops shared by two nests, and
    instructions that are not plain stores (on the schedule applied by
    hand)."""
    import loopy as lp

    from pytato.target.loopy.schedule.default import default_schedule
    args = [lp.GlobalArg("x", np.float64, (100,)),
            lp.GlobalArg("a", np.float64, (100,), is_output=True),
            lp.GlobalArg("b", np.float64, (100, 8), is_output=True)]
    shared = lp.make_kernel(
        "{[i, j]: 0 <= i < 100 and 0 <= j < 8}",
        """
        a[i] = 2*x[i]  {id=store_a}
        b[i, j] = x[i] + j  {id=store_b}
        """, args, name="shares_i", lang_version=(2018, 2))
    c_code = lp.make_kernel(
        "{[i]: 0 <= i < 100}",
        [lp.CInstruction("i", "a[i] = 2*x[i];", assignees="a[i]",
                         read_variables=frozenset({"x"}), id="c_store")],
        args[:2], name="has_c_code", lang_version=(2018, 2))
    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        scheduled = default_schedule(shared, GPU)
        assert default_schedule(c_code, GPU) is c_code
    shared_msg, c_msg = _serial_records(caplog)
    assert "'shares_i'" in shared_msg and "['i'] are shared" in shared_msg
    assert "'store_a'" in shared_msg and "'store_b'" in shared_msg
    assert "'c_store' is a CInstruction" in c_msg
    # (the nests left serial keep their loops)
    knl = scheduled.default_entrypoint
    assert not any(knl.iname_tags(i) for i in ("i", "j"))


@pytest.mark.parametrize("tagged", [False, True])
def test_traced_functions_run_in_parallel(ctx_factory, tagged: bool,
                                          caplog: pytest.LogCaptureFixture
                                          ) -> None:
    """The bodies of traced functions (callee kernels of the translation
    unit) are inlined before the default schedule and mapped like any other
    loops (outlined functions in arraycontext are such calls); the program
    still shows the calls."""
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    x = pt.make_placeholder("x", (3000, 10), np.float64)
    if tagged:
        x = _axes(x, ElementAxis, DOFAxis)

    def f(u: pt.Array) -> dict[str, pt.Array]:
        return {"a": 2 * u + 1, "b": pt.sin(u), "s": pt.sum(u, axis=1)}

    r = pt.trace_call(f, x)
    inner = pt.trace_call(lambda v: pt.trace_call(f, v)["a"] * 3, x + 1)
    y = r["a"] * r["b"] + inner + pt.expand_dims(r["s"], 1)
    prog = pt.generate_loopy(y, function_name="traced_in_parallel")
    assert "_pt_fn_f" in prog.program.callables_table
    xv = np.random.default_rng(3).random((3000, 10))
    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        _, (out,) = prog(queue, x=xv)
    assert not _serial_records(caplog)
    ref = ((2 * xv + 1) * np.sin(xv) + 3 * (2 * (xv + 1) + 1)
           + xv.sum(axis=1)[:, None])
    np.testing.assert_allclose(out, ref, rtol=1e-13)
    code = prog.get_code(queue.device)
    assert "reqd_work_group_size(1, 1, 1)" not in code


def test_functions_of_symbolic_shapes_stay_calls(
        ctx_factory, caplog: pytest.LogCaptureFixture) -> None:
    """Functions taking size parameters are not inlined (loopy's inliner
    loses the bounds they give the loops): the caller keeps its loops,
    computes the right values and the warning says why."""
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,), np.float64)
    y = pt.trace_call(lambda u: 2 * u, x, identifier="twice") + x
    xv = np.arange(7.0)
    with caplog.at_level(logging.WARNING, "pytato.target.loopy.schedule"):
        # (a function name of its own: a program of an equal graph from
        # another test, found in the store, is not scheduled again)
        _, (out,) = pt.generate_loopy(
            y, function_name="symbolic_shape_calls")(queue, x=xv, n=7)
    np.testing.assert_allclose(out, 3 * xv)
    (msg,) = _serial_records(caplog)
    assert "size parameter(s) n" in msg
