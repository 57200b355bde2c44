"""Transform mappers: graph to graph.

A :class:`CopyMapper` rebuilds a graph bottom-up, returning each node whose
children are unchanged as is; overriding its ``map_<node>`` methods
transforms nodes. :func:`map_and_copy` applies a function to every node.

.. autoclass:: TransformMapper
.. autoclass:: TransformMapperWithExtraArgs
.. autoclass:: CopyMapper
.. autoclass:: CopyMapperWithExtraArgs
.. autoclass:: CachedMapAndCopyMapper
.. autofunction:: map_and_copy
.. autofunction:: copy_dict_of_named_arrays
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Self, TypeVar, cast, overload

from pytato.array.base import (
    Array,
    ChildNode,
    _unflatten,
    flatten_for_pickle,
    get_children,
    unflatten,
)
from pytato.array.inputs import SizeParam
from pytato.array.nonarray import DataclassGraphNode
from pytato.array.results import AbstractResultWithNamedArrays, DictOfNamedArrays
from pytato.function import FunctionDefinition
from pytato.transform.base import (
    ArrayOrNames,
    ArrayOrNamesTc,
    CachedMapper,
    CacheInputsWithKey,
    Mapper,
    P,
    TransformMapperCache,
)


if TYPE_CHECKING:
    from pytato.array import (
        AdvancedIndexInContiguousAxes,
        AdvancedIndexInNoncontiguousAxes,
        AxisPermutation,
        BasicIndex,
        Concatenate,
        DataWrapper,
        Einsum,
        IndexLambda,
        NamedArray,
        Placeholder,
        Reshape,
        Roll,
        Stack,
    )
    from pytato.array.remapping import IndexExpr
    from pytato.array.sparse import CSRMatmul, CSRMatrix
    from pytato.distributed.nodes import (
        DistributedRecv,
        DistributedSend,
        DistributedSendRefHolder,
    )
    from pytato.function import Call, NamedCallResult
    from pytato.loopy import LoopyCall, LoopyCallResult


__all__ = [
    "CachedMapAndCopyMapper", "CopyMapper", "CopyMapperWithExtraArgs",
    "TransformMapper", "TransformMapperWithExtraArgs",
    "copy_dict_of_named_arrays", "map_and_copy",
]


_DataclassNodeT = TypeVar("_DataclassNodeT", bound=DataclassGraphNode)


# {{{ copy mappers

def _rebuild_non_array(expr: _DataclassNodeT, new_kids: tuple[ChildNode, ...]
                       ) -> _DataclassNodeT:
    """Rebuild a non-array node (a dataclass with a per-field skeleton, see
    :class:`~pytato.array.nonarray.DataclassGraphNode`) with new children."""
    return type(expr)(**{
        f.name: _unflatten(s, new_kids)
        for f, s in zip(dataclasses.fields(expr),  # type: ignore[arg-type]
                        expr._pt_skel,
                        strict=True)})


def _copy_array(mapper: _CopyMethods[P], expr: Array, *args: P.args,
                **kwargs: P.kwargs) -> Array:
    kids = get_children(expr)
    rec = mapper.rec
    new_kids = tuple(rec(k, *args, **kwargs) for k in kids)
    if all(a is b for a, b in zip(kids, new_kids, strict=True)):
        return expr
    names, skel = flatten_for_pickle(expr)
    return unflatten(type(expr), names, skel, new_kids, expr.non_equality_tags)


class TransformMapper(CachedMapper[ArrayOrNames, FunctionDefinition, []]):
    """A :class:`CachedMapper` mapping graphs to graphs, with a
    :class:`TransformMapperCache`."""

    _cache: TransformMapperCache[ArrayOrNames, []]
    _function_cache: TransformMapperCache[
        FunctionDefinition, []]

    def __init__(
            self,
            err_on_collision: bool = False,
            err_on_created_duplicate: bool = False,
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        if _cache is None:
            _cache = TransformMapperCache(err_on_collision,
                                          err_on_created_duplicate)
        if _function_cache is None:
            _function_cache = TransformMapperCache(err_on_collision,
                                                   err_on_created_duplicate)
        super().__init__(err_on_collision, _cache, _function_cache)


class TransformMapperWithExtraArgs(
        CachedMapper[ArrayOrNames, FunctionDefinition, P]):
    """A :class:`TransformMapper` whose methods take extra arguments."""

    _cache: TransformMapperCache[ArrayOrNames, P]
    _function_cache: TransformMapperCache[
        FunctionDefinition, P]

    def __init__(
            self,
            err_on_collision: bool = False,
            err_on_created_duplicate: bool = False,
            _cache: TransformMapperCache[ArrayOrNames, P] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, P] | None = None) -> None:
        if _cache is None:
            _cache = TransformMapperCache(err_on_collision,
                                          err_on_created_duplicate)
        if _function_cache is None:
            _function_cache = TransformMapperCache(err_on_collision,
                                                   err_on_created_duplicate)
        super().__init__(err_on_collision, _cache, _function_cache)


class _CopyMethods(Generic[P]):
    """The per-node methods of :class:`CopyMapper` and
    :class:`CopyMapperWithExtraArgs`: each array node is rebuilt from its
    mapped children (returned as is when they are unchanged)."""

    if TYPE_CHECKING:
        @overload
        def rec(self, expr: Array, *args: P.args, **kwargs: P.kwargs
                ) -> Array: ...

        @overload
        def rec(self, expr: AbstractResultWithNamedArrays, *args: P.args,
                **kwargs: P.kwargs) -> AbstractResultWithNamedArrays: ...

        @overload
        def rec(self, expr: ArrayOrNames, *args: P.args, **kwargs: P.kwargs
                ) -> ArrayOrNames: ...

        def rec(self, expr: ArrayOrNames, *args: P.args, **kwargs: P.kwargs
                ) -> ArrayOrNames: ...

        def rec_function_definition(self, expr: FunctionDefinition,
                                    *args: P.args, **kwargs: P.kwargs
                                    ) -> FunctionDefinition: ...

        def clone_for_callee(self, function: FunctionDefinition
                             ) -> Self: ...

        @overload
        def __call__(self, expr: Array, *args: P.args, **kwargs: P.kwargs
                     ) -> Array: ...

        @overload
        def __call__(self, expr: DictOfNamedArrays, *args: P.args,
                     **kwargs: P.kwargs) -> DictOfNamedArrays: ...

        @overload
        def __call__(self, expr: AbstractResultWithNamedArrays, *args: P.args,
                     **kwargs: P.kwargs) -> AbstractResultWithNamedArrays: ...

        @overload
        def __call__(self, expr: FunctionDefinition, *args: P.args,
                     **kwargs: P.kwargs) -> FunctionDefinition: ...

        @overload
        def __call__(self, expr: ArrayOrNames, *args: P.args,
                     **kwargs: P.kwargs) -> ArrayOrNames: ...

        def __call__(self, expr: ArrayOrNames | FunctionDefinition,
                     *args: P.args, **kwargs: P.kwargs
                     ) -> ArrayOrNames | FunctionDefinition: ...

    def map_array(self, expr: Array, *args: P.args, **kwargs: P.kwargs
                  ) -> Array:
        """The default of every array node type: rebuild *expr* from its
        mapped children."""
        return _copy_array(self, expr, *args, **kwargs)

    def rec_idx_or_size_tuple(self, situp: tuple[IndexExpr, ...],
                              *args: P.args, **kwargs: P.kwargs
                              ) -> tuple[IndexExpr, ...]:
        """*situp* (a shape or an index tuple) with its array entries
        mapped."""
        return tuple(self.rec(s, *args, **kwargs) if isinstance(s, Array)
                     else s for s in situp)

    def map_index_lambda(self, expr: IndexLambda, *args: P.args,
                         **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_placeholder(self, expr: Placeholder, *args: P.args,
                        **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_data_wrapper(self, expr: DataWrapper, *args: P.args,
                         **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_size_param(self, expr: SizeParam, *args: P.args,
                       **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_stack(self, expr: Stack, *args: P.args, **kwargs: P.kwargs
                  ) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_concatenate(self, expr: Concatenate, *args: P.args,
                        **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_roll(self, expr: Roll, *args: P.args, **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_axis_permutation(self, expr: AxisPermutation, *args: P.args,
                             **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_reshape(self, expr: Reshape, *args: P.args,
                    **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_basic_index(self, expr: BasicIndex, *args: P.args,
                        **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_contiguous_advanced_index(
            self, expr: AdvancedIndexInContiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_einsum(self, expr: Einsum, *args: P.args, **kwargs: P.kwargs
                   ) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_named_array(self, expr: NamedArray, *args: P.args,
                        **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_named_call_result(self, expr: NamedCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_loopy_call_result(self, expr: LoopyCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_csr_matmul(self, expr: CSRMatmul, *args: P.args,
                       **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_distributed_send_ref_holder(
            self, expr: DistributedSendRefHolder, *args: P.args,
            **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_distributed_recv(self, expr: DistributedRecv, *args: P.args,
                             **kwargs: P.kwargs) -> Array:
        return self.map_array(expr, *args, **kwargs)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays,
                                 *args: P.args, **kwargs: P.kwargs
                                 ) -> DictOfNamedArrays:
        new = {k: self.rec(v, *args, **kwargs) for k, v in expr._data.items()}
        if all(new[k] is v for k, v in expr._data.items()):
            return expr
        return DictOfNamedArrays(new, tags=expr.tags)

    def map_distributed_send(self, expr: DistributedSend, *args: P.args,
                             **kwargs: P.kwargs) -> DistributedSend:
        # a send (pytato.distributed) is not an array; only its data is mapped
        data = self.rec(expr.data, *args, **kwargs)
        return expr if data is expr.data else expr.copy(data=data)

    def map_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs
                                ) -> FunctionDefinition:
        mapper = self.clone_for_callee(expr)
        if not args and not kwargs:
            # (P is [] here: the call has no extra arguments)
            call = cast("Callable[[Array], Array]", mapper)
            new = {k: call(v) for k, v in expr.returns.items()}
        else:
            new = {k: mapper.rec(v, *args, **kwargs)
                   for k, v in expr.returns.items()}
        if all(new[k] is v for k, v in expr.returns.items()):
            return expr
        return expr.copy(returns=new)

    def map_call(self, expr: Call, *args: P.args, **kwargs: P.kwargs
                 ) -> Call:
        fn = self.rec_function_definition(expr.function, *args, **kwargs)
        bindings = {k: self.rec(v, *args, **kwargs)
                    for k, v in expr.bindings.items()}
        if fn is expr.function and all(
                bindings[k] is v for k, v in expr.bindings.items()):
            return expr
        return expr.copy(function=fn, bindings=bindings)

    def _map_non_array_node(self, expr: _DataclassNodeT, *args: P.args,
                            **kwargs: P.kwargs) -> _DataclassNodeT:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k, *args, **kwargs) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        return _rebuild_non_array(expr, new_kids)

    def map_loopy_call(self, expr: LoopyCall, *args: P.args,
                       **kwargs: P.kwargs) -> AbstractResultWithNamedArrays:
        return self._map_non_array_node(expr, *args, **kwargs)

    def map_csr_matrix(self, expr: CSRMatrix, *args: P.args,
                       **kwargs: P.kwargs) -> CSRMatrix:
        return self._map_non_array_node(expr, *args, **kwargs)


class CopyMapper(_CopyMethods[[]], TransformMapper):
    """Rebuilds the graph bottom-up; a node whose children are unchanged is
    returned as is. Override ``map_<node>`` methods to transform nodes (an
    override may call ``super().map_<node>(expr)`` for the copy)."""


class CopyMapperWithExtraArgs(_CopyMethods[P], TransformMapperWithExtraArgs[P]):
    """A :class:`CopyMapper` whose methods take extra arguments, passed on
    unchanged to the children."""

# }}}


# {{{ map_and_copy

class CachedMapAndCopyMapper(CopyMapper):
    """Copies a graph, applying *map_fn* to each node before its children
    are copied (as upstream: ``rec(expr) = super().rec(map_fn(expr))``)."""

    def __init__(
            self,
            map_fn: Callable[[ArrayOrNames], ArrayOrNames],
            _cache: TransformMapperCache[ArrayOrNames, []] | None = None,
            _function_cache: TransformMapperCache[
                FunctionDefinition, []] | None = None) -> None:
        super().__init__(_cache=_cache, _function_cache=_function_cache)
        self.map_fn = map_fn

    def clone_for_callee(self, function: FunctionDefinition
                         ) -> CachedMapAndCopyMapper:
        return type(self)(self.map_fn, _function_cache=self._function_cache)

    def rec(self, expr: ArrayOrNames) -> ArrayOrNames:  # type: ignore[override]
        key = self.get_cache_key(expr)
        cache = self._cache
        try:
            return cache._input_key_to_result[key]
        except KeyError:
            result = Mapper.rec(self, self.map_fn(expr))
            return cache.add(CacheInputsWithKey(expr, key), result)


def map_and_copy(expr: ArrayOrNamesTc,
                 map_fn: Callable[[ArrayOrNames], ArrayOrNames]
                 ) -> ArrayOrNamesTc:
    """Copy the graph of *expr*, applying *map_fn* to each node before its
    children are copied."""
    return CachedMapAndCopyMapper(map_fn)(expr)

# }}}


def copy_dict_of_named_arrays(source_dict: DictOfNamedArrays,
                              copy_mapper: CopyMapper) -> DictOfNamedArrays:
    """Copy *source_dict* with *copy_mapper*, sharing its cache across
    outputs."""
    if not source_dict:
        return DictOfNamedArrays({}, tags=source_dict.tags)
    result = copy_mapper(source_dict)
    assert isinstance(result, DictOfNamedArrays)
    return result

