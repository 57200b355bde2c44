"""Upstream's module name for the removal of broadcasts from einsum
operands (see :mod:`pytato.transform.einsum_rewrites`).

.. autoclass:: EinsumWithNoBroadcastsRewriter
.. autofunction:: rewrite_einsums_with_no_broadcasts
    :noindex:
"""

from __future__ import annotations

from pytato.transform.einsum_rewrites import (
    EinsumBroadcastRemover,
    rewrite_einsums_with_no_broadcasts,
)


__all__ = ["EinsumWithNoBroadcastsRewriter", "rewrite_einsums_with_no_broadcasts"]


class EinsumWithNoBroadcastsRewriter(EinsumBroadcastRemover):
    """Upstream's name of
    :class:`~pytato.transform.einsum_rewrites.EinsumBroadcastRemover`:
    copies a graph, replacing einsum operands that broadcast (a broadcast
    lower-dimensional array, or size-1 axes against longer ones) by the
    arrays without the broadcast axes."""
