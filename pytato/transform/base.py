"""Mapper base classes: the one way graph passes visit nodes.

A mapper dispatches on the node type to ``map_<node>`` methods (named by
each node class's ``_mapper_method``, e.g.
:meth:`~pytato.transform.copy.CopyMapper.map_index_lambda`).
The classes are generic in the same type parameters as upstream pytato's:
``Mapper[ResultT, FunctionResultT, P]`` where *ResultT* is what
:meth:`Mapper.rec` returns for an array or a result with named arrays,
*FunctionResultT* what :meth:`Mapper.rec_function_definition` returns for a
:class:`~pytato.function.FunctionDefinition`, and *P* the extra arguments of
the ``map_*`` methods (``[]`` for none).

This module holds the dispatch (:class:`Mapper`), the caches and the
memoizing :class:`CachedMapper`; the mapper families build on them:
:mod:`pytato.transform.copy` (graph to graph),
:mod:`pytato.transform.combine` (results combined over the children),
:mod:`pytato.transform.walk` (visits) and
:mod:`pytato.transform.gatherers` (dependencies, inputs, users).

Deep graphs: calling a cached mapper without extra arguments first maps
the graph bottom-up, in topological order, so that the recursion of
``map_*`` methods into children, overrides calling ``super()`` included,
always hits the cache; a :class:`~pytato.transform.walk.CachedWalkMapper`
(called with or without extra arguments) and the uncached
:class:`~pytato.transform.walk.WalkMapper` walk with an explicit
stack. Passes never recurse deeper than a few frames, whatever the graph's
depth, except: the other cached mappers called with extra arguments
recurse as upstream's do (one Python frame per level: their overrides may
pass other arguments to children, so their results cannot be computed
bottom-up in advance), and an uncached
:class:`~pytato.transform.walk.WalkMapper` recurses a few frames per
node whose ``map_*`` method the subclass overrides (the override runs
where the recursive walk would run it).

Differences from upstream: the ``err_on_collision`` and
``err_on_created_duplicate`` checks default to *False* here (graphs built by
this frontend may hold distinct equal nodes, which the cache merges); pass
*True* for upstream's checks.

.. autodata:: ArrayOrNames
.. autodata:: ArrayOrNamesTc
.. autodata:: ArrayOrNamesOrFunctionDefTc
.. autodata:: ArrayOrNamesOrDictTc
.. autoclass:: Mapper
.. autoclass:: CachedMapperCache
.. autoclass:: CacheInputsWithKey
.. autoclass:: CachedMapper
.. autoclass:: TransformMapperCache
.. autoclass:: CacheCollisionError
.. autoclass:: MapperCreatedDuplicateError
.. autoclass:: UnsupportedArrayError
.. autoclass:: ForeignObjectError
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import (
    Any,
    Generic,
    ParamSpec,
    Self,
    TypeAlias,
    TypeVar,
)

from pytato.array.base import Array, GraphNode, topological_order
from pytato.array.results import AbstractResultWithNamedArrays, DictOfNamedArrays
from pytato.diagnostic import NotAnArrayError, PytatoError, UnsupportedFeatureError
from pytato.function import FunctionDefinition


__all__ = [
    "ArrayOrNames", "ArrayOrNamesOrDictTc", "ArrayOrNamesOrFunctionDefTc",
    "ArrayOrNamesTc", "CacheCollisionError", "CacheInputsWithKey", "CachedMapper",
    "CachedMapperCache", "ForeignObjectError", "Mapper",
    "MapperCreatedDuplicateError", "TransformMapperCache",
    "UnsupportedArrayError",
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

ArrayOrNamesOrDictTc = TypeVar(
    "ArrayOrNamesOrDictTc", Array, AbstractResultWithNamedArrays,
    DictOfNamedArrays, dict[str, Array])
"""As :data:`ArrayOrNamesTc`, with a :class:`dict` of arrays (for the
passes that also take one and return one)."""

ResultT = TypeVar("ResultT")
FunctionResultT = TypeVar("FunctionResultT")
P = ParamSpec("P")
CacheExprT = TypeVar("CacheExprT")
CacheKeyT = TypeVar("CacheKeyT")
CacheResultT = TypeVar("CacheResultT")

# }}}


def _verify_is_array(expr: object) -> Array:
    """Return *expr*, an :class:`~pytato.Array` (e.g. the result of a
    mapper); raise :class:`~pytato.diagnostic.NotAnArrayError` (a
    :class:`TypeError`) if it is not one."""
    if not isinstance(expr, Array):
        raise NotAnArrayError(
            f"expected an Array, got {type(expr).__name__}")
    return expr


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

def _no_method(mapper: object, expr: object) -> Exception:
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

    def handle_unsupported_array(self, expr: object, *args: P.args,
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
                    return fallback(expr, *args, **kwargs)
            return self.handle_unsupported_array(expr, *args, **kwargs)
        return method(expr, *args, **kwargs)

    def rec_function_definition(self, expr: FunctionDefinition,
                                *args: P.args, **kwargs: P.kwargs
                                ) -> FunctionResultT:
        """Map a :class:`~pytato.function.FunctionDefinition` (the body of
        called functions is a graph of its own, not a child of the call)."""
        method = getattr(self, "map_function_definition", None)
        if method is None:
            raise _no_method(self, expr)
        return method(expr, *args, **kwargs)

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

class CacheInputsWithKey(Generic[CacheExprT, CacheKeyT, P]):
    """What a :class:`CachedMapperCache` is asked about: the mapped
    expression, its extra arguments and the cache key made of them.

    .. attribute:: expr
    .. attribute:: key
    .. attribute:: args
    .. attribute:: kwargs
    """

    __slots__ = ("args", "expr", "key", "kwargs")

    def __init__(self, expr: CacheExprT, key: CacheKeyT,
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
            return expr
        return (expr, args, tuple(sorted(kwargs.items())))

    def add(self, inputs: CacheInputsWithKey[CacheExprT, Hashable, P],
            result: CacheResultT) -> CacheResultT:
        """Store *result* for *inputs*; return it."""
        self._input_key_to_result[inputs.key] = result
        if self.err_on_collision:
            self._input_key_to_expr[inputs.key] = inputs.expr
        return result

    def retrieve(self, inputs: CacheInputsWithKey[CacheExprT, Hashable, P]
                 ) -> CacheResultT:
        """The result stored for *inputs*; raises :class:`KeyError` if
        none."""
        result = self._input_key_to_result[inputs.key]
        if self.err_on_collision:
            self._check_collision(inputs.key, inputs.expr)
        return result

    def _check_collision(self, key: Hashable, expr: object) -> None:
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

    def add(self, inputs: CacheInputsWithKey[CacheExprT, Hashable, P],
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

    def _check_created_duplicate(self, expr: object, result: object) -> None:
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
                self.rec(node)  # type: ignore[arg-type,call-arg]
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

    def clone_for_callee(self, function: FunctionDefinition) -> Self:
        """A mapper of the same kind for the body of *function* (a separate
        scope: its nodes are cached separately from the caller's; the cache
        of function definitions is shared). Mappers whose constructor takes
        other arguments must override this to map graphs with calls."""
        cls = type(self)
        err = self._cache.err_on_collision
        # constructor keywords, passed through to the subclass's constructor
        attempts: list[dict[str, Any]] = [
            {"err_on_collision": err, "_function_cache": self._function_cache},
            {"_function_cache": self._function_cache},
            {}]
        for kwargs in attempts:
            try:
                return cls(**kwargs)
            except TypeError:
                continue
        raise UnsupportedFeatureError(
            f"{cls.__name__} must define clone_for_callee to map the bodies "
            "of called functions")

# }}}
