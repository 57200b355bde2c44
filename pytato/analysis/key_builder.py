"""A key builder for persistent caches that knows pytato's graphs.

.. autoclass:: PytatoKeyBuilder
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from loopy.tools import LoopyKeyBuilder

from pytato.analysis.graph_key import graph_key
from pytato.array.base import GraphNode


if TYPE_CHECKING:
    from pytools import Hash


__all__ = ["PytatoKeyBuilder"]


class PytatoKeyBuilder(LoopyKeyBuilder):
    """A :class:`pytools.persistent_dict.KeyBuilder` (for persistent
    caches) that also hashes :mod:`pytato` graphs (by their structure, as
    the program store does: equal graphs give equal keys in every process)
    and :class:`numpy.ndarray`\\ s (by dtype, shape and contents).

    A graph holding a :class:`~pytato.array.DataWrapper` raises
    :class:`TypeError`: wrapped data has no persistent hash.
    """

    def rec(self, key_hash: Hash, key: object) -> Hash:
        if isinstance(key, GraphNode):
            key_hash.update(f"pytato-graph:{graph_key([key])}".encode())
            return key_hash
        return super().rec(key_hash, key)

    def update_for_ndarray(self, key_hash: Hash, key: np.ndarray) -> None:
        self.rec(key_hash, key.dtype)
        self.rec(key_hash, key.shape)
        key_hash.update(np.ascontiguousarray(key).tobytes())
