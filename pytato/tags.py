"""Tags: metadata attached to arrays, axes and calls.

Tags are :class:`pytools.tag.Tag` instances, so they interoperate with
:mod:`loopy`'s tags.

.. autoclass:: Tag
.. autoclass:: UniqueTag
.. autoclass:: ImplementationStrategy
.. autoclass:: ImplStored
.. autoclass:: ImplInlined
.. autoclass:: ImplDefault
.. autoclass:: ImplSubstitution
.. autoclass:: Named
.. autoclass:: PrefixNamed
.. autoclass:: CountNamed
.. autoclass:: AssumeNonNegative
.. autoclass:: ForceValueArgTag
.. autoclass:: CallImplementationTag
.. autoclass:: InlineCallTag
.. autoclass:: FunctionIdentifier
.. autoclass:: ExpandedDimsReshape
.. autoclass:: CreatedAt
.. autofunction:: set_traceback_tag_enabled
"""

from __future__ import annotations

import traceback
from collections.abc import Hashable
from dataclasses import dataclass

from pytools.tag import Tag, UniqueTag


__all__ = [
    "AssumeNonNegative",
    "CallImplementationTag",
    "CountNamed",
    "CreatedAt",
    "ExpandedDimsReshape",
    "ForceValueArgTag",
    "FunctionIdentifier",
    "ImplDefault",
    "ImplInlined",
    "ImplStored",
    "ImplSubstitution",
    "ImplementationStrategy",
    "InlineCallTag",
    "Named",
    "PrefixNamed",
    "Tag",
    "UniqueTag",
    "set_traceback_tag_enabled",
]


@dataclass(frozen=True)
class ImplementationStrategy(UniqueTag):
    """How an array is realized in generated code (at most one per array)."""


@dataclass(frozen=True)
class ImplStored(ImplementationStrategy):
    """Compute the array once and store it in memory."""


@dataclass(frozen=True)
class ImplInlined(ImplementationStrategy):
    """Recompute the array's expression at each of its uses."""


@dataclass(frozen=True)
class ImplDefault(ImplementationStrategy):
    """Let the code generator decide."""


@dataclass(frozen=True)
class ImplSubstitution(ImplementationStrategy):
    """Lower the array expression as a :class:`loopy.SubstitutionRule`
    invocation (also importable from :mod:`pytato.target.loopy`, its path in
    the reference pytato)."""


@dataclass(frozen=True)
class _NameTag(UniqueTag):
    pass


@dataclass(frozen=True)
class Named(_NameTag):
    """Use exactly :attr:`name` for the array in generated code."""

    name: str


@dataclass(frozen=True)
class PrefixNamed(_NameTag):
    """Use a fresh name starting with :attr:`prefix` in generated code."""

    prefix: str


@dataclass(frozen=True)
class CountNamed(UniqueTag):
    """Name the array's element count :attr:`name` in generated code."""

    name: str


@dataclass(frozen=True)
class AssumeNonNegative(Tag):
    """The tagged (integer) array holds only non-negative values; code
    generation may use this as an assumption."""


@dataclass(frozen=True)
class ForceValueArgTag(UniqueTag):
    """A 0-d input (a placeholder, or a data wrapper) tagged so is passed to
    the kernels of the loopy target by value (a :class:`loopy.ValueArg`; a
    boolean as ``int8``, OpenCL having no boolean kernel arguments) instead
    of as a 0-d array in global memory. At call time such an input takes a
    Python or numpy scalar (or a 0-d array). The Python targets ignore the
    tag."""


@dataclass(frozen=True)
class CallImplementationTag(UniqueTag):
    """How a :class:`~pytato.function.Call` is realized in generated code
    (at most one per call)."""


@dataclass(frozen=True)
class InlineCallTag(CallImplementationTag):
    """A :class:`~pytato.function.Call` tagged so is inlined at lowering."""


@dataclass(frozen=True)
class FunctionIdentifier(UniqueTag):
    """Tags a :class:`~pytato.function.FunctionDefinition` with a name
    (used for the callee kernel's name in generated code)."""

    identifier: Hashable


@dataclass(frozen=True)
class ExpandedDimsReshape(UniqueTag):
    """Marks a :class:`~pytato.array.Reshape` that only inserts unit axes;
    :attr:`new_dims` are the positions of the inserted axes."""

    new_dims: tuple[int, ...]


_TRACEBACK_TAG_ENABLED = False


def set_traceback_tag_enabled(enable: bool = True) -> None:
    """Switch the collection of :class:`CreatedAt` tags on array creation
    on or off (off by default: it slows graph construction)."""
    global _TRACEBACK_TAG_ENABLED
    _TRACEBACK_TAG_ENABLED = enable


def traceback_tag_enabled() -> bool:
    return _TRACEBACK_TAG_ENABLED


@dataclass(frozen=True, eq=False)
class CreatedAt(UniqueTag):
    """Where an array was created: :attr:`traceback` is a tuple of
    ``(filename, lineno, function, line)``. Ignored by equality of arrays
    (it is a non-equality tag)."""

    traceback: tuple[tuple[str, int, str, str], ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CreatedAt)

    def __hash__(self) -> int:
        return hash(CreatedAt)

    @staticmethod
    def capture() -> CreatedAt:
        frames = traceback.extract_stack()[:-2]
        return CreatedAt(tuple(
            (f.filename, f.lineno or 0, f.name, f.line or "")
            for f in frames if "/pytato/" not in f.filename))
