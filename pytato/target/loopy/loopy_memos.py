"""Bounding :mod:`loopy`'s global memos in long-running processes, shared
by the stages of the loopy backend (the lowering trims them at each code
generation, :mod:`pytato.target.loopy.store.program_store` when releasing
cache memory). Imports no stage.

.. autodata:: LOOPY_MEMO_LIMIT
.. autodata:: GENERATED_SOURCE_LIMIT
.. autofunction:: trim_loopy_memos
.. autofunction:: loopy_caching_off
"""

from __future__ import annotations

import linecache
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager


__all__ = ["GENERATED_SOURCE_LIMIT", "LOOPY_MEMO_LIMIT", "loopy_caching_off",
           "trim_loopy_memos"]


LOOPY_MEMO_LIMIT = 2048
"""The most entries kept in :mod:`loopy`'s global memo of expression
dependencies (see :func:`trim_loopy_memos`)."""

GENERATED_SOURCE_LIMIT = 256
"""The most sources of generated Python code (:mod:`loopy`'s invokers,
compiled by :mod:`pytools`) kept in :mod:`linecache` (see
:func:`trim_loopy_memos`)."""

#: the prefix of the :mod:`linecache` names of :mod:`pytools`' generated code
_GENERATED_PREFIX = "<generated: '"


def trim_loopy_memos(limit: int | None = None) -> None:
    """Clear :mod:`loopy`'s global, never cleared memo of the dependencies
    of expressions (one entry per instruction expression it analyzed) when
    it holds more than *limit* (default: :data:`LOOPY_MEMO_LIMIT`)
    entries. A pure cache: clearing it only costs recomputation. Also drop
    the oldest sources of generated Python code from :mod:`linecache`
    beyond :data:`GENERATED_SOURCE_LIMIT` (beyond *limit*, if smaller)."""
    if limit is None:
        limit = LOOPY_MEMO_LIMIT
    # (a process that has not imported loopy has no memo)
    fn = getattr(sys.modules.get("loopy.symbolic"),
                 "_get_dependencies_and_reduction_inames", None)
    # (pytools' memoize keeps the memo on the undecorated function)
    memo = getattr(getattr(fn, "__wrapped__", fn), "_memoize_dic", None)
    if memo is not None and len(memo) > limit:
        memo.clear()
    # pytools puts the source of each piece of generated Python code (the
    # invoker of every program) in linecache, for tracebacks, and never
    # removes it, so that it grows with every program run. The oldest go,
    # beyond GENERATED_SOURCE_LIMIT (their tracebacks then show no source
    # lines).
    source_limit = GENERATED_SOURCE_LIMIT if limit == LOOPY_MEMO_LIMIT \
        else min(limit, GENERATED_SOURCE_LIMIT)
    generated = [name for name in linecache.cache
                 if isinstance(name, str) and name.startswith(_GENERATED_PREFIX)]
    for name in generated[:max(len(generated) - source_limit, 0)]:
        linecache.cache.pop(name, None)


# {{{ loopy's caching switch

_CACHING_OFF_LOCK = threading.Lock()
#: [number of regions with loopy's caching off, loopy's switch before them]
_CACHING_OFF: list = [0, True]


@contextmanager
def loopy_caching_off() -> Iterator[None]:
    """Turn :mod:`loopy`'s on-disk caching off in the body (for steps whose
    results the caller keeps itself), as :class:`loopy.CacheMode` does, but
    safe when threads run such bodies at once: loopy's switch is global to
    the process, and two threads' ``CacheMode(False)`` interleaved (each
    saving the other's value) left caching off for good, program store
    included. The switch is set back when the last body ends."""
    # (loopy at first use: pytato.lazy_imports)
    import loopy

    with _CACHING_OFF_LOCK:
        if _CACHING_OFF[0] == 0:
            _CACHING_OFF[1] = loopy.CACHING_ENABLED
            loopy.CACHING_ENABLED = False
        _CACHING_OFF[0] += 1
    try:
        yield
    finally:
        with _CACHING_OFF_LOCK:
            _CACHING_OFF[0] -= 1
            if _CACHING_OFF[0] == 0:
                loopy.CACHING_ENABLED = _CACHING_OFF[1]

# }}}
