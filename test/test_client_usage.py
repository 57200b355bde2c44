"""End-to-end use of pytato as a lazy array context (arraycontext's
``PytatoPyOpenCLArrayContext``) and the discretization libraries on top of it
(meshmode, grudge) use it.

The array context here is written for this test: it exercises the pytato
calls such a context makes, in the order it makes them, with the calling
conventions of pytato's upstream release:

* *thaw*: :func:`pytato.make_data_wrapper` of device (or host) arrays, with
  axis tags;
* numpy-like lazy operations, :func:`pytato.einsum` with tagged reduction
  descriptors, :meth:`~pytato.Array.tagged` and
  :meth:`~pytato.Array.with_tagged_axis` with :mod:`pytools.tag` tags
  (user subclasses built with positional arguments, unique tags);
* *freeze*: a :class:`~pytato.DictOfNamedArrays` of the leaves of a
  container, transformed (data wrappers deduplicated then replaced by
  placeholders by a :class:`~pytato.transform.CopyMapper` subclass, axis
  tags unified with a custom equations collector, materialization, call
  inlining), generated with :func:`pytato.generate_loopy`, bound to the
  context, transformed with a loopy transformation that maps output axes
  to hardware axes by their tags, and run;
* *compile*: a function traced with placeholders and run repeatedly;
* function outlining with :func:`pytato.trace_call`;
* distributed sends and receives on one rank.

Every result is compared with :mod:`numpy`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import loopy as lp
import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest
from pytools.tag import Tag, UniqueTag, tag_dataclass

import pytato as pt
from pytato.array import Array, AxesT, DataWrapper, Placeholder
from pytato.transform import (
    ArrayOrNames,
    CombineMapper,
    CopyMapper,
    TransformMapperCache,
)
from pytato.transform.metadata import AxesTagsEquationCollector


# {{{ tags, as a discretization library defines them

class DiscretizationAxisTag(UniqueTag):
    """Base of the axis tags of this test's discretization."""


@tag_dataclass
class ElementAxisTag(DiscretizationAxisTag):
    """The axis of elements (a tag with no fields)."""


@tag_dataclass
class DOFAxisTag(DiscretizationAxisTag):
    """The axis of nodes in an element."""


@tag_dataclass
class FaceAxisTag(UniqueTag):
    """An axis of faces, built with a positional argument."""
    dim: int


@tag_dataclass
class GroupTag(Tag):
    """An array tag carrying the element group's index (positional)."""
    igroup: int


@tag_dataclass
class ReductionOverDOFsTag(UniqueTag):
    """A reduction descriptor tag."""
    kind: str


# }}}


# {{{ a minimal lazy array context

@dataclass(frozen=True)
class DOFArray:
    """One array per element group (meshmode's container), shape
    ``(nelements, ndofs)``."""
    groups: tuple[Any, ...]


@dataclass(frozen=True)
class State:
    """A container of containers and plain arrays."""
    u: DOFArray
    v: DOFArray
    flag: Any


def _leaves(container: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(container, DOFArray):
        out: dict[str, Any] = {}
        for i, g in enumerate(container.groups):
            out.update(_leaves(g, f"{prefix}_{i}"))
        return out
    if isinstance(container, State):
        out = {}
        for f in fields(container):
            out.update(_leaves(getattr(container, f.name),
                               f"{prefix}_{f.name}"))
        return out
    return {"out" + prefix: container}


def _rebuild(container: Any, values: Mapping[str, Any], prefix: str = ""
             ) -> Any:
    if isinstance(container, DOFArray):
        return DOFArray(tuple(_rebuild(g, values, f"{prefix}_{i}")
                              for i, g in enumerate(container.groups)))
    if isinstance(container, State):
        return State(**{f.name: _rebuild(getattr(container, f.name), values,
                                         f"{prefix}_{f.name}")
                        for f in fields(container)})
    return values["out" + prefix]


class _DataWrapperToPlaceholder(CopyMapper):
    """Replaces each data wrapper by a placeholder, recording the data bound
    to it (as a lazy array context does so that the generated code does not
    depend on the data)."""

    def __init__(self, _cache: TransformMapperCache[ArrayOrNames, []]
                 | None = None) -> None:
        super().__init__(_cache=_cache)
        self.bound: dict[str, Any] = {}
        self.seen_placeholders: list[str] = []

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        name = f"_actx_dw_{len(self.bound)}"
        self.bound[name] = expr.data
        return pt.make_placeholder(name, expr.shape, expr.dtype,
                                   axes=expr.axes, tags=expr.tags)

    def map_placeholder(self, expr: Placeholder) -> Array:
        self.seen_placeholders.append(expr.name)
        return super().map_placeholder(expr)


class _NodeCounter(CombineMapper[int, int, []]):
    """Counts the array nodes below an expression with repetition (a
    :class:`~pytato.transform.CombineMapper` with generic parameters)."""

    def combine(self, *args: int) -> int:
        return sum(args)

    def map_placeholder(self, expr: Placeholder) -> int:
        return 1

    def map_data_wrapper(self, expr: DataWrapper) -> int:
        return 1

    def map_index_lambda(self, expr: pt.IndexLambda) -> int:
        return 1 + super().map_index_lambda(expr)


class _GroupConcatEquationsCollector(AxesTagsEquationCollector):
    """Relates, in addition to the default equations, the concatenated axis
    of a concatenation to that of each of its arrays (element groups
    concatenated along their element axes: a custom
    ``equations_collector_t``)."""

    def map_concatenate(self, expr: pt.Concatenate) -> None:
        super().map_concatenate(expr)
        for ary in expr.arrays:
            self.record_equation(self.get_var_for_axis(expr, expr.axis),
                                 self.get_var_for_axis(ary, expr.axis))


def _hardware_axes_transform(t_unit: lp.TranslationUnit
                             ) -> lp.TranslationUnit:
    """A meshmode-like loopy transformation: the iname of each instruction
    of the element axis goes to ``g.0`` and that of the DOF axis to
    ``l.0``, by the tags that pytato propagates from the output axes."""
    knl = t_unit.default_entrypoint
    out_names = {a.name for a in knl.args if a.is_output}
    insn_inames = [insn.within_inames for insn in knl.instructions
                   if set(insn.assignee_var_names()) & out_names]

    def has(inames: frozenset[str], tag_t: type[Tag]) -> bool:
        return any(isinstance(t, tag_t)
                   for i in inames for t in knl.inames[i].tags)

    # l.0 only where every output has a DOF axis: loopy wants all
    # instructions to use the same local axes
    use_local = all(has(inames, DOFAxisTag) for inames in insn_inames)
    iname_to_tag: dict[str, str] = {}
    for inames in insn_inames:
        # one iname per hardware axis and instruction (a matrix with two
        # element axes gets the first in g.0)
        for hw_axis, tag_t in [("g.0", ElementAxisTag), ("l.0", DOFAxisTag)]:
            if hw_axis == "l.0" and not use_local:
                continue
            if any(iname_to_tag.get(i) == hw_axis for i in inames):
                continue
            for name in sorted(inames):
                if (name not in iname_to_tag
                        and has(frozenset({name}), tag_t)):
                    iname_to_tag[name] = hw_axis
                    break
    # reduction inames (tagged too, through the reduction descriptors)
    # stay sequential
    knl = lp.tag_inames(knl, iname_to_tag)
    return t_unit.with_kernel(knl)


def _split_outputs_transform(t_unit: lp.TranslationUnit
                             ) -> lp.TranslationUnit:
    """Another common one: split the first iname of every output's
    instruction and map it to ``g.0``/``l.0``."""
    knl = t_unit.default_entrypoint
    out_names = {a.name for a in knl.args if a.is_output}
    inames = set()
    for insn in knl.instructions:
        if set(insn.assignee_var_names()) & out_names and insn.within_inames:
            inames.add(sorted(insn.within_inames)[0])
    for iname in sorted(inames):
        if iname not in knl.all_inames():
            continue
        if any(isinstance(t, lp.kernel.data.HardwareConcurrentTag)
               for t in knl.inames[iname].tags):
            continue
        knl = lp.split_iname(knl, iname, 4, outer_tag="g.0",
                             inner_tag="l.0")
    return t_unit.with_kernel(knl)


class LazyArrayContext:
    """A lazy array context: arrays are pytato expressions, *freeze* runs
    them on the device."""

    def __init__(self, queue: cl.CommandQueue,
                 transform: Callable[[lp.TranslationUnit],
                                     lp.TranslationUnit] | None
                 = _hardware_axes_transform) -> None:
        self.queue = queue
        self.context = queue.context
        self.transform = transform
        self.stats: list[dict[type, int]] = []
        self.programs: dict[pt.DictOfNamedArrays, Any] = {}
        self.program_hits = 0

    # {{{ thaw/freeze

    def thaw(self, ary: Any) -> Array:
        axes: AxesT = (
            pt.Axis(frozenset({ElementAxisTag()})),
            pt.Axis(frozenset({DOFAxisTag()})))[:ary.ndim]
        if ary.ndim > 2:
            axes = (*axes, *(pt.Axis(frozenset())
                             for _ in range(ary.ndim - 2)))
        return pt.make_data_wrapper(ary, axes=axes)

    def transform_dag(self, dag: pt.DictOfNamedArrays) -> pt.DictOfNamedArrays:
        dag = pt.transform.materialize_with_mpms(dag)
        return pt.unify_axes_tags(
            dag, tag_t=DiscretizationAxisTag,
            equations_collector_t=_GroupConcatEquationsCollector,
            unify_redn_descrs=True)

    def _normalize(self, dag: pt.DictOfNamedArrays
                   ) -> tuple[pt.DictOfNamedArrays, dict[str, Any]]:
        dag = pt.transform.deduplicate_data_wrappers(dag)
        mapper = _DataWrapperToPlaceholder()
        dag = mapper(dag)
        # map_and_copy with a function that drops the group tags
        dag = pt.transform.map_and_copy(
            dag, lambda e: e.without_tags(e.tags_of_type(GroupTag))
            if isinstance(e, Array) and e.tags_of_type(GroupTag) else e)
        return dag, mapper.bound

    def freeze(self, container: Any) -> Any:
        leaves = _leaves(container)
        # data wrappers are frozen by their data; everything else computed
        direct = {k: v.data for k, v in leaves.items()
                  if isinstance(v, DataWrapper)}
        lazy = {k: v for k, v in leaves.items() if k not in direct}
        results: dict[str, Any] = {}
        for k, v in direct.items():
            results[k] = (v if isinstance(v, cla.Array)
                          else cla.to_device(self.queue, v))
        if lazy:
            dag = pt.make_dict_of_named_arrays(lazy)
            dag = self.transform_dag(dag)
            dag = pt.tag_all_calls_to_be_inlined(dag)
            dag = pt.inline_calls(dag)
            dag, bound = self._normalize(dag)
            self.stats.append(dict(pt.analysis.get_node_type_counts(dag)))
            assert pt.analysis.get_num_nodes(dag) >= len(lazy)
            # programs are kept by the normalized DAG, equal for equal
            # computations on other data
            exe = self.programs.get(dag)
            if exe is None:
                prg = pt.generate_loopy(
                    dag, options=lp.Options(no_numpy=True, return_dict=True),
                    function_name="frozen_result", target=None)
                exe = prg.bind_to_context(self.context)
                if self.transform is not None:
                    exe = exe.with_transformed_translation_unit(
                        self.transform)
                self.programs[dag] = exe
            else:
                self.program_hits += 1
            # the data as it was wrapped: device arrays (perhaps views at
            # offsets) or host arrays in any order
            _, out = exe(self.queue, **bound)
            assert set(out) == set(lazy)
            results.update(out)
        return _rebuild(container, results)

    # }}}

    def compile(self, f: Callable[..., Any]) -> Callable[..., Any]:
        """Trace *f* once with placeholders for its arguments' arrays and
        return a function running the generated code."""
        cache: dict[Any, Any] = {}

        def wrapper(*args: cla.Array) -> Any:
            key = tuple((a.shape, a.dtype) for a in args)
            if key not in cache:
                phs = [pt.make_placeholder(f"_actx_in_{i}", a.shape, a.dtype,
                                           axes=self.thaw(a).axes)
                       for i, a in enumerate(args)]
                out = f(*phs)
                leaves = _leaves(out)
                dag = self.transform_dag(pt.make_dict_of_named_arrays(leaves))
                dag, bound = self._normalize(dag)
                prg = pt.generate_loopy(
                    dag, options=lp.Options(no_numpy=True, return_dict=True),
                    function_name="compiled", target=None)
                exe = prg.bind_to_context(self.context)
                if self.transform is not None:
                    exe = exe.with_transformed_translation_unit(self.transform)
                cache[key] = (out, exe, bound)
            out, exe, bound = cache[key]
            _, res = exe(self.queue,
                         **{f"_actx_in_{i}": a for i, a in enumerate(args)},
                         **bound)
            return _rebuild(out, res)

        return wrapper


# }}}


def _rand(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.random(shape) - 0.5 + 1j * rng.random(shape)
                ).astype(dtype)
    return (rng.random(shape) - 0.5).astype(dtype)


def _host(x: Any) -> Any:
    if isinstance(x, DOFArray):
        return DOFArray(tuple(_host(g) for g in x.groups))
    if isinstance(x, State):
        return State(_host(x.u), _host(x.v), _host(x.flag))
    return x.get() if isinstance(x, cla.Array) else np.asarray(x)


# element groups (nelements, ndofs): one empty
GROUPS = [(7, 6), (0, 3), (5, 10)]


def _check(got: Any, ref: Any) -> None:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


# {{{ the operator a discretization applies: mass matrices, face lifts

def _apply(mat: Any, u: Any, igroup: int) -> Any:
    descr = pt.ReductionDescriptor(frozenset({ReductionOverDOFsTag("dof")}))
    mv = pt.einsum("ij,ej->ei", mat, u, index_to_redn_descr={"j": descr})
    return (2 * mv + pt.conj(u) - 1).tagged(GroupTag(igroup))


def _apply_np(mat: np.ndarray, u: np.ndarray) -> np.ndarray:
    return 2 * np.einsum("ij,ej->ei", mat, u) + np.conj(u) - 1


# }}}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("transform", [_hardware_axes_transform,
                                       _split_outputs_transform, None])
def test_thaw_compute_freeze(queue: cl.CommandQueue, dtype: Any,
                             transform: Any) -> None:
    actx = LazyArrayContext(queue, transform)
    us = [_rand(s, dtype, i) for i, s in enumerate(GROUPS)]
    mats = [_rand((s[1], s[1]), np.float64, 10 + i)
            for i, s in enumerate(GROUPS)]
    flag = _rand((4,), np.bool_, 3)

    u = DOFArray(tuple(actx.thaw(cla.to_device(queue, a)) for a in us))
    # host data for the matrices, as a discretization's cached operators
    mat_dws = [pt.make_data_wrapper(m) for m in mats]
    # the same data wrapped twice: deduplicated before code generation
    mat_dws_again = [pt.make_data_wrapper(m) for m in mats]
    v = DOFArray(tuple(
        _apply(m, g, i) + pt.einsum("ij,ej->ei", m2, g)
        for i, (m, m2, g) in enumerate(zip(mat_dws, mat_dws_again, u.groups,
                                           strict=True))))
    flag_dw = pt.make_data_wrapper(cla.to_device(queue, flag))
    state = State(u=u, v=v, flag=pt.logical_not(flag_dw))

    frozen = _host(actx.freeze(state))
    for i, a in enumerate(us):
        _check(frozen.u.groups[i], a)
        ref = _apply_np(mats[i], a) + np.einsum("ij,ej->ei", mats[i], a)
        _check(frozen.v.groups[i], ref.astype(dtype))
    _check(frozen.flag, np.logical_not(flag))

    # the freeze saw the deduplicated wrappers as placeholders
    counts = actx.stats[-1]
    assert DataWrapper not in counts
    assert counts[Placeholder] == len(GROUPS) * 2 + 1

    # the same computation on other data: the normalized DAG is equal (and
    # hashes equal), the program is reused
    us2 = [_rand(s, dtype, 30 + i) for i, s in enumerate(GROUPS)]
    state2 = State(
        u=DOFArray(tuple(actx.thaw(cla.to_device(queue, a)) for a in us2)),
        v=DOFArray(tuple(
            _apply(m, g, i) + pt.einsum("ij,ej->ei", m2, g)
            for i, (m, m2, g) in enumerate(zip(
                [pt.make_data_wrapper(m) for m in mats],
                [pt.make_data_wrapper(m) for m in mats],
                [actx.thaw(cla.to_device(queue, a)) for a in us2],
                strict=True)))),
        flag=pt.logical_not(pt.make_data_wrapper(
            cla.to_device(queue, flag))))
    hits = actx.program_hits
    frozen2 = _host(actx.freeze(state2))
    assert actx.program_hits == hits + 1
    for i, a in enumerate(us2):
        ref = _apply_np(mats[i], a) + np.einsum("ij,ej->ei", mats[i], a)
        _check(frozen2.v.groups[i], ref.astype(dtype))

    # re-thaw the frozen result and compute again: data wrappers of device
    # arrays made by the generated code
    u2 = DOFArray(tuple(actx.thaw(cla.to_device(queue, g))
                        for g in frozen.v.groups))
    again = _host(actx.freeze(DOFArray(tuple(
        pt.sum(g, axis=1) for g in u2.groups))))
    for i, g in enumerate(frozen.v.groups):
        _check(again.groups[i], g.sum(axis=1))


def test_tags_through_freeze(queue: cl.CommandQueue) -> None:
    actx = LazyArrayContext(queue)
    a = _rand((7, 6), np.float64)
    faces = _rand((3, 7, 6), np.float64, 1)
    u = actx.thaw(cla.to_device(queue, a))
    assert u.axes[0].tags_of_type(ElementAxisTag) == {ElementAxisTag()}
    # a face-lift-like einsum with a tag built with a positional argument
    f = pt.make_data_wrapper(faces).with_tagged_axis(0, FaceAxisTag(2))
    lifted = pt.einsum("fej,ej->ej", f, u)
    face_sum = pt.einsum("fej->ef", f)
    assert face_sum.axes[0].tags == frozenset()
    b = _rand((3, 6), np.float64, 2)
    both = pt.concatenate([u, pt.make_data_wrapper(b)], axis=0)
    outputs = pt.make_dict_of_named_arrays(
        {"lifted": lifted, "face_sum": face_sum, "both": both})
    unified = pt.unify_axes_tags(
        outputs, tag_t=DiscretizationAxisTag,
        equations_collector_t=_GroupConcatEquationsCollector,
        unify_redn_descrs=True)
    # propagated by the default equations: from u's axes through the
    # einsums (face_sum's element axis is f's, related to u's by lifted)
    assert unified["lifted"].axes[1].tags_of_type(DOFAxisTag) == {DOFAxisTag()}
    assert unified["face_sum"].axes[0].tags == {ElementAxisTag()}
    assert unified["both"].axes[1].tags == {DOFAxisTag()}
    # not propagated: FaceAxisTag is not a DiscretizationAxisTag
    assert not unified["face_sum"].axes[1].tags
    # the concatenated axis: by the custom collector's equations only
    assert unified["both"].axes[0].tags == {ElementAxisTag()}
    assert not pt.unify_axes_tags(
        outputs, tag_t=DiscretizationAxisTag)["both"].axes[0].tags
    # the reduction over faces of the first einsum got f's axis-0 tag only
    # when FaceAxisTag is propagated
    unified_all = pt.unify_axes_tags(
        pt.make_dict_of_named_arrays({"lifted": lifted}),
        tag_t=Tag, unify_redn_descrs=True)
    einsums = [n for n in _all_nodes(unified_all) if isinstance(n, pt.Einsum)]
    assert einsums
    descrs = list(einsums[0].redn_axis_to_redn_descr.values())
    assert any(d.tags_of_type(FaceAxisTag) for d in descrs)

    out = _host(actx.freeze(State(
        u=DOFArray((lifted, both)), v=DOFArray((face_sum.T,)),
        flag=pt.any(u > 0.25, axis=1))))
    _check(out.u.groups[0], np.einsum("fej,ej->ej", faces, a))
    _check(out.u.groups[1], np.concatenate([a, b]))
    _check(out.v.groups[0], np.einsum("fej->ef", faces).T)
    _check(out.flag, np.any(a > 0.25, axis=1))

    # unique tags conflict: two element tags of one type on equal axes
    @tag_dataclass
    class OtherElementAxisTag(DiscretizationAxisTag):
        which: int

    import pytools.tag
    # as pytools decides: one tag per direct subclass of UniqueTag
    with pytest.raises(pytools.tag.NonUniqueTagError, match="Discretization"):
        u.with_tagged_axis(1, OtherElementAxisTag(0))
    w = pt.make_data_wrapper(a).with_tagged_axis(0, OtherElementAxisTag(0))
    assert (w.axes[0].tags_of_type(DiscretizationAxisTag)
            == {OtherElementAxisTag(0)})
    # equal axes with different unique tags: refused when unified
    with pytest.raises(pt.diagnostic.NonUniqueTagError):
        pt.unify_axes_tags(w + u, tag_t=DiscretizationAxisTag)
    # ... unless that tag type is not the one propagated
    ok = pt.unify_axes_tags(w + u, tag_t=DOFAxisTag)
    assert ok.axes[1].tags == {DOFAxisTag()}
    with pytest.raises(pt.diagnostic.NonUniqueTagError):
        u.with_tagged_axis(0, ElementAxisTag()).tagged(
            FaceAxisTag(1)).tagged(FaceAxisTag(2))


def _all_nodes(expr: Any) -> list[Any]:
    from pytato.analysis import get_node_multiplicities
    return list(get_node_multiplicities(expr))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_compiled_function(queue: cl.CommandQueue, dtype: Any) -> None:
    actx = LazyArrayContext(queue)
    const = _rand((6,), dtype, 5)

    def rhs(u: Array, w: Array) -> State:
        c = pt.make_data_wrapper(const)
        if dtype == np.bool_:
            return State(u=DOFArray((u | w,)), v=DOFArray((u & c,)),
                         flag=pt.all(u, axis=1))
        return State(u=DOFArray((u * w + c,)),
                     v=DOFArray((pt.where(pt.abs(u) > 0.2, u, w),)),
                     flag=pt.sum(u, axis=1))

    f = actx.compile(rhs)
    for nel in [4, 0, 4]:
        a = _rand((nel, 6), dtype, nel)
        b = _rand((nel, 6), dtype, nel + 1)
        out = _host(f(cla.to_device(queue, a), cla.to_device(queue, b)))
        if dtype == np.bool_:
            _check(out.u.groups[0], a | b)
            _check(out.v.groups[0], a & const)
            _check(out.flag, np.all(a, axis=1))
        else:
            _check(out.u.groups[0], a * b + const)
            _check(out.v.groups[0], np.where(np.abs(a) > 0.2, a, b))
            _check(out.flag, np.sum(a, axis=1))


def test_mappers_as_clients_write_them(queue: cl.CommandQueue) -> None:
    x = pt.make_placeholder("x", (5, 3), np.float64)
    data = np.arange(15.0).reshape(5, 3)
    dw = pt.make_data_wrapper(data)
    # the same memory wrapped again: one after deduplication
    dw2 = pt.make_data_wrapper(data)
    # equal contents in other memory: kept apart
    dw3 = pt.make_data_wrapper(data.copy())
    y = pt.sin(x) + dw * dw2
    dag = pt.make_dict_of_named_arrays({"y": y, "z": 2 * y})

    # sin, *, + and x, dw, dw3
    assert _NodeCounter()(pt.sin(x) + dw * dw3) == 6
    dedup = pt.transform.deduplicate_data_wrappers(dag)
    dws = [n for n in _all_nodes(dedup) if isinstance(n, DataWrapper)]
    assert len(dws) == 1
    assert len([n for n in _all_nodes(pt.transform.deduplicate_data_wrappers(
        dw + dw3)) if isinstance(n, DataWrapper)]) == 2

    # a shared TransformMapperCache: two mappers agree on the copies
    cache = TransformMapperCache[ArrayOrNames, []](
        err_on_collision=True, err_on_created_duplicate=False)
    m1 = _DataWrapperToPlaceholder(_cache=cache)
    r1 = m1(dedup)
    m2 = _DataWrapperToPlaceholder(_cache=cache)
    r2 = m2(dedup)
    assert r1 is r2 or r1 == r2
    assert m1.seen_placeholders == ["x"]
    assert len(m1.bound) == 1 and not m2.bound

    xv = _rand((5, 3), np.float64)
    _, out = pt.generate_loopy(r1)(queue, x=xv, **m1.bound)
    ref = np.sin(xv) + np.arange(15.0).reshape(5, 3) ** 2
    np.testing.assert_allclose(out["y"], ref)
    np.testing.assert_allclose(out["z"], 2 * ref)

    counts = pt.analysis.get_node_type_counts(r1)
    assert counts[Placeholder] == 2
    assert pt.analysis.get_num_nodes(r1) == sum(counts.values())

    # the same DAG on the numpy and jax targets
    np.testing.assert_allclose(
        pt.generate_numpy(r1)(x=xv, **m1.bound)["y"], ref)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    res = pt.generate_jax(r1)(x=xv, **m1.bound)
    np.testing.assert_allclose(np.asarray(res["z"]), 2 * ref)


# {{{ outlining with trace_call, as a discretization library does

def _flux(u_int: Array, u_ext: Array) -> dict[str, Array]:
    avg = 0.5 * (u_int + u_ext)
    return {"avg": avg, "jump": (u_int - u_ext).tagged(GroupTag(1))}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("inline", [False, True])
def test_outlined_functions(queue: cl.CommandQueue, dtype: Any,
                            inline: bool) -> None:
    actx = LazyArrayContext(queue, None)
    results = []
    refs = []
    for nel in [3, 0]:
        a, b = _rand((nel, 4), dtype, 1), _rand((nel, 4), dtype, 2)
        ua, ub = actx.thaw(a), actx.thaw(b)
        call = pt.trace_call(_flux, ua, ub, identifier="flux")
        call2 = pt.trace_call(_flux, ub, ua, identifier="flux")
        results.append(call["avg"] + call2["jump"] * call["jump"])
        refs.append(0.5 * (a + b) + (b - a) * (a - b))
    dag = pt.make_dict_of_named_arrays(
        {f"r{i}": r for i, r in enumerate(results)})
    assert pt.analysis.get_num_call_sites(dag) == 4
    if inline:
        dag = pt.inline_calls(pt.tag_all_calls_to_be_inlined(dag))
        assert pt.analysis.get_num_call_sites(dag) == 0
    out = _host(actx.freeze(DOFArray(tuple(dag[f"r{i}"]
                                           for i in range(len(refs))))))
    for g, ref in zip(out.groups, refs, strict=True):
        _check(g, ref)

    # the whole DAG (calls included) on the numpy target
    xs = {}
    dag2, bound = actx._normalize(dag)
    xs.update(bound)
    res = pt.generate_numpy(dag2)(**xs)
    for i, ref in enumerate(refs):
        _check(np.asarray(res[f"r{i}"]), ref)


# }}}


def test_distributed_on_one_rank(queue: cl.CommandQueue) -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    comm = MPI.COMM_SELF
    actx = LazyArrayContext(queue, None)
    a = _rand((5, 4), np.complex128, 7)
    u = actx.thaw(a)
    # a "halo exchange" with oneself, in two rounds
    recv = pt.make_distributed_recv(src_rank=0, comm_tag="halo", shape=(5, 4),
                                    dtype=np.complex128, axes=u.axes)
    send = pt.make_distributed_send(u[::-1], dest_rank=0, comm_tag="halo")
    assert send.dest_rank == 0 and send.comm_tag == "halo"
    y = pt.staple_distributed_send(u[::-1], dest_rank=0, comm_tag="halo",
                                   stapled_to=u + recv)
    recv2 = pt.make_distributed_recv(0, "halo2", (5, 4), np.complex128)
    flux = pt.staple_distributed_send(y, dest_rank=0, comm_tag="halo2",
                                      stapled_to=recv2 * 2)
    outputs = pt.make_dict_of_named_arrays({"flux": flux, "r2": recv - u})
    # as the array context does before partitioning
    outputs, bound = actx._normalize(outputs)
    part = pt.find_distributed_partition(comm, outputs)
    part, _ = pt.number_distributed_tags(comm, part, base_tag=100)
    pt.verify_distributed_partition(comm, part)
    prgs = pt.generate_code_for_partition(part)
    out = pt.execute_distributed_partition(
        part, prgs, queue, comm,
        input_args={k: cla.to_device(queue, v) for k, v in bound.items()})
    out = {k: _host(v) for k, v in out.items()}
    _check(out["flux"], 2 * (a + a[::-1]))
    _check(out["r2"], a[::-1] - a)

    # as a distributed array context runs the parts: each generated by
    # itself, bound to the context and transformed
    prgs = {}
    for pid, p in part.parts.items():
        part_outputs = pt.make_dict_of_named_arrays(
            {name: part.name_to_output[name] for name in p.output_names})
        prgs[pid] = pt.generate_loopy(
            part_outputs, options=lp.Options(no_numpy=True, return_dict=True),
            function_name=f"part_{pid}", target=None
        ).bind_to_context(queue.context).with_transformed_translation_unit(
            _split_outputs_transform)
    for _ in range(2):
        out = pt.execute_distributed_partition(
            part, prgs, queue, comm, input_args=bound,
            allocator=cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue)))
        out = {k: _host(v) for k, v in out.items()}
        _check(out["flux"], 2 * (a + a[::-1]))
        _check(out["r2"], a[::-1] - a)


# {{{ the numpy namespace of a lazy array context

def _np_namespace_cases() -> list[tuple[str, Callable[..., Any],
                                        Callable[..., Any]]]:
    """(name, pytato version, numpy version) of the operations an array
    context's ``actx.np`` maps to pytato."""
    return [
        ("conj_real_imag",
         lambda m, a, b: m.real(m.conj(a)) - m.imag(a) * 2,
         None),
        ("where_abs", lambda m, a, b: m.where(abs(a) > abs(b), a, b), None),
        ("reshape_ravel",
         lambda m, a, b: m.reshape(a, (-1,), order="C")
         + m.reshape(b, -1, order="F"), None),
        ("transpose_stack",
         lambda m, a, b: m.stack([a.T, m.transpose(b)], axis=0), None),
        ("concat_broadcast",
         lambda m, a, b: m.concatenate([a, m.broadcast_to(b[:1], b.shape)],
                                       axis=0), None),
        ("zeros_like_full",
         lambda m, a, b: m.zeros_like(a) + m.full(a.shape, 2, a.dtype)
         + m.ones_like(b), None),
        ("minmax",
         lambda m, a, b: m.maximum(m.real(a), m.real(b))
         - m.minimum(m.real(a), 0.5), None),
        ("reductions",
         lambda m, a, b: m.stack([m.sum(a, axis=0),
                                  m.prod(b, axis=0) + m.sum(a * b, axis=0)]),
         None),
        ("norm", lambda m, a, b: m.sqrt(m.sum(abs(a) ** 2)) + m.vdot(a, b),
         None),
        ("matmul_dot", lambda m, a, b: (a @ b.T) + m.dot(a, b.T), None),
        ("equal_isnan",
         lambda m, a, b: m.logical_or(m.equal(a, b), m.isnan(m.real(a))),
         None),
        ("array_equal",
         lambda m, a, b: m.stack([m.all(m.equal(a, a)), m.any(m.equal(a, b))]),
         None),
        ("arange_complex",
         lambda m, a, b: a[0] * m.arange(a.shape[1], dtype=a.dtype), None),
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("nel", [5, 0])
@pytest.mark.parametrize("case", _np_namespace_cases(), ids=lambda c: c[0])
def test_numpy_namespace(queue: cl.CommandQueue, dtype: Any, nel: int,
                         case: Any) -> None:
    name, f, _ = case
    if nel == 0 and name in ("arange_complex", "concat_broadcast"):
        pytest.skip("indexes the first element")
    a_h, b_h = _rand((nel, 4), dtype, 1), _rand((nel, 4), dtype, 2)
    ref = f(np, a_h, b_h)
    ref = np.asarray(ref)
    for transform in [_hardware_axes_transform, _split_outputs_transform]:
        actx = LazyArrayContext(queue, transform)
        a = actx.thaw(cla.to_device(queue, a_h))
        b = actx.thaw(cla.to_device(queue, b_h))
        res = f(pt, a, b)
        if not isinstance(res, pt.Array):
            # all inputs were data: still an array in a lazy context
            raise AssertionError(f"{name}: got {type(res)}")
        out = _host(actx.freeze(DOFArray((res,)))).groups[0]
        assert out.shape == ref.shape and out.dtype == ref.dtype, (
            name, out.dtype, ref.dtype)
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12)


# }}}


def test_loopy_kernel_calls(queue: cl.CommandQueue) -> None:
    """An element-wise loopy kernel called from the DAG (meshmode's
    ``actx.call_loopy``), the result frozen through the transforms."""
    knl = lp.make_kernel(
        "{[e, j]: 0 <= e < nel and 0 <= j < ndofs}",
        """
        out[e, j] = 2 * u[e, j] + sum_u[e]
        """,
        [lp.GlobalArg("u", np.float64, shape=("nel", "ndofs")),
         lp.GlobalArg("sum_u", np.float64, shape=("nel",)),
         lp.GlobalArg("out", np.float64, shape=("nel", "ndofs"),
                      is_output=True),
         lp.ValueArg("nel", np.int32), lp.ValueArg("ndofs", np.int32)],
        name="resample", lang_version=(2018, 2))
    actx = LazyArrayContext(queue)
    for nel in [6, 0]:
        a = _rand((nel, 5), np.float64, nel)
        u = actx.thaw(cla.to_device(queue, a))
        call = pt.loopy.call_loopy(
            knl, {"u": u, "sum_u": pt.sum(u, axis=1), "nel": nel,
                  "ndofs": 5})
        res = call["out"]
        assert res.shape == (nel, 5) and res.dtype == np.float64
        out = _host(actx.freeze(DOFArray((res + 1, res))))
        ref = 2 * a + a.sum(axis=1)[:, None]
        _check(out.groups[0], ref + 1)
        _check(out.groups[1], ref)


class _Scaler(pt.transform.CopyMapperWithExtraArgs[[float]]):
    """Scales the data of each placeholder by an extra argument (a
    :class:`~pytato.transform.CopyMapperWithExtraArgs` with its parameter)."""

    def map_placeholder(self, expr: Placeholder, factor: float) -> Array:
        return factor * super().map_placeholder(expr, factor)


def test_extra_args_mapper_and_named_temporaries(queue: cl.CommandQueue
                                                 ) -> None:
    x = pt.make_placeholder("x", (4, 3), np.complex128)
    y = (pt.exp(x) * 2).tagged((pt.tags.ImplStored(),
                                pt.tags.PrefixNamed("flux")))
    z = pt.sum(y, axis=1) + pt.sum(y, axis=0)[:1]
    scaled = _Scaler()(z, 3.0)
    xv = _rand((4, 3), np.complex128)
    prg = pt.generate_loopy(scaled)
    assert any(tv.startswith("flux") for tv in
               prg.program.default_entrypoint.temporary_variables)
    _, (out,) = prg(queue, x=xv)
    yv = np.exp(3 * xv) * 2
    _check(_host(out), yv.sum(axis=1) + yv.sum(axis=0)[:1])


# {{{ outlining by hand, naming, targets: what the array context's internals do

def test_outlined_call_built_by_hand(queue: cl.CommandQueue) -> None:
    """A function definition and its call sites built from their classes
    (an array context's ``outline``), with a function identifier tag."""
    from pytato.function import Call, FunctionDefinition, ReturnType
    from pytato.tags import FunctionIdentifier

    params = {"u_int": ((4, 3), np.complex128), "u_ext": ((4, 3),
                                                         np.complex128)}
    phs = {n: pt.make_placeholder(n, s, d) for n, (s, d) in params.items()}
    returns = _flux(phs["u_int"], phs["u_ext"])
    fdef = FunctionDefinition(
        frozenset(params), ReturnType.DICT_OF_ARRAYS, returns,
        tags=frozenset({FunctionIdentifier("flux")}))
    assert fdef.tags_of_type(FunctionIdentifier) == {FunctionIdentifier("flux")}
    a, b = _rand((4, 3), np.complex128, 1), _rand((4, 3), np.complex128, 2)
    ua, ub = pt.make_data_wrapper(a), pt.make_data_wrapper(b)
    call1 = Call(fdef, {"u_int": ua, "u_ext": ub}, tags=frozenset())
    call2 = Call(fdef, {"u_int": ub, "u_ext": ua}, tags=frozenset())
    assert set(call1.keys()) == {"avg", "jump"}
    res = call1["avg"] * call2["jump"]
    assert pt.analysis.get_num_call_sites(res) == 2
    _, (out,) = pt.generate_loopy(res)(queue)
    _check(_host(out), 0.5 * (a + b) * (b - a))
    inlined = pt.inline_calls(pt.tag_all_calls_to_be_inlined(res))
    assert pt.analysis.get_num_call_sites(inlined) == 0
    _, (out,) = pt.generate_loopy(inlined)(queue)
    _check(_host(out), 0.5 * (a + b) * (b - a))


class _NamingDataWrapperMapper(CopyMapper):
    """Names the placeholders replacing data wrappers as an array context
    does: with :func:`pytato.codegen._generate_name_for_temp` (honouring
    :class:`~pytato.tags.Named`/:class:`~pytato.tags.PrefixNamed`)."""

    def __init__(self) -> None:
        from pytools import UniqueNameGenerator
        super().__init__()
        self.vng = UniqueNameGenerator()
        self.bound: dict[str, Any] = {}

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        from pytato.codegen import _generate_name_for_temp
        name = _generate_name_for_temp(expr, self.vng, "_actx_dw")
        self.bound[name] = expr.data
        return pt.make_placeholder(name, expr.shape, expr.dtype,
                                   axes=expr.axes, tags=expr.tags)


def test_data_wrapper_names_and_targets(queue: cl.CommandQueue) -> None:
    from pytato.scalar_expr import SCALAR_CLASSES
    from pytato.target.loopy import BoundPyOpenCLExecutable, LoopyPyOpenCLTarget

    for scalar in [1, 2.5, 1j, True, np.float64(1), np.complex128(1j),
                   np.bool_(True)]:
        assert isinstance(scalar, SCALAR_CLASSES)

    a = _rand((6, 2), np.float64, 1)
    b = _rand((6, 2), np.bool_, 2)
    dws = [pt.make_data_wrapper(a, tags=frozenset({pt.tags.Named("metric")})),
           pt.make_data_wrapper(cla.to_device(queue, b)).tagged(
               pt.tags.PrefixNamed("mask")),
           pt.make_data_wrapper(a + 1)]
    res = pt.where(dws[1], dws[0], dws[2]).with_tagged_axis(
        0, frozenset({ElementAxisTag()}))
    assert res.axes[0].tags == {ElementAxisTag()}
    mapper = _NamingDataWrapperMapper()
    dag = mapper(pt.make_dict_of_named_arrays({"res": res, "n": pt.sum(res)}))
    assert "metric" in mapper.bound
    assert any(n.startswith("mask") for n in mapper.bound)
    assert any(n.startswith("_actx_dw") for n in mapper.bound)
    inputs = pt.transform.InputGatherer()(dag)
    assert {i.name for i in inputs} == set(mapper.bound)

    class ArgSizeLimitingTarget(LoopyPyOpenCLTarget):
        """A target of an array context, limiting kernel argument sizes."""
        def __init__(self, limit: int) -> None:
            super().__init__()
            self.limit = limit

        def get_loopy_target(self) -> lp.PyOpenCLTarget:
            return lp.PyOpenCLTarget(limit_arg_size_nbytes=self.limit)

    prg = pt.generate_loopy(
        dag, options=lp.Options(no_numpy=True, return_dict=True),
        function_name="frozen_res", target=ArgSizeLimitingTarget(4096))
    exe = prg.bind_to_context(queue.context).with_transformed_translation_unit(
        _hardware_axes_transform)
    assert isinstance(exe, BoundPyOpenCLExecutable)
    allocator = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(queue))
    for _ in range(2):
        _, out = exe(queue=queue, allocator=allocator,
                     **{k: cla.to_device(queue, v) if isinstance(v, np.ndarray)
                        else v for k, v in mapper.bound.items()})
        ref = np.where(b, a, a + 1)
        _check(_host(out["res"]), ref)
        _check(_host(out["n"]), ref.sum())

    # the same DAG for jax, jitted
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jprg = pt.generate_jax(dag, jit=True, function_name="frozen_res")
    from pytato.target.python import BoundJAXPythonProgram
    assert isinstance(jprg, BoundJAXPythonProgram)
    jout = jprg(**{k: v if isinstance(v, np.ndarray) else v.get()
                   for k, v in mapper.bound.items()})
    _check(np.asarray(jout["res"]), np.where(b, a, a + 1))

# }}}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_compiled_identity_and_shared_outputs(queue: cl.CommandQueue,
                                              dtype: Any) -> None:
    """Outputs that are inputs, constants, or one array under two names."""
    actx = LazyArrayContext(queue)
    const = _rand((5, 3), dtype, 9)

    def f(u: Array, w: Array) -> State:
        c = pt.make_data_wrapper(const)
        shared = pt.logical_not(u) if dtype == np.bool_ else u - w
        return State(u=DOFArray((u, shared, c)),
                     v=DOFArray((shared, w)),
                     flag=pt.any(pt.equal(u, w), axis=1))

    g = actx.compile(f)
    for nel in [5, 0]:
        a, b = _rand((nel, 3), dtype, 1), _rand((nel, 3), dtype, 2)
        out = _host(g(cla.to_device(queue, a), cla.to_device(queue, b)))
        shared = np.logical_not(a) if dtype == np.bool_ else a - b
        _check(out.u.groups[0], a)
        _check(out.u.groups[1], shared)
        _check(out.u.groups[2], const)
        _check(out.v.groups[0], shared)
        _check(out.v.groups[1], b)
        _check(out.flag, np.any(a == b, axis=1))


# {{{ DAG rewriters of a fusing array context

class _EinsumCollector(pt.transform.CachedWalkMapper[[]]):
    """Collects the einsums of a DAG once each (a cached walk mapper keyed
    by the node, as a fusing array context writes them)."""

    def __init__(self) -> None:
        super().__init__()
        self.einsums: list[pt.Einsum] = []

    def get_cache_key(self, expr: ArrayOrNames) -> ArrayOrNames:
        return expr

    def post_visit(self, expr: Any) -> None:
        if isinstance(expr, pt.Einsum):
            self.einsums.append(expr)


class _EinsumToIndexLambda(CopyMapper):
    """Lowers tagged einsums to index lambdas, keeps axes and tags, and
    rebuilds index lambdas by keyword with new bindings."""

    def map_einsum(self, expr: pt.Einsum) -> Array:
        from pytato.transform.lower_to_index_lambda import to_index_lambda
        new = super().map_einsum(expr)
        assert isinstance(new, pt.Einsum)
        lowered = to_index_lambda(new)
        assert lowered.axes == expr.axes
        return lowered

    def map_index_lambda(self, expr: pt.IndexLambda) -> Array:
        from constantdict import constantdict
        bindings = constantdict({name: self.rec(bnd)
                                 for name, bnd in expr.bindings.items()})
        return pt.IndexLambda(
            expr=expr.expr, shape=expr.shape, dtype=expr.dtype,
            bindings=bindings,
            var_to_reduction_descr=expr.var_to_reduction_descr,
            tags=expr.tags, axes=expr.axes)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_fusing_context_rewrites(queue: cl.CommandQueue, dtype: Any) -> None:
    from pytato.array import EinsumElementwiseAxis, EinsumReductionAxis

    actx = LazyArrayContext(queue)
    results = []
    refs = []
    for i, (nel, ndofs) in enumerate(GROUPS):
        a = _rand((nel, ndofs), dtype, i)
        m = _rand((ndofs, ndofs), np.float64, 20 + i)
        u = actx.thaw(a)
        descr = pt.ReductionDescriptor(frozenset({ReductionOverDOFsTag("d")}))
        e = pt.einsum("ij,ej->ei", pt.make_data_wrapper(m), u,
                      index_to_redn_descr={"j": descr})
        results.append(pt.exp(e) * u)
        refs.append(np.exp(np.einsum("ij,ej->ei", m, a)) * a)
    dag = pt.make_dict_of_named_arrays(
        {f"r{i}": r for i, r in enumerate(results)})
    dag = actx.transform_dag(dag)

    coll = _EinsumCollector()
    coll(dag)
    assert len(coll.einsums) == len(GROUPS)
    for ein in coll.einsums:
        # the reduction descriptor has its own tag, and the DOF tag of the
        # axis it reduces over (unify_redn_descrs)
        (redn_axis, rdescr), = ein.redn_axis_to_redn_descr.items()
        assert isinstance(redn_axis, EinsumReductionAxis)
        assert rdescr.tags_of_type(ReductionOverDOFsTag)
        assert rdescr.tags_of_type(DOFAxisTag) == {DOFAxisTag()}
        assert isinstance(ein.access_descriptors[1][0], EinsumElementwiseAxis)
        assert ein.axes[0].tags == {ElementAxisTag()}

    lowered = _EinsumToIndexLambda()(dag)
    assert pt.analysis.get_node_type_counts(lowered).get(pt.Einsum, 0) == 0
    nusers = pt.analysis.get_nusers(lowered)
    assert all(n >= 0 for n in nusers.values())
    out = _host(actx.freeze(DOFArray(tuple(lowered[f"r{i}"]
                                           for i in range(len(GROUPS))))))
    for g, ref in zip(out.groups, refs, strict=True):
        _check(g, ref)

# }}}


# {{{ loopy transformations that change domains (prefetching)

def _prefetch_transform(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """A meshmode-like einsum transformation: elements in ``g.0`` (split),
    DOFs in ``l.0``, and the operator matrix prefetched into local memory,
    swept over the output DOF and the reduction inames (loopy needs these
    inames in one domain)."""
    knl = t_unit.default_entrypoint
    insns = [i for i in knl.instructions
             if "_pt_out" in "".join(i.assignee_var_names())]
    if not insns:
        # empty outputs: nothing computed
        return t_unit
    (insn,) = insns
    iel, idof = sorted(insn.within_inames)
    (red,) = insn.reduction_inames()
    assert (knl.get_home_domain_index(iel) == knl.get_home_domain_index(idof)
            == knl.get_home_domain_index(red))
    knl = lp.split_iname(knl, iel, 4, outer_tag="g.0", inner_tag="l.1")
    knl = lp.tag_inames(knl, {idof: "l.0"})
    (mat,) = [a.name for a in knl.args if len(a.shape or ()) == 2
              and a.shape[0] == a.shape[1] and not a.is_output]
    return lp.add_prefetch(
        t_unit.with_kernel(knl), mat, sweep_inames=[idof, red],
        fetch_outer_inames=frozenset({f"{iel}_outer"}),
        temporary_address_space=lp.AddressSpace.LOCAL, default_tag="l.auto")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("nel", [9, 0])
def test_prefetching_transform(queue: cl.CommandQueue, dtype: Any,
                               nel: int) -> None:
    a = _rand((nel, 6), dtype, 3)
    m = _rand((6, 6), np.float64, 4)
    u = pt.make_data_wrapper(cla.to_device(queue, a))
    mat = pt.make_data_wrapper(cla.to_device(queue, m))
    dag = pt.make_dict_of_named_arrays(
        {"_pt_out_0": pt.einsum("ij,ej->ei", mat, u)})
    mapper = _DataWrapperToPlaceholder()
    dag = mapper(dag)
    prg = pt.generate_loopy(
        dag, options=lp.Options(no_numpy=True, return_dict=True),
        function_name="frozen_result", target=None)
    ref = np.einsum("ij,ej->ei", m, a)
    exe = prg.bind_to_context(queue.context).with_transformed_translation_unit(
        _prefetch_transform)
    assert any(tv.address_space == lp.AddressSpace.LOCAL for tv in
               exe.lowered_program.default_entrypoint
               .temporary_variables.values()) == (nel > 0)
    _, out = exe(queue, **mapper.bound)
    _check(_host(out["_pt_out_0"]), ref)
    _, out = prg.with_transformed_program(_prefetch_transform)(
        queue, **mapper.bound)
    _check(_host(out["_pt_out_0"]), ref)


def test_domains_shown_to_transformations(queue: cl.CommandQueue) -> None:
    """The lowered unit that transformations get: each instruction's inames
    in one domain, except reductions that may be empty (a product with an
    empty domain is empty, and a sum over nothing must still be written)."""
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (5, 4), np.float64)
    y = pt.make_placeholder("y", (3, n), np.float64)
    dag = {"a": pt.sum(x, axis=1), "b": pt.sum(y, axis=1), "c": 2 * x}
    seen = []

    def look(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
        knl = t_unit.default_entrypoint
        for insn in knl.instructions:
            homes = {knl.get_home_domain_index(i)
                     for i in insn.within_inames | insn.reduction_inames()}
            seen.append((insn.assignee_var_names()[0], len(homes)))
        return t_unit

    prg = pt.generate_loopy(dag)
    prg.with_transformed_program(look)
    assert sorted(seen) == [("a", 1), ("b", 2), ("c", 1)]

    # run, transformed, with sums over nothing
    def to_groups(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
        return t_unit.with_kernel(lp.tag_inames(
            t_unit.default_entrypoint, {"a_dim0": "g.0", "b_dim0": "g.0"}))

    transformed = prg.with_transformed_program(to_groups)
    xv = _rand((5, 4), np.float64, 1)
    for nv in [3, 0]:
        yv = _rand((3, nv), np.float64, 2)
        _, out = transformed(queue, x=xv, y=yv)
        _check(out["a"], xv.sum(axis=1))
        _check(out["b"], yv.sum(axis=1))
        _check(out["c"], 2 * xv)

# }}}


# {{{ views as inputs (unflattened arrays)

@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_views_as_inputs(queue: cl.CommandQueue, dtype: Any) -> None:
    """Arrays unflattened from one flat device array are views at offsets
    into its buffer; host data may be in any order. Both can be thawed and
    passed to compiled functions."""
    flat_h = _rand((40,), dtype, 1)
    flat = cla.to_device(queue, flat_h)
    groups = [(2, 5), (0, 5), (3, 10)]
    views, refs, start = [], [], 0
    for nel, ndofs in groups:
        n = nel * ndofs
        views.append(flat[start:start + n].reshape(nel, ndofs))
        refs.append(flat_h[start:start + n].reshape(nel, ndofs))
        start += n
    assert views[2].offset

    def f(u: Array) -> Array:
        return pt.logical_not(u) if dtype == np.bool_ else 2 * u

    def f_np(u: np.ndarray) -> np.ndarray:
        return np.logical_not(u) if dtype == np.bool_ else 2 * u

    actx = LazyArrayContext(queue)
    # thawed (bound data of the generated code)
    host_t = _rand((10, 3), dtype, 2).T
    frozen = _host(actx.freeze(DOFArray(
        (*(f(actx.thaw(v)) for v in views), f(pt.make_data_wrapper(host_t))))))
    for got, ref in zip(frozen.groups, [*refs, host_t], strict=True):
        _check(got, f_np(ref))

    # passed to compiled code, repeatedly (the repeated calls' fast path),
    # the data changing in between
    g = actx.compile(f)
    for i in range(3):
        flat.set(_rand((40,), dtype, 10 + i))
        flat_h = flat.get()
        for (nel, ndofs), v in zip(groups, views, strict=True):
            s = v.offset // v.dtype.itemsize
            _check(_host(g(v)), f_np(flat_h[s:s + nel * ndofs].reshape(
                nel, ndofs)))

    # an unbound program, with and without no_numpy
    x = pt.make_placeholder("x", (3, 10), dtype)
    for options in [None, lp.Options(no_numpy=True, return_dict=True)]:
        prg = pt.generate_loopy({"y": f(x)}, options=options)
        for _ in range(2):
            _, out = prg(queue, x=views[2])
            _check(_host(out["y"]), f_np(views[2].get()))

# }}}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_every_iname_tagged(queue: cl.CommandQueue, dtype: Any) -> None:
    """A fusing context maps each loop by its tag: after unification, the
    loops of outputs, of materialized temporaries and of reductions all
    carry a discretization tag."""
    untagged: list[str] = []

    def check_tags(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
        knl = t_unit.default_entrypoint
        assert knl.temporary_variables
        untagged.extend(
            name for name in knl.all_inames()
            if not knl.iname_tags_of_type(name, DiscretizationAxisTag))
        return _hardware_axes_transform(t_unit)

    actx = LazyArrayContext(queue, check_tags)
    a = _rand((7, 6), dtype, 1)
    m = _rand((6, 6), np.float64, 2)
    u = actx.thaw(cla.to_device(queue, a))
    mat = pt.make_data_wrapper(m)
    w = pt.einsum("ij,ej->ei", mat, u)
    w2 = pt.einsum("ij,ej->ei", mat, w)
    out = _host(actx.freeze(DOFArray((
        pt.sum(w2, axis=1), w2[:, ::-1] * 2,
        pt.einsum("ij,ej->ei", mat, w2)))))
    assert not untagged
    w2_ref = np.einsum("ij,ej->ei", m, np.einsum("ij,ej->ei", m, a))
    _check(out.groups[0], w2_ref.sum(axis=1))
    _check(out.groups[1], w2_ref[:, ::-1] * 2)
    _check(out.groups[2], np.einsum("ij,ej->ei", m, w2_ref))
