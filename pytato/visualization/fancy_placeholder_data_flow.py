"""Which inputs reach which outputs, as a picture.

The picture keeps only the *interesting* nodes of a graph: its inputs
(placeholders and data wrappers; size parameters are left out), the
intermediates stored in memory (tagged :class:`~pytato.tags.ImplStored`)
and the outputs. An arrow
``a -> b`` means that *b* is computed from *a* without passing through
another interesting node; it is labeled with the kinds of operations along
the way (e.g. ``IndexLambda, Einsum``). Edges are found in one pass over
the graph.

.. autofunction:: get_fancy_placeholder_data_flow_dot
.. autofunction:: show_fancy_placeholder_data_flow
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytato.array.base import Array, topological_order
from pytato.array.inputs import DataWrapper, InputArgumentBase, Placeholder, SizeParam
from pytato.tags import ImplStored
from pytato.visualization.dot import _outputs_of, _q, show_dot_graph
from pytato.visualization.labels import describe_array


__all__ = ["get_fancy_placeholder_data_flow_dot",
           "show_fancy_placeholder_data_flow"]


def _is_stored(node: object) -> bool:
    return isinstance(node, Array) and any(isinstance(t, ImplStored)
                                           for t in node.tags)


def _q_lines(*lines: str) -> str:
    """A dot string of several lines."""
    return '"' + "\\n".join(_q(line)[1:-1] for line in lines) + '"'


def _input_label(node: Array) -> str:
    if isinstance(node, (Placeholder, SizeParam)):
        name = node.name
    elif isinstance(node, DataWrapper):
        name = node.name or f"<{type(node.data).__name__}>"
    else:
        name = type(node).__name__
    return _q_lines(name, describe_array(node))


def get_fancy_placeholder_data_flow_dot(dag: object) -> str:
    """Dot source of the flow of data from the inputs of *dag* (an array, a
    :class:`~pytato.DictOfNamedArrays` or a :class:`dict` of arrays)
    through its stored intermediates to its outputs."""
    outputs = _outputs_of(dag)
    out_ids = {id(a) for a in outputs.values()}
    # for each node: {interesting node id: set of operation kinds on the way}
    sources: dict[int, dict[int, frozenset[str]]] = {}
    interesting: dict[int, object] = {}
    lines = []
    for node in topological_order(outputs.values()):
        if not isinstance(node, Array):
            sources[id(node)] = {}
            continue
        merged: dict[int, frozenset[str]] = {}
        for k in node._pt_kids:
            for src, kinds in sources[id(k)].items():
                merged[src] = merged.get(src, frozenset()) | kinds
        if not isinstance(node, InputArgumentBase):
            kind = frozenset({type(node).__name__})
            merged = {src: kinds | kind for src, kinds in merged.items()}
        if isinstance(node, SizeParam) and id(node) not in out_ids:
            sources[id(node)] = {}
            continue
        is_input = isinstance(node, InputArgumentBase)
        if is_input:
            merged = {}
        if is_input or _is_stored(node) or id(node) in out_ids:
            nid = f"n{len(interesting)}"
            interesting[id(node)] = nid
            if is_input:
                lines.append(f"{nid} [label={_input_label(node)} "
                             'shape=box style=filled fillcolor="lightblue"];')
            else:
                what = "stored" if _is_stored(node) else "computed"
                label = _q_lines(what, describe_array(node))
                lines.append(f"{nid} [label={label} "
                             'shape=box style="rounded,filled" '
                             'fillcolor="white"];')
            for src, kinds in merged.items():
                lines.append(f"{interesting[src]} -> {nid} "
                             f"[label={_q(', '.join(sorted(kinds)))}];")
            merged = {id(node): frozenset()}
        sources[id(node)] = merged
    for name, ary in outputs.items():
        oid = f"out_{len(lines)}"
        lines.append(f'{oid} [label={_q(name)} shape=ellipse style=filled '
                     'fillcolor="lightsalmon"];')
        lines.append(f"{interesting[id(ary)]} -> {oid};")
    return "\n".join([
        'digraph "placeholder_data_flow" {',
        "rankdir=LR;",
        'node [fontname="monospace" fontsize=10];',
        "edge [fontname=monospace fontsize=9];",
        *lines, "}"])


def show_fancy_placeholder_data_flow(
        dag: object, *, output_to: str | os.PathLike[str] | None = None,
        **kwargs: Any) -> Path:
    """Render :func:`get_fancy_placeholder_data_flow_dot` of *dag* with
    :func:`~pytato.visualization.show_dot_graph` (see there for
    *output_to* and *kwargs*) and return the written file's path."""
    return show_dot_graph(get_fancy_placeholder_data_flow_dot(dag),
                          output_to=output_to, **kwargs)
