"""Results with several named arrays.

.. autoclass:: AbstractResultWithNamedArrays
.. autoclass:: DictOfNamedArrays
.. autoclass:: NamedArray
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from constantdict import constantdict
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    DerivedShapeMixin,
    GraphNode,
    ShapeType,
    _build,
    _merge_inputs,
    _records,
    _TaggableMixin,
    array_dataclass,
    check_unique_tags,
    normalize_tags,
    topological_order,
)


class AbstractResultWithNamedArrays(GraphNode, Mapping[str, Array],
                                    _TaggableMixin):
    """A mapping from names to arrays that is the result of a computation
    (a :class:`DictOfNamedArrays`, or a call's results). Deliberately has no
    arithmetic.

    Subclasses are (frozen) dataclasses with their own constructors; the
    constructor here, for other subclasses, takes the :attr:`tags` by
    keyword, as in the reference pytato.
    """

    _mapper_method: ClassVar[str]

    def __init__(self, *, tags: frozenset[Tag]) -> None:
        object.__setattr__(self, "tags", check_unique_tags(
            normalize_tags(tags), type(self).__name__))


@dataclass(frozen=True, eq=False, repr=False, init=False)
class DictOfNamedArrays(AbstractResultWithNamedArrays):
    """A mapping from valid Python identifiers to :class:`Array`\\ s.

    As in the reference pytato, ``result[name]`` (and so ``values()`` and
    ``items()``) gives a :class:`NamedArray` referring to this container,
    with the array's shape, dtype, axes and tags; its
    :attr:`NamedArray.expr` is the array itself.

    :arg data: the mapping from names to arrays.
    :arg tags: a :class:`frozenset` of tags (*None* for none).

    .. attribute:: tags
    """

    _data: Mapping[str, Array]
    tags: frozenset[Tag]

    _mapper_method: ClassVar[str] = "map_dict_of_named_arrays"

    def __init__(self, data: Mapping[str, Array], *,
                 tags: frozenset[Tag] | None = None) -> None:
        if not isinstance(data, constantdict):
            data = constantdict(data)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "tags",
                           frozenset() if tags is None else normalize_tags(tags))
        self.__post_init__()

    def __post_init__(self) -> None:
        object.__setattr__(self, "_pt_kids", tuple(self._data.values()))
        object.__setattr__(self, "_pt_skel", (tuple(self._data), self.tags))
        object.__setattr__(self, "_pt_hash", hash(
            ("DictOfNamedArrays", tuple(self._data.items()), self.tags)))
        object.__setattr__(self, "_pt_inputs", _merge_inputs(self._pt_kids, None))
        object.__setattr__(self, "_pt_named", {})

    if TYPE_CHECKING:
        # (set at construction)
        @property
        def _pt_named(self) -> dict[str, NamedArray]: ...

    @classmethod
    def _pt_from_kids(cls, skel: tuple[Any, ...], kids: tuple[Array, ...]
                      ) -> DictOfNamedArrays:
        """Rebuild from :attr:`_pt_skel` and :attr:`_pt_kids` (pickling)."""
        names, tags = skel
        return cls(dict(zip(names, kids, strict=True)), tags=tags)

    def _with_new_tags(self, tags: frozenset[Tag]) -> DictOfNamedArrays:
        return DictOfNamedArrays(self._data, tags=tags)

    def __getitem__(self, name: str) -> NamedArray:
        # as in the reference pytato: the array named *name* as a node that
        # refers to this container (its .expr is the array itself); one
        # node per name, so that graphs built from it share it
        try:
            return self._pt_named[name]
        except KeyError:
            pass
        ary = self._data[name]
        result = self._pt_named.setdefault(
            name, NamedArray(self, name, axes=ary.axes, tags=ary.tags,
                             non_equality_tags=ary.non_equality_tags))
        return result

    def _get_result_shape(self, name: str) -> ShapeType:
        return self._data[name].shape

    def _get_result_dtype(self, name: str) -> np.dtype[np.generic]:
        return self._data[name].dtype

    def __reduce__(self) -> tuple[object, ...]:
        # one flat record list for all outputs keeps shared nodes shared
        return reduce_dict_of_named_arrays(self)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __hash__(self) -> int:
        return self._pt_hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        return (isinstance(other, DictOfNamedArrays)
                and self._pt_hash == other._pt_hash
                and self.tags == other.tags
                and dict(self._data) == dict(other._data))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return ("DictOfNamedArrays({"
                + ", ".join(f"{k!r}: {v!r}" for k, v in self._data.items())
                + "})")


@array_dataclass
class NamedArray(DerivedShapeMixin, Array):
    """The array named :attr:`name` in the result container
    :attr:`_container` (an entry of a :class:`DictOfNamedArrays`, or one
    output of a call).

    .. autoattribute:: expr
    """

    _container: Any
    name: str

    _mapper_method: ClassVar[str] = "map_named_array"

    def _pt_compute_shape(self) -> ShapeType:
        return self._container._get_result_shape(self.name)

    @property
    def expr(self) -> Array:
        """The array this names: the entry of the :class:`DictOfNamedArrays`
        container."""
        if isinstance(self._container, DictOfNamedArrays):
            return self._container._data[self.name]
        raise TypeError(
            f"'expr' is only defined for the entries of a DictOfNamedArrays, "
            f"not of a {type(self._container).__name__}")

    @property
    def dtype(self) -> np.dtype[np.generic]:
        return self._container._get_result_dtype(self.name)


def named_arrays_of(outputs: Mapping[str, Array]) -> Mapping[str, Array]:
    """The arrays of *outputs* by name: the arrays themselves (not their
    :class:`NamedArray` entries) for a :class:`DictOfNamedArrays`, else
    *outputs*."""
    if isinstance(outputs, DictOfNamedArrays):
        return outputs._data
    return outputs


def _make_dict_of_named_arrays(data: dict[str, Array], tags: frozenset[Tag]
                               ) -> DictOfNamedArrays:
    return DictOfNamedArrays(data, tags=tags)


# {{{ pickling (see pytato.array.pickling)

def reduce_dict_of_named_arrays(result: Any) -> tuple[Any, ...]:
    """``__reduce__`` of a :class:`~pytato.DictOfNamedArrays`: the graphs of
    all its arrays in one flat list, so that nodes shared between outputs
    stay shared after unpickling."""
    roots = list(result._data.values())
    records = _records(roots)
    index = {id(n): i for i, n in enumerate(topological_order(roots))}
    return (_rebuild_dict, (records, tuple(result.keys()),
                            tuple(index[id(r)] for r in roots), result.tags))


def _rebuild_dict(records: list[Any], names: tuple[str, ...],
                  root_indices: tuple[int, ...], tags: Any) -> Any:
    built = _build(records)
    return DictOfNamedArrays({name: built[i] for name, i in zip(
        names, root_indices, strict=True)}, tags=tags)

# }}}
