"""Preprocessing shared by code generation targets.

Before a target lowers a graph, :func:`preprocess`:

* normalizes the result to a :class:`~pytato.DictOfNamedArrays` (an array
  result becomes the single output :data:`SINGLE_OUTPUT_NAME`);
* replaces every :class:`~pytato.array.DataWrapper` by a
  :class:`~pytato.array.Placeholder` (named by the wrapper's name, else by
  its :class:`~pytato.tags.Named` or :class:`~pytato.tags.PrefixNamed` tag,
  else a fresh reserved name) and records its data as a *bound argument*;
* optionally rewrites index-remapping nodes and einsums as
  :class:`~pytato.array.IndexLambda`\\ s
  (:func:`~pytato.transform.lower_to_index_lambda.to_index_lambda`);
* checks that output names do not clash with input names.

.. autodata:: SINGLE_OUTPUT_NAME
.. autoclass:: PreprocessResult
.. autoclass:: NameGenerator
.. autofunction:: canonical_topological_order
.. autofunction:: normalize_outputs
.. autofunction:: tagged_data_name
.. autofunction:: preprocess
.. autofunction:: check_validity_of_outputs
.. autofunction:: check_distinct_input_names
.. autodata:: SymbolicIndex
.. autofunction:: is_symbolic_index
.. autoclass:: ProgramCache

(:class:`~pytato.timing.PhaseTimer`, :class:`~pytato.timing.FewerCollections`,
:data:`~pytato.timing.GC_GENERATION0_THRESHOLD` and
:func:`~pytato.timing.no_automatic_collections_at_exit`, once here, are in
:mod:`pytato.timing`, and importable from here.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeGuard, TypeVar

import numpy as np
from pymbolic.typing import ArithmeticExpression

from pytato.array.base import Array, GraphNode, input_name_clashes
from pytato.array.constructors import make_dict_of_named_arrays
from pytato.array.inputs import DataWrapper, Placeholder
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays, NamedArray
from pytato.diagnostic import InvalidArgumentTypeError, NameClashError
from pytato.scalar_expr import is_integral_scalar_expression
from pytato.tags import ForceValueArgTag, InlineCallTag, Named, PrefixNamed
from pytato.target import Target
from pytato.timing import (
    GC_GENERATION0_THRESHOLD,
    FewerCollections,
    PhaseTimer,
    no_automatic_collections_at_exit,
)
from pytato.transform.calls import inline_call_result
from pytato.transform.lower_to_index_lambda import _LOWERABLE, to_index_lambda
from pytato.transform.mappers import CopyMapper
from pytato.tuning import record_defaults


if TYPE_CHECKING:

    from pytools import UniqueNameGenerator

    from pytato.function import FunctionDefinition, NamedCallResult
    from pytato.target import Target


__all__ = [
    "GC_GENERATION0_THRESHOLD", "SINGLE_OUTPUT_NAME", "FewerCollections",
    "NameGenerator", "PhaseTimer", "PreprocessResult", "ProgramCache",
    "SymbolicIndex", "canonical_topological_order", "check_distinct_input_names",
    "check_validity_of_outputs",
    "is_symbolic_index", "no_automatic_collections_at_exit", "normalize_outputs",
    "preprocess", "tagged_data_name",
]

SINGLE_OUTPUT_NAME = "_pt_out"
"""The output name of a program generated for a single array."""


class NameGenerator:
    """Deterministic fresh names: ``prefix`` if free, else ``prefix_0``,
    ``prefix_1``, ... skipping names already taken.

    .. automethod:: __call__
    .. automethod:: add_name
    .. automethod:: is_taken
    """

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)
        self._counters: dict[str, int] = {}

    def is_taken(self, name: str) -> bool:
        """Whether *name* has been generated or reserved."""
        return name in self._taken

    def add_name(self, name: str) -> None:
        """Reserve *name*."""
        self._taken.add(name)

    def __call__(self, prefix: str, *, try_bare: bool = True) -> str:
        """A fresh name based on *prefix*."""
        if try_bare and prefix not in self._taken:
            self._taken.add(prefix)
            return prefix
        k = self._counters.get(prefix, 0)
        while f"{prefix}_{k}" in self._taken:
            k += 1
        self._counters[prefix] = k + 1
        name = f"{prefix}_{k}"
        self._taken.add(name)
        return name


def _canonical_children(node: GraphNode) -> tuple[GraphNode, ...]:
    if isinstance(node, IndexLambda):
        return (*(c for c in node.shape if isinstance(c, Array)),
                *(node.bindings[k] for k in sorted(node.bindings)))
    return node._pt_kids


def canonical_topological_order(roots: Iterable[GraphNode]) -> list[GraphNode]:
    """All nodes reachable from *roots*, children before parents, in an order
    that only depends on the graph's structure: unlike
    :func:`~pytato.array.base.topological_order`, the bindings of an
    :class:`~pytato.array.IndexLambda` are followed in sorted name order
    (their insertion order does not take part in equality). Code
    generators name things in this order, so equal graphs give equal code.
    """
    order: list[GraphNode] = []
    visited: set[int] = set()
    keep_alive = []
    for root in roots:
        if id(root) in visited:
            continue
        visited.add(id(root))
        keep_alive.append(root)
        stack = [(root, _canonical_children(root), 0)]
        while stack:
            node, kids, i = stack[-1]
            if i < len(kids):
                stack[-1] = (node, kids, i + 1)
                kid = kids[i]
                if id(kid) not in visited:
                    visited.add(id(kid))
                    stack.append((kid, _canonical_children(kid), 0))
            else:
                stack.pop()
                order.append(node)
    return order


def normalize_outputs(result: Array | DictOfNamedArrays | Mapping[str, Array]
                      ) -> DictOfNamedArrays:
    """Return *result* as a :class:`~pytato.DictOfNamedArrays` with outputs
    in sorted name order (so that generated code does not depend on the
    order outputs were given in). An array becomes the single output
    :data:`SINGLE_OUTPUT_NAME`."""
    if isinstance(result, Array):
        return DictOfNamedArrays({SINGLE_OUTPUT_NAME: result})
    if isinstance(result, DictOfNamedArrays):
        if list(result) == sorted(result):
            return result
        return DictOfNamedArrays({k: result._data[k] for k in sorted(result)},
                                 tags=result.tags)
    if isinstance(result, Mapping):
        return make_dict_of_named_arrays({k: result[k] for k in sorted(result)})
    raise InvalidArgumentTypeError(
        "the result must be an Array, a DictOfNamedArrays or a "
        f"dict of arrays, got {type(result).__name__}")


@dataclass(frozen=True)
class PreprocessResult:
    """What :func:`preprocess` returns.

    .. attribute:: outputs

        The preprocessed :class:`~pytato.DictOfNamedArrays`.

    .. attribute:: compute_order

        The output names, in the order the outputs are computed (sorted).

    .. attribute:: bound_arguments

        A mapping from the names given to the data wrappers to their data.

    .. attribute:: input_names

        The names of all inputs of the preprocessed graph (placeholders,
        including former data wrappers, and size parameters).
    """

    outputs: DictOfNamedArrays
    compute_order: tuple[str, ...]
    bound_arguments: Mapping[str, Any]
    input_names: frozenset[str] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.input_names is None:
            object.__setattr__(self, "input_names", frozenset(
                self.outputs._pt_inputs))


class _Preprocessor(CopyMapper):
    def __init__(self, data_names: Mapping[DataWrapper, str], lower: bool
                 ) -> None:
        super().__init__()
        self.data_names = data_names
        self.lower = lower
        self.bound_arguments: dict[str, Any] = {}

    def map_data_wrapper(self, expr: DataWrapper) -> Array:
        name = self.data_names[expr]
        self.bound_arguments[name] = _bound_data(expr)
        shape = tuple(self.rec(c) if isinstance(c, Array) else c
                      for c in expr.shape)
        return Placeholder(shape, expr.dtype, name, axes=expr.axes,
                           tags=expr.tags,
                           non_equality_tags=expr.non_equality_tags)

    def map_array(self, expr: Array) -> Array:
        new = super().map_array(expr)
        if self.lower and type(new)._mapper_method in _LOWERABLE:
            return to_index_lambda(new)
        return new

    # {{{ calls (see pytato.function)

    def clone_for_callee(self, function: FunctionDefinition) -> _Preprocessor:
        # function bodies hold no data wrappers (pytato.function)
        return _Preprocessor({}, self.lower)

    def map_named_array(self, expr: NamedArray) -> Array:
        # an entry of a DictOfNamedArrays used in a graph is its array
        if isinstance(expr._container, DictOfNamedArrays):
            return self.rec(expr.expr)
        return self.map_array(expr)

    def map_named_call_result(self, expr: NamedCallResult) -> Array:
        if expr._container.tags_of_type(InlineCallTag):
            return self(inline_call_result(expr, only_tagged=True))
        return self.map_array(expr)

    # }}}


def _bound_data(expr: DataWrapper) -> Any:
    """The data bound for *expr*: its data (a numpy scalar as a 0-d
    array, a non-contiguous numpy array as a contiguous copy), or, for a 0-d
    wrapper tagged
    :class:`~pytato.tags.ForceValueArgTag` (passed by value), the numpy
    scalar it holds."""

    data = expr.data
    if expr.ndim != 0 or not expr.tags_of_type(ForceValueArgTag):
        # a numpy scalar is bound as the 0-d array it stands for, a
        # non-contiguous numpy array as a contiguous copy (for the transfer
        # to a device)
        if isinstance(data, np.generic):
            return np.asarray(data)
        if isinstance(data, np.ndarray) and not (
                data.flags.c_contiguous or data.flags.f_contiguous):
            return np.ascontiguousarray(data)
        return data
    if not isinstance(data, (np.ndarray, np.generic)):
        data = data.get()  # type: ignore[attr-defined]  # a device array
    return np.asarray(data)[()]


def tagged_data_name(node: DataWrapper, names: NameGenerator) -> str | None:
    """The name of the bound argument of the unnamed data wrapper *node*
    that its tags ask for: that of its :class:`~pytato.tags.Named` tag
    (reserved in *names*), or a fresh name from *names* with the prefix of
    its :class:`~pytato.tags.PrefixNamed` tag; None without either tag.

    :raises pytato.diagnostic.NameClashError: if the name of the
        :class:`~pytato.tags.Named` tag is taken (by an input, an output or
        another data wrapper).
    """
    for tag in node.tags:
        if isinstance(tag, Named):
            if names.is_taken(tag.name):
                raise NameClashError(
                    f"a data wrapper is tagged Named({tag.name!r}), but "
                    f"'{tag.name}' is already the name of an input, an output "
                    "or another data wrapper of the graph")
            names.add_name(tag.name)
            return tag.name
    for tag in node.tags:
        if isinstance(tag, PrefixNamed):
            return names(tag.prefix)
    return None


SymbolicIndex: TypeAlias = tuple[ArithmeticExpression, ...]
"""A multi-dimensional index: a tuple of integer-valued scalar expressions
(see :func:`is_symbolic_index`)."""


def is_symbolic_index(o: object) -> TypeGuard[SymbolicIndex]:
    """Whether *o* is a :data:`SymbolicIndex`: a tuple whose entries are
    integers or integer-valued scalar expressions
    (:func:`~pytato.scalar_expr.is_integral_scalar_expression`)."""
    return isinstance(o, tuple) and all(
        is_integral_scalar_expression(i) for i in o)


def check_distinct_input_names(exprs: DictOfNamedArrays) -> None:
    """Check that distinct inputs of the graph of *exprs* have distinct
    names: two placeholders, size parameters or named data wrappers of one
    name made separately clash, even if they are equal, as in the reference
    pytato (one object used several times is one input, and
    :func:`pytato.transform.deduplicate` merges equal ones). Every code
    generator checks this first.

    :raises pytato.diagnostic.NameClashError: naming the inputs.
    """
    clashes = input_name_clashes(exprs)
    if clashes:
        names = ", ".join(f"'{name}'" for name in sorted(clashes))
        raise NameClashError(
            f"distinct inputs of the graph share the name(s) {names} (made "
            "separately, with equal shapes and dtypes); use one object per "
            "input, or merge them with pytato.transform.deduplicate")


def check_validity_of_outputs(exprs: DictOfNamedArrays) -> None:
    """Check that the outputs *exprs* can be generated code for: distinct
    inputs have distinct names (:func:`check_distinct_input_names`) and no
    output is named like an input.

    :raises pytato.diagnostic.NameClashError: naming the inputs or the
        output.
    """
    check_distinct_input_names(exprs)
    input_names = frozenset(exprs._pt_inputs)
    for name in exprs:
        if name in input_names:
            raise NameClashError(
                f"output '{name}' has the name of an input of the graph; "
                "rename the output")


def preprocess(outputs: Array | DictOfNamedArrays | Mapping[str, Array],
               target: Target | None = None, *,
               lower_to_index_lambda: bool = True) -> PreprocessResult:
    """Prepare *outputs* for code generation (see the module documentation).

    :arg target: the target code is generated for. The preprocessing does
        not depend on it here; it is checked to be a
        :class:`~pytato.target.Target` (or *None*).
    :arg lower_to_index_lambda: whether to rewrite index-remapping nodes and
        einsums as :class:`~pytato.array.IndexLambda`\\ s.
    :raises pytato.diagnostic.NameClashError: if an output is named like an
        input.
    """
    if target is not None and not isinstance(target, Target):
        raise InvalidArgumentTypeError(
            "preprocess: 'target' must be a pytato Target, got "
            f"{type(target).__name__}")
    result = outputs
    outputs = normalize_outputs(result)
    check_validity_of_outputs(outputs)
    input_names = frozenset(outputs._pt_inputs)
    names = NameGenerator(input_names | frozenset(outputs))
    data_names: dict[DataWrapper, str] = {}
    for node in canonical_topological_order([outputs]):
        if isinstance(node, DataWrapper) and node not in data_names:
            data_names[node] = (
                node.name if node.name is not None
                else tagged_data_name(node, names)
                or names("_pt_data", try_bare=False))
    prep = _Preprocessor(data_names, lower_to_index_lambda)
    new_outputs = prep(outputs)
    return PreprocessResult(
        new_outputs, tuple(new_outputs), dict(sorted(prep.bound_arguments.items())),
        frozenset(new_outputs._pt_inputs))


def _generate_name_for_temp(expr: Array,
                            var_name_gen: NameGenerator | UniqueNameGenerator,
                            default_prefix: str = "_pt_temp") -> str:
    """The name of the temporary (or input) holding *expr* in generated
    code, drawn from the name generator *var_name_gen* (a
    :class:`NameGenerator` or a :class:`pytools.UniqueNameGenerator`):
    exactly the name of a :class:`~pytato.tags.Named` tag (which must be
    free), a fresh name starting with the prefix of a
    :class:`~pytato.tags.PrefixNamed` tag, else a fresh name starting with
    *default_prefix*.

    :raises pytato.diagnostic.NameClashError: if the name of a
        :class:`~pytato.tags.Named` tag is taken.
    """

    is_taken: Callable[[str], bool] = getattr(
        var_name_gen, "is_taken", None) or (
            var_name_gen.is_name_conflicting)  # type: ignore[union-attr]
    named = expr.tags_of_type(Named)
    if named:
        (tag,) = named
        if is_taken(tag.name):
            raise NameClashError(f"the name {tag.name!r} of a Named tag is "
                                 "already taken")
        var_name_gen.add_name(tag.name)
        return tag.name
    prefixed = expr.tags_of_type(PrefixNamed)
    if prefixed:
        (tag,) = prefixed
        return var_name_gen(tag.prefix)
    return var_name_gen(default_prefix)


# {{{ the program cache

_ProgramT = TypeVar("_ProgramT")


class ProgramCache(Generic[_ProgramT]):
    """A bounded LRU cache from keys (holding structurally equal graphs) to
    generated programs.

    .. automethod:: get
    .. automethod:: put
    .. automethod:: clear
    """

    def __init__(self, maxsize: int = 64) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, _ProgramT] = OrderedDict()

    def get(self, key: Hashable) -> _ProgramT | None:
        """The program stored under *key* (marked recently used), or None."""
        try:
            value = self._data[key]
        except (KeyError, TypeError):
            return None
        self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: _ProgramT) -> None:
        """Store *value* under *key*, evicting the least recently used."""
        try:
            self._data[key] = value
        except TypeError:
            return
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def clear(self) -> None:
        """Forget all programs."""
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
