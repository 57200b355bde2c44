"""Preprocessing, linearization and code generation of a program's
translation unit before its first call, without the passes that do
nothing for pytato's kernels.

:func:`loopy.preprocess_program` ends with a pass that inlines the callee
kernels holding global barriers into their callers. The default schedule
separates the levels of a kernel with global barriers
(:mod:`pytato.target.loopy.schedule.default`), so the pass runs on pytato's
translation units, and it first resolves the callables and infers the
argument descriptors of the whole unit once more; with a single kernel
there is nothing to inline, and the unit comes out as it went in. For the
10 000-node random DAG of ``benchmarks/bench_codegen.py`` (about 4 400
instructions) that pass took a quarter of :mod:`loopy`'s preprocessing.

Preprocessing, and the linearization of each kernel, also store their
results in :mod:`loopy`'s on-disk caches, each keyed by a hash of the
whole unit or kernel; the executor
(:class:`~pytato.target.loopy.run.executor.PhasedExecutor`) already stores
the preprocessed and linearized unit in a cache of its own (keyed by the
unit it starts from), which is what a later process looks up. Here the
intermediate caches are skipped (through
:func:`~pytato.target.loopy.loopy_memos.loopy_caching_off`, a
process-wide switch: :mod:`loopy` calls that other threads make meanwhile
skip the on-disk caches too).

:func:`preprocess_and_linearize` runs :mod:`loopy`'s preprocessing steps
in :mod:`loopy`'s order, leaving out the inlining where the unit has one
kernel, and then :func:`loopy.linearize` (with its checks). The test suite
checks that the result equals :func:`loopy.preprocess_program`'s and
:func:`loopy.linearize`'s. Units with several kernels, and a :mod:`loopy`
without the internals used here, go through :mod:`loopy`'s own functions.

Likewise :func:`loopy.generate_code_v2` first renames callee kernels that
are also entrypoints, a walk over every expression of the unit that
changes nothing when the unit has one kernel (a noticeable part of the
code generation of large DAGs). :func:`generate_code` leaves it out
there, and otherwise does what :func:`loopy.generate_code_v2` does, with
the same on-disk cache (its entries are :mod:`loopy`'s: keyed by the
linearized unit); the test suite checks that the code is the same.

loopy's passes over callables (their resolution, type inference and the
inference of argument descriptors) walk every expression of the kernel;
on pytato's kernels, whose variables all have known types, only the
instructions that may call something change. :func:`on_calls_only` runs
them on a copy of the kernel with those instructions alone and puts the
others back (the test suite checks the result against loopy's).

While these functions run, :mod:`pymbolic`'s memoizing mappers (which
:mod:`loopy`'s passes are) key their memos without an empty dictionary of
keyword arguments (:class:`ShorterMapperKeys`): the key of each visit of
each node built and hashed a new :class:`constantdict.constantdict`, a
noticeable part of :mod:`loopy`'s time on pytato's kernels.

loopy memoizes the grid sizes of a kernel's instructions with the
translation unit's table of callables in the key, so linearization and
code generation each hash that table, and through it the whole kernel
(:mod:`loopy`'s persistent hash of every instruction): about a tenth of
the generation of the 10 000-node DAG's sub-units. The units that
:func:`preprocess_and_linearize` and :func:`generate_code` hand to those
steps get a cheaper hash of their table (:func:`cheap_table_hash`).

.. autofunction:: preprocess_program
.. autofunction:: order_after_predicate_writers
.. autofunction:: cheap_table_hash
.. autofunction:: preprocess_and_linearize
.. autofunction:: generate_code
.. autofunction:: on_calls_only
.. autoclass:: ShorterMapperKeys
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from constantdict import constantdict
from loopy.kernel import KernelState
from loopy.symbolic import get_dependencies
from loopy.types import LoopyType
from pymbolic.mapper import CachedMapper

from pytato.diagnostic import NameClashError
from pytato.target.loopy.loopy_memos import loopy_caching_off
from pytato.target.loopy.loopy_walk import CHILDREN


try:
    # loopy's steps, called one by one below (internal names of loopy
    # 2025.2); with another loopy without them, loopy's own entry points
    from loopy.check import pre_codegen_checks
    from loopy.codegen import (
        TranslationUnitCodeGenerationResult,
        code_gen_cache,
        generate_code_for_a_single_kernel,
    )
    from loopy.kernel.creation import apply_single_writer_dependency_heuristic
    from loopy.preprocess import (
        _preprocess_single_kernel,
        filter_reachable_callables,
        infer_arg_descr,
    )
    from loopy.transform.realize_reduction import realize_reduction
    from loopy.transform.subst import expand_subst
    from loopy.translation_unit import resolve_callables
    from loopy.type_inference import infer_unknown_types
except ImportError:  # pragma: no cover
    _HAVE_LOOPY_STEPS = False
else:
    _HAVE_LOOPY_STEPS = True


__all__ = ["ShorterMapperKeys", "cheap_table_hash", "generate_code",
           "on_calls_only",
           "order_after_predicate_writers", "preprocess_and_linearize",
           "preprocess_program"]


def _shorter_cache_key(self: Any, expr: Any, *args: Any, **kwargs: Any
                       ) -> Any:
    # pymbolic's key, without the keyword arguments where there are none
    # (a key of three items is never equal to one of four)
    if kwargs:
        return (type(expr), expr, args, constantdict(kwargs))
    return (type(expr), expr, args)


class ShorterMapperKeys:
    """A context manager under which the memoizing mappers of
    :mod:`pymbolic` (:class:`pymbolic.mapper.CachedMapper`, and those that
    do not define keys of their own) key a visit without keyword
    arguments by ``(type(expr), expr, args)`` instead of
    ``(type(expr), expr, args, constantdict())``: the same memo, without
    a dictionary built and hashed a visit. It sets the method of the class
    (in every thread) while one or more of these contexts are open, and
    puts :mod:`pymbolic`'s back when the last one closes; it changes
    nothing if another method was set there meanwhile."""

    _lock = threading.Lock()
    _depth = 0
    _original: Any = None

    def __enter__(self) -> ShorterMapperKeys:
        cls = type(self)
        with cls._lock:
            if cls._depth == 0:
                current = CachedMapper.__dict__.get("get_cache_key")
                if current is not _shorter_cache_key:
                    cls._original = current
                    CachedMapper.get_cache_key = _shorter_cache_key
            cls._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        cls = type(self)
        with cls._lock:
            cls._depth -= 1
            if cls._depth == 0 and cls._original is not None:
                if CachedMapper.__dict__.get("get_cache_key") \
                        is _shorter_cache_key:
                    CachedMapper.get_cache_key = cls._original
                cls._original = None


def _single_kernel(t_unit: lp.TranslationUnit) -> str | None:
    """The name of the only kernel of *t_unit*, its entrypoint; None if
    *t_unit* has other kernels or entrypoints."""
    kernels = [name for name, clbl in t_unit.callables_table.items()
               if isinstance(clbl, lp.CallableKernel)]
    if len(kernels) != 1 or t_unit.entrypoints != frozenset(kernels):
        return None
    return kernels[0]


def preprocess_program(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """*t_unit* preprocessed as by :func:`loopy.preprocess_program`, without
    its on-disk cache and, for a unit with a single kernel (its
    entrypoint), without the inlining of kernels with global barriers (see
    the module documentation)."""
    if t_unit.state >= KernelState.PREPROCESSED:
        return t_unit
    name = _single_kernel(t_unit)
    if name is None:
        return lp.preprocess_program(t_unit)
    if not _HAVE_LOOPY_STEPS:  # pragma: no cover (another loopy version)
        return lp.preprocess_program(t_unit)

    # loopy's steps, in loopy's order
    with loopy_caching_off():
        t_unit = on_calls_only(t_unit, name, _resolve_and_infer)
        t_unit = expand_subst(t_unit)
        t_unit = apply_single_writer_dependency_heuristic(t_unit)
        t_unit = realize_reduction(t_unit, unknown_types_ok=False)
        clbl = t_unit.callables_table[name]
        t_unit = t_unit.copy(callables_table=constantdict({
            **t_unit.callables_table,
            name: clbl.copy(subkernel=_preprocess_single_kernel(
                order_after_predicate_writers(clbl.subkernel),
                is_entrypoint=True))}))
        return on_calls_only(t_unit, name, infer_arg_descr)


def order_after_predicate_writers(kernel: lp.LoopKernel) -> lp.LoopKernel:
    """*kernel* with each predicated instruction depending on the
    instructions that write the variables of its predicates.

    :mod:`loopy`'s realization of a reduction gives the initialization of
    the neutral element of a local (tree) reduction the predicates of the
    reduction's instruction, but not its dependencies, so it could run
    before the predicate's variable is set (and, where the variable
    was then false, leave the neutral element unset for the tree). The
    single-launch reductions of
    :func:`~pytato.target.loopy.schedule.reductions.split_reduction_two_stage`
    predicate their second stage on a flag set by their ticket."""
    predicated = [insn for insn in kernel.instructions if insn.predicates]
    if not predicated:
        return kernel
    writers: dict[str, set[str]] = {}
    for insn in kernel.instructions:
        for name in insn.assignee_var_names():
            writers.setdefault(name, set()).add(insn.id)
    changed = {}
    for insn in predicated:
        names = set().union(*(get_dependencies(p) for p in insn.predicates))
        needed = {w for name in names for w in writers.get(name, ())
                  if w != insn.id} - insn.depends_on
        if needed:
            changed[insn.id] = insn.copy(
                depends_on=insn.depends_on | frozenset(needed))
    if not changed:
        return kernel
    return kernel.copy(instructions=[changed.get(insn.id, insn)
                                     for insn in kernel.instructions])


def _callable_signature(clbl: Any) -> Any:
    if isinstance(clbl, lp.CallableKernel):
        knl = clbl.subkernel
        return ("kernel", knl.name, knl.state, len(knl.instructions),
                len(knl.args), len(knl.temporary_variables))
    return clbl  # (a function: small, its own hash is cheap)


def cheap_table_hash(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """*t_unit*, its table of callables given a hash of the names, states
    and sizes of its kernels rather than :mod:`loopy`'s hash of their
    whole contents, if that table has no hash yet (it keeps it; the hash
    is cached in the table, as :class:`constantdict.constantdict` caches
    its own). Equal tables have equal such hashes, so memos keyed by the
    table find what they found before, except where an equal table of
    another origin was hashed :mod:`loopy`'s way (then they only miss)."""
    table = t_unit.callables_table
    if type(table) is not constantdict or "_hash" in vars(table):
        return t_unit
    table._hash = hash((  # type: ignore[attr-defined]
        "pytato-callables",
        frozenset((name, _callable_signature(clbl))
                  for name, clbl in table.items())))
    return t_unit


def _resolve_and_infer(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    t_unit = resolve_callables(t_unit)
    t_unit = filter_reachable_callables(t_unit)
    return infer_unknown_types(t_unit, expect_completion=False)


# {{{ the callable passes on the instructions that call

# expression types that need no callable, and their children (the
# common types but powers and calls, which a callable may implement)
_PLAIN_CHILDREN: dict[type, Any] = {
    **{t: f for t, f in CHILDREN.items() if t not in (prim.Power, prim.Call)},
    int: lambda e: (),
    float: lambda e: (),
    bool: lambda e: (),
}


def _plain(expr: Any) -> bool:
    """Whether *expr* holds only arithmetic, comparisons, subscripts, casts
    and numbers (no call, reduction, power, ... that a callable could
    implement)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        children = _PLAIN_CHILDREN.get(type(e))
        if children is None:
            if isinstance(e, np.number) and not isinstance(e, np.complexfloating):
                continue
            return False
        stack.extend(children(e))
    return True


def on_calls_only(t_unit: lp.TranslationUnit, name: str,
                  passes: Callable[[lp.TranslationUnit], lp.TranslationUnit]
                  ) -> lp.TranslationUnit:
    """*passes* (loopy's passes over callables: their resolution, type
    inference, argument descriptors) applied to *t_unit*, whose kernel
    *name* is its only kernel, through a copy of the kernel with only its
    instructions that may call something (anything but plain assignments
    of arithmetic, comparisons, subscripts and casts; see :func:`_plain`):
    the passes walk every expression of the kernel and change only calls
    (and the types they find, which are all known here), so the other
    instructions come out as they went in. For the sub-units of the
    10 000-node DAG of ``benchmarks/bench_codegen.py`` (about two thousand
    instructions each), these passes took a fifth of :mod:`loopy`'s time.
    Kernels with a variable of
    unknown type, and passes that change anything of the kernel but its
    instructions, go through the whole kernel."""
    knl = t_unit[name]
    if not _variables_typed(knl):
        return passes(t_unit)
    kept = [insn for insn in knl.instructions
            if not (isinstance(insn, lp.Assignment)
                    and _plain(insn.expression) and _plain(insn.assignee)
                    and all(_plain(p) for p in insn.predicates))]
    if len(kept) == len(knl.instructions):
        return passes(t_unit)
    sub = knl.copy(instructions=kept)
    done = passes(t_unit.with_kernel(sub))
    new = done[name]
    new_by_id = {insn.id: insn for insn in new.instructions}
    if len(new_by_id) != len(kept) or any(i.id not in new_by_id for i in kept) \
            or any(getattr(new, f.name) is not getattr(sub, f.name)
                   and getattr(new, f.name) != getattr(sub, f.name)
                   for f in dataclasses.fields(new)
                   if f.name not in ("instructions", "state")
                   and not f.name.startswith("_")):
        return passes(t_unit)
    return done.with_kernel(new.copy(instructions=[
        new_by_id.get(insn.id, insn) for insn in knl.instructions]))

# }}}


def preprocess_and_linearize(t_unit: lp.TranslationUnit
                             ) -> lp.TranslationUnit:
    """*t_unit* preprocessed (:func:`preprocess_program`) and linearized
    (:func:`loopy.linearize`, with its checks), without :mod:`loopy`'s
    on-disk caches of the two steps."""
    with ShorterMapperKeys():
        t_unit = preprocess_program(t_unit)
        if t_unit.state < KernelState.LINEARIZED:
            with loopy_caching_off():
                t_unit = lp.linearize(cheap_table_hash(t_unit))
    return t_unit


def generate_code(t_unit: lp.TranslationUnit, *, cache: bool = True) -> Any:
    """The :class:`loopy.codegen.TranslationUnitCodeGenerationResult` of a
    linearized *t_unit*, as :func:`loopy.generate_code_v2` gives it, without
    its renaming pass for a unit of one kernel (see the module
    documentation). Other units go to :func:`loopy.generate_code_v2`.

    :arg cache: whether to use :mod:`loopy`'s on-disk cache of generated
        code (if :mod:`loopy`'s caching is on): False where the caller
        keeps the result itself (the program store)."""
    with ShorterMapperKeys():
        return _generate_code(t_unit, cache)


def _generate_code(t_unit: lp.TranslationUnit, cache: bool) -> Any:
    name = _single_kernel(t_unit)
    if name is None or t_unit.state < KernelState.LINEARIZED \
            or not _HAVE_LOOPY_STEPS:
        if cache or not lp.CACHING_ENABLED:
            result = lp.generate_code_v2(t_unit)
        else:
            with loopy_caching_off():
                result = lp.generate_code_v2(t_unit)
        check_called_names(t_unit, result.device_code())
        return result

    caching = cache and lp.CACHING_ENABLED
    if caching:
        try:
            result = code_gen_cache[t_unit]
        except KeyError:
            pass
        else:
            check_called_names(t_unit, result.device_code())
            return result
    # (loopy's type inference on a unit typed already gives the same unit,
    # after two walks over all of its expressions: skipped)
    typed = t_unit if _is_typed(t_unit, name) else infer_unknown_types(
        t_unit, expect_completion=True)
    pre_codegen_checks(cheap_table_hash(typed))
    cgr = generate_code_for_a_single_kernel(
        typed[name], typed.callables_table, typed.target, True)
    preambles = list(cgr.device_preambles)
    for clbl in typed.callables_table.values():
        preambles.extend(clbl.generate_preambles(typed.target))
    # as loopy does: the first device program in a collection (with the
    # declarations of callee kernels, none here)
    first, *rest = cgr.device_programs
    collection = typed.target.get_device_ast_builder().ast_module.Collection
    result = TranslationUnitCodeGenerationResult(
        host_programs={name: cgr.host_program},
        device_programs=[first.copy(ast=collection([first.ast])), *rest],
        device_preambles=preambles)
    check_called_names(t_unit, result.device_code())
    if caching:
        code_gen_cache.store_if_not_present(t_unit, result)
    return result


def _variables_typed(knl: lp.LoopKernel) -> bool:
    """Whether all arguments and temporaries of *knl* have known types."""
    return all(isinstance(v.dtype, LoopyType) for v in knl.args) \
        and all(isinstance(tv.dtype, LoopyType)
                for tv in knl.temporary_variables.values())


def _is_typed(t_unit: lp.TranslationUnit, name: str) -> bool:
    """Whether the kernel *name* of *t_unit* (its only kernel) has the
    types of all of its arguments and temporaries, and every other
    callable of *t_unit* its type signature (as a unit that
    :func:`preprocess_and_linearize` gave)."""
    if not _variables_typed(t_unit[name]):
        return False
    return all(clbl.is_type_specialized()
               for other, clbl in t_unit.callables_table.items()
               if other != name)


# an identifier followed by "(" (a call, or a declaration's name), not a
# member or the end of a longer word
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")


def check_called_names(t_unit: lp.TranslationUnit, code: str) -> None:
    """Refuse device *code* that calls a function named like an argument or
    temporary of *t_unit*'s kernels (an input ``sin`` of a kernel calling
    ``sin(...)``, an output ``abs`` of one calling ``abs``): the variable
    would hide the function there, and the OpenCL compiler would fail.

    :raises pytato.diagnostic.NameClashError: naming the array and the
        function.
    """
    names = set()
    for clbl in t_unit.callables_table.values():
        if isinstance(clbl, lp.CallableKernel):
            knl = clbl.subkernel
            names.update(knl.arg_dict, knl.temporary_variables)
    # function-like macros (lid(N), gid(N)) expand before any name is seen
    names -= set(re.findall(r"#define\s+(\w+)\(", code))
    # the kernels, after the preambles' functions (whose bodies do not see
    # the kernels' arguments)
    start = code.find("__kernel")
    if not names or start < 0:
        return
    # (without comments: loopy's barriers say what they are for, "/* for
    # x_local (insn) */")
    kernels = re.sub(r"/\*.*?\*/|//[^\n]*", " ", code[start:], flags=re.DOTALL)
    for match in _CALL.finditer(kernels):
        name = match.group(1)
        if name not in names:
            continue
        raise NameClashError(
            f"array name {name!r} is the name of an OpenCL C function that "
            f"the generated code calls ({name}(...)), where the argument "
            "would hide it; choose another name")
