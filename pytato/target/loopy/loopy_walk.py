"""Walks over :mod:`loopy` expressions, shared by the stages of the loopy
backend (lowering and schedule). Imports no stage.

.. autoclass:: UncachedLoopyWalkMapper
"""

from __future__ import annotations

from loopy.symbolic import WalkMapper as _LoopyWalkMapper
from pymbolic.mapper import Mapper as _PymbolicMapper


__all__ = ["UncachedLoopyWalkMapper"]


class UncachedLoopyWalkMapper(_LoopyWalkMapper):
    """A :class:`loopy.symbolic.WalkMapper` without a cache: it visits every
    subexpression each time it occurs. (Loopy's walk mappers, its
    ``UncachedWalkMapper`` too, skip subexpressions equal to ones seen
    before, keyed by the expression: on the generated kernels, building and
    hashing those keys cost more than the visits they save.) For walks
    whose results do not depend on how often a subexpression is
    visited."""

    __call__ = _PymbolicMapper.__call__
    rec = _PymbolicMapper.__call__
