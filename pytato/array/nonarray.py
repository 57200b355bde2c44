"""A base for graph nodes that are not arrays.

Result containers of calls (:class:`~pytato.function.Call`,
:class:`~pytato.loopy.LoopyCall`) and sparse matrices
(:class:`~pytato.array.sparse.CSRMatrix`) are part of array graphs but
have no element-wise meaning, so they deliberately do not derive from
:class:`~pytato.array.Array`. They share the construction-time caches of
arrays (skeleton, children, hash, named inputs), so that topological
traversal, structural equality, mappers and pickling treat them like any
other node.

.. autoclass:: DataclassGraphNode
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytato.array.base import ChildNode, GraphNode, _flatten, _merge_inputs
from pytato.equality import EqualityComparer


__all__ = ["DataclassGraphNode"]


class DataclassGraphNode(GraphNode):
    """Mixin for frozen dataclass nodes (declared with ``eq=False``) that
    are not arrays.

    At construction, :meth:`_pt_validate` runs, then every field is
    flattened into a skeleton (child :class:`~pytato.array.base.GraphNode`\\ s
    factored out), and the hash and the map of named inputs are cached.
    Equality is structural (see :class:`~pytato.equality.EqualityComparer`).
    """

    __slots__ = ()

    def __post_init__(self) -> None:
        self._pt_validate()
        kids: list[ChildNode] = []
        skel = tuple(_flatten(getattr(self, f.name), kids)
                     for f in dataclasses.fields(self))  # type: ignore[arg-type]
        setattr_ = object.__setattr__
        setattr_(self, "_pt_kids", tuple(kids))
        setattr_(self, "_pt_skel", skel)
        setattr_(self, "_pt_hash", hash((type(self).__name__, skel,
                                         *(hash(k) for k in kids))))
        setattr_(self, "_pt_inputs", _merge_inputs(kids, None))
        self._pt_finish()

    def _pt_validate(self) -> None:
        """Hook for invariants checked before the caches are computed."""

    def _pt_finish(self) -> None:
        """Hook for further caches computed after the common ones."""

    def __hash__(self) -> int:
        return self._pt_hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(self) is not type(other):
            return False
        return EqualityComparer()(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __reduce__(self) -> tuple[object, ...]:
        # rebuilt from its fields: the cached hash is recomputed when
        # unpickling (string hashes differ between processes)
        return (_rebuild, (type(self), {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)}))  # type: ignore[arg-type]

    def copy(self, **kwargs: object) -> Any:
        """A copy of *self* with the fields in *kwargs* replaced."""
        return dataclasses.replace(self, **kwargs)  # type: ignore[type-var]


def _rebuild(cls: type, fields: dict[str, object]) -> object:
    return cls(**fields)
