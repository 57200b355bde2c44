"""Dot graphs, their rendering with Graphviz, and the text form of graphs."""

from __future__ import annotations

import os
import re
import shutil
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from random_graphs import make_random_graph

import pytato as pt
from pytato.analysis import get_num_nodes
from pytato.diagnostic import GraphvizNotFoundError
from pytato.stringifier import graph_to_str
from pytato.tags import ImplStored, Named
from pytato.visualization import (
    dot as dot_module,
    get_fancy_placeholder_data_flow_dot,
    render_dot,
)
from pytato.visualization.labels import einsum_subscripts, scalar_expr_to_str


# scripts/setup.sh installs Graphviz; without it, these tests fail with a
# GraphvizNotFoundError unless PYTATO_ALLOW_NO_GRAPHVIZ=1 skips them
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None
    and os.environ.get("PYTATO_ALLOW_NO_GRAPHVIZ") == "1",
    reason="Graphviz 'dot' is not installed (PYTATO_ALLOW_NO_GRAPHVIZ=1)")

_NODE_RE = re.compile(r"^n\d+ \[label=<", re.MULTILINE)


@dataclass(frozen=True)
class _Ax(pt.Tag):
    pass


def _sample():
    x = pt.make_placeholder("x", (4, 3)).with_tagged_axis(0, _Ax())
    y = pt.make_placeholder("y", (3,))
    a = pt.sin(x) * y
    e = pt.einsum("ij,j->i", a, y).tagged(ImplStored())
    s = pt.stack([a, a], axis=0)
    return {"e": e, "s": s[:, 1:, ::-1],
            "d": a + pt.make_data_wrapper(np.ones(3))}


def test_dot_graph_content() -> None:
    out = _sample()
    src = pt.get_dot_graph(out)
    assert src.startswith('digraph "computation" {') and src.endswith("}")
    # each distinct node object once
    assert len(_NODE_RE.findall(src)) == get_num_nodes(out,
                                                      count_duplicates=True)
    for text in ["Placeholder", "IndexLambda", "Einsum", "Stack", "BasicIndex",
                 "DataWrapper", "(4, 3) float64", "placeholder &#x27;x&#x27;",
                 "einsum(&#x27;ij,j-&gt;i&#x27;, args[0], args[1])",
                 "tags: ImplStored()", "axis 0: _Ax()",
                 "stack([arrays[0], arrays[1]], axis=0)",
                 'label="_in0"', 'label="args[1]"', 'label="arrays[1]"',
                 'label="e"', 'label="s"', 'label="d"']:
        assert text in src, text
    # a single array is drawn with one output named "result"
    assert 'label="result"' in pt.get_dot_graph(out["e"])
    # labels can be cut short
    long = pt.get_dot_graph(out, max_label_length=10)
    assert "..." in long


def test_dot_graph_of_deep_chain_and_shape_edges() -> None:
    n = pt.make_size_param("n")
    x = pt.make_placeholder("x", (n,))
    y = x
    for _ in range(2000):
        y = y * 2
    src = pt.get_dot_graph(y)
    assert len(_NODE_RE.findall(src)) == 2002
    assert 'label="shape[0]" style=dotted' in src


@needs_dot
def test_render_png(tmp_path: Path) -> None:
    path = pt.show_dot_graph(_sample(), output_to=tmp_path / "graph.png")
    assert path == tmp_path / "graph.png"
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 1000
    # the IHDR chunk holds a sensible picture size
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert 50 < width < 20000 and 50 < height < 20000


@needs_dot
@pytest.mark.parametrize("output_to", ["svg", "html", "dot", "x.svg",
                                       "x.pdf", "x.gv"])
def test_show_dot_graph_formats(output_to: str, tmp_path: Path) -> None:
    if "." in output_to:
        output_to = str(tmp_path / output_to)
    path = pt.show_dot_graph(_sample(), output_to=output_to)
    data = path.read_bytes()
    assert data
    if path.suffix == ".svg":
        assert b"<svg" in data
    elif path.suffix == ".html":
        assert data.startswith(b"<!DOCTYPE html>") and b"<svg" in data
    elif path.suffix == ".pdf":
        assert data.startswith(b"%PDF")
    else:
        assert data.startswith(b'digraph "computation"')
    if not str(output_to).startswith(str(tmp_path)):
        path.unlink()


@needs_dot
def test_show_dot_graph_opens_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = []
    monkeypatch.setattr(webbrowser, "get", lambda *a: object())
    monkeypatch.setattr(webbrowser, "open", lambda url: opened.append(url)
                        or True)
    path = pt.show_dot_graph(pt.get_dot_graph(_sample()))
    assert opened == [path.resolve().as_uri()]
    assert path.suffix == ".html"
    path.unlink()

    def no_browser(*args: object) -> None:
        raise webbrowser.Error("none")

    monkeypatch.setattr(webbrowser, "get", no_browser)
    with pytest.warns(UserWarning, match="no web browser"):
        path = pt.show_dot_graph(_sample(), output_to="browser")
    assert len(opened) == 1
    path.unlink()


def test_missing_graphviz_and_bad_output(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown file type"):
        pt.show_dot_graph(_sample(), output_to=tmp_path / "graph.xyz")
    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)
    with pytest.raises(GraphvizNotFoundError, match="install Graphviz"):
        pt.show_dot_graph(_sample(), output_to=tmp_path / "graph.png")
    with pytest.raises(RuntimeError):   # also a RuntimeError
        render_dot("digraph {}")
    # dot source needs no Graphviz
    path = pt.show_dot_graph(_sample(), output_to=tmp_path / "graph.dot")
    assert path.read_text().startswith("digraph")


@needs_dot
@pytest.mark.parametrize("seed", range(3))
def test_random_graphs_render(seed: int) -> None:
    g = make_random_graph(seed)
    svg = render_dot(pt.get_dot_graph(g.outputs), "svg")
    assert b"<svg" in svg
    svg = render_dot(get_fancy_placeholder_data_flow_dot(g.outputs), "svg")
    assert b"<svg" in svg


@needs_dot
def test_distributed_nodes_draw() -> None:
    from pytato.distributed.nodes import (
        make_distributed_recv,
        staple_distributed_send,
    )
    x = pt.make_placeholder("x", (3,))
    r = make_distributed_recv(1, 7, (3,), np.float64)
    held = staple_distributed_send(x * 2, dest_rank=1, comm_tag=5,
                                   stapled_to=x + r)
    src = pt.get_dot_graph(held)
    assert "DistributedSend" in src and "DistributedRecv" in src
    assert b"<svg" in render_dot(src)


# {{{ partitions

@dataclass(frozen=True)
class _Recv:
    src_rank: int
    comm_tag: int


@dataclass(frozen=True)
class _Send:
    dest_rank: int
    comm_tag: int


@dataclass(frozen=True)
class _Part:
    output_names: frozenset[str]
    name_to_recv_node: dict[str, _Recv] = field(default_factory=dict)
    name_to_send_nodes: dict[str, list[_Send]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Partition:
    parts: dict[int, _Part]
    name_to_output: dict[str, pt.Array]


@needs_dot
def test_dot_graph_from_partition() -> None:
    x = pt.make_placeholder("x", (3,))
    t = pt.make_placeholder("tmp", (3,))
    r = pt.make_placeholder("recvd", (3,))
    partition = _Partition(
        parts={
            0: _Part(frozenset({"tmp", "sent"}),
                     name_to_send_nodes={"sent": [_Send(1, 42)]}),
            1: _Part(frozenset({"out"}),
                     name_to_recv_node={"recvd": _Recv(1, 43)})},
        name_to_output={"tmp": pt.sin(x), "sent": x * 2,
                        "out": t + r + x})
    src = pt.get_dot_graph_from_partition(partition)
    assert "cluster_part_0" in src and "cluster_part_1" in src
    assert "send to rank 1, tag 42" in src
    assert "recv recvd from rank 1, tag 43" in src
    # the placeholder 'tmp' of part 1 is fed by part 0's output 'tmp'
    assert src.count("style=dashed color=blue") == 2
    # x is drawn in both parts
    assert src.count("placeholder &#x27;x&#x27;") == 2
    assert b"<svg" in render_dot(src)


@needs_dot
def test_dot_graph_from_real_partition() -> None:
    MPI = pytest.importorskip("mpi4py.MPI")
    from pytato.distributed.nodes import (
        make_distributed_recv,
        staple_distributed_send,
    )
    from pytato.distributed.partition import find_distributed_partition

    x = pt.make_placeholder("x", (4,))
    held = staple_distributed_send(x * 2, dest_rank=0, comm_tag=1,
                                   stapled_to=x + 1)
    recvd = make_distributed_recv(0, 1, (4,), np.float64)
    partition = find_distributed_partition(MPI.COMM_SELF,
                                           {"o": held + recvd * 3})
    src = pt.get_dot_graph_from_partition(partition)
    for pid in partition.parts:
        assert f"cluster_part_{pid}" in src
    assert "send to rank 0, tag 1" in src and "from rank 0, tag 1" in src
    assert 'label="o"' in src
    assert b"<svg" in render_dot(src)

# }}}


def test_fancy_placeholder_data_flow(tmp_path: Path) -> None:
    x = pt.make_placeholder("x", (4,))
    y = pt.make_placeholder("y", (4,))
    n = pt.make_size_param("n")
    z = pt.make_placeholder("z", (n,))
    stored = pt.sin(x).tagged(ImplStored())
    out = {"a": stored + y, "b": stored * 2, "c": pt.sum(z)}
    src = get_fancy_placeholder_data_flow_dot(out)
    assert src.count('fillcolor="lightblue"') == 3      # x, y, z; not n
    assert '"stored\\n(4,) float64"' in src
    assert 'label="IndexLambda"' in src
    for name in "abc":
        assert f'label="{name}"' in src
    # x reaches the outputs only through the stored node
    x_id = re.search(r'^(n\d+) \[label="x\\n', src, re.MULTILINE).group(1)
    assert len(re.findall(rf"^{x_id} -> ", src, re.MULTILINE)) == 1
    path = pt.show_fancy_placeholder_data_flow(out,
                                               output_to=tmp_path / "flow.dot")
    assert path.read_text() == src


# {{{ text

def test_graph_to_str_prints_shared_nodes_once() -> None:
    x = pt.make_placeholder("x", (4, 3))
    a = pt.sin(x)
    s = pt.stack([a, a * 2, a], axis=1).tagged(Named("s"))
    text = graph_to_str({"s": s, "r": pt.sum(a, axis=0)})
    lines = text.splitlines()
    assert lines[0] == "v0 = Placeholder (4, 3) float64: placeholder 'x'"
    assert lines[1] == "v1 = IndexLambda (4, 3) float64: sin(v0[_0, _1])"
    assert lines[2] == "v2 = IndexLambda (4, 3) float64: v1[_0, _1]*2.0"
    assert lines[3] == ("v3 = Stack (4, 3, 3) float64: stack([v1, v2, v1], "
                        "axis=1)  tags={Named(name='s')}")
    assert lines[4] == ("v4 = IndexLambda (3,) float64: "
                        "sum[_r0=0:4](v1[_r0, _0])")
    assert lines[5] == "v5 = {'s': v3, 'r': v4}"
    assert len(lines) == 6
    verbose = graph_to_str(s, verbose=True)
    assert "bindings={'_in0': v1}" in verbose


def test_labels() -> None:
    x = pt.make_placeholder("x", (4, 3))
    y = pt.make_placeholder("y", (3, 5))
    assert einsum_subscripts(pt.einsum("ab,bc->ac", x, y)) == "ik,kj->ij"
    assert einsum_subscripts(pt.einsum("ab->", x)) == "ij->"
    e = pt.maximum(x.astype(np.float32), 1)
    assert scalar_expr_to_str(e.expr) == (
        "_in0[_0, _1] if _in0[_0, _1] > 1.0 or isnan(_in0[_0, _1]) else 1.0")
    assert scalar_expr_to_str(pt.astype(x, np.int32).expr) == (
        "int32(_in0[_0, _1])")
    assert scalar_expr_to_str(pt.sum(x, axis=1).expr, {"_in0": "x"}) == (
        "sum[_r0=0:3](x[_0, _r0])")

# }}}
