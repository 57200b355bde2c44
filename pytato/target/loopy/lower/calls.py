"""Lowering of calls to :mod:`loopy`: traced functions, user loopy kernels
and foreign scalar functions.

:func:`build_translation_unit_with_calls` is
:func:`~pytato.target.loopy.lower.graph.build_translation_unit` with
:class:`CallCodeGenMapper`, given the build state of the translation unit
(:class:`~pytato.target.loopy.lower.callees.CallBuildState`: the callees
built so far, shared with the mappers lowering function bodies), which
lowers:

* a :class:`~pytato.function.Call` (not tagged
  :class:`~pytato.tags.InlineCallTag`: those are inlined by
  :func:`~pytato.codegen.preprocess`) to a call instruction of a callee
  kernel. The callee is generated once per
  :class:`~pytato.function.FunctionDefinition` (equal definitions share
  it), however many call sites there are, and registered in the
  translation unit under ``_pt_fn_<identifier>``. Calls inside function
  bodies become calls between callee kernels.
* a :class:`~pytato.loopy.LoopyCall` to a call instruction of the user's
  entrypoint kernel, merged into the translation unit with its callee
  kernels renamed (``_pt_loopy_<name>``) so that names cannot clash.
* calls of registered foreign scalar functions
  (:mod:`pytato.scalar_functions`) to calls of their loopy callables,
  registered in the translation unit.
* CSR matrix products to calls of sparse product kernels (see
  :mod:`pytato.target.loopy.lower.sparse`).

Arrays passed to a callee are in global memory: bindings the caller would
otherwise compute inline are stored in temporaries first, and results are
written to temporaries (or directly to the caller's outputs). Loopy cannot
allocate global temporaries in callee kernels, so a callee's global
temporaries become extra output arguments ("scratch" arrays) allocated by
the caller at each call site.

Trade-offs of callee kernels: a function's body is generated and compiled
once, however many call sites it has (lowering and compiling 50 calls of a
30-operation function takes seconds, against about a minute when they are
inlined), but a callee kernel runs its loops sequentially in the work-item
that calls it (the default schedule only maps the entrypoint's loops onto
work-items), and loopy still specializes the callee at each call site
(a cost proportional to the number of call sites times the body's size).
Tag calls whose bodies are large data-parallel computations with
:class:`~pytato.tags.InlineCallTag` to have their operations scheduled in
parallel with the rest of the kernel.

.. autoclass:: CallCodeGenMapper
.. autofunction:: build_translation_unit_with_calls

(:func:`~pytato.target.loopy.lower.expressions.lower_foreign_call` and
:func:`~pytato.target.loopy.lower.callees.is_parallel_kernel` are
re-exported here.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict
from loopy.symbolic import ResolvedFunction, SubArrayRef
from pymbolic import substitute
from pymbolic.typing import ArithmeticExpression, Expression
from pytools.tag import Tag

from pytato.array.base import Array
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import shape_component_to_expr
from pytato.diagnostic import (
    CannotBeLoweredToLoopyError,
    NameClashError,
    NonAffineShapeError,
)
from pytato.function import Call, FunctionDefinition, NamedCallResult
from pytato.loopy import LoopyCall, LoopyCallResult
from pytato.scalar_functions import get_scalar_function
from pytato.tags import FunctionIdentifier
from pytato.target.loopy.loopy_walk import UncachedLoopyWalkMapper
from pytato.target.loopy.lower.callees import (
    CallBuildState,
    Callee,
    _as_callee_kernel,
    _interface,
    is_parallel_kernel,
)
from pytato.target.loopy.lower.expr_types import arithmetic
from pytato.target.loopy.lower.expressions import (
    ExpressionContext,
    lower_foreign_call,
)
from pytato.target.loopy.lower.graph import (
    CodeGenMapper,
    CodeGenState,
    ImplementedResult,
    StoredResult,
    _temporary_name,
    build_translation_unit,
)
from pytato.target.loopy.lower.reduction_bounds import emit_bound_assignments
from pytato.target.loopy.lower.sparse import SparseLoweringMixin
from pytato.tuning import record_defaults


__all__ = [
    "CallCodeGenMapper", "build_translation_unit_with_calls",
    "is_parallel_kernel", "lower_foreign_call",
]


# {{{ callee names

_IDENT_RE = re.compile(r"[^A-Za-z0-9_]")


def _sanitize(identifier: object) -> str:
    s = _IDENT_RE.sub("_", str(identifier))
    return s if s and not s[0].isdigit() else f"f_{s}"

# }}}


def build_translation_unit_with_calls(
        outputs: DictOfNamedArrays, *,
        target: lp.TargetBase, options: lp.Options, function_name: str,
        array_tag_t_to_not_propagate: frozenset[type[Tag]],
        axis_tag_t_to_not_propagate: frozenset[type[Tag]],
        stored_nodes: Callable[[DictOfNamedArrays], set[Array]] | None = None,
        fuse_loops: bool = True,
        ) -> lp.TranslationUnit:
    """:func:`~pytato.target.loopy.lower.graph.build_translation_unit` lowering
    calls, loopy calls, foreign scalar functions and sparse products (with
    a :class:`CallCodeGenMapper` given a new
    :class:`~pytato.target.loopy.lower.callees.CallBuildState`)."""
    build = CallBuildState(target, options,
                           frozenset(array_tag_t_to_not_propagate),
                           frozenset(axis_tag_t_to_not_propagate))
    build.callee_names.add_name(function_name)
    return build_translation_unit(
        outputs, target=target, options=options,
        function_name=function_name,
        array_tag_t_to_not_propagate=array_tag_t_to_not_propagate,
        axis_tag_t_to_not_propagate=axis_tag_t_to_not_propagate,
        stored_nodes=stored_nodes,
        make_mapper=partial(CallCodeGenMapper, build_context=build),
        fuse_loops=fuse_loops)


class CallCodeGenMapper(SparseLoweringMixin, CodeGenMapper):
    """A :class:`~pytato.target.loopy.lower.graph.CodeGenMapper` that also
    lowers calls, loopy calls, foreign scalar functions and sparse
    products (see the module documentation).

    :arg build_context: the build state of the translation unit, shared
        with the mappers of the function bodies it lowers (a new one for a
        PyOpenCL target if not given: callee kernels are retargeted when
        registered).
    """

    def __init__(self, state: CodeGenState, stored: set[Array],
                 output_names_of: Mapping[Array, Sequence[str]],
                 build_context: CallBuildState | None = None) -> None:
        super().__init__(state, stored, output_names_of)
        if build_context is None:
            # used through build_translation_unit directly: callee kernels
            # are built for a PyOpenCL target, then retargeted
            build_context = CallBuildState(
                lp.PyOpenCLTarget(), lp.Options(),
                state.array_tag_t_to_not_propagate,
                state.axis_tag_t_to_not_propagate)
        self.build_context = build_context
        self._materialized: dict[Array, StoredResult] = {}
        # (callee name, scratch shapes) -> (scratch arrays, last call's id)
        self._scratch: dict[tuple[str, tuple[tuple[Expression, ...], ...]],
                            tuple[tuple[str, ...], str]] = {}
        self._parallel_calls: list[str] = []
        if build_context.depth == 0:
            state.translation_unit_transforms.append(self._finish)

    # {{{ helpers

    def stored_result(self, ary: Array) -> StoredResult:
        """The lowered *ary* in memory: stored in a temporary if the caller
        would compute it inline."""
        result = self.rec_array(ary)
        if isinstance(result, StoredResult):
            return result
        have = self._materialized.get(ary)
        if have is not None:
            return have
        s = self.state
        name = _temporary_name(s.names, ary)
        s.kernel_data[name] = lp.TemporaryVariable(
            name, ary.dtype, shape=s.loopy_shape(ary),
            address_space=lp.AddressSpace.GLOBAL, tags=s.array_tags(ary.tags))
        insn_id = s.store(name, ary, result)
        stored = StoredResult(name, ary.ndim, insn_id)
        self._materialized[ary] = stored
        return stored

    def new_global_array(self, ary: Array | None,
                         shape: tuple[ArithmeticExpression, ...],
                         dtype: np.dtype[np.generic] | lp.types.LoopyType | None,
                         prefix: str = "_pt_temp") -> str:
        """Declare where a result computed by a call goes: the output
        argument if *ary* is an output, else a new global temporary."""
        s = self.state
        if ary is not None:
            out_names = self.output_names_of.get(ary)
            if out_names and out_names[0] not in s.kernel_data:
                s.add_output_arg(out_names[0], ary)
                return out_names[0]
            name = _temporary_name(s.names, ary)
            tags = s.array_tags(ary.tags)
        else:
            name = s.names(prefix, try_bare=False)
            tags = frozenset()
        s.kernel_data[name] = lp.TemporaryVariable(
            name, dtype, shape=shape, address_space=lp.AddressSpace.GLOBAL,
            tags=tags)
        return name

    def sub_array_ref(self, name: str, shape: tuple[Expression, ...]
                      ) -> SubArrayRef:
        """A reference to all of the array *name* of *shape*, swept by new
        inames."""
        s = self.state
        inames = [s.names(f"{name}_sweep{i}") for i in range(len(shape))]
        if inames:
            s.add_domain(inames, [0] * len(shape), list(shape))
        idx = tuple(prim.Variable(i) for i in inames)
        return SubArrayRef(idx, prim.Subscript(prim.Variable(name), idx))

    def scalar_expression(self, value: Array | Expression,
                          ctx: ExpressionContext) -> Expression:
        """The loopy expression of a 0-d array (or a number)."""
        if isinstance(value, Array):
            return self.rec_array(value).to_loopy_expression((), ctx)
        return value

    def emit_call(self, callee: Callee,
                  value_of: Mapping[str, Array | Expression],
                  array_of: Mapping[str, Array],
                  result_arrays: Mapping[str, Array],
                  size_values: Mapping[str, Expression],
                  inout: frozenset[str] = frozenset()
                  ) -> dict[str, StoredResult]:
        """Emit the call instruction of *callee*.

        :arg value_of: the bindings of value arguments (0-d arrays or
            numbers).
        :arg array_of: the bindings of input array arguments.
        :arg result_arrays: the caller's array of each result name.
        :arg size_values: loopy expressions of the callee's size parameters,
            to size scratch arrays.
        :arg inout: arguments that are inputs and outputs: their binding is
            copied to the result, which is passed as both.
        :returns: the lowered result of each result name.
        """
        s = self.state
        ctx = ExpressionContext()
        out_names: dict[str, str] = {}
        assignees = []
        scratch_shapes = tuple(
            tuple(_substitute(c, size_values) for c in out.shape)
            for out in callee.outputs if out.result is None)
        # calls of one callee with equal scratch shapes share the scratch
        # arrays (calls are ordered: each depends on the previous one)
        scratch_key = (callee.name, scratch_shapes)
        shared = self._scratch.get(scratch_key)
        if shared is not None:
            ctx.depends_on.add(shared[1])
        scratch_names = iter(shared[0] if shared is not None else ())
        new_scratch = []
        shapes = iter(scratch_shapes)
        for out in callee.outputs:
            if out.result is not None:
                ary = result_arrays[out.result]
                shape = s.loopy_shape(ary)
                name = self.new_global_array(ary, shape, ary.dtype)
                if out.arg_name in inout:
                    src = array_of[out.arg_name]
                    ctx.depends_on.add(s.store(name, src,
                                               self.rec_array(src)))
                out_names[out.result] = name
            else:
                shape = next(shapes)
                name = next(scratch_names, None) or self.new_global_array(
                    None, shape, out.dtype, f"{callee.name}_scratch")
                new_scratch.append(name)
            assignees.append(self.sub_array_ref(name, shape))
        params = []
        for arg_name, is_value in callee.inputs:
            if is_value:
                params.append(self.scalar_expression(value_of[arg_name], ctx))
            elif arg_name in inout:
                params.append(assignees[
                    [o.arg_name for o in callee.outputs].index(arg_name)])
            else:
                ary = array_of[arg_name]
                stored = self.stored_result(ary)
                if stored.insn_id is not None:
                    ctx.depends_on.add(stored.insn_id)
                params.append(self.sub_array_ref(stored.name, s.loopy_shape(ary)))
        emit_bound_assignments(s, ctx, (), f"a call of '{callee.name}'")
        insn_id = s.names(f"_pt_call_{callee.name}", try_bare=False)
        s.instructions.append(lp.CallInstruction(
            tuple(assignees),
            prim.Call(prim.Variable(callee.name), tuple(params)),
            id=insn_id, depends_on=frozenset(sorted(ctx.depends_on)),
            within_inames=frozenset()))
        if scratch_shapes:
            self._scratch[scratch_key] = (tuple(new_scratch), insn_id)
        if callee.parallel:
            if self.build_context.depth > 0:
                raise CannotBeLoweredToLoopyError(
                    f"kernel '{callee.name}' maps its loops onto work-items "
                    "and cannot be called from the body of a function (its "
                    "callee kernel); tag that call with InlineCallTag")
            self._parallel_calls.append(insn_id)
        return {res: StoredResult(name, len(result_arrays[res].shape), insn_id)
                for res, name in out_names.items()}

    # }}}

    # {{{ traced functions

    def function_callee(self, fn: FunctionDefinition) -> Callee:
        """The callee kernel of *fn*, built on first use."""
        bc = self.build_context
        have = bc.functions.get(fn)
        if have is not None:
            return have
        name = bc.callee_names(f"_pt_fn_{_sanitize(fn.identifier)}")
        ret_names = {f"_pt_ret_{i}": r for i, r in enumerate(fn.returns)}
        outputs = DictOfNamedArrays({k: fn.returns[r]
                                     for k, r in ret_names.items()})
        bc.depth += 1
        try:
            t_unit = build_translation_unit(
                outputs, target=bc.target, options=bc.options,
                function_name=name,
                array_tag_t_to_not_propagate=bc.array_tag_t_to_not_propagate,
                axis_tag_t_to_not_propagate=bc.axis_tag_t_to_not_propagate,
                make_mapper=partial(type(self), build_context=bc))
        finally:
            bc.depth -= 1
        # (the tag marks the kernel as a traced function's body, which the
        # default schedule inlines into its caller, unlike the kernels of
        # call_loopy, whose loops are the user's)
        knl = _as_callee_kernel(t_unit[name], name).tagged(
            FunctionIdentifier(fn.identifier))
        inputs, outs = _interface(knl, ret_names)
        callee = Callee(name, knl, inputs, outs)
        bc.functions[fn] = callee
        return callee

    def map_call(self, expr: Call) -> dict[str, StoredResult]:
        callee = self.function_callee(expr.function)
        # the callee's value arguments are the function's size parameters
        sizes = {name: shape_component_to_expr(expr.bindings[name])
                 for name, is_value in callee.inputs if is_value}
        return self.emit_call(callee, expr.bindings, expr.bindings,
                              {r: expr[r] for r in expr}, sizes)

    def map_named_call_result(self, expr: NamedCallResult) -> ImplementedResult:
        results = self.rec(expr._container)
        assert isinstance(results, Mapping)  # a call's, by name
        return results[expr.name]

    # }}}

    # {{{ loopy calls

    def loopy_callee(self, expr: LoopyCall) -> Callee:
        """The callee of the entrypoint of a :class:`~pytato.loopy.LoopyCall`
        (with its own callees renamed), built on first use."""
        bc = self.build_context
        key = (expr.translation_unit, expr.entrypoint)
        have = bc.loopy_kernels.get(key)
        if have is not None:
            return have
        t_unit = expr.translation_unit
        renames: dict[str, str] = {}
        for clbl_name, clbl in t_unit.callables_table.items():
            if isinstance(clbl, lp.CallableKernel) and isinstance(clbl_name,
                                                                  str):
                renames[clbl_name] = bc.callee_names(
                    f"_pt_loopy_{_sanitize(clbl_name)}")
        for old, new in renames.items():
            t_unit = lp.rename_callable(t_unit, old, new, existing_ok=True)
        name = renames[expr.entrypoint]
        knl = _as_callee_kernel(t_unit[name], name)
        extra = {n: c for n, c in t_unit.callables_table.items() if n != name}
        outputs = {a.name: a.name for a in knl.args if a.is_output}
        inputs, outs = _interface(knl, outputs)
        callee = Callee(name, knl, inputs, outs, extra)
        bc.loopy_kernels[key] = callee
        return callee

    def map_loopy_call(self, expr: LoopyCall) -> dict[str, StoredResult]:
        callee = self.loopy_callee(expr)
        sizes: dict[str, ArithmeticExpression] = {}
        for name, is_value in callee.inputs:
            b = expr.bindings[name]
            if not is_value:
                continue
            if isinstance(b, (int, np.integer)):
                sizes[name] = int(b)
            elif isinstance(b, Array) and b.dtype.kind in "iu":
                try:
                    sizes[name] = shape_component_to_expr(b)
                except NonAffineShapeError:
                    pass  # a data-dependent scalar: sizes nothing
        arrays = {k: b for k, b in expr.bindings.items() if isinstance(b, Array)}
        return self.emit_call(callee, expr.bindings, arrays,
                              {r: expr[r] for r in expr}, sizes,
                              inout=frozenset(expr.inout_names))

    def map_loopy_call_result(self, expr: LoopyCallResult
                              ) -> ImplementedResult:
        results = self.rec(expr._container)
        assert isinstance(results, Mapping)  # a call's, by name
        return results[expr.name]

    # }}}

    # {{{ finishing the translation unit

    def _finish(self, t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
        bc = self.build_context
        target = t_unit.target
        callables = dict(t_unit.callables_table)
        for callee in [*bc.functions.values(), *bc.loopy_kernels.values(),
                       *bc.other_callees.values()]:
            if callee.name in callables:
                raise NameClashError(
                    f"callee kernel name '{callee.name}' clashes with the "
                    "name of the generated kernel")
            callables[callee.name] = lp.CallableKernel(
                callee.kernel.copy(target=target))
            for n, c in callee.extra_callables.items():
                if isinstance(c, lp.CallableKernel):
                    c = c.copy(subkernel=c.subkernel.copy(target=target))
                if n in callables and callables[n] != c:
                    raise NameClashError(
                        f"callable '{n}' of a loopy call clashes with "
                        "another callable of the same name")
                callables[n] = c
        if len(callables) != len(t_unit.callables_table):
            t_unit = t_unit.copy(callables_table=constantdict(callables))
        if self._parallel_calls:
            entry, = t_unit.entrypoints
            t_unit = t_unit.with_kernel(_add_call_barriers(
                t_unit[entry], self._parallel_calls))
        return _register_foreign_functions(t_unit)

    # }}}


def _add_call_barriers(knl: lp.LoopKernel, call_ids: Sequence[str]
                       ) -> lp.LoopKernel:
    """Separate the calls *call_ids* of parallel callees from the
    instructions they depend on and that depend on them by global
    barriers (they run as device kernels of their own)."""
    vng = knl.get_instruction_id_generator()
    insns = list(knl.instructions)
    barriers = []
    after_of: dict[str, str] = {}
    by_id = {insn.id: k for k, insn in enumerate(insns)}
    for cid in call_ids:
        call = insns[by_id[cid]]
        deps = call.depends_on
        if deps:
            before = vng("_pt_gbarrier")
            barriers.append(lp.BarrierInstruction(
                id=before, synchronization_kind="global", mem_kind="global",
                depends_on=deps, within_inames=frozenset()))
            insns[by_id[cid]] = call.copy(depends_on=deps | {before})
        after = vng("_pt_gbarrier")
        barriers.append(lp.BarrierInstruction(
            id=after, synchronization_kind="global", mem_kind="global",
            depends_on=frozenset({cid}), within_inames=frozenset()))
        after_of[cid] = after
    insns = [insn.copy(depends_on=insn.depends_on | {
        after_of[d] for d in insn.depends_on if d in after_of})
        if insn.depends_on & after_of.keys() else insn for insn in insns]
    return knl.copy(instructions=[*insns, *barriers])


def _substitute(expr: Expression, values: Mapping[str, Expression]
                ) -> ArithmeticExpression:
    if isinstance(expr, (int, np.integer)):
        return int(expr)
    return arithmetic(substitute(expr, dict(values)))


# {{{ foreign scalar functions

class _FunctionNameCollector(UncachedLoopyWalkMapper):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def map_call(self, expr: prim.Call, *args: Any, **kwargs: Any) -> None:
        fn = expr.function
        name = getattr(fn, "name", None)
        if isinstance(name, str):
            self.names.add(name)
        for p in expr.parameters:
            self.rec(p, *args, **kwargs)

    def map_resolved_function(self, expr: ResolvedFunction, *args: object,
                              **kwargs: object) -> None:
        pass


def _register_foreign_functions(t_unit: lp.TranslationUnit
                                ) -> lp.TranslationUnit:
    collector = _FunctionNameCollector()
    for clbl in t_unit.callables_table.values():
        if not isinstance(clbl, lp.CallableKernel):
            continue
        knl = clbl.subkernel
        for insn in knl.instructions:
            expression = getattr(insn, "expression", None)
            if expression is not None:
                collector(expression)
        for rule in knl.substitutions.values():
            collector(rule.expression)
    for ident in sorted(collector.names):
        if not ident.startswith("_pt_foreign_") or \
                ident in t_unit.callables_table:
            continue
        fn = get_scalar_function(ident[len("_pt_foreign_"):])
        if fn.loopy_callable is None:
            raise CannotBeLoweredToLoopyError(
                f"scalar function '{fn.name}' has no loopy callable")
        t_unit = lp.register_callable(t_unit, ident,
                                      fn.loopy_callable.copy(name=ident))
    return t_unit


# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
