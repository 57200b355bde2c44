"""The :class:`Array` base class and the machinery shared by all nodes.

Nodes are frozen dataclasses. At construction each node computes, once:

* a *skeleton* of its equality-relevant fields in which every child array is
  replaced by a reference (see :mod:`pytato.array.skeleton`);
* the tuple of its child arrays (:func:`get_children`);
* its hash, from the skeleton and the children's (already cached) hashes;
* the inputs (placeholders, size parameters, named data) of its subgraph, so
  that two different inputs under one name are reported where they meet;
  distinct but equal inputs of one name are recorded, and refused by code
  generation (:func:`input_name_clashes`).

Equality is structural and iterative, so 10^5-deep graphs compare without
recursion. Pickling flattens the graph (see :meth:`Array.__reduce__`).

:class:`~pytato.array.tagging.Axis`,
:class:`~pytato.array.tagging.ReductionDescriptor`,
:func:`~pytato.array.skeleton.get_children`,
:func:`~pytato.array.skeleton.input_name_clashes` and
:func:`~pytato.array.skeleton.same_input_objects` are importable from here
too.

.. autoclass:: Array
.. autodata:: ShapeComponent
.. autodata:: ShapeType
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    TypeAlias,
    TypeVar,
    cast,
    dataclass_transform,
    overload,
)

import numpy as np
import numpy.typing as npt
from pytools.tag import Tag

# (skeletons, inputs, axes and tag helpers, defined here before
# pytato.array.skeleton and pytato.array.tagging: re-exported)
from pytato.array.skeleton import (  # noqa: F401 (re-exported)
    _ATOM,
    _ATOMIC,
    _CHILD,
    _EMPTY_MAPPING,
    _KIND_OF_TYPE,
    _MAPPING,
    _TUPLE,
    ChildNode,
    GraphNode,
    _child_ref,
    _ChildRef,
    _flatten,
    _Identity,
    _InputsWithClashes,
    _merge_inputs,
    _unflatten,
    get_children,
    input_name_clashes,
    same_input_objects,
)
from pytato.array.tagging import (  # noqa: F401
    Axis,
    ReductionDescriptor,
    _TaggableMixin,
    _unique_family,
    check_unique_tags,
    normalize_tags,
)
from pytato.diagnostic import (
    ArrayClassEqualityError,
    ArrayTooBigError,
    AxisError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsupportedOperationError,
)
from pytato.equality import EqualityComparer
from pytato.scalar_expr import is_integral_scalar
from pytato.tags import Named


if TYPE_CHECKING:
    from typing import Self

    from pytato.scalar_expr import Scalar

ShapeComponent: TypeAlias = "int | Array"
"""An integer, or a 0-d integer :class:`Array` affine in size parameters."""

ShapeType: TypeAlias = "tuple[ShapeComponent, ...]"

#: An array or a scalar: what element-wise functions return.
ArrayOrScalar: TypeAlias = "Array | Scalar"

#: What element-wise functions and operators take: arrays, scalars, and
#: :mod:`numpy` arrays (wrapped as data).
Operand: TypeAlias = "Array | Scalar | np.ndarray"

#: An axis or axes, as reductions and :func:`normalize_axes` take them (None
#: for all axes).
AxesLike: TypeAlias = "int | np.integer | Iterable[int | np.integer] | None"

#: A shape as the front end takes it: a component or a sequence of them.
ShapeLike: TypeAlias = ("int | np.integer | Array "
                        "| Sequence[int | np.integer | Array]")


# {{{ axis and shape helpers (re-exported by pytato.array.shape)

def normalize_axis(axis: object, ndim: int, argname: str = "axis") -> int:
    """Return *axis* in ``range(ndim)``, accepting negative values; raise
    :class:`~pytato.diagnostic.AxisError` naming *argname* otherwise."""
    if not is_integral_scalar(axis):
        raise AxisError(f"'{argname}' must be an integer, got {axis!r}")
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise AxisError(f"'{argname}'={axis} is out of bounds for an array "
                        f"of dimension {ndim}")
    return axis % ndim


def normalize_axes(axes: AxesLike, ndim: int, argname: str = "axis"
                   ) -> tuple[int, ...]:
    """Normalize *axes* (None, an int or a sequence of ints) to a sorted tuple
    of distinct axes."""
    if axes is None:
        return tuple(range(ndim))
    if is_integral_scalar(axes):
        return (normalize_axis(axes, ndim, argname),)
    # (not an integer: a sequence of them)
    result = tuple(normalize_axis(a, ndim, argname)
                   for a in cast("Iterable[int | np.integer]", axes))
    if len(set(result)) != len(result):
        raise AxisError(f"repeated axis in '{argname}': {axes!r}")
    return tuple(sorted(result))


def shape_product(shape: ShapeType) -> ShapeComponent:
    """The product of the components of *shape*."""
    result: ShapeComponent = 1
    for c in shape:
        result = result * c
    return result


def is_one(c: ShapeComponent) -> bool:
    """Whether the shape component *c* is the integer 1."""
    if type(c) is int:
        return c == 1
    return is_integral_scalar(c) and int(c) == 1

# }}}




_DEFAULT_AXIS = Axis()

# the axes of arrays created without axes, one (shared) tuple per number of
# dimensions
_DEFAULT_AXES: dict[int, tuple[Axis, ...]] = {}


_FIELD_NAMES_CACHE: dict[type, tuple[str, ...]] = {}


def _skeleton_field_names(cls: type) -> tuple[str, ...]:
    """Names of the fields of *cls* that take part in equality, cached.
    (Checked once per class, at its first node: that it keeps
    :class:`Array`'s equality and hash.)"""
    try:
        return _FIELD_NAMES_CACHE[cls]
    except KeyError:
        _check_keeps_array_eq(cls)
        names = tuple(f.name for f in dataclasses.fields(cls)
                      if f.name != "non_equality_tags" and f.compare)
        _FIELD_NAMES_CACHE[cls] = names
        return names


def _check_keeps_array_eq(cls: type) -> None:
    """Raise :class:`~pytato.diagnostic.ArrayClassEqualityError` if the array
    class *cls* replaces :class:`Array`'s ``__eq__`` or ``__hash__`` (as
    ``@dataclass`` does unless given ``eq=False``: its comparison of fields
    recurses, and takes exponential time on graphs with shared nodes)."""
    if (issubclass(cls, Array) and (cls.__eq__ is not Array.__eq__
                                    or cls.__hash__ is not Array.__hash__)):
        raise ArrayClassEqualityError(
            f"array class {cls.__qualname__} replaces Array.__eq__ or "
            "Array.__hash__ (declare it with @dataclass(frozen=True, "
            "eq=False) or pytato.array.array_dataclass)")


class _SuppliedAxesAndTagsMixin:
    """The base, in the reference pytato, of the array classes whose
    ``axes``, ``tags`` and ``non_equality_tags`` are given to the
    constructor (keyword-only). Every :class:`Array` has these fields here;
    the mixin is kept so that array classes defined as for the reference
    (``class MyArray(_SuppliedAxesAndTagsMixin, Array)``) work."""

    __slots__ = ()


_T = TypeVar("_T")


@overload
def array_dataclass(cls: type[_T], /, *, hash: bool = True) -> type[_T]: ...


@overload
def array_dataclass(cls: None = None, /, *, hash: bool = True
                    ) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, eq_default=False)
def array_dataclass(cls: type[_T] | None = None, /, *, hash: bool = True
                    ) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """Decorator for node classes: a frozen dataclass keeping the structural
    ``__eq__``/``__hash__`` of :class:`Array`. Used bare (``@array_dataclass``)
    or, as in the reference pytato, called (``@array_dataclass()``).

    :arg hash: must be *True*: nodes are always hashable (their hash is
        structural and cached).
    :raises ValueError: if *hash* is false.
    """
    if not hash:
        raise InvalidArgumentError("array_dataclass: 'hash' must be True (array nodes "
                                   "are always hashable)")
    if cls is None:
        return lambda c: dataclass(frozen=True, eq=False, repr=False)(c)
    return dataclass(frozen=True, eq=False, repr=False)(cls)


#: the largest number of bytes of an array (numpy's, on 64-bit hosts)
_MAX_NBYTES = 2**63 - 1


def _check_size(ary: Array, shape: ShapeType) -> None:
    """Raise :class:`~pytato.diagnostic.ArrayTooBigError` if the constant
    extents of *shape* (the shape of *ary*) make more bytes than an
    ``int64`` counts, as numpy does."""
    nbytes = 1
    for c in shape:
        if type(c) is int or isinstance(c, np.integer):
            if c == 0:
                return
            nbytes *= int(c)
    if nbytes <= _MAX_NBYTES // 16:  # (the fast path: no item size needed)
        return
    try:
        itemsize = ary.dtype.itemsize
    except Exception:  # a user's class without a dtype yet
        itemsize = 1
    if nbytes * itemsize > _MAX_NBYTES:
        name = getattr(ary, "name", None)
        what = (f"{type(ary).__name__} '{name}'" if isinstance(name, str)
                else type(ary).__name__)
        raise ArrayTooBigError(
            f"{what}: an array of shape {shape} and dtype "
            f"{getattr(ary, 'dtype', '?')} is too big (its number of bytes "
            "does not fit an int64)")


class DerivedShapeMixin:
    """For nodes whose shape is computed from their children (once)."""

    _pt_shape: ShapeType  # (set at construction)

    @property
    def shape(self) -> ShapeType:
        return self._pt_shape


# {{{ Array

@dataclass(frozen=True, eq=False, repr=False)
class Array(GraphNode, _TaggableMixin):
    r"""Abstract base class of lazily evaluated array expressions.

    Arrays are immutable, hashable and compare structurally (``==`` is graph
    equality; use :func:`pytato.equal` for element-wise comparison).

    .. attribute:: shape
    .. attribute:: dtype
    .. attribute:: axes

        A tuple of :class:`Axis`, one per dimension.

    .. attribute:: tags

        A :class:`frozenset` of :class:`~pytools.tag.Tag`.

    .. attribute:: non_equality_tags

        Tags that do not take part in equality or hashing (e.g.
        :class:`~pytato.tags.CreatedAt`).

    .. autoattribute:: ndim
    .. autoattribute:: size
    .. autoattribute:: T
    .. automethod:: tagged
    .. automethod:: without_tags
    .. automethod:: tags_of_type
    .. automethod:: tags_not_of_type
    .. automethod:: with_tagged_axis
    .. automethod:: named
    .. automethod:: astype
    .. automethod:: reshape
    .. automethod:: transpose
    .. automethod:: copy
    .. automethod:: all
    .. automethod:: any

    Arrays are :class:`pytools.tag.Taggable`.
    """

    _: KW_ONLY
    axes: tuple[Axis, ...] = None  # type: ignore[assignment]
    tags: frozenset[Tag] = frozenset()
    non_equality_tags: frozenset[Tag] = field(default=frozenset())

    _mapper_method: ClassVar[str]
    #: Fields that hold data not compared structurally (by identity).
    _identity_fields: ClassVar[frozenset[str]] = frozenset()
    #: Whether this node is an input that registers a name.
    _is_named_input: ClassVar[bool] = False

    # {{{ construction-time caches

    def __post_init__(self) -> None:
        self._pt_validate()
        setattr_ = object.__setattr__
        if not isinstance(self.tags, frozenset):
            setattr_(self, "tags", normalize_tags(self.tags))
        if not isinstance(self.non_equality_tags, frozenset):
            setattr_(self, "non_equality_tags",
                     normalize_tags(self.non_equality_tags))
        shape = self._pt_compute_shape()
        if shape:
            _check_size(self, shape)
        if shape is None:
            # a class of the user's leaving the shape abstract, as
            # upstream's Array allows
            if self.axes is None:
                setattr_(self, "axes", ())
        elif self.axes is None:
            axes = _DEFAULT_AXES.get(len(shape))
            if axes is None:
                axes = _DEFAULT_AXES[len(shape)] = (_DEFAULT_AXIS,) * len(shape)
            setattr_(self, "axes", axes)
        elif len(self.axes) != len(shape):
            raise InvalidArgumentError(
                f"{type(self).__name__}: got {len(self.axes)} axes for an array "
                f"of {len(shape)} dimensions")
        kids: list[ChildNode] = []
        skel_fields: list[object] = []
        identity_fields = self._identity_fields
        get_kind = _KIND_OF_TYPE.get
        names = _FIELD_NAMES_CACHE.get(type(self))
        if names is None:
            names = _skeleton_field_names(type(self))
        for name in names:
            value = getattr(self, name)
            if identity_fields and name in identity_fields:
                skel_fields.append(_Identity(value))
                continue
            # inline fast paths of _flatten for the commonest field values
            kind = get_kind(type(value))
            if kind is _ATOM:
                skel_fields.append(value)
            elif kind is _CHILD:
                kids.append(value)
                skel_fields.append(_child_ref(len(kids) - 1))
            elif kind is _MAPPING and not value:
                skel_fields.append(_EMPTY_MAPPING)
            elif kind is _TUPLE and type(value) is tuple:
                # (shapes, axes: a plain tuple of atomic values is its own
                # skeleton)
                for v in value:
                    if get_kind(type(v)) is not _ATOM:
                        skel_fields.append(_flatten(value, kids))
                        break
                else:
                    skel_fields.append(value)
            else:
                skel_fields.append(_flatten(value, kids))
        skel = tuple(skel_fields)
        setattr_(self, "_pt_kids", tuple(kids))
        setattr_(self, "_pt_skel", skel)
        setattr_(self, "_pt_shape", shape)
        setattr_(self, "_pt_hash", hash((type(self).__name__, skel,
                                         *map(hash, kids))))
        setattr_(self, "_pt_inputs", _merge_inputs(
            kids, self if self._is_named_input else None))

    def _pt_validate(self) -> None:
        """Hook for cheap per-node invariants (run before caching)."""

    def _pt_compute_shape(self) -> ShapeType | None:
        try:
            return self.shape
        except AttributeError:
            if hasattr(type(self), "shape"):
                raise   # (a shape property failing)
            return None

    # }}}

    # {{{ identity, equality, pickling

    def __hash__(self) -> int:
        return self._pt_hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Array):
            return False
        return EqualityComparer()(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __reduce__(self) -> tuple[object, ...]:
        return reduce_array(self)

    def copy(self, **kwargs: Any) -> Self:
        """Return a copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)

    # ``__repr__`` (pytato.stringifier.array_repr) is attached by
    # pytato.stringifier, which builds on this package and on
    # pytato.visualization.

    # }}}

    # {{{ properties

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> ShapeComponent:
        """The number of elements (an int or a symbolic size)."""
        return shape_product(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise InvalidArgumentTypeError("len() of a 0-d array")
        n = self.shape[0]
        if not isinstance(n, int):
            raise InvalidArgumentTypeError(
                "len() of an array with a symbolic first dimension")
        return n

    def __bool__(self) -> bool:
        raise UnsupportedOperationError(
            "the truth value of a lazy pytato array is unknown at graph "
            "construction; use pytato.any/pytato.all or evaluate it first")

    def __iter__(self) -> Iterator[Array]:
        raise UnsupportedOperationError("lazy pytato arrays cannot be iterated")

    __array_priority__ = 10**6  # make numpy defer to our reflected operators

    # }}}

    # {{{ tagging

    def with_tagged_axis(self, iaxis: int, tags: Tag | Iterable[Tag]) -> Self:
        """Return a copy of *self* with axis *iaxis* tagged with *tags*."""
        iaxis = normalize_axis(iaxis, self.ndim, "iaxis")
        new_axes = (*self.axes[:iaxis], self.axes[iaxis].tagged(tags),
                    *self.axes[iaxis + 1:])
        return dataclasses.replace(self, axes=new_axes)

    def named(self, name: str) -> Array:
        """Return *self* tagged with :class:`~pytato.tags.Named` *name*."""
        return self.tagged(Named(name))

    # }}}

    # {{{ numpy-like interface

    def __pos__(self) -> Array:
        return self

    if TYPE_CHECKING:
        # ``shape`` and ``dtype`` are fields or properties of each node
        # class (a shape given or derived, a dtype given or promoted):
        @property
        def shape(self) -> ShapeType: ...
        @property
        def dtype(self) -> np.dtype[np.generic]: ...

        # The numpy-like methods and operators that call the front end
        # (``a + b``, ``a[i]``, :meth:`sum`, :attr:`T`, ...) are attached by
        # :mod:`pytato.frontend.array_methods` when the front end is
        # imported (as :mod:`pytato` does), so that this package does not
        # import the front end that builds on it. Their signatures:
        @property
        def T(self) -> Array: ...
        @property
        def real(self) -> Array: ...
        @property
        def imag(self) -> Array: ...
        def conj(self) -> Array: ...
        def conjugate(self) -> Array: ...
        def __getitem__(self, idx: object) -> Array: ...
        def astype(self, dtype: npt.DTypeLike) -> Array: ...
        def reshape(self, *shape: ShapeLike, order: str = "C") -> Array: ...
        def transpose(self, *axes: int | Sequence[int]) -> Array: ...
        def __abs__(self) -> Array: ...
        def __neg__(self) -> Array: ...
        def __invert__(self) -> Array: ...
        def __matmul__(self, other: Operand) -> Array: ...
        def __rmatmul__(self, other: Operand) -> Array: ...
        def sum(self, axis: AxesLike = None) -> Array: ...
        def max(self, axis: AxesLike = None) -> Array: ...
        def min(self, axis: AxesLike = None) -> Array: ...
        def all(self, axis: int | tuple[int, ...] | None = None) -> Array: ...
        def any(self, axis: int | tuple[int, ...] | None = None) -> Array: ...
        def __add__(self, other: Operand) -> Array: ...
        def __radd__(self, other: Operand) -> Array: ...
        def __sub__(self, other: Operand) -> Array: ...
        def __rsub__(self, other: Operand) -> Array: ...
        def __mul__(self, other: Operand) -> Array: ...
        def __rmul__(self, other: Operand) -> Array: ...
        def __truediv__(self, other: Operand) -> Array: ...
        def __rtruediv__(self, other: Operand) -> Array: ...
        def __floordiv__(self, other: Operand) -> Array: ...
        def __rfloordiv__(self, other: Operand) -> Array: ...
        def __mod__(self, other: Operand) -> Array: ...
        def __rmod__(self, other: Operand) -> Array: ...
        def __pow__(self, other: Operand) -> Array: ...
        def __rpow__(self, other: Operand) -> Array: ...
        def __and__(self, other: Operand) -> Array: ...
        def __rand__(self, other: Operand) -> Array: ...
        def __or__(self, other: Operand) -> Array: ...
        def __ror__(self, other: Operand) -> Array: ...
        def __xor__(self, other: Operand) -> Array: ...
        def __rxor__(self, other: Operand) -> Array: ...
        def __lshift__(self, other: Operand) -> Array: ...
        def __rlshift__(self, other: Operand) -> Array: ...
        def __rshift__(self, other: Operand) -> Array: ...
        def __rrshift__(self, other: Operand) -> Array: ...
        def __lt__(self, other: Operand) -> Array: ...
        def __le__(self, other: Operand) -> Array: ...
        def __gt__(self, other: Operand) -> Array: ...
        def __ge__(self, other: Operand) -> Array: ...

    # }}}

# }}}


def flatten_for_pickle(ary: Array) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """Names and skeletons of the equality-relevant fields of *ary*."""
    return _skeleton_field_names(type(ary)), ary._pt_skel


def unflatten(cls: type[Array], names: tuple[str, ...], skel: tuple[object, ...],
              kids: tuple[ChildNode, ...], non_equality_tags: frozenset[Tag]
              ) -> Array:
    """Rebuild a node of type *cls* from its skeleton and children."""
    kwargs = {}
    for name, s in zip(names, skel, strict=True):
        if isinstance(s, _Identity):
            kwargs[name] = s.obj
        else:
            kwargs[name] = _unflatten(s, kids)
    return cls(**kwargs, non_equality_tags=non_equality_tags)


def topological_order(roots: Iterable[GraphNode]) -> list[GraphNode]:
    """All nodes reachable from *roots*, children before parents, each once.

    Iterative depth-first post-order following children in field order, so
    the order is deterministic for a given graph structure.
    """
    order: list[GraphNode] = []
    visited: set[int] = set()
    keep_alive = []
    for root in roots:
        if id(root) in visited:
            continue
        stack: list[tuple[GraphNode, int]] = [(root, 0)]
        visited.add(id(root))
        keep_alive.append(root)
        while stack:
            node, i = stack[-1]
            kids = node._pt_kids
            if i < len(kids):
                stack[-1] = (node, i + 1)
                kid = kids[i]
                if id(kid) not in visited:
                    visited.add(id(kid))
                    stack.append((kid, 0))
            else:
                stack.pop()
                order.append(node)
    return order


# {{{ pickling (see pytato.array.pickling)

def reduce_array(root: Array) -> tuple[Any, ...]:
    """``__reduce__`` of an array: its whole subgraph in topological order,
    each node with the indices of its children."""
    return (_rebuild, (_records([root]),))


def _records(roots: list[Array]) -> list[object]:
    order = topological_order(roots)
    index = {id(n): i for i, n in enumerate(order)}
    records: list[object] = []
    for node in order:
        if isinstance(node, Array):
            names, skel = flatten_for_pickle(node)
            records.append((type(node), names, skel,
                            tuple(index[id(k)] for k in node._pt_kids),
                            node.non_equality_tags))
        elif hasattr(type(node), "_pt_from_kids"):
            # a node that rebuilds itself from its skeleton and children
            # (e.g. a DictOfNamedArrays inside a graph)
            records.append((type(node), node._pt_skel,
                            tuple(index[id(k)] for k in node._pt_kids),
                            None))
        elif _is_flat_dataclass_node(node):
            # e.g. a distributed send: rebuilt from its fields, its children
            # shared with the rest of the graph
            records.append((type(node), node._pt_skel,
                            tuple(index[id(k)] for k in node._pt_kids)))
        else:
            # another non-array node (e.g. a call): its own __reduce__
            records.append(node)
    return records


def _is_flat_dataclass_node(node: object) -> bool:
    """Whether *node* is a dataclass whose skeleton is its flattened fields
    (so that it can be rebuilt from skeleton and children)."""
    return (dataclasses.is_dataclass(node) and hasattr(node, "_pt_skel")
            and len(node._pt_skel) == len(dataclasses.fields(node)))


def _rebuild(records: list[object]) -> Array:
    return _build(records)[-1]


def _build(records: list[object]) -> list[Any]:
    built: list[object] = []
    for rec in records:
        if isinstance(rec, tuple) and len(rec) == 5:
            cls, names, skel, kid_idx, net = rec
            built.append(unflatten(cls, names, skel,
                                   tuple(built[i] for i in kid_idx), net))
        elif isinstance(rec, tuple) and len(rec) == 4:
            cls, skel, kid_idx, _ = rec
            built.append(cls._pt_from_kids(skel, tuple(built[i] for i in kid_idx)))
        elif isinstance(rec, tuple):
            cls, skel, kid_idx = rec
            kids = tuple(built[i] for i in kid_idx)
            built.append(cls(**{f.name: _unflatten(s, kids) for f, s in zip(
                dataclasses.fields(cls), skel, strict=True)}))
        else:
            built.append(rec)
    return built

# }}}
