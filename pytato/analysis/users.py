"""Users of nodes: which nodes read which.

A *user* of a node is an array node that has it as a direct child (through
a field such as a binding or an operand, or through its shape). The
:class:`~pytato.DictOfNamedArrays` holding the outputs is not a user.
Structurally equal nodes are one node here (the results are keyed by
arrays, which compare structurally): their users are merged.

.. autofunction:: get_list_of_users
.. autofunction:: get_nusers
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytato.analysis._outputs import output_roots
from pytato.array.base import Array, topological_order
from pytato.transform.deduplicate import structural_class_ids


if TYPE_CHECKING:
    from pytato.analysis._outputs import Outputs


__all__ = ["get_list_of_users", "get_nusers"]


def get_list_of_users(outputs: Outputs) -> dict[Array, list[Array]]:
    """A mapping from each node of the graph of *outputs* to the list of its
    distinct users, in topological order (inputs map to their readers,
    outputs nobody reads map to ``[]``)."""
    order = topological_order(output_roots(outputs))
    cls_of = structural_class_ids(order)
    rep: dict[int, Array] = {}
    users: dict[int, list[Array]] = {}
    user_sets: dict[int, set[int]] = {}
    for n in order:
        if not isinstance(n, Array):
            continue
        c = cls_of[id(n)]
        if c not in rep:
            rep[c] = n
            users[c] = []
            user_sets[c] = set()
        for k in n._pt_kids:
            kc = cls_of[id(k)]
            kid_users = user_sets.get(kc)
            if kid_users is not None and c not in kid_users:
                kid_users.add(c)
                users[kc].append(rep[c])
    return {rep[c]: u for c, u in users.items()}


def get_nusers(outputs: Outputs) -> dict[Array, int]:
    """A mapping from each node of the graph of *outputs* to its number of
    distinct users."""
    return {k: len(v) for k, v in get_list_of_users(outputs).items()}
