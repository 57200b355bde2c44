"""Inlining calls of traced functions.

A call is *inlined* by substituting the call-site bindings for the
parameters of the function's body, so that its results become ordinary
nodes of the caller's graph. Code generation inlines the calls tagged
:class:`~pytato.tags.InlineCallTag` and lowers the others to callee
kernels; inlined and called forms compute the same values.

.. autofunction:: inline_calls
.. autofunction:: tag_all_calls_to_be_inlined
.. autofunction:: inline_call_result
.. autofunction:: replace_inputs
.. autoclass:: CallInliner
.. autoclass:: Inliner
.. autoclass:: InlineMarker
.. autoclass:: PlaceholderSubstitutor
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytools.tag import UniqueTag

from pytato.array.base import Array, Axis, _unique_family
from pytato.array.inputs import DataWrapper, InputArgumentBase, Placeholder, SizeParam
from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import InvalidArgumentTypeError
from pytato.function import Call, FunctionDefinition, NamedCallResult
from pytato.tags import InlineCallTag
from pytato.transform.mappers import ArrayOrNames, CopyMapper, TransformMapperCache


if TYPE_CHECKING:
    from pytools.tag import Tag

    from pytato.transform.base import ArrayOrNamesOrDictTc


__all__ = [
    "CallInliner", "InlineMarker", "Inliner", "PlaceholderSubstitutor",
    "inline_call_result", "inline_calls", "replace_inputs",
    "tag_all_calls_to_be_inlined",
]


def _with_call_site_metadata(ary: Array, site: NamedCallResult) -> Array:
    """*ary* (an inlined result) with the tags and axis tags given to the
    call result *site*; the call site's unique tags win."""
    if isinstance(ary, InputArgumentBase):
        # retagging an input would make it a different input of that name
        return ary
    if not site.tags and not any(a.tags for a in site.axes):
        return ary

    def merge(old: frozenset[Tag], new: frozenset[Tag]) -> frozenset[Tag]:
        families = {_unique_family(type(t)) for t in new if _is_unique(t)}
        kept = frozenset(t for t in old
                         if _unique_family(type(t)) not in families
                         or not _is_unique(t))
        return kept | new

    axes = tuple(Axis(merge(a.tags, b.tags)) if b.tags else a
                 for a, b in zip(ary.axes, site.axes, strict=True))
    return ary.copy(tags=merge(ary.tags, site.tags), axes=axes)


def _is_unique(tag: Tag) -> bool:
    return isinstance(tag, UniqueTag)


class CallInliner(CopyMapper):
    """Copies a graph, replacing the results of calls (all of them, or
    only those tagged :class:`~pytato.tags.InlineCallTag` if
    *only_tagged*) by the function's body with the bindings substituted.
    Calls inside inlined bodies are handled in the same way."""

    def __init__(self, only_tagged: bool = True) -> None:
        super().__init__()
        self.only_tagged = only_tagged
        self._substitutors: dict[Call, _BodySubstitutor] = {}

    def clone_for_callee(self, function: FunctionDefinition) -> CallInliner:
        return CallInliner(self.only_tagged)

    def _should_inline(self, call: Call) -> bool:
        return not self.only_tagged or bool(call.tags_of_type(InlineCallTag))

    def map_named_call_result(self, expr: NamedCallResult) -> Array:
        call = expr._container
        if not self._should_inline(call):
            return self.map_array(expr)
        sub = self._substitutors.get(call)
        if sub is None:
            bindings = {k: self.rec(v) for k, v in call.bindings.items()}
            sub = _BodySubstitutor(bindings, self.only_tagged)
            self._substitutors[call] = sub
        return _with_call_site_metadata(sub(call.function.returns[expr.name]),
                                        expr)


class _BodySubstitutor(CallInliner):
    """Maps a function body into the caller's scope."""

    def __init__(self, bindings: Mapping[str, Array], only_tagged: bool) -> None:
        super().__init__(only_tagged)
        self.bindings = bindings

    def map_placeholder(self, expr: Placeholder) -> Array:
        return self.bindings[expr.name]

    def map_size_param(self, expr: SizeParam) -> Array:
        return self.bindings.get(expr.name, expr)


def _apply(mapper: CopyMapper, expr: ArrayOrNamesOrDictTc
           ) -> ArrayOrNamesOrDictTc:
    if isinstance(expr, (Array, DictOfNamedArrays)):
        return mapper(expr)
    if isinstance(expr, Mapping):
        new = mapper(DictOfNamedArrays(dict(expr)))
        return (type(expr)(new._data)
                if isinstance(expr, dict) else new)
    raise InvalidArgumentTypeError(
        "expected an Array, a DictOfNamedArrays or a dict of "
        f"arrays, got {type(expr).__name__}")


def inline_calls(expr: ArrayOrNamesOrDictTc, *, only_tagged: bool = True
                 ) -> ArrayOrNamesOrDictTc:
    """Inline the calls in the graph of *expr* (an array, a
    :class:`~pytato.DictOfNamedArrays` or a dict of arrays) that are tagged
    :class:`~pytato.tags.InlineCallTag` (all calls if *only_tagged* is
    false), including calls inside the bodies of called functions.

    Tags given to a call's result are kept on the inlined array.
    """
    return _apply(CallInliner(only_tagged), expr)


def inline_call_result(expr: NamedCallResult, *, only_tagged: bool = False
                       ) -> Array:
    """The result *expr* of a call, inlined into the caller's graph (the
    bindings are not mapped). Calls inside the function's body are inlined
    too (only those tagged :class:`~pytato.tags.InlineCallTag` if
    *only_tagged*)."""
    sub = _BodySubstitutor(expr._container.bindings, only_tagged)
    return _with_call_site_metadata(
        sub(expr._container.function.returns[expr.name]), expr)


class Inliner(CallInliner):
    """Inlines the calls tagged :class:`~pytato.tags.InlineCallTag`
    (upstream's name and constructor; see :class:`CallInliner`)."""

    def __init__(
            self,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        super().__init__(only_tagged=True)
        if _cache is not None:
            self._cache = _cache
        if _function_cache is not None:
            self._function_cache = _function_cache

    def clone_for_callee(self, function: FunctionDefinition) -> Inliner:
        return Inliner(_function_cache=self._function_cache)


class PlaceholderSubstitutor(CopyMapper):
    """Replaces the placeholders named in *substitutions* by the arrays
    given there (other placeholders are kept). Calls are not entered: the
    placeholders of a function body belong to the function.

    .. attribute:: substitutions
    """

    def __init__(self, substitutions: Mapping[str, Array]) -> None:
        super().__init__()
        self.substitutions = substitutions

    def clone_for_callee(self, function: FunctionDefinition) -> PlaceholderSubstitutor:
        return PlaceholderSubstitutor(self.substitutions)

    def map_placeholder(self, expr: Placeholder) -> Array:
        return self.substitutions.get(expr.name, expr)

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> FunctionDefinition:
        return expr


class InlineMarker(CopyMapper):
    """Tags every call (also in the bodies of called functions) with
    :class:`~pytato.tags.InlineCallTag`."""

    def map_call(self, expr: Call) -> Call:
        new = super().map_call(expr)
        if new.tags_of_type(InlineCallTag):
            return new
        return new.tagged(InlineCallTag())


def tag_all_calls_to_be_inlined(expr: ArrayOrNamesOrDictTc
                                ) -> ArrayOrNamesOrDictTc:
    """Tag every call in the graph of *expr* (and in the bodies of called
    functions) with :class:`~pytato.tags.InlineCallTag`."""
    return _apply(InlineMarker(), expr)


class _InputReplacer(CopyMapper):
    """Replaces the placeholders and data wrappers that are keys of
    *replacements* by their values."""

    def __init__(self, replacements: Mapping[InputArgumentBase, Array]) -> None:
        super().__init__()
        self.replacements = replacements

    def map_placeholder(self, expr: Placeholder) -> Array:
        return self.replacements.get(expr, expr)

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        return self.replacements.get(expr, expr)


def replace_inputs(returns: Mapping[str, Array],
                   replacements: Mapping[InputArgumentBase, Array]
                   ) -> dict[str, Array]:
    """The arrays *returns* with the inputs (placeholders and data
    wrappers) that are keys of *replacements* replaced by their values:
    what :func:`pytato.function.trace_call` makes of a traced body to turn
    the inputs it captures into parameters (installed by
    :mod:`pytato.transform`, see
    :func:`pytato.function.install_input_replacer`)."""
    replacer = _InputReplacer(replacements)
    return {k: replacer(v) for k, v in returns.items()}
