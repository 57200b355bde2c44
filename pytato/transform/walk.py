"""Walk mappers: visit the nodes of a graph, returning nothing.

A called :class:`CachedWalkMapper` walks iteratively in the order of the
recursive walk (``visit`` in pre-order, pruning when it returns *False*,
``post_visit`` in post-order), except below nodes whose ``map_*`` method
the subclass overrides: their children are walked before the override
runs (upstream's recursive walk runs the override first).

.. autoclass:: WalkMapper
.. autoclass:: CachedWalkMapper
.. autoclass:: TopoSortMapper
.. autofunction:: topological_order
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Self, TypeAlias

from pytato.array.base import GraphNode, get_children, topological_order
from pytato.array.inputs import SizeParam
from pytato.array.results import DictOfNamedArrays
from pytato.function import FunctionDefinition
from pytato.transform.base import ArrayOrNames, Mapper, P


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


__all__ = ["CachedWalkMapper", "TopoSortMapper", "WalkMapper",
           "topological_order"]


VisitKeyT: TypeAlias = Hashable
WalkedNode: TypeAlias = "GraphNode | FunctionDefinition"
"""What :meth:`WalkMapper.visit` and :meth:`WalkMapper.post_visit` are
given: a graph node or a function definition."""


# {{{ walk mappers

class WalkMapper(Mapper[None, None, P]):
    """Visits every node (once per path: use :class:`CachedWalkMapper` to
    visit each node once). :meth:`visit` returning *False* skips the
    node's children; :meth:`post_visit` runs after them.

    .. automethod:: visit
    .. automethod:: post_visit
    """

    def clone_for_callee(self, function: FunctionDefinition) -> Self:
        """A mapper of the same kind for the body of *function*."""
        return type(self)()

    def visit(self, expr: WalkedNode, *args: P.args, **kwargs: P.kwargs
              ) -> bool:
        """Called before the children of *expr* are walked; return *False*
        to skip them."""
        return True

    def post_visit(self, expr: WalkedNode, *args: P.args,
                   **kwargs: P.kwargs) -> None:
        """Called after the children of *expr* were walked."""

    def rec(self, expr: ArrayOrNames, *args: P.args,
            **kwargs: P.kwargs) -> None:
        """Walk *expr*: without recursion through nodes whose ``map_*``
        method is :class:`WalkMapper`'s (an explicit stack, in the order of
        the recursive walk); a node whose method is overridden runs the
        override, which recurses (through ``super()``) one walk per such
        node."""
        stack: list[tuple[GraphNode, bool]] = [(expr, False)]
        default = _walk_defaults(type(self), WalkMapper.rec)
        while stack:
            node, leaving = stack.pop()
            if leaving:
                self.post_visit(node, *args, **kwargs)
                continue
            mm = getattr(node, "_mapper_method", None)
            if mm is None or not default(mm):
                Mapper.rec(self, node, *args, **kwargs)  # type: ignore[arg-type]
                continue
            if not self.visit(node, *args, **kwargs):
                continue
            if mm == "map_call":
                self.rec_function_definition(
                    node.function,  # type: ignore[attr-defined]
                    *args, **kwargs)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(
                get_children(node)))

    def map_array(self, expr: GraphNode, *args: P.args, **kwargs: P.kwargs
                  ) -> None:
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


_DEFAULT_WALK_METHODS: dict[tuple[type, Callable[..., None]],
                            dict[str, bool]] = {}


def _walk_defaults(cls: type, rec: Callable[..., None]
                   ) -> Callable[[str], bool]:
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

    def clone_for_callee(self, function: FunctionDefinition) -> Self:
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
                # deep bodies: the walk of the returns is bottom-up (no
                # extra arguments here: P is [])
                if self.visit(expr):  # type: ignore[call-arg]
                    self._walk(  # type: ignore[call-arg]
                        list(expr.returns.values()))
                    self.post_visit(expr)  # type: ignore[call-arg]
                return
        Mapper.rec_function_definition(self, expr, *args, **kwargs)

    def _is_default_method(self, method_name: str) -> bool:
        """Whether the ``map_*`` method *method_name* is
        :class:`WalkMapper`'s (visit, children, post-visit)."""
        return _walk_defaults(type(self), CachedWalkMapper.rec)(method_name)

    def _walk(self, roots: list[GraphNode], *args: P.args,
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
        stack: list[tuple[GraphNode, int]] = [
            (r, _enter) for r in reversed(roots)]
        while stack:
            node, state = stack.pop()
            key = get_key(node, *args, **kwargs)  # type: ignore[arg-type]
            if state == _exit_default:
                self.post_visit(node, *args, **kwargs)
                visited.add(key)
                continue
            if key in visited:
                continue
            if state == _exit_override:
                Mapper.rec(self, node, *args, **kwargs)  # type: ignore[arg-type]
                visited.add(key)
                continue
            mm = getattr(node, "_mapper_method", None)
            if mm is None:
                self.rec(node, *args, **kwargs)  # type: ignore[arg-type]
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
                        node.function,  # type: ignore[attr-defined]
                        *args, **kwargs)
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

    def post_visit(self, expr: WalkedNode) -> None:
        if not isinstance(expr, FunctionDefinition):
            self.topological_order.append(expr)  # type: ignore[arg-type]

# }}}
