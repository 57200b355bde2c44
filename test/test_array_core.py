"""Laws of the array graph: hashing, equality, pickling, tags, names."""

from __future__ import annotations

import pickle

import numpy as np
import pymbolic.primitives as prim
import pytest

import pytato as pt
from pytato.array import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    Einsum,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
    IndexLambda,
    NormalizedSlice,
    ReductionDescriptor,
    Reshape,
    Roll,
    Stack,
)
from pytato.diagnostic import (
    DTypeError,
    NameClashError,
    NonAffineShapeError,
    NonUniqueTagError,
    PytatoError,
    ShapeMismatchError,
    UnsupportedOperationError,
)
from pytato.scalar_expr import Reduce, SumReductionOperation
from pytato.tags import ImplStored, Named, PrefixNamed


def _build_all_nodes() -> list[pt.Array]:
    """One instance of every node type, built by direct construction."""
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (4, 3), np.float64)
    y = pt.make_placeholder("y", (n, 3), np.float32)
    idx = pt.make_placeholder("idx", (2,), np.int64)
    dw = pt.make_data_wrapper(np.arange(12.0).reshape(4, 3))
    lam = IndexLambda(
        (4,), np.dtype(np.float64),
        Reduce(prim.Variable("_in0")[prim.Variable("_0"), prim.Variable("_r0")],
               SumReductionOperation(), {"_r0": (0, 3)}),
        {"_in0": x},
        var_to_reduction_descr={"_r0": ReductionDescriptor()})
    ein = Einsum(((EinsumElementwiseAxis(0), EinsumReductionAxis(0)),
                  (EinsumReductionAxis(0),)),
                 (x, pt.make_placeholder("v", (3,), np.float64)), {})
    return [
        n, x, y, idx, dw, lam, ein,
        Stack((x, x), 1),
        Concatenate((x, dw), 0),
        Roll(x, 2, 0),
        AxisPermutation(x, (1, 0)),
        Reshape(x, (3, 4), "F"),
        BasicIndex(x, (1, NormalizedSlice(0, 3, 2))),
        AdvancedIndexInContiguousAxes(x, (idx, NormalizedSlice(0, 3, 1))),
        AdvancedIndexInNoncontiguousAxes(
            pt.make_placeholder("z", (4, 3, 5), np.float64),
            (idx, NormalizedSlice(0, 3, 1), idx)),
        x * 2 + dw,
    ]


ALL_NODES = _build_all_nodes()


@pytest.mark.parametrize("node", ALL_NODES, ids=lambda a: type(a).__name__)
def test_hash_eq_pickle_laws(node: pt.Array) -> None:
    rebuilt = _build_all_nodes()[ALL_NODES.index(node)]
    # equal when built twice (DataWrappers compare by data identity)
    if not isinstance(node, pt.DataWrapper) and not any(
            isinstance(k, pt.DataWrapper) for k in pt.transform.DependencyMapper()(
                node)):
        assert rebuilt == node
        assert hash(rebuilt) == hash(node)
    assert node == node
    assert node != "x"
    roundtrip = pickle.loads(pickle.dumps(node))
    assert type(roundtrip) is type(node)
    assert roundtrip.shape == node.shape
    assert roundtrip.dtype == node.dtype
    if not isinstance(node, pt.DataWrapper) and not any(
            isinstance(k, pt.DataWrapper) for k in pt.transform.DependencyMapper()(
                node)):
        assert roundtrip == node
        assert hash(roundtrip) == hash(node)
    # tagging makes an unequal copy
    tagged = node.tagged(PrefixNamed("foo"))
    assert tagged != node
    assert tagged.without_tags(PrefixNamed("foo")) == node
    assert isinstance(repr(node), str)


def test_shapes_and_dtypes_of_nodes() -> None:
    nodes = {type(a).__name__: a for a in ALL_NODES}
    assert nodes["Stack"].shape == (4, 2, 3)
    assert nodes["Concatenate"].shape == (8, 3)
    assert nodes["Reshape"].shape == (3, 4)
    assert nodes["BasicIndex"].shape == (2,)
    assert nodes["AdvancedIndexInContiguousAxes"].shape == (2, 3)
    assert nodes["AdvancedIndexInNoncontiguousAxes"].shape == (2, 3)
    assert nodes["Einsum"].shape == (4,)
    assert nodes["SizeParam"].dtype == np.int64


def test_unique_tags() -> None:
    x = pt.make_placeholder("x", (2,), np.float64)
    with pytest.raises(NonUniqueTagError):
        x.tagged([Named("a"), Named("b")])
    with pytest.raises(NonUniqueTagError):
        x.tagged(Named("a")).tagged(PrefixNamed("b"))
    with pytest.raises(ValueError):
        pt.make_placeholder("y", (2,), tags=frozenset({Named("a"), Named("b")}))
    assert x.tagged(ImplStored()).tags_of_type(ImplStored) == {ImplStored()}
    assert x.named("foo").tags == {Named("foo")}
    ax = x.with_tagged_axis(0, ImplStored())
    assert ax.axes[0].tags == {ImplStored()}
    assert ax != x


def test_name_clash_detected_at_construction() -> None:
    x1 = pt.make_placeholder("x", (2,), np.float64)
    x2 = pt.make_placeholder("x", (3,), np.float64)
    x3 = pt.make_placeholder("x", (2,), np.float64)
    # equal inputs made separately are distinct inputs: the graph keeps
    # both (their clash is reported by code generation, see test_codegen)
    assert x1 == x3
    assert (x1 + x3) != (x1 + x1)
    assert len((x1 + x3).bindings) == 2 and len((x1 + x1).bindings) == 1
    # unequal inputs of one name are refused at once
    with pytest.raises(NameClashError, match="'x'"):
        _ = pt.make_dict_of_named_arrays({"a": x1, "b": x2})
    with pytest.raises(NameClashError):
        _ = (x1 + 1)[0] + x2[0]
    assert issubclass(NameClashError, ValueError)


def test_errors_are_typed() -> None:
    x = pt.make_placeholder("x", (2, 3), np.float64)
    y = pt.make_placeholder("y", (4,), np.float64)
    with pytest.raises(ShapeMismatchError, match=r"\(2, 3\).*\(4,\)"):
        _ = x + y
    with pytest.raises(UnsupportedOperationError):
        bool(x)
    with pytest.raises(DTypeError):
        pt.make_placeholder("s", (2,), np.dtype("U3"))
    with pytest.raises(DTypeError):
        _ = pt.make_placeholder("b", (2,), np.bool_) - pt.make_placeholder(
            "c", (2,), np.bool_)
    n = pt.make_size_param("n")
    with pytest.raises(NonAffineShapeError):
        pt.make_placeholder("q", (n * n,), np.float64)
    with pytest.raises(ValueError):
        pt.make_placeholder("not an identifier", (2,))
    for err in (ShapeMismatchError, DTypeError, NameClashError):
        assert issubclass(err, PytatoError)


@pytest.mark.parametrize("dtype1", [np.int8, np.uint8, np.int32, np.int64,
                                    np.float32, np.float64, np.complex64,
                                    np.complex128, np.bool_])
@pytest.mark.parametrize("other", ["same", "int64", "float32", 2, 2.5, 1j, True])
def test_elementwise_dtypes_follow_numpy(dtype1: type, other: object) -> None:
    x = pt.make_placeholder("x", (3,), dtype1)
    xn = np.zeros(3, dtype1)
    if other == "same":
        y: object = x
        yn: object = xn
    elif isinstance(other, str):
        y = pt.make_placeholder("y", (3,), other)
        yn = np.zeros(3, other)
    else:
        y, yn = other, other
    for op in ["__add__", "__mul__", "__truediv__", "__lt__", "__pow__"]:
        try:
            with np.errstate(all="ignore"):
                # the operator, as numpy's own (bool ** 2 is int8 there,
                # np.power gives int64)
                expected = getattr(xn, op)(yn).dtype
        except TypeError:
            with pytest.raises(TypeError):
                getattr(x, op)(y)
            continue
        assert getattr(x, op)(y).dtype == expected, op


def test_scalars_compute_eagerly() -> None:
    assert pt.maximum(2, 3) == 3
    assert pt.add(1, 2) == 3
    assert isinstance(pt.multiply(np.float32(2), 3), np.float32)


def test_symbolic_shapes_broadcast() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 1), np.float64)
    y = pt.make_placeholder("y", (1, 2 * n + 1), np.float64)
    z = x + y
    assert z.shape[0] == n
    assert z.shape[1] == 2 * n + 1
    w = pt.make_placeholder("w", (n + 1,), np.float64)
    with pytest.raises(ShapeMismatchError):
        _ = pt.make_placeholder("v", (n,), np.float64) + w
    # (n + 1) - 1 is provably n
    assert pt.array.shape.are_shape_components_equal(w.shape[0] - 1, n)


def test_index_expressions_shared() -> None:
    """The expressions reading the operands of element-wise nodes are
    shared between nodes of equal (integer) shapes (their hashes computed
    once); with symbolic shapes they are made anew, equal."""
    from pytato.frontend.elementwise import index_expr_for
    x = pt.make_placeholder("x", (4, 1), np.float64)
    y = pt.make_placeholder("y", (4, 3), np.float64)
    first = index_expr_for(x, "_in0", 2, (4, 3))
    assert index_expr_for(x, "_in0", 2, (4, 3)) is first
    assert str(first) == "_in0[_0, 0]"
    assert str(index_expr_for(x, "_in0", 2, (4, 1))) == "_in0[_0, _1]"
    assert (x + y).expr == (x + y).expr
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n, 3), np.float64)
    a = index_expr_for(z, "_in0", 2, (n, 3))
    b = index_expr_for(z, "_in0", 2, (n, 3))
    assert a == b and str(a) == "_in0[_0, _1]"


def test_deep_chain_equality_hash_pickle_copy() -> None:
    a = pt.make_placeholder("a", (3,), np.float64)
    b1, b2 = a, a
    for _ in range(20_000):
        b1 = b1 + 1
        b2 = b2 + 1
    assert b1 == b2 and hash(b1) == hash(b2)
    assert pickle.loads(pickle.dumps(b1)) == b1
    assert pt.transform.CopyMapper()(b1) is b1
    assert len(pt.transform.DependencyMapper()(b1)) == 20_001


# {{{ skeletons: the fast paths of _flatten against the plain definition

def _reference_flatten(value, kids):
    """The definition of a node's skeleton, without the fast paths of
    :func:`pytato.array.base._flatten` (type-kind cache, tuples of atoms
    returned as they are, shared child references and mapping
    skeletons)."""
    import dataclasses
    from collections.abc import Mapping

    from pytato.array.base import _ATOMIC, GraphNode, _ChildRef
    if isinstance(value, GraphNode):
        kids.append(value)
        return _ChildRef(len(kids) - 1)
    if isinstance(value, _ATOMIC):
        return value
    if isinstance(value, tuple):
        return tuple(_reference_flatten(v, kids) for v in value)
    if isinstance(value, Mapping):
        return ("__mapping__", tuple(
            (k, _reference_flatten(v, kids)) for k, v in value.items()))
    if dataclasses.is_dataclass(value) and getattr(value, "_pt_flatten", False):
        return ("__dc__", type(value), tuple(
            _reference_flatten(getattr(value, f.name), kids)
            for f in dataclasses.fields(value)))
    return value


def _same_skeleton(x, y) -> bool:
    """Equal, with the same types throughout (``1 == 1.0 == True``)."""
    if type(x) is not type(y):
        return False
    if type(x) is tuple:
        return len(x) == len(y) and all(
            _same_skeleton(u, v) for u, v in zip(x, y, strict=True))
    return x is y or x == y


def _skeleton_values():
    from collections import namedtuple

    from constantdict import constantdict
    a = pt.make_placeholder("a", (4, 4), np.float64)
    b = pt.make_placeholder("b", (4,), np.int32)
    pair = namedtuple("pair", "x y")
    many = tuple(pt.make_placeholder(f"p{i}", (2,), np.float64)
                 for i in range(70))     # beyond the shared child references
    return [
        1, True, np.int64(1), 1.0, 2j, "s", b"b", None, np.dtype(np.float32),
        frozenset({Named("x")}), slice(1, None, 2), (), (1, 2), (1, True, 1.0),
        (np.int64(3), 4), ((1, 2), (3, (4,))), (a, 1), (1, (a, (b, a))),
        pair(1, 2), pair(a, 3), {"x": a, "y": b}, {"x": a, "z": 1},
        {1: a}, {True: a}, {1.0: a}, {"x": (a, b)}, constantdict(),
        constantdict({"x": a}),
        NormalizedSlice(0, 4, 1), NormalizedSlice(b[0], 4, 1),
        (NormalizedSlice(3, -1, -1), a), many, {f"k{i}": p for i, p in
                                                enumerate(many)},
        (ReductionDescriptor(), pt.array.Axis()), prim.Variable("v"),
        pt.array.Axis, int,     # classes (a dataclass one among them)
    ]


def test_flatten_matches_its_definition() -> None:
    from pytato.array.base import _flatten
    values = _skeleton_values()
    for start in (0, 3, 62):
        for value in values:
            for _ in range(2):      # type kinds and skeletons now cached
                prefix = [pt.make_placeholder(f"q{i}", (), np.float64)
                          for i in range(start)]
                kids, ref_kids = list(prefix), list(prefix)
                skel = _flatten(value, kids)
                assert _same_skeleton(skel, _reference_flatten(value, ref_kids)), \
                    value
                assert len(kids) == len(ref_kids)
                assert all(k is r for k, r in zip(kids, ref_kids, strict=True))


def test_node_skeletons_match_their_definition() -> None:
    """Each node's skeleton, children and hash are those of the plain
    definition."""
    from pytato.array.base import _Identity, _skeleton_field_names
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n, 4), np.float32)
    y = pt.make_placeholder("y", (4, 3), np.complex64,
                            axes=(pt.array.Axis(frozenset({Named("i")})),
                                  pt.array.Axis()))
    d = pt.make_data_wrapper(np.arange(12.0).reshape(4, 3))
    nodes = [x @ y, pt.einsum("ij,jk->ik", x, d), x[1:, ::2], x[:, None, 1],
             pt.stack([x, x * 2]), pt.concatenate([x, x], axis=0),
             pt.roll(x, 2, axis=1), x.reshape(-1), pt.sum(x, axis=0),
             pt.where(x > 0, x, 1), x.astype(np.int32) // 3, x.T.tagged(ImplStored()),
             x[pt.zeros(3, dtype=np.int64)], y.real, x + x, d + 1, n + 1]
    from pytato.array.base import topological_order
    for node in topological_order(nodes):
        kids: list = []
        skel = tuple(
            _Identity(getattr(node, name)) if name in node._identity_fields
            else _reference_flatten(getattr(node, name), kids)
            for name in _skeleton_field_names(type(node)))
        assert _same_skeleton(skel, node._pt_skel), type(node)
        assert len(kids) == len(node._pt_kids)
        assert all(k is r for k, r in zip(kids, node._pt_kids, strict=True))
        assert node._pt_hash == hash((type(node).__name__, skel,
                                      *(hash(k) for k in kids)))

# }}}
