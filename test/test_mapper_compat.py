"""Mappers and transforms as code written for upstream pytato uses them:
generic subclassing, ``super().map_<node>`` from overrides, the
``err_on_collision=``/``_cache=`` constructors, upstream's transform calls
(run on the OpenCL device against numpy), and deep graphs with overriding
subclasses."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Never

import numpy as np
import pytest
from pytools.tag import Tag

import pytato as pt
from pytato.array import (
    Einsum,
    IndexLambda,
    Placeholder,
)
from pytato.function import FunctionDefinition
from pytato.transform import (
    ArrayOrNames,
    ArrayOrNamesTc,
    CacheCollisionError,
    CachedMapper,
    CachedWalkMapper,
    CombineMapper,
    CopyMapper,
    CopyMapperWithExtraArgs,
    DependencyMapper,
    InputGatherer,
    Mapper,
    MapperCreatedDuplicateError,
    SizeParamGatherer,
    TopoSortMapper,
    TransformMapperCache,
    UsersCollector,
    WalkMapper,
    copy_dict_of_named_arrays,
    deduplicate,
    deduplicate_data_wrappers,
    get_dependencies,
    rec_get_user_nodes,
)


def _run_cl(queue, result, **inputs):
    """Evaluate *result* on the OpenCL device; numpy arrays (a dict of them
    for a dict of outputs)."""
    prg = pt.generate_loopy(result)
    _, out = prg(queue, **inputs)

    def host(a):
        return a.get() if hasattr(a, "get") else np.asarray(a)
    if isinstance(out, dict):
        return {k: host(v) for k, v in out.items()}
    return host(out[0])


def _rand(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape)
                + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(-5, 6, shape).astype(dtype)


# {{{ generics

def test_mapper_classes_are_generic() -> None:
    class Counter(Mapper[int, Never, []]):
        def map_placeholder(self, expr: Placeholder) -> int:
            return 1

        def map_index_lambda(self, expr: IndexLambda) -> int:
            return 1 + sum(self.rec(b) for b in expr.bindings.values())

    x = pt.make_placeholder("x", (3,))
    assert Counter()(pt.sin(x) + x) == 4   # (sin(x) + x): 1 + (1 + 1) + 1

    class Count(CombineMapper[int, Never, []]):
        def combine(self, *args: int) -> int:
            return sum(args)

        def map_placeholder(self, expr: Placeholder) -> int:
            return 1

    # combine sums over children: x is reached by two paths
    assert Count()(pt.sin(x) + x) == 2

    class AddArg(CopyMapperWithExtraArgs[[int]]):
        def map_placeholder(self, expr: Placeholder, n: int) -> ArrayOrNames:
            return expr + n

    out = AddArg()(pt.sin(x), 2)
    assert out == pt.sin(x + 2)

    class Names(CachedWalkMapper[[]]):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def post_visit(self, expr: Any) -> None:
            if isinstance(expr, Placeholder):
                self.names.append(expr.name)

    w = Names()
    w(pt.sin(x) + pt.make_placeholder("y", (3,)))
    assert sorted(w.names) == ["x", "y"]

    class Cached(CachedMapper[str, Never, []]):
        def map_placeholder(self, expr: Placeholder) -> str:
            return expr.name

    assert Cached()(x) == "x"

    # the type parameters are upstream's
    assert len(Mapper.__parameters__) == 3
    assert len(CachedMapper.__parameters__) == 3
    assert len(CombineMapper.__parameters__) == 3
    assert len(CopyMapperWithExtraArgs.__parameters__) == 1
    assert len(CachedWalkMapper.__parameters__) == 1
    assert len(WalkMapper.__parameters__) == 1
    assert len(TransformMapperCache.__parameters__) == 2
    assert not getattr(CopyMapper, "__parameters__", ())
    # the aliases arraycontext imports
    assert isinstance(x, ArrayOrNames)
    assert isinstance(pt.make_dict_of_named_arrays({"a": x}), ArrayOrNames)
    assert ArrayOrNamesTc.__constraints__


def test_combine_mapper_passes_extra_arguments() -> None:
    """Upstream's ``CombineMapper[ResultT, FunctionResultT, P]``: the extra
    arguments of ``rec`` reach every ``map_*`` method, through all node
    types, and results are cached per node and arguments."""
    class WeightedLeaves(CombineMapper[int, Never, [int]]):
        def __init__(self) -> None:
            super().__init__()
            self.placeholder_calls = 0

        def combine(self, *args: int) -> int:
            return sum(args)

        def map_placeholder(self, expr: Placeholder, weight: int) -> int:
            self.placeholder_calls += 1
            return weight

        def map_size_param(self, expr: Any, weight: int) -> int:
            return 100 * weight

    x = pt.make_placeholder("x", (3, 4))
    y = pt.make_placeholder("y", (4,))
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n,))
    expr = pt.make_dict_of_named_arrays({
        "a": pt.stack([pt.sin(x), x + y]).T.reshape(24),
        "b": pt.einsum("ij,j->i", x, y),
        "c": 2 * z})
    mapper = WeightedLeaves()
    # a: x twice, y once; b: x, y; c: z and its size n
    assert mapper(expr, 3) == 3 * (3 + 2 + 1) + 100 * 3
    assert mapper.placeholder_calls == 3   # cached per (node, weight)
    assert mapper(expr, 1) == 6 + 100
    assert mapper.placeholder_calls == 6


# }}}


# {{{ per-node methods

#: The ``map_*`` methods upstream's mapper classes have (REFERENCE-API.md).
_NODE_METHODS = (
    "map_axis_permutation", "map_basic_index", "map_call", "map_concatenate",
    "map_contiguous_advanced_index", "map_csr_matmul", "map_data_wrapper",
    "map_dict_of_named_arrays", "map_distributed_recv",
    "map_distributed_send_ref_holder", "map_einsum", "map_function_definition",
    "map_index_lambda", "map_loopy_call", "map_loopy_call_result",
    "map_named_array", "map_named_call_result",
    "map_non_contiguous_advanced_index", "map_placeholder", "map_reshape",
    "map_roll", "map_size_param", "map_stack")


@pytest.mark.parametrize("cls", [CopyMapper, CopyMapperWithExtraArgs,
                                 CombineMapper, WalkMapper, CachedWalkMapper,
                                 DependencyMapper, InputGatherer,
                                 SizeParamGatherer, TopoSortMapper])
def test_node_methods_exist(cls: type) -> None:
    missing = [m for m in _NODE_METHODS if not callable(getattr(cls, m, None))]
    assert not missing


def _graph_of_all_array_kinds() -> tuple[pt.Array, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    idx = np.array([2, 0, 1, 1])
    x = pt.make_placeholder("x", (4, 3))
    d = pt.make_data_wrapper(a)
    i = pt.make_data_wrapper(idx)
    y = (pt.stack([x, d])[1] + pt.concatenate([x, d], 0)[:4]
         + pt.roll(x, 1, 0) + pt.transpose(pt.transpose(x))
         + pt.reshape(pt.reshape(x, (12,)), (4, 3))
         + x[i] + pt.einsum("ij,kj->ik", x, d) @ x)
    j = pt.make_data_wrapper(np.array([1, 0]))
    z = pt.reshape(x, (2, 2, 3))[j, :, j]   # advanced index, non-contiguous
    out = pt.sum(y) + pt.sum(z) + pt.sum(x[1:, ::2])
    return out, {"x": rng.standard_normal((4, 3))}


def test_super_map_from_overrides_copy_mapper(queue) -> None:
    out, inputs = _graph_of_all_array_kinds()
    seen: dict[str, int] = {}

    class Doubling(CopyMapper):
        """Doubles every placeholder, and counts the node types it met
        through overrides calling super()."""

        def _count(self, name: str) -> None:
            seen[name] = seen.get(name, 0) + 1

        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            self._count("map_placeholder")
            return 2 * super().map_placeholder(expr)

    for name in _NODE_METHODS:
        if name in ("map_placeholder", "map_function_definition", "map_call",
                    "map_loopy_call", "map_dict_of_named_arrays"):
            continue

        def override(self: Doubling, expr: Any, _name: str = name) -> Any:
            self._count(_name)
            return getattr(super(Doubling, self), _name)(expr)
        setattr(Doubling, name, override)

    doubled = Doubling()(out)
    for name in ("map_index_lambda", "map_stack", "map_concatenate",
                 "map_roll", "map_axis_permutation", "map_reshape",
                 "map_basic_index", "map_einsum", "map_data_wrapper",
                 "map_contiguous_advanced_index",
                 "map_non_contiguous_advanced_index", "map_placeholder"):
        assert seen.get(name, 0) >= 1, name
    ref = _run_cl(queue, out, **inputs)
    res = _run_cl(queue, doubled, **inputs)
    # doubling x: the degree-2 einsum term scales by 8, others by 2: check
    # against the graph evaluated at 2*x
    ref2 = _run_cl(queue, out, x=2 * inputs["x"])
    np.testing.assert_allclose(res, ref2, rtol=1e-12)
    assert not np.allclose(ref, ref2)


def test_super_map_from_overrides_walk_and_combine() -> None:
    out, _ = _graph_of_all_array_kinds()

    class Walk(CachedWalkMapper[[]]):
        def __init__(self) -> None:
            super().__init__()
            self.lambdas = 0
            self.visited = 0

        def visit(self, expr: Any) -> bool:
            self.visited += 1
            return True

        def map_index_lambda(self, expr: IndexLambda) -> None:
            self.lambdas += 1
            super().map_index_lambda(expr)

    w = Walk()
    w(out)
    n_lambdas = sum(1 for n in pt.transform.topological_order([out])
                    if isinstance(n, IndexLambda))
    assert w.lambdas == n_lambdas
    assert w.visited == len(pt.transform.topological_order([out]))

    class Uncached(WalkMapper[[]]):
        def __init__(self) -> None:
            self.einsums = 0

        def map_einsum(self, expr: Einsum) -> None:
            self.einsums += 1
            super().map_einsum(expr)

    u = Uncached()
    u(out)
    assert u.einsums == 2      # the einsum and the matmul, one path each

    class CountLambdas(CombineMapper[int, Never, []]):
        def combine(self, *args: int) -> int:
            return sum(args)

        def map_index_lambda(self, expr: IndexLambda) -> int:
            return 1 + super().map_index_lambda(expr)

    # counts paths: equals the number of IndexLambda nodes on a tree
    x = pt.make_placeholder("x", (3,))
    tree = pt.sin(x) + pt.cos(x * 2)
    assert CountLambdas()(tree) == 4

    class Deps(DependencyMapper):
        def map_placeholder(self, expr: Placeholder) -> frozenset[pt.Array]:
            return super().map_placeholder(expr)

    assert Deps()(tree) == DependencyMapper()(tree)
    assert InputGatherer()(tree) == frozenset({x})


def test_cached_walk_order_and_pruning() -> None:
    """The iterative walk of ``CachedWalkMapper.__call__`` visits in the
    order of the recursive walk (``rec``), and ``visit`` returning False
    prunes."""
    x = pt.make_placeholder("x", (3,))
    w_ = pt.make_placeholder("w", (3,))
    a = pt.sin(x)
    b = pt.exp(w_)
    pruned = pt.cos(b)
    c = pt.stack([a + b, a * 2, pruned])

    class Log(CachedWalkMapper[[]]):
        def __init__(self) -> None:
            super().__init__()
            self.log: list[tuple[str, int]] = []

        def visit(self, expr: Any) -> bool:
            self.log.append(("visit", id(expr)))
            return expr is not pruned

        def post_visit(self, expr: Any) -> None:
            self.log.append(("post", id(expr)))

    iterative = Log()
    iterative(c)
    recursive = Log()
    recursive.rec(c)
    assert iterative.log == recursive.log
    visited = {i for what, i in iterative.log if what == "visit"}
    assert id(pruned) in visited
    assert ("post", id(pruned)) not in iterative.log
    assert id(b) in visited            # also reached through a + b

    only_pruned = Log()
    only_pruned(pt.stack([pruned, pt.sin(x)]))
    assert id(b) not in {i for _, i in only_pruned.log}   # pruned below


def test_rec_idx_or_size_tuple() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3))

    class ToPlaceholder(CopyMapper):
        def map_data_wrapper(self, expr: pt.DataWrapper) -> ArrayOrNames:
            return pt.make_placeholder("d", self.rec_idx_or_size_tuple(
                expr.shape), expr.dtype)

    assert ToPlaceholder().rec_idx_or_size_tuple(x.shape) == x.shape
    d = pt.make_data_wrapper(np.zeros(4))
    assert ToPlaceholder()(d) == pt.make_placeholder("d", (4,), np.float64)

    class Sizes(CombineMapper[frozenset[str], Never, []]):
        def combine(self, *args: frozenset[str]) -> frozenset[str]:
            return frozenset().union(*args)

        def map_size_param(self, expr: pt.SizeParam) -> frozenset[str]:
            return frozenset([expr.name])

        def map_placeholder(self, expr: Placeholder) -> frozenset[str]:
            return self.combine(*self.rec_idx_or_size_tuple(expr.shape))

    assert Sizes()(x) == frozenset({"n"})


def test_gatherers_are_combine_mappers() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 3))
    y = pt.sum(pt.sin(x), axis=1)
    assert issubclass(DependencyMapper, CombineMapper)
    assert issubclass(InputGatherer, CombineMapper)
    assert issubclass(SizeParamGatherer, CombineMapper)
    assert InputGatherer()(y) == frozenset({x, n})
    assert SizeParamGatherer()(y) == frozenset({n})
    deps = DependencyMapper()(y)
    assert x in deps and y in deps and n in deps

    class SubInputs(InputGatherer):
        pass

    class SubSizes(SizeParamGatherer):
        pass

    # the general (per-node) path agrees with the linear one
    assert SubInputs()(y) == InputGatherer()(y)
    assert SubSizes()(y) == SizeParamGatherer()(y)
    assert get_dependencies(pt.make_dict_of_named_arrays({"y": y}))["y"] == deps


def test_users_and_topo_sort() -> None:
    x = pt.make_placeholder("x", (3,))
    a = pt.sin(x)
    b = a + x
    c = b * a
    uc = UsersCollector()
    uc(c)
    assert uc.node_to_users[a] == {b, c}
    assert uc.node_to_users[x] == {a, b}
    assert rec_get_user_nodes(c, x) == frozenset({a, b, c})
    ts = TopoSortMapper()
    ts(c)
    order = ts.topological_order
    assert set(order) == {x, a, b, c}
    assert order.index(x) < order.index(a) < order.index(b) < order.index(c)

# }}}


# {{{ constructors and caches

def test_err_on_collision() -> None:
    a = pt.sin(pt.make_placeholder("x", (3,)))
    b = pt.sin(pt.make_placeholder("x", (3,)))
    assert a == b and a is not b
    s = pt.stack([a, b])
    # the default merges equal nodes
    r = CopyMapper()(s)
    assert r == s and r.arrays[0] is r.arrays[1]
    with pytest.raises(CacheCollisionError):
        CopyMapper(err_on_collision=True)(s)
    # no collision on a deduplicated graph
    d = deduplicate(s)
    assert CopyMapper(err_on_collision=True)(d) is d


def test_err_on_created_duplicate() -> None:
    x = pt.make_placeholder("x", (3,))
    y = pt.sin(x)

    class Rebuild(CopyMapper):
        def map_index_lambda(self, expr: IndexLambda) -> ArrayOrNames:
            return IndexLambda(expr.shape, expr.dtype, expr.expr,
                               dict(expr.bindings),
                               dict(expr.var_to_reduction_descr))

    assert Rebuild()(y) == y
    with pytest.raises(MapperCreatedDuplicateError):
        Rebuild(err_on_created_duplicate=True)(y)


def test_transform_results_are_deduplicated(queue) -> None:
    """Equal nodes created by a transform become one object (as upstream's
    TransformMapperCache does), so a later mapper with
    err_on_collision=True accepts the result."""
    a = pt.make_placeholder("a", (3,))
    b = pt.make_placeholder("b", (3,))
    y = pt.sin(a) + pt.sin(b)

    class Merge(CopyMapper):
        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            return pt.make_placeholder("z", expr.shape, expr.dtype)

    out = Merge()(y)
    (z,) = [n for n in pt.transform.topological_order([out])
            if isinstance(n, Placeholder)]
    assert z.name == "z"
    sins = [n for n in pt.transform.topological_order([out])
            if isinstance(n, IndexLambda) and n is not out]
    assert len(sins) == 1       # sin(z) built twice, kept once
    assert CopyMapper(err_on_collision=True)(out) is out
    z_np = np.linspace(-1, 1, 3)
    np.testing.assert_allclose(_run_cl(queue, out, z=z_np), 2 * np.sin(z_np),
                               rtol=1e-12)


def test_shared_cache() -> None:
    x = pt.make_placeholder("x", (3,))
    y = pt.sin(x) + 1
    calls: list[str] = []

    class Tagging(CopyMapper):
        def __init__(self, *, _cache: Any = None) -> None:
            super().__init__(_cache=_cache)

        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            calls.append(expr.name)
            return expr.tagged(_Marked())

    cache: TransformMapperCache[ArrayOrNames, []] = TransformMapperCache(
        err_on_collision=False, err_on_created_duplicate=False)
    r1 = Tagging(_cache=cache)(y)
    r2 = Tagging(_cache=cache)(y)
    assert r1 is r2
    assert calls == ["x"]      # the second mapper found everything cached
    assert Tagging()(y) == r1 and calls == ["x", "x"]


@dataclass(frozen=True)
class _Marked(Tag):
    pass


def test_copy_dict_of_named_arrays() -> None:
    x = pt.make_placeholder("x", (3,))
    d = pt.make_dict_of_named_arrays({"a": pt.sin(x), "b": pt.sin(x) + 1})

    class Rename(CopyMapper):
        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            return pt.make_placeholder("z", expr.shape, expr.dtype)

    out = copy_dict_of_named_arrays(source_dict=d, copy_mapper=Rename())
    z = pt.make_placeholder("z", (3,))
    assert out["a"].expr == pt.sin(z) and out["b"].expr == pt.sin(z) + 1
    # one mapper for all outputs: the shared subexpression stays shared
    assert out["b"].expr.bindings["_in0"] is out["a"].expr


def test_clone_for_callee_shares_function_cache() -> None:
    x = pt.make_placeholder("x", (3,))

    def f(a):
        return 2 * a

    y = pt.trace_call(f, x)
    z = pt.trace_call(f, y)

    class Tag2(CopyMapper):
        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            return expr.tagged(_Marked())

    m = Tag2()
    out = m(z)
    fns = {n.function for n in pt.transform.topological_order([out])
           if hasattr(n, "function") and isinstance(n.function,
                                                    FunctionDefinition)}
    # both calls of f map to one definition, mapped once
    assert len(fns) == 1
    assert len(m._function_cache._input_key_to_result) == 1

# }}}


# {{{ transform calls (upstream's signatures), evaluated on the device

@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int32])
def test_rewrite_einsums_with_no_broadcasts_size1_axes(queue, dtype) -> None:
    rng = np.random.default_rng(1)
    a_np = _rand((10, 4, 1), dtype, rng)
    b_np = _rand((10, 1, 4), dtype, rng)
    c_np = _rand((4,), dtype, rng)
    a = pt.make_placeholder("a", (10, 4, 1), dtype)
    b = pt.make_placeholder("b", (10, 1, 4), dtype)
    c = pt.make_placeholder("c", (4,), dtype)
    e1 = pt.einsum("ijk,ijk->ijk", a, b)
    e2 = pt.einsum("ijk,ijk,k->i", a, b, c)
    out = pt.rewrite_einsums_with_no_broadcasts(
        pt.make_dict_of_named_arrays({"e1": e1, "e2": e2}))
    for name in ("e1", "e2"):
        new = out[name].expr
        assert isinstance(new, Einsum)
        # no operand keeps a size-1 axis broadcast against a longer one
        assert all(1 not in arg.shape for arg in new.args), name
    assert out["e1"].shape == (10, 4, 4)
    res = _run_cl(queue, out, a=a_np, b=b_np, c=c_np)
    np.testing.assert_allclose(res["e1"],
                               np.einsum("ijk,ijk->ijk", a_np, b_np), rtol=1e-12)
    np.testing.assert_allclose(res["e2"],
                               np.einsum("ijk,ijk,k->i", a_np, b_np, c_np),
                               rtol=1e-12)


def test_rewrite_einsums_keeps_all_size1_axes() -> None:
    # an index of length 1 everywhere is not a broadcast
    a = pt.make_placeholder("a", (3, 1))
    b = pt.make_placeholder("b", (1, 3))
    e = pt.einsum("ij,jk->ik", a, b)
    assert pt.rewrite_einsums_with_no_broadcasts(e) is e


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64])
def test_distributive_law_descriptors(queue, dtype) -> None:
    from pytato.transform.einsum_distributive_law import (
        DoDistribute,
        DoNotDistribute,
        EinsumDistributiveLawDescriptor,
        apply_distributive_property_to_einsums,
    )
    rng = np.random.default_rng(2)
    inputs = {n: _rand((5, 5), dtype, rng) for n in "abc"}
    a, b, c = (pt.make_placeholder(n, (5, 5), dtype) for n in "abc")
    e = pt.einsum("ij,jk->ik", a + b, c)
    ref = (inputs["a"] + inputs["b"]) @ inputs["c"]
    seen: list[Einsum] = []

    def how(einsum: Einsum) -> EinsumDistributiveLawDescriptor:
        seen.append(einsum)
        if isinstance(einsum.args[0], IndexLambda):
            return DoDistribute(ioperand=0)
        return DoNotDistribute()

    out = apply_distributive_property_to_einsums(e, how)
    assert seen and seen[0] == e
    assert isinstance(out, IndexLambda)            # a sum of two einsums
    assert sum(isinstance(n, Einsum)
               for n in pt.transform.topological_order([out])) == 2
    res = _run_cl(queue, out, **inputs)
    np.testing.assert_allclose(res, ref, rtol=1e-12)

    assert apply_distributive_property_to_einsums(
        e, lambda einsum: DoNotDistribute()) is e
    # an operand that is not a sum is left alone
    assert apply_distributive_property_to_einsums(
        e, lambda einsum: DoDistribute(1)) is e
    with pytest.raises(TypeError, match="how_to_distribute"):
        apply_distributive_property_to_einsums(e, lambda einsum: True)
    with pytest.raises(ValueError, match="DoDistribute"):
        apply_distributive_property_to_einsums(e, lambda einsum: DoDistribute(5))


@dataclass(frozen=True)
class _ElementAxis(Tag):
    pass


@dataclass(frozen=True)
class _OtherAxis(Tag):
    pass


def test_unify_axes_tags_upstream_keywords(queue) -> None:
    from pytato.transform.metadata import (
        AxesTagsEquationCollector,
        AxisIgnoredForPropagationTag,
        unify_axes_tags,
    )
    x = (pt.make_placeholder("x", (4, 3))
         .with_tagged_axis(0, _ElementAxis())
         .with_tagged_axis(1, _OtherAxis()))
    y = pt.sin(x) * 2
    out = unify_axes_tags(y, tag_t=_ElementAxis,
                          equations_collector_t=AxesTagsEquationCollector,
                          unify_redn_descrs=True)
    assert out.axes[0].tags_of_type(_ElementAxis)
    assert not out.axes[1].tags                    # not of type tag_t
    out_all = unify_axes_tags(y)
    assert out_all.axes[1].tags_of_type(_OtherAxis)

    # a collector subclass relating more axes: here, axis 0 of an otherwise
    # unrelated placeholder to axis 0 of x
    z = pt.make_placeholder("z", (4, 3))
    w = pt.make_dict_of_named_arrays({"y": y, "z": pt.cos(z)})

    class Relate(AxesTagsEquationCollector):
        def map_placeholder(self, expr: Placeholder) -> None:
            if expr.name == "z":
                self.record_equation(self.get_var_for_axis(expr, 0),
                                     self.get_var_for_axis(x, 0))

    related = unify_axes_tags(w, tag_t=_ElementAxis,
                              equations_collector_t=Relate)
    assert related["z"].axes[0].tags_of_type(_ElementAxis)
    assert not unify_axes_tags(w, tag_t=_ElementAxis)["z"].axes[0].tags

    # axes tagged AxisIgnoredForPropagationTag take no part
    v = pt.make_placeholder("v", (4, 3)).with_tagged_axis(
        0, AxisIgnoredForPropagationTag())
    out2 = unify_axes_tags(x + v, tag_t=_ElementAxis)
    assert not out2.bindings["_in1"].axes[0].tags_of_type(_ElementAxis)

    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((4, 3))
    res = _run_cl(queue, out, x=x_np)
    np.testing.assert_allclose(res, np.sin(x_np) * 2, rtol=1e-12)

    # reduction descriptors receive the tags of the axes they reduce over
    v = pt.make_placeholder("v", (3,))
    red = pt.make_dict_of_named_arrays({
        "s": pt.sum(x, axis=1), "e": pt.einsum("ij,j->i", x, v)})
    tagged = unify_axes_tags(red, tag_t=_OtherAxis)
    (s_descr,) = tagged["s"].expr.var_to_reduction_descr.values()
    (e_descr,) = tagged["e"].expr.redn_axis_to_redn_descr.values()
    assert s_descr.tags == e_descr.tags == frozenset({_OtherAxis()})
    assert tagged["e"].expr.args[1].axes[0].tags == frozenset({_OtherAxis()})
    untagged = unify_axes_tags(red, tag_t=_OtherAxis, unify_redn_descrs=False)
    (s_descr,) = untagged["s"].expr.var_to_reduction_descr.values()
    assert not s_descr.tags
    v_np = rng.standard_normal(3)
    res = _run_cl(queue, tagged, x=x_np, v=v_np)
    np.testing.assert_allclose(res["s"], x_np.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(res["e"], x_np @ v_np, rtol=1e-12)

    with pytest.raises(TypeError, match="tag_t"):
        unify_axes_tags(y, tag_t=int)
    with pytest.raises(TypeError, match="equations_collector_t"):
        unify_axes_tags(y, equations_collector_t=CopyMapper)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_deduplicate_data_wrappers(queue, dtype) -> None:
    rng = np.random.default_rng(4)
    data = _rand((6,), dtype, rng)
    d1 = pt.make_data_wrapper(data)
    d2 = pt.make_data_wrapper(data)
    other = pt.make_data_wrapper(data.copy())
    assert d1 is not d2
    y = pt.stack([d1, d2, other])
    out = deduplicate_data_wrappers(y)
    wrappers = {id(n) for n in pt.transform.topological_order([out])
                if isinstance(n, pt.DataWrapper)}
    assert len(wrappers) == 2          # d1 and d2 merged, the copy kept
    assert out.arrays[0] is out.arrays[1]
    res = _run_cl(queue, out)
    np.testing.assert_array_equal(res, np.stack([data, data, data]))

    import pyopencl.array as cla
    buf = cla.to_device(queue, data)
    e1 = pt.make_data_wrapper(buf)
    e2 = pt.make_data_wrapper(buf[:])     # another object, the same memory
    e3 = pt.make_data_wrapper(buf[1:])    # not the same memory
    assert e1 != e2
    s2 = pt.stack([e1, e2])
    out2 = deduplicate_data_wrappers(s2)
    assert out2.arrays[0] is out2.arrays[1]
    assert deduplicate_data_wrappers(pt.stack([e1[1:], e3])) == pt.stack(
        [e1[1:], e3])
    np.testing.assert_array_equal(_run_cl(queue, out2),
                                  np.stack([data, data]))


def test_upstream_transform_modules_import() -> None:
    from pytato.transform.calls import (
        InlineMarker,
        Inliner,
        PlaceholderSubstitutor,
        inline_calls,
        tag_all_calls_to_be_inlined,
    )
    from pytato.transform.dead_code_elimination import (
        DeadCodeEliminator,
        eliminate_dead_code,
    )
    from pytato.transform.lower_to_index_lambda import (
        MapAsIndexLambdaMixin,
        ToIndexLambdaMapper,
        to_index_lambda,
    )
    from pytato.transform.materialize import (
        MPMSMaterializer,
        MPMSMaterializerAccumulator,
    )
    from pytato.transform.remove_broadcasts_einsum import (
        EinsumWithNoBroadcastsRewriter,
    )

    x = pt.make_placeholder("x", (3,))
    y = pt.sin(x) + pt.cos(x)

    def f(a):
        return a * 3

    call = pt.trace_call(f, y)
    assert isinstance(tag_all_calls_to_be_inlined(call), pt.Array)
    inlined = inline_calls(tag_all_calls_to_be_inlined(call))
    assert inlined == Inliner()(InlineMarker()(call))
    assert PlaceholderSubstitutor({"x": 2 * x})(y) == pt.sin(2 * x) + pt.cos(2 * x)
    assert DeadCodeEliminator()(y) is y and eliminate_dead_code(y) is y
    assert EinsumWithNoBroadcastsRewriter()(y) is y
    assert ToIndexLambdaMapper()(pt.transpose(pt.make_placeholder(
        "m", (2, 3)))) == to_index_lambda(pt.transpose(pt.make_placeholder(
            "m", (2, 3))))

    class Lambdas(MapAsIndexLambdaMixin[int, []], Mapper[int, Never, []]):
        def map_index_lambda(self, expr: IndexLambda) -> int:
            return len(expr.bindings)

        def map_placeholder(self, expr: Placeholder) -> int:
            return 0

    m = pt.make_placeholder("m", (2, 3))
    assert Lambdas()(pt.transpose(m)) == 1
    assert Lambdas()(pt.concatenate([m, pt.make_placeholder("m2", (2, 3))])) == 2

    # upstream's one-pass MPMS: a node with two users and two materialized
    # predecessors is materialized
    a = pt.make_placeholder("a", (3,))
    b = pt.make_placeholder("b", (3,))
    s = a + b
    outs = pt.make_dict_of_named_arrays({"p": 2 * s, "q": 3 * s})
    from pytato.analysis import get_list_of_users
    acc = MPMSMaterializer(get_list_of_users(outs), frozenset())(outs)
    assert isinstance(acc, MPMSMaterializerAccumulator)
    (s_new,) = acc.expr["p"].expr.bindings.values()
    assert s_new == s.tagged(pt.tags.ImplStored())
    assert acc.expr["q"].expr.bindings["_in0"] is s_new

# }}}


# {{{ deep graphs with overriding subclasses

DEPTH = 100_000


@pytest.fixture(scope="module")
def chain() -> pt.Array:
    from random_graphs import make_deep_chain
    return make_deep_chain(DEPTH)


def test_deep_chain_with_overriding_subclasses(chain: pt.Array) -> None:
    assert sys.getrecursionlimit() < DEPTH

    class Retag(CopyMapper):
        def map_index_lambda(self, expr: IndexLambda) -> ArrayOrNames:
            return super().map_index_lambda(expr)

        def map_placeholder(self, expr: Placeholder) -> ArrayOrNames:
            return expr.tagged(_Marked())

    out = Retag()(chain)
    node = out
    for _ in range(DEPTH):
        node = node.bindings["_in0"]
    assert node.tags_of_type(_Marked)

    class Count(CombineMapper[int, Never, []]):
        def combine(self, *args: int) -> int:
            return sum(args)

        def map_placeholder(self, expr: Placeholder) -> int:
            return 0

        def map_index_lambda(self, expr: IndexLambda) -> int:
            return 1 + super().map_index_lambda(expr)

    assert Count()(chain) == DEPTH

    class Walk(CachedWalkMapper[[]]):
        def __init__(self) -> None:
            super().__init__()
            self.n = 0

        def map_index_lambda(self, expr: IndexLambda) -> None:
            self.n += 1
            super().map_index_lambda(expr)

    w = Walk()
    w(chain)
    assert w.n == DEPTH

    ts = TopoSortMapper()
    ts(chain)
    assert len(ts.topological_order) == DEPTH + 1
    assert ts.topological_order[-1] is chain

    assert len(InputGatherer()(chain)) == 1
    assert len(DependencyMapper()(chain)) == DEPTH + 1

# }}}


def test_transforms_on_graphs_with_calls(queue) -> None:
    """Each pass maps graphs holding calls (the bodies are mapped by the
    mappers' clone_for_callee)."""
    x = (pt.make_placeholder("x", (3,))
         .with_tagged_axis(0, _ElementAxis()))

    def f(a):
        return pt.sin(a) * 2

    y = pt.trace_call(f, x) + 1
    x_np = np.linspace(0, 1, 3)
    ref = np.sin(x_np) * 2 + 1
    for fn in (pt.unify_axes_tags, pt.rewrite_einsums_with_no_broadcasts,
               pt.apply_distributive_property_to_einsums, pt.eliminate_dead_code,
               deduplicate, deduplicate_data_wrappers, pt.materialize_with_mpms):
        out = fn(y)
        np.testing.assert_allclose(_run_cl(queue, out, x=x_np), ref,
                                   rtol=1e-12, err_msg=fn.__name__)
