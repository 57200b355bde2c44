"""Mapper base classes: the one way graph passes visit nodes.

A mapper dispatches on the node type to ``map_<node>`` methods (named by
each node class's ``_mapper_method``). Cached mappers visit each distinct
node once, however many users it has. Calling a cached mapper without extra
arguments first visits the graph bottom-up in topological order, so that the
recursion of ``map_*`` methods into children always hits the cache: passes
never recurse deeper than a few frames, whatever the graph's depth.

.. autoclass:: Mapper
.. autoclass:: CachedMapper
.. autoclass:: CopyMapper
.. autoclass:: CopyMapperWithExtraArgs
.. autoclass:: CombineMapper
.. autoclass:: WalkMapper
.. autoclass:: CachedWalkMapper
.. autoclass:: DependencyMapper
.. autoclass:: InputGatherer
.. autoclass:: SizeParamGatherer
.. autofunction:: map_and_copy
.. autofunction:: get_users
.. autofunction:: topological_order
.. autofunction:: copy_dict_of_named_arrays
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from pytato.array.base import (
    Array,
    GraphNode,
    flatten_for_pickle,
    get_children,
    topological_order,
    unflatten,
)
from pytato.array.inputs import InputArgumentBase, SizeParam
from pytato.array.results import DictOfNamedArrays


__all__ = [
    "CachedMapper", "CachedWalkMapper", "CombineMapper", "CopyMapper",
    "CopyMapperWithExtraArgs", "DependencyMapper", "InputGatherer", "Mapper",
    "SizeParamGatherer", "WalkMapper", "copy_dict_of_named_arrays", "get_users",
    "map_and_copy", "topological_order",
]


class UnsupportedNodeError(NotImplementedError):
    """A mapper has no method for a node type."""


class Mapper:
    """Dispatches ``self.rec(expr, ...)`` to ``self.map_<node>(expr, ...)``.

    Subclasses may define :meth:`map_array` as a fallback for every array
    node type without a specific method.
    """

    def rec(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            method = getattr(self, expr._mapper_method)
        except AttributeError:
            if isinstance(expr, Array) and hasattr(self, "map_array"):
                return self.map_array(expr, *args, **kwargs)
            if not hasattr(expr, "_mapper_method"):
                raise TypeError(f"{type(self).__name__} cannot map a "
                                f"{type(expr).__name__}") from None
            raise UnsupportedNodeError(
                f"{type(self).__name__} does not support nodes of type "
                f"{type(expr).__name__}") from None
        return method(expr, *args, **kwargs)

    def __call__(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        return self.rec(expr, *args, **kwargs)

    def rec_function_definition(self, expr: Any, *args: Any, **kwargs: Any
                                ) -> Any:
        """Map a :class:`~pytato.function.FunctionDefinition` (the body of
        called functions is a graph of its own, not a child of the call)."""
        return self.map_function_definition(expr, *args, **kwargs)


class CachedMapper(Mapper):
    """A :class:`Mapper` memoizing results per (structurally equal) node
    and extra arguments."""

    def __init__(self) -> None:
        self._cache: dict[Hashable, Any] = {}

    def get_cache_key(self, expr: Any, *args: Any, **kwargs: Any) -> Hashable:
        if not args and not kwargs:
            return expr
        return (expr, args, tuple(sorted(kwargs.items())))

    def rec(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        key = self.get_cache_key(expr, *args, **kwargs)
        try:
            return self._cache[key]
        except KeyError:
            result = Mapper.rec(self, expr, *args, **kwargs)
            self._cache[key] = result
            return result

    def __call__(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and isinstance(expr, GraphNode):
            for node in topological_order([expr]):
                self.rec(node)
        return self.rec(expr, *args, **kwargs)

    def rec_function_definition(self, expr: Any, *args: Any, **kwargs: Any
                                ) -> Any:
        """Map a function definition once (per extra arguments), however
        many calls refer to it."""
        cache = self.__dict__.setdefault("_function_cache", {})
        key = self.get_cache_key(expr, *args, **kwargs)
        try:
            return cache[key]
        except KeyError:
            result = self.map_function_definition(expr, *args, **kwargs)
            cache[key] = result
            return result

    def clone_for_callee(self, function: Any) -> CachedMapper:
        """A mapper of the same kind for the body of *function* (a separate
        scope: its nodes are cached separately from the caller's). Mappers
        whose constructor takes arguments must override this to map graphs
        with calls."""
        try:
            return type(self)()
        except TypeError as e:
            raise NotImplementedError(
                f"{type(self).__name__} must define clone_for_callee to map "
                f"the bodies of called functions ({e})") from None


def _rebuild_non_array(expr: Any, new_kids: tuple[Any, ...]) -> Any:
    """Rebuild a non-array node (a dataclass with a per-field skeleton, see
    :class:`~pytato.array.nonarray.DataclassGraphNode`) with new children."""
    import dataclasses

    from pytato.array.base import _unflatten
    return type(expr)(**{
        f.name: _unflatten(s, new_kids)
        for f, s in zip(dataclasses.fields(expr), expr._pt_skel, strict=True)})


class CopyMapper(CachedMapper):
    """Rebuilds the graph bottom-up; a node whose children are unchanged is
    returned as is. Override ``map_<node>`` methods to transform nodes."""

    def map_array(self, expr: Array) -> Array:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        names, skel = flatten_for_pickle(expr)
        return unflatten(type(expr), names, skel, new_kids,
                         expr.non_equality_tags)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays
                                 ) -> DictOfNamedArrays:
        new = {k: self.rec(v) for k, v in expr.items()}
        if all(new[k] is v for k, v in expr.items()):
            return expr
        return DictOfNamedArrays(new, tags=expr.tags)

    def map_distributed_send(self, expr: Any) -> Any:
        # a send (pytato.distributed) is not an array; only its data is mapped
        data = self.rec(expr.data)
        return expr if data is expr.data else expr.copy(data=data)

    # {{{ calls, loopy calls, sparse matrices

    def map_function_definition(self, expr: Any) -> Any:
        mapper = self.clone_for_callee(expr)
        new = {k: mapper(v) for k, v in expr.returns.items()}
        if all(new[k] is v for k, v in expr.returns.items()):
            return expr
        return expr.copy(returns=new)

    def map_call(self, expr: Any) -> Any:
        fn = self.rec_function_definition(expr.function)
        bindings = {k: self.rec(v) for k, v in expr.bindings.items()}
        if fn is expr.function and all(
                bindings[k] is v for k, v in expr.bindings.items()):
            return expr
        return expr.copy(function=fn, bindings=bindings)

    def _map_non_array_node(self, expr: Any) -> Any:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        return _rebuild_non_array(expr, new_kids)

    map_loopy_call = _map_non_array_node
    map_csr_matrix = _map_non_array_node

    # }}}


class CopyMapperWithExtraArgs(CachedMapper):
    """A :class:`CopyMapper` whose methods take extra arguments, passed on
    unchanged to the children."""

    def map_array(self, expr: Array, *args: Any, **kwargs: Any) -> Array:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k, *args, **kwargs) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        names, skel = flatten_for_pickle(expr)
        return unflatten(type(expr), names, skel, new_kids,
                         expr.non_equality_tags)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays,
                                 *args: Any, **kwargs: Any) -> DictOfNamedArrays:
        return DictOfNamedArrays({k: self.rec(v, *args, **kwargs)
                                  for k, v in expr.items()}, tags=expr.tags)

    def map_distributed_send(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        data = self.rec(expr.data, *args, **kwargs)
        return expr if data is expr.data else expr.copy(data=data)

    def map_function_definition(self, expr: Any, *args: Any, **kwargs: Any
                                ) -> Any:
        mapper = self.clone_for_callee(expr)
        new = {k: mapper.rec(v, *args, **kwargs)
               for k, v in expr.returns.items()}
        if all(new[k] is v for k, v in expr.returns.items()):
            return expr
        return expr.copy(returns=new)

    def map_call(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        fn = self.rec_function_definition(expr.function, *args, **kwargs)
        bindings = {k: self.rec(v, *args, **kwargs)
                    for k, v in expr.bindings.items()}
        if fn is expr.function and all(
                bindings[k] is v for k, v in expr.bindings.items()):
            return expr
        return expr.copy(function=fn, bindings=bindings)

    def _map_non_array_node(self, expr: Any, *args: Any, **kwargs: Any) -> Any:
        kids = get_children(expr)
        new_kids = tuple(self.rec(k, *args, **kwargs) for k in kids)
        if all(a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        return _rebuild_non_array(expr, new_kids)

    map_loopy_call = _map_non_array_node
    map_csr_matrix = _map_non_array_node


class CombineMapper(CachedMapper):
    """Combines the results of the children with :meth:`combine`."""

    def combine(self, *args: Any) -> Any:
        raise NotImplementedError

    def map_array(self, expr: Array) -> Any:
        return self.combine(*(self.rec(k) for k in get_children(expr)))

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> Any:
        return self.combine(*(self.rec(v) for v in expr.values()))

    def map_distributed_send(self, expr: Any) -> Any:
        return self.combine(self.rec(expr.data))

    def map_function_definition(self, expr: Any) -> Any:
        """Combine the results of the function's returned arrays, mapped by
        :meth:`~CachedMapper.clone_for_callee` (the body is a scope of its
        own: override this for analyses where that matters)."""
        mapper = self.clone_for_callee(expr)
        return self.combine(*(mapper(v) for v in expr.returns.values()))

    def map_call(self, expr: Any) -> Any:
        return self.combine(self.rec_function_definition(expr.function),
                            *(self.rec(v) for v in expr.bindings.values()))

    def map_loopy_call(self, expr: Any) -> Any:
        return self.combine(*(self.rec(k) for k in get_children(expr)))

    map_csr_matrix = map_loopy_call


class WalkMapper(Mapper):
    """Visits every node (once per path: use :class:`CachedWalkMapper` to
    visit each node once). :meth:`visit` returning *False* skips the
    node's children; :meth:`post_visit` runs after them."""

    def visit(self, expr: Any, *args: Any, **kwargs: Any) -> bool:
        return True

    def post_visit(self, expr: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def map_array(self, expr: Any, *args: Any, **kwargs: Any) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        for k in get_children(expr):
            self.rec(k, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    map_dict_of_named_arrays = map_array
    map_distributed_send = map_array
    map_loopy_call = map_array
    map_csr_matrix = map_array

    def map_function_definition(self, expr: Any, *args: Any, **kwargs: Any
                                ) -> None:
        """Walk the arrays the function returns (once per definition for
        :class:`CachedWalkMapper`)."""
        if not self.visit(expr, *args, **kwargs):
            return
        for v in expr.returns.values():
            self.rec(v, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)

    def map_call(self, expr: Any, *args: Any, **kwargs: Any) -> None:
        if not self.visit(expr, *args, **kwargs):
            return
        self.rec_function_definition(expr.function, *args, **kwargs)
        for v in expr.bindings.values():
            self.rec(v, *args, **kwargs)
        self.post_visit(expr, *args, **kwargs)


class CachedWalkMapper(WalkMapper):
    """A :class:`WalkMapper` visiting each distinct node once."""

    def __init__(self) -> None:
        self._visited: set[Hashable] = set()

    def get_cache_key(self, expr: Any, *args: Any, **kwargs: Any) -> Hashable:
        if not args and not kwargs:
            return id(expr)
        return (id(expr), args, tuple(sorted(kwargs.items())))

    def rec(self, expr: Any, *args: Any, **kwargs: Any) -> None:
        key = self.get_cache_key(expr, *args, **kwargs)
        if key in self._visited:
            return
        Mapper.rec(self, expr, *args, **kwargs)
        self._visited.add(key)

    def rec_function_definition(self, expr: Any, *args: Any, **kwargs: Any
                                ) -> None:
        """Walk each function body once, however many calls it has."""
        key = ("function", self.get_cache_key(expr, *args, **kwargs))
        if key in self._visited:
            return
        self._visited.add(key)
        if not args and not kwargs:
            if self.visit(expr):
                self._walk([*expr.returns.values()])
                self.post_visit(expr)
            return
        self.map_function_definition(expr, *args, **kwargs)

    def _walk(self, roots: list[Any]) -> None:
        # children before parents: each rec finds its children visited
        for node in topological_order(roots):
            if id(node) in self._visited:
                continue
            if getattr(node, "_mapper_method", None) == "map_call":
                self.rec_function_definition(node.function)
            if self.visit(node):
                self.post_visit(node)
            self._visited.add(id(node))

    def __call__(self, expr: Any, *args: Any, **kwargs: Any) -> None:
        if not args and not kwargs and isinstance(expr, GraphNode):
            self._walk([expr])
            return
        self.rec(expr, *args, **kwargs)


class DependencyMapper:
    """Returns the set of all nodes *expr* depends on (itself included),
    in one linear traversal."""

    def __call__(self, expr: Any) -> frozenset[Any]:
        return frozenset(n for n in topological_order([expr])
                         if isinstance(n, Array))


class InputGatherer:
    """Returns the set of :class:`~pytato.array.InputArgumentBase` nodes
    *expr* depends on."""

    def __call__(self, expr: Any) -> frozenset[InputArgumentBase]:
        return frozenset(n for n in topological_order([expr])
                         if isinstance(n, InputArgumentBase))


class SizeParamGatherer:
    """Returns the set of :class:`~pytato.array.SizeParam` nodes *expr*
    depends on (also through shapes)."""

    def __call__(self, expr: Any) -> frozenset[SizeParam]:
        return frozenset(n for n in topological_order([expr])
                         if isinstance(n, SizeParam))


class _MapAndCopyMapper(CopyMapper):
    def __init__(self, map_fn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.map_fn = map_fn

    def rec(self, expr: Any) -> Any:
        key = expr
        try:
            return self._cache[key]
        except KeyError:
            result = self.map_fn(Mapper.rec(self, expr))
            self._cache[key] = result
            return result


def map_and_copy(expr: Any, map_fn: Callable[[Any], Any]) -> Any:
    """Copy the graph of *expr*, applying *map_fn* to each node after its
    children have been copied."""
    return _MapAndCopyMapper(map_fn)(expr)


def get_users(expr: Any) -> dict[Any, set[Any]]:
    """A mapping from each node of the graph of *expr* to its users."""
    users: dict[Any, set[Any]] = {}
    for node in topological_order([expr]):
        users.setdefault(node, set())
        for k in get_children(node):
            users.setdefault(k, set()).add(node)
    return users


def copy_dict_of_named_arrays(source: DictOfNamedArrays,
                              copy_mapper: CopyMapper) -> DictOfNamedArrays:
    """Copy *source* with *copy_mapper*, sharing its cache across outputs."""
    if not source:
        return DictOfNamedArrays({}, tags=source.tags)
    return copy_mapper(source)  # type: ignore[no-any-return]
