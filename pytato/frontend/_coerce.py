"""Turning array-like arguments of front-end functions into arrays:
:func:`~pytato.array.constructors.as_array` (defined with the constructors,
as array nodes such as sparse matrices need it too).
"""

from __future__ import annotations

from pytato.array.constructors import as_array


__all__ = ["as_array"]
