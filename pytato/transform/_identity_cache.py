"""A copy mapper whose cache is keyed by object identity.

:class:`~pytato.transform.CopyMapper` memoizes by structural equality, which
merges equal subgraphs but compares distinct equal objects deeply on each
cache hit. The passes in this package key by identity instead, so they stay
linear in the number of nodes even when a graph holds many duplicates (use
:func:`~pytato.transform.deduplicate.deduplicate` to merge those).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from pytato.function import FunctionDefinition
from pytato.transform.mappers import ArrayOrNames, CopyMapper, TransformMapperCache


class IdentityCachedCopyMapper(CopyMapper):
    """A :class:`~pytato.transform.CopyMapper` memoizing per node object.
    The mapped graph must stay alive while the mapper is in use (it does:
    the mapper is applied to it)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            err_on_created_duplicate: bool = False,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        if _cache is None:
            # duplicates in the graph are kept (see the module docstring)
            _cache = TransformMapperCache(err_on_collision,
                                          err_on_created_duplicate,
                                          deduplicate_results=False)
        super().__init__(err_on_collision, err_on_created_duplicate, _cache,
                         _function_cache)
        self._keep_alive: list[object] = []

    def get_cache_key(self, expr: object, *args: object, **kwargs: object) -> Hashable:
        if args or kwargs:
            return (id(expr), args, tuple(sorted(kwargs.items())))
        return id(expr)

    def rec(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        key = self.get_cache_key(expr, *args, **kwargs)
        try:
            return self._cache._input_key_to_result[key]
        except KeyError:
            self._keep_alive.append(expr)
            return super().rec(expr, *args, **kwargs)
