"""Read-only analyses of array graphs: counts, users, depth, cost.

.. automodule:: pytato.analysis.counts
.. automodule:: pytato.analysis.users
.. automodule:: pytato.analysis.einsum
.. automodule:: pytato.analysis.materialized
.. automodule:: pytato.analysis.cost
.. automodule:: pytato.analysis.mappers
.. automodule:: pytato.analysis.key_builder
.. automodule:: pytato.analysis.graph_key
"""

from __future__ import annotations

from typing import Any

from pytato.analysis.cost import (
    CostEstimate,
    estimate_cost,
    get_bytes_estimate,
    get_flop_count,
)
from pytato.analysis.counts import (
    CallSiteCounter,
    get_max_node_depth,
    get_node_multiplicities,
    get_node_type_counts,
    get_num_call_sites,
    get_num_nodes,
    get_num_tags_of_type,
)
from pytato.analysis.einsum import is_einsum_similar_to_subscript
from pytato.analysis.mappers import (
    DirectPredecessorsGetter,
    ListOfDirectPredecessorsGetter,
    ListOfUsersCollector,
    MaterializedNodeCollector,
    NodeMultiplicityMapper,
    TagCountMapper,
)
from pytato.analysis.materialized import collect_materialized_nodes
from pytato.analysis.users import get_list_of_users, get_nusers


__all__ = [
    "CallSiteCounter", "CostEstimate", "DirectPredecessorsGetter",
    "ListOfDirectPredecessorsGetter", "ListOfUsersCollector",
    "MaterializedNodeCollector", "NodeMultiplicityMapper", "PytatoKeyBuilder",
    "TagCountMapper", "collect_materialized_nodes",
    "estimate_cost", "get_bytes_estimate", "get_flop_count",
    "get_list_of_users", "get_max_node_depth", "get_node_multiplicities",
    "get_node_type_counts", "get_num_call_sites", "get_num_nodes",
    "get_num_tags_of_type", "get_nusers", "is_einsum_similar_to_subscript",
]


def __getattr__(name: str) -> Any:
    # (PytatoKeyBuilder imports loopy: at first use, see pytato.lazy_imports)
    if name == "PytatoKeyBuilder":
        # (imports loopy: at first use)
        from pytato.analysis.key_builder import PytatoKeyBuilder
        return PytatoKeyBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
