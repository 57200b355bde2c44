"""Structural equality of graphs, without recursion.

.. autoclass:: EqualityComparer
"""

from __future__ import annotations

from typing import Any


class EqualityComparer:
    """Compares two graphs structurally: same node types, same non-array
    fields, pairwise equal children. Iterative (deep graphs are fine) and
    linear in the number of distinct node pairs visited."""

    def __call__(self, a: Any, b: Any) -> bool:
        stack = [(a, b)]
        seen: set[tuple[int, int]] = set()
        while stack:
            x, y = stack.pop()
            if x is y:
                continue
            key = (id(x), id(y))
            if key in seen:
                continue
            seen.add(key)
            if type(x) is not type(y):
                return False
            xk = getattr(x, "_pt_kids", None)
            if xk is None:
                if x != y:
                    return False
                continue
            if (x._pt_hash != y._pt_hash
                    or x._pt_skel != y._pt_skel):
                return False
            yk = y._pt_kids
            if len(xk) != len(yk):
                return False
            stack.extend(zip(xk, yk, strict=True))
        return True
