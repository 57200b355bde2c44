"""Kernels that call kernels, made schedulable.

A traced function (:func:`pytato.trace_call`) is lowered once, as a callee
kernel of the translation unit (:mod:`pytato.target.loopy.lower.calls`):
``prog.program`` shows the calls. The default schedule maps the loops of
one kernel; before it does, :func:`inline_callee_kernels` inlines the
callee kernels into the entrypoint (with :func:`loopy.inline_callable_kernel`)
and drops the no-op instructions that marks the start and end of each
inlined call, so that the loops of the function bodies are scheduled like
any other (a kernel with calls used to be left serial: one work-item on a
GPU).

.. autofunction:: inline_callee_kernels
"""

from __future__ import annotations

import loopy as lp
from constantdict import constantdict
from loopy.kernel.function_interface import CallableKernel

from pytato.tags import FunctionIdentifier


__all__ = ["inline_callee_kernels"]


def inline_callee_kernels(t_unit: lp.TranslationUnit
                          ) -> tuple[lp.TranslationUnit, str | None]:
    """*t_unit* with every kernel of a traced function called by its
    entrypoint inlined (repeatedly, for functions that call functions; the
    kernels of :func:`pytato.loopy.call_loopy` are the user's and stay
    calls), and the no-op
    instructions the inlining leaves removed (their dependencies
    carried over).

    :returns: the new translation unit and None; or *t_unit* unchanged and
        the reason, if :mod:`loopy` cannot inline a callee (the schedule
        then leaves the kernel serial and reports the reason).
    """
    entry = t_unit.default_entrypoint.name
    callees = _callee_kernels(t_unit, entry)
    if not callees:
        return t_unit, None
    symbolic = _size_parameters(t_unit, entry)
    if symbolic is not None:
        return t_unit, symbolic
    result = t_unit
    try:
        while callees:
            for name in callees:
                result = lp.inline_callable_kernel(result, name)
            callees = _callee_kernels(result, entry)
        kernel = result[entry]
        # the no-ops marking inlined calls: removed one at a time, so that
        # the dependencies through each carry over to the next
        for nop in [i.id for i in kernel.instructions
                    if isinstance(i, lp.NoOpInstruction)]:
            kernel = lp.remove_instructions(kernel, {nop})
        result = result.with_kernel(kernel)
        # the callees no longer called
        result = result.copy(callables_table=constantdict({
            name: c for name, c in result.callables_table.items()
            if not (name != entry and _is_function_body(c)
                    and name not in _called_names(result[entry]))}))
    except Exception as exc:  # loopy's errors have no common base
        return t_unit, (f"loopy could not inline the called kernels "
                        f"({type(exc).__name__}: {exc})")
    return result, None


def _size_parameters(t_unit: lp.TranslationUnit, entry: str) -> str | None:
    """Why the callees of *entry* are not inlined, if a function takes size
    parameters (value arguments): loopy's inliner loses the bounds they
    give the function's loops (out-of-bounds accesses, found only when the
    kernel is checked); else None."""
    for name in _callee_kernels(t_unit, entry):
        knl = t_unit[name]
        sizes = [a.name for a in knl.args if isinstance(a, lp.ValueArg)]
        if sizes:
            return (f"the function {name!r} takes the size parameter(s) "
                    f"{', '.join(sizes)} (the default schedule inlines "
                    "functions of concrete shapes only)")
    return None


def _called_names(kernel: lp.LoopKernel) -> set[str]:
    # loopy types a call instruction's expression as any expression
    return {insn.expression.function.name  # type: ignore[union-attr]
            for insn in kernel.instructions
            if isinstance(insn, lp.CallInstruction)}


def _callee_kernels(t_unit: lp.TranslationUnit, entry: str) -> list[str]:
    called = _called_names(t_unit[entry])
    return sorted(name for name in called if _is_function_body(
        t_unit.callables_table.get(name)))


def _is_function_body(callee: object) -> bool:
    # the kernels of traced functions (pytato.target.loopy.lower.calls tags
    # them); those of call_loopy are the user's, left as they are
    return (isinstance(callee, CallableKernel)
            and bool(callee.subkernel.tags_of_type(FunctionIdentifier)))
