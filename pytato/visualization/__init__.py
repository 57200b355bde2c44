"""Pictures of array graphs (Graphviz dot) and readable node labels.

.. automodule:: pytato.visualization.dot
.. automodule:: pytato.visualization.fancy_placeholder_data_flow
.. automodule:: pytato.visualization.labels
"""

from __future__ import annotations

from pytato.visualization.dot import (
    DotGraphBuilder,
    PartitionLike,
    PartLike,
    get_dot_graph,
    get_dot_graph_from_partition,
    render_dot,
    show_dot_graph,
)
from pytato.visualization.fancy_placeholder_data_flow import (
    get_fancy_placeholder_data_flow_dot,
    show_fancy_placeholder_data_flow,
)


__all__ = [
    "DotGraphBuilder", "PartLike", "PartitionLike", "get_dot_graph",
    "get_dot_graph_from_partition", "get_fancy_placeholder_data_flow_dot",
    "render_dot", "show_dot_graph", "show_fancy_placeholder_data_flow",
]
