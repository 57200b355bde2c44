"""Constant folding: evaluate what depends only on concrete data.

A node is *constant* when it is a :class:`~pytato.array.DataWrapper` of a
:class:`numpy.ndarray`, or a computing node (an
:class:`~pytato.array.IndexLambda`, an :class:`~pytato.array.Einsum` or an
index-remapping node) all of whose children are constant; e.g.
``pt.arange(4) * 2`` or an einsum of two data wrappers. Placeholders, size
parameters and node types not listed here (receives, call results, ...)
are never constant.

:func:`precompute_subexpressions` evaluates the *maximal* constant nodes
(those that are outputs or are used by a non-constant node), all in one
program of the NumPy target (:func:`pytato.generate_numpy`), and replaces
each by a :class:`~pytato.array.DataWrapper` of its value with the same
axes and tags. Constant subgraphs that are only used inside larger constant
subgraphs disappear with them.

Beware of constants much larger than their inputs (``pt.zeros((10**4,
10**4))``): they are materialized.

.. autofunction:: precompute_subexpressions
.. autofunction:: set_default_evaluator
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from pytato.array.base import Array, GraphNode, topological_order
from pytato.array.inputs import DataWrapper
from pytato.array.lambdas import Einsum, IndexLambda
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.results import DictOfNamedArrays
from pytato.transform._identity_cache import IdentityCachedCopyMapper


__all__ = ["precompute_subexpressions", "set_default_evaluator"]

_COMPUTING_NODES = (IndexLambda, Einsum, Stack, Concatenate, Roll,
                    AxisPermutation, Reshape, BasicIndex,
                    AdvancedIndexInContiguousAxes,
                    AdvancedIndexInNoncontiguousAxes)

Evaluator = Callable[[DictOfNamedArrays], Mapping[str, Any]]


_default_evaluator: list[Evaluator] = []


def set_default_evaluator(evaluate: Evaluator) -> None:
    """Make *evaluate* the evaluator of :func:`precompute_subexpressions`
    when it is given none.

    Transforms do not import code generators: the NumPy target
    (:mod:`pytato.target.python`) sets an evaluator running
    :func:`pytato.generate_numpy` when it is imported, as :mod:`pytato`
    does.
    """
    _default_evaluator[:] = [evaluate]


def _is_constant_leaf(node: GraphNode) -> bool:
    return isinstance(node, DataWrapper) and isinstance(node.data, np.ndarray)


def _find_constants(roots: list[GraphNode]) -> tuple[list[GraphNode],
                                                     set[int]]:
    order = topological_order(roots)
    const: set[int] = set()
    for node in order:
        if _is_constant_leaf(node) or (
                isinstance(node, _COMPUTING_NODES)
                and all(id(k) in const
                        for k in node._pt_kids)):
            const.add(id(node))
    return order, const


class _Replacer(IdentityCachedCopyMapper):
    def __init__(self, replacements: dict[int, Array]) -> None:
        super().__init__()
        self.replacements = replacements

    def rec(self, expr: object, *args: object, **kwargs: object) -> Any:
        new = self.replacements.get(id(expr))
        if new is not None:
            return new
        return super().rec(expr, *args, **kwargs)


def precompute_subexpressions(expr: Any,
                              evaluate: Evaluator | None = None) -> Any:
    """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or a
    :class:`dict` of arrays) with its maximal constant subexpressions
    replaced by data wrappers of their values (see
    :mod:`pytato.transform.precompute`). Linear in the size of the graph,
    plus the cost of evaluating the constants.

    :arg evaluate: computes a :class:`~pytato.DictOfNamedArrays` of constant
        arrays and returns their :mod:`numpy` values by name; by default
        through :func:`pytato.generate_numpy`.
    """
    if isinstance(expr, dict):
        return dict(precompute_subexpressions(DictOfNamedArrays(expr),
                                              evaluate)._data)
    roots = [expr]
    order, const = _find_constants(roots)
    frontier: dict[int, Array] = {}
    if isinstance(expr, Array) and id(expr) in const:
        frontier[id(expr)] = expr
    for node in order:
        if id(node) in const:
            continue
        for k in node._pt_kids:
            # (constants are arrays)
            if id(k) in const and isinstance(k, Array):
                frontier[id(k)] = k
    to_compute = {i: n for i, n in frontier.items()
                  if not isinstance(n, DataWrapper)}
    if not to_compute:
        return expr
    names = {i: f"_pt_const{k}" for k, i in enumerate(to_compute)}
    if evaluate is None:
        if not _default_evaluator:
            raise RuntimeError(
                "precompute_subexpressions: no 'evaluate' given and no "
                "default evaluator set (import pytato.target.python)")
        evaluate, = _default_evaluator
    values = evaluate(DictOfNamedArrays(
        {names[i]: n for i, n in to_compute.items()}))
    replacements: dict[int, Array] = {}
    for i, node in to_compute.items():
        data = np.asarray(values[names[i]], dtype=node.dtype, order="C")
        if data.flags.writeable:
            data = data.copy() if data.base is not None else data
            data.setflags(write=False)
        replacements[i] = DataWrapper(data, tuple(int(s) for s in data.shape),
                                      axes=node.axes, tags=node.tags,
                                      non_equality_tags=node.non_equality_tags)
    return _Replacer(replacements)(expr)
