"""Upstream's module for the propagation of axis metadata (see
:mod:`pytato.transform.unify_axes` for the algorithm).

.. autoclass:: AxesTagsEquationCollector
    :noindex:
.. autoclass:: AxisIgnoredForPropagationTag
    :noindex:
.. autoclass:: AxisTagAttacher
.. autoclass:: BindingSubscriptsCollector
.. autofunction:: unify_axes_tags
    :noindex:
.. autodata:: BINDING_NAME_RESERVED_PATTERN
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from pytools.tag import Tag

from pytato.array.base import Array
from pytato.array.lambdas import IndexLambda
from pytato.function import FunctionDefinition
from pytato.transform.mappers import ArrayOrNames, CopyMapper, TransformMapperCache
from pytato.transform.unify_axes import (
    AxesTagsEquationCollector,
    AxisIgnoredForPropagationTag,
    BindingSubscriptsCollector,
    unify_axes_tags,
)


if TYPE_CHECKING:
    pass


__all__ = [
    "BINDING_NAME_RESERVED_PATTERN", "AxesTagsEquationCollector",
    "AxisIgnoredForPropagationTag", "AxisTagAttacher",
    "BindingSubscriptsCollector", "unify_axes_tags",
]


BINDING_NAME_RESERVED_PATTERN = re.compile(r"^(_in?(0|([1-9][0-9]*)))$")
"""Matches binding names of the forms ``_in<k>`` and ``_i<k>`` (``k`` without
leading zeros): the names pytato gives the bindings of the index lambdas
it builds, reserved as in the reference pytato."""


class AxisTagAttacher(CopyMapper):
    """Copies a graph, adding tags to axes: *axis_to_tags* maps
    ``(array, iaxis)`` to the tags to add to axis *iaxis* of (every node
    equal to) *array*.

    Keys ``(array, name)`` with a reduction variable *name* instead of an
    axis index tag the reduction descriptor of that variable when
    *tag_corresponding_redn_descr* is true (for
    :class:`~pytato.array.IndexLambda` and :class:`~pytato.array.Einsum`
    nodes whose reductions are named that way).
    """

    def __init__(
            self,
            axis_to_tags: Mapping[tuple[Array, int | str], Collection[Tag]],
            tag_corresponding_redn_descr: bool,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        super().__init__(_cache=_cache, _function_cache=_function_cache)
        self.axis_to_tags: dict[Array, dict[int | str, Collection[Tag]]] = {}
        for (ary, i), tags in axis_to_tags.items():
            self.axis_to_tags.setdefault(ary, {})[i] = tags
        self.tag_corresponding_redn_descr = tag_corresponding_redn_descr

    def clone_for_callee(self, function: FunctionDefinition) -> AxisTagAttacher:
        return AxisTagAttacher({}, self.tag_corresponding_redn_descr,
                               _function_cache=self._function_cache)

    def map_array(self, expr: Array) -> Array:
        new = super().map_array(expr)
        per_axis = self.axis_to_tags.get(expr)
        if not per_axis:
            return new
        for i, tags in per_axis.items():
            if isinstance(i, int):
                new = new.with_tagged_axis(i, frozenset(tags))
            elif self.tag_corresponding_redn_descr:
                new = _tag_reduction(new, i, frozenset(tags))
        return new


def _tag_reduction(expr: Array, name: str, tags: frozenset[Tag]) -> Array:

    descrs = getattr(expr, "var_to_reduction_descr", None)
    if isinstance(expr, IndexLambda) and descrs is not None and name in descrs:
        new = dict(descrs)
        new[name] = new[name].tagged(tags)
        return dataclasses.replace(expr, var_to_reduction_descr=new)
    return expr
