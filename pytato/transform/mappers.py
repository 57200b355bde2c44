"""Mapper base classes: the one way graph passes visit nodes.

A mapper dispatches on the node type to ``map_<node>`` methods (named by
each node class's ``_mapper_method``, e.g. :meth:`CopyMapper.map_index_lambda`).
The classes are generic in the same type parameters as upstream pytato's:
``Mapper[ResultT, FunctionResultT, P]`` where *ResultT* is what
:meth:`Mapper.rec` returns for an array or a result with named arrays,
*FunctionResultT* what :meth:`Mapper.rec_function_definition` returns for a
:class:`~pytato.function.FunctionDefinition`, and *P* the extra arguments of
the ``map_*`` methods (``[]`` for none).

Every per-node method of :class:`CopyMapper`, :class:`WalkMapper` and
:class:`CombineMapper` exists and may be called from an override with
``super().map_<node>(expr)``. Their default for array nodes is
``self.map_array(expr)``: overriding ``map_array`` changes the default of
every array node type at once (this repository's passes use that).

Deep graphs: calling a cached mapper without extra arguments first maps
the graph bottom-up, in topological order, so that the recursion of
``map_*`` methods into children, overrides calling ``super()`` included,
always hits the cache; a :class:`CachedWalkMapper` (called with or without
extra arguments) and the uncached :class:`WalkMapper` walk with an explicit
stack. Passes never recurse deeper than a few frames, whatever the graph's
depth, except: the other cached mappers called with extra arguments
recurse as upstream's do (one Python frame per level: their overrides may
pass other arguments to children, so their results cannot be computed
bottom-up in advance), and an uncached :class:`WalkMapper` recurses a few frames per
node whose ``map_*`` method the subclass overrides (the override runs
where the recursive walk would run it).

Differences from upstream: the ``err_on_collision`` and
``err_on_created_duplicate`` checks default to *False* here (graphs built by
this frontend may hold distinct equal nodes, which the cache merges); pass
*True* for upstream's checks. A called :class:`CachedWalkMapper` walks
iteratively in the order of the recursive walk (``visit`` in pre-order,
pruning when it returns *False*, ``post_visit`` in post-order), except
below nodes whose ``map_*`` method the subclass overrides: their children
are walked before the override runs.

.. autodata:: ArrayOrNames
.. autodata:: ArrayOrNamesTc
.. autodata:: ArrayOrNamesOrFunctionDefTc
.. autoclass:: Mapper
.. autoclass:: CachedMapperCache
.. autoclass:: CacheInputsWithKey
.. autoclass:: CachedMapper
.. autoclass:: TransformMapperCache
.. autoclass:: TransformMapper
.. autoclass:: TransformMapperWithExtraArgs
.. autoclass:: CopyMapper
.. autoclass:: CopyMapperWithExtraArgs
.. autoclass:: CombineMapper
.. autoclass:: WalkMapper
.. autoclass:: CachedWalkMapper
.. autoclass:: TopoSortMapper
.. autoclass:: DependencyMapper
.. autoclass:: SubsetDependencyMapper
.. autoclass:: InputGatherer
.. autoclass:: ListOfInputsGatherer
.. autoclass:: SizeParamGatherer
.. autoclass:: UsersCollector
.. autoclass:: CachedMapAndCopyMapper
.. autoclass:: CacheCollisionError
.. autoclass:: MapperCreatedDuplicateError
.. autoclass:: UnsupportedArrayError
.. autoclass:: ForeignObjectError
.. autofunction:: map_and_copy
.. autofunction:: get_users
.. autofunction:: rec_get_user_nodes
.. autofunction:: get_dependencies
.. autofunction:: topological_order
.. autofunction:: copy_dict_of_named_arrays
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import (
    TYPE_CHECKING,
    Any,
    Generic,
    ParamSpec,
    TypeAlias,
    TypeVar,
)

from pytato.array.base import (
    Array,
    GraphNode,
    flatten_for_pickle,
    get_children,
    topological_order,
    unflatten,
)
from pytato.array.inputs import InputArgumentBase, SizeParam
from pytato.array.results import AbstractResultWithNamedArrays, DictOfNamedArrays
from pytato.diagnostic import PytatoError
from pytato.function import FunctionDefinition


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
    from pytato.array.sparse import CSRMatmul, CSRMatrix
    from pytato.distributed.nodes import (
        DistributedRecv,
        DistributedSend,
        DistributedSendRefHolder,
    )
    from pytato.function import Call, NamedCallResult
    from pytato.loopy import LoopyCall, LoopyCallResult


__all__ = [
    "ArrayOrNames", "ArrayOrNamesOrFunctionDefTc", "ArrayOrNamesTc",
    "CacheCollisionError", "CacheInputsWithKey", "CachedMapAndCopyMapper",
    "CachedMapper", "CachedMapperCache", "CachedWalkMapper", "CombineMapper",
    "CopyMapper", "CopyMapperWithExtraArgs", "DependencyMapper",
    "ForeignObjectError", "InputGatherer", "ListOfInputsGatherer", "Mapper",
    "MapperCreatedDuplicateError", "SizeParamGatherer", "SubsetDependencyMapper",
    "TopoSortMapper", "TransformMapper", "TransformMapperCache",
    "TransformMapperWithExtraArgs", "UnsupportedArrayError", "UsersCollector",
    "WalkMapper", "copy_dict_of_named_arrays", "get_dependencies", "get_users",
    "map_and_copy", "rec_get_user_nodes", "topological_order",
]


# {{{ type aliases and variables

ArrayOrNames: TypeAlias = Array | AbstractResultWithNamedArrays
"""What mappers map: an :class:`~pytato.Array` or a result with named
arrays (e.g. a :class:`~pytato.DictOfNamedArrays`)."""

ArrayOrNamesTc = TypeVar("ArrayOrNamesTc", Array, AbstractResultWithNamedArrays,
                         DictOfNamedArrays)
"""A type variable constrained to the kinds of :data:`ArrayOrNames` (a
transform returns the kind it is given)."""

ArrayOrNamesOrFunctionDefTc = TypeVar(
    "ArrayOrNamesOrFunctionDefTc", Array, AbstractResultWithNamedArrays,
    DictOfNamedArrays, FunctionDefinition)
"""As :data:`ArrayOrNamesTc`, with :class:`~pytato.function.FunctionDefinition`."""

ResultT = TypeVar("ResultT")
FunctionResultT = TypeVar("FunctionResultT")
P = ParamSpec("P")
CacheExprT = TypeVar("CacheExprT")
CacheKeyT = TypeVar("CacheKeyT")
CacheResultT = TypeVar("CacheResultT")
VisitKeyT: TypeAlias = Hashable

# }}}


# {{{ errors

class UnsupportedArrayError(PytatoError, ValueError):
    """A mapper has no method for a node type."""


class UnsupportedNodeError(UnsupportedArrayError, NotImplementedError):
    """Raised by this repository's mappers for node types they do not
    support (an :class:`UnsupportedArrayError`)."""


class ForeignObjectError(PytatoError, ValueError):
    """A mapper was given an object that is not a graph node."""


class CacheCollisionError(PytatoError, ValueError):
    """A mapper built with ``err_on_collision=True`` met two distinct but
    equal nodes (deduplicate the graph first:
    :func:`~pytato.transform.deduplicate`)."""


class MapperCreatedDuplicateError(PytatoError, ValueError):
    """A transform mapper built with ``err_on_created_duplicate=True``
    returned a new node equal to the one it mapped (it should have returned
    the node itself)."""

# }}}


# {{{ Mapper

def _no_method(mapper: Any, expr: Any) -> Exception:
    if not hasattr(expr, "_mapper_method"):
        return ForeignObjectError(
            f"{type(mapper).__name__} cannot map a {type(expr).__name__} "
            "(not a pytato graph node)")
    return UnsupportedNodeError(
        f"{type(mapper).__name__} does not support nodes of type "
        f"{type(expr).__name__}")


class Mapper(Generic[ResultT, FunctionResultT, P]):
    """Dispatches ``self.rec(expr, ...)`` to ``self.map_<node>(expr, ...)``.

    Subclasses may define ``map_array`` as a fallback for every array node
    type without a specific method.

    .. automethod:: rec
    .. automethod:: rec_function_definition
    .. automethod:: __call__
    """

    def handle_unsupported_array(self, expr: Any, *args: P.args,
                                 **kwargs: P.kwargs) -> ResultT:
        """Called for nodes without a ``map_*`` method; raises
        :class:`UnsupportedArrayError` (or :class:`ForeignObjectError` for
        objects that are not graph nodes)."""
        raise _no_method(self, expr)

    def rec(self, expr: ArrayOrNames, *args: P.args,
            **kwargs: P.kwargs) -> ResultT:
        """Map *expr* by its ``map_<node>`` method."""
        try:
            method = getattr(self, expr._mapper_method)
        except AttributeError:
            if isinstance(expr, Array):
                fallback = getattr(self, "map_array", None)
                if fallback is not None:
                    return fallback(expr, *args, **kwargs)  # type: ignore[no-any-return]
            return self.handle_unsupported_array(expr, *args, **kwargs)
        return method(expr, *args, **kwargs)  # type: ignore[no-any-return]

    def rec_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs
                                ) -> FunctionResultT:
        """Map a :class:`~pytato.function.FunctionDefinition` (the body of
        called functions is a graph of its own, not a child of the call)."""
        method = getattr(self, "map_function_definition", None)
        if method is None:
            raise _no_method(self, expr)
        return method(expr, *args, **kwargs)  # type: ignore[no-any-return]

    def __call__(self, expr: ArrayOrNames, *args: P.args,
                 **kwargs: P.kwargs) -> ResultT:
        """Map *expr* (:meth:`rec_function_definition` for a function
        definition)."""
        if isinstance(expr, FunctionDefinition):
            return self.rec_function_definition(  # type: ignore[return-value]
                expr, *args, **kwargs)
        return self.rec(expr, *args, **kwargs)

# }}}


# {{{ caches

class CacheInputsWithKey(Generic[CacheExprT, P]):
    """What a :class:`CachedMapperCache` is asked about: the mapped
    expression, its extra arguments and the cache key made of them.

    .. attribute:: expr
    .. attribute:: key
    .. attribute:: args
    .. attribute:: kwargs
    """

    __slots__ = ("args", "expr", "key", "kwargs")

    def __init__(self, expr: CacheExprT, key: Hashable,
                 *args: P.args, **kwargs: P.kwargs) -> None:
        self.expr = expr
        self.key = key
        self.args = args
        self.kwargs = kwargs


class CachedMapperCache(Generic[CacheExprT, CacheResultT, P]):
    """The results of a :class:`CachedMapper`, by cache key. May be shared
    between mappers (the ``_cache=`` argument of their constructors).

    :arg err_on_collision: raise :class:`CacheCollisionError` when a
        lookup finds a result computed for a distinct but equal expression.

    .. automethod:: get_key
    .. automethod:: add
    .. automethod:: retrieve
    .. automethod:: clear
    """

    def __init__(self, err_on_collision: bool) -> None:
        self.err_on_collision = err_on_collision
        self._input_key_to_result: dict[Hashable, CacheResultT] = {}
        self._input_key_to_expr: dict[Hashable, CacheExprT] = {}

    def get_key(self, expr: CacheExprT, *args: P.args,
                **kwargs: P.kwargs) -> Hashable:
        """The key of *expr* mapped with *args* and *kwargs*."""
        if not args and not kwargs:
            return expr  # type: ignore[return-value]
        return (expr, args, tuple(sorted(kwargs.items())))

    def add(self, inputs: CacheInputsWithKey[CacheExprT, P],
            result: CacheResultT) -> CacheResultT:
        """Store *result* for *inputs*; return it."""
        self._input_key_to_result[inputs.key] = result
        if self.err_on_collision:
            self._input_key_to_expr[inputs.key] = inputs.expr
        return result

    def retrieve(self, inputs: CacheInputsWithKey[CacheExprT, P]
                 ) -> CacheResultT:
        """The result stored for *inputs*; raises :class:`KeyError` if
        none."""
        result = self._input_key_to_result[inputs.key]
        if self.err_on_collision:
            self._check_collision(inputs.key, inputs.expr)
        return result

    def _check_collision(self, key: Hashable, expr: Any) -> None:
        stored = self._input_key_to_expr.get(key, expr)
        if stored is not expr:
            raise CacheCollisionError(
                f"a mapper met two distinct but equal {type(expr).__name__} "
                "nodes (err_on_collision=True); deduplicate the graph first "
                "(pytato.transform.deduplicate)")

    def clear(self) -> None:
        """Forget all results."""
        self._input_key_to_result = {}
        self._input_key_to_expr = {}


class TransformMapperCache(CachedMapperCache[CacheExprT, CacheExprT, P]):
    """The cache of a :class:`TransformMapper`.

    :arg err_on_created_duplicate: raise
        :class:`MapperCreatedDuplicateError` when a mapper returns a new
        node equal to the node it mapped.
    """

    def __init__(self, err_on_collision: bool,
                 err_on_created_duplicate: bool, *,
                 deduplicate_results: bool = True) -> None:
        super().__init__(err_on_collision)
        self.err_on_created_duplicate = err_on_created_duplicate
        self.deduplicate_results = deduplicate_results
        self._result_to_result: dict[CacheExprT, CacheExprT] = {}

    def add(self, inputs: CacheInputsWithKey[CacheExprT, P],
            result: CacheExprT) -> CacheExprT:
        """Store *result* for *inputs*. With *deduplicate_results* (the
        default), a result equal to an earlier one is replaced by the
        earlier one (as upstream's cache does), so that the mapped graph
        holds no new duplicates."""
        if not self.deduplicate_results:
            self._check_created_duplicate(inputs.expr, result)
            return super().add(inputs, result)
        try:
            result = self._result_to_result[result]
        except KeyError:
            self._check_created_duplicate(inputs.expr, result)
            self._result_to_result[result] = result
        except TypeError:
            pass    # unhashable results are not deduplicated
        return super().add(inputs, result)

    def _check_created_duplicate(self, expr: Any, result: Any) -> None:
        if (self.err_on_created_duplicate and result is not expr
                and type(result) is type(expr) and result == expr):
            raise MapperCreatedDuplicateError(
                f"a mapper returned a new {type(result).__name__} equal to "
                "the node it mapped (return the node itself instead)")

    def clear(self) -> None:
        super().clear()
        self._result_to_result = {}

# }}}


# {{{ CachedMapper

class CachedMapper(Mapper[ResultT, FunctionResultT, P]):
    """A :class:`Mapper` memoizing results per (structurally equal) node
    and extra arguments.

    :arg err_on_collision: see :class:`CachedMapperCache`.
    :arg _cache: a cache to use (shared with other mappers).
    :arg _function_cache: the cache of mapped function definitions.

    .. automethod:: get_cache_key
    .. automethod:: clone_for_callee
    """

    _cache: CachedMapperCache[ArrayOrNames, ResultT, P]
    _function_cache: CachedMapperCache[FunctionDefinition, FunctionResultT, P]

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[ArrayOrNames, ResultT, P] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, FunctionResultT, P] | None = None
            ) -> None:
        self._cache = (CachedMapperCache(err_on_collision)
                       if _cache is None else _cache)
        self._function_cache = (CachedMapperCache(err_on_collision)
                                if _function_cache is None else _function_cache)

    def get_cache_key(self, expr: ArrayOrNames, *args: P.args,
                      **kwargs: P.kwargs) -> Hashable:
        """The cache key of *expr* with extra arguments (by default *expr*
        itself, compared structurally)."""
        return self._cache.get_key(expr, *args, **kwargs)

    def get_function_definition_cache_key(
            self, expr: FunctionDefinition, *args: P.args, **kwargs: P.kwargs
            ) -> Hashable:
        """The cache key of a function definition with extra arguments."""
        return self._function_cache.get_key(expr, *args, **kwargs)

    def rec(self, expr: ArrayOrNames, *args: P.args,
            **kwargs: P.kwargs) -> ResultT:
        key = self.get_cache_key(expr, *args, **kwargs)
        cache = self._cache
        try:
            result = cache._input_key_to_result[key]
        except KeyError:
            result = Mapper.rec(self, expr, *args, **kwargs)
            return cache.add(CacheInputsWithKey(expr, key, *args, **kwargs),
                             result)
        if cache.err_on_collision:
            cache._check_collision(key, expr)
        return result

    def __call__(self, expr: ArrayOrNames, *args: P.args,
                 **kwargs: P.kwargs) -> ResultT:
        if isinstance(expr, FunctionDefinition):
            return self.rec_function_definition(  # type: ignore[return-value]
                expr, *args, **kwargs)
        if not args and not kwargs and isinstance(expr, GraphNode):
            # bottom-up, so that each map_* method finds its children mapped
            for node in topological_order([expr]):
                self.rec(node)  # type: ignore[arg-type]
        return self.rec(expr, *args, **kwargs)

    def rec_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs
                                ) -> FunctionResultT:
        """Map a function definition once (per extra arguments), however
        many calls refer to it."""
        key = self.get_function_definition_cache_key(expr, *args, **kwargs)
        cache = self._function_cache
        try:
            result = cache._input_key_to_result[key]
        except KeyError:
            result = Mapper.rec_function_definition(self, expr, *args, **kwargs)
            return cache.add(CacheInputsWithKey(expr, key, *args, **kwargs),
                             result)
        if cache.err_on_collision:
            cache._check_collision(key, expr)
        return result

    def clone_for_callee(self, function: FunctionDefinition) -> Any:
        """A mapper of the same kind for the body of *function* (a separate
        scope: its nodes are cached separately from the caller's; the cache
        of function definitions is shared). Mappers whose constructor takes
        other arguments must override this to map graphs with calls."""
        cls = type(self)
        err = self._cache.err_on_collision
        attempts: list[dict[str, Any]] = [
            {"err_on_collision": err, "_function_cache": self._function_cache},
            {"_function_cache": self._function_cache},
            {}]
        for kwargs in attempts:
            try:
                return cls(**kwargs)
            except TypeError:
                continue
        raise NotImplementedError(
            f"{cls.__name__} must define clone_for_callee to map the bodies "
            "of called functions")

# }}}


# {{{ copy mappers

def _rebuild_non_array(expr: Any, new_kids: tuple[Any, ...]) -> Any:
    """Rebuild a non-array node (a dataclass with a per-field skeleton, see
    :class:`~pytato.array.nonarray.DataclassGraphNode`) with new children."""
    import dataclasses

    from pytato.array.base import _unflatten
    return type(expr)(**{
        f.name: _unflatten(s, new_kids)
        for f, s in zip(dataclasses.fields(expr), expr._pt_skel, strict=True)})


def _copy_array(mapper: Any, expr: Array, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Array:
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

    _cache: TransformMapperCache[ArrayOrNames, []]  # type: ignore[assignment]
    _function_cache: TransformMapperCache[  # type: ignore[assignment]
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

    _cache: TransformMapperCache[ArrayOrNames, P]  # type: ignore[assignment]
    _function_cache: TransformMapperCache[  # type: ignore[assignment]
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
        def rec(self, expr: Any, *args: P.args, **kwargs: P.kwargs) -> Any: ...

        def rec_function_definition(self, expr: FunctionDefinition,
                                    *args: P.args, **kwargs: P.kwargs
                                    ) -> FunctionDefinition: ...

        def clone_for_callee(self, function: FunctionDefinition) -> Any: ...

    def map_array(self, expr: Array, *args: P.args, **kwargs: P.kwargs
                  ) -> Array:
        """The default of every array node type: rebuild *expr* from its
        mapped children."""
        return _copy_array(self, expr, args, kwargs)

    def rec_idx_or_size_tuple(self, situp: tuple[Any, ...], *args: P.args,
                              **kwargs: P.kwargs) -> tuple[Any, ...]:
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
        new = {k: self.rec(v, *args, **kwargs) for k, v in expr.items()}
        if all(new[k] is v for k, v in expr.items()):
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
            new = {k: mapper(v) for k, v in expr.returns.items()}
        else:
            new = {k: mapper.rec(v, *args, **kwargs)
                   for k, v in expr.returns.items()}
        if all(new[k] is v for k, v in expr.returns.items()):
            return expr
        return expr.copy(returns=new)

    def map_call(self, expr: Call, *args: P.args, **kwargs: P.kwargs
                 ) -> AbstractResultWithNamedArrays:
        fn = self.rec_function_definition(expr.function, *args, **kwargs)
        bindings = {k: self.rec(v, *args, **kwargs)
                    for k, v in expr.bindings.items()}
        if fn is expr.function and all(
                bindings[k] is v for k, v in expr.bindings.items()):
            return expr
        return expr.copy(function=fn, bindings=bindings)

    def _map_non_array_node(self, expr: Any, *args: P.args,
                            **kwargs: P.kwargs) -> Any:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k, *args, **kwargs) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        return _rebuild_non_array(expr, new_kids)

    def map_loopy_call(self, expr: LoopyCall, *args: P.args,
                       **kwargs: P.kwargs) -> AbstractResultWithNamedArrays:
        return self._map_non_array_node(  # type: ignore[no-any-return]
            expr, *args, **kwargs)

    def map_csr_matrix(self, expr: CSRMatrix, *args: P.args,
                       **kwargs: P.kwargs) -> CSRMatrix:
        return self._map_non_array_node(  # type: ignore[no-any-return]
            expr, *args, **kwargs)


class CopyMapper(_CopyMethods[[]], TransformMapper):
    """Rebuilds the graph bottom-up; a node whose children are unchanged is
    returned as is. Override ``map_<node>`` methods to transform nodes (an
    override may call ``super().map_<node>(expr)`` for the copy)."""


class CopyMapperWithExtraArgs(_CopyMethods[P], TransformMapperWithExtraArgs[P]):
    """A :class:`CopyMapper` whose methods take extra arguments, passed on
    unchanged to the children."""

# }}}


# {{{ CombineMapper

class CombineMapper(CachedMapper[ResultT, FunctionResultT, []]):
    """Combines the results of the children with :meth:`combine`.

    .. automethod:: combine
    """

    def combine(self, *args: ResultT) -> ResultT:
        """Combine the results of the children of a node (possibly
        none)."""
        raise NotImplementedError

    def rec_idx_or_size_tuple(self, situp: tuple[Any, ...]
                              ) -> tuple[ResultT, ...]:
        """The results of the array entries of *situp* (a shape or an
        index tuple)."""
        return tuple(self.rec(s) for s in situp if isinstance(s, Array))

    def map_array(self, expr: Array) -> ResultT:
        """The default of every array node type: :meth:`combine` of the
        children's results."""
        rec = self.rec
        return self.combine(*(rec(k) for k in get_children(expr)))

    def map_index_lambda(self, expr: IndexLambda) -> ResultT:
        return self.map_array(expr)

    def map_placeholder(self, expr: Placeholder) -> ResultT:
        return self.map_array(expr)

    def map_data_wrapper(self, expr: DataWrapper) -> ResultT:
        return self.map_array(expr)

    def map_size_param(self, expr: SizeParam) -> ResultT:
        return self.map_array(expr)

    def map_stack(self, expr: Stack) -> ResultT:
        return self.map_array(expr)

    def map_concatenate(self, expr: Concatenate) -> ResultT:
        return self.map_array(expr)

    def map_roll(self, expr: Roll) -> ResultT:
        return self.map_array(expr)

    def map_axis_permutation(self, expr: AxisPermutation) -> ResultT:
        return self.map_array(expr)

    def map_reshape(self, expr: Reshape) -> ResultT:
        return self.map_array(expr)

    def map_basic_index(self, expr: BasicIndex) -> ResultT:
        return self.map_array(expr)

    def map_contiguous_advanced_index(
            self, expr: AdvancedIndexInContiguousAxes) -> ResultT:
        return self.map_array(expr)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes) -> ResultT:
        return self.map_array(expr)

    def map_einsum(self, expr: Einsum) -> ResultT:
        return self.map_array(expr)

    def map_named_array(self, expr: NamedArray) -> ResultT:
        return self.map_array(expr)

    def map_named_call_result(self, expr: NamedCallResult) -> ResultT:
        return self.map_array(expr)

    def map_loopy_call_result(self, expr: LoopyCallResult) -> ResultT:
        return self.map_array(expr)

    def map_csr_matmul(self, expr: CSRMatmul) -> ResultT:
        return self.map_array(expr)

    def map_distributed_send_ref_holder(
            self, expr: DistributedSendRefHolder) -> ResultT:
        return self.map_array(expr)

    def map_distributed_recv(self, expr: DistributedRecv) -> ResultT:
        return self.map_array(expr)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> ResultT:
        return self.combine(*(self.rec(v) for v in expr.values()))

    def map_distributed_send(self, expr: DistributedSend) -> ResultT:
        return self.combine(self.rec(expr.data))

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> FunctionResultT:
        """Combine the results of the function's returned arrays, mapped by
        :meth:`~CachedMapper.clone_for_callee` (the body is a scope of its
        own: override this for analyses where that matters)."""
        mapper = self.clone_for_callee(expr)
        return self.combine(  # type: ignore[return-value]
            *(mapper(v) for v in expr.returns.values()))

    def map_call(self, expr: Call) -> ResultT:
        return self.combine(
            self.rec_function_definition(expr.function),  # type: ignore[arg-type]
            *(self.rec(v) for v in expr.bindings.values()))

    def map_loopy_call(self, expr: LoopyCall) -> ResultT:
        return self.combine(*(self.rec(k) for k in get_children(expr)))

    def map_csr_matrix(self, expr: CSRMatrix) -> ResultT:
        return self.combine(*(self.rec(k) for k in get_children(expr)))

# }}}


# {{{ walk mappers

class WalkMapper(Mapper[None, None, P]):
    """Visits every node (once per path: use :class:`CachedWalkMapper` to
    visit each node once). :meth:`visit` returning *False* skips the
    node's children; :meth:`post_visit` runs after them.

    .. automethod:: visit
    .. automethod:: post_visit
    """

    def clone_for_callee(self, function: FunctionDefinition) -> Any:
        """A mapper of the same kind for the body of *function*."""
        return type(self)()

    def visit(self, expr: Any, *args: P.args, **kwargs: P.kwargs) -> bool:
        """Called before the children of *expr* are walked; return *False*
        to skip them."""
        return True

    def post_visit(self, expr: Any, *args: P.args, **kwargs: P.kwargs) -> None:
        """Called after the children of *expr* were walked."""

    def rec(self, expr: ArrayOrNames, *args: P.args,
            **kwargs: P.kwargs) -> None:
        """Walk *expr*: without recursion through nodes whose ``map_*``
        method is :class:`WalkMapper`'s (an explicit stack, in the order of
        the recursive walk); a node whose method is overridden runs the
        override, which recurses (through ``super()``) one walk per such
        node."""
        stack: list[tuple[Any, bool]] = [(expr, False)]
        default = _walk_defaults(type(self), WalkMapper.rec)
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self.post_visit(node, *args, **kwargs)
                continue
            mm = getattr(node, "_mapper_method", None)
            if mm is None or not default(mm):
                Mapper.rec(self, node, *args, **kwargs)
                continue
            if not self.visit(node, *args, **kwargs):
                continue
            if mm == "map_call":
                self.rec_function_definition(node.function, *args, **kwargs)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(get_children(node)))

    def map_array(self, expr: Any, *args: P.args, **kwargs: P.kwargs) -> None:
        """The default of every node type: visit, walk the children,
        post-visit."""
        if not self.visit(expr, *args, **kwargs):
            return
        for k in get_children(expr):
            self.rec(k, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_index_lambda(self, expr: IndexLambda, *args: P.args,
                         **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_placeholder(self, expr: Placeholder, *args: P.args,
                        **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_data_wrapper(self, expr: DataWrapper, *args: P.args,
                         **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_size_param(self, expr: SizeParam, *args: P.args,
                       **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_stack(self, expr: Stack, *args: P.args, **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_concatenate(self, expr: Concatenate, *args: P.args,
                        **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_roll(self, expr: Roll, *args: P.args, **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_axis_permutation(self, expr: AxisPermutation, *args: P.args,
                             **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_reshape(self, expr: Reshape, *args: P.args,
                    **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_basic_index(self, expr: BasicIndex, *args: P.args,
                        **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_contiguous_advanced_index(
            self, expr: AdvancedIndexInContiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes, *args: P.args,
            **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_einsum(self, expr: Einsum, *args: P.args, **kwargs: P.kwargs
                   ) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_named_array(self, expr: NamedArray, *args: P.args,
                        **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_named_call_result(self, expr: NamedCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_loopy_call_result(self, expr: LoopyCallResult, *args: P.args,
                              **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_csr_matmul(self, expr: CSRMatmul, *args: P.args,
                       **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_distributed_send_ref_holder(
            self, expr: DistributedSendRefHolder, *args: P.args,
            **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_distributed_recv(self, expr: DistributedRecv, *args: P.args,
                             **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays,
                                 *args: P.args, **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_distributed_send(self, expr: DistributedSend, *args: P.args,
                             **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_loopy_call(self, expr: LoopyCall, *args: P.args,
                       **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_csr_matrix(self, expr: CSRMatrix, *args: P.args,
                       **kwargs: P.kwargs) -> None:
        self.map_array(expr, *args, **kwargs)

    def map_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs) -> None:
        """Walk the arrays the function returns (once per definition for
        :class:`CachedWalkMapper`)."""
        if not self.visit(expr, *args, **kwargs):
            return
        for v in expr.returns.values():
            self.rec(v, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_call(self, expr: Call, *args: P.args, **kwargs: P.kwargs) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec_function_definition(expr.function, *args, **kwargs)
        for v in expr.bindings.values():
            self.rec(v, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)


_DEFAULT_WALK_METHODS: dict[tuple[type, Any], dict[str, bool]] = {}


def _walk_defaults(cls: type, rec: Any) -> Callable[[str], bool]:
    """A predicate: whether the ``map_*`` method of *cls* named by its
    argument is :class:`WalkMapper`'s (visit, children, post-visit), with
    ``map_array`` and ``rec`` (expected to be *rec*) not overridden."""
    cache = _DEFAULT_WALK_METHODS.setdefault((cls, rec), {})
    base_ok = (getattr(cls, "map_array", None)
               is WalkMapper.__dict__["map_array"]
               and getattr(cls, "rec", None) is rec)

    def is_default(method_name: str) -> bool:
        try:
            return cache[method_name]
        except KeyError:
            pass
        own = WalkMapper.__dict__.get(method_name)
        result = (base_ok and own is not None
                  and getattr(cls, method_name, None) is own)
        cache[method_name] = result
        return result

    return is_default


class CachedWalkMapper(WalkMapper[P]):
    """A :class:`WalkMapper` visiting each distinct node (by default: each
    node object, see :meth:`get_cache_key`) once.

    :arg _visited_functions: the set of visited function definitions
        (shared with the mappers of callees).

    .. automethod:: get_cache_key
    """

    def __init__(self, _visited_functions: set[VisitKeyT] | None = None
                 ) -> None:
        self._visited_arrays_or_names: set[VisitKeyT] = set()
        self._visited_functions: set[VisitKeyT] = (
            set() if _visited_functions is None else _visited_functions)

    def get_cache_key(self, expr: ArrayOrNames, *args: P.args,
                      **kwargs: P.kwargs) -> VisitKeyT:
        """The key by which visited nodes are remembered (by default the
        node's identity)."""
        if not args and not kwargs:
            return id(expr)
        return (id(expr), args, tuple(sorted(kwargs.items())))

    def get_function_definition_cache_key(
            self, expr: FunctionDefinition, *args: P.args, **kwargs: P.kwargs
            ) -> VisitKeyT:
        """The key by which visited function definitions are remembered."""
        return (expr, args, tuple(sorted(kwargs.items())))

    def clone_for_callee(self, function: FunctionDefinition) -> Any:
        try:
            return type(self)(_visited_functions=self._visited_functions)
        except TypeError:
            return type(self)()

    def rec(self, expr: ArrayOrNames, *args: P.args,
            **kwargs: P.kwargs) -> None:
        key = self.get_cache_key(expr, *args, **kwargs)
        if key in self._visited_arrays_or_names:
            return
        Mapper.rec(self, expr, *args, **kwargs)
        self._visited_arrays_or_names.add(key)

    def rec_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs) -> None:
        """Walk each function body once, however many calls it has."""
        key = self.get_function_definition_cache_key(expr, *args, **kwargs)
        if key in self._visited_functions:
            return
        self._visited_functions.add(key)
        if not args and not kwargs:
            mm = getattr(type(self), "map_function_definition", None)
            if mm is WalkMapper.map_function_definition:
                # deep bodies: the walk of the returns is bottom-up
                if self.visit(expr):
                    self._walk(list(expr.returns.values()))
                    self.post_visit(expr)
                return
        Mapper.rec_function_definition(self, expr, *args, **kwargs)

    def _is_default_method(self, method_name: str) -> bool:
        """Whether the ``map_*`` method *method_name* is
        :class:`WalkMapper`'s (visit, children, post-visit)."""
        return _walk_defaults(type(self), CachedWalkMapper.rec)(method_name)

    def _walk(self, roots: list[Any], *args: P.args,
              **kwargs: P.kwargs) -> None:
        """The walk of :meth:`rec` without recursion: ``visit`` in
        pre-order (returning *False* prunes), ``post_visit`` in post-order,
        as the recursive walk does. A node whose ``map_*`` method is
        overridden has its children walked first; then the override runs
        (its ``super()`` call finds the children visited). The extra
        arguments are passed unchanged to every node, as the default
        ``map_*`` methods do."""
        visited = self._visited_arrays_or_names
        get_key = self.get_cache_key
        _enter, _exit_default, _exit_override = 0, 1, 2
        stack: list[tuple[Any, int]] = [(r, _enter) for r in reversed(roots)]
        while stack:
            node, state = stack.pop()
            key = get_key(node, *args, **kwargs)
            if state == _exit_default:
                self.post_visit(node, *args, **kwargs)
                visited.add(key)
                continue
            if key in visited:
                continue
            if state == _exit_override:
                Mapper.rec(self, node, *args, **kwargs)
                visited.add(key)
                continue
            mm = getattr(node, "_mapper_method", None)
            if mm is None:
                self.rec(node, *args, **kwargs)
                continue
            kids = get_children(node)
            if not self._is_default_method(mm):
                stack.append((node, _exit_override))
            else:
                if not self.visit(node, *args, **kwargs):
                    visited.add(key)
                    continue
                if mm == "map_call":
                    self.rec_function_definition(
                        node.function, *args, **kwargs)
                stack.append((node, _exit_default))
            stack.extend((k, _enter) for k in reversed(kids))

    def __call__(self, expr: ArrayOrNames, *args: P.args,
                 **kwargs: P.kwargs) -> None:
        if isinstance(expr, FunctionDefinition):
            self.rec_function_definition(expr, *args, **kwargs)
            return
        if isinstance(expr, GraphNode):
            self._walk([expr], *args, **kwargs)
            return
        self.rec(expr, *args, **kwargs)


class TopoSortMapper(CachedWalkMapper[[]]):
    """Collects the nodes of a graph in :attr:`topological_order` (children
    before their users).

    .. attribute:: topological_order
    """

    def __init__(self, _visited_functions: set[VisitKeyT] | None = None
                 ) -> None:
        super().__init__(_visited_functions=_visited_functions)
        self.topological_order: list[ArrayOrNames] = []

    def get_cache_key(self, expr: ArrayOrNames) -> VisitKeyT:
        return expr

    def post_visit(self, expr: Any) -> None:
        if not isinstance(expr, FunctionDefinition):
            self.topological_order.append(expr)

# }}}


# {{{ gatherers

class DependencyMapper(CombineMapper[frozenset[Array], Any]):
    """Returns the set of all arrays *expr* depends on (itself included).
    Function bodies are not entered (a call depends on its bindings)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[Array], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, Any, []] | None = None) -> None:
        super().__init__(err_on_collision, _cache, _function_cache)

    def combine(self, *args: frozenset[Array]) -> frozenset[Array]:
        return frozenset().union(*args)

    def map_array(self, expr: Array) -> frozenset[Array]:
        return self.combine(frozenset([expr]), super().map_array(expr))

    def map_call(self, expr: Call) -> frozenset[Array]:
        return self.combine(*(self.rec(v) for v in expr.bindings.values()))

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> frozenset[Array]:
        return frozenset()

    def __call__(self, expr: ArrayOrNames) -> frozenset[Array]:  # type: ignore[override]
        if type(self) is DependencyMapper and isinstance(expr, GraphNode):
            # linear (the per-node sets of the general mapper are quadratic
            # on chains)
            return frozenset(self._gather(expr, Array))
        return super().__call__(expr)

    @staticmethod
    def _gather(expr: Any, cls: type) -> list[Any]:
        # function bodies are not entered: topological_order follows
        # children only, and a call's children are its bindings
        return [node for node in topological_order([expr])
                if isinstance(node, cls)]


class SubsetDependencyMapper(DependencyMapper):
    """A :class:`DependencyMapper` returning only the dependencies that lie
    in *universe*."""

    def __init__(self, universe: frozenset[Array]) -> None:
        super().__init__()
        self.universe = universe

    def combine(self, *args: frozenset[Array]) -> frozenset[Array]:
        return frozenset().union(*args) & self.universe

    def clone_for_callee(self, function: FunctionDefinition) -> Any:
        return type(self)(self.universe)


class InputGatherer(CombineMapper[frozenset[InputArgumentBase], Any]):
    """Returns the set of :class:`~pytato.array.InputArgumentBase` nodes
    (placeholders, data wrappers, size parameters) *expr* depends on, also
    through shapes."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[InputArgumentBase], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, Any, []] | None = None) -> None:
        super().__init__(err_on_collision, _cache, _function_cache)

    def combine(self, *args: frozenset[InputArgumentBase]
                ) -> frozenset[InputArgumentBase]:
        return frozenset().union(*args)

    def map_array(self, expr: Array) -> frozenset[InputArgumentBase]:
        deps = super().map_array(expr)
        if isinstance(expr, InputArgumentBase):
            return self.combine(frozenset([expr]), deps)
        return deps

    def map_call(self, expr: Call) -> frozenset[InputArgumentBase]:
        return self.combine(*(self.rec(v) for v in expr.bindings.values()))

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> frozenset[InputArgumentBase]:
        return frozenset()

    def __call__(self, expr: ArrayOrNames  # type: ignore[override]
                 ) -> frozenset[InputArgumentBase]:
        if type(self) is InputGatherer and isinstance(expr, GraphNode):
            return frozenset(DependencyMapper._gather(expr, InputArgumentBase))
        return super().__call__(expr)


class ListOfInputsGatherer(CombineMapper[list[InputArgumentBase], Any]):
    """As :class:`InputGatherer`, returning a list (in the order of first
    appearance in a depth-first walk, each input once)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, list[InputArgumentBase], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, Any, []] | None = None) -> None:
        super().__init__(err_on_collision, _cache, _function_cache)

    def combine(self, *args: list[InputArgumentBase]
                ) -> list[InputArgumentBase]:
        out: list[InputArgumentBase] = []
        seen: set[int] = set()
        for lst in args:
            for x in lst:
                if id(x) not in seen:
                    seen.add(id(x))
                    out.append(x)
        return out

    def map_array(self, expr: Array) -> list[InputArgumentBase]:
        deps = super().map_array(expr)
        if isinstance(expr, InputArgumentBase):
            return self.combine(deps, [expr])
        return deps

    def map_call(self, expr: Call) -> list[InputArgumentBase]:
        return self.combine(*(self.rec(v) for v in expr.bindings.values()))

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> list[InputArgumentBase]:
        return []


class SizeParamGatherer(CombineMapper[frozenset[SizeParam], Any]):
    """Returns the set of :class:`~pytato.array.SizeParam` nodes *expr*
    depends on (also through shapes)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[SizeParam], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, Any, []] | None = None) -> None:
        super().__init__(err_on_collision, _cache, _function_cache)

    def combine(self, *args: frozenset[SizeParam]) -> frozenset[SizeParam]:
        return frozenset().union(*args)

    def map_size_param(self, expr: SizeParam) -> frozenset[SizeParam]:
        return frozenset([expr])

    def map_call(self, expr: Call) -> frozenset[SizeParam]:
        return self.combine(*(self.rec(v) for v in expr.bindings.values()))

    def map_function_definition(self, expr: FunctionDefinition
                                ) -> frozenset[SizeParam]:
        return frozenset()

    def __call__(self, expr: ArrayOrNames  # type: ignore[override]
                 ) -> frozenset[SizeParam]:
        if type(self) is SizeParamGatherer and isinstance(expr, GraphNode):
            return frozenset(DependencyMapper._gather(expr, SizeParam))
        return super().__call__(expr)

# }}}


# {{{ users

class UsersCollector(CachedMapper[None, None, []]):
    """Collects, for each node of a graph, the nodes that use it directly:
    :attr:`node_to_users`.

    .. attribute:: node_to_users
    """

    def __init__(self) -> None:
        super().__init__()
        self.node_to_users: dict[ArrayOrNames, set[ArrayOrNames]] = {}

    def __call__(self, expr: ArrayOrNames) -> None:  # type: ignore[override]
        users = self.node_to_users
        for node in topological_order([expr]):
            users.setdefault(node, set())  # type: ignore[arg-type]
            for k in get_children(node):  # type: ignore[arg-type]
                users.setdefault(k, set()).add(node)  # type: ignore[arg-type]

    def map_array(self, expr: Array) -> None:
        for k in get_children(expr):
            self.node_to_users.setdefault(k, set()).add(expr)
            self.rec(k)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> None:
        self.map_array(expr)  # type: ignore[arg-type]

    map_index_lambda = map_array
    map_placeholder = map_array
    map_data_wrapper = map_array
    map_size_param = map_array
    map_stack = map_array
    map_concatenate = map_array
    map_roll = map_array
    map_axis_permutation = map_array
    map_reshape = map_array
    map_basic_index = map_array
    map_contiguous_advanced_index = map_array
    map_non_contiguous_advanced_index = map_array
    map_einsum = map_array
    map_named_array = map_array
    map_named_call_result = map_array
    map_loopy_call_result = map_array
    map_csr_matmul = map_array
    map_distributed_send_ref_holder = map_array
    map_distributed_recv = map_array
    map_call = map_dict_of_named_arrays
    map_loopy_call = map_dict_of_named_arrays
    map_csr_matrix = map_dict_of_named_arrays
    map_distributed_send = map_dict_of_named_arrays

    def map_function_definition(self, expr: FunctionDefinition) -> None:
        pass


def get_users(expr: ArrayOrNames) -> dict[ArrayOrNames, set[ArrayOrNames]]:
    """A mapping from each node of the graph of *expr* to its direct
    users."""
    uc = UsersCollector()
    uc(expr)
    return uc.node_to_users


def rec_get_user_nodes(expr: ArrayOrNames, node: ArrayOrNames
                       ) -> frozenset[ArrayOrNames]:
    """All nodes of the graph of *expr* that use *node*, directly or not."""
    users = get_users(expr)
    result: set[ArrayOrNames] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        for u in users.get(n, ()):
            if u not in result:
                result.add(u)
                stack.append(u)
    return frozenset(result)


def get_dependencies(expr: DictOfNamedArrays) -> dict[str, frozenset[Array]]:
    """For each output of *expr*, the set of arrays it depends on (itself
    included)."""
    dep_mapper = DependencyMapper()
    return {name: dep_mapper(val) for name, val in expr.items()}

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
    return CachedMapAndCopyMapper(map_fn)(expr)  # type: ignore[return-value]

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

