"""Padding, under the module name of the reference pytato:
:func:`pytato.pad` (defined and documented in :mod:`pytato.frontend.misc`)
is re-exported here as ``pytato.pad.pad``.
"""

from __future__ import annotations

from pytato.frontend.misc import pad


__all__ = ["pad"]
