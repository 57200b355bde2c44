"""Tags of arrays, axes and reductions: normalizing and checking them, and
the mixin that makes pytato's frozen dataclasses taggable.

The metadata of axes and reductions, which carry tags, are here too.

.. autofunction:: normalize_tags
.. autofunction:: check_unique_tags
.. autoclass:: Axis
.. autoclass:: ReductionDescriptor
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytools.tag import Tag, Taggable, UniqueTag

from pytato.diagnostic import InvalidArgumentError, NonUniqueTagError, TagTypeError


if TYPE_CHECKING:
    from typing import Self


__all__ = ["Axis", "ReductionDescriptor", "check_unique_tags", "normalize_tags"]

def normalize_tags(tags: Tag | Iterable[Tag] | None,
                   argname: str = "argument 'tags'") -> frozenset[Tag]:
    """Turn a tag, an iterable of tags or None into a frozenset of tags.

    :raises TagTypeError: naming *argname*, if *tags* is a :class:`str`
        (not an iterable of tags), not iterable, or holds a non-tag.
    """
    if tags is None:
        return frozenset()
    if isinstance(tags, Tag):
        return frozenset([tags])
    if isinstance(tags, str):
        raise TagTypeError(
            f"{argname}: expected a pytools.tag.Tag or an iterable of Tags, "
            f"got the str {tags!r} (strings are not tags; e.g. "
            "pytato.tags.ImplStored() marks an array to store)")
    try:
        result = frozenset(tags)
    except TypeError:
        raise TagTypeError(
            f"{argname}: expected a pytools.tag.Tag or an iterable of Tags, "
            f"got {type(tags).__name__} {tags!r}") from None
    for t in result:
        if not isinstance(t, Tag):
            raise TagTypeError(
                f"{argname}: expected instances of pytools.tag.Tag, got "
                f"{type(t).__name__} {t!r}")
    return result


def check_unique_tags(tags: frozenset[Tag], what: str = "array") -> frozenset[Tag]:
    """Raise :class:`~pytato.diagnostic.NonUniqueTagError` if *tags* holds two
    :class:`~pytools.tag.UniqueTag` instances of one unique-tag family."""
    seen: dict[type, Tag] = {}
    for t in tags:
        if not isinstance(t, UniqueTag):
            continue
        family = _unique_family(type(t))
        if family in seen and seen[family] != t:
            raise NonUniqueTagError(
                f"{what}: conflicting unique tags {seen[family]!r} and {t!r} "
                f"(both of unique tag type '{family.__name__}')")
        seen[family] = t
    return tags


def _unique_family(cls: type) -> type:
    """The most general base class of *cls* that directly derives from
    :class:`UniqueTag`."""
    for base in cls.__mro__:
        if UniqueTag in base.__bases__:
            return base
    return cls


class _TaggableMixin(Taggable):
    """Makes a frozen dataclass with a ``tags`` field a
    :class:`pytools.tag.Taggable`: :meth:`tagged` and :meth:`without_tags`
    return modified copies, and unique tags are checked with pytato's
    :class:`~pytato.diagnostic.NonUniqueTagError`. Equality and hashing are
    left to the classes (:class:`~pytools.tag.Taggable` would compare tags
    only)."""

    tags: frozenset[Tag]

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def _with_new_tags(self, tags: frozenset[Tag]) -> Self:
        return dataclasses.replace(self, tags=tags)  # type: ignore[type-var]

    def tagged(self, tags: Tag | Iterable[Tag] | None) -> Self:
        """Return a copy of *self* with *tags* added. Raises
        :class:`~pytato.diagnostic.NonUniqueTagError` if two unique tags of
        one type result."""
        new = normalize_tags(tags, "tagged(), argument 'tags'")
        if new <= self.tags:
            return self
        return self._with_new_tags(check_unique_tags(self.tags | new,
                                                     type(self).__name__))

    def without_tags(self, tags: Tag | Iterable[Tag] | None,
                     verify_existence: bool = True) -> Self:
        """Return a copy of *self* without *tags*."""
        rm = normalize_tags(tags, "without_tags(), argument 'tags'")
        if verify_existence and not rm <= self.tags:
            raise InvalidArgumentError(f"tags {set(rm - self.tags)} are not present")
        if not rm & self.tags:
            return self
        return self._with_new_tags(self.tags - rm)

    def tags_of_type(self, tag_t: type) -> frozenset[Any]:
        """The tags of *self* that are instances of *tag_t*."""
        return frozenset(t for t in self.tags if isinstance(t, tag_t))

    def tags_not_of_type(self, tag_t: type) -> frozenset[Tag]:
        """The tags of *self* that are not instances of *tag_t*."""
        return frozenset(t for t in self.tags if not isinstance(t, tag_t))

    def replace_if_different(self, **kwargs: object) -> Self:
        """*self* if each field named in *kwargs* already holds (is) the
        given object, else a copy of *self* with those fields replaced (as
        :func:`dataclasses.replace`). Lets transforms keep nodes whose
        children did not change."""
        if all(getattr(self, name) is value for name, value in kwargs.items()):
            return self
        return dataclasses.replace(self, **kwargs)  # type: ignore[type-var]



@dataclass(frozen=True)
class Axis(_TaggableMixin):
    """Metadata of one axis of an array.

    .. attribute:: tags
    """

    tags: frozenset[Tag] = frozenset()


@dataclass(frozen=True)
class ReductionDescriptor(_TaggableMixin):
    """Metadata of one reduction (an index summed over, say).

    .. attribute:: tags
    """

    tags: frozenset[Tag] = frozenset()


