"""Readable one-line descriptions of graph nodes, shared by the text form
(:func:`pytato.stringifier.graph_to_str`) and the dot graphs.

A node's *operation* is written with its children replaced by names chosen
by the caller (``v3`` in text, the edge label in pictures), e.g.
``einsum('ij,jk->ik', v1, v2)`` or ``v0[_0, _1] + 1.0``.

.. autofunction:: kid_paths
.. autofunction:: path_label
.. autofunction:: scalar_expr_to_str
.. autofunction:: einsum_subscripts
.. autofunction:: node_operation
.. autofunction:: format_tags
"""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper.stringifier import PREC_NONE, StringifyMapper

from pytato.array.base import _ATOMIC, Array, GraphNode
from pytato.array.lambdas import EinsumElementwiseAxis
from pytato.array.remapping import NormalizedSlice
from pytato.array.shape import format_shape
from pytato.scalar_expr import Reduce, TypeCast


if TYPE_CHECKING:
    from pytato.array.base import ShapeComponent
    from pytato.array.lambdas import (
        Einsum,
        EinsumAxisDescriptor,
        EinsumReductionAxis,
        IndexLambda,
    )
    from pytato.array.remapping import Concatenate, IndexBase, Stack
    from pytato.scalar_expr import ScalarExpression


__all__ = ["einsum_subscripts", "format_tags", "kid_paths", "node_operation",
           "path_label", "scalar_expr_to_str"]

#: field names, tuple positions and mapping keys
Path = tuple[Hashable, ...]


# {{{ where each child sits in its parent

def _walk(value: object, path: Path, out: list[Path]) -> None:
    # mirrors pytato.array.base._flatten, which defines the children's order
    if isinstance(value, GraphNode):
        out.append(path)
    elif isinstance(value, _ATOMIC):
        return
    elif isinstance(value, tuple):
        for i, v in enumerate(value):
            _walk(v, (*path, i), out)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _walk(v, (*path, k), out)
    elif dataclasses.is_dataclass(value) and getattr(value, "_pt_flatten",
                                                      False):
        for f in dataclasses.fields(value):
            _walk(getattr(value, f.name), (*path, f.name), out)


def kid_paths(node: GraphNode) -> list[Path]:
    """For each child of *node* (in the order of ``node._pt_kids``), the
    path of field names, tuple positions and mapping keys leading to it,
    e.g. ``("bindings", "_in0")`` or ``("args", 1)``."""
    kids = node._pt_kids
    out: list[Path] = []
    if dataclasses.is_dataclass(node):
        identity = getattr(node, "_identity_fields", frozenset())
        for f in dataclasses.fields(node):
            if f.name == "non_equality_tags" or not f.compare \
                    or f.name in identity:
                continue
            _walk(getattr(node, f.name), (f.name,), out)
    if len(out) != len(kids):
        return [("kid", i) for i in range(len(kids))]
    return out


def path_label(path: Path) -> str:
    """A short label for a child at *path*: the binding or output name for
    mappings, ``field[i]`` for tuple entries."""
    if len(path) == 2 and isinstance(path[1], str) and path[0] in (
            "bindings", "_data"):
        return path[1]
    head = str(path[0]).lstrip("_")
    rest = "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                   for p in path[1:])
    return head + rest

# }}}


# {{{ scalar expressions

class _ScalarStringifier(StringifyMapper[[]]):
    def __init__(self, rename: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.rename = rename or {}

    def map_constant(self, expr: object, enclosing_prec: int, *args: object
                     ) -> str:
        if isinstance(expr, np.generic):
            expr = expr.item()
        return super().map_constant(expr, enclosing_prec)

    def map_variable(self, expr: prim.Variable, enclosing_prec: int,
                     *args: object) -> str:
        name = expr.name
        if name.startswith("pytato.c99."):
            return name[len("pytato.c99."):]
        return self.rename.get(name, name)

    def map_reduce(self, expr: Reduce, enclosing_prec: int, *args: object
                   ) -> str:
        bounds = ", ".join(f"{n}={self.rec(lo, PREC_NONE)}:"
                           f"{self.rec(hi, PREC_NONE)}"
                           for n, (lo, hi) in expr.bounds.items())
        return (f"{expr.op.name or type(expr.op).__name__}[{bounds}]"
                f"({self.rec(expr.inner_expr, PREC_NONE)})")

    def map_type_cast(self, expr: TypeCast, enclosing_prec: int,
                      *args: object) -> str:
        return f"{expr.dtype}({self.rec(expr.inner_expr, PREC_NONE)})"

    def map_foreign(self, expr: object, enclosing_prec: int, *args: object
                    ) -> str:
        if isinstance(expr, (np.generic, int, float, complex, bool)):
            return self.map_constant(expr, enclosing_prec)
        return repr(expr)


def scalar_expr_to_str(expr: ScalarExpression, rename: Mapping[str, str] | None = None
                       ) -> str:
    """*expr* as text (reductions as ``sum[_r0=0:4](...)``, casts as
    ``float32(...)``), with the variables in *rename* renamed."""
    return _ScalarStringifier(rename)(expr, PREC_NONE)

# }}}


def einsum_subscripts(expr: Einsum) -> str:
    """The subscript string of an :class:`~pytato.array.Einsum`, e.g.
    ``"ik,kj->ij"`` (output axes are ``i, j, ...`` in order, reduction
    axes take the following letters)."""
    letters = (string.ascii_lowercase[8:] + string.ascii_lowercase[:8]
               + string.ascii_uppercase)
    nout = expr.ndim

    def letter(d: EinsumAxisDescriptor) -> str:
        k = (d.dim if isinstance(d, EinsumElementwiseAxis)
             else nout + cast("EinsumReductionAxis", d).dim)
        return letters[k] if k < len(letters) else f"<{k}>"

    ins = ",".join("".join(letter(d) for d in acc)
                   for acc in expr.access_descriptors)
    return f"{ins}->{letters[:nout]}"


def format_tags(tags: Iterable[object]) -> str:
    """Tags as a sorted, comma-separated list of their reprs."""
    return ", ".join(sorted(repr(t) for t in tags))


# {{{ operations

def _fmt_index(idx: object, name: Callable[[Path], str], path: Path) -> str:
    if isinstance(idx, NormalizedSlice):
        def comp(c: object, field: str) -> str:
            if isinstance(c, GraphNode):
                return name((*path, field))
            return str(c)
        start, stop = comp(idx.start, "start"), comp(idx.stop, "stop")
        if idx.stop == -1 and idx.step < 0:
            stop = ""
        step = f":{idx.step}" if idx.step != 1 else ""
        return f"{start}:{stop}{step}"
    if isinstance(idx, GraphNode):
        return name(path)
    return str(idx)


def _shape_str(shape: Sequence[ShapeComponent]) -> str:
    return format_shape(tuple(shape))


def node_operation(node: GraphNode, kid_names: Sequence[str],
                   paths: Sequence[Path] | None = None) -> str:
    """What *node* computes, with its children (in ``_pt_kids`` order)
    named by *kid_names* (*paths*: the :func:`kid_paths` of *node*, if
    already known)."""
    if paths is None:
        paths = kid_paths(node)
    by_path = dict(zip(paths, kid_names, strict=True))

    def name(path: Path) -> str:
        return by_path.get(path, "?")

    fn = _OPERATIONS.get(getattr(node, "_mapper_method", ""))
    if fn is not None:
        return fn(node, name)
    return _generic_operation(node, paths, kid_names)


def _generic_operation(node: GraphNode, paths: Sequence[Path],
                       kid_names: Sequence[str]) -> str:
    parts = []
    seen = set()
    for p, n in zip(paths, kid_names, strict=True):
        parts.append(f"{path_label(p)}={n}")
        seen.add(p[0])
    if dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            if f.name in seen or f.name in ("tags", "axes",
                                            "non_equality_tags"):
                continue
            v = getattr(node, f.name)
            if isinstance(v, (*_ATOMIC, tuple)) and not isinstance(
                    v, frozenset):
                parts.append(f"{f.name}={v!r}")
    return f"{type(node).__name__}({', '.join(parts)})"


def _op_index_lambda(node: IndexLambda, name: Callable[[Path], str]) -> str:
    return scalar_expr_to_str(node.expr, {
        b: name(("bindings", b)) for b in node.bindings})


def _op_einsum(node: Einsum, name: Callable[[Path], str]) -> str:
    args = ", ".join(name(("args", i)) for i in range(len(node.args)))
    return f"einsum('{einsum_subscripts(node)}', {args})"


def _op_join(fname: str
             ) -> Callable[[Stack | Concatenate, Callable[[Path], str]], str]:
    def op(node: Stack | Concatenate, name: Callable[[Path], str]) -> str:
        arrays = ", ".join(name(("arrays", i)) for i in range(len(node.arrays)))
        return f"{fname}([{arrays}], axis={node.axis})"
    return op


def _op_index(node: IndexBase, name: Callable[[Path], str]) -> str:
    idx = ", ".join(_fmt_index(i, name, ("indices", k))
                    for k, i in enumerate(node.indices))
    return f"{name(('array',))}[{idx}]"


# by mapper method: each entry takes the node type of its method (Any: a
# dispatch table whose entries take different node types)
_OPERATIONS: dict[str, Callable[[Any, Callable[[Path], str]], str]] = {
    "map_placeholder": lambda n, name: f"placeholder {n.name!r}",
    "map_size_param": lambda n, name: f"size_param {n.name!r}",
    "map_data_wrapper": lambda n, name: (
        f"data {type(n.data).__name__}"
        + (f" {n.name!r}" if n.name is not None else "")),
    "map_index_lambda": _op_index_lambda,
    "map_einsum": _op_einsum,
    "map_stack": _op_join("stack"),
    "map_concatenate": _op_join("concatenate"),
    "map_roll": lambda n, name: (
        f"roll({name(('array',))}, shift={n.shift}, axis={n.axis})"),
    "map_axis_permutation": lambda n, name: (
        f"transpose({name(('array',))}, {n.axis_permutation})"),
    "map_reshape": lambda n, name: (
        f"reshape({name(('array',))}, {_shape_str(n.newshape)}"
        + (f", order={n.order!r}" if n.order != "C" else "") + ")"),
    "map_basic_index": _op_index,
    "map_contiguous_advanced_index": _op_index,
    "map_non_contiguous_advanced_index": _op_index,
    "map_named_array": lambda n, name: f"{name(('_container',))}[{n.name!r}]",
}

# }}}


def describe_array(node: Array) -> str:
    """``shape dtype`` of *node*, e.g. ``(4, n) float64``."""
    return f"{_shape_str(node.shape)} {node.dtype}"
