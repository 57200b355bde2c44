"""Padding, under the module name of the reference pytato:
:func:`pytato.pad` (defined and documented in :mod:`pytato.frontend.misc`)
is re-exported here as ``pytato.pad.pad``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytato.frontend.misc import _as_pairs, pad


if TYPE_CHECKING:
    from pytato.array import Array


__all__ = ["pad"]


def _normalize_pad_width(array: Array, pad_width: int | Sequence[int]
                         ) -> tuple[tuple[int, int], ...]:
    """The ``(before, after)`` widths of :func:`pad` for each axis of
    *array*, from *pad_width* in any of numpy's forms (an int, a
    ``(before, after)`` pair, a sequence of one pair, or one pair per
    axis), as the reference pytato's helper of that name returns them.

    :raises pytato.diagnostic.NonIntegralArgumentError: if the widths are
        not integers.
    :raises pytato.diagnostic.InvalidArgumentError: if they are negative or
        do not fit the number of axes of *array*.
    """
    return tuple((int(before), int(after)) for before, after in
                 _as_pairs(pad_width, array.ndim, "pad_width", integral=True))
