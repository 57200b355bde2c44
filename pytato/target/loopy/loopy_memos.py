"""Bounding :mod:`loopy`'s global memos in long-running processes, shared
by the stages of the loopy backend (the lowering trims them at each code
generation, :mod:`pytato.target.loopy.run.program_store` when releasing
cache memory). Imports no stage.

.. autodata:: LOOPY_MEMO_LIMIT
.. autofunction:: trim_loopy_memos
"""

from __future__ import annotations

from loopy import symbolic as _loopy_symbolic


__all__ = ["LOOPY_MEMO_LIMIT", "trim_loopy_memos"]


LOOPY_MEMO_LIMIT = 2048
"""The most entries kept in :mod:`loopy`'s global memo of expression
dependencies (see :func:`trim_loopy_memos`)."""


def trim_loopy_memos(limit: int | None = None) -> None:
    """Clear :mod:`loopy`'s global, never cleared memo of the dependencies
    of expressions (one entry per instruction expression it analyzed) when
    it holds more than *limit* (default: :data:`LOOPY_MEMO_LIMIT`)
    entries. A pure cache: clearing it only costs recomputation."""
    if limit is None:
        limit = LOOPY_MEMO_LIMIT
    fn = getattr(_loopy_symbolic, "_get_dependencies_and_reduction_inames",
                 None)
    # (pytools' memoize keeps the memo on the undecorated function)
    memo = getattr(getattr(fn, "__wrapped__", fn), "_memoize_dic", None)
    if memo is not None and len(memo) > limit:
        memo.clear()
