"""Analysis mappers under the names of the reference pytato.

Each is a class with one ``map_<node>`` method per node type (called for
each node of that type, and overridable in subclasses), :meth:`rec`
dispatching to them, and ``__call__`` running the analysis over a whole
graph. The traversals are iterative (they do not depend on Python's
recursion limit) and visit each node object once.

.. autoclass:: DirectPredecessorsGetter
.. autoclass:: ListOfDirectPredecessorsGetter
.. autoclass:: ListOfUsersCollector
.. autoclass:: MaterializedNodeCollector
.. autoclass:: NodeMultiplicityMapper
.. autoclass:: TagCountMapper
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from pytato.analysis._outputs import output_roots
from pytato.array.base import Array, GraphNode, topological_order
from pytato.array.inputs import InputArgumentBase
from pytato.diagnostic import InvalidArgumentTypeError
from pytato.tags import ImplStored


if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from pytato.analysis._outputs import Outputs
    from pytato.function import FunctionDefinition


__all__ = [
    "DirectPredecessorsGetter",
    "ListOfDirectPredecessorsGetter",
    "ListOfUsersCollector",
    "MaterializedNodeCollector",
    "NodeMultiplicityMapper",
    "TagCountMapper",
]

_Node: TypeAlias = "GraphNode | FunctionDefinition"

#: The ``map_<node>`` methods of the node types.
NODE_MAPPER_METHODS = (
    "map_axis_permutation", "map_basic_index", "map_call",
    "map_concatenate", "map_contiguous_advanced_index", "map_csr_matmul",
    "map_data_wrapper", "map_dict_of_named_arrays", "map_distributed_recv",
    "map_distributed_send", "map_distributed_send_ref_holder", "map_einsum",
    "map_function_definition", "map_index_lambda", "map_loopy_call",
    "map_loopy_call_result", "map_named_array", "map_named_call_result",
    "map_non_contiguous_advanced_index", "map_placeholder", "map_reshape",
    "map_roll", "map_size_param", "map_stack",
)


def _direct_predecessors(expr: _Node, include_functions: bool) -> list[_Node]:
    """The nodes *expr* reads directly, in field order (with repeats): the
    children of arrays (their shape's size expressions included), the
    values of a result mapping, the bindings of a call (and its function
    if *include_functions*), the returned arrays of a function."""
    if getattr(expr, "_mapper_method", None) == "map_function_definition":
        return list(expr.returns.values())  # type: ignore[union-attr]
    preds: list[_Node] = list(getattr(expr, "_pt_kids", ()))
    if include_functions and getattr(expr, "_mapper_method", None) == "map_call":
        preds.append(expr.function)  # type: ignore[union-attr]
    return preds


def _graph_nodes(expr: Outputs | FunctionDefinition, include_functions: bool
                 ) -> list[_Node]:
    """The nodes of the graph of *expr*, children first, each object once;
    with *include_functions*, also the nodes of called functions' bodies
    (and the function definitions)."""
    roots: list[_Node] = [expr] if _is_function(expr) else [
        *output_roots(expr)]
    order: list[_Node] = []
    seen: set[int] = set()
    pending: list[_Node] = list(roots)
    while pending:
        batch = [r for r in pending if id(r) not in seen]
        pending = []
        body_roots = [r for r in batch if _is_function(r)]
        graph_roots = [r for r in batch if not _is_function(r)]
        for fn in body_roots:
            seen.add(id(fn))
            graph_roots.extend(fn.returns.values())
        for node in topological_order(graph_roots):
            if id(node) in seen:
                continue
            seen.add(id(node))
            order.append(node)
            if include_functions and getattr(
                    node, "_mapper_method", None) == "map_call":
                pending.append(node.function)  # type: ignore[attr-defined]
        order.extend(body_roots)
    return order


def _is_function(expr: object) -> TypeIs[FunctionDefinition]:
    return getattr(expr, "_mapper_method", None) == "map_function_definition"


class _NodeMapper:
    """Dispatch to ``map_<node>`` methods."""

    def rec(self, expr: _Node, *args: object, **kwargs: object) -> Any:
        """Call the ``map_<node>`` method of *expr*'s type."""
        try:
            method = getattr(self, expr._mapper_method)  # type: ignore[union-attr]
        except AttributeError:
            raise InvalidArgumentTypeError(f"{type(self).__name__} cannot map "
                                           f"{type(expr).__name__}") from None
        return method(expr, *args, **kwargs)

    def rec_function_definition(self, expr: FunctionDefinition, *args: object,
                                **kwargs: object) -> Any:
        """Call ``map_function_definition`` on the function *expr*."""
        return self.map_function_definition(  # type: ignore[attr-defined]
            expr, *args, **kwargs)

    def _map_nodes_once(self, expr: Outputs | FunctionDefinition) -> None:
        """Map each node of the graph of *expr* and of the functions it
        calls, each function once across the mappers sharing
        ``self._visited_functions``."""
        visited = self._visited_functions  # type: ignore[attr-defined]
        for node in _graph_nodes(expr, include_functions=True):
            if _is_function(node):
                if node in visited:
                    continue
                visited.add(node)
            self.rec(node)


def _with_node_methods(impl: str) -> Callable[[type], type]:
    """Give the class one ``map_<node>`` method per node type, each calling
    the method *impl* (so that subclasses may override single node
    types)."""
    def decorate(cls: type) -> type:
        for name in NODE_MAPPER_METHODS:
            if name in cls.__dict__:
                continue

            def method(self: object, expr: _Node, *args: object,
                       _impl: str = impl, **kwargs: object) -> Any:
                return getattr(self, _impl)(expr, *args, **kwargs)
            method.__name__ = name
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            method.__doc__ = f"Handle a node dispatched to ``{name}``."
            setattr(cls, name, method)
        return cls
    return decorate


class DirectPredecessorsGetter:
    """Called on a node, returns the :class:`frozenset` of the nodes it reads
    directly (array children, including the size expressions of its shape;
    the arrays of a result mapping; the bindings of a call; the returned
    arrays of a function).

    :arg include_functions: also return the
        :class:`~pytato.function.FunctionDefinition` of a call.

    .. automethod:: __call__
    """

    def __init__(self, *, include_functions: bool = False) -> None:
        self.include_functions = include_functions

    def __call__(self, expr: _Node) -> frozenset[_Node]:
        """The direct predecessors of *expr*."""
        return frozenset(_direct_predecessors(expr, self.include_functions))


@_with_node_methods("_predecessors")
class ListOfDirectPredecessorsGetter(_NodeMapper):
    """As :class:`DirectPredecessorsGetter`, but returns a :class:`list`,
    in the order of the node's fields, with repeats.

    .. automethod:: __call__
    """

    def __init__(self, *, include_functions: bool = False) -> None:
        self.include_functions = include_functions

    def _predecessors(self, expr: _Node) -> list[_Node]:
        return _direct_predecessors(expr, self.include_functions)

    def __call__(self, expr: _Node) -> list[_Node]:
        """The direct predecessors of *expr*."""
        return self.rec(expr)


@_with_node_methods("_record_users")
class ListOfUsersCollector(_NodeMapper):
    """Collects the users of each node: called on outputs, fills
    :attr:`node_to_users`.

    .. attribute:: node_to_users

        A mapping from each node to the list of the nodes that read it
        directly (one entry per distinct user object, in topological
        order). The :class:`~pytato.DictOfNamedArrays` of the outputs is a
        user of the output arrays.

    .. automethod:: __call__
    """

    def __init__(self) -> None:
        self.node_to_users: dict[_Node, list[_Node]] = {}
        self._seen: set[tuple[int, int]] = set()

    def _record_users(self, expr: _Node) -> None:
        self.node_to_users.setdefault(expr, [])
        for pred in _direct_predecessors(expr, include_functions=False):
            if (id(pred), id(expr)) in self._seen:
                continue
            self._seen.add((id(pred), id(expr)))
            self.node_to_users.setdefault(pred, []).append(expr)

    def __call__(self, expr: Outputs) -> None:
        """Record the users of the nodes of the graph of *expr*."""
        for node in _graph_nodes(expr, include_functions=False):
            self.rec(node)


@_with_node_methods("_visit")
class MaterializedNodeCollector(_NodeMapper):
    """Collects the array nodes held in memory: the inputs (placeholders,
    size parameters, data wrappers), the nodes tagged
    :class:`~pytato.tags.ImplStored` and, with *include_outputs*, the
    outputs; those inside called functions' bodies too.

    .. attribute:: materialized_nodes

        The nodes collected, in the order found (a :class:`dict` with
        :data:`None` values, used as an ordered set).

    .. automethod:: __call__
    """

    def __init__(self, include_outputs: bool = True,
                 _visited_functions: set[FunctionDefinition] | None = None,
                 _materialized_nodes: dict[Array, None] | None = None) -> None:
        self.include_outputs = include_outputs
        self._visited_functions = (
            _visited_functions if _visited_functions is not None else set())
        self.materialized_nodes: dict[Array, None] = (
            _materialized_nodes if _materialized_nodes is not None else {})

    def clone_for_callee(self, function: FunctionDefinition
                         ) -> MaterializedNodeCollector:
        """A collector for the body of *function*, adding to the same
        :attr:`materialized_nodes` (the body's outputs are not included:
        they are the call's results, materialized by the caller)."""
        return type(self)(include_outputs=False,
                          _visited_functions=self._visited_functions,
                          _materialized_nodes=self.materialized_nodes)

    def _visit(self, expr: _Node) -> None:
        if isinstance(expr, InputArgumentBase) or (
                isinstance(expr, Array) and expr.tags_of_type(ImplStored)):
            self.materialized_nodes[expr] = None

    def __call__(self, expr: Outputs | FunctionDefinition) -> None:
        """Collect the materialized nodes of the graph of *expr*."""
        if self.include_outputs and not _is_function(expr):
            for root in output_roots(expr):
                if isinstance(root, Array):
                    self.materialized_nodes[root] = None
                else:
                    for v in getattr(root, "_pt_kids", ()):
                        if isinstance(v, Array):
                            self.materialized_nodes[v] = None
        self._map_nodes_once(expr)


@_with_node_methods("_count")
class NodeMultiplicityMapper(_NodeMapper):
    """Counts, for each distinct node (up to equality), the number of
    distinct objects equal to it in a graph (1 everywhere for a graph
    without duplicates).

    .. attribute:: expr_multiplicity_counts

        The counts, keyed by node.

    .. automethod:: __call__
    """

    def __init__(self, _visited_functions: set[FunctionDefinition] | None = None
                 ) -> None:
        self._visited_functions = (
            _visited_functions if _visited_functions is not None else set())
        self.expr_multiplicity_counts: dict[_Node, int] = {}

    def clone_for_callee(self, function: FunctionDefinition
                         ) -> NodeMultiplicityMapper:
        """A mapper for the body of *function*, sharing the set of visited
        functions."""
        return type(self)(_visited_functions=self._visited_functions)

    def _count(self, expr: _Node) -> None:
        self.expr_multiplicity_counts[expr] = (
            self.expr_multiplicity_counts.get(expr, 0) + 1)

    def __call__(self, expr: Outputs | FunctionDefinition) -> None:
        """Count the nodes of the graph of *expr* (and of the bodies of the
        functions it calls)."""
        self._map_nodes_once(expr)


@_with_node_methods("_tags_of_node")
class TagCountMapper(_NodeMapper):
    """Counts the tags (of the nodes, not of their axes) that are instances
    of *tag_types* over the distinct nodes (up to equality) of a graph.

    .. automethod:: combine
    .. automethod:: __call__
    """

    def __init__(self, tag_types: type | Iterable[type]) -> None:
        self.tag_types: tuple[type, ...] = (
            (tag_types,) if isinstance(tag_types, type) else tuple(tag_types))

    def clone_for_callee(self, function: FunctionDefinition) -> TagCountMapper:
        """A mapper for the body of *function*, counting the same tag
        types."""
        return type(self)(self.tag_types)

    def combine(self, *args: int) -> int:
        """The sum of the counts *args*."""
        return sum(args)

    def _tags_of_node(self, expr: _Node) -> int:
        return sum(1 for t in getattr(expr, "tags", ())
                   if isinstance(t, self.tag_types))

    def __call__(self, expr: Outputs | FunctionDefinition) -> int:
        """The number of matching tags in the graph of *expr*."""
        seen: set[Array] = set()
        counts = []
        for node in _graph_nodes(expr, include_functions=True):
            if not isinstance(node, Array) or node in seen:
                continue
            seen.add(node)
            counts.append(self.rec(node))
        return self.combine(*counts)


def __getattr__(name: str) -> Any:
    # PytatoKeyBuilder extends loopy's key builder: imported at first use
    # (see pytato.lazy_imports)
    if name == "PytatoKeyBuilder":
        # (imports loopy: at first use)
        from pytato.analysis.key_builder import PytatoKeyBuilder
        return PytatoKeyBuilder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
