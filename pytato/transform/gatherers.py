"""Gatherers: the dependencies, inputs, size parameters and users of a
graph.

.. autoclass:: DependencyMapper
.. autoclass:: SubsetDependencyMapper
.. autoclass:: InputGatherer
.. autoclass:: ListOfInputsGatherer
.. autoclass:: SizeParamGatherer
.. autoclass:: UsersCollector
.. autofunction:: get_users
.. autofunction:: rec_get_user_nodes
.. autofunction:: get_dependencies
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self, TypeVar

from pytato.array.base import Array, GraphNode, get_children, topological_order
from pytato.array.inputs import InputArgumentBase, SizeParam
from pytato.array.results import DictOfNamedArrays
from pytato.function import FunctionDefinition
from pytato.transform.base import ArrayOrNames, CachedMapper, CachedMapperCache
from pytato.transform.combine import CombineMapper


if TYPE_CHECKING:
    from pytato.function import Call


_NodeT = TypeVar("_NodeT", bound=Array)


__all__ = [
    "DependencyMapper", "InputGatherer", "ListOfInputsGatherer",
    "SizeParamGatherer", "SubsetDependencyMapper", "UsersCollector",
    "get_dependencies", "get_users", "rec_get_user_nodes",
]


# {{{ gatherers

class DependencyMapper(CombineMapper[frozenset[Array], frozenset[Array], []]):
    """Returns the set of all arrays *expr* depends on (itself included).
    Function bodies are not entered (a call depends on its bindings)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[Array], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, frozenset[Array], []] | None = None) -> None:
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

    def __call__(self, expr: ArrayOrNames) -> frozenset[Array]:
        if type(self) is DependencyMapper and isinstance(expr, GraphNode):
            # linear (the per-node sets of the general mapper are quadratic
            # on chains)
            return frozenset(self._gather(expr, Array))
        return super().__call__(expr)

    @staticmethod
    def _gather(expr: GraphNode, cls: type[_NodeT]) -> list[_NodeT]:
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

    def clone_for_callee(self, function: FunctionDefinition) -> Self:
        return type(self)(self.universe)


class InputGatherer(CombineMapper[frozenset[InputArgumentBase],
                                  frozenset[InputArgumentBase], []]):
    """Returns the set of :class:`~pytato.array.InputArgumentBase` nodes
    (placeholders, data wrappers, size parameters) *expr* depends on, also
    through shapes."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[InputArgumentBase], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, frozenset[InputArgumentBase], []] | None = None
            ) -> None:
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

    def __call__(self, expr: ArrayOrNames
                 ) -> frozenset[InputArgumentBase]:
        if type(self) is InputGatherer and isinstance(expr, GraphNode):
            return frozenset(DependencyMapper._gather(expr, InputArgumentBase))
        return super().__call__(expr)


class ListOfInputsGatherer(CombineMapper[list[InputArgumentBase],
                                         list[InputArgumentBase], []]):
    """As :class:`InputGatherer`, returning a list (in the order of first
    appearance in a depth-first walk, each input once)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, list[InputArgumentBase], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, list[InputArgumentBase], []] | None = None) -> None:
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


class SizeParamGatherer(CombineMapper[frozenset[SizeParam],
                                      frozenset[SizeParam], []]):
    """Returns the set of :class:`~pytato.array.SizeParam` nodes *expr*
    depends on (also through shapes)."""

    def __init__(
            self,
            err_on_collision: bool = False,
            _cache: CachedMapperCache[
                ArrayOrNames, frozenset[SizeParam], []] | None = None,
            _function_cache: CachedMapperCache[
                FunctionDefinition, frozenset[SizeParam], []] | None = None) -> None:
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

    def __call__(self, expr: ArrayOrNames
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

    def __call__(self, expr: ArrayOrNames) -> None:
        users = self.node_to_users
        for node in topological_order([expr]):
            users.setdefault(node, set())  # type: ignore[arg-type]
            for k in get_children(node):
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
    return {name: dep_mapper(val) for name, val in expr._data.items()}

# }}}
