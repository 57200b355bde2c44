"""Graphviz pictures of array graphs.

:func:`get_dot_graph` returns the graph in the dot language: one box per
distinct node object (shared nodes are drawn once), labeled with the node's
type, shape, dtype, operation (see :mod:`pytato.visualization.labels`),
tags and axis tags; arrows go from each child to its user and carry the
name under which the user reads it (binding name, ``args[1]``, ...);
arrows into shapes are dotted. Outputs are drawn as named ellipses.

:func:`show_dot_graph` renders dot source with the ``dot`` program of
`Graphviz <https://graphviz.org>`__ (an optional dependency: a
:class:`~pytato.diagnostic.GraphvizNotFoundError` explains what to install
when it is missing) and opens the result in a web browser when one is
available.

:func:`get_dot_graph_from_partition` draws a partitioned graph (see
:class:`PartitionLike` for what it needs of the partition).

.. autofunction:: get_dot_graph
.. autofunction:: show_dot_graph
.. autofunction:: render_dot
.. autofunction:: get_dot_graph_from_partition
.. autoclass:: PartitionLike
.. autoclass:: PartLike
.. autoclass:: DotGraphBuilder

Helpers for writing dot source (as in the reference pytato):

.. autoclass:: DotEmitter
.. autofunction:: dot_escape
.. autofunction:: dot_escape_leave_space
.. autofunction:: stringify_shape
.. autofunction:: stringify_tags
"""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from pytools.tag import Tag

from pytato.array.base import Array, GraphNode, topological_order
from pytato.array.inputs import Placeholder
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import format_shape
from pytato.diagnostic import (
    GraphvizError,
    GraphvizNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from pytato.distributed.partition import DistributedGraphPartition, PartId
from pytato.visualization.labels import (
    describe_array,
    format_tags,
    kid_paths,
    node_operation,
    path_label,
)


__all__ = ["DotEmitter", "DotGraphBuilder", "PartLike", "PartitionLike",
           "dot_escape", "dot_escape_leave_space", "get_dot_graph",
           "get_dot_graph_from_partition", "render_dot", "show_dot_graph",
           "stringify_shape", "stringify_tags"]


def dot_escape_leave_space(s: str) -> str:
    """*s* escaped for the text of an HTML-like dot label (``&``, ``<``,
    ``>``, quotes) and for dot strings (backslashes)."""
    return html.escape(s, quote=True).replace("\\", "\\\\")


def dot_escape(s: str) -> str:
    """:func:`dot_escape_leave_space` of *s*, with each space replaced by
    ``_`` as well (for identifiers in labels)."""
    return dot_escape_leave_space(s).replace(" ", "_")


def stringify_shape(shape: Iterable[Any]) -> str:
    """*shape* as text, e.g. ``(3, n)`` (size expressions in terms of
    their size parameters)."""
    return format_shape(tuple(shape))


def stringify_tags(tags: Iterable[object]) -> str:
    """*tags* as text: a sorted, comma-separated list of their reprs in
    braces (``{}`` for none); *None* entries are skipped."""
    return "{" + format_tags(t for t in tags if t is not None) + "}"


class DotEmitter:
    """Collects the lines of dot source, indented by nesting.

    .. automethod:: __call__
    .. automethod:: block
    .. automethod:: get
    """

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._level = 0

    def __call__(self, line: str) -> None:
        """Add *line* at the current indentation."""
        self._lines.append("  " * self._level + line if line else "")

    def block(self, header: str) -> _DotBlock:
        """A context manager writing ``header {`` on entry, indenting the
        lines added inside, and ``}`` on exit, e.g.
        ``with emit.block("subgraph cluster_0"): ...``."""
        return _DotBlock(self, header)

    def get(self) -> str:
        """The dot source collected."""
        return "\n".join(self._lines) + "\n"


class _DotBlock:
    def __init__(self, emitter: DotEmitter, header: str) -> None:
        self.emitter = emitter
        self.header = header

    def __enter__(self) -> None:
        self.emitter(f"{self.header} {{")
        self.emitter._level += 1

    def __exit__(self, *exc: object) -> None:
        self.emitter._level -= 1
        self.emitter("}")


_FILL = {
    "map_placeholder": "lightblue",
    "map_size_param": "lightblue",
    "map_data_wrapper": "lightgrey",
    "map_index_lambda": "white",
    "map_einsum": "lightgoldenrod1",
    "map_distributed_send": "lightpink",
    "map_distributed_recv": "lightpink",
    "map_distributed_send_ref_holder": "lightpink",
    "map_call": "palegreen",
    "map_named_array": "palegreen",
}
_DEFAULT_FILL = "gray95"
_SHAPE_FIELDS = frozenset({"shape", "newshape"})


def _q(s: str) -> str:
    """A double-quoted dot string."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _h(s: str, limit: int) -> str:
    """HTML-escaped *s*, shortened to *limit* characters."""
    if limit and len(s) > limit:
        s = s[:limit - 3] + "..."
    return html.escape(s, quote=True)


def _is_shape_path(path: tuple[object, ...]) -> bool:
    return path[0] in _SHAPE_FIELDS or path[-1] in ("start", "stop")


class DotGraphBuilder:
    """Accumulates dot statements. Node types are drawn by
    ``emit_<mapper method>`` methods when present (e.g. ``emit_map_call``,
    which draws a call and its function's body as a cluster), else by
    :meth:`emit_default`.

    .. automethod:: add_graph
    .. automethod:: add_outputs
    .. automethod:: emit_default
    .. automethod:: source
    """

    def __init__(self, max_label_length: int = 160) -> None:
        self.max_label_length = max_label_length
        self.lines: list[str] = []
        self._counter = 0
        self._function_clusters: dict[int, dict[str, str]] = {}
        self._keep: list[object] = []

    def fresh_id(self, prefix: str = "n") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    # {{{ nodes

    def node_label(self, node: GraphNode, kid_names: list[str],
                   paths: list[tuple[object, ...]] | None = None) -> str:
        """The HTML-like label of *node* (see
        :func:`~pytato.visualization.labels.node_operation` for the
        arguments)."""
        lim = self.max_label_length
        mm = getattr(node, "_mapper_method", "")
        rows = [f'<TR><TD BGCOLOR="{_FILL.get(mm, _DEFAULT_FILL)}">'
                f"<B>{_h(type(node).__name__, lim)}</B></TD></TR>"]
        if isinstance(node, Array):
            rows.append(f"<TR><TD>{_h(describe_array(node), lim)}</TD></TR>")
        op = node_operation(node, kid_names, paths)
        rows.append(f'<TR><TD ALIGN="LEFT">{_h(op, lim)}</TD></TR>')
        tags: frozenset[Tag] = getattr(node, "tags", frozenset())
        if tags:
            rows.append(f"<TR><TD>tags: {_h(format_tags(tags), lim)}</TD></TR>")
        for i, ax in enumerate(getattr(node, "axes", ())):
            if ax.tags:
                rows.append(f"<TR><TD>axis {i}: "
                            f"{_h(format_tags(ax.tags), lim)}</TD></TR>")
        return ('<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" '
                f'CELLPADDING="3">{"".join(rows)}</TABLE>>')

    def emit_default(self, node: GraphNode, nid: str,
                     kid_ids: list[str]) -> None:
        """Draw *node* as box *nid* with arrows from its children's boxes
        *kid_ids* (in ``_pt_kids`` order)."""
        paths = kid_paths(node)
        labels = [path_label(p) for p in paths]
        self.lines.append(
            f"{nid} [label={self.node_label(node, labels, paths)}];")
        for kid_id, path, label in zip(kid_ids, paths, labels, strict=True):
            style = ' style=dotted color="gray50"' if _is_shape_path(path) \
                else ""
            self.lines.append(f"{kid_id} -> {nid} [label={_q(label)}{style}];")

    def emit_map_call(self, node: Any, nid: str, kid_ids: list[str]) -> None:
        """A call: the call node, and its function's body (drawn once per
        function, as a cluster) with dashed arrows from the body's
        returned values to the call."""
        self.emit_default(node, nid, kid_ids)
        fn = getattr(node, "function", None)
        returns = getattr(fn, "returns", None)
        if not isinstance(returns, Mapping):
            return
        if id(fn) not in self._function_clusters:
            self._keep.append(fn)
            cid = self.fresh_id("cluster_fn")
            self.lines.append(f"subgraph {cid} {{")
            self.lines.append(
                f"label={_q(str(getattr(fn, 'identifier', None) or 'function'))};"
                ' style=rounded; color="darkgreen";')
            ids = self.add_graph(list(returns.values()))
            self.lines.append("}")
            self._function_clusters[id(fn)] = {
                name: ids[id(v)] for name, v in returns.items()}
        for name, rid in self._function_clusters[id(fn)].items():
            self.lines.append(f"{rid} -> {nid} [label={_q(name)} "
                              "style=dashed];")

    # }}}

    def add_graph(self, roots: Iterable[GraphNode],
                  ids: dict[int, str] | None = None) -> dict[int, str]:
        """Draw the graphs of *roots* (each distinct node once) and return
        the map from ``id(node)`` to box id. Nodes already in *ids* are not
        drawn again."""
        ids = {} if ids is None else ids
        for node in topological_order(roots):
            if id(node) in ids or isinstance(node, DictOfNamedArrays):
                continue
            nid = self.fresh_id()
            ids[id(node)] = nid
            self._keep.append(node)
            kid_ids = [ids.get(id(k), "") for k in node._pt_kids]
            emit = getattr(self, "emit_" + getattr(node, "_mapper_method", ""),
                           self.emit_default)
            emit(node, nid, kid_ids)
        return ids

    def add_outputs(self, outputs: Mapping[str, GraphNode],
                    ids: Mapping[int, str]) -> None:
        """Draw an ellipse per output name, with an arrow from its array."""
        for name, ary in outputs.items():
            oid = self.fresh_id("out")
            self.lines.append(f'{oid} [label={_q(name)} shape=ellipse '
                              'style=filled fillcolor="lightsalmon"];')
            self.lines.append(f"{ids[id(ary)]} -> {oid};")

    def source(self, name: str = "computation") -> str:
        """The dot source of everything drawn so far."""
        return "\n".join([
            f"digraph {_q(name)} {{",
            'node [shape=plaintext fontname="monospace" fontsize=10];',
            "edge [fontname=monospace fontsize=9];",
            *self.lines, "}"])


def _outputs_of(result: object) -> dict[str, GraphNode]:
    if isinstance(result, DictOfNamedArrays):
        return dict(result._data)
    if isinstance(result, Mapping):
        return dict(result)
    if isinstance(result, GraphNode):
        return {"result": result}
    raise InvalidArgumentTypeError(
        "'result' must be an array, a DictOfNamedArrays or a "
        f"dict of arrays, got {type(result).__name__}")


def get_dot_graph(result: object, *, max_label_length: int = 160) -> str:
    """The graph of *result* (an array, a :class:`~pytato.DictOfNamedArrays`
    or a :class:`dict` of arrays) as Graphviz dot source. A
    :class:`~pytato.DistributedGraphPartition` is drawn by
    :func:`get_dot_graph_from_partition`.

    :arg max_label_length: operations and tags longer than this are cut
        (0: never).
    """
    if isinstance(result, DistributedGraphPartition):
        return get_dot_graph_from_partition(
            result, max_label_length=max_label_length)
    outputs = _outputs_of(result)
    b = DotGraphBuilder(max_label_length)
    ids = b.add_graph(outputs.values())
    b.add_outputs(outputs, ids)
    return b.source()


# {{{ rendering

_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot",
            ".gv": "dot", ".html": "html", ".htm": "html", ".jpg": "jpg",
            ".jpeg": "jpg", ".ps": "ps"}


def _dot_program(dot_program: str) -> str:
    path = shutil.which(dot_program)
    if path is None:
        raise GraphvizNotFoundError(
            f"the Graphviz program '{dot_program}' was not found on PATH; "
            "install Graphviz (e.g. 'apt install graphviz', 'conda install "
            "graphviz' or 'brew install graphviz') to render dot graphs, or "
            "use get_dot_graph() for the dot source")
    return path


def render_dot(dot_source: str, fmt: str = "svg", *,
               dot_program: str = "dot", timeout: float = 60) -> bytes:
    """Run Graphviz on *dot_source* and return the rendered bytes in format
    *fmt* (``"svg"``, ``"png"``, ``"pdf"``, ...).

    :raises GraphvizNotFoundError: if *dot_program* is not installed.
    :raises GraphvizError: if it fails.
    """
    exe = _dot_program(dot_program)
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=dot_source.encode(),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise GraphvizError(f"'{dot_program}' did not finish within "
                            f"{timeout} s") from e
    if proc.returncode != 0:
        raise GraphvizError(f"'{dot_program} -T{fmt}' failed (exit code "
                            f"{proc.returncode}): "
                            f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _html_page(svg: bytes, title: str) -> bytes:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title></head><body>\n").encode() \
        + svg + b"\n</body></html>\n"


def _open_in_browser(path: Path) -> bool:
    # only needed to show a graph in a browser
    import webbrowser
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return webbrowser.open(path.resolve().as_uri())


def show_dot_graph(result: Any, *,
                   output_to: str | os.PathLike[str] | None = None,
                   dot_program: str = "dot", **kwargs: Any) -> Path:
    """Render *result* (dot source, or anything :func:`get_dot_graph`
    accepts: an array, a :class:`~pytato.DictOfNamedArrays`, a dict of
    arrays or a :class:`~pytato.DistributedGraphPartition`) and show or
    save it.

    :arg output_to: where the picture goes:

        * *None* or ``"browser"``: an HTML page with the SVG picture in a
          temporary file, opened in a web browser when one is available
          (without waiting for it); otherwise the path is only returned,
          with a warning;
        * ``"svg"``, ``"png"``, ``"pdf"``, ``"html"`` or ``"dot"``: a
          temporary file of that format;
        * a path: that file, in the format of its suffix.

    :arg kwargs: passed to :func:`get_dot_graph`.
    :returns: the path of the written file.
    :raises GraphvizNotFoundError: if *dot_program* is needed but missing.
    """
    source = result if isinstance(result, str) else get_dot_graph(result,
                                                                  **kwargs)
    open_browser = output_to is None or output_to == "browser"
    if open_browser or (isinstance(output_to, str)
                        and output_to in _FORMATS.values()):
        fmt = "html" if open_browser else str(output_to)
        fd, name = tempfile.mkstemp(prefix="pytato-graph-",
                                    suffix="." + ("dot" if fmt == "dot"
                                                  else fmt))
        os.close(fd)
        path = Path(name)
    else:
        path = Path(output_to)  # type: ignore[arg-type]
        fmt = _FORMATS.get(path.suffix.lower(), "")
        if not fmt:
            raise InvalidArgumentError(
                f"'output_to'={str(output_to)!r}: unknown file "
                f"type; use one of {', '.join(sorted(_FORMATS))}")

    if fmt == "dot":
        data = source.encode()
    elif fmt == "html":
        data = _html_page(render_dot(source, "svg", dot_program=dot_program),
                          "pytato graph")
    else:
        data = render_dot(source, fmt, dot_program=dot_program)
    path.write_bytes(data)

    if open_browser and not _open_in_browser(path):
        warnings.warn(f"no web browser available; the graph was written to "
                      f"{path}")
    return path

# }}}


# {{{ partitions

class PartLike(Protocol):
    """What :func:`get_dot_graph_from_partition` needs of a part. Optional
    attributes, used when present: ``partition_input_names`` (names of
    values the part receives from other parts or from other ranks),
    ``name_to_recv_node`` and ``name_to_send_nodes`` (objects with
    ``src_rank``/``dest_rank`` and ``comm_tag``)."""

    @property
    def output_names(self) -> Iterable[str]: ...


class PartitionLike(Protocol):
    """What :func:`get_dot_graph_from_partition` needs of a partition
    (:class:`pytato.distributed.DistributedGraphPartition` is one): the
    parts by id, and the expression of each part output by name, in terms of
    placeholders named like the values the part gets from elsewhere."""

    @property
    def parts(self) -> Mapping[PartId, PartLike]: ...

    @property
    def name_to_output(self) -> Mapping[str, Array]: ...


def get_dot_graph_from_partition(partition: PartitionLike, *,
                                 max_label_length: int = 160) -> str:
    """Dot source of a partitioned graph: one cluster per part holding the
    graph of its outputs; a dashed arrow leads from each part output to the
    placeholders of that name in the parts that use it; receives and sends
    are drawn as pink ellipses."""

    b = DotGraphBuilder(max_label_length)
    output_box: dict[str, str] = {}
    placeholder_boxes: list[tuple[str, str]] = []
    for pid, part in partition.parts.items():
        b.lines.append(f"subgraph {_q(f'cluster_part_{pid}')} {{")
        b.lines.append(f"label={_q(f'part {pid}')}; style=rounded; "
                       "color=blue;")
        names = sorted(part.output_names)
        outputs = {n: partition.name_to_output[n] for n in names}
        ids = b.add_graph(outputs.values())
        for name, ary in outputs.items():
            oid = b.fresh_id("out")
            output_box[name] = oid
            b.lines.append(f'{oid} [label={_q(name)} shape=ellipse '
                           'style=filled fillcolor="lightsalmon"];')
            b.lines.append(f"{ids[id(ary)]} -> {oid};")
        for node in topological_order(outputs.values()):
            if isinstance(node, Placeholder):
                placeholder_boxes.append((node.name, ids[id(node)]))
        for name, recv in getattr(part, "name_to_recv_node", {}).items():
            rid = b.fresh_id("recv")
            output_box.setdefault(name, rid)
            b.lines.append(
                f"{rid} [label={_q(f'recv {name} from rank {recv.src_rank}, tag {recv.comm_tag!r}')} "  # noqa: E501
                'shape=ellipse style=filled fillcolor="lightpink"];')
        for name, sends in getattr(part, "name_to_send_nodes", {}).items():
            for send in sends:
                sid = b.fresh_id("send")
                b.lines.append(
                    f"{sid} [label={_q(f'send to rank {send.dest_rank}, tag {send.comm_tag!r}')} "  # noqa: E501
                    'shape=ellipse style=filled fillcolor="lightpink"];')
                if name in output_box:
                    b.lines.append(f"{output_box[name]} -> {sid};")
        b.lines.append("}")
    for name, box in placeholder_boxes:
        src = output_box.get(name)
        if src is not None:
            b.lines.append(f"{src} -> {box} [style=dashed color=blue];")
    return b.source("partition")

# }}}
