"""Lowering of (preprocessed) array graphs to a :mod:`loopy` translation unit.

The graph reaching :func:`build_translation_unit` has been through
:func:`pytato.codegen.preprocess`: it only holds
:class:`~pytato.array.IndexLambda`, :class:`~pytato.array.Placeholder` and
:class:`~pytato.array.SizeParam` nodes. Any other node type raises
:class:`~pytato.diagnostic.CannotBeLoweredToLoopyError`.

:class:`CodeGenMapper` visits each node once, children first, and returns an
:class:`ImplementedResult` per node, which knows how to produce the loopy
expression of an element of the array at given indices:

* inputs are kernel arguments (:class:`StoredResult`); size parameters are
  value arguments (:class:`SizeParamResult`);
* nodes chosen by :func:`get_stored_nodes` (outputs, :class:`ImplStored`
  nodes, shared subexpressions) are computed by one instruction into an
  output argument or a global temporary (:class:`StoredResult`);
* nodes tagged :class:`~pytato.target.loopy.ImplSubstitution` become
  substitution rules (:class:`SubstitutionResult`);
* all other nodes are inlined into their users (:class:`InlinedResult`):
  their scalar expression is lowered again at each use with the user's index
  expressions substituted.

Domains, instructions, arguments and temporaries are collected in a
:class:`CodeGenState` and the kernel is created once at the end.

.. autodata:: MAX_INLINE_DEPTH
.. autodata:: MAX_INDEX_GROWTH
.. autofunction:: get_stored_nodes
.. autoclass:: ImplementedResult
.. autoclass:: StoredResult
.. autoclass:: SizeParamResult
.. autoclass:: BoolValueArgResult
.. autoclass:: InlinedResult
.. autoclass:: SubstitutionResult
.. autoclass:: CodeGenState
.. autoclass:: CodeGenMapper
.. autodata:: MapperFactory
.. autofunction:: build_translation_unit
.. autofunction:: has_no_elements

The scalar expressions of the nodes are lowered by
:mod:`pytato.target.loopy.lower.expressions`. (This module re-exports
:class:`~pytato.target.loopy.loopy_walk.UncachedLoopyWalkMapper`, which
moved to :mod:`pytato.target.loopy.loopy_walk`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression, Expression
from pytools.tag import Tag

from pytato.array.base import Array
from pytato.array.inputs import Placeholder, SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.results import DictOfNamedArrays, NamedArray
from pytato.array.shape import shape_component_to_expr
from pytato.codegen import NameGenerator, canonical_topological_order
from pytato.diagnostic import (
    CannotBeLoweredToLoopyError,
    NameClashError,
    ShapeMismatchError,
)
from pytato.tags import ForceValueArgTag, ImplSubstitution, Named, PrefixNamed
from pytato.target.loopy.loopy_memos import trim_loopy_memos
from pytato.target.loopy.loopy_walk import UncachedLoopyWalkMapper
from pytato.target.loopy.lower import creation
from pytato.target.loopy.lower.call_keywords import check_named_tag_name
from pytato.target.loopy.lower.empty_reductions import tag_kernel_with_lengths
from pytato.target.loopy.lower.expressions import (
    ExpressionContext,
    ScalarToLoopyMapper,
)
from pytato.target.loopy.lower.fusion import _Store, fuse_loop_nests
from pytato.target.loopy.lower.index_arith import is_integer_constant
from pytato.target.loopy.lower.index_width import (
    kernel_index_dtype,
    unify_index_dtypes,
    widen_subscripts,
)
from pytato.target.loopy.lower.recompute import recompute_producers
from pytato.target.loopy.lower.reduction_bounds import emit_bound_assignments
from pytato.target.loopy.lower.reduction_hoisting import (
    hoist_branching_reductions,
)
from pytato.transform.mappers import CachedMapper


__all__ = [
    "MAX_INDEX_GROWTH", "MAX_INLINE_DEPTH", "BoolValueArgResult",
    "CodeGenMapper", "CodeGenState", "ImplementedResult", "InlinedResult",
    "MapperFactory",
    "SizeParamResult", "StoredResult", "SubstitutionResult",
    "UncachedLoopyWalkMapper", "build_translation_unit", "get_stored_nodes",
    "has_no_elements",
]

# {{{ what to store

# the materialization policy lives in pytato.transform.materialize
from pytato.transform.materialize import (
    MAX_INDEX_GROWTH,
    MAX_INLINE_DEPTH,
    get_stored_nodes,
)
from pytato.tuning import record_defaults


# }}}


# {{{ implemented results

class ImplementedResult:
    """How the elements of a lowered array are obtained.

    .. attribute:: is_inlined

        Whether the elements are computed where they are used (the node's
        expression is lowered again at each use) rather than read.

    .. automethod:: to_loopy_expression
    """

    is_inlined: ClassVar[bool] = False

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        """The loopy expression of the element at *indices* (loopy
        expressions, one per axis); records dependencies in *ctx*."""
        raise NotImplementedError


@dataclass(frozen=True)
class StoredResult(ImplementedResult):
    """An array in memory: a kernel argument or a temporary written by
    instruction *insn_id* (None for inputs)."""

    name: str
    ndim: int
    insn_id: str | None = None

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        if self.insn_id is not None:
            ctx.depends_on.add(self.insn_id)
        var = prim.Variable(self.name)
        return var[tuple(indices)] if self.ndim else var


@dataclass(frozen=True)
class SizeParamResult(ImplementedResult):
    """A kernel value argument: a size parameter, or a 0-d placeholder
    tagged :class:`~pytato.tags.ForceValueArgTag`."""

    name: str

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        return prim.Variable(self.name)


@dataclass(frozen=True)
class BoolValueArgResult(ImplementedResult):
    """A 0-d boolean placeholder tagged
    :class:`~pytato.tags.ForceValueArgTag`: an ``int8`` kernel value
    argument (OpenCL has no boolean kernel arguments), read as whether it
    is nonzero."""

    name: str

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        return prim.Comparison(prim.Variable(self.name), "!=", 0)


@dataclass(frozen=True)
class SubstitutionResult(ImplementedResult):
    """A substitution rule *name* taking the indices as arguments."""

    name: str
    depends_on: frozenset[str]

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        ctx.depends_on.update(self.depends_on)
        return prim.Call(prim.Variable(self.name), tuple(indices))


@dataclass(frozen=True)
class InlinedResult(ImplementedResult):
    """An :class:`~pytato.array.IndexLambda` whose expression is lowered at
    each use."""

    is_inlined: ClassVar[bool] = True

    expr: IndexLambda
    bindings: Mapping[str, ImplementedResult]
    state: CodeGenState

    def to_loopy_expression(self, indices: Sequence[Expression],
                            ctx: ExpressionContext) -> Expression:
        index_map = {f"_{i}": idx for i, idx in enumerate(indices)}
        return ScalarToLoopyMapper(self.state, self.expr, self.bindings,
                                   index_map, ctx)(self.expr.expr)

# }}}


# {{{ code generation state

def _isl_affine(expr: Expression, params: set[str]) -> str:
    """*expr* (affine in size parameters) in isl syntax; collects the
    parameter names in *params*."""
    if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
        return str(int(expr))
    if isinstance(expr, prim.Variable):
        params.add(expr.name)
        return expr.name
    if isinstance(expr, prim.Sum):
        return "(" + " + ".join(_isl_affine(c, params)
                                for c in expr.children) + ")"
    if isinstance(expr, prim.Product):
        return "(" + "*".join(_isl_affine(c, params)
                              for c in expr.children) + ")"
    den = getattr(expr, "denominator", None)
    if isinstance(den, prim.Call) and den.function == prim.Variable("max"):
        den = den.parameters[0]   # see _opaque_divisor
    if isinstance(expr, prim.FloorDiv) and isinstance(den, (int, np.integer)):
        return f"floor(({_isl_affine(expr.numerator, params)})/{int(den)})"
    if isinstance(expr, prim.Remainder) and isinstance(den, (int, np.integer)):
        return f"(({_isl_affine(expr.numerator, params)}) mod {int(den)})"
    raise CannotBeLoweredToLoopyError(
        f"loop bound {expr} is not an affine expression of size parameters")


def _filter_tags(tags: frozenset[Tag], exclude: frozenset[type[Tag]]
                 ) -> frozenset[Tag]:
    if not exclude:
        return tags
    return frozenset(t for t in tags if not isinstance(t, tuple(exclude)))


@dataclass
class CodeGenState:
    """Everything collected for the kernel while lowering.

    .. attribute:: names

        The :class:`~pytato.codegen.NameGenerator` for all kernel-level
        names (arguments, temporaries, inames, instruction ids, rules).

    .. attribute:: translation_unit_transforms

        Functions applied, in order, to the translation unit once the kernel
        is created (for lowerings that need more than one kernel).
    """

    names: NameGenerator
    size_param_names: frozenset[str]
    array_tag_t_to_not_propagate: frozenset[type[Tag]]
    axis_tag_t_to_not_propagate: frozenset[type[Tag]]
    domains: list[str] = field(default_factory=list)
    instructions: list[lp.InstructionBase] = field(default_factory=list)
    kernel_data: dict[str, lp.KernelArgument | lp.TemporaryVariable] = field(
        default_factory=dict)
    substitutions: dict[str, lp.SubstitutionRule] = field(default_factory=dict)
    iname_tags: dict[str, frozenset[Tag]] = field(default_factory=dict)
    #: lengths of reductions without identity, checked at the calls (see
    #: :mod:`pytato.target.loopy.lower.empty_reductions`)
    nonempty_lengths: list[tuple[Expression, str]] = field(
        default_factory=list)
    translation_unit_transforms: list[
        Callable[[lp.TranslationUnit], lp.TranslationUnit]] = field(
            default_factory=list)
    stores: list[_Store] = field(default_factory=list)
    #: inclusive bounds of the inames with constant bounds (for
    #: :mod:`pytato.target.loopy.lower.index_arith`)
    index_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: ids of the instructions computing reduction bounds into private
    #: temporaries (see :mod:`pytato.target.loopy.lower.reduction_bounds`)
    bound_insn_ids: set[str] = field(default_factory=set)
    #: the bounds ``(lower, upper)`` (upper exclusive) of each iname
    #: added by :meth:`add_domain`
    iname_bounds: dict[str, tuple[Expression, Expression]] = field(
        default_factory=dict)
    #: the numpy dtype of the value of each lowered reduction (for
    #: :mod:`pytato.target.loopy.lower.reduction_hoisting`)
    reduction_dtypes: dict[Expression, np.dtype[np.generic]] = field(
        default_factory=dict)

    def add_domain(self, inames: Sequence[str], lower: Sequence[Expression],
                   upper: Sequence[Expression]) -> None:
        """Add the domain ``lower[k] <= inames[k] < upper[k]``."""
        for i, lo, hi in zip(inames, lower, upper, strict=True):
            if is_integer_constant(lo) and is_integer_constant(hi) and lo < hi:
                self.index_ranges[i] = (int(lo), int(hi) - 1)
            self.iname_bounds[i] = (lo, hi)
        params: set[str] = set()
        conds = [f"{_isl_affine(lo, params)} <= {i} < {_isl_affine(hi, params)}"
                 for i, lo, hi in zip(inames, lower, upper, strict=True)]
        ps = ", ".join(sorted(params))
        self.domains.append(f"[{ps}] -> {{ [{', '.join(inames)}] : "
                            f"{' and '.join(conds)} }}")

    def tag_iname(self, iname: str, tags: frozenset[Tag]) -> None:
        tags = _filter_tags(tags, self.axis_tag_t_to_not_propagate)
        if tags:
            self.iname_tags[iname] = self.iname_tags.get(iname, frozenset()) | tags

    def array_tags(self, tags: frozenset[Tag]) -> frozenset[Tag]:
        return _filter_tags(tags, self.array_tag_t_to_not_propagate)

    def loopy_shape(self, ary: Array) -> tuple[ArithmeticExpression, ...]:
        return tuple(shape_component_to_expr(c) for c in ary.shape)

    def store(self, name: str, ary: Array, result: ImplementedResult) -> str:
        """Add the instruction writing all elements of *ary* (given by
        *result*) to the array *name*; return its id."""
        inames = [self.names(f"{name}_dim{i}") for i in range(ary.ndim)]
        domain_index = len(self.domains) if inames else None
        if inames:
            self.add_domain(inames, [0] * ary.ndim,
                            [shape_component_to_expr(c) for c in ary.shape])
        for iname, axis in zip(inames, ary.axes, strict=True):
            self.tag_iname(iname, axis.tags)
        ctx = ExpressionContext()
        idx = tuple(prim.Variable(i) for i in inames)
        rhs = result.to_loopy_expression(idx, ctx)
        emit_bound_assignments(self, ctx, inames, f"array '{name}'")
        insn_id = self.names(f"_pt_insn_{name}", try_bare=True)
        lhs = prim.Variable(name)[idx] if idx else prim.Variable(name)
        self.instructions.append(lp.Assignment(
            lhs, rhs, id=insn_id, within_inames=frozenset(inames),
            depends_on=frozenset(sorted(ctx.depends_on))))
        self.stores.append(_Store(insn_id, name, tuple(inames),
                                  self.loopy_shape(ary), domain_index))
        return insn_id

    def add_output_arg(self, name: str, ary: Array) -> None:
        self.kernel_data[name] = lp.ArrayArg(
            name, ary.dtype, shape=self.loopy_shape(ary),
            address_space=lp.AddressSpace.GLOBAL, is_input=False,
            is_output=True, tags=self.array_tags(ary.tags))

# }}}


# {{{ mapper

#: What :class:`CodeGenMapper` maps a node to: an array to its
#: :class:`ImplementedResult`, a call to its results by name, a dictionary
#: of outputs (and a CSR matrix, lowered with its products) to None.
CodeGenResult: TypeAlias = (
    "ImplementedResult | Mapping[str, ImplementedResult] | None")


class CodeGenMapper(CachedMapper[CodeGenResult, None, []]):
    """Maps each node of a preprocessed graph to its
    :class:`ImplementedResult`, adding arguments, temporaries,
    instructions and substitution rules to a :class:`CodeGenState`."""

    def __init__(self, state: CodeGenState, stored: set[Array],
                 output_names_of: Mapping[Array, Sequence[str]]) -> None:
        super().__init__()
        self.state = state
        self.stored = stored
        self.output_names_of = output_names_of

    def rec_array(self, expr: Array) -> ImplementedResult:
        """The :class:`ImplementedResult` of the array *expr*."""
        result = self.rec(expr)
        assert isinstance(result, ImplementedResult)
        return result

    def map_array(self, expr: Array) -> ImplementedResult:
        raise CannotBeLoweredToLoopyError(
            f"nodes of type {type(expr).__name__} cannot be lowered to loopy"
            + (" (inline calls first: pytato.inline_calls)"
               if type(expr).__name__ == "NamedArray" else ""))

    def map_named_array(self, expr: NamedArray) -> ImplementedResult:
        return self.map_array(expr)

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> None:
        for v in expr._data.values():
            self.rec(v)

    def map_placeholder(self, expr: Placeholder) -> ImplementedResult:
        s = self.state
        if expr.tags_of_type(ForceValueArgTag):
            if expr.ndim != 0:
                raise ShapeMismatchError(
                    f"placeholder '{expr.name}' is tagged ForceValueArgTag but "
                    f"has shape {expr.shape}: only 0-d inputs can be passed "
                    "by value")
            # the tag also marks the argument for the call-time checks
            # (pytato.target.loopy.run.arguments): not a size parameter.
            # OpenCL has no bool kernel arguments: a bool is passed as int8
            is_bool = expr.dtype.kind == "b"
            s.kernel_data[expr.name] = lp.ValueArg(
                expr.name, np.dtype(np.int8) if is_bool else expr.dtype,
                tags=s.array_tags(expr.tags) | {ForceValueArgTag()})
            return (BoolValueArgResult(expr.name) if is_bool
                    else SizeParamResult(expr.name))
        s.kernel_data[expr.name] = lp.ArrayArg(
            expr.name, expr.dtype, shape=s.loopy_shape(expr),
            address_space=lp.AddressSpace.GLOBAL, is_input=True,
            is_output=False, tags=s.array_tags(expr.tags))
        return StoredResult(expr.name, expr.ndim)

    def map_size_param(self, expr: SizeParam) -> ImplementedResult:
        s = self.state
        s.kernel_data[expr.name] = lp.ValueArg(
            expr.name, expr.dtype, tags=s.array_tags(expr.tags))
        return SizeParamResult(expr.name)

    def map_index_lambda(self, expr: IndexLambda) -> ImplementedResult:
        s = self.state
        for c in expr.shape:
            if isinstance(c, Array):
                self.rec(c)
        bindings = {name: self.rec_array(b) for name, b in expr.bindings.items()}
        inlined = InlinedResult(expr, bindings, s)
        if expr in self.stored:
            out_names = self.output_names_of.get(expr)
            if out_names:
                name = out_names[0]
                s.add_output_arg(name, expr)
            else:
                name = _temporary_name(s.names, expr)
                s.kernel_data[name] = lp.TemporaryVariable(
                    name, expr.dtype, shape=s.loopy_shape(expr),
                    address_space=lp.AddressSpace.GLOBAL,
                    tags=s.array_tags(expr.tags))
            insn_id = s.store(name, expr, inlined)
            return StoredResult(name, expr.ndim, insn_id)
        if expr.tags_of_type(ImplSubstitution):
            return _make_substitution(s, expr, inlined)
        return inlined


MapperFactory: TypeAlias = Callable[
    [CodeGenState, set[Array], Mapping[Array, Sequence[str]]], CodeGenMapper]
"""What makes the :class:`CodeGenMapper` of :func:`build_translation_unit`
from the :class:`CodeGenState`, the nodes to store and the output names of
arrays: the class itself, a subclass, or a function passing more state
(e.g. a :func:`functools.partial` of a subclass)."""


def _temporary_name(names: NameGenerator, expr: Array) -> str:
    named = expr.tags_of_type(Named)
    if named:
        name: str = next(iter(named)).name
        return name
    prefixed = expr.tags_of_type(PrefixNamed)
    if prefixed:
        return names(next(iter(prefixed)).prefix, try_bare=False)
    return names("_pt_temp", try_bare=False)


def _make_substitution(state: CodeGenState, expr: IndexLambda,
                       inlined: InlinedResult) -> SubstitutionResult:
    name = _temporary_name(state.names, expr)
    args = tuple(state.names(f"{name}_arg{i}") for i in range(expr.ndim))
    ctx = ExpressionContext()
    rhs = inlined.to_loopy_expression(tuple(prim.Variable(a) for a in args), ctx)
    if ctx.bound_assignments:
        # (a bound is computed by an instruction in the loops of the
        # reduction's instruction, which a rule does not have)
        raise CannotBeLoweredToLoopyError(
            f"array tagged ImplSubstitution ('{name}') has a reduction "
            "whose bounds depend on its indices or on data: store or "
            "inline it instead")
    state.substitutions[name] = lp.SubstitutionRule(name, args, rhs)
    return SubstitutionResult(name, frozenset(ctx.depends_on))

# }}}


def _reserve_names(outputs: DictOfNamedArrays, order: Sequence[object],
                   names: NameGenerator) -> None:
    """Reserve input and output names, then names from
    :class:`~pytato.tags.Named` tags (clashes are errors)."""
    for node in order:
        if isinstance(node, (Placeholder, SizeParam)):
            # (inputs were checked by generate_loopy: a placeholder here
            # named like a keyword of the call is a data wrapper named by
            # its Named tag)
            check_named_tag_name(node.name)
            names.add_name(node.name)
    for name in outputs:
        names.add_name(name)
    seen: dict[str, Array] = {}
    output_arrays = set(outputs._data.values())
    for node in order:
        # Named tags of inputs and outputs are ignored: those have names
        if not isinstance(node, IndexLambda) or node in output_arrays:
            continue
        for tag in node.tags_of_type(Named):
            check_named_tag_name(tag.name)
            other = seen.get(tag.name)
            if other is not None and other != node:
                raise NameClashError(
                    f"two different arrays are tagged Named('{tag.name}')")
            if other is None and names.is_taken(tag.name):
                raise NameClashError(
                    f"Named('{tag.name}') clashes with an input or output "
                    "of the same name")
            seen[tag.name] = node
            names.add_name(tag.name)


def build_translation_unit(
        outputs: DictOfNamedArrays, *,
        target: lp.TargetBase, options: lp.Options, function_name: str,
        array_tag_t_to_not_propagate: frozenset[type[Tag]],
        axis_tag_t_to_not_propagate: frozenset[type[Tag]],
        stored_nodes: Callable[[DictOfNamedArrays], set[Array]] | None = None,
        make_mapper: MapperFactory | None = None,
        fuse_loops: bool = True,
        ) -> lp.TranslationUnit:
    """Lower the preprocessed *outputs* (see :func:`pytato.codegen.preprocess`)
    to a loopy translation unit with one kernel named *function_name*.

    :arg stored_nodes: the materialization policy: a function returning the
        nodes to store (default: :func:`get_stored_nodes`). Outputs are
        always stored.
    :arg make_mapper: makes the mapper (default: :class:`CodeGenMapper`)
        from the state, the nodes to store and the output names of arrays
        (see :data:`MapperFactory`): a subclass of :class:`CodeGenMapper`
        lowering more node types (e.g. calls), or a function making one
        with state of its own (e.g.
        :func:`~pytato.target.loopy.lower.calls.build_translation_unit_with_calls`).
        The mapper may add functions to
        :attr:`CodeGenState.translation_unit_transforms` to be applied to
        the created translation unit (e.g. to register callee kernels).
    :arg fuse_loops: whether to fuse loop nests and keep values in private
        memory where possible
        (:func:`~pytato.target.loopy.lower.fusion.fuse_loop_nests`).

    Arrays with no elements (an extent of 0 known here) are not computed:
    such an output is an output argument that no instruction writes (the
    program only allocates it), and such an intermediate is not stored (its
    elements are never read), so that no kernel is launched for them.
    """
    trim_loopy_memos()
    empty_outputs = {name: ary for name, ary in outputs._data.items()
                     if has_no_elements(ary)}
    computed = outputs
    if empty_outputs:
        computed = DictOfNamedArrays(
            {k: v for k, v in outputs._data.items() if k not in empty_outputs},
            tags=outputs.tags)
    # (the inputs of the graph, and the sizes in the shapes of empty
    # outputs, are still kernel arguments)
    order = canonical_topological_order([
        computed, *(c for ary in empty_outputs.values() for c in ary.shape
                    if isinstance(c, Array)),
        *(outputs._pt_inputs.values() if empty_outputs else ())])
    names = NameGenerator()
    _reserve_names(outputs, order, names)
    size_params = frozenset(n.name for n in order if isinstance(n, SizeParam))
    state = CodeGenState(names, size_params,
                         frozenset(array_tag_t_to_not_propagate),
                         frozenset(axis_tag_t_to_not_propagate))

    output_names_of: dict[Array, list[str]] = {}
    for name, ary in computed._data.items():
        output_names_of.setdefault(ary, []).append(name)
    stored = {node for node in (stored_nodes or get_stored_nodes)(computed)
              if not has_no_elements(node)}
    stored.update(computed._data.values())
    for ary in computed._data.values():
        if not isinstance(ary, IndexLambda):
            stored.discard(ary)
    mapper = (make_mapper or CodeGenMapper)(state, stored, output_names_of)
    for node in order:
        # pytato's mappers dispatch any graph node (CSR matrices too), their
        # rec is typed for arrays and results only
        mapper.rec(node)  # type: ignore[arg-type]

    for name, ary in empty_outputs.items():
        state.add_output_arg(name, ary)

    # outputs not computed in place: inputs, and second names of an array
    for name, ary in computed._data.items():
        result = mapper.rec_array(ary)
        if isinstance(result, StoredResult) and result.name == name:
            continue
        state.add_output_arg(name, ary)
        state.store(name, ary, result)

    if fuse_loops:
        recompute_producers(state)
        fuse_loop_nests(state, state.stores)
    hoist_branching_reductions(state)

    kernel_data = [state.kernel_data[n] for n in sorted(
        state.kernel_data, key=lambda n: (_data_rank(state.kernel_data[n]), n))]
    assumptions = " and ".join(f"{n} >= 0" for n in sorted(size_params))
    # a parameter-only domain makes every size parameter known to loopy,
    # also those used only in expressions (not in loop bounds)
    param_domain = ([f"[{', '.join(sorted(size_params))}] -> {{ : }}"]
                    if size_params else [])
    # (looked up on the module: tests compare it with its loopy.make_kernel
    # path by replacing it there)
    instructions: list[lp.InstructionBase | lp.SubstitutionRule] = [
        *state.instructions, *state.substitutions.values()]
    index_dtype = kernel_index_dtype(kernel_data, instructions,
                                     state.iname_bounds)
    if index_dtype.itemsize > 4:
        instructions = widen_subscripts(instructions, kernel_data)
    t_unit = creation.make_translation_unit(
        [*param_domain, *state.domains] or ["{ : }"],
        instructions,
        kernel_data,
        name=function_name, target=target, options=options,
        assumptions=assumptions, index_dtype=index_dtype)
    if state.iname_tags:
        knl = t_unit.default_entrypoint
        knl = knl.copy(inames={
            name: (iname.tagged(state.iname_tags[name])
                   if name in state.iname_tags else iname)
            for name, iname in knl.inames.items()})
        t_unit = t_unit.with_kernel(knl)
    t_unit = tag_kernel_with_lengths(t_unit, state.nonempty_lengths)
    for transform in state.translation_unit_transforms:
        t_unit = transform(t_unit)
    return unify_index_dtypes(t_unit)


def has_no_elements(ary: object) -> bool:
    """Whether the array *ary* has an extent known to be 0."""
    return any(isinstance(c, (int, np.integer)) and c == 0
               for c in getattr(ary, "shape", ()))


def _data_rank(arg: lp.KernelArgument | lp.TemporaryVariable) -> int:
    if isinstance(arg, lp.ValueArg):
        return 0
    if isinstance(arg, lp.TemporaryVariable):
        return 3
    return 2 if arg.is_output else 1


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
