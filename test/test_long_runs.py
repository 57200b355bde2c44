"""A process generating many distinct programs keeps its in-memory caches
bounded: pytato's program cache and trace cache are LRUs, and loopy's and
the program store's in-memory caches (LRUs of
:class:`pytools.persistent_dict.WriteOncePersistentDict`) have fixed
sizes."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

import pytato as pt


def _graph(i: int, dtype: type) -> pt.Array:
    x = pt.make_placeholder("x", (i % 5 + 2, 3), dtype)
    y = pt.make_placeholder("y", (3,), dtype)
    if dtype is np.bool_:
        expr = (x ^ y) | (x.sum(axis=1) > i % 3).reshape(-1, 1)
    else:
        expr = pt.exp(x * (i + 0.5)) + y * x.sum(axis=1).reshape(-1, 1)
    return expr


def _lru_sizes() -> list[tuple[int, int]]:
    """(current size, maximum size) of loopy's in-memory caches and the
    program store's."""
    import loopy.tools

    from pytato.target.loopy.store.program_store import _STORE
    sizes = []
    for cache in [*loopy.tools.caches, *_STORE]:
        info = cache._fetch.cache_info()
        sizes.append((info.currsize, info.maxsize))
    return sizes


def _loopy_memo() -> dict:
    from loopy import symbolic
    fn = symbolic._get_dependencies_and_reduction_inames
    return getattr(getattr(fn, "__wrapped__", fn), "_memoize_dic", {})


def test_caches_stay_bounded(monkeypatch) -> None:
    from pytato.target.loopy import PROGRAM_CACHE, loopy_memos
    from pytato.target.loopy.store import program_store

    monkeypatch.setattr(loopy_memos, "LOOPY_MEMO_LIMIT", 50)

    n = 2 * PROGRAM_CACHE.maxsize + 20
    gc.collect()
    tracemalloc.start()
    try:
        heap = []
        for i in range(n):
            dtype = (np.bool_, np.complex128)[i % 2]
            prog = pt.generate_loopy(_graph(i, dtype))
            assert prog.program is not None
            if i in (n // 2, n - 1):
                gc.collect()
                heap.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()

    assert len(PROGRAM_CACHE) == PROGRAM_CACHE.maxsize      # evicts
    for cur, maxsize in _lru_sizes():
        assert maxsize is not None and cur <= maxsize
    # loopy's global memo is trimmed at each generation (one generation
    # adds a few entries)
    assert len(_loopy_memo()) <= 50 + 50
    for pdict in program_store._persistent_dicts():   # bounded page caches
        (kib,) = pdict.conn.execute("PRAGMA cache_size").fetchone()
        assert kib == -program_store.SQLITE_CACHE_KIB
    # the Python heap does not grow with the number of programs once the
    # program cache is full (the last half generated as many programs as
    # the cache holds): at most 32 KB per program
    assert heap[1] - heap[0] < 32 * 1024 * (n - n // 2)

    # what a long-running application may call
    program_store.limit_cache_memory(1024)
    for pdict in program_store._persistent_dicts():
        (kib,) = pdict.conn.execute("PRAGMA cache_size").fetchone()
        assert kib == -1024
    program_store.release_cache_memory()
    assert len(PROGRAM_CACHE) == 0
    assert not _loopy_memo()
    for cur, _ in _lru_sizes():
        assert cur == 0
    # programs still generate and run afterwards
    prog = pt.generate_loopy(_graph(3, np.complex128))
    assert prog.program is not None
