"""The structure of graph nodes, with their child arrays factored out, and
the inputs of their graphs.

At construction each node (see :class:`~pytato.array.Array`) computes a
*skeleton* of its equality-relevant fields in which every child array is
replaced by a :class:`_ChildRef` (:func:`_flatten`), the tuple of its child
arrays (:func:`get_children`), and the merged name-to-input map of its
graph (:func:`_merge_inputs`), which reports two different inputs of one
name where they meet. Skeletons are what equality, hashing, deduplication
and pickling compare and rebuild from.

.. autoclass:: GraphNode
.. autofunction:: get_children
.. autofunction:: input_name_clashes
.. autofunction:: same_input_objects
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from constantdict import constantdict
from pymbolic.primitives import ExpressionNode
from pytools.tag import Tag

from pytato.array.tagging import Axis, ReductionDescriptor
from pytato.diagnostic import NameClashError


if TYPE_CHECKING:
    from pytato.array.base import Array
    from pytato.array.results import AbstractResultWithNamedArrays


#: The children of a node: arrays, and the results of calls (or dictionaries
#: of named arrays) whose named arrays a node reads.
ChildNode: TypeAlias = "Array | AbstractResultWithNamedArrays"


# {{{ skeletons: structure with child arrays factored out

@dataclass(frozen=True)
class _ChildRef:
    index: int


# skeletons share the references to their first children (immutable)
_CHILD_REFS = tuple(_ChildRef(i) for i in range(64))


def _child_ref(index: int) -> _ChildRef:
    return _CHILD_REFS[index] if index < 64 else _ChildRef(index)


class _Identity:
    """Wraps an object compared by identity (concrete data)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __reduce__(self) -> tuple[object, ...]:
        return (_Identity, (self.obj,))


# (pymbolic's expressions hold no arrays: kept whole in skeletons)
_ATOMIC = (int, float, complex, str, bool, bytes, type(None), np.dtype,
           np.generic, frozenset, slice, Tag, Axis, ReductionDescriptor,
           ExpressionNode)


class GraphNode:
    """Marker base of everything a graph mapper visits: arrays and results
    with named arrays (e.g. calls).

    The attributes below are set once, at construction (see the module
    documentation).
    """

    __slots__ = ()

    #: The arrays the node directly depends on (see :func:`get_children`).
    _pt_kids: tuple[ChildNode, ...]
    #: The equality-relevant fields, child arrays replaced by references.
    _pt_skel: tuple[object, ...]
    _pt_hash: int
    #: The inputs of the node's graph, by name.
    _pt_inputs: Mapping[str, Array]


# kinds of values for :func:`_flatten`, cached per exact type (the order of
# the tests is that of the isinstance chain in :func:`_kind_of`)
_ATOM, _CHILD, _TUPLE, _MAPPING, _OTHER = range(5)
_KIND_OF_TYPE: dict[type, int] = {}


def _kind_of(tp: type) -> int:
    """The kind of the values of type *tp* (see :func:`_flatten`), cached."""
    kind = _KIND_OF_TYPE.get(tp)
    if kind is None:
        if issubclass(tp, GraphNode):
            kind = _CHILD
        elif issubclass(tp, _ATOMIC):
            kind = _ATOM
        elif issubclass(tp, tuple):
            kind = _TUPLE
        elif issubclass(tp, Mapping):
            kind = _MAPPING
        else:
            kind = _OTHER
        _KIND_OF_TYPE[tp] = kind
    return kind


def _flatten(value: Any, kids: list[ChildNode]) -> object:
    r"""Return a hashable skeleton of *value*; append child nodes to *kids*.

    Child nodes become :class:`_ChildRef`\ s, tuples (and mappings, and
    dataclasses marked ``_pt_flatten``) are flattened element-wise, atomic
    values (numbers, strings, dtypes, tags, axes, ...) and other values
    are kept. The kind of a value is looked up by its exact type; a plain
    tuple of atomic values is its own skeleton.
    """
    kind = _KIND_OF_TYPE.get(type(value))
    if kind is None:
        kind = _kind_of(type(value))
    if kind is _ATOM:
        return value
    if kind is _CHILD:
        kids.append(value)
        return _child_ref(len(kids) - 1)
    if kind is _TUPLE:
        if type(value) is tuple:
            get = _KIND_OF_TYPE.get
            for v in value:
                if get(type(v)) is not _ATOM:
                    break
            else:
                return value
        return tuple([_flatten(v, kids) for v in value])
    if kind is _MAPPING:
        return _flatten_mapping(value, kids)
    names = _FLATTENED_DATACLASS_FIELDS.get(type(value))
    if names is None:
        if not (dataclasses.is_dataclass(value)
                and getattr(value, "_pt_flatten", False)):
            return value
        names = tuple(f.name for f in dataclasses.fields(value))
        if not isinstance(value, type) and getattr(type(value), "_pt_flatten",
                                                   False):
            _FLATTENED_DATACLASS_FIELDS[type(value)] = names
    return ("__dc__", type(value), tuple([
        _flatten(getattr(value, name), kids) for name in names]))


# the field names of dataclass types marked ``_pt_flatten``
_FLATTENED_DATACLASS_FIELDS: dict[type, tuple[str, ...]] = {}


# the skeleton of empty mappings (one object, shared)
_EMPTY_MAPPING = ("__mapping__", ())

# skeletons of mappings from strings to child nodes (e.g. bindings), by
# their keys and the index of their first child: shared between nodes
_MAPPING_SKELETONS: dict[tuple[tuple[str, ...], int], object] = {}
_MAX_MAPPING_SKELETONS = 4096


def _flatten_mapping(value: Mapping[Any, Any], kids: list[ChildNode]
                     ) -> object:
    if not value:
        return _EMPTY_MAPPING
    get = _KIND_OF_TYPE.get
    keys = tuple(value)
    for k, v in value.items():
        if type(k) is not str or get(type(v)) is not _CHILD:
            break
    else:
        cache_key = (keys, len(kids))
        skel = _MAPPING_SKELETONS.get(cache_key)
        if skel is None:
            start = len(kids)
            skel = ("__mapping__", tuple([
                (k, _child_ref(start + i)) for i, k in enumerate(keys)]))
            if len(_MAPPING_SKELETONS) < _MAX_MAPPING_SKELETONS:
                _MAPPING_SKELETONS[cache_key] = skel
        kids.extend(value.values())
        return skel
    return ("__mapping__", tuple([
        (k, _flatten(v, kids)) for k, v in value.items()]))


def _unflatten(skel: object, kids: list[ChildNode] | tuple[ChildNode, ...]) -> Any:
    if isinstance(skel, _ChildRef):
        return kids[skel.index]
    if isinstance(skel, tuple):
        if len(skel) == 2 and skel[0] == "__mapping__":
            return constantdict({k: _unflatten(v, kids) for k, v in skel[1]})
        if len(skel) == 3 and skel[0] == "__dc__":
            return skel[1](*(_unflatten(v, kids) for v in skel[2]))
        return tuple(_unflatten(v, kids) for v in skel)
    return skel

# }}}


def get_children(ary: GraphNode
                 ) -> tuple[ChildNode, ...]:
    """The nodes *ary* directly depends on (incl. the arrays in its shape,
    and the results of calls its named arrays belong to)."""
    return ary._pt_kids


class _InputsWithClashes(dict):
    """A name-to-input map of a graph in which distinct but equal inputs
    share a name (two placeholders ``x`` of one shape and dtype made
    separately, say): the graph may be built, and deduplicated
    (:func:`pytato.transform.deduplicate` merges them), but code generation
    refuses it (:func:`input_name_clashes`), as the reference pytato's does.

    .. attribute:: clashes

        The names, a :class:`frozenset`.
    """

    __slots__ = ("clashes",)

    clashes: frozenset[str]


def _merge_inputs(kids: Iterable[ChildNode], own: Array | None
                  ) -> Mapping[str, Array]:
    """Merge the name-to-input maps of *kids* (and *own*), raising
    :class:`~pytato.diagnostic.NameClashError` on conflicting (unequal)
    inputs of one name. Distinct but equal inputs of one name are recorded
    (see :class:`_InputsWithClashes`)."""
    best: Mapping[str, Array] | None = None
    others: list[Mapping[str, Array]] = []
    for k in kids:
        m = k._pt_inputs
        if not m or m is best:
            continue
        if best is None or len(m) > len(best):
            if best is not None:
                others.append(best)
            best = m
        else:
            others.append(m)
    if own is not None:
        others.append({own.name: own})  # type: ignore[attr-defined]
    if best is None:
        best = {}
    result: dict[str, Array] | None = None
    clashes: set[str] | None = None
    for m in others:
        if m is best:
            continue
        if type(m) is _InputsWithClashes:
            clashes = set(m.clashes) if clashes is None else clashes | m.clashes
        for name, inp in m.items():
            have = (result if result is not None else best).get(name)
            if have is None:
                if result is None:
                    result = dict(best)
                result[name] = inp
            elif have is not inp:
                if have != inp:
                    raise NameClashError(
                        f"two different inputs are named '{name}' in one "
                        f"graph: {_short(have)} and {_short(inp)}")
                if clashes is None:
                    clashes = set()
                clashes.add(name)
    if result is None and clashes is None:
        return best
    best_clashes: frozenset[str] = getattr(best, "clashes", frozenset())
    if clashes is None:
        if not best_clashes:
            return result  # type: ignore[return-value]
        clashes = set()
    if result is None and clashes <= best_clashes:
        return best
    merged = _InputsWithClashes(best if result is None else result)
    merged.clashes = best_clashes | frozenset(clashes)
    return merged


def input_name_clashes(expr: GraphNode) -> frozenset[str]:
    """The names shared by distinct (equal) inputs in the graph of *expr*
    (empty for a graph whose inputs of one name are one object)."""
    return getattr(expr._pt_inputs,
                   "clashes", frozenset())


def same_input_objects(a: Array, b: Array) -> bool:
    """Whether the equal arrays *a* and *b* read the same input objects
    (so that one may stand for the other): false if their graphs hold
    distinct (equal) inputs of one name."""
    ia = a._pt_inputs
    ib = b._pt_inputs
    if ia is ib:
        return True
    if type(ia) is _InputsWithClashes or type(ib) is _InputsWithClashes:
        return False
    get = ib.get
    return all(v is get(k) for k, v in ia.items())


def _short(ary: object) -> str:
    return (f"{type(ary).__name__}(shape={getattr(ary, 'shape', None)}, "
            f"dtype={getattr(ary, 'dtype', None)})")

